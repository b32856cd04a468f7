/* DEMS, DAMS, DAMS-C and DAMS-Robust (mpsched.baselines.dams): block-splitting schedulers
 * of the DAMS paper [dams]. The Python module is the specification; every operation
 * on doubles below is the same, in the same order. */
#include <float.h>
#include <math.h>

#include "families.h"

enum { DAMS_PRESERVED = 1, DAMS_DELAYED = 2 };

/* Per-episode state: a header, then per block the epoch of the plan that last scheduled
 * it, its per-path byte targets, the pending list and the victim heap with its credits
 * for planning, and its status (preserved or delayed). */
typedef struct {
    int64_t epoch;
    int64_t planned_arrived;
    int64_t planned_expiry;
    int64_t planned_head;
    double rate0[MPS_MAX_PATHS];
    double owd0[MPS_MAX_PATHS];
    /* hold_gain > 0: each path's largest delivery rate seen at a decision, per bucket of
     * half the rate window (the current bucket and the one before it) */
    int64_t rate_bucket[MPS_MAX_PATHS];
    int64_t rate_bucket_max[MPS_MAX_PATHS];
    int64_t rate_prev_max[MPS_MAX_PATHS];
} dams_head;

typedef struct {
    dams_head *h;
    int64_t *block_epoch; /* n_blocks */
    int64_t *target;      /* n_blocks x n_paths: cumulative bytes sent the plan allows */
    int32_t *pending;     /* n_blocks */
    int32_t *heap;        /* n_blocks: positions in pending, smallest credit on top */
    double *credit;       /* n_blocks: the normalized credit d of each position */
    uint8_t *status;      /* n_blocks */
} dams_state;

/* How a family member runs. */
typedef struct {
    int edf;             /* DAMS family: EDF with selective preservation; else DEMS's FIFO */
    int arrive_together; /* split so the parts arrive together (DEMS, DAMS-C) */
    double alpha;        /* eq. (2) safeguard (DAMS-Robust), 0 otherwise */
    double threshold;    /* relative change that counts as a network change */
    int forward_queue;   /* one-way delay srtt - min_rtt / 2: the window's queue is on the forward path */
    double hold_gain;    /* > 0: the rate is the windowed delivery rate, in flight capped at gain x rate x min_rtt */
    int64_t half_window_ns;
} dams_mode;

#define DAMS_NO_EXPIRY INT64_MAX
#define DAMS_BITS_PER_BYTE_NS 8e9
#define DAMS_NO_BUCKET (-2)

static size_t dams_state_bytes(const mps_sim *s) {
    const size_t n = (size_t)s->n_blocks, P = (size_t)s->n_paths;
    return sizeof(dams_head) + n * sizeof(int64_t) * (1 + P) + n * sizeof(double) + n * sizeof(int32_t) * 2 + n;
}

static dams_state dams_view(const mps_sim *s, mps_policy *pol) {
    const size_t n = (size_t)s->n_blocks, P = (size_t)s->n_paths;
    char *p = pol->state;
    dams_state v;
    v.h = (dams_head *)p;
    p += sizeof(dams_head);
    v.block_epoch = (int64_t *)p;
    p += n * sizeof(int64_t);
    v.target = (int64_t *)p;
    p += n * P * sizeof(int64_t);
    v.credit = (double *)p;
    p += n * sizeof(double);
    v.pending = (int32_t *)p;
    p += n * sizeof(int32_t);
    v.heap = (int32_t *)p;
    p += n * sizeof(int32_t);
    v.status = (uint8_t *)p;
    return v;
}

static void dams_reset(mps_sim *s, mps_policy *pol) {
    dams_state v = dams_view(s, pol);
    v.h->planned_expiry = DAMS_NO_EXPIRY;
    v.h->planned_head = -1;
    for (int i = 0; i < MPS_MAX_PATHS; i++) v.h->rate_bucket[i] = DAMS_NO_BUCKET;
}

static inline int64_t remaining_bytes(const mps_block *k) {
    return (int64_t)k->unsent_bytes + (int64_t)k->lost_pending_bytes;
}

