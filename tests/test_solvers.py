"""The offline optimum: slot problem, exact methods against each other, the solve API.

Three methods compute the same optimum independently: exhaustive search (every subset,
feasibility by maximum flow), the MILP (HiGHS) and the sweep (dynamic programme for
agreeable windows). On random tiny episodes they must agree exactly, and the
conservative model can never beat the relaxed one.
"""

from __future__ import annotations

import json
import math
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mpsched.envs.bandwidth import BandwidthSchedule
from mpsched.envs.episode import build_episode
from mpsched.envs.scenario import Scenario
from mpsched.experiments.cli import main
from mpsched.solvers import (
    ModelTooLargeError,
    SolverError,
    allocate,
    build_problem,
    gap_columns,
    repair,
    solve,
    solve_exhaustive,
    solve_sweep,
)
from mpsched.solvers.milp import solve_milp
from mpsched.solvers.problem import cumulative_work
from mpsched.solvers.solve import solve_problem
from mpsched.solvers.sweep import applicable, sweep_relaxations
from specs import core_specs

MS = 1_000_000


class SpecEpisode:
    """The parts of an :class:`~mpsched.envs.episode.Episode` that the slot problem reads,
    from a core input dict (tests/specs.py)."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        b = spec["blocks"]
        self.blocks = SimpleNamespace(arrival_ns=b["arrival_ns"], size_bytes=b["size_bytes"],
                                      deadline_ns=b["deadline_ns"], weight=b["weight"])
        self.end_ns = spec["end_ns"]
        self.link_schedules = tuple(BandwidthSchedule(x["bw_start_ns"], x["bw_rate_bps"], x["bw_cycle_ns"])
                                    for x in spec["links"])
        self.path_links = tuple(p["link"] for p in spec["paths"])

    def core_inputs(self) -> dict[str, Any]:
        return self.spec


def slot_for(spec: dict[str, Any], choice: int) -> int:
    """A slot length from a small menu, coarse enough for at most ~20k slots."""
    menu = (250_000, 1 * MS, 3_700_000, 10 * MS, 40 * MS)
    return max(menu[choice % len(menu)], spec["end_ns"] // 20_000)


def check_allocation(problem: Any, chosen: np.ndarray) -> None:
    """Whole bytes, inside the windows, within the capacities, every chosen block complete."""
    alloc = allocate(problem, chosen)
    assert alloc.complete(problem, chosen)
    assert np.all(alloc.bytes > 0)
    assert np.all(problem.first_slot[alloc.block, alloc.path] <= alloc.slot)
    assert np.all(alloc.slot < problem.end_slot[alloc.block, alloc.path])
    used = np.zeros_like(problem.capacity)
    np.add.at(used, (problem.path_link[alloc.path], alloc.slot), alloc.bytes)
    assert np.all(used <= problem.capacity)
    assert set(alloc.block.tolist()) <= set(chosen.tolist())


# --- the slot problem -------------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 40 * MS), min_size=0, max_size=4, unique=True),
       st.lists(st.sampled_from([0, 1, 7_000_000, 10**9]), min_size=5, max_size=5),
       st.integers(0, 60 * MS), st.lists(st.integers(0, 200 * MS), min_size=1, max_size=20))
def test_cumulative_work_is_the_integral_of_the_rate(starts: list[int], rates: list[int], cycle_extra: int,
                                                     times: list[int]) -> None:
    starts = [0] + sorted(starts)
    rates = rates[: len(starts)]
    cycle = 0 if cycle_extra == 0 else starts[-1] + cycle_extra
    schedule = BandwidthSchedule(np.array(starts), np.array(rates), cycle)
    times = sorted(times)

    def integral(t: int) -> int:  # unit steps are too slow; walk segment by segment
        total, base = 0, 0
        while True:
            for k, s in enumerate(starts):
                seg_end = base + (starts[k + 1] if k + 1 < len(starts) else (cycle if cycle else 1 << 62))
                lo, hi = base + s, min(seg_end, t)
                if hi > lo:
                    total += rates[k] * (hi - lo)
                if seg_end >= t:
                    return total
            base += cycle

    assert cumulative_work(schedule, np.array(times)) == [integral(t) for t in times]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=core_specs(max_blocks=12, dynamics=False), choice=st.integers(0, 4))
def test_conservative_windows_and_capacities_lie_inside_the_relaxed_ones(spec: dict, choice: int) -> None:
    episode = SpecEpisode(spec)
    slot = slot_for(spec, choice)
    relaxed = build_problem(episode, slot, "relaxed")
    conservative = build_problem(episode, slot, "conservative")
    n = conservative.n_slots
    assert n <= relaxed.n_slots
    assert np.all(conservative.capacity <= relaxed.capacity[:, :n])
    open_ = conservative.end_slot > conservative.first_slot
    assert np.all(relaxed.first_slot[open_] <= conservative.first_slot[open_])
    assert np.all(relaxed.end_slot[open_] >= conservative.end_slot[open_])
    # the relaxed window of a block is empty exactly when no instant qualifies
    arrival = spec["blocks"]["arrival_ns"][:, None]
    delay = np.array([p["fwd_delay_ns"] for p in spec["paths"]])[None, :]
    latest = np.minimum(spec["blocks"]["deadline_ns"][:, None], spec["end_ns"]) - delay
    assert np.array_equal(relaxed.end_slot > relaxed.first_slot, latest >= arrival)


def test_relaxed_window_inside_one_slot() -> None:
    """Arrival 15 ms, deadline 17 ms, delay 5 ms: nothing may be served (latest 12 ms <
    arrival) although both instants lie in slot 1 of 10 ms."""
    spec = tiny_spec(arrivals=[15 * MS], sizes=[1000], deadlines=[17 * MS], delays=[5 * MS])
    problem = build_problem(SpecEpisode(spec), 10 * MS, "relaxed")
    assert not problem.usable().any()


def tiny_spec(arrivals: list[int], sizes: list[int], deadlines: list[int], delays: list[int],
              rate_bps: int = 8_000_000, weights: list[float] | None = None) -> dict[str, Any]:
    """Core inputs with one own 8 Mbit/s link per path (1000 B = 1 ms), no loss."""
    n = len(arrivals)
    return {
        "mss_bytes": 1000, "header_bytes": 0, "end_ns": 10**10, "seed": 1, "receiver": "block",
        "sequence": "send", "rbuf_bytes": 10**6, "drop_expired": False,
        "links": [{"queue_bytes": 10**6, "bw_start_ns": np.array([0]), "bw_rate_bps": np.array([rate_bps]),
                   "bw_cycle_ns": 0} for _ in delays],
        "paths": [{"link": j, "fwd_delay_ns": d, "rev_delay_ns": d, "loss_model": "iid", "loss_threshold": 0,
                   "ge_p_threshold": 0, "ge_r_threshold": 0, "ge_bad_loss_threshold": 0, "cc": "ideal",
                   "initial_cwnd_bytes": 10000, "min_rto_ns": 200 * MS, "max_rto_ns": 10**12,
                   "ring_capacity": 1024} for j, d in enumerate(delays)],
        "cross": [],
        "blocks": {"arrival_ns": np.array(arrivals, np.int64), "size_bytes": np.array(sizes, np.int64),
                   "deadline_ns": np.array(deadlines, np.int64), "priority": np.zeros(n, np.int32),
                   "weight": np.array(weights or [1.0] * n, np.float64)},
    }


def test_hand_computed_choice() -> None:
    """One 8 Mbit/s path (1000 B per ms), delay 0, slots of 1 ms. Blocks: A 5000 B in
    [0, 6 ms] weight 1, B 4000 B in [0, 6 ms] weight 1, C 2000 B in [4, 6 ms] weight 3.
    6 ms carry 6000 B: C (2000) plus one of A (5000)? 7000 > 6000: no. C plus B = 6000
    fits exactly (B in [0, 4), C in [4, 6)): weight 4. A + B = 9000 does not fit; A or B
    alone gives 1. So the optimum is {B, C} with weight 4 of 5."""
    spec = tiny_spec(arrivals=[0, 0, 4 * MS], sizes=[5000, 4000, 2000], deadlines=[6 * MS] * 3, delays=[0],
                     weights=[1.0, 1.0, 3.0])
    problem = build_problem(SpecEpisode(spec), 1 * MS, "conservative")
    for found in (solve_exhaustive(problem), solve_sweep(problem)):
        assert found.weight == 4.0
        assert found.chosen.tolist() == [1, 2]
    milp = solve_milp(problem, "highs", 10.0)
    assert milp.optimal and math.isclose(milp.weight, 4.0)
    check_allocation(problem, np.array([1, 2]))


def test_two_paths_hand_computed() -> None:
    """Two paths of 1000 B/ms with one-way delays 0 and 3 ms, deadline 4 ms, slots of 1
    ms: path 0 serves slots 0-3 (4000 B), path 1 only slot 0 (1000 B, it must reach the
    receiver by 4 ms). A 5000 B block fits exactly, a 5001 B one does not."""
    for size, expected in ((5000, 1.0), (5001, 0.0)):
        spec = tiny_spec(arrivals=[0], sizes=[size], deadlines=[4 * MS], delays=[0, 3 * MS])
        problem = build_problem(SpecEpisode(spec), 1 * MS, "conservative")
        assert solve_exhaustive(problem).weight == expected
        assert solve_sweep(problem).weight == expected


# --- exact methods against each other ---------------------------------------------------------------------------


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=core_specs(max_blocks=8, dynamics=False), choice=st.integers(0, 4))
def test_milp_equals_exhaustive_and_conservative_is_below_relaxed(spec: dict, choice: int) -> None:
    episode = SpecEpisode(spec)
    slot = slot_for(spec, choice)
    values = {}
    for model in ("conservative", "relaxed"):
        problem = build_problem(episode, slot, model)
        exact = solve_exhaustive(problem)
        check_allocation(problem, exact.chosen)
        milp = solve_problem(problem, backend="highs", time_limit_s=30.0)
        assert milp.status in ("optimal", "empty", "infeasible")
        # optimal within the relative gap it is asked for (solve_milp's relative_gap, 1e-6):
        # a block of weight 1e-7 beside one of weight 1 may be left out
        assert milp.value_weight == pytest.approx(exact.weight, rel=1e-6, abs=1e-9)
        assert milp.bound_weight >= exact.weight - 1e-6
        if applicable(problem) is None:
            assert solve_sweep(problem).weight == pytest.approx(exact.weight, abs=1e-9)
        values[model] = exact.weight
    assert values["conservative"] <= values["relaxed"] + 1e-12


@st.composite
def agreeable_specs(draw: st.DrawFn) -> dict[str, Any]:
    """Up to 40 blocks with one relative deadline (agreeable windows) on 1-2 bottlenecks,
    some paths sharing one, step-changing rates."""
    spec = draw(core_specs(max_blocks=1, cross=False, dynamics=False))
    n = draw(st.integers(1, 40))
    arrival = np.sort(np.array(draw(st.lists(st.integers(0, 400 * MS), min_size=n, max_size=n)), np.int64))
    relative = draw(st.integers(1 * MS, 150 * MS))
    n_links = min(len(spec["links"]), 2)
    spec["links"] = spec["links"][:n_links]
    for p in spec["paths"]:
        p["link"] = min(p["link"], n_links - 1)
    spec["blocks"] = {
        "arrival_ns": arrival,
        "size_bytes": np.array(draw(st.lists(st.integers(1, 60_000), min_size=n, max_size=n)), np.int64),
        "deadline_ns": arrival + relative,
        "priority": np.zeros(n, np.int32),
        "weight": np.array(draw(st.lists(st.sampled_from([0.0, 1.0, 2.0, 3.0, 0.5]), min_size=n, max_size=n))),
    }
    spec["end_ns"] = draw(st.sampled_from([300 * MS, 10**10]))
    return spec


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=agreeable_specs(), choice=st.integers(0, 4), model=st.sampled_from(["relaxed", "conservative"]))
def test_sweep_equals_milp_on_agreeable_windows(spec: dict, choice: int, model: str) -> None:
    problem = build_problem(SpecEpisode(spec), slot_for(spec, choice), model)
    assert applicable(problem) is None
    sweep = solve_sweep(problem)
    check_allocation(problem, sweep.chosen)
    assert sweep.weight == pytest.approx(float(problem.weight[sweep.chosen].sum()))
    milp = solve_milp(problem, "highs", 60.0, relative_gap=0.0)
    assert milp.optimal
    assert sweep.weight == pytest.approx(milp.weight, abs=1e-6)


def test_sweep_refuses_windows_that_are_not_agreeable() -> None:
    spec = tiny_spec(arrivals=[0, 1 * MS], sizes=[1000, 1000], deadlines=[9 * MS, 5 * MS], delays=[0])
    problem = build_problem(SpecEpisode(spec), 1 * MS, "relaxed")
    assert "agreeable" in applicable(problem)
    auto = solve_problem(problem)  # the restricted and relaxed sweeps meet here: both blocks fit
    assert auto.status == "optimal" and auto.value_weight == 2.0
    assert solve_problem(problem, backend="highs").backend == "highs"
    with pytest.raises(SolverError, match="agreeable"):
        solve_problem(problem, backend="sweep")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=core_specs(max_blocks=8, dynamics=False), choice=st.integers(0, 4),
       model=st.sampled_from(["relaxed", "conservative"]))
def test_sweep_relaxations_bound_the_optimum_and_repair_to_feasible_sets(spec: dict, choice: int, model: str) -> None:
    """Every relaxation (windows grown, bottlenecks beyond the second merged) has an
    optimum at least the exact one, and equal to it when the sweep applies; its set,
    repaired by maximum flow, fits the problem."""
    problem = build_problem(SpecEpisode(spec), slot_for(spec, choice), model)
    exact = solve_exhaustive(problem)
    relaxations = sweep_relaxations(problem)
    assert relaxations
    n_links = len(np.unique(problem.path_link))
    assert len(relaxations) <= 2 * (n_links if n_links > 2 else 1)
    for found in relaxations:
        assert found.weight >= exact.weight - 1e-9
        fitted, _ = repair(problem, found.chosen)
        check_allocation(problem, fitted)
        assert float(problem.weight[fitted].sum()) <= exact.weight + 1e-9
    if applicable(problem) is None:
        assert min(r.weight for r in relaxations) == pytest.approx(exact.weight, abs=1e-9)


def three_path_scenario(duration_s: float) -> Scenario:
    """dams-dynamic-1-rtt-40 with a third square-wave path and 5.5 Mbit/s of video: three
    bottlenecks, outside the sweep's class."""
    from mpsched.envs import scenarios

    d = scenarios.resolve("dams-dynamic-1-rtt-40").to_dict()
    third = dict(d["paths"][1], name="path3", queue_bytes=20000, fwd_delay_ms=12.0, rev_delay_ms=12.0,
                 bandwidth={"type": "square", "high_mbps": 1.5, "low_mbps": 0.5, "period_s": 3.0, "phase_s": 0.5,
                            "duty": 0.5})
    d["paths"].append(third)
    d["workload"] = dict(d["workload"], bitrate_mbps=5.5)
    d["duration_s"] = duration_s
    return Scenario.from_dict(d)


