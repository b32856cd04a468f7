#include "obs.h"

#include <string.h>

typedef struct {
    int32_t expired;
    int64_t dist;
    int32_t block;
} slot_key;

static int key_less(const slot_key *a, const slot_key *b) {
    if (a->expired != b->expired) return a->expired < b->expired;
    if (a->dist != b->dist) return a->dist < b->dist;
    return a->block < b->block;
}

/* The K most urgent sendable blocks, in slot order; returns how many. */
static int select_slots(const mps_sim *s, int K, int32_t *slot_blocks) {
    slot_key top[64];
    int n = 0;
    const int64_t now = s->now;
    for (int32_t w = s->low_word; w < s->n_words; w++) {
        uint64_t x = s->sendable_bits[w];
        while (x) {
            const int32_t b = (w << 6) + __builtin_ctzll(x);
            x &= x - 1;
            slot_key k;
            k.expired = s->deadline_ns[b] < now;
            k.dist = k.expired ? now - s->deadline_ns[b] : s->deadline_ns[b] - now;
            k.block = b;
            if (n == K && !key_less(&k, &top[n - 1])) continue;
            int i = n < K ? n++ : K - 1;
            while (i > 0 && key_less(&k, &top[i - 1])) {
                top[i] = top[i - 1];
                i--;
            }
            top[i] = k;
        }
    }
    for (int i = 0; i < K; i++) slot_blocks[i] = i < n ? top[i].block : -1;
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
        float *f = obs + (int64_t)i * stride;
        f[0] = 1.0f;
        f[1] = (float)(s->unsent_bytes[b] + s->lost_pending_bytes[b]) * inv_mss;
        f[2] = (float)((double)(s->deadline_ns[b] - s->now) * 1e-9);
        f[3] = (float)s->priority[b];
        f[4] = (float)s->weight[b];
        f[5] = (float)s->size_bytes[b] * inv_mss;
        for (int j = 0; j < P; j++) f[MPS_OBS_BLOCK_BASE + j] = (float)s->blk_inflight[(int64_t)b * P + j] * inv_mss;
        mask[i] = 1;
    }
    float *pf = obs + (int64_t)K * stride;
    const mps_path_view *v = &s->pv;
    for (int j = 0; j < P; j++) {
        float *f = pf + j * MPS_OBS_PATH_FEATURES;
        f[0] = 1.0f;
        f[1] = (float)((double)v->srtt_ns[j] * 1e-9);
        f[2] = (float)((double)v->rttvar_ns[j] * 1e-9);
        f[3] = (float)v->cwnd_bytes[j] * inv_mss;
        f[4] = (float)v->inflight_bytes[j] * inv_mss;
        f[5] = (float)((double)v->delivery_rate_bps[j] * 1e-6);
        f[6] = v->recovery[j] != MPS_REC_NONE ? 1.0f : 0.0f;
        f[7] = v->can_send[j] ? 1.0f : 0.0f;
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
