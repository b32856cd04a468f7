"""The ``bulk`` workload: a constant-rate stream cut into fixed-size chunks.

Keys and defaults: ``rate_mbps`` (required), ``chunk_bytes`` 65536, ``deadline_ms`` 1000,
``priority`` 0, ``weight`` 1 and ``start_s`` 0.

Chunk ``k`` arrives at ``start_s + (k + 1) * chunk_bytes * 8 / rate``, the rate rounded
to whole bit/s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..validate import MISSING, check_integer, check_keys, field_path, to_ns
from .common import WorkloadKind, check_bitrate, check_priority, check_timing, check_weight, grid, with_deadline
from .table import MAX_BLOCK_BYTES, BlockTable


def normalize(cfg: dict[Any, Any], field: str) -> dict[str, Any]:
    """Validate a ``bulk`` configuration and complete it with defaults (:class:`.WorkloadKind`)."""
    check_keys(
        cfg,
        field,
        ("type", "rate_mbps", "chunk_bytes", "deadline_ms", "priority", "weight", "start_s"),
    )
    return {
        "type": "bulk",
        "rate_mbps": check_bitrate(cfg.get("rate_mbps", MISSING), field_path(field, "rate_mbps")),
        "chunk_bytes": check_integer(
            cfg.get("chunk_bytes", 65536), field_path(field, "chunk_bytes"), lo=1, hi=MAX_BLOCK_BYTES
        ),
        "priority": check_priority(cfg.get("priority", 0), field_path(field, "priority")),
        "weight": check_weight(cfg.get("weight", 1.0), field_path(field, "weight")),
        **check_timing(cfg, field, 1000.0),
    }


def generate(cfg: dict[str, Any], end_ns: int, rng: np.random.Generator, base_dir: Path | None) -> BlockTable:
    """The chunks of a ``bulk`` configuration (:class:`.WorkloadKind`)."""
    rate_bps = round(cfg["rate_mbps"] * 1e6)
    step = cfg["chunk_bytes"] * 8e9 / rate_bps
    arrival = grid(to_ns(cfg["start_s"]), end_ns, step, first=1)
    count = arrival.size
    return BlockTable(
        arrival,
        np.full(count, cfg["chunk_bytes"], dtype=np.int64),
        with_deadline(arrival, cfg["deadline_ms"]),
        np.full(count, cfg["priority"], dtype=np.int64),
        np.full(count, cfg["weight"], dtype=np.float64),
        np.full(count, "chunk", dtype=object),
        np.full(count, -1, dtype=np.int64),
        None,
    )


KIND = WorkloadKind(name="bulk", normalize=normalize, generate=generate)
"""The ``bulk`` workload type."""
