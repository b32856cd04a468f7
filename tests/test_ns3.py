"""Cross-validation against ns-3 (experiments/ns3.py): the cases as mpsched scenarios, and
(slow, with the ns3 extra) the quick grid in both simulators against the project's bounds."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from mpsched.envs import scenarios
from mpsched.envs.episode import build_episode
from mpsched.experiments import ns3
from mpsched.experiments.cli import main
from mpsched.experiments.machine import StealMeter, describe, processor
from refsim import Simulator


def test_a_case_is_the_same_link_in_mpsched() -> None:
    """10 Mbit/s, 40 ms: a BDP of 50,000 B is 33.3 packets of 1502 B on the wire, so a
    1-BDP queue holds 33 of them; the mpsched path carries the rate, delay, loss, queue
    (in bytes), MSS, overhead, window and Cubic arithmetic of the ns-3 program, and the one
    block is there from the start and never runs out. A single-case run delivers at most the
    payload share of the link."""
    case = ns3.Ns3Case("newreno", 10.0, 40.0, 0.0, 1.0, seconds=5.0)
    assert case.queue_packets == 33
    sc = ns3.mpsched_scenario(case)
    path = sc["paths"][0]
    assert (path["bandwidth"], path["rtt_ms"], path["loss"], path["cc"]) == (10.0, 40.0, 0.0, "newreno")
    assert path["queue_bytes"] == 33 * 1502
    assert sc["transport"] == {"mss_bytes": 1448, "header_bytes": 54, "initial_cwnd_packets": 10, "min_rto_ms": 1000.0,
                               "fast_recovery": "prr", "cubic_arithmetic": "segments"}
    assert sc["workload"]["blocks"][0]["arrival_ms"] == 0.0
    assert sc["workload"]["blocks"][0]["size_bytes"] > case.rate_mbps * 1e6 / 8 * case.seconds
    got = ns3.mpsched_goodput(case)
    assert 0.8 * 10e6 * 1448 / 1502 < got["goodput_bps"] <= 10e6 * 1448 / 1502
    assert len(ns3.GRID) == 162 and len(set(ns3.GRID)) == 162 and len(ns3.QUICK) == 12


def test_the_paired_losses_are_the_cores_draws() -> None:
    """lost_data_packets replays the core's loss draws (docs/model.md sections 4-5): its
    generator gives the reference's first outputs, and an episode that carries every packet
    off the link (no queue drops, the run long enough to drain) loses exactly as many of
    its packets as the replay lists below the number it sent."""
    from refsim import Xoshiro256ss

    stream = Xoshiro256ss.for_subflow(12345, 0)
    threshold = round(0.3 * 2**53)  # docs/model.md section 1
    expected = [k for k in range(200) if (stream.next() >> 11) < threshold]
    assert ns3.lost_data_packets(12345, 0.3, 200) == expected and 30 < len(expected) < 90

    from mpsched.envs import scenarios
    from mpsched.envs.episode import build_episode

    for seed in (1, 2, 3):
        case = ns3.Ns3Case("newreno", 10.0, 40.0, 0.02, 2.0, seconds=1.0)
        sc = ns3.mpsched_scenario(case)
        sc["workload"] = {"type": "bulk", "rate_mbps": 4.0, "chunk_bytes": 1448, "deadline_ms": 10_000}
        sc["horizon_s"] = 10.0
        episode = build_episode(scenarios.resolve(sc), seed)
        sim = episode.make_sim()
        sim.run("minrtt", ())
        view = {k: int(np.asarray(sim.view(k)).sum()) for k in ("packets_sent", "random_losses", "queue_drops")}
        assert view["queue_drops"] == 0 and view["random_losses"] > 0
        lost = ns3.lost_data_packets(episode.core_seed, case.loss, view["packets_sent"])
        assert len(lost) == view["random_losses"], (seed, view)


def test_a_rate_step_is_the_same_step_in_mpsched() -> None:
    """The step cases' paths carry the rate before and after the step: NewReno fills
    10 Mbit/s before it and 2 Mbit/s after (the payload share, 1448 of 1502 bytes)."""
    down = next(c for c in ns3.STEPS if c.flow.cc == "newreno" and c.rate_after_mbps == 2.0)
    got = ns3.mpsched_step_goodputs(down)
    share = 1448 / 1502
    assert 0.95 * 10e6 * share < got["goodput_before_bps"] <= 10e6 * share
    assert 0.95 * 2e6 * share < got["goodput_after_bps"] <= 2e6 * share * 1.01


def test_the_bounds_are_the_projects() -> None:
    assert ns3.within_bounds({"median_abs_goodput_error": 0.03, "worst_abs_goodput_error": 0.10})
    assert not ns3.within_bounds({"median_abs_goodput_error": 0.031, "worst_abs_goodput_error": 0.05})
    assert not ns3.within_bounds({"median_abs_goodput_error": 0.01, "worst_abs_goodput_error": 0.11})
    goodput = {"median_abs_goodput_error": 0.01, "worst_abs_goodput_error": 0.05}
    assert ns3.within_bounds({**goodput, "median_abs_mean_rtt_error": 0.05})
    assert not ns3.within_bounds({**goodput, "median_abs_mean_rtt_error": 0.051})


def test_the_trajectories_are_compared_sample_by_sample() -> None:
    """Means, 95th percentiles and the window's errors, on the samples both sides have."""
    ours = {"srtt_ns": np.array([40, 60, 80, 999]) * 1_000_000, "cwnd_bytes": np.array([10, 20, 30, 99])}
    theirs = {"srtt_ns": np.array([40, 40, 40]) * 1_000_000, "cwnd_bytes": np.array([20, 20, 20])}
    e = ns3.trajectory_errors(ours, theirs)
    assert e["mpsched_mean_rtt_ms"] == 60.0 and e["ns3_mean_rtt_ms"] == 40.0
    assert e["mean_rtt_error"] == pytest.approx(0.5)
    assert e["mpsched_p95_rtt_ms"] == pytest.approx(78.0) and e["ns3_p95_rtt_ms"] == 40.0
    assert e["cwnd_error"] == pytest.approx(20 / 3 / 20) and e["mean_cwnd_error"] == 0.0


