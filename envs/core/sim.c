/*
 * The event loop, the links, the receiver and the sender of docs/model.md.
 * Section numbers in comments refer to that page.
 *
 * Layout: a block's hot state is one 64-byte record (mps_block) and a path's one
 * contiguous struct (mps_path), because the vector environment steps hundreds of
 * episodes in turn and each step should touch few cache lines.
 */
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc.h"
#include "rng.h"

/* ------------------------------------------------------------------------- */
/* Small helpers                                                             */
/* ------------------------------------------------------------------------- */

static int64_t next_pow2(int64_t x) {
    int64_t p = 1;
    while (p < x) p <<= 1;
    return p;
}

static int64_t clamp64(int64_t x, int64_t lo, int64_t hi) { return x < lo ? lo : (x > hi ? hi : x); }

static inline int32_t piece_count(const mps_sim *s, const mps_block *k) {
    return (k->size_bytes + s->mss - 1) / s->mss;
}

static inline int32_t piece_size(const mps_sim *s, const mps_block *k, int32_t i) {
    const int32_t n = piece_count(s, k);
    return i < n - 1 ? s->mss : k->size_bytes - (n - 1) * s->mss;
}

static void fail(mps_sim *s, int code, const char *msg) {
    if (!s->error) {
        s->error = code;
        snprintf(s->errmsg, sizeof s->errmsg, "%s", msg);
    }
}

/* ------------------------------------------------------------------------- */
/* Packet lanes: FIFO rings of packet copies                                 */
/* ------------------------------------------------------------------------- */

static int fifo_alloc(mps_fifo *f, int64_t cap) {
    f->cap = next_pow2(cap < 16 ? 16 : cap);
    f->head = f->tail = 0;
    f->head_t = MPS_NEVER;
    f->buf = (mps_pkt *)malloc((size_t)f->cap * sizeof(mps_pkt));
    return f->buf ? 0 : -1;
}

static inline void fifo_clear(mps_fifo *f) {
    f->head = f->tail = 0;
    f->head_t = MPS_NEVER;
}

static inline int64_t fifo_count(const mps_fifo *f) { return f->tail - f->head; }
static inline mps_pkt *fifo_front(const mps_fifo *f) { return &f->buf[f->head & (f->cap - 1)]; }

static inline void fifo_pop(mps_fifo *f) {
    f->head++;
    f->head_t = f->head < f->tail ? fifo_front(f)->t : MPS_NEVER;
}

static int fifo_grow(mps_sim *s, mps_fifo *f) {
    const int64_t n = fifo_count(f);
    mps_pkt *nb = (mps_pkt *)malloc((size_t)(2 * f->cap) * sizeof(mps_pkt));
    if (!nb) {
        fail(s, MPS_ERR_NOMEM, "out of memory growing a packet lane");
        return -1;
    }
    for (int64_t i = 0; i < n; i++) nb[i] = f->buf[(f->head + i) & (f->cap - 1)];
    free(f->buf);
    f->buf = nb;
    f->cap *= 2;
    f->head = 0;
    f->tail = n;
    return 0;
}

static inline int fifo_push(mps_sim *s, mps_fifo *f, const mps_pkt *p) {
    if (fifo_count(f) == f->cap && fifo_grow(s, f) != 0) return -1;
    if (f->head == f->tail) f->head_t = p->t;
    f->buf[f->tail & (f->cap - 1)] = *p;
    f->tail++;
    return 0;
}

/* ------------------------------------------------------------------------- */
/* Configuration check (1)                                                   */
/* ------------------------------------------------------------------------- */

#define CHECK(cond, ...)                      \
    do {                                      \
        if (!(cond)) {                        \
            snprintf(err, errlen, __VA_ARGS__); \
            return -1;                        \
        }                                     \
    } while (0)

