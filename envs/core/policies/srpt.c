/* Stream-aware schedulers of [jonglez20] (mpsched.baselines.srpt): SRPT-ECF, SA-ECF and
 * SRPT-minRTT (FCFS-minRTT is MinRTT's twin). The reals are binary64, computed with the
 * same operations in the same order as the Python specification. */
#include <float.h>
#include <math.h>
#include <stdio.h>

#include "families.h"

/* The paper's network model ([jonglez20] Sec. II) at a decision point: D_p = srtt_p / 2 ns,
 * R_p = rate_bps_p / 8e9 bytes/ns, paths ranked by (srtt, index), and the S_lim threshold
 * of each path: sum over the paths ranked before it of R_q * (D_p - D_q) (eqs. (1)-(3)
 * for n paths). */
typedef struct {
    int n;
    int rank[MPS_MAX_PATHS];
    double latency[MPS_MAX_PATHS];
    double rate[MPS_MAX_PATHS];
    double threshold[MPS_MAX_PATHS]; /* by path index */
} path_model;

static void path_model_build(const mps_sim *s, path_model *m) {
    const int P = s->n_paths;
    m->n = P;
    for (int p = 0; p < P; p++) {
        m->latency[p] = (double)s->paths[p].srtt_ns * 0.5;
        m->rate[p] = s->paths[p].rate_bps / 8e9;
        /* insertion by (srtt, index): p is the largest index so far, so it goes after ties */
        int k = p;
        while (k > 0 && s->paths[m->rank[k - 1]].srtt_ns > s->paths[p].srtt_ns) {
            m->rank[k] = m->rank[k - 1];
            k--;
        }
        m->rank[k] = p;
    }
    m->threshold[m->rank[0]] = 0.0;
    for (int r = 1; r < P; r++) {
        const int path = m->rank[r];
        double s_lim = 0.0;
        for (int q = 0; q < r; q++) {
            const int before = m->rank[q];
            s_lim += m->rate[before] * (m->latency[path] - m->latency[before]);
        }
        m->threshold[path] = s_lim;
    }
}

/* C*(size): ns to deliver size bytes with ECF on idle paths (eqs. (1)-(2) for n paths). */
static double path_model_completion(const path_model *m, int64_t size) {
    const double sz = (double)size;
    int used = 1;
    while (used < m->n && sz > m->threshold[m->rank[used]]) used++;
    double rate_sum = 0.0, rate_latency = 0.0;
    for (int q = 0; q < used; q++) {
        const int p = m->rank[q];
        rate_sum += m->rate[p];
        rate_latency += m->rate[p] * m->latency[p];
    }
    return rate_sum > 0.0 ? (sz + rate_latency) / rate_sum : INFINITY;
}

/* ------------------------------------------------------------------------- */
/* SRPT-ECF (Sec. III-A, IV-A)                                               */
/* ------------------------------------------------------------------------- */

/* State: the last send time of each block on each path (for T_in-flight of eq. (5)),
 * then the key max(C*(S_k), T_in-flight(k)) of the blocks looked at in this decision,
 * then a heap of candidate blocks in the order of step b). */
static size_t srpt_ecf_state_bytes(const mps_sim *s) {
    const size_t n = (size_t)s->n_blocks;
    return n * (size_t)s->n_paths * sizeof(int64_t) + n * sizeof(double) + n * sizeof(int32_t);
}

static void srpt_ecf_reset(mps_sim *s, mps_policy *pol) { mps_track_remaining(s); }

/* Whether block a comes before block b: (larger priority, smaller key, smaller index). */
static inline int srpt_before(const mps_sim *s, const double *key, int32_t a, int32_t b) {
    const int32_t pa = s->blk[a].priority, pb = s->blk[b].priority;
    if (pa != pb) return pa > pb;
    if (key[a] != key[b]) return key[a] < key[b];
    return a < b;
}

static void srpt_sift_down(const mps_sim *s, const double *key, int32_t *heap, int32_t n, int32_t at) {
    for (;;) {
        int32_t first = at;
        const int32_t left = 2 * at + 1, right = left + 1;
        if (left < n && srpt_before(s, key, heap[left], heap[first])) first = left;
        if (right < n && srpt_before(s, key, heap[right], heap[first])) first = right;
        if (first == at) return;
        const int32_t b = heap[at];
        heap[at] = heap[first];
        heap[first] = b;
        at = first;
    }
}

static void srpt_push(const mps_sim *s, const double *key, int32_t *heap, int32_t *n, int32_t b) {
    int32_t at = (*n)++;
    while (at > 0 && srpt_before(s, key, b, heap[(at - 1) / 2])) {
        heap[at] = heap[(at - 1) / 2];
        at = (at - 1) / 2;
    }
    heap[at] = b;
}

/* Eq. (5): max(C*(S_k), T_in-flight(k)); T_in-flight is 0 for a block with nothing in
 * flight, and C* >= 0, so such a block's key is C*(S_k). */
