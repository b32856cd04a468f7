/* MPTCP path schedulers for heterogeneous paths: ECF, BLEST and OTIAS (mpsched.baselines.mptcp). */
#include <float.h>
#include <stdint.h>

#include "families.h"

/* The path with the smallest (srtt, index) among all paths (the kernel's minsk). */
static int fastest_path(const mps_sim *s) {
    int best = 0;
    for (int i = 1; i < s->n_paths; i++)
        if (s->paths[i].srtt_ns < s->paths[best].srtt_ns) best = i;
    return best;
}

/* ECF: state is the connection's "waiting" flag. param[0] = beta, param[1] = rate_thresholds. */
static size_t ecf_state_bytes(const mps_sim *s) { return sizeof(int64_t); }

/* [jonglez20] eq. (3) for n paths: 16e9 k <= sum over paths p faster than j of
 * rate_bps_p * (srtt_j - srtt_p). */
static int ecf_within_threshold(const mps_sim *s, int j, int64_t k) {
    const int64_t srtt_j = s->paths[j].srtt_ns;
    double s_lim = 0.0;
    for (int p = 0; p < s->n_paths; p++) {
        const mps_path *q = &s->paths[p];
        if (q->srtt_ns < srtt_j || (q->srtt_ns == srtt_j && p < j))
            s_lim += q->rate_bps * (double)(srtt_j - q->srtt_ns);
    }
    return (double)k * 16e9 <= s_lim;
}

static int32_t ecf_decide(mps_sim *s, mps_policy *pol, int j) {
    if (mps_min_rtt_ready_path(s) != j) return MPS_WAIT;
    const int f = fastest_path(s);
    if (j != f) {
        const int64_t k = mps_sendable_bytes(s);
        if (pol->param[1] != 0.0) {
            if (ecf_within_threshold(s, j, k)) return MPS_WAIT;
        } else {
            /* Lim et al. Algorithm 1 as in mptcp_ecf.c, cross-multiplied, k at least one window */
            int64_t *waiting = pol->state;
            const mps_path *pf = &s->paths[f], *ps = &s->paths[j];
            const double beta = pol->param[0];
            const double kd = (double)k;
            const double w_f = mps_window_bytes(pf), w_s = mps_window_bytes(ps);
            const double srtt_f = (double)pf->srtt_ns, srtt_s = (double)ps->srtt_ns;
            const double delta = (double)(pf->rttvar_ns > ps->rttvar_ns ? pf->rttvar_ns : ps->rttvar_ns);
            const double x_f = kd > w_f ? kd : w_f;
            if (srtt_f * (x_f + w_f) < (1.0 + beta * (double)*waiting) * (w_f * (srtt_s + delta))) {
                const double x_s = kd > w_s ? kd : w_s;
                if (srtt_s * x_s >= w_s * (2.0 * srtt_f + delta)) {
                    *waiting = 1;
                    return MPS_WAIT;
                }
            } else {
                *waiting = 0;
            }
        }
    }
    return mps_first_sendable(s);
}

static const mps_param_def ecf_params[] = {{"beta", 0.0, 1.0}, {"rate_thresholds", 0.0, 1.0}};
const mps_policy_def mps_policy_ecf = {"ecf", MPS_PARAMS(ecf_params), ecf_state_bytes, NULL, ecf_decide};

/* BLEST: param[0] = lambda. Ferlin et al.'s blocking estimate:
 *   lambda * MSS_f * (cwnd_f + (rtt_s / rtt_f - 1) / 2) * rtt_s / rtt_f > |M| - MSS_s * (inflight_s + 1)
 * skips the slower path; |M| is the in-order receiver's window (none with the block receiver). */
static int32_t blest_decide(mps_sim *s, mps_policy *pol, int j) {
    if (mps_min_rtt_ready_path(s) != j) return MPS_WAIT;
    const int f = fastest_path(s);
    if (j != f && s->receiver == MPS_RECEIVER_IN_ORDER) {
        const mps_path *pf = &s->paths[f], *ps = &s->paths[j];
        const double rtt_f = (double)(pf->srtt_ns > 1 ? pf->srtt_ns : 1);
        const double rtt_s = (double)(ps->srtt_ns > 1 ? ps->srtt_ns : 1);
        const double ratio = rtt_s / rtt_f;
        const double fast_bytes = (mps_window_bytes(pf) + (double)s->mss * (ratio - 1.0) / 2.0) * ratio;
        const int64_t avail = s->rbuf_bytes - (ps->inflight_bytes + s->mss);
        if (pol->param[0] * fast_bytes > (double)avail) return MPS_WAIT;
    }
    return mps_first_sendable(s);
}

