#include "obs.h"

/* Units: packets (of the episode's mss), seconds, Mbit/s; flags are 0 or 1. */
const char *const mps_obs_slot_names[MPS_OBS_BLOCK_BASE] = {
    "valid", "remaining_packets", "time_to_deadline_s", "priority", "weight", "size_packets",
};
const char *const mps_obs_path_names[MPS_OBS_PATH_FEATURES] = {
    "present", "srtt_s", "rttvar_s", "cwnd_packets", "inflight_packets", "delivery_rate_mbps", "in_recovery",
    "can_send", "min_rtt_s", "flight_bdp",
};

#include <string.h>

/* Word w, by deadline rank, of the blocks a slot may hold: the sendable ones, and with
 * copies those with bytes in flight too. */
static inline uint64_t slot_rank_word(const mps_sim *s, int32_t w, int copies) {
    return mps_sendable_rank_word(s, w) | (copies ? s->flight_set.dl_bits[w] : 0);
}

/* Whether a block of slot_rank_word goes into a slot: one that is not sendable, and
 * cancelled or acknowledged (a copy still on its way), has nothing to send or copy. */
static inline int slot_takes(const mps_sim *s, int32_t b, int copies) {
    return !copies || mps_block_sendable(s, b) || !(s->blk[b].flags & (MPS_BLK_CANCELLED | MPS_BLK_ACKED));
}

/* The K most urgent blocks of slot_rank_word, in slot order; returns how many. Blocks
 * are kept in bitsets by deadline rank, so this costs O(K) plus the words skipped. */
static int select_slots(mps_sim *s, int K, int copies, int32_t *slot_blocks) {
    /* first rank whose deadline has not passed; time only grows, so does the cut */
    while (s->dl_cut < s->n_blocks && s->dl_sorted[s->dl_cut] < s->now) s->dl_cut++;
    const int32_t cut = s->dl_cut;
    int32_t floor = mps_todo_rank_floor(s);
    if (copies) {
        const int32_t flight = mps_flight_rank_floor(s);
        if (flight < floor) floor = flight;
    }
    int n = 0;
    /* unexpired blocks, earliest deadline first */
    for (int32_t w = (cut >> 6) > floor ? cut >> 6 : floor; w <= s->dl_hi_word && n < K; w++) {
        uint64_t x = slot_rank_word(s, w, copies);
        if (w == (cut >> 6)) x &= ~UINT64_C(0) << (cut & 63);
        while (x && n < K) {
            const int32_t b = s->dl_order[(w << 6) + __builtin_ctzll(x)];
            if (slot_takes(s, b, copies)) slot_blocks[n++] = b;
            x &= x - 1;
        }
    }
    /* then expired blocks, most recently expired first */
    for (int32_t w = (cut - 1) >> 6; cut > 0 && w >= floor && n < K; w--) {
        uint64_t x = slot_rank_word(s, w, copies);
        const int32_t top = cut - 1 - (w << 6); /* highest rank of this word still below cut */
        if (top < 63) x &= (UINT64_C(1) << (top + 1)) - 1;
        while (x && n < K) {
            const int bit = 63 - __builtin_clzll(x);
            const int32_t b = s->dl_order[(w << 6) + bit];
            if (slot_takes(s, b, copies)) slot_blocks[n++] = b;
            x &= ~(UINT64_C(1) << bit);
        }
    }
    for (int i = n; i < K; i++) slot_blocks[i] = -1;
    return n;
}