def test_mpsched_samples_its_trajectory_at_its_decision_points() -> None:
    """One sample every 10 ms, the last one period before the end; before the first
    acknowledgement (one RTT, 40 ms) the handshake's srtt and the initial window."""
    case = ns3.Ns3Case("newreno", 10.0, 40.0, 0.0, 1.0, seconds=2.0)
    t = ns3.mpsched_trajectory(case)
    assert len(t["srtt_ns"]) == len(t["cwnd_bytes"]) == ns3.samples(case) == 199
    assert t["srtt_ns"][:3].tolist() == [40_000_000] * 3
    assert t["cwnd_bytes"][:3].tolist() == [10 * ns3.MSS_BYTES] * 3
    assert t["cwnd_bytes"][-1] > 10 * ns3.MSS_BYTES and t["srtt_ns"][-1] > 40_000_000


def test_the_report_states_the_errors_it_was_given(tmp_path) -> None:
    """write_report on a made-up comparison of three cases: the summary's median and worst
    |error|, the counts within 3 % and 10 %, the verdict on the bounds, the speed and which
    ns-3 build it is against, the timeouts, the case beyond 10 % with its run sparing
    retransmissions, a row per case with the largest |error| first and both sides' counts,
    and the figure."""
    pytest.importorskip("matplotlib")
    cases = []
    for error, cc, loss, timeouts in ((0.01, "newreno", 0.0, 0), (-0.05, "cubic", 0.01, 2), (0.2, "cubic", 0.001, 1)):
        case = ns3.Ns3Case(cc, 10.0, 40.0, loss, 1.0)
        cases.append({**{k: getattr(case, k) for k in ("cc", "rate_mbps", "rtt_ms", "loss", "queue_bdp")},
                      "label": case.label, "queue_packets": case.queue_packets, "ns3_goodput_bps": 5e6,
                      "mpsched_goodput_bps": 5e6 * (1 + error), "goodput_error": error, "mpsched_random_losses": 3.0,
                      "ns3_random_losses": 3.0, "mpsched_fast_recoveries": 7.0, "ns3_fast_recoveries": 6,
                      "mpsched_timeouts": 0.0, "ns3_timeouts": timeouts, "speed_ratio": 400.0,
                      "ns3_recovery": case.ns3_recovery})
    cases[2].update({"ns3_every_partial_ack_goodput_bps": 5e6, "every_partial_ack_goodput_error": 0.2,
                     "ns3_every_partial_ack_timeouts": 1, "ns3_spared_goodput_bps": 5.9e6,
                     "spared_goodput_error": 6e6 / 5.9e6 - 1, "ns3_spared_timeouts": 0, "ns3_spared_losses": 1})
    result = {"cases": cases, "median_abs_goodput_error": 0.05, "worst_abs_goodput_error": 0.2,
              "median_speed_ratio": 400.0}
    readme = ns3.write_report(result, tmp_path / "ns3", "mpsched validate --against ns3 --quick").read_text()
    assert "median |error| 5.0 %, worst 20.0 %; 1 cases within 3 %, 2 within 10 %" in readme
    assert "are not met" in readme and "400x faster" in readme and "shared-bottleneck shares within 10 %" in readme
    assert "ns-3 as the wheel builds it: with its logging and asserts compiled in" in readme  # which ns-3 is timed
    assert "`prr_delivered * ssthresh` formed in 64 bits" in readme
    assert "ns-3 timed out in 2 of 3 cases, mpsched in 0." in readme
    assert "1 cases are beyond 10 %. The 1 of them in which ns-3 timed out were run again" in readme
    assert "1 of them come within 10 % with one of the two." in readme
    assert f"| {cases[2]['label']} | +20.0 % | 0 / 1 | +20.0 % (1) | +1.7 % (0; 1) |" in readme
    rows = [line for line in readme.splitlines() if line.startswith("| cubic") or line.startswith("| newreno")]
    assert [row.split(" | ")[4] for row in rows[3:]] == ["+20.0 %", "-5.0 %", "+1.0 %"]
    assert [row.split(" | ")[6:8] for row in rows[3:]] == [["7 / 6", "0 / 1"], ["7 / 6", "0 / 2"],
                                                           ["7 / 6", "0 / 0"]]
    assert (tmp_path / "ns3" / "figures" / "errors.png").stat().st_size > 10_000


