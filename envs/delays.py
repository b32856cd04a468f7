"""Delay dynamics of a path: delay steps, delay traces and jitter (docs/model.md 4 and 6).

Without a ``delay`` mapping a path's propagation delays are constant (its ``rtt_ms`` or
one-way delays). With one:

``jitter_ms``, ``rev_jitter_ms`` (0)
    Bounds of the uniform jitter each data packet (forward) and each acknowledgement
    (reverse) adds to its one-way delay. The wire keeps order, so jitter delays packets but
    never reorders them (a packet that would overtake the one before it arrives with it).
``steps``
    ``[[t_s, rtt_ms], ...]`` (split equally between the two directions) or
    ``[[t_s, fwd_ms, rev_ms], ...]``: from ``t_s`` on, the one-way delays are these (a
    handover to a path of another delay). Times are positive and strictly increasing.
``trace``
    Delay samples from a file; each holds until the next and the last holds forever.
    ``file``, ``format`` and ``offset_s`` (0.0: the episode starts this far into the
    trace). Formats:

    ``csv``
        ``time_column`` (0) and ``delay_column`` (1), by 0-based index or, with a header
        line, by name; ``time_unit`` (``"s"``) and ``delay_unit`` (``"ms"``): ``s``, ``ms``,
        ``us`` or ``ns``; ``delimiter`` (``","`` or ``"whitespace"``); ``header``;
        ``value``: ``"one_way"`` (the forward delay; the reverse keeps the path's) or
        ``"rtt"`` (split equally). Times are taken from the first sample's.
    ``ping``
        The output of ``ping`` (iputils or BSD): one RTT per reply line (``... bytes from
        ...: icmp_seq=N ... time=T ms``), split equally. With ``ping -D`` each reply's
        bracketed Unix time minus its RTT is the time of the sample (when the probe left);
        otherwise ``icmp_seq`` times ``interval_s`` (1.0, ping's default). Other lines
        (the header, timeouts, unreachable messages, duplicates, statistics) carry no
        sample.

    The trace's delay at ``offset_s`` is the path's delay from the start (also the
    handshake's RTT sample); the path's own delay is then what a ``one_way`` trace leaves
    to the reverse direction.

Only one of ``steps`` and ``trace`` may be given.
"""

from __future__ import annotations

import re
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
    table_rows,
)
from .validate import (
    check_choice,
    check_file_name,
    check_keys,
    check_mapping,
    check_number,
    check_seconds,
    field_path,
    to_ns,
)

__all__ = ["DelaySchedule", "DelaySpec", "MAX_DELAY_STEPS"]

MAX_DELAY_STEPS = 1 << 20
"""Most delay steps of one path (the core's bound, docs/model.md section 12)."""

_MAX_DELAY_MS = 1e7
_MAX_DELAY_NS = 1 << 50

_TRACE_KEYS = ("file", "format", "offset_s")
_FORMAT_KEYS: dict[str, tuple[str, ...]] = {
    "csv": ("time_column", "delay_column", "time_unit", "delay_unit", "delimiter", "header", "value"),
    "ping": ("interval_s",),
}

# A reply line of iputils or BSD ping, with the optional "[unix time]" prefix of ping -D.
_PING_REPLY = re.compile(
    r"^\s*(?:\[(?P<stamp>\d+(?:\.\d+)?)\]\s*)?\d+ bytes from .*?icmp_seq=(?P<seq>\d+)\b.*?"
    r"\btime[=<](?P<rtt>\d+(?:\.\d+)?) ?ms\b"
)


