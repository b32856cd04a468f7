#include "obs.h"

/* Units: packets (of the episode's mss), seconds, Mbit/s; flags are 0 or 1. */
const char *const mps_obs_slot_names[MPS_OBS_BLOCK_BASE] = {
    "valid", "remaining_packets", "time_to_deadline_s", "priority", "weight", "size_packets",
};
const char *const mps_obs_path_names[MPS_OBS_PATH_FEATURES] = {
    "present", "srtt_s", "rttvar_s", "cwnd_packets", "inflight_packets", "delivery_rate_mbps", "in_recovery",
    "can_send",
};

#include <string.h>

/* The K most urgent sendable blocks, in slot order; returns how many. Blocks are kept
 * in a bitset by deadline rank, so this costs O(K) plus the words skipped. */
static int select_slots(mps_sim *s, int K, int32_t *slot_blocks) {
    /* first rank whose deadline has not passed; time only grows, so does the cut */
    while (s->dl_cut < s->n_blocks && s->dl_sorted[s->dl_cut] < s->now) s->dl_cut++;
    const int32_t cut = s->dl_cut;
    const int32_t floor = mps_todo_rank_floor(s);
    int n = 0;
    /* unexpired blocks, earliest deadline first */
    for (int32_t w = (cut >> 6) > floor ? cut >> 6 : floor; w <= s->dl_hi_word && n < K; w++) {
        uint64_t x = mps_sendable_rank_word(s, w);
        if (w == (cut >> 6)) x &= ~UINT64_C(0) << (cut & 63);
        while (x && n < K) {
            slot_blocks[n++] = s->dl_order[(w << 6) + __builtin_ctzll(x)];
            x &= x - 1;
        }
    }
    /* then expired blocks, most recently expired first */
    for (int32_t w = (cut - 1) >> 6; cut > 0 && w >= floor && n < K; w--) {
        uint64_t x = mps_sendable_rank_word(s, w);
        const int32_t top = cut - 1 - (w << 6); /* highest rank of this word still below cut */
        if (top < 63) x &= (UINT64_C(1) << (top + 1)) - 1;
        while (x && n < K) {
            const int bit = 63 - __builtin_clzll(x);
            slot_blocks[n++] = s->dl_order[(w << 6) + bit];
            x &= ~(UINT64_C(1) << bit);
        }
    }
    for (int i = n; i < K; i++) slot_blocks[i] = -1;
    return n;
}

void mps_obs_write(mps_sim *s, int K, int Pmax, float *obs, uint8_t *mask, int32_t *slot_blocks) {
    const int64_t dim = mps_obs_dim(K, Pmax);
    memset(obs, 0, (size_t)dim * sizeof(float));
    memset(mask, 0, (size_t)(K + 1));
    mask[K] = 1;
    if (s->pending < 0) {
        for (int i = 0; i < K; i++) slot_blocks[i] = -1;
        return;
    }
    const int P = s->n_paths;
    const float inv_mss = 1.0f / (float)s->mss;
    const int n = select_slots(s, K, slot_blocks);
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
        mask[i] = 1;
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
    }
    pf[(int64_t)Pmax * MPS_OBS_PATH_FEATURES + s->pending] = 1.0f;
}

int mps_obs_step(mps_sim *s, int K, int Pmax, int64_t action, int invalid_as_wait, float *obs, uint8_t *mask,
                 int32_t *slot_blocks, double *reward, uint8_t *done) {
    if (s->pending >= 0) {
        int32_t block;
        if (action < 0 || action > K) return -1;
        if (action == K) {
            block = MPS_WAIT;
        } else {
            block = slot_blocks[action];
            if (block < 0) {
                if (!invalid_as_wait) return -1;
                block = MPS_WAIT;
            }
        }
        if (mps_apply(s, block) != 0) return -1;
    }
    const int j = mps_next_decision(s);
    if (j == -2) return -2;
    *reward = mps_take_reward(s);
    *done = (uint8_t)(j < 0);
    mps_obs_write(s, K, Pmax, obs, mask, slot_blocks);
    return 0;
}