def test_repaired_relaxations_solve_three_bottlenecks_that_highs_solves_slowly() -> None:
    """Three bottlenecks: the sweep's restriction drops one and starts far below the
    bound; a relaxation's set, repaired, meets the bound (proven optimal, no MILP run);
    HiGHS alone reaches the same optimum."""
    sc = three_path_scenario(5.0)
    problem = build_problem(build_episode(sc, None), 10 * MS, "relaxed")
    assert "3 bottlenecks" in applicable(problem)
    r = solve(sc)
    assert r.status == "optimal" and r.backend == "sweep" and r.value == r.upper_bound
    check_allocation(r.problem, r.chosen)
    assert r.warm_start["sweep-restriction"] < 0.9 * r.value
    assert max(v for k, v in r.warm_start.items() if k.startswith("sweep-relaxation")) == r.value
    milp = solve(sc, backend="highs", assist=False, time_limit_s=120.0)
    assert milp.status == "optimal"
    assert milp.value == pytest.approx(r.value, abs=1e-9)


def test_relative_gap_stops_at_a_start_within_it() -> None:
    """Thirty seconds of the three-bottleneck scenario, where the best start is 0.1 %
    below the bound: asked for 1 %, the solve stops there (status feasible, no MILP) and
    says so; the bound it reports is above the start."""
    sc = three_path_scenario(30.0)
    r = solve(sc, relative_gap=0.01)
    assert r.status == "feasible" and r.backend == "sweep" and "no MILP run" in r.message
    assert 0 < r.gap <= 0.01 and r.value < r.upper_bound
    check_allocation(r.problem, r.chosen)
    with pytest.raises(SolverError, match="relative_gap"):
        solve(sc, relative_gap=1.0)


