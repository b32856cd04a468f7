"""The bandwidth schedule: a piecewise-constant link rate, and the constructor every kind builds it with.

:class:`BandwidthSchedule` holds integer nanosecond segment starts, integer bit/s rates and
an optional repeat period (section 3 of ``docs/model.md``) and answers the rate, service
time and average questions the simulator's rule defines; :func:`merged` makes one with
consecutive segments of equal rate merged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..validate import INT64_MAX, readonly_int64

MAX_RATE_BPS = 10**12
"""Largest rate a schedule may hold, in bit/s."""


@dataclass(frozen=True, eq=False)
class BandwidthSchedule:
    """A piecewise-constant link rate (``docs/model.md``, section 3).

    Segment ``k`` holds ``rate_bps[k]`` from ``start_ns[k]`` until ``start_ns[k + 1]``. With
    ``cycle_ns == 0`` the last segment never ends; otherwise it ends at ``cycle_ns`` and the
    whole schedule repeats with that period.

    Parameters
    ----------
    start_ns : numpy.ndarray
        Integer segment starts in ns: ``start_ns[0] == 0``, strictly increasing. Stored as a
        read-only ``int64`` array.
    rate_bps : numpy.ndarray
        Integer rate of each segment in bit/s, each in ``[0, 10**12]``. Stored as a
        read-only ``int64`` array of the same length.
    cycle_ns : int
        0, or the repeat period in ns, greater than ``start_ns[-1]``.

    Raises
    ------
    ValueError
        If an invariant above does not hold.
    """

    start_ns: np.ndarray
    rate_bps: np.ndarray
    cycle_ns: int

    def __post_init__(self) -> None:
        start = readonly_int64(self.start_ns, "start_ns")
        rate = readonly_int64(self.rate_bps, "rate_bps")
        if start.size == 0:
            raise ValueError("BandwidthSchedule needs at least one segment; start_ns is empty")
        if rate.size != start.size:
            raise ValueError(
                f"start_ns and rate_bps must have the same length; got {start.size} and {rate.size}"
            )
        if start[0] != 0:
            raise ValueError(f"start_ns[0] must be 0; got {int(start[0])}")
        steps = np.flatnonzero(np.diff(start) <= 0)
        if steps.size:
            k = int(steps[0]) + 1
            raise ValueError(
                f"start_ns must be strictly increasing; start_ns[{k}] = {int(start[k])} follows "
                f"start_ns[{k - 1}] = {int(start[k - 1])}"
            )
        bad = np.flatnonzero((rate < 0) | (rate > MAX_RATE_BPS))
        if bad.size:
            k = int(bad[0])
            raise ValueError(
                f"rate_bps must lie in [0, {MAX_RATE_BPS}]; rate_bps[{k}] = {int(rate[k])}"
            )
        cycle = self.cycle_ns
        if isinstance(cycle, (bool, np.bool_)) or not isinstance(cycle, (int, np.integer)):
            raise ValueError(f"cycle_ns must be an integer; got {cycle!r}")
        if cycle != 0 and not int(start[-1]) < cycle <= INT64_MAX:
            raise ValueError(
                f"cycle_ns must be 0 or greater than start_ns[-1] = {int(start[-1])} (and fit "
                f"in int64); got {cycle}"
            )
        object.__setattr__(self, "start_ns", start)
        object.__setattr__(self, "rate_bps", rate)
        object.__setattr__(self, "cycle_ns", int(cycle))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BandwidthSchedule):
            return NotImplemented
        return (
            self.cycle_ns == other.cycle_ns
            and np.array_equal(self.start_ns, other.start_ns)
            and np.array_equal(self.rate_bps, other.rate_bps)
        )

    def rate_at(self, t_ns: int) -> int:
        """Rate in bit/s at time ``t_ns``.

        Parameters
        ----------
        t_ns : int
            Time in ns, ``>= 0``.

        Returns
        -------
        int
            The rate of the segment containing ``t_ns``.
        """
        t = _time_argument(t_ns, "t_ns", allow_zero=True)
        if self.cycle_ns:
            t %= self.cycle_ns
        k = int(np.searchsorted(self.start_ns, t, side="right")) - 1
        return int(self.rate_bps[k])

    def service_end_ns(self, t0_ns: int, wire_bytes: int, by_ns: int | None = None) -> int | None:
        """When a packet of ``wire_bytes`` that starts service at ``t0_ns`` finishes
        (``docs/model.md`` section 3, the core's rule exactly).

        Parameters
        ----------
        t0_ns : int
            Start of service in ns, ``>= 0``.
        wire_bytes : int
            Packet size on the wire (payload and header), ``> 0``.
        by_ns : int, optional
            Give up at this time: the walk over segments stops there.

        Returns
        -------
        int or None
            The finish time; None if it never finishes, or not by ``by_ns``.
        """
        t = _time_argument(t0_ns, "t0_ns", allow_zero=True)
        work = 8 * int(wire_bytes) * 10**9
        n = len(self.start_ns)
        base = t - t % self.cycle_ns if self.cycle_ns else 0
        k = int(np.searchsorted(self.start_ns, t - base, side="right")) - 1
        if self.cycle_ns and not self.rate_bps.any():
            return None
        while True:
            rate = int(self.rate_bps[k])
            if k + 1 < n:
                end: int | None = base + int(self.start_ns[k + 1])
            elif self.cycle_ns:
                end = base + self.cycle_ns
            else:
                end = None  # the last segment never ends
            if rate > 0:
                need = -(-work // rate)
                if end is None or t + need <= end:
                    return t + need if by_ns is None or t + need <= by_ns else None
                work -= rate * (end - t)
            if end is None or (by_ns is not None and end >= by_ns):
                return None
            t = end
            k += 1
            if k == n:
                k, base = 0, base + self.cycle_ns

    def peak_bps(self) -> int:
        """Largest rate of any segment, in bit/s."""
        return int(self.rate_bps.max())

    def min_bps(self) -> int:
        """Smallest rate of any segment, in bit/s."""
        return int(self.rate_bps.min())

    def mean_bps(self, horizon_ns: int) -> float:
        """Time-average rate over ``[0, horizon_ns)``, in bit/s.

        Parameters
        ----------
        horizon_ns : int
            Length of the averaging window in ns, ``> 0``.

        Returns
        -------
        float
            The exact integral of the rate over the window (computed with Python integers)
            divided by ``horizon_ns``.
        """
        horizon = _time_argument(horizon_ns, "horizon_ns", allow_zero=False)
        return self._bit_ns_until(horizon) / horizon

    def bits_until(self, t_ns: int) -> int:
        """Whole bits the link can carry over ``[0, t_ns)``: the exact integral of its rate."""
        return self._bit_ns_until(t_ns) // 1_000_000_000

    def _bit_ns_until(self, t_ns: int) -> int:
        """The integral of the rate over ``[0, t_ns)`` in bit/s x ns."""
        if self.cycle_ns:
            cycles, rest = divmod(t_ns, self.cycle_ns)
            return cycles * self._integral(self.cycle_ns) + self._integral(rest)
        return self._integral(t_ns)

    def rate_changes_until(self, t_ns: int) -> int:
        """An upper bound on the times in ``(0, t_ns]`` at which the rate changes
        (the rate events of docs/model.md section 8)."""
        rate = self.rate_bps
        differs = rate[1:] != rate[:-1]
        if not self.cycle_ns:
            return int(np.count_nonzero(differs & (self.start_ns[1:] <= t_ns)))
        per_cycle = int(np.count_nonzero(differs)) + int(rate[0] != rate[-1])
        return per_cycle * (t_ns // self.cycle_ns + 1)

    def _integral(self, until_ns: int) -> int:
        """The rate's integral (bit/s x ns) over ``[0, until_ns)`` within one period (or ever,
        without a cycle)."""
        ends = np.append(self.start_ns[1:], self.cycle_ns if self.cycle_ns else INT64_MAX)
        lengths = np.clip(np.minimum(ends, until_ns) - self.start_ns, 0, None)
        return int(np.dot(lengths.astype(object), self.rate_bps.astype(object)))


def _time_argument(value: Any, name: str, *, allow_zero: bool) -> int:
    """An integer ns argument of a schedule method; ``ValueError`` otherwise."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer number of ns; got {value!r}")
    lowest = 0 if allow_zero else 1
    if not lowest <= value <= INT64_MAX:
        raise ValueError(f"{name} must be in [{lowest}, {INT64_MAX}]; got {value}")
    return int(value)


def merged(start_ns: Any, rate_bps: Any, cycle_ns: int) -> BandwidthSchedule:
    """A schedule with consecutive segments of equal rate merged into one."""
    start = np.asarray(start_ns, dtype=np.int64)
    rate = np.asarray(rate_bps, dtype=np.int64)
    keep = np.ones(rate.size, dtype=bool)
    keep[1:] = rate[1:] != rate[:-1]
    return BandwidthSchedule(start[keep], rate[keep], int(cycle_ns))