def test_the_report_says_where_its_speed_was_measured(tmp_path) -> None:
    """The processor and the share of CPU time stolen during the run go with the speed in
    the text summary and in the report; a result without them says nothing of either."""
    case = ns3.Ns3Case("newreno", 10.0, 40.0, 0.0, 1.0)
    row = {**{k: getattr(case, k) for k in ("cc", "rate_mbps", "rtt_ms", "loss", "queue_bdp")},
           "label": case.label, "queue_packets": case.queue_packets, "ns3_goodput_bps": 5e6,
           "mpsched_goodput_bps": 5e6, "goodput_error": 0.0, "mpsched_random_losses": 0.0,
           "ns3_random_losses": 0.0, "mpsched_fast_recoveries": 0.0, "ns3_fast_recoveries": 0,
           "mpsched_timeouts": 0.0, "ns3_timeouts": 0, "speed_ratio": 500.0, "ns3_recovery": case.ns3_recovery}
    result = {"cases": [row], "median_abs_goodput_error": 0.0, "worst_abs_goodput_error": 0.0,
              "median_speed_ratio": 500.0}
    assert "Speed measured on" not in ns3.format_comparison(result)
    result.update(machine="Some CPU (x86_64), 2 CPUs, Python 3.11.7", cpu_steal=0.1234)
    sentence = ("Speed measured on Some CPU (x86_64), 2 CPUs, Python 3.11.7; the hypervisor took 12.3 % of the CPU "
                "time during the run (steal in /proc/stat).")
    assert sentence in ns3.format_comparison(result)
    assert "steal" not in ns3.format_comparison({**result, "cpu_steal": None})
    pytest.importorskip("matplotlib")
    assert sentence in ns3.write_report(result, tmp_path / "ns3", "mpsched validate --against ns3").read_text()


def test_the_steal_share_is_read_from_proc_stat(tmp_path) -> None:
    """StealMeter: the stolen ticks over all ticks between two readings of the ``cpu``
    line (guest time, already in user time, left out of the total); None where the file
    is missing or has no steal field. processor(): the first model name of cpuinfo."""
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 50 800 10 0 0 40 7 0\ncpu0 50 0 25 400 5 0 0 20 0 0\n")
    meter = StealMeter(stat).start()
    stat.write_text("cpu  160 0 70 900 10 0 0 100 9 0\n")
    assert meter.share() == pytest.approx(60 / 240)
    assert StealMeter(tmp_path / "absent").start().share() is None
    stat.write_text("cpu  100 0 50 800\n")
    assert StealMeter(stat).start().share() is None
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nvendor_id\t: X\nmodel name\t: Some CPU @ 2.0GHz\n\n"
                       "processor\t: 1\nmodel name\t: Some CPU @ 2.0GHz\n")
    assert processor(cpuinfo) == "Some CPU @ 2.0GHz"
    assert describe(cpuinfo).startswith("Some CPU @ 2.0GHz (")
    assert processor(tmp_path / "absent")


