"""What the bandwidth kinds share: the kind record and the Mbps rate check and conversion.

:class:`BandwidthKind` is what each kind module (``constant``, ``square``, ``piecewise``,
``trace``) exports as ``KIND`` and :mod:`mpsched.envs.bandwidth.kinds` looks types up in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..validate import check_number
from .schedule import MAX_RATE_BPS, BandwidthSchedule

_MAX_MBPS = MAX_RATE_BPS / 1e6


@dataclass(frozen=True)
class BandwidthKind:
    """One bandwidth configuration type: its name, its normalizer and its builder.

    Parameters
    ----------
    name : str
        The ``type`` value that selects the kind in a configuration.
    normalize : Callable
        ``normalize(cfg, field) -> dict``: validates the mapping ``cfg`` (whose ``type``
        is ``name``) and returns its canonical form; ``field`` is the dotted path that
        errors name.
    build : Callable
        ``build(cfg, base_dir, rng) -> BandwidthSchedule``: the schedule of the canonical
        configuration ``cfg``, with consecutive segments of equal rate merged. ``base_dir``
        is the directory relative files are read from (the current working directory when
        None); ``rng`` draws random offsets and may be None when none is needed. A kind
        ignores the arguments it does not need.
    """

    name: str
    normalize: Callable[[dict[Any, Any], str], dict[str, Any]]
    build: Callable[[dict[str, Any], Path | None, np.random.Generator | None], BandwidthSchedule]


def check_mbps(value: Any, field: str) -> float:
    """A rate in Mbps within ``[0, 10**6]``."""
    return check_number(value, field, lo=0.0, hi=_MAX_MBPS, what="a rate in Mbps")


def to_bps(mbps: float) -> int:
    """Mbps to integer bit/s, rounded to nearest."""
    return round(mbps * 1e6)