/* Sorts idx[0..n) by (key[idx], idx). */
static void sort_by_key(int *idx, int n, const double *key) {
    for (int a = 1; a < n; a++) {
        const int v = idx[a];
        int b = a - 1;
        while (b >= 0 && (key[idx[b]] > key[v] || (key[idx[b]] == key[v] && idx[b] > v))) {
            idx[b + 1] = idx[b];
            b--;
        }
        idx[b + 1] = v;
    }
}

/* water_fill: level F with sum_j max(0, F - base_j) q_j = rem; shares in x. */
static double water_fill(int64_t rem, const double *base, const double *q, int P, double *x) {
    int usable[MPS_MAX_PATHS];
    int n = 0;
    for (int i = 0; i < P; i++) {
        x[i] = 0.0;
        if (q[i] > 0.0) usable[n++] = i;
    }
    if (n == 0) return 0.0;
    sort_by_key(usable, n, base);
    double sum_q = 0.0, sum_bq = 0.0, level = 0.0;
    int members = 0;
    for (int k = 0; k < n; k++) {
        const int i = usable[k];
        sum_q += q[i];
        sum_bq += base[i] * q[i];
        level = ((double)rem + sum_bq) / sum_q;
        members = k + 1;
        if (members == n || level <= base[usable[members]]) break;
    }
    for (int k = 0; k < members; k++) {
        const int i = usable[k];
        x[i] = (level - base[i]) * q[i];
    }
    return level;
}

/* split_block: whole bytes per path in a[], summing to rem; advances free[]. */
static void split_block(int64_t rem, double *free_at, const double *q, const double *owd, const int *owd_order,
                        int P, int arrive_together, const double *latest, int64_t *a) {
    double x[MPS_MAX_PATHS], end[MPS_MAX_PATHS], base[MPS_MAX_PATHS] = {0.0};
    for (int i = 0; i < P; i++) base[i] = arrive_together ? free_at[i] + owd[i] : free_at[i];
    const double level = water_fill(rem, base, q, P, x);
    for (int i = 0; i < P; i++)
        end[i] = x[i] > 0.0 ? (arrive_together ? level - owd[i] : level) : free_at[i];
    if (latest) {
        double excess[MPS_MAX_PATHS], room[MPS_MAX_PATHS];
        double total_excess = 0.0;
        for (int i = 0; i < P; i++) {
            excess[i] = 0.0;
            if (x[i] > 0.0 && level > latest[i]) {
                const double cut = free_at[i] > latest[i] ? free_at[i] : latest[i];
                double late = (level - cut) * q[i];
                if (late > x[i]) late = x[i];
                if (late > 0.0) {
                    excess[i] = late;
                    total_excess += late;
                }
            }
        }
        if (total_excess > 0.0) {
            double total_room = 0.0;
            for (int i = 0; i < P; i++) room[i] = 0.0;
            for (int k = 0; k < P; k++) {
                const int i = owd_order[k];
                if (q[i] > 0.0 && end[i] < latest[i]) {
                    room[i] = (latest[i] - end[i]) * q[i];
                    total_room += room[i];
                }
            }
            const double moved = total_excess < total_room ? total_excess : total_room;
            double left = moved;
            for (int k = P - 1; k >= 0; k--) {
                const int i = owd_order[k];
                if (excess[i] > 0.0 && left > 0.0) {
                    const double take = excess[i] < left ? excess[i] : left;
                    x[i] -= take;
                    end[i] -= take / q[i];
                    left -= take;
                }
            }
            left = moved;
            for (int k = 0; k < P; k++) {
                const int i = owd_order[k];
                if (room[i] > 0.0 && left > 0.0) {
                    const double give = room[i] < left ? room[i] : left;
                    x[i] += give;
                    end[i] += give / q[i];
                    left -= give;
                }
            }
        }
    }
    for (int i = 0; i < P; i++) free_at[i] = end[i];
    /* _integer_shares */
    int64_t assigned = 0;
    for (int k = 0; k < P; k++) {
        const int i = owd_order[k];
        int64_t n = x[i] > 0.0 ? (int64_t)x[i] : 0;
        if (n > rem - assigned) n = rem - assigned;
        a[i] = n;
        assigned += n;
    }
    int first = owd_order[0];
    for (int k = 0; k < P; k++)
        if (q[owd_order[k]] > 0.0) {
            first = owd_order[k];
            break;
        }
    a[first] += rem - assigned;
}

