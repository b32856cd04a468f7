"""CCP, the delay-based controller of seed 002 (docs/model.md 7.13): eq. (4) by hand, the
first congestion-avoidance acknowledgement of an episode by hand, the equilibrium of one
path, and where the window settles or oscillates.

The path of the hand cases: 3 Mbit/s, 100 ms, 1500-byte packets (no header), so a packet
takes 4 ms at the link and the pipe holds P = 3e6 * 0.104 / 12000 = 26 packets (25 without
the transmission time). One flow, Kp = 2: with B = 50 packets eq. (4) settles at
W* = Kp (B + P) / (3 + Kp) = 30.4 packets with x* = 4.4 queued; with B = 30, Kp B < 3 P and
W* = Kp B / 3 = 20 with no queue. The window at every acknowledgement comes from the
reference simulator (tests/refsim.py), which the core matches exactly on these episodes.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np
import pytest
from mpsched.envs import Scenario, ScenarioError, simulate
from mpsched.envs.episode import build_episode
from mpsched.envs.policy import Observation
from mpsched.solvers.replay import with_ideal_cc
from refsim import REC_NONE, Simulator, ccp_window
from test_core_differential import assert_same

MSS = 1500
LINK_BPS = 3_000_000
PACKET_NS = MSS * 8 * 10**9 // LINK_BPS  # 4 ms at the link
MS = 1_000_000


def path_scenario(gain: float, storage_packets: int | None, duration_s: float = 30.0, **path: Any) -> dict[str, Any]:
    """One ccp path of 3 Mbit/s and 100 ms with a 100-packet buffer, one block larger than
    the episode can carry."""
    ccp: dict[str, Any] = {"ccp_gain": gain}
    if storage_packets is not None:
        ccp["ccp_storage_packets"] = storage_packets
    return {
        "name": "ccp", "duration_s": duration_s, "horizon_s": duration_s, "transport": {"mss_bytes": MSS},
        "paths": [{"bandwidth": LINK_BPS / 1e6, "rtt_ms": 100, "cc": "ccp", "queue_packets": 100, **ccp, **path}],
        "workload": {"type": "explicit",
                     "blocks": [{"arrival_ms": 0, "size_bytes": 100_000_000, "deadline_ms": 1e6}]},
    }


class TracedSimulator(Simulator):
    """The reference simulator, keeping path 0's state after every acknowledgement:
    time, cwnd, bytes still in flight, srtt, bytes delivered, in recovery."""

    def __init__(self, spec: dict, policy: Any) -> None:
        super().__init__(spec, policy)
        self.trace: list[tuple[int, int, int, int, int, bool]] = []

    def on_ack(self, sf: Any, pkt: Any, data_ack: int, t: int) -> None:
        super().on_ack(sf, pkt, data_ack, t)
        if sf.j == 0:
            self.trace.append((t, sf.cwnd, sf.inflight_bytes, sf.srtt, sf.delivered, sf.recovery != REC_NONE))


class RecentStorageSimulator(TracedSimulator):
    """The traced reference with ccp's storage estimated over the acknowledgements of the
    last 10 smoothed RTTs instead of since the start: the reading docs/model.md 7.13
    turns down."""

    def __init__(self, spec: dict, policy: Any) -> None:
        super().__init__(spec, policy)
        self.recent: deque[tuple[int, int, int]] = deque()  # time, srtt, delivery rate

    def on_ack(self, sf: Any, pkt: Any, data_ack: int, t: int) -> None:
        super().on_ack(sf, pkt, data_ack, t)
        self.recent.append((t, sf.srtt, sf.delivery_rate_bps))
        while self.recent[0][0] < t - 10 * sf.srtt:
            self.recent.popleft()

    def ccp_assign(self, sf: Any, rtt: int) -> None:
        rate = max(r for _, _, r in self.recent)
        srtt = max(s for _, s, _ in self.recent)
        sf.ccp_storage_bytes = max(1, rate * srtt // (8 * 10**9))
        super().ccp_assign(sf, rtt)
        sf.ccp_storage_bytes = 0


def per_ack_trace(scenario: dict[str, Any],
                  simulator: type[TracedSimulator] = TracedSimulator) -> dict[str, np.ndarray]:
    """Path 0 at every acknowledgement (seconds, segments, packets, ms, bytes)."""
    spec = build_episode(Scenario.from_dict(scenario), 1).core_inputs()
    sim = simulator(spec, "minrtt")
    sim.run()
    t, cwnd, flight, srtt, delivered, recovery = (np.array(c) for c in zip(*sim.trace))
    return {"t": t / 1e9, "cwnd": cwnd / MSS, "flight": flight / MSS, "srtt_ms": srtt / 1e6,
            "delivered": delivered, "recovery": recovery}


def steady(trace: dict[str, np.ndarray], start_s: float = 10.0) -> dict[str, float]:
    """Means from start_s on: window (segments), flight (packets), srtt (ms), goodput."""
    at = trace["t"] >= start_s
    t, delivered = trace["t"][at], trace["delivered"][at]
    return {"cwnd": float(trace["cwnd"][at].mean()), "flight": float(trace["flight"][at].mean()),
            "srtt_ms": float(trace["srtt_ms"][at].mean()),
            "rate_bps": float((delivered[-1] - delivered[0]) * 8 / (t[-1] - t[0]))}


def spreads(trace: dict[str, np.ndarray], key: str, start_s: float, end_s: float) -> list[float]:
    """The range (max - min) of one trace column over each 0.5 s from start_s."""
    t, v = trace["t"], trace[key]
    return [float(np.ptp(v[(t >= a) & (t < a + 0.5)])) for a in np.arange(start_s, end_s - 0.25, 0.5)]


def test_eq4_by_hand() -> None:
    """docs/model.md 7.13 with Kp = 2 and B = 50 packets = 75,000 bytes.

    One packet (1500 B) still in flight, a sample of 104 ms over the smallest 100 ms:
    x = 1500 * 4 / 104 = 57.7 -> 57; W = (2000 * (75000 - 57) - 1000 * 1500) // 2000
    = 74,193 bytes. At the equilibrium of the module docstring, 29 packets outstanding and a
    sample of 120 ms: x = 43500 * 20 / 120 = 7,250; W = (2000 * 67750 - 43,500,000) // 2000
    = 46,000 bytes (30.67 segments: the sender keeps 30 packets out). A backlog above B, or
    a flight above Kp B: the floor of 2 segments."""
    assert ccp_window(2000, 75_000, 1500, 104 * MS, 100 * MS, MSS) == 74_193
    assert ccp_window(2000, 75_000, 43_500, 120 * MS, 100 * MS, MSS) == 46_000
    assert ccp_window(2000, 75_000, 60_000, 400 * MS, 100 * MS, MSS) == 2 * MSS  # x = 45,000: (60e6 - 60e6) / 2000
    assert ccp_window(2000, 1_000, 1500, 100 * MS, 100 * MS, MSS) == 2 * MSS
    assert ccp_window(1, 75_000, 0, 100 * MS, 100 * MS, MSS) == 2 * MSS  # Kp = 0.001: 75 / 2 bytes


class _Recorder:
    """Path 0's state at every decision, sending whenever asked."""

    name = "recorder"

    def reset(self, obs: Observation) -> None:
        self.rows: list[tuple[int, int, int, int, int]] = []

    def decide(self, obs: Observation) -> int:
        self.rows.append((obs.now_ns, int(obs.cwnd_bytes[0]), int(obs.path_inflight_bytes[0]), int(obs.srtt_ns[0]),
                          int(obs.delivery_rate_bps[0])))
        return int(obs.sendable()[0])


