/* Peekaboo's online stage (mpsched.baselines.peekaboo): MinRTT, and a LinUCB bandit that
 * chooses between sending on the slower ready path and waiting for the fastest one.
 * The reals are binary64, computed with the same operations in the same order as the
 * Python specification. param[0] = alpha, param[1] = p_wait, param[2] = p_send. */
#include <math.h>

#include "../rng.h"
#include "families.h"

enum { POLICY_STREAM = 192 }; /* docs/model.md section 5 */

enum { FEATURES = 6, WAIT_ARM = 0, SEND_ARM = 1, MAX_PENDING = 6000 };

typedef struct {
    double x[FEATURES];
    int64_t at_ns, packet;
    int32_t path;
} pending;

/* One arm: A^-1, b, and the decisions waiting for their reward (a ring). */
typedef struct {
    double a_inverse[FEATURES][FEATURES];
    double b[FEATURES];
    int32_t head, count;
} arm_state;

typedef struct {
    arm_state arm[2];
    uint64_t rng[4];
    int32_t waiting;
} peekaboo_state;

/* MAX_PENDING decisions per arm wait for their reward at most (the specification's
 * bound: a wait whose packet is never sent, its path no longer the fastest, holds up the
 * arm's later ones until it is dropped as the oldest). */
static size_t peekaboo_state_bytes(const mps_sim *s) {
    return sizeof(peekaboo_state) + 2 * (size_t)MAX_PENDING * sizeof(pending);
}

static pending *ring_of(mps_policy *pol, int arm) {
    peekaboo_state *st = pol->state;
    return (pending *)(st + 1) + (size_t)arm * MAX_PENDING;
}

static void peekaboo_reset(mps_sim *s, mps_policy *pol) {
    peekaboo_state *st = pol->state;
    for (int a = 0; a < 2; a++)
        for (int i = 0; i < FEATURES; i++)
            for (int k = 0; k < FEATURES; k++) st->arm[a].a_inverse[i][k] = i == k ? 1.0 : 0.0;
    mps_rng_seed(st->rng, s->seed, POLICY_STREAM);
}

static double dot(const double *a, const double *b) {
    double total = 0.0;
    for (int i = 0; i < FEATURES; i++) total += a[i] * b[i];
    return total;
}

static void times(double m[FEATURES][FEATURES], const double *x, double *out) {
    for (int i = 0; i < FEATURES; i++) out[i] = dot(m[i], x);
}

/* LinUCB's U_a = theta_a . x + alpha * sqrt(x . A_a^-1 x). */
static double score(arm_state *a, const double *x, double alpha) {
    double theta[FEATURES], v[FEATURES];
    times(a->a_inverse, a->b, theta);
    times(a->a_inverse, x, v);
    const double spread = dot(x, v);
    return dot(theta, x) + alpha * sqrt(spread > 0.0 ? spread : 0.0);
}

/* A += x x^T by Sherman-Morrison on A^-1, b += reward x. */
static void learn(arm_state *a, const double *x, double reward) {
    double v[FEATURES];
    times(a->a_inverse, x, v);
    const double denominator = 1.0 + dot(x, v);
    for (int i = 0; i < FEATURES; i++)
        for (int k = 0; k < FEATURES; k++) a->a_inverse[i][k] -= v[i] * v[k] / denominator;
    for (int i = 0; i < FEATURES; i++) a->b[i] += reward * x[i];
}

static void remember(mps_policy *pol, int arm, const double *x, int64_t now, int path, int64_t packet) {
    arm_state *a = &((peekaboo_state *)pol->state)->arm[arm];
    pending *ring = ring_of(pol, arm);
    if (a->count == MAX_PENDING) { /* the oldest is dropped unrewarded */
        a->head = (a->head + 1) % MAX_PENDING;
        a->count--;
    }
    pending *d = &ring[(a->head + a->count) % MAX_PENDING];
    for (int i = 0; i < FEATURES; i++) d->x[i] = x[i];
    d->at_ns = now;
    d->path = path;
    d->packet = packet;
    a->count++;
}