/* With hold_gain > 0, each path's rate is the largest delivery rate seen at a decision
 * over the last one to two half windows (cwnd / srtt until there is one): the bucket of
 * now / half_window_ns and the bucket just before it. */
static void update_rate_windows(const mps_sim *s, dams_head *h, const dams_mode *m) {
    const int64_t k = s->now / m->half_window_ns;
    for (int i = 0; i < s->n_paths; i++) {
        if (k != h->rate_bucket[i]) {
            h->rate_prev_max[i] = k == h->rate_bucket[i] + 1 ? h->rate_bucket_max[i] : 0;
            h->rate_bucket[i] = k;
            h->rate_bucket_max[i] = 0;
        }
        const int64_t sample = s->paths[i].delivery_rate_bps;
        if (sample > h->rate_bucket_max[i]) h->rate_bucket_max[i] = sample;
    }
}

static double windowed_rate(const mps_sim *s, const dams_head *h, int i) {
    const int64_t best = h->rate_bucket_max[i] > h->rate_prev_max[i] ? h->rate_bucket_max[i] : h->rate_prev_max[i];
    return best > 0 ? (double)best : s->paths[i].rate_bps;
}

/* The hold: path j waits while its bytes in flight reach the larger of two packets and
 * hold_gain x its rate x its min_rtt. */
static int32_t hold(const mps_sim *s, const dams_mode *m, const double *rate, int j, int32_t b) {
    if (b == MPS_WAIT || m->hold_gain <= 0.0) return b;
    const mps_path *p = &s->paths[j];
    const double cap = m->hold_gain * rate[j] * (double)p->min_rtt_ns / DAMS_BITS_PER_BYTE_NS;
    if (p->inflight_bytes >= 2 * (int64_t)s->mss && (double)p->inflight_bytes >= cap) return MPS_WAIT;
    return b;
}

/* Rates (the windowed delivery rate with hold_gain > 0, docs/model.md 7.16), one-way delays
 * (srtt + alpha * rttvar) / 2 and their order; with forward_queue srtt is replaced by
 * 2 srtt - min_rtt (docs/model.md 7.15). */
static void read_paths(const mps_sim *s, const dams_state *v, const dams_mode *m, double *rate, double *owd,
                       double *q, int *owd_order) {
    const int P = s->n_paths;
    if (m->hold_gain > 0.0) update_rate_windows(s, v->h, m);
    for (int i = 0; i < P; i++) {
        const mps_path *p = &s->paths[i];
        const int64_t srtt = m->forward_queue ? 2 * p->srtt_ns - p->min_rtt_ns : p->srtt_ns;
        rate[i] = m->hold_gain > 0.0 ? windowed_rate(s, v->h, i) : p->rate_bps;
        owd[i] = ((double)srtt + m->alpha * (double)p->rttvar_ns) * 0.5;
        q[i] = rate[i] / DAMS_BITS_PER_BYTE_NS;
        owd_order[i] = i;
    }
    sort_by_key(owd_order, P, owd);
}

static int network_changed(const dams_head *h, const dams_mode *m, const double *rate, const double *owd, int P) {
    const double th = m->threshold;
    for (int i = 0; i < P; i++) {
        if (fabs(rate[i] - h->rate0[i]) > th * h->rate0[i]) return 1;
        if (fabs(owd[i] - h->owd0[i]) > th * h->owd0[i]) return 1;
    }
    return 0;
}

static int64_t planned_left(const mps_sim *s, const dams_state *v, int32_t b) {
    const int P = s->n_paths;
    const int64_t *target = v->target + (size_t)b * P;
    const int64_t *sent = s->blk_bytes_sent + (size_t)b * P;
    int64_t left = 0;
    for (int i = 0; i < P; i++)
        if (target[i] > sent[i]) left += target[i] - sent[i];
    return left;
}

