"""Scenarios: the validated description of one multipath deadline problem.

A scenario names the paths of the multipath connection (bandwidth, delay, queue, loss,
congestion control), optional bottlenecks shared by several paths and greedy cross
traffic competing on them, the receiver, the workload that produces blocks, the
transport constants and the duration. It is plain data: :meth:`Scenario.from_dict`,
:meth:`Scenario.from_yaml` and :meth:`Scenario.to_dict` convert it, and every field is
checked when the scenario is built, with errors that name the field path, the value and
what was expected.

Example
-------
>>> from mpsched.envs import Scenario
>>> sc = Scenario.from_dict({
...     "duration_s": 10,
...     "paths": [
...         {"bandwidth": 2.0, "rtt_ms": 10},
...         {"bandwidth": {"type": "square", "high_mbps": 3, "low_mbps": 1, "period_s": 2},
...          "rtt_ms": 40, "loss": 0.001, "cc": "cubic"},
...     ],
...     "workload": {"type": "avc", "bitrate_mbps": 4.3},
... })
>>> len(sc.paths)
2

Shared bottlenecks and competing traffic (RFC 6356's "do no harm" setting)::

    links:
      - {name: shared, bandwidth: 10, queue_ms: 100}
    paths:
      - {name: a, link: shared, rtt_ms: 40, cc: lia}
      - {name: b, link: shared, rtt_ms: 40, cc: lia}
    cross_traffic:
      - {name: tcp, link: shared, rtt_ms: 40, cc: newreno}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from .bandwidth import BandwidthSchedule, build_bandwidth, normalize_bandwidth
from .delays import DelaySpec
from .errors import ScenarioError
from .outages import OutageSpec
from .textfiles import read_yaml
from .validate import check_bool, check_choice, check_integer, check_keys, check_mapping, check_number, check_text
from .workloads import generate_workload, normalize_workload

__all__ = [
    "Scenario",
    "PathSpec",
    "LinkSpec",
    "LossSpec",
    "CrossFlowSpec",
    "ReceiverSpec",
    "TransportSpec",
    "CONGESTION_CONTROLS",
    "RECEIVERS",
    "DELAY_KEYS",
    "QUEUE_KEYS",
    "CCP_KEYS",
    "set_path_cc",
]

CONGESTION_CONTROLS: tuple[str, ...] = ("ideal", "newreno", "cubic", "lia", "olia", "balia", "wvegas", "ccp")
FAST_RECOVERIES: tuple[str, ...] = ("immediate", "prr")
CUBIC_ARITHMETICS: tuple[str, ...] = ("rfc9438", "segments")
CROSS_CONGESTION_CONTROLS: tuple[str, ...] = ("newreno", "cubic")
SEQUENCES: tuple[str, ...] = ("send", "stream")
RECEIVERS: tuple[str, ...] = ("block", "in_order")
LOSS_MODELS: tuple[str, ...] = ("iid", "gilbert_elliott")

_DEFAULT_QUEUE_MS = 100.0
_DEFAULT_QUEUE_MIN_PACKETS = 10
_DEFAULT_RBUF_BYTES = 65536
DELAY_KEYS: tuple[str, ...] = ("rtt_ms", "one_way_delay_ms", "fwd_delay_ms", "rev_delay_ms")
"""The ways of giving a path's delay; a path takes one (``fwd_delay_ms`` with
``rev_delay_ms`` count as one)."""
QUEUE_KEYS: tuple[str, ...] = ("queue_bytes", "queue_packets", "queue_ms")
"""The ways of giving a bottleneck's queue; a link takes one."""


def _probability(value: Any, where: str, *, below_one: bool = False) -> float:
    return check_number(value, where, lo=0.0, hi=1.0, hi_open=below_one, what="a probability")


