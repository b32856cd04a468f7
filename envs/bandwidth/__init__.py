"""Bandwidth schedules and the loaders that build them from configurations and trace files.

A :class:`BandwidthSchedule` is the piecewise-constant link rate of section 3 of
``docs/model.md``: integer nanosecond segment starts, integer bit/s rates and an optional
repeat period. Schedules are described in scenarios by a *bandwidth configuration*, a plain
mapping (or a bare number of Mbps) that :func:`normalize_bandwidth` validates and completes
with defaults and :func:`build_bandwidth` turns into a schedule.

Configuration types
-------------------
``constant``
    ``{"type": "constant", "mbps": x}``; a bare number ``x`` means the same.
``square``
    ``high_mbps``, ``low_mbps``, ``period_s``, ``phase_s`` (0.0), ``duty`` (0.5). The wave is
    high during the first ``duty * period`` of each period; the schedule at time ``t`` is the
    wave at ``t + phase_s``. Times are rounded to whole nanoseconds: the period to
    ``round(period_s * 1e9)`` ns and the high part to ``round(duty * period_ns)`` ns.
``piecewise``
    ``points`` (``[[t_s, mbps], ...]``, first time 0, strictly increasing), ``mode``
    (``"hold"``: the last rate holds forever, or ``"loop"``) and ``cycle_s`` (required exactly
    when ``mode`` is ``"loop"``; greater than the last time).
``trace``
    ``format`` (``"mahimahi"``, ``"cooked"`` or ``"csv"``), ``file``, ``mode`` (``"loop"``
    or ``"hold"``), ``scale`` (1.0), ``offset_s`` (0.0), ``random_offset`` (false) and the
    format's options. See :mod:`mpsched.envs.bandwidth.trace` for the file formats.

Rates are given in Mbps (10**6 bit/s) at the configuration edge and rounded to whole bit/s;
every rate must lie in ``[0, 10**12]`` bit/s.

Modules
-------
``schedule``
    :class:`BandwidthSchedule` and :data:`MAX_RATE_BPS`.
``common``
    The :class:`~mpsched.envs.bandwidth.common.BandwidthKind` record and the Mbps rate
    check and conversion the types share.
``constant``, ``square``, ``piecewise``, ``trace``
    One module per type: its normalizer, its builder and its documentation (``trace``
    with its file formats and parsers).
``kinds``
    The registry of types, :func:`normalize_bandwidth`, :func:`build_bandwidth` and
    :func:`load_trace_file`.
"""

from .kinds import build_bandwidth, load_trace_file, normalize_bandwidth
from .schedule import MAX_RATE_BPS, BandwidthSchedule

__all__ = [
    "MAX_RATE_BPS",
    "BandwidthSchedule",
    "normalize_bandwidth",
    "build_bandwidth",
    "load_trace_file",
]
