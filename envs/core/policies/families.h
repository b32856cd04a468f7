/* The native policies of each family file (policy.c lists them in its table). */
#ifndef MPSCHED_POLICY_FAMILIES_H
#define MPSCHED_POLICY_FAMILIES_H

#include "../policy.h"

/* classic.c: MinRTT, round-robin */
extern const mps_policy_def mps_policy_minrtt, mps_policy_rr;

/* deadline.c: EDF and DTP's block choice */
extern const mps_policy_def mps_policy_edf, mps_policy_dtp;

/* mptcp.c: ECF and BLEST */
extern const mps_policy_def mps_policy_ecf, mps_policy_blest;
/* srpt.c: SRPT-ECF, SA-ECF and SRPT-minRTT (seed 004) */
extern const mps_policy_def mps_policy_srpt_ecf, mps_policy_sa_ecf, mps_policy_srpt_minrtt;
/* daps.c: DAPS with blind round-robin as its fallback */
extern const mps_policy_def mps_policy_daps;
/* rtx.c: seed 002's LPC, LET and the RTX-aware SPDX, LPCX, LETX */
extern const mps_policy_def mps_policy_lpc, mps_policy_let, mps_policy_spdx, mps_policy_lpcx, mps_policy_letx;
/* dams.c: DEMS, DAMS, DAMS-C, DAMS-Robust */
extern const mps_policy_def mps_policy_dems, mps_policy_dams, mps_policy_dams_c, mps_policy_dams_robust;

#endif