@dataclass(frozen=True)
class TransportSpec:
    """Transport constants shared by every subflow.

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
    fast_recovery : {"immediate", "prr"}
        How a window-based path's window falls when a loss starts a recovery
        (docs/model.md 7.4): ``immediate``, at once to the new ssthresh, the sender then
        waiting for the flight to drain below it (RFC 9002 section 7.3.2, the default);
        ``prr``, by Proportional Rate Reduction (RFC 6937), sending on during the
        recovery in proportion to the data delivered, as Linux and ns-3 TCP do.
    cubic_arithmetic : {"rfc9438", "segments"}
        How Cubic computes its window (docs/model.md 7.8): ``rfc9438``, RFC 9438's
        equations in bytes (the default); ``segments``, as Linux and ns-3 do, in whole
        segments counted per acknowledgement, with the segments acknowledged during a
        fast recovery credited when it ends (7.8.1).
    """

    mss_bytes: int = 1448
    header_bytes: int = 0
    initial_cwnd_packets: int = 10
    min_rto_ms: float = 200.0
    max_rto_s: float = 60.0
    cc: str = "newreno"
    fast_recovery: str = "immediate"
    cubic_arithmetic: str = "rfc9438"

    KEYS = ("mss_bytes", "header_bytes", "initial_cwnd_packets", "min_rto_ms", "max_rto_s", "cc", "fast_recovery",
            "cubic_arithmetic")
    OPTIONAL = ("fast_recovery", "cubic_arithmetic")
    """Keys written only where they are not the default."""

    @classmethod
    def from_dict(cls, d: Any, where: str = "transport") -> TransportSpec:
        d = check_mapping(d, where, "a mapping (dict)")
        check_keys(d, where, cls.KEYS)
        base = cls()

        def get(key: str) -> Any:
            return d.get(key, getattr(base, key))

        spec = cls(
            mss_bytes=check_integer(get("mss_bytes"), f"{where}.mss_bytes", lo=1, hi=65535),
            header_bytes=check_integer(get("header_bytes"), f"{where}.header_bytes", lo=0, hi=1024),
            initial_cwnd_packets=check_integer(
                get("initial_cwnd_packets"), f"{where}.initial_cwnd_packets", lo=1, hi=10**6
            ),
            min_rto_ms=check_number(get("min_rto_ms"), f"{where}.min_rto_ms", lo=0.0, hi=1e9, lo_open=True),
            max_rto_s=check_number(get("max_rto_s"), f"{where}.max_rto_s", lo=0.0, hi=1e6, lo_open=True),
            cc=check_choice(get("cc"), f"{where}.cc", CONGESTION_CONTROLS),
            fast_recovery=check_choice(get("fast_recovery"), f"{where}.fast_recovery", FAST_RECOVERIES),
            cubic_arithmetic=check_choice(get("cubic_arithmetic"), f"{where}.cubic_arithmetic", CUBIC_ARITHMETICS),
        )
        if spec.max_rto_s * 1000.0 < spec.min_rto_ms:
            raise ScenarioError(f"{where}.max_rto_s", spec.max_rto_s, f"at least min_rto_ms = {spec.min_rto_ms} ms")
        return spec

    def to_dict(self) -> dict[str, Any]:
        # the optional keys only where they are not the default, so that the canonical form
        # (and the scenario hash result stores key rows by) of every scenario written before
        # them stays
        base = TransportSpec()
        return {k: getattr(self, k) for k in self.KEYS
                if k not in self.OPTIONAL or getattr(self, k) != getattr(base, k)}


@dataclass(frozen=True)
class LossSpec:
    """Random packet loss of a subflow at its bottleneck (docs/model.md section 4).

    Given as a number (an i.i.d. loss rate) or a mapping: ``{model: iid, rate: p}`` or
    ``{model: gilbert_elliott, p: ..., r: ..., loss_bad: 1.0, loss_good: 0.0}`` (the
    Gilbert-Elliott two-state chain: ``p`` good->bad and ``r`` bad->good per packet).

    Parameters
    ----------
    model : str
        ``"iid"`` or ``"gilbert_elliott"``.
    rate : float
        i.i.d. loss probability, or the loss probability in the good state.
    p, r : float
        Gilbert-Elliott transition probabilities.
    loss_bad : float
        Gilbert-Elliott loss probability in the bad state.
    """

    model: str = "iid"
    rate: float = 0.0
    p: float = 0.0
    r: float = 1.0
    loss_bad: float = 1.0

    @classmethod
    def from_value(cls, value: Any, where: str) -> LossSpec:
        if not isinstance(value, Mapping):
            return cls(rate=_probability(value, where, below_one=True))
        d = check_mapping(value, where, "a loss rate or a loss mapping")
        model = check_choice(d.get("model", "iid"), f"{where}.model", LOSS_MODELS)
        if model == "iid":
            check_keys(d, where, ("model", "rate"))
            return cls(rate=_probability(d.get("rate", 0.0), f"{where}.rate", below_one=True))
        check_keys(d, where, ("model", "p", "r", "loss_bad", "loss_good"))
        for key in ("p", "r"):
            if key not in d:
                raise ScenarioError(f"{where}.{key}", None, "a probability (Gilbert-Elliott needs p and r)")
        spec = cls(
            model=model,
            rate=_probability(d.get("loss_good", 0.0), f"{where}.loss_good", below_one=True),
            p=_probability(d["p"], f"{where}.p"),
            r=_probability(d["r"], f"{where}.r"),
            loss_bad=_probability(d.get("loss_bad", 1.0), f"{where}.loss_bad"),
        )
        if spec.p + spec.r == 0.0:
            raise ScenarioError(f"{where}.r", spec.r, "p + r > 0 (otherwise the chain never leaves its state)")
        return spec

    @property
    def long_run_rate(self) -> float:
        """Stationary loss probability per packet."""
        if self.model == "iid":
            return self.rate
        return (self.p * self.loss_bad + self.r * self.rate) / (self.p + self.r)

    def to_value(self) -> float | dict[str, Any]:
        if self.model == "iid":
            return self.rate
        return {"model": self.model, "p": self.p, "r": self.r, "loss_bad": self.loss_bad, "loss_good": self.rate}


