"""The ``web`` workload: page loads, bursts of objects with lognormal sizes.

Keys and defaults: ``page_interval_s`` 5, ``bursts`` [1, 20, 15], ``burst_gap_ms`` 100,
``object_kb_median`` 8, ``object_kb_sigma`` 1.2, ``object_kb_max`` 2000,
``high_priority_fraction`` 0.25, ``priority`` {high: 1, low: 0}, ``weight``
{high: 2, low: 1}, ``deadline_ms`` 1000 and ``start_s`` 0.

Page ``p`` starts at ``start_s + p * page_interval_s``; burst ``b`` of it is released
``b * burst_gap_ms`` later. Object sizes are lognormal with the given median and sigma
in kB (1 kB = 1000 bytes), capped at ``object_kb_max``. First-burst objects are high
priority; later ones are with probability ``high_priority_fraction``. The deadline
counts from each object's release.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from ..validate import check_integer, check_keys, check_number, check_seconds, field_path, to_ns
from .common import (
    MAX_BLOCKS,
    WorkloadKind,
    check_budget,
    check_keyed,
    check_listed,
    check_ms,
    check_priority,
    check_timing,
    check_weight,
    grid,
    lookup,
    whole_bytes,
    with_deadline,
)
from .table import BlockTable


def normalize(cfg: dict[Any, Any], field: str) -> dict[str, Any]:
    """Validate a ``web`` configuration and complete it with defaults (:class:`.WorkloadKind`)."""
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
        "bursts": check_listed(
            cfg.get("bursts", [1, 20, 15]),
            field_path(field, "bursts"),
            lambda v, f: check_integer(v, f, lo=1, hi=MAX_BLOCKS),
        ),
        "burst_gap_ms": check_ms(cfg.get("burst_gap_ms", 100.0), field_path(field, "burst_gap_ms")),
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
        "priority": check_keyed(
            cfg.get("priority", {}), field_path(field, "priority"), {"high": 1, "low": 0}, check_priority
        ),
        "weight": check_keyed(
            cfg.get("weight", {}), field_path(field, "weight"), {"high": 2.0, "low": 1.0}, check_weight
        ),
        **check_timing(cfg, field, 1000.0),
    }


def generate(cfg: dict[str, Any], end_ns: int, rng: np.random.Generator, base_dir: Path | None) -> BlockTable:
    """The objects of the pages of a ``web`` configuration (:class:`.WorkloadKind`)."""
    bursts = np.array(cfg["bursts"])
    pages = grid(to_ns(cfg["start_s"]), end_ns, cfg["page_interval_s"] * 1e9)
    count = pages.size * int(bursts.sum())
    check_budget(count)
    releases = pages[:, None] + np.arange(bursts.size) * round(cfg["burst_gap_ms"] * 1e6)
    arrival = np.repeat(releases, bursts, axis=1).ravel()
    burst = np.tile(np.repeat(np.arange(bursts.size), bursts), pages.size)
    kb = rng.lognormal(math.log(cfg["object_kb_median"]), cfg["object_kb_sigma"], count)
    sizes = whole_bytes(np.minimum(kb, cfg["object_kb_max"]) * 1000)
    high = (burst == 0) | (rng.random(count) < cfg["high_priority_fraction"])
    keep = arrival < end_ns
    arrival = arrival[keep]
    level = np.where(high[keep], "high", "low")
    return BlockTable(
        arrival,
        sizes[keep],
        with_deadline(arrival, cfg["deadline_ms"]),
        np.array(lookup(level, cfg["priority"]), dtype=np.int64),
        np.array(lookup(level, cfg["weight"]), dtype=np.float64),
        np.full(arrival.size, "object", dtype=object),
        np.full(arrival.size, -1, dtype=np.int64),
        None,
    )


KIND = WorkloadKind(name="web", normalize=normalize, generate=generate)
"""The ``web`` workload type."""
