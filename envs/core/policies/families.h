/* The native policies of the family files under policies/ (listed in twins.def). */
#ifndef MPSCHED_POLICY_FAMILIES_H
#define MPSCHED_POLICY_FAMILIES_H

#include "../policy.h"

#define MPS_TWIN(symbol) extern const mps_policy_def mps_policy_##symbol;
#include "twins.def"
#undef MPS_TWIN

#endif