def _delays(d: Mapping[str, Any], where: str) -> tuple[float, float]:
    given = [k for k in DELAY_KEYS if k in d]
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


def _queue_rate_bps(bandwidth: Mapping[str, Any], schedule: BandwidthSchedule) -> float:
    """Rate that sizes a queue given in milliseconds: the peak of a closed-form
    bandwidth, the mean of a trace (whose per-millisecond peaks say little)."""
    if bandwidth["type"] != "trace":
        return float(schedule.peak_bps())
    span = schedule.cycle_ns or int(schedule.start_ns[-1])
    return schedule.mean_bps(span) if span > 0 else float(schedule.peak_bps())


def _bottleneck(d: Mapping[str, Any], where: str, transport: TransportSpec,
                base_dir: Path | None) -> tuple[dict[str, Any], int]:
    """The bandwidth and queue of a bottleneck described in mapping d."""
    if "bandwidth" not in d:
        raise ScenarioError(f"{where}.bandwidth", None, "a bandwidth (Mbps number or a bandwidth mapping)")
    bandwidth = normalize_bandwidth(d["bandwidth"], f"{where}.bandwidth")
    # Built once here so that a bad trace file fails now, naming its file and line
    # (parsed files are cached: episodes do not read them again).
    schedule = build_bandwidth(bandwidth, base_dir, np.random.default_rng(0))
    packet = transport.mss_bytes + transport.header_bytes
    given = [k for k in QUEUE_KEYS if k in d]
    if len(given) > 1:
        raise ScenarioError(f"{where}.{given[1]}", d[given[1]], f"only one of {', '.join(QUEUE_KEYS)}")
    if given == ["queue_bytes"]:
        return bandwidth, check_integer(d["queue_bytes"], f"{where}.queue_bytes", lo=packet, hi=2**50)
    if given == ["queue_packets"]:
        return bandwidth, packet * check_integer(d["queue_packets"], f"{where}.queue_packets", lo=1, hi=2**30)
    rate = _queue_rate_bps(bandwidth, schedule)
    if given == ["queue_ms"]:
        queue_ms = check_number(d["queue_ms"], f"{where}.queue_ms", lo=0.0, hi=1e7)
        return bandwidth, max(packet, int(rate * queue_ms / 8000.0))
    return bandwidth, max(packet * _DEFAULT_QUEUE_MIN_PACKETS, int(rate * _DEFAULT_QUEUE_MS / 8000.0))


@dataclass(frozen=True)
class LinkSpec:
    """A named bottleneck that several paths or cross flows share.

    Parameters
    ----------
    name : str
    bandwidth : dict
        Canonical bandwidth config.
    queue_bytes : int
        Drop-tail limit (``queue_bytes``, ``queue_packets`` or ``queue_ms``; by default
        100 ms at the peak rate, the mean for a trace, and at least 10 packets).
    """

    name: str
    bandwidth: dict[str, Any]
    queue_bytes: int

    KEYS = ("name", "bandwidth") + QUEUE_KEYS

    @classmethod
    def from_dict(cls, d: Any, where: str, transport: TransportSpec, base_dir: Path | None) -> LinkSpec:
        d = check_mapping(d, where, "a mapping (dict)")
        check_keys(d, where, cls.KEYS)
        if "name" not in d:
            raise ScenarioError(f"{where}.name", None, "a name that paths and cross flows refer to")
        name = check_text(d["name"], f"{where}.name")
        bandwidth, queue = _bottleneck(d, where, transport, base_dir)
        return cls(name, bandwidth, queue)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "bandwidth": self.bandwidth, "queue_bytes": self.queue_bytes}


