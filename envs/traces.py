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

import math
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from .errors import ScenarioError, TraceError

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
_MAX_SECONDS = 1e9
_MAX_ABS_NS = 10**18
_MAX_MAHIMAHI_MS = 10**12
_MAX_PACKET_BYTES = 65535
_INT64_MAX = int(np.iinfo(np.int64).max)

_TIME_UNITS: dict[str, float] = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}
_RATE_UNITS: dict[str, float] = {
    "bps": 1.0,
    "kbps": 1e3,
    "Mbps": 1e6,
    "Gbps": 1e9,
    "Bps": 8.0,
    "kBps": 8e3,
    "MBps": 8e6,
}
_CACHE_ENTRIES = 64

_T = TypeVar("_T")


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
        start = _readonly_int64(self.start_ns, "start_ns")
        rate = _readonly_int64(self.rate_bps, "rate_bps")
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
        if cycle != 0 and not int(start[-1]) < cycle <= _INT64_MAX:
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
        ends = np.append(self.start_ns[1:], self.cycle_ns if self.cycle_ns else _INT64_MAX)
        lengths = np.clip(np.minimum(ends, until_ns) - self.start_ns, 0, None)
        return int(np.dot(lengths.astype(object), self.rate_bps.astype(object)))


def _readonly_int64(values: Any, name: str) -> np.ndarray:
    """A read-only 1-D ``int64`` copy of an integer array; ``ValueError`` otherwise."""
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array; got shape {array.shape}")
    if array.size == 0:
        array = array.astype(np.int64)
    if array.dtype.kind not in "iu":
        raise ValueError(f"{name} must hold integers; got dtype {array.dtype}")
    if array.dtype.kind == "u" and array.size and int(array.max()) > _INT64_MAX:
        raise ValueError(f"{name} holds a value beyond int64: {int(array.max())}")
    result = array.astype(np.int64, copy=True)
    result.setflags(write=False)
    return result


def _time_argument(value: Any, name: str, *, allow_zero: bool) -> int:
    """An integer ns argument of a schedule method; ``ValueError`` otherwise."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer number of ns; got {value!r}")
    lowest = 0 if allow_zero else 1
    if not lowest <= value <= _INT64_MAX:
        raise ValueError(f"{name} must be in [{lowest}, {_INT64_MAX}]; got {value}")
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


class _Missing:
    """Stands for the value of a key that is absent from a configuration."""

    def __repr__(self) -> str:
        return "nothing (the key is missing)"


_MISSING = _Missing()


def _sub(field: str, key: str) -> str:
    """The dotted path of ``key`` inside ``field``."""
    return f"{field}.{key}" if field else key


def _is_number(value: Any) -> bool:
    """Whether ``value`` is an int or float (numpy ones included) and not a bool."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    )


def _format_bound(value: float) -> str:
    """A bound as text, without a trailing ``.0``."""
    return str(int(value)) if float(value).is_integer() else repr(value)


def _number(
    value: Any,
    field: str,
    *,
    lo: float | None = None,
    hi: float | None = None,
    lo_open: bool = False,
    hi_open: bool = False,
    what: str = "a finite number",
) -> float:
    """A finite number within the given bounds, as a float; ``ScenarioError`` otherwise."""
    expected = what
    if lo is not None and hi is not None:
        expected += (
            f" in {'(' if lo_open else '['}{_format_bound(lo)}, "
            f"{_format_bound(hi)}{')' if hi_open else ']'}"
        )
    elif lo is not None:
        expected += f" {'>' if lo_open else '>='} {_format_bound(lo)}"
    elif hi is not None:
        expected += f" {'<' if hi_open else '<='} {_format_bound(hi)}"
    if not _is_number(value):
        raise ScenarioError(field, value, expected)
    try:
        number = float(value)
    except OverflowError:
        raise ScenarioError(field, value, expected) from None
    if not math.isfinite(number):
        raise ScenarioError(field, value, expected)
    if lo is not None and (number < lo or (lo_open and number == lo)):
        raise ScenarioError(field, value, expected)
    if hi is not None and (number > hi or (hi_open and number == hi)):
        raise ScenarioError(field, value, expected)
    return number


def _integer(value: Any, field: str, *, lo: int | None = None, hi: int | None = None) -> int:
    """An integer (not a bool, not a float) within the given bounds; ``ScenarioError`` otherwise."""
    expected = "an integer"
    if lo is not None and hi is not None:
        expected += f" in [{lo}, {hi}]"
    elif lo is not None:
        expected += f" >= {lo}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ScenarioError(field, value, expected)
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise ScenarioError(field, value, expected)
    return int(value)


