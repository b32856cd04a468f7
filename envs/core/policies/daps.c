/* DAPS, delay-aware packet scheduling, with blind round-robin as its fallback
 * (mpsched.baselines.daps; Kuhn et al., seed 003, Algorithm 3 and eqs. (5)-(6)). */
#include "families.h"

/* Per-episode state: int64 words, P = n_paths. */
enum { DAPS_CURSOR = 0, DAPS_MADE_NS = 1, DAPS_HEADER = 2 };
#define DAPS_ORDER(st, P) ((st) + DAPS_HEADER)              /* the schedule's paths, in slot order */
#define DAPS_SLOTS(st, P) ((st) + DAPS_HEADER + (P))        /* slots left per path */
#define DAPS_REF_SRTT(st, P) ((st) + DAPS_HEADER + 2 * (P)) /* last sample, eqs. (5)-(6) */
#define DAPS_REF_CWND(st, P) ((st) + DAPS_HEADER + 3 * (P))
#define DAPS_NEXT_SAMPLE(st, P) ((st) + DAPS_HEADER + 4 * (P))
#define DAPS_STABLE(st, P) ((st) + DAPS_HEADER + 5 * (P))

static size_t daps_state_bytes(const mps_sim *s) { return sizeof(int64_t) * (DAPS_HEADER + 6 * (size_t)s->n_paths); }

static int64_t at_least_one(int64_t x) { return x > 1 ? x : 1; }

static void daps_reset(mps_sim *s, mps_policy *pol) {
    int64_t *st = pol->state;
    const int P = s->n_paths;
    st[DAPS_CURSOR] = 0;
    st[DAPS_MADE_NS] = -1;
    for (int i = 0; i < P; i++) {
        DAPS_ORDER(st, P)[i] = i;
        DAPS_REF_SRTT(st, P)[i] = s->paths[i].srtt_ns;
        DAPS_REF_CWND(st, P)[i] = s->paths[i].cwnd_bytes;
        DAPS_NEXT_SAMPLE(st, P)[i] = s->now + at_least_one(s->paths[i].srtt_ns);
    }
}

/* Sec. III-C: takes the samples that are due (one per path and RTT); whether every
 * path's last sample met eq. (5) (RTT within the tolerance) and eq. (6) (window neither
 * shrank nor grew by more than param[1] packets). */
static int daps_sample(mps_sim *s, mps_policy *pol) {
    int64_t *st = pol->state;
    const int P = s->n_paths;
    const double low = 1.0 - pol->param[0], high = 1.0 + pol->param[0];
    const double growth = pol->param[1] * (double)s->mss;
    int all_stable = P >= 2;
    for (int i = 0; i < P; i++) {
        if (s->now >= DAPS_NEXT_SAMPLE(st, P)[i]) {
            const int64_t srtt = s->paths[i].srtt_ns, cwnd = s->paths[i].cwnd_bytes;
            const double r = (double)DAPS_REF_SRTT(st, P)[i];
            const int64_t w = DAPS_REF_CWND(st, P)[i];
            DAPS_STABLE(st, P)[i] = r * low <= (double)srtt && (double)srtt <= r * high /* eq. (5) */
                                    && w <= cwnd && (double)cwnd <= (double)w + growth; /* eq. (6) */
            DAPS_REF_SRTT(st, P)[i] = srtt;
            DAPS_REF_CWND(st, P)[i] = cwnd;
            DAPS_NEXT_SAMPLE(st, P)[i] = s->now + at_least_one(srtt);
        }
        all_stable = all_stable && DAPS_STABLE(st, P)[i];
    }
    return all_stable;
}

