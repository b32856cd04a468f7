"""Exhaustive search for tiny slot problems: the test oracle.

Every subset of the usable blocks is a candidate; a subset is feasible iff the maximum
flow of :func:`mpsched.solvers.flow.allocate` places all its bytes (the feasibility LP of
a fixed set is a transportation problem). Subsets are tried by decreasing weight, so the
first feasible one is optimal; a subset that contains a known infeasible one is skipped
(feasibility is inherited by subsets). Nothing here shares code with the MILP or the
sweep beyond the slot problem itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .flow import allocate
from .problem import SlotProblem

__all__ = ["MAX_EXHAUSTIVE_BLOCKS", "ExhaustiveResult", "solve_exhaustive"]

MAX_EXHAUSTIVE_BLOCKS = 12


@dataclass(frozen=True)
class ExhaustiveResult:
    """The optimum by enumeration.

    Attributes
    ----------
    weight : float
    chosen : numpy.ndarray
        Block indices, ascending.
    checked : int
        Subsets whose feasibility was computed.
    """

    weight: float
    chosen: np.ndarray
    checked: int


def solve_exhaustive(problem: SlotProblem) -> ExhaustiveResult:
    """The optimum of a slot problem with at most :data:`MAX_EXHAUSTIVE_BLOCKS` usable blocks.

    Raises
    ------
    ValueError
        With more usable blocks.
    """
    usable = np.flatnonzero(problem.usable())
    n = len(usable)
    if n > MAX_EXHAUSTIVE_BLOCKS:
        raise ValueError(f"exhaustive search takes at most {MAX_EXHAUSTIVE_BLOCKS} usable blocks; got {n}")
    masks = np.arange(1 << n, dtype=np.int64)
    bits = (masks[:, None] >> np.arange(n)) & 1
    totals = bits @ problem.weight[usable] if n else np.zeros(1)
    order = np.lexsort((masks, -totals))
    infeasible: list[int] = []
    checked = 0
    for mask in masks[order].tolist():
        if any((bad & mask) == bad for bad in infeasible):
            continue
        chosen = usable[[i for i in range(n) if mask >> i & 1]]
        checked += 1
        if allocate(problem, chosen).complete(problem, chosen):
            return ExhaustiveResult(float(problem.weight[chosen].sum()), np.sort(chosen), checked)
        infeasible.append(mask)
    raise AssertionError("the empty set is always feasible")