int mps_config_check(const mps_config *c, char *err, size_t errlen) {
    CHECK(c->mss_bytes >= 1 && c->mss_bytes <= 65535, "mss_bytes: %d is outside [1, 65535]", c->mss_bytes);
    CHECK(c->header_bytes >= 0 && c->header_bytes <= 1024, "header_bytes: %d is outside [0, 1024]",
          c->header_bytes);
    CHECK(c->end_ns >= 0 && c->end_ns <= MPS_MAX_TIME_NS, "end_ns: %lld is outside [0, 2^62]",
          (long long)c->end_ns);
    CHECK(c->n_paths >= 1 && c->n_paths <= MPS_MAX_PATHS, "paths: %d paths given; 1 to %d are supported",
          c->n_paths, MPS_MAX_PATHS);
    CHECK(c->n_blocks >= 1 && c->n_blocks < INT32_MAX, "blocks: %d blocks given; at least 1 is needed",
          c->n_blocks);
    const int64_t min_queue = (int64_t)c->mss_bytes + c->header_bytes;
    for (int j = 0; j < c->n_paths; j++) {
        const mps_path_config *p = &c->paths[j];
        CHECK(p->fwd_delay_ns >= 0 && p->fwd_delay_ns <= MPS_MAX_DELAY_NS,
              "paths[%d].fwd_delay_ns: %lld is outside [0, 2^50]", j, (long long)p->fwd_delay_ns);
        CHECK(p->rev_delay_ns >= 0 && p->rev_delay_ns <= MPS_MAX_DELAY_NS,
              "paths[%d].rev_delay_ns: %lld is outside [0, 2^50]", j, (long long)p->rev_delay_ns);
        CHECK(p->queue_bytes >= min_queue && p->queue_bytes <= (INT64_C(1) << 50),
              "paths[%d].queue_bytes: %lld is outside [mss_bytes + header_bytes = %lld, 2^50]", j,
              (long long)p->queue_bytes, (long long)min_queue);
        CHECK(p->loss_threshold <= (UINT64_C(1) << 53), "paths[%d].loss_threshold: %llu is above 2^53", j,
              (unsigned long long)p->loss_threshold);
        CHECK(p->cc >= 0 && p->cc < MPS_CC_COUNT, "paths[%d].cc: %d is not a known controller", j, p->cc);
        CHECK(p->initial_cwnd_bytes >= c->mss_bytes && p->initial_cwnd_bytes <= (INT64_C(1) << 40),
              "paths[%d].initial_cwnd_bytes: %lld is outside [mss_bytes, 2^40]", j,
              (long long)p->initial_cwnd_bytes);
        CHECK(p->min_rto_ns >= 1 && p->min_rto_ns <= p->max_rto_ns && p->max_rto_ns <= MPS_MAX_DELAY_NS,
              "paths[%d]: min_rto_ns %lld and max_rto_ns %lld must satisfy 1 <= min <= max <= 2^50", j,
              (long long)p->min_rto_ns, (long long)p->max_rto_ns);
        CHECK(p->bw_n >= 1 && p->bw_start_ns && p->bw_rate_bps, "paths[%d].bw_start_ns: empty bandwidth schedule",
              j);
        CHECK(p->bw_start_ns[0] == 0, "paths[%d].bw_start_ns[0]: %lld; the schedule must start at 0", j,
              (long long)p->bw_start_ns[0]);
        for (int32_t k = 0; k < p->bw_n; k++) {
            CHECK(p->bw_rate_bps[k] >= 0 && p->bw_rate_bps[k] <= MPS_MAX_RATE_BPS,
                  "paths[%d].bw_rate_bps[%d]: %lld is outside [0, 1e12]", j, k, (long long)p->bw_rate_bps[k]);
            if (k > 0)
                CHECK(p->bw_start_ns[k] > p->bw_start_ns[k - 1] && p->bw_start_ns[k] <= MPS_MAX_TIME_NS,
                      "paths[%d].bw_start_ns[%d]: %lld does not increase strictly (previous %lld)", j, k,
                      (long long)p->bw_start_ns[k], (long long)p->bw_start_ns[k - 1]);
        }
        CHECK(p->bw_cycle_ns == 0 || (p->bw_cycle_ns > p->bw_start_ns[p->bw_n - 1] && p->bw_cycle_ns <= MPS_MAX_TIME_NS),
              "paths[%d].bw_cycle_ns: %lld must be 0 or greater than the last segment start %lld", j,
              (long long)p->bw_cycle_ns, (long long)p->bw_start_ns[p->bw_n - 1]);
        CHECK(p->ring_capacity >= 16 && p->ring_capacity <= (INT64_C(1) << 24) &&
                  (p->ring_capacity & (p->ring_capacity - 1)) == 0,
              "paths[%d].ring_capacity: %lld must be a power of two in [16, 2^24]", j, (long long)p->ring_capacity);
    }
    CHECK(c->arrival_ns && c->size_bytes && c->deadline_ns && c->priority && c->weight, "blocks: missing arrays");
    int64_t pieces = 0;
    for (int32_t b = 0; b < c->n_blocks; b++) {
        CHECK(c->arrival_ns[b] >= 0 && c->arrival_ns[b] <= MPS_MAX_TIME_NS, "blocks.arrival_ns[%d]: %lld is outside [0, 2^62]",
              b, (long long)c->arrival_ns[b]);
        if (b > 0)
            CHECK(c->arrival_ns[b] >= c->arrival_ns[b - 1], "blocks.arrival_ns[%d]: %lld is before the previous block's %lld",
                  b, (long long)c->arrival_ns[b], (long long)c->arrival_ns[b - 1]);
        CHECK(c->size_bytes[b] >= 1 && c->size_bytes[b] <= MPS_MAX_BLOCK_BYTES,
              "blocks.size_bytes[%d]: %lld is outside [1, 2^31 - 1]", b, (long long)c->size_bytes[b]);
        CHECK(c->deadline_ns[b] >= c->arrival_ns[b] && c->deadline_ns[b] <= MPS_MAX_TIME_NS,
              "blocks.deadline_ns[%d]: %lld is before the arrival %lld or above 2^62", b, (long long)c->deadline_ns[b],
              (long long)c->arrival_ns[b]);
        CHECK(c->weight[b] >= 0.0 && c->weight[b] <= 1e300, "blocks.weight[%d]: %g is not a finite number >= 0", b,
              c->weight[b]);
        pieces += (c->size_bytes[b] + c->mss_bytes - 1) / c->mss_bytes;
        CHECK(pieces < INT32_MAX, "blocks: %lld packets in total; at most 2^31 - 2 are supported", (long long)pieces);
    }
    return 0;
}

/* Work (bit-ns per s) one period of a cyclic schedule serves, saturated at INT64_MAX. */
static int64_t cycle_work(const mps_path *p) {
    if (p->bw_cycle_ns == 0) return 0;
    __int128 w = 0;
    for (int32_t k = 0; k < p->bw_n; k++) {
        const int64_t end = k + 1 < p->bw_n ? p->bw_start_ns[k + 1] : p->bw_cycle_ns;
        w += (__int128)p->bw_rate_bps[k] * (end - p->bw_start_ns[k]);
    }
    return w > INT64_MAX ? INT64_MAX : (int64_t)w;
}

/* Sorts block indices by (deadline, index) with a bottom-up merge sort, so that the
 * order does not depend on the C library. Returns -1 when memory runs out. */