@dataclass(frozen=True)
class DelaySchedule:
    """The core's delay inputs of one subflow (docs/model.md section 1).

    Parameters
    ----------
    fwd_delay_ns, rev_delay_ns : int
        One-way delays before the first step.
    start_ns, fwd_step_ns, rev_step_ns : numpy.ndarray of int64
        The steps: from ``start_ns[k]`` on, the delays are ``fwd_step_ns[k]`` and
        ``rev_step_ns[k]`` (starts positive, strictly increasing; no step repeats the
        delays before it).
    fwd_jitter_ns, rev_jitter_ns : int
        Jitter bounds.
    """

    fwd_delay_ns: int
    rev_delay_ns: int
    start_ns: np.ndarray
    fwd_step_ns: np.ndarray
    rev_step_ns: np.ndarray
    fwd_jitter_ns: int
    rev_jitter_ns: int

    def core_fields(self) -> dict[str, Any]:
        """The subflow dict's delay fields."""
        fields: dict[str, Any] = {
            "fwd_delay_ns": self.fwd_delay_ns,
            "rev_delay_ns": self.rev_delay_ns,
            "fwd_jitter_ns": self.fwd_jitter_ns,
            "rev_jitter_ns": self.rev_jitter_ns,
        }
        if self.start_ns.size:
            fields.update(delay_start_ns=self.start_ns, fwd_delay_step_ns=self.fwd_step_ns,
                          rev_delay_step_ns=self.rev_step_ns)
        return fields

    def peak_rtt_ns(self) -> int:
        """The longest round trip the schedule can give a packet (delays plus jitter)."""
        fwd = max([self.fwd_delay_ns, *self.fwd_step_ns.tolist()])
        rev = max([self.rev_delay_ns, *self.rev_step_ns.tolist()])
        return int(fwd + rev + self.fwd_jitter_ns + self.rev_jitter_ns)


def _delay_ms(value: Any, field: str) -> float:
    return check_number(value, field, lo=0.0, hi=_MAX_DELAY_MS)


def _steps(value: Any, field: str) -> tuple[tuple[float, float, float], ...]:
    """``[[t_s, rtt_ms] | [t_s, fwd_ms, rev_ms], ...]`` as (t_s, fwd_s, rev_s) rows."""
    if not isinstance(value, (list, tuple)) or not value:
        raise ScenarioError(field, value, "a non-empty list of [t_s, rtt_ms] or [t_s, fwd_ms, rev_ms] rows")
    if len(value) > MAX_DELAY_STEPS:
        raise ScenarioError(field, f"{len(value)} steps", f"at most {MAX_DELAY_STEPS} steps")
    rows = []
    previous = 0.0
    for k, row in enumerate(value):
        where = f"{field}[{k}]"
        if not isinstance(row, (list, tuple)) or len(row) not in (2, 3):
            raise ScenarioError(where, row, "[t_s, rtt_ms] or [t_s, fwd_ms, rev_ms]")
        t = check_seconds(row[0], f"{where}[0]", positive=True)
        if t <= previous:
            raise ScenarioError(f"{where}[0]", row[0], f"a time after the previous step's ({previous} s)")
        previous = t
        if len(row) == 2:
            half = _delay_ms(row[1], f"{where}[1]") / 2000.0
            rows.append((t, half, half))
        else:
            rows.append((t, _delay_ms(row[1], f"{where}[1]") / 1000.0, _delay_ms(row[2], f"{where}[2]") / 1000.0))
    return tuple(rows)


def _normalize_trace(value: Any, field: str) -> dict[str, Any]:
    cfg = check_mapping(value, field, "a trace mapping (file, format, ...)")
    fmt = check_choice(cfg.get("format"), field_path(field, "format"), _FORMAT_KEYS)
    check_keys(cfg, field, _TRACE_KEYS + _FORMAT_KEYS[fmt])
    out: dict[str, Any] = {
        "file": check_file_name(cfg.get("file"), field_path(field, "file")),
        "format": fmt,
        "offset_s": check_seconds(cfg.get("offset_s", 0.0), field_path(field, "offset_s")),
    }
    if fmt == "csv":
        time_column = check_column(cfg.get("time_column", 0), field_path(field, "time_column"))
        delay_column = check_column(cfg.get("delay_column", 1), field_path(field, "delay_column"))
        out.update(
            time_column=time_column,
            delay_column=delay_column,
            time_unit=check_choice(cfg.get("time_unit", "s"), field_path(field, "time_unit"), TIME_UNITS),
            delay_unit=check_choice(cfg.get("delay_unit", "ms"), field_path(field, "delay_unit"), TIME_UNITS),
            delimiter=check_delimiter(cfg.get("delimiter", ","), field_path(field, "delimiter")),
            header=check_header(cfg, field, (time_column, delay_column)),
            value=check_choice(cfg.get("value", "one_way"), field_path(field, "value"), ("one_way", "rtt")),
        )
    else:
        out["interval_s"] = check_seconds(cfg.get("interval_s", 1.0), field_path(field, "interval_s"), positive=True)
    return out