void mps_obs_write(mps_sim *s, int K, int Pmax, int copies, float *obs, uint8_t *mask, int32_t *slot_blocks) {
    const int64_t dim = mps_obs_dim(K, Pmax);
    const int actions = mps_obs_actions(copies, K);
    memset(obs, 0, (size_t)dim * sizeof(float));
    memset(mask, 0, (size_t)actions);
    mask[K] = 1;
    if (s->pending < 0) {
        for (int i = 0; i < K; i++) slot_blocks[i] = -1;
        return;
    }
    const int P = s->n_paths;
    const float inv_mss = 1.0f / (float)s->mss;
    const int n = select_slots(s, K, copies, slot_blocks);
    const int stride = MPS_OBS_BLOCK_BASE + Pmax;
    for (int i = 0; i < n; i++) {
        const int32_t b = slot_blocks[i];
        const mps_block *k = &s->blk[b];
        float *f = obs + (int64_t)i * stride;
        f[MPS_OBS_SLOT_VALID] = 1.0f;
        f[MPS_OBS_SLOT_REMAINING] = (float)(k->unsent_bytes + k->lost_pending_bytes) * inv_mss;
        f[MPS_OBS_SLOT_TIME_TO_DEADLINE] = (float)((double)(k->deadline_ns - s->now) * 1e-9);
        f[MPS_OBS_SLOT_PRIORITY] = (float)k->priority;
        f[MPS_OBS_SLOT_WEIGHT] = (float)k->weight;
        f[MPS_OBS_SLOT_SIZE] = (float)k->size_bytes * inv_mss;
        const int64_t *inflight = s->blk_inflight + (int64_t)b * P;
        for (int j = 0; j < P; j++) f[MPS_OBS_BLOCK_BASE + j] = (float)inflight[j] * inv_mss;
        if (copies) {
            mask[i] = (uint8_t)mps_block_sendable(s, b);
            mask[K + 1 + i] = (uint8_t)(mps_copy_piece(s, b, s->pending) >= 0);
        } else {
            mask[i] = 1;
        }
    }
    float *pf = obs + (int64_t)K * stride;
    for (int j = 0; j < P; j++) {
        const mps_path *p = &s->paths[j];
        float *f = pf + j * MPS_OBS_PATH_FEATURES;
        f[MPS_OBS_PATH_PRESENT] = 1.0f;
        f[MPS_OBS_PATH_SRTT] = (float)((double)p->srtt_ns * 1e-9);
        f[MPS_OBS_PATH_RTTVAR] = (float)((double)p->rttvar_ns * 1e-9);
        f[MPS_OBS_PATH_CWND] = (float)p->cwnd_bytes * inv_mss;
        f[MPS_OBS_PATH_INFLIGHT] = (float)p->inflight_bytes * inv_mss;
        f[MPS_OBS_PATH_DELIVERY_RATE] = (float)((double)p->delivery_rate_bps * 1e-6);
        f[MPS_OBS_PATH_RECOVERY] = p->recovery != MPS_REC_NONE ? 1.0f : 0.0f;
        f[MPS_OBS_PATH_CAN_SEND] = p->can_send ? 1.0f : 0.0f;
        f[MPS_OBS_PATH_MIN_RTT] = (float)((double)p->min_rtt_ns * 1e-9);
        /* how full the path's pipe is, on the scale BBR's in-flight cap reads (docs/model.md
         * 7.16): scale-free, so the same value means the same at any rate or RTT */
        const double bdp_bits = (double)p->delivery_rate_bps * (double)p->min_rtt_ns * 1e-9;
        f[MPS_OBS_PATH_FLIGHT_BDP] = bdp_bits > 0.0 ? (float)((double)p->inflight_bytes * 8.0 / bdp_bits) : 0.0f;
    }
    pf[(int64_t)Pmax * MPS_OBS_PATH_FEATURES + s->pending] = 1.0f;
}

int mps_obs_step(mps_sim *s, int K, int Pmax, int copies, int64_t action, int invalid_as_wait, float *obs,
                 uint8_t *mask, int32_t *slot_blocks, double *reward, uint8_t *done) {
    if (s->pending >= 0) {
        if (action < 0 || action >= mps_obs_actions(copies, K)) return -1;
        int32_t block = MPS_WAIT;
        int valid = 1;
        if (action < K) {
            valid = mask[action];
            block = slot_blocks[action];
        } else if (action > K) { /* a copy of the slot's lowest piece the deciding path may copy */
            const int32_t b = slot_blocks[action - K - 1];
            const int32_t g = b >= 0 ? mps_copy_piece(s, b, s->pending) : -1;
            valid = g >= 0;
            block = MPS_COPY(g);
        }
        if (!valid) {
            if (!invalid_as_wait) return -1;
            block = MPS_WAIT;
        }
        if (mps_apply(s, block) != 0) return -1;
    }
    const int j = mps_next_decision(s);
    if (j == -2) return -2;
    *reward = mps_take_reward(s);
    *done = (uint8_t)(j < 0);
    mps_obs_write(s, K, Pmax, copies, obs, mask, slot_blocks);
    return 0;
}
