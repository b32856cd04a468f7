/* Schedulers that send copies of pieces in flight (mpsched.baselines.redundancy;
 * docs/model.md 7.1, copies). */
#include "families.h"

/* Linux MPTCP's redundant scheduler: the oldest piece in flight that this path has not
 * sent goes first (the copies wait in the reinjection queue, served before new data);
 * otherwise new data by MinRTT. A backup path sends no copies. The state is the lowest
 * block that may still have a piece in flight (those below are acknowledged or cancelled). */
static size_t redundant_state_bytes(const mps_sim *s) { return sizeof(int32_t); }

static int32_t redundant_decide(mps_sim *s, mps_policy *pol, int j) {
    if (!s->paths[j].backup) {
        int32_t *low = pol->state;
        while (*low < s->n_arrived && (s->blk[*low].flags & (MPS_BLK_ACKED | MPS_BLK_CANCELLED))) (*low)++;
        for (int32_t b = *low; b < s->n_arrived; b++) {
            if (mps_copy_piece(s, b, j) >= 0) {
                mps_charge_work(s, b - *low + 1);
                return MPS_COPY(b);
            }
        }
        mps_charge_work(s, s->n_arrived - *low);
    }
    if (mps_n_sendable(s) == 0 || mps_min_rtt_ready_path(s) != j) return MPS_WAIT;
    return mps_first_sendable(s);
}

const mps_policy_def mps_policy_redundant = {"redundant", MPS_NO_PARAMS, redundant_state_bytes, NULL,
                                             redundant_decide, 1};