def _checked_samples(path: Path, times_ns: list[int], delays_ns: list[int], lines: list[int],
                     what: str) -> tuple[np.ndarray, np.ndarray]:
    """Sample times from the first one and their delays; times must increase strictly."""
    if not times_ns:
        raise TraceError(path, None, f"no {what} samples (empty trace)")
    for k in range(1, len(times_ns)):
        if times_ns[k] <= times_ns[k - 1]:
            raise TraceError(path, lines[k], f"sample time is not later than the previous sample's "
                             f"(line {lines[k - 1]}); times must be strictly increasing")
    times = np.asarray(times_ns, dtype=np.int64)
    samples = np.asarray(delays_ns, dtype=np.int64)
    samples.flags.writeable = False
    offsets = times - times[0]
    offsets.flags.writeable = False
    return offsets, samples


def _delay_ns(path: Path, number: int, cell: str, unit: str) -> int:
    ns = round(cell_number(path, number, cell, "delay") * TIME_UNITS[unit])
    if not 0 <= ns <= _MAX_DELAY_NS:
        raise TraceError(path, number, f"delay {cell!r} {unit} is outside [0, 2^50] ns")
    return ns


def _parse_csv(path: Path, lines: list[str], time_column: str | int, delay_column: str | int, time_unit: str,
               delay_unit: str, delimiter: str, header: bool) -> tuple[np.ndarray, np.ndarray]:
    times, delays, numbers = [], [], []
    columns = {"time_column": time_column, "delay_column": delay_column}
    for number, cells in table_rows(path, lines, delimiter, header, columns):
        times.append(cell_time_ns(path, number, cells["time_column"], time_unit))
        delays.append(_delay_ns(path, number, cells["delay_column"], delay_unit))
        numbers.append(number)
    return _checked_samples(path, times, delays, numbers, "delay")


def _parse_ping(path: Path, lines: list[str], interval_s: float) -> tuple[np.ndarray, np.ndarray]:
    times, rtts, numbers = [], [], []
    stamped: bool | None = None
    for number, line in enumerate(lines, start=1):
        if " bytes from " not in line or "(DUP!)" in line:
            continue
        match = _PING_REPLY.match(line)
        if match is None:
            raise TraceError(path, number, f"a reply line without icmp_seq=N and time=T ms: {line.strip()!r}")
        has_stamp = match["stamp"] is not None
        if stamped is None:
            stamped = has_stamp
        elif stamped != has_stamp:
            raise TraceError(path, number, "some reply lines have ping -D's [unix time] and some do not")
        rtt_ns = _delay_ns(path, number, match["rtt"], "ms")
        if has_stamp:
            seconds, _, fraction = match["stamp"].partition(".")  # exactly: a float loses the ns
            stamp_ns = int(seconds) * 10**9 + int((fraction + "0" * 9)[:9])
            times.append(stamp_ns - rtt_ns)  # when the probe left
        else:
            times.append(round(int(match["seq"]) * interval_s * 1e9))
        rtts.append(rtt_ns)
        numbers.append(number)
    return _checked_samples(path, times, rtts, numbers, "RTT")


