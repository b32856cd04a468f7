"""The offline optimum of a scenario: :func:`solve`.

One call builds the episode, cuts time into slots (:mod:`mpsched.solvers.problem`),
picks an exact method and returns a :class:`SolveResult`: the best schedule found
(``value``), a proven bound on the model's optimum (``upper_bound``), both as weighted
on-time rates on the scale of ``summary["weighted_on_time_rate"]``, the chosen blocks and
a whole-byte allocation per block, path and slot.

Methods (``backend``):

- ``"sweep"``: the exact dynamic programme of :mod:`mpsched.solvers.sweep` for agreeable
  windows on at most two bottlenecks (every built-in scenario); ``value == upper_bound``;
- ``"highs"``, ``"scip"``, ``"cpsat"``: the MILP of :mod:`mpsched.solvers.milp`, warm
  started from the on-time blocks of baseline schedulers so that a time-limited solve
  is never worse than the best of them, and (``assist``) from the sweep's optima on a
  restriction and on relaxations of the problem, whose least optimum bounds it;
- ``"exhaustive"``: every subset (at most 12 usable blocks), the test oracle;
- ``"auto"`` (default): the sweep where it applies, else HiGHS, which is skipped when
  a start is within ``relative_gap`` of the bound.

``model="lp"`` solves the LP relaxation of the relaxed model with GLOP: a quick bound,
with the blocks the LP takes whole (repaired by maximum flow) as its schedule.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..envs.episode import Episode, build_episode
from ..envs.errors import MpschedError
from ..envs.scenario import Scenario
from ..envs.scenarios import resolve
from .exhaustive import MAX_EXHAUSTIVE_BLOCKS, solve_exhaustive
from .flow import Allocation, allocate, repair
from .milp import BACKENDS as MILP_BACKENDS
from .milp import solve_milp
from .problem import SlotProblem, build_problem, latest_service
from .sweep import applicable, solve_sweep, sweep_heuristic, sweep_relaxations

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
    "MAX_SLOTS",
    "heuristic_sets",
    "solve_problem",
    "ProblemSolution",
]

STATUSES: tuple[str, ...] = ("optimal", "feasible", "infeasible", "empty")
SOLVE_MODELS: tuple[str, ...] = ("relaxed", "conservative", "lp")
SOLVE_BACKENDS: tuple[str, ...] = ("auto", "sweep", "highs", "scip", "cpsat", "exhaustive")
MAX_VARIABLES = 2_000_000
"""Largest MILP (allocation variables) built by default: about 1 GB in OR-Tools' Python
model. ``max_variables`` raises it."""
MAX_SLOTS = 20_000_000
"""Largest number of slots (per bottleneck) of a slot problem."""
DEFAULT_WARM_START: tuple[str, ...] = ("dams", "edf")
DEFAULT_RELATIVE_GAP = 1e-6
"""Relative gap at which a solve stops by default: in effect, prove the optimum."""


class SolverError(MpschedError):
    """A scenario or setting the solvers cannot handle."""


class ModelTooLargeError(SolverError):
    """The model would not fit in memory; the message says which knob to turn."""


@dataclass(frozen=True)
class Progress:
    """What a running solve reports to a ``progress`` callback.

    Attributes
    ----------
    stage : str
        ``"build"``, ``"warm start"``, the backend's name, or ``"allocate"``.
    elapsed_s : float
        Since :func:`solve` started.
    value, bound : float or None
        Best weighted on-time rate and bound known so far, when the stage knows them.
    detail : str
        The stage's own words (e.g. the solver's latest log line).
    """

    stage: str
    elapsed_s: float
    value: float | None = None
    bound: float | None = None
    detail: str = ""


@dataclass
class SolveResult:
    """The outcome of :func:`solve`.

    Attributes
    ----------
    scenario : str
    seed : int
    model : str
        ``"relaxed"``, ``"conservative"`` or ``"lp"``.
    backend : str
        The method that produced the result.
    slot_ns : int
    status : str
        ``"optimal"`` (value equals the proven bound), ``"feasible"`` (stopped at the time
        limit, or the LP: a gap may remain), ``"infeasible"`` (no block can be on time, even
        alone) or ``"empty"`` (no block carries weight).
    value : float
        Weighted on-time rate of the returned schedule (in the model).
    upper_bound : float
        Proven upper bound on the model's optimum, same scale. For the relaxed model it
        bounds the weighted on-time rate of every policy in the simulator.
    total_weight : float
        The scale: the sum of all block weights.
    solve_s : float
        Wall-clock time of the whole call.
    chosen : numpy.ndarray
        Blocks on time in the returned schedule.
    allocation : Allocation
        Whole bytes per block, path and slot.
    problem : SlotProblem
    warm_start : dict
        Value (in the model) of each heuristic the MILP was started from.
    message : str
        A sentence on how the solve ended (and what to change if it fell short).
    """

    scenario: str
    seed: int
    model: str
    backend: str
    slot_ns: int
    status: str
    value: float
    upper_bound: float
    total_weight: float
    solve_s: float
    chosen: np.ndarray
    allocation: Allocation
    problem: SlotProblem
    warm_start: dict[str, float] = field(default_factory=dict)
    message: str = ""

    @property
    def gap(self) -> float:
        """Relative gap ``1 - value / upper_bound`` (0 when both are 0)."""
        return 0.0 if self.upper_bound <= 0 else max(0.0, 1.0 - self.value / self.upper_bound)

    @property
    def value_weight(self) -> float:
        return self.value * self.total_weight

    @property
    def bound_weight(self) -> float:
        return self.upper_bound * self.total_weight

    def allocation_table(self) -> pd.DataFrame:
        """One row per (block, path, slot) with bytes: ``block``, ``path``, ``slot``,
        ``slot_start_ns`` and ``bytes``."""
        a = self.allocation
        return pd.DataFrame({"block": a.block, "path": a.path, "slot": a.slot,
                             "slot_start_ns": a.slot * self.slot_ns, "bytes": a.bytes})

    def row(self) -> dict[str, Any]:
        """A flat record for result tables."""
        return {
            "scenario": self.scenario, "seed": self.seed, "model": self.model, "backend": self.backend,
            "slot_ms": self.slot_ns / 1e6, "status": self.status, "value": self.value,
            "upper_bound": self.upper_bound, "gap": self.gap, "total_weight": self.total_weight,
            "value_weight": self.value_weight, "bound_weight": self.bound_weight,
            "chosen_blocks": int(len(self.chosen)), "n_blocks": self.problem.n_blocks,
            "variables": self.problem.n_variables, "solve_s": self.solve_s, "message": self.message,
            **{f"warm_start_{k}": v for k, v in self.warm_start.items()},
        }

    def __repr__(self) -> str:
        return (f"SolveResult(scenario={self.scenario!r}, model={self.model!r}, backend={self.backend!r}, "
                f"status={self.status!r}, value={self.value:.6f}, upper_bound={self.upper_bound:.6f}, "
                f"solve_s={self.solve_s:.2f})")


def _check_args(slot_ms: float, time_limit_s: float, threads: int, model: str, backend: str,
                relative_gap: float = DEFAULT_RELATIVE_GAP) -> None:
    number = isinstance(slot_ms, (int, float)) and not isinstance(slot_ms, bool)
    if not number or not (slot_ms > 0 and math.isfinite(slot_ms)):
        raise SolverError(f"slot_ms: got {slot_ms!r}; expected a positive number of milliseconds")
    if not isinstance(time_limit_s, (int, float)) or isinstance(time_limit_s, bool) or not time_limit_s > 0:
        raise SolverError(f"time_limit_s: got {time_limit_s!r}; expected a positive number of seconds")
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise SolverError(f"threads: got {threads!r}; expected an integer >= 1")
    if model not in SOLVE_MODELS:
        raise SolverError(f"model: got {model!r}; expected one of {', '.join(SOLVE_MODELS)}")
    if backend not in SOLVE_BACKENDS:
        raise SolverError(f"backend: got {backend!r}; expected one of {', '.join(SOLVE_BACKENDS)}")
    if not isinstance(relative_gap, (int, float)) or isinstance(relative_gap, bool) or \
            not 0 <= relative_gap < 1:
        raise SolverError(f"relative_gap: got {relative_gap!r}; expected a number in [0, 1) (0.01 stops within 1 %)")


def _estimate(episode: Episode, slot_ns: int) -> tuple[int, int]:
    """Slots and allocation variables of the slot problem, from the episode alone (an
    upper estimate: the relaxed windows, one variable per path)."""
    inputs = episode.core_inputs()
    arrival = episode.blocks.arrival_ns.astype(np.int64)
    deadline = np.minimum(episode.blocks.deadline_ns.astype(np.int64), episode.end_ns)
    latest = np.stack([latest_service(deadline, p, "relaxed") for p in inputs["paths"]], axis=1)
    span = np.where(latest >= arrival[:, None], latest // slot_ns - arrival[:, None] // slot_ns + 1, 0)
    n_slots = int(latest.max() // slot_ns + 1) if latest.size else 0
    return max(n_slots, 0), int(span.sum())


def heuristic_sets(scenario: Scenario, seed: int, names: Sequence[str]) -> dict[str, np.ndarray]:
    """The on-time blocks of each named baseline in the simulator (the scenario as given)."""
    from ..envs.simulate import simulate

    out = {}
    for name in names:
        result = simulate(scenario, name, seed=seed)
        out[name] = np.flatnonzero(result.blocks["on_time"].to_numpy())
    return out


def _weight(problem: SlotProblem, chosen: np.ndarray) -> float:
    return float(problem.weight[chosen].sum()) if len(chosen) else 0.0


@dataclass(frozen=True)
class ProblemSolution:
    """The outcome of :func:`solve_problem` (weights, not rates).

    Attributes
    ----------
    status : str
        One of :data:`STATUSES`.
    backend : str
        The method that produced it.
    chosen : numpy.ndarray
        Blocks of the best feasible set found.
    value_weight, bound_weight : float
        Its weight and a proven bound on the optimum.
    message : str
    warm_start : dict
        Weight of each warm-start set (after repair), by name.
    """

    status: str
    backend: str
    chosen: np.ndarray
    value_weight: float
    bound_weight: float
    message: str
    warm_start: dict[str, float] = field(default_factory=dict)


def solve_problem(
    problem: SlotProblem,
    *,
    backend: str = "auto",
    time_limit_s: float = 60.0,
    threads: int = 2,
    warm_start: Callable[[], Mapping[str, np.ndarray]] | None = None,
    max_variables: int = MAX_VARIABLES,
    slot_ms: float | None = None,
    name: str = "problem",
    assist: bool = True,
    relative_gap: float = DEFAULT_RELATIVE_GAP,
    progress: Callable[[str, float | None, float | None, str], None] | None = None,
) -> ProblemSolution:
    """Solve a slot problem (the core of :func:`solve`, for problems built by hand).

    Parameters
    ----------
    problem : SlotProblem
    backend : str
        One of :data:`SOLVE_BACKENDS`; ``"glop"`` gives the LP relaxation.
    time_limit_s, threads
        As in :func:`solve`.
    warm_start : callable, optional
        Returns candidate sets (block indices) by name, for the MILP's start; asked only
        when a MILP runs. In the relaxed model each set must fit as it is.
    max_variables : int
    slot_ms : float, optional
        Only for the wording of errors.
    name : str
        Only for the wording of errors.
    assist : bool
        Around a MILP, also run the sweep on a restriction of the problem (a start) and
        on relaxations (:func:`mpsched.solvers.sweep.sweep_relaxations`: the least of
        their optima is a bound, and each one's optimal set, repaired by maximum flow,
        another start); with ``backend="auto"`` the MILP is skipped when a start is
        within ``relative_gap`` of the bound.
    relative_gap : float
        Stop once ``1 - value / bound`` is at most this (the MILP's own stopping rule too).
    progress : callable, optional
        Called with (stage, value, bound, detail); value and bound are rates.

    Returns
    -------
    ProblemSolution
    """
    start = time.monotonic()
    total = problem.total_weight
    slot_ms = problem.slot_ns / 1e6 if slot_ms is None else slot_ms
    explicit = backend not in ("auto", "sweep")

    def report(stage: str, value: float | None = None, bound: float | None = None, detail: str = "") -> None:
        if progress is not None:
            progress(stage, value, bound, detail)

    none = np.zeros(0, dtype=np.int64)
    if total <= 0:
        return ProblemSolution("empty", "none", none, 0.0, 0.0, "no block carries weight: nothing to optimize")
    if not problem.usable().any():
        return ProblemSolution("infeasible", "none", none, 0.0, 0.0,
                               "no block can meet its deadline on any path, even alone: the value is 0")
    if backend == "glop":
        if problem.n_variables > max_variables:
            raise _too_large(name, problem.n_variables, max_variables, slot_ms)
        report("glop")
        lp = solve_milp(problem, "glop", time_limit_s, threads)
        if not lp.optimal:
            raise SolverError(f"{name}: the LP stopped before its optimum ({lp.reason}); "
                              f"raise the time limit or the slot")
        whole, _ = repair(problem, np.flatnonzero(lp.y > 1.0 - 1e-6))
        return ProblemSolution("feasible", "glop", whole, _weight(problem, whole), lp.bound,
                               "LP relaxation: upper_bound is the LP optimum, value the blocks it takes whole")

    if backend in ("auto", "sweep"):
        reason = applicable(problem)
        if reason is None:
            report("sweep")
            found = solve_sweep(problem, deadline=start + time_limit_s,
                                progress=lambda done, n, w: report(
                                    "sweep", detail=f"{done}/{n} blocks, best weight so far {w:g}"))
            if found is not None:
                return ProblemSolution("optimal", "sweep", found.chosen, found.weight, found.weight,
                                       f"exact (sweep over {problem.n_blocks} blocks, "
                                       f"at most {found.max_states} states)")
            if backend == "sweep":
                raise SolverError(f"{name}: the sweep gave up (time or state limit); use backend='highs'")
        elif backend == "sweep":
            raise SolverError(f"{name}: the sweep cannot solve this scenario: it has {reason}; "
                              f"use backend='highs' (or 'auto')")
        backend = "highs"

    if backend == "exhaustive":
        n_usable = int(problem.usable().sum())
        if n_usable > MAX_EXHAUSTIVE_BLOCKS:
            raise SolverError(f"{name}: exhaustive search takes at most {MAX_EXHAUSTIVE_BLOCKS} usable blocks; "
                              f"this one has {n_usable}")
        report("exhaustive")
        ex = solve_exhaustive(problem)
        return ProblemSolution("optimal", "exhaustive", ex.chosen, ex.weight, ex.weight,
                               f"exact ({ex.checked} subsets checked)")

    if backend not in MILP_BACKENDS:
        raise SolverError(f"backend: got {backend!r}; expected one of {', '.join(SOLVE_BACKENDS)}")
    if problem.n_variables > max_variables:
        raise _too_large(name, problem.n_variables, max_variables, slot_ms)
    report("warm start")
    candidates = dict(warm_start() if warm_start is not None else {})
    relaxation: float | None = None
    if assist:
        # the sweep on a restriction (a start) and on relaxations (a bound, and their
        # optimal sets made to fit: starts) of the problem
        restricted = sweep_heuristic(problem, deadline=start + time_limit_s / 4)
        if restricted is not None:
            if not allocate(problem, restricted).complete(problem, restricted):
                raise RuntimeError(f"{name}: the sweep's restriction chose a set that does not fit (a solver bug)")
            candidates["sweep-restriction"] = restricted
        relaxations = sweep_relaxations(problem, deadline=start + time_limit_s / 4)
        if relaxations:
            relaxation = min(r.weight for r in relaxations)
        for i, found in enumerate(relaxations):
            # relaxations that chose the same set need one repair (one maximum flow or more)
            if not any(np.array_equal(found.chosen, other.chosen) for other in relaxations[:i]):
                candidates[f"sweep-relaxation-{i + 1}"] = found.chosen
    warm: dict[str, float] = {}
    best = none
    for label, candidate in candidates.items():
        candidate = np.asarray(candidate, dtype=np.int64)
        candidate = candidate[problem.usable()[candidate]]
        if problem.model == "relaxed" and not label.startswith("sweep-"):
            # the relaxed model holds every simulated schedule (module problem): no repair
            if not allocate(problem, candidate).complete(problem, candidate):
                raise RuntimeError(f"{name}: {label}'s on-time blocks do not fit the relaxed model; "
                                   f"the upper-bound argument of mpsched.solvers.problem is broken")
        else:
            candidate, _ = repair(problem, candidate)
        warm[label] = _weight(problem, candidate) / total
        if _weight(problem, candidate) > _weight(problem, best):
            best = candidate
    if relaxation is not None and not explicit:
        if _weight(problem, best) >= relaxation - 1e-9 * total:
            return ProblemSolution("optimal", "sweep", best, _weight(problem, best), relaxation,
                                   "exact: a start from the sweep reaches the bound of its relaxations", warm)
        if _weight(problem, best) >= (1.0 - relative_gap) * relaxation:
            gap = 1.0 - _weight(problem, best) / relaxation
            return ProblemSolution("feasible", "sweep", best, _weight(problem, best), relaxation,
                                   f"a start from the sweep is within {gap:.3%} of the bound of its relaxations "
                                   f"(relative_gap {relative_gap:g}); no MILP run", warm)
    report(backend, value=_weight(problem, best) / total,
           bound=None if relaxation is None else relaxation / total)
    remaining = max(1.0, time_limit_s - (time.monotonic() - start))
    outcome = solve_milp(problem, backend, remaining, threads, hint=best, relative_gap=max(relative_gap, 1e-6),
                         log=lambda line: report(backend, detail=line.strip()) if line.strip() else None)
    chosen = best
    if outcome.weight is not None:
        candidate = np.flatnonzero(outcome.y > 0.5)
        if not allocate(problem, candidate).complete(problem, candidate):  # a float solver's tolerance
            candidate, _ = repair(problem, candidate)
        if _weight(problem, candidate) > _weight(problem, chosen):
            chosen = candidate
    value_w = _weight(problem, chosen)
    bound = outcome.bound if math.isfinite(outcome.bound) else float(problem.weight[problem.usable()].sum())
    if relaxation is not None:
        bound = min(bound, relaxation)
    if (outcome.optimal and outcome.weight is not None and value_w >= outcome.weight - 1e-9 * total) or \
            value_w >= bound - 1e-9 * total:
        return ProblemSolution("optimal", backend, chosen, value_w, max(bound, value_w),
                               f"{backend} proved the optimum", warm)
    gap = 1.0 - value_w / bound if bound > 0 else 0.0
    return ProblemSolution("feasible", backend, chosen, value_w, max(bound, value_w),
                           f"{backend} stopped ({outcome.reason}) after {outcome.solve_s:.1f} s with a relative gap "
                           f"of {gap:.2%}; raise the time limit (--time-limit) or the slot (--slot-ms)", warm)


def solve(
    scenario: Scenario | str | Path | Mapping[str, Any],
    *,
    slot_ms: float = 10.0,
    time_limit_s: float = 60.0,
    threads: int = 2,
    model: str = "relaxed",
    seed: int | None = None,
    backend: str = "auto",
    warm_start: Sequence[str] = DEFAULT_WARM_START,
    max_variables: int = MAX_VARIABLES,
    assist: bool = True,
    relative_gap: float = DEFAULT_RELATIVE_GAP,
    progress: Callable[[Progress], None] | None = None,
) -> SolveResult:
    """The offline optimum of one episode of a scenario.

    Parameters
    ----------
    scenario : Scenario, str, Path or mapping
        A scenario, a built-in name, a YAML file or a scenario mapping.
    slot_ms : float
        Slot length (default 10 ms).
    time_limit_s : float
        Wall-clock budget of the MILP (the sweep takes well under it).
    threads : int
        Solver threads (SCIP and CP-SAT).
    model : {"relaxed", "conservative", "lp"}
        The relaxed model bounds every policy; the conservative one is a schedule a
        sender can follow; ``"lp"`` is the LP relaxation of the relaxed model.
    seed : int, optional
        Episode seed (the scenario's by default).
    backend : {"auto", "sweep", "highs", "scip", "cpsat", "exhaustive"}
        Ignored with ``model="lp"`` (GLOP).
    warm_start : sequence of str
        Baselines whose on-time blocks start the MILP (made feasible by maximum flow).
    max_variables : int
        Refuse MILPs with more allocation variables (see :data:`MAX_VARIABLES`).
    assist : bool
        Around a MILP, also run the sweep on a restriction (a start) and on relaxations
        (a bound, and starts) of the problem (see :func:`solve_problem`).
    relative_gap : float
        Stop once the relative gap ``1 - value / upper_bound`` is at most this (default
        ``1e-6``: prove the optimum or use the time limit; ``0.01`` accepts 1 %).
    progress : callable, optional
        Called with :class:`Progress` while the solve runs.

    Returns
    -------
    SolveResult

    Raises
    ------
    SolverError
        For bad arguments, or a backend that cannot take the problem.
    ModelTooLargeError
        When the model would not fit; the message names the knob (``slot_ms``, the
        horizon, ``max_variables``).
    """
    start = time.monotonic()
    _check_args(slot_ms, time_limit_s, threads, model, backend, relative_gap)

    def report(stage: str, value: float | None = None, bound: float | None = None, detail: str = "") -> None:
        if progress is not None:
            progress(Progress(stage, time.monotonic() - start, value, bound, detail))

    sc = resolve(scenario)
    episode = build_episode(sc, seed)
    slot_ns = max(1, int(round(slot_ms * 1e6)))
    n_slots, n_vars = _estimate(episode, slot_ns)
    links = len(episode.link_schedules)
    if n_slots > MAX_SLOTS:
        raise ModelTooLargeError(
            f"{sc.name}: {n_slots:,} slots of {slot_ms:g} ms per bottleneck (at most {MAX_SLOTS:,}); "
            f"raise slot_ms (--slot-ms) or shorten the scenario (duration_s / horizon_s)")
    use = "glop" if model == "lp" else backend
    if use not in ("auto", "sweep", "exhaustive") and n_vars > max_variables:
        raise _too_large(sc.name, n_vars, max_variables, slot_ms)
    report("build", detail=f"{n_slots * links:,} slot capacities, about {n_vars:,} variables")
    problem = build_problem(episode, slot_ns, "relaxed" if model == "lp" else model)
    out = solve_problem(
        problem, backend=use, time_limit_s=max(1.0, time_limit_s - (time.monotonic() - start)), threads=threads,
        warm_start=lambda: heuristic_sets(sc, episode.seed, warm_start), max_variables=max_variables,
        slot_ms=slot_ms, name=sc.name, assist=assist, relative_gap=relative_gap, progress=report)
    report("allocate", detail="maximum flow")
    alloc = allocate(problem, out.chosen)
    if not alloc.complete(problem, out.chosen):
        raise RuntimeError(f"{sc.name}: {out.backend}'s chosen set does not fit its slots (a solver bug)")
    total = problem.total_weight
    rate = (lambda w: w / total) if total > 0 else (lambda w: 0.0)
    return SolveResult(sc.name, episode.seed, model, out.backend, slot_ns, out.status, rate(out.value_weight),
                       rate(out.bound_weight), total, time.monotonic() - start, out.chosen, alloc, problem,
                       out.warm_start, out.message)


def _too_large(name: str, n_vars: int, max_variables: int, slot_ms: float) -> ModelTooLargeError:
    factor = n_vars / max_variables
    return ModelTooLargeError(
        f"{name}: the MILP would have about {n_vars:,} variables (limit {max_variables:,}, about "
        f"{n_vars * 500 / 2**30:.1f} GiB); raise slot_ms (--slot-ms {slot_ms * math.ceil(factor):g} would fit), "
        f"shorten the scenario, or raise max_variables if the memory is there")
