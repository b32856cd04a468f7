/* The classic FIFO schedulers (mpsched.baselines.classic). */
#include "families.h"

/* MinRTT: FIFO blocks on the ready path with the smallest smoothed RTT. */
static int32_t minrtt_decide(mps_sim *s, mps_policy *pol, int j) {
    const int64_t srtt_j = s->paths[j].srtt_ns;
    for (int i = 0; i < s->n_paths; i++) {
        const mps_path *p = &s->paths[i];
        if (i == j || !p->can_send) continue;
        if (p->srtt_ns < srtt_j || (p->srtt_ns == srtt_j && i < j)) return MPS_WAIT;
    }
    return mps_first_sendable(s);
}

const mps_policy_def mps_policy_minrtt = {"minrtt", 0, NULL, NULL, minrtt_decide};

/* Round-robin: FIFO blocks, ready paths taken in turn from a cursor. */
static size_t rr_state_bytes(const mps_sim *s) { return sizeof(int64_t); }

static int32_t rr_decide(mps_sim *s, mps_policy *pol, int j) { return mps_round_robin_turn(s, pol->state, j); }

const mps_policy_def mps_policy_rr = {"rr", 0, rr_state_bytes, NULL, rr_decide};