DEFAULT_ACK_BYTES = 40
"""Wire size of an acknowledgement at a reverse bottleneck: TCP's, without options."""

CCP_DEFAULT_GAIN = 2.0
"""The proportional gain Kp of ``cc: ccp`` unless a path gives ``ccp_gain``: the project's
choice (seed 002 eq. (4) asks only ``0 <= Kp``); docs/model.md 7.13."""
CCP_MAX_GAIN = 100.0
CCP_MAX_STORAGE_PACKETS = 2**30
CCP_KEYS: tuple[str, ...] = ("ccp_gain", "ccp_storage_packets")
"""A path's keys that only ``cc: ccp`` takes: a path given another controller drops them."""


def set_path_cc(path: dict[str, Any], cc: str) -> None:
    """Give a path mapping the controller ``cc``, dropping the keys only another controller
    takes (:data:`CCP_KEYS`), as a scenario built from it requires."""
    path["cc"] = cc
    if cc != "ccp":
        for key in CCP_KEYS:
            path.pop(key, None)


def _ccp_parameters(d: Mapping[str, Any], where: str, cc: str) -> tuple[float, int | None]:
    """A ccp path's gain Kp and fixed storage B in packets (None: estimated), docs/model.md
    7.13; either key on a path of another controller is an error."""
    given = [k for k in CCP_KEYS if k in d]
    if given and cc != "ccp":
        raise ScenarioError(f"{where}.{given[0]}", d[given[0]], f"set only with cc: ccp (this path's cc is {cc})")
    gain = check_number(d.get("ccp_gain", CCP_DEFAULT_GAIN), f"{where}.ccp_gain", lo=0.0, hi=CCP_MAX_GAIN,
                        lo_open=True, what="a gain")
    if abs(gain * 1000.0 - round(gain * 1000.0)) > 1e-6:
        raise ScenarioError(f"{where}.ccp_gain", gain, "a multiple of 0.001 (the core holds Kp in thousandths)")
    storage = d.get("ccp_storage_packets")
    if storage is not None:
        storage = check_integer(storage, f"{where}.ccp_storage_packets", lo=1, hi=CCP_MAX_STORAGE_PACKETS)
    return gain, storage


