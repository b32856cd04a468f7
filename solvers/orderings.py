"""Priority orderings of streams in the fluid model of SRPT-ECF [jonglez20], computed exactly.

Jonglez, Heusse & Gaujal, "SRPT-ECF: challenging Round-Robin for stream-aware multipath
scheduling", FIT 2020 [jonglez20]. Three schedules of the same model:

- :func:`priority_schedule`: the streams allocated one after the other in a given
  priority ordering, each with simultaneous completion on the paths it uses;
- :func:`best_ordering`: the offline algorithm of Sec. IV-B, every ordering tried and the
  best kept by the mean or the maximum completion time;
- :func:`online_srpt_ecf`: SRPT-ECF run online (Sec. IV-A), which re-orders the streams
  at each release by eq. (5) without knowing the releases to come.

The fluid model (Sec. II)
-------------------------
Path ``p`` has a rate ``R_p`` (bytes per time unit) and a latency ``D_p``: data sent on
``p`` at date ``t`` reaches the receiver at ``t + D_p``, and the sender may send on any
subset of the paths at any moment, at rate ``R_p`` on each ("the scheduler can
continuously transmit data on a subset of paths and can change its path allocation at
any time"). Sec. II calls ``D_p`` a round-trip latency, but eq. (1) and Figs. 3 and 5 use
it as the time data takes to reach the receiver (an 800 B stream alone on the 200 B/ms,
5 ms path completes at 5 + 800 / 200 = 9 ms), which is the reading here. Stream ``m`` has
a size ``S_m`` in bytes and a release date ``r_m``, before which none of it may be sent;
its finish date ``f_m`` is when its last byte arrives and its completion time is
``C_m = f_m - r_m`` (Sec. IV). Times are in any one unit (the paper's figures use
milliseconds with rates in bytes per millisecond); every quantity is a
:class:`fractions.Fraction`, so schedules are exact (Fig. 3's completion is 160/7 ms).

One stream on free paths: ECF
-----------------------------
With the transmit time still free on each path from the release on, sending on ``p``
until ``C - D_p`` delivers by date ``C`` at most ``A(C) = sum_p R_p * |free_p ∩ [r, C -
D_p)|`` bytes. ECF (Sec. II) takes the smallest ``C`` with ``A(C) = S`` and all the free
time of every path before ``C - D_p``: the data on all the paths it uses arrives by the
same date ``C`` ("data on the two paths completes simultaneously", Fig. 3), and no other
use of the free time delivers ``S`` bytes sooner. On idle paths this is eqs. (1)-(3):
``C*(S) = D_1 + S / R_1`` below ``S_lim = R_1 (D_2 - D_1)``, ``D_2 + (S - S_lim) / (R_1 +
R_2)`` above, and the ``n - 1`` thresholds of Fig. 4 with more paths.

A priority ordering (Sec. III-A b) and Sec. IV-B)
-------------------------------------------------
"For each priority ordering, it allocates resources to streams in this order while
ensuring simultaneous completion on all paths, giving resources to a lower-priority
stream if a higher-priority stream has not yet been released." The reading taken: strict
priority, allocated stream by stream in the ordering. The first stream takes ECF on idle
paths from its release; each next stream takes ECF in the transmit time the streams
before it left free, from its own release. A higher-priority stream released later has
already reserved what it needs, so a lower-priority stream released earlier uses the
paths before that release and around the reservation ("giving resources to a
lower-priority stream if a higher-priority stream has not yet been released"), and never
delays it. With simultaneous releases this is SRPT-ECF's allocation: stream ``k`` in the
ordering finishes at ``C*(S_1 + ... + S_k)``, ECF on the effective size of Sec. III-A b).

Online SRPT-ECF (Sec. IV-A)
---------------------------
At each release date ``t`` the streams released and not yet fully sent are ordered by
their isolated remaining completion time, eq. (5): ``max(C*(S_k), T_in-flight(k))`` with
``S_k`` the bytes not yet sent and ``T_in-flight(k)`` the time from ``t`` until the bytes
already sent arrive (the latest of last send on ``p`` plus ``D_p``, over the paths); ties
go to the smaller index. The remaining bytes are then allocated from ``t`` in that ordering
as above (eq. (5) orders; the allocation is ECF on the remaining sizes, "as before"), and
the plan holds until the next release. Between releases the ordering does not change
(the stability of Sec. III-C b)), so re-planning only at releases follows the algorithm;
the packet simulator's ``srpt-ecf`` (baselines/srpt.py), which re-orders at every packet,
finishes each stream within 1 % of this schedule on the cases of
tests/test_solvers_orderings.py.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from numbers import Rational
from typing import Literal

__all__ = [
    "MAX_ENUMERATED_STREAMS",
    "METRICS",
    "FluidPaths",
    "Transmission",
    "FluidSchedule",
    "priority_schedule",
    "best_ordering",
    "online_srpt_ecf",
]

MAX_ENUMERATED_STREAMS = 8
"""The offline enumeration tries ``n!`` orderings: 40,320 at this bound."""

METRICS = ("mean", "max")
"""What :func:`best_ordering` minimizes: the mean or the maximum completion time."""

Metric = Literal["mean", "max"]
Number = int | float | Fraction


def _exact(value: object, name: str) -> Fraction:
    """``value`` as an exact fraction: an integer, a fraction or a finite float."""
    if isinstance(value, bool) or not isinstance(value, Rational | float):
        raise TypeError(f"{name} must be a number (int, float or Fraction), got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return Fraction(value)


def _exact_list(values: Sequence[Number], name: str) -> tuple[Fraction, ...]:
    if isinstance(values, str | bytes) or not isinstance(values, Sequence):
        raise TypeError(f"{name} must be a sequence of numbers, got {values!r}")
    return tuple(_exact(v, f"{name}[{i}]") for i, v in enumerate(values))


@dataclass(frozen=True, init=False)
class FluidPaths:
    """The paths of the fluid model (Sec. II).

    Parameters
    ----------
    rates : sequence of numbers
        ``R_p`` in bytes per time unit, each positive.
    latencies : sequence of numbers
        ``D_p``, the time from sending to arrival, in the same time unit, each
        non-negative.

    Raises
    ------
    ValueError
        With no path, lengths that differ, a rate that is not positive or a negative
        latency.
    """

    rates: tuple[Fraction, ...]
    latencies: tuple[Fraction, ...]

    def __init__(self, rates: Sequence[Number], latencies: Sequence[Number]) -> None:
        exact_rates, exact_latencies = _paired(rates, "rates", latencies, "latencies", "path",
                                               "the fluid model needs at least one path")
        object.__setattr__(self, "rates", exact_rates)
        object.__setattr__(self, "latencies", exact_latencies)

    @property
    def n_paths(self) -> int:
        return len(self.rates)

    def ecf_completion(self, size_bytes: Number) -> Fraction:
        """``C*(S)``: the time ECF needs to deliver ``size_bytes`` on idle paths (eqs.
        (1)-(3) with ``n`` paths), from the first send to the last arrival."""
        size = _exact(size_bytes, "size_bytes")
        if size <= 0:
            raise ValueError(f"size_bytes must be positive, got {size_bytes!r}")
        return _earliest_finish(self, [[] for _ in self.rates], size, Fraction(0))


@dataclass(frozen=True)
class Transmission:
    """Stream ``stream`` sends on path ``path`` during ``[start, end)`` (sender dates).

    Attributes
    ----------
    stream, path : int
    start, end : Fraction
    bytes : Fraction
        ``R_path * (end - start)``.
    """

    stream: int
    path: int
    start: Fraction
    end: Fraction
    bytes: Fraction


@dataclass(frozen=True)
class FluidSchedule:
    """A schedule of the fluid model.

    Attributes
    ----------
    orderings : tuple of (Fraction, tuple of int)
        The priority ordering in force from each date: one entry for a fixed ordering (at
        the first release), one per distinct release date online.
    transmissions : tuple of Transmission
        By path, then start; adjacent pieces of one stream on one path are merged.
    finish : tuple of Fraction
        ``f_m``: the date the last byte of each stream arrives.
    completion : tuple of Fraction
        ``C_m = f_m - r_m``.
    path_bytes : tuple of tuple of Fraction
        Bytes of each stream on each path, ``path_bytes[stream][path]``.
    """

    orderings: tuple[tuple[Fraction, tuple[int, ...]], ...]
    transmissions: tuple[Transmission, ...]
    finish: tuple[Fraction, ...]
    completion: tuple[Fraction, ...]
    path_bytes: tuple[tuple[Fraction, ...], ...]

    @property
    def order(self) -> tuple[int, ...]:
        """The ordering of a fixed-ordering schedule (the first one online)."""
        return self.orderings[0][1]

    def value(self, metric: Metric) -> Fraction:
        """The mean or the maximum completion time (:data:`METRICS`)."""
        if metric == "mean":
            return sum(self.completion, Fraction(0)) / len(self.completion)
        if metric == "max":
            return max(self.completion)
        raise ValueError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}")

    def sending(self, stream: int, path: int) -> list[tuple[Fraction, Fraction]]:
        """The intervals ``[start, end)`` during which ``stream`` sends on ``path``."""
        return [(t.start, t.end) for t in self.transmissions if t.stream == stream and t.path == path]

    def sending_time(self, stream: int, path: int) -> Fraction:
        """How long ``stream`` sends on ``path`` in all."""
        return sum((end - start for start, end in self.sending(stream, path)), Fraction(0))


Busy = list[list[tuple[Fraction, Fraction, int]]]
"""Per path, the reserved ``(start, end, stream)`` intervals, sorted and disjoint."""


def _free_intervals(busy: list[tuple[Fraction, Fraction, int]], since: Fraction) -> list[tuple[Fraction, Fraction]]:
    """The bounded free intervals of one path from ``since`` on; the path is also free
    from the last returned end (or ``since``) to infinity, which :func:`_free_tail` gives."""
    out = []
    cursor = since
    for start, end, _ in busy:
        if end <= cursor:
            continue
        if start > cursor:
            out.append((cursor, start))
        cursor = end
    return out


def _free_tail(busy: list[tuple[Fraction, Fraction, int]], since: Fraction) -> Fraction:
    return max([since] + [end for _, end, _ in busy])


def _deliverable(paths: FluidPaths, free: list[list[tuple[Fraction, Fraction]]], tails: list[Fraction],
                 date: Fraction) -> Fraction:
    """``A(date)``: bytes the free transmit time delivers by ``date``."""
    total = Fraction(0)
    for p, rate in enumerate(paths.rates):
        last_send = date - paths.latencies[p]
        for start, end in free[p]:
            if last_send > start:
                total += rate * (min(end, last_send) - start)
        if last_send > tails[p]:
            total += rate * (last_send - tails[p])
    return total


def _earliest_finish(paths: FluidPaths, busy: Busy, size: Fraction, release: Fraction) -> Fraction:
    """The smallest ``C`` with ``A(C) = size``: ``A`` is continuous, non-decreasing and
    linear between the dates where a free interval's end points, shifted by ``D_p``, lie."""
    free = [_free_intervals(busy[p], release) for p in range(paths.n_paths)]
    tails = [_free_tail(busy[p], release) for p in range(paths.n_paths)]
    breaks = sorted({point + paths.latencies[p] for p in range(paths.n_paths)
                     for point in [tails[p]] + [x for interval in free[p] for x in interval]})
    before, delivered_before = breaks[0], Fraction(0)  # nothing is delivered before the first break
    for date in breaks[1:]:
        delivered = _deliverable(paths, free, tails, date)
        if delivered >= size:
            return before + (size - delivered_before) * (date - before) / (delivered - delivered_before)
        before, delivered_before = date, delivered
    return before + (size - delivered_before) / sum(paths.rates, Fraction(0))  # every path is free past the breaks