def test_milp_backends_agree_on_a_small_scenario(capfd: pytest.CaptureFixture[str]) -> None:
    sc = short_scenario(2.0)
    values = {b: solve(sc, backend=b, time_limit_s=60.0, assist=False, progress=lambda p: None)
              for b in ("sweep", "highs", "scip", "cpsat")}
    assert capfd.readouterr().out == ""  # no solver writes to stdout (mpsched solve --json prints there)
    for backend, r in values.items():
        assert r.status == "optimal", backend
        assert r.value == pytest.approx(values["sweep"].value, abs=1e-9), backend


# --- the solve API ------------------------------------------------------------------------------------------------


def short_scenario(duration_s: float, name: str = "dams-dynamic-1-rtt-40") -> Scenario:
    from mpsched.envs import scenarios

    d = scenarios.resolve(name).to_dict()
    d["duration_s"] = duration_s
    return Scenario.from_dict(d)


def test_built_in_60_s_scenario_is_solved_exactly_within_a_minute() -> None:
    """Acceptance 4: the 60 s AVC scenarios to a gap of at most 0.1 % in 60 s, 2 threads."""
    for name in ("dams-dynamic-1-rtt-40", "dams-bw-1-1.5", "dams-rtt-40"):
        result = solve(name, slot_ms=10, time_limit_s=60, threads=2)
        assert result.problem.n_blocks == 1800
        assert result.status == "optimal"
        assert result.gap <= 1e-3
        assert result.solve_s <= 60
        assert len(result.chosen) and result.allocation.complete(result.problem, result.chosen)


