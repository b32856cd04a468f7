"""The slot problem as a mixed-integer programme, solved with OR-Tools.

Variables: ``y_b`` in {0, 1} (block ``b`` is on time) for every usable block, and
``x_bkt >= 0`` bytes of block ``b`` on bottleneck ``k`` in slot ``t`` for the slots its
paths through ``k`` allow (see :func:`mpsched.solvers.flow.link_windows`; paths that
share a bottleneck share its capacity, so one variable per bottleneck suffices)::

    maximize   sum_b w_b y_b
    subject to sum_{k,t} x_bkt = size_b y_b          for every block
               sum_b x_bkt <= cap_kt                 for every bottleneck and slot
               0 <= x_bkt <= min(size_b, cap_kt)

Backends:

- ``highs``: MathOpt with HiGHS, ``x`` continuous (integral solutions follow by
  maximum flow);
- ``scip``: MathOpt with SCIP, the same model;
- ``cpsat``: CP-SAT with ``x`` integer (the same optimum: the capacities are integers
  and a fixed set is a transportation problem), weights scaled to integers;
- ``glop``: the LP relaxation (``y`` in [0, 1]) with GLOP, a quick upper bound.

A warm start (a feasible set) is passed to SCIP and CP-SAT as a solution hint.
"""

from __future__ import annotations

import datetime
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .flow import link_windows
from .problem import SlotProblem

__all__ = ["BACKENDS", "MilpOutcome", "solve_milp", "count_variables"]

BACKENDS: tuple[str, ...] = ("highs", "scip", "cpsat", "glop")
_CPSAT_SCALE = 1000  # weight units per objective unit in CP-SAT


@dataclass(frozen=True)
class MilpOutcome:
    """What a MILP (or LP) solver returned.

    Attributes
    ----------
    optimal : bool
        The solver proved its solution optimal (for ``glop``: the LP optimum).
    weight : float or None
        Weight of the best integral solution (``None`` if none was found; for ``glop``
        the LP objective).
    bound : float
        Proven upper bound on the weight (``inf`` when the solver proved nothing).
    y : numpy.ndarray
        Value of ``y_b`` per block of the problem (0 for unusable blocks).
    solve_s : float
        Wall-clock time in the solver.
    reason : str
        The solver's termination reason.
    """

    optimal: bool
    weight: float | None
    bound: float
    y: np.ndarray
    solve_s: float
    reason: str


