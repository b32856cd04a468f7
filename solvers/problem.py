"""The slot problem: the offline scheduling problem on a time grid.

Offline, every block (arrival, size, deadline, weight) and every bottleneck's bandwidth
over time are known. Time is cut into slots of ``slot_ns``; ``x[b, j, t]`` bytes of block
``b`` go on path ``j`` during slot ``t``; a path reaches the receiver ``d_j`` (its one-way
delay) after a byte is served. Two discretizations share these variables:

- **relaxed**: block ``b`` may use slot ``t`` on path ``j`` if *some* instant ``tau`` of
  the slot has ``a_b <= tau <= D_b - d_j``; a slot carries the *wire* bytes its link
  serves, rounded up. Every schedule of the packet simulator maps onto a solution (each
  packet's payload spread over the slots its service spans, in proportion), whatever the
  congestion control, loss, queueing, headers, cross traffic or receiver do, since all of
  these only take capacity away or add delay: the optimum is an upper bound on any
  policy's weighted on-time score.
- **conservative**: slot ``t`` is allowed only if the whole slot lies after the arrival
  and its end plus ``d_j`` is no later than the deadline; a slot carries the *payload*
  bytes that fit in the bytes its link serves, rounded down. Every solution is a
  schedule a sender can follow (up to packetization), a lower bound on the optimum.

Deadlines are capped at the simulation's horizon (nothing later is processed). Cross
traffic is ignored (it only takes capacity), so with cross traffic the conservative
schedule may not be followable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..envs.bandwidth import BandwidthSchedule
from ..envs.episode import Episode

__all__ = ["SlotProblem", "build_problem", "cumulative_work", "MODELS"]

MODELS: tuple[str, ...] = ("relaxed", "conservative")
_BIT_NS_PER_BYTE = 8 * 10**9  # work (bit x ns) that serves one byte


def cumulative_work(schedule: BandwidthSchedule, times_ns: np.ndarray) -> list[int]:
    """Bits x ns a link serves in ``[0, t)`` for each of the sorted ``times_ns``: the
    integral of the piecewise-constant rate (docs/model.md section 3), exact in integers.
    """
    starts = [int(x) for x in schedule.start_ns]
    rates = [int(x) for x in schedule.rate_bps]
    cycle = schedule.cycle_ns
    n = len(starts)
    out: list[int] = []
    work = 0  # served in [0, cursor)
    cursor = 0
    base = 0  # start of the current cycle
    k = 0  # segment containing cursor
    for t in (int(x) for x in times_ns):
        while cursor < t:
            seg_end = base + starts[k + 1] if k + 1 < n else (base + cycle if cycle else None)
            step_end = t if seg_end is None else min(seg_end, t)
            work += rates[k] * (step_end - cursor)
            cursor = step_end
            if cursor == seg_end:
                if k + 1 < n:
                    k += 1
                else:
                    base += cycle
                    k = 0
        out.append(work)
    return out


@dataclass(frozen=True)
class SlotProblem:
    """One episode on a slot grid (see the module docstring).

    Attributes
    ----------
    model : str
        ``"relaxed"`` or ``"conservative"``.
    slot_ns : int
        Slot length.
    n_slots : int
        Slots ``0 .. n_slots - 1`` cover every usable instant.
    size_bytes, weight : numpy.ndarray
        Per block.
    path_link : numpy.ndarray
        Bottleneck of each path.
    capacity : numpy.ndarray
        ``(n_links, n_slots)`` int64: bytes each bottleneck carries in each slot.
    first_slot, end_slot : numpy.ndarray
        ``(n_blocks, n_paths)`` int64: block ``b`` may use path ``j`` in slots
        ``first_slot[b, j] <= t < end_slot[b, j]`` (none when ``first >= end``).
    total_weight : float
        Sum of the weights (the scale of a weighted on-time rate).
    """

    model: str
    slot_ns: int
    n_slots: int
    size_bytes: np.ndarray
    weight: np.ndarray
    path_link: np.ndarray
    capacity: np.ndarray
    first_slot: np.ndarray
    end_slot: np.ndarray
    total_weight: float

    @property
    def n_blocks(self) -> int:
        return len(self.size_bytes)

    @property
    def n_paths(self) -> int:
        return len(self.path_link)

    @property
    def n_variables(self) -> int:
        """Allocation variables ``x[b, j, t]`` the model needs, plus one per block."""
        return int(np.maximum(self.end_slot - self.first_slot, 0).sum()) + self.n_blocks

    def usable(self) -> np.ndarray:
        """Blocks that can be on time at all: positive weight and some allowed slot."""
        return (self.weight > 0) & (np.maximum(self.end_slot - self.first_slot, 0).sum(axis=1) > 0)


def varying_paths(inputs: dict[str, Any]) -> list[int]:
    """The paths of core inputs whose delays vary (steps, jitter) or that go down
    (docs/model.md sections 4 and 6): what the slot model cannot describe."""
    return [j for j, p in enumerate(inputs["paths"])
            if len(p.get("delay_start_ns", ())) or p.get("fwd_jitter_ns", 0) or p.get("rev_jitter_ns", 0)
            or len(p.get("down_start_ns", ()))]


def build_problem(episode: Episode, slot_ns: int, model: str = "relaxed") -> SlotProblem:
    """The slot problem of an episode.

    Parameters
    ----------
    episode : Episode
        A built episode (:func:`mpsched.envs.episode.build_episode`).
    slot_ns : int
        Slot length in ns, ``> 0``.
    model : {"relaxed", "conservative"}

    Returns
    -------
    SlotProblem
    """
    if model not in MODELS:
        raise ValueError(f"model must be one of {', '.join(MODELS)}; got {model!r}")
    if int(slot_ns) <= 0:
        raise ValueError(f"slot_ns must be positive; got {slot_ns}")
    slot_ns = int(slot_ns)
    inputs = episode.core_inputs()
    varying = varying_paths(inputs)
    if varying:
        raise ValueError("the slot model assumes constant delays and paths that never go down; "
                         f"paths {varying} have delay dynamics or outages")
    bt = episode.blocks
    arrival = bt.arrival_ns.astype(np.int64)
    deadline = np.minimum(bt.deadline_ns.astype(np.int64), episode.end_ns)
    delay = np.array([p["fwd_delay_ns"] for p in inputs["paths"]], dtype=np.int64)
    latest = deadline[:, None] - delay[None, :]  # last instant a byte may be served
    if model == "relaxed":
        first = arrival[:, None] // slot_ns + np.zeros_like(latest)
        # the window [arrival, latest] may be empty inside one slot: then no slot at all
        end = np.where(latest >= arrival[:, None], latest // slot_ns + 1, 0)
    else:
        first = -(-arrival[:, None] // slot_ns) + np.zeros_like(latest)
        end = np.where(latest >= 0, latest // slot_ns, 0)
    end = np.maximum(end, first)
    n_slots = int(end[end > first].max()) if np.any(end > first) else 0
    boundaries = np.arange(n_slots + 1, dtype=np.int64) * slot_ns
    mss, header = inputs["mss_bytes"], inputs["header_bytes"]
    capacity = np.zeros((len(episode.link_schedules), n_slots), dtype=np.int64)
    for k, schedule in enumerate(episode.link_schedules):
        work = cumulative_work(schedule, boundaries)
        for t in range(n_slots):
            served = work[t + 1] - work[t]
            if model == "relaxed":
                capacity[k, t] = -(-served // _BIT_NS_PER_BYTE)  # wire bytes, rounded up
            else:
                capacity[k, t] = served * mss // ((mss + header) * _BIT_NS_PER_BYTE)  # payload, rounded down
    return SlotProblem(
        model=model,
        slot_ns=slot_ns,
        n_slots=n_slots,
        size_bytes=bt.size_bytes.astype(np.int64),
        weight=bt.weight.astype(np.float64),
        path_link=np.asarray(episode.path_links, dtype=np.int64),
        capacity=capacity,
        first_slot=first.astype(np.int64),
        end_slot=end.astype(np.int64),
        total_weight=float(bt.weight.sum()),
    )
