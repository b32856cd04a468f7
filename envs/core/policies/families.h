/* The native policies of each family file (policy.c lists them in its table). */
#ifndef MPSCHED_POLICY_FAMILIES_H
#define MPSCHED_POLICY_FAMILIES_H

#include "../policy.h"

/* classic.c: MinRTT, round-robin */
extern const mps_policy_def mps_policy_minrtt, mps_policy_rr;

/* deadline.c: EDF and DTP's block choice */
extern const mps_policy_def mps_policy_edf, mps_policy_dtp;

/* dams.c: DEMS, DAMS, DAMS-C, DAMS-Robust */
extern const mps_policy_def mps_policy_dems, mps_policy_dams, mps_policy_dams_c, mps_policy_dams_robust;

#endif
