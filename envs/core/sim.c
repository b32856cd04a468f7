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

/* In 64 bits: a block of up to 2^31 - 1 bytes plus mss - 1 overflows int32. */
static inline int32_t piece_count(const mps_sim *s, const mps_block *k) {
    return (int32_t)(((int64_t)k->size_bytes + s->mss - 1) / s->mss);
}

static inline int32_t piece_size(const mps_sim *s, const mps_block *k, int32_t i) {
    /* i < piece_count - 1 exactly when piece i + 1 starts inside the block: no division
     * but for the last piece */
    if ((int64_t)(i + 1) * s->mss < k->size_bytes) return s->mss;
    return (int32_t)(k->size_bytes - (int64_t)(piece_count(s, k) - 1) * s->mss);
}

/* Offset of the end of piece i within its block. */
static inline int64_t piece_end(const mps_sim *s, const mps_block *k, int32_t i) {
    const int64_t end = (int64_t)(i + 1) * s->mss;
    return end < k->size_bytes ? end : k->size_bytes;
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

static inline void fifo_clear(mps_fifo *f) {
    f->head = f->tail = 0;
    f->head_t = MPS_NEVER;
}

static inline int64_t fifo_count(const mps_fifo *f) { return f->tail - f->head; }
static inline mps_pkt *fifo_front(const mps_fifo *f) { return &f->buf[f->head & (f->cap - 1)]; }

/* The popped slot keeps its packet until its lane is pushed again: an event reads the
 * packet it pops in place, and pushes it or its answer onto other lanes only. */
static inline void fifo_pop(mps_fifo *f) {
    f->head++;
    f->head_t = f->head < f->tail ? fifo_front(f)->t : MPS_NEVER;
}

/* Whether p lies in the episode's single allocation (see Allocation). */
static int in_arena(const mps_sim *s, const void *p) {
    return (const char *)p >= (const char *)s && (const char *)p < (const char *)s + s->arena_bytes;
}

static int fifo_grow(mps_sim *s, mps_fifo *f) {
    const int64_t n = fifo_count(f);
    mps_pkt *nb = (mps_pkt *)malloc((size_t)(2 * f->cap) * sizeof(mps_pkt));
    if (!nb) {
        fail(s, MPS_ERR_NOMEM, "out of memory growing a packet lane");
        return -1;
    }
    for (int64_t i = 0; i < n; i++) nb[i] = f->buf[(f->head + i) & (f->cap - 1)];
    if (!in_arena(s, f->buf)) free(f->buf); /* the first buffer is part of the episode's arena */
    f->buf = nb;
    f->cap *= 2;
    f->head = 0;
    f->tail = n;
    return 0;
}

/* A new slot at the tail of lane f for a packet of time t, which the caller fills; NULL
 * when memory runs out. */
static inline mps_pkt *fifo_slot(mps_sim *s, mps_fifo *f, int64_t t) {
    if (fifo_count(f) == f->cap && fifo_grow(s, f) != 0) return NULL;
    if (f->head == f->tail) f->head_t = t;
    return &f->buf[f->tail++ & (f->cap - 1)];
}

/* Appends a copy of *p with time t to lane f; returns the copy, NULL when memory runs out.
 * The time is written to the copy, not to *p: a store to *p just before the copy would be
 * read back by the copy's wider loads, which wait for it. */
static inline mps_pkt *fifo_push(mps_sim *s, mps_fifo *f, const mps_pkt *p, int64_t t) {
    mps_pkt *q = fifo_slot(s, f, t);
    if (q) {
        *q = *p;
        q->t = t;
    }
    return q;
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

static int check_schedule(const char *what, int index, const int64_t *start, const int64_t *rate, int32_t n,
                          int64_t cycle, char *err, size_t errlen) {
    CHECK(n >= 1 && start && rate, "%s[%d].bw_start_ns: empty bandwidth schedule", what, index);
    CHECK(start[0] == 0, "%s[%d].bw_start_ns[0]: %lld; the schedule must start at 0", what, index, (long long)start[0]);
    for (int32_t k = 0; k < n; k++) {
        CHECK(rate[k] >= 0 && rate[k] <= MPS_MAX_RATE_BPS, "%s[%d].bw_rate_bps[%d]: %lld is outside [0, 1e12]", what,
              index, k, (long long)rate[k]);
        if (k > 0)
            CHECK(start[k] > start[k - 1] && start[k] <= MPS_MAX_TIME_NS,
                  "%s[%d].bw_start_ns[%d]: %lld does not increase strictly (previous %lld)", what, index, k,
                  (long long)start[k], (long long)start[k - 1]);
    }
    CHECK(cycle == 0 || (cycle > start[n - 1] && cycle <= MPS_MAX_TIME_NS),
          "%s[%d].bw_cycle_ns: %lld must be 0 or greater than the last segment start %lld", what, index,
          (long long)cycle, (long long)start[n - 1]);
    return 0;
}

static int check_subflow(const mps_config *c, const mps_subflow_config *p, const char *what, int j, char *err,
                         size_t errlen) {
    CHECK(p->link >= 0 && p->link < c->n_links, "%s[%d].link: %d is not one of the %d links", what, j, p->link,
          c->n_links);
    CHECK(p->fwd_delay_ns >= 0 && p->fwd_delay_ns <= MPS_MAX_DELAY_NS, "%s[%d].fwd_delay_ns: %lld is outside [0, 2^50]",
          what, j, (long long)p->fwd_delay_ns);
    CHECK(p->rev_delay_ns >= 0 && p->rev_delay_ns <= MPS_MAX_DELAY_NS, "%s[%d].rev_delay_ns: %lld is outside [0, 2^50]",
          what, j, (long long)p->rev_delay_ns);
    CHECK(p->loss_model == MPS_LOSS_IID || p->loss_model == MPS_LOSS_GILBERT_ELLIOTT,
          "%s[%d].loss_model: %d is not a known loss model", what, j, p->loss_model);
    CHECK(p->loss_threshold <= MPS_PROB_ONE && p->ge_p_threshold <= MPS_PROB_ONE && p->ge_r_threshold <= MPS_PROB_ONE &&
              p->ge_bad_loss_threshold <= MPS_PROB_ONE,
          "%s[%d]: loss thresholds must be in [0, 2^53]", what, j);
    CHECK(p->cc >= 0 && p->cc < MPS_CC_COUNT, "%s[%d].cc: %d is not a known controller", what, j, p->cc);
    CHECK(p->fast_recovery == MPS_FR_IMMEDIATE || p->fast_recovery == MPS_FR_PRR,
          "%s[%d].fast_recovery: %d is not a known fast recovery", what, j, p->fast_recovery);
    CHECK(p->cubic_arithmetic == MPS_CUBIC_RFC9438 || p->cubic_arithmetic == MPS_CUBIC_SEGMENTS,
          "%s[%d].cubic_arithmetic: %d is not a known Cubic arithmetic", what, j, p->cubic_arithmetic);
    CHECK(p->initial_cwnd_bytes >= c->mss_bytes && p->initial_cwnd_bytes <= (INT64_C(1) << 40),
          "%s[%d].initial_cwnd_bytes: %lld is outside [mss_bytes, 2^40]", what, j, (long long)p->initial_cwnd_bytes);
    CHECK(p->min_rto_ns >= 1 && p->min_rto_ns <= p->max_rto_ns && p->max_rto_ns <= MPS_MAX_DELAY_NS,
          "%s[%d]: min_rto_ns %lld and max_rto_ns %lld must satisfy 1 <= min <= max <= 2^50", what, j,
          (long long)p->min_rto_ns, (long long)p->max_rto_ns);
    CHECK(p->ring_capacity >= 16 && p->ring_capacity <= (INT64_C(1) << 24) &&
              (p->ring_capacity & (p->ring_capacity - 1)) == 0,
          "%s[%d].ring_capacity: %lld must be a power of two in [16, 2^24]", what, j, (long long)p->ring_capacity);
    CHECK(p->fwd_jitter_ns >= 0 && p->fwd_jitter_ns <= MPS_MAX_DELAY_NS,
          "%s[%d].fwd_jitter_ns: %lld is outside [0, 2^50]", what, j, (long long)p->fwd_jitter_ns);
    CHECK(p->rev_jitter_ns >= 0 && p->rev_jitter_ns <= MPS_MAX_DELAY_NS,
          "%s[%d].rev_jitter_ns: %lld is outside [0, 2^50]", what, j, (long long)p->rev_jitter_ns);
    CHECK(p->delay_n >= 0 && p->delay_n <= MPS_MAX_DELAY_STEPS,
          "%s[%d].delay_start_ns: %d delay steps; at most %d are supported", what, j, p->delay_n,
          MPS_MAX_DELAY_STEPS);
    CHECK(p->delay_n == 0 || (p->delay_start_ns && p->fwd_delay_step_ns && p->rev_delay_step_ns),
          "%s[%d]: delay steps without their arrays", what, j);
    for (int32_t k = 0; k < p->delay_n; k++) {
        const int64_t prev = k > 0 ? p->delay_start_ns[k - 1] : 0;
        CHECK(p->delay_start_ns[k] > prev && p->delay_start_ns[k] <= MPS_MAX_TIME_NS,
              "%s[%d].delay_start_ns[%d]: %lld must be greater than %lld (the steps start after 0 and increase "
              "strictly)",
              what, j, k, (long long)p->delay_start_ns[k], (long long)prev);
        CHECK(p->fwd_delay_step_ns[k] >= 0 && p->fwd_delay_step_ns[k] <= MPS_MAX_DELAY_NS,
              "%s[%d].fwd_delay_step_ns[%d]: %lld is outside [0, 2^50]", what, j, k,
              (long long)p->fwd_delay_step_ns[k]);
        CHECK(p->rev_delay_step_ns[k] >= 0 && p->rev_delay_step_ns[k] <= MPS_MAX_DELAY_NS,
              "%s[%d].rev_delay_step_ns[%d]: %lld is outside [0, 2^50]", what, j, k,
              (long long)p->rev_delay_step_ns[k]);
    }
    CHECK(p->ack_loss_threshold <= MPS_PROB_ONE, "%s[%d].ack_loss_threshold: must be in [0, 2^53]", what, j);
    CHECK(p->ack_loss_threshold == 0 || p->cc != MPS_CC_IDEAL,
          "%s[%d].ack_loss_threshold: an ideal subflow's acknowledgements are never lost (7.6); use a "
          "window-based controller",
          what, j);
    CHECK(p->rev_rate_bps >= 0 && p->rev_rate_bps <= MPS_MAX_RATE_BPS,
          "%s[%d].rev_rate_bps: %lld is outside [0, 10^12]", what, j, (long long)p->rev_rate_bps);
    CHECK(p->rev_rate_bps == 0 || p->cc != MPS_CC_IDEAL,
          "%s[%d].rev_rate_bps: an ideal subflow learns the fate of every packet at once (7.6); use a "
          "window-based controller",
          what, j);
    CHECK(p->rev_rate_bps == 0 || (p->ack_bytes >= 1 && p->ack_bytes <= 65535),
          "%s[%d].ack_bytes: %lld is outside [1, 65535]", what, j, (long long)p->ack_bytes);
    CHECK(p->rev_rate_bps == 0 || (p->rev_queue_bytes >= p->ack_bytes && p->rev_queue_bytes <= MPS_MAX_TIME_NS),
          "%s[%d].rev_queue_bytes: %lld is outside [ack_bytes, 2^62]", what, j, (long long)p->rev_queue_bytes);
    CHECK(p->ccp_gain_milli >= 1 && p->ccp_gain_milli <= MPS_CCP_MAX_GAIN_MILLI,
          "%s[%d].ccp_gain_milli: %lld is outside [1, %d]", what, j, (long long)p->ccp_gain_milli,
          MPS_CCP_MAX_GAIN_MILLI);
    CHECK(p->ccp_storage_bytes >= 0 && p->ccp_storage_bytes <= MPS_CCP_MAX_STORAGE_BYTES,
          "%s[%d].ccp_storage_bytes: %lld is outside [0, 2^50]", what, j, (long long)p->ccp_storage_bytes);
    CHECK(p->down_n >= 0 && p->down_n <= MPS_MAX_OUTAGES, "%s[%d].down_start_ns: %d outages; at most %d are supported",
          what, j, p->down_n, MPS_MAX_OUTAGES);
    CHECK(p->down_n == 0 || (p->down_start_ns && p->down_end_ns), "%s[%d]: outages without their arrays", what, j);
    for (int32_t k = 0; k < p->down_n; k++) {
        const int64_t a = p->down_start_ns[k], b = p->down_end_ns[k];
        CHECK(a >= 0 && a < b && b <= MPS_MAX_TIME_NS,
              "%s[%d]: outage %d [%lld, %lld) must satisfy 0 <= down_start_ns < down_end_ns <= 2^62", what, j, k,
              (long long)a, (long long)b);
        CHECK(k == 0 || a > p->down_end_ns[k - 1],
              "%s[%d].down_start_ns[%d]: %lld must be after the previous outage's end %lld (outages are in order "
              "and do not touch)",
              what, j, k, (long long)a, (long long)p->down_end_ns[k - 1]);
    }
    return 0;
}

int mps_config_check(const mps_config *c, char *err, size_t errlen) {
    CHECK(c->mss_bytes >= 1 && c->mss_bytes <= 65535, "mss_bytes: %d is outside [1, 65535]", c->mss_bytes);
    CHECK(c->header_bytes >= 0 && c->header_bytes <= 1024, "header_bytes: %d is outside [0, 1024]",
          c->header_bytes);
    CHECK(c->end_ns >= 0 && c->end_ns <= MPS_MAX_TIME_NS, "end_ns: %lld is outside [0, 2^62]",
          (long long)c->end_ns);
    CHECK(c->receiver == MPS_RECEIVER_BLOCK || c->receiver == MPS_RECEIVER_IN_ORDER,
          "receiver: %d is not a known receiver", c->receiver);
    CHECK(!c->stream_sequence || c->receiver == MPS_RECEIVER_IN_ORDER,
          "sequence: 'stream' needs the in-order receiver");
    CHECK(c->rbuf_bytes >= c->mss_bytes && c->rbuf_bytes <= (INT64_C(1) << 50),
          "rbuf_bytes: %lld is outside [mss_bytes, 2^50]", (long long)c->rbuf_bytes);
    CHECK(c->n_links >= 1 && c->n_links <= MPS_MAX_LINKS, "links: %d links given; 1 to %d are supported", c->n_links,
          MPS_MAX_LINKS);
    CHECK(c->n_paths >= 1 && c->n_paths <= MPS_MAX_PATHS, "paths: %d paths given; 1 to %d are supported",
          c->n_paths, MPS_MAX_PATHS);
    CHECK(c->n_cross >= 0 && c->n_cross <= MPS_MAX_CROSS, "cross: %d cross flows given; at most %d are supported",
          c->n_cross, MPS_MAX_CROSS);
    CHECK(c->n_blocks >= 1 && c->n_blocks < INT32_MAX, "blocks: %d blocks given; at least 1 is needed",
          c->n_blocks);
    const int64_t min_queue = (int64_t)c->mss_bytes + c->header_bytes;
    for (int l = 0; l < c->n_links; l++) {
        const mps_link_config *k = &c->links[l];
        CHECK(k->queue_bytes >= min_queue && k->queue_bytes <= (INT64_C(1) << 50),
              "links[%d].queue_bytes: %lld is outside [mss_bytes + header_bytes = %lld, 2^50]", l,
              (long long)k->queue_bytes, (long long)min_queue);
        if (check_schedule("links", l, k->bw_start_ns, k->bw_rate_bps, k->bw_n, k->bw_cycle_ns, err, errlen) != 0)
            return -1;
    }
    for (int j = 0; j < c->n_paths; j++) {
        const mps_subflow_config *p = &c->subflows[j];
        if (check_subflow(c, p, "paths", j, err, errlen) != 0) return -1;
        CHECK(p->start_ns >= 0 && p->start_ns <= p->stop_ns && p->stop_ns <= MPS_MAX_TIME_NS,
              "paths[%d]: start_ns %lld and stop_ns %lld must satisfy 0 <= start <= stop <= 2^62", j,
              (long long)p->start_ns, (long long)p->stop_ns);
    }
    for (int x = 0; x < c->n_cross; x++) {
        const mps_subflow_config *p = &c->subflows[c->n_paths + x];
        if (check_subflow(c, p, "cross", x, err, errlen) != 0) return -1;
        CHECK(p->cc == MPS_CC_NEWRENO || p->cc == MPS_CC_CUBIC,
              "cross[%d].cc: a cross flow needs an uncoupled window-based controller (newreno or cubic)", x);
        CHECK(!p->backup, "cross[%d].backup: only paths can be backups", x);
        CHECK(p->start_ns >= 0 && p->start_ns <= p->stop_ns && p->stop_ns <= MPS_MAX_TIME_NS,
              "cross[%d]: start_ns %lld and stop_ns %lld must satisfy 0 <= start <= stop <= 2^62", x,
              (long long)p->start_ns, (long long)p->stop_ns);
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
        CHECK(pieces <= MPS_MAX_PIECES,
              "blocks: %lld packets of %d bytes in all (through block %d); at most %lld per episode (each packet "
              "holds per-packet state: use a larger mss, fewer or smaller blocks, or a shorter duration)",
              (long long)pieces, (int)c->mss_bytes, b, (long long)MPS_MAX_PIECES);
    }
    return 0;
}

/* Work (bit-ns per s) one period of a cyclic schedule serves, saturated at INT64_MAX. */
static int64_t cycle_work(const mps_link *k) {
    if (k->bw_cycle_ns == 0) return 0;
    __int128 w = 0;
    for (int32_t i = 0; i < k->bw_n; i++) {
        const int64_t end = i + 1 < k->bw_n ? k->bw_start_ns[i + 1] : k->bw_cycle_ns;
        w += (__int128)k->bw_rate_bps[i] * (end - k->bw_start_ns[i]);
    }
    return w > INT64_MAX ? INT64_MAX : (int64_t)w;
}

/* 8, rate lane: moves rate_seg to the next segment whose rate differs from the one
 * before it (across the wrap of a cyclic schedule) and sets rate_change_ns to its start,
 * MPS_NEVER when there is none. */
static void next_rate_change(mps_link *k) {
    const int32_t first = k->rate_seg.k;
    for (;;) {
        const int32_t prev = k->rate_seg.k;
        if (prev + 1 < k->bw_n) {
            k->rate_seg.k = prev + 1;
        } else if (k->bw_cycle_ns > 0 && k->rate_seg.base <= MPS_MAX_TIME_NS - k->bw_cycle_ns) {
            k->rate_seg.k = 0;
            k->rate_seg.base += k->bw_cycle_ns;
        } else {
            k->rate_change_ns = MPS_NEVER; /* the last segment holds, or past any horizon */
            return;
        }
        if (k->bw_rate_bps[k->rate_seg.k] != k->bw_rate_bps[prev]) {
            k->rate_change_ns = k->rate_seg.base + k->bw_start_ns[k->rate_seg.k];
            return;
        }
        if (k->rate_seg.k == first) { /* a whole period at one rate: it never changes */
            k->rate_change_ns = MPS_NEVER;
            return;
        }
    }
}

/* 8, rate lane: the links' earliest change, kept so that finding the next event reads
 * one value. */
static void rate_lane_earliest(mps_sim *s) {
    s->rate_lane_ns = MPS_NEVER;
    for (int l = 0; l < s->n_links; l++)
        if (s->links[l].rate_change_ns < s->rate_lane_ns) s->rate_lane_ns = s->links[l].rate_change_ns;
}

/* 8, rate lane: moves every link's lane to its first change after now. */
static void rate_lane_advance(mps_sim *s) {
    for (int l = 0; l < s->n_links; l++)
        while (s->links[l].rate_change_ns <= s->now) next_rate_change(&s->links[l]);
    rate_lane_earliest(s);
}

/* The subflow's one-way delays at time t (4): the last step started at or before t, the
 * configured delays before the first. */
static void delays_at(const mps_path *p, int64_t t, int64_t *fwd, int64_t *rev) {
    int32_t lo = 0, hi = p->delay_n; /* steps [0, lo) start at or before t, [hi, n) after it */
    while (lo < hi) {
        const int32_t mid = lo + (hi - lo) / 2;
        if (p->delay_start_ns[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    *fwd = lo > 0 ? p->fwd_delay_step_ns[lo - 1] : p->fwd_delay_ns;
    *rev = lo > 0 ? p->rev_delay_step_ns[lo - 1] : p->rev_delay_ns;
}

void mps_hold_future(mps_sim *s, const int64_t *path_rate_bps, uint64_t seed, int keep_arrivals) {
    int64_t rate[MPS_MAX_LINKS] = {0};
    for (int j = 0; j < s->n_paths; j++) { /* a shared link: the sum of its paths' rates */
        int64_t *r = &rate[s->paths[j].link];
        *r = *r > MPS_MAX_RATE_BPS - path_rate_bps[j] ? MPS_MAX_RATE_BPS : *r + path_rate_bps[j];
    }
    for (int l = 0; l < s->n_links; l++) {
        mps_link *k = &s->links[l];
        k->bw_n = 1; /* every schedule has room for one segment */
        k->bw_start_ns[0] = 0;
        k->bw_rate_bps[0] = rate[l];
        k->bw_cycle_ns = 0;
        k->cycle_work = 0;
        k->svc = k->now_seg = k->rate_seg = (mps_seg){0, 0};
        k->rate_change_ns = MPS_NEVER;
    }
    s->rate_lane_ns = MPS_NEVER;
    if (!keep_arrivals) s->n_arriving = s->n_arrived;
    for (int x = 0; x < s->n_cross; x++) {
        mps_path *p = &s->paths[s->n_paths + x];
        const int64_t stop = s->now > p->start_ns ? s->now : p->start_ns;
        if (p->stop_ns > stop) p->stop_ns = stop;
    }
    for (int j = 0; j < s->n_paths + s->n_cross; j++) {
        mps_path *p = &s->paths[j];
        delays_at(p, s->now, &p->fwd_delay_ns, &p->rev_delay_ns); /* held from now on */
        p->delay_n = 0;
        p->down_n = 0; /* no outage the sender could foresee */
        p->dynamics = (uint8_t)(p->fwd_jitter_ns > 0 || p->rev_jitter_ns > 0 || p->ack_loss_threshold > 0 ||
                                p->rev_service_ns > 0);
        mps_rng_seed(p->rng, seed, j);
        mps_rng_seed(p->jitter_rng, seed, j + MPS_JITTER_STREAM);
        mps_rng_seed(p->ack_rng, seed, j + MPS_ACK_STREAM);
    }
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

/* Places ptr (n elements) at the next cache line of the arena at base, or only counts its
 * bytes when base is NULL. */
#define CARVE(ptr, n)                                                                 \
    do {                                                                              \
        off = (off + 63) & ~(size_t)63;                                               \
        if (base) (ptr) = (void *)(base + off);                                       \
        off += (size_t)((n) > 0 ? (n) : 1) * sizeof(*(ptr));                          \
    } while (0)

/* An episode is one allocation, its arena: the mps_sim itself followed by every array whose
 * size the configuration fixes, each on its own cache lines, those touched at every packet
 * first. Stepping many episodes in turn (the vector environment) then touches few pages per
 * episode, and a clone is one copy. Outside it: a packet lane's buffer once the lane
 * outgrows its first one (fifo_grow), the remaining-bytes heap of mps_track_remaining, and
 * the pieces' transmission times, which only an episode with copies keeps
 * (mps_piece_sent_times: eight bytes per piece).
 *
 * The layout for the shape in s (counts, lane capacities, schedule lengths): returns the
 * arena's size and, when base is given, points every array of s into it. */
static size_t lay_out(mps_sim *s, char *base) {
    const int64_t n = s->n_blocks, np = (int64_t)s->n_blocks * s->n_paths, pieces = s->n_pieces, w = s->n_words;
    size_t off = sizeof(mps_sim);
    for (int j = 0; j < s->n_subflows; j++) {
        mps_path *p = &s->paths[j];
        CARVE(p->recvq.buf, p->recvq.cap);
        CARVE(p->ackq.buf, p->ackq.cap);
        CARVE(p->nackq.buf, p->nackq.cap);
        CARVE(p->ring, p->ring_mask + 1);
    }
    for (int l = 0; l < s->n_links; l++) {
        mps_link *k = &s->links[l];
        CARVE(k->queue.buf, k->queue.cap);
        CARVE(k->bw_start_ns, k->bw_n);
        CARVE(k->bw_rate_bps, k->bw_n);
    }
    for (int j = 0; j < s->n_subflows; j++) {
        mps_path *p = &s->paths[j];
        CARVE(p->delay_start_ns, p->delay_n);
        CARVE(p->fwd_delay_step_ns, p->delay_n);
        CARVE(p->rev_delay_step_ns, p->delay_n);
        CARVE(p->down_start_ns, p->down_n);
        CARVE(p->down_end_ns, p->down_n);
    }
    CARVE(s->new_set.bits, w);
    CARVE(s->new_set.dl_bits, w);
    CARVE(s->lost_set.bits, w);
    CARVE(s->lost_set.dl_bits, w);
    CARVE(s->todo_set.bits, w);
    CARVE(s->todo_set.dl_bits, w);
    CARVE(s->flight_set.bits, w);
    CARVE(s->flight_set.dl_bits, w);
    CARVE(s->dl_order, n);
    CARVE(s->dl_sorted, n);
    CARVE(s->arrival_ns, n);
    CARVE(s->blk, n);
    CARVE(s->blk_inflight, np);
    CARVE(s->blk_counted, n);
    CARVE(s->blk_out_floor, n);
    CARVE(s->piece_state, pieces);
    CARVE(s->piece_paths, pieces);
    CARVE(s->piece_received, pieces);
    CARVE(s->piece_next_lost, pieces);
    CARVE(s->blk_bytes_sent, np);
    CARVE(s->first_send_ns, n);
    CARVE(s->completion_ns, n);
    CARVE(s->cancel_ns, n);
    CARVE(s->duplicate_bytes, n);
    if (s->stream_seq) CARVE(s->blk_off, n + 1);
    if (s->receiver == MPS_RECEIVER_IN_ORDER) {
        CARVE(s->dsn_order, pieces);
        CARVE(s->piece_arrival_ns, pieces);
        CARVE(s->piece_delivery_ns, pieces);
        CARVE(s->piece_first_send_ns, pieces);
    }
    return (off + 63) & ~(size_t)63;
}

#undef CARVE

static int64_t lane_estimate(int64_t peak_bps, int64_t delay_ns, int64_t packet_bytes) {
    /* Packets that can be on a wire of this delay at the peak rate, with headroom. */
    double n = (double)peak_bps * (double)delay_ns / 8e9 / (double)packet_bytes;
    if (n > 65536.0) n = 65536.0;
    return 2 * (int64_t)n + 32;
}

static void lane_init(mps_fifo *f, int64_t cap) {
    f->cap = next_pow2(cap < 16 ? 16 : cap);
    fifo_clear(f);
}

mps_sim *mps_sim_create(const mps_config *c) {
    /* the shape first, in a scratch record, to size the arena */
    mps_sim *shape = calloc(1, sizeof(mps_sim));
    if (!shape) return NULL;
    shape->mss = c->mss_bytes;
    shape->header = c->header_bytes;
    shape->n_paths = c->n_paths;
    shape->n_cross = c->n_cross;
    shape->n_subflows = c->n_paths + c->n_cross;
    shape->n_links = c->n_links;
    shape->n_blocks = c->n_blocks;
    shape->receiver = c->receiver;
    shape->rbuf_bytes = c->rbuf_bytes;
    shape->drop_expired = c->drop_expired != 0;
    shape->stream_seq = c->stream_sequence != 0 && c->receiver == MPS_RECEIVER_IN_ORDER;
    shape->end_ns = c->end_ns;
    shape->max_events = c->max_events;
    shape->seed = c->seed;
    const int32_t n = c->n_blocks;
    int64_t pieces = 0;
    for (int32_t b = 0; b < n; b++) pieces += ((int64_t)c->size_bytes[b] + shape->mss - 1) / shape->mss;
    shape->n_pieces = pieces;
    shape->n_words = (n + 63) / 64;
    const int64_t pkt_bytes = (int64_t)shape->mss + shape->header;
    int64_t peak[MPS_MAX_LINKS];
    for (int l = 0; l < c->n_links; l++) {
        const mps_link_config *lc = &c->links[l];
        shape->links[l].bw_n = lc->bw_n;
        peak[l] = 0;
        for (int32_t i = 0; i < lc->bw_n; i++)
            if (lc->bw_rate_bps[i] > peak[l]) peak[l] = lc->bw_rate_bps[i];
        lane_init(&shape->links[l].queue, clamp64(lc->queue_bytes / pkt_bytes * 2 + 16, 16, 65536));
    }
    for (int j = 0; j < shape->n_subflows; j++) {
        const mps_subflow_config *pc = &c->subflows[j];
        mps_path *p = &shape->paths[j];
        const int64_t rate = peak[pc->link];
        int64_t fwd = pc->fwd_delay_ns, rev = pc->rev_delay_ns; /* the longest delays, for the lanes' size */
        for (int32_t k = 0; k < pc->delay_n; k++) {
            if (pc->fwd_delay_step_ns[k] > fwd) fwd = pc->fwd_delay_step_ns[k];
            if (pc->rev_delay_step_ns[k] > rev) rev = pc->rev_delay_step_ns[k];
        }
        fwd += pc->fwd_jitter_ns;
        rev += pc->rev_jitter_ns;
        p->delay_n = pc->delay_n;
        p->down_n = pc->down_n;
        const int64_t rtt_lane = lane_estimate(rate, fwd + rev, pkt_bytes);
        const int lossy = pc->loss_threshold > 0 || pc->loss_model == MPS_LOSS_GILBERT_ELLIOTT;
        p->window_based = mps_cc_table[pc->cc]->window_based;
        p->ring_mask = pc->ring_capacity - 1;
        lane_init(&p->recvq, lane_estimate(rate, fwd, pkt_bytes));
        lane_init(&p->ackq, rtt_lane);
        lane_init(&p->nackq, lossy && !p->window_based ? rtt_lane : 16);
    }
    const size_t bytes = lay_out(shape, NULL);
    mps_sim *s = aligned_alloc(64, bytes);
    if (!s) {
        free(shape);
        return NULL;
    }
    /* only the record is cleared: every array is written before it is read (by the copies
     * below or by mps_sim_reset), so pages an episode never touches are never made resident */
    memcpy(s, shape, sizeof(mps_sim));
    free(shape);
    s->arena_bytes = bytes;
    lay_out(s, (char *)s);

    memcpy(s->arrival_ns, c->arrival_ns, (size_t)n * sizeof(int64_t));
    pieces = 0;
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
    if (s->receiver == MPS_RECEIVER_IN_ORDER) /* its view shows positions not yet given as 0 */
        memset(s->dsn_order, 0, (size_t)s->n_pieces * sizeof(int32_t));
    if (s->stream_seq) {
        s->blk_off[0] = 0;
        for (int32_t b = 0; b < n; b++) s->blk_off[b + 1] = s->blk_off[b] + s->blk[b].size_bytes;
    }
    for (int32_t b = 0; b < n; b++) s->dl_order[b] = b;
    if (sort_by_deadline(s->dl_order, n, s->blk) != 0) {
        free(s);
        return NULL;
    }
    for (int32_t r = 0; r < n; r++) {
        s->blk[s->dl_order[r]].dl_rank = r;
        s->dl_sorted[r] = s->blk[s->dl_order[r]].deadline_ns;
    }
    for (int l = 0; l < c->n_links; l++) {
        const mps_link_config *lc = &c->links[l];
        mps_link *k = &s->links[l];
        k->queue_bytes = lc->queue_bytes;
        k->bw_cycle_ns = lc->bw_cycle_ns;
        memcpy(k->bw_start_ns, lc->bw_start_ns, (size_t)lc->bw_n * sizeof(int64_t));
        memcpy(k->bw_rate_bps, lc->bw_rate_bps, (size_t)lc->bw_n * sizeof(int64_t));
        k->cycle_work = cycle_work(k);
    }
    for (int j = 0; j < s->n_subflows; j++) {
        const mps_subflow_config *pc = &c->subflows[j];
        mps_path *p = &s->paths[j];
        p->link = pc->link;
        p->is_cross = j >= s->n_paths;
        p->fwd_delay_ns = pc->fwd_delay_ns;
        p->rev_delay_ns = pc->rev_delay_ns;
        p->loss_model = pc->loss_model;
        p->loss_threshold = pc->loss_threshold;
        p->ge_p_threshold = pc->ge_p_threshold;
        p->ge_r_threshold = pc->ge_r_threshold;
        p->ge_bad_loss_threshold = pc->ge_bad_loss_threshold;
        p->cc = pc->cc;
        p->prr = (uint8_t)pc->fast_recovery;
        p->cubic_segments = (uint8_t)pc->cubic_arithmetic;
        p->backup = (uint8_t)(pc->backup != 0);
        p->timed = (uint8_t)(p->is_cross || pc->start_ns > 0 || pc->stop_ns < MPS_MAX_TIME_NS);
        p->gated = (uint8_t)(p->timed || p->backup);
        p->ack_loss_threshold = pc->ack_loss_threshold;
        /* 6: ceil(ack_bytes * 8e9 / rate), at most 65535 * 8e9 before the division */
        p->rev_service_ns = pc->rev_rate_bps > 0 ? (pc->ack_bytes * INT64_C(8000000000) + pc->rev_rate_bps - 1) /
                                                       pc->rev_rate_bps
                                                 : 0;
        p->ack_bytes = pc->ack_bytes;
        p->rev_queue_bytes = pc->rev_queue_bytes;
        p->dynamics = (uint8_t)(pc->delay_n > 0 || pc->fwd_jitter_ns > 0 || pc->rev_jitter_ns > 0 || pc->down_n > 0 ||
                                pc->ack_loss_threshold > 0 || p->rev_service_ns > 0);
        p->initial_cwnd_bytes = pc->initial_cwnd_bytes;
        p->min_rto_ns = pc->min_rto_ns;
        p->max_rto_ns = pc->max_rto_ns;
        p->start_ns = pc->start_ns;
        p->stop_ns = pc->stop_ns;
        p->ccp_gain_milli = pc->ccp_gain_milli;
        p->ccp_storage_bytes = pc->ccp_storage_bytes;
        p->fwd_jitter_ns = pc->fwd_jitter_ns;
        p->rev_jitter_ns = pc->rev_jitter_ns;
        const size_t steps = (size_t)pc->delay_n * sizeof(int64_t);
        if (steps) {
            memcpy(p->delay_start_ns, pc->delay_start_ns, steps);
            memcpy(p->fwd_delay_step_ns, pc->fwd_delay_step_ns, steps);
            memcpy(p->rev_delay_step_ns, pc->rev_delay_step_ns, steps);
        }
        const size_t outages = (size_t)pc->down_n * sizeof(int64_t);
        if (outages) {
            memcpy(p->down_start_ns, pc->down_start_ns, outages);
            memcpy(p->down_end_ns, pc->down_end_ns, outages);
        }
    }
    mps_sim_reset(s, c->seed);
    return s;
}

/* The lanes of a simulation, for the loops that treat them alike. */
static int lanes_of(mps_sim *s, mps_fifo **out) {
    int m = 0;
    for (int l = 0; l < s->n_links; l++) out[m++] = &s->links[l].queue;
    for (int j = 0; j < s->n_subflows; j++) {
        out[m++] = &s->paths[j].recvq;
        out[m++] = &s->paths[j].ackq;
        out[m++] = &s->paths[j].nackq;
    }
    return m;
}

#define MPS_MAX_LANES (MPS_MAX_LINKS + 3 * MPS_MAX_SUBFLOWS)

/* dst = a copy of n elements of src in fresh memory (NULL stays NULL); to nomem when memory runs out. */
#define DUP(dst, src, n)                                                          \
    do {                                                                          \
        if (src) {                                                                \
            const size_t bytes_ = (size_t)((n) > 0 ? (n) : 1) * sizeof(*(src));   \
            (dst) = malloc(bytes_);                                               \
            if (!(dst)) goto nomem;                                               \
            memcpy((dst), (src), bytes_);                                         \
        }                                                                         \
    } while (0)

mps_sim *mps_sim_clone(const mps_sim *s) {
    mps_sim *c = aligned_alloc(64, s->arena_bytes);
    if (!c) return NULL;
    memcpy(c, s, s->arena_bytes);
    /* Every array in the arena moves with it (same offsets, so one shift of each pointer);
     * those outside it are the copy's own from here on, NULL until copied, so that
     * mps_sim_free can undo a partial copy. */
    const ptrdiff_t shift = (char *)c - (char *)s;
    void **inside[] = {
        (void **)&c->blk, (void **)&c->arrival_ns, (void **)&c->first_send_ns, (void **)&c->completion_ns,
        (void **)&c->cancel_ns, (void **)&c->duplicate_bytes, (void **)&c->blk_bytes_sent, (void **)&c->blk_inflight,
        (void **)&c->piece_state, (void **)&c->piece_paths, (void **)&c->piece_received,
        (void **)&c->piece_next_lost, (void **)&c->blk_off,
        (void **)&c->new_set.bits, (void **)&c->new_set.dl_bits, (void **)&c->lost_set.bits,
        (void **)&c->lost_set.dl_bits, (void **)&c->todo_set.bits, (void **)&c->todo_set.dl_bits,
        (void **)&c->flight_set.bits, (void **)&c->flight_set.dl_bits,
        (void **)&c->dl_order, (void **)&c->dl_sorted, (void **)&c->blk_counted, (void **)&c->blk_out_floor,
        (void **)&c->dsn_order,
        (void **)&c->piece_arrival_ns, (void **)&c->piece_delivery_ns, (void **)&c->piece_first_send_ns,
    };
    for (size_t i = 0; i < sizeof inside / sizeof inside[0]; i++)
        if (*inside[i]) *inside[i] = (char *)*inside[i] + shift;
    for (int l = 0; l < s->n_links; l++) {
        c->links[l].bw_start_ns = (int64_t *)((char *)c->links[l].bw_start_ns + shift);
        c->links[l].bw_rate_bps = (int64_t *)((char *)c->links[l].bw_rate_bps + shift);
    }
    for (int j = 0; j < s->n_subflows; j++) {
        mps_path *p = &c->paths[j];
        p->ring = (mps_rec *)((char *)p->ring + shift);
        p->delay_start_ns = (int64_t *)((char *)p->delay_start_ns + shift);
        p->fwd_delay_step_ns = (int64_t *)((char *)p->fwd_delay_step_ns + shift);
        p->rev_delay_step_ns = (int64_t *)((char *)p->rev_delay_step_ns + shift);
        p->down_start_ns = (int64_t *)((char *)p->down_start_ns + shift);
        p->down_end_ns = (int64_t *)((char *)p->down_end_ns + shift);
    }
    mps_fifo *src_lanes[MPS_MAX_LANES], *dst_lanes[MPS_MAX_LANES];
    const int m = lanes_of((mps_sim *)s, src_lanes);
    lanes_of(c, dst_lanes);
    for (int i = 0; i < m; i++)
        if (in_arena(s, src_lanes[i]->buf))
            dst_lanes[i]->buf = (mps_pkt *)((char *)src_lanes[i]->buf + shift);
        else
            dst_lanes[i]->buf = NULL;
    c->flying = c->flying_pos = c->rem_heap = c->rem_heap_pos = NULL;
    c->piece_sent_ns = NULL;
    for (int i = 0; i < m; i++)
        if (!dst_lanes[i]->buf) DUP(dst_lanes[i]->buf, src_lanes[i]->buf, src_lanes[i]->cap);
    DUP(c->flying, s->flying, s->n_blocks);
    DUP(c->flying_pos, s->flying_pos, s->n_blocks);
    DUP(c->rem_heap, s->rem_heap, s->n_blocks);
    DUP(c->rem_heap_pos, s->rem_heap_pos, s->n_blocks);
    DUP(c->piece_sent_ns, s->piece_sent_ns, s->n_pieces);
    return c;
nomem:
    mps_sim_free(c);
    return NULL;
}

#undef DUP

void mps_sim_free(mps_sim *s) {
    if (!s) return;
    mps_fifo *lanes[MPS_MAX_LANES];
    const int m = lanes_of(s, lanes);
    for (int i = 0; i < m; i++)
        if (!in_arena(s, lanes[i]->buf)) free(lanes[i]->buf);
    free(s->flying);
    free(s->flying_pos);
    free(s->rem_heap);
    free(s->rem_heap_pos);
    free(s->piece_sent_ns);
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
    memset(s->piece_paths, 0, (size_t)s->n_pieces);
    if (s->piece_sent_ns) memset(s->piece_sent_ns, 0xff, (size_t)s->n_pieces * sizeof(int64_t)); /* -1: never */
    memset(s->piece_received, 0, (size_t)s->n_pieces);
    memset(s->blk_out_floor, 0, (size_t)n * sizeof(int32_t));
    s->pieces_out = 0;
    if (s->receiver == MPS_RECEIVER_IN_ORDER) {
        for (int64_t g = 0; g < s->n_pieces; g++)
            s->piece_arrival_ns[g] = s->piece_delivery_ns[g] = s->piece_first_send_ns[g] = -1;
    }
    const size_t words = (size_t)s->n_words * sizeof(uint64_t);
    memset(s->new_set.bits, 0, words);
    memset(s->new_set.dl_bits, 0, words);
    memset(s->lost_set.bits, 0, words);
    memset(s->lost_set.dl_bits, 0, words);
    memset(s->todo_set.bits, 0, words);
    memset(s->todo_set.dl_bits, 0, words);
    memset(s->flight_set.bits, 0, words);
    memset(s->flight_set.dl_bits, 0, words);
    s->track_flight = 0;
    s->flight_dl_low_word = s->n_words;
    s->low_word = s->todo_low_word = s->dl_low_word = s->n_words;
    s->hi_word = s->dl_hi_word = -1;
    s->n_new_or_lost = s->n_lost = 0;
    s->window_open = 1;
    s->dl_cut = 0;
    s->lost_set_bytes = s->new_only_bytes = 0;
    memset(s->blk_counted, 0, (size_t)n * sizeof(int32_t));
    s->track_remaining = 0; /* the arrays stay allocated for the next request */
    s->n_flying = 0;
    s->n_rem_heap = 0;
    s->conn_next_dsn = s->data_acked = s->rcv_nxt = s->rbuf_used = 0;
    s->n_dsn = s->deliver_k = 0;
    s->win_k = 0;
    s->published_ns = -1;

    for (int l = 0; l < s->n_links; l++) {
        mps_link *k = &s->links[l];
        k->svc = (mps_seg){0, 0};
        k->now_seg = (mps_seg){0, 0};
        k->rate_seg = (mps_seg){0, 0};
        next_rate_change(k);
        fifo_clear(&k->queue);
        k->done_ns = MPS_NEVER;
        k->waiting_bytes = 0;
    }
    rate_lane_earliest(s);
    for (int j = 0; j < s->n_subflows; j++) {
        mps_path *p = &s->paths[j];
        mps_rng_seed(p->rng, seed, j);
        mps_rng_seed(p->jitter_rng, seed, j + MPS_JITTER_STREAM);
        mps_rng_seed(p->ack_rng, seed, j + MPS_ACK_STREAM);
        fifo_clear(&p->recvq);
        fifo_clear(&p->ackq);
        fifo_clear(&p->nackq);
        p->oldest_pn = p->next_pn = p->scan_pn = p->ack_count = 0;
        p->recover_pn = -1;
        p->prr_delivered = p->prr_out = p->prr_recover_fs = 0;
        p->rto_deadline = MPS_NEVER;
        p->delivered = p->delivered_time = 0;
        const int64_t base_rtt = p->fwd_delay_ns + p->rev_delay_ns; /* the handshake sample */
        p->srtt_ns = p->min_rtt_ns = p->max_srtt_ns = base_rtt;
        p->rttvar_ns = base_rtt / 2;
        p->rto_ns = rto_from_estimates(p);
        p->inflight_bytes = 0;
        p->delivery_rate_bps = p->max_delivery_rate_bps = 0;
        p->recovery = MPS_REC_NONE;
        p->can_send = 0;
        p->ge_bad = 0;
        p->last_lost = 0;
        p->loss_bursts = 0;
        p->outage_losses = p->outage_ack_losses = p->ack_losses = p->ack_queue_drops = p->rto_streak = 0;
        p->rev_free_ns = 0;
        p->redundant_packets = p->redundant_bytes = 0;
        p->last_send_ns = -1;
        p->packets_sent = p->bytes_sent = p->retransmissions = 0;
        p->queue_drops = p->random_losses = p->declared_lost = 0;
        p->rto_count = p->fast_recoveries = p->delivered_bytes = p->dropped_bytes = 0;
        mps_cc_table[p->cc]->init(s, j);
    }
    s->starts_pending = 0;
    for (int j = 0; j < s->n_subflows; j++) { /* a path that starts at 0 has no start event (8) */
        s->started[j] = j < s->n_paths && s->paths[j].start_ns == 0;
        s->starts_pending += !s->started[j];
    }
    s->n_arrived = 0;
    s->n_arriving = s->n_blocks;
    s->now = 0;
    s->last_event_ns = -1;
    s->done = 0;
    s->in_rounds = 0;
    s->round_j = 0;
    s->sent_any = 0;
    s->pending = -1;
    memset(s->waited, 0, sizeof s->waited);
    s->decisions = 0;
    s->cancels = 0;
    s->events = 0;
    s->policy_work = 0;
    s->reward = 0.0;
    s->reward_total = 0.0;
    s->error = 0;
    s->errmsg[0] = '\0';
}

/* ------------------------------------------------------------------------- */
/* The sendable sets (7)                                                     */
/* ------------------------------------------------------------------------- */

/* Puts block b in or out of a set where its membership differs from want; returns the
 * change (-1 or 1). */
static int set_member_change(mps_sim *s, mps_blockset *set, int32_t b, int32_t rank, int want) {
    const int32_t w = b >> 6;
    const uint64_t bit = UINT64_C(1) << (b & 63);
    const uint64_t rbit = UINT64_C(1) << (rank & 63);
    if (want) {
        set->bits[w] |= bit;
        set->dl_bits[rank >> 6] |= rbit;
        if ((rank >> 6) > s->dl_hi_word) s->dl_hi_word = rank >> 6;
        if ((rank >> 6) < s->dl_low_word) s->dl_low_word = rank >> 6;
        if (w > s->hi_word) s->hi_word = w;
        if (w < s->low_word) s->low_word = w;
        if (w < s->todo_low_word) s->todo_low_word = w;
        return 1;
    }
    set->bits[w] &= ~bit;
    set->dl_bits[rank >> 6] &= ~rbit;
    return -1;
}

/* rem_heap (sim.h): a binary heap with each block's position kept in rem_heap_pos. */
static void rem_heap_place(mps_sim *s, int32_t at, int32_t b) {
    s->rem_heap[at] = b;
    s->rem_heap_pos[b] = at;
}

static void rem_heap_up(mps_sim *s, int32_t at) {
    const int32_t b = s->rem_heap[at];
    while (at > 0 && mps_remaining_before(s, b, s->rem_heap[(at - 1) / 2])) {
        rem_heap_place(s, at, s->rem_heap[(at - 1) / 2]);
        at = (at - 1) / 2;
    }
    rem_heap_place(s, at, b);
}

static void rem_heap_down(mps_sim *s, int32_t at) {
    const int32_t b = s->rem_heap[at], n = s->n_rem_heap;
    for (;;) {
        int32_t first = at;
        const int32_t left = 2 * at + 1, right = left + 1;
        if (left < n && mps_remaining_before(s, s->rem_heap[left], first == at ? b : s->rem_heap[first])) first = left;
        if (right < n && mps_remaining_before(s, s->rem_heap[right], first == at ? b : s->rem_heap[first])) first = right;
        if (first == at) break;
        rem_heap_place(s, at, s->rem_heap[first]);
        at = first;
    }
    rem_heap_place(s, at, b);
}

/* Puts block b in rem_heap, takes it out or moves it after its key changed. */
static void rem_heap_update(mps_sim *s, int32_t b, int member) {
    const int32_t at = s->rem_heap_pos[b];
    if (member && at < 0) {
        rem_heap_place(s, s->n_rem_heap++, b);
        rem_heap_up(s, s->n_rem_heap - 1);
    } else if (!member && at >= 0) {
        s->rem_heap_pos[b] = -1;
        const int32_t last = s->rem_heap[--s->n_rem_heap];
        if (last != b) {
            rem_heap_place(s, at, last);
            rem_heap_up(s, at);
            rem_heap_down(s, s->rem_heap_pos[last]);
        }
    } else if (member) {
        rem_heap_up(s, at);
        rem_heap_down(s, s->rem_heap_pos[b]);
    }
}

static void update_flying(mps_sim *s, int32_t b);

int mps_track_remaining(mps_sim *s) {
    const size_t bytes = (size_t)(s->n_blocks > 0 ? s->n_blocks : 1) * sizeof(int32_t);
    if (!s->rem_heap) { /* allocated on the first request, kept until mps_sim_free */
        s->rem_heap = malloc(bytes);
        s->rem_heap_pos = malloc(bytes);
        s->flying = malloc(bytes);
        s->flying_pos = malloc(bytes);
        if (!s->rem_heap || !s->rem_heap_pos || !s->flying || !s->flying_pos) {
            free(s->rem_heap);
            free(s->rem_heap_pos);
            free(s->flying);
            free(s->flying_pos);
            s->rem_heap = s->rem_heap_pos = s->flying = s->flying_pos = NULL;
            fail(s, MPS_ERR_NOMEM, "out of memory for the remaining-bytes heap");
            return -1;
        }
    }
    s->track_remaining = 1;
    s->n_rem_heap = s->n_flying = 0;
    memset(s->rem_heap_pos, 0xff, bytes); /* -1: not in the heap */
    memset(s->flying_pos, 0xff, bytes);   /* -1: not flying */
    for (int32_t w = s->low_word; w <= s->hi_word; w++)
        for (uint64_t x = s->new_set.bits[w] | s->lost_set.bits[w]; x; x &= x - 1) {
            const int32_t b = (w << 6) + __builtin_ctzll(x);
            rem_heap_update(s, b, 1);
            update_flying(s, b);
        }
    return 0;
}

/* Puts block b in the flying list or takes it out (sim.h); the list is kept only while
 * track_remaining is on. */
static void update_flying(mps_sim *s, int32_t b) {
    const int P = s->n_paths;
    const int64_t *inflight = s->blk_inflight + (int64_t)b * P;
    const uint64_t bit = UINT64_C(1) << (b & 63);
    int flying = 0;
    if ((s->new_set.bits[b >> 6] | s->lost_set.bits[b >> 6]) & bit)
        for (int p = 0; p < P; p++) flying |= inflight[p] > 0;
    const int32_t at = s->flying_pos[b];
    if (flying && at < 0) {
        s->flying_pos[b] = s->n_flying;
        s->flying[s->n_flying++] = b;
    } else if (!flying && at >= 0) {
        const int32_t last = s->flying[--s->n_flying];
        s->flying[at] = last;
        s->flying_pos[last] = at;
        s->flying_pos[b] = -1;
    }
}

/* Puts block b in flight_set or takes it out, by its bytes in flight. */
static void update_flight(mps_sim *s, int32_t b) {
    const int64_t *inflight = s->blk_inflight + (int64_t)b * s->n_paths;
    int flying = 0;
    for (int p = 0; p < s->n_paths; p++) flying |= inflight[p] > 0;
    const int32_t r = s->blk[b].dl_rank;
    const uint64_t bit = UINT64_C(1) << (b & 63), rbit = UINT64_C(1) << (r & 63);
    if (flying) {
        s->flight_set.bits[b >> 6] |= bit;
        s->flight_set.dl_bits[r >> 6] |= rbit;
        if ((r >> 6) < s->flight_dl_low_word) s->flight_dl_low_word = r >> 6;
    } else {
        s->flight_set.bits[b >> 6] &= ~bit;
        s->flight_set.dl_bits[r >> 6] &= ~rbit;
    }
}

void mps_track_flight(mps_sim *s) {
    s->track_flight = 1;
    for (int32_t b = 0; b < s->n_arrived; b++) update_flight(s, b);
}

int32_t mps_flight_rank_floor(mps_sim *s) {
    while (s->flight_dl_low_word <= s->dl_hi_word && !s->flight_set.dl_bits[s->flight_dl_low_word])
        s->flight_dl_low_word++;
    return s->flight_dl_low_word;
}

/* Block b's bytes in flight on path j change by delta. */
static void add_inflight(mps_sim *s, int32_t b, int j, int64_t delta) {
    s->blk_inflight[(int64_t)b * s->n_paths + j] += delta;
    if (s->track_remaining) update_flying(s, b);
    if (s->track_flight) update_flight(s, b);
}

static void update_sendable(mps_sim *s, int32_t b) {
    mps_block *k = &s->blk[b];
    const uint32_t f = k->flags;
    const int arrived = (f & MPS_BLK_ARRIVED) != 0, cancelled = (f & MPS_BLK_CANCELLED) != 0;
    const int want_todo = arrived && (k->unsent_bytes > 0 || k->lost_pending_bytes > 0);
    int want_new = arrived && !cancelled && k->unsent_bytes > 0;
    if (want_new && s->stream_seq) /* 7: the next piece must end inside the receive window */
        want_new = s->blk_off[b] + piece_end(s, k, k->next_new) <= s->data_acked + s->rbuf_bytes;
    const int want_lost =
        arrived && k->lost_pending_bytes > 0 && (!cancelled || s->receiver == MPS_RECEIVER_IN_ORDER);
    const uint32_t want = (want_todo ? MPS_BLK_IN_TODO : 0u) | (want_new ? MPS_BLK_IN_NEW : 0u) |
                          (want_lost ? MPS_BLK_IN_LOST : 0u);
    const int32_t remaining = k->unsent_bytes + k->lost_pending_bytes;
    if ((f & MPS_BLK_IN_SETS) == want) { /* the same sets: only the bytes they count change */
        if (want_lost)
            s->lost_set_bytes += remaining - s->blk_counted[b];
        else if (want_new)
            s->new_only_bytes += remaining - s->blk_counted[b];
    } else {
        const int was_lost = (f & MPS_BLK_IN_LOST) != 0;
        const int was_any = (f & (MPS_BLK_IN_NEW | MPS_BLK_IN_LOST)) != 0;
        if ((f ^ want) & MPS_BLK_IN_TODO) set_member_change(s, &s->todo_set, b, k->dl_rank, want_todo);
        if ((f ^ want) & MPS_BLK_IN_NEW) set_member_change(s, &s->new_set, b, k->dl_rank, want_new);
        if ((f ^ want) & MPS_BLK_IN_LOST) s->n_lost += set_member_change(s, &s->lost_set, b, k->dl_rank, want_lost);
        s->n_new_or_lost += (want_new || want_lost) - was_any;
        if (was_lost)
            s->lost_set_bytes -= s->blk_counted[b];
        else if (was_any)
            s->new_only_bytes -= s->blk_counted[b];
        if (want_lost)
            s->lost_set_bytes += remaining;
        else if (want_new)
            s->new_only_bytes += remaining;
        k->flags = (f & ~MPS_BLK_IN_SETS) | want;
    }
    s->blk_counted[b] = remaining;
    if (s->track_remaining) {
        rem_heap_update(s, b, want_new || want_lost);
        update_flying(s, b);
    }
}

/* 7: the receive window after conn_next_dsn or data_acked changed. With the stream
 * sequence the window is per block (update_sendable): blocks that start below the new
 * edge and were not wholly inside the old one are looked at again. */
static void update_window(mps_sim *s) {
    if (s->receiver != MPS_RECEIVER_IN_ORDER) return;
    if (!s->stream_seq) {
        s->window_open = s->conn_next_dsn + s->mss <= s->data_acked + s->rbuf_bytes;
        return;
    }
    const int64_t edge = s->data_acked + s->rbuf_bytes;
    for (int32_t b = s->win_k; b < s->n_blocks && s->blk_off[b] < edge; b++) update_sendable(s, b);
    while (s->win_k < s->n_blocks && s->blk_off[s->win_k + 1] <= edge) s->win_k++;
}

int32_t mps_todo_floor(mps_sim *s) {
    while (s->todo_low_word <= s->hi_word && !s->todo_set.bits[s->todo_low_word]) s->todo_low_word++;
    return s->todo_low_word;
}

int32_t mps_todo_rank_floor(mps_sim *s) {
    while (s->dl_low_word <= s->dl_hi_word && !s->todo_set.dl_bits[s->dl_low_word]) s->dl_low_word++;
    return s->dl_low_word;
}

int32_t mps_sendable_floor(mps_sim *s) {
    while (s->low_word <= s->hi_word && !(s->new_set.bits[s->low_word] | s->lost_set.bits[s->low_word])) s->low_word++;
    return s->low_word;
}

int32_t mps_first_sendable(mps_sim *s) {
    for (int32_t w = mps_sendable_floor(s); w <= s->hi_word; w++) {
        const uint64_t x = mps_sendable_word(s, w);
        if (x) return (w << 6) + __builtin_ctzll(x);
    }
    return -1;
}

int32_t mps_sendable_list(const mps_sim *s, int32_t *out, int32_t cap) {
    int32_t k = 0;
    for (int32_t w = s->low_word; w <= s->hi_word && k < cap; w++) {
        uint64_t x = mps_sendable_word(s, w);
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

static inline int64_t seg_end(const mps_link *k, const mps_seg *c) {
    if (c->k + 1 < k->bw_n) return c->base + k->bw_start_ns[c->k + 1];
    return k->bw_cycle_ns > 0 ? c->base + k->bw_cycle_ns : MPS_NEVER;
}

/* seg_locate's move to a later segment, for a t at or past the end of c's. */
static void seg_advance(const mps_link *k, mps_seg *c, int64_t t) {
    if (k->bw_cycle_ns > 0 && t - c->base >= k->bw_cycle_ns) {
        c->base += ((t - c->base) / k->bw_cycle_ns) * k->bw_cycle_ns;
        c->k = 0;
    }
    const int64_t rel = t - c->base;
    int32_t lo = c->k, hi = k->bw_n; /* bw_start_ns[lo] <= rel < bw_start_ns[hi] */
    while (hi - lo > 1) {
        const int32_t mid = lo + (hi - lo) / 2;
        if (k->bw_start_ns[mid] <= rel)
            lo = mid;
        else
            hi = mid;
    }
    c->k = lo;
}

/* Moves cursor c to the segment containing t. Each cursor's queries never go back in
 * time, so it only moves forward; most find t still in c's segment. */
static inline void seg_locate(const mps_link *k, mps_seg *c, int64_t t) {
    if (t >= seg_end(k, c)) seg_advance(k, c, t);
}

/* service_end through a bandwidth schedule, segment by segment. */
static int64_t service_walk(mps_link *k, int64_t t0, int64_t work) {
    int64_t t = t0;
    if (k->bw_cycle_ns > 0 && k->cycle_work == 0) return MPS_NEVER; /* zero rate forever */
    for (;;) {
        seg_locate(k, &k->svc, t);
        if (k->svc.k == 0 && t == k->svc.base && work > k->cycle_work && k->bw_cycle_ns > 0) {
            /* Whole periods that cannot finish the packet: the same result as walking
             * through them segment by segment, in one step. */
            const int64_t periods = (work - 1) / k->cycle_work;
            if (periods > (MPS_NEVER - MPS_MAX_TIME_NS - t) / k->bw_cycle_ns) return MPS_NEVER; /* past any horizon */
            work -= periods * k->cycle_work;
            t += periods * k->bw_cycle_ns;
            k->svc.base = t;
        }
        const int64_t r = k->bw_rate_bps[k->svc.k];
        const int64_t e = seg_end(k, &k->svc);
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

/* When a packet of wire_bytes whose service starts at t0 leaves link k. */
static inline int64_t service_end(mps_link *k, int64_t t0, int64_t wire_bytes) {
    const int64_t work = 8 * wire_bytes * INT64_C(1000000000);
    if (k->bw_n == 1 && k->bw_cycle_ns == 0) { /* one rate for ever: the walk in one step */
        const int64_t r = k->bw_rate_bps[0];
        return r > 0 ? t0 + (work + r - 1) / r : MPS_NEVER;
    }
    return service_walk(k, t0, work);
}

/* ------------------------------------------------------------------------- */
/* Links and loss (4)                                                        */
/* ------------------------------------------------------------------------- */

/* A slot at the tail of the queue of p's link for a packet of size bytes, which the
 * caller fills (in place: see fifo_push); NULL when the queue is full (the packet is
 * dropped) or memory runs out. */
static mps_pkt *link_enqueue(mps_sim *s, mps_path *p, int32_t size) {
    mps_link *k = &s->links[p->link];
    const int64_t wire = (int64_t)size + s->header;
    mps_pkt *slot = NULL;
    if (k->done_ns == MPS_NEVER && fifo_count(&k->queue) == 0) {
        if (!(slot = fifo_slot(s, &k->queue, 0))) return NULL;
        k->done_ns = service_end(k, s->now, wire);
    } else if (k->waiting_bytes + wire <= k->queue_bytes) {
        if (!(slot = fifo_slot(s, &k->queue, 0))) return NULL;
        k->waiting_bytes += wire;
    } else {
        p->queue_drops++;
        p->dropped_bytes += size;
    }
    return slot;
}

static inline int draw_below(mps_path *p, uint64_t threshold) { return (mps_rng_next(p->rng) >> 11) < threshold; }

/* Whether a packet of subflow p that just left its link is lost (4). */
static int packet_lost(mps_path *p) {
    if (p->loss_model == MPS_LOSS_IID) return p->loss_threshold > 0 && draw_below(p, p->loss_threshold);
    if (p->ge_bad) {
        if (draw_below(p, p->ge_r_threshold)) p->ge_bad = 0;
    } else if (draw_below(p, p->ge_p_threshold)) {
        p->ge_bad = 1;
    }
    return draw_below(p, p->ge_bad ? p->ge_bad_loss_threshold : p->loss_threshold);
}

/* A draw in [0, jitter] from the subflow's jitter stream (4, 6); no draw when it is 0. */
static inline int64_t jitter_draw(mps_path *p, int64_t jitter) {
    if (jitter == 0) return 0;
    return (int64_t)(((unsigned __int128)mps_rng_next(p->jitter_rng) * (uint64_t)(jitter + 1)) >> 64);
}

/* t, or the time of lane f's last packet if that is later: a lane never lets a packet
 * overtake the one before it (4, 6). */
static inline int64_t in_order(const mps_fifo *f, int64_t t) {
    if (fifo_count(f) > 0) {
        const int64_t last = f->buf[(f->tail - 1) & (f->cap - 1)].t;
        if (t < last) return last;
    }
    return t;
}

/* Whether the subflow is down at some moment of [from, to] (4, 6). */
static int down_during(const mps_path *p, int64_t from, int64_t to) {
    int32_t lo = 0, hi = p->down_n; /* the first outage that ends after from */
    while (lo < hi) {
        const int32_t mid = lo + (hi - lo) / 2;
        if (p->down_end_ns[mid] > from)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo < p->down_n && p->down_start_ns[lo] <= to;
}

/* The way of a packet of a subflow with delay dynamics or outages that leaves its link at
 * t (4); lost: whether it was lost at random. With constant delays and no outages this is
 * what on_link_done does itself (the order rule cannot bind there). */
static void leave_link_dynamic(mps_sim *s, mps_path *p, mps_pkt *pk, int64_t t, int lost) {
    int64_t fwd = p->fwd_delay_ns, rev = p->rev_delay_ns;
    if (p->delay_n) delays_at(p, t, &fwd, &rev);
    int64_t arrive = 0;
    int down = 0;
    if (lost) {
        p->random_losses++;
    } else {
        arrive = in_order(&p->recvq, t + fwd + jitter_draw(p, p->fwd_jitter_ns));
        down = p->down_n && down_during(p, t, arrive);
        p->outage_losses += down;
    }
    if (lost || down) {
        p->dropped_bytes += pk->size;
        if (!p->window_based) { /* 7.6: negative acknowledgement */
            mps_pkt *nack = fifo_push(s, &p->nackq, pk, in_order(&p->nackq, t + fwd + rev));
            if (nack) nack->nack = 1;
        }
    } else {
        fifo_push(s, &p->recvq, pk, arrive);
    }
}

/* The way back of the acknowledgement pk that leaves the receiver at t, for a subflow with
 * delay dynamics, outages or a reverse bottleneck (6); returns it in the acknowledgement
 * lane, NULL when it is lost. */
static mps_pkt *ack_back_dynamic(mps_sim *s, mps_path *p, mps_pkt *pk, int64_t t) {
    int64_t wire = t; /* when it leaves the reverse bottleneck */
    if (p->rev_service_ns) {
        if (p->rev_free_ns > s->end_ns) return NULL; /* it would reach the sender after the horizon */
        if (p->rev_free_ns > t) { /* busy: ceil((free - t) / service) in the server, one in service */
            const int64_t waiting = (p->rev_free_ns - t + p->rev_service_ns - 1) / p->rev_service_ns - 1;
            if (waiting + 1 > p->rev_queue_bytes / p->ack_bytes) { /* (waiting + 1) * ack_bytes > queue */
                p->ack_queue_drops++;
                return NULL;
            }
            wire = p->rev_free_ns;
        }
        wire += p->rev_service_ns;
        p->rev_free_ns = wire;
    }
    int64_t fwd = p->fwd_delay_ns, rev = p->rev_delay_ns;
    if (p->delay_n) delays_at(p, wire, &fwd, &rev);
    const int64_t back = in_order(&p->ackq, wire + rev + jitter_draw(p, p->rev_jitter_ns));
    if (p->ack_loss_threshold && (mps_rng_next(p->ack_rng) >> 11) < p->ack_loss_threshold) { /* lost at random */
        p->ack_losses++;
        return NULL;
    }
    if (p->window_based && p->down_n && down_during(p, t, back)) { /* lost to an outage */
        p->outage_ack_losses++;
        return NULL;
    }
    return fifo_push(s, &p->ackq, pk, back);
}

static int busy_link(const mps_link *k) { return k->done_ns != MPS_NEVER || fifo_count(&k->queue) > 0; }

static void on_link_done(mps_sim *s, int l, int64_t t) {
    mps_link *k = &s->links[l];
    mps_pkt *pk = fifo_front(&k->queue);
    fifo_pop(&k->queue);
    mps_path *p = &s->paths[pk->subflow];
    const int lost = packet_lost(p);
    p->loss_bursts += lost && !p->last_lost;
    p->last_lost = (uint8_t)lost;
    if (p->dynamics) {
        leave_link_dynamic(s, p, pk, t, lost);
    } else if (lost) {
        p->random_losses++;
        p->dropped_bytes += pk->size;
        if (!p->window_based) { /* 7.6: negative acknowledgement */
            mps_pkt *nack = fifo_push(s, &p->nackq, pk, t + p->fwd_delay_ns + p->rev_delay_ns);
            if (nack) nack->nack = 1;
        }
    } else {
        fifo_push(s, &p->recvq, pk, t + p->fwd_delay_ns);
    }
    if (fifo_count(&k->queue) > 0) {
        const int64_t wire = (int64_t)fifo_front(&k->queue)->size + s->header;
        k->waiting_bytes -= wire;
        k->done_ns = service_end(k, t, wire);
    } else {
        k->done_ns = MPS_NEVER;
    }
}

/* ------------------------------------------------------------------------- */
/* Receivers (6)                                                             */
/* ------------------------------------------------------------------------- */

static void complete_bytes(mps_sim *s, int32_t b, int32_t size, int64_t t) {
    mps_block *k = &s->blk[b];
    k->recv_bytes += size;
    if (k->recv_bytes == k->size_bytes) {
        s->completion_ns[b] = t;
        k->flags |= MPS_BLK_COMPLETE;
        if (t <= k->deadline_ns) {
            k->flags |= MPS_BLK_ON_TIME;
            s->reward += k->weight;
            s->reward_total += k->weight;
        }
    }
}

/* The largest b with piece_off <= g: pieces were numbered in block order, so a binary
 * search over the block records finds the block of a piece. */
int32_t mps_piece_block(const mps_sim *s, int32_t g) {
    int32_t lo = 0, hi = s->n_blocks;
    while (hi - lo > 1) {
        const int32_t mid = lo + (hi - lo) / 2;
        if (s->blk[mid].piece_off <= g)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* 6.2: deliver in sequence every piece that can be; with the stream sequence, skip
 * abandoned pieces. */
static void deliver_in_order(mps_sim *s, int64_t t) {
    const int64_t last = s->stream_seq ? s->n_pieces : s->n_dsn;
    while (s->deliver_k < last) {
        const int32_t g = s->stream_seq ? (int32_t)s->deliver_k : s->dsn_order[s->deliver_k];
        if (!s->piece_received[g] && s->piece_state[g] != MPS_PIECE_ABANDONED) break;
        const int32_t lo = mps_piece_block(s, g);
        const int32_t size = piece_size(s, &s->blk[lo], g - s->blk[lo].piece_off);
        s->rcv_nxt += size;
        s->deliver_k++;
        if (!s->piece_received[g]) continue; /* abandoned: nothing to hand over */
        s->piece_delivery_ns[g] = t;
        s->rbuf_used -= size;
        complete_bytes(s, lo, size, t);
    }
}

static void on_receive(mps_sim *s, mps_path *p, int64_t t) {
    mps_pkt *pk = fifo_front(&p->recvq);
    fifo_pop(&p->recvq);
    p->delivered_bytes += pk->size;
    const int32_t b = pk->block;
    if (b >= 0) {
        const int32_t g = s->blk[b].piece_off + pk->piece;
        if (s->piece_received[g]) {
            s->duplicate_bytes[b] += pk->size;
        } else {
            s->piece_received[g] = 1;
            if (s->receiver == MPS_RECEIVER_BLOCK) {
                complete_bytes(s, b, pk->size, t);
            } else {
                s->piece_arrival_ns[g] = t;
                s->rbuf_used += pk->size;
                deliver_in_order(s, t);
            }
        }
    }
    mps_pkt *ack = p->dynamics ? ack_back_dynamic(s, p, pk, t) : fifo_push(s, &p->ackq, pk, t + p->rev_delay_ns);
    if (ack && b >= 0) ack->data_ack = s->rcv_nxt; /* on the copy, as fifo_push writes the time */
}

/* ------------------------------------------------------------------------- */
/* Sender (7)                                                                */
/* ------------------------------------------------------------------------- */

/* Whether every path that is not a backup is potentially failed (7, "ready"). */
static int primaries_failed(const mps_sim *s) {
    for (int i = 0; i < s->n_paths; i++)
        if (!s->paths[i].backup && s->paths[i].rto_streak == 0) return 0;
    return 1;
}

static inline __attribute__((always_inline)) int subflow_ready(const mps_sim *s, const mps_path *p) {
    if (p->next_pn - p->oldest_pn > p->ring_mask) return 0; /* ring full */
    if (p->gated) {
        if (p->timed && (s->now < p->start_ns || s->now >= p->stop_ns)) return 0;
        if (p->backup && !primaries_failed(s)) return 0;
    }
    if (!p->window_based) return !busy_link(&s->links[p->link]); /* ideal: the link is idle */
    return p->inflight_bytes + s->mss <= p->cwnd_bytes;
}

int mps_path_ready(const mps_sim *s, int j) { return subflow_ready(s, &s->paths[j]); }

/* Moves block b's out floor up from f to its first piece that is OUT (or to next_new). */
static void out_floor_raise(mps_sim *s, int32_t b, int32_t f) {
    const mps_block *k = &s->blk[b];
    while (f < k->next_new && s->piece_state[k->piece_off + f] != MPS_PIECE_OUT) f++;
    s->blk_out_floor[b] = f;
}

/* Piece g of block b has just left state OUT: where it was the block's out floor, the
 * floor moves up. */
static inline void out_floor_leave(mps_sim *s, int32_t b, int32_t g) {
    if (s->copies && g - s->blk[b].piece_off == s->blk_out_floor[b]) out_floor_raise(s, b, s->blk_out_floor[b]);
}

int64_t *mps_piece_sent_times(mps_sim *s) {
    if (!s->piece_sent_ns) {
        const size_t bytes = (size_t)(s->n_pieces > 0 ? s->n_pieces : 1) * sizeof(int64_t);
        s->piece_sent_ns = malloc(bytes);
        if (!s->piece_sent_ns) {
            fail(s, MPS_ERR_NOMEM, "out of memory for the pieces' transmission times");
            return NULL;
        }
        memset(s->piece_sent_ns, 0xff, bytes); /* -1: never sent (while copies were taken) */
    }
    return s->piece_sent_ns;
}

int mps_set_copies(mps_sim *s, int on) {
    if (on && !mps_piece_sent_times(s)) return -1;
    if (on && !s->copies)
        for (int32_t b = 0; b < s->n_blocks; b++) out_floor_raise(s, b, 0);
    s->copies = on != 0;
    return 0;
}

/* 7.2 */
static void declare_lost(mps_sim *s, int j, mps_rec *r) {
    mps_path *p = &s->paths[j];
    r->state = MPS_REC_LOST;
    p->inflight_bytes -= r->size;
    p->declared_lost++;
    const int32_t b = r->block;
    if (b < 0) return; /* a cross-flow packet */
    mps_block *k = &s->blk[b];
    add_inflight(s, b, j, -r->size);
    const int32_t g = k->piece_off + r->piece;
    s->piece_paths[g] &= (uint8_t)~(1u << j);
    /* a piece with a copy still in flight on another path stays OUT (7.1, copies) */
    if (s->piece_state[g] != MPS_PIECE_OUT || s->piece_paths[g]) return;
    s->piece_state[g] = MPS_PIECE_LOST;
    s->pieces_out--;
    out_floor_leave(s, b, g);
    if ((k->flags & MPS_BLK_CANCELLED) && s->receiver == MPS_RECEIVER_BLOCK) return;
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
    /* 7.4: a packet sent before the current recovery began (RFC 9002 B.8's sent_time <=
     * congestion_recovery_start_time) brings no second reduction, even when it is found
     * lost after the recovery ended: per-packet acks can end a recovery before an earlier
     * hole is declared, where TCP's cumulative ack (RFC 6582) would still be in it */
    if (pn <= p->recover_pn) return;
    mps_cc_table[p->cc]->on_congestion(s, j, flight);
    p->ca_acc = 0;
    p->recovery = MPS_REC_FAST;
    p->recover_pn = p->next_pn - 1;
    p->fast_recoveries++;
    /* RFC 6937 section 3: RecoverFS is the flight when recovery begins, the lost packet included */
    p->prr_recover_fs = flight;
    p->prr_delivered = p->prr_out = 0;
    p->cub_recovery_acked = 0;
}

/* 7.4, fast_recovery = prr: the window for the acknowledgement that delivered `delivered`
 * bytes during fast recovery (RFC 6937 section 3, with the slow-start reduction bound; at
 * least one packet on the acknowledgement that began the recovery, for the retransmission,
 * as Linux's tcp_cwnd_reduction does). */
static void prr_on_ack(mps_sim *s, mps_path *p, int64_t delivered, int began) {
    p->prr_delivered += delivered;
    const int64_t pipe = p->inflight_bytes;
    int64_t sndcnt;
    if (pipe > p->ssthresh) {
        /* proportional: ceil(prr_delivered * ssthresh / RecoverFS) - prr_out */
        const __int128 num = (__int128)p->prr_delivered * p->ssthresh;
        sndcnt = (int64_t)((num + p->prr_recover_fs - 1) / p->prr_recover_fs) - p->prr_out;
    } else {
        int64_t limit = p->prr_delivered - p->prr_out;
        if (delivered > limit) limit = delivered;
        limit += s->mss;
        sndcnt = p->ssthresh - pipe < limit ? p->ssthresh - pipe : limit;
    }
    if (sndcnt < 0) sndcnt = 0;
    if (began && sndcnt < s->mss) sndcnt = s->mss;
    p->cwnd_bytes = pipe + sndcnt;
}

/* 7.1, steps 2-5: record the packet and hand it to the link. */
static void transmit(mps_sim *s, int j, int32_t b, int32_t piece, int32_t size, int retransmission) {
    mps_path *p = &s->paths[j];
    const int64_t now = s->now;
    const int64_t inflight_was = p->inflight_bytes;
    p->inflight_bytes += size;
    const int64_t pn = p->next_pn++;
    mps_rec *r = &p->ring[pn & p->ring_mask];
    r->state = MPS_REC_OUT;
    r->block = b;
    r->piece = piece;
    r->size = size;
    r->hole_since = 0;

    p->packets_sent++;
    p->bytes_sent += size;
    if (p->recovery == MPS_REC_FAST) p->prr_out += size;
    p->retransmissions += retransmission;
    p->last_send_ns = now;
    if (p->window_based && p->rto_deadline == MPS_NEVER) p->rto_deadline = now + p->rto_ns;
    mps_pkt *pk = link_enqueue(s, p, size);
    if (!pk) return;
    pk->t = 0;
    pk->pn = pn;
    pk->sent_ns = now;
    pk->snap_delivered = p->delivered;
    pk->snap_time = inflight_was == 0 ? now : p->delivered_time;
    pk->data_ack = 0;
    pk->block = b;
    pk->piece = piece;
    pk->size = size;
    pk->subflow = (int16_t)j;
    pk->nack = 0;
}

/* 7.1 */
static void send_packet(mps_sim *s, int j, int32_t b) {
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
        if (s->stream_seq) {
            const int64_t end = s->blk_off[b] + piece_end(s, k, piece);
            if (end > s->conn_next_dsn) s->conn_next_dsn = end;
        } else {
            s->conn_next_dsn += size;
        }
        if (s->receiver == MPS_RECEIVER_IN_ORDER) {
            s->dsn_order[s->n_dsn++] = g;
            s->piece_first_send_ns[g] = s->now;
        }
    }
    if (!(k->flags & MPS_BLK_SENT)) {
        k->flags |= MPS_BLK_SENT;
        s->first_send_ns[b] = s->now;
    }
    s->piece_state[g] = MPS_PIECE_OUT; /* from UNSENT or LOST */
    s->pieces_out++;
    if (s->copies && piece < s->blk_out_floor[b]) s->blk_out_floor[b] = piece;
    s->piece_paths[g] = (uint8_t)(1u << j);
    if (s->copies) s->piece_sent_ns[g] = s->now; /* kept while copies are taken (mps_set_copies) */
    const int64_t bj = (int64_t)b * s->n_paths + j;
    s->blk_bytes_sent[bj] += size;
    add_inflight(s, b, j, size);
    transmit(s, j, b, piece, size, retransmission);
    update_window(s);
    update_sendable(s, b);
}

int mps_piece_copyable(const mps_sim *s, int64_t g, int j) {
    if (g < 0 || g >= s->n_pieces || s->piece_state[g] != MPS_PIECE_OUT || (s->piece_paths[g] & (1u << j)))
        return 0;
    const mps_block *k = &s->blk[mps_piece_block(s, (int32_t)g)];
    return (k->flags & (MPS_BLK_ARRIVED | MPS_BLK_CANCELLED)) == MPS_BLK_ARRIVED;
}

int32_t mps_copy_piece(const mps_sim *s, int32_t b, int j) {
    if (b < 0 || b >= s->n_blocks) return -1;
    const mps_block *k = &s->blk[b];
    if ((k->flags & (MPS_BLK_ARRIVED | MPS_BLK_CANCELLED)) != MPS_BLK_ARRIVED) return -1;
    const uint8_t bit = (uint8_t)(1u << j);
    for (int32_t g = k->piece_off + mps_out_floor(s, b); g < k->piece_off + k->next_new; g++)
        if (s->piece_state[g] == MPS_PIECE_OUT && !(s->piece_paths[g] & bit)) return g;
    return -1;
}

/* 7.1, copies: piece g once more, on path j; the piece stays OUT */
static void send_copy(mps_sim *s, int j, int32_t g) {
    const int32_t b = mps_piece_block(s, g);
    mps_block *k = &s->blk[b];
    const int32_t piece = g - k->piece_off;
    const int32_t size = piece_size(s, k, piece);
    s->piece_paths[g] |= (uint8_t)(1u << j);
    s->piece_sent_ns[g] = s->now; /* a copy is sent only while copies are on: the times are kept */
    s->blk_bytes_sent[(int64_t)b * s->n_paths + j] += size;
    add_inflight(s, b, j, size);
    s->paths[j].redundant_packets++;
    s->paths[j].redundant_bytes += size;
    transmit(s, j, b, piece, size, 0);
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
     * acknowledgements by time, the positive one first at equal times (8). */
    mps_fifo *lane = p->nackq.head_t < p->ackq.head_t ? &p->nackq : &p->ackq;
    const mps_pkt *pk = fifo_front(lane);
    fifo_pop(lane);
    const int32_t b = pk->block;
    mps_rec *r = pk->pn >= p->oldest_pn ? &p->ring[pk->pn & p->ring_mask] : NULL;

    if (pk->nack) { /* 7.6: only ideal subflows get these; the record is unresolved */
        if (r && r->state == MPS_REC_OUT) declare_lost(s, j, r);
        pop_resolved(p);
        return;
    }

    /* 1 */
    const int newly = r && (r->state == MPS_REC_OUT || r->state == MPS_REC_HOLE);
    const int64_t inflight_before = p->inflight_bytes;
    const int64_t recoveries_before = p->fast_recoveries;
    if (newly) {
        p->inflight_bytes -= pk->size;
        if (b >= 0) add_inflight(s, b, j, -pk->size);
        if (p->recovery == MPS_REC_RTO) p->rto_streak = 0; /* it is 0 outside RTO recovery */
    }
    /* 2 */
    if (b >= 0) {
        mps_block *k = &s->blk[b];
        const int32_t g = k->piece_off + pk->piece;
        const uint8_t pst = s->piece_state[g];
        if (pst != MPS_PIECE_ACKED) {
            if (pst == MPS_PIECE_LOST && (!(k->flags & MPS_BLK_CANCELLED) || s->receiver == MPS_RECEIVER_IN_ORDER))
                k->lost_pending_bytes -= pk->size;
            s->piece_state[g] = MPS_PIECE_ACKED;
            if (pst == MPS_PIECE_OUT) {
                s->pieces_out--;
                out_floor_leave(s, b, g);
            }
            k->acked_bytes += pk->size;
            if (k->acked_bytes == k->size_bytes) k->flags |= MPS_BLK_ACKED;
            /* a piece that was OUT leaves the block's sets and counts as they were: what
             * they depend on (its unsent and lost bytes, arrival, cancel, the window) has
             * not changed since the last update_sendable(b) */
            if (pst != MPS_PIECE_OUT) update_sendable(s, b);
        }
        if (s->receiver == MPS_RECEIVER_IN_ORDER && pk->data_ack > s->data_acked) {
            s->data_acked = pk->data_ack;
            update_window(s);
        }
    }
    /* 3: RFC 6298 */
    const int64_t rtt = t - pk->sent_ns;
    const int64_t dev = p->srtt_ns > rtt ? p->srtt_ns - rtt : rtt - p->srtt_ns;
    p->rttvar_ns = (3 * p->rttvar_ns + dev) / 4;
    p->srtt_ns = (7 * p->srtt_ns + rtt) / 8;
    p->rto_ns = rto_from_estimates(p);
    if (rtt < p->min_rtt_ns) p->min_rtt_ns = rtt;
    if (p->srtt_ns > p->max_srtt_ns) p->max_srtt_ns = p->srtt_ns;
    /* 4: delivery rate */
    p->delivered += pk->size;
    p->delivered_time = t;
    if (t > pk->snap_time) {
        /* in 64 unsigned bits where they hold the products (the rate and the sample are
         * at most 2^60, so 7 rate + sample < 2^64), in 128 otherwise: the same values */
        const int64_t bytes = p->delivered - pk->snap_delivered, span = t - pk->snap_time;
        const uint64_t cap = UINT64_C(1) << 60;
        uint64_t sample;
        if (bytes <= INT64_MAX / 8000000000) {
            sample = (uint64_t)(bytes * 8000000000) / (uint64_t)span;
            if (sample > cap) sample = cap;
        } else {
            const __int128 wide = (__int128)bytes * 8000000000 / span;
            sample = wide > (__int128)cap ? cap : (uint64_t)wide;
        }
        p->delivery_rate_bps = (int64_t)((7 * (uint64_t)p->delivery_rate_bps + sample) / 8);
        if (p->delivery_rate_bps > p->max_delivery_rate_bps) p->max_delivery_rate_bps = p->delivery_rate_bps;
    }
    if (p->window_based) {
        /* 5: the 3-duplicate-ACK rule, per packet */
        int64_t q = p->scan_pn > p->oldest_pn ? p->scan_pn : p->oldest_pn;
        for (; q < pk->pn; q++) {
            mps_rec *h = &p->ring[q & p->ring_mask];
            if (h->state == MPS_REC_OUT) {
                h->state = MPS_REC_HOLE;
                h->hole_since = p->ack_count;
            }
        }
        if (r) r->state = MPS_REC_ACKED;
        if (pk->pn + 1 > p->scan_pn) p->scan_pn = pk->pn + 1;
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
        if (newly) {
            p->olia_l1 += pk->size;
            if (p->recovery == MPS_REC_FAST && p->cubic_segments) p->cub_recovery_acked += pk->size; /* 7.8.1 */
            if (p->recovery == MPS_REC_NONE && 2 * inflight_before >= p->cwnd_bytes) {
                if (p->cwnd_bytes < p->ssthresh && !cc->owns_slow_start) {
                    p->cwnd_bytes += pk->size < s->mss ? pk->size : s->mss; /* slow start, RFC 5681 eq. (2) */
                } else {
                    cc->on_ack(s, j, pk->size, pk->pn, rtt, t);
                }
            }
        }
    } else {
        if (r) r->state = MPS_REC_ACKED;
        pop_resolved(p);
    }
    /* 7 */
    if (p->recovery != MPS_REC_NONE && pk->pn > p->recover_pn) {
        const int fast = p->recovery == MPS_REC_FAST;
        if (fast && p->prr) p->cwnd_bytes = p->ssthresh; /* RFC 6937: the end */
        p->recovery = MPS_REC_NONE;
        /* 7.8.1: the cumulative acknowledgement that ends a TCP recovery covers every
         * segment acknowledged during it, and Linux and ns-3 pass them all to Cubic */
        if (fast && p->cubic_segments && p->cc == MPS_CC_CUBIC && 2 * inflight_before >= p->cwnd_bytes)
            cc->on_ack(s, j, p->cub_recovery_acked, pk->pn, rtt, t);
    } else if (p->recovery == MPS_REC_FAST && p->prr) {
        prr_on_ack(s, p, newly ? pk->size : 0, p->fast_recoveries != recoveries_before);
    }
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
    p->ca_acc = 0;
    p->recovery = MPS_REC_RTO;
    p->recover_pn = p->next_pn - 1;
    p->rto_ns = p->rto_ns > p->max_rto_ns / 2 ? p->max_rto_ns : 2 * p->rto_ns;
    p->rto_deadline = MPS_NEVER;
    p->oldest_pn = p->next_pn;
    p->scan_pn = p->next_pn;
    p->rto_count++;
    p->rto_streak++;
}

/* ------------------------------------------------------------------------- */
/* Events (8)                                                                */
/* ------------------------------------------------------------------------- */

enum { EV_RECV = 0, EV_ACK = 1, EV_LINK = 2, EV_ARRIVAL = 3, EV_START = 4, EV_RTO = 5, EV_RATE = 6 };

/* The earlier of the heads of p's acknowledgement lanes (acknowledgements and NACKs). */
static inline int64_t ack_head_t(const mps_path *p) {
    return p->ackq.head_t < p->nackq.head_t ? p->ackq.head_t : p->nackq.head_t;
}

static inline __attribute__((always_inline)) int64_t next_event(mps_sim *s, int *cls, int *index) {
    /* the earliest of each kind over the subflows in one pass, the first index on a tie;
     * then the kinds in their order (EV_*), an earlier kind first on a tie */
    int64_t recv_t = MPS_NEVER, ack_t = MPS_NEVER, rto_t = MPS_NEVER;
    int recv_i = -1, ack_i = -1, rto_i = -1;
    const int F = s->n_subflows;
    /* the kind and index found when there is no event (MPS_NEVER) are never read */
    if (F == 1) { /* one subflow: the same minima without the scan */
        const mps_path *p = &s->paths[0];
        recv_t = p->recvq.head_t;
        ack_t = ack_head_t(p);
        rto_t = p->rto_deadline;
        recv_i = ack_i = rto_i = 0;
    } else {
        for (int j = 0; j < F; j++) {
            const mps_path *p = &s->paths[j];
            const int64_t a = ack_head_t(p);
            if (p->recvq.head_t < recv_t) recv_t = p->recvq.head_t, recv_i = j;
            if (a < ack_t) ack_t = a, ack_i = j;
            if (p->rto_deadline < rto_t) rto_t = p->rto_deadline, rto_i = j;
        }
    }
    int64_t best = recv_t;
    int bc = EV_RECV, bi = recv_i;
    if (ack_t < best) best = ack_t, bc = EV_ACK, bi = ack_i;
    if (s->n_links == 1) {
        if (s->links[0].done_ns < best) best = s->links[0].done_ns, bc = EV_LINK, bi = 0;
    } else {
        for (int l = 0; l < s->n_links; l++)
            if (s->links[l].done_ns < best) best = s->links[l].done_ns, bc = EV_LINK, bi = l;
    }
    if (s->n_arrived < s->n_arriving && s->arrival_ns[s->n_arrived] < best)
        best = s->arrival_ns[s->n_arrived], bc = EV_ARRIVAL, bi = -1;
    if (s->starts_pending)
        for (int j = 0; j < F; j++)
            if (!s->started[j] && s->paths[j].start_ns < best) best = s->paths[j].start_ns, bc = EV_START, bi = j;
    if (rto_t < best) best = rto_t, bc = EV_RTO, bi = rto_i;
    if (mps_n_sendable(s) > 0) { /* 8: the rate lane holds only while some block is sendable */
        if (s->rate_lane_ns <= s->now) rate_lane_advance(s);
        if (s->rate_lane_ns < best) {
            best = s->rate_lane_ns, bc = EV_RATE;
            for (bi = 0; s->links[bi].rate_change_ns != best; bi++) {
            }
        }
    }
    *cls = bc;
    *index = bi;
    return best;
}

static void dispatch(mps_sim *s, int cls, int i, int64_t t) {
    switch (cls) {
    case EV_RECV:
        on_receive(s, &s->paths[i], t);
        break;
    case EV_ACK:
        on_ack(s, i, t);
        break;
    case EV_LINK:
        on_link_done(s, i, t);
        break;
    case EV_ARRIVAL: {
        const int32_t b = s->n_arrived++;
        s->blk[b].flags |= MPS_BLK_ARRIVED;
        update_sendable(s, b);
        break;
    }
    case EV_START:
        s->started[i] = 1;
        s->starts_pending--;
        break;
    case EV_RATE: /* nothing happens but a time at which waiting paths are asked again */
        break;
    default:
        on_rto(s, i);
        break;
    }
}

/* Section 9, first part: every cross flow sends while it can. */
static void cross_send(mps_sim *s) {
    for (int j = s->n_paths; j < s->n_subflows; j++)
        while (subflow_ready(s, &s->paths[j]) && !s->error) transmit(s, j, -1, -1, s->mss, 0);
}

/* ------------------------------------------------------------------------- */
/* Decision rounds (9)                                                       */
/* ------------------------------------------------------------------------- */

/* What a policy reads about the paths at a decision point (10). */
static void publish_path_state(mps_sim *s) {
    for (int i = 0; i < s->n_paths; i++) s->paths[i].can_send = (uint8_t)subflow_ready(s, &s->paths[i]);
    /* windows, RTT estimates and bandwidths change only when events are processed, so
     * the rates are written once per time at which decisions happen */
    if (s->published_ns == s->now) return;
    s->published_ns = s->now;
    int64_t link_rate[MPS_MAX_LINKS];
    for (int l = 0; l < s->n_links; l++) {
        mps_link *k = &s->links[l];
        seg_locate(k, &k->now_seg, s->now);
        link_rate[l] = k->bw_rate_bps[k->now_seg.k];
    }
    for (int i = 0; i < s->n_paths; i++) {
        mps_path *p = &s->paths[i];
        p->link_rate_bps = link_rate[p->link];
        p->rate_bps = p->window_based ? (double)p->cwnd_bytes * 8e9 / (double)(p->srtt_ns > 0 ? p->srtt_ns : 1)
                                      : (double)p->link_rate_bps;
    }
}

/* One pass in deadline order up to the first deadline not before now; returns whether
 * a cancel moved the receive window (section 9: a stream's cancelled pieces leave it),
 * which can make blocks of any rank sendable. */
static int cancel_expired_pass(mps_sim *s, int sendable_only) {
    int window_moved = 0;
    for (int32_t w = mps_todo_rank_floor(s); w <= s->dl_hi_word; w++) {
        uint64_t x = sendable_only ? mps_sendable_rank_word(s, w) : s->todo_set.dl_bits[w];
        while (x) {
            const int32_t rank = w * 64 + __builtin_ctzll(x);
            x &= x - 1;
            if (s->dl_sorted[rank] >= s->now) return window_moved;
            const int32_t b = s->dl_order[rank];
            if (s->blk[b].flags & MPS_BLK_CANCELLED) continue;
            const int64_t acked = s->data_acked;
            mps_cancel(s, b);
            window_moved |= s->data_acked != acked;
        }
    }
    return window_moved;
}

void mps_cancel_expired(mps_sim *s, int sendable_only) {
    while (cancel_expired_pass(s, sendable_only) && sendable_only) {
    }
}

int mps_next_decision(mps_sim *s) {
    if (s->error) return -2;
    if (s->done) return -1;
    if (s->pending >= 0) return s->pending;
    const int P = s->n_paths;
    /* the look-ahead of the last event time found the next event; it still is the next
     * one when the rounds after it made no decision and nothing else sent or cancelled */
    int have_peek = 0, peek_cls = 0, peek_i = 0;
    int64_t peek_t = MPS_NEVER;
    for (;;) {
        if (s->in_rounds) {
            while (s->round_j < P) {
                if (mps_n_sendable(s) == 0 && !(s->copies && s->pieces_out > 0)) {
                    s->in_rounds = 0;
                    break;
                }
                const int j = s->round_j;
                if (!s->waited[j] && subflow_ready(s, &s->paths[j])) {
                    publish_path_state(s);
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
        int cls = peek_cls, i = peek_i;
        const int64_t t = have_peek ? peek_t : next_event(s, &cls, &i);
        if (t == MPS_NEVER || t > s->end_ns) {
            s->done = 1;
            return -1;
        }
        s->now = t;
        int64_t tn = t;
        int rate_only = 1;
        do {
            if (++s->events + s->policy_work > s->max_events && s->max_events > 0) {
                /* a guard, not part of the model: no event past the budget is processed */
                fail(s, MPS_ERR_BUDGET, "work budget");
                return -2;
            }
            rate_only &= cls == EV_RATE;
            dispatch(s, cls, i, t);
            if (s->error) return -2;
            tn = next_event(s, &cls, &i);
        } while (tn == t);
        if (!rate_only) s->last_event_ns = t; /* 11: a rate change alone is not counted */
        if (s->n_cross) {
            cross_send(s);
            if (s->error) return -2;
        }
        if (s->drop_expired) mps_cancel_expired(s, 0); /* 9: drop_expired */
        have_peek = !s->n_cross && !s->drop_expired;
        peek_t = tn;
        peek_cls = cls;
        peek_i = i;
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
    } else if (block < MPS_WAIT) {
        const int32_t g = MPS_COPY_PIECE(block);
        if (!s->copies || !mps_piece_copyable(s, g, j)) return -1;
        send_copy(s, j, g);
        s->sent_any = 1;
    } else {
        if (block >= s->n_blocks || !mps_block_sendable(s, block)) return -1;
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
    s->cancels++;
    s->cancel_ns[b] = s->now;
    const int32_t first_unsent = k->next_new;
    k->next_new = piece_count(s, k);
    k->unsent_bytes = 0;
    if (s->receiver == MPS_RECEIVER_BLOCK) {
        k->lost_head = k->lost_tail = -1;
        k->lost_pending_bytes = 0;
    }
    update_sendable(s, b);
    if (s->stream_seq && first_unsent < k->next_new) {
        /* 9: the never-sent pieces leave the stream; the receiver skips them and its
         * answer reaches the sender at once (a forward-TSN notice without delay) */
        for (int32_t i = first_unsent; i < k->next_new; i++) s->piece_state[k->piece_off + i] = MPS_PIECE_ABANDONED;
        deliver_in_order(s, s->now);
        if (s->rcv_nxt > s->data_acked) {
            s->data_acked = s->rcv_nxt;
            update_window(s);
        }
    }
    return 0;
}

double mps_take_reward(mps_sim *s) {
    const double r = s->reward;
    s->reward = 0.0;
    return r;
}

/* ------------------------------------------------------------------------- */
/* Prefetch (many episodes stepped in turn)                                  */
/* ------------------------------------------------------------------------- */

static inline void prefetch_lines(const void *p, size_t bytes) {
    const char *c = (const char *)p;
    for (size_t o = 0; o < bytes; o += 64) __builtin_prefetch(c + o, 1, 3);
}

static inline void prefetch_front(const mps_fifo *f) {
    if (f->head != f->tail) __builtin_prefetch(&f->buf[f->head & (f->cap - 1)], 1, 3);
}

void mps_prefetch_state(const mps_sim *s) {
    prefetch_lines(s, offsetof(mps_sim, links));
    prefetch_lines(&s->links[0], (size_t)s->n_links * sizeof(mps_link));
    for (int j = 0; j < s->n_subflows; j++) prefetch_lines(&s->paths[j], offsetof(mps_path, scan_pn));
}

void mps_prefetch_data(const mps_sim *s) {
    for (int j = 0; j < s->n_subflows; j++) {
        const mps_path *p = &s->paths[j];
        prefetch_front(&p->recvq);
        prefetch_front(&p->ackq);
        prefetch_front(&p->nackq);
        __builtin_prefetch(&p->ring[p->oldest_pn & p->ring_mask], 1, 3);
        __builtin_prefetch(&p->ring[p->next_pn & p->ring_mask], 1, 3);
    }
    for (int l = 0; l < s->n_links; l++) {
        const mps_link *k = &s->links[l];
        prefetch_front(&k->queue);
        __builtin_prefetch(&k->queue.buf[k->queue.tail & (k->queue.cap - 1)], 1, 3);
        __builtin_prefetch(&k->bw_start_ns[k->now_seg.k], 0, 3);
        __builtin_prefetch(&k->bw_rate_bps[k->now_seg.k], 0, 3);
    }
    if (s->n_arrived < s->n_blocks) __builtin_prefetch(&s->arrival_ns[s->n_arrived], 0, 3);
    if (s->dl_cut < s->n_blocks) {
        __builtin_prefetch(&s->dl_sorted[s->dl_cut], 0, 3);
        __builtin_prefetch(&s->dl_order[s->dl_cut], 0, 3);
    }
    const int32_t w = s->dl_low_word < s->n_words ? s->dl_low_word : 0;
    __builtin_prefetch(&s->new_set.dl_bits[w], 1, 3);
    __builtin_prefetch(&s->lost_set.dl_bits[w], 1, 3);
    __builtin_prefetch(&s->todo_set.dl_bits[w], 1, 3);
}
