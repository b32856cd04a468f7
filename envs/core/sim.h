/*
 * mpsched simulator core: one episode of deadline-aware multipath block transfer.
 *
 * docs/model.md is the normative description of everything in this file; section
 * numbers below refer to it. Plain C11, no Python: the binding lives in module.c.
 *
 * Units: time in integer nanoseconds, sizes in integer bytes, rates in integer bits/s.
 * Memory is allocated by mps_sim_create() only, in one block (the record and every array
 * after it); the event loop never allocates, except that an in-network packet lane doubles
 * its capacity in the rare case that more packets are in flight than its initial estimate.
 *
 * Subflows: the P paths of the multipath connection are subflows 0..P-1; the C greedy
 * cross flows competing with it are subflows P..P+C-1. Links are bottlenecks that any
 * number of subflows may share.
 */
#ifndef MPSCHED_SIM_H
#define MPSCHED_SIM_H

#include <stddef.h>
#include <stdint.h>

#define MPS_MAX_PATHS 8
#define MPS_MAX_CROSS 8
#define MPS_MAX_SUBFLOWS (MPS_MAX_PATHS + MPS_MAX_CROSS)
#define MPS_MAX_LINKS 16
#define MPS_NEVER INT64_MAX
#define MPS_WAIT (-1)
/* The action that sends, on the deciding path, a copy of piece g (its index among all
 * pieces) in flight on another path (7.1, copies): every value below MPS_WAIT names one piece. */
#define MPS_COPY(g) (-2 - (g))
#define MPS_COPY_PIECE(a) (-2 - (a))
/* Largest horizon accepted, so that time + any service or delay never overflows. */
#define MPS_MAX_TIME_NS (INT64_C(1) << 62)
#define MPS_MAX_RATE_BPS INT64_C(1000000000000)
#define MPS_MAX_DELAY_NS (INT64_C(1) << 50)
#define MPS_RTO_GRANULARITY_NS INT64_C(1000000)
#define MPS_PROB_ONE (UINT64_C(1) << 53)
/* Most delay steps, and most outages, of one subflow (4). */
#define MPS_MAX_DELAY_STEPS (1 << 20)
#define MPS_MAX_OUTAGES (1 << 20)
/* Subflow j's jitter stream is the stream of number j + MPS_JITTER_STREAM, its
 * acknowledgement-loss stream that of number j + MPS_ACK_STREAM (5). */
#define MPS_JITTER_STREAM 64
#define MPS_ACK_STREAM 128
/* ccp (7.13): the largest gain Kp, in thousandths, and the largest storage B, in bytes
 * (a given one, and the cap of the estimate) */
#define MPS_CCP_MAX_GAIN_MILLI 100000
#define MPS_CCP_MAX_STORAGE_BYTES (INT64_C(1) << 50)

enum mps_cc_kind {
    MPS_CC_IDEAL = 0,
    MPS_CC_NEWRENO = 1,
    MPS_CC_CUBIC = 2,
    MPS_CC_LIA = 3,
    MPS_CC_OLIA = 4,
    MPS_CC_BALIA = 5,
    MPS_CC_WVEGAS = 6,
    MPS_CC_CCP = 7,
    MPS_CC_COUNT
};
enum mps_loss_model { MPS_LOSS_IID = 0, MPS_LOSS_GILBERT_ELLIOTT = 1 };
enum mps_receiver { MPS_RECEIVER_BLOCK = 0, MPS_RECEIVER_IN_ORDER = 1 };
enum mps_recovery { MPS_REC_NONE = 0, MPS_REC_FAST = 1, MPS_REC_RTO = 2 };
/* How the window falls in fast recovery (7.4): at once to ssthresh (RFC 9002 7.3.2), or
 * by Proportional Rate Reduction (RFC 6937), as Linux and ns-3 TCP do */
