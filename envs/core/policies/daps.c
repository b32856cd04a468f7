/* DAPS, delay-aware packet scheduling, with blind round-robin as its fallback
 * (mpsched.baselines.daps; Kuhn et al., [daps], Algorithm 3 and eqs. (5)-(6)). */
#include "families.h"

/* Per-episode state: int64 words, P = n_paths. */
enum { DAPS_CURSOR = 0, DAPS_MADE_NS = 1, DAPS_TODO_FLOOR = 2, DAPS_HEADER = 3 };
#define DAPS_ORDER(st, P) ((st) + DAPS_HEADER)              /* send sequence: the schedule's paths, in slot order */
#define DAPS_SLOTS(st, P) ((st) + DAPS_HEADER + (P))        /* send sequence: slots left per path */
#define DAPS_REF_SRTT(st, P) ((st) + DAPS_HEADER + 2 * (P)) /* last sample, eqs. (5)-(6) */
#define DAPS_REF_CWND(st, P) ((st) + DAPS_HEADER + 3 * (P))
#define DAPS_NEXT_SAMPLE(st, P) ((st) + DAPS_HEADER + 4 * (P))
#define DAPS_STABLE(st, P) ((st) + DAPS_HEADER + 5 * (P))
#define DAPS_RUN_LO(st, P) ((st) + DAPS_HEADER + 6 * (P)) /* stream sequence: each path's run [lo, hi) */
#define DAPS_RUN_HI(st, P) ((st) + DAPS_HEADER + 7 * (P))

static size_t daps_state_bytes(const mps_sim *s) { return sizeof(int64_t) * (DAPS_HEADER + 8 * (size_t)s->n_paths); }

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
static int daps_pending_exceeds(const mps_sim *s, int64_t limit) { return mps_sendable_bytes(s) > limit; }

/* The paths in (srtt, index) order (insertion sort, P <= 8). */
static void daps_path_order(const mps_sim *s, int64_t *order) {
    for (int i = 0; i < s->n_paths; i++) {
        int k = i;
        while (k > 0 && daps_faster(s, i, (int)order[k - 1])) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = i;
    }
}

/* Algorithm 3, n paths, send sequence: in (srtt, index) order each path but the slowest
 * takes min(floor(r_max / r_i), free_i) slots, the slowest its whole free window; when the
 * pending bytes fit the fastest path's free window, that path alone takes them. */
