"""The ``frames`` workload: a per-frame text file of a real video (time, size and optionally frame type).

Keys and defaults: ``file`` (required), ``time_column`` 0, ``fps`` (unset, and then
absent from the canonical form),
``size_column`` 1, ``type_column`` None, ``type_map`` {"1": I, "0": P}, ``time_unit`` s,
``size_unit`` bytes, ``delimiter`` whitespace, ``header``, ``loop`` true, ``priority`` and
``weight`` as for ``avc``, ``default_type`` P, ``deadline_ms`` 200, ``start_s`` 0 and
``playout_startup_ms`` (unset).

Frame times must strictly increase; they are shifted so the first frame arrives at
``start_s``. A log without times (one line per frame, in order) is read with
``time_column: null`` and ``fps``: frame ``k`` arrives ``round(k * 1e9 / fps)`` ns after
the first. A time column that holds frame numbers (0, 1, 2, ... or 1, 2, 3, ... read as
seconds: a one-frame-per-second video) is refused as a likely misreading; give ``fps``
and ``time_column: null`` instead (``fps: 1`` for a video that really is one frame per
second). Sizes are rounded up to whole bytes (bits / 8 rounded up). Type cells
are matched as raw strings against ``type_map``. ``header`` defaults to true exactly
when a column is named; blank, ``#`` and ``%`` lines are skipped. With ``loop`` the file
repeats with period = last time - first time + median frame interval;
``frame_rate`` is 1 / median frame interval. At least two frames are required.
Parsed files are cached by resolved path, modification time, size and options.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

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
    check_keys,
    check_mapping,
    field_path,
    to_ns,
)
from .common import (
    FRAME_PRIORITY,
    FRAME_TYPES,
    FRAME_WEIGHT,
    WorkloadKind,
    check_budget,
    check_fps,
    check_keyed,
    check_player,
    check_playout,
    check_priority,
    check_timing,
    check_weight,
    lookup,
    video_deadline,
)
from .table import MAX_BLOCK_BYTES, BlockTable


def _type_map(value: Any, field: str) -> dict[str, str]:
    """Raw type cell -> frame type; integer keys (as YAML reads ``1: I``) become strings."""
    given = check_mapping(value, field, "a mapping from raw type cells to I, P or B")
    result: dict[str, str] = {}
    for key, letter in given.items():
        if isinstance(key, bool) or not isinstance(key, (str, int)):
            raise ScenarioError(field, key, "keys that are raw cell strings such as '1'")
        result[str(key)] = check_choice(letter, field_path(field, str(key)), FRAME_TYPES)
    return result


def normalize(cfg: dict[Any, Any], field: str) -> dict[str, Any]:
    """Validate a ``frames`` configuration and complete it with defaults (:class:`.WorkloadKind`)."""
    check_keys(
        cfg,
        field,
        (
            "type",
            "file",
            "time_column",
            "fps",
            "size_column",
            "type_column",
            "type_map",
            "time_unit",
            "size_unit",
            "delimiter",
            "header",
            "loop",
            "priority",
            "weight",
            "default_type",
            "deadline_ms",
            "start_s",
            "playout_startup_ms",
            "player",
        ),
    )
    raw_fps = cfg.get("fps")
    fps = None if raw_fps is None else check_fps(raw_fps, field_path(field, "fps"))
    raw_time_column = cfg.get("time_column", None if fps is not None else 0)
    if (raw_time_column is None) != (fps is not None):
        raise ScenarioError(field_path(field, "time_column"), raw_time_column,
                            "null exactly when fps numbers the frames (a log without times), a column otherwise")
    time_column = None if raw_time_column is None else check_column(raw_time_column,
                                                                      field_path(field, "time_column"))
    size_column = check_column(cfg.get("size_column", 1), field_path(field, "size_column"))
    raw_type_column = cfg.get("type_column")
    type_column = (
        None if raw_type_column is None else check_column(raw_type_column, field_path(field, "type_column"))
    )
    return {
        "type": "frames",
        "file": check_file_name(cfg.get("file", MISSING), field_path(field, "file")),
        "time_column": time_column,
        **({"fps": fps} if fps is not None else {}),
        "size_column": size_column,
        "type_column": type_column,
        "type_map": _type_map(cfg.get("type_map", {"1": "I", "0": "P"}), field_path(field, "type_map")),
        "time_unit": check_choice(cfg.get("time_unit", "s"), field_path(field, "time_unit"), TIME_UNITS),
        "size_unit": check_choice(
            cfg.get("size_unit", "bytes"), field_path(field, "size_unit"), ("bytes", "bits")
        ),
        "delimiter": check_delimiter(cfg.get("delimiter", "whitespace"), field_path(field, "delimiter")),
        "header": check_header(cfg, field, (time_column, size_column, type_column)),
        "loop": check_bool(cfg.get("loop", True), field_path(field, "loop")),
        "priority": check_keyed(cfg.get("priority", {}), field_path(field, "priority"), FRAME_PRIORITY, check_priority),
        "weight": check_keyed(cfg.get("weight", {}), field_path(field, "weight"), FRAME_WEIGHT, check_weight),
        "default_type": check_choice(
            cfg.get("default_type", "P"), field_path(field, "default_type"), FRAME_TYPES
        ),
        **check_timing(cfg, field, 200.0),
        **check_playout(cfg, field),
        **check_player(cfg, field),
    }


def _frame_numbers(offsets_ns: np.ndarray, cells: list[str]) -> bool:
    """Whether times read as seconds are consecutive whole numbers written as integers
    (``0 1 2 ...``): frame numbers, not times."""
    whole = np.array_equal(offsets_ns, np.arange(offsets_ns.size, dtype=np.int64) * 1_000_000_000)
    return whole and all(c.strip().lstrip("+").isdigit() for c in cells)


@dataclass(frozen=True)
class _FrameTrace:
    """A parsed frame file: offsets from the first frame, sizes, types, median interval."""

    offset_ns: np.ndarray
    size_bytes: np.ndarray
    frame_type: np.ndarray
    interval_ns: int


def _parse_frames(
    path: Path,
    lines: list[str],
    time_column: str | int | None,
    fps: float | None,
    size_column: str | int,
    type_column: str | int | None,
    type_map_items: tuple[tuple[str, str], ...],
    time_unit: str,
    size_unit: str,
    delimiter: str,
    header: bool,
    default_type: str,
) -> _FrameTrace:
    """Parse the lines of a frame file (a :func:`~mpsched.envs.textfiles.cached_parse` parser)."""
    type_map = dict(type_map_items)
    columns: dict[str, str | int] = {"size_column": size_column}
    if time_column is not None:
        columns["time_column"] = time_column
    if type_column is not None:
        columns["type_column"] = type_column
    times: list[int] = []
    sizes: list[int] = []
    types: list[str] = []
    numbers: list[int] = []
    time_cells: list[str] = []
    bound = MAX_BLOCK_BYTES * (8 if size_unit == "bits" else 1)
    for number, cells in table_rows(path, lines, delimiter, header, columns):
        if time_column is None:
            times.append(round(len(times) * 1e9 / cast(float, fps)))
        else:
            times.append(cell_time_ns(path, number, cells["time_column"], time_unit))
        size = cell_number(path, number, cells["size_column"], "frame size")
        if not 0 < size <= bound:
            raise TraceError(
                path,
                number,
                f"frame size {cells['size_column']!r} {size_unit} is out of range; expected "
                f"> 0 and <= {bound}",
            )
        sizes.append(math.ceil(size / 8) if size_unit == "bits" else math.ceil(size))
        if type_column is None:
            types.append(default_type)
        elif cells["type_column"] in type_map:
            types.append(type_map[cells["type_column"]])
        else:
            raise TraceError(
                path,
                number,
                f"frame type {cells['type_column']!r} is not a key of type_map "
                f"{sorted(type_map)!r}",
            )
        numbers.append(number)
        time_cells.append(cells["time_column"] if time_column is not None else str(len(time_cells)))
    offsets, interval = sample_timeline(path, times, numbers, time_cells, "frame")
    if time_column is not None and time_unit == "s" and _frame_numbers(offsets, time_cells):
        raise TraceError(path, numbers[0], f"the time column holds frame numbers ({', '.join(time_cells[:3])}, "
                         "... read as seconds: one frame per second); for a log without times give fps (frames "
                         "per second) and time_column: null (fps: 1 if the video really has one frame a second)")
    size_array = np.array(sizes, dtype=np.int64)
    type_array = np.array(types, dtype=object)
    for array in (offsets, size_array, type_array):
        array.setflags(write=False)
    return _FrameTrace(offsets, size_array, type_array, interval)


def generate(cfg: dict[str, Any], end_ns: int, rng: np.random.Generator, base_dir: Path | None) -> BlockTable:
    """The frames of the file of a ``frames`` configuration (:class:`.WorkloadKind`)."""
    trace = cached_parse(
        resolve_file(cfg["file"], base_dir),
        _parse_frames,
        cfg["time_column"],
        cfg.get("fps"),
        cfg["size_column"],
        cfg["type_column"],
        tuple(sorted(cfg["type_map"].items())),
        cfg["time_unit"],
        cfg["size_unit"],
        cfg["delimiter"],
        cfg["header"],
        cfg["default_type"],
    )
    start = to_ns(cfg["start_s"])
    period = int(trace.offset_ns[-1]) + trace.interval_ns
    repeats = max(0, -(-(end_ns - start) // period)) if cfg["loop"] else 1
    frames = trace.offset_ns.size
    check_budget(repeats * frames)
    arrival = (start + np.arange(repeats)[:, None] * period + trace.offset_ns).ravel()
    keep = arrival < end_ns
    arrival = arrival[keep]
    index = np.arange(repeats * frames)[keep]
    types = np.tile(trace.frame_type, repeats)[keep]
    fps = 1e9 / trace.interval_ns
    return BlockTable(
        arrival,
        np.tile(trace.size_bytes, repeats)[keep],
        video_deadline(cfg, arrival, index, fps),
        np.array(lookup(types, cfg["priority"]), dtype=np.int64),
        np.array(lookup(types, cfg["weight"]), dtype=np.float64),
        types,
        index,
        fps,
    )


KIND = WorkloadKind(name="frames", normalize=normalize, generate=generate)
"""The ``frames`` workload type."""