def test_a_shared_case_is_averaged_over_phases_centred_on_equal_round_trips() -> None:
    """The offsets span [-S, S) evenly, S a 1,502-byte packet's service time (1.2016 ms at
    10 Mbit/s), and an offset lengthens one flow's round trip: the first's when negative."""
    case = ns3.SHARED[0]
    offsets = ns3.phase_offsets_ms(case, 16)
    assert offsets[0] == pytest.approx(-1.2016) and offsets[8] == 0.0
    assert np.diff(offsets) == pytest.approx([2 * 1.2016 / 16] * 15)
    for offset, first, second in ((0.3, 40.0, 40.3), (-0.3, 40.3, 40.0), (0.0, 40.0, 40.0)):
        sc = ns3.mpsched_shared_scenario(replace(case, rtt_offset_ms=offset))
        assert (sc["paths"][0]["rtt_ms"], sc["cross_traffic"][0]["rtt_ms"]) == pytest.approx((first, second))
    assert "(second -0.300 ms)" in replace(case, rtt_offset_ms=-0.3).label


class BackToBackSimulator(Simulator):
    """The reference simulator, counting per subflow (index j: the path, then the cross
    flow) the packets offered to the link, those offered at the same instant as the same
    subflow's previous one (sent back to back), and which of them the full queue drops."""

    def __init__(self, spec: dict, policy: str) -> None:
        super().__init__(spec, policy)
        self.counts = np.zeros((2, 4), np.int64)  # packets, back to back, drops, back-to-back drops
        self.last_ns = [-1, -1]

    def link_enqueue(self, pkt, t: int) -> None:
        j = pkt.sf.j
        back_to_back = self.last_ns[j] == t
        self.last_ns[j] = t
        dropped_before = pkt.sf.queue_drops
        super().link_enqueue(pkt, t)
        dropped = pkt.sf.queue_drops > dropped_before
        self.counts[j] += (1, back_to_back, dropped, dropped and back_to_back)


def test_the_full_queue_drops_only_packets_sent_back_to_back() -> None:
    """Cubic and NewReno sharing a drop-tail queue at equal round trips (docs/model.md 7.14):
    every drop is a packet that left its sender at the same instant as the one before it,
    as a window increase releases it. Cubic sends fewer of them per packet (its window
    grows 0.53 segments per round trip, NewReno's 1). The reference's drops are the core's."""
    case = next(c for c in ns3.SHARED if c.ccs == ("cubic", "newreno") and c.flow.rtt_ms == 40.0)
    episode = build_episode(scenarios.resolve(ns3.mpsched_shared_scenario(case)), 1)
    reference = BackToBackSimulator(episode.core_inputs(), "minrtt")
    reference.run()
    packets, back_to_back, drops, back_to_back_drops = reference.counts.T
    assert (drops > 0).all() and (back_to_back_drops == drops).all()
    assert back_to_back[0] / packets[0] < 0.5 * back_to_back[1] / packets[1]
    core = episode.make_sim()
    core.run("minrtt", ())
    assert [int(np.asarray(core.view("queue_drops")).sum()),
            int(np.asarray(core.cross_view("queue_drops")).sum())] == drops.tolist()


def test_the_report_shows_the_shares_over_the_phases(tmp_path) -> None:
    """A shared row gives the mean shares, their error, the range of the first flow's share
    over the offsets in each simulator, and the phase figure."""
    pytest.importorskip("matplotlib")
    case = ns3.Ns3Case("newreno", 10.0, 40.0, 0.0, 1.0)
    result = {"cases": [{**{k: getattr(case, k) for k in ("cc", "rate_mbps", "rtt_ms", "loss", "queue_bdp")},
                         "label": case.label, "queue_packets": case.queue_packets, "ns3_goodput_bps": 5e6,
                         "mpsched_goodput_bps": 5e6, "goodput_error": 0.0, "mpsched_random_losses": 0.0,
                         "ns3_random_losses": 0.0, "speed_ratio": 400.0}],
              "median_abs_goodput_error": 0.0, "worst_abs_goodput_error": 0.0, "median_speed_ratio": 400.0,
              "shared": [{"label": "newreno + newreno", "ccs": ["newreno", "newreno"], "rtt_ms": 40.0,
                          "phase_offsets_ms": [-1.0, 0.0], "mpsched_phase_shares": [0.2, 0.6],
                          "ns3_phase_shares": [0.3, 0.7], "mpsched_shares": [0.4, 0.6], "ns3_shares": [0.5, 0.5],
                          "share_errors": [-0.2, 0.2]}]}
    readme = ns3.write_report(result, tmp_path / "ns3", "mpsched validate --against ns3 --quick").read_text()
    assert "the mean over 2 runs" in readme
    assert "| newreno + newreno | newreno (first) | 0.400 | 0.500 | -20.0 % | 0.200-0.600 / 0.300-0.700 |" in readme
    assert (tmp_path / "ns3" / "figures" / "phases.png").stat().st_size > 10_000