def _boolean(value: Any, field: str) -> bool:
    """A bool; ``ScenarioError`` otherwise."""
    if not isinstance(value, (bool, np.bool_)):
        raise ScenarioError(field, value, "true or false")
    return bool(value)


def _choice(value: Any, field: str, choices: Iterable[str]) -> str:
    """One of ``choices`` (a string); ``ScenarioError`` otherwise."""
    options = tuple(choices)
    if not isinstance(value, str) or value not in options:
        raise ScenarioError(field, value, "one of " + ", ".join(repr(c) for c in options))
    return value


def _text(value: Any, field: str, what: str = "a non-empty string") -> str:
    """A non-empty string; ``ScenarioError`` otherwise."""
    if not isinstance(value, str) or not value:
        raise ScenarioError(field, value, what)
    return value


def _file_name(value: Any, field: str) -> str:
    """A file path given as a non-empty string or path object, as a string."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    return _text(value, field, "a file path (a non-empty string)")


def _mapping(value: Any, field: str, expected: str) -> dict[Any, Any]:
    """A shallow copy of a mapping; ``ScenarioError`` otherwise."""
    if not isinstance(value, Mapping):
        raise ScenarioError(field, value, expected)
    return dict(value)


def _check_keys(config: Mapping[Any, Any], field: str, allowed: Iterable[str]) -> None:
    """Raise ``ScenarioError`` for the first key of ``config`` that is not in ``allowed``."""
    names = tuple(allowed)
    for key, value in config.items():
        if key not in names:
            raise ScenarioError(
                _sub(field, str(key)),
                value,
                f"a known key ({str(key)!r} is unknown); allowed keys: " + ", ".join(names),
            )


def _column(value: Any, field: str) -> str | int:
    """A column given by header name (non-empty string) or by 0-based index."""
    if isinstance(value, str) and value:
        return value
    if (
        not isinstance(value, (bool, np.bool_))
        and isinstance(value, (int, np.integer))
        and value >= 0
    ):
        return int(value)
    raise ScenarioError(field, value, "a column name (string) or a 0-based column index (int >= 0)")


def _delimiter(value: Any, field: str) -> str:
    """``"whitespace"`` or a single delimiter character."""
    if isinstance(value, str) and (
        value == "whitespace" or (len(value) == 1 and value not in "\r\n")
    ):
        return value
    raise ScenarioError(
        field, value, "'whitespace' or a single character such as ',', ';' or '\\t'"
    )


def _header(config: Mapping[str, Any], field: str, columns: Iterable[str | int | None]) -> bool:
    """The ``header`` option: defaults to whether any column is named; named ones need it."""
    named = any(isinstance(column, str) for column in columns)
    header = _boolean(config.get("header", named), _sub(field, "header"))
    if named and not header:
        raise ScenarioError(
            _sub(field, "header"), header, "true, because a column is given by name"
        )
    return header


def _seconds(value: Any, field: str, *, positive: bool = False) -> float:
    """A time in seconds: ``>= 0`` (``> 0`` when ``positive``) and at most 1e9 s."""
    return _number(
        value, field, lo=0.0, lo_open=positive, hi=_MAX_SECONDS, what="a time in seconds"
    )


def _to_ns(seconds: float) -> int:
    """Seconds to integer nanoseconds, rounded to nearest."""
    return round(seconds * 1e9)


def _mbps(value: Any, field: str) -> float:
    """A rate in Mbps within ``[0, 10**6]``."""
    return _number(value, field, lo=0.0, hi=_MAX_MBPS, what="a rate in Mbps")


def _to_bps(mbps: float) -> int:
    """Mbps to integer bit/s, rounded to nearest."""
    return round(mbps * 1e6)


# ---------------------------------------------------------------------------------------
# Reading files (shared with mpsched.envs.workloads)
# ---------------------------------------------------------------------------------------

_cache: dict[tuple[Any, ...], Any] = {}


def _resolve(file: str, base_dir: Path | None) -> Path:
    """``file`` as a path, relative ones taken against ``base_dir`` (or the CWD)."""
    path = Path(file).expanduser()
    if path.is_absolute():
        return path
    return (Path(base_dir) if base_dir is not None else Path.cwd()) / path


def _cached(path: Path, parser: Callable[..., _T], *options: Any) -> _T:
    """``parser(path, lines, *options)``, remembered per file identity and options.

    The key is the resolved path, the file's modification time and size, the parser and its
    options, so an edited file is read again. At most ``_CACHE_ENTRIES`` results are kept;
    the oldest goes first. Parsers must return immutable values.
    """
    try:
        info = path.stat()
    except FileNotFoundError:
        raise TraceError(path, None, "file not found") from None
    except OSError as error:
        raise TraceError(path, None, f"cannot be read: {error.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise TraceError(path, None, "not a regular file")
    key = (str(path.resolve()), info.st_mtime_ns, info.st_size, parser.__qualname__, options)
    if key not in _cache:
        result = parser(path, _read_lines(path), *options)
        if len(_cache) >= _CACHE_ENTRIES:
            del _cache[next(iter(_cache))]
        _cache[key] = result
    return _cache[key]


def _read_lines(path: Path) -> list[str]:
    """The lines of a UTF-8 text file (a leading byte-order mark is dropped)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        raise TraceError(
            path, None, f"not UTF-8 text ({error.reason} at byte {error.start})"
        ) from None
    except OSError as error:
        raise TraceError(path, None, f"cannot be read: {error.strerror}") from None
    return [line.rstrip("\r") for line in text.split("\n")]