@dataclass(frozen=True)
class PathSpec:
    """One path of the multipath connection: its bottleneck, delays, loss and congestion
    control.

    Parameters
    ----------
    name : str
        A label for tables ("path0", "wifi", ...).
    bandwidth : dict or None
        Canonical bandwidth config of the path's own bottleneck; None when it uses a
        shared link.
    fwd_delay_s, rev_delay_s : float
        One-way propagation delay sender->receiver and back.
    queue_bytes : int or None
        Drop-tail limit of the path's own bottleneck (``queue_bytes``, ``queue_packets``
        or ``queue_ms``; by default 100 ms at the peak rate, the mean for a trace, and at
        least 10 packets); None with a shared link.
    loss : LossSpec
        Random loss of the path's packets.
    cc : str
        Congestion control of the subflow.
    link : str or None
        Name of a shared link in ``links``.
    delay : DelaySpec or None
        Delay dynamics (``delay``: jitter, delay steps or a delay trace; see
        :mod:`mpsched.envs.delays`); None: the delays above hold all episode.
    outages : OutageSpec or None
        When the path is down (``outages``: a list of ``[start_s, end_s]`` or a file; see
        :mod:`mpsched.envs.outages`); None: never.
    backup : bool
        A backup path (MPTCP's B flag): the sender uses it only while every other path is
        potentially failed, i.e. timed out with nothing acknowledged since
        (docs/model.md section 7).
    ack_loss : float
        Probability that an acknowledgement is lost on the way back (a lossy reverse path;
        window-based controllers only).
    ack_bandwidth : float
        Rate in Mbit/s of a bottleneck on the way back that serves the acknowledgements one
        at a time, first come first served (``ack_bandwidth``; 0: none, the way back only
        delays them; window-based controllers only). docs/model.md section 6.
    ack_bytes : int
        Wire size of one acknowledgement at that bottleneck (40: a TCP acknowledgement
        without options).
    ack_queue_bytes : int or None
        Drop-tail limit of the acknowledgements waiting there; None: no limit.
    ccp_gain : float
        ``cc: ccp`` only: the proportional gain Kp of seed 002's eq. (4), a multiple of
        0.001 in (0, 100] (default 2, the project's choice; docs/model.md 7.13).
    ccp_storage_packets : int or None
        ``cc: ccp`` only: the storage B of eq. (4) in packets of ``mss_bytes``; None: the
        path estimates it as its largest delivery rate times its largest smoothed RTT.
    start_s : float
        When the path joins the connection (0: from the start); a later start is a path
        added mid-episode.
    stop_s : float or None
        When the sender stops using it (None: never): a path removed mid-episode, whose
        packets in flight are still acknowledged or time out.
    """

    name: str
    bandwidth: dict[str, Any] | None
    fwd_delay_s: float
    rev_delay_s: float
    queue_bytes: int | None
    loss: LossSpec
    cc: str
    link: str | None = None
    delay: DelaySpec | None = None
    outages: OutageSpec | None = None
    backup: bool = False
    ack_loss: float = 0.0
    start_s: float = 0.0
    stop_s: float | None = None
    ack_bandwidth: float = 0.0
    ack_bytes: int = DEFAULT_ACK_BYTES
    ack_queue_bytes: int | None = None
    ccp_gain: float = CCP_DEFAULT_GAIN
    ccp_storage_packets: int | None = None

    KEYS = ("name", "bandwidth", "link", "loss", "cc", "delay", "outages", "backup", "ack_loss", "ack_bandwidth",
            "ack_bytes", "ack_queue_bytes", "start_s", "stop_s") + CCP_KEYS + DELAY_KEYS + QUEUE_KEYS

    @property
    def rtt_s(self) -> float:
        """Base round-trip time (propagation only)."""
        return self.fwd_delay_s + self.rev_delay_s

    @classmethod
    def from_dict(cls, d: Any, where: str, index: int, transport: TransportSpec,
                  base_dir: Path | None = None, links: Mapping[str, LinkSpec] | None = None) -> PathSpec:
        d = check_mapping(d, where, "a mapping (dict)")
        check_keys(d, where, cls.KEYS)
        name = check_text(d.get("name", f"path{index}"), f"{where}.name")
        link, bandwidth, queue = _link_or_bottleneck(d, where, transport, base_dir, links or {})
        fwd_s, rev_s = _delays(d, where)
        loss = LossSpec.from_value(d.get("loss", 0.0), f"{where}.loss")
        cc = check_choice(d.get("cc", transport.cc), f"{where}.cc", CONGESTION_CONTROLS)
        delay = DelaySpec.from_value(d["delay"], f"{where}.delay", base_dir) if "delay" in d else None
        outages = OutageSpec.from_value(d["outages"], f"{where}.outages", base_dir) if "outages" in d else None
        backup = check_bool(d.get("backup", False), f"{where}.backup")
        ack_loss = check_number(d.get("ack_loss", 0.0), f"{where}.ack_loss", lo=0.0, hi=1.0)
        if ack_loss > 0 and cc == "ideal":
            raise ScenarioError(f"{where}.ack_loss", ack_loss,
                                "0 with cc: ideal (an ideal path learns the fate of every packet)")
        start = check_number(d.get("start_s", 0.0), f"{where}.start_s", lo=0.0, hi=4.6e9)
        stop_raw = d.get("stop_s")
        stop = None if stop_raw is None else check_number(stop_raw, f"{where}.stop_s", lo=start, hi=4.6e9)
        ack_bandwidth = check_number(d.get("ack_bandwidth", 0.0), f"{where}.ack_bandwidth", lo=0.0, hi=1e6)
        if not ack_bandwidth and ("ack_bytes" in d or "ack_queue_bytes" in d):
            key = "ack_bytes" if "ack_bytes" in d else "ack_queue_bytes"
            raise ScenarioError(f"{where}.{key}", d[key], "set only with ack_bandwidth (the reverse bottleneck)")
        if ack_bandwidth and cc == "ideal":
            raise ScenarioError(f"{where}.ack_bandwidth", ack_bandwidth,
                                "0 with cc: ideal (an ideal path learns the fate of every packet at once)")
        ack_bytes = check_integer(d.get("ack_bytes", DEFAULT_ACK_BYTES), f"{where}.ack_bytes", lo=1, hi=65535)
        ack_queue = d.get("ack_queue_bytes")
        if ack_queue is not None:
            ack_queue = check_integer(ack_queue, f"{where}.ack_queue_bytes", lo=ack_bytes, hi=2**62)
        ccp_gain, ccp_storage = _ccp_parameters(d, where, cc)
        return cls(name, bandwidth, fwd_s, rev_s, queue, loss, cc, link, delay, outages,
                   backup, ack_loss, start, stop, ack_bandwidth, ack_bytes, ack_queue, ccp_gain, ccp_storage)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name}
        if self.link is not None:
            d["link"] = self.link
        else:
            d["bandwidth"] = self.bandwidth
            d["queue_bytes"] = self.queue_bytes
        d.update({
            "fwd_delay_ms": self.fwd_delay_s * 1000.0,
            "rev_delay_ms": self.rev_delay_s * 1000.0,
            "loss": self.loss.to_value(),
            "cc": self.cc,
        })
        if self.delay is not None:  # written only when given, so that other scenarios' hashes stay
            d["delay"] = self.delay.to_dict()
        if self.outages is not None:
            d["outages"] = self.outages.to_value()
        if self.backup:
            d["backup"] = True
        if self.ack_loss:
            d["ack_loss"] = self.ack_loss
        if self.ack_bandwidth:  # written only when given, so that other scenarios' hashes stay
            d["ack_bandwidth"] = self.ack_bandwidth
            d["ack_bytes"] = self.ack_bytes
            if self.ack_queue_bytes is not None:
                d["ack_queue_bytes"] = self.ack_queue_bytes
        if self.start_s:
            d["start_s"] = self.start_s
        if self.stop_s is not None:
            d["stop_s"] = self.stop_s
        if self.cc == "ccp":
            d["ccp_gain"] = self.ccp_gain
            if self.ccp_storage_packets is not None:
                d["ccp_storage_packets"] = self.ccp_storage_packets
        return d


