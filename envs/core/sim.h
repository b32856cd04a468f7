/*
 * mpsched simulator core: one episode of deadline-aware multipath block transfer.
 *
 * docs/model.md is the normative description of everything in this file; section
 * numbers below refer to it. Plain C11, no Python: the binding lives in module.c.
 *
 * Units: time in integer nanoseconds, sizes in integer bytes, rates in integer bits/s.
 * Memory is allocated by mps_sim_create() only; the event loop never allocates, except
 * that an in-network packet lane doubles its capacity in the rare case that more packets
 * are in flight than its initial estimate.
 */
#ifndef MPSCHED_SIM_H
#define MPSCHED_SIM_H

#include <stddef.h>
#include <stdint.h>

#define MPS_MAX_PATHS 8
#define MPS_NEVER INT64_MAX
#define MPS_WAIT (-1)
/* Largest horizon accepted, so that time + any service or delay never overflows. */
#define MPS_MAX_TIME_NS (INT64_C(1) << 62)
#define MPS_MAX_RATE_BPS INT64_C(1000000000000)
#define MPS_MAX_DELAY_NS (INT64_C(1) << 50)
#define MPS_RTO_GRANULARITY_NS INT64_C(1000000)

enum mps_cc_kind { MPS_CC_IDEAL = 0, MPS_CC_NEWRENO = 1, MPS_CC_COUNT };
enum mps_recovery { MPS_REC_NONE = 0, MPS_REC_FAST = 1, MPS_REC_RTO = 2 };
/* State of a sent packet's record at the sender (7). */
enum mps_rec_state { MPS_REC_OUT = 0, MPS_REC_HOLE = 1, MPS_REC_ACKED = 2, MPS_REC_LOST = 3 };
/* Sender state of a piece (7). */
enum mps_piece_state { MPS_PIECE_UNSENT = 0, MPS_PIECE_OUT = 1, MPS_PIECE_LOST = 2, MPS_PIECE_ACKED = 3 };

/* Block flags. */
#define MPS_BLK_ARRIVED 1u
#define MPS_BLK_CANCELLED 2u
#define MPS_BLK_COMPLETE 4u  /* all bytes received */
#define MPS_BLK_ON_TIME 8u   /* completed no later than its deadline */
#define MPS_BLK_ACKED 16u    /* all bytes acknowledged to the sender */
#define MPS_BLK_SENT 32u     /* some byte has been sent */
#define MPS_MAX_BLOCK_BYTES INT32_MAX

/* Error codes of the core. */
enum mps_error {
    MPS_OK = 0,
    MPS_ERR_NOMEM = 1,
    MPS_ERR_STATE = 2,  /* an operation not allowed in the current state */
    MPS_ERR_ACTION = 3, /* an action naming a block that cannot be sent now */
    MPS_ERR_POLICY = 4, /* a native policy returned an invalid action */
};

typedef struct {
    int64_t fwd_delay_ns;
    int64_t rev_delay_ns;
    int64_t queue_bytes;
    uint64_t loss_threshold; /* lost when (draw >> 11) < threshold; 0 = no loss */
    int32_t cc;              /* enum mps_cc_kind */
    int64_t initial_cwnd_bytes;
    int64_t min_rto_ns;
    int64_t max_rto_ns;
    int32_t bw_n;
    const int64_t *bw_start_ns; /* copied by mps_sim_create */
    const int64_t *bw_rate_bps;
    int64_t bw_cycle_ns; /* 0: the last segment holds */
    int64_t ring_capacity; /* power of two: most unresolved packets of this path */
} mps_path_config;

typedef struct {
    int32_t mss_bytes;
    int32_t header_bytes;
    int64_t end_ns;
    uint64_t seed;
    int32_t n_paths;
    mps_path_config paths[MPS_MAX_PATHS];
    int32_t n_blocks;
    const int64_t *arrival_ns; /* copied by mps_sim_create */
    const int64_t *size_bytes;
    const int64_t *deadline_ns;
    const int32_t *priority;
    const double *weight;
} mps_config;

