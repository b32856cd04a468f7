"""The ``piecewise`` bandwidth: rates that change at given times.

Keys: ``points`` (``[[t_s, mbps], ...]``, first time 0, strictly increasing), ``mode``
(``"hold"``: the last rate holds forever, or ``"loop"``) and ``cycle_s`` (required exactly
when ``mode`` is ``"loop"``; greater than the last time).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ScenarioError
from ..validate import MISSING, check_choice, check_keys, check_seconds, field_path, to_ns
from .common import BandwidthKind, check_mbps, to_bps
from .schedule import BandwidthSchedule, merged


def normalize(cfg: dict[Any, Any], field: str) -> dict[str, Any]:
    """Validate a ``piecewise`` configuration and complete it with defaults (:class:`.BandwidthKind`)."""
    check_keys(cfg, field, ("type", "points", "mode", "cycle_s"))
    points_field = field_path(field, "points")
    raw = cfg.get("points", MISSING)
    if not isinstance(raw, (list, tuple)) or not raw:
        raise ScenarioError(points_field, raw, "a non-empty list of [t_s, mbps] pairs")
    points: list[list[float]] = []
    previous_ns = -1
    for i, point in enumerate(raw):
        item = f"{points_field}[{i}]"
        if not isinstance(point, (list, tuple)) or len(point) != 2:
            raise ScenarioError(item, point, "a [t_s, mbps] pair")
        t = check_seconds(point[0], f"{item}[0]")
        mbps = check_mbps(point[1], f"{item}[1]")
        if i == 0 and t != 0:
            raise ScenarioError(f"{item}[0]", point[0], "0 (the first point starts at time 0)")
        if to_ns(t) <= previous_ns:
            raise ScenarioError(
                f"{item}[0]",
                point[0],
                f"a time later (by at least 1 ns) than the previous point's {points[-1][0]!r} s",
            )
        previous_ns = to_ns(t)
        points.append([t, mbps])
    mode = check_choice(cfg.get("mode", "hold"), field_path(field, "mode"), ("hold", "loop"))
    result: dict[str, Any] = {"type": "piecewise", "points": points, "mode": mode}
    cycle_field = field_path(field, "cycle_s")
    if mode == "hold":
        if "cycle_s" in cfg:
            raise ScenarioError(
                cycle_field, cfg["cycle_s"], "no cycle_s when mode is 'hold' (use mode 'loop')"
            )
        return result
    cycle = check_seconds(cfg.get("cycle_s", MISSING), cycle_field, positive=True)
    if to_ns(cycle) <= previous_ns:
        raise ScenarioError(
            cycle_field,
            cycle,
            f"a cycle longer than the last point's time {points[-1][0]!r} s (required when "
            f"mode is 'loop')",
        )
    result["cycle_s"] = cycle
    return result


def build(cfg: dict[str, Any], base_dir: Path | None, rng: np.random.Generator | None) -> BandwidthSchedule:
    """One segment per point, cyclic in ``loop`` mode (:class:`.BandwidthKind`)."""
    starts = [to_ns(t) for t, _ in cfg["points"]]
    rates = [to_bps(mbps) for _, mbps in cfg["points"]]
    return merged(starts, rates, to_ns(cfg["cycle_s"]) if cfg["mode"] == "loop" else 0)


KIND = BandwidthKind(name="piecewise", normalize=normalize, build=build)
"""The ``piecewise`` bandwidth type."""
