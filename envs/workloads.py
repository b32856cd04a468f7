"""Block tables: the application data a scenario hands to the multipath sender.

A :class:`BlockTable` lists blocks (arrival, size, absolute deadline, priority, weight) as
integer nanosecond and byte arrays, sorted by arrival, ready for the simulator core
(``docs/model.md``, section 1). Workloads are described in scenarios by a *workload
configuration*, a mapping with a ``type`` key that :func:`normalize_workload` validates and
completes with defaults and :func:`generate_workload` turns into a table.

Workload types
--------------
``avc``
    H.264-like live video, one block per frame, GOP pattern of I/P/B frames.
``svc``
    Scalable video: per frame one base-layer block and enhancement-layer blocks.
``web``
    Page loads: bursts of objects with lognormal sizes.
``bulk``
    A constant-rate stream cut into fixed-size chunks.
``frames``
    A per-frame text file of a real video (time, size and optionally frame type).
``explicit``
    Hand-written blocks.

Every type has ``start_s`` (0.0), the time of its first arrival, and every type but
``explicit`` has ``deadline_ms``, the relative deadline (deadline = arrival + deadline_ms).
The video types (``avc``, ``svc``, ``frames``) also take ``playout_startup_ms``: when given,
each block's deadline is instead its frame's play time in a fixed-schedule playout client
(:mod:`mpsched.envs.playout`).
Times are given in seconds or milliseconds at the configuration edge and rounded to the
nearest nanosecond in the table.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from .errors import ScenarioError, TraceError
from .playout import play_times_ns
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
    MISSING,
    check_bool,
    check_choice,
    check_file_name,
    check_integer,
    check_keys,
    check_mapping,
    check_number,
    check_seconds,
    check_text,
    field_path,
    readonly_int64,
    to_ns,
)

__all__ = ["BlockTable", "MAX_BLOCKS", "normalize_workload", "generate_workload"]

MAX_BLOCKS = 10_000_000
"""Largest number of blocks a generated workload may hold."""

_INT32_MIN = int(np.iinfo(np.int32).min)
_INT32_MAX = int(np.iinfo(np.int32).max)
_MAX_MS = 1e12
_MAX_MBPS = 1e6
_MAX_FRAME_BYTES = 2**31 - 1  # the simulator core's largest block (docs/model.md section 1)
_FRAME_TYPES = ("I", "P", "B")
_FRAME_PRIORITY = {"I": 2, "P": 1, "B": 0}
_FRAME_WEIGHT = {"I": 3.0, "P": 2.0, "B": 1.0}

_T = TypeVar("_T")


# ---------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class BlockTable:
    """Blocks of a workload, one row per block.

    All arrays are stored as read-only copies of the dtype given below.

    Parameters
    ----------
    arrival_ns : numpy.ndarray
        ``int64`` arrival times in ns, ``>= 0``.
    size_bytes : numpy.ndarray
        ``int64`` sizes in bytes, ``>= 1``.
    deadline_ns : numpy.ndarray
        ``int64`` absolute deadlines in ns, ``>= arrival_ns``.
    priority : numpy.ndarray
        ``int32`` priorities; larger is more important.
    weight : numpy.ndarray
        ``float64`` credit of an on-time block, finite and ``>= 0``.
    kind : numpy.ndarray
        Object array of ``str`` labels (``"I"``, ``"base"``, ``"object"``, ``"chunk"``, ...).
    frame : numpy.ndarray
        ``int64`` index of the video frame the block belongs to, ``-1`` when none.
    frame_rate : float or None
        Frames per second of a video workload, else None.

    Raises
    ------
    ValueError
        If the arrays differ in length or an invariant above does not hold.
    """

    arrival_ns: np.ndarray
    size_bytes: np.ndarray
    deadline_ns: np.ndarray
    priority: np.ndarray
    weight: np.ndarray
    kind: np.ndarray
    frame: np.ndarray
    frame_rate: float | None

    def __post_init__(self) -> None:
        arrival = readonly_int64(self.arrival_ns, "arrival_ns")
        size = readonly_int64(self.size_bytes, "size_bytes")
        deadline = readonly_int64(self.deadline_ns, "deadline_ns")
        priority = readonly_int64(self.priority, "priority")
        frame = readonly_int64(self.frame, "frame")
        weight = _readonly_weights(self.weight)
        kind = _readonly_kinds(self.kind)
        columns = {
            "size_bytes": size,
            "deadline_ns": deadline,
            "priority": priority,
            "weight": weight,
            "kind": kind,
            "frame": frame,
        }
        for name, column in columns.items():
            if column.size != arrival.size:
                raise ValueError(f"{name} has {column.size} rows but arrival_ns has {arrival.size}")
        _require(arrival >= 0, "arrival_ns", arrival, ">= 0")
        _require((size >= 1) & (size <= _MAX_FRAME_BYTES), "size_bytes", size, "in [1, 2^31 - 1]")
        _require(deadline >= arrival, "deadline_ns", deadline, ">= arrival_ns of the same row")
        _require(
            (priority >= _INT32_MIN) & (priority <= _INT32_MAX),
            "priority",
            priority,
            "a value that fits in int32",
        )
        _require(np.isfinite(weight) & (weight >= 0), "weight", weight, "finite and >= 0")
        _require(frame >= -1, "frame", frame, ">= -1")
        rate = self.frame_rate
        if rate is not None:
            if isinstance(rate, (bool, np.bool_)) or not isinstance(
                rate, (int, float, np.integer, np.floating)
            ):
                raise ValueError(f"frame_rate must be None or a number; got {rate!r}")
            if not (math.isfinite(rate) and rate > 0):
                raise ValueError(f"frame_rate must be finite and > 0; got {rate!r}")
            rate = float(rate)
        priority32 = priority.astype(np.int32)
        priority32.setflags(write=False)
        object.__setattr__(self, "arrival_ns", arrival)
        object.__setattr__(self, "size_bytes", size)
        object.__setattr__(self, "deadline_ns", deadline)
        object.__setattr__(self, "priority", priority32)
        object.__setattr__(self, "weight", weight)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "frame", frame)
        object.__setattr__(self, "frame_rate", rate)

    def __len__(self) -> int:
        return int(self.arrival_ns.size)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BlockTable):
            return NotImplemented
        return self.frame_rate == other.frame_rate and all(
            np.array_equal(getattr(self, name), getattr(other, name)) for name in _COLUMNS
        )

    def sorted_by_arrival(self) -> BlockTable:
        """The same blocks ordered by arrival; blocks arriving together keep their order."""
        order = np.argsort(self.arrival_ns, kind="stable")
        return BlockTable(
            self.arrival_ns[order],
            self.size_bytes[order],
            self.deadline_ns[order],
            self.priority[order],
            self.weight[order],
            self.kind[order],
            self.frame[order],
            self.frame_rate,
        )

    def to_frame(self) -> pd.DataFrame:
        """The table as a DataFrame with one column per array and ``attrs["frame_rate"]``."""
        frame = pd.DataFrame({name: getattr(self, name) for name in _COLUMNS})
        frame.attrs["frame_rate"] = self.frame_rate
        return frame


_COLUMNS = ("arrival_ns", "size_bytes", "deadline_ns", "priority", "weight", "kind", "frame")


def _readonly_weights(values: Any) -> np.ndarray:
    """A read-only 1-D ``float64`` copy of a numeric array."""
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"weight must be a 1-D array; got shape {array.shape}")
    if array.size and array.dtype.kind not in "iuf":
        raise ValueError(f"weight must hold numbers; got dtype {array.dtype}")
    result = array.astype(np.float64, copy=True)
    result.setflags(write=False)
    return result


def _readonly_kinds(values: Any) -> np.ndarray:
    """A read-only 1-D object array of ``str``."""
    array = np.asarray(values, dtype=object)
    if array.ndim != 1:
        raise ValueError(f"kind must be a 1-D array; got shape {array.shape}")
    for i, item in enumerate(array):
        if not isinstance(item, str):
            raise ValueError(f"kind must hold strings; kind[{i}] = {item!r}")
    result = array.copy()
    result.setflags(write=False)
    return result


def _require(ok: np.ndarray, name: str, values: np.ndarray, expected: str) -> None:
    """Raise ``ValueError`` naming the first row where ``ok`` is false."""
    bad = np.flatnonzero(~ok)
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"{name}[{i}] = {values[i]!r}; expected {expected}")


# ---------------------------------------------------------------------------------------
# Normalization
# ---------------------------------------------------------------------------------------


def _fps(value: Any, field: str) -> float:
    """Frames per second in (0, 10000]."""
    return check_number(value, field, lo=0.0, lo_open=True, hi=10_000.0, what="frames per second")


def _bitrate(value: Any, field: str) -> float:
    """A bitrate in Mbps in [1e-6, 1e6] (at least 1 bit/s)."""
    return check_number(value, field, lo=1e-6, hi=_MAX_MBPS, what="a bitrate in Mbps")


def _ms(value: Any, field: str) -> float:
    """A time in ms in [0, 1e12]."""
    return check_number(value, field, lo=0.0, hi=_MAX_MS, what="a time in ms")


def _priority(value: Any, field: str) -> int:
    """An int32 priority."""
    return check_integer(value, field, lo=_INT32_MIN, hi=_INT32_MAX)


def _weight(value: Any, field: str) -> float:
    """A finite weight >= 0."""
    return check_number(value, field, lo=0.0, what="a weight")


def _size_cv(value: Any, field: str) -> float:
    """A size coefficient of variation in [0, 10]."""
    return check_number(value, field, lo=0.0, hi=10.0, what="a coefficient of variation")


def _keyed(
    value: Any, field: str, defaults: Mapping[str, _T], check: Callable[[Any, str], _T]
) -> dict[str, _T]:
    """A mapping over the keys of ``defaults``; keys left out keep their default."""
    given = check_mapping(value, field, "a mapping with keys among " + ", ".join(defaults))
    check_keys(given, field, defaults)
    result = dict(defaults)
    for key, item in given.items():
        result[key] = check(item, field_path(field, key))
    return result


def _listed(
    value: Any, field: str, check: Callable[[Any, str], _T], length: int | None = None
) -> list[_T]:
    """A non-empty list of checked items; of exactly ``length`` items when given."""
    if length is None:
        expected = "a non-empty list"
    else:
        expected = f"a list of {length} values, one per layer of layer_share"
    if not isinstance(value, (list, tuple)) or not value or length not in (None, len(value)):
        raise ScenarioError(field, value, expected)
    return [check(item, f"{field}[{i}]") for i, item in enumerate(value)]


def _common(cfg: Mapping[str, Any], field: str, deadline_ms: float) -> dict[str, float]:
    """The ``deadline_ms`` and ``start_s`` of a generated workload."""
    return {
        "deadline_ms": _ms(cfg.get("deadline_ms", deadline_ms), field_path(field, "deadline_ms")),
        "start_s": check_seconds(cfg.get("start_s", 0.0), field_path(field, "start_s")),
    }


def _playout(cfg: Mapping[str, Any], field: str) -> dict[str, float]:
    """``playout_startup_ms`` of a video workload: ``{}`` when absent or None."""
    value = cfg.get("playout_startup_ms")
    if value is None:
        return {}
    where = field_path(field, "playout_startup_ms")
    return {
        "playout_startup_ms": check_number(
            value, where, lo=0.0, lo_open=True, hi=_MAX_MS, what="a start-up delay in ms"
        )
    }


def normalize_workload(config: Any, field: str) -> dict[str, Any]:
    """Validate a workload configuration and complete it with defaults.

    Parameters
    ----------
    config : Mapping
        A mapping with a ``type`` key (``avc``, ``svc``, ``web``, ``bulk``, ``frames`` or
        ``explicit``) and that type's keys; see :func:`generate_workload`.
    field : str
        Dotted path of the configuration in the scenario, e.g. ``"workload"``; it prefixes
        the field named by errors.

    Returns
    -------
    dict
        The canonical form: a plain JSON-able dict with every key present, except
        ``playout_startup_ms``, which is present only when set. Mappings of
        per-type values (``size_ratio``, ``priority``, ``weight``) given in part are completed
        from the defaults. Normalizing it again returns an equal dict.

    Raises
    ------
    ScenarioError
        For an unknown type or key, a missing key, a value of the wrong type (booleans are
        not numbers) or out of range, NaN or infinity.
    """
    cfg = check_mapping(config, field, "a mapping with a 'type' key (" + ", ".join(_NORMALIZERS) + ")")
    kind = check_choice(cfg.get("type", MISSING), field_path(field, "type"), _NORMALIZERS)
    return _NORMALIZERS[kind](cfg, field)


def _normalize_avc(cfg: dict[Any, Any], field: str) -> dict[str, Any]:
    check_keys(
        cfg,
        field,
        (
            "type",
            "fps",
            "bitrate_mbps",
            "gop",
            "size_ratio",
            "priority",
            "weight",
            "size_cv",
            "deadline_ms",
            "start_s",
            "playout_startup_ms",
        ),
    )
    gop_field = field_path(field, "gop")
    expected = "a non-empty string of frame types I, P, B that starts with I"
    gop = check_text(cfg.get("gop", "IBBPBBPBBPBB"), gop_field, expected)
    if gop[0] != "I" or set(gop) - set(_FRAME_TYPES):
        raise ScenarioError(gop_field, gop, expected)
    return {
        "type": "avc",
        "fps": _fps(cfg.get("fps", 30.0), field_path(field, "fps")),
        "bitrate_mbps": _bitrate(cfg.get("bitrate_mbps", 4.3), field_path(field, "bitrate_mbps")),
        "gop": gop,
        "size_ratio": _keyed(
            cfg.get("size_ratio", {}),
            field_path(field, "size_ratio"),
            {"I": 10.0, "P": 4.0, "B": 2.0},
            lambda v, f: check_number(v, f, lo=0.0, lo_open=True, what="a relative frame size"),
        ),
        "priority": _keyed(
            cfg.get("priority", {}), field_path(field, "priority"), _FRAME_PRIORITY, _priority
        ),
        "weight": _keyed(cfg.get("weight", {}), field_path(field, "weight"), _FRAME_WEIGHT, _weight),
        "size_cv": _size_cv(cfg.get("size_cv", 0.1), field_path(field, "size_cv")),
        **_common(cfg, field, 200.0),
        **_playout(cfg, field),
    }


def _normalize_svc(cfg: dict[Any, Any], field: str) -> dict[str, Any]:
    check_keys(
        cfg,
        field,
        (
            "type",
            "fps",
            "bitrate_mbps",
            "layer_share",
            "priority",
            "weight",
            "size_cv",
            "deadline_ms",
            "start_s",
            "playout_startup_ms",
        ),
    )
    share_field = field_path(field, "layer_share")
    raw_shares = cfg.get("layer_share", [0.2, 0.3, 0.5])
    shares = _listed(
        raw_shares,
        share_field,
        lambda v, f: check_number(v, f, lo=0.0, hi=1.0, lo_open=True, what="a share of the bitrate"),
    )
    if abs(math.fsum(shares) - 1.0) > 1e-6:
        raise ScenarioError(
            share_field, raw_shares, f"shares that sum to 1 (these sum to {math.fsum(shares)!r})"
        )
    layers = len(shares)
    return {
        "type": "svc",
        "fps": _fps(cfg.get("fps", 30.0), field_path(field, "fps")),
        "bitrate_mbps": _bitrate(cfg.get("bitrate_mbps", 4.3), field_path(field, "bitrate_mbps")),
        "layer_share": shares,
        "priority": _listed(
            cfg.get("priority", list(range(layers - 1, -1, -1))),
            field_path(field, "priority"),
            _priority,
            layers,
        ),
        "weight": _listed(
            cfg.get("weight", [float(layers - i) for i in range(layers)]),
            field_path(field, "weight"),
            _weight,
            layers,
        ),
        "size_cv": _size_cv(cfg.get("size_cv", 0.1), field_path(field, "size_cv")),
        **_common(cfg, field, 200.0),
        **_playout(cfg, field),
    }


def _normalize_web(cfg: dict[Any, Any], field: str) -> dict[str, Any]:
    check_keys(
        cfg,
        field,
        (
            "type",
            "page_interval_s",
            "bursts",
            "burst_gap_ms",
            "object_kb_median",
            "object_kb_sigma",
            "object_kb_max",
            "high_priority_fraction",
            "priority",
            "weight",
            "deadline_ms",
            "start_s",
        ),
    )
    return {
        "type": "web",
        "page_interval_s": check_seconds(
            cfg.get("page_interval_s", 5.0), field_path(field, "page_interval_s"), positive=True
        ),
        "bursts": _listed(
            cfg.get("bursts", [1, 20, 15]),
            field_path(field, "bursts"),
            lambda v, f: check_integer(v, f, lo=1, hi=MAX_BLOCKS),
        ),
        "burst_gap_ms": _ms(cfg.get("burst_gap_ms", 100.0), field_path(field, "burst_gap_ms")),
        "object_kb_median": check_number(
            cfg.get("object_kb_median", 8.0),
            field_path(field, "object_kb_median"),
            lo=0.0,
            lo_open=True,
            hi=1e9,
            what="a size in kB",
        ),
        "object_kb_sigma": check_number(
            cfg.get("object_kb_sigma", 1.2),
            field_path(field, "object_kb_sigma"),
            lo=0.0,
            hi=10.0,
            what="a lognormal sigma",
        ),
        "object_kb_max": check_number(
            cfg.get("object_kb_max", 2000.0),
            field_path(field, "object_kb_max"),
            lo=0.0,
            lo_open=True,
            hi=1e9,
            what="a size in kB",
        ),
        "high_priority_fraction": check_number(
            cfg.get("high_priority_fraction", 0.25),
            field_path(field, "high_priority_fraction"),
            lo=0.0,
            hi=1.0,
            what="a fraction",
        ),
        "priority": _keyed(
            cfg.get("priority", {}), field_path(field, "priority"), {"high": 1, "low": 0}, _priority
        ),
        "weight": _keyed(
            cfg.get("weight", {}), field_path(field, "weight"), {"high": 2.0, "low": 1.0}, _weight
        ),
        **_common(cfg, field, 1000.0),
    }


def _normalize_bulk(cfg: dict[Any, Any], field: str) -> dict[str, Any]:
    check_keys(
        cfg,
        field,
        ("type", "rate_mbps", "chunk_bytes", "deadline_ms", "priority", "weight", "start_s"),
    )
    return {
        "type": "bulk",
        "rate_mbps": _bitrate(cfg.get("rate_mbps", MISSING), field_path(field, "rate_mbps")),
        "chunk_bytes": check_integer(
            cfg.get("chunk_bytes", 65536), field_path(field, "chunk_bytes"), lo=1, hi=_MAX_FRAME_BYTES
        ),
        "priority": _priority(cfg.get("priority", 0), field_path(field, "priority")),
        "weight": _weight(cfg.get("weight", 1.0), field_path(field, "weight")),
        **_common(cfg, field, 1000.0),
    }


def _type_map(value: Any, field: str) -> dict[str, str]:
    """Raw type cell -> frame type; integer keys (as YAML reads ``1: I``) become strings."""
    given = check_mapping(value, field, "a mapping from raw type cells to I, P or B")
    result: dict[str, str] = {}
    for key, letter in given.items():
        if isinstance(key, bool) or not isinstance(key, (str, int)):
            raise ScenarioError(field, key, "keys that are raw cell strings such as '1'")
        result[str(key)] = check_choice(letter, field_path(field, str(key)), _FRAME_TYPES)
    return result


def _normalize_frames(cfg: dict[Any, Any], field: str) -> dict[str, Any]:
    check_keys(
        cfg,
        field,
        (
            "type",
            "file",
            "time_column",
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
        ),
    )
    time_column = check_column(cfg.get("time_column", 0), field_path(field, "time_column"))
    size_column = check_column(cfg.get("size_column", 1), field_path(field, "size_column"))
    raw_type_column = cfg.get("type_column")
    type_column = (
        None if raw_type_column is None else check_column(raw_type_column, field_path(field, "type_column"))
    )
    return {
        "type": "frames",
        "file": check_file_name(cfg.get("file", MISSING), field_path(field, "file")),
        "time_column": time_column,
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
        "priority": _keyed(
            cfg.get("priority", {}), field_path(field, "priority"), _FRAME_PRIORITY, _priority
        ),
        "weight": _keyed(cfg.get("weight", {}), field_path(field, "weight"), _FRAME_WEIGHT, _weight),
        "default_type": check_choice(
            cfg.get("default_type", "P"), field_path(field, "default_type"), _FRAME_TYPES
        ),
        **_common(cfg, field, 200.0),
        **_playout(cfg, field),
    }


def _normalize_explicit(cfg: dict[Any, Any], field: str) -> dict[str, Any]:
    check_keys(cfg, field, ("type", "blocks", "start_s"))
    blocks_field = field_path(field, "blocks")
    raw = cfg.get("blocks", MISSING)
    if not isinstance(raw, (list, tuple)) or not raw:
        raise ScenarioError(blocks_field, raw, "a non-empty list of block mappings")
    blocks = []
    for i, item in enumerate(raw):
        where = f"{blocks_field}[{i}]"
        block = check_mapping(item, where, "a mapping with arrival_ms, size_bytes and deadline_ms")
        check_keys(
            block, where, ("arrival_ms", "size_bytes", "deadline_ms", "priority", "weight", "kind")
        )
        arrival = _ms(block.get("arrival_ms", MISSING), field_path(where, "arrival_ms"))
        blocks.append(
            {
                "arrival_ms": arrival,
                "size_bytes": check_integer(
                    block.get("size_bytes", MISSING),
                    field_path(where, "size_bytes"),
                    lo=1,
                    hi=_MAX_FRAME_BYTES,
                ),
                "deadline_ms": check_number(
                    block.get("deadline_ms", MISSING),
                    field_path(where, "deadline_ms"),
                    lo=arrival,
                    hi=_MAX_MS,
                    what="an absolute deadline in ms, not before arrival_ms,",
                ),
                "priority": _priority(block.get("priority", 0), field_path(where, "priority")),
                "weight": _weight(block.get("weight", 1.0), field_path(where, "weight")),
                "kind": check_text(block.get("kind", "block"), field_path(where, "kind")),
            }
        )
    return {
        "type": "explicit",
        "blocks": blocks,
        "start_s": check_seconds(cfg.get("start_s", 0.0), field_path(field, "start_s")),
    }


_NORMALIZERS: dict[str, Callable[[dict[Any, Any], str], dict[str, Any]]] = {
    "avc": _normalize_avc,
    "svc": _normalize_svc,
    "web": _normalize_web,
    "bulk": _normalize_bulk,
    "frames": _normalize_frames,
    "explicit": _normalize_explicit,
}


# ---------------------------------------------------------------------------------------
# Generation
# ---------------------------------------------------------------------------------------


def generate_workload(
    config: dict[str, Any], duration_s: float, rng: np.random.Generator, base_dir: Path | None
) -> BlockTable:
    """Generate the blocks a workload configuration describes.

    Parameters
    ----------
    config : dict
        A configuration, normally the output of :func:`normalize_workload` (it is normalized
        again here, under the field name ``"workload"``).
    duration_s : float
        Episode length in seconds (> 0); only blocks arriving in ``[0, duration_s)`` are kept.
    rng : numpy.random.Generator
        Source of the random frame and object sizes and object priorities.
    base_dir : Path or None
        Directory that a relative ``frames`` file path is taken against; the current working
        directory when None.

    Returns
    -------
    BlockTable
        Sorted by arrival (stable). Times are rounded to the nearest ns and sizes to whole
        bytes (at least 1).

    Raises
    ------
    ScenarioError
        For an invalid configuration or duration, an explicit block arriving at or after the
        end, more than ``MAX_BLOCKS`` blocks, or a workload without any block in the
        duration.
    TraceError
        For a ``frames`` file that is missing or malformed (with the 1-based line number).

    Notes
    -----
    ``avc`` (``fps`` 30, ``bitrate_mbps`` 4.3, ``gop`` "IBBPBBPBBPBB", ``size_ratio``
    {I: 10, P: 4, B: 2}, ``priority`` {I: 2, P: 1, B: 0}, ``weight`` {I: 3, P: 2, B: 1},
    ``size_cv`` 0.1, ``deadline_ms`` 200)
        Frame ``k`` arrives at ``start_s + k / fps``, has type ``gop[k % len(gop)]`` and size
        ``size_ratio[type] * u * f`` where ``u`` makes one GOP carry exactly
        ``bitrate_mbps * len(gop) / fps`` Mbit and ``f`` is a lognormal factor with mean 1 and
        coefficient of variation ``size_cv`` (1 when ``size_cv`` is 0; ``size_cv <= 10``).
    ``svc`` (``fps`` 30, ``bitrate_mbps`` 4.3 over all layers, ``layer_share``
    [0.2, 0.3, 0.5], ``priority`` [L-1, ..., 0], ``weight`` [L, ..., 1] for L layers,
    ``size_cv`` 0.1, ``deadline_ms`` 200)
        Per frame one block per layer (kinds ``base``, ``enh1``, ...), all with the frame's
        arrival and deadline; one lognormal factor per frame scales all its layers.
    ``web`` (``page_interval_s`` 5, ``bursts`` [1, 20, 15], ``burst_gap_ms`` 100,
    ``object_kb_median`` 8, ``object_kb_sigma`` 1.2, ``object_kb_max`` 2000,
    ``high_priority_fraction`` 0.25, ``priority`` {high: 1, low: 0}, ``weight``
    {high: 2, low: 1}, ``deadline_ms`` 1000)
        Page ``p`` starts at ``start_s + p * page_interval_s``; burst ``b`` of it is released
        ``b * burst_gap_ms`` later. Object sizes are lognormal with the given median and sigma
        in kB (1 kB = 1000 bytes), capped at ``object_kb_max``. First-burst objects are high
        priority; later ones are with probability ``high_priority_fraction``. The deadline
        counts from each object's release.
    ``bulk`` (``rate_mbps`` required, ``chunk_bytes`` 65536, ``deadline_ms`` 1000,
    ``priority`` 0, ``weight`` 1)
        Chunk ``k`` arrives at ``start_s + (k + 1) * chunk_bytes * 8 / rate``, the rate
        rounded to whole bit/s.
    ``frames`` (``file``, ``time_column`` 0, ``size_column`` 1, ``type_column`` None,
    ``type_map`` {"1": I, "0": P}, ``time_unit`` s, ``size_unit`` bytes, ``delimiter``
    whitespace, ``header``, ``loop`` true, ``priority``, ``weight`` as avc,
    ``default_type`` P, ``deadline_ms`` 200)
        Frame times must strictly increase; they are shifted so the first frame arrives at
        ``start_s``. Sizes are rounded up to whole bytes (bits / 8 rounded up). Type cells
        are matched as raw strings against ``type_map``. ``header`` defaults to true exactly
        when a column is named; blank and ``#`` lines are skipped. With ``loop`` the file
        repeats with period = last time - first time + median frame interval;
        ``frame_rate`` is 1 / median frame interval. At least two frames are required.
    ``playout_startup_ms`` (``avc``, ``svc`` and ``frames``; None, i.e. unset, by default;
    a time in ms > 0)
        When given, ``deadline_ms`` is not used: every block of frame ``k`` gets the frame's
        play time ``start_s + playout_startup_ms + k / frame_rate`` (the first frame arrives
        at ``start_s``), rounded to the nearest ns once as in
        :func:`mpsched.envs.playout.play_times_ns`, so a frame's most important blocks meet
        their deadline exactly when :func:`mpsched.envs.playout.playout_stats` does not count
        the frame as a picture discard. For ``avc`` and ``svc`` this is the arrival plus
        ``playout_startup_ms`` (up to 1 ns of rounding). The play times of a ``frames`` file
        follow ``frame_rate``, not its time stamps: a frame arriving after its play time
        (when the file's intervals drift from the median) cannot be played and gets its
        arrival as the deadline.
    ``explicit`` (``blocks``, ``start_s`` 0)
        ``arrival_ms`` and absolute ``deadline_ms`` of each block are shifted by ``start_s``;
        a block arriving at or after the end is an error rather than dropped.
    """
    cfg = normalize_workload(config, "workload")
    duration = check_seconds(duration_s, "duration_s", positive=True)
    end_ns = to_ns(duration)
    kind = cfg["type"]
    if kind == "avc":
        table = _generate_avc(cfg, end_ns, rng)
    elif kind == "svc":
        table = _generate_svc(cfg, end_ns, rng)
    elif kind == "web":
        table = _generate_web(cfg, end_ns, rng)
    elif kind == "bulk":
        table = _generate_bulk(cfg, end_ns)
    elif kind == "frames":
        table = _generate_frames(cfg, end_ns, base_dir)
    else:
        table = _generate_explicit(cfg, end_ns)
    if len(table) == 0:
        raise ScenarioError(
            "workload",
            kind,
            f"a workload with at least one block arriving before duration_s = {duration!r} s "
            f"(it starts at start_s = {cfg['start_s']!r} s)",
        )
    return table.sorted_by_arrival()


def _check_budget(count: int) -> None:
    """Refuse to build more than ``MAX_BLOCKS`` blocks."""
    if count > MAX_BLOCKS:
        raise ScenarioError(
            "workload",
            count,
            f"at most {MAX_BLOCKS} blocks within the duration (this workload would make "
            f"{count}; use larger blocks or a shorter duration)",
        )


def _grid(start_ns: int, end_ns: int, step_ns: float, first: int = 0) -> np.ndarray:
    """Times ``start_ns + round((first + k) * step_ns)`` for k = 0, 1, ... below ``end_ns``."""
    if end_ns <= start_ns:
        return np.empty(0, dtype=np.int64)
    count = int((end_ns - start_ns) / step_ns) + 2
    _check_budget(count)
    ticks = start_ns + np.rint((np.arange(count) + first) * step_ns).astype(np.int64)
    return ticks[ticks < end_ns]


def _size_factors(rng: np.random.Generator, cv: float, count: int) -> np.ndarray:
    """Lognormal factors with mean 1 and coefficient of variation ``cv`` (ones when 0)."""
    if cv == 0:
        return np.ones(count)
    sigma2 = math.log1p(cv * cv)
    return rng.lognormal(-sigma2 / 2, math.sqrt(sigma2), count)


def _whole_bytes(sizes: np.ndarray) -> np.ndarray:
    """Sizes rounded to the nearest whole byte, at least 1."""
    return np.maximum(np.rint(sizes), 1).astype(np.int64)


def _lookup(keys: np.ndarray, values: Mapping[str, _T]) -> list[_T]:
    """``values[key]`` for every key, in order."""
    return [values[key] for key in keys]


def _with_deadline(arrival: np.ndarray, deadline_ms: float) -> np.ndarray:
    """Absolute deadlines ``deadline_ms`` after each arrival, in ns."""
    return arrival + round(deadline_ms * 1e6)


def _video_deadline(
    cfg: dict[str, Any], arrival: np.ndarray, frame: np.ndarray, fps: float
) -> np.ndarray:
    """Deadlines of video blocks: ``deadline_ms`` after arrival, or with
    ``playout_startup_ms`` the frame's play time, not before the block's arrival."""
    startup_ms = cfg.get("playout_startup_ms")
    if startup_ms is None:
        return _with_deadline(arrival, cfg["deadline_ms"])
    play = play_times_ns(to_ns(cfg["start_s"]), startup_ms / 1e3, fps, frame)
    return np.maximum(play, arrival)


def _generate_avc(cfg: dict[str, Any], end_ns: int, rng: np.random.Generator) -> BlockTable:
    fps = cfg["fps"]
    gop = cfg["gop"]
    ratio = cfg["size_ratio"]
    arrival = _grid(to_ns(cfg["start_s"]), end_ns, 1e9 / fps)
    index = np.arange(arrival.size)
    kinds = np.array(list(gop), dtype=object)[index % len(gop)]
    gop_bytes = cfg["bitrate_mbps"] * 1e6 / 8 * len(gop) / fps
    unit = gop_bytes / math.fsum(ratio[letter] for letter in gop)
    sizes = np.array(_lookup(kinds, ratio), dtype=np.float64) * unit
    return BlockTable(
        arrival,
        _whole_bytes(sizes * _size_factors(rng, cfg["size_cv"], arrival.size)),
        _video_deadline(cfg, arrival, index, fps),
        np.array(_lookup(kinds, cfg["priority"]), dtype=np.int64),
        np.array(_lookup(kinds, cfg["weight"]), dtype=np.float64),
        kinds,
        index,
        fps,
    )


def _generate_svc(cfg: dict[str, Any], end_ns: int, rng: np.random.Generator) -> BlockTable:
    fps = cfg["fps"]
    shares = np.array(cfg["layer_share"])
    layers = shares.size
    frames = _grid(to_ns(cfg["start_s"]), end_ns, 1e9 / fps)
    _check_budget(frames.size * layers)
    frame_bytes = cfg["bitrate_mbps"] * 1e6 / 8 / fps
    factors = _size_factors(rng, cfg["size_cv"], frames.size)
    arrival = np.repeat(frames, layers)
    index = np.repeat(np.arange(frames.size), layers)
    names = np.array(["base"] + [f"enh{i}" for i in range(1, layers)], dtype=object)
    return BlockTable(
        arrival,
        _whole_bytes(np.outer(factors * frame_bytes, shares).ravel()),
        _video_deadline(cfg, arrival, index, fps),
        np.tile(np.array(cfg["priority"], dtype=np.int64), frames.size),
        np.tile(np.array(cfg["weight"], dtype=np.float64), frames.size),
        np.tile(names, frames.size),
        index,
        fps,
    )


def _generate_web(cfg: dict[str, Any], end_ns: int, rng: np.random.Generator) -> BlockTable:
    bursts = np.array(cfg["bursts"])
    pages = _grid(to_ns(cfg["start_s"]), end_ns, cfg["page_interval_s"] * 1e9)
    count = pages.size * int(bursts.sum())
    _check_budget(count)
    releases = pages[:, None] + np.arange(bursts.size) * round(cfg["burst_gap_ms"] * 1e6)
    arrival = np.repeat(releases, bursts, axis=1).ravel()
    burst = np.tile(np.repeat(np.arange(bursts.size), bursts), pages.size)
    kb = rng.lognormal(math.log(cfg["object_kb_median"]), cfg["object_kb_sigma"], count)
    sizes = _whole_bytes(np.minimum(kb, cfg["object_kb_max"]) * 1000)
    high = (burst == 0) | (rng.random(count) < cfg["high_priority_fraction"])
    keep = arrival < end_ns
    arrival = arrival[keep]
    level = np.where(high[keep], "high", "low")
    return BlockTable(
        arrival,
        sizes[keep],
        _with_deadline(arrival, cfg["deadline_ms"]),
        np.array(_lookup(level, cfg["priority"]), dtype=np.int64),
        np.array(_lookup(level, cfg["weight"]), dtype=np.float64),
        np.full(arrival.size, "object", dtype=object),
        np.full(arrival.size, -1, dtype=np.int64),
        None,
    )


def _generate_bulk(cfg: dict[str, Any], end_ns: int) -> BlockTable:
    rate_bps = round(cfg["rate_mbps"] * 1e6)
    step = cfg["chunk_bytes"] * 8e9 / rate_bps
    arrival = _grid(to_ns(cfg["start_s"]), end_ns, step, first=1)
    count = arrival.size
    return BlockTable(
        arrival,
        np.full(count, cfg["chunk_bytes"], dtype=np.int64),
        _with_deadline(arrival, cfg["deadline_ms"]),
        np.full(count, cfg["priority"], dtype=np.int64),
        np.full(count, cfg["weight"], dtype=np.float64),
        np.full(count, "chunk", dtype=object),
        np.full(count, -1, dtype=np.int64),
        None,
    )


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
    time_column: str | int,
    size_column: str | int,
    type_column: str | int | None,
    type_map_items: tuple[tuple[str, str], ...],
    time_unit: str,
    size_unit: str,
    delimiter: str,
    header: bool,
    default_type: str,
) -> _FrameTrace:
    type_map = dict(type_map_items)
    columns = {"time_column": time_column, "size_column": size_column}
    if type_column is not None:
        columns["type_column"] = type_column
    times: list[int] = []
    sizes: list[int] = []
    types: list[str] = []
    numbers: list[int] = []
    time_cells: list[str] = []
    bound = _MAX_FRAME_BYTES * (8 if size_unit == "bits" else 1)
    for number, cells in table_rows(path, lines, delimiter, header, columns):
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
        time_cells.append(cells["time_column"])
    offsets, interval = sample_timeline(path, times, numbers, time_cells, "frame")
    size_array = np.array(sizes, dtype=np.int64)
    type_array = np.array(types, dtype=object)
    for array in (offsets, size_array, type_array):
        array.setflags(write=False)
    return _FrameTrace(offsets, size_array, type_array, interval)


def _generate_frames(cfg: dict[str, Any], end_ns: int, base_dir: Path | None) -> BlockTable:
    trace = cached_parse(
        resolve_file(cfg["file"], base_dir),
        _parse_frames,
        cfg["time_column"],
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
    _check_budget(repeats * frames)
    arrival = (start + np.arange(repeats)[:, None] * period + trace.offset_ns).ravel()
    keep = arrival < end_ns
    arrival = arrival[keep]
    index = np.arange(repeats * frames)[keep]
    types = np.tile(trace.frame_type, repeats)[keep]
    fps = 1e9 / trace.interval_ns
    return BlockTable(
        arrival,
        np.tile(trace.size_bytes, repeats)[keep],
        _video_deadline(cfg, arrival, index, fps),
        np.array(_lookup(types, cfg["priority"]), dtype=np.int64),
        np.array(_lookup(types, cfg["weight"]), dtype=np.float64),
        types,
        index,
        fps,
    )


def _generate_explicit(cfg: dict[str, Any], end_ns: int) -> BlockTable:
    start = to_ns(cfg["start_s"])
    blocks = cfg["blocks"]
    arrival = np.array([start + round(b["arrival_ms"] * 1e6) for b in blocks], dtype=np.int64)
    late = np.flatnonzero(arrival >= end_ns)
    if late.size:
        i = int(late[0])
        raise ScenarioError(
            f"workload.blocks[{i}].arrival_ms",
            blocks[i]["arrival_ms"],
            f"an arrival before the end of the episode, i.e. < {(end_ns - start) / 1e6!r} ms "
            f"(duration_s minus start_s); explicit blocks are not dropped",
        )
    return BlockTable(
        arrival,
        np.array([b["size_bytes"] for b in blocks], dtype=np.int64),
        np.array([start + round(b["deadline_ms"] * 1e6) for b in blocks], dtype=np.int64),
        np.array([b["priority"] for b in blocks], dtype=np.int64),
        np.array([b["weight"] for b in blocks], dtype=np.float64),
        np.array([b["kind"] for b in blocks], dtype=object),
        np.full(len(blocks), -1, dtype=np.int64),
        None,
    )
