"""The ``trace`` bandwidth: a rate read from a trace file, in one of three formats.

Keys: ``format`` (``"mahimahi"``, ``"cooked"`` or ``"csv"``), ``file``, ``mode``
(``"loop"`` or ``"hold"``), ``scale`` (1.0), ``offset_s`` (0.0), ``random_offset`` (false)
and the format's options.

Formats
-------
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

Notes
-----
In the ``cooked`` and ``csv`` formats, blank lines and lines starting with ``#`` or ``%`` are
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

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ScenarioError, TraceError
from ..textfiles import (
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
from ..validate import (
    MISSING,
    check_bool,
    check_choice,
    check_file_name,
    check_integer,
    check_keys,
    check_number,
    check_seconds,
    field_path,
    to_ns,
)
from .common import BandwidthKind
from .schedule import MAX_RATE_BPS, BandwidthSchedule, merged

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

_TRACE_KEYS = ("type", "format", "file", "mode", "scale", "offset_s", "random_offset")
_FORMAT_KEYS: dict[str, tuple[str, ...]] = {
    "mahimahi": ("packet_bytes", "bin_ms"),
    "cooked": (),
    "csv": ("time_column", "rate_column", "time_unit", "rate_unit", "delimiter", "header"),
}


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
    return merged(starts[order], all_rates[order], length_ms * 1_000_000)


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
    return merged(offsets, rates, int(offsets[-1]) + last_interval)


def normalize(cfg: dict[Any, Any], field: str) -> dict[str, Any]:
    """Validate a ``trace`` configuration and complete it with defaults (:class:`.BandwidthKind`)."""
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


def build(cfg: dict[str, Any], base_dir: Path | None, rng: np.random.Generator | None) -> BandwidthSchedule:
    """The trace file's schedule, shifted and scaled (:class:`.BandwidthKind`)."""
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
        return merged(head, rate[k:], 0)
    tail = start[: k + 1] + (cycle - offset_ns)
    inside = tail < cycle
    return merged(
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
    return merged(schedule.start_ns, rates, schedule.cycle_ns)


KIND = BandwidthKind(name="trace", normalize=normalize, build=build)
"""The ``trace`` bandwidth type."""
