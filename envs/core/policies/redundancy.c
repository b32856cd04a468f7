/* Schedulers that send copies of pieces in flight (mpsched.baselines.redundancy;
 * docs/model.md 7.1, copies). */
#include "families.h"

static size_t redundant_state_bytes(const mps_sim *s) { return sizeof(int32_t); }

/* The state of both schedulers: moves *low past the blocks acknowledged or cancelled
 * (none of their pieces can be copied) and returns it. */
static int32_t first_open_block(const mps_sim *s, int32_t *low) {
    while (*low < s->n_arrived && (s->blk[*low].flags & (MPS_BLK_ACKED | MPS_BLK_CANCELLED))) (*low)++;
    return *low;
}

/* Blocks are sent first-in first-out (both schedulers send new data by MinRTT, oldest
 * block first): past the first block never sent and not cancelled, none has been sent. */
static int none_sent_from(const mps_block *k) { return !(k->flags & (MPS_BLK_SENT | MPS_BLK_CANCELLED)); }

/* New data as MinRTT sends it, or WAIT (also when nothing is sendable: a policy that
 * copies is asked then too). */
static int32_t minrtt_new_data(mps_sim *s, int j) {
    if (mps_n_sendable(s) == 0 || mps_min_rtt_ready_path(s) != j) return MPS_WAIT;
    return mps_first_sendable(s);
}

/* Linux MPTCP's redundant scheduler: the oldest piece in flight that this path has not
 * sent goes first (the copies wait in the reinjection queue, served before new data);
 * otherwise new data by MinRTT. A backup path sends no copies. */
static int32_t redundant_decide(mps_sim *s, mps_policy *pol, int j) {
    if (!s->paths[j].backup) {
        const int32_t low = first_open_block(s, pol->state);
        int32_t b = low;
        for (; b < s->n_arrived && !none_sent_from(&s->blk[b]); b++) {
            const int32_t g = mps_copy_piece(s, b, j);
            if (g >= 0) {
                mps_charge_work(s, b - low + 1);
                return MPS_COPY(g);
            }
        }
        mps_charge_work(s, b - low);
    }
    return minrtt_new_data(s, j);
}

const mps_policy_def mps_policy_redundant = {"redundant", MPS_NO_PARAMS, redundant_state_bytes, NULL,
                                             redundant_decide, 1};

/* Whether piece g is in flight (OUT) on exactly one path, and that path is not j: xquic
 * reinjects a packet once, onto another path. */
static int on_one_other_path(const mps_sim *s, int32_t g, int j) {
    const unsigned on = s->piece_paths[g];
    return s->piece_state[g] == MPS_PIECE_OUT && on && !(on & (on - 1)) && !(on & (1u << j));
}

/* xquic's reinjection choice (mpsched.baselines.redundancy.longest_waiting_copy): the
 * piece on one other path (on_one_other_path) of a block not cancelled, that has waited
 * longest (then lowest index) since its latest transmission, at least `after` ns; or -1. */
static int32_t longest_waiting_copy(mps_sim *s, mps_policy *pol, int j, double after) {
    const int32_t low = first_open_block(s, pol->state);
    int32_t best = -1, b = low;
    for (; b < s->n_arrived && !none_sent_from(&s->blk[b]); b++) {
        const mps_block *k = &s->blk[b];
        if (k->flags & MPS_BLK_CANCELLED) continue;
        for (int32_t g = k->piece_off + mps_out_floor(s, b); g < k->piece_off + k->next_new; g++) {
            if (!on_one_other_path(s, g, j)) continue;
            if ((double)(s->now - s->piece_sent_ns[g]) < after) continue;
            if (best < 0 || s->piece_sent_ns[g] < s->piece_sent_ns[best]) best = g;
        }
    }
    mps_charge_work(s, b - low);
    return best;
}

/* xquic's deadline reinjection on its MinRTT scheduler: param[0] = srtt_factor,
 * param[1] = hard_deadline_ms, param[2] = lower_bound_ms. longest_waiting_copy with
 * `after` = max(min(factor * min srtt, hard), lower); otherwise new data by MinRTT. */