def first_decisions(storage_packets: int | None, duration_s: float) -> list[tuple[int, int, int, int, int]]:
    """The decisions of a path that is down for its first 0.5 s (7.5 back-off)."""
    recorder = _Recorder()
    simulate(path_scenario(2.0, storage_packets, duration_s, outages=[[0, 0.5]]), recorder, seed=1)
    return recorder.rows


def test_the_first_congestion_avoidance_acknowledgement_by_hand() -> None:
    """The core through a scenario, by hand (7.3, 7.5, 7.13). The path is down in [0, 0.5 s):
    the initial window of 10 packets is lost; the RTO (srtt 100 + 4 * rttvar 50 = 300 ms)
    fires at 300 ms (ssthresh = 15000 // 2 = 7500, cwnd 1500) and its retransmission is lost
    too; at 900 ms the doubled RTO fires with one packet in flight (ssthresh = 2 * mss =
    3000). That retransmission leaves at once: acknowledged at 900 + 4 + 100 = 1004 ms (a
    recovery acknowledgement: no growth). One packet then; its acknowledgement at 1108 ms is
    slow start (cwnd 3000 = ssthresh); two packets, the first acknowledged at 1212 ms with one
    still out: the first congestion-avoidance acknowledgement. Its sample is 104 ms against
    the handshake's min_rtt of 100 ms, so x = 1500 * 4 / 104 = 57 and with B = 50 packets
    W = (2000 * (75000 - 57) - 1000 * 1500) // 2000 = 74,193 bytes (7.13 by hand above).

    Estimated instead: the three samples of 104 ms give srtt 100.5, 100.9375 and 101.320312
    ms and delivery rates 115,384 / 8 = 14,423, (7 * 14423 + 115384) // 8 = 27,043 and
    (7 * 27043 + 115384) // 8 = 38,085 bit/s, so B = 38085 * 101320312 // 8e9 = 482 bytes
    and the window is the floor of 2 segments, where it stays (7.13: for Kp < 3 a small B
    cannot grow)."""
    rows = first_decisions(50, 2.0)
    times = sorted({r[0] for r in rows})
    assert times[:5] == [0, 300 * MS, 900 * MS, 1004 * MS, 1108 * MS]
    at: dict[int, tuple[int, int, int, int, int]] = {}
    for r in rows:  # the first decision at each time: the state its acknowledgement left
        at.setdefault(r[0], r)
    assert at[1004 * MS][1:] == (1500, 0, 100_500_000, 14_423)
    assert at[1108 * MS][1:] == (3000, 0, 100_937_500, 27_043)
    assert at[1212 * MS][1:] == (74_193, 1500, 101_320_312, 38_085)

    rows = first_decisions(None, 20.0)
    assert [r[1] for r in rows if r[0] == 1108 * MS][0] == 3000
    assert all(r[1] == 2 * MSS for r in rows if r[0] >= 1212 * MS) and rows[-1][0] > 19_000 * MS