def _reserve(paths: FluidPaths, busy: Busy, stream: int, release: Fraction, finish: Fraction) -> None:
    """Give ``stream`` all the free time of every path in ``[release, finish - D_p)``."""
    for p in range(paths.n_paths):
        last_send = finish - paths.latencies[p]
        if last_send <= release:
            continue
        taken = [(start, min(end, last_send)) for start, end in _free_intervals(busy[p], release) if start < last_send]
        tail = _free_tail(busy[p], release)
        if tail < last_send:
            taken.append((tail, last_send))
        busy[p].extend((start, end, stream) for start, end in taken)
        busy[p].sort()


def _merged(paths: FluidPaths, pieces: Sequence[tuple[int, Fraction, Fraction, int]]) -> tuple[Transmission, ...]:
    """``(path, start, end, stream)`` pieces as transmissions, adjacent ones of a stream merged."""
    out: list[Transmission] = []
    for path, start, end, stream in sorted(pieces):
        if end <= start:
            continue
        if out and out[-1].path == path and out[-1].stream == stream and out[-1].end == start:
            start = out.pop().start
        out.append(Transmission(stream, path, start, end, paths.rates[path] * (end - start)))
    return tuple(out)


def _check_streams(sizes: Sequence[Number], releases: Sequence[Number]) -> tuple[tuple[Fraction, ...],
                                                                                  tuple[Fraction, ...]]:
    return _paired(sizes, "sizes", releases, "releases", "stream", "at least one stream is needed")


