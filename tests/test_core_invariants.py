"""Physical invariants of the core, on random episodes (hypothesis)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from specs import MS, core_specs, make_sim, run_core, scripted_policy


def long_run_rate_bps(link: dict) -> float:
    """Average rate of a cyclic schedule over its period, or the rate it holds forever."""
    starts, rates, cycle = link["bw_start_ns"], link["bw_rate_bps"], link["bw_cycle_ns"]
    if cycle == 0:
        return float(rates[-1])
    lengths = np.diff(np.append(starts, cycle))
    return float((lengths * rates).sum() / cycle)


def quiescent(spec: dict) -> dict:
    """The spec with a horizon long enough for every packet to drain."""
    return {**spec, "end_ns": 600_000 * MS}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=core_specs(), policy=st.sampled_from(["minrtt", "rr", "scripted"]))
def test_bytes_are_conserved(spec: dict, policy: str) -> None:
    spec = quiescent(spec)
    out = run_core(spec, scripted_policy if policy == "scripted" else policy)
    size = spec["blocks"]["size_bytes"]
    sent = out["bytes_sent"].sum(axis=1)
    # the receiver never holds more than the block, and a completed block holds all of it
    assert np.all(out["recv_bytes"] <= size)
    completed = out["completion_ns"] >= 0
    assert np.all(out["recv_bytes"][completed] == size[completed])
    if spec["receiver"] == "block":
        assert np.all(out["acked_bytes"] <= out["recv_bytes"])
    else:  # acknowledged bytes may still wait in the receive buffer for an earlier piece
        assert out["acked_bytes"].sum() <= out["recv_bytes"].sum() + out["rbuf_used"]
        assert out["rbuf_used"] <= spec["rbuf_bytes"]
    # per path: every byte sent was delivered (first copy or duplicate), dropped, or is
    # still in the network; within the horizon the network drains wherever the path's
    # long-run rate is not tiny (a 1 ns burst per period can take longer than the horizon)
    in_network = out["path_bytes_sent"] - out["delivered_bytes"] - out["dropped_bytes"]
    assert np.all(in_network >= 0)
    for j, p in enumerate(spec["paths"]):
        if long_run_rate_bps(spec["links"][p["link"]]) >= 50_000:
            assert in_network[j] == 0, f"path {j} did not drain"
    # per block: what was sent was delivered (to the application, or waiting in the
    # in-order receive buffer), duplicated, dropped, or is in the network
    assert sent.sum() == (out["recv_bytes"].sum() + out["rbuf_used"] + out["duplicate_bytes"].sum()
                          + out["dropped_bytes"].sum() + in_network.sum())
    assert sent.sum() == out["path_bytes_sent"].sum()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=core_specs(), policy=st.sampled_from(["minrtt", "rr"]))
def test_no_block_completes_before_it_could(spec: dict, policy: str) -> None:
    """completion >= arrival + smallest one-way delay (also over delay steps) + size / (sum
    of the peak rates)."""
    out = run_core(spec, policy)
    b = spec["blocks"]
    min_delay = min(min([p["fwd_delay_ns"], *p.get("fwd_delay_step_ns", [])]) for p in spec["paths"])
    links = {p["link"] for p in spec["paths"]}
    peak_sum = sum(int(spec["links"][k]["bw_rate_bps"].max()) for k in links)
    done = out["completion_ns"] >= 0
    earliest = b["arrival_ns"] + min_delay + b["size_bytes"] * 8 * 10**9 // peak_sum
    assert np.all(out["completion_ns"][done] >= earliest[done])
    assert np.all(out["first_send_ns"][done] >= b["arrival_ns"][done])


@settings(max_examples=200, deadline=None)
@given(
    size=st.integers(1, 200_000),
    rate_bps=st.integers(100_000, 10**9),
    delay_ns=st.integers(0, 100 * MS),
    mss=st.sampled_from([100, 536, 1448, 9000]),
    arrival=st.integers(0, 10 * MS),
)
def test_lone_block_on_one_ideal_path(size: int, rate_bps: int, delay_ns: int, mss: int, arrival: int) -> None:
    """On one constant ideal path a lone block completes at delay + size / rate exactly,
    up to packetization: each packet's service time is rounded up to a whole ns."""
    spec = {
        "mss_bytes": mss, "header_bytes": 0, "end_ns": 10**12, "seed": 7, "receiver": "block", "rbuf_bytes": mss,
        "links": [{"queue_bytes": 10 * mss, "bw_start_ns": np.array([0], np.int64),
                   "bw_rate_bps": np.array([rate_bps], np.int64), "bw_cycle_ns": 0}],
        "paths": [{
            "link": 0, "fwd_delay_ns": delay_ns, "rev_delay_ns": delay_ns, "loss_model": "iid",
            "loss_threshold": 0, "ge_p_threshold": 0, "ge_r_threshold": 0, "ge_bad_loss_threshold": 0,
            "cc": "ideal", "initial_cwnd_bytes": mss, "min_rto_ns": 200 * MS, "max_rto_ns": 60_000 * MS,
            "ring_capacity": 1 << 16,
        }],
        "cross": [],
        "blocks": {
            "arrival_ns": np.array([arrival], np.int64), "size_bytes": np.array([size], np.int64),
            "deadline_ns": np.array([arrival + 10**11], np.int64), "priority": np.array([0], np.int32),
            "weight": np.array([1.0]),
        },
    }
    out = run_core(spec, "minrtt")
    n_full, last = divmod(size, mss)
    packets = [mss] * n_full + ([last] if last else [])
    service = sum(-(-8 * s * 10**9 // rate_bps) for s in packets)
    assert out["completion_ns"][0] == arrival + delay_ns + service
    exact = arrival + delay_ns + size * 8 * 10**9 / rate_bps
    assert 0 <= out["completion_ns"][0] - exact <= len(packets)


def test_sim_reset_replays_the_episode() -> None:
    """reset(seed) restores the initial state: the same seed gives the same outputs."""
    rng = np.random.default_rng(3)
    spec = {
        "mss_bytes": 1448, "header_bytes": 40, "end_ns": 5_000 * MS, "seed": 11, "receiver": "block",
        "rbuf_bytes": 65536,
        "links": [{"queue_bytes": 20_000, "bw_start_ns": np.array([0], np.int64),
                   "bw_rate_bps": np.array([5_000_000], np.int64), "bw_cycle_ns": 0}],
        "paths": [{
            "link": 0, "fwd_delay_ns": 5 * MS, "rev_delay_ns": 5 * MS, "loss_model": "iid",
            "loss_threshold": int(0.02 * 2**53), "ge_p_threshold": 0, "ge_r_threshold": 0,
            "ge_bad_loss_threshold": 0, "cc": "newreno", "initial_cwnd_bytes": 14_480,
            "min_rto_ns": 200 * MS, "max_rto_ns": 60_000 * MS, "ring_capacity": 1024,
        }],
        "cross": [],
        "blocks": {
            "arrival_ns": np.sort(rng.integers(0, 2_000 * MS, 40)).astype(np.int64),
            "size_bytes": rng.integers(1_000, 40_000, 40).astype(np.int64),
            "deadline_ns": None, "priority": np.zeros(40, np.int32), "weight": np.ones(40),
        },
    }
    spec["blocks"]["deadline_ns"] = spec["blocks"]["arrival_ns"] + 300 * MS
    sim = make_sim(spec)
    sim.run("minrtt")
    first = np.array(sim.view("completion_ns"), copy=True)
    sim.reset(11)
    sim.run("minrtt")
    np.testing.assert_array_equal(first, np.asarray(sim.view("completion_ns")))
    sim.reset(12)
    sim.run("minrtt")
    assert not np.array_equal(first, np.asarray(sim.view("completion_ns")))


def test_a_loss_found_after_its_recovery_ended_brings_no_second_reduction() -> None:
    """Bulk NewReno over 10 Mbit/s, 40 ms, a 1-BDP drop-tail queue, no random loss: each
    sawtooth overflows the queue by a packet or two. The acknowledgement of a packet sent
    after the first loss ends the recovery before the second hole has its three later
    acknowledgements; that hole was sent before the recovery began, so it must not halve the
    window again (docs/model.md 7.4). Every entry into fast recovery then follows a new
    drop, and the link stays full as a Reno sawtooth over a 1-BDP buffer does (ns-3: 9.57
    Mbit/s of payload; the payload share of the link is 10 x 1448 / 1502 = 9.64)."""
    from mpsched.envs import scenarios
    from mpsched.envs.episode import build_episode
    from mpsched.experiments import ns3

    case = ns3.Ns3Case("newreno", 10.0, 40.0, 0.0, 1.0, seconds=12.0)
    sim = build_episode(scenarios.resolve(ns3.mpsched_scenario(case)), 1).make_sim()
    entries, drops_seen, drops_at_last_entry = 0, 0, -1
    t = 0
    while not sim.done:
        t += MS
        sim.run("minrtt", (), t)
        recoveries = int(np.asarray(sim.view("fast_recoveries"))[0])
        drops_seen = int(np.asarray(sim.view("queue_drops"))[0])
        if recoveries > entries:
            assert recoveries == entries + 1 and drops_seen > drops_at_last_entry, f"a reduction without a drop at {t}"
            entries, drops_at_last_entry = recoveries, drops_seen
    assert entries >= 4
    delivered = float(np.asarray(sim.view("delivered_bytes")).sum())
    assert delivered * 8 / case.seconds > 0.98 * 10e6 * 1448 / 1502


def _recovery_after_one_second(fast_recovery: str) -> dict[str, int]:
    """Bulk NewReno over 10 Mbit/s, 200 ms, 1 % loss (seed 1): the ACK-clocked window of
    about 20 packets leaves in one burst each round trip, so when a loss is found the flight
    is the whole next burst. For the first recovery that begins after 1 s (at 1.28 s, found
    three acknowledgements before the end of a burst): what the sender sends in the half
    round trip after it began, and the window in it and when it ends."""
    from mpsched.envs import scenarios
    from mpsched.envs.episode import build_episode
    from mpsched.experiments import ns3

    case = ns3.Ns3Case("newreno", 10.0, 200.0, 0.01, 1.0, seconds=5.0, fast_recovery=fast_recovery)
    sim = build_episode(scenarios.resolve(ns3.mpsched_scenario(case)), 1).make_sim()

    def at(key: str) -> int:
        return int(np.asarray(sim.view(key))[0])

    t = 1000 * MS
    sim.run("minrtt", (), t)
    before = at("fast_recoveries")
    while at("fast_recoveries") == before:
        t += MS
        sim.run("minrtt", (), t)
    entry_t, entry_sent = t, at("packets_sent")
    sim.run("minrtt", (), entry_t + 100 * MS)
    sent_in_half_rtt = at("packets_sent") - entry_sent
    cwnd_in_recovery = at("cwnd_bytes")
    t = entry_t + 100 * MS
    while at("recovery") != 0:
        t += MS
        sim.run("minrtt", (), t)
    return {"sent_in_half_rtt": sent_in_half_rtt, "cwnd_in_recovery": cwnd_in_recovery,
            "cwnd_after": at("cwnd_bytes")}


def test_prr_sends_on_during_the_recovery_and_ends_at_ssthresh() -> None:
    """docs/model.md 7.4. `immediate` halves the window at once and sends nothing while the
    burst in flight drains; PRR sends on with the acknowledgements that are still coming
    (one per two, about), its window above the halved one while the flight is, and ends
    the recovery at the same halved window."""
    immediate, prr = _recovery_after_one_second("immediate"), _recovery_after_one_second("prr")
    assert immediate["sent_in_half_rtt"] == 0
    assert prr["sent_in_half_rtt"] >= 2
    assert immediate["cwnd_in_recovery"] == immediate["cwnd_after"] == 10 * 1448
    assert prr["cwnd_in_recovery"] > prr["cwnd_after"] == immediate["cwnd_after"]