static double srpt_ecf_key(const mps_sim *s, const path_model *m, const int64_t *last_send, int32_t b) {
    const int P = s->n_paths;
    const double c_ecf = path_model_completion(m, mps_remaining_bytes(s, b));
    double in_flight = 0.0;
    const int64_t *inflight = &s->blk_inflight[(int64_t)b * P];
    for (int p = 0; p < P; p++)
        if (inflight[p] > 0) {
            const double arrival = (double)(last_send[(int64_t)b * P + p] - s->now) + m->latency[p];
            if (arrival > in_flight) in_flight = arrival;
        }
    return c_ecf >= in_flight ? c_ecf : in_flight;
}

/* Puts rem_heap's node at position `at` among the candidates, or, when its block is not
 * a candidate of its own (in flight: already there with its own key; or not sendable),
 * the nodes below it. */
static void srpt_ecf_expand(const mps_sim *s, const path_model *m, const int64_t *last_send, double *key,
                            int32_t *heap, int32_t *n, int32_t at) {
    if (at >= s->n_rem_heap) return;
    const int32_t b = s->rem_heap[at];
    if (s->flying_pos[b] < 0 && mps_block_sendable(s, b)) {
        key[b] = srpt_ecf_key(s, m, last_send, b);
        srpt_push(s, key, heap, n, b);
        return;
    }
    srpt_ecf_expand(s, m, last_send, key, heap, n, 2 * at + 1);
    srpt_ecf_expand(s, m, last_send, key, heap, n, 2 * at + 2);
}

/* Step b) visits the blocks in the order (priority, key, index) until their cumulative
 * size passes path j's threshold, which is usually after the first few. The core keeps
 * the sendable blocks in rem_heap by (priority, bytes left, index); for a block with
 * nothing in flight the key is C*(bytes left), and C* is strictly increasing in the size
 * when every path has a positive rate (eqs. (1)-(2): continuous, piecewise linear with
 * slopes 1 / (sum of rates) > 0), so rem_heap's order is the key order for those blocks
 * as long as one byte moves C* by more than its rounding in binary64. The candidates are
 * then the blocks with bytes in flight (keys computed) and rem_heap walked from its root,
 * each node's children added when it is taken. With a path at rate 0, C* is infinite for
 * the sizes that path alone would carry; with rates so large that a byte moves C* by
 * less than 16 ulps of the largest key, blocks of different sizes can round to the same
 * key and the ties go by index. In both cases the orders differ and every sendable block
 * is a candidate. */
static int32_t srpt_ecf_decide(mps_sim *s, mps_policy *pol, int j) {
    const int P = s->n_paths;
    int64_t *last_send = pol->state;
    double *key = (double *)(last_send + (size_t)s->n_blocks * (size_t)P);
    int32_t *heap = (int32_t *)(key + s->n_blocks);
    path_model m;
    path_model_build(s, &m);
    /* the sums only grow, so no block qualifies when the total does not exceed it */
    const double threshold = m.threshold[j];
    if (!((double)mps_sendable_bytes(s) > threshold)) return MPS_WAIT;
    int monotone = 1;
    double rate_sum = 0.0;
    for (int p = 0; p < P; p++) {
        monotone &= m.rate[p] > 0.0;
        rate_sum += m.rate[p];
    }
    /* one byte moves C* by at least 1 / rate_sum ns; rem_heap's order is the key order
     * only while that is well above the rounding of the largest key */
    if (monotone)
        monotone = 1.0 / rate_sum > 16.0 * DBL_EPSILON * path_model_completion(&m, mps_sendable_bytes(s));
    int32_t n = 0;
    if (monotone) {
        for (int32_t f = 0; f < s->n_flying; f++) {
            const int32_t b = s->flying[f];
            if (!mps_block_sendable(s, b)) continue;
            key[b] = srpt_ecf_key(s, &m, last_send, b);
            srpt_push(s, key, heap, &n, b);
        }
        srpt_ecf_expand(s, &m, last_send, key, heap, &n, 0);
    } else {
        for (int32_t w = mps_sendable_floor(s); w <= s->hi_word; w++)
            for (uint64_t x = mps_sendable_word(s, w); x; x &= x - 1) {
                const int32_t b = w * 64 + __builtin_ctzll(x);
                key[b] = srpt_ecf_key(s, &m, last_send, b);
                heap[n++] = b;
            }
        for (int32_t at = n / 2 - 1; at >= 0; at--) srpt_sift_down(s, key, heap, n, at);
    }
    int64_t cumulative = 0;
    for (int64_t taken = 1;; taken++) {
        if (n == 0) { /* cannot happen: the candidates' bytes add up to the total above */
            s->error = MPS_ERR_POLICY;
            snprintf(s->errmsg, sizeof s->errmsg, "srpt-ecf ran out of candidates at t = %lld ns", (long long)s->now);
            return MPS_WAIT;
        }
        const int32_t best = heap[0];
        cumulative += mps_remaining_bytes(s, best);
        if ((double)cumulative > threshold) {
            mps_charge_work(s, taken + n);
            last_send[(int64_t)best * P + j] = s->now;
            return best;
        }
        heap[0] = heap[--n];
        srpt_sift_down(s, key, heap, n, 0);
        if (monotone && s->flying_pos[best] < 0) {
            const int32_t at = s->rem_heap_pos[best];
            srpt_ecf_expand(s, &m, last_send, key, heap, &n, 2 * at + 1);
            srpt_ecf_expand(s, &m, last_send, key, heap, &n, 2 * at + 2);
        }
    }
}