static void daps_make_schedule(mps_sim *s, mps_policy *pol) {
    int64_t *st = pol->state;
    const int P = s->n_paths;
    int64_t *order = DAPS_ORDER(st, P), *slots = DAPS_SLOTS(st, P);
    daps_path_order(s, order);
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

/* Stream sequence (docs/model.md 6.2): runs of the blocks with bytes to send (the todo
 * set, in index order = stream order), one per path in (srtt, index) order. */

/* A cursor over the todo set. */
typedef struct {
    int32_t w;
    uint64_t x;
} daps_todo_cursor;

/* Where the todo set's first block can be: blocks below the first todo block of the last
 * schedule (the floor) had nothing to send then and have something again only when bytes
 * are declared lost, which keeps them in the lost set, at or above s->low_word. */
static daps_todo_cursor daps_todo_begin(const mps_sim *s, const int64_t *st) {
    const int32_t floor_word = (int32_t)(st[DAPS_TODO_FLOOR] >> 6);
    daps_todo_cursor c = {floor_word < s->low_word ? floor_word : s->low_word, 0};
    if (c.w <= s->hi_word) c.x = s->todo_set.bits[c.w];
    return c;
}

/* Passes n todo blocks; the next one (not passed), or -1 when fewer than n + 1 are left. */
static int32_t daps_todo_skip(const mps_sim *s, daps_todo_cursor *c, int64_t n) {
    while (c->w <= s->hi_word) {
        const int64_t here = __builtin_popcountll(c->x);
        if (n < here) {
            for (; n > 0; n--) c->x &= c->x - 1;
            return c->w * 64 + __builtin_ctzll(c->x);
        }
        n -= here;
        c->x = ++c->w <= s->hi_word ? s->todo_set.bits[c->w] : 0;
    }
    return -1;
}

/* Algorithm 3, n paths, stream sequence: in (srtt, index) order each path but the slowest
 * takes a run of eta = floor(r_max / r_i) blocks whatever its free window, the slowest its
 * free window (cwnd_s - unack_s); when the bytes to send fit the fastest path's free
 * window, that path alone takes them (Algorithm 3's precondition). */
static void daps_make_runs(mps_sim *s, mps_policy *pol) {
    int64_t *st = pol->state;
    const int P = s->n_paths;
    int64_t *order = DAPS_ORDER(st, P);
    daps_path_order(s, order);
    int64_t *lo = DAPS_RUN_LO(st, P), *hi = DAPS_RUN_HI(st, P);
    for (int i = 0; i < P; i++) lo[i] = hi[i] = 0;
    const int fastest = (int)order[0], slowest = (int)order[P - 1];
    daps_todo_cursor c = daps_todo_begin(s, st);
    const int32_t first = daps_todo_skip(s, &c, 0);
    st[DAPS_TODO_FLOOR] = first >= 0 ? first : s->n_arrived;
    const int64_t limit = daps_free_packets(s, fastest) * s->mss;
    int64_t pending = 0;
    daps_todo_cursor p = c;
    for (int32_t b = first; b >= 0 && pending <= limit; b = daps_todo_skip(s, &p, 1))
        pending += (int64_t)s->blk[b].unsent_bytes + s->blk[b].lost_pending_bytes;
    if (pending <= limit) {
        hi[fastest] = s->n_arrived; /* Algorithm 3's precondition fails: the fast path alone */
    } else {
        const int64_t r_max = at_least_one(s->paths[slowest].srtt_ns);
        int64_t start = 0;
        for (int k = 0; k < P; k++) {
            const int i = (int)order[k];
            const int64_t share = i == slowest ? daps_free_packets(s, i) /* cwnd_s - unack_s */
                                               : r_max / at_least_one(s->paths[i].srtt_ns); /* eta */
            const int32_t next = daps_todo_skip(s, &c, share);
            lo[i] = start;
            hi[i] = next >= 0 ? next : s->n_arrived; /* up to the next path's first block */
            start = hi[i];
            if (next < 0) break; /* the sender buffer is exhausted */
        }
    }
    st[DAPS_MADE_NS] = s->now;
}

/* The first sendable block of path i's run, or -1. Retransmissions are the fast path's
 * (Sec. III-B): a slower path's run holds new data only (blocks outside the lost set). */
static int32_t daps_run_first(const mps_sim *s, const int64_t *st, int i) {
    const int P = s->n_paths;
    const int64_t lo = DAPS_RUN_LO(st, P)[i], hi = DAPS_RUN_HI(st, P)[i];
    if (lo >= hi) return -1;
    const int fast = i == (int)DAPS_ORDER(st, P)[0];
    const int32_t lo_word = (int32_t)(lo >> 6), hi_word = (int32_t)((hi - 1) >> 6);
    for (int32_t w = lo_word > s->low_word ? lo_word : s->low_word; w <= hi_word; w++) {
        uint64_t x = mps_sendable_word(s, w);
        if (!fast) x &= ~s->lost_set.bits[w];
        if (w == lo_word) x &= ~UINT64_C(0) << (lo & 63);
        if (w == hi_word) x &= ~UINT64_C(0) >> (63 - ((hi - 1) & 63));
        if (x) return w * 64 + __builtin_ctzll(x);
    }
    return -1;
}

/* Whether some path that can send has a sendable block in its run. */
static int daps_run_work(const mps_sim *s, const int64_t *st) {
    for (int i = 0; i < s->n_paths; i++)
        if (s->paths[i].can_send && daps_run_first(s, st, i) >= 0) return 1;
    return 0;
}

static int daps_fastest(const mps_sim *s) {
    int fastest = 0;
    for (int i = 1; i < s->n_paths; i++)
        if (daps_faster(s, i, fastest)) fastest = i;
    return fastest;
}

/* Capacity on a slower path only: the first sendable block without bytes to retransmit
 * that lies outside every other path's run, or -1. */
static int32_t daps_outside_other_runs(const mps_sim *s, const int64_t *st, int j) {
    const int P = s->n_paths;
    const int64_t *lo = DAPS_RUN_LO(st, P), *hi = DAPS_RUN_HI(st, P);
    for (int32_t w = s->low_word; w <= s->hi_word; w++) {
        uint64_t x = mps_sendable_word(s, w) & ~s->lost_set.bits[w];
        while (x) {
            const int32_t b = w * 64 + __builtin_ctzll(x);
            int theirs = 0;
            for (int i = 0; i < P && !theirs; i++) theirs = i != j && lo[i] <= b && b < hi[i];
            if (!theirs) return b;
            x &= x - 1;
        }
    }
    return -1;
}

/* Stream sequence: j sends the first sendable block of its run; without one it waits
 * while another path that can send has one (the schedule goes out before anything beyond
 * it, Algorithm 2); otherwise the fastest path sends the first sendable block and a
 * slower one the first outside the others' runs (the slides: "as much packets as
 * possible, considering the rwnd and the last generated S"). */
static int32_t daps_decide_stream(mps_sim *s, mps_policy *pol, int j, int ready) {
    const int64_t *st = pol->state;
    if (ready >= 2 && (st[DAPS_MADE_NS] != s->now || !daps_run_work(s, st))) daps_make_runs(s, pol);
    const int32_t b = daps_run_first(s, st, j);
    if (b >= 0) return b;
    if (daps_run_work(s, st)) return MPS_WAIT;
    if (j == daps_fastest(s)) return mps_first_sendable(s);
    const int32_t outside = daps_outside_other_runs(s, st, j);
    return outside >= 0 ? outside : MPS_WAIT;
}

/* Send sequence: the owner of the next slot sends the oldest sendable block. */
static int32_t daps_decide_send(mps_sim *s, mps_policy *pol, int j, int ready) {
    int64_t *st = pol->state;
    const int P = s->n_paths;
    if (ready >= 2 && (st[DAPS_MADE_NS] != s->now || daps_owner(s, st) < 0)) daps_make_schedule(s, pol);
    const int owner = daps_owner(s, st);
    if (owner >= 0) {
        if (owner != j) return MPS_WAIT;
        DAPS_SLOTS(st, P)[j]--;
    }
    /* j's slot, or no slot for a path that can send: j alone can, and sends as much as it may */
    return mps_first_sendable(s);
}

static int32_t daps_decide(mps_sim *s, mps_policy *pol, int j) {
    int64_t *st = pol->state;
    const int P = s->n_paths;
    if (!daps_sample(s, pol)) {
        for (int i = 0; i < P; i++) DAPS_SLOTS(st, P)[i] = DAPS_RUN_LO(st, P)[i] = DAPS_RUN_HI(st, P)[i] = 0;
        return mps_round_robin_turn(s, &st[DAPS_CURSOR], j); /* Algorithm 1 */
    }
    int ready = 0;
    for (int i = 0; i < P; i++) ready += s->paths[i].can_send != 0;
    return s->stream_seq ? daps_decide_stream(s, pol, j, ready) : daps_decide_send(s, pol, j, ready);
}

static const mps_param_def daps_params[] = {{"rtt_tolerance", 0.0, 0x1.fffffffffffffp-1 /* largest double below 1 */}, {"cwnd_growth_packets", 0.0, 1e6}};
const mps_policy_def mps_policy_daps = {"daps", MPS_PARAMS(daps_params), daps_state_bytes, daps_reset, daps_decide};
