/*
 * Native policies: schedulers compiled into the core so that a whole episode runs in C
 * (docs/model.md section 10). Each has a readable Python specification in
 * mpsched.baselines that makes the same decisions through the step API.
 *
 * A policy is a definition (name, named parameters, state size, reset, decide) in one of
 * the family files under policies/, listed once in policies/twins.def. It reads the sender
 * state a Python policy sees through mpsched.envs.Observation: blocks (s->blk and the
 * cold per-block arrays, for indices below s->n_arrived), paths (s->paths[0..n_paths),
 * including can_send, srtt_ns, rttvar_ns, cwnd_bytes, inflight_bytes, recovery, rate_bps
 * and link_rate_bps), the sendable set, the blocks with bytes to send whatever the
 * receive window (s->todo_set, = Observation.remaining_bytes > 0) and s->now; it may
 * cancel blocks (mps_cancel).
 */
#ifndef MPSCHED_POLICY_H
#define MPSCHED_POLICY_H

#include <stddef.h>

#include "sim.h"

/* One parameter of a native policy: its name (the Python class's constructor argument)
 * and the closed range of values the twin accepts, the same range the Python class
 * accepts (checked before an episode runs, and against the class by the twin tests). */
typedef struct mps_param_def {
    const char *name;
    double min, max;
} mps_param_def;

/* n, array: the parameter list of a definition, counted from the array. */
#define MPS_PARAMS(array) (int)(sizeof(array) / sizeof((array)[0])), (array)
#define MPS_NO_PARAMS 0, NULL

typedef struct mps_policy_def {
    const char *name;
    /* parameters, in the order of the Python class's constructor (which the registry
     * checks when mpsched.baselines is imported) */
    int n_params;
    const mps_param_def *params;
    /* bytes of per-episode state for this episode; NULL: none */
    size_t (*state_bytes)(const mps_sim *s);
    /* called at the start of an episode with zeroed state; NULL: nothing to do */
    void (*reset)(mps_sim *s, mps_policy *pol);
    /* the block to send on path j (or MPS_WAIT, or MPS_COPY(piece) when copies is set);
     * may cancel blocks through mps_cancel */
    int32_t (*decide)(mps_sim *s, mps_policy *pol, int j);
    /* 1: the policy sends copies of pieces in flight (docs/model.md 7.1); the episode is
     * run with copies on */
    int copies;
} mps_policy_def;

/* Every native policy, in the order of policies/twins.def. */
extern const mps_policy_def *const mps_policy_table[];
extern const int mps_policy_count;

/* The definition with this name, or NULL. */
const mps_policy_def *mps_policy_find(const char *name);
/* The index of the first parameter outside its range (or not finite), or -1. */
int mps_policy_bad_param(const mps_policy_def *def, const double *param);
/* Prepares pol to run def on s with n parameters (n must equal def->n_params).
 * Returns 0, or -1 when memory runs out. Keeps pol->state for reuse when large enough. */
int mps_policy_prepare(mps_policy *pol, const mps_policy_def *def, const double *param, int n, const mps_sim *s);
void mps_policy_free(mps_policy *pol);

/* Helpers shared by the families. */

/* Round-robin's turn (blind round-robin, DAPS Algorithm 1): the first ready path at or
 * after *cursor sends the oldest sendable block and moves the cursor past itself; any
 * other deciding path waits. */
int32_t mps_round_robin_turn(mps_sim *s, int64_t *cursor, int j);
/* The sendable block with the earliest (deadline, index), or -1. */
int32_t mps_earliest_deadline_sendable(mps_sim *s);
/* Ready path with the smallest (srtt, index) (the MinRTT choice), or -1 if none. */
int mps_min_rtt_ready_path(const mps_sim *s);
/* A path's congestion window in bytes; for an ideal path, what its rate fills in one
 * srtt (mpsched.baselines.mptcp.window_bytes). */
double mps_window_bytes(const mps_path *p);

#endif
