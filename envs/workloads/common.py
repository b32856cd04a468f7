"""What the workload kinds share: the kind record, configuration checks and generation helpers.

:class:`WorkloadKind` is what each kind module (``avc``, ``svc``, ``web``, ``bulk``,
``frames``, ``explicit``) exports as ``KIND`` and :mod:`mpsched.envs.workloads.kinds`
looks types up in. The ``check_*`` functions validate the configuration values several
kinds take (frame rates, bitrates, times in ms, priorities, weights, per-type mappings and
per-layer lists, ``start_s``, ``deadline_ms`` and ``playout_startup_ms``); the remaining
functions build the arrays several generators need (arrival grids, lognormal size factors,
relative and play-time deadlines) and enforce :data:`MAX_BLOCKS`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from ..errors import ScenarioError
from ..playout import play_times_ns
from ..validate import (
    check_choice,
    check_integer,
    check_keys,
    check_mapping,
    check_number,
    check_seconds,
    field_path,
    to_ns,
)
from .table import INT32_MAX, INT32_MIN, MAX_BLOCK_BYTES, BlockTable

MAX_BLOCKS = 10_000_000
"""Largest number of blocks a generated workload may hold."""

MAX_MS = 1e12
"""Largest time in ms a workload configuration may hold."""

_MAX_MBPS = 1e6

FRAME_TYPES = ("I", "P", "B")
"""The video frame types, most important first."""

FRAME_PRIORITY = {"I": 2, "P": 1, "B": 0}
"""Default priority of a video frame by type."""

FRAME_WEIGHT = {"I": 3.0, "P": 2.0, "B": 1.0}
"""Default weight of a video frame by type."""

_T = TypeVar("_T")


@dataclass(frozen=True)
class WorkloadKind:
    """One workload type: its name, its normalizer and its generator.

    Parameters
    ----------
    name : str
        The ``type`` value that selects the kind in a configuration.
    normalize : Callable
        ``normalize(cfg, field) -> dict``: validates the mapping ``cfg`` (whose ``type``
        is ``name``) and returns its canonical form; ``field`` is the dotted path that
        errors name.
    generate : Callable
        ``generate(cfg, end_ns, rng, base_dir) -> BlockTable``: the blocks of the
        canonical configuration ``cfg`` arriving before ``end_ns`` (in any order; the
        caller sorts them and rejects an empty table). ``rng`` draws random sizes and
        priorities; ``base_dir`` is the directory relative files are read from (the
        current working directory when None). A kind ignores the arguments it does not
        need.
    """

    name: str
    normalize: Callable[[dict[Any, Any], str], dict[str, Any]]
    generate: Callable[[dict[str, Any], int, np.random.Generator, Path | None], BlockTable]


# ---------------------------------------------------------------------------------------
# Configuration checks
# ---------------------------------------------------------------------------------------


def check_fps(value: Any, field: str) -> float:
    """Frames per second in (0, 10000]."""
    return check_number(value, field, lo=0.0, lo_open=True, hi=10_000.0, what="frames per second")


def check_bitrate(value: Any, field: str) -> float:
    """A bitrate in Mbps in [1e-6, 1e6] (at least 1 bit/s)."""
    return check_number(value, field, lo=1e-6, hi=_MAX_MBPS, what="a bitrate in Mbps")


def check_ms(value: Any, field: str) -> float:
    """A time in ms in [0, 1e12]."""
    return check_number(value, field, lo=0.0, hi=MAX_MS, what="a time in ms")


def check_priority(value: Any, field: str) -> int:
    """An int32 priority."""
    return check_integer(value, field, lo=INT32_MIN, hi=INT32_MAX)


def check_weight(value: Any, field: str) -> float:
    """A finite weight >= 0."""
    return check_number(value, field, lo=0.0, what="a weight")


def check_size_cv(value: Any, field: str) -> float:
    """A size coefficient of variation in [0, 10]."""
    return check_number(value, field, lo=0.0, hi=10.0, what="a coefficient of variation")


def check_keyed(
    value: Any, field: str, defaults: Mapping[str, _T], check: Callable[[Any, str], _T]
) -> dict[str, _T]:
    """A mapping over the keys of ``defaults``; keys left out keep their default."""
    given = check_mapping(value, field, "a mapping with keys among " + ", ".join(defaults))
    check_keys(given, field, defaults)
    result = dict(defaults)
    for key, item in given.items():
        result[key] = check(item, field_path(field, key))
    return result


def check_listed(
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


def check_timing(cfg: Mapping[str, Any], field: str, deadline_ms: float) -> dict[str, float]:
    """The ``deadline_ms`` and ``start_s`` of a generated workload."""
    return {
        "deadline_ms": check_ms(cfg.get("deadline_ms", deadline_ms), field_path(field, "deadline_ms")),
        "start_s": check_seconds(cfg.get("start_s", 0.0), field_path(field, "start_s")),
    }


def check_playout(cfg: Mapping[str, Any], field: str) -> dict[str, float]:
    """``playout_startup_ms`` of a video workload: ``{}`` when absent or None."""
    value = cfg.get("playout_startup_ms")
    if value is None:
        return {}
    where = field_path(field, "playout_startup_ms")
    return {
        "playout_startup_ms": check_number(
            value, where, lo=0.0, lo_open=True, hi=MAX_MS, what="a start-up delay in ms"
        )
    }


PLAYER_DEFAULTS: dict[str, dict[str, Any]] = {
    "fixed": {},
    "catchup": {"speed": 1.25, "max_late_ms": 1000.0},
}
"""The playout clients of :mod:`mpsched.envs.playout` and their parameters' defaults."""