def _columns(problem: SlotProblem) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The allocation variables: (block, bottleneck index into capacity, slot, upper bound)."""
    links, first, end, _ = link_windows(problem)
    usable = np.flatnonzero(problem.usable())
    blocks, link, slot = [], [], []
    for i, k in enumerate(links):
        lo = first[usable]
        count = np.maximum(end[usable, i] - lo, 0)
        owner = np.repeat(usable, count)
        offset = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
        blocks.append(owner)
        link.append(np.full(len(owner), k, dtype=np.int64))
        slot.append(first[owner] + offset)
    b = np.concatenate(blocks) if blocks else np.zeros(0, dtype=np.int64)
    k = np.concatenate(link) if link else np.zeros(0, dtype=np.int64)
    t = np.concatenate(slot) if slot else np.zeros(0, dtype=np.int64)
    ub = np.minimum(problem.size_bytes[b], problem.capacity[k, t]) if len(b) else np.zeros(0, dtype=np.int64)
    keep = ub > 0
    return b[keep], k[keep], t[keep], ub[keep]


def count_variables(problem: SlotProblem) -> int:
    """Variables the MILP of ``problem`` has (allocation variables plus one per usable block);
    an upper estimate is :attr:`SlotProblem.n_variables`, known before any model is built."""
    return len(_columns(problem)[0]) + int(problem.usable().sum())


class _Ticker:
    """Calls ``log`` with the elapsed time every second from a background thread."""

    def __init__(self, log: Callable[[str], None], label: str) -> None:
        self._stop = threading.Event()
        start = time.monotonic()

        def run() -> None:
            while not self._stop.wait(1.0):
                log(f"{label} running, {time.monotonic() - start:.0f} s")

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _groups(keys: np.ndarray) -> list[np.ndarray]:
    """Indices of equal keys, grouped (keys: int64)."""
    order = np.argsort(keys, kind="stable")
    cuts = np.flatnonzero(np.diff(keys[order])) + 1
    return np.split(order, cuts)


def solve_milp(problem: SlotProblem, backend: str = "highs", time_limit_s: float = 60.0, threads: int = 2,
               hint: np.ndarray | None = None, relative_gap: float = 1e-6,
               log: Callable[[str], None] | None = None) -> MilpOutcome:
    """Solve the slot problem's MILP (or its LP relaxation with ``backend="glop"``).

    Parameters
    ----------
    problem : SlotProblem
    backend : {"highs", "scip", "cpsat", "glop"}
    time_limit_s : float
        Wall-clock budget of the call, building the model included.
    threads : int
        Worker threads (SCIP and CP-SAT; HiGHS's branch and bound runs on one).
    hint : numpy.ndarray, optional
        Block indices of a feasible set, passed to the solver as a starting solution.
    relative_gap : float
        Stop once ``(bound - best) / bound`` is below this.
    log : callable, optional
        Receives the solver's log lines as they come.

    Returns
    -------
    MilpOutcome
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}; got {backend!r}")
    deadline = time.monotonic() + time_limit_s
    columns = _columns(problem)
    if backend == "cpsat":
        return _solve_cpsat(problem, columns, deadline, threads, hint, relative_gap, log)
    return _solve_mathopt(problem, columns, backend, deadline, threads, hint, relative_gap, log)


def _solve_mathopt(problem: SlotProblem, columns: tuple[np.ndarray, ...], backend: str, deadline: float,
                   threads: int, hint: np.ndarray | None, relative_gap: float,
                   log: Callable[[str], None] | None) -> MilpOutcome:
    from ortools.math_opt.python import mathopt

    blocks, link, slot, ub = columns
    usable = np.unique(blocks)  # a usable block whose slots all have no capacity cannot be on time
    integer = backend != "glop"
    model = mathopt.Model(name="slot-problem")
    y = {int(b): model.add_variable(lb=0.0, ub=1.0, is_integer=integer, name=f"y{b}") for b in usable}
    x = [model.add_variable(lb=0.0, ub=float(u)) for u in ub.tolist()]
    for group in _groups(blocks):
        if len(group):
            b = int(blocks[group[0]])
            model.add_linear_constraint(mathopt.fast_sum(x[i] for i in group.tolist())
                                        == float(problem.size_bytes[b]) * y[b])
    n_slots = max(problem.n_slots, 1)
    for group in _groups(link * n_slots + slot):
        if len(group) > 1:
            cap = float(problem.capacity[link[group[0]], slot[group[0]]])
            if float(ub[group].sum()) > cap:
                model.add_linear_constraint(mathopt.fast_sum(x[i] for i in group.tolist()) <= cap)
    model.maximize(mathopt.fast_sum(float(problem.weight[b]) * v for b, v in y.items()))
    solver = {"highs": mathopt.SolverType.HIGHS, "scip": mathopt.SolverType.GSCIP,
              "glop": mathopt.SolverType.GLOP}[backend]
    params = mathopt.SolveParameters(
        time_limit=datetime.timedelta(seconds=max(deadline - time.monotonic(), 0.01)),
        threads=threads if backend == "scip" else None,
        relative_gap_tolerance=relative_gap if integer else None,
    )
    if backend == "scip":
        params.gscip.silence_output = True
    model_params = None
    # HiGHS (through MathOpt) given a start can keep running after the gap has closed, so
    # it gets none; the caller keeps the better of the start and the solver's solution
    if hint is not None and backend == "scip" and len(y):
        chosen = set(int(b) for b in hint)
        values = {v: (1.0 if b in chosen else 0.0) for b, v in y.items()}
        model_params = mathopt.ModelSolveParameters(solution_hints=[mathopt.SolutionHint(variable_values=values)])
    callback = None if log is None else (lambda lines: [log(line) for line in lines])
    ticker = None
    if backend == "scip" and log is not None:
        # SCIP's concurrent mode prints to stdout once a message callback is set: tick instead
        callback, ticker = None, _Ticker(log, "scip")
    start = time.monotonic()
    try:
        result = mathopt.solve(model, solver, params=params, model_params=model_params, msg_cb=callback)
    finally:
        if ticker is not None:
            ticker.stop()
    elapsed = time.monotonic() - start
    reason = result.termination.reason
    ok = reason in (mathopt.TerminationReason.OPTIMAL, mathopt.TerminationReason.FEASIBLE)
    y_value = np.zeros(problem.n_blocks)
    weight = None
    if ok and result.has_primal_feasible_solution():
        values = result.variable_values(list(y.values()))
        y_value[list(y.keys())] = values
        weight = float(result.objective_value())
    bound = float(result.termination.objective_bounds.dual_bound)
    if not integer and reason == mathopt.TerminationReason.OPTIMAL:
        bound = float(result.objective_value())
    if not ok and not math.isfinite(bound):
        bound = math.inf
    return MilpOutcome(reason == mathopt.TerminationReason.OPTIMAL, weight, bound, y_value, elapsed,
                       reason.name.lower())


