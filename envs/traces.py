"""Bandwidth schedules and the loaders that build them from configurations and trace files.

A :class:`BandwidthSchedule` is the piecewise-constant link rate of section 3 of
``docs/model.md``: integer nanosecond segment starts, integer bit/s rates and an optional
repeat period. Schedules are described in scenarios by a *bandwidth configuration*, a plain
mapping (or a bare number of Mbps) that :func:`normalize_bandwidth` validates and completes
with defaults and :func:`build_bandwidth` turns into a schedule.

Configuration types
-------------------
``constant``
    ``{"type": "constant", "mbps": x}``; a bare number ``x`` means the same.
``square``
    ``high_mbps``, ``low_mbps``, ``period_s``, ``phase_s`` (0.0), ``duty`` (0.5). The wave is
    high during the first ``duty * period`` of each period; the schedule at time ``t`` is the
    wave at ``t + phase_s``. Times are rounded to whole nanoseconds: the period to
    ``round(period_s * 1e9)`` ns and the high part to ``round(duty * period_ns)`` ns.
``piecewise``
    ``points`` (``[[t_s, mbps], ...]``, first time 0, strictly increasing), ``mode``
    (``"hold"``: the last rate holds forever, or ``"loop"``) and ``cycle_s`` (required exactly
    when ``mode`` is ``"loop"``; greater than the last time).
``trace``
    ``format`` (``"mahimahi"``, ``"cooked"`` or ``"csv"``), ``file``, ``mode`` (``"loop"``
    or ``"hold"``), ``scale`` (1.0), ``offset_s`` (0.0), ``random_offset`` (false) and the
    format's options. See :func:`build_bandwidth` for the file formats.

Rates are given in Mbps (10**6 bit/s) at the configuration edge and rounded to whole bit/s;
every rate must lie in ``[0, 10**12]`` bit/s.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .errors import ScenarioError, TraceError
from .textfiles import (
    TIME_UNITS,
    cached_parse,
    cell_number,
    cell_time_ns,
    check_column,
    check_delimiter,
    check_header,
    resolve_file,
    sample_timeline,
    table_rows,
)
from .validate import (
    MAX_SECONDS,
    MISSING,
    INT64_MAX,
    check_bool,
    check_choice,
    check_file_name,
    check_integer,
    check_keys,
    check_mapping,
    check_number,
    check_seconds,
    field_path,
    is_number,
    readonly_int64,
    to_ns,
)

__all__ = [
    "MAX_RATE_BPS",
    "BandwidthSchedule",
    "normalize_bandwidth",
    "build_bandwidth",
    "load_trace_file",
]

MAX_RATE_BPS = 10**12
"""Largest rate a schedule may hold, in bit/s."""

_MAX_MBPS = MAX_RATE_BPS / 1e6
_MAX_MAHIMAHI_MS = 10**12
_MAX_PACKET_BYTES = 65535

_RATE_UNITS: dict[str, float] = {
    "bps": 1.0,
    "kbps": 1e3,
    "Mbps": 1e6,
    "Gbps": 1e9,
    "Bps": 8.0,
    "kBps": 8e3,
    "MBps": 8e6,
}



# ---------------------------------------------------------------------------------------
# The schedule
# ---------------------------------------------------------------------------------------


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
        if self.cycle_ns:
            cycles, rest = divmod(horizon, self.cycle_ns)
            total = cycles * self._integral(self.cycle_ns) + self._integral(rest)
        else:
            total = self._integral(horizon)
        return total / horizon

    def _integral(self, until_ns: int) -> int:
        """Bits delivered over ``[0, until_ns)`` within one period (or ever, without a cycle)."""
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


def _merged(start_ns: Any, rate_bps: Any, cycle_ns: int) -> BandwidthSchedule:
    """A schedule with consecutive segments of equal rate merged into one."""
    start = np.asarray(start_ns, dtype=np.int64)
    rate = np.asarray(rate_bps, dtype=np.int64)
    keep = np.ones(rate.size, dtype=bool)
    keep[1:] = rate[1:] != rate[:-1]
    return BandwidthSchedule(start[keep], rate[keep], int(cycle_ns))


# ---------------------------------------------------------------------------------------
# Configuration validation helpers (shared with mpsched.envs.workloads)
# ---------------------------------------------------------------------------------------






































def _mbps(value: Any, field: str) -> float:
    """A rate in Mbps within ``[0, 10**6]``."""
    return check_number(value, field, lo=0.0, hi=_MAX_MBPS, what="a rate in Mbps")


def _to_bps(mbps: float) -> int:
    """Mbps to integer bit/s, rounded to nearest."""
    return round(mbps * 1e6)


# ---------------------------------------------------------------------------------------
# Reading files (shared with mpsched.envs.workloads)
# ---------------------------------------------------------------------------------------





















# ---------------------------------------------------------------------------------------
# Trace parsers
# ---------------------------------------------------------------------------------------


def _parse_mahimahi(
    path: Path, lines: list[str], packet_bytes: int, bin_ms: int
) -> BandwidthSchedule:
    """A mahimahi packet-delivery trace as a cyclic schedule (cycle = last timestamp)."""
    stamps: list[int] = []
    last_line = 0
    for number, line in enumerate(lines, start=1):
        token = line.strip()
        if not token:
            continue
        if not (token.isascii() and token.isdigit()):
            raise TraceError(
                path,
                number,
                f"expected one non-negative integer millisecond timestamp, got {token!r}",
            )
        stamp = int(token)
        if stamp > _MAX_MAHIMAHI_MS:
            raise TraceError(
                path, number, f"timestamp {stamp} ms is too large (at most {_MAX_MAHIMAHI_MS})"
            )
        if stamps and stamp < stamps[-1]:
            raise TraceError(
                path,
                number,
                f"timestamp {stamp} ms is earlier than {stamps[-1]} ms on line {last_line}; "
                f"timestamps must be non-decreasing",
            )
        stamps.append(stamp)
        last_line = number
    if not stamps:
        raise TraceError(path, None, "no timestamps (empty trace)")
    length_ms = stamps[-1]
    if length_ms == 0:
        raise TraceError(
            path,
            last_line,
            "the last timestamp is 0 ms; the trace repeats with period = last timestamp, "
            "which must be > 0",
        )
    n_bins = -(-length_ms // bin_ms)
    bins, counts = np.unique(
        np.asarray(stamps, dtype=np.int64) % length_ms // bin_ms, return_counts=True
    )
    lengths_ms = np.where(bins == n_bins - 1, length_ms - (n_bins - 1) * bin_ms, bin_ms)
    bits_times_1000 = counts * (packet_bytes * 8 * 1000)
    rates = (2 * bits_times_1000 + lengths_ms) // (2 * lengths_ms)
    if int(rates.max()) > MAX_RATE_BPS:
        k = int(np.argmax(rates))
        raise TraceError(
            path,
            None,
            f"{int(counts[k])} packets of {packet_bytes} bytes in the {int(lengths_ms[k])} ms "
            f"starting at {int(bins[k]) * bin_ms} ms make {int(rates[k])} bit/s, more than "
            f"{MAX_RATE_BPS}",
        )
    following = np.append(bins[1:], n_bins)
    gaps = bins[following > bins + 1] + 1
    starts = np.concatenate((bins, gaps)) * (bin_ms * 1_000_000)
    all_rates = np.concatenate((rates, np.zeros(gaps.size, dtype=np.int64)))
    order = np.argsort(starts, kind="stable")
    return _merged(starts[order], all_rates[order], length_ms * 1_000_000)


def _parse_samples(
    path: Path,
    lines: list[str],
    delimiter: str,
    header: bool,
    time_column: str | int,
    rate_column: str | int,
    time_unit: str,
    rate_unit: str,
    exact_fields: int | None,
) -> BandwidthSchedule:
    """A (time, rate) sample file as a cyclic schedule.

    Each sample's rate holds until the next sample; the last holds for the median sample
    interval, which ends the cycle.
    """
    times: list[int] = []
    rates: list[int] = []
    numbers: list[int] = []
    time_cells: list[str] = []
    columns = {"time_column": time_column, "rate_column": rate_column}
    for number, cells in table_rows(path, lines, delimiter, header, columns, exact_fields):
        time_ns = cell_time_ns(path, number, cells["time_column"], time_unit)
        rate = cell_number(path, number, cells["rate_column"], "rate") * _RATE_UNITS[rate_unit]
        if rate < 0:
            raise TraceError(
                path,
                number,
                f"negative rate {cells['rate_column']!r} {rate_unit}; rates must be >= 0",
            )
        if rate > MAX_RATE_BPS:
            raise TraceError(
                path,
                number,
                f"rate {cells['rate_column']!r} {rate_unit} exceeds {MAX_RATE_BPS} bit/s",
            )
        times.append(time_ns)
        rates.append(round(rate))
        numbers.append(number)
        time_cells.append(cells["time_column"])
    offsets, last_interval = sample_timeline(path, times, numbers, time_cells, "sample")
    return _merged(offsets, rates, int(offsets[-1]) + last_interval)


# ---------------------------------------------------------------------------------------
# Normalization
# ---------------------------------------------------------------------------------------

_TRACE_KEYS = ("type", "format", "file", "mode", "scale", "offset_s", "random_offset")
_FORMAT_KEYS: dict[str, tuple[str, ...]] = {
    "mahimahi": ("packet_bytes", "bin_ms"),
    "cooked": (),
    "csv": ("time_column", "rate_column", "time_unit", "rate_unit", "delimiter", "header"),
}


def normalize_bandwidth(config: Any, field: str) -> dict[str, Any]:
    """Validate a bandwidth configuration and complete it with defaults.

    Parameters
    ----------
    config : float or Mapping
        A bare number of Mbps (meaning ``{"type": "constant", "mbps": number}``) or a
        mapping with a ``type`` key; see the module documentation for the types.
    field : str
        Dotted path of the configuration in the scenario, e.g. ``"paths[0].bandwidth"``;
        it prefixes the field named by errors.

    Returns
    -------
    dict
        The canonical form: a plain JSON-able dict with every key present (numbers of
        seconds and Mbps as floats). Normalizing it again returns an equal dict.

    Raises
    ------
    ScenarioError
        For an unknown type or key, a missing key, a value of the wrong type (booleans are
        not numbers) or out of range, NaN or infinity.
    """
    if is_number(config):
        return {"type": "constant", "mbps": _mbps(config, field)}
    cfg = check_mapping(
        config,
        field,
        "a number of Mbps or a mapping with a 'type' key (constant, square, piecewise, trace)",
    )
    kind = check_choice(cfg.get("type", MISSING), field_path(field, "type"), _NORMALIZERS)
    return _NORMALIZERS[kind](cfg, field)


def _normalize_constant(cfg: dict[Any, Any], field: str) -> dict[str, Any]:
    check_keys(cfg, field, ("type", "mbps"))
    return {"type": "constant", "mbps": _mbps(cfg.get("mbps", MISSING), field_path(field, "mbps"))}


def _normalize_square(cfg: dict[Any, Any], field: str) -> dict[str, Any]:
    check_keys(cfg, field, ("type", "high_mbps", "low_mbps", "period_s", "phase_s", "duty"))
    period = check_seconds(cfg.get("period_s", MISSING), field_path(field, "period_s"), positive=True)
    phase = check_number(
        cfg.get("phase_s", 0.0),
        field_path(field, "phase_s"),
        lo=-MAX_SECONDS,
        hi=MAX_SECONDS,
        what="a time in seconds",
    )
    duty = check_number(
        cfg.get("duty", 0.5), field_path(field, "duty"), lo=0.0, hi=1.0, lo_open=True, hi_open=True
    )
    period_ns = to_ns(period)
    if not 0 < round(duty * period_ns) < period_ns:
        raise ScenarioError(
            field_path(field, "duty"),
            duty,
            f"a duty that leaves both the high and the low part at least 1 ns long with "
            f"period_s = {period!r}",
        )
    return {
        "type": "square",
        "high_mbps": _mbps(cfg.get("high_mbps", MISSING), field_path(field, "high_mbps")),
        "low_mbps": _mbps(cfg.get("low_mbps", MISSING), field_path(field, "low_mbps")),
        "period_s": period,
        "phase_s": phase,
        "duty": duty,
    }


def _normalize_piecewise(cfg: dict[Any, Any], field: str) -> dict[str, Any]:
    check_keys(cfg, field, ("type", "points", "mode", "cycle_s"))
    points_field = field_path(field, "points")
    raw = cfg.get("points", MISSING)
    if not isinstance(raw, (list, tuple)) or not raw:
        raise ScenarioError(points_field, raw, "a non-empty list of [t_s, mbps] pairs")
    points: list[list[float]] = []
    previous_ns = -1
    for i, point in enumerate(raw):
        item = f"{points_field}[{i}]"
        if not isinstance(point, (list, tuple)) or len(point) != 2:
            raise ScenarioError(item, point, "a [t_s, mbps] pair")
        t = check_seconds(point[0], f"{item}[0]")
        mbps = _mbps(point[1], f"{item}[1]")
        if i == 0 and t != 0:
            raise ScenarioError(f"{item}[0]", point[0], "0 (the first point starts at time 0)")
        if to_ns(t) <= previous_ns:
            raise ScenarioError(
                f"{item}[0]",
                point[0],
                f"a time later (by at least 1 ns) than the previous point's {points[-1][0]!r} s",
            )
        previous_ns = to_ns(t)
        points.append([t, mbps])
    mode = check_choice(cfg.get("mode", "hold"), field_path(field, "mode"), ("hold", "loop"))
    result: dict[str, Any] = {"type": "piecewise", "points": points, "mode": mode}
    cycle_field = field_path(field, "cycle_s")
    if mode == "hold":
        if "cycle_s" in cfg:
            raise ScenarioError(
                cycle_field, cfg["cycle_s"], "no cycle_s when mode is 'hold' (use mode 'loop')"
            )
        return result
    cycle = check_seconds(cfg.get("cycle_s", MISSING), cycle_field, positive=True)
    if to_ns(cycle) <= previous_ns:
        raise ScenarioError(
            cycle_field,
            cycle,
            f"a cycle longer than the last point's time {points[-1][0]!r} s (required when "
            f"mode is 'loop')",
        )
    result["cycle_s"] = cycle
    return result


def _normalize_trace(cfg: dict[Any, Any], field: str) -> dict[str, Any]:
    fmt = check_choice(cfg.get("format", MISSING), field_path(field, "format"), _FORMAT_KEYS)
    check_keys(cfg, field, _TRACE_KEYS + _FORMAT_KEYS[fmt])
    offset = check_seconds(cfg.get("offset_s", 0.0), field_path(field, "offset_s"))
    random_offset = check_bool(cfg.get("random_offset", False), field_path(field, "random_offset"))
    if random_offset and offset != 0:
        raise ScenarioError(
            field_path(field, "offset_s"), offset, "0 when random_offset is true (the offset is drawn)"
        )
    result: dict[str, Any] = {
        "type": "trace",
        "format": fmt,
        "file": check_file_name(cfg.get("file", MISSING), field_path(field, "file")),
        "mode": check_choice(cfg.get("mode", "loop"), field_path(field, "mode"), ("loop", "hold")),
        "scale": check_number(cfg.get("scale", 1.0), field_path(field, "scale"), lo=0.0, lo_open=True),
        "offset_s": offset,
        "random_offset": random_offset,
    }
    if fmt == "mahimahi":
        result["packet_bytes"] = check_integer(
            cfg.get("packet_bytes", 1500), field_path(field, "packet_bytes"), lo=1, hi=_MAX_PACKET_BYTES
        )
        result["bin_ms"] = check_integer(cfg.get("bin_ms", 1), field_path(field, "bin_ms"), lo=1, hi=10**9)
    elif fmt == "csv":
        time_column = check_column(cfg.get("time_column", 0), field_path(field, "time_column"))
        rate_column = check_column(cfg.get("rate_column", 1), field_path(field, "rate_column"))
        result["time_column"] = time_column
        result["rate_column"] = rate_column
        result["time_unit"] = check_choice(
            cfg.get("time_unit", MISSING), field_path(field, "time_unit"), TIME_UNITS
        )
        result["rate_unit"] = check_choice(
            cfg.get("rate_unit", MISSING), field_path(field, "rate_unit"), _RATE_UNITS
        )
        result["delimiter"] = check_delimiter(cfg.get("delimiter", ","), field_path(field, "delimiter"))
        result["header"] = check_header(cfg, field, (time_column, rate_column))
    return result


_NORMALIZERS: dict[str, Callable[[dict[Any, Any], str], dict[str, Any]]] = {
    "constant": _normalize_constant,
    "square": _normalize_square,
    "piecewise": _normalize_piecewise,
    "trace": _normalize_trace,
}


# ---------------------------------------------------------------------------------------
# Building
# ---------------------------------------------------------------------------------------


def build_bandwidth(
    config: dict[str, Any], base_dir: Path | None, rng: np.random.Generator | None
) -> BandwidthSchedule:
    """Build the schedule a bandwidth configuration describes.

    Parameters
    ----------
    config : dict
        A configuration, normally the output of :func:`normalize_bandwidth` (it is
        normalized again here, under the field name ``"bandwidth"``).
    base_dir : Path or None
        Directory that relative trace file paths are taken against; the current working
        directory when None.
    rng : numpy.random.Generator or None
        Source of the random offset of a trace with ``random_offset``; may be None otherwise.

    Returns
    -------
    BandwidthSchedule
        Consecutive segments of equal rate are merged.

    Raises
    ------
    ScenarioError
        For an invalid configuration, ``random_offset`` without ``rng``, or a ``scale`` that
        pushes a rate above 10**12 bit/s.
    TraceError
        For a trace file that is missing or malformed (with the 1-based line number).

    Notes
    -----
    Trace formats:

    ``mahimahi`` (options ``packet_bytes`` = 1500, ``bin_ms`` = 1)
        One integer millisecond timestamp per line, non-decreasing; each line is one
        delivery opportunity of ``packet_bytes`` bytes. The trace repeats with period
        ``L`` = the last timestamp (``L > 0``); timestamps are folded modulo ``L`` (so ``L``
        lands on 0) and counted in bins of ``bin_ms`` ms. Bin ``k`` gets rate
        ``count * packet_bytes * 8 * 1000 / bin_ms`` bit/s rounded to nearest. When ``L``
        is not a multiple of ``bin_ms`` the last bin is shorter, ``L mod bin_ms`` ms, and
        its rate uses that length, so every packet's bytes are kept.
    ``cooked``
        Per line two whitespace-separated numbers: time in s and throughput in Mbit/s.
    ``csv`` (options ``time_column`` = 0, ``rate_column`` = 1, ``time_unit`` and
    ``rate_unit`` required, ``delimiter`` = ``","``, ``header``)
        Columns given by header name or 0-based index; ``header`` defaults to true exactly
        when a column is named. ``delimiter`` is ``"whitespace"`` or one character; cells
        are stripped of surrounding spaces and double quotes (quoted delimiters are not
        supported).

    In the ``cooked`` and ``csv`` formats, blank lines and lines starting with ``#`` are
    skipped; times must strictly increase and are shifted so that the first is 0; a
    sample's rate holds until the next sample and the last one for the median sample
    interval, which ends the trace's cycle. At least two samples are required.

    ``mode: loop`` repeats the trace with its cycle; ``mode: hold`` keeps the last segment
    forever. The schedule at ``t`` is the trace at ``t + offset`` (wrapped modulo the cycle
    in loop mode); ``random_offset`` draws the offset as a whole number of ns uniformly in
    ``[0, cycle)`` with ``rng.integers``. ``scale`` multiplies every rate (rounded to whole
    bit/s). Parsed files are cached by resolved path, modification time, size and format
    options.
    """
    cfg = normalize_bandwidth(config, "bandwidth")
    kind = cfg["type"]
    if kind == "constant":
        return _merged([0], [_to_bps(cfg["mbps"])], 0)
    if kind == "square":
        return _build_square(cfg)
    if kind == "piecewise":
        starts = [to_ns(t) for t, _ in cfg["points"]]
        rates = [_to_bps(mbps) for _, mbps in cfg["points"]]
        return _merged(starts, rates, to_ns(cfg["cycle_s"]) if cfg["mode"] == "loop" else 0)
    return _build_trace(cfg, base_dir, rng)


def _build_square(cfg: dict[str, Any]) -> BandwidthSchedule:
    period = to_ns(cfg["period_s"])
    high = round(cfg["duty"] * period)
    phase = to_ns(cfg["phase_s"]) % period
    starts = sorted({0, -phase % period, (high - phase) % period})
    rates = [
        _to_bps(cfg["high_mbps"] if (start + phase) % period < high else cfg["low_mbps"])
        for start in starts
    ]
    return _merged(starts, rates, period)


def _build_trace(
    cfg: dict[str, Any], base_dir: Path | None, rng: np.random.Generator | None
) -> BandwidthSchedule:
    path = resolve_file(cfg["file"], base_dir)
    if cfg["format"] == "mahimahi":
        trace = cached_parse(path, _parse_mahimahi, cfg["packet_bytes"], cfg["bin_ms"])
    elif cfg["format"] == "cooked":
        trace = cached_parse(path, _parse_samples, "whitespace", False, 0, 1, "s", "Mbps", 2)
    else:
        trace = cached_parse(
            path,
            _parse_samples,
            cfg["delimiter"],
            cfg["header"],
            cfg["time_column"],
            cfg["rate_column"],
            cfg["time_unit"],
            cfg["rate_unit"],
            None,
        )
    if cfg["random_offset"]:
        if rng is None:
            raise ScenarioError(
                "bandwidth.random_offset",
                True,
                "a numpy Generator passed as rng to draw the offset from (rng is None)",
            )
        offset = int(rng.integers(0, trace.cycle_ns))
    else:
        offset = to_ns(cfg["offset_s"])
    return _scaled(_shifted(trace, offset, cfg["mode"] == "loop"), cfg["scale"], path)


def _shifted(trace: BandwidthSchedule, offset_ns: int, loop: bool) -> BandwidthSchedule:
    """The cyclic ``trace`` read from ``offset_ns`` on, repeating (loop) or holding its end."""
    start, rate, cycle = trace.start_ns, trace.rate_bps, trace.cycle_ns
    if loop:
        offset_ns %= cycle
    k = int(np.searchsorted(start, offset_ns, side="right")) - 1
    head = np.concatenate(([0], start[k + 1 :] - offset_ns))
    if not loop:
        return _merged(head, rate[k:], 0)
    tail = start[: k + 1] + (cycle - offset_ns)
    inside = tail < cycle
    return _merged(
        np.concatenate((head, tail[inside])),
        np.concatenate((rate[k:], rate[: k + 1][inside])),
        cycle,
    )


def _scaled(schedule: BandwidthSchedule, scale: float, path: Path) -> BandwidthSchedule:
    """``schedule`` with every rate multiplied by ``scale`` and rounded to whole bit/s."""
    if scale == 1.0:
        return schedule
    peak = schedule.peak_bps() * scale
    if peak > MAX_RATE_BPS:
        raise ScenarioError(
            "bandwidth.scale",
            scale,
            f"a factor that keeps every rate <= {MAX_RATE_BPS} bit/s (the trace {path} peaks "
            f"at {schedule.peak_bps()} bit/s)",
        )
    rates = np.rint(schedule.rate_bps * scale).astype(np.int64)
    return _merged(schedule.start_ns, rates, schedule.cycle_ns)


def load_trace_file(
    path: str | os.PathLike[str],
    format: str,
    *,
    rng: np.random.Generator | None = None,
    **options: Any,
) -> BandwidthSchedule:
    """Load a bandwidth trace file directly.

    Parameters
    ----------
    path : str or PathLike
        The trace file; a relative path is taken against the current working directory.
    format : str
        ``"mahimahi"``, ``"cooked"`` or ``"csv"``.
    rng : numpy.random.Generator or None
        Needed only with ``random_offset=True``.
    **options
        Any other key of a ``trace`` bandwidth configuration: ``mode``, ``scale``,
        ``offset_s``, ``random_offset`` and the format's options (see
        :func:`build_bandwidth`).

    Returns
    -------
    BandwidthSchedule

    Raises
    ------
    ScenarioError
        For an invalid option (field names start with ``trace.``).
    TraceError
        For a missing or malformed file.
    """
    config = {**options, "type": "trace", "format": format, "file": os.fspath(path)}
    return build_bandwidth(normalize_bandwidth(config, "trace"), None, rng)