def check_player(cfg: Mapping[str, Any], field: str) -> dict[str, Any]:
    """``player`` of a video workload: ``{}`` when absent or None, else the client's
    mapping completed with its defaults (``type`` ``fixed`` or ``catchup``; ``catchup``
    takes ``speed`` >= 1 and ``max_late_ms`` > 0)."""
    value = cfg.get("player")
    if value is None:
        return {}
    where = field_path(field, "player")
    player = check_mapping(value, where, "a mapping with a type: fixed or catchup")
    kind = check_choice(player.get("type", "fixed"), field_path(where, "type"), PLAYER_DEFAULTS)
    defaults = PLAYER_DEFAULTS[kind]
    check_keys(player, where, ("type", *defaults))
    merged = {**defaults, **{k: v for k, v in player.items() if k != "type"}}
    checked: dict[str, Any] = {"type": kind}
    if "speed" in defaults:
        checked["speed"] = check_number(merged["speed"], field_path(where, "speed"), lo=1.0, hi=100.0,
                                        what="a playback speed while late (>= 1)")
    if "max_late_ms" in defaults:
        checked["max_late_ms"] = check_number(merged["max_late_ms"], field_path(where, "max_late_ms"), lo=0.0,
                                              lo_open=True, hi=MAX_MS, what="a wait in ms")
    return {"player": checked}


# ---------------------------------------------------------------------------------------
# Generation helpers
# ---------------------------------------------------------------------------------------


def check_budget(count: int) -> None:
    """Refuse to build more than ``MAX_BLOCKS`` blocks."""
    if count > MAX_BLOCKS:
        raise ScenarioError(
            "workload",
            count,
            f"at most {MAX_BLOCKS} blocks within the duration (this workload would make "
            f"{count}; use larger blocks or a shorter duration)",
        )


def grid(start_ns: int, end_ns: int, step_ns: float, first: int = 0) -> np.ndarray:
    """Times ``start_ns + round((first + k) * step_ns)`` for k = 0, 1, ... below ``end_ns``."""
    if end_ns <= start_ns:
        return np.empty(0, dtype=np.int64)
    count = int((end_ns - start_ns) / step_ns) + 2
    check_budget(count)
    ticks = start_ns + np.rint((np.arange(count) + first) * step_ns).astype(np.int64)
    return ticks[ticks < end_ns]


def size_factors(rng: np.random.Generator, cv: float, count: int) -> np.ndarray:
    """Lognormal factors with mean 1 and coefficient of variation ``cv`` (ones when 0)."""
    if cv == 0:
        return np.ones(count)
    sigma2 = math.log1p(cv * cv)
    return rng.lognormal(-sigma2 / 2, math.sqrt(sigma2), count)


def whole_bytes(sizes: np.ndarray) -> np.ndarray:
    """Sizes rounded to the nearest whole byte, at least 1.

    Raises
    ------
    ScenarioError
        For a size above ``MAX_BLOCK_BYTES`` (checked before the conversion to int64,
        which would wrap a size past 2^63 around silently).
    """
    rounded = np.maximum(np.rint(sizes), 1)
    if rounded.size and not rounded.max() <= MAX_BLOCK_BYTES:
        raise ScenarioError("workload", float(np.nanmax(rounded)),
                            f"blocks of at most {MAX_BLOCK_BYTES} bytes (2^31 - 1); this workload makes a larger "
                            "one: lower the bitrate or the size spread (size_cv), or raise fps")
    return rounded.astype(np.int64)


def lookup(keys: np.ndarray, values: Mapping[str, _T]) -> list[_T]:
    """``values[key]`` for every key, in order."""
    return [values[key] for key in keys.tolist()]  # a list iterates faster than an object array


def with_deadline(arrival: np.ndarray, deadline_ms: float) -> np.ndarray:
    """Absolute deadlines ``deadline_ms`` after each arrival, in ns."""
    return arrival + round(deadline_ms * 1e6)


def video_deadline(cfg: dict[str, Any], arrival: np.ndarray, frame: np.ndarray, fps: float) -> np.ndarray:
    """Deadlines of video blocks: ``deadline_ms`` after arrival, or with
    ``playout_startup_ms`` the frame's play time, not before the block's arrival."""
    startup_ms = cfg.get("playout_startup_ms")
    if startup_ms is None:
        return with_deadline(arrival, cfg["deadline_ms"])
    play = play_times_ns(to_ns(cfg["start_s"]), startup_ms / 1e3, fps, frame)
    return np.maximum(play, arrival)
