/* Deadline-driven block choice on the MinRTT path (mpsched.baselines.deadline). */
#include "families.h"

/* EDF: the sendable block with the earliest deadline; expired blocks are cancelled. */
static int32_t edf_decide(mps_sim *s, mps_policy *pol, int j) {
    if (mps_min_rtt_ready_path(s) != j) return MPS_WAIT;
    mps_cancel_expired(s, 1);
    const int32_t b = mps_earliest_deadline_sendable(s);
    return b < 0 ? MPS_WAIT : b;
}

const mps_policy_def mps_policy_edf = {"edf", MPS_NO_PARAMS, NULL, NULL, edf_decide};

/* DTP: the sendable block with the lowest
 *   ((1 - w) * slack / relative deadline + w * (max_p - p) / max_p) * remaining / size
 * with w = param[0] (priority_weight), ties to the lower index. */
static int32_t dtp_decide(mps_sim *s, mps_policy *pol, int j) {
    if (mps_min_rtt_ready_path(s) != j) return MPS_WAIT;
    mps_cancel_expired(s, 1);
    const double w = pol->param[0];
    mps_charge_work(s, 2 * (int64_t)mps_n_sendable(s));
    int32_t max_priority = 0;
    for (int32_t wd = mps_sendable_floor(s); wd <= s->hi_word; wd++)
        for (uint64_t x = mps_sendable_word(s, wd); x; x &= x - 1) {
            const int32_t b = wd * 64 + __builtin_ctzll(x);
            if (s->blk[b].priority > max_priority) max_priority = s->blk[b].priority;
        }
    int32_t best = -1;
    double best_weight = 0.0;
    for (int32_t wd = mps_sendable_floor(s); wd <= s->hi_word; wd++)
        for (uint64_t x = mps_sendable_word(s, wd); x; x &= x - 1) {
            const int32_t b = wd * 64 + __builtin_ctzll(x);
            const mps_block *k = &s->blk[b];
            const int64_t relative = k->deadline_ns - s->arrival_ns[b];
            const double slack = relative > 0 ? (double)(k->deadline_ns - s->now) / (double)relative : 0.0;
            const double importance =
                max_priority > 0 ? (double)(max_priority - k->priority) / (double)max_priority : 0.0;
            const double remaining = (double)(k->unsent_bytes + k->lost_pending_bytes) / (double)k->size_bytes;
            const double weight = ((1.0 - w) * slack + w * importance) * remaining;
            if (best < 0 || weight < best_weight) {
                best = b;
                best_weight = weight;
            }
        }
    return best < 0 ? MPS_WAIT : best;
}

static const mps_param_def dtp_params[] = {{"priority_weight", 0.0, 1.0}};
const mps_policy_def mps_policy_dtp = {"dtp", MPS_PARAMS(dtp_params), NULL, NULL, dtp_decide};