static int sort_by_deadline(int32_t *idx, int32_t n, const mps_block *blk) {
    int32_t *tmp = malloc((size_t)(n > 0 ? n : 1) * sizeof(int32_t));
    if (!tmp) return -1;
    for (int32_t width = 1; width < n; width *= 2) {
        for (int32_t lo = 0; lo < n; lo += 2 * width) {
            const int32_t mid = lo + width < n ? lo + width : n;
            const int32_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            int32_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                const int32_t a = idx[i], b = idx[j];
                const int64_t da = blk[a].deadline_ns, db = blk[b].deadline_ns;
                if (da < db || (da == db && a < b))
                    tmp[k++] = idx[i++];
                else
                    tmp[k++] = idx[j++];
            }
            while (i < mid) tmp[k++] = idx[i++];
            while (j < hi) tmp[k++] = idx[j++];
        }
        memcpy(idx, tmp, (size_t)n * sizeof(int32_t));
    }
    free(tmp);
    return 0;
}

/* ------------------------------------------------------------------------- */
/* Allocation                                                                */
/* ------------------------------------------------------------------------- */

#define ALLOC(ptr, n)                                                    \
    do {                                                                 \
        (ptr) = calloc((size_t)((n) > 0 ? (n) : 1), sizeof(*(ptr)));     \
        if (!(ptr)) goto nomem;                                          \
    } while (0)

static int64_t lane_estimate(int64_t peak_bps, int64_t delay_ns, int64_t packet_bytes) {
    /* Packets that can be on a wire of this delay at the peak rate, with headroom. */
    double n = (double)peak_bps * (double)delay_ns / 8e9 / (double)packet_bytes;
    if (n > 65536.0) n = 65536.0;
    return 2 * (int64_t)n + 32;
}

mps_sim *mps_sim_create(const mps_config *c) {
    mps_sim *s = calloc(1, sizeof(mps_sim));
    if (!s) return NULL;
    s->mss = c->mss_bytes;
    s->header = c->header_bytes;
    s->n_paths = c->n_paths;
    s->n_blocks = c->n_blocks;
    s->end_ns = c->end_ns;
    s->seed = c->seed;
    const int32_t n = c->n_blocks, P = c->n_paths;

    s->blk = aligned_alloc(64, (size_t)n * sizeof(mps_block)); /* one cache line per block */
    if (!s->blk) goto nomem;
    ALLOC(s->arrival_ns, n);
    ALLOC(s->first_send_ns, n);
    ALLOC(s->completion_ns, n);
    ALLOC(s->cancel_ns, n);
    ALLOC(s->duplicate_bytes, n);
    ALLOC(s->blk_bytes_sent, (int64_t)n * P);
    ALLOC(s->blk_inflight, (int64_t)n * P);
    memcpy(s->arrival_ns, c->arrival_ns, (size_t)n * sizeof(int64_t));
    int64_t pieces = 0;
    for (int32_t b = 0; b < n; b++) {
        mps_block *k = &s->blk[b];
        memset(k, 0, sizeof *k);
        k->deadline_ns = c->deadline_ns[b];
        k->weight = c->weight[b];
        k->size_bytes = (int32_t)c->size_bytes[b];
        k->priority = c->priority[b];
        k->piece_off = (int32_t)pieces;
        pieces += piece_count(s, k);
    }
    s->n_pieces = pieces;
    ALLOC(s->piece_state, s->n_pieces);
    ALLOC(s->piece_received, s->n_pieces);
    ALLOC(s->piece_next_lost, s->n_pieces);
    s->n_words = (n + 63) / 64;
    ALLOC(s->sendable_bits, s->n_words);
    ALLOC(s->dl_bits, s->n_words);
    ALLOC(s->dl_order, n);
    ALLOC(s->dl_sorted, n);
    for (int32_t b = 0; b < n; b++) s->dl_order[b] = b;
    if (sort_by_deadline(s->dl_order, n, s->blk) != 0) goto nomem;
    for (int32_t r = 0; r < n; r++) {
        s->blk[s->dl_order[r]].dl_rank = r;
        s->dl_sorted[r] = s->blk[s->dl_order[r]].deadline_ns;
    }

    const int64_t pkt_bytes = (int64_t)s->mss + s->header;
    for (int j = 0; j < P; j++) {
        const mps_path_config *pc = &c->paths[j];
        mps_path *p = &s->paths[j];
        p->fwd_delay_ns = pc->fwd_delay_ns;
        p->rev_delay_ns = pc->rev_delay_ns;
        p->queue_bytes = pc->queue_bytes;
        p->loss_threshold = pc->loss_threshold;
        p->cc = pc->cc;
        p->window_based = mps_cc_table[pc->cc]->window_based;
        p->initial_cwnd_bytes = pc->initial_cwnd_bytes;
        p->min_rto_ns = pc->min_rto_ns;
        p->max_rto_ns = pc->max_rto_ns;
        p->bw_n = pc->bw_n;
        p->bw_cycle_ns = pc->bw_cycle_ns;
        ALLOC(p->bw_start_ns, pc->bw_n);
        ALLOC(p->bw_rate_bps, pc->bw_n);
        memcpy(p->bw_start_ns, pc->bw_start_ns, (size_t)pc->bw_n * sizeof(int64_t));
        memcpy(p->bw_rate_bps, pc->bw_rate_bps, (size_t)pc->bw_n * sizeof(int64_t));
        p->cycle_work = cycle_work(p);
        int64_t peak = 0;
        for (int32_t k = 0; k < pc->bw_n; k++)
            if (pc->bw_rate_bps[k] > peak) peak = pc->bw_rate_bps[k];
        ALLOC(p->ring, pc->ring_capacity);
        p->ring_mask = pc->ring_capacity - 1;
        const int64_t rtt_lane = lane_estimate(peak, pc->fwd_delay_ns + pc->rev_delay_ns, pkt_bytes);
        if (fifo_alloc(&p->linkq, clamp64(pc->queue_bytes / pkt_bytes * 2 + 16, 16, 65536)) != 0 ||
            fifo_alloc(&p->recvq, lane_estimate(peak, pc->fwd_delay_ns, pkt_bytes)) != 0 ||
            fifo_alloc(&p->ackq, rtt_lane) != 0 ||
            fifo_alloc(&p->nackq, pc->loss_threshold > 0 && !p->window_based ? rtt_lane : 16) != 0)
            goto nomem;
    }
    mps_sim_reset(s, c->seed);
    return s;
nomem:
    mps_sim_free(s);
    return NULL;
}

