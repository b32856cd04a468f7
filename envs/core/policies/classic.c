/* The classic FIFO schedulers (mpsched.baselines.classic). */
#include "families.h"

/* MinRTT: FIFO blocks on the ready path with the smallest smoothed RTT. */
static int32_t minrtt_decide(mps_sim *s, mps_policy *pol, int j) {
    return mps_min_rtt_ready_path(s) == j ? mps_first_sendable(s) : MPS_WAIT;
}

const mps_policy_def mps_policy_minrtt = {"minrtt", MPS_NO_PARAMS, NULL, NULL, minrtt_decide};

/* Round-robin: FIFO blocks, ready paths taken in turn from a cursor. */
static size_t rr_state_bytes(const mps_sim *s) { return sizeof(int64_t); }

static int32_t rr_decide(mps_sim *s, mps_policy *pol, int j) { return mps_round_robin_turn(s, pol->state, j); }

const mps_policy_def mps_policy_rr = {"rr", MPS_NO_PARAMS, rr_state_bytes, NULL, rr_decide};