def test_an_unknown_ns3_recovery_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="ns3_recovery: got 'prr-16'; expected one of prr-sack, prr, prr-32"):
        ns3.ns3_goodput(replace(ns3.QUICK[0], ns3_recovery="prr-16"))


def test_validate_against_ns3_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(ns3, "ns3_available", lambda: False)
    assert main(["validate", "--against", "ns3", "--quick"]) != 0
    assert "pip install 'mpsched[ns3]'" in capsys.readouterr().err


@pytest.fixture(scope="module")
def quick_grid() -> dict:
    pytest.importorskip("ns", reason="needs the ns3 extra")
    return ns3.compare(ns3.QUICK)


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="measured against ns-3's PRR as RFC 6937 has it (prr-sack): NewReno with "
                                       "random loss is +4.3 % (10 Mbit/s, 40 ms, 1 %), +4.5 % (2 Mbit/s, 200 ms, "
                                       "0.1 %) and +3.7 % (2 Mbit/s, 200 ms, 1 %); at most 1.9 % against ns-3 "
                                       "3.44's own PRR, whose extra segment per duplicate ACK sends more in "
                                       "recovery (docs/model.md 7.14)")
def test_newreno_agrees_with_ns3_within_3_percent_on_the_quick_grid(quick_grid: dict) -> None:
    """With paired losses, PRR and the same minimum RTO on both sides."""
    newreno = [r for r in quick_grid["cases"] if r["cc"] == "newreno"]
    assert len(newreno) == 6
    assert all(abs(r["goodput_error"]) <= ns3.MEDIAN_GOODPUT_ERROR for r in newreno), ns3.format_comparison(quick_grid)
    assert all(r["ns3_random_losses"] == r["mpsched_random_losses"] == 0 for r in newreno if r["loss"] == 0)
    assert all(r["ns3_random_losses"] > 0 for r in newreno if r["loss"] > 0)


@pytest.mark.slow
def test_the_mean_smoothed_rtt_agrees_with_ns3_on_the_quick_grid(quick_grid: dict) -> None:
    """Sampled every 10 ms in both (measured: median |error of the mean| 0.4 %, worst -4.0 %,
    NewReno at 2 Mbit/s, 200 ms, 0.1 % loss. Against ns-3 3.44's own PRR 1.3 %, the worst
    +10.7 % and +10.6 %, Cubic without loss, whose window the wrapped product kept smaller
    in ns-3)."""
    assert quick_grid["median_abs_mean_rtt_error"] <= ns3.MEDIAN_RTT_ERROR, ns3.format_comparison(quick_grid)
    newreno = [r for r in quick_grid["cases"] if r["cc"] == "newreno"]
    assert all(abs(r["mean_rtt_error"]) <= ns3.MEDIAN_RTT_ERROR for r in newreno), ns3.format_comparison(quick_grid)


@pytest.mark.slow
def test_the_quick_grid_agrees_with_ns3_within_the_bounds(quick_grid: dict) -> None:
    """With Cubic counted in whole segments as ns-3 does (docs/model.md 7.8.1) and ns-3's PRR
    as RFC 6937 has it (measured: median |goodput error| 0.9 %, worst +4.5 %, NewReno at
    2 Mbit/s, 200 ms, 0.1 % loss; against ns-3 3.44's own PRR 1.1 % and +7.0 %. With RFC
    9438's arithmetic the worst was -20.0 %, Cubic at 1 % loss on the same link)."""
    assert all(r["cubic_arithmetic"] == "segments" for r in quick_grid["cases"])
    assert all(r["speed_ratio"] > 1 for r in quick_grid["cases"])
    assert ns3.within_bounds(quick_grid), ns3.format_comparison(quick_grid)


def _grid_case(label: str, seconds: float) -> ns3.Ns3Case:
    return replace(next(c for c in ns3.GRID if c.label == label), seconds=seconds)


