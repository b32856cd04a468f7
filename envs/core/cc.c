/* Congestion controllers behind the interface of cc.h (docs/model.md 7.6-7.13). */
#include "cc.h"

#include <math.h>

const char *const mps_cc_names[MPS_CC_COUNT] = {"ideal", "newreno", "cubic", "lia", "olia", "balia", "wvegas", "ccp"};

/* wVegas's parameters (Cao, Xu and Fu, ICNP 2012; the defaults of Linux MPTCP's
 * mptcp_wvegas): packets each subflow starts out keeping queued, packets the connection
 * keeps queued over all its subflows, and the queue (packets) that ends slow start. */
#define WVEGAS_INITIAL_ALPHA 2
#define WVEGAS_TOTAL_ALPHA 10
#define WVEGAS_GAMMA 1

/* ------------------------------------------------------------------------- */
/* Ideal (7.6): link-clocked, no window                                      */
/* ------------------------------------------------------------------------- */

static void ideal_init(mps_sim *s, int j) { s->paths[j].cwnd_bytes = 0; }
static void ideal_on_ack(mps_sim *s, int j, int64_t acked, int64_t pn, int64_t rtt_ns, int64_t now) {}
static void ideal_on_congestion(mps_sim *s, int j, int64_t flight) {}
static void ideal_on_rto(mps_sim *s, int j, int64_t flight) {}

static const mps_cc_ops ideal_ops = {
    "ideal", 0, 0, ideal_init, ideal_on_ack, ideal_on_congestion, ideal_on_rto,
};

/* ------------------------------------------------------------------------- */
/* NewReno (7.7): RFC 5681 with RFC 3465 byte counting                       */
/* ------------------------------------------------------------------------- */

static void window_init(mps_sim *s, int j) {
    mps_path *p = &s->paths[j];
    p->cwnd_bytes = p->initial_cwnd_bytes;
    p->ssthresh = INT64_C(1) << 62;
    p->ca_acc = 0;
    p->cub_w_max = 0;
    p->cub_epoch_start = -1;
    p->cub_k_us = p->cub_origin = p->cub_w_est = p->cub_est_acc = p->cub_acc = 0;
    p->cub_bytes_acc = p->cub_recovery_acked = 0;
    p->lia_acc = p->olia_acc = p->balia_acc = 0.0;
    p->olia_l1 = p->olia_l2 = 0;
    p->wv_round_pn = p->wv_rtt_sum_ns = p->wv_rtt_count = p->wv_queue_delay_ns = 0;
    p->wv_alpha_packets = WVEGAS_INITIAL_ALPHA;
    p->wv_rate = 0.0;
    p->wv_base_rtt_ns = INT64_MAX;
}

static void newreno_on_ack(mps_sim *s, int j, int64_t acked, int64_t pn, int64_t rtt_ns, int64_t now) {
    mps_path *p = &s->paths[j];
    p->ca_acc += acked; /* one MSS per window of bytes acknowledged */
    if (p->ca_acc >= p->cwnd_bytes) {
        p->ca_acc -= p->cwnd_bytes;
        p->cwnd_bytes += s->mss;
    }
}

static int64_t half_flight(const mps_sim *s, int64_t flight) {
    const int64_t half = flight / 2, floor2 = 2 * (int64_t)s->mss;
    return half > floor2 ? half : floor2; /* RFC 5681 eq. (4) */
}

static void newreno_on_congestion(mps_sim *s, int j, int64_t flight) {
    mps_path *p = &s->paths[j];
    p->ssthresh = half_flight(s, flight);
    p->cwnd_bytes = p->ssthresh;
}

static void newreno_on_rto(mps_sim *s, int j, int64_t flight) {
    mps_path *p = &s->paths[j];
    p->ssthresh = half_flight(s, flight);
    p->cwnd_bytes = s->mss; /* loss window, RFC 5681 section 3.1 */
}