const mps_policy_def mps_policy_srpt_ecf = {"srpt-ecf", MPS_NO_PARAMS, srpt_ecf_state_bytes, srpt_ecf_reset, srpt_ecf_decide};

/* ------------------------------------------------------------------------- */
/* SA-ECF ([jonglez20] Fig. 6, Sec. IV-C)                                       */
/* ------------------------------------------------------------------------- */

/* State: the block whose turn it is (-1 before the first) and the bytes it sent in it. */
typedef struct {
    int64_t turn_block;
    int64_t turn_bytes;
} sa_ecf_state;

static size_t sa_ecf_state_bytes(const mps_sim *s) { return sizeof(sa_ecf_state); }

static void sa_ecf_reset(mps_sim *s, mps_policy *pol) {
    sa_ecf_state *st = pol->state;
    st->turn_block = -1;
    st->turn_bytes = 0;
}

/* The first sendable block after block b, or -1. */
static int32_t sendable_after(const mps_sim *s, int32_t b) {
    const int32_t from = b + 1;
    for (int32_t w = from >> 6; w <= s->hi_word; w++) {
        uint64_t x = mps_sendable_word(s, w);
        if (w == from >> 6) x &= ~UINT64_C(0) << (from & 63);
        if (x) return w * 64 + __builtin_ctzll(x);
    }
    return -1;
}

static int32_t sa_ecf_decide(mps_sim *s, mps_policy *pol, int j) {
    sa_ecf_state *st = pol->state;
    const int64_t quantum = (int64_t)pol->param[0];
    path_model m;
    path_model_build(s, &m);
    /* ECF on the aggregate: this path is used only while the total exceeds its S_lim */
    if (!((double)mps_sendable_bytes(s) > m.threshold[j])) return MPS_WAIT;
    const int32_t turn = (int32_t)st->turn_block;
    if (turn < 0 || !mps_block_sendable(s, turn) || st->turn_bytes >= quantum) {
        /* the next sendable block after the last turn's, round robin */
        const int32_t after = sendable_after(s, turn);
        st->turn_block = after >= 0 ? after : mps_first_sendable(s);
        st->turn_bytes = 0;
    }
    const mps_block *k = &s->blk[st->turn_block];
    const int64_t left = k->lost_pending_bytes > 0 ? k->lost_pending_bytes : k->unsent_bytes;
    st->turn_bytes += left < s->mss ? left : s->mss;
    return (int32_t)st->turn_block;
}

static const mps_param_def sa_ecf_params[] = {{"quantum_bytes", 1.0, 2147483647.0}};
const mps_policy_def mps_policy_sa_ecf = {"sa-ecf", MPS_PARAMS(sa_ecf_params), sa_ecf_state_bytes, sa_ecf_reset, sa_ecf_decide};

/* ------------------------------------------------------------------------- */
/* SRPT-minRTT (Sec. IV-C)                                                   */
/* ------------------------------------------------------------------------- */

static void srpt_minrtt_reset(mps_sim *s, mps_policy *pol) { mps_track_remaining(s); }

/* The sendable block first by (larger priority, fewer bytes left, smaller index): the
 * core's rem_heap root while the receive window is open (rem_heap holds exactly the
 * sendable blocks then), else a scan of those with bytes to retransmit. */
static int32_t srpt_minrtt_decide(mps_sim *s, mps_policy *pol, int j) {
    if (mps_min_rtt_ready_path(s) != j) return MPS_WAIT;
    if (s->window_open) return s->n_rem_heap > 0 ? s->rem_heap[0] : MPS_WAIT;
    int32_t best = -1;
    for (int32_t w = mps_sendable_floor(s); w <= s->hi_word; w++)
        for (uint64_t x = mps_sendable_word(s, w); x; x &= x - 1) {
            const int32_t b = w * 64 + __builtin_ctzll(x);
            if (best < 0 || mps_remaining_before(s, b, best)) best = b;
        }
    return best < 0 ? MPS_WAIT : best;
}

const mps_policy_def mps_policy_srpt_minrtt = {"srpt-minrtt", MPS_NO_PARAMS, NULL, srpt_minrtt_reset, srpt_minrtt_decide};