/* A packet travelling in the network: a copy, because its sender record may be
 * resolved (declared lost) while the packet is still in a queue or on the wire. */
typedef struct {
    int64_t t; /* event time in the lane that holds it */
    int64_t pn;
    int64_t sent_ns;
    int64_t snap_delivered;
    int64_t snap_time;
    int32_t block;
    int32_t piece;
    int32_t size;  /* payload bytes */
    int32_t nack;  /* 1: negative acknowledgement of an ideal-CC loss (7.6) */
} mps_pkt;

/* A FIFO lane of packets ordered by time; head_t caches the head's time (MPS_NEVER
 * when empty) so that finding the next event reads only the path record. */
typedef struct {
    mps_pkt *buf;
    int64_t head, tail, cap; /* cap is a power of two; count = tail - head */
    int64_t head_t;
} mps_fifo;

/* Sender-side record of a packet not yet resolved (7). */
typedef struct {
    int64_t hole_since;
    int32_t block;
    int32_t piece;
    int32_t size;
    int32_t state;
} mps_rec;

/* Everything about one path: configuration, link, sender and the values a policy may
 * read (exposed to Python as strided views), hot fields first. */
typedef struct {
    /* read at every decision and event */
    int64_t inflight_bytes;
    int64_t cwnd_bytes; /* 0 for ideal: no window */
    int64_t next_pn, oldest_pn, ring_mask;
    int32_t cc;
    int32_t window_based;
    int64_t link_done_ns; /* finish time of the packet in service, MPS_NEVER when idle */
    int64_t rto_deadline;
    mps_fifo recvq; /* packets propagating to the receiver */
    mps_fifo ackq;  /* acknowledgements propagating to the sender */
    mps_fifo nackq; /* negative acknowledgements of ideal-CC losses (7.6) */
    mps_fifo linkq; /* head is in service when the link is busy */
    int64_t waiting_bytes;
    /* RFC 6298 estimates, recovery and delivery rate */
    int64_t srtt_ns, rttvar_ns, min_rtt_ns, rto_ns;
    int64_t delivery_rate_bps;
    int64_t delivered, delivered_time;
    int32_t recovery; /* enum mps_recovery */
    uint8_t can_send;
    uint8_t pad_[3];
    int64_t last_send_ns;
    int64_t scan_pn, ack_count, ca_acc, ssthresh, recover_pn;
    mps_rec *ring;
    /* statistics (11) */
    int64_t packets_sent, bytes_sent, retransmissions, queue_drops, random_losses;
    int64_t declared_lost, rto_count, fast_recoveries, delivered_bytes, dropped_bytes;
    /* configuration */
    int64_t fwd_delay_ns, rev_delay_ns, queue_bytes;
    uint64_t loss_threshold;
    int64_t initial_cwnd_bytes, min_rto_ns, max_rto_ns;
    int64_t *bw_start_ns, *bw_rate_bps;
    int32_t bw_n;
    int64_t bw_cycle_ns;
    int64_t cycle_work; /* work one period serves (3), saturated; 0 when not cyclic */
    /* bandwidth cursor: segment index and absolute start of the current cycle */
    int32_t seg_k;
    int64_t seg_base;
    /* random stream (5) */
    uint64_t rng[4];
} mps_path;

/* The sender's and receiver's state of a block: one cache line. Cold per-block data
 * (arrival, first send, completion, cancel time, duplicates) lives in plain arrays. */
typedef struct {
    int64_t deadline_ns;
    double weight;
    int32_t size_bytes;
    int32_t unsent_bytes;
    int32_t lost_pending_bytes;
    int32_t acked_bytes;
    int32_t recv_bytes;
    int32_t next_new;  /* next never-sent piece */
    int32_t lost_head; /* retransmission queue of global piece indices, -1 when empty */
    int32_t lost_tail;
    int32_t piece_off; /* global index of the block's first piece */
    int32_t dl_rank;   /* rank in (deadline, index) order */
    int32_t priority;
    uint32_t flags;
} mps_block;