@pytest.mark.slow
def test_the_32_bit_copy_of_ns3s_prr_is_ns3s_prr() -> None:
    """The copy of ns-3 3.44's ``TcpPrrRecovery`` behind ``prr-64`` is ns-3's class step
    for step: with its arithmetic in 32 bits, as ns-3 3.44 has it, every case carries
    exactly ns-3's goodput, on a window where the product wraps (NewReno's overshoot at
    50 Mbit/s, 200 ms) and on small windows where it does not."""
    pytest.importorskip("ns", reason="needs the ns3 extra")
    for label in ("newreno 50 Mbit/s 200 ms loss 0 % queue 0.5 BDP", "newreno 10 Mbit/s 20 ms loss 1 % queue 1 BDP",
                  "cubic 10 Mbit/s 80 ms loss 0.1 % queue 0.5 BDP"):
        case = _grid_case(label, 10.0)
        own = ns3.ns3_goodput(replace(case, ns3_recovery="prr"))
        copy = ns3.ns3_goodput(replace(case, ns3_recovery="prr-32"))
        assert copy["goodput_bps"] == own["goodput_bps"], label
        assert np.array_equal(copy["cwnd_bytes"], own["cwnd_bytes"]), label


@pytest.mark.slow
def test_newrenos_overshoot_ends_as_in_ns3_once_prrs_product_does_not_wrap() -> None:
    """NewReno's slow start overshoots a 50 Mbit/s, 200 ms path with a 0.5-BDP queue
    (docs/model.md 7.14). In ns-3 3.44 PRR's ``prr_delivered * ssthresh`` wraps in 32 bits,
    PRR holds back until the pipe falls to ssthresh and then sends at twice the link's
    rate, the queue overflows again and ns-3 reduces a second time (measured over 30 s:
    32.755 Mbit/s against this model's 46.254, +41.2 %). With the product in 64 bits ns-3
    reduces once, as this model does (46.280 with ``prr-64``, 46.254 with ``prr-sack``)."""
    pytest.importorskip("ns", reason="needs the ns3 extra")
    case = _grid_case("newreno 50 Mbit/s 200 ms loss 0 % queue 0.5 BDP", 10.0)
    assert case.ns3_recovery == "prr-sack"
    ours = ns3.mpsched_goodput(case)["goodput_bps"]
    wrapped = ns3.ns3_goodput(replace(case, ns3_recovery="prr"))["goodput_bps"]
    assert ours / wrapped - 1 > ns3.WORST_GOODPUT_ERROR
    for recovery in ("prr-64", "prr-sack"):
        wide = ns3.ns3_goodput(replace(case, ns3_recovery=recovery))["goodput_bps"]
        assert abs(ours / wide - 1) <= 0.01, recovery


@pytest.mark.slow
def test_the_grids_worst_case_is_one_lost_retransmission_that_ns3_finds_by_its_timer() -> None:
    """Cubic at 10 Mbit/s, 200 ms, 0.1 % loss, a 0.5-BDP queue, the grid's worst case
    (docs/model.md 7.14; measured over 30 s: this model 4.223 Mbit/s, ns-3 2.406, +75.5 %).
    One of the paired random losses hits a retransmission: ns-3 3.44 (no RACK) finds it
    only when its timer expires, this model's 3-packet rule finds it as it finds any loss.
    With ns-3's paired loss passing retransmissions (one packet passed) ns-3 does not time
    out and carries 4.426 (-4.6 %). With its timer restarted on every partial
    acknowledgement it still times out once, for the same lost retransmission, 17 ms
    later; the next paired loss then falls inside ns-3's loss recovery, which takes no
    second reduction, rather than on the window slow-starting after it (Cubic's reduction
    there leaves ssthresh at 7 segments), and ns-3 carries 4.225 (-0.1 %)."""
    pytest.importorskip("ns", reason="needs the ns3 extra")
    case = next(c for c in ns3.GRID if c.label == "cubic 10 Mbit/s 200 ms loss 0.1 % queue 0.5 BDP")
    ours = ns3.mpsched_goodput(case)
    assert ours["timeouts"] == 0 and ours["fast_recoveries"] > 0
    theirs = ns3.ns3_goodput(case)
    assert theirs["timeouts"] >= 1 and theirs["spared_losses"] == 0
    assert ours["goodput_bps"] / theirs["goodput_bps"] - 1 > 0.5
    rerun = ns3.timeout_sensitivities(case, ours["goodput_bps"])
    assert rerun["ns3_spared_timeouts"] == 0 and rerun["ns3_spared_losses"] >= 1
    assert abs(rerun["spared_goodput_error"]) <= ns3.WORST_GOODPUT_ERROR
    assert rerun["ns3_every_partial_ack_timeouts"] >= 1
    assert abs(rerun["every_partial_ack_goodput_error"]) <= ns3.WORST_GOODPUT_ERROR


