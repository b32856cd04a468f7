"""ECF, BLEST and OTIAS on hand-computed episodes, [jonglez20]'s single-stream ECF example, and
their native twins with non-default parameters.

The hand-computed episodes use ideal paths of 8 Mbit/s with 1000 B packets (1 ms each):
a fast path of one-way delay 10 ms (RTT 20 ms) and a slow one of 50 ms (RTT 100 ms).
Before the first acknowledgement (21 ms) the estimates are the handshake's:
``srtt = RTT``, ``rttvar = RTT / 2``; an ideal path's window is what its rate fills in
one srtt, 20,000 B and 100,000 B.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from mpsched.baselines.mptcp import OTIAS, ecf_waits
from mpsched.envs import PolicyError, registry, simulate
from mpsched.envs.episode import build_episode
from mpsched.envs.policy import Observation, Policy
from mpsched.envs.scenario import Scenario
from mpsched.envs.simulate import drive
from mpsched.experiments.cli import main
from specs import core_specs, make_sim

MS = 1_000_000


def two_paths(size_bytes: int, receiver: Any = "block") -> dict[str, Any]:
    """Fast (10 ms one way) and slow (50 ms) ideal 8 Mbit/s paths, one block at 0."""
    return {
        "duration_s": 0.5,
        "transport": {"mss_bytes": 1000},
        "receiver": receiver,
        "paths": [{"bandwidth": 8.0, "one_way_delay_ms": 10, "cc": "ideal"},
                  {"bandwidth": 8.0, "one_way_delay_ms": 50, "cc": "ideal"}],
        "workload": {"type": "explicit", "blocks": [{"arrival_ms": 0, "size_bytes": size_bytes, "deadline_ms": 500}]},
    }


def in_order(rbuf_bytes: int) -> dict[str, Any]:
    return {"type": "in_order", "rbuf_bytes": rbuf_bytes}


def completion(result: Any) -> int | None:
    v = result.blocks["completion_ns"][0]
    return None if v is pd.NA else int(v)


def path_bytes(result: Any) -> list[int]:
    return [int(x) for x in result.paths["bytes_sent"]]


def run(scenario: dict[str, Any], policy: Policy) -> tuple[int, np.ndarray]:
    """Completion of block 0 and each path's last send time, native twin and Python
    specification checked equal on the way."""
    out = []
    for p in (policy, policy.python()):
        sim = build_episode(Scenario.from_dict(scenario), 0).make_sim()
        drive(sim, p)
        out.append((int(np.asarray(sim.view("completion_ns"))[0]), np.array(sim.view("last_send_ns"), copy=True)))
    assert out[0][0] == out[1][0]
    np.testing.assert_array_equal(out[0][1], out[1][1])
    return out[0]


# --- ECF ---------------------------------------------------------------------------

def test_ecf_test_and_its_hysteresis() -> None:
    """ecf_waits with w_f = 1000 B, srtt_f = 10, w_s = 1000 B, srtt_s = 30, delta = 0,
    beta = 0.25: the fast path is sooner iff 10 (max(k, 1000) + 1000) < (1 + w/4) 30,000,
    i.e. k < 2000 (not waiting) or k < 2750 (waiting). At k = 2500 ECF sends on the slow
    path and clears the flag when not waiting, but keeps waiting when it was (the slow
    path's own time 30 * 2500 >= 1000 * 20)."""
    assert ecf_waits(2500.0, 1000.0, 10.0, 1000.0, 30.0, 0.0, 0.0, 0.25) is None
    assert ecf_waits(2500.0, 1000.0, 10.0, 1000.0, 30.0, 0.0, 1.0, 0.25) is True
    assert ecf_waits(2500.0, 1000.0, 10.0, 1000.0, 30.0, 0.0, 1.0, 0.0) is None
    # first test passes (10 * 2000 < 1000 * 25) but the slow path is quick enough:
    # k raised to w_s = 10,000, 15 * 10,000 < 10,000 * (2 * 10 + 10): send on it
    assert ecf_waits(500.0, 1000.0, 10.0, 10000.0, 15.0, 10.0, 0.0, 0.25) is False


def test_ecf_waits_for_the_fast_path_with_little_data() -> None:
    """10 KB. At 0 the fast path sends; the slow one asks with k = 9000 B:
    20 ms (20,000 + 20,000) < 20,000 (100 ms + delta 50 ms), and
    100 ms * max(9000, 100,000) >= 100,000 (2 * 20 ms + 50 ms): wait. The same holds at
    every later tick, so all ten packets go on the fast path, the last sent at 9 ms and
    received at 20 ms. MinRTT sends five on each path: the slow path's last (sent at
    4 ms) arrives at 55 ms."""
    sc = two_paths(10_000)
    assert completion(simulate(sc, "minrtt")) == 55 * MS
    r = simulate(sc, "ecf")
    assert completion(r) == 20 * MS
    assert path_bytes(r) == [10_000, 0]


def test_ecf_uses_the_slow_path_until_the_fast_one_would_finish_sooner() -> None:
    """300.5 KB (300 packets and one of 500 B). Both paths send one packet per ms; at
    tick t the slow path asks with k = 300,500 - (2t + 1) 1000 B queued. The kernel test
    waits once srtt_f (k + w_f) < w_f (srtt_s + delta), with w_f / srtt_f the fast rate
    (1 B/us), srtt_s = 100 ms and delta = rttvar_s = 50 ms until the slow path's first
    acknowledgement (101 ms): k < 150,000 - w_f = 129,000 B (srtt_f = 21 ms once the
    fast path's samples have converged). At t = 85, k = 129,500: send; at t = 86,
    k = 127,500: wait, and the hysteresis keeps it waiting. So the slow path carries 86
    packets and the fast path 214.5 KB, its last sent at 214 ms: received at 224.5 ms.
    MinRTT alternates to the end: the slow path's 150th packet, sent at 149 ms, arrives
    at 200 ms."""
    sc = two_paths(300_500)
    assert completion(simulate(sc, "minrtt")) == 200 * MS
    r = simulate(sc, "ecf")
    assert path_bytes(r) == [214_500, 86_000]
    assert completion(r) == 224_500_000


def test_ecf_rate_thresholds_stop_the_slow_path_at_s_lim() -> None:
    """The same 300.5 KB with [jonglez20]'s thresholds: the slow path waits once
    k <= S_lim = R_f (D_s - D_f) = 1 B/us * (100 ms - 21 ms) / 2 = 39,500 B, i.e. from
    tick 130 (k = 39,500). It carries 130 packets, the last sent at 129 ms and received
    at 180 ms; the fast path carries 170.5 KB, its last 500 B sent at 170 ms and received
    at 180.5 ms. [jonglez20] eq. (2): 50 + (300,500 - 40,000) / 2 B/us = 180.25 ms."""
    r = simulate(two_paths(300_500), registry.make("ecf", rate_thresholds=True))
    assert path_bytes(r) == [170_500, 130_000]
    assert completion(r) == 180_500_000


JONGLEZ20 = {
    "duration_s": 0.1,
    "transport": {"mss_bytes": 20, "header_bytes": 0},
    "paths": [{"bandwidth": 1.6, "one_way_delay_ms": 5, "cc": "ideal"},    # 200 KB/s
              {"bandwidth": 4.0, "one_way_delay_ms": 10, "cc": "ideal"}],  # 500 KB/s
    "workload": {"type": "explicit", "blocks": [{"arrival_ms": 0, "size_bytes": 10_000, "deadline_ms": 100}]},
}


def test_ecf_jonglez20_single_stream_example() -> None:
    """[jonglez20] Fig. 3 (INDEX.md): S_lim = R_1 (D_2 - D_1) = 200 B/ms * 5 ms = 1000 B;
    completion D_2 + (S - S_lim) / (R_1 + R_2) = 10 + 9000 / 700 = 22.857 ms; path 1
    (500 KB/s, 10 ms) is used until 12.857 ms. Packets of 20 B take 0.1 ms on path 0 and
    0.04 ms on path 1."""
    done, last_send = run(JONGLEZ20, registry.make("ecf", rate_thresholds=True))
    assert done == pytest.approx(22.857 * MS, rel=0.01)
    assert abs(int(last_send[1]) - 12_857_143) <= 3 * 40_000  # within three of its packets


def test_ecf_kernel_test_does_not_reproduce_the_jonglez20_example() -> None:
    """With the kernel's window/RTT test, k <= 10,000 B never exceeds the slow path's
    window (500 B/ms * 20 ms = 10,000 B), so its second inequality reads
    srtt_s >= 2 srtt_f + delta: 20 ms >= 2 * (10 ms + service) + delta never holds and
    ECF never waits. It makes MinRTT's decisions: both paths until the data runs out
    (about 14.2 ms), completion about 24.3 ms, 6 % over the optimum."""
    ecf, ecf_last = run(JONGLEZ20, registry.make("ecf"))
    minrtt = completion(simulate(JONGLEZ20, "minrtt"))
    assert ecf == minrtt
    assert ecf > 1.05 * 22.857 * MS
    assert int(ecf_last[1]) > 14 * MS


# --- BLEST -------------------------------------------------------------------------

def test_blest_skips_the_slow_path_when_the_fast_one_would_fill_the_window() -> None:
    """In-order receiver, 10 KB. During the slow path's RTT the fast path could send
    X = (cwnd_f + MSS (rtt_s / rtt_f - 1) / 2) rtt_s / rtt_f = (20,000 + 2000) * 5
    = 110,000 B, lambda X = 132,000 B. With a 100 KB window the slow path would leave
    100,000 - 1000 = 99,000 B: skipped, all ten packets on the fast path (20 ms)."""
    r = simulate(two_paths(10_000, in_order(100_000)), "blest")
    assert path_bytes(r) == [10_000, 0]
    assert completion(r) == 20 * MS


def test_blest_uses_the_slow_path_when_the_window_is_large() -> None:
    """A 200 KB window leaves 200,000 - (inflight_s + 1000) >= 132,000 B for the five
    packets the slow path takes (inflight_s <= 4000): MinRTT's schedule, 55 ms."""
    sc = two_paths(10_000, in_order(200_000))
    r = simulate(sc, "blest")
    assert path_bytes(r) == [5_000, 5_000]
    assert completion(r) == completion(simulate(sc, "minrtt")) == 55 * MS


def test_blest_counts_the_slow_paths_bytes_in_flight() -> None:
    """A 140.5 KB window and 30 KB: the slow path sends while
    140,500 - (inflight_s + 1000) >= 132,000, i.e. inflight_s <= 7500: eight packets
    (ticks 0 to 7), the last received at 58 ms; the fast path sends the other 22 by
    21 ms."""
    r = simulate(two_paths(30_000, in_order(140_500)), "blest")
    assert path_bytes(r) == [22_000, 8_000]
    assert completion(r) == 58 * MS


def test_blest_is_minrtt_without_a_receive_window() -> None:
    """The block-aware receiver has no receive window: nothing to block."""
    sc = two_paths(10_000)
    r = simulate(sc, "blest")
    assert path_bytes(r) == path_bytes(simulate(sc, "minrtt")) == [5_000, 5_000]


# --- OTIAS ---------------------------------------------------------------------------

def window_paths(size_bytes: int, **slow: Any) -> dict[str, Any]:
    """NewReno paths of 100 Mbit/s (window-bound: 10 packets of 1000 B at first), 10 ms
    and 50 ms one way, one block at 0."""
    return {
        "duration_s": 1.0,
        "transport": {"mss_bytes": 1000},
        "paths": [{"bandwidth": 100.0, "one_way_delay_ms": 10, "cc": "newreno"},
                  {"bandwidth": 100.0, "one_way_delay_ms": 50, "cc": "newreno", **slow}],
        "workload": {"type": "explicit", "blocks": [{"arrival_ms": 0, "size_bytes": size_bytes, "deadline_ms": 1000}]},
    }


def test_otias_places_each_packet_where_it_arrives_first() -> None:
    """At 0 both windows are 10 packets, free, and srtt is 20 and 100 ms. With ``q``
    packets placed on a path, one more waits ``q // 10`` round trips (``ceil((q - 10 + 1)
    / 10)`` once the 10 free slots are taken), so ``2 T = (2 (q // 10) + 1) srtt``: the
    fast path wins while ``(2 a + 1) 20 <= (2 c + 1) 100`` (ties to the lower index), with
    ``a``, ``c`` the fast and slow queues over 10. All 100 pieces are placed at 0:
    30 fast (a <= 2), 10 slow (c = 0), 50 fast (a <= 7), 10 slow (c = 1), 80 and 20. The
    placement is final, so the slow path sends its second 10 only when its window opens
    at 100 ms: the block completes at about 150 ms, where MinRTT, which sends on a path
    only when its window has room, sends 90 on the fast path and completes at about 72
    ms (OTIAS's estimate takes the windows as they are, without slow start's growth)."""
    sc = window_paths(100_000)
    otias, minrtt = simulate(sc, "otias"), simulate(sc, "minrtt")
    assert path_bytes(otias) == [80_000, 20_000]
    assert path_bytes(minrtt) == [90_000, 10_000]
    assert 150 * MS < completion(otias) < 152 * MS
    assert 71 * MS < completion(minrtt) < 73 * MS
    for size, placed in ((40_000, [30_000, 10_000]), (60_000, [50_000, 10_000])):
        assert path_bytes(simulate(window_paths(size), "otias")) == placed, size
    run(window_paths(100_000), registry.make("otias"))


def test_otias_places_again_what_it_placed_on_a_path_that_left() -> None:
    """The slow path stops at 50 ms with 10 pieces placed on it and not sent: they go to
    the fast path, and the block completes (they would wait forever on the stopped path).
    A path that goes down is taken back once it is potentially failed: after its timeout
    (about 300 ms) its 10 pieces in flight are retransmitted and its 10 placed ones sent
    on the fast path."""
    stopped = simulate(window_paths(100_000, stop_s=0.05), "otias")
    assert path_bytes(stopped) == [90_000, 10_000]
    assert completion(stopped) < 80 * MS
    down = simulate(window_paths(100_000, outages=[[0.001, 0.5]]), "otias")
    assert path_bytes(down) == [100_000, 10_000]
    assert [int(x) for x in down.paths["retransmissions"]] == [10, 0]
    assert 300 * MS < completion(down) < 320 * MS
    run(window_paths(100_000, outages=[[0.001, 0.5]]), registry.make("otias"))


def test_otias_takes_back_every_placement_of_the_paths_that_left_together() -> None:
    """Two backup paths hold pieces of blocks 5-10, placed while the primary path was
    potentially failed. When it is live again both backups leave the takers at the same
    decision, and every piece placed on either goes back to be placed again. Taking back
    the first backup's pieces lowers the frontier to block 5; the second backup's pieces
    above it must go back too, as the native twin takes them (a specification that
    looked only up to the lowered frontier kept 5 of them, and the twins parted)."""
    spec = cast(OTIAS, registry.make("otias").python())
    spec.placed = np.zeros((11, 3), dtype=np.int64)
    spec.placed[5:, 0] = 2
    spec.placed[5:, 1] = 1
    spec.placed_on, spec.head, spec.low, spec.frontier = [12, 6, 0], [5, 5, 0], 5, 11
    arrived = SimpleNamespace(n_arrived=11, n_paths=3, unsent_bytes=np.full(11, 1000))
    spec._forget(cast(Observation, arrived), takers=[2])
    assert spec.placed_on == [0, 0, 0]
    assert not spec.placed.any()
    assert spec.frontier == 5


def cbr_over_wlan_and_3g(policy: str, seed: int) -> tuple[float, float]:
    """Mean delivery time (ms) and the 3G path's share of bytes: 1 Mbit/s constant bit
    rate (1250 B every 10 ms) to an in-order receiver over a Wi-Fi path (10 Mbit/s, 20 ms
    RTT, 1 % random loss) and a 3G one (2 Mbit/s, 130 ms RTT), 30 s."""
    scenario = {
        "duration_s": 30.0,
        "transport": {"mss_bytes": 1250},
        "receiver": "in_order",
        "paths": [{"name": "wlan", "bandwidth": 10.0, "rtt_ms": 20, "loss": 0.01},
                  {"name": "3g", "bandwidth": 2.0, "rtt_ms": 130}],
        "workload": {"type": "bulk", "rate_mbps": 1.0, "chunk_bytes": 1250, "deadline_ms": 100},
    }
    r = simulate(scenario, policy, seed=seed)
    delay = (r.blocks["completion_ns"].astype("float64") - r.blocks["arrival_ns"].astype("float64")).mean()
    sent = path_bytes(r)
    return float(delay) / 1e6, sent[1] / sum(sent)


def test_otias_keeps_a_constant_bit_rate_on_the_fast_path() -> None:
    """BLEST's evaluation of OTIAS (Ferlin et al., IFIP Networking 2016, CBR 1 Mbit/s over
    3G and WLAN): OTIAS has the lower application delay (53.2 ms against MinRTT's 68)
    because it all but leaves the 3G path out. Measured here on every seed 0-5: a mean
    delivery time of 17.2-19.0 ms against MinRTT's 19.9-22.8 ms, and 1.0-1.2 % of the
    bytes on 3G against 3.5-4.7 % (MinRTT spills onto 3G whenever the lossy Wi-Fi
    path's window is full; OTIAS queues behind it while that arrives sooner)."""
    for seed in range(3):
        otias_delay, otias_3g = cbr_over_wlan_and_3g("otias", seed)
        minrtt_delay, minrtt_3g = cbr_over_wlan_and_3g("minrtt", seed)
        assert otias_delay < 0.92 * minrtt_delay, seed
        assert otias_3g < 0.4 * minrtt_3g, seed


# --- parameters and twins ------------------------------------------------------------

def test_parameters() -> None:
    assert registry.make("ecf").params() == {"beta": 0.25, "rate_thresholds": False}
    assert registry.make("ecf", rate_thresholds=True).native_params() == (0.25, 1.0)
    assert registry.make("blest").params() == {"lambda_scale": 1.2}
    assert registry.parse_param("ecf", "rate_thresholds=true") == ("rate_thresholds", True)
    with pytest.raises(PolicyError, match="beta must be in \\[0, 1\\]"):
        registry.make("ecf", beta=2.0)
    with pytest.raises(PolicyError, match="rate_thresholds must be True or False"):
        registry.make("ecf", rate_thresholds=3)
    with pytest.raises(PolicyError, match="lambda_scale must be in \\(0, 10\\]"):
        registry.make("blest", lambda_scale=0.0)
    assert main(["run", "--scenario", "dams-rtt-40", "--policy", "ecf", "--param", "rate_thresholds=true",
                 "--json"]) == 0


@pytest.mark.parametrize("name,params", [("ecf", {"rate_thresholds": True}), ("ecf", {"beta": 1.0}),
                                         ("blest", {"lambda_scale": 1.0})])
def test_twins_agree_with_other_parameters(name: str, params: dict[str, Any]) -> None:
    @settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(spec=core_specs(max_blocks=12))
    def check(spec: dict) -> None:
        native, python = make_sim(spec), make_sim(spec)
        policy = registry.make(name, **params)
        drive(native, policy)
        drive(python, policy.python())
        assert native.decisions == python.decisions
        for view in ("completion_ns", "bytes_sent", "packets_sent", "srtt_ns"):
            np.testing.assert_array_equal(np.asarray(native.view(view)), np.asarray(python.view(view)))

    check()
