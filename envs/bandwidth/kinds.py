"""The bandwidth types behind one registry, and the entry points that look types up in it.

:data:`KINDS` maps each ``type`` to the :class:`~mpsched.envs.bandwidth.common.BandwidthKind`
of its module; :func:`normalize_bandwidth` and :func:`build_bandwidth` dispatch through it,
and :func:`load_trace_file` builds a ``trace`` configuration from a file and options.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ..validate import MISSING, check_choice, check_mapping, field_path, is_number
from . import constant, piecewise, square, trace
from .common import BandwidthKind, check_mbps
from .schedule import BandwidthSchedule

KINDS: dict[str, BandwidthKind] = {
    kind.name: kind for kind in (constant.KIND, square.KIND, piecewise.KIND, trace.KIND)
}
"""Every bandwidth type by name, in the order errors list them."""


def normalize_bandwidth(config: Any, field: str) -> dict[str, Any]:
    """Validate a bandwidth configuration and complete it with defaults.

    Parameters
    ----------
    config : float or Mapping
        A bare number of Mbps (meaning ``{"type": "constant", "mbps": number}``) or a
        mapping with a ``type`` key; see :mod:`mpsched.envs.bandwidth` for the types.
    field : str
        Dotted path of the configuration in the scenario, e.g. ``"paths[0].bandwidth"``;
        it prefixes the field named by errors.

    Returns
    -------
    dict
        The canonical form: a plain JSON-able dict with every key present (numbers of
        seconds and Mbps as floats). Normalizing it again returns an equal dict.

    Raises
    ------
    ScenarioError
        For an unknown type or key, a missing key, a value of the wrong type (booleans are
        not numbers) or out of range, NaN or infinity.
    """
    if is_number(config):
        return {"type": "constant", "mbps": check_mbps(config, field)}
    cfg = check_mapping(config, field, "a number of Mbps or a mapping with a 'type' key (" + ", ".join(KINDS) + ")")
    kind = check_choice(cfg.get("type", MISSING), field_path(field, "type"), KINDS)
    return KINDS[kind].normalize(cfg, field)


def build_bandwidth(
    config: dict[str, Any], base_dir: Path | None, rng: np.random.Generator | None
) -> BandwidthSchedule:
    """Build the schedule a bandwidth configuration describes.

    Parameters
    ----------
    config : dict
        A configuration, normally the output of :func:`normalize_bandwidth` (it is
        normalized again here, under the field name ``"bandwidth"``).
    base_dir : Path or None
        Directory that relative trace file paths are taken against; the current working
        directory when None.
    rng : numpy.random.Generator or None
        Source of the random offset of a trace with ``random_offset``; may be None otherwise.

    Returns
    -------
    BandwidthSchedule
        Consecutive segments of equal rate are merged.

    Raises
    ------
    ScenarioError
        For an invalid configuration, ``random_offset`` without ``rng``, or a ``scale`` that
        pushes a rate above 10**12 bit/s.
    TraceError
        For a trace file that is missing or malformed (with the 1-based line number).

    Notes
    -----
    Each type's keys and how its schedule is made are described in its module:
    :mod:`~mpsched.envs.bandwidth.constant`, :mod:`~mpsched.envs.bandwidth.square`,
    :mod:`~mpsched.envs.bandwidth.piecewise` and :mod:`~mpsched.envs.bandwidth.trace` (with
    the trace file formats, offsets and scaling).
    """
    cfg = normalize_bandwidth(config, "bandwidth")
    return KINDS[cfg["type"]].build(cfg, base_dir, rng)


def load_trace_file(
    path: str | os.PathLike[str],
    format: str,
    *,
    rng: np.random.Generator | None = None,
    **options: Any,
) -> BandwidthSchedule:
    """Load a bandwidth trace file directly.

    Parameters
    ----------
    path : str or PathLike
        The trace file; a relative path is taken against the current working directory.
    format : str
        ``"mahimahi"``, ``"cooked"`` or ``"csv"``.
    rng : numpy.random.Generator or None
        Needed only with ``random_offset=True``.
    **options
        Any other key of a ``trace`` bandwidth configuration: ``mode``, ``scale``,
        ``offset_s``, ``random_offset`` and the format's options (see
        :mod:`mpsched.envs.bandwidth.trace`).

    Returns
    -------
    BandwidthSchedule

    Raises
    ------
    ScenarioError
        For an invalid option (field names start with ``trace.``).
    TraceError
        For a missing or malformed file.
    """
    config = {**options, "type": "trace", "format": format, "file": os.fspath(path)}
    return build_bandwidth(normalize_bandwidth(config, "trace"), None, rng)