def test_result_fields_and_allocation() -> None:
    r = solve(short_scenario(3.0), model="conservative")
    assert r.model == "conservative" and r.backend == "sweep" and r.status == "optimal"
    assert 0 < r.value <= r.upper_bound <= 1
    assert r.value_weight == pytest.approx(float(r.problem.weight[r.chosen].sum()))
    assert r.total_weight == pytest.approx(float(r.problem.weight.sum()))
    check_allocation(r.problem, r.chosen)
    table = r.allocation_table()
    assert list(table.columns) == ["block", "path", "slot", "slot_start_ns", "bytes"]
    assert table["bytes"].sum() == r.problem.size_bytes[r.chosen].sum()
    row = r.row()
    assert row["status"] == "optimal" and row["gap"] == 0.0


def test_lp_bound_is_above_the_optimum() -> None:
    sc = short_scenario(6.0)
    lp = solve(sc, model="lp")
    exact = solve(sc, model="relaxed")
    assert lp.backend == "glop"
    assert lp.upper_bound >= exact.upper_bound - 1e-9
    assert lp.value <= exact.value + 1e-12


def test_time_limit_keeps_the_warm_start_and_reports_the_gap() -> None:
    """HiGHS stopped after a second on an overloaded minute: the result is still at least
    the best baseline's on-time weight, with a bound and a message naming the knobs."""
    r = solve("dams-dynamic-1-rtt-40", backend="highs", time_limit_s=1.0, assist=False)
    assert r.status == "feasible"
    assert r.value >= max(r.warm_start.values()) - 1e-12
    assert r.upper_bound >= solve("dams-dynamic-1-rtt-40").value - 1e-9
    assert "--time-limit" in r.message and "gap" in r.message