def _link_or_bottleneck(d: Mapping[str, Any], where: str, transport: TransportSpec, base_dir: Path | None,
                        links: Mapping[str, LinkSpec]) -> tuple[str | None, dict[str, Any] | None, int | None]:
    if "link" not in d:
        bandwidth, queue = _bottleneck(d, where, transport, base_dir)
        return None, bandwidth, queue
    clash = [k for k in ("bandwidth",) + QUEUE_KEYS if k in d]
    if clash:
        raise ScenarioError(f"{where}.{clash[0]}", d[clash[0]],
                            "no bandwidth or queue of its own: the shared link defines them")
    link = d["link"]
    if not isinstance(link, str) or link not in links:
        raise ScenarioError(f"{where}.link", link, "the name of a link in links (" + ", ".join(links) + ")"
                            if links else "the name of a link in links (none are defined)")
    return link, None, None


@dataclass(frozen=True)
class CrossFlowSpec:
    """A greedy single-path flow competing with the connection on a shared link.

    Parameters
    ----------
    name : str
    link : str
        The shared link it crosses.
    fwd_delay_s, rev_delay_s : float
    loss : LossSpec
    cc : str
        ``"newreno"`` or ``"cubic"``.
    start_s : float
        When it starts sending.
    stop_s : float or None
        When it stops sending (None: never).
    """

    name: str
    link: str
    fwd_delay_s: float
    rev_delay_s: float
    loss: LossSpec
    cc: str
    start_s: float = 0.0
    stop_s: float | None = None

    KEYS = ("name", "link", "loss", "cc", "start_s", "stop_s") + DELAY_KEYS

    @classmethod
    def from_dict(cls, d: Any, where: str, index: int, links: Mapping[str, LinkSpec]) -> CrossFlowSpec:
        d = check_mapping(d, where, "a mapping (dict)")
        check_keys(d, where, cls.KEYS)
        name = check_text(d.get("name", f"cross{index}"), f"{where}.name")
        link = d.get("link")
        if not isinstance(link, str) or link not in links:
            raise ScenarioError(f"{where}.link", link, "the name of a link in links" +
                                (" (" + ", ".join(links) + ")" if links else " (none are defined)"))
        fwd_s, rev_s = _delays(d, where)
        loss = LossSpec.from_value(d.get("loss", 0.0), f"{where}.loss")
        cc = check_choice(d.get("cc", "newreno"), f"{where}.cc", CROSS_CONGESTION_CONTROLS)
        start = check_number(d.get("start_s", 0.0), f"{where}.start_s", lo=0.0, hi=4.6e9)
        stop_raw = d.get("stop_s")
        stop = None if stop_raw is None else check_number(stop_raw, f"{where}.stop_s", lo=start, hi=4.6e9)
        return cls(name, link, fwd_s, rev_s, loss, cc, start, stop)

    @property
    def rtt_s(self) -> float:
        return self.fwd_delay_s + self.rev_delay_s

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "link": self.link,
            "fwd_delay_ms": self.fwd_delay_s * 1000.0,
            "rev_delay_ms": self.rev_delay_s * 1000.0,
            "loss": self.loss.to_value(),
            "cc": self.cc,
            "start_s": self.start_s,
            "stop_s": self.stop_s,
        }


