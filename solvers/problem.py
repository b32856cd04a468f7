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

Paths whose delay changes or that go down (docs/model.md sections 1, 4) keep both
meanings, each model taking the side that keeps its guarantee:

- *delay steps and jitter.* A byte served at ``tau`` reaches the receiver no earlier than
  ``tau + fwd(tau)`` (jitter and the wire's order only add delay) and no later than
  ``tau + max fwd + jitter bound``. The relaxed window ends at the latest ``tau`` with
  ``tau + fwd(tau) <= D_b`` (the hull of the instants that may be in time: with a delay
  that falls, some earlier instants are not); the conservative one uses the largest delay
  plus the jitter bound.
- *outages, a later start, an earlier stop.* A byte served while a path is down is lost
  (its arrival falls in or after the outage's start), and one served in the last
  ``min fwd`` before it too. The relaxed model takes from a link what it serves while
  *every* path on it is in such an interval, but gives back one packet at each interval's
  end (a packet whose service began inside and ends after it gets through); the
  conservative model takes what it serves while *any* path on it is down or within
  ``max fwd + jitter bound`` of going down. A path not yet started (``start_ns``) sends
  nothing; one that stopped (``stop_ns``) sends nothing new in the conservative model (the
  relaxed one lets its link serve what still waits there).

With none of these the windows and capacities are exactly those of constant delays. The
models know nothing of backup paths (docs/model.md section 7, "ready"): a backup path is
one more path to them, which keeps the relaxed bound valid but looser, and a conservative
plan that relies on it is not one the sender can follow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..envs.bandwidth import BandwidthSchedule
from ..envs.episode import Episode

__all__ = ["SlotProblem", "build_problem", "cumulative_work", "delay_steps", "latest_service", "link_silences",
           "silent_spans", "NEVER_NS", "MODELS"]

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


NEVER_NS = 2**62 + 1  # later than any instant of an episode (docs/model.md section 1)


def delay_steps(path: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Start and forward delay of each of a path's delay segments (the first starts at 0)."""
    starts = np.concatenate(([0], np.asarray(path.get("delay_start_ns", ()), dtype=np.int64)))
    delays = np.concatenate(([path["fwd_delay_ns"]], np.asarray(path.get("fwd_delay_step_ns", ()), dtype=np.int64)))
    return starts.astype(np.int64), delays.astype(np.int64)


def latest_service(deadline: np.ndarray, path: dict[str, Any], model: str) -> np.ndarray:
    """The last instant a byte may be served on ``path`` and still be in time, per deadline.

    Relaxed: the largest ``tau`` with ``tau + fwd(tau) <= deadline``, which lies in the
    last delay segment ``k`` with ``start_k + fwd_k <= deadline`` (every instant of an
    earlier segment is before ``start_k``); a suffix minimum of ``start_k + fwd_k`` makes
    that segment a binary search. Conservative: ``deadline - max fwd - jitter bound``.
    Both are ``deadline - fwd_delay_ns`` for a constant delay.
    """
    starts, delays = delay_steps(path)
    if model != "relaxed":
        return deadline - int(delays.max()) - int(path.get("fwd_jitter_ns", 0))
    ready = np.minimum.accumulate((starts + delays)[::-1])[::-1]  # non-decreasing
    k = np.searchsorted(ready, deadline, side="right") - 1
    ends = np.append(starts[1:], NEVER_NS)
    kk = np.maximum(k, 0)
    return np.where(k >= 0, np.minimum(ends[kk] - 1, deadline - delays[kk]), -1)


def silent_spans(path: dict[str, Any], model: str) -> list[tuple[int, int]]:
    """Sorted disjoint intervals in which a byte served on ``path`` is sure to be lost
    (relaxed) or may be lost (conservative): outages widened by the forward delay, before
    its start, and (conservative) after its stop: the relaxed model lets a stopped path's
    link serve what still waits there."""
    _, delays = delay_steps(path)
    lead = int(delays.min()) if model == "relaxed" else int(delays.max()) + int(path.get("fwd_jitter_ns", 0))
    downs = zip(path.get("down_start_ns", ()), path.get("down_end_ns", ()))
    spans = [(max(0, int(a) - lead), int(b)) for a, b in downs]
    if path.get("start_ns", 0) > 0:
        spans.append((0, int(path["start_ns"])))
    if model != "relaxed" and path.get("stop_ns", NEVER_NS) < 2**62:
        spans.append((int(path["stop_ns"]), NEVER_NS))
    return _union(spans, [])


def _intersect(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo < hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def _union(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(a + b):
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def link_silences(inputs: dict[str, Any], path_link: list[int], n_links: int,
                  model: str) -> list[list[tuple[int, int]]]:
    """Per link, the intervals whose service the model does not count (module docstring):
    relaxed, where every path on the link is silent; conservative, where any is."""
    out: list[list[tuple[int, int]] | None] = [None] * n_links
    for path, k in zip(inputs["paths"], path_link):
        spans = silent_spans(path, model)
        prev = out[k]
        out[k] = spans if prev is None else (_intersect(prev, spans) if model == "relaxed" else _union(prev, spans))
    return [s or [] for s in out]


def _slot_work(schedule: BandwidthSchedule, n_slots: int, slot_ns: int, silent: list[tuple[int, int]]) -> list[int]:
    """Bits x ns a link serves in each slot outside the ``silent`` intervals."""
    boundaries = [t * slot_ns for t in range(n_slots + 1)]
    horizon = boundaries[-1]
    cuts = sorted({*boundaries, *(min(x, horizon) for span in silent for x in span)})
    work = cumulative_work(schedule, np.asarray(cuts, dtype=np.int64))
    out = [0] * n_slots
    s = 0  # the first silent interval that may still cover a piece
    for i in range(len(cuts) - 1):
        lo = cuts[i]
        while s < len(silent) and silent[s][1] <= lo:
            s += 1
        if s < len(silent) and silent[s][0] <= lo:
            continue  # the piece [lo, cuts[i + 1]) is silent (cuts split at every end)
        out[lo // slot_ns] += work[i + 1] - work[i]
    return out


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
    bt = episode.blocks
    arrival = bt.arrival_ns.astype(np.int64)
    deadline = np.minimum(bt.deadline_ns.astype(np.int64), episode.end_ns)
    # last instant a byte may be served
    latest = np.stack([latest_service(deadline, p, model) for p in inputs["paths"]], axis=1)
    if model == "relaxed":
        first = arrival[:, None] // slot_ns + np.zeros_like(latest)
        # the window [arrival, latest] may be empty inside one slot: then no slot at all
        end = np.where(latest >= arrival[:, None], latest // slot_ns + 1, 0)
    else:
        first = -(-arrival[:, None] // slot_ns) + np.zeros_like(latest)
        end = np.where(latest >= 0, latest // slot_ns, 0)
    end = np.maximum(end, first)
    n_slots = int(end[end > first].max()) if np.any(end > first) else 0
    mss, header = inputs["mss_bytes"], inputs["header_bytes"]
    path_link = [int(k) for k in episode.path_links]
    silences = link_silences(inputs, path_link, len(episode.link_schedules), model)
    capacity = np.zeros((len(episode.link_schedules), n_slots), dtype=np.int64)
    for k, schedule in enumerate(episode.link_schedules):
        for t, served in enumerate(_slot_work(schedule, n_slots, slot_ns, silences[k])):
            if model == "relaxed":
                capacity[k, t] = -(-served // _BIT_NS_PER_BYTE)  # wire bytes, rounded up
            else:
                capacity[k, t] = served * mss // ((mss + header) * _BIT_NS_PER_BYTE)  # payload, rounded down
        if model == "relaxed":
            # a packet whose service began in a silence and ends after it gets through
            # (docs/model.md section 4): one packet per silence's end
            for _, until in silences[k]:
                if until < n_slots * slot_ns:
                    capacity[k, until // slot_ns] += mss + header
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
