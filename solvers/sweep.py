"""An exact algorithm for slot problems with agreeable windows on at most two bottlenecks.

Video workloads give every block the same relative deadline, so in arrival order both
ends of the blocks' windows are non-decreasing on every path (*agreeable* windows), and
the built-in scenarios have two paths on two bottlenecks. This module solves such slot
problems exactly, with integers only, by a dynamic programme over the blocks in arrival
order. It returns the optimum of the same problem as the MILP (:mod:`mpsched.solvers.milp`)
in a fraction of a second where a generic MILP solver leaves a gap of several per cent
after a minute.

Why it is exact
---------------
1. *Positions.* Number the bytes a bottleneck ``k`` can carry: slot ``t`` holds the
   positions ``[C_k(t), C_k(t + 1))`` with ``C_k(t)`` the capacity of slots ``< t``.
   Block ``b`` may use positions ``[S_bk, E_bk) = [C_k(first_b), C_k(end_bk))``, where
   ``end_bk`` is the latest end over the paths that cross ``k`` (all of a block's paths
   start in the same slot, so these slots form one range).
2. *FIFO on each bottleneck loses nothing.* Let ``b < b'`` both use ``k`` with
   ``first_b <= first_b'`` and ``end_bk <= end_b'k``. If ``b'`` holds a byte in slot
   ``t`` while ``b`` holds one in a later slot ``t''``, swap them: ``b`` may use ``t``
   (``first_b <= first_b' <= t``) and ``b'`` may use ``t''`` (``t < t'' < end_bk <=
   end_b'k``). Repeating this, every feasible allocation becomes one where, on each
   bottleneck, the chosen blocks occupy consecutive position ranges in arrival order.
   Conversely any such placement is a slot allocation. So a chosen set with ``u_bk``
   bytes of block ``b`` on ``k`` fits iff, serving the blocks in order with
   ``F_k <- max(F_k, S_bk) + u_bk``, every ``u_bk > 0`` ends at ``F_k <= E_bk``.
3. *States.* After deciding blocks ``0..b`` a state is the chosen weight ``W`` and the
   positions ``(F_1, F_2)`` where the next block would start. ``(W, F)`` dominates
   ``(W', F')`` when ``W >= W'`` and ``F <= F'`` componentwise, since every continuation
   of the latter is one of the former. Positions below the next block's ``S`` are raised
   to it (no later block may use them), which makes dominance bite.
4. *Segments.* Taking block ``b`` (``s`` bytes) from ``(G_1, G_2)`` reaches every
   ``(G_1 + u, G_2 + s - u)`` allowed by the limits: an anti-diagonal segment. So each
   set of states of one weight is a union of segments ``{(x, c - x): l <= x <= r}``; the
   raise, the step and the trimming of dominated parts map such unions to such unions
   with integer ends (slopes are 0 or -1, every end point is an integer). The programme
   keeps, after each block, the non-dominated parts of all segments of all weights.

The optimum is the largest weight of a final state; each segment remembers its parent,
which yields the chosen set. The caller checks that set with a maximum flow
(:func:`mpsched.solvers.flow.allocate`), which also gives whole-byte slot allocations.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .flow import link_windows
from .problem import SlotProblem

__all__ = ["SweepResult", "applicable", "solve_sweep", "sweep_relaxations", "sweep_heuristic"]

MAX_STATES = 20_000
"""The programme gives up (and the caller falls back to the MILP) beyond this many
segments after one block: it is exact but not polynomial for arbitrary weights."""


@dataclass(frozen=True)
class SweepResult:
    """The optimum found by the sweep.

    Attributes
    ----------
    weight : float
        Optimal chosen weight.
    chosen : numpy.ndarray
        Block indices of one optimal set, ascending.
    max_states : int
        Largest number of segments kept after one block.
    """

    weight: float
    chosen: np.ndarray
    max_states: int


def applicable(problem: SlotProblem) -> str | None:
    """Why the sweep cannot solve ``problem``, or ``None`` when it can.

    It needs at most two bottlenecks and, on each, windows of the blocks that may use it
    whose ends do not decrease in arrival order (the starts never do).
    """
    usable = problem.usable()
    links, first, end, _ = link_windows(problem)
    if len(links) > 2:
        return f"{len(links)} bottlenecks (the sweep handles at most 2)"
    if np.any(np.diff(first[usable]) < 0):
        return "windows that do not start in block order"
    for i, k in enumerate(links):
        on = usable & (end[:, i] > first)
        if np.any(np.diff(end[on, i]) < 0):
            return f"windows on bottleneck {int(k)} that are not agreeable (a later block ends earlier)"
    return None


def _raise(c: int, lo: int, hi: int, s1: int, s2: int) -> tuple[int, int, int]:
    """The minimal points of ``{(max(x, s1), max(c - x, s2)) : lo <= x <= hi}``."""
    if c < s1 + s2 and max(lo, c - s2) <= min(hi, s1):
        return s1 + s2, s1, s1  # some point lies below and left of (s1, s2)
    a, b = max(lo, s1), min(hi, c - s2)
    if a <= b:
        return c, a, b
    if hi < s1:
        return s1 + c - hi, s1, s1  # all left of s1: the point (s1, c - hi)
    return lo + s2, lo, lo  # all below s2: the point (lo, s2)


def _step(c: int, lo: int, hi: int, s: int, e1: int, e2: int) -> list[tuple[int, int, int]]:
    """Segments (on the line ``c + s``) reached by placing ``s`` bytes from the states
    ``(x, c - x)``, ``lo <= x <= hi``: ``u`` bytes at ``x`` on the first bottleneck (if
    ``u > 0``, ending at most at ``e1``) and ``s - u`` at ``c - x`` on the second."""

    def start(x: int) -> int:  # x + the least u
        return max(x, min(x + s, c + s - e2))

    def stop(x: int) -> int:  # x + the most u
        return min(x + s, max(x, e1))

    points = sorted({lo, hi} | {p for p in (c - e2, c + s - e2, e1, e1 - s) if lo < p < hi})
    feasible: list[list[int]] = []

    def add(a: int, b: int) -> None:
        if feasible and feasible[-1][1] >= a:
            feasible[-1][1] = max(feasible[-1][1], b)
        else:
            feasible.append([a, b])

    if len(points) == 1:
        if start(lo) <= stop(lo):
            add(lo, lo)
    for p, q in zip(points, points[1:]):
        # start - stop is linear on [p, q] with slope -1, 0 or 1
        dp, dq = start(p) - stop(p), start(q) - stop(q)
        if dp <= 0 and dq <= 0:
            add(p, q)
        elif dp <= 0:
            add(p, p - dp)
        elif dq <= 0:
            add(q + dq, q)
    return [(c + s, start(a), stop(b)) for a, b in feasible]


def _prune(states: list[tuple[float, int, int, int, int]]) -> list[tuple[float, int, int, int, int]]:
    """The non-dominated parts of the segments ``(W, c, lo, hi, parent)``.

    A point ``(x, c - x)`` is dominated by a segment ``(W', c', lo', hi')`` with
    ``W' >= W`` and ``c' <= c`` iff ``lo' <= x <= hi' + c - c'``. Segments are visited
    by weight (descending), then line (ascending), and each keeps what the kept ones do
    not dominate.
    """
    states.sort(key=lambda t: (-t[0], t[1], t[2]))
    kept: list[tuple[float, int, int, int, int]] = []
    for state in states:
        w, c, lo, hi, parent = state
        covered = sorted((k[2], k[3] + c - k[1]) for k in kept if k[1] <= c and k[2] <= hi and k[3] + c - k[1] >= lo)
        cursor = lo
        for a, b in covered:
            if a > cursor:
                kept.append((w, c, cursor, min(a - 1, hi), parent))
            cursor = max(cursor, b + 1)
            if cursor > hi:
                break
        if cursor <= hi:
            kept.append((w, c, cursor, hi, parent))
    return kept


def _run(capacity: np.ndarray, first: np.ndarray, end: np.ndarray, order: np.ndarray, sizes: list[int],
         weights: list[float], max_states: int, deadline: float | None,
         progress: Callable[[int, int, float], None] | None) -> SweepResult | None:
    """The programme on link-level windows: ``capacity`` (one or two rows), ``first``
    per block, ``end`` per block and row, blocks taken in ``order`` (in which the starts
    and the non-empty windows' ends do not decrease)."""
    cum = [np.concatenate([[0], np.cumsum(row)]).tolist() for row in capacity]
    two = len(cum) == 2
    if not two:  # a second bottleneck that carries nothing
        cum.append([0] * len(cum[0]))
    ends = np.maximum(end, first[:, None]).tolist()
    firsts = first.tolist()
    blocks = [int(b) for b in order]
    states: list[tuple[float, int, int, int, int]] = [(0.0, 0, 0, 0, -1)]
    parents: list[tuple[int, int]] = []  # (block, parent) of every segment that took a block
    widest = 1
    for n_done, b in enumerate(blocks):
        if deadline is not None and n_done % 64 == 0 and time.monotonic() > deadline:
            return None
        if progress is not None and n_done % 256 == 0:
            progress(n_done, len(blocks), max(st[0] for st in states))
        s1, s2 = cum[0][firsts[b]], cum[1][firsts[b]]
        e1 = cum[0][ends[b][0]]
        e2 = cum[1][ends[b][1]] if two else s2
        size, w = sizes[b], weights[b]
        states = _prune([(st[0],) + _raise(st[1], st[2], st[3], s1, s2) + (st[4],) for st in states])
        grown = list(states)
        for st in states:
            segments = _step(st[1], st[2], st[3], size, e1, e2)
            if segments:
                parents.append((b, st[4]))
                node = len(parents) - 1
                grown.extend((st[0] + w, c, lo, hi, node) for c, lo, hi in segments)
        states = _prune(grown)
        widest = max(widest, len(states))
        if len(states) > max_states:
            return None
    best = max(states, key=lambda st: st[0])
    chosen = []
    node = best[4]
    while node >= 0:
        block, node = parents[node]
        chosen.append(block)
    return SweepResult(float(sum(weights[b] for b in chosen)), np.array(sorted(chosen), dtype=np.int64), widest)


def solve_sweep(problem: SlotProblem, max_states: int = MAX_STATES, deadline: float | None = None,
                progress: Callable[[int, int, float], None] | None = None) -> SweepResult | None:
    """The exact optimum of an agreeable slot problem on at most two bottlenecks.

    Parameters
    ----------
    problem : SlotProblem
        Must pass :func:`applicable`.
    max_states : int
        Give up (return ``None``) when more segments than this survive one block.
    deadline : float, optional
        A :func:`time.monotonic` instant after which to give up (return ``None``).
    progress : callable, optional
        Called now and then with (blocks done, blocks, best weight so far).

    Returns
    -------
    SweepResult or None
    """
    reason = applicable(problem)
    if reason is not None:
        raise ValueError(f"the sweep cannot solve this problem: {reason}")
    links, first, end, _ = link_windows(problem)
    return _run(problem.capacity[links], first, end, np.flatnonzero(problem.usable()), problem.size_bytes.tolist(),
                problem.weight.tolist(), max_states, deadline, progress)


def _agreeable(first: np.ndarray, end: np.ndarray, order: np.ndarray, shrink: bool) -> tuple[np.ndarray, np.ndarray]:
    """Windows made agreeable in ``order`` (usable blocks): starts non-decreasing and,
    on each bottleneck, the ends of non-empty windows non-decreasing. ``shrink``: starts
    raised to the largest earlier start and ends lowered to the least later end (each
    window only shrinks); otherwise starts lowered to the least later start and ends
    raised to the largest earlier end (each window only grows)."""
    f = first.copy()
    e = end.copy()
    if not len(order):
        return f, e
    if shrink:
        f[order] = np.maximum.accumulate(first[order])
    else:
        f[order] = np.minimum.accumulate(first[order][::-1])[::-1]
    for i in range(end.shape[1]):
        on = order[end[order, i] > first[order]]
        if not len(on):
            continue
        column = end[on, i]
        e[on, i] = np.minimum.accumulate(column[::-1])[::-1] if shrink else np.maximum.accumulate(column)
    return f, e


def _orders(problem: SlotProblem, first: np.ndarray, end: np.ndarray) -> list[np.ndarray]:
    """The usable blocks by arrival, and by latest end then arrival (by deadline)."""
    usable = np.flatnonzero(problem.usable())
    by_arrival = usable[np.lexsort((usable, first[usable]))]
    latest = end[usable].max(axis=1) if end.shape[1] else np.zeros(len(usable), dtype=np.int64)
    by_deadline = usable[np.lexsort((usable, first[usable], latest))]
    return [by_arrival] if np.array_equal(by_arrival, by_deadline) else [by_arrival, by_deadline]


def sweep_relaxations(problem: SlotProblem, max_states: int = MAX_STATES,
                      deadline: float | None = None) -> list[SweepResult]:
    """The exact optima of relaxations of any slot problem, by the sweep.

    Beyond two bottlenecks, one bottleneck is kept and the others are merged into one
    (capacities add up, windows take the latest end), once for each bottleneck kept; the
    windows are made agreeable by growing them, in arrival order and in deadline order
    (:func:`_agreeable`). Both only enlarge what a block may use, so every feasible set of
    ``problem`` stays feasible in each relaxation and the least optimum is an upper bound
    on ``problem``'s; it equals the optimum when :func:`applicable` holds. A relaxation's
    chosen set may not fit ``problem``: :func:`mpsched.solvers.flow.repair` makes it fit,
    which on problems close to the sweep's class loses little (a start for the MILP).

    Returns
    -------
    list of SweepResult
        One per relaxation the sweep finished before ``deadline`` within ``max_states``
        (an empty list if none did).
    """
    links, first, end, _ = link_windows(problem)
    capacity = problem.capacity[links]
    merges: list[tuple[np.ndarray, np.ndarray]] = [(capacity, end)]
    if len(links) > 2:
        merges = []
        for kept in range(len(links)):
            rest = np.arange(len(links)) != kept
            merges.append((np.vstack([capacity[kept], capacity[rest].sum(axis=0)]),
                           np.column_stack([end[:, kept], end[:, rest].max(axis=1)])))
    found = []
    for merged_capacity, merged_end in merges:
        for order in _orders(problem, first, merged_end):
            f, e = _agreeable(first, merged_end, order, shrink=False)
            result = _run(merged_capacity, f, e, order, problem.size_bytes.tolist(), problem.weight.tolist(),
                          max_states, deadline, None)
            if result is not None:
                found.append(result)
    return found


def sweep_heuristic(problem: SlotProblem, max_states: int = MAX_STATES,
                    deadline: float | None = None) -> np.ndarray | None:
    """A feasible set of any slot problem, by the sweep on restrictions.

    Only the two bottlenecks with the most capacity are kept, and the windows are made
    agreeable by shrinking them, in arrival order and in deadline order
    (:func:`_agreeable`): both only shrink what a block may use, so each restriction's
    optimal set is feasible in ``problem``; the heavier is returned (``None`` if the
    sweep gives up). It is optimal when :func:`applicable` holds.
    """
    links, first, end, _ = link_windows(problem)
    keep = np.sort(np.argsort(-problem.capacity[links].sum(axis=1), kind="stable")[:2])
    end = end[:, keep]
    best = None
    for order in _orders(problem, first, end):
        f, e = _agreeable(first, end, order, shrink=True)
        found = _run(problem.capacity[links[keep]], f, e, order, problem.size_bytes.tolist(),
                     problem.weight.tolist(), max_states, deadline, None)
        if found is not None and (best is None or found.weight > best.weight):
            best = found
    return None if best is None else best.chosen
