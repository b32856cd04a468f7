"""Whole-byte allocations of a chosen set of blocks, by maximum flow.

With the chosen blocks fixed, the slot problem is a transportation problem: a source
gives each chosen block its size, block ``b`` sends to the (link, slot) pairs its paths
may use, and each pair passes at most the link's capacity in that slot to the sink. The
set fits iff the maximum flow saturates every block, and then an integral maximum flow
(the one :class:`ortools.graph.python.max_flow.SimpleMaxFlow` returns: capacities are
integers) is a schedule in whole bytes. This is also why a continuous allocation ``x``
loses nothing: any fractional schedule of a set implies an integral one.

Every path of a block shares its first slot (the windows start at the arrival), so the
slots a block may use on one link, through any of the link's paths, form one range: from
the first slot to the latest end over those paths.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from ortools.graph.python import max_flow

from .problem import SlotProblem

__all__ = ["Allocation", "link_windows", "allocate", "repair"]


@dataclass(frozen=True)
class Allocation:
    """Whole bytes per block, path and slot (one row per non-zero entry).

    Attributes
    ----------
    block, path, slot, bytes : numpy.ndarray
        int64 arrays of equal length.
    delivered : numpy.ndarray
        Bytes placed per block of the problem (all blocks; 0 for those not chosen).
    """

    block: np.ndarray
    path: np.ndarray
    slot: np.ndarray
    bytes: np.ndarray
    delivered: np.ndarray

    def complete(self, problem: SlotProblem, chosen: Sequence[int] | np.ndarray) -> bool:
        """Whether every chosen block got all its bytes."""
        idx = np.asarray(chosen, dtype=np.int64)
        return bool(np.all(self.delivered[idx] == problem.size_bytes[idx]))

    def per_path(self, n_blocks: int, n_paths: int) -> np.ndarray:
        """Bytes per block and path, shape ``(n_blocks, n_paths)``."""
        out = np.zeros((n_blocks, n_paths), dtype=np.int64)
        np.add.at(out, (self.block, self.path), self.bytes)
        return out


def link_windows(problem: SlotProblem) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each block's slot range on each bottleneck, through the best of its paths there.

    Returns
    -------
    links : numpy.ndarray
        The bottlenecks some path crosses, ascending.
    first : numpy.ndarray
        ``(n_blocks,)`` first slot (the same on every path).
    end : numpy.ndarray
        ``(n_blocks, len(links))`` end slot (exclusive) per bottleneck; ``end <= first``
        when no path of the bottleneck may carry the block.
    via : numpy.ndarray
        ``(n_blocks, len(links))`` the path that reaches that end (the block's bytes on
        the bottleneck are booked on it).
    """
    first = problem.first_slot[:, 0] if problem.n_paths else np.zeros(problem.n_blocks, dtype=np.int64)
    if problem.n_paths and np.any(problem.first_slot != first[:, None]):
        raise ValueError("slot windows must start in the same slot on every path")
    links = np.unique(problem.path_link)
    end = np.zeros((problem.n_blocks, len(links)), dtype=np.int64)
    via = np.zeros((problem.n_blocks, len(links)), dtype=np.int64)
    for i, k in enumerate(links):
        paths = np.flatnonzero(problem.path_link == k)
        best = np.argmax(problem.end_slot[:, paths], axis=1)
        via[:, i] = paths[best]
        end[:, i] = problem.end_slot[np.arange(problem.n_blocks), via[:, i]]
    return links, first.astype(np.int64), end, via


def allocate(problem: SlotProblem, chosen: Sequence[int] | np.ndarray) -> Allocation:
    """An integral maximum flow of the chosen blocks into the link capacities.

    Parameters
    ----------
    problem : SlotProblem
    chosen : sequence of int or numpy.ndarray
        Block indices.

    Returns
    -------
    Allocation
        ``delivered`` tells which blocks fit: the set is feasible iff
        :meth:`Allocation.complete` holds.
    """
    chosen = np.unique(np.asarray(chosen, dtype=np.int64))
    links, first, end, via = link_windows(problem)
    n_slots = problem.n_slots
    n_chosen = len(chosen)
    # nodes: 0 source, 1 sink, 2.. chosen blocks, then one per (link, slot)
    slot_node0 = 2 + n_chosen
    tails, heads, caps, arc_block, arc_path, arc_slot = [], [], [], [], [], []
    for i, k in enumerate(links):
        lo = first[chosen]
        hi = np.maximum(end[chosen, i], lo)
        count = hi - lo
        if not count.sum():
            continue
        owner = np.repeat(np.arange(n_chosen), count)
        offset = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
        slot = lo[owner] + offset
        tails.append(2 + owner)
        heads.append(slot_node0 + i * n_slots + slot)
        caps.append(np.minimum(problem.size_bytes[chosen][owner], problem.capacity[k, slot]))
        arc_block.append(chosen[owner])
        arc_path.append(via[chosen[owner], i])
        arc_slot.append(slot)
    flow = max_flow.SimpleMaxFlow()
    if n_chosen:
        flow.add_arcs_with_capacity(np.zeros(n_chosen, dtype=np.int64), 2 + np.arange(n_chosen),
                                    problem.size_bytes[chosen])
    middle = 0
    if tails:
        t, h, c = np.concatenate(tails), np.concatenate(heads), np.concatenate(caps)
        middle = flow.add_arcs_with_capacity(t, h, c)[0] if len(t) else 0
        used = np.unique(h)
        link_of = (used - slot_node0) // n_slots
        slot_of = (used - slot_node0) % n_slots
        flow.add_arcs_with_capacity(used, np.ones(len(used), dtype=np.int64),
                                    problem.capacity[links[link_of], slot_of])
    delivered = np.zeros(problem.n_blocks, dtype=np.int64)
    if not n_chosen:
        empty = np.zeros(0, dtype=np.int64)
        return Allocation(empty, empty, empty, empty, delivered)
    status = flow.solve(0, 1)
    if status != flow.OPTIMAL:
        raise RuntimeError(f"maximum flow failed with status {status}")
    delivered[chosen] = flow.flows(np.arange(n_chosen))
    if not tails:
        empty = np.zeros(0, dtype=np.int64)
        return Allocation(empty, empty, empty, empty, delivered)
    amounts = flow.flows(middle + np.arange(sum(len(x) for x in tails)))
    keep = amounts > 0
    return Allocation(
        np.concatenate(arc_block)[keep],
        np.concatenate(arc_path)[keep],
        np.concatenate(arc_slot)[keep],
        amounts[keep].astype(np.int64),
        delivered,
    )


def repair(problem: SlotProblem, chosen: Sequence[int] | np.ndarray) -> tuple[np.ndarray, Allocation]:
    """The largest-weight feasible subset found by dropping blocks that do not fit.

    While the maximum flow leaves some chosen block short, the short block with the least
    weight per byte (then the latest) is dropped; blocks that cannot be on time at all are
    dropped first.

    Returns
    -------
    chosen : numpy.ndarray
        A feasible subset, ascending.
    allocation : Allocation
        Its whole-byte schedule.
    """
    usable = problem.usable()
    current = np.unique(np.asarray(chosen, dtype=np.int64))
    current = current[usable[current]]
    while True:
        alloc = allocate(problem, current)
        short = current[alloc.delivered[current] < problem.size_bytes[current]]
        if not len(short):
            return current, alloc
        density = problem.weight[short] / problem.size_bytes[short]
        worst = short[np.lexsort((-short, density))[0]]
        current = current[current != worst]