enum mps_fast_recovery { MPS_FR_IMMEDIATE = 0, MPS_FR_PRR = 1 };
enum mps_cubic_arithmetic { MPS_CUBIC_RFC9438 = 0, MPS_CUBIC_SEGMENTS = 1 };
/* State of a sent packet's record at the sender (7). */
enum mps_rec_state { MPS_REC_OUT = 0, MPS_REC_HOLE = 1, MPS_REC_ACKED = 2, MPS_REC_LOST = 3 };
/* Sender state of a piece (7). */
/* ABANDONED: never sent, of a block cancelled with the stream-sequence receiver (6.2) */
enum mps_piece_state {
    MPS_PIECE_UNSENT = 0,
    MPS_PIECE_OUT = 1,
    MPS_PIECE_LOST = 2,
    MPS_PIECE_ACKED = 3,
    MPS_PIECE_ABANDONED = 4
};

/* Block flags. */
#define MPS_BLK_ARRIVED 1u
#define MPS_BLK_CANCELLED 2u
#define MPS_BLK_COMPLETE 4u  /* all bytes received */
#define MPS_BLK_ON_TIME 8u   /* completed no later than its deadline */
#define MPS_BLK_ACKED 16u    /* all bytes acknowledged to the sender */
#define MPS_BLK_SENT 32u     /* some byte has been sent */
/* which sendable sets (7) hold the block: kept by update_sendable beside the sets themselves,
 * so that an update that leaves the membership as it is reads no set word */
#define MPS_BLK_IN_TODO 64u
#define MPS_BLK_IN_NEW 128u
#define MPS_BLK_IN_LOST 256u
#define MPS_BLK_IN_SETS (MPS_BLK_IN_TODO | MPS_BLK_IN_NEW | MPS_BLK_IN_LOST)
#define MPS_MAX_BLOCK_BYTES INT32_MAX
/* Packets (pieces) of all blocks of an episode: each holds up to 34 bytes of state, so
 * this bounds the per-packet memory at about 2.3 GB. */
#define MPS_MAX_PIECES (INT64_C(1) << 26)

/* Error codes of the core. */
enum mps_error {
    MPS_OK = 0,
    MPS_ERR_NOMEM = 1,
    MPS_ERR_STATE = 2,  /* an operation not allowed in the current state */
    MPS_ERR_ACTION = 3, /* an action naming a block that cannot be sent now */
    MPS_ERR_POLICY = 4, /* a native policy returned an invalid action */
    MPS_ERR_BUDGET = 5, /* the episode processed more events than its max_events */
};

typedef struct {
    int64_t queue_bytes;
    int32_t bw_n;
    const int64_t *bw_start_ns; /* copied by mps_sim_create */
    const int64_t *bw_rate_bps;
    int64_t bw_cycle_ns; /* 0: the last segment holds */
} mps_link_config;

typedef struct {
    int32_t link;
    int64_t fwd_delay_ns;
    int64_t rev_delay_ns;
    int32_t loss_model;      /* enum mps_loss_model */
    uint64_t loss_threshold; /* a draw x loses when (x >> 11) < threshold */
    uint64_t ge_p_threshold, ge_r_threshold, ge_bad_loss_threshold;
    int32_t cc; /* enum mps_cc_kind */
    int64_t initial_cwnd_bytes;
    int64_t min_rto_ns;
    int64_t max_rto_ns;
    int32_t fast_recovery; /* enum mps_fast_recovery */
    int32_t cubic_arithmetic; /* enum mps_cubic_arithmetic */
    int64_t ring_capacity; /* power of two: most unresolved packets of this subflow */
    int64_t start_ns, stop_ns; /* the subflow sends in [start, stop) (paths: 0 and forever by default) */
    /* delay dynamics (4, 6): from delay_start_ns[k] on, the one-way delays are the k-th
     * steps (fwd_delay_ns/rev_delay_ns before the first); each packet adds a jitter draw */
    int32_t delay_n;
    const int64_t *delay_start_ns; /* copied by mps_sim_create */
    const int64_t *fwd_delay_step_ns;
    const int64_t *rev_delay_step_ns;
    int64_t fwd_jitter_ns, rev_jitter_ns;
    /* outages (4, 6): the subflow is down in [down_start_ns[k], down_end_ns[k]) */
    int32_t down_n;
    const int64_t *down_start_ns; /* copied by mps_sim_create */
    const int64_t *down_end_ns;
    int32_t backup; /* paths only: ready only while every other path is potentially failed (7) */
    uint64_t ack_loss_threshold; /* window-based: an acknowledgement is lost if a draw is below it (6) */
    /* window-based: a reverse bottleneck (6) of this rate (0: none) serving acknowledgements
     * of ack_bytes each, drop-tail beyond rev_queue_bytes waiting */
    int64_t rev_rate_bps, ack_bytes, rev_queue_bytes;
    /* ccp (7.13): the proportional gain Kp in thousandths, and the storage B in bytes (0:
     * estimated from the largest delivery rate and smoothed RTT) */
    int64_t ccp_gain_milli, ccp_storage_bytes;
} mps_subflow_config;