def _split(line: str, delimiter: str) -> list[str]:
    """Cells of a line; surrounding spaces and double quotes are removed from each cell."""
    if delimiter == "whitespace":
        return line.split()
    return [cell.strip().strip('"') for cell in line.split(delimiter)]


def _rows(
    path: Path,
    lines: list[str],
    delimiter: str,
    header: bool,
    columns: Mapping[str, str | int],
    exact_fields: int | None = None,
) -> Iterator[tuple[int, dict[str, str]]]:
    """Data rows of a delimited text file as ``(line number, {option: cell})``.

    Blank lines and lines whose first non-blank character is ``#`` are skipped. With
    ``header`` the first other line names the columns; ``columns`` maps each option name
    (e.g. ``"time_column"``) to a column name or 0-based index (only indices without header).
    """
    index = None if header else {option: int(column) for option, column in columns.items()}
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        cells = _split(stripped, delimiter)
        if index is None:
            index = _header_index(path, number, cells, columns)
            continue
        if exact_fields is not None and len(cells) != exact_fields:
            raise TraceError(
                path, number, f"expected {exact_fields} fields, got {len(cells)}: {stripped!r}"
            )
        for option, position in index.items():
            if position >= len(cells):
                raise TraceError(
                    path,
                    number,
                    f"missing column: {option} is column {position} (0-based) but the line "
                    f"has {len(cells)} fields: {stripped!r}",
                )
        yield number, {option: cells[position] for option, position in index.items()}


def _header_index(
    path: Path, number: int, cells: list[str], columns: Mapping[str, str | int]
) -> dict[str, int]:
    """Column positions of ``columns`` in the header line ``cells``."""
    index: dict[str, int] = {}
    for option, column in columns.items():
        if isinstance(column, str):
            if column not in cells:
                raise TraceError(
                    path,
                    number,
                    f"unknown column name {column!r} ({option}); the header has {cells!r}",
                )
            index[option] = cells.index(column)
        elif column >= len(cells):
            raise TraceError(
                path,
                number,
                f"{option} {column} is out of range; the header has {len(cells)} columns {cells!r}",
            )
        else:
            index[option] = column
    return index


def _cell_number(path: Path, number: int, cell: str, what: str) -> float:
    """A finite float parsed from a cell; ``TraceError`` otherwise."""
    try:
        value = float(cell)
    except ValueError:
        raise TraceError(path, number, f"{what} {cell!r} is not a number") from None
    if not math.isfinite(value):
        raise TraceError(path, number, f"{what} {cell!r} is not a finite number")
    return value


def _cell_time_ns(path: Path, number: int, cell: str, unit: str) -> int:
    """A time cell in ``unit`` as integer ns, rounded to nearest."""
    ns = _cell_number(path, number, cell, "time") * _TIME_UNITS[unit]
    if abs(ns) > _MAX_ABS_NS:
        raise TraceError(path, number, f"time {cell!r} {unit} is out of range (more than 1e9 s)")
    return round(ns)