@dataclass(frozen=True)
class ReceiverSpec:
    """The receiver (docs/model.md section 6).

    ``"block"``: block-aware, no head-of-line blocking between blocks (QUIC streams).
    ``{type: in_order, rbuf_bytes: N, sequence: send|stream}``: one sequence space across
    the paths with a receive buffer of N bytes that the sender respects (MPTCP,
    CMT-SCTP). ``sequence: send`` (default) numbers pieces as they are first sent, so
    data leaves in sequence; ``sequence: stream`` numbers them in the application's byte
    order, so a scheduler can send later blocks ahead on a slow path (DAPS), and the
    unsent bytes of a cancelled block are skipped.
    """

    type: str = "block"
    rbuf_bytes: int = _DEFAULT_RBUF_BYTES
    sequence: str = "send"

    @classmethod
    def from_value(cls, value: Any, where: str, transport: TransportSpec) -> ReceiverSpec:
        if isinstance(value, str):
            return cls(type=check_choice(value, where, RECEIVERS))
        d = check_mapping(value, where, "'block', 'in_order' or a receiver mapping")
        check_keys(d, where, ("type", "rbuf_bytes", "sequence"))
        kind = check_choice(d.get("type", "block"), f"{where}.type", RECEIVERS)
        rbuf = check_integer(d.get("rbuf_bytes", _DEFAULT_RBUF_BYTES), f"{where}.rbuf_bytes",
                             lo=transport.mss_bytes, hi=2**50)
        sequence = check_choice(d.get("sequence", "send"), f"{where}.sequence", SEQUENCES)
        if sequence == "stream" and kind != "in_order":
            raise ScenarioError(f"{where}.sequence", sequence, "'send' (a stream sequence needs type: in_order)")
        return cls(kind, rbuf, sequence)

    def to_value(self) -> str | dict[str, Any]:
        if self.type == "block":
            return "block"
        d: dict[str, Any] = {"type": self.type, "rbuf_bytes": self.rbuf_bytes}
        if self.sequence != "send":
            d["sequence"] = self.sequence
        return d