static const mps_cc_ops newreno_ops = {
    "newreno", 1, 0, window_init, newreno_on_ack, newreno_on_congestion, newreno_on_rto,
};

/* ------------------------------------------------------------------------- */
/* Cubic (7.8): RFC 9438 in integer arithmetic, C = 0.4, beta = 0.7          */
/* ------------------------------------------------------------------------- */

/* The largest d with 4 d^3 < 2^64 is 1,664,510 (microseconds, about 1.7 s). */
#define CUBE_64_LIMIT INT64_C(1664510)

int64_t mps_icbrt(__int128 x) {
    int64_t lo = 0, hi = INT64_C(1) << 43; /* (2^43)^3 = 2^129 exceeds any argument */
    while (hi - lo > 1) {
        const int64_t mid = lo + (hi - lo) / 2;
        if ((__int128)mid * mid * mid <= x)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* 7.8.1, cubic_arithmetic = segments: Cubic as Linux's tcp_cubic.c and ns-3's TcpCubic
 * count it. The window and W_max are whole segments, the target is W_cubic at the smallest
 * RTT ahead, and the window grows by one segment once `cnt` segments have been
 * acknowledged since the last growth (at most one per acknowledgement, as ns-3). The
 * Reno-friendly estimate gains a segment per (15 * cwnd) >> 3 acknowledged segments
 * (Linux's beta_scale at beta = 717/1024, 0.53 segments per window). Fields:
 * cub_w_max, cub_origin, cub_w_est in segments; cub_est_acc the acknowledged segments
 * towards the estimate's next segment (ack_cnt); cub_acc those towards the window's
 * next segment (snd_cwnd_cnt); cub_bytes_acc the acknowledged bytes short of a segment. */
static void cubic_segments_on_ack(mps_sim *s, mps_path *p, int64_t acked, int64_t now) {
    const int64_t mss = s->mss;
    p->cub_bytes_acc += acked;
    const int64_t segs = p->cub_bytes_acc / mss;
    p->cub_bytes_acc -= segs * mss;
    if (segs == 0) return;
    const int64_t seg = p->cwnd_bytes / mss;
    if (p->cub_epoch_start < 0) {
        p->cub_epoch_start = now;
        if (p->cub_w_max > seg) {
            /* K = cbrt((W_max - cwnd) / C) s with C = 0.4, here in microseconds */
            p->cub_k_us = mps_icbrt((__int128)(p->cub_w_max - seg) * 25 * INT64_C(100000000000000000));
            p->cub_origin = p->cub_w_max;
        } else {
            p->cub_k_us = 0;
            p->cub_origin = seg;
        }
        p->cub_w_est = seg;
        p->cub_est_acc = 0;
    }
    p->cub_est_acc += segs;
    const int64_t t_us = (now + p->min_rtt_ns - p->cub_epoch_start) / 1000;
    int64_t d = t_us < p->cub_k_us ? p->cub_k_us - t_us : t_us - p->cub_k_us;
    if (d > 1000000000) d = 1000000000;
    /* C |t - K|^3 segments, truncated: in 64 unsigned bits while 4 d^3 < 2^64, the same value */
    const uint64_t ten19 = UINT64_C(10000000000000000000);
    const int64_t delta = d <= CUBE_64_LIMIT ? (int64_t)(4 * (uint64_t)d * (uint64_t)d * (uint64_t)d / ten19)
                                             : (int64_t)(4 * (__int128)d * d * d / ten19);
    const int64_t target = t_us < p->cub_k_us ? p->cub_origin - delta : p->cub_origin + delta;
    int64_t cnt = target > seg ? seg / (target - seg) : 100 * seg;
    if (p->cub_w_max == 0 && cnt > 20) cnt = 20; /* no loss yet: at least 1 segment per 20 */
    const int64_t per = (seg * 15) >> 3 > 1 ? (seg * 15) >> 3 : 1;
    if (p->cub_est_acc > per) { /* Linux's while loop, in one division */
        const int64_t n = (p->cub_est_acc - 1) / per;
        p->cub_est_acc -= n * per;
        p->cub_w_est += n;
    }
    if (p->cub_w_est > seg) {
        const int64_t most = seg / (p->cub_w_est - seg);
        if (cnt > most) cnt = most;
    }
    if (cnt < 2) cnt = 2; /* at most one segment per two acknowledged: 1.5 cwnd per RTT */
    p->cub_acc += segs;
    if (p->cub_acc >= cnt) {
        p->cub_acc -= cnt;
        p->cwnd_bytes += mss;
    }
}

static void cubic_on_ack(mps_sim *s, int j, int64_t acked, int64_t pn, int64_t rtt_ns, int64_t now) {
    mps_path *p = &s->paths[j];
    const int64_t mss = s->mss;
    if (p->cubic_segments) {
        cubic_segments_on_ack(s, p, acked, now);
        return;
    }
    if (p->cub_epoch_start < 0) {
        p->cub_epoch_start = now;
        if (p->cwnd_bytes < p->cub_w_max) {
            /* K = cbrt((W_max - cwnd) / (C * MSS)) s, here in microseconds */
            p->cub_k_us = mps_icbrt((__int128)(p->cub_w_max - p->cwnd_bytes) * 25 * INT64_C(100000000000000000) / mss);
            p->cub_origin = p->cub_w_max;
        } else {
            p->cub_k_us = 0;
            p->cub_origin = p->cwnd_bytes;
        }
        p->cub_w_est = p->cwnd_bytes;
        p->cub_est_acc = 0;
        p->cub_acc = 0;
    }
    const int64_t t_us = (now - p->cub_epoch_start + p->srtt_ns) / 1000; /* W_cubic(t + RTT) */
    int64_t d = t_us - p->cub_k_us;
    if (d > 1000000000) d = 1000000000;
    if (d < -1000000000) d = -1000000000;
    const __int128 cube = (__int128)d * d * d;
    const __int128 ten19 = (__int128)INT64_C(10000000000) * INT64_C(1000000000);
    int64_t target = p->cub_origin + (int64_t)(4 * (__int128)mss * cube / ten19); /* C (t - K)^3 MSS, truncated */
    const int64_t cwnd = p->cwnd_bytes;
    if (target < cwnd) target = cwnd;
    if (target > cwnd + cwnd / 2) target = cwnd + cwnd / 2;
    p->cub_acc += (target - cwnd) * acked;
    const int64_t inc = p->cub_acc / cwnd;
    p->cub_acc -= inc * cwnd;
    p->cub_est_acc += 9 * acked * mss; /* Reno-friendly estimate, alpha = 3(1 - beta)/(1 + beta) = 9/17 */
    const int64_t inc2 = p->cub_est_acc / (17 * cwnd);
    p->cub_est_acc -= inc2 * 17 * cwnd;
    p->cub_w_est += inc2;
    p->cwnd_bytes = cwnd + inc;
    if (p->cub_w_est > p->cwnd_bytes) p->cwnd_bytes = p->cub_w_est;
}

/* The part of a decrease and a timeout that the two share (RFC 9438 4.6, 4.7). */
static void cubic_reduce(mps_sim *s, mps_path *p) {
    p->cub_epoch_start = -1;
    if (p->cubic_segments) { /* 7.8.1: in whole segments, as the Linux kernel */
        const int64_t seg = p->cwnd_bytes / s->mss, reduced = seg * 7 / 10;
        p->cub_w_max = seg < p->cub_w_max ? seg * 17 / 20 : seg;
        p->ssthresh = (reduced > 2 ? reduced : 2) * s->mss;
        return;
    }
    p->cub_w_max = p->cwnd_bytes < p->cub_w_max ? p->cwnd_bytes * 17 / 20 : p->cwnd_bytes; /* fast convergence */
    const int64_t reduced = p->cwnd_bytes * 7 / 10, floor2 = 2 * (int64_t)s->mss;
    p->ssthresh = reduced > floor2 ? reduced : floor2;
}

static void cubic_on_congestion(mps_sim *s, int j, int64_t flight) {
    mps_path *p = &s->paths[j];
    cubic_reduce(s, p);
    p->cwnd_bytes = p->ssthresh;
}

static void cubic_on_rto(mps_sim *s, int j, int64_t flight) {
    mps_path *p = &s->paths[j];
    cubic_reduce(s, p);
    if (p->cubic_segments) p->cub_w_max = 0; /* 7.8.1: the loss state forgets W_max */
    p->cwnd_bytes = s->mss;
}

static const mps_cc_ops cubic_ops = {
    "cubic", 1, 0, window_init, cubic_on_ack, cubic_on_congestion, cubic_on_rto,
};

/* ------------------------------------------------------------------------- */
/* Coupled controllers: LIA (7.9) and OLIA (7.10)                            */
/* ------------------------------------------------------------------------- */

static double rtt_of(const mps_path *p) { return (double)(p->srtt_ns > 1 ? p->srtt_ns : 1); }

/* Adds a real increase to a subflow's window through its fraction accumulator. */
static void add_real(mps_sim *s, mps_path *p, double *acc, double inc) {
    *acc += inc;
    const double whole = floor(*acc);
    *acc -= whole;
    p->cwnd_bytes += (int64_t)whole;
    if (p->cwnd_bytes < s->mss) p->cwnd_bytes = s->mss;
}

/* RFC 6356 section 3. */
static void lia_on_ack(mps_sim *s, int j, int64_t acked, int64_t pn, int64_t rtt_ns, int64_t now) {
    mps_path *p = &s->paths[j];
    double tot = 0.0, best = 0.0, den = 0.0;
    for (int k = 0; k < s->n_paths; k++) {
        const mps_path *q = &s->paths[k];
        if (q->cc != MPS_CC_LIA) continue;
        const double w = (double)q->cwnd_bytes, rtt = rtt_of(q);
        tot += w;
        const double ratio = w / (rtt * rtt);
        if (ratio > best) best = ratio;
        den += w / rtt;
    }
    const double alpha = tot * best / (den * den);
    const double a = (double)acked, m = (double)s->mss;
    const double coupled = alpha * a * m / tot;
    const double single = a * m / (double)p->cwnd_bytes;
    add_real(s, p, &p->lia_acc, coupled < single ? coupled : single);
}

/* Khalili et al., "MPTCP is not Pareto-optimal" ([matsufuji18] eq. (2)). */
static void olia_on_ack(mps_sim *s, int j, int64_t acked, int64_t pn, int64_t rtt_ns, int64_t now) {
    mps_path *p = &s->paths[j];
    int64_t max_w = 0;
    double max_q = 0.0, den = 0.0;
    int n_set = 0;
    for (int k = 0; k < s->n_paths; k++) {
        const mps_path *q = &s->paths[k];
        if (q->cc != MPS_CC_OLIA) continue;
        n_set++;
        if (q->cwnd_bytes > max_w) max_w = q->cwnd_bytes;
        const double l = (double)(q->olia_l1 > q->olia_l2 ? q->olia_l1 : q->olia_l2);
        const double quality = l * l / rtt_of(q);
        if (quality > max_q) max_q = quality;
        den += (double)q->cwnd_bytes / rtt_of(q);
    }
    int n_m = 0, n_x = 0, r_in_m = 0, r_in_x = 0;
    for (int k = 0; k < s->n_paths; k++) {
        const mps_path *q = &s->paths[k];
        if (q->cc != MPS_CC_OLIA) continue;
        const double l = (double)(q->olia_l1 > q->olia_l2 ? q->olia_l1 : q->olia_l2);
        const int in_m = q->cwnd_bytes == max_w;
        const int in_b = l * l / rtt_of(q) == max_q;
        n_m += in_m;
        n_x += in_b && !in_m;
        if (k == j) {
            r_in_m = in_m;
            r_in_x = in_b && !in_m;
        }
    }
    double alpha = 0.0;
    if (r_in_x)
        alpha = 1.0 / (double)(n_set * n_x);
    else if (n_x > 0 && r_in_m)
        alpha = -1.0 / (double)(n_set * n_m);
    const double a = (double)acked, m = (double)s->mss, rtt = rtt_of(p);
    const double inc = (double)p->cwnd_bytes / (rtt * rtt) / (den * den) * a * m + alpha * a * m / (double)p->cwnd_bytes;
    add_real(s, p, &p->olia_acc, inc);
}

static void olia_loss(mps_path *p) {
    p->olia_l2 = p->olia_l1;
    p->olia_l1 = 0;
}

static void olia_on_congestion(mps_sim *s, int j, int64_t flight) {
    olia_loss(&s->paths[j]);
    newreno_on_congestion(s, j, flight);
}

static void olia_on_rto(mps_sim *s, int j, int64_t flight) {
    olia_loss(&s->paths[j]);
    newreno_on_rto(s, j, flight);
}

static const mps_cc_ops lia_ops = {
    "lia", 1, 0, window_init, lia_on_ack, newreno_on_congestion, newreno_on_rto,
};

static const mps_cc_ops olia_ops = {
    "olia", 1, 0, window_init, olia_on_ack, olia_on_congestion, olia_on_rto,
};

/* ------------------------------------------------------------------------- */
/* BALIA (7.11): Peng, Walid, Hwang and Low, IEEE/ACM ToN 24(1), 2016, sec. VI    */
/* ------------------------------------------------------------------------- */

/* x_r / (rtt_r * (sum of x_k)^2) and alpha_r = max x_k / x_r over the paths of S, x_k = cwnd_k / rtt_k. */
static void balia_terms(const mps_sim *s, int r, double *x_over, double *alpha) {
    double sum = 0.0, best = 0.0;
    for (int k = 0; k < s->n_paths; k++) {
        const mps_path *q = &s->paths[k];
        if (q->cc != MPS_CC_BALIA) continue;
        const double x = (double)q->cwnd_bytes / rtt_of(q);
        sum += x;
        if (x > best) best = x;
    }
    const mps_path *p = &s->paths[r];
    const double x_r = (double)p->cwnd_bytes / rtt_of(p);
    *x_over = x_r / (rtt_of(p) * sum * sum);
    *alpha = best / x_r;
}

static void balia_on_ack(mps_sim *s, int j, int64_t acked, int64_t pn, int64_t rtt_ns, int64_t now) {
    mps_path *p = &s->paths[j];
    double x_over, alpha;
    balia_terms(s, j, &x_over, &alpha);
    /* per packet: x_r / (tau_r (sum x)^2) * (1 + alpha)/2 * (4 + alpha)/5 packets */
    const double inc = x_over * (double)acked * (double)s->mss * ((1.0 + alpha) * (4.0 + alpha) / 10.0);
    add_real(s, p, &p->balia_acc, inc);
}

/* ssthresh after a loss: flight less flight / 2 * min(alpha, 1.5), at least 2 MSS. */
static void balia_reduce(mps_sim *s, int j, int64_t flight) {
    mps_path *p = &s->paths[j];
    double x_over, alpha;
    balia_terms(s, j, &x_over, &alpha);
    const int64_t cut = (int64_t)((double)flight / 2.0 * (alpha < 1.5 ? alpha : 1.5));
    const int64_t left = flight - cut, floor2 = 2 * (int64_t)s->mss;
    p->ssthresh = left > floor2 ? left : floor2;
}

static void balia_on_congestion(mps_sim *s, int j, int64_t flight) {
    balia_reduce(s, j, flight);
    s->paths[j].cwnd_bytes = s->paths[j].ssthresh;
}

static void balia_on_rto(mps_sim *s, int j, int64_t flight) {
    balia_reduce(s, j, flight);
    s->paths[j].cwnd_bytes = s->mss;
}

static const mps_cc_ops balia_ops = {
    "balia", 1, 0, window_init, balia_on_ack, balia_on_congestion, balia_on_rto,
};

/* ------------------------------------------------------------------------- */
/* wVegas (7.12): Cao, Xu and Fu, "Delay-based congestion control for           */
/* multipath TCP", ICNP 2012, Algorithm 1                                       */
/* ------------------------------------------------------------------------- */

/* A new round from the next packet sent, with the initial target; after a loss. */
static void wvegas_restart(mps_path *p) {
    p->wv_round_pn = p->next_pn;
    p->wv_rtt_sum_ns = p->wv_rtt_count = p->wv_queue_delay_ns = 0;
    p->wv_alpha_packets = WVEGAS_INITIAL_ALPHA;
    p->wv_rate = 0.0;
}

static void wvegas_on_ack(mps_sim *s, int j, int64_t acked, int64_t pn, int64_t rtt_ns, int64_t now) {
    mps_path *p = &s->paths[j];
    const int64_t mss = s->mss;
    const int64_t grow = acked < mss ? acked : mss;
    if (rtt_ns < p->wv_base_rtt_ns) p->wv_base_rtt_ns = rtt_ns; /* the smallest RTT of a data packet */
    p->wv_rtt_sum_ns += rtt_ns;
    p->wv_rtt_count++;
    if (pn < p->wv_round_pn) { /* within a round: slow start goes on, avoidance waits */
        if (p->cwnd_bytes < p->ssthresh) p->cwnd_bytes += grow;
        return;
    }
    const int64_t count = p->wv_rtt_count, sum = p->wv_rtt_sum_ns;
    p->wv_round_pn = p->next_pn;
    p->wv_rtt_sum_ns = p->wv_rtt_count = 0;
    if (count <= 2) { /* too few samples for a delay estimate: Reno's step */
        if (p->cwnd_bytes < p->ssthresh)
            p->cwnd_bytes += grow;
        else
            newreno_on_ack(s, j, acked, pn, rtt_ns, now);
        return;
    }
    const int64_t mean = sum / count, base = p->wv_base_rtt_ns;
    int64_t cwnd = p->cwnd_bytes;
    /* bytes this subflow keeps queued: cwnd (1 - base / rtt) */
    const int64_t diff = (int64_t)((__int128)cwnd * (mean - base) / mean);
    if (cwnd < p->ssthresh) {
        if (diff > WVEGAS_GAMMA * mss) { /* a queue builds: leave slow start */
            const int64_t target = (int64_t)((__int128)cwnd * base / mean) + mss;
            if (target < cwnd) cwnd = target;
            if (cwnd - mss < p->ssthresh) p->ssthresh = cwnd - mss;
        } else {
            cwnd += grow;
        }
    } else {
        if (diff >= p->wv_alpha_packets * mss) { /* re-weigh: alpha_r = total * x_r / sum x */
            p->wv_rate = (double)cwnd / (double)mean;
            double total = 0.0;
            for (int k = 0; k < s->n_paths; k++)
                if (s->paths[k].cc == MPS_CC_WVEGAS) total += s->paths[k].wv_rate;
            const int64_t alpha = (int64_t)(p->wv_rate / total * WVEGAS_TOTAL_ALPHA);
            p->wv_alpha_packets = alpha > WVEGAS_INITIAL_ALPHA ? alpha : WVEGAS_INITIAL_ALPHA;
        }
        if (diff > p->wv_alpha_packets * mss) {
            cwnd -= mss;
            if (cwnd - mss < p->ssthresh) p->ssthresh = cwnd - mss;
        } else if (diff < p->wv_alpha_packets * mss) {
            cwnd += mss;
        }
        /* drain the queue when its delay doubled over the smallest seen since the last drain */
        const int64_t queue_delay = mean - base;
        if (p->wv_queue_delay_ns == 0 || p->wv_queue_delay_ns > queue_delay) p->wv_queue_delay_ns = queue_delay;
        if (queue_delay > 0 && queue_delay >= 2 * p->wv_queue_delay_ns) {
            cwnd = (int64_t)((__int128)cwnd * base / (2 * mean));
            p->wv_queue_delay_ns = 0;
        }
    }
    p->cwnd_bytes = cwnd > 2 * mss ? cwnd : 2 * mss;
}

static void wvegas_on_congestion(mps_sim *s, int j, int64_t flight) {
    wvegas_restart(&s->paths[j]);
    newreno_on_congestion(s, j, flight);
}

static void wvegas_on_rto(mps_sim *s, int j, int64_t flight) {
    wvegas_restart(&s->paths[j]);
    newreno_on_rto(s, j, flight);
}

static const mps_cc_ops wvegas_ops = {
    "wvegas", 1, 1, window_init, wvegas_on_ack, wvegas_on_congestion, wvegas_on_rto,
};

/* ------------------------------------------------------------------------- */
/* CCP (7.13): Cavendish, Kumazoe, Tsuru, Oie and Gerla, "Capacity and          */
/* Congestion Probing", INTERNET 2010, as [matsufuji18] sec. IV-E gives it       */
/* ------------------------------------------------------------------------- */

/* Congestion avoidance of seed 002's eq. (4), cwnd = [Kp (B - x) - in_flight] / 2, in bytes
 * and assigned at every acknowledgement (it may raise or lower the window: the proportional
 * law replaces Reno's increase; slow start, recovery and timeouts stay Reno's). */
static void ccp_on_ack(mps_sim *s, int j, int64_t acked, int64_t pn, int64_t rtt_ns, int64_t now) {
    mps_path *p = &s->paths[j];
    const int64_t mss = s->mss;
    /* what is still outstanding once this acknowledgement was taken off */
    const int64_t flight = p->inflight_bytes;
    /* the backlog x: the share of the flight that this sample's queueing delay holds (Vegas) */
    const int64_t backlog = (int64_t)((__int128)flight * (rtt_ns - p->min_rtt_ns) / rtt_ns);
    /* the storage B: the path's largest delivery rate times its largest smoothed RTT, the
     * pipe and the buffer it filled; or the one given */
    int64_t storage = p->ccp_storage_bytes;
    if (storage == 0) {
        const __int128 estimate = (__int128)p->max_delivery_rate_bps * p->max_srtt_ns / 8000000000;
        storage = estimate < MPS_CCP_MAX_STORAGE_BYTES ? (int64_t)estimate : MPS_CCP_MAX_STORAGE_BYTES;
    }
    /* eq. (4) with Kp in thousandths: at most 100000 * 2^50 / 2000 < 2^56 bytes; a negative
     * numerator rounds toward 0 here and down in 7.13, below the floor of 2 segments either way */
    const __int128 law = ((__int128)p->ccp_gain_milli * (storage - backlog) - (__int128)1000 * flight) / 2000;
    const int64_t cwnd = law > 2 * mss ? (int64_t)law : 2 * mss;
    p->cwnd_bytes = cwnd;
    /* a window below ssthresh would send the next acknowledgement back to slow start */
    if (cwnd < p->ssthresh) p->ssthresh = cwnd;
}

static const mps_cc_ops ccp_ops = {
    "ccp", 1, 0, window_init, ccp_on_ack, newreno_on_congestion, newreno_on_rto,
};

const mps_cc_ops *const mps_cc_table[MPS_CC_COUNT] = {&ideal_ops, &newreno_ops, &cubic_ops, &lia_ops,
                                                       &olia_ops, &balia_ops, &wvegas_ops, &ccp_ops};