@dataclass(frozen=True)
class DelaySpec:
    """Delay dynamics of a path (see the module's documentation for the keys).

    Parameters
    ----------
    fwd_jitter_s, rev_jitter_s : float
        Jitter bounds.
    steps : tuple of (t_s, fwd_s, rev_s)
        Delay steps (empty with a trace).
    trace : dict or None
        The canonical trace configuration.
    """

    fwd_jitter_s: float = 0.0
    rev_jitter_s: float = 0.0
    steps: tuple[tuple[float, float, float], ...] = ()
    trace: dict[str, Any] | None = None

    KEYS = ("jitter_ms", "rev_jitter_ms", "steps", "trace")

    @classmethod
    def from_value(cls, value: Any, field: str, base_dir: Path | None) -> DelaySpec:
        d = check_mapping(value, field, "a mapping of jitter_ms, rev_jitter_ms, steps or trace")
        check_keys(d, field, cls.KEYS)
        if "steps" in d and "trace" in d:
            raise ScenarioError(field_path(field, "trace"), d["trace"], "only one of steps and trace")
        spec = cls(
            fwd_jitter_s=_delay_ms(d.get("jitter_ms", 0.0), field_path(field, "jitter_ms")) / 1000.0,
            rev_jitter_s=_delay_ms(d.get("rev_jitter_ms", 0.0), field_path(field, "rev_jitter_ms")) / 1000.0,
            steps=_steps(d["steps"], field_path(field, "steps")) if "steps" in d else (),
            trace=_normalize_trace(d["trace"], field_path(field, "trace")) if "trace" in d else None,
        )
        if spec.trace is not None:  # parsed now, so that a bad file fails here, naming file and line
            spec._samples(base_dir)
        return spec

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"jitter_ms": self.fwd_jitter_s * 1000.0, "rev_jitter_ms": self.rev_jitter_s * 1000.0}
        if self.steps:
            d["steps"] = [[t, fwd * 1000.0, rev * 1000.0] for t, fwd, rev in self.steps]
        if self.trace is not None:
            d["trace"] = dict(self.trace)
        return d

    def _samples(self, base_dir: Path | None) -> tuple[np.ndarray, np.ndarray]:
        assert self.trace is not None
        t = self.trace
        path = resolve_file(t["file"], base_dir)
        if t["format"] == "csv":
            return cached_parse(path, _parse_csv, t["time_column"], t["delay_column"], t["time_unit"],
                                t["delay_unit"], t["delimiter"], t["header"])
        return cached_parse(path, _parse_ping, t["interval_s"])

    def schedule(self, fwd_delay_s: float, rev_delay_s: float, base_dir: Path | None,
                 end_ns: int) -> DelaySchedule:
        """The core's delay inputs for a path of these base delays, steps after ``end_ns``
        left out (they could not change anything)."""
        base = (to_ns(fwd_delay_s), to_ns(rev_delay_s))
        if self.trace is not None:
            offsets, samples = self._samples(base_dir)
            if self.trace.get("value", "rtt") == "rtt":
                fwd = samples // 2
                rev = samples - fwd
            else:
                fwd = samples
                rev = np.full(samples.size, base[1], dtype=np.int64)
            times = offsets - to_ns(self.trace["offset_s"])
        else:
            times = np.array([to_ns(t) for t, _, _ in self.steps], dtype=np.int64)
            fwd = np.array([to_ns(f) for _, f, _ in self.steps], dtype=np.int64)
            rev = np.array([to_ns(r) for _, _, r in self.steps], dtype=np.int64)
        started = np.flatnonzero(times <= 0)
        if started.size:  # the last sample at or before the start sets the delays from 0 on
            k = int(started[-1])
            base = (int(fwd[k]), int(rev[k]))
        # a step is the last of the steps that share its nanosecond, and starts after 0
        last_of_its_ns = np.append(times[1:] != times[:-1], True)
        keep = (times > 0) & (times <= end_ns) & last_of_its_ns
        times, fwd, rev = times[keep], fwd[keep], rev[keep]
        previous_fwd = np.concatenate(([base[0]], fwd[:-1]))
        previous_rev = np.concatenate(([base[1]], rev[:-1]))
        changed = (fwd != previous_fwd) | (rev != previous_rev)  # a step repeating the delays is no step
        if np.count_nonzero(changed) > MAX_DELAY_STEPS:
            raise ScenarioError("delay", f"{np.count_nonzero(changed)} delay changes within the horizon",
                                f"at most {MAX_DELAY_STEPS}; shorten the horizon or thin the trace")
        return DelaySchedule(base[0], base[1], times[changed], fwd[changed], rev[changed],
                             to_ns(self.fwd_jitter_s), to_ns(self.rev_jitter_s))

