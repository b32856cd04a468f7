/* TCP-state-driven path selectors of [matsufuji18] Sec. V (mpsched.baselines.rtx): LPC, LET
 * and the RTX-aware SPDX, LPCX, LETX. Blocks are FIFO; the deciding path sends when it
 * is the selector's choice among the candidates and waits otherwise. */
#include "families.h"

/* Candidates: the paths that can send; RTX-aware, those of them out of recovery, or all
 * of them when every one is in recovery (see the Python module docstring). */
static void candidates(const mps_sim *s, int rtx_aware, uint8_t *ok) {
    int any_fresh = 0;
    for (int i = 0; i < s->n_paths; i++) {
        ok[i] = s->paths[i].can_send;
        if (ok[i] && s->paths[i].recovery == MPS_REC_NONE) any_fresh = 1;
    }
    if (rtx_aware && any_fresh)
        for (int i = 0; i < s->n_paths; i++)
            if (s->paths[i].recovery != MPS_REC_NONE) ok[i] = 0;
}

/* SPD: the smallest smoothed RTT, ties to the lowest index. */
static int spd_choice(const mps_sim *s, const uint8_t *ok) {
    int best = -1;
    for (int i = 0; i < s->n_paths; i++)
        if (ok[i] && (best < 0 || s->paths[i].srtt_ns < s->paths[best].srtt_ns)) best = i;
    return best;
}

/* LPC's packet credits: (cwnd - inflight) // mss; 1 without a window (ideal). A path
 * that can send has cwnd >= inflight + mss, so the quotient is never negative. */
static int64_t lpc_credit(const mps_sim *s, const mps_path *p) {
    if (p->cwnd_bytes == 0) return 1;
    return (p->cwnd_bytes - p->inflight_bytes) / s->mss;
}

/* LPC: the most packet credits, ties to the lowest index. */
static int lpc_choice(const mps_sim *s, const uint8_t *ok) {
    int best = -1;
    int64_t best_credit = 0;
    for (int i = 0; i < s->n_paths; i++) {
        if (!ok[i]) continue;
        const int64_t credit = lpc_credit(s, &s->paths[i]);
        if (best < 0 || credit > best_credit) {
            best = i;
            best_credit = credit;
        }
    }
    return best;
}

/* LET: the largest cwnd / sRTT (rate_bps), ties to the lowest index. */
static int let_choice(const mps_sim *s, const uint8_t *ok) {
    int best = -1;
    double best_rate = 0.0;
    for (int i = 0; i < s->n_paths; i++)
        if (ok[i] && (best < 0 || s->paths[i].rate_bps > best_rate)) {
            best = i;
            best_rate = s->paths[i].rate_bps;
        }
    return best;
}

static int32_t send_if_chosen(mps_sim *s, int chosen, int j) {
    return chosen == j ? mps_first_sendable(s) : MPS_WAIT;
}

static int32_t lpc_decide(mps_sim *s, mps_policy *pol, int j) {
    uint8_t ok[MPS_MAX_SUBFLOWS];
    candidates(s, 0, ok);
    return send_if_chosen(s, lpc_choice(s, ok), j);
}

static int32_t let_decide(mps_sim *s, mps_policy *pol, int j) {
    uint8_t ok[MPS_MAX_SUBFLOWS];
    candidates(s, 0, ok);
    return send_if_chosen(s, let_choice(s, ok), j);
}

static int32_t spdx_decide(mps_sim *s, mps_policy *pol, int j) {
    uint8_t ok[MPS_MAX_SUBFLOWS];
    candidates(s, 1, ok);
    return send_if_chosen(s, spd_choice(s, ok), j);
}

static int32_t lpcx_decide(mps_sim *s, mps_policy *pol, int j) {
    uint8_t ok[MPS_MAX_SUBFLOWS];
    candidates(s, 1, ok);
    return send_if_chosen(s, lpc_choice(s, ok), j);
}

static int32_t letx_decide(mps_sim *s, mps_policy *pol, int j) {
    uint8_t ok[MPS_MAX_SUBFLOWS];
    candidates(s, 1, ok);
    return send_if_chosen(s, let_choice(s, ok), j);
}

const mps_policy_def mps_policy_lpc = {"lpc", MPS_NO_PARAMS, NULL, NULL, lpc_decide};
const mps_policy_def mps_policy_let = {"let", MPS_NO_PARAMS, NULL, NULL, let_decide};
const mps_policy_def mps_policy_spdx = {"spdx", MPS_NO_PARAMS, NULL, NULL, spdx_decide};
const mps_policy_def mps_policy_lpcx = {"lpcx", MPS_NO_PARAMS, NULL, NULL, lpcx_decide};
const mps_policy_def mps_policy_letx = {"letx", MPS_NO_PARAMS, NULL, NULL, letx_decide};