@pytest.mark.slow
def test_newrenos_timeout_after_an_overshoot_is_ns3s_impatient_timer() -> None:
    """NewReno's slow start overshoots a 50 Mbit/s, 200 ms path with a 2-BDP queue
    (docs/model.md 7.14; measured over 30 s: this model 46.280 Mbit/s, ns-3 38.149,
    +21.3 %; the test runs 10 s). ns-3's recovery lasts longer than one timeout after its first partial
    acknowledgement, on which alone ns-3 restarts its timer (RFC 6582's Impatient variant):
    the timer expires exactly 1 s (the minimum RTO) after it while the cumulative
    acknowledgement is still advancing. Restarted on every partial acknowledgement ns-3
    does not time out and carries what this model does (which restarts its timer on every
    newly acknowledged packet)."""
    pytest.importorskip("ns", reason="needs the ns3 extra")
    case = _grid_case("newreno 50 Mbit/s 200 ms loss 0 % queue 2 BDP", 10.0)
    ours = ns3.mpsched_goodput(case)
    theirs = ns3.ns3_goodput(case)
    assert ours["timeouts"] == 0 and theirs["timeouts"] == 1
    assert ours["goodput_bps"] / theirs["goodput_bps"] - 1 > ns3.WORST_GOODPUT_ERROR
    rerun = ns3.timeout_sensitivities(case, ours["goodput_bps"])
    assert "spared_goodput_error" not in rerun  # no random loss to spare
    assert rerun["ns3_every_partial_ack_timeouts"] == 0
    assert abs(rerun["every_partial_ack_goodput_error"]) <= 0.001


def test_an_unknown_ns3_timer_rule_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="ns3_rto_restart: got 'never'; expected one of first-partial-ack, every"):
        ns3.ns3_goodput(replace(ns3.QUICK[0], ns3_rto_restart="never"))


def test_a_shared_case_refuses_the_single_flow_sensitivities() -> None:
    for change in ({"ns3_rto_restart": "every-partial-ack"}, {"ns3_spare_retransmissions": True}):
        case = replace(ns3.SHARED[0], flow=replace(ns3.SHARED[0].flow, **change))
        with pytest.raises(ValueError, match="apply to single-flow cases"):
            ns3.ns3_shared_goodputs(case)


@pytest.mark.slow
def test_cubics_extra_reductions_after_an_overshoot_come_with_ns3s_extra_segment_per_dupack() -> None:
    """Cubic at 2 Mbit/s, 200 ms, 0.1 % loss, a 0.5-BDP queue (docs/model.md 7.14): ns-3
    3.44's PRR adds a segment to DeliveredData per duplicate acknowledgement on top of the
    SACKed bytes, sends more during the recovery, and reduces twice in quick succession
    (measured: 1.699 Mbit/s against this model's 1.876, +10.4 %; 1.704 with the product in
    64 bits alone). Counting the SACKed bytes alone, as RFC 6937 does, ns-3 carries 1.841
    (+1.9 %); with its classic recovery 1.823 (+2.9 %)."""
    pytest.importorskip("ns", reason="needs the ns3 extra")
    case = next(c for c in ns3.GRID if c.label == "cubic 2 Mbit/s 200 ms loss 0.1 % queue 0.5 BDP")
    ours = ns3.mpsched_goodput(case)["goodput_bps"]
    theirs = {recovery: ns3.ns3_goodput(replace(case, ns3_recovery=recovery))["goodput_bps"]
              for recovery in ("prr", "prr-64", "prr-sack", "classic")}
    assert ours / theirs["prr"] - 1 > ns3.WORST_GOODPUT_ERROR
    assert ours / theirs["prr-64"] - 1 > ns3.WORST_GOODPUT_ERROR
    assert abs(ours / theirs["prr-sack"] - 1) <= ns3.MEDIAN_GOODPUT_ERROR
    assert abs(ours / theirs["classic"] - 1) <= ns3.MEDIAN_GOODPUT_ERROR


@pytest.fixture(scope="module")
def shared_cases() -> list:
    pytest.importorskip("ns", reason="needs the ns3 extra")
    return ns3.compare_shared(ns3.SHARED)