@dataclass(frozen=True)
class Scenario:
    """A validated multipath deadline scenario.

    Parameters
    ----------
    name : str
        Identifier used in result tables.
    paths : tuple of PathSpec
        1 to 8 paths of the multipath connection.
    workload : dict
        Canonical workload config (see :func:`mpsched.envs.workloads.normalize_workload`).
    duration_s : float
        Blocks arrive in ``[0, duration_s)``.
    seed : int
        Episode seed used when none is given.
    transport : TransportSpec
        MSS, header overhead, RTO constants, default congestion control.
    receiver : ReceiverSpec
        Block-aware (default) or in-order receiver.
    links : tuple of LinkSpec
        Named bottlenecks shared by paths or cross flows (paths without ``link`` have
        their own).
    cross_traffic : tuple of CrossFlowSpec
        Greedy flows competing on shared links.
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
    receiver: ReceiverSpec = field(default_factory=ReceiverSpec)
    links: tuple[LinkSpec, ...] = ()
    cross_traffic: tuple[CrossFlowSpec, ...] = ()
    horizon_s: float | None = None
    description: str = ""
    base_dir: Path | None = field(default=None, compare=False)

    KEYS = ("name", "description", "duration_s", "seed", "horizon_s", "transport", "receiver", "links", "paths",
            "cross_traffic", "workload")

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
        horizon_s = None if horizon is None else check_number(horizon, "horizon_s", lo=0.0, hi=4.6e9, lo_open=True)
        transport = TransportSpec.from_dict(d.get("transport", {}))
        receiver = ReceiverSpec.from_value(d.get("receiver", "block"), "receiver", transport)
        resolved = Path(base_dir).resolve() if base_dir is not None else None

        links_raw = d.get("links", [])
        if not isinstance(links_raw, (list, tuple)) or len(links_raw) > 8:
            raise ScenarioError("links", links_raw, "a list of at most 8 shared links")
        links = tuple(LinkSpec.from_dict(x, f"links[{i}]", transport, resolved) for i, x in enumerate(links_raw))
        link_names = {x.name: x for x in links}
        if len(link_names) != len(links):
            raise ScenarioError("links", [x.name for x in links], "distinct link names")

        paths_raw = d.get("paths")
        if not isinstance(paths_raw, (list, tuple)) or not 1 <= len(paths_raw) <= 8:
            raise ScenarioError("paths", paths_raw, "a list of 1 to 8 paths")
        paths = tuple(
            PathSpec.from_dict(p, f"paths[{i}]", i, transport, resolved, link_names) for i, p in enumerate(paths_raw)
        )
        if len({p.name for p in paths}) != len(paths):
            raise ScenarioError("paths", [p.name for p in paths], "distinct path names")

        cross_raw = d.get("cross_traffic", [])
        if not isinstance(cross_raw, (list, tuple)) or len(cross_raw) > 8:
            raise ScenarioError("cross_traffic", cross_raw, "a list of at most 8 cross flows")
        cross = tuple(CrossFlowSpec.from_dict(c, f"cross_traffic[{i}]", i, link_names) for i, c in enumerate(cross_raw))
        if len({c.name for c in cross}) != len(cross):
            raise ScenarioError("cross_traffic", [c.name for c in cross], "distinct cross-flow names")
        own_links = sum(p.link is None for p in paths)
        if own_links + len(links) > 16:
            raise ScenarioError("links", len(links),
                                f"at most 16 bottlenecks in all ({own_links} paths have their own)")

        if "workload" not in d:
            raise ScenarioError("workload", None, "a workload mapping with a type")
        workload = normalize_workload(d["workload"], "workload")
        if workload["type"] == "frames":  # read the frame file now, so that its errors surface here
            generate_workload(workload, duration_s, np.random.default_rng(0), resolved)
        return cls(
            name=name,
            paths=paths,
            workload=workload,
            duration_s=duration_s,
            seed=seed,
            transport=transport,
            receiver=receiver,
            links=links,
            cross_traffic=cross,
            horizon_s=horizon_s,
            description=description,
            base_dir=resolved,
        )

    @classmethod
    def from_yaml(cls, path: str | Path) -> Scenario:
        """Read a scenario from a YAML file; relative files resolve against its folder."""
        p = Path(path)
        return cls.from_dict(read_yaml(p), base_dir=p.parent)

    def to_dict(self) -> dict[str, Any]:
        """Canonical form: every default filled in; relative files made absolute."""
        d: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "duration_s": self.duration_s,
            "seed": self.seed,
            "horizon_s": self.horizon_s,
            "transport": self.transport.to_dict(),
            "receiver": self.receiver.to_value(),
        }
        if self.links:
            d["links"] = [_absolute_files(x.to_dict(), self.base_dir) for x in self.links]
        d["paths"] = [_absolute_files(p.to_dict(), self.base_dir) for p in self.paths]
        if self.cross_traffic:
            d["cross_traffic"] = [c.to_dict() for c in self.cross_traffic]
        d["workload"] = _absolute_files(self.workload, self.base_dir)
        return d

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
        if key == "file" and isinstance(value, str) and base_dir is not None and not Path(value).is_absolute():
            out[key] = str((base_dir / value).resolve())
        elif isinstance(value, dict):
            out[key] = _absolute_files(value, base_dir)
        else:
            out[key] = value
    return out