void mps_sim_free(mps_sim *s) {
    if (!s) return;
    free(s->blk);
    free(s->arrival_ns);
    free(s->first_send_ns);
    free(s->completion_ns);
    free(s->cancel_ns);
    free(s->duplicate_bytes);
    free(s->blk_bytes_sent);
    free(s->blk_inflight);
    free(s->piece_state);
    free(s->piece_received);
    free(s->piece_next_lost);
    free(s->sendable_bits);
    free(s->dl_bits);
    free(s->dl_order);
    free(s->dl_sorted);
    for (int j = 0; j < MPS_MAX_PATHS; j++) {
        mps_path *p = &s->paths[j];
        free(p->bw_start_ns);
        free(p->bw_rate_bps);
        free(p->ring);
        free(p->linkq.buf);
        free(p->recvq.buf);
        free(p->ackq.buf);
        free(p->nackq.buf);
    }
    free(s);
}

/* ------------------------------------------------------------------------- */
/* Reset (7: initial values)                                                 */
/* ------------------------------------------------------------------------- */

static int64_t rto_from_estimates(const mps_path *p) {
    const int64_t var4 = 4 * p->rttvar_ns;
    const int64_t rto = p->srtt_ns + (var4 > MPS_RTO_GRANULARITY_NS ? var4 : MPS_RTO_GRANULARITY_NS);
    return clamp64(rto, p->min_rto_ns, p->max_rto_ns);
}

void mps_sim_reset(mps_sim *s, uint64_t seed) {
    const int32_t n = s->n_blocks, P = s->n_paths;
    s->seed = seed;
    for (int32_t b = 0; b < n; b++) {
        mps_block *k = &s->blk[b];
        k->unsent_bytes = k->size_bytes;
        k->lost_pending_bytes = k->acked_bytes = k->recv_bytes = 0;
        k->next_new = 0;
        k->lost_head = k->lost_tail = -1;
        k->flags = 0;
        s->first_send_ns[b] = s->completion_ns[b] = s->cancel_ns[b] = -1;
    }
    memset(s->duplicate_bytes, 0, (size_t)n * sizeof(int64_t));
    memset(s->blk_bytes_sent, 0, (size_t)n * (size_t)P * sizeof(int64_t));
    memset(s->blk_inflight, 0, (size_t)n * (size_t)P * sizeof(int64_t));
    memset(s->piece_state, MPS_PIECE_UNSENT, (size_t)s->n_pieces);
    memset(s->piece_received, 0, (size_t)s->n_pieces);
    memset(s->sendable_bits, 0, (size_t)s->n_words * sizeof(uint64_t));
    memset(s->dl_bits, 0, (size_t)s->n_words * sizeof(uint64_t));
    s->low_word = s->n_words;
    s->n_sendable = 0;
    s->dl_cut = 0;
    s->dl_hi_word = -1;

    for (int j = 0; j < P; j++) {
        mps_path *p = &s->paths[j];
        p->seg_k = 0;
        p->seg_base = 0;
        mps_rng_seed(p->rng, seed, j);
        fifo_clear(&p->linkq);
        fifo_clear(&p->recvq);
        fifo_clear(&p->ackq);
        fifo_clear(&p->nackq);
        p->link_done_ns = MPS_NEVER;
        p->waiting_bytes = 0;
        p->oldest_pn = p->next_pn = p->scan_pn = p->ack_count = 0;
        p->recover_pn = -1;
        p->rto_deadline = MPS_NEVER;
        p->delivered = p->delivered_time = 0;
        const int64_t base_rtt = p->fwd_delay_ns + p->rev_delay_ns; /* the handshake sample */
        p->srtt_ns = p->min_rtt_ns = base_rtt;
        p->rttvar_ns = base_rtt / 2;
        p->rto_ns = rto_from_estimates(p);
        p->inflight_bytes = 0;
        p->delivery_rate_bps = 0;
        p->recovery = MPS_REC_NONE;
        p->can_send = 0;
        p->last_send_ns = -1;
        p->packets_sent = p->bytes_sent = p->retransmissions = 0;
        p->queue_drops = p->random_losses = p->declared_lost = 0;
        p->rto_count = p->fast_recoveries = p->delivered_bytes = p->dropped_bytes = 0;
        mps_cc_table[p->cc]->init(s, j);
    }
    s->n_arrived = 0;
    s->now = 0;
    s->last_event_ns = -1;
    s->done = 0;
    s->in_rounds = 0;
    s->round_j = 0;
    s->sent_any = 0;
    s->pending = -1;
    memset(s->waited, 0, sizeof s->waited);
    s->decisions = 0;
    s->reward = 0.0;
    s->reward_total = 0.0;
    s->error = 0;
    s->errmsg[0] = '\0';
}

/* ------------------------------------------------------------------------- */
/* The sendable set                                                          */
/* ------------------------------------------------------------------------- */