def _paired(positive: Sequence[Number], positive_name: str, non_negative: Sequence[Number], non_negative_name: str,
            entry: str, empty: str) -> tuple[tuple[Fraction, ...], tuple[Fraction, ...]]:
    """Two lists of one entry per path or stream, exact: the first positive, the second
    non-negative (``ValueError`` naming the entry otherwise)."""
    first = _exact_list(positive, positive_name)
    second = _exact_list(non_negative, non_negative_name)
    if not first:
        raise ValueError(empty)
    if len(first) != len(second):
        raise ValueError(f"{positive_name} and {non_negative_name} must have one entry per {entry}: got "
                         f"{len(first)} {positive_name} and {len(second)} {non_negative_name}")
    for k, value in enumerate(first):
        if value <= 0:
            raise ValueError(f"{positive_name}[{k}] must be positive, got {positive[k]!r}")
    for k, value in enumerate(second):
        if value < 0:
            raise ValueError(f"{non_negative_name}[{k}] must be non-negative, got {non_negative[k]!r}")
    return first, second


def _schedule(paths: FluidPaths, releases: tuple[Fraction, ...],
              orderings: tuple[tuple[Fraction, tuple[int, ...]], ...],
              pieces: Sequence[tuple[int, Fraction, Fraction, int]]) -> FluidSchedule:
    transmissions = _merged(paths, pieces)
    n = len(releases)
    finish = [Fraction(0)] * n
    path_bytes = [[Fraction(0)] * paths.n_paths for _ in range(n)]
    for t in transmissions:
        finish[t.stream] = max(finish[t.stream], t.end + paths.latencies[t.path])
        path_bytes[t.stream][t.path] += t.bytes
    return FluidSchedule(orderings, transmissions, tuple(finish),
                         tuple(f - r for f, r in zip(finish, releases)), tuple(tuple(b) for b in path_bytes))


