"""The workload types behind one registry, and the two entry points that look types up in it.

:data:`KINDS` maps each ``type`` to the :class:`~mpsched.envs.workloads.common.WorkloadKind`
of its module; :func:`normalize_workload` and :func:`generate_workload` dispatch through it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..errors import MpschedError, ScenarioError
from ..validate import MISSING, check_choice, check_mapping, check_seconds, field_path, to_ns
from . import avc, bulk, explicit, frames, svc, web
from .common import WorkloadKind
from .table import BlockTable

KINDS: dict[str, WorkloadKind] = {
    kind.name: kind for kind in (avc.KIND, svc.KIND, web.KIND, bulk.KIND, frames.KIND, explicit.KIND)
}
"""Every workload type by name, in the order errors list them."""


def normalize_workload(config: Any, field: str) -> dict[str, Any]:
    """Validate a workload configuration and complete it with defaults.

    Parameters
    ----------
    config : Mapping
        A mapping with a ``type`` key (``avc``, ``svc``, ``web``, ``bulk``, ``frames`` or
        ``explicit``) and that type's keys; see :func:`generate_workload`.
    field : str
        Dotted path of the configuration in the scenario, e.g. ``"workload"``; it prefixes
        the field named by errors.

    Returns
    -------
    dict
        The canonical form: a plain JSON-able dict with every key present, except
        ``playout_startup_ms``, which is present only when set. Mappings of
        per-type values (``size_ratio``, ``priority``, ``weight``) given in part are completed
        from the defaults. Normalizing it again returns an equal dict.

    Raises
    ------
    ScenarioError
        For an unknown type or key, a missing key, a value of the wrong type (booleans are
        not numbers) or out of range, NaN or infinity.
    """
    cfg = check_mapping(config, field, "a mapping with a 'type' key (" + ", ".join(KINDS) + ")")
    kind = check_choice(cfg.get("type", MISSING), field_path(field, "type"), KINDS)
    return KINDS[kind].normalize(cfg, field)


def generate_workload(
    config: dict[str, Any], duration_s: float, rng: np.random.Generator, base_dir: Path | None
) -> BlockTable:
    """Generate the blocks a workload configuration describes.

    Parameters
    ----------
    config : dict
        A configuration, normally the output of :func:`normalize_workload` (it is normalized
        again here, under the field name ``"workload"``).
    duration_s : float
        Episode length in seconds (> 0); only blocks arriving in ``[0, duration_s)`` are kept.
    rng : numpy.random.Generator
        Source of the random frame and object sizes and object priorities.
    base_dir : Path or None
        Directory that a relative ``frames`` file path is taken against; the current working
        directory when None.

    Returns
    -------
    BlockTable
        Sorted by arrival (stable). Times are rounded to the nearest ns and sizes to whole
        bytes (at least 1).

    Raises
    ------
    ScenarioError
        For an invalid configuration or duration, an explicit block arriving at or after the
        end, more than ``MAX_BLOCKS`` blocks, or a workload without any block in the
        duration.
    TraceError
        For a ``frames`` file that is missing or malformed (with the 1-based line number).

    Notes
    -----
    Each type's keys, their defaults and how its blocks are made are described in its
    module: :mod:`~mpsched.envs.workloads.avc`, :mod:`~mpsched.envs.workloads.svc`,
    :mod:`~mpsched.envs.workloads.web`, :mod:`~mpsched.envs.workloads.bulk`,
    :mod:`~mpsched.envs.workloads.frames` and :mod:`~mpsched.envs.workloads.explicit`.

    ``playout_startup_ms`` (``avc``, ``svc`` and ``frames``; None, i.e. unset, by default;
    a time in ms > 0)
        When given, ``deadline_ms`` is not used: every block of frame ``k`` gets the frame's
        play time ``start_s + playout_startup_ms + k / frame_rate`` (the first frame arrives
        at ``start_s``), rounded to the nearest ns once as in
        :func:`mpsched.envs.playout.play_times_ns`, so a frame's most important blocks meet
        their deadline exactly when :func:`mpsched.envs.playout.playout_stats` does not count
        the frame as a picture discard. For ``avc`` and ``svc`` this is the arrival plus
        ``playout_startup_ms`` (up to 1 ns of rounding). The play times of a ``frames`` file
        follow ``frame_rate``, not its time stamps: a frame arriving after its play time
        (when the file's intervals drift from the median) cannot be played and gets its
        arrival as the deadline.

    ``player`` (``avc``, ``svc`` and ``frames``; unset by default, which is ``{type: fixed}``)
        The playout client that scores the episode's picture discards and buffer
        underflows (:mod:`mpsched.envs.playout`): ``{type: fixed}`` plays on a fixed
        schedule; ``{type: catchup, speed: 1.25, max_late_ms: 1000}`` freezes on a missing
        frame, waits for it at most ``max_late_ms`` after its play time, and plays
        ``speed`` times faster until it is back on schedule. It changes no block's deadline
        and nothing the scheduler sees.
    """
    cfg = normalize_workload(config, "workload")
    duration = check_seconds(duration_s, "duration_s", positive=True)
    kind = cfg["type"]
    try:
        table = KINDS[kind].generate(cfg, to_ns(duration), rng, base_dir)
    except MpschedError:
        raise
    except ValueError as exc:  # a generated table past BlockTable's limits, named by its column
        raise ScenarioError("workload", kind, f"a workload whose blocks fit docs/model.md section 12 ({exc})") from None
    if len(table) == 0:
        raise ScenarioError(
            "workload",
            kind,
            f"a workload with at least one block arriving before duration_s = {duration!r} s "
            f"(it starts at start_s = {cfg['start_s']!r} s)",
        )
    return table.sorted_by_arrival()