static void update_sendable(mps_sim *s, int32_t b) {
    const mps_block *k = &s->blk[b];
    const uint32_t f = k->flags;
    const int want = (f & MPS_BLK_ARRIVED) && !(f & MPS_BLK_CANCELLED) &&
                     (k->unsent_bytes > 0 || k->lost_pending_bytes > 0);
    const int32_t w = b >> 6;
    const uint64_t bit = UINT64_C(1) << (b & 63);
    const int have = (s->sendable_bits[w] & bit) != 0;
    if (want == have) return;
    const int32_t r = k->dl_rank;
    const uint64_t rbit = UINT64_C(1) << (r & 63);
    if (want) {
        s->sendable_bits[w] |= bit;
        s->dl_bits[r >> 6] |= rbit;
        if ((r >> 6) > s->dl_hi_word) s->dl_hi_word = r >> 6;
        s->n_sendable++;
        if (w < s->low_word) s->low_word = w;
    } else {
        s->sendable_bits[w] &= ~bit;
        s->dl_bits[r >> 6] &= ~rbit;
        s->n_sendable--;
    }
}

int32_t mps_first_sendable(mps_sim *s) {
    for (int32_t w = s->low_word; w < s->n_words; w++) {
        const uint64_t x = s->sendable_bits[w];
        if (x) {
            s->low_word = w;
            return (w << 6) + __builtin_ctzll(x);
        }
    }
    s->low_word = s->n_words;
    return -1;
}

int32_t mps_sendable_list(const mps_sim *s, int32_t *out, int32_t cap) {
    int32_t k = 0;
    for (int32_t w = s->low_word; w < s->n_words && k < cap; w++) {
        uint64_t x = s->sendable_bits[w];
        while (x && k < cap) {
            out[k++] = (w << 6) + __builtin_ctzll(x);
            x &= x - 1;
        }
    }
    return k;
}

/* ------------------------------------------------------------------------- */
/* Bandwidth and service time (3)                                            */
/* ------------------------------------------------------------------------- */

static inline int64_t seg_end(const mps_path *p) {
    if (p->seg_k + 1 < p->bw_n) return p->seg_base + p->bw_start_ns[p->seg_k + 1];
    return p->bw_cycle_ns > 0 ? p->seg_base + p->bw_cycle_ns : MPS_NEVER;
}

/* Moves the cursor to the segment containing t. Queries of one path never go back in
 * time, so the cursor only moves forward. */
static void seg_locate(mps_path *p, int64_t t) {
    if (t < seg_end(p)) return;
    if (p->bw_cycle_ns > 0 && t - p->seg_base >= p->bw_cycle_ns) {
        p->seg_base += ((t - p->seg_base) / p->bw_cycle_ns) * p->bw_cycle_ns;
        p->seg_k = 0;
    }
    const int64_t rel = t - p->seg_base;
    int32_t lo = p->seg_k, hi = p->bw_n; /* bw_start_ns[lo] <= rel < bw_start_ns[hi] */
    while (hi - lo > 1) {
        const int32_t mid = lo + (hi - lo) / 2;
        if (p->bw_start_ns[mid] <= rel)
            lo = mid;
        else
            hi = mid;
    }
    p->seg_k = lo;
}

static int64_t service_end(mps_path *p, int64_t t0, int64_t wire_bytes) {
    int64_t work = 8 * wire_bytes * INT64_C(1000000000);
    int64_t t = t0;
    if (p->bw_cycle_ns > 0 && p->cycle_work == 0) return MPS_NEVER; /* zero rate forever */
    for (;;) {
        seg_locate(p, t);
        if (p->seg_k == 0 && t == p->seg_base && work > p->cycle_work && p->bw_cycle_ns > 0) {
            /* Whole periods that cannot finish the packet: the same result as walking
             * through them segment by segment, in one step. */
            const int64_t periods = (work - 1) / p->cycle_work;
            if (periods > (MPS_NEVER - MPS_MAX_TIME_NS - t) / p->bw_cycle_ns) return MPS_NEVER; /* past any horizon */
            work -= periods * p->cycle_work;
            t += periods * p->bw_cycle_ns;
            p->seg_base = t;
        }
        const int64_t r = p->bw_rate_bps[p->seg_k];
        const int64_t e = seg_end(p);
        if (r > 0) {
            const int64_t need = (work + r - 1) / r;
            if (e == MPS_NEVER || need <= e - t) return t + need;
            work -= r * (e - t);
        } else if (e == MPS_NEVER) {
            return MPS_NEVER;
        }
        t = e;
    }
}

/* ------------------------------------------------------------------------- */
/* Link (4)                                                                  */
/* ------------------------------------------------------------------------- */

static void link_enqueue(mps_sim *s, mps_path *p, const mps_pkt *pk) {
    const int64_t wire = (int64_t)pk->size + s->header;
    if (p->link_done_ns == MPS_NEVER && fifo_count(&p->linkq) == 0) {
        if (fifo_push(s, &p->linkq, pk) != 0) return;
        p->link_done_ns = service_end(p, s->now, wire);
    } else if (p->waiting_bytes + wire <= p->queue_bytes) {
        if (fifo_push(s, &p->linkq, pk) != 0) return;
        p->waiting_bytes += wire;
    } else {
        p->queue_drops++;
        p->dropped_bytes += pk->size;
    }
}

