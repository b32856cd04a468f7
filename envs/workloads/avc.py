"""The ``avc`` workload: H.264-like live video, one block per frame, GOP pattern of I/P/B frames.

Keys and defaults: ``fps`` 30, ``bitrate_mbps`` 4.3, ``gop`` "IBBPBBPBBPBB", ``size_ratio``
{I: 10, P: 4, B: 2}, ``priority`` {I: 2, P: 1, B: 0}, ``weight`` {I: 3, P: 2, B: 1},
``size_cv`` 0.1, ``deadline_ms`` 200, ``start_s`` 0 and ``playout_startup_ms`` (unset).

Frame ``k`` arrives at ``start_s + k / fps``, has type ``gop[k % len(gop)]`` and size
``size_ratio[type] * u * f`` where ``u`` makes one GOP carry exactly
``bitrate_mbps * len(gop) / fps`` Mbit and ``f`` is a lognormal factor with mean 1 and
coefficient of variation ``size_cv`` (1 when ``size_cv`` is 0; ``size_cv <= 10``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ScenarioError
from ..validate import check_keys, check_number, check_text, field_path, to_ns
from .common import (
    FRAME_PRIORITY,
    FRAME_TYPES,
    FRAME_WEIGHT,
    WorkloadKind,
    check_bitrate,
    check_fps,
    check_keyed,
    check_player,
    check_playout,
    check_priority,
    check_size_cv,
    check_timing,
    check_weight,
    grid,
    size_factors,
    video_deadline,
    whole_bytes,
)
from .table import BlockTable


def normalize(cfg: dict[Any, Any], field: str) -> dict[str, Any]:
    """Validate an ``avc`` configuration and complete it with defaults (:class:`.WorkloadKind`)."""
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
            "player",
        ),
    )
    gop_field = field_path(field, "gop")
    expected = "a non-empty string of frame types I, P, B that starts with I"
    gop = check_text(cfg.get("gop", "IBBPBBPBBPBB"), gop_field, expected)
    if gop[0] != "I" or set(gop) - set(FRAME_TYPES):
        raise ScenarioError(gop_field, gop, expected)
    return {
        "type": "avc",
        "fps": check_fps(cfg.get("fps", 30.0), field_path(field, "fps")),
        "bitrate_mbps": check_bitrate(cfg.get("bitrate_mbps", 4.3), field_path(field, "bitrate_mbps")),
        "gop": gop,
        "size_ratio": check_keyed(
            cfg.get("size_ratio", {}),
            field_path(field, "size_ratio"),
            {"I": 10.0, "P": 4.0, "B": 2.0},
            lambda v, f: check_number(v, f, lo=0.0, lo_open=True, what="a relative frame size"),
        ),
        "priority": check_keyed(cfg.get("priority", {}), field_path(field, "priority"), FRAME_PRIORITY, check_priority),
        "weight": check_keyed(cfg.get("weight", {}), field_path(field, "weight"), FRAME_WEIGHT, check_weight),
        "size_cv": check_size_cv(cfg.get("size_cv", 0.1), field_path(field, "size_cv")),
        **check_timing(cfg, field, 200.0),
        **check_playout(cfg, field),
        **check_player(cfg, field),
    }


def generate(cfg: dict[str, Any], end_ns: int, rng: np.random.Generator, base_dir: Path | None) -> BlockTable:
    """One block per frame of an ``avc`` configuration (:class:`.WorkloadKind`)."""
    fps = cfg["fps"]
    gop = cfg["gop"]
    ratio = cfg["size_ratio"]
    arrival = grid(to_ns(cfg["start_s"]), end_ns, 1e9 / fps)
    index = np.arange(arrival.size)
    position = index % len(gop)  # of each frame in its group of pictures

    def per_frame(by_letter: dict[str, Any], dtype: type) -> np.ndarray:
        return np.array([by_letter[letter] for letter in gop], dtype=dtype)[position]

    gop_bytes = cfg["bitrate_mbps"] * 1e6 / 8 * len(gop) / fps
    unit = gop_bytes / math.fsum(ratio[letter] for letter in gop)
    sizes = per_frame(ratio, np.float64) * unit
    return BlockTable(
        arrival,
        whole_bytes(sizes * size_factors(rng, cfg["size_cv"], arrival.size)),
        video_deadline(cfg, arrival, index, fps),
        per_frame(cfg["priority"], np.int64),
        per_frame(cfg["weight"], np.float64),
        np.array(list(gop), dtype=object)[position],
        index,
        fps,
    )


KIND = WorkloadKind(name="avc", normalize=normalize, generate=generate)
"""The ``avc`` workload type."""