def priority_schedule(paths: FluidPaths, sizes: Sequence[Number], releases: Sequence[Number],
                      order: Sequence[int]) -> FluidSchedule:
    """The streams allocated in the priority ordering ``order`` ([jonglez20] Sec. IV-B).

    Each stream in turn takes ECF in the transmit time the streams before it left free,
    from its release on: the smallest finish date at which its bytes fit, with the data
    on all the paths it uses arriving together (module docstring).

    Parameters
    ----------
    paths : FluidPaths
    sizes : sequence of numbers
        ``S_m`` in bytes, each positive.
    releases : sequence of numbers
        ``r_m``, each non-negative, in the paths' time unit.
    order : sequence of int
        A permutation of the stream indices, the highest priority first.

    Raises
    ------
    ValueError
        On a size that is not positive, a negative release, lengths that differ or an
        ``order`` that is not a permutation.
    """
    exact_sizes, exact_releases = _check_streams(sizes, releases)
    ordering = tuple(int(m) for m in order)
    if sorted(ordering) != list(range(len(exact_sizes))):
        raise ValueError(f"order must be a permutation of 0..{len(exact_sizes) - 1}, got {list(order)!r}")
    busy: Busy = [[] for _ in range(paths.n_paths)]
    for m in ordering:
        finish = _earliest_finish(paths, busy, exact_sizes[m], exact_releases[m])
        _reserve(paths, busy, m, exact_releases[m], finish)
    pieces = [(p, start, end, m) for p in range(paths.n_paths) for start, end, m in busy[p]]
    return _schedule(paths, exact_releases, ((min(exact_releases), ordering),), pieces)