def test_a_storage_of_50_packets_fills_the_link_with_a_small_queue() -> None:
    """Module docstring: W* = 30.4, x* = 4.4 packets, so an RTT of 104 + 4.4 * 4 = 121.6 ms
    with the queue's packets (120 ms with P = 25) and the link's full rate.
    Measured from 10 s to 30 s."""
    trace = per_ack_trace(path_scenario(2.0, 50))
    got = steady(trace)
    assert got["rate_bps"] == pytest.approx(LINK_BPS, rel=0.002)
    assert got["cwnd"] == pytest.approx(30.4, abs=0.5)
    assert got["srtt_ms"] == pytest.approx(121.6, abs=2.0)
    flight = got["rate_bps"] * got["srtt_ms"] / 1e3 / (MSS * 8)  # Little's law, packets
    assert flight == pytest.approx(30.4, abs=0.5)


def test_a_storage_of_30_packets_leaves_the_queue_empty() -> None:
    """Module docstring: Kp B = 60 < 3 P = 78, so no queue and W* = 20: a rate of
    20 / 26 = 77 % of the link (80 % with P = 25). The sender keeps whole packets out and
    the backlog of the transmission time (x = F * 4 / 104, 7.13) takes some more: measured
    from 10 s on, 19.7 segments and 73 %. Nothing waits at the link but the packet a burst
    of two puts behind another: srtt within one packet time of 104 ms."""
    trace = per_ack_trace(path_scenario(2.0, 30))
    got = steady(trace)
    assert got["cwnd"] == pytest.approx(20.0, abs=0.5)
    assert 0.70 * LINK_BPS <= got["rate_bps"] <= 0.80 * LINK_BPS
    at = trace["t"] >= 10
    assert (trace["srtt_ms"][at] <= 104 + PACKET_NS / 1e6).all()


@pytest.mark.parametrize("storage", [50, 30])
def test_the_core_runs_the_hand_cases_as_the_reference(storage: int) -> None:
    """The per-acknowledgement measurements above come from the reference: the core's
    episode is the same, to the nanosecond."""
    assert_same(build_episode(Scenario.from_dict(path_scenario(2.0, storage, 10.0)), 1).core_inputs(), "minrtt")


def test_with_kp_2_the_window_settles_after_the_first_recovery() -> None:
    """B = 50, Kp = 2: the window's spread over each 0.5 s from the first
    congestion-avoidance acknowledgement shrinks from the drain of the slow-start overshoot
    (125 segments) to the ripple of whole packets (3 segments), and stays there."""
    trace = per_ack_trace(path_scenario(2.0, 50, 20.0))
    start = float(trace["t"][np.flatnonzero(trace["recovery"])[-1] + 1])
    spread = spreads(trace, "cwnd", start, 20.0)
    assert spread[0] > 100 and spread[0] > spread[1] > spread[2]
    assert max(spread[2:]) <= 3.0


