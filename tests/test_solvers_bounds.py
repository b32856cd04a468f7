"""The optimum against the simulator: the relaxed upper bound is above every scheduler,
and the conservative schedule, replayed packet by packet, keeps what it promises.

The bound holds whatever happens in the simulator (any controller, loss, queue drops,
cross traffic, either receiver): these only take capacity away or add delay
(mpsched.solvers.problem). Every native baseline is checked on random small episodes and
on the built-in scenarios under ideal and NewReno control, with and without loss.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mpsched import baselines
from mpsched.envs import registry, scenarios, simulate
from mpsched.envs.scenario import Scenario
from mpsched.envs.simulate import drive
from mpsched.solvers import build_problem, optimality_gaps, optimum, solve
from mpsched.solvers.solve import solve_problem
from specs import core_specs, make_sim
from test_solvers import SpecEpisode, slot_for

pytest.importorskip("ortools", reason="the solvers need OR-Tools (the solve extra)")

NATIVE = [name for name, cls in baselines.REGISTRY.items() if cls.native]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=core_specs(max_blocks=10, dynamics=False), choice=st.integers(0, 4))
def test_relaxed_bound_is_above_every_baseline_on_random_episodes(spec: dict, choice: int) -> None:
    """Acceptance 2 on random small episodes: the on-time weight a native baseline reaches
    in the simulator never exceeds the relaxed model's proven bound."""
    problem = build_problem(SpecEpisode(spec), slot_for(spec, choice), "relaxed")
    bound = solve_problem(problem, time_limit_s=30.0).bound_weight
    for name in NATIVE:
        sim = make_sim(spec)
        drive(sim, registry.make(name))
        assert sim.reward_total <= bound + 1e-9, name


def variant(name: str, cc: str, loss: float) -> Scenario:
    d = scenarios.resolve(name).to_dict()
    d["transport"]["cc"] = cc
    for path in d["paths"]:
        path["cc"] = cc
        path["loss"] = loss
    return Scenario.from_dict(d)


@pytest.mark.parametrize("name", scenarios.names())
def test_relaxed_bound_is_above_every_baseline_on_built_in_scenarios(name: str) -> None:
    """Acceptance 2 on the built-in scenarios: one bound per episode (it depends on the
    blocks and bandwidths only) above every native baseline, ideal and NewReno, with and
    without 2 % loss."""
    bound = solve(name, model="relaxed").upper_bound
    for cc in ("ideal", "newreno"):
        for loss in (0.0, 0.02):
            sc = variant(name, cc, loss)
            for policy in NATIVE:
                score = simulate(sc, policy).summary["weighted_on_time_rate"]
                assert score <= bound + 1e-12, (cc, loss, policy)


@pytest.mark.parametrize("name", scenarios.names())
def test_replay_keeps_99_percent_of_the_conservative_value(name: str) -> None:
    """Acceptance 3: the conservative schedule followed by the packet simulator (ideal
    control) keeps at least 99 % of its on-time weight; packetization is the only loss."""
    result = optimum(name, with_baselines=False)
    replayed = result.extra["replay_value"]
    assert result.policy == "optimum" and result.extra["source"] == "replay"
    assert replayed == result.summary["weighted_on_time_rate"]
    assert replayed >= 0.99 * result.extra["conservative_value"]
    assert replayed <= result.extra["upper_bound"] + 1e-12
    assert result.extra["conservative_value"] <= result.extra["upper_bound"] + 1e-12


def test_optimality_gaps_are_never_negative_to_the_upper_bound() -> None:
    table = optimality_gaps("dams-dynamic-2-rtt-40", ["minrtt", "rr", "edf", "dams", "srpt-ecf"])
    assert list(table["policy"]) == sorted(table["policy"], key=lambda p: -float(
        table.loc[table["policy"] == p, "weighted_on_time_rate"].iloc[0]))
    assert (table["gap_to_upper_bound"] >= 0).all()
    assert (table["gap_to_upper_bound"] <= 1).all()
    dams = table.set_index("policy").loc["dams"]
    assert dams["gap_to_upper_bound"] < table.set_index("policy").loc["minrtt", "gap_to_upper_bound"]