typedef struct {
    int32_t mss_bytes;
    int32_t header_bytes;
    int64_t end_ns;
    uint64_t seed;
    int32_t receiver; /* enum mps_receiver */
    int64_t rbuf_bytes;
    int32_t stream_sequence; /* in-order receiver: sequence = the application's byte order (6.2) */
    int32_t drop_expired; /* cancel blocks whose deadline has passed before each round (9) */
    int64_t max_events;   /* work budget: the episode stops with MPS_ERR_BUDGET past this many events; 0: none */
    int32_t n_links;
    mps_link_config links[MPS_MAX_LINKS];
    int32_t n_paths, n_cross;
    mps_subflow_config subflows[MPS_MAX_SUBFLOWS]; /* paths, then cross flows */
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
    int64_t data_ack; /* in-order receiver: rcv_nxt when the acknowledgement left (6.2) */
    int32_t block;    /* -1 for cross-flow packets */
    int32_t piece;
    int32_t size;  /* payload bytes */
    int16_t subflow;
    int16_t nack;  /* 1: negative acknowledgement of an ideal-CC loss (7.6) */
} mps_pkt;

/* A FIFO lane of packets ordered by time; head_t caches the head's time (MPS_NEVER
 * when empty) so that finding the next event reads only the owner's record. */
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

/* A position in a bandwidth schedule: segment index and absolute start of its cycle.
 * Each cursor only moves forward in time. */
typedef struct {
    int32_t k;
    int64_t base;
} mps_seg;

/* A bottleneck (3, 4). */
typedef struct {
    int64_t done_ns; /* finish time of the packet in service, MPS_NEVER when idle */
    mps_fifo queue;  /* head is in service when the link is busy */
    int64_t waiting_bytes;
    int64_t queue_bytes;
    int64_t *bw_start_ns, *bw_rate_bps;
    int32_t bw_n;
    int64_t bw_cycle_ns;
    int64_t cycle_work; /* work one period serves (3), saturated; 0 when not cyclic */
    mps_seg svc;        /* bandwidth cursor of the service computation */
    mps_seg now_seg;    /* bandwidth cursor at the current time (what policies read) */
    mps_seg rate_seg;   /* the segment that starts at rate_change_ns (8, rate lane) */
    int64_t rate_change_ns; /* the next time the rate changes, MPS_NEVER if it never does */
} mps_link;

/* Everything about one subflow: configuration, sender and the values a policy may read
 * (exposed to Python as strided views), hot fields first. */