def test_empty_and_infeasible_scenarios() -> None:
    base = {"duration_s": 1.0, "paths": [{"bandwidth": 1.0, "rtt_ms": 20}]}
    zero = {**base, "workload": {"type": "explicit", "blocks": [{"arrival_ms": 0, "size_bytes": 100,
                                                                  "deadline_ms": 50, "weight": 0.0}]}}
    r = solve(zero)
    assert r.status == "empty" and r.value == 0.0 and r.upper_bound == 0.0
    hopeless = {**base, "workload": {"type": "explicit", "blocks": [{"arrival_ms": 0, "size_bytes": 100,
                                                                      "deadline_ms": 5}]}}
    r = solve(hopeless)
    assert r.status == "infeasible" and r.value == 0.0 and r.upper_bound == 0.0 and "even alone" in r.message


def test_model_too_large_names_the_knob() -> None:
    with pytest.raises(ModelTooLargeError, match="slot-ms"):
        solve("dams-rtt-40", backend="highs", slot_ms=0.01)
    with pytest.raises(ModelTooLargeError, match="slot"):
        solve("dams-rtt-40", slot_ms=0.001)


def test_bad_arguments() -> None:
    for kwargs in ({"slot_ms": 0}, {"time_limit_s": -1}, {"threads": 0}, {"model": "exact"}, {"backend": "gurobi"}):
        with pytest.raises(SolverError):
            solve("dams-rtt-40", **kwargs)
    with pytest.raises(SolverError, match="at most 12"):
        solve(short_scenario(2.0), backend="exhaustive")