/* Algorithm 1: ready paths in turn from a cursor, one packet per turn. */
static int32_t daps_blind_round_robin(mps_sim *s, int64_t *cursor, int j) {
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

/* Packets path i can send now: cwnd_i - unack_i in whole packets (one for a ready ideal path). */
static int64_t daps_free_packets(const mps_sim *s, int i) {
    const mps_path *p = &s->paths[i];
    if (!p->can_send) return 0;
    if (p->cwnd_bytes == 0) return 1;
    const int64_t room = p->cwnd_bytes - p->inflight_bytes;
    return (room > 0 ? room : 0) / s->mss;
}

/* Whether path a comes before path b in (srtt, index) order. */
static int daps_faster(const mps_sim *s, int a, int b) {
    const int64_t ra = s->paths[a].srtt_ns, rb = s->paths[b].srtt_ns;
    return ra < rb || (ra == rb && a < b);
}

/* Whether the sendable blocks still have more than limit bytes to send. */
static int daps_pending_exceeds(const mps_sim *s, int64_t limit) {
    int64_t pending = 0;
    for (int32_t w = 0; w < s->n_words; w++)
        for (uint64_t x = mps_sendable_word(s, w); x; x &= x - 1) {
            const mps_block *k = &s->blk[w * 64 + __builtin_ctzll(x)];
            pending += (int64_t)k->unsent_bytes + k->lost_pending_bytes;
            if (pending > limit) return 1;
        }
    return 0;
}

/* Algorithm 3, n paths: in (srtt, index) order each path but the slowest takes
 * min(floor(r_max / r_i), free_i) slots, the slowest its whole free window; when the
 * pending bytes fit the fastest path's free window, that path alone takes them. */
static void daps_make_schedule(mps_sim *s, mps_policy *pol) {
    int64_t *st = pol->state;
    const int P = s->n_paths;
    int64_t *order = DAPS_ORDER(st, P), *slots = DAPS_SLOTS(st, P);
    for (int i = 0; i < P; i++) { /* insertion sort, P <= 8 */
        int k = i;
        while (k > 0 && daps_faster(s, i, (int)order[k - 1])) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = i;
    }
    const int fastest = (int)order[0], slowest = (int)order[P - 1];
    for (int i = 0; i < P; i++) slots[i] = 0;
    const int64_t free_fastest = daps_free_packets(s, fastest);
    if (!daps_pending_exceeds(s, free_fastest * s->mss)) {
        slots[fastest] = free_fastest; /* Algorithm 3's precondition fails: the fast path alone */
    } else {
        const int64_t r_max = at_least_one(s->paths[slowest].srtt_ns);
        for (int k = 0; k < P - 1; k++) {
            const int i = (int)order[k];
            const int64_t eta = r_max / at_least_one(s->paths[i].srtt_ns);
            const int64_t free_i = daps_free_packets(s, i);
            slots[i] = eta < free_i ? eta : free_i; /* max_f = min(eta, cwnd_f - unack_f) */
        }
        slots[slowest] = daps_free_packets(s, slowest); /* cwnd_s - unack_s */
    }
    st[DAPS_MADE_NS] = s->now;
}

/* The first path in schedule order that can send and has a slot left, or -1. */
static int daps_owner(const mps_sim *s, const int64_t *st) {
    const int P = s->n_paths;
    for (int k = 0; k < P; k++) {
        const int i = (int)DAPS_ORDER(st, P)[k];
        if (DAPS_SLOTS(st, P)[i] > 0 && s->paths[i].can_send) return i;
    }
    return -1;
}

static int32_t daps_decide(mps_sim *s, mps_policy *pol, int j) {
    int64_t *st = pol->state;
    const int P = s->n_paths;
    if (!daps_sample(s, pol)) {
        for (int i = 0; i < P; i++) DAPS_SLOTS(st, P)[i] = 0;
        return daps_blind_round_robin(s, &st[DAPS_CURSOR], j);
    }
    int ready = 0;
    for (int i = 0; i < P; i++) ready += s->paths[i].can_send != 0;
    if (ready >= 2 && (st[DAPS_MADE_NS] != s->now || daps_owner(s, st) < 0)) daps_make_schedule(s, pol);
    const int owner = daps_owner(s, st);
    if (owner >= 0) {
        if (owner != j) return MPS_WAIT;
        DAPS_SLOTS(st, P)[j]--;
        return mps_first_sendable(s);
    }
    /* no slot for a path that can send: only j can; the fast path alone sends, a slower one waits */
    int fastest = 0;
    for (int i = 1; i < P; i++)
        if (daps_faster(s, i, fastest)) fastest = i;
    return j == fastest ? mps_first_sendable(s) : MPS_WAIT;
}

const mps_policy_def mps_policy_daps = {"daps", 2, daps_state_bytes, daps_reset, daps_decide};
