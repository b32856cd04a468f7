#include "policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policies/families.h"

#define MPS_TWIN(symbol) &mps_policy_##symbol,
const mps_policy_def *const mps_policy_table[] = {
#include "policies/twins.def"
};
#undef MPS_TWIN
const int mps_policy_count = (int)(sizeof mps_policy_table / sizeof mps_policy_table[0]);

const mps_policy_def *mps_policy_find(const char *name) {
    for (int k = 0; k < mps_policy_count; k++)
        if (strcmp(name, mps_policy_table[k]->name) == 0) return mps_policy_table[k];
    return NULL;
}

int mps_policy_bad_param(const mps_policy_def *def, const double *param) {
    for (int k = 0; k < def->n_params; k++) {
        const double x = param[k];
        if (!(x >= def->params[k].min && x <= def->params[k].max)) return k; /* also NaN */
    }
    return -1;
}

int mps_policy_prepare(mps_policy *pol, const mps_policy_def *def, const double *param, int n, const mps_sim *s) {
    const size_t need = def->state_bytes ? def->state_bytes(s) : 0;
    if (need > pol->state_cap) {
        void *grown = realloc(pol->state, need);
        if (!grown) return -1;
        pol->state = grown;
        pol->state_cap = need;
    }
    if (pol->state) memset(pol->state, 0, pol->state_cap);
    pol->def = def;
    memset(pol->param, 0, sizeof pol->param);
    for (int k = 0; k < n && k < MPS_POLICY_MAX_PARAMS; k++) pol->param[k] = param[k];
    return 0;
}

void mps_policy_free(mps_policy *pol) {
    free(pol->state);
    pol->state = NULL;
    pol->state_cap = 0;
    pol->def = NULL;
}

int32_t mps_round_robin_turn(mps_sim *s, int64_t *cursor, int j) {
    const int P = s->n_paths;
    for (int k = 0; k < P; k++) {
        const int i = (int)((*cursor + k) % P);
        if (!s->paths[i].can_send) continue;
        if (i != j) return MPS_WAIT;
        *cursor = (j + 1) % P;
        return mps_first_sendable(s);
    }
    return MPS_WAIT;
}

int32_t mps_earliest_deadline_sendable(mps_sim *s) {
    for (int32_t w = mps_todo_rank_floor(s); w <= s->dl_hi_word; w++) {
        const uint64_t x = mps_sendable_rank_word(s, w);
        if (x) return s->dl_order[w * 64 + __builtin_ctzll(x)];
    }
    return -1;
}

int mps_min_rtt_ready_path(const mps_sim *s) {
    int best = -1;
    for (int i = 0; i < s->n_paths; i++) {
        const mps_path *p = &s->paths[i];
        if (p->can_send && (best < 0 || p->srtt_ns < s->paths[best].srtt_ns)) best = i;
    }
    return best;
}

double mps_window_bytes(const mps_path *p) {
    if (p->cwnd_bytes > 0) return (double)p->cwnd_bytes;
    return p->rate_bps * (double)p->srtt_ns / 8e9;
}

int mps_run(mps_sim *s, mps_policy *pol) { return mps_run_until(s, pol, MPS_NEVER); }

int mps_run_until(mps_sim *s, mps_policy *pol, int64_t until_ns) {
    if (pol->def->copies && mps_set_copies(s, 1) != 0) return -2;
    if (pol->def->reset) pol->def->reset(s, pol);
    if (s->error) return -2;
    for (;;) {
        const int j = mps_next_decision(s);
        if (j == -1) return 0;
        if (j < 0) return -2;
        if (s->now >= until_ns) return 0;
        const int32_t a = pol->def->decide(s, pol, j);
        if (s->error) return -2;
        if (mps_apply(s, a) != 0) {
            s->error = MPS_ERR_POLICY;
            snprintf(s->errmsg, sizeof s->errmsg, "native policy %s chose block %d, which cannot be sent now",
                     pol->def->name, (int)a);
            return -2;
        }
    }
}
