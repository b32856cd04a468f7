"""Scenarios: the validated description of one multipath deadline problem.

A scenario names the paths (bandwidth, delay, queue, loss, congestion control), the
workload that produces blocks, the transport constants and the duration. It is plain
data: :meth:`Scenario.from_dict`, :meth:`Scenario.from_yaml` and :meth:`Scenario.to_dict`
convert it, and every field is checked when the scenario is built, with errors that name
the field path, the value and what was expected.

Example
-------
>>> from mpsched.envs import Scenario
>>> sc = Scenario.from_dict({
...     "duration_s": 10,
...     "paths": [
...         {"bandwidth": 2.0, "rtt_ms": 10},
...         {"bandwidth": {"type": "square", "high_mbps": 3, "low_mbps": 1, "period_s": 2},
...          "rtt_ms": 40, "loss": 0.001, "cc": "newreno"},
...     ],
...     "workload": {"type": "avc", "bitrate_mbps": 4.3},
... })
>>> len(sc.paths)
2
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from .errors import ScenarioError
from .traces import BandwidthSchedule, build_bandwidth, normalize_bandwidth
from .validate import check_choice, check_integer, check_keys, check_mapping, check_number, check_text
from .workloads import generate_workload, normalize_workload

__all__ = ["Scenario", "PathSpec", "TransportSpec", "CONGESTION_CONTROLS", "RECEIVERS"]

CONGESTION_CONTROLS: tuple[str, ...] = ("ideal", "newreno")
RECEIVERS: tuple[str, ...] = ("block",)

_DEFAULT_QUEUE_MS = 100.0
_DEFAULT_QUEUE_MIN_PACKETS = 10


@dataclass(frozen=True)
class TransportSpec:
    """Transport constants shared by every path.

    Parameters
    ----------
    mss_bytes : int
        Largest packet payload (default 1448, Ethernet MTU minus IP/TCP with timestamps).
    header_bytes : int
        Wire overhead added to every packet on the bottleneck (default 0: bandwidths are
        payload rates).
    initial_cwnd_packets : int
        Initial window of window-based controllers (RFC 6928: 10).
    min_rto_ms, max_rto_s : float
        RFC 6298 clamp of the retransmission timeout (Linux uses 200 ms; RFC 6298 1 s).
    cc : str
        Congestion control of paths that do not name one.
    """

    mss_bytes: int = 1448
    header_bytes: int = 0
    initial_cwnd_packets: int = 10
    min_rto_ms: float = 200.0
    max_rto_s: float = 60.0
    cc: str = "newreno"

    KEYS = ("mss_bytes", "header_bytes", "initial_cwnd_packets", "min_rto_ms", "max_rto_s", "cc")

    @classmethod
    def from_dict(cls, d: Any, where: str = "transport") -> TransportSpec:
        d = check_mapping(d, where, "a mapping (dict)")
        check_keys(d, where, cls.KEYS)
        base = cls()
        spec = cls(
            mss_bytes=check_integer(d.get("mss_bytes", base.mss_bytes), f"{where}.mss_bytes", lo=1, hi=65535),
            header_bytes=check_integer(
                d.get("header_bytes", base.header_bytes), f"{where}.header_bytes", lo=0, hi=1024
            ),
            initial_cwnd_packets=check_integer(
                d.get("initial_cwnd_packets", base.initial_cwnd_packets),
                f"{where}.initial_cwnd_packets",
                lo=1,
                hi=10**6,
            ),
            min_rto_ms=check_number(
                d.get("min_rto_ms", base.min_rto_ms), f"{where}.min_rto_ms", lo=0.0, hi=1e9, lo_open=True
            ),
            max_rto_s=check_number(
                d.get("max_rto_s", base.max_rto_s), f"{where}.max_rto_s", lo=0.0, hi=1e6, lo_open=True
            ),
            cc=check_choice(d.get("cc", base.cc), f"{where}.cc", CONGESTION_CONTROLS),
        )
        if spec.max_rto_s * 1000.0 < spec.min_rto_ms:
            raise ScenarioError(
                f"{where}.max_rto_s", spec.max_rto_s, f"at least min_rto_ms = {spec.min_rto_ms} ms"
            )
        return spec

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.KEYS}


@dataclass(frozen=True)
class PathSpec:
    """One path: bandwidth, delays, bottleneck queue, loss and congestion control.

    Parameters
    ----------
    name : str
        A label for tables ("path0", "wifi", ...).
    bandwidth : dict
        Canonical bandwidth config (see :func:`mpsched.envs.traces.normalize_bandwidth`).
    fwd_delay_s, rev_delay_s : float
        One-way propagation delay sender->receiver and back.
    queue_bytes : int
        Drop-tail limit of the bottleneck queue (waiting bytes). Given as ``queue_bytes``,
        ``queue_packets`` or ``queue_ms``; by default 100 ms at the path's peak rate (the
        mean rate for a trace), and at least 10 packets.
    loss : float
        i.i.d. packet loss probability at the bottleneck.
    cc : str
        Congestion control of the subflow.
    """

    name: str
    bandwidth: dict[str, Any]
    fwd_delay_s: float
    rev_delay_s: float
    queue_bytes: int
    loss: float
    cc: str

    KEYS = (
        "name",
        "bandwidth",
        "rtt_ms",
        "one_way_delay_ms",
        "fwd_delay_ms",
        "rev_delay_ms",
        "queue_bytes",
        "queue_packets",
        "queue_ms",
        "loss",
        "cc",
    )

    @property
    def rtt_s(self) -> float:
        """Base round-trip time (propagation only)."""
        return self.fwd_delay_s + self.rev_delay_s

    @classmethod
    def from_dict(
        cls, d: Any, where: str, index: int, transport: TransportSpec, base_dir: Path | None = None
    ) -> PathSpec:
        d = check_mapping(d, where, "a mapping (dict)")
        check_keys(d, where, cls.KEYS)
        name = check_text(d.get("name", f"path{index}"), f"{where}.name")
        if "bandwidth" not in d:
            raise ScenarioError(
                f"{where}.bandwidth", None, "a bandwidth (Mbps number or a bandwidth mapping)"
            )
        bandwidth = normalize_bandwidth(d["bandwidth"], f"{where}.bandwidth")
        # Built once here so that a bad trace file fails now, naming its file and line
        # (parsed files are cached: episodes do not read them again).
        schedule = build_bandwidth(bandwidth, base_dir, np.random.default_rng(0))
        fwd_s, rev_s = cls._delays(d, where)
        queue = cls._queue(d, where, _queue_rate_bps(bandwidth, schedule), transport)
        loss = check_number(d.get("loss", 0.0), f"{where}.loss", lo=0.0, hi=1.0, hi_open=True)
        cc = check_choice(d.get("cc", transport.cc), f"{where}.cc", CONGESTION_CONTROLS)
        return cls(name, bandwidth, fwd_s, rev_s, queue, loss, cc)

    @staticmethod
    def _delays(d: Mapping[str, Any], where: str) -> tuple[float, float]:
        given = [k for k in ("rtt_ms", "one_way_delay_ms", "fwd_delay_ms", "rev_delay_ms") if k in d]
        if given == ["rtt_ms"]:
            rtt = check_number(d["rtt_ms"], f"{where}.rtt_ms", lo=0.0, hi=1e7)
            return rtt / 2000.0, rtt / 2000.0
        if given == ["one_way_delay_ms"]:
            owd = check_number(d["one_way_delay_ms"], f"{where}.one_way_delay_ms", lo=0.0, hi=1e7)
            return owd / 1000.0, owd / 1000.0
        if given == ["fwd_delay_ms", "rev_delay_ms"]:
            fwd = check_number(d["fwd_delay_ms"], f"{where}.fwd_delay_ms", lo=0.0, hi=1e7)
            rev = check_number(d["rev_delay_ms"], f"{where}.rev_delay_ms", lo=0.0, hi=1e7)
            return fwd / 1000.0, rev / 1000.0
        raise ScenarioError(
            f"{where}.rtt_ms",
            {k: d[k] for k in given} or None,
            "exactly one of rtt_ms, one_way_delay_ms, or both fwd_delay_ms and rev_delay_ms",
        )

    @staticmethod
    def _queue(d: Mapping[str, Any], where: str, rate_bps: float, transport: TransportSpec) -> int:
        packet = transport.mss_bytes + transport.header_bytes
        given = [k for k in ("queue_bytes", "queue_packets", "queue_ms") if k in d]
        if len(given) > 1:
            raise ScenarioError(
                f"{where}.{given[1]}",
                d[given[1]],
                f"only one of queue_bytes, queue_packets, queue_ms (also got {given[0]})",
            )
        if given == ["queue_bytes"]:
            return check_integer(d["queue_bytes"], f"{where}.queue_bytes", lo=packet, hi=2**50)
        if given == ["queue_packets"]:
            return packet * check_integer(d["queue_packets"], f"{where}.queue_packets", lo=1, hi=2**30)
        queue_ms = (
            _DEFAULT_QUEUE_MS
            if not given
            else check_number(d["queue_ms"], f"{where}.queue_ms", lo=0.0, hi=1e7)
        )
        return max(
            packet * (_DEFAULT_QUEUE_MIN_PACKETS if not given else 1), int(rate_bps * queue_ms / 8000.0)
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "bandwidth": self.bandwidth,
            "fwd_delay_ms": self.fwd_delay_s * 1000.0,
            "rev_delay_ms": self.rev_delay_s * 1000.0,
            "queue_bytes": self.queue_bytes,
            "loss": self.loss,
            "cc": self.cc,
        }


def _queue_rate_bps(bandwidth: Mapping[str, Any], schedule: BandwidthSchedule) -> float:
    """Rate that sizes a queue given in milliseconds: the peak of a closed-form
    bandwidth, the mean of a trace (whose per-millisecond peaks say little)."""
    if bandwidth["type"] != "trace":
        return float(schedule.peak_bps())
    span = schedule.cycle_ns or int(schedule.start_ns[-1])
    return schedule.mean_bps(span) if span > 0 else float(schedule.peak_bps())


@dataclass(frozen=True)
class Scenario:
    """A validated multipath deadline scenario.

    Parameters
    ----------
    name : str
        Identifier used in result tables.
    paths : tuple of PathSpec
        1 to 8 paths.
    workload : dict
        Canonical workload config (see :func:`mpsched.envs.workloads.normalize_workload`).
    duration_s : float
        Blocks arrive in ``[0, duration_s)``.
    seed : int
        Episode seed used when none is given.
    transport : TransportSpec
        MSS, header overhead and RTO constants.
    receiver : str
        ``"block"``: block-aware receiver without head-of-line blocking between blocks.
    horizon_s : float or None
        End of the simulation; ``None`` means the last block deadline (or the duration,
        if later), after which nothing can complete on time.
    description : str
        Free text.
    base_dir : Path or None
        Directory that relative trace and frame files resolve against (the YAML file's
        folder); not part of the serialized form.
    """

    name: str
    paths: tuple[PathSpec, ...]
    workload: dict[str, Any]
    duration_s: float
    seed: int = 0
    transport: TransportSpec = field(default_factory=TransportSpec)
    receiver: str = "block"
    horizon_s: float | None = None
    description: str = ""
    base_dir: Path | None = field(default=None, compare=False)

    KEYS = (
        "name",
        "description",
        "duration_s",
        "seed",
        "horizon_s",
        "transport",
        "receiver",
        "paths",
        "workload",
    )

    @classmethod
    def from_dict(cls, d: Any, base_dir: str | Path | None = None) -> Scenario:
        """Build and validate a scenario from a mapping (as read from YAML or JSON).

        Raises
        ------
        ScenarioError
            Naming the first invalid field.
        """
        d = check_mapping(d, "scenario", "a mapping (dict)")
        check_keys(d, "", cls.KEYS)
        name = check_text(d.get("name", "custom"), "name")
        description = d.get("description", "")
        if not isinstance(description, str):
            raise ScenarioError("description", description, "a string")
        if "duration_s" not in d:
            raise ScenarioError("duration_s", None, "a duration in seconds > 0")
        duration_s = check_number(d["duration_s"], "duration_s", lo=0.0, hi=1e7, lo_open=True)
        seed = check_integer(d.get("seed", 0), "seed", lo=0, hi=2**63 - 1)
        horizon = d.get("horizon_s")
        horizon_s = (
            None if horizon is None else check_number(horizon, "horizon_s", lo=0.0, hi=4.6e9, lo_open=True)
        )
        transport = TransportSpec.from_dict(d.get("transport", {}))
        receiver = check_choice(d.get("receiver", "block"), "receiver", RECEIVERS)
        paths_raw = d.get("paths")
        if not isinstance(paths_raw, (list, tuple)) or not 1 <= len(paths_raw) <= 8:
            raise ScenarioError("paths", paths_raw, "a list of 1 to 8 paths")
        resolved = Path(base_dir).resolve() if base_dir is not None else None
        paths = tuple(
            PathSpec.from_dict(p, f"paths[{i}]", i, transport, resolved) for i, p in enumerate(paths_raw)
        )
        names = [p.name for p in paths]
        if len(set(names)) != len(names):
            raise ScenarioError("paths", names, "distinct path names")
        if "workload" not in d:
            raise ScenarioError("workload", None, "a workload mapping with a type")
        workload = normalize_workload(d["workload"], "workload")
        if workload["type"] == "frames":  # read the frame file now, so that its errors surface here
            generate_workload(workload, duration_s, np.random.default_rng(0), resolved)
        sc = cls(
            name=name,
            paths=paths,
            workload=workload,
            duration_s=duration_s,
            seed=seed,
            transport=transport,
            receiver=receiver,
            horizon_s=horizon_s,
            description=description,
            base_dir=resolved,
        )
        return sc

    @classmethod
    def from_yaml(cls, path: str | Path) -> Scenario:
        """Read a scenario from a YAML file; relative files resolve against its folder."""
        p = Path(path)
        try:
            text = p.read_text()
        except OSError as exc:
            raise ScenarioError("scenario file", str(p), f"a readable YAML file ({exc.strerror})") from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ScenarioError("scenario file", str(p), f"valid YAML ({exc})") from None
        return cls.from_dict(data, base_dir=p.parent)

    def to_dict(self) -> dict[str, Any]:
        """Canonical form: every default filled in; relative files made absolute."""
        return {
            "name": self.name,
            "description": self.description,
            "duration_s": self.duration_s,
            "seed": self.seed,
            "horizon_s": self.horizon_s,
            "transport": self.transport.to_dict(),
            "receiver": self.receiver,
            "paths": [_absolute_files(p.to_dict(), self.base_dir) for p in self.paths],
            "workload": _absolute_files(self.workload, self.base_dir),
        }

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False)

    def replace(self, **changes: Any) -> Scenario:
        """A copy with top-level fields changed, validated again (e.g. ``duration_s=10``)."""
        d = self.to_dict()
        d.update(changes)
        return Scenario.from_dict(d, base_dir=self.base_dir)


def _absolute_files(config: dict[str, Any], base_dir: Path | None) -> dict[str, Any]:
    """Copy of a config whose ``file`` entries (at any depth) are absolute paths."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        if (
            key == "file"
            and isinstance(value, str)
            and base_dir is not None
            and not Path(value).is_absolute()
        ):
            out[key] = str((base_dir / value).resolve())
        elif isinstance(value, dict):
            out[key] = _absolute_files(value, base_dir)
        else:
            out[key] = value
    return out