static void on_link_done(mps_sim *s, mps_path *p, int64_t t) {
    mps_pkt pk = *fifo_front(&p->linkq);
    fifo_pop(&p->linkq);
    int lost = 0;
    if (p->loss_threshold > 0) lost = (mps_rng_next(p->rng) >> 11) < p->loss_threshold;
    if (lost) {
        p->random_losses++;
        p->dropped_bytes += pk.size;
        if (!p->window_based) { /* 7.6: negative acknowledgement */
            pk.t = t + p->fwd_delay_ns + p->rev_delay_ns;
            pk.nack = 1;
            fifo_push(s, &p->nackq, &pk);
        }
    } else {
        pk.t = t + p->fwd_delay_ns;
        fifo_push(s, &p->recvq, &pk);
    }
    if (fifo_count(&p->linkq) > 0) {
        const int64_t wire = (int64_t)fifo_front(&p->linkq)->size + s->header;
        p->waiting_bytes -= wire;
        p->link_done_ns = service_end(p, t, wire);
    } else {
        p->link_done_ns = MPS_NEVER;
    }
}

/* ------------------------------------------------------------------------- */
/* Receiver (6)                                                              */
/* ------------------------------------------------------------------------- */

static void on_receive(mps_sim *s, mps_path *p, int64_t t) {
    mps_pkt pk = *fifo_front(&p->recvq);
    fifo_pop(&p->recvq);
    const int32_t b = pk.block;
    mps_block *k = &s->blk[b];
    const int32_t g = k->piece_off + pk.piece;
    p->delivered_bytes += pk.size;
    if (!s->piece_received[g]) {
        s->piece_received[g] = 1;
        k->recv_bytes += pk.size;
        if (k->recv_bytes == k->size_bytes) {
            s->completion_ns[b] = t;
            k->flags |= MPS_BLK_COMPLETE;
            if (t <= k->deadline_ns) {
                k->flags |= MPS_BLK_ON_TIME;
                s->reward += k->weight;
                s->reward_total += k->weight;
            }
        }
    } else {
        s->duplicate_bytes[b] += pk.size;
    }
    pk.t = t + p->rev_delay_ns;
    fifo_push(s, &p->ackq, &pk);
}

/* ------------------------------------------------------------------------- */
/* Sender (7)                                                                */
/* ------------------------------------------------------------------------- */

int mps_path_ready(const mps_sim *s, int j) {
    const mps_path *p = &s->paths[j];
    if (p->next_pn - p->oldest_pn > p->ring_mask) return 0; /* ring full */
    if (!p->window_based)
        return p->link_done_ns == MPS_NEVER && fifo_count(&p->linkq) == 0; /* ideal: the link is idle */
    return p->inflight_bytes + s->mss <= p->cwnd_bytes;
}

/* 7.2 */
static void declare_lost(mps_sim *s, int j, mps_rec *r) {
    mps_path *p = &s->paths[j];
    const int32_t b = r->block;
    mps_block *k = &s->blk[b];
    r->state = MPS_REC_LOST;
    p->inflight_bytes -= r->size;
    s->blk_inflight[(int64_t)b * s->n_paths + j] -= r->size;
    p->declared_lost++;
    const int32_t g = k->piece_off + r->piece;
    if (s->piece_state[g] != MPS_PIECE_OUT) return;
    s->piece_state[g] = MPS_PIECE_LOST;
    if (k->flags & MPS_BLK_CANCELLED) return;
    s->piece_next_lost[g] = -1;
    if (k->lost_tail < 0)
        k->lost_head = g;
    else
        s->piece_next_lost[k->lost_tail] = g;
    k->lost_tail = g;
    k->lost_pending_bytes += r->size;
    update_sendable(s, b);
}

/* 7.4 */
static void congestion_event(mps_sim *s, int j, int64_t pn, int64_t flight) {
    mps_path *p = &s->paths[j];
    if (p->recovery != MPS_REC_NONE && pn <= p->recover_pn) return;
    mps_cc_table[p->cc]->on_congestion(s, j, flight);
    p->recovery = MPS_REC_FAST;
    p->recover_pn = p->next_pn - 1;
    p->fast_recoveries++;
}

/* 7.1 */
static void send_packet(mps_sim *s, int j, int32_t b) {
    mps_path *p = &s->paths[j];
    mps_block *k = &s->blk[b];
    int32_t g = -1;
    while (k->lost_head >= 0) {
        const int32_t c = k->lost_head;
        k->lost_head = s->piece_next_lost[c];
        if (k->lost_head < 0) k->lost_tail = -1;
        if (s->piece_state[c] == MPS_PIECE_LOST) {
            g = c;
            break;
        }
    }
    int32_t piece, size;
    const int retransmission = g >= 0;
    if (retransmission) {
        piece = g - k->piece_off;
        size = piece_size(s, k, piece);
        k->lost_pending_bytes -= size;
    } else {
        piece = k->next_new++;
        g = k->piece_off + piece;
        size = piece_size(s, k, piece);
        k->unsent_bytes -= size;
    }
    const int64_t now = s->now;
    if (!(k->flags & MPS_BLK_SENT)) {
        k->flags |= MPS_BLK_SENT;
        s->first_send_ns[b] = now;
    }
    s->piece_state[g] = MPS_PIECE_OUT;
    const int64_t bj = (int64_t)b * s->n_paths + j;
    s->blk_bytes_sent[bj] += size;
    s->blk_inflight[bj] += size;
    const int64_t inflight_was = p->inflight_bytes;
    p->inflight_bytes += size;

    const int64_t pn = p->next_pn++;
    mps_rec *r = &p->ring[pn & p->ring_mask];
    r->state = MPS_REC_OUT;
    r->block = b;
    r->piece = piece;
    r->size = size;
    r->hole_since = 0;

    mps_pkt pk;
    pk.t = 0;
    pk.pn = pn;
    pk.sent_ns = now;
    pk.snap_delivered = p->delivered;
    pk.snap_time = inflight_was == 0 ? now : p->delivered_time;
    pk.block = b;
    pk.piece = piece;
    pk.size = size;
    pk.nack = 0;

    p->packets_sent++;
    p->bytes_sent += size;
    p->retransmissions += retransmission;
    p->last_send_ns = now;
    if (p->window_based && p->rto_deadline == MPS_NEVER) p->rto_deadline = now + p->rto_ns;
    link_enqueue(s, p, &pk);
    update_sendable(s, b);
}

