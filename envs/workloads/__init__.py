"""Block tables: the application data a scenario hands to the multipath sender.

A :class:`BlockTable` lists blocks (arrival, size, absolute deadline, priority, weight) as
integer nanosecond and byte arrays, sorted by arrival, ready for the simulator core
(``docs/model.md``, section 1). Workloads are described in scenarios by a *workload
configuration*, a mapping with a ``type`` key that :func:`normalize_workload` validates and
completes with defaults and :func:`generate_workload` turns into a table.

Workload types
--------------
``avc``
    H.264-like live video, one block per frame, GOP pattern of I/P/B frames.
``svc``
    Scalable video: per frame one base-layer block and enhancement-layer blocks.
``web``
    Page loads: bursts of objects with lognormal sizes.
``bulk``
    A constant-rate stream cut into fixed-size chunks.
``frames``
    A per-frame text file of a real video (time, size and optionally frame type).
``explicit``
    Hand-written blocks.

Every type has ``start_s`` (0.0), the time of its first arrival, and every type but
``explicit`` has ``deadline_ms``, the relative deadline (deadline = arrival + deadline_ms).
The video types (``avc``, ``svc``, ``frames``) also take ``playout_startup_ms``: when given,
each block's deadline is instead its frame's play time in a fixed-schedule playout client
(:mod:`mpsched.envs.playout`).
Times are given in seconds or milliseconds at the configuration edge and rounded to the
nearest nanosecond in the table.

Modules
-------
``table``
    :class:`BlockTable`.
``common``
    The :class:`~mpsched.envs.workloads.common.WorkloadKind` record, the configuration
    checks and generation helpers the types share, and :data:`MAX_BLOCKS`.
``avc``, ``svc``, ``web``, ``bulk``, ``frames``, ``explicit``
    One module per type: its normalizer, its generator and its documentation.
``kinds``
    The registry of types, :func:`normalize_workload` and :func:`generate_workload`.
"""

from .common import MAX_BLOCKS
from .kinds import generate_workload, normalize_workload
from .table import BlockTable

__all__ = ["BlockTable", "MAX_BLOCKS", "normalize_workload", "generate_workload"]