typedef struct mps_sim mps_sim;

/* A native policy: returns a block index or MPS_WAIT for the deciding path. */
typedef struct mps_policy {
    int32_t id;
    int64_t cursor; /* scratch state, reset with the episode */
} mps_policy;

struct mps_sim {
    int32_t mss, header, n_paths, n_blocks;
    int64_t end_ns;
    uint64_t seed;
    int64_t n_pieces;

    mps_block *blk;
    /* cold per-block arrays */
    int64_t *arrival_ns, *first_send_ns, *completion_ns, *cancel_ns, *duplicate_bytes;
    int64_t *blk_bytes_sent; /* n_blocks x n_paths */
    int64_t *blk_inflight;   /* n_blocks x n_paths */
    /* pieces */
    uint8_t *piece_state;
    uint8_t *piece_received;
    int32_t *piece_next_lost;

    /* sendable set: bit per block */
    uint64_t *sendable_bits;
    int32_t n_words, low_word, n_sendable;
    /* the same set by deadline rank, for picking the most urgent blocks in O(K) */
    int32_t *dl_order;   /* block of each rank, sorted by (deadline, index) */
    int64_t *dl_sorted;  /* deadline of each rank */
    uint64_t *dl_bits;   /* sendable, by rank */
    int32_t dl_cut;      /* first rank whose deadline is not before now (time only grows) */
    int32_t dl_hi_word;  /* highest word of dl_bits ever set this episode */

    mps_path paths[MPS_MAX_PATHS];

    /* event state (8) */
    int32_t n_arrived;
    int64_t now;
    int64_t last_event_ns;
    int32_t done;
    /* decision rounds (9) */
    int32_t in_rounds, round_j, sent_any, pending;
    uint8_t waited[MPS_MAX_PATHS];
    int64_t decisions;
    double reward;       /* weight of on-time completions not yet taken */
    double reward_total;

    int32_t error;
    char errmsg[160];
};

/* Checks a configuration against the ranges of docs/model.md section 1.
 * Returns 0, or -1 with a message naming the field in err. */
int mps_config_check(const mps_config *cfg, char *err, size_t errlen);

/* Allocates an episode (the configuration must have passed mps_config_check) and
 * resets it with cfg->seed. Returns NULL when memory runs out. */
mps_sim *mps_sim_create(const mps_config *cfg);
void mps_sim_free(mps_sim *s);
void mps_sim_reset(mps_sim *s, uint64_t seed);

/* Runs events and decision rounds until a path must decide; returns that path, or -1
 * when the episode is over, or -2 on an error (s->error). */
int mps_next_decision(mps_sim *s);
/* Applies a decision for the pending path: a block index or MPS_WAIT.
 * Returns 0, or -1 when the block cannot be sent now (nothing changes). */
int mps_apply(mps_sim *s, int32_t block);
/* Cancels a block during a decision (section 9). Returns 0 or -1 if the block has not
 * arrived or does not exist. */
int mps_cancel(mps_sim *s, int32_t block);
/* Runs a whole episode with a native policy. Returns 0 or -2 on an error. */
int mps_run(mps_sim *s, mps_policy *policy);

int mps_path_ready(const mps_sim *s, int j);
int32_t mps_first_sendable(mps_sim *s);
/* Writes up to cap sendable block indices in ascending order; returns the count. */
int32_t mps_sendable_list(const mps_sim *s, int32_t *out, int32_t cap);
static inline int mps_block_sendable(const mps_sim *s, int32_t b) {
    return (int)((s->sendable_bits[b >> 6] >> (b & 63)) & 1u);
}
double mps_take_reward(mps_sim *s);

#endif
