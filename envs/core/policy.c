#include "policy.h"

#include <stdio.h>

const char *const mps_policy_names[MPS_POLICY_COUNT] = {"minrtt", "rr"};

void mps_policy_reset(mps_policy *pol) { pol->cursor = 0; }

/* MinRTT: FIFO blocks on the ready path with the smallest smoothed RTT. */
static int32_t minrtt(mps_sim *s, int j) {
    const int64_t srtt_j = s->paths[j].srtt_ns;
    for (int i = 0; i < s->n_paths; i++) {
        const mps_path *p = &s->paths[i];
        if (i == j || !p->can_send) continue;
        if (p->srtt_ns < srtt_j || (p->srtt_ns == srtt_j && i < j)) return MPS_WAIT;
    }
    return mps_first_sendable(s);
}

/* Round-robin: FIFO blocks, ready paths taken in turn. */
static int32_t round_robin(mps_sim *s, mps_policy *pol, int j) {
    const int P = s->n_paths;
    for (int k = 0; k < P; k++) {
        const int i = (int)((pol->cursor + k) % P);
        if (!s->paths[i].can_send) continue;
        if (i != j) return MPS_WAIT;
        pol->cursor = (j + 1) % P;
        return mps_first_sendable(s);
    }
    return MPS_WAIT;
}

int32_t mps_policy_decide(mps_sim *s, mps_policy *pol, int j) {
    switch (pol->id) {
    case MPS_POLICY_MINRTT:
        return minrtt(s, j);
    case MPS_POLICY_RR:
        return round_robin(s, pol, j);
    default:
        return -2;
    }
}

int mps_run(mps_sim *s, mps_policy *pol) {
    for (;;) {
        const int j = mps_next_decision(s);
        if (j == -1) return 0;
        if (j < 0) return -2;
        const int32_t a = mps_policy_decide(s, pol, j);
        if (mps_apply(s, a) != 0) {
            s->error = MPS_ERR_POLICY;
            snprintf(s->errmsg, sizeof s->errmsg, "native policy %d chose block %d, which cannot be sent now",
                     (int)pol->id, (int)a);
            return -2;
        }
    }
}
