"""Cross-validation against ns-3 (``mpsched validate --against ns3``; the ``ns3`` extra).

Each case is one bulk TCP flow over one bottleneck, built twice with the same link rate,
one-way delays, drop-tail queue (in packets), random loss of data packets, MSS, wire
overhead and initial window: once as an mpsched scenario (one path, a bulk workload that
always has data to send, MinRTT), once as an ns-3 program (two nodes joined by a
point-to-point link, a ``BulkSendApplication`` and a ``PacketSink``). Both report the
goodput (payload bytes delivered to the receiver over the run) and the wall time of the
simulation alone (ns-3's import and the episode's build excluded).

The ns-3 side is set up so that the device queue is the bottleneck queue and the TCP
sender is the standard one the core models (docs/model.md sections 4 and 7):

- the point-to-point device's ``DropTailQueue`` holds ``queue_packets`` packets and the
  traffic-control layer's default queue disc is removed;
- a ``RateErrorModel`` on the receiving device drops data packets with probability
  ``loss`` (acknowledgements travel the other way and are never dropped, as in the core);
- SACK on, initial window 10, MSS 1448 bytes, an acknowledgement per packet
  (``DelAckCount`` 1, as the core's receiver), minimum RTO 200 ms (the core's default);
- a packet on the wire is 1448 + 54 bytes: TCP with the timestamp option (32), IPv4 (20)
  and PPP (2), the core's ``header_bytes``.

What still differs is listed with its measured effect in the output of
:func:`compare` (``notes``) and in docs/model.md.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

__all__ = ["Ns3Case", "GRID", "QUICK", "WIRE_HEADER_BYTES", "MSS_BYTES", "mpsched_goodput", "ns3_goodput",
           "compare", "within_bounds", "format_comparison", "ns3_available"]

MSS_BYTES = 1448
WIRE_HEADER_BYTES = 54  # TCP 20 + timestamp option 12, IPv4 20, PPP 2
CONTROLLERS = {"newreno": "ns3::TcpNewReno", "cubic": "ns3::TcpCubic"}


@dataclass(frozen=True)
class Ns3Case:
    """One bulk flow over one bottleneck.

    Attributes
    ----------
    cc : {"newreno", "cubic"}
    rate_mbps : float
        Bottleneck rate.
    rtt_ms : float
        Round-trip propagation delay (half each way).
    loss : float
        Probability that a data packet is lost.
    queue_bdp : float
        Drop-tail queue as a multiple of the bandwidth-delay product (at least 4 packets).
    seconds : float
        Length of the run.
    """

    cc: str
    rate_mbps: float
    rtt_ms: float
    loss: float
    queue_bdp: float
    seconds: float = 30.0

    @property
    def queue_packets(self) -> int:
        bdp = self.rate_mbps * 1e6 / 8 * self.rtt_ms / 1e3 / (MSS_BYTES + WIRE_HEADER_BYTES)
        return max(4, int(round(self.queue_bdp * bdp)))

    @property
    def label(self) -> str:
        return (f"{self.cc} {self.rate_mbps:g} Mbit/s {self.rtt_ms:g} ms loss {100 * self.loss:g} % "
                f"queue {self.queue_bdp:g} BDP")


def _grid() -> Iterator[Ns3Case]:
    for cc in CONTROLLERS:
        for rate in (2.0, 10.0, 50.0):
            for rtt in (20.0, 80.0, 200.0):
                for loss in (0.0, 0.001, 0.01):
                    for queue in (0.5, 1.0, 2.0):
                        yield Ns3Case(cc, rate, rtt, loss, queue)


GRID: tuple[Ns3Case, ...] = tuple(_grid())
"""NewReno and Cubic x {2, 10, 50} Mbit/s x RTT {20, 80, 200} ms x loss {0, 0.1, 1} % x
queue {0.5, 1, 2} BDP: 162 cases."""

QUICK: tuple[Ns3Case, ...] = tuple(
    Ns3Case(cc, rate, rtt, loss, 1.0, 20.0)
    for cc in CONTROLLERS for rate, rtt in ((10.0, 40.0), (2.0, 200.0)) for loss in (0.0, 0.001, 0.01))
"""Twelve cases of 20 s: both controllers, two links, the three loss rates, a 1-BDP queue."""


def mpsched_scenario(case: Ns3Case) -> dict[str, Any]:
    """The case as an mpsched scenario: one path, a bulk workload faster than the link."""
    return {
        "name": "ns3-" + case.label.replace(" ", "-").replace("/", "").replace("%", "pct"),
        "duration_s": case.seconds, "horizon_s": case.seconds,
        "transport": {"mss_bytes": MSS_BYTES, "header_bytes": WIRE_HEADER_BYTES, "initial_cwnd_packets": 10,
                      "min_rto_ms": 200.0},
        "paths": [{"name": "bottleneck", "bandwidth": case.rate_mbps, "rtt_ms": case.rtt_ms,
                   "queue_bytes": case.queue_packets * (MSS_BYTES + WIRE_HEADER_BYTES), "loss": case.loss,
                   "cc": case.cc}],
        "workload": {"type": "bulk", "rate_mbps": 2 * case.rate_mbps, "chunk_bytes": 64 * MSS_BYTES,
                     "deadline_ms": 1e3 * case.seconds},
    }


def mpsched_goodput(case: Ns3Case, seed: int = 1) -> dict[str, float]:
    """Goodput [bit/s] and retransmissions of the case in mpsched, and the core's wall time."""
    from ..envs import scenarios
    from ..envs.episode import build_episode

    episode = build_episode(scenarios.resolve(mpsched_scenario(case)), seed)
    sim = episode.make_sim()
    begin = time.perf_counter()
    sim.run("minrtt", ())
    wall = time.perf_counter() - begin
    delivered = float(np.asarray(sim.view("delivered_bytes")).sum())
    return {"goodput_bps": delivered * 8 / case.seconds,
            "retransmissions": float(np.asarray(sim.view("retransmissions")).sum()), "wall_s": wall}


