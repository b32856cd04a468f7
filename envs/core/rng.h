/*
 * Random streams of the core (docs/model.md section 5): xoshiro256** seeded with
 * splitmix64. Never rand(): the streams must be identical on every platform.
 */
#ifndef MPSCHED_RNG_H
#define MPSCHED_RNG_H

#include <stdint.h>

static inline uint64_t mps_splitmix64(uint64_t *state) {
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static inline uint64_t mps_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline void mps_rng_seed(uint64_t s[4], uint64_t seed, int stream) {
    uint64_t state = seed + (uint64_t)(stream + 1) * UINT64_C(0x9E3779B97F4A7C15);
    for (int i = 0; i < 4; i++) s[i] = mps_splitmix64(&state);
}

static inline uint64_t mps_rng_next(uint64_t s[4]) {
    const uint64_t result = mps_rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = mps_rotl(s[3], 45);
    return result;
}

#endif