static const mps_param_def blest_params[] = {{"lambda_scale", DBL_TRUE_MIN, 10.0}};
const mps_policy_def mps_policy_blest = {"blest", MPS_PARAMS(blest_params), NULL, NULL, blest_decide};

/* OTIAS (Yang, Wang and Amer 2014; Linux mptcp_otias.c): every never-sent piece is placed
 * at once on the path where it is expected to arrive first, behind that path's full
 * window if need be, and each path sends what was placed on it. */
typedef struct {
    int64_t placed_on[MPS_MAX_PATHS]; /* pieces placed on each path and not sent: its send queue */
    int32_t head[MPS_MAX_PATHS];      /* no block below head[k] has pieces placed on path k */
    int64_t cancels_seen;             /* s->cancels when placements were last checked against them */
    int32_t low;                      /* no block below has pieces placed on any path */
    int32_t frontier;                 /* every block below has all its never-sent pieces placed */
    int32_t placed[];                 /* n_blocks x n_paths: pieces of a block placed on a path */
} otias_state;

static size_t otias_state_bytes(const mps_sim *s) {
    return sizeof(otias_state) + (size_t)s->n_blocks * (size_t)s->n_paths * sizeof(int32_t);
}

/* A path's window and the free room in it, in packets (cwnd at least 1, free at least 0). */
static void otias_window(const mps_sim *s, int k, int64_t *cwnd, int64_t *free_packets) {
    const mps_path *p = &s->paths[k];
    const double window = mps_window_bytes(p), mss = (double)s->mss;
    const int64_t c = (int64_t)(window / mss);
    const int64_t f = (int64_t)((window - (double)p->inflight_bytes) / mss);
    *cwnd = c > 1 ? c : 1;
    *free_packets = f > 0 ? f : 0;
}

/* Twice the expected arrival of one more piece on path k: (2 wait + 1) srtt, where the
 * piece waits ceil((queued - free + 1) / cwnd) round trips once the free room is taken. */
static int64_t otias_arrival2(const mps_sim *s, const otias_state *st, int k, int64_t cwnd, int64_t free_packets) {
    const int64_t queued = st->placed_on[k];
    const int64_t wait = queued < free_packets ? 0 : (queued - free_packets + cwnd) / cwnd;
    return (2 * wait + 1) * s->paths[k].srtt_ns;
}

/* The paths that take new pieces, as a bit set: open ones, a backup only while every
 * other path is potentially failed; those not potentially failed, or all if none. */
static unsigned otias_takers(const mps_sim *s) {
    int others_failed = 1;
    for (int i = 0; i < s->n_paths; i++)
        if (!s->paths[i].backup && s->paths[i].rto_streak == 0) others_failed = 0;
    unsigned open = 0, live = 0;
    for (int k = 0; k < s->n_paths; k++) {
        const mps_path *p = &s->paths[k];
        if (p->start_ns > s->now || s->now >= p->stop_ns || (p->backup && !others_failed)) continue;
        open |= 1u << k;
        if (p->rto_streak == 0) live |= 1u << k;
    }
    return live ? live : open;
}

/* No block at or past this index has pieces placed: the frontier block (it may be partly
 * placed) is the last that can. */
static int32_t otias_placed_end(const mps_sim *s, const otias_state *st) {
    return st->frontier + (st->frontier < s->n_arrived);
}

static int32_t otias_row_sum(const otias_state *st, int32_t b, int n_paths) {
    int32_t sum = 0;
    for (int k = 0; k < n_paths; k++) sum += st->placed[b * n_paths + k];
    return sum;
}

/* Forget the placements of blocks with no never-sent piece left and take back those of
 * paths that take no new pieces. Sending a placed piece unplaces it, so a placed block
 * loses its never-sent pieces otherwise only when it is cancelled: the blocks are looked
 * at only after a cancel (the specification looks at every decision, to the same end). */
static void otias_forget(mps_sim *s, otias_state *st, unsigned takers) {
    const int n = s->n_paths;
    const int32_t end = otias_placed_end(s, st);
    int64_t looked = 0;
    if (s->cancels != st->cancels_seen) {
        st->cancels_seen = s->cancels;
        for (int32_t b = st->low; b < end; b++) {
            if (s->blk[b].unsent_bytes != 0) continue;
            for (int k = 0; k < n; k++) {
                st->placed_on[k] -= st->placed[b * n + k];
                st->placed[b * n + k] = 0;
            }
        }
        looked += end - st->low;
    }
    for (int k = 0; k < n; k++) {
        if ((takers >> k & 1u) || st->placed_on[k] == 0) continue;
        for (int32_t b = st->low; b < end; b++) {
            int32_t *cell = &st->placed[b * n + k];
            if (*cell == 0) continue;
            st->placed_on[k] -= *cell;
            *cell = 0;
            if (b < st->frontier) st->frontier = b;
        }
        looked += end - st->low;
    }
    const int32_t from = st->low;
    while (st->low < st->frontier && otias_row_sum(st, st->low, n) == 0) st->low++;
    mps_charge_work(s, looked + st->low - from);
}