def ns3_available() -> bool:
    """Whether the ``ns3`` extra (``pip install ns3``) is installed."""
    import importlib.util

    return importlib.util.find_spec("ns") is not None


def ns3_goodput(case: Ns3Case, seed: int = 1) -> dict[str, float]:
    """Goodput [bit/s] of the case in ns-3 (the module docstring's setup) and the wall time
    of ``Simulator.Run`` alone. The first call imports ns-3 (about 15 s: its bindings
    compile)."""
    from ns import ns  # the ns3 extra; a missing module is the caller's to report

    ns.RngSeedManager.SetSeed(1)
    ns.RngSeedManager.SetRun(seed)
    defaults = {
        "ns3::TcpL4Protocol::SocketType": ns.StringValue(CONTROLLERS[case.cc]),
        "ns3::TcpSocket::SegmentSize": ns.UintegerValue(MSS_BYTES),
        "ns3::TcpSocket::InitialCwnd": ns.UintegerValue(10),
        "ns3::TcpSocket::DelAckCount": ns.UintegerValue(1),
        "ns3::TcpSocket::SndBufSize": ns.UintegerValue(1 << 27),
        "ns3::TcpSocket::RcvBufSize": ns.UintegerValue(1 << 27),
        "ns3::TcpSocketBase::Sack": ns.BooleanValue(True),
        "ns3::TcpSocketBase::MinRto": ns.TimeValue(ns.MilliSeconds(200)),
    }
    for name, value in defaults.items():
        ns.Config.SetDefault(name, value)
    nodes = ns.NodeContainer()
    nodes.Create(2)
    link = ns.PointToPointHelper()
    link.SetDeviceAttribute("DataRate", ns.StringValue(f"{int(round(case.rate_mbps * 1e6))}bps"))
    link.SetChannelAttribute("Delay", ns.TimeValue(ns.NanoSeconds(int(round(case.rtt_ms * 5e5)))))
    link.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", ns.QueueSizeValue(ns.QueueSize(f"{case.queue_packets}p")))
    devices = link.Install(nodes)
    ns.InternetStackHelper().Install(nodes)
    addresses = ns.Ipv4AddressHelper()
    addresses.SetBase(ns.Ipv4Address("10.1.1.0"), ns.Ipv4Mask("255.255.255.0"))
    interfaces = addresses.Assign(devices)
    ns.TrafficControlHelper().Uninstall(devices)  # the device queue is the bottleneck queue
    if case.loss > 0:
        errors = ns.CreateObject[ns.RateErrorModel]()
        errors.SetAttribute("ErrorRate", ns.DoubleValue(case.loss))
        errors.SetAttribute("ErrorUnit", ns.StringValue("ERROR_UNIT_PACKET"))
        devices.Get(1).SetAttribute("ReceiveErrorModel", ns.PointerValue(errors))
    port = 9
    any_address = ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port).ConvertTo()
    sink_apps = ns.PacketSinkHelper("ns3::TcpSocketFactory", any_address).Install(nodes.Get(1))
    sender = ns.BulkSendHelper("ns3::TcpSocketFactory",
                               ns.InetSocketAddress(interfaces.GetAddress(1), port).ConvertTo())
    sender.SetAttribute("MaxBytes", ns.UintegerValue(0))
    sender_apps = sender.Install(nodes.Get(0))
    for apps in (sink_apps, sender_apps):
        apps.Start(ns.Seconds(0))
    ns.Simulator.Stop(ns.NanoSeconds(int(round(case.seconds * 1e9))))
    begin = time.perf_counter()
    ns.Simulator.Run()
    wall = time.perf_counter() - begin
    received = int(ns.DynamicCast[ns.PacketSink](sink_apps.Get(0)).GetTotalRx())
    ns.Simulator.Destroy()
    return {"goodput_bps": received * 8 / case.seconds, "wall_s": wall}


