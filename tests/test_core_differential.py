"""The C core against the independent Python reference (tests/refsim.py).

Both implement docs/model.md; on random small episodes they must agree exactly, not
approximately: every block's completion time, every counter, the final RTT estimates and
windows, the cross flows' counters and the in-order receiver's per-piece times.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mpsched.envs import scenarios
from mpsched.envs.episode import build_episode
from mpsched.experiments import ns3
from refsim import WVEGAS_INITIAL_ALPHA, Simulator, run_reference
from specs import (
    BLOCK_OUTPUTS,
    CROSS_OUTPUTS,
    IN_ORDER_OUTPUTS,
    PATH_OUTPUTS,
    PIECE_OUTPUTS,
    copying_policy,
    core_specs,
    rate_aware_policy,
    run_core,
    scripted_policy,
    zero_rate_waiter,
)

POLICIES = {"minrtt": "minrtt", "rr": "rr", "scripted": scripted_policy, "rate-aware": rate_aware_policy,
            "copying": copying_policy}
COMPARED = list(BLOCK_OUTPUTS.values()) + list(PATH_OUTPUTS.values()) + list(CROSS_OUTPUTS.values())


def assert_same(spec: dict, policy_name: str) -> None:
    policy = POLICIES[policy_name]
    ref = run_reference(spec, policy)
    core = run_core(spec, policy)
    keys = COMPARED + list(PIECE_OUTPUTS) + (list(IN_ORDER_OUTPUTS) if spec["receiver"] == "in_order" else [])
    for key in keys:
        expected = np.asarray(ref[key], dtype=np.asarray(core[key]).dtype)
        np.testing.assert_array_equal(np.asarray(core[key]), expected, err_msg=f"{key} differs ({policy_name})")
    assert core["decisions"] == ref["decisions"]
    assert core["last_event_ns"] == ref["last_event_ns"]
    assert core["reward"] == pytest.approx(ref["reward"], abs=1e-9)


SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])


def zero_rate_spec(links: list[dict], sizes: list[int], arrivals: list[int]) -> dict:
    """One ideal path (delays 10 us each way) on the given link; mss 1000, no header, so a
    piece takes 8000 ns at 1 Gbit/s."""
    path = {"link": 0, "fwd_delay_ns": 10_000, "rev_delay_ns": 10_000, "loss_model": "iid", "loss_threshold": 0,
            "ge_p_threshold": 0, "ge_r_threshold": 0, "ge_bad_loss_threshold": 0, "cc": "ideal",
            "initial_cwnd_bytes": 10_000, "min_rto_ns": 1_000_000, "max_rto_ns": 1_000_000_000, "ring_capacity": 64}
    n = len(sizes)
    links = [dict(k, bw_start_ns=np.array(k["bw_start_ns"], np.int64), bw_rate_bps=np.array(k["bw_rate_bps"], np.int64))
             for k in links]
    blocks = {"arrival_ns": np.array(arrivals, np.int64), "size_bytes": np.array(sizes, np.int64),
              "deadline_ns": np.full(n, 10**9, np.int64), "priority": np.zeros(n, np.int32),
              "weight": np.ones(n, np.float64)}
    return {"mss_bytes": 1000, "header_bytes": 0, "end_ns": 200_000, "seed": 1, "receiver": "block",
            "rbuf_bytes": 10**9, "links": links, "paths": [path], "cross": [], "blocks": blocks}


def test_a_rate_rise_asks_a_waiting_path_again() -> None:
    """docs/model.md section 8, class 6, by hand. The link serves nothing until 50 us,
    then 1 Gbit/s. At t=0 the path asks and waits (rate 0); no packet is in flight, so
    only the rate change at 50 us asks it again: sent 50-58 us, received at 68 us,
    acknowledged at 78 us. Without the rate lane the block is never sent."""
    link = {"queue_bytes": 100_000, "bw_start_ns": [0, 50_000], "bw_rate_bps": [0, 10**9], "bw_cycle_ns": 0}
    spec = zero_rate_spec([link], [1000], [0])
    for out in (run_reference(spec, zero_rate_waiter), run_core(spec, zero_rate_waiter)):
        assert list(out["completion_ns"]) == [68_000]
        assert out["decisions"] == 2
        assert out["last_event_ns"] == 78_000


def test_a_cyclic_rate_rise_across_the_wrap() -> None:
    """By hand: 1 Gbit/s for 20 us then nothing, every 30 us. Block 0 (t=0) is sent at
    once: received at 18 us, acknowledged at 28 us. Block 1 arrives at 25 us in the
    zero-rate segment: the path waits at 25 us and again at the ACK (28 us); the wrap to
    1 Gbit/s at 30 us asks it again: received at 48 us, acknowledged at 58 us. Rate
    changes while nothing is sendable (20 us, 60 us, ...) are not events, so the last
    event is that ACK."""
    link = {"queue_bytes": 100_000, "bw_start_ns": [0, 20_000], "bw_rate_bps": [10**9, 0], "bw_cycle_ns": 30_000}
    spec = zero_rate_spec([link], [1000, 1000], [0, 25_000])
    for out in (run_reference(spec, zero_rate_waiter), run_core(spec, zero_rate_waiter)):
        assert list(out["completion_ns"]) == [18_000, 48_000]
        assert out["decisions"] == 4
        assert out["last_event_ns"] == 58_000


@settings(max_examples=300, **SETTINGS)
@given(spec=core_specs(), policy_name=st.sampled_from(sorted(POLICIES)))
def test_core_matches_reference(spec: dict, policy_name: str) -> None:
    assert_same(spec, policy_name)


@pytest.mark.parametrize("cc", ["ideal", "newreno", "cubic", "lia", "olia", "balia", "wvegas", "ccp"])
def test_core_matches_reference_per_controller(cc: str) -> None:
    @settings(max_examples=60, **SETTINGS)
    @given(spec=core_specs(cc=cc), policy_name=st.sampled_from(sorted(POLICIES)))
    def check(spec: dict, policy_name: str) -> None:
        assert_same(spec, policy_name)

    check()


def long_transfer_spec(cc: str, loss: float, cross: bool) -> dict:
    """Two paths of one controller (2 and 5 ms one way; with ``loss``, random losses on
    the slower one) through one 100 Mbit/s link with a 150-packet queue, 3 MB to send;
    with ``cross``, a NewReno cross flow (3 ms one way) keeps a standing queue there (the
    case where wVegas's targets, not its queue drain, set the window). Long enough for
    congestion avoidance, queueing delay and, with loss, decreases at unequal rates. mss
    1000, no header."""
    def path(delay_ns: int, loss_threshold: int, controller: str = cc, **times: int) -> dict:
        return {"link": 0, "fwd_delay_ns": delay_ns, "rev_delay_ns": delay_ns, "loss_model": "iid",
                "loss_threshold": loss_threshold, "ge_p_threshold": 0, "ge_r_threshold": 0,
                "ge_bad_loss_threshold": 0, "cc": controller, "initial_cwnd_bytes": 10_000,
                "min_rto_ns": 200_000_000, "max_rto_ns": 10**10, "ring_capacity": 4096, **times}
    threshold = round(loss * 2**53)
    link = {"queue_bytes": 150_000, "bw_start_ns": np.array([0], np.int64),
            "bw_rate_bps": np.array([100_000_000], np.int64), "bw_cycle_ns": 0}
    n = 30
    blocks = {"arrival_ns": np.zeros(n, np.int64), "size_bytes": np.full(n, 100_000, np.int64),
              "deadline_ns": np.full(n, 10**12, np.int64), "priority": np.zeros(n, np.int32),
              "weight": np.ones(n, np.float64)}
    return {"mss_bytes": 1000, "header_bytes": 0, "end_ns": 10**12, "seed": 3, "receiver": "block",
            "rbuf_bytes": 10**9, "links": [link], "paths": [path(2_000_000, 0), path(5_000_000, threshold)],
            "cross": [path(3_000_000, 0, "newreno", start_ns=0, stop_ns=10**10)] if cross else [],
            "blocks": blocks}


@pytest.mark.parametrize("cc,loss,cross", [("balia", 0.002, False), ("wvegas", 0.0, False), ("wvegas", 0.0, True),
                                           ("ccp", 0.002, False), ("ccp", 0.0, True)])
def test_core_matches_reference_over_long_transfers(cc: str, loss: float, cross: bool) -> None:
    """docs/model.md 7.11-7.13 where short random episodes seldom go: a long transfer
    through a shared queue. wVegas must leave slow start on delay and re-weigh its
    target (alpha off its initial value); BALIA must cut at unequal rates; CCP must reach
    congestion avoidance on both paths with its storage estimated."""
    spec = long_transfer_spec(cc, loss, cross)
    assert_same(spec, "minrtt")
    reference = Simulator(spec, "minrtt")
    reference.run()
    paths = reference.paths
    if cc == "wvegas":
        assert all(p.ssthresh < 2**62 for p in paths) and sum(p.random_losses for p in paths) == 0
        assert any(p.wvegas.alpha != WVEGAS_INITIAL_ALPHA for p in paths)
    elif cc == "ccp":
        assert all(p.ssthresh < 2**62 and p.ccp_storage_bytes == 0 for p in paths)
    else:
        assert paths[1].fast_recoveries > 0


@pytest.mark.parametrize("gain_milli,storage_bytes", [(2000, 40_000), (4500, 150_000), (500, 0)])
def test_core_matches_reference_over_long_ccp_transfers(gain_milli: int, storage_bytes: int) -> None:
    """docs/model.md 7.13 with a given storage, a gain at which the window oscillates, and a
    small gain with the storage estimated, over the long transfer with losses."""
    spec = long_transfer_spec("ccp", 0.002, False)
    for p in spec["paths"]:
        p.update(ccp_gain_milli=gain_milli, ccp_storage_bytes=storage_bytes)
    assert_same(spec, "minrtt")


@pytest.mark.parametrize("cc,queue_acks", [("newreno", 10), ("cubic", 3), ("olia", None)])
def test_core_matches_reference_with_a_reverse_bottleneck(cc: str, queue_acks: int | None) -> None:
    """docs/model.md 6: acknowledgements of 40 bytes through a 3 Mbit/s way back (106.7 us
    each) while the data comes at up to 100 Mbit/s (80 us per packet): they queue, the
    sender's clock follows the way back, and with a small queue they are dropped. With
    jitter on the way back of the slower path (the order rule after the bottleneck)."""
    spec = long_transfer_spec(cc, 0.0, False)
    for p in spec["paths"]:
        p.update({"rev_rate_bps": 3_000_000, "ack_bytes": 40})
        if queue_acks is not None:
            p["rev_queue_bytes"] = 40 * queue_acks
    spec["paths"][1]["rev_jitter_ns"] = 300_000
    assert_same(spec, "minrtt")
    reference = Simulator(spec, "minrtt")
    reference.run()
    drops = [p.ack_queue_drops for p in reference.paths]
    assert (sum(drops) > 0) == (queue_acks is not None), drops


@pytest.mark.parametrize("cc", ["newreno", "cubic", "olia", "balia", "wvegas", "ccp"])
def test_core_matches_reference_with_prr(cc: str) -> None:
    """docs/model.md 7.4 with fast_recovery = prr on every subflow."""
    @settings(max_examples=60, **SETTINGS)
    @given(spec=core_specs(cc=cc, fast_recovery="prr"), policy_name=st.sampled_from(sorted(POLICIES)))
    def check(spec: dict, policy_name: str) -> None:
        assert_same(spec, policy_name)

    check()


@pytest.mark.parametrize("fast_recovery", ["immediate", "prr"])
def test_core_matches_reference_with_cubic_in_segments(fast_recovery: str) -> None:
    """docs/model.md 7.8.1: Cubic in whole segments on every subflow, cross flows too."""
    @settings(max_examples=60, **SETTINGS)
    @given(spec=core_specs(cc="cubic", fast_recovery=fast_recovery, cubic_arithmetic="segments"),
           policy_name=st.sampled_from(sorted(POLICIES)))
    def check(spec: dict, policy_name: str) -> None:
        assert_same(spec, policy_name)

    check()


@pytest.mark.parametrize("fast_recovery", ["immediate", "prr"])
def test_core_matches_reference_on_a_loss_limited_cubic_flow_in_segments(fast_recovery: str) -> None:
    """docs/model.md 7.8.1 over many recoveries: 10 Mbit/s, 200 ms, 1 % loss, 20 s (the
    ns-3 grid's case, where the recovery's credit and the Reno-friendly count decide)."""
    case = ns3.Ns3Case("cubic", 10.0, 200.0, 0.01, 1.0, seconds=20.0, fast_recovery=fast_recovery)
    spec = build_episode(scenarios.resolve(ns3.mpsched_scenario(case)), 1).core_inputs()
    assert [p["cubic_arithmetic"] for p in spec["paths"]] == ["segments"]
    assert_same(spec, "minrtt")
    assert run_core(spec, POLICIES["minrtt"])["fast_recoveries"][0] >= 10


@pytest.mark.parametrize("cc", ["ideal", "newreno", "cubic", "olia", "ccp"])
def test_core_matches_reference_with_delay_dynamics(cc: str) -> None:
    """docs/model.md 4 and 6: delay steps and jitter on every subflow."""
    @settings(max_examples=60, **SETTINGS)
    @given(spec=core_specs(cc=cc, dynamics=True), policy_name=st.sampled_from(sorted(POLICIES)))
    def check(spec: dict, policy_name: str) -> None:
        assert_same(spec, policy_name)

    check()


@settings(max_examples=200, **SETTINGS)
@given(spec=core_specs())
def test_core_matches_reference_with_copies(spec: dict) -> None:
    """docs/model.md 7.1, copies: a policy that sends copies of pieces in flight on other
    paths (and rounds that go on while a piece is in flight)."""
    assert_same({**spec, "copies": True}, "copying")


@settings(max_examples=80, **SETTINGS)
@given(spec=core_specs(receiver="in_order"), policy_name=st.sampled_from(sorted(POLICIES)))
def test_core_matches_reference_in_order(spec: dict, policy_name: str) -> None:
    assert_same(spec, policy_name)


@settings(max_examples=80, **SETTINGS)
@given(spec=core_specs(shared=True, cross=True), policy_name=st.sampled_from(sorted(POLICIES)))
def test_core_matches_reference_shared_links_and_cross_traffic(spec: dict, policy_name: str) -> None:
    assert_same(spec, policy_name)


def test_differential_cases_are_not_trivial() -> None:
    """The generator reaches losses, bursts, drops, RTOs, fast recovery (also by PRR),
    cancellations, cross-flow packets, in-order receive-buffer waits and packets lost to
    outages (acknowledgements lost to outages, and those a reverse bottleneck drops, need
    longer flows: tests/test_outages.py, test_core_matches_reference_with_a_reverse_bottleneck)."""
    seen = {"queue_drops": 0, "random_losses": 0, "loss_bursts": 0, "rto_count": 0, "fast_recoveries": 0,
            "cancelled": 0, "retransmissions": 0, "cross_packets_sent": 0, "cross_queue_drops": 0,
            "in_order_waits": 0, "prr_fast_recoveries": 0, "outage_losses": 0}

    @settings(max_examples=150, database=None, **SETTINGS)
    @given(spec=core_specs())
    def collect(spec: dict) -> None:
        out = run_core(spec, scripted_policy)
        for key in seen:
            if key in out:
                seen[key] += int(np.sum(out[key]))
        seen["cancelled"] += int(np.sum(out["cancel_ns"] >= 0))
        prr = np.array([p["fast_recovery"] == "prr" for p in spec["paths"]])
        seen["prr_fast_recoveries"] += int(np.sum(np.asarray(out["fast_recoveries"])[prr]))
        if spec["receiver"] == "in_order":
            delivered = out["piece_delivery_ns"] >= 0
            waited = out["piece_delivery_ns"][delivered] > out["piece_arrival_ns"][delivered]
            seen["in_order_waits"] += int(np.sum(waited))

    collect()
    assert all(v > 0 for v in seen.values()), seen