static void pop_resolved(mps_path *p) {
    while (p->oldest_pn < p->next_pn) {
        const int32_t st = p->ring[p->oldest_pn & p->ring_mask].state;
        if (st != MPS_REC_ACKED && st != MPS_REC_LOST) break;
        p->oldest_pn++;
    }
}

/* 7.3 and 7.6 */
static void on_ack(mps_sim *s, int j, int64_t t) {
    mps_path *p = &s->paths[j];
    const mps_cc_ops *cc = mps_cc_table[p->cc];
    /* The acknowledgement lane of an ideal path merges positive and negative
     * acknowledgements by time; they never tie (service times are >= 1 ns). */
    mps_fifo *lane = p->nackq.head_t < p->ackq.head_t ? &p->nackq : &p->ackq;
    mps_pkt pk = *fifo_front(lane);
    fifo_pop(lane);
    const int32_t b = pk.block;
    mps_block *k = &s->blk[b];
    mps_rec *r = pk.pn >= p->oldest_pn ? &p->ring[pk.pn & p->ring_mask] : NULL;

    if (pk.nack) { /* 7.6: only ideal subflows get these; the record is unresolved */
        if (r && r->state == MPS_REC_OUT) declare_lost(s, j, r);
        pop_resolved(p);
        return;
    }

    /* 1 */
    const int newly = r && (r->state == MPS_REC_OUT || r->state == MPS_REC_HOLE);
    const int64_t inflight_before = p->inflight_bytes;
    if (newly) {
        p->inflight_bytes -= pk.size;
        s->blk_inflight[(int64_t)b * s->n_paths + j] -= pk.size;
    }
    /* 2 */
    const int32_t g = k->piece_off + pk.piece;
    const uint8_t pst = s->piece_state[g];
    if (pst != MPS_PIECE_ACKED) {
        if (pst == MPS_PIECE_LOST && !(k->flags & MPS_BLK_CANCELLED)) k->lost_pending_bytes -= pk.size;
        s->piece_state[g] = MPS_PIECE_ACKED;
        k->acked_bytes += pk.size;
        if (k->acked_bytes == k->size_bytes) k->flags |= MPS_BLK_ACKED;
        update_sendable(s, b);
    }
    /* 3: RFC 6298 */
    const int64_t rtt = t - pk.sent_ns;
    const int64_t dev = p->srtt_ns > rtt ? p->srtt_ns - rtt : rtt - p->srtt_ns;
    p->rttvar_ns = (3 * p->rttvar_ns + dev) / 4;
    p->srtt_ns = (7 * p->srtt_ns + rtt) / 8;
    p->rto_ns = rto_from_estimates(p);
    if (rtt < p->min_rtt_ns) p->min_rtt_ns = rtt;
    /* 4: delivery rate */
    p->delivered += pk.size;
    p->delivered_time = t;
    if (t > pk.snap_time) {
        __int128 sample = (__int128)(p->delivered - pk.snap_delivered) * 8000000000 / (t - pk.snap_time);
        if (sample > ((__int128)1 << 60)) sample = (__int128)1 << 60;
        p->delivery_rate_bps = (int64_t)((7 * (__int128)p->delivery_rate_bps + sample) / 8);
    }
    if (p->window_based) {
        /* 5: the 3-duplicate-ACK rule, per packet */
        int64_t q = p->scan_pn > p->oldest_pn ? p->scan_pn : p->oldest_pn;
        for (; q < pk.pn; q++) {
            mps_rec *h = &p->ring[q & p->ring_mask];
            if (h->state == MPS_REC_OUT) {
                h->state = MPS_REC_HOLE;
                h->hole_since = p->ack_count;
            }
        }
        if (r) r->state = MPS_REC_ACKED;
        if (pk.pn + 1 > p->scan_pn) p->scan_pn = pk.pn + 1;
        p->ack_count++;
        while (p->oldest_pn < p->next_pn) {
            mps_rec *o = &p->ring[p->oldest_pn & p->ring_mask];
            if (o->state == MPS_REC_HOLE && p->ack_count - o->hole_since >= 3) {
                const int64_t flight = p->inflight_bytes;
                declare_lost(s, j, o);
                congestion_event(s, j, p->oldest_pn, flight);
            } else if (o->state != MPS_REC_ACKED && o->state != MPS_REC_LOST) {
                break;
            }
            p->oldest_pn++;
        }
        /* 6 */
        if (newly && p->recovery == MPS_REC_NONE) cc->on_ack(s, j, pk.size, inflight_before);
    } else {
        if (r) r->state = MPS_REC_ACKED;
        pop_resolved(p);
    }
    /* 7 */
    if (p->recovery != MPS_REC_NONE && pk.pn > p->recover_pn) p->recovery = MPS_REC_NONE;
    /* 8 */
    if (p->window_based) {
        if (p->inflight_bytes == 0)
            p->rto_deadline = MPS_NEVER;
        else if (newly)
            p->rto_deadline = t + p->rto_ns;
    }
}

