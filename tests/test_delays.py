"""Delay dynamics (docs/model.md sections 4-6): delay steps, jitter that keeps order, delay
traces from CSV files and ping logs, and the errors bad delay input gets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mpsched.envs import Scenario, ScenarioError, TraceError, simulate
from mpsched.envs.episode import build_episode
from mpsched.solvers.problem import build_problem, latest_service
from refsim import run_reference
from specs import make_sim, run_core, scripted_policy

US = 1_000


def one_path_spec(n_pieces: int, **path: Any) -> dict[str, Any]:
    """One ideal path on a 1 Gbit/s link (mss 1000, no header: 8 us per piece), 10 us each
    way, the in-order receiver (which records each piece's arrival), one block."""
    sub = {"link": 0, "fwd_delay_ns": 10 * US, "rev_delay_ns": 10 * US, "loss_model": "iid", "loss_threshold": 0,
           "ge_p_threshold": 0, "ge_r_threshold": 0, "ge_bad_loss_threshold": 0, "cc": "ideal",
           "initial_cwnd_bytes": 10_000, "min_rto_ns": 10**6, "max_rto_ns": 10**9, "ring_capacity": 64, **path}
    return {
        "mss_bytes": 1000, "header_bytes": 0, "end_ns": 10**9, "seed": 7, "receiver": "in_order",
        "rbuf_bytes": 10**7, "sequence": "send",
        "links": [{"queue_bytes": 10**6, "bw_start_ns": np.array([0], np.int64),
                   "bw_rate_bps": np.array([10**9], np.int64), "bw_cycle_ns": 0}],
        "paths": [sub], "cross": [],
        "blocks": {"arrival_ns": np.array([0], np.int64), "size_bytes": np.array([1000 * n_pieces], np.int64),
                   "deadline_ns": np.array([10**8], np.int64), "priority": np.zeros(1, np.int32),
                   "weight": np.ones(1)},
    }


def steps(starts: list[int], fwd: list[int], rev: list[int]) -> dict[str, np.ndarray]:
    return {"delay_start_ns": np.array(starts, np.int64), "fwd_delay_step_ns": np.array(fwd, np.int64),
            "rev_delay_step_ns": np.array(rev, np.int64)}


# --------------------------------------------------------------------------- the core, by hand


def test_a_delay_step_applies_to_packets_that_leave_the_link_after_it() -> None:
    """Pieces leave the link at 8, 16 and 24 us. The forward delay steps from 10 to 50 us at
    20 us: the first two arrive at 18 and 26 us, the third at 24 + 50 = 74 us."""
    spec = one_path_spec(3, **steps([20 * US], [50 * US], [10 * US]))
    for out in (run_core(spec, "minrtt"), run_reference(spec, "minrtt")):
        assert list(out["piece_arrival_ns"]) == [18 * US, 26 * US, 74 * US]


def test_a_packet_never_overtakes_the_one_before_it() -> None:
    """The forward delay falls from 10 us to 0 at 20 us: the third piece (off the link at
    24 us) would arrive at 24 us, before the second (26 us); the wire keeps order, so it
    arrives at 26 us with it. Its acknowledgement follows the second's."""
    spec = one_path_spec(3, **steps([20 * US], [0], [10 * US]))
    for out in (run_core(spec, "minrtt"), run_reference(spec, "minrtt")):
        assert list(out["piece_arrival_ns"]) == [18 * US, 26 * US, 26 * US]
        assert out["last_event_ns"] == 36 * US


def test_a_reverse_step_delays_the_acknowledgements_that_leave_after_it() -> None:
    """Only the reverse delay steps (10 -> 100 us at 20 us): the first acknowledgement
    leaves at 18 us and is back at 28 us, the second leaves at 26 us and is back at 126 us,
    so the last event is the third's return at 34 + 100 = 134 us."""
    spec = one_path_spec(3, **steps([20 * US], [10 * US], [100 * US]))
    for out in (run_core(spec, "minrtt"), run_reference(spec, "minrtt")):
        assert list(out["piece_arrival_ns"]) == [18 * US, 26 * US, 34 * US]
        assert out["last_event_ns"] == 134 * US


def test_jitter_delays_packets_within_its_bound_and_keeps_their_order() -> None:
    """200 pieces with up to 30 us of forward jitter: each arrives within [leave + 10 us,
    leave + 40 us] or with its predecessor, never before it; the delays differ (the draws
    are not all equal), and the same seed gives the same arrivals."""
    spec = one_path_spec(200, fwd_jitter_ns=30 * US)
    arrivals = np.asarray(run_core(spec, "minrtt")["piece_arrival_ns"])
    leave = 8 * US * np.arange(1, 201)
    assert np.all(np.diff(arrivals) >= 0)
    assert np.all(arrivals >= leave + 10 * US)
    assert np.all((arrivals <= leave + 40 * US) | (arrivals == np.concatenate(([0], arrivals[:-1]))))
    assert len(set((arrivals - leave).tolist())) > 50
    assert np.array_equal(arrivals, np.asarray(run_core(spec, "minrtt")["piece_arrival_ns"]))
    assert np.array_equal(arrivals, np.asarray(run_reference(spec, "minrtt")["piece_arrival_ns"]))
    other_seed = np.asarray(run_core({**spec, "seed": 8}, "minrtt")["piece_arrival_ns"])
    assert not np.array_equal(arrivals, other_seed)


def test_jitter_draws_leave_the_loss_draws_alone() -> None:
    """The jitter stream is separate (docs/model.md section 5): on an ideal path (which
    sends one packet at a time, whatever the delays) the same packets are lost with and
    without jitter."""
    lossy = {"loss_threshold": int(0.1 * 2**53)}
    plain = run_core(one_path_spec(300, **lossy), "minrtt")
    jittered = run_core(one_path_spec(300, **lossy, fwd_jitter_ns=5 * US, rev_jitter_ns=5 * US), "minrtt")
    assert plain["random_losses"][0] > 10
    assert plain["random_losses"][0] == jittered["random_losses"][0]
    assert plain["packets_sent"][0] == jittered["packets_sent"][0]


def test_a_clone_continues_with_the_same_delays_and_jitter() -> None:
    spec = one_path_spec(400, fwd_jitter_ns=30 * US, rev_jitter_ns=3 * US,
                         **steps([500 * US, 2_000 * US], [90 * US, 5 * US], [1 * US, 60 * US]))
    sim = make_sim(spec)
    sim.run("minrtt", (), 1_000 * US)
    copy = sim.clone()
    sim.run("minrtt")
    copy.run("minrtt")
    assert np.array_equal(np.asarray(sim.view("piece_arrival_ns")), np.asarray(copy.view("piece_arrival_ns")))
    reference = run_reference(spec, "minrtt")
    assert np.array_equal(np.asarray(copy.view("piece_arrival_ns")), reference["piece_arrival_ns"])


@pytest.mark.parametrize(("change", "message"), [
    ({"fwd_jitter_ns": -1}, r"paths\[0\]\.fwd_jitter_ns: -1 is outside"),
    ({"rev_jitter_ns": 2**51}, r"paths\[0\]\.rev_jitter_ns"),
    (steps([0], [1], [1]), r"paths\[0\]\.delay_start_ns\[0\]: 0 must be greater than 0"),
    (steps([5, 5], [1, 1], [1, 1]), r"delay_start_ns\[1\]: 5 must be greater than 5"),
    (steps([5], [-1], [1]), r"fwd_delay_step_ns\[0\]: -1 is outside"),
    (steps([5], [1], [2**51]), r"rev_delay_step_ns\[0\]"),
    ({"delay_start_ns": np.array([5], np.int64)}, r"go together"),
    ({**steps([5, 6], [1, 1], [1, 1]), "rev_delay_step_ns": np.array([1], np.int64)}, r"rev_delay_step_ns"),
    ({**steps([5], [1], [1]), "fwd_delay_step_ns": np.array([1.0])}, r"fwd_delay_step_ns.*int64"),
])
def test_the_core_refuses_bad_delay_dynamics(change: dict[str, Any], message: str) -> None:
    with pytest.raises((ValueError, TypeError, KeyError), match=message):
        make_sim(one_path_spec(1, **change))


# --------------------------------------------------------------------------- scenarios


BASE: dict[str, Any] = {
    "duration_s": 2.0,
    "workload": {"type": "avc", "bitrate_mbps": 2.0},
    "paths": [{"name": "lte", "bandwidth": 4.0, "rtt_ms": 40}, {"name": "wifi", "bandwidth": 3.0, "rtt_ms": 20}],
}


def with_delay(delay: dict[str, Any], **path: Any) -> dict[str, Any]:
    return {**BASE, "paths": [{**BASE["paths"][0], "delay": delay, **path}, BASE["paths"][1]]}


def core_path(scenario: dict[str, Any], base_dir: Path | None = None) -> dict[str, Any]:
    return build_episode(Scenario.from_dict(scenario, base_dir=base_dir), 0).core_inputs()["paths"][0]


def test_scenario_steps_and_jitter_reach_the_core() -> None:
    p = core_path(with_delay({"jitter_ms": 5, "rev_jitter_ms": 1,
                              "steps": [[0.5, 200], [1.0, 30, 10], [1.5, 30, 10], [9.0, 1]]}))
    assert (p["fwd_delay_ns"], p["rev_delay_ns"]) == (20_000_000, 20_000_000)
    assert (p["fwd_jitter_ns"], p["rev_jitter_ns"]) == (5_000_000, 1_000_000)
    # the step repeating the delays before it and the one after the 2 s horizon are left out
    assert p["delay_start_ns"].tolist() == [500_000_000, 1_000_000_000]
    assert p["fwd_delay_step_ns"].tolist() == [100_000_000, 30_000_000]
    assert p["rev_delay_step_ns"].tolist() == [100_000_000, 10_000_000]
    assert "delay_start_ns" not in core_path(with_delay({"jitter_ms": 5}))


def test_a_scenario_with_delay_dynamics_round_trips_and_others_keep_their_dict() -> None:
    sc = Scenario.from_dict(with_delay({"jitter_ms": 5, "steps": [[0.5, 200], [1.0, 30, 10]]}))
    assert Scenario.from_dict(sc.to_dict()) == sc
    assert "delay" not in Scenario.from_dict(BASE).to_dict()["paths"][0]


def test_a_csv_delay_trace_sets_the_forward_delay_from_its_offset_on(tmp_path: Path) -> None:
    (tmp_path / "owd.csv").write_text("time,owd\n0,12.5\n0.5,30\n1.0,30\n1.5,8\n2.5,70\n")
    trace = {"file": "owd.csv", "format": "csv", "time_column": "time", "delay_column": "owd", "offset_s": 0.5}
    p = core_path(with_delay({"trace": trace}), tmp_path)
    assert (p["fwd_delay_ns"], p["rev_delay_ns"]) == (30_000_000, 20_000_000)  # the path's own reverse delay
    assert p["delay_start_ns"].tolist() == [1_000_000_000, 2_000_000_000]
    assert p["fwd_delay_step_ns"].tolist() == [8_000_000, 70_000_000]
    assert p["rev_delay_step_ns"].tolist() == [20_000_000, 20_000_000]
    rtt = core_path(with_delay({"trace": {**trace, "value": "rtt"}}), tmp_path)
    assert (rtt["fwd_delay_ns"], rtt["rev_delay_ns"]) == (15_000_000, 15_000_000)
    assert rtt["fwd_delay_step_ns"].tolist() == [4_000_000, 35_000_000]


PING_D = """PING 192.0.2.1 (192.0.2.1) 56(84) bytes of data.
[1700000000.050000] 64 bytes from 192.0.2.1: icmp_seq=1 ttl=57 time=50.0 ms
[1700000000.260000] 64 bytes from 192.0.2.1: icmp_seq=2 ttl=57 time=60.0 ms
no answer yet for icmp_seq=3
[1700000000.620000] 64 bytes from 192.0.2.1: icmp_seq=4 ttl=57 time=20.0 ms
[1700000000.620100] 64 bytes from 192.0.2.1: icmp_seq=4 ttl=57 time=20.1 ms (DUP!)

--- 192.0.2.1 ping statistics ---
4 packets transmitted, 3 received, 25% packet loss, time 603ms
rtt min/avg/max/mdev = 20.0/43.3/60.0/17.0 ms
"""


def test_a_ping_log_gives_rtt_samples_at_the_probes_send_times(tmp_path: Path) -> None:
    """ping -D: samples at reply time minus RTT (0, 0.2, 0.6 s from the first), RTT split
    equally; the timeout, the duplicate and the statistics carry no sample."""
    (tmp_path / "ping.txt").write_text(PING_D)
    p = core_path(with_delay({"trace": {"file": "ping.txt", "format": "ping"}}), tmp_path)
    assert (p["fwd_delay_ns"], p["rev_delay_ns"]) == (25_000_000, 25_000_000)
    assert p["delay_start_ns"].tolist() == [200_000_000, 600_000_000]
    assert p["fwd_delay_step_ns"].tolist() == [30_000_000, 10_000_000]
    plain = "\n".join(line.split("] ", 1)[-1] for line in PING_D.splitlines())
    (tmp_path / "plain.txt").write_text(plain)
    q = core_path(with_delay({"trace": {"file": "plain.txt", "format": "ping", "interval_s": 0.2}}), tmp_path)
    assert q["delay_start_ns"].tolist() == [200_000_000, 600_000_000]  # icmp_seq 1, 2, 4 at 0.2 s


def test_jitter_separates_dams_robust_from_dams() -> None:
    """With delays that vary, DAMS-Robust's guard (rttvar) acts: on dams-rtt-40 with 40 ms
    of jitter each way its decisions differ from DAMS's, and both stay deterministic."""
    from mpsched.envs import scenarios

    d = scenarios.get("dams-rtt-40").to_dict()
    d["duration_s"] = 10.0
    for p in d["paths"]:
        p["delay"] = {"jitter_ms": 40, "rev_jitter_ms": 40}
    sc = Scenario.from_dict(d)
    dams, robust = simulate(sc, "dams", seed=0), simulate(sc, "dams-robust", seed=0)
    assert not np.array_equal(dams.block_columns["completion_ns"], robust.block_columns["completion_ns"])
    again = simulate(sc, "dams", seed=0)
    assert np.array_equal(dams.block_columns["completion_ns"], again.block_columns["completion_ns"])


# --------------------------------------------------------------------------- the slot model


def test_the_relaxed_window_ends_at_the_last_instant_that_is_in_time() -> None:
    """Forward delay 100 ms until 1 s, then 10 ms. A byte due at 1.05 s may leave at 1.04 s;
    one due at 1.005 s may not leave at 0.95 s (it would arrive at 1.05 s) nor at 1.0 s
    (1.01 s): its last instant is 0.905 s, in the slow segment. The conservative window
    takes the largest delay and the jitter bound."""
    ms = 1_000_000
    path = {"fwd_delay_ns": 100 * ms, **steps([1000 * ms], [10 * ms], [10 * ms]), "fwd_jitter_ns": 5 * ms}
    deadline = np.array([1050, 1005, 950, 50], dtype=np.int64) * ms
    assert latest_service(deadline, path, "relaxed").tolist() == [1040 * ms, 905 * ms, 850 * ms, -1]
    assert latest_service(deadline, path, "conservative").tolist() == [945 * ms, 900 * ms, 845 * ms, -55 * ms]


def test_the_relaxed_window_matches_a_search_over_every_instant() -> None:
    """On random delay steps (rising and falling), the largest tau with tau + fwd(tau) <= D,
    found by trying every integer instant."""
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(0, 5))
        starts = np.sort(rng.choice(np.arange(1, 60), size=n, replace=False)).tolist()
        delays = rng.integers(0, 30, size=n + 1).tolist()
        path = {"fwd_delay_ns": delays[0], **steps(starts, delays[1:], delays[1:])}
        deadline = np.arange(0, 100, dtype=np.int64)

        fwd = [delays[sum(1 for s in starts if s <= t)] for t in range(100)]
        brute = [max((t for t in range(d + 1) if t + fwd[t] <= d), default=-1) for d in deadline.tolist()]
        assert latest_service(deadline, path, "relaxed").tolist() == brute


