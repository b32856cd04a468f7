/* MPTCP path schedulers for heterogeneous paths: ECF and BLEST (mpsched.baselines.mptcp). */
#include <float.h>

#include "families.h"

/* The path with the smallest (srtt, index) among all paths (the kernel's minsk). */
static int fastest_path(const mps_sim *s) {
    int best = 0;
    for (int i = 1; i < s->n_paths; i++)
        if (s->paths[i].srtt_ns < s->paths[best].srtt_ns) best = i;
    return best;
}

/* Congestion window in bytes; for an ideal path, what its rate fills in one srtt. */
static double window_bytes(const mps_path *p) {
    if (p->cwnd_bytes > 0) return (double)p->cwnd_bytes;
    return p->rate_bps * (double)p->srtt_ns / 8e9;
}

/* ECF: state is the connection's "waiting" flag. param[0] = beta, param[1] = rate_thresholds. */
static size_t ecf_state_bytes(const mps_sim *s) { return sizeof(int64_t); }

/* [jonglez20] eq. (3) for n paths: 16e9 k <= sum over paths p faster than j of
 * rate_bps_p * (srtt_j - srtt_p). */
static int ecf_within_threshold(const mps_sim *s, int j, int64_t k) {
    const int64_t srtt_j = s->paths[j].srtt_ns;
    double s_lim = 0.0;
    for (int p = 0; p < s->n_paths; p++) {
        const mps_path *q = &s->paths[p];
        if (q->srtt_ns < srtt_j || (q->srtt_ns == srtt_j && p < j))
            s_lim += q->rate_bps * (double)(srtt_j - q->srtt_ns);
    }
    return (double)k * 16e9 <= s_lim;
}

static int32_t ecf_decide(mps_sim *s, mps_policy *pol, int j) {
    if (mps_min_rtt_ready_path(s) != j) return MPS_WAIT;
    const int f = fastest_path(s);
    if (j != f) {
        const int64_t k = mps_sendable_bytes(s);
        if (pol->param[1] != 0.0) {
            if (ecf_within_threshold(s, j, k)) return MPS_WAIT;
        } else {
            /* Lim et al. Algorithm 1 as in mptcp_ecf.c, cross-multiplied, k at least one window */
            int64_t *waiting = pol->state;
            const mps_path *pf = &s->paths[f], *ps = &s->paths[j];
            const double beta = pol->param[0];
            const double kd = (double)k;
            const double w_f = window_bytes(pf), w_s = window_bytes(ps);
            const double srtt_f = (double)pf->srtt_ns, srtt_s = (double)ps->srtt_ns;
            const double delta = (double)(pf->rttvar_ns > ps->rttvar_ns ? pf->rttvar_ns : ps->rttvar_ns);
            const double x_f = kd > w_f ? kd : w_f;
            if (srtt_f * (x_f + w_f) < (1.0 + beta * (double)*waiting) * (w_f * (srtt_s + delta))) {
                const double x_s = kd > w_s ? kd : w_s;
                if (srtt_s * x_s >= w_s * (2.0 * srtt_f + delta)) {
                    *waiting = 1;
                    return MPS_WAIT;
                }
            } else {
                *waiting = 0;
            }
        }
    }
    return mps_first_sendable(s);
}

static const mps_param_def ecf_params[] = {{"beta", 0.0, 1.0}, {"rate_thresholds", 0.0, 1.0}};
const mps_policy_def mps_policy_ecf = {"ecf", MPS_PARAMS(ecf_params), ecf_state_bytes, NULL, ecf_decide};

/* BLEST: param[0] = lambda. Ferlin et al.'s blocking estimate:
 *   lambda * MSS_f * (cwnd_f + (rtt_s / rtt_f - 1) / 2) * rtt_s / rtt_f > |M| - MSS_s * (inflight_s + 1)
 * skips the slower path; |M| is the in-order receiver's window (none with the block receiver). */
static int32_t blest_decide(mps_sim *s, mps_policy *pol, int j) {
    if (mps_min_rtt_ready_path(s) != j) return MPS_WAIT;
    const int f = fastest_path(s);
    if (j != f && s->receiver == MPS_RECEIVER_IN_ORDER) {
        const mps_path *pf = &s->paths[f], *ps = &s->paths[j];
        const double rtt_f = (double)(pf->srtt_ns > 1 ? pf->srtt_ns : 1);
        const double rtt_s = (double)(ps->srtt_ns > 1 ? ps->srtt_ns : 1);
        const double ratio = rtt_s / rtt_f;
        const double fast_bytes = (window_bytes(pf) + (double)s->mss * (ratio - 1.0) / 2.0) * ratio;
        const int64_t avail = s->rbuf_bytes - (ps->inflight_bytes + s->mss);
        if (pol->param[0] * fast_bytes > (double)avail) return MPS_WAIT;
    }
    return mps_first_sendable(s);
}

static const mps_param_def blest_params[] = {{"lambda_scale", DBL_TRUE_MIN, 10.0}};
const mps_policy_def mps_policy_blest = {"blest", MPS_PARAMS(blest_params), NULL, NULL, blest_decide};