/* 7.5 */
static void on_rto(mps_sim *s, int j) {
    mps_path *p = &s->paths[j];
    const int64_t flight = p->inflight_bytes;
    for (int64_t q = p->oldest_pn; q < p->next_pn; q++) {
        mps_rec *r = &p->ring[q & p->ring_mask];
        if (r->state == MPS_REC_OUT || r->state == MPS_REC_HOLE) declare_lost(s, j, r);
    }
    mps_cc_table[p->cc]->on_rto(s, j, flight);
    p->recovery = MPS_REC_RTO;
    p->recover_pn = p->next_pn - 1;
    p->rto_ns = p->rto_ns > p->max_rto_ns / 2 ? p->max_rto_ns : 2 * p->rto_ns;
    p->rto_deadline = MPS_NEVER;
    p->oldest_pn = p->next_pn;
    p->scan_pn = p->next_pn;
    p->rto_count++;
}

/* ------------------------------------------------------------------------- */
/* Events (8)                                                                */
/* ------------------------------------------------------------------------- */

enum { EV_RECV = 0, EV_ACK = 1, EV_LINK = 2, EV_ARRIVAL = 3, EV_RTO = 4 };

static int64_t next_event(const mps_sim *s, int *cls, int *path) {
    int64_t best = MPS_NEVER;
    int bc = -1, bp = -1;
    const int P = s->n_paths;
    for (int j = 0; j < P; j++)
        if (s->paths[j].recvq.head_t < best) best = s->paths[j].recvq.head_t, bc = EV_RECV, bp = j;
    for (int j = 0; j < P; j++) {
        const mps_path *p = &s->paths[j];
        const int64_t t = p->ackq.head_t < p->nackq.head_t ? p->ackq.head_t : p->nackq.head_t;
        if (t < best) best = t, bc = EV_ACK, bp = j;
    }
    for (int j = 0; j < P; j++)
        if (s->paths[j].link_done_ns < best) best = s->paths[j].link_done_ns, bc = EV_LINK, bp = j;
    if (s->n_arrived < s->n_blocks && s->arrival_ns[s->n_arrived] < best)
        best = s->arrival_ns[s->n_arrived], bc = EV_ARRIVAL, bp = -1;
    for (int j = 0; j < P; j++)
        if (s->paths[j].rto_deadline < best) best = s->paths[j].rto_deadline, bc = EV_RTO, bp = j;
    *cls = bc;
    *path = bp;
    return best;
}

static void dispatch(mps_sim *s, int cls, int j, int64_t t) {
    switch (cls) {
    case EV_RECV:
        on_receive(s, &s->paths[j], t);
        break;
    case EV_ACK:
        on_ack(s, j, t);
        break;
    case EV_LINK:
        on_link_done(s, &s->paths[j], t);
        break;
    case EV_ARRIVAL: {
        const int32_t b = s->n_arrived++;
        s->blk[b].flags |= MPS_BLK_ARRIVED;
        update_sendable(s, b);
        break;
    }
    default:
        on_rto(s, j);
        break;
    }
}

/* ------------------------------------------------------------------------- */
/* Decision rounds (9)                                                       */
/* ------------------------------------------------------------------------- */

int mps_next_decision(mps_sim *s) {
    if (s->error) return -2;
    if (s->done) return -1;
    if (s->pending >= 0) return s->pending;
    const int P = s->n_paths;
    for (;;) {
        if (s->in_rounds) {
            while (s->round_j < P) {
                if (s->n_sendable == 0) {
                    s->in_rounds = 0;
                    break;
                }
                const int j = s->round_j;
                if (!s->waited[j] && mps_path_ready(s, j)) {
                    for (int i = 0; i < P; i++) s->paths[i].can_send = (uint8_t)mps_path_ready(s, i);
                    s->pending = j;
                    s->decisions++;
                    return j;
                }
                s->round_j++;
            }
            if (s->in_rounds) {
                if (s->sent_any) {
                    s->sent_any = 0;
                    s->round_j = 0;
                    memset(s->waited, 0, sizeof s->waited);
                    continue;
                }
                s->in_rounds = 0;
            }
        }
        int cls, j;
        const int64_t t = next_event(s, &cls, &j);
        if (t == MPS_NEVER || t > s->end_ns) {
            s->done = 1;
            return -1;
        }
        s->now = t;
        int64_t tn = t;
        do {
            dispatch(s, cls, j, t);
            if (s->error) return -2;
            tn = next_event(s, &cls, &j);
        } while (tn == t);
        s->last_event_ns = t;
        s->in_rounds = 1;
        s->round_j = 0;
        s->sent_any = 0;
        memset(s->waited, 0, sizeof s->waited);
    }
}

int mps_apply(mps_sim *s, int32_t block) {
    if (s->pending < 0) return -1;
    const int j = s->pending;
    if (block == MPS_WAIT) {
        s->waited[j] = 1;
    } else {
        if (block < 0 || block >= s->n_blocks || !mps_block_sendable(s, block)) return -1;
        send_packet(s, j, block);
        s->sent_any = 1;
    }
    s->pending = -1;
    s->round_j = j + 1;
    return 0;
}

int mps_cancel(mps_sim *s, int32_t b) {
    if (b < 0 || b >= s->n_blocks) return -1;
    mps_block *k = &s->blk[b];
    if (!(k->flags & MPS_BLK_ARRIVED)) return -1;
    if (k->flags & (MPS_BLK_CANCELLED | MPS_BLK_ACKED)) return 0;
    k->flags |= MPS_BLK_CANCELLED;
    s->cancel_ns[b] = s->now;
    k->next_new = piece_count(s, k);
    k->unsent_bytes = 0;
    k->lost_head = k->lost_tail = -1;
    k->lost_pending_bytes = 0;
    update_sendable(s, b);
    return 0;
}

double mps_take_reward(mps_sim *s) {
    const double r = s->reward;
    s->reward = 0.0;
    return r;
}
