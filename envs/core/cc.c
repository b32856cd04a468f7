/* Congestion controllers behind the interface of cc.h. */
#include "cc.h"

static void ideal_init(mps_sim *s, int j) { s->paths[j].cwnd_bytes = 0; }
static void ideal_on_ack(mps_sim *s, int j, int64_t acked, int64_t inflight_before) {}
static void ideal_on_congestion(mps_sim *s, int j, int64_t flight) {}
static void ideal_on_rto(mps_sim *s, int j, int64_t flight) {}

static const mps_cc_ops ideal_ops = {
    "ideal", 0, ideal_init, ideal_on_ack, ideal_on_congestion, ideal_on_rto,
};

/* NewReno window (RFC 5681 section 3.1, with RFC 3465 byte counting). */
static void newreno_init(mps_sim *s, int j) {
    mps_path *p = &s->paths[j];
    p->cwnd_bytes = p->initial_cwnd_bytes;
    p->ssthresh = INT64_C(1) << 62;
    p->ca_acc = 0;
}

static void newreno_on_ack(mps_sim *s, int j, int64_t acked, int64_t inflight_before) {
    mps_path *p = &s->paths[j];
    /* Grow only while the window is in use (RFC 7661 spirit): keeps an
     * application-limited subflow from inflating its window without bound. */
    if (2 * inflight_before < p->cwnd_bytes) return;
    if (p->cwnd_bytes < p->ssthresh) {
        p->cwnd_bytes += acked < s->mss ? acked : s->mss; /* slow start, RFC 5681 eq. (2) */
    } else {
        p->ca_acc += acked; /* congestion avoidance: one MSS per window of bytes */
        if (p->ca_acc >= p->cwnd_bytes) {
            p->ca_acc -= p->cwnd_bytes;
            p->cwnd_bytes += s->mss;
        }
    }
}

static int64_t newreno_half_flight(const mps_sim *s, int64_t flight) {
    int64_t half = flight / 2;
    int64_t floor2 = 2 * (int64_t)s->mss;
    return half > floor2 ? half : floor2; /* RFC 5681 eq. (4) */
}

static void newreno_on_congestion(mps_sim *s, int j, int64_t flight) {
    mps_path *p = &s->paths[j];
    p->ssthresh = newreno_half_flight(s, flight);
    p->cwnd_bytes = p->ssthresh;
    p->ca_acc = 0;
}

static void newreno_on_rto(mps_sim *s, int j, int64_t flight) {
    mps_path *p = &s->paths[j];
    p->ssthresh = newreno_half_flight(s, flight);
    p->cwnd_bytes = s->mss; /* loss window, RFC 5681 section 3.1 */
    p->ca_acc = 0;
}

static const mps_cc_ops newreno_ops = {
    "newreno", 1, newreno_init, newreno_on_ack, newreno_on_congestion, newreno_on_rto,
};

const mps_cc_ops *const mps_cc_table[MPS_CC_COUNT] = {&ideal_ops, &newreno_ops};