def best_ordering(paths: FluidPaths, sizes: Sequence[Number], releases: Sequence[Number],
                  metric: Metric = "mean") -> FluidSchedule:
    """The offline algorithm of [jonglez20] Sec. IV-B: every priority ordering, the best kept.

    "We implement a simple offline algorithm that tests all possible priority orderings
    between streams. [...] The algorithm then selects the ordering that yields the best
    value of the chosen metric (average completion time or maximum completion time)."
    Each ordering is scheduled by :func:`priority_schedule`; among orderings of equal
    value the lexicographically smallest is kept.

    Parameters
    ----------
    paths, sizes, releases
        As :func:`priority_schedule`.
    metric : {"mean", "max"}
        The completion-time statistic to minimize.

    Raises
    ------
    ValueError
        With more than :data:`MAX_ENUMERATED_STREAMS` streams, an unknown metric, or bad
        streams (:func:`priority_schedule`).
    """
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}")
    exact_sizes, exact_releases = _check_streams(sizes, releases)
    n = len(exact_sizes)
    if n > MAX_ENUMERATED_STREAMS:
        raise ValueError(f"the enumeration of orderings takes at most {MAX_ENUMERATED_STREAMS} streams "
                         f"({math.factorial(MAX_ENUMERATED_STREAMS):,} orderings); got {n}")
    best: FluidSchedule | None = None
    for order in itertools.permutations(range(n)):  # lexicographic: a tie keeps the first
        schedule = priority_schedule(paths, exact_sizes, exact_releases, order)
        if best is None or schedule.value(metric) < best.value(metric):
            best = schedule
    assert best is not None
    return best


def online_srpt_ecf(paths: FluidPaths, sizes: Sequence[Number], releases: Sequence[Number]) -> FluidSchedule:
    """SRPT-ECF run online in the fluid model ([jonglez20] Sec. IV-A).

    At each release date the streams released and not yet fully sent are ordered by
    eq. (5), ``max(C*(S_k), T_in-flight(k))`` with ``S_k`` their bytes not yet sent (ties
    by index), and allocated from that date in that ordering (:func:`priority_schedule`
    with every release at that date); the plan holds until the next release. The
    schedule's ``orderings`` lists the ordering chosen at each release date.

    Parameters
    ----------
    paths, sizes, releases
        As :func:`priority_schedule`.
    """
    exact_sizes, exact_releases = _check_streams(sizes, releases)
    n = len(exact_sizes)
    sent: list[tuple[int, Fraction, Fraction, int]] = []  # (path, start, end, stream) before the current date
    plan: list[tuple[int, Fraction, Fraction, int]] = []
    orderings: list[tuple[Fraction, tuple[int, ...]]] = []
    for now in sorted(set(exact_releases)):
        sent += [(p, start, min(end, now), m) for p, start, end, m in plan if start < now]
        remaining = list(exact_sizes)
        arrival = [Fraction(0)] * n
        for p, start, end, m in sent:
            remaining[m] -= paths.rates[p] * (end - start)
            arrival[m] = max(arrival[m], end + paths.latencies[p])
        active = [m for m in range(n) if exact_releases[m] <= now and remaining[m] > 0]
        isolated = {m: max(paths.ecf_completion(remaining[m]), arrival[m] - now) for m in active}  # eq. (5)
        order = tuple(sorted(active, key=lambda m: (isolated[m], m)))
        orderings.append((now, order))
        busy: Busy = [[] for _ in range(paths.n_paths)]
        for m in order:
            finish = _earliest_finish(paths, busy, remaining[m], now)
            _reserve(paths, busy, m, now, finish)
        plan = [(p, start, end, m) for p in range(paths.n_paths) for start, end, m in busy[p]]
    return _schedule(paths, exact_releases, tuple(orderings), sent + plan)