def test_an_outage_takes_its_service_from_the_link() -> None:
    """One path of 8 Mbit/s (1 byte per us) down from 1.0 to 1.5 s, 40 ms forward delay,
    10 ms slots. Relaxed: every slot from 0.96 s (a byte served then arrives at 1.0 s or
    later) to 1.5 s carries nothing, but the slot where the outage ends gets one packet
    back (a packet served across its end gets through). Conservative: the same slots with
    the largest delay plus the 10 ms jitter bound (from 0.95 s)."""
    path = {**BASE["paths"][0], "bandwidth": 8.0, "rtt_ms": 80, "outages": [[1.0, 1.5]],
            "delay": {"jitter_ms": 10}}
    episode = build_episode(Scenario.from_dict({**BASE, "duration_s": 3.0, "paths": [path]}), 0)
    wire = episode.core_inputs()["mss_bytes"] + episode.core_inputs()["header_bytes"]
    relaxed = build_problem(episode, 10**7, "relaxed").capacity[0]
    conservative = build_problem(episode, 10**7, "conservative").capacity[0]
    assert relaxed[:96].tolist() == [10_000] * 96 and relaxed[96:150].tolist() == [0] * 54
    assert relaxed[150] == 10_000 + wire and relaxed[151] == 10_000
    assert conservative[94] > 0 and conservative[95:150].tolist() == [0] * 55 and conservative[150] > 0


