/*
 * The flat observation of the Gymnasium environment and of its vector twin, written
 * straight into caller-owned buffers (PufferLib style).
 *
 * Layout, for K block slots and Pmax path slots:
 *   K x (6 + Pmax) block features: valid, remaining packets to send, time to deadline [s],
 *       priority, weight, size [packets], then packets in flight on each path;
 *   Pmax x 10 path features: present, srtt [s], rttvar [s], cwnd [packets] (0 for ideal),
 *       in flight [packets], delivery-rate estimate [Mbit/s], in recovery, can send,
 *       smallest RTT [s], flight in bandwidth-delay products (in flight over the
 *       delivery-rate estimate times the smallest RTT; 0 before the first rate sample);
 *   Pmax one-hot: the deciding path.
 * Slots hold the sendable blocks (with copies, also those with bytes in flight), most
 * urgent first: blocks whose deadline has not passed by earliest deadline (ties: lower
 * index first), then expired blocks, most recently expired first (ties: higher index
 * first).
 */
#ifndef MPSCHED_OBS_H
#define MPSCHED_OBS_H

#include "sim.h"

/* The features of a block slot, in order (then one entry per path: the block's packets
 * in flight on it), and those of a path; their names, in the same order, are
 * mps_obs_slot_names and mps_obs_path_names (the Python side's layout reads them). */
enum {
    MPS_OBS_SLOT_VALID,
    MPS_OBS_SLOT_REMAINING,
    MPS_OBS_SLOT_TIME_TO_DEADLINE,
    MPS_OBS_SLOT_PRIORITY,
    MPS_OBS_SLOT_WEIGHT,
    MPS_OBS_SLOT_SIZE,
    MPS_OBS_BLOCK_BASE
};
enum {
    MPS_OBS_PATH_PRESENT,
    MPS_OBS_PATH_SRTT,
    MPS_OBS_PATH_RTTVAR,
    MPS_OBS_PATH_CWND,
    MPS_OBS_PATH_INFLIGHT,
    MPS_OBS_PATH_DELIVERY_RATE,
    MPS_OBS_PATH_RECOVERY,
    MPS_OBS_PATH_CAN_SEND,
    MPS_OBS_PATH_MIN_RTT,
    MPS_OBS_PATH_FLIGHT_BDP,
    MPS_OBS_PATH_FEATURES
};
extern const char *const mps_obs_slot_names[MPS_OBS_BLOCK_BASE];
extern const char *const mps_obs_path_names[MPS_OBS_PATH_FEATURES];

static inline int64_t mps_obs_dim(int K, int Pmax) {
    return (int64_t)K * (MPS_OBS_BLOCK_BASE + Pmax) + (int64_t)Pmax * MPS_OBS_PATH_FEATURES + Pmax;
}

/* Actions of an observation with K slots: send from slot k (k < K), WAIT (K), and with
 * copies (an episode that takes them, docs/model.md 7.1) a copy from slot k (K + 1 + k).
 * With copies the slots also hold blocks with bytes in flight (flight_set: mps_track_flight
 * must be on for them to appear). */
static inline int mps_obs_actions(int copies, int K) { return copies ? 2 * K + 1 : K + 1; }

/* Observation of the pending decision (zeros when the episode is over); mask has
 * mps_obs_actions entries (WAIT always allowed; a send only for a sendable block, a copy
 * only where the deciding path may copy one of the block's pieces), slot_blocks has K
 * (-1 for an empty slot). */
void mps_obs_write(mps_sim *s, int K, int Pmax, int copies, float *obs, uint8_t *mask, int32_t *slot_blocks);

/* Maps an action (mps_obs_actions) to a decision, applies it, advances to the next
 * decision and writes its observation. An action outside the actions or one the mask
 * refuses returns -1 and changes nothing, unless invalid_as_wait, which turns it into
 * WAIT. Returns 0, -1, or -2 on a core error. */
int mps_obs_step(mps_sim *s, int K, int Pmax, int copies, int64_t action, int invalid_as_wait, float *obs,
                 uint8_t *mask, int32_t *slot_blocks, double *reward, uint8_t *done);

#endif