/* Place the never-sent pieces not placed yet, oldest block first. */
static void otias_place(mps_sim *s, otias_state *st, unsigned takers) {
    const int n = s->n_paths;
    const int64_t mss = s->mss;
    int64_t budget = -1;
    if (s->receiver == MPS_RECEIVER_IN_ORDER) {
        int64_t room = s->rbuf_bytes - (s->conn_next_dsn - s->data_acked);
        if (room < 0) room = 0;
        int64_t placed = 0;
        for (int k = 0; k < n; k++) placed += st->placed_on[k];
        budget = room / mss - placed;
        if (budget < 0) budget = 0;
    }
    int64_t cwnd[MPS_MAX_PATHS], free_packets[MPS_MAX_PATHS];
    for (int k = 0; k < n; k++)
        if (takers >> k & 1u) otias_window(s, k, &cwnd[k], &free_packets[k]);
    const int32_t first = st->frontier;
    while (st->frontier < s->n_arrived) {
        const int32_t b = st->frontier;
        const int64_t left = ((int64_t)s->blk[b].unsent_bytes + mss - 1) / mss - otias_row_sum(st, b, n);
        if (left > 0 && !mps_block_sendable(s, b)) break;
        for (int64_t i = 0; i < left; i++) {
            if (budget == 0) goto done;
            budget--;
            int best = -1;
            int64_t best_key = 0;
            for (int k = 0; k < n; k++) {
                if (!(takers >> k & 1u)) continue;
                const int64_t key = otias_arrival2(s, st, k, cwnd[k], free_packets[k]);
                if (best < 0 || key < best_key) best = k, best_key = key;
            }
            st->placed[b * n + best]++;
            st->placed_on[best]++;
            if (b < st->head[best]) st->head[best] = b;
        }
        st->frontier++;
    }
done:
    mps_charge_work(s, st->frontier - first + 1);
}

/* The oldest block with pieces placed on path j, or -1. */
static int32_t otias_queue_head(mps_sim *s, otias_state *st, int j) {
    const int32_t end = otias_placed_end(s, st), from = st->head[j];
    int32_t found = -1;
    for (; st->head[j] < end; st->head[j]++) {
        if (st->placed[st->head[j] * s->n_paths + j]) {
            found = st->head[j];
            break;
        }
    }
    mps_charge_work(s, st->head[j] - from);
    return found;
}

/* The sendable block with the smallest index that has pieces to retransmit, or -1. */
static int32_t oldest_lost_block(const mps_sim *s) {
    for (int32_t w = s->low_word; w <= s->hi_word; w++)
        if (s->lost_set.bits[w]) return (w << 6) + __builtin_ctzll(s->lost_set.bits[w]);
    return -1;
}

static int32_t otias_decide(mps_sim *s, mps_policy *pol, int j) {
    otias_state *st = pol->state;
    const unsigned takers = otias_takers(s);
    otias_forget(s, st, takers);
    otias_place(s, st, takers);
    const int32_t b = otias_queue_head(s, st, j);
    if (b >= 0) {
        if (!mps_block_sendable(s, b)) return MPS_WAIT;
        if (s->blk[b].lost_pending_bytes == 0) {
            st->placed[b * s->n_paths + j]--;
            st->placed_on[j]--;
        }
        return b;
    }
    const int32_t lost = oldest_lost_block(s);
    if (lost < 0) return MPS_WAIT;
    int best = -1;
    int64_t best_key = 0;
    for (int k = 0; k < s->n_paths; k++) {
        if (!s->paths[k].can_send) continue;
        int64_t cwnd, free_packets;
        otias_window(s, k, &cwnd, &free_packets);
        if (st->placed_on[k] > free_packets) continue;
        const int64_t key = otias_arrival2(s, st, k, cwnd, free_packets);
        if (best < 0 || key < best_key) best = k, best_key = key;
    }
    return best == j ? lost : MPS_WAIT;
}

const mps_policy_def mps_policy_otias = {"otias", MPS_NO_PARAMS, otias_state_bytes, NULL, otias_decide};