def test_the_optimum_bounds_every_policy_on_paths_that_move_and_fail() -> None:
    """Delay steps, jitter, outages, a lossy and slow way back: the relaxed bound is above every schedule the
    optimum simulates (each registered baseline with and without dropping expired blocks,
    and the conservative plan's replay, which waits out the outages instead of losing
    packets in them: it reaches the conservative model's value)."""
    from mpsched.solvers import optimum

    wifi = {"name": "wifi", "bandwidth": 6.0, "rtt_ms": 20, "outages": [[3.0, 4.0]],
            "delay": {"steps": [[6.0, 120], [8.0, 20]], "jitter_ms": 5}}
    lte = {"name": "lte", "bandwidth": 1.0, "rtt_ms": 60, "ack_loss": 0.05, "ack_bandwidth": 0.02}
    sc = Scenario.from_dict({"duration_s": 10.0, "paths": [wifi, lte],
                             "workload": {"type": "web", "page_interval_s": 1, "object_kb_median": 16,
                                          "deadline_ms": 300}})
    result = optimum(sc, seed=2)
    values = result.extra["candidate_values"]
    assert max(values.values()) <= result.extra["upper_bound"] < 1.0
    assert values["replay"] == pytest.approx(result.extra["conservative_value"], abs=0.02)
    assert values["replay"] > values["minrtt"]