static int32_t xquic_reinject_decide(mps_sim *s, mps_policy *pol, int j) {
    int64_t min_srtt = INT64_MAX;
    for (int i = 0; i < s->n_paths; i++)
        if (s->paths[i].srtt_ns < min_srtt) min_srtt = s->paths[i].srtt_ns;
    const double flexible = pol->param[0] * (double)min_srtt, hard = pol->param[1] * 1e6, lower = pol->param[2] * 1e6;
    double after = flexible < hard ? flexible : hard;
    if (after < lower) after = lower;
    const int32_t g = longest_waiting_copy(s, pol, j, after);
    return g >= 0 ? MPS_COPY(g) : minrtt_new_data(s, j);
}

static const mps_param_def xquic_reinject_params[] = {
    {"srtt_factor", 0.0, 1000.0}, {"hard_deadline_ms", 0.0, 1e9}, {"lower_bound_ms", 0.0, 1e9}};
const mps_policy_def mps_policy_xquic_reinject = {"xquic_reinject", MPS_PARAMS(xquic_reinject_params),
                                                  redundant_state_bytes, NULL, xquic_reinject_decide, 1};

/* XLINK's QoE-driven reinjection: param[0] = low_ms, param[1] = high_ms. The player waits
 * for the oldest block neither acknowledged, cancelled nor past its deadline; its
 * play-time left is the time to that block's deadline. Reinjection is on below low_ms, off
 * above high_ms, and in between while that is less than the block's unacknowledged bytes
 * over the summed delivery rates (or no rate is known). Then, unless a block not after it
 * is sendable, the overdue piece of that block (on one other path, in flight longer than
 * that path's srtt) that has waited longest is copied; otherwise new data by MinRTT. */
static int32_t xlink_awaited(mps_sim *s, mps_policy *pol) {
    int32_t *awaited = (int32_t *)pol->state + 1; /* past the blocks acknowledged, cancelled or late: for good */
    while (*awaited < s->n_arrived && ((s->blk[*awaited].flags & (MPS_BLK_ACKED | MPS_BLK_CANCELLED)) ||
                                       s->blk[*awaited].deadline_ns < s->now))
        (*awaited)++;
    const int32_t b = *awaited;
    if (b >= s->n_arrived) return -1;
    const mps_block *k = &s->blk[b];
    const double left = (double)(k->deadline_ns - s->now);
    if (left < pol->param[0] * 1e6) return b;
    if (left > pol->param[1] * 1e6) return -1;
    double rate = 0.0;
    for (int i = 0; i < s->n_paths; i++) rate += (double)s->paths[i].delivery_rate_bps;
    return rate <= 0.0 || left < (double)(k->size_bytes - k->acked_bytes) * 8e9 / rate ? b : -1;
}

static int32_t xlink_decide(mps_sim *s, mps_policy *pol, int j) {
    const int32_t b = xlink_awaited(s, pol);
    const int32_t first = b >= 0 ? mps_first_sendable(s) : -1;
    if (b >= 0 && (first < 0 || first > b)) { /* no older data waits to go first */
        const mps_block *k = &s->blk[b];
        int32_t best = -1;
        for (int32_t g = k->piece_off + mps_out_floor(s, b); g < k->piece_off + k->next_new; g++) {
            if (!on_one_other_path(s, g, j)) continue;
            if (s->now - s->piece_sent_ns[g] <= s->paths[__builtin_ctz(s->piece_paths[g])].srtt_ns) continue;
            if (best < 0 || s->piece_sent_ns[g] < s->piece_sent_ns[best]) best = g;
        }
        if (best >= 0) return MPS_COPY(best);
    }
    return minrtt_new_data(s, j);
}

static const mps_param_def xlink_params[] = {{"low_ms", 0.0, 1e9}, {"high_ms", 0.0, 1e9}};
static size_t xlink_state_bytes(const mps_sim *s) { return 2 * sizeof(int32_t); }

const mps_policy_def mps_policy_xlink = {"xlink", MPS_PARAMS(xlink_params), xlink_state_bytes, NULL, xlink_decide, 1};