static void record(const mps_sim *s, dams_state *v, int32_t b, const int64_t *shares, int status) {
    const int P = s->n_paths;
    int64_t *target = v->target + (size_t)b * P;
    const int64_t *sent = s->blk_bytes_sent + (size_t)b * P;
    for (int i = 0; i < P; i++) target[i] = sent[i] + shares[i];
    v->block_epoch[b] = v->h->epoch;
    v->status[b] = (uint8_t)status;
}

static inline int may_send(const mps_sim *s, const dams_state *v, int32_t b, int j) {
    const size_t at = (size_t)b * s->n_paths + j;
    return s->blk_bytes_sent[at] < v->target[at];
}

static inline int is_cancelled(const mps_sim *s, int32_t b) { return (s->blk[b].flags & MPS_BLK_CANCELLED) != 0; }

/* The victim order of selective preservation: the smallest credit, and among equal
 * credits the block preserved last (the specification's scan keeps the last minimum). */
static inline int victim_before(const double *credit, int32_t a, int32_t b) {
    return credit[a] < credit[b] || (credit[a] == credit[b] && a > b);
}

static void victim_sift(const double *credit, int32_t *heap, int n, int at) {
    for (;;) {
        int first = at;
        const int left = 2 * at + 1, right = left + 1;
        if (left < n && victim_before(credit, heap[left], heap[first])) first = left;
        if (right < n && victim_before(credit, heap[right], heap[first])) first = right;
        if (first == at) return;
        const int32_t t = heap[at];
        heap[at] = heap[first];
        heap[first] = t;
        at = first;
    }
}

static void victim_push(const double *credit, int32_t *heap, int n, int32_t t) {
    int at = n;
    while (at > 0 && victim_before(credit, t, heap[(at - 1) / 2])) {
        heap[at] = heap[(at - 1) / 2];
        at = (at - 1) / 2;
    }
    heap[at] = t;
}

/* _plan_edf: selective preservation (eq. (1)) and the split of every block in order. */
static void plan_edf(mps_sim *s, dams_state *v, const dams_mode *m, int n, const double *rate, const double *owd,
                     const double *q, const int *owd_order) {
    const int P = s->n_paths;
    const int64_t now = s->now;
    v->h->epoch++;
    int nh = 0;
    int64_t c_seq = 0;
    /* the preserved blocks are the pending ones in order less the victims; a victim is
     * the preserved, uncancelled block with the smallest normalized credit d = c / (r s) */
    for (int t = 0; t < n; t++) {
        const int32_t b = v->pending[t];
        const mps_block *k = &s->blk[b];
        v->status[b] = DAMS_PRESERVED;
        c_seq += remaining_bytes(k);
        if (k->flags & MPS_BLK_CANCELLED) continue;
        v->credit[t] = k->weight / (double)remaining_bytes(k);
        victim_push(v->credit, v->heap, nh++, t);
        const double slack = (double)(k->deadline_ns - now);
        double capacity = 0.0;
        for (int i = 0; i < P; i++) {
            const double window = slack - owd[i];
            if (window > 0.0) capacity += window * q[i];
        }
        while ((double)c_seq > capacity) {
            const int32_t vb = v->pending[v->heap[0]];
            v->heap[0] = v->heap[--nh];
            victim_sift(v->credit, v->heap, nh, 0);
            v->status[vb] = DAMS_DELAYED;
            c_seq -= remaining_bytes(&s->blk[vb]);
            if (vb == b) break;
        }
    }
    double free_at[MPS_MAX_PATHS], latest[MPS_MAX_PATHS];
    int64_t shares[MPS_MAX_PATHS];
    for (int i = 0; i < P; i++) free_at[i] = 0.0;
    for (int t = 0; t < n; t++) {
        const int32_t b = v->pending[t];
        if (v->status[b] != DAMS_PRESERVED) continue;
        const mps_block *k = &s->blk[b];
        const double *late = NULL;
        if (!m->arrive_together) {
            const double slack = (double)(k->deadline_ns - now);
            for (int i = 0; i < P; i++) latest[i] = slack - owd[i];
            late = latest;
        }
        split_block(remaining_bytes(k), free_at, q, owd, owd_order, P, m->arrive_together, late, shares);
        record(s, v, b, shares, DAMS_PRESERVED);
    }
    /* pending is in deadline rank order, so the delayed blocks follow by (deadline,
     * index), as the specification sorts them */
    for (int t = 0; t < n; t++) {
        const int32_t b = v->pending[t];
        if (v->status[b] != DAMS_DELAYED) continue;
        split_block(remaining_bytes(&s->blk[b]), free_at, q, owd, owd_order, P, m->arrive_together, NULL, shares);
        record(s, v, b, shares, DAMS_DELAYED);
    }
    int64_t expiry = DAMS_NO_EXPIRY;
    for (int t = 0; t < n; t++) {
        const mps_block *k = &s->blk[v->pending[t]];
        if (!(k->flags & MPS_BLK_CANCELLED) && k->deadline_ns < expiry) expiry = k->deadline_ns;
    }
    v->h->planned_expiry = expiry;
    v->h->planned_arrived = s->n_arrived;
    for (int i = 0; i < P; i++) {
        v->h->rate0[i] = rate[i];
        v->h->owd0[i] = owd[i];
    }
}

