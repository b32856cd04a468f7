"""Path outages: times when a path is down (docs/model.md sections 4 and 6).

A path's ``outages`` are the intervals during which it is down, as when a Wi-Fi link is
lost or a handover breaks a cellular path: every data packet and every acknowledgement
whose way from one end to the other meets an outage is lost. Nobody tells the sender: it
sees timeouts, backs off, and the first retransmission after the path is back gets
through. Given as

- a list ``[[start_s, end_s], ...]`` (down in ``[start_s, end_s)``), or
- a file: ``{file, format: csv, start_column (0), end_column (1), time_unit ("s"),
  delimiter (","), header}``, one outage per line.

Outages are in time order and do not overlap or touch (merge those that do).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .errors import ScenarioError, TraceError
from .textfiles import (
    TIME_UNITS,
    cached_parse,
    cell_time_ns,
    check_column,
    check_delimiter,
    check_header,
    resolve_file,
    table_rows,
)
from .validate import check_choice, check_file_name, check_keys, check_seconds, field_path, to_ns

__all__ = ["MAX_OUTAGES", "OutageSpec"]

MAX_OUTAGES = 1 << 20
"""Most outages of one path (the core's bound, docs/model.md section 12)."""

_FILE_KEYS = ("file", "format", "start_column", "end_column", "time_unit", "delimiter", "header")


def _intervals(value: Any, field: str) -> tuple[tuple[float, float], ...]:
    if not isinstance(value, (list, tuple)) or not value:
        raise ScenarioError(field, value, "a non-empty list of [start_s, end_s] or a file mapping")
    if len(value) > MAX_OUTAGES:
        raise ScenarioError(field, f"{len(value)} outages", f"at most {MAX_OUTAGES}")
    rows = []
    previous_end = -1.0
    for k, row in enumerate(value):
        where = f"{field}[{k}]"
        if not isinstance(row, (list, tuple)) or len(row) != 2:
            raise ScenarioError(where, row, "[start_s, end_s]")
        start = check_seconds(row[0], f"{where}[0]")
        end = check_seconds(row[1], f"{where}[1]")
        if to_ns(end) <= to_ns(start):  # compared in whole nanoseconds, as the core sees them
            raise ScenarioError(f"{where}[1]", row[1], f"an end at least 1 ns after the start ({start} s)")
        if previous_end >= 0 and to_ns(start) <= to_ns(previous_end):
            raise ScenarioError(f"{where}[0]", row[0],
                                f"a start after the previous outage's end ({previous_end} s): outages are in "
                                "time order and do not touch")
        previous_end = end
        rows.append((start, end))
    return tuple(rows)


def _normalize_file(value: dict[Any, Any], field: str) -> dict[str, Any]:
    check_keys(value, field, _FILE_KEYS)
    start_column = check_column(value.get("start_column", 0), field_path(field, "start_column"))
    end_column = check_column(value.get("end_column", 1), field_path(field, "end_column"))
    return {
        "file": check_file_name(value.get("file"), field_path(field, "file")),
        "format": check_choice(value.get("format", "csv"), field_path(field, "format"), ("csv",)),
        "start_column": start_column,
        "end_column": end_column,
        "time_unit": check_choice(value.get("time_unit", "s"), field_path(field, "time_unit"), TIME_UNITS),
        "delimiter": check_delimiter(value.get("delimiter", ","), field_path(field, "delimiter")),
        "header": check_header(value, field, (start_column, end_column)),
    }


def _parse_csv(path: Path, lines: list[str], start_column: str | int, end_column: str | int, time_unit: str,
               delimiter: str, header: bool) -> tuple[np.ndarray, np.ndarray]:
    starts: list[int] = []
    ends: list[int] = []
    previous_line = 0
    columns = {"start_column": start_column, "end_column": end_column}
    for number, cells in table_rows(path, lines, delimiter, header, columns):
        start = cell_time_ns(path, number, cells["start_column"], time_unit)
        end = cell_time_ns(path, number, cells["end_column"], time_unit)
        if start < 0 or end <= start:
            raise TraceError(path, number, f"an outage needs 0 <= start < end; got [{cells['start_column']}, "
                             f"{cells['end_column']})")
        if ends and start <= ends[-1]:
            raise TraceError(path, number, f"the outage starts before the one on line {previous_line} ends; "
                             "outages are in time order and do not touch")
        starts.append(start)
        ends.append(end)
        previous_line = number
    if not starts:
        raise TraceError(path, None, "no outages (empty file)")
    if len(starts) > MAX_OUTAGES:
        raise TraceError(path, None, f"{len(starts)} outages; at most {MAX_OUTAGES}")
    out = (np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64))
    for array in out:
        array.flags.writeable = False
    return out


@dataclass(frozen=True)
class OutageSpec:
    """The outages of a path (see the module's documentation).

    Parameters
    ----------
    intervals : tuple of (start_s, end_s)
        Given as a list (empty with a file).
    file : dict or None
        The canonical file configuration.
    """

    intervals: tuple[tuple[float, float], ...] = ()
    file: dict[str, Any] | None = None

    @classmethod
    def from_value(cls, value: Any, field: str, base_dir: Path | None) -> OutageSpec:
        if isinstance(value, dict):
            spec = cls(file=_normalize_file(value, field))
            spec.down_ns(base_dir)  # parsed now, so that a bad file fails here, naming file and line
            return spec
        return cls(intervals=_intervals(value, field))

    def to_value(self) -> Any:
        return dict(self.file) if self.file is not None else [list(row) for row in self.intervals]

    def down_ns(self, base_dir: Path | None) -> tuple[np.ndarray, np.ndarray]:
        """Starts and ends of the outages, integer ns."""
        if self.file is None:
            return (np.array([to_ns(a) for a, _ in self.intervals], dtype=np.int64),
                    np.array([to_ns(b) for _, b in self.intervals], dtype=np.int64))
        f = self.file
        return cached_parse(resolve_file(f["file"], base_dir), _parse_csv, f["start_column"], f["end_column"],
                            f["time_unit"], f["delimiter"], f["header"])

    def core_fields(self, base_dir: Path | None, end_ns: int) -> dict[str, np.ndarray]:
        """The subflow dict's outage fields; outages that begin after ``end_ns`` left out."""
        starts, ends = self.down_ns(base_dir)
        keep = starts <= end_ns
        return {"down_start_ns": starts[keep], "down_end_ns": ends[keep]}