@pytest.mark.parametrize(("delay", "message"), [
    ({"jitter_ms": -1}, r"paths\[0\]\.delay\.jitter_ms"),
    ({"wobble_ms": 1}, r"paths\[0\]\.delay\.wobble_ms.*unknown"),
    ({"steps": [[1.0, 10], [1.0, 20]]}, r"delay\.steps\[1\]\[0\].*after the previous"),
    ({"steps": [[0, 10]]}, r"delay\.steps\[0\]\[0\]"),
    ({"steps": [[1.0]]}, r"delay\.steps\[0\]"),
    ({"steps": []}, r"delay\.steps"),
    ({"steps": [[1.0, 10]], "trace": {"file": "x", "format": "ping"}}, r"only one of steps and trace"),
    ({"trace": {"file": "x.csv", "format": "owamp"}}, r"delay\.trace\.format"),
    ({"trace": {"file": "missing.csv", "format": "csv"}}, r"missing\.csv.*file not found"),
])
def test_bad_delay_configurations_are_refused(delay: dict[str, Any], message: str) -> None:
    with pytest.raises((ScenarioError, TraceError), match=message):
        Scenario.from_dict(with_delay(delay))


@pytest.mark.parametrize(("fmt", "content", "message"), [
    ("csv", "0,10\n0.5,abc\n", r"bad\.txt:2: .*delay 'abc' is not a number"),
    ("csv", "0,10\n0.5,20\n0.5,30\n", r"bad\.txt:3: .*strictly increasing"),
    ("csv", "0,10\n1,-4\n", r"bad\.txt:2: .*outside"),
    ("csv", "# nothing\n", r"bad\.txt.*no delay samples"),
    ("ping", "64 bytes from 192.0.2.1: icmp_seq=1 ttl=57 time=abc ms\n", r"bad\.txt:1: .*icmp_seq=N and time"),
    ("ping", "[1.0] 64 bytes from a: icmp_seq=1 ttl=5 time=1 ms\n64 bytes from a: icmp_seq=2 ttl=5 time=1 ms\n",
     r"bad\.txt:2: .*ping -D"),
])
def test_bad_delay_traces_name_their_file_and_line(tmp_path: Path, fmt: str, content: str, message: str) -> None:
    (tmp_path / "bad.txt").write_text(content)
    with pytest.raises(TraceError, match=message):
        Scenario.from_dict(with_delay({"trace": {"file": "bad.txt", "format": fmt}}), base_dir=tmp_path)


def test_scripted_decisions_agree_with_the_reference_under_delay_steps() -> None:
    spec = one_path_spec(40, cc="newreno", fwd_jitter_ns=20 * US, loss_threshold=int(0.05 * 2**53),
                         **steps([100 * US, 300 * US], [80 * US, 0], [0, 40 * US]))
    core, ref = run_core(spec, scripted_policy), run_reference(spec, scripted_policy)
    assert np.array_equal(np.asarray(core["piece_arrival_ns"]), ref["piece_arrival_ns"])
    assert core["last_event_ns"] == ref["last_event_ns"]
