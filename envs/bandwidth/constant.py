"""The ``constant`` bandwidth: ``{"type": "constant", "mbps": x}``, one rate forever.

A bare number ``x`` in a scenario means the same (:func:`~mpsched.envs.bandwidth.kinds.normalize_bandwidth`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..validate import MISSING, check_keys, field_path
from .common import BandwidthKind, check_mbps, to_bps
from .schedule import BandwidthSchedule, merged


def normalize(cfg: dict[Any, Any], field: str) -> dict[str, Any]:
    """Validate a ``constant`` configuration (:class:`.BandwidthKind`)."""
    check_keys(cfg, field, ("type", "mbps"))
    return {"type": "constant", "mbps": check_mbps(cfg.get("mbps", MISSING), field_path(field, "mbps"))}


def build(cfg: dict[str, Any], base_dir: Path | None, rng: np.random.Generator | None) -> BandwidthSchedule:
    """One segment at ``mbps`` that never ends (:class:`.BandwidthKind`)."""
    return merged([0], [to_bps(cfg["mbps"])], 0)


KIND = BandwidthKind(name="constant", normalize=normalize, build=build)
"""The ``constant`` bandwidth type."""
