"""The ``svc`` workload: scalable video, per frame one base-layer block and enhancement-layer blocks.

Keys and defaults: ``fps`` 30, ``bitrate_mbps`` 4.3 over all layers, ``layer_share``
[0.2, 0.3, 0.5], ``priority`` [L-1, ..., 0], ``weight`` [L, ..., 1] for L layers,
``size_cv`` 0.1, ``deadline_ms`` 200, ``start_s`` 0 and ``playout_startup_ms`` (unset).

Per frame one block per layer (kinds ``base``, ``enh1``, ...), all with the frame's
arrival and deadline; one lognormal factor per frame scales all its layers.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ScenarioError
from ..validate import check_keys, check_number, field_path, to_ns
from .common import (
    WorkloadKind,
    check_bitrate,
    check_budget,
    check_fps,
    check_listed,
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
    """Validate an ``svc`` configuration and complete it with defaults (:class:`.WorkloadKind`)."""
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
            "player",
        ),
    )
    share_field = field_path(field, "layer_share")
    raw_shares = cfg.get("layer_share", [0.2, 0.3, 0.5])
    shares = check_listed(
        raw_shares,
        share_field,
        lambda v, f: check_number(v, f, lo=0.0, hi=1.0, lo_open=True, what="a share of the bitrate"),
    )
    if abs(math.fsum(shares) - 1.0) > 1e-6:
        raise ScenarioError(share_field, raw_shares, f"shares that sum to 1 (these sum to {math.fsum(shares)!r})")
    layers = len(shares)
    return {
        "type": "svc",
        "fps": check_fps(cfg.get("fps", 30.0), field_path(field, "fps")),
        "bitrate_mbps": check_bitrate(cfg.get("bitrate_mbps", 4.3), field_path(field, "bitrate_mbps")),
        "layer_share": shares,
        "priority": check_listed(
            cfg.get("priority", list(range(layers - 1, -1, -1))),
            field_path(field, "priority"),
            check_priority,
            layers,
        ),
        "weight": check_listed(
            cfg.get("weight", [float(layers - i) for i in range(layers)]),
            field_path(field, "weight"),
            check_weight,
            layers,
        ),
        "size_cv": check_size_cv(cfg.get("size_cv", 0.1), field_path(field, "size_cv")),
        **check_timing(cfg, field, 200.0),
        **check_playout(cfg, field),
        **check_player(cfg, field),
    }


def generate(cfg: dict[str, Any], end_ns: int, rng: np.random.Generator, base_dir: Path | None) -> BlockTable:
    """One block per layer of each frame of an ``svc`` configuration (:class:`.WorkloadKind`)."""
    fps = cfg["fps"]
    shares = np.array(cfg["layer_share"])
    layers = shares.size
    frames = grid(to_ns(cfg["start_s"]), end_ns, 1e9 / fps)
    check_budget(frames.size * layers)
    frame_bytes = cfg["bitrate_mbps"] * 1e6 / 8 / fps
    factors = size_factors(rng, cfg["size_cv"], frames.size)
    arrival = np.repeat(frames, layers)
    index = np.repeat(np.arange(frames.size), layers)
    names = np.array(["base"] + [f"enh{i}" for i in range(1, layers)], dtype=object)
    return BlockTable(
        arrival,
        whole_bytes(np.outer(factors * frame_bytes, shares).ravel()),
        video_deadline(cfg, arrival, index, fps),
        np.tile(np.array(cfg["priority"], dtype=np.int64), frames.size),
        np.tile(np.array(cfg["weight"], dtype=np.float64), frames.size),
        np.tile(names, frames.size),
        index,
        fps,
    )


KIND = WorkloadKind(name="svc", normalize=normalize, generate=generate)
"""The ``svc`` workload type."""