/* Rewards mss / ((now - t0) in ms) of the decisions whose packet left its path's
 * unresolved packets, each arm's oldest first. */
static void collect_rewards(mps_sim *s, mps_policy *pol) {
    for (int arm = 0; arm < 2; arm++) {
        arm_state *a = &((peekaboo_state *)pol->state)->arm[arm];
        pending *ring = ring_of(pol, arm);
        while (a->count > 0) {
            const pending *d = &ring[a->head];
            if (d->packet >= s->paths[d->path].oldest_pn) break;
            const int64_t elapsed = s->now - d->at_ns;
            learn(a, d->x, (double)s->mss / ((double)(elapsed > 1 ? elapsed : 1) / 1e6));
            a->head = (a->head + 1) % MAX_PENDING;
            a->count--;
        }
    }
}

static void context(const mps_sim *s, int f, int j, double *x) {
    const mps_path *pf = &s->paths[f], *ps = &s->paths[j];
    if (pf->srtt_ns <= 0 || ps->srtt_ns <= 0) {
        for (int i = 0; i < FEATURES; i++) x[i] = 0.0;
        return;
    }
    const double ms_f = (double)pf->srtt_ns / 1e6, ms_s = (double)ps->srtt_ns / 1e6;
    double swnd = 0.0;
    if (s->receiver == MPS_RECEIVER_IN_ORDER) {
        const int64_t left = s->rbuf_bytes - (s->conn_next_dsn - s->data_acked);
        swnd = (double)(left > 0 ? left : 0);
    }
    x[0] = mps_window_bytes(pf) / ms_f;
    x[1] = (double)ps->inflight_bytes / ms_s;
    x[2] = swnd / ms_f;
    x[3] = swnd / ms_s;
    x[4] = (double)pf->inflight_bytes / ms_f;
    x[5] = mps_window_bytes(ps) / ms_s;
}

/* The path with the smallest (srtt, index) among those not potentially failed, or among
 * all when every path is. */
static int fastest_usable_path(const mps_sim *s) {
    int best = -1;
    for (int pass = 0; pass < 2 && best < 0; pass++)
        for (int i = 0; i < s->n_paths; i++) {
            if (pass == 0 && s->paths[i].rto_streak > 0) continue;
            if (best < 0 || s->paths[i].srtt_ns < s->paths[best].srtt_ns) best = i;
        }
    return best;
}

static int32_t peekaboo_decide(mps_sim *s, mps_policy *pol, int j) {
    peekaboo_state *st = pol->state;
    collect_rewards(s, pol);
    const int f = fastest_usable_path(s);
    if (s->paths[f].can_send) {
        if (j != f) return MPS_WAIT;
        st->waiting = 0;
        return mps_first_sendable(s);
    }
    if (mps_min_rtt_ready_path(s) != j || st->waiting) return MPS_WAIT;
    double x[FEATURES];
    context(s, f, j, x);
    const int prefers_send = score(&st->arm[SEND_ARM], x, pol->param[0]) >= score(&st->arm[WAIT_ARM], x, pol->param[0]);
    const double u = (double)(mps_rng_next(st->rng) >> 11) * 0x1.0p-53;
    if (prefers_send ? u < pol->param[2] : u >= pol->param[1]) {
        remember(pol, SEND_ARM, x, s->now, j, s->paths[j].next_pn);
        return mps_first_sendable(s);
    }
    st->waiting = 1;
    remember(pol, WAIT_ARM, x, s->now, f, s->paths[f].next_pn);
    return MPS_WAIT;
}

static const mps_param_def peekaboo_params[] = {{"alpha", 0.0, 100.0}, {"p_wait", 0.0, 1.0}, {"p_send", 0.0, 1.0}};
const mps_policy_def mps_policy_peekaboo = {"peekaboo", MPS_PARAMS(peekaboo_params), peekaboo_state_bytes,
                                            peekaboo_reset, peekaboo_decide};
