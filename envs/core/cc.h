/*
 * Congestion-control interface of a subflow (docs/model.md 7.3-7.13).
 *
 * The loss-recovery machinery (records, the 3-duplicate-ACK rule, recovery periods,
 * the RTO timer) and slow start are common to every window-based controller and live in
 * sim.c; a controller decides congestion avoidance and how the window reacts to a loss or
 * a timeout. Coupled controllers (LIA, OLIA, BALIA, wVegas) read the other subflows of
 * the connection through the simulator handed to them.
 */
#ifndef MPSCHED_CC_H
#define MPSCHED_CC_H

#include "sim.h"

typedef struct mps_cc_ops {
    const char *name;
    /* 0: link-clocked (ideal), never window-limited, no timer; 1: window-based. */
    int window_based;
    /* 1: on_ack is also called in slow start and grows the window there itself (wVegas
     * leaves slow start on delay, 7.12); 0: the common slow start of 7.3 step 6. */
    int owns_slow_start;
    void (*init)(mps_sim *s, int j);
    /* Congestion avoidance for newly acknowledged bytes (7.3 step 6; an increase, or CCP's
     * assignment of 7.13): packet pn, acknowledged at now, rtt_ns after it was sent. */
    void (*on_ack)(mps_sim *s, int j, int64_t acked_bytes, int64_t pn, int64_t rtt_ns, int64_t now);
    /* A new congestion event (7.4); flight = bytes in flight before the loss. */
    void (*on_congestion)(mps_sim *s, int j, int64_t flight);
    /* A retransmission timeout (7.5); flight = bytes in flight before it. */
    void (*on_rto)(mps_sim *s, int j, int64_t flight);
} mps_cc_ops;

extern const mps_cc_ops *const mps_cc_table[MPS_CC_COUNT];
/* Names indexed by enum mps_cc_kind. */
extern const char *const mps_cc_names[MPS_CC_COUNT];

/* The largest y >= 0 with y^3 <= x (x >= 0). */
int64_t mps_icbrt(__int128 x);

#endif