def compare(cases: tuple[Ns3Case, ...] = QUICK, seed: int = 1,
            progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Every case in both simulators: per case the goodputs, the error of mpsched's against
    ns-3's and the speed ratio; overall the median and worst absolute goodput error and
    the median speed ratio."""
    rows = []
    for case in cases:
        if progress:
            progress(case.label)
        ours, theirs = mpsched_goodput(case, seed), ns3_goodput(case, seed)
        rows.append({**asdict(case), "queue_packets": case.queue_packets, "label": case.label,
                     "mpsched_goodput_bps": ours["goodput_bps"], "ns3_goodput_bps": theirs["goodput_bps"],
                     "goodput_error": ours["goodput_bps"] / theirs["goodput_bps"] - 1.0
                     if theirs["goodput_bps"] > 0 else math.nan,
                     "mpsched_retransmissions": ours["retransmissions"],
                     "mpsched_wall_s": ours["wall_s"], "ns3_wall_s": theirs["wall_s"],
                     "speed_ratio": theirs["wall_s"] / ours["wall_s"] if ours["wall_s"] > 0 else math.nan})
    errors = np.abs([r["goodput_error"] for r in rows])
    return {"cases": rows, "median_abs_goodput_error": float(np.nanmedian(errors)),
            "worst_abs_goodput_error": float(np.nanmax(errors)),
            "median_speed_ratio": float(np.nanmedian([r["speed_ratio"] for r in rows]))}


MEDIAN_GOODPUT_ERROR = 0.03
WORST_GOODPUT_ERROR = 0.10


def within_bounds(result: dict[str, Any]) -> bool:
    """Whether a comparison is within the bounds the project holds itself to: median
    |goodput error| at most 3 % and the worst at most 10 %."""
    return bool(result["median_abs_goodput_error"] <= MEDIAN_GOODPUT_ERROR
                and result["worst_abs_goodput_error"] <= WORST_GOODPUT_ERROR)


def format_comparison(result: dict[str, Any]) -> str:
    """The comparison as a table, then its summary."""
    lines = [f"{'case':<52}{'mpsched':>11}{'ns-3':>11}{'error':>9}{'speed':>9}",
             f"{'':<52}{'[Mbit/s]':>11}{'[Mbit/s]':>11}{'':>9}{'[x]':>9}"]
    for r in result["cases"]:
        lines.append(f"{r['label']:<52}{r['mpsched_goodput_bps'] / 1e6:>11.3f}{r['ns3_goodput_bps'] / 1e6:>11.3f}"
                     f"{100 * r['goodput_error']:>+8.1f}%{r['speed_ratio']:>9.0f}")
    lines.append(f"goodput error: median |error| {100 * result['median_abs_goodput_error']:.1f} %, worst "
                 f"{100 * result['worst_abs_goodput_error']:.1f} %; mpsched {result['median_speed_ratio']:.0f}x "
                 "faster than ns-3 in the median case (simulation alone)")
    return "\n".join(lines)
