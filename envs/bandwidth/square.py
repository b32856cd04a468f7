"""The ``square`` bandwidth: a square wave between two rates.

Keys: ``high_mbps``, ``low_mbps``, ``period_s``, ``phase_s`` (0.0), ``duty`` (0.5). The
wave is high during the first ``duty * period`` of each period; the schedule at time ``t``
is the wave at ``t + phase_s``. Times are rounded to whole nanoseconds: the period to
``round(period_s * 1e9)`` ns and the high part to ``round(duty * period_ns)`` ns.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ScenarioError
from ..validate import MAX_SECONDS, MISSING, check_keys, check_number, check_seconds, field_path, to_ns
from .common import BandwidthKind, check_mbps, to_bps
from .schedule import BandwidthSchedule, merged


def normalize(cfg: dict[Any, Any], field: str) -> dict[str, Any]:
    """Validate a ``square`` configuration and complete it with defaults (:class:`.BandwidthKind`)."""
    check_keys(cfg, field, ("type", "high_mbps", "low_mbps", "period_s", "phase_s", "duty"))
    period = check_seconds(cfg.get("period_s", MISSING), field_path(field, "period_s"), positive=True)
    phase = check_number(
        cfg.get("phase_s", 0.0),
        field_path(field, "phase_s"),
        lo=-MAX_SECONDS,
        hi=MAX_SECONDS,
        what="a time in seconds",
    )
    duty = check_number(
        cfg.get("duty", 0.5), field_path(field, "duty"), lo=0.0, hi=1.0, lo_open=True, hi_open=True
    )
    period_ns = to_ns(period)
    if not 0 < round(duty * period_ns) < period_ns:
        raise ScenarioError(
            field_path(field, "duty"),
            duty,
            f"a duty that leaves both the high and the low part at least 1 ns long with "
            f"period_s = {period!r}",
        )
    return {
        "type": "square",
        "high_mbps": check_mbps(cfg.get("high_mbps", MISSING), field_path(field, "high_mbps")),
        "low_mbps": check_mbps(cfg.get("low_mbps", MISSING), field_path(field, "low_mbps")),
        "period_s": period,
        "phase_s": phase,
        "duty": duty,
    }


def build(cfg: dict[str, Any], base_dir: Path | None, rng: np.random.Generator | None) -> BandwidthSchedule:
    """The wave as a cyclic schedule of one period (:class:`.BandwidthKind`)."""
    period = to_ns(cfg["period_s"])
    high = round(cfg["duty"] * period)
    phase = to_ns(cfg["phase_s"]) % period
    starts = sorted({0, -phase % period, (high - phase) % period})
    rates = [
        to_bps(cfg["high_mbps"] if (start + phase) % period < high else cfg["low_mbps"])
        for start in starts
    ]
    return merged(starts, rates, period)


KIND = BandwidthKind(name="square", normalize=normalize, build=build)
"""The ``square`` bandwidth type."""
