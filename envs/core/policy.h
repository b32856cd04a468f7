/*
 * Native policies: schedulers compiled into the core so that a whole episode runs in C
 * (docs/model.md section 10). Each has a readable Python specification in
 * mpsched.baselines that makes the same decisions through the step API.
 */
#ifndef MPSCHED_POLICY_H
#define MPSCHED_POLICY_H

#include "sim.h"

enum mps_policy_id { MPS_POLICY_MINRTT = 0, MPS_POLICY_RR = 1, MPS_POLICY_COUNT };

/* Registry names, indexed by enum mps_policy_id. */
extern const char *const mps_policy_names[MPS_POLICY_COUNT];

void mps_policy_reset(mps_policy *pol);
/* The block to send on path j (or MPS_WAIT); may cancel blocks through mps_cancel. */
int32_t mps_policy_decide(mps_sim *s, mps_policy *pol, int j);

#endif