static int32_t decide_edf(mps_sim *s, mps_policy *pol, int j, const dams_mode *m) {
    dams_state v = dams_view(s, pol);
    const int P = s->n_paths;
    const int64_t now = s->now;
    double rate[MPS_MAX_PATHS], owd[MPS_MAX_PATHS], q[MPS_MAX_PATHS];
    int owd_order[MPS_MAX_PATHS];
    read_paths(s, &v, m, rate, owd, q, owd_order);
    int64_t min_rttvar = s->paths[0].rttvar_ns;
    for (int i = 1; i < P; i++)
        if (s->paths[i].rttvar_ns < min_rttvar) min_rttvar = s->paths[i].rttvar_ns;
    const double guard = m->alpha * (double)min_rttvar * 0.5;
    /* the sender buffer by deadline rank; blocks past their deadline are cancelled */
    int need = 0, n = 0;
    for (int32_t w = mps_todo_rank_floor(s); w <= s->dl_hi_word; w++) {
        uint64_t x = s->todo_set.dl_bits[w];
        while (x) {
            const int32_t b = s->dl_order[w * 64 + __builtin_ctzll(x)];
            x &= x - 1;
            const mps_block *k = &s->blk[b];
            if (!(k->flags & MPS_BLK_CANCELLED) && (double)(k->deadline_ns - now) < guard) {
                mps_cancel(s, b);
                need = 1;
                if (remaining_bytes(k) == 0) continue;
            }
            v.pending[n++] = b;
        }
    }
    if (!need)
        need = s->n_arrived != v.h->planned_arrived || now > v.h->planned_expiry ||
               network_changed(v.h, m, rate, owd, P);
    if (!need)
        for (int t = 0; t < n; t++) {
            const int32_t b = v.pending[t];
            if (v.block_epoch[b] != v.h->epoch || remaining_bytes(&s->blk[b]) > planned_left(s, &v, b)) {
                need = 1;
                break;
            }
        }
    mps_charge_work(s, need ? 2 * (int64_t)n : n);
    if (need) plan_edf(s, &v, m, n, rate, owd, q, owd_order);
    int32_t first_delayed = MPS_WAIT;
    for (int t = 0; t < n; t++) {
        const int32_t b = v.pending[t];
        if (!mps_block_sendable(s, b) || !may_send(s, &v, b, j)) continue;
        if (v.status[b] == DAMS_PRESERVED) return hold(s, m, rate, j, b);
        if (first_delayed == MPS_WAIT) first_delayed = b;
    }
    return hold(s, m, rate, j, first_delayed);
}

