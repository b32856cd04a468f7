"""Offline optima for the multipath deadline problem.

Offline, every block and every bottleneck's bandwidth over time are known; the best
weighted on-time rate any scheduler could reach is then a combinatorial optimum.

- :func:`solve`: the optimum of the slot problem (:mod:`.problem`) in its relaxed model
  (an upper bound on every policy in the simulator), its conservative model (a schedule
  a sender can follow) or its LP relaxation, with the exact sweep (:mod:`.sweep`), a
  MILP (:mod:`.milp`: HiGHS, SCIP or CP-SAT) or exhaustive search (:mod:`.exhaustive`);
- :class:`Optimum`: the conservative schedule replayed in the packet simulator;
- :func:`optimum`: the achievable optimum, the best schedule simulated on the episode (that
  replay, every registered baseline, any candidates given), an
  :class:`~mpsched.envs.EpisodeResult` named ``optimum`` that carries the upper bound;
- :func:`gap_columns` and :func:`optimality_gaps`: every policy's gap to the optimum, as
  the interval between the best achieved schedule and the bound;
- :func:`best_ordering`, :func:`priority_schedule` and :func:`online_srpt_ecf`: the fluid
  model of SRPT-ECF [jonglez20] (:mod:`.orderings`), exact, with the offline enumeration of
  priority orderings of its Sec. IV-B.

>>> from mpsched.solvers import solve
>>> result = solve("dams-rtt-40", time_limit_s=60)  # doctest: +SKIP
>>> result.status, result.value, result.upper_bound  # doctest: +SKIP
('optimal', 1.0, 1.0)
"""

from .exhaustive import solve_exhaustive
from .flow import Allocation, allocate, repair
from .gaps import gap_columns, optimality_gaps
from .orderings import FluidPaths, FluidSchedule, best_ordering, online_srpt_ecf, priority_schedule
from .problem import MODELS, SlotProblem, build_problem
from .replay import OfflineOptimum, Optimum, baseline_candidates, optimum, with_ideal_cc
from .solve import (
    MAX_VARIABLES,
    SOLVE_BACKENDS,
    SOLVE_MODELS,
    STATUSES,
    ModelTooLargeError,
    Progress,
    SolverError,
    SolveResult,
    solve,
)
from .sweep import solve_sweep

__all__ = [
    "solve",
    "SolveResult",
    "Progress",
    "SolverError",
    "ModelTooLargeError",
    "STATUSES",
    "SOLVE_MODELS",
    "SOLVE_BACKENDS",
    "MAX_VARIABLES",
    "Optimum",
    "OfflineOptimum",
    "optimum",
    "baseline_candidates",
    "with_ideal_cc",
    "gap_columns",
    "optimality_gaps",
    "SlotProblem",
    "build_problem",
    "MODELS",
    "Allocation",
    "allocate",
    "repair",
    "solve_sweep",
    "solve_exhaustive",
    "FluidPaths",
    "FluidSchedule",
    "priority_schedule",
    "best_ordering",
    "online_srpt_ecf",
]