def _solve_cpsat(problem: SlotProblem, columns: tuple[np.ndarray, ...], deadline: float, threads: int,
                 hint: np.ndarray | None, relative_gap: float, log: Callable[[str], None] | None) -> MilpOutcome:
    from ortools.sat.python import cp_model

    blocks, link, slot, ub = columns
    usable = np.unique(blocks)
    model = cp_model.CpModel()
    y = {int(b): model.new_bool_var(f"y{b}") for b in usable}
    x = [model.new_int_var(0, int(u), "") for u in ub.tolist()]
    for group in _groups(blocks):
        if len(group):
            b = int(blocks[group[0]])
            model.add(cp_model.LinearExpr.sum([x[i] for i in group.tolist()]) == int(problem.size_bytes[b]) * y[b])
    n_slots = max(problem.n_slots, 1)
    for group in _groups(link * n_slots + slot):
        if len(group) > 1:
            cap = int(problem.capacity[link[group[0]], slot[group[0]]])
            if int(ub[group].sum()) > cap:
                model.add(cp_model.LinearExpr.sum([x[i] for i in group.tolist()]) <= cap)
    # integer objective: weights in thousandths, rounded; the bound is corrected for the rounding
    scaled = {b: int(round(float(problem.weight[b]) * _CPSAT_SCALE)) for b in y}
    rounding = sum(abs(float(problem.weight[b]) - scaled[b] / _CPSAT_SCALE) for b in y)
    model.maximize(cp_model.LinearExpr.weighted_sum(list(y.values()), list(scaled.values())))
    if hint is not None:
        chosen = set(int(b) for b in hint)
        for b, v in y.items():
            model.add_hint(v, b in chosen)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(deadline - time.monotonic(), 0.01)
    solver.parameters.num_workers = max(int(threads), 1)
    solver.parameters.relative_gap_limit = relative_gap
    if log is not None:
        solver.parameters.log_search_progress = True
        solver.parameters.log_to_stdout = False
        solver.log_callback = log
    start = time.monotonic()
    status = solver.solve(model)
    elapsed = time.monotonic() - start
    y_value = np.zeros(problem.n_blocks)
    weight = None
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        for b, v in y.items():
            y_value[b] = float(solver.value(v))
        weight = float(problem.weight[y_value > 0.5].sum())
    bound = solver.best_objective_bound / _CPSAT_SCALE + rounding if status != cp_model.UNKNOWN else math.inf
    return MilpOutcome(status == cp_model.OPTIMAL and rounding == 0.0, weight, float(bound), y_value, elapsed,
                       solver.status_name(status).lower())
