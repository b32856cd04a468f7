"""The ``explicit`` workload: hand-written blocks.

Keys and defaults: ``blocks`` (required; a non-empty list of mappings with ``arrival_ms``,
``size_bytes``, the absolute ``deadline_ms``, ``priority`` 0, ``weight`` 1 and ``kind``
"block") and ``start_s`` 0.

``arrival_ms`` and absolute ``deadline_ms`` of each block are shifted by ``start_s``;
a block arriving at or after the end is an error rather than dropped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ScenarioError
from ..validate import (
    MISSING,
    check_integer,
    check_keys,
    check_mapping,
    check_number,
    check_seconds,
    check_text,
    field_path,
    to_ns,
)
from .common import MAX_MS, WorkloadKind, check_ms, check_priority, check_weight
from .table import MAX_BLOCK_BYTES, BlockTable


def normalize(cfg: dict[Any, Any], field: str) -> dict[str, Any]:
    """Validate an ``explicit`` configuration and complete it with defaults (:class:`.WorkloadKind`)."""
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
        arrival = check_ms(block.get("arrival_ms", MISSING), field_path(where, "arrival_ms"))
        blocks.append(
            {
                "arrival_ms": arrival,
                "size_bytes": check_integer(
                    block.get("size_bytes", MISSING),
                    field_path(where, "size_bytes"),
                    lo=1,
                    hi=MAX_BLOCK_BYTES,
                ),
                "deadline_ms": check_number(
                    block.get("deadline_ms", MISSING),
                    field_path(where, "deadline_ms"),
                    lo=arrival,
                    hi=MAX_MS,
                    what="an absolute deadline in ms, not before arrival_ms,",
                ),
                "priority": check_priority(block.get("priority", 0), field_path(where, "priority")),
                "weight": check_weight(block.get("weight", 1.0), field_path(where, "weight")),
                "kind": check_text(block.get("kind", "block"), field_path(where, "kind")),
            }
        )
    return {
        "type": "explicit",
        "blocks": blocks,
        "start_s": check_seconds(cfg.get("start_s", 0.0), field_path(field, "start_s")),
    }


def generate(cfg: dict[str, Any], end_ns: int, rng: np.random.Generator, base_dir: Path | None) -> BlockTable:
    """The blocks of an ``explicit`` configuration (:class:`.WorkloadKind`)."""
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


KIND = WorkloadKind(name="explicit", normalize=normalize, generate=generate)
"""The ``explicit`` workload type."""