@pytest.mark.slow
def test_two_newreno_flows_share_a_bottleneck_as_in_ns3(shared_cases: list) -> None:
    """Measured over 64 round-trip offsets: -1.8 and +1.8 % (40 ms), -1.4 and +1.5 % (80 ms)
    from ns-3's mean shares (over the 16 offsets at every fourth: -5.7 and -4.9 % for the
    first flow)."""
    pairs = [r for r in shared_cases if r["ccs"] == ["newreno", "newreno"]]
    assert len(pairs) == 2 and all(len(r["phase_offsets_ms"]) == 64 for r in pairs)
    assert all(abs(e) <= ns3.SHARE_ERROR for r in pairs for e in r["share_errors"]), pairs


@pytest.mark.slow
def test_cubic_and_newreno_share_a_bottleneck_as_in_ns3(shared_cases: list) -> None:
    """Measured over 64 round-trip offsets: Cubic's mean share against NewReno is 0.564 here
    and 0.590 in ns-3 at 40 ms (-4.5 %; NewReno's +6.5 %), 0.590 and 0.584 at 80 ms (+1.0
    and -1.3 %). Over the 16 offsets at every fourth NewReno's error at 40 ms was +12.1 %;
    against ns-3 3.44's own PRR Cubic's errors were +13.5 and +40.9 % (docs/model.md 7.14)."""
    pairs = [r for r in shared_cases if r["ccs"] == ["cubic", "newreno"]]
    assert len(pairs) == 2
    assert all(abs(e) <= ns3.SHARE_ERROR for r in pairs for e in r["share_errors"]), pairs


@pytest.mark.slow
def test_ns3s_full_queue_drops_only_packets_sent_back_to_back_too() -> None:
    """The same count in ns-3 (packets within 20 us of the sender's previous one at the
    router): every drop is such a packet there as well (docs/model.md 7.14 gives the
    counts)."""
    pytest.importorskip("ns", reason="needs the ns3 extra")
    case = next(c for c in ns3.SHARED if c.ccs == ("cubic", "newreno") and c.flow.rtt_ms == 40.0)
    counts = ns3.ns3_shared_back_to_back(case)
    assert all(d > 0 for d in counts["drops"]) and counts["back_to_back_drops"] == counts["drops"], counts


@pytest.fixture(scope="module")
def step_cases() -> list:
    pytest.importorskip("ns", reason="needs the ns3 extra")
    return ns3.compare_steps(ns3.STEPS)


@pytest.mark.slow
def test_newreno_follows_a_rate_step_as_in_ns3(step_cases: list) -> None:
    """Measured: within 0.1 % before the step and after the step down, 3.0 % after the step up."""
    newreno = [r for r in step_cases if r["cc"] == "newreno"]
    assert len(newreno) == 2
    assert all(abs(r[f"error_{part}"]) <= ns3.WORST_GOODPUT_ERROR for r in newreno for part in ("before", "after"))


@pytest.mark.slow
def test_cubic_follows_a_rate_step_as_in_ns3(step_cases: list) -> None:
    """Measured: within 0.1 % before the step and after the step down, -0.7 % after the step
    up (+14.4 % against ns-3 3.44's own PRR, which reduced twice just before the step,
    docs/model.md 7.14)."""
    cubic = [r for r in step_cases if r["cc"] == "cubic"]
    assert len(cubic) == 2
    assert all(abs(r[f"error_{part}"]) <= ns3.WORST_GOODPUT_ERROR for r in cubic for part in ("before", "after"))


@pytest.mark.slow
def test_cubic_after_a_step_up_agrees_with_ns3_over_the_steps_phase() -> None:
    """The step up at 20 s lands just after a double reduction in ns-3 (docs/model.md 7.14);
    over step times 16-24 s the median error is within the bound (measured at 16, 18, 20,
    22 and 24 s: +6.1, +5.3, +14.4, +11.8, +5.6 %)."""
    pytest.importorskip("ns", reason="needs the ns3 extra")
    up = next(c for c in ns3.STEPS if c.flow.cc == "cubic" and c.rate_after_mbps == 20.0)
    rows = ns3.compare_step_times(up, (16.0, 18.0, 20.0, 22.0, 24.0))
    assert [r["step_s"] for r in rows] == [16.0, 18.0, 20.0, 22.0, 24.0]
    errors = sorted(r["error_after"] for r in rows)
    assert abs(errors[len(errors) // 2]) <= ns3.WORST_GOODPUT_ERROR, rows