typedef struct {
    /* read at every decision and event */
    int64_t inflight_bytes;
    int64_t cwnd_bytes; /* 0 for ideal: no window */
    int64_t next_pn, oldest_pn, ring_mask;
    int32_t cc;
    int32_t link;
    uint8_t window_based;
    uint8_t is_cross;
    uint8_t gated;    /* timed or backup: readiness has more to check */
    uint8_t timed;    /* sends only in [start_ns, stop_ns) (a cross flow, or a path with times) */
    uint8_t backup;   /* a backup path (7, "ready") */
    uint8_t dynamics; /* delay steps, jitter or outages (4, 6): the slower way through the lanes */
    int64_t rto_deadline;
    mps_fifo recvq; /* packets propagating to the receiver */
    mps_fifo ackq;  /* acknowledgements propagating to the sender */
    mps_fifo nackq; /* negative acknowledgements of ideal-CC losses (7.6) */
    /* RFC 6298 estimates, recovery and delivery rate */
    int64_t srtt_ns, rttvar_ns, min_rtt_ns, rto_ns;
    int64_t delivery_rate_bps;
    int64_t max_srtt_ns, max_delivery_rate_bps; /* the largest since the start (7.3 steps 3-4) */
    int64_t delivered, delivered_time;
    int32_t recovery; /* enum mps_recovery */
    uint8_t can_send;
    uint8_t ge_bad; /* Gilbert-Elliott state */
    uint8_t last_lost; /* whether the subflow's previous packet off the link was lost */
    uint8_t prr; /* fast recovery by RFC 6937 (enum mps_fast_recovery) */
    uint8_t cubic_segments; /* Cubic in whole segments (7.8.1, enum mps_cubic_arithmetic) */
    int64_t last_send_ns;
    /* what policies read as the path's rate (10): written when a decision is pending */
    int64_t link_rate_bps; /* the link's bandwidth now */
    double rate_bps;       /* cwnd * 8e9 / srtt for window-based paths; link_rate_bps for ideal */
    int64_t scan_pn, ack_count, ca_acc, ssthresh, recover_pn;
    int64_t prr_delivered, prr_out, prr_recover_fs; /* RFC 6937 state of the current recovery */
    mps_rec *ring;
    /* controller state (7.8-7.10) */
    int64_t cub_w_max, cub_k_us, cub_origin, cub_epoch_start, cub_w_est, cub_est_acc, cub_acc;
    int64_t cub_bytes_acc, cub_recovery_acked; /* 7.8.1: bytes short of a segment; bytes acked in a fast recovery */
    double lia_acc, olia_acc, balia_acc;
    int64_t olia_l1, olia_l2;
    /* wVegas (7.12): the round ends at the acknowledgement of packet wv_round_pn or later */
    int64_t wv_round_pn, wv_rtt_sum_ns, wv_rtt_count, wv_alpha_packets, wv_queue_delay_ns, wv_base_rtt_ns;
    double wv_rate; /* cwnd / mean RTT at the last weight update; 0: none since the last loss */
    /* statistics (11) */
    int64_t packets_sent, bytes_sent, retransmissions, queue_drops, random_losses;
    int64_t declared_lost, rto_count, fast_recoveries, delivered_bytes, dropped_bytes;
    int64_t loss_bursts; /* maximal runs of consecutive randomly lost packets */
    int64_t outage_losses, outage_ack_losses; /* packets and acknowledgements lost to outages (4, 6) */
    int64_t ack_losses; /* acknowledgements lost at random (6) */
    int64_t ack_queue_drops; /* acknowledgements dropped by the reverse bottleneck (6) */
    int64_t redundant_packets, redundant_bytes; /* copies of pieces in flight elsewhere (7.1) */
    int64_t rto_streak; /* timeouts since the last newly acknowledged packet (7.5); > 0 only in RTO recovery */
    /* configuration */
    int64_t fwd_delay_ns, rev_delay_ns;
    int32_t loss_model;
    uint64_t loss_threshold, ge_p_threshold, ge_r_threshold, ge_bad_loss_threshold;
    int64_t initial_cwnd_bytes, min_rto_ns, max_rto_ns;
    int64_t start_ns, stop_ns;
    int64_t ccp_gain_milli, ccp_storage_bytes; /* ccp (7.13): Kp in thousandths; B in bytes, 0: estimated */
    /* delay dynamics (4, 6) */
    int32_t delay_n;
    int64_t *delay_start_ns, *fwd_delay_step_ns, *rev_delay_step_ns;
    int64_t fwd_jitter_ns, rev_jitter_ns;
    /* outages (4, 6) */
    int32_t down_n;
    int64_t *down_start_ns, *down_end_ns;
    uint64_t ack_loss_threshold; /* random loss of acknowledgements (6) */
    /* the reverse bottleneck (6): rev_service_ns per acknowledgement (0: none), the time it
     * has served every acknowledgement it took, and the most that may wait */
    int64_t rev_service_ns, rev_free_ns, rev_queue_bytes, ack_bytes;
    /* random streams (5): losses, and the jitter of delays */
    uint64_t rng[4];
    uint64_t jitter_rng[4];
    uint64_t ack_rng[4];
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

#define MPS_POLICY_MAX_PARAMS 8

struct mps_policy_def;

/* A native policy: its definition (policy.h), parameters and per-episode state. */
typedef struct mps_policy {
    const struct mps_policy_def *def;
    double param[MPS_POLICY_MAX_PARAMS];
    void *state;       /* def->state_bytes(sim) bytes, zeroed before reset */
    size_t state_cap;  /* allocated size of state */
} mps_policy;

/* A set of blocks kept as a bitset by block index and one by deadline rank. */
typedef struct {
    uint64_t *bits;    /* by block index */
    uint64_t *dl_bits; /* by deadline rank */
} mps_blockset;

struct mps_sim {
    size_t arena_bytes; /* this record and the arrays after it: one allocation (mps_sim_create) */
    int32_t mss, header, n_paths, n_cross, n_subflows, n_links, n_blocks;
    int32_t receiver;
    int64_t rbuf_bytes;
    int64_t end_ns;
    uint64_t seed;
    int64_t n_pieces;
    int32_t drop_expired;
    int32_t stream_seq;
    int64_t *blk_off; /* stream sequence: byte offset of each block in the stream, n_blocks + 1 */
    int32_t win_k;    /* stream sequence: first block not wholly inside the receive window */

    /* event state (8) */
    int32_t n_arrived;
    int32_t n_arriving; /* blocks that arrive at all: n_blocks, fewer after mps_hold_future */
    int64_t now;
    int64_t last_event_ns;
    int32_t done;
    uint8_t started[MPS_MAX_SUBFLOWS]; /* the subflow's start event happened (8) */
    int32_t starts_pending;            /* subflows whose start event has not happened */
    /* decision rounds (9) */
    int32_t in_rounds, round_j, sent_any, pending;
    int32_t copies;     /* the policy may send copies (7.1): rounds go on while a piece is in flight */
    int64_t pieces_out; /* pieces in state OUT */
    int64_t published_ns; /* time at which the paths' rates were last written (10) */
    int64_t rate_lane_ns; /* the earliest rate_change_ns of the links (8, rate lane) */
    uint8_t waited[MPS_MAX_PATHS];
    int64_t decisions;
    int64_t cancels; /* blocks cancelled this episode (mps_cancel): per-block policy state checks it */
    int64_t max_events; /* 0: no budget */
    int64_t events; /* events processed this episode (8), against cfg.max_events */
    int64_t policy_work; /* blocks native decisions looked at (mps_charge_work), also against it */
    double reward;       /* weight of on-time completions not yet taken */
    double reward_total;
    int32_t error; /* enum mps_error: the episode stopped on it */

    mps_block *blk;
    /* cold per-block arrays */
    int64_t *arrival_ns, *first_send_ns, *completion_ns, *cancel_ns, *duplicate_bytes;
    int64_t *blk_bytes_sent; /* n_blocks x n_paths */
    int64_t *blk_inflight;   /* n_blocks x n_paths */
    /* pieces */
    uint8_t *piece_state;
    uint8_t *piece_paths; /* bit j: path j sent the piece and has not declared that packet lost (7.1) */
    /* time of the piece's latest transmission (new, retransmission or copy) in an episode that
     * takes copies, -1 otherwise: outside the arena, made when copies are turned on or the
     * array is read (mps_piece_sent_times), so that an episode without copies has none */
    int64_t *piece_sent_ns;
    uint8_t *piece_received;
    int32_t *piece_next_lost;

    /* Sendable blocks (7): those with new bytes (arrived, not cancelled, unsent > 0) and
     * those with bytes to retransmit; new ones count only while the window is open. */
    mps_blockset new_set, lost_set;
    /* Blocks with bytes to send whatever the receive window: arrived, and never-sent
     * pieces left or lost ones waiting (the sender buffer policies plan over). */
    mps_blockset todo_set;
    int32_t n_words, low_word; /* no word of new_set or lost_set below low_word is set */
    int32_t hi_word;           /* highest word of the index sets ever set this episode */
    int32_t todo_low_word;     /* no word of todo_set below it is set (mps_todo_floor) */
    int32_t n_new_or_lost, n_lost;
    int32_t window_open;
    int32_t *dl_order;   /* block of each rank, sorted by (deadline, index) */
    int64_t *dl_sorted;  /* deadline of each rank */
    int32_t dl_cut;      /* first rank whose deadline is not before now (time only grows) */
    int32_t dl_hi_word;  /* highest word of the rank sets ever set this episode */
    int32_t dl_low_word; /* no rank word of todo_set below it is set (mps_todo_rank_floor) */
    /* Bytes left to send (never sent + waiting retransmission) of the blocks in lost_set
     * and of those in new_set but not lost_set, so that the sendable bytes are known
     * without a scan; blk_counted holds what each block adds to them. */
    int64_t lost_set_bytes, new_only_bytes;
    int32_t *blk_counted;
    /* per block, kept while copies are on (mps_set_copies): no piece below piece_off +
     * this is OUT, so that a search for a piece to copy (7.1) starts there rather than at
     * the block's first piece */
    int32_t *blk_out_floor;
    /* On demand (mps_track_remaining; NULL until asked for, then kept for the episode):
     * the blocks of new_set or lost_set in a binary heap ordered by mps_remaining_before
     * (rem_heap_pos: -1 for a block not in it), and those of them with bytes in flight
     * on some path, in no order (flying_pos: -1 if not; at most one per packet in flight). */
    int32_t track_remaining;
    /* On demand (mps_track_flight): the blocks with bytes in flight on some path, and a
     * rank word of flight_set below which none is set (lowered on insertion). */
    int32_t track_flight, flight_dl_low_word;
    mps_blockset flight_set;
    int32_t n_flying;
    int32_t *flying, *flying_pos;
    int32_t n_rem_heap;
    int32_t *rem_heap, *rem_heap_pos;

    /* connection sequence space and the in-order receiver (6.2) */
    int64_t conn_next_dsn, data_acked, rcv_nxt, rbuf_used;
    int32_t n_dsn, deliver_k;
    int32_t *dsn_order;          /* piece at each sequence position (in-order receiver) */
    int64_t *piece_arrival_ns;   /* in-order receiver only */
    int64_t *piece_delivery_ns;
    int64_t *piece_first_send_ns;

    /* last, so that the fields above share a few cache lines and pages: most of these
     * records are unused (a scenario has few links and subflows) */
    mps_link links[MPS_MAX_LINKS];
    mps_path paths[MPS_MAX_SUBFLOWS];

    char errmsg[160]; /* what went wrong, when error is set */
};

/* Checks a configuration against the ranges of docs/model.md section 1.
 * Returns 0, or -1 with a message naming the field in err. */
int mps_config_check(const mps_config *cfg, char *err, size_t errlen);

/* Allocates an episode (the configuration must have passed mps_config_check) and
 * resets it with cfg->seed. Returns NULL when memory runs out. */
mps_sim *mps_sim_create(const mps_config *cfg);
void mps_sim_free(mps_sim *s);
/* A deep copy of an episode in any state: it continues exactly as the original would.
 * Returns NULL when memory runs out. */
mps_sim *mps_sim_clone(const mps_sim *s);
void mps_sim_reset(mps_sim *s, uint64_t seed);

/* Runs events and decision rounds until a path must decide; returns that path, or -1
 * when the episode is over, or -2 on an error (s->error). */
int mps_next_decision(mps_sim *s);
/* Applies a decision for the pending path: a block index, MPS_WAIT or MPS_COPY(piece).
 * Returns 0, or -1 when the block cannot be sent now (nothing changes). */
int mps_apply(mps_sim *s, int32_t block);
/* The block of piece g (0 <= g < n_pieces). */
int32_t mps_piece_block(const mps_sim *s, int32_t g);
/* Whether path j may send a copy of piece g (7.1: the piece is OUT, path j has not sent it
 * or declared that packet lost, its block arrived and is not cancelled). */
int mps_piece_copyable(const mps_sim *s, int64_t g, int j);
/* The lowest piece of block b that path j may copy (its index among all pieces), or -1. */
int32_t mps_copy_piece(const mps_sim *s, int32_t b, int j);
/* Whether the episode takes copies (7.1); turned on, each block's out floor is found
 * again (it is kept only while copies are on) and the pieces' transmission times are
 * kept from then on. Returns 0, or -1 with MPS_ERR_NOMEM when memory runs out. */
int mps_set_copies(mps_sim *s, int on);
/* The pieces' latest transmission times (piece_sent_ns), made on the first call with
 * every entry -1; NULL with MPS_ERR_NOMEM when memory runs out. */
int64_t *mps_piece_sent_times(mps_sim *s);
/* Block b's first piece (within the block) that may be in flight: its out floor while
 * the episode takes copies, 0 otherwise. */
static inline int32_t mps_out_floor(const mps_sim *s, int32_t b) { return s->copies ? s->blk_out_floor[b] : 0; }
/* Cancels a block during a decision (section 9). Returns 0 or -1 if the block has not
 * arrived or does not exist. */
int mps_cancel(mps_sim *s, int32_t block);
/* Cancels, in deadline order, every block that is not cancelled, whose deadline is before
 * now and that is sendable (sendable_only) or has bytes to send whatever the receive
 * window (otherwise: drop_expired, section 9). Sendable only, it goes on until no such
 * block is left: a cancel that moves a stream's receive window can make more sendable. */
void mps_cancel_expired(mps_sim *s, int sendable_only);
/* Runs a whole episode with a native policy. Returns 0 or -2 on an error. */
int mps_run(mps_sim *s, mps_policy *policy);
/* Runs the episode on with a native policy from where it is, a pending decision
 * included, up to the first decision point at or after until_ns (left pending) or to
 * the end. The policy starts with fresh state (its reset). Returns 0 or -2 on an error. */
int mps_run_until(mps_sim *s, mps_policy *policy, int64_t until_ns);
/* A what-if for a look-ahead on a clone, not part of the model: from now on the future
 * is only what the sender knows. Each link serves at the sum of path_rate_bps over the
 * paths that cross it (the packet in service finishes as scheduled), blocks that have
 * not arrived never do (unless keep_arrivals: the application announced them), cross
 * flows send no more, each subflow's delays stay at their values now (no further delay
 * step; its jitter goes on), outages are forgotten (the sender cannot foresee them), and
 * each subflow's random streams restart from seed. The held
 * schedules replace the links' own for good: a reset of this simulation replays the
 * episode on them, so hold a clone, never the original. */
void mps_hold_future(mps_sim *s, const int64_t *path_rate_bps, uint64_t seed, int keep_arrivals);

/* Hints for a caller that steps many episodes in turn (the vector environment): start
 * loading what the next step of s reads first, so that the misses overlap other work.
 * They change nothing. mps_prefetch_state fetches the record itself; mps_prefetch_data
 * reads it (so call it once the state has had time to arrive) and fetches the heads of
 * the packet lanes, the send records, the bandwidth segment and the deadline cursor. */
void mps_prefetch_state(const mps_sim *s);
void mps_prefetch_data(const mps_sim *s);
int mps_path_ready(const mps_sim *s, int j);
int32_t mps_first_sendable(mps_sim *s);
/* The lowest word of new_set | lost_set (mps_sendable_floor), or of todo_set by block
 * index or by deadline rank, that may hold a block (no lower one does); scans start
 * there instead of at word 0. */
int32_t mps_sendable_floor(mps_sim *s);
int32_t mps_todo_floor(mps_sim *s);
int32_t mps_todo_rank_floor(mps_sim *s);
/* Keeps the remaining-bytes heap (rem_heap) and the flying list from now to the end of
 * the episode. Returns 0, or -1 with MPS_ERR_NOMEM when memory runs out. */
int mps_track_remaining(mps_sim *s);
/* Keeps flight_set from now to the end of the episode (the observation's copy slots). */
void mps_track_flight(mps_sim *s);
/* The lowest rank word of flight_set that may be set. */
int32_t mps_flight_rank_floor(mps_sim *s);
/* Writes up to cap sendable block indices in ascending order; returns the count. */
int32_t mps_sendable_list(const mps_sim *s, int32_t *out, int32_t cap);
/* Number of sendable blocks (section 7). */
static inline int32_t mps_n_sendable(const mps_sim *s) { return s->window_open ? s->n_new_or_lost : s->n_lost; }
static inline int mps_block_sendable(const mps_sim *s, int32_t b) {
    const uint64_t bit = UINT64_C(1) << (b & 63);
    return (s->lost_set.bits[b >> 6] & bit) || (s->window_open && (s->new_set.bits[b >> 6] & bit));
}
/* Word w of the sendable set, by block index or by deadline rank. */
static inline uint64_t mps_sendable_word(const mps_sim *s, int32_t w) {
    return s->lost_set.bits[w] | (s->window_open ? s->new_set.bits[w] : 0);
}
static inline uint64_t mps_sendable_rank_word(const mps_sim *s, int32_t w) {
    return s->lost_set.dl_bits[w] | (s->window_open ? s->new_set.dl_bits[w] : 0);
}
/* Bytes left to send of the sendable blocks: the sum over them of never-sent bytes and
 * bytes waiting retransmission. */
static inline int64_t mps_sendable_bytes(const mps_sim *s) {
    return s->lost_set_bytes + (s->window_open ? s->new_only_bytes : 0);
}
/* A native decision that walks the sender buffer counts the blocks it looks at against the
 * work budget (docs/model.md section 12), one event each: its cost grows with the buffer,
 * not with the events. */
static inline void mps_charge_work(mps_sim *s, int64_t blocks) { s->policy_work += blocks; }
static inline int64_t mps_remaining_bytes(const mps_sim *s, int32_t b) {
    return (int64_t)s->blk[b].unsent_bytes + s->blk[b].lost_pending_bytes;
}
/* The order of rem_heap: larger priority, then fewer bytes left to send, then smaller
 * index (the order of SRPT, [jonglez20] Sec. IV-C). */
static inline int mps_remaining_before(const mps_sim *s, int32_t a, int32_t b) {
    const int32_t pa = s->blk[a].priority, pb = s->blk[b].priority;
    if (pa != pb) return pa > pb;
    if (s->blk_counted[a] != s->blk_counted[b]) return s->blk_counted[a] < s->blk_counted[b];
    return a < b;
}
double mps_take_reward(mps_sim *s);

#endif