@pytest.mark.parametrize("storage,gain,settles", [
    (50, 2.0, True), (50, 3.0, True), (50, 4.0, True), (50, 4.5, False), (50, 6.0, False),
    (30, 2.0, True), (30, 2.5, True), (30, 3.0, False), (30, 4.0, False),
])
def test_where_the_window_settles_and_where_it_oscillates(storage: int, gain: float, settles: bool) -> None:
    """The flight's spread over each 0.5 s from 6 s to 20 s: one to three packets where the
    window settles (whole packets and bursts of two), five and more where it oscillates. A
    per-round map with a backlog one round late would put the edge at Kp = 3 for any B; what
    is measured is between 4 and 4.5 for B = 50 and between 2.5 and 3 for B = 30
    (docs/model.md 7.13)."""
    spread = spreads(per_ack_trace(path_scenario(gain, storage, 20.0)), "flight", 6.0, 20.0)
    if settles:
        assert max(spread) <= 3
    else:
        assert min(spread) >= 5


def test_a_storage_estimate_over_recent_rounds_would_starve_the_path() -> None:
    """docs/model.md 7.13, why B is the largest since the start: B estimated, Kp = 2. Over
    the last 10 smoothed RTTs rate times RTT is the flight itself, eq. (4) sets Kp / 3 of it,
    and the window falls to 2 segments for good; the largest ever keeps it at the
    equilibrium of the storage the slow-start overshoot showed, at the link's rate."""
    recent = steady(per_ack_trace(path_scenario(2.0, None, 20.0), RecentStorageSimulator), 15.0)
    assert recent["cwnd"] == 2.0
    ever = steady(per_ack_trace(path_scenario(2.0, None, 20.0)), 15.0)
    assert ever["cwnd"] > 50 and ever["rate_bps"] == pytest.approx(LINK_BPS, rel=0.002)


@pytest.mark.parametrize("path,field,expected", [
    ({"ccp_gain": 0}, "ccp_gain", "in (0, 100]"),
    ({"ccp_gain": -1.5}, "ccp_gain", "in (0, 100]"),
    ({"ccp_gain": 100.5}, "ccp_gain", "in (0, 100]"),
    ({"ccp_gain": float("nan")}, "ccp_gain", "in (0, 100]"),
    ({"ccp_gain": "2"}, "ccp_gain", "in (0, 100]"),
    ({"ccp_gain": 2.0005}, "ccp_gain", "a multiple of 0.001"),
    ({"ccp_storage_packets": 0}, "ccp_storage_packets", "[1, 1073741824]"),
    ({"ccp_storage_packets": 2.5}, "ccp_storage_packets", "an integer"),
    ({"ccp_storage_packets": 2**30 + 1}, "ccp_storage_packets", "[1, 1073741824]"),
    ({"cc": "cubic", "ccp_gain": 2}, "ccp_gain", "set only with cc: ccp"),
    ({"cc": "newreno", "ccp_storage_packets": 40}, "ccp_storage_packets", "set only with cc: ccp"),
])
def test_bad_ccp_parameters_name_the_field(path: dict[str, Any], field: str, expected: str) -> None:
    d = {"duration_s": 1, "paths": [{"bandwidth": 3, "rtt_ms": 100, "cc": "ccp", **path}],
         "workload": {"type": "bulk", "rate_mbps": 1}}
    with pytest.raises(ScenarioError) as info:
        Scenario.from_dict(d)
    assert info.value.field == f"paths[0].{field}"
    assert expected in str(info.value)


def test_ccp_parameters_reach_the_core_and_survive_a_round_trip() -> None:
    """Kp in thousandths and B in bytes (docs/model.md section 1); the transport's cc names
    ccp for a path that gives none; a path of another controller carries neither key, nor
    does a ccp path turned ideal for the offline optimum."""
    d = {"duration_s": 1, "transport": {"cc": "ccp", "mss_bytes": 1000},
         "paths": [{"bandwidth": 3, "rtt_ms": 100, "ccp_gain": 2.5, "ccp_storage_packets": 40},
                   {"bandwidth": 3, "rtt_ms": 100}, {"bandwidth": 3, "rtt_ms": 100, "cc": "newreno"}],
         "workload": {"type": "bulk", "rate_mbps": 1}}
    sc = Scenario.from_dict(d)
    assert Scenario.from_dict(sc.to_dict()) == sc
    paths = build_episode(sc, 0).core_inputs()["paths"]
    assert (paths[0]["ccp_gain_milli"], paths[0]["ccp_storage_bytes"]) == (2500, 40_000)
    assert (paths[1]["ccp_gain_milli"], paths[1]["ccp_storage_bytes"]) == (2000, 0)
    assert "ccp_gain_milli" not in paths[2] and "ccp_storage_bytes" not in paths[2]
    assert [p.cc for p in with_ideal_cc(sc).paths] == ["ideal"] * 3  # the optimum's scenario drops the keys