def _timeline(
    path: Path, times_ns: list[int], lines: list[int], cells: list[str], noun: str
) -> tuple[np.ndarray, int]:
    """Offsets of strictly increasing sample times from the first one, and the median interval.

    Raises ``TraceError`` when there is no sample, only one (the interval is then unknown) or
    a time that is not later than the one before.
    """
    if not times_ns:
        raise TraceError(path, None, f"no {noun}s (empty trace)")
    if len(times_ns) == 1:
        raise TraceError(
            path,
            lines[0],
            f"only one {noun}; at least two are needed to infer the {noun} interval",
        )
    times = np.asarray(times_ns, dtype=np.int64)
    intervals = np.diff(times)
    backwards = np.flatnonzero(intervals <= 0)
    if backwards.size:
        k = int(backwards[0]) + 1
        raise TraceError(
            path,
            lines[k],
            f"time {cells[k]!r} is not later than the previous {noun}'s time {cells[k - 1]!r} "
            f"(line {lines[k - 1]}); times must be strictly increasing",
        )
    return times - times[0], round(float(np.median(intervals)))


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
    for number, cells in _rows(path, lines, delimiter, header, columns, exact_fields):
        time_ns = _cell_time_ns(path, number, cells["time_column"], time_unit)
        rate = _cell_number(path, number, cells["rate_column"], "rate") * _RATE_UNITS[rate_unit]
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
    offsets, last_interval = _timeline(path, times, numbers, time_cells, "sample")
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
    if _is_number(config):
        return {"type": "constant", "mbps": _mbps(config, field)}
    cfg = _mapping(
        config,
        field,
        "a number of Mbps or a mapping with a 'type' key (constant, square, piecewise, trace)",
    )
    kind = _choice(cfg.get("type", _MISSING), _sub(field, "type"), _NORMALIZERS)
    return _NORMALIZERS[kind](cfg, field)


def _normalize_constant(cfg: dict[Any, Any], field: str) -> dict[str, Any]:
    _check_keys(cfg, field, ("type", "mbps"))
    return {"type": "constant", "mbps": _mbps(cfg.get("mbps", _MISSING), _sub(field, "mbps"))}


def _normalize_square(cfg: dict[Any, Any], field: str) -> dict[str, Any]:
    _check_keys(cfg, field, ("type", "high_mbps", "low_mbps", "period_s", "phase_s", "duty"))
    period = _seconds(cfg.get("period_s", _MISSING), _sub(field, "period_s"), positive=True)
    phase = _number(
        cfg.get("phase_s", 0.0),
        _sub(field, "phase_s"),
        lo=-_MAX_SECONDS,
        hi=_MAX_SECONDS,
        what="a time in seconds",
    )
    duty = _number(
        cfg.get("duty", 0.5), _sub(field, "duty"), lo=0.0, hi=1.0, lo_open=True, hi_open=True
    )
    period_ns = _to_ns(period)
    if not 0 < round(duty * period_ns) < period_ns:
        raise ScenarioError(
            _sub(field, "duty"),
            duty,
            f"a duty that leaves both the high and the low part at least 1 ns long with "
            f"period_s = {period!r}",
        )
    return {
        "type": "square",
        "high_mbps": _mbps(cfg.get("high_mbps", _MISSING), _sub(field, "high_mbps")),
        "low_mbps": _mbps(cfg.get("low_mbps", _MISSING), _sub(field, "low_mbps")),
        "period_s": period,
        "phase_s": phase,
        "duty": duty,
    }


def _normalize_piecewise(cfg: dict[Any, Any], field: str) -> dict[str, Any]:
    _check_keys(cfg, field, ("type", "points", "mode", "cycle_s"))
    points_field = _sub(field, "points")
    raw = cfg.get("points", _MISSING)
    if not isinstance(raw, (list, tuple)) or not raw:
        raise ScenarioError(points_field, raw, "a non-empty list of [t_s, mbps] pairs")
    points: list[list[float]] = []
    previous_ns = -1
    for i, point in enumerate(raw):
        item = f"{points_field}[{i}]"
        if not isinstance(point, (list, tuple)) or len(point) != 2:
            raise ScenarioError(item, point, "a [t_s, mbps] pair")
        t = _seconds(point[0], f"{item}[0]")
        mbps = _mbps(point[1], f"{item}[1]")
        if i == 0 and t != 0:
            raise ScenarioError(f"{item}[0]", point[0], "0 (the first point starts at time 0)")
        if _to_ns(t) <= previous_ns:
            raise ScenarioError(
                f"{item}[0]",
                point[0],
                f"a time later (by at least 1 ns) than the previous point's {points[-1][0]!r} s",
            )
        previous_ns = _to_ns(t)
        points.append([t, mbps])
    mode = _choice(cfg.get("mode", "hold"), _sub(field, "mode"), ("hold", "loop"))
    result: dict[str, Any] = {"type": "piecewise", "points": points, "mode": mode}
    cycle_field = _sub(field, "cycle_s")
    if mode == "hold":
        if "cycle_s" in cfg:
            raise ScenarioError(
                cycle_field, cfg["cycle_s"], "no cycle_s when mode is 'hold' (use mode 'loop')"
            )
        return result
    cycle = _seconds(cfg.get("cycle_s", _MISSING), cycle_field, positive=True)
    if _to_ns(cycle) <= previous_ns:
        raise ScenarioError(
            cycle_field,
            cycle,
            f"a cycle longer than the last point's time {points[-1][0]!r} s (required when "
            f"mode is 'loop')",
        )
    result["cycle_s"] = cycle
    return result


