/* Deadline-driven block choice on the MinRTT path (mpsched.baselines.deadline). */
#include "families.h"

/* MinRTT's path rule: wait while another ready path has a smaller (srtt, index). */
static int minrtt_defers(const mps_sim *s, int j) {
    const int64_t srtt_j = s->paths[j].srtt_ns;
    for (int i = 0; i < s->n_paths; i++) {
        const mps_path *p = &s->paths[i];
        if (i != j && p->can_send && (p->srtt_ns < srtt_j || (p->srtt_ns == srtt_j && i < j))) return 1;
    }
    return 0;
}

/* EDF: the sendable block with the earliest deadline; expired blocks are cancelled. */
static int32_t edf_decide(mps_sim *s, mps_policy *pol, int j) {
    if (minrtt_defers(s, j)) return MPS_WAIT;
    mps_cancel_expired(s, 1);
    const int32_t b = mps_earliest_deadline_sendable(s);
    return b < 0 ? MPS_WAIT : b;
}

const mps_policy_def mps_policy_edf = {"edf", 0, NULL, NULL, edf_decide};

/* DTP: the sendable block with the lowest
 *   ((1 - w) * slack / relative deadline + w * (max_p - p) / max_p) * remaining / size
 * with w = param[0] (priority_weight), ties to the lower index. */
static int32_t dtp_decide(mps_sim *s, mps_policy *pol, int j) {
    if (minrtt_defers(s, j)) return MPS_WAIT;
    mps_cancel_expired(s, 1);
    const double w = pol->param[0];
    int32_t max_priority = 0;
    for (int32_t wd = 0; wd < s->n_words; wd++)
        for (uint64_t x = mps_sendable_word(s, wd); x; x &= x - 1) {
            const int32_t b = wd * 64 + __builtin_ctzll(x);
            if (s->blk[b].priority > max_priority) max_priority = s->blk[b].priority;
        }
    int32_t best = -1;
    double best_weight = 0.0;
    for (int32_t wd = 0; wd < s->n_words; wd++)
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

const mps_policy_def mps_policy_dtp = {"dtp", 1, NULL, NULL, dtp_decide};