def test_gap_columns() -> None:
    rows = [{"policy": "a", "weighted_on_time_rate": 0.5}, {"policy": "b", "weighted_on_time_rate": 0.8}]
    import pandas as pd

    table = gap_columns(pd.DataFrame(rows), upper_bound=1.0, best_achieved=0.8)
    assert table["gap_to_upper_bound"].tolist() == pytest.approx([0.5, 0.2])
    assert table["gap_to_best_achieved"].tolist() == pytest.approx([1 - 0.5 / 0.8, 0.0])
    assert table["optimum_interval"].tolist() == pytest.approx([0.2, 0.2])


def test_cli_solve(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", "--scenario", "dams-bw-1-1.5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "optimal" and out["value"] == out["upper_bound"]
    assert main(["solve", "--scenario", "dams-bw-1-1.5", "--model", "lp", "--time-limit", "30"]) == 0
    captured = capsys.readouterr()
    assert "upper bound" in captured.out and "glop" in captured.err
    assert main(["solve", "--scenario", "dams-rtt-40", "--backend", "highs", "--slot-ms", "0.01"]) == 2
    assert "slot-ms" in capsys.readouterr().err
    assert main(["solve", "--scenario", "dams-bw-1-1.5", "--gap", "1.5"]) == 2
    assert "relative_gap" in capsys.readouterr().err