def _normalize_trace(cfg: dict[Any, Any], field: str) -> dict[str, Any]:
    fmt = _choice(cfg.get("format", _MISSING), _sub(field, "format"), _FORMAT_KEYS)
    _check_keys(cfg, field, _TRACE_KEYS + _FORMAT_KEYS[fmt])
    offset = _seconds(cfg.get("offset_s", 0.0), _sub(field, "offset_s"))
    random_offset = _boolean(cfg.get("random_offset", False), _sub(field, "random_offset"))
    if random_offset and offset != 0:
        raise ScenarioError(
            _sub(field, "offset_s"), offset, "0 when random_offset is true (the offset is drawn)"
        )
    result: dict[str, Any] = {
        "type": "trace",
        "format": fmt,
        "file": _file_name(cfg.get("file", _MISSING), _sub(field, "file")),
        "mode": _choice(cfg.get("mode", "loop"), _sub(field, "mode"), ("loop", "hold")),
        "scale": _number(cfg.get("scale", 1.0), _sub(field, "scale"), lo=0.0, lo_open=True),
        "offset_s": offset,
        "random_offset": random_offset,
    }
    if fmt == "mahimahi":
        result["packet_bytes"] = _integer(
            cfg.get("packet_bytes", 1500), _sub(field, "packet_bytes"), lo=1, hi=_MAX_PACKET_BYTES
        )
        result["bin_ms"] = _integer(cfg.get("bin_ms", 1), _sub(field, "bin_ms"), lo=1, hi=10**9)
    elif fmt == "csv":
        time_column = _column(cfg.get("time_column", 0), _sub(field, "time_column"))
        rate_column = _column(cfg.get("rate_column", 1), _sub(field, "rate_column"))
        result["time_column"] = time_column
        result["rate_column"] = rate_column
        result["time_unit"] = _choice(
            cfg.get("time_unit", _MISSING), _sub(field, "time_unit"), _TIME_UNITS
        )
        result["rate_unit"] = _choice(
            cfg.get("rate_unit", _MISSING), _sub(field, "rate_unit"), _RATE_UNITS
        )
        result["delimiter"] = _delimiter(cfg.get("delimiter", ","), _sub(field, "delimiter"))
        result["header"] = _header(cfg, field, (time_column, rate_column))
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
        starts = [_to_ns(t) for t, _ in cfg["points"]]
        rates = [_to_bps(mbps) for _, mbps in cfg["points"]]
        return _merged(starts, rates, _to_ns(cfg["cycle_s"]) if cfg["mode"] == "loop" else 0)
    return _build_trace(cfg, base_dir, rng)


def _build_square(cfg: dict[str, Any]) -> BandwidthSchedule:
    period = _to_ns(cfg["period_s"])
    high = round(cfg["duty"] * period)
    phase = _to_ns(cfg["phase_s"]) % period
    starts = sorted({0, -phase % period, (high - phase) % period})
    rates = [
        _to_bps(cfg["high_mbps"] if (start + phase) % period < high else cfg["low_mbps"])
        for start in starts
    ]
    return _merged(starts, rates, period)


def _build_trace(
    cfg: dict[str, Any], base_dir: Path | None, rng: np.random.Generator | None
) -> BandwidthSchedule:
    path = _resolve(cfg["file"], base_dir)
    if cfg["format"] == "mahimahi":
        trace = _cached(path, _parse_mahimahi, cfg["packet_bytes"], cfg["bin_ms"])
    elif cfg["format"] == "cooked":
        trace = _cached(path, _parse_samples, "whitespace", False, 0, 1, "s", "Mbps", 2)
    else:
        trace = _cached(
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
        offset = _to_ns(cfg["offset_s"])
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