static int32_t decide_fifo(mps_sim *s, mps_policy *pol, int j, const dams_mode *m) {
    dams_state v = dams_view(s, pol);
    const int P = s->n_paths;
    double rate[MPS_MAX_PATHS], owd[MPS_MAX_PATHS], q[MPS_MAX_PATHS];
    int owd_order[MPS_MAX_PATHS];
    read_paths(s, &v, m, rate, owd, q, owd_order);
    int32_t head = -1;
    for (int32_t w = mps_todo_floor(s); w <= s->hi_word && head < 0; w++) {
        const uint64_t x = s->todo_set.bits[w];
        if (x) head = w * 64 + __builtin_ctzll(x);
    }
    if (head < 0) return MPS_WAIT;
    if (head != v.h->planned_head || network_changed(v.h, m, rate, owd, P) ||
        remaining_bytes(&s->blk[head]) > planned_left(s, &v, head)) {
        double free_at[MPS_MAX_PATHS];
        int64_t shares[MPS_MAX_PATHS];
        for (int i = 0; i < P; i++) free_at[i] = 0.0;
        split_block(remaining_bytes(&s->blk[head]), free_at, q, owd, owd_order, P, 1, NULL, shares);
        record(s, &v, head, shares, DAMS_PRESERVED);
        v.h->planned_head = head;
        for (int i = 0; i < P; i++) {
            v.h->rate0[i] = rate[i];
            v.h->owd0[i] = owd[i];
        }
    }
    if (may_send(s, &v, head, j) && mps_block_sendable(s, head)) return hold(s, m, rate, j, head);
    return MPS_WAIT;
}

/* The hold's parameters, after the family's own: hold_gain, rate_window_ms. */
static void read_hold(const mps_policy *pol, int at, dams_mode *m) {
    m->hold_gain = pol->param[at];
    const int64_t half = (int64_t)(pol->param[at + 1] * 500000.0);
    m->half_window_ns = half > 0 ? half : 1;
}

static int32_t dems_decide(mps_sim *s, mps_policy *pol, int j) {
    dams_mode m = {0, 1, 0.0, pol->param[0], pol->param[1] != 0.0, 0.0, 1};
    read_hold(pol, 2, &m);
    return decide_fifo(s, pol, j, &m);
}

static int32_t dams_decide(mps_sim *s, mps_policy *pol, int j) {
    dams_mode m = {1, 0, 0.0, pol->param[0], pol->param[1] != 0.0, 0.0, 1};
    read_hold(pol, 2, &m);
    return decide_edf(s, pol, j, &m);
}

static int32_t dams_c_decide(mps_sim *s, mps_policy *pol, int j) {
    dams_mode m = {1, 1, 0.0, pol->param[0], pol->param[1] != 0.0, 0.0, 1};
    read_hold(pol, 2, &m);
    return decide_edf(s, pol, j, &m);
}

static int32_t dams_robust_decide(mps_sim *s, mps_policy *pol, int j) {
    dams_mode m = {1, 0, pol->param[0], pol->param[1], pol->param[2] != 0.0, 0.0, 1};
    read_hold(pol, 3, &m);
    return decide_edf(s, pol, j, &m);
}

#define DAMS_HOLD_PARAMS {"hold_gain", 0.0, 1e6}, {"rate_window_ms", 1e-3, 3.6e6}
static const mps_param_def dams_params[] = {
    {"change_threshold", 0.0, DBL_MAX}, {"forward_queue", 0.0, 1.0}, DAMS_HOLD_PARAMS};
static const mps_param_def dams_robust_params[] = {
    {"alpha", 0.0, DBL_MAX}, {"change_threshold", 0.0, DBL_MAX}, {"forward_queue", 0.0, 1.0}, DAMS_HOLD_PARAMS};
const mps_policy_def mps_policy_dems = {"dems", MPS_PARAMS(dams_params), dams_state_bytes, dams_reset, dems_decide};
const mps_policy_def mps_policy_dams = {"dams", MPS_PARAMS(dams_params), dams_state_bytes, dams_reset, dams_decide};
const mps_policy_def mps_policy_dams_c = {"dams-c", MPS_PARAMS(dams_params), dams_state_bytes, dams_reset, dams_c_decide};
const mps_policy_def mps_policy_dams_robust = {"dams-robust", MPS_PARAMS(dams_robust_params), dams_state_bytes, dams_reset, dams_robust_decide};
