"""Rollout: the core's run-until and hold-future, and rollout:BASE checked against an
exhaustive search that shares neither the clones nor the native twins."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from mpsched.envs import registry, simulate
from mpsched.envs.episode import build_episode
from mpsched.envs.errors import PolicyError
from mpsched.envs.policy import Observation
from mpsched.envs.scenarios import resolve
from mpsched.solvers.rollout import RolloutPolicy

MS = 1_000_000


def tiny() -> dict[str, Any]:
    """Two ideal paths (8 Mbit/s, 1000 B packets: 1 ms each) and five blocks whose order
    matters: MinRTT sends them by index and misses the short deadlines behind the big one."""
    blocks = [{"arrival_ms": 0, "size_bytes": 6000, "deadline_ms": 40},
              {"arrival_ms": 0, "size_bytes": 2000, "deadline_ms": 14},
              {"arrival_ms": 1, "size_bytes": 3000, "deadline_ms": 16},
              {"arrival_ms": 2, "size_bytes": 1000, "deadline_ms": 12},
              {"arrival_ms": 5, "size_bytes": 2000, "deadline_ms": 15}]
    return {"duration_s": 0.1, "transport": {"mss_bytes": 1000},
            "paths": [{"bandwidth": 8.0, "one_way_delay_ms": 5, "cc": "ideal"},
                      {"bandwidth": 8.0, "one_way_delay_ms": 9, "cc": "ideal"}],
            "workload": {"type": "explicit", "blocks": blocks}}


@pytest.mark.parametrize("name", ["minrtt", "edf", "dams", "srpt-ecf", "daps"])
def test_a_native_run_stopped_at_a_time_and_resumed_equals_one_run(name: str) -> None:
    """run(until_ns) stops at the first decision point at or after the time, with that
    decision pending; run() from there takes it and finishes exactly as one run does."""
    episode = build_episode(resolve("dams-dynamic-1-rtt-40"), 7)
    policy = registry.make(name)
    whole = episode.make_sim()
    whole.run(policy.native, policy.native_params())
    parts = episode.make_sim()
    parts.run(policy.native, policy.native_params(), 3_000_000_000)
    assert parts.now_ns >= 3_000_000_000 and parts.pending_path >= 0 and not parts.done
    parts.run(policy.native, policy.native_params())
    assert parts.done and parts.reward_total == whole.reward_total and parts.decisions == whole.decisions
    np.testing.assert_array_equal(np.asarray(parts.view("completion_ns")), np.asarray(whole.view("completion_ns")))


def test_hold_future_keeps_only_what_the_sender_knows() -> None:
    """After hold_future: no block arrives any more, the links serve at the held rates,
    cross flows stop, and the loss draws come from the new seed (the same seed, the same
    future; another seed, another one)."""
    scenario = {"duration_s": 4, "links": [{"name": "shared", "bandwidth": 6}],
                "paths": [{"name": "a", "link": "shared", "rtt_ms": 40, "loss": 0.02},
                          {"name": "b", "bandwidth": 3, "rtt_ms": 80, "loss": 0.02}],
                "cross_traffic": [{"name": "tcp", "link": "shared", "rtt_ms": 30}],
                "workload": {"type": "avc", "fps": 30, "bitrate_mbps": 3, "deadline_ms": 300}}
    sim = build_episode(resolve(scenario), 3).make_sim()
    sim.run("minrtt", (), 1_000_000_000)
    arrived = sim.n_arrived
    assert 0 < arrived < sim.n_blocks
    runs = []
    for seed in (11, 11, 12):
        copy = sim.clone()
        copy.hold_future([1_500_000, 2_500_000], seed)
        cross_sent = int(np.asarray(copy.cross_view("packets_sent"))[0])
        copy.run("minrtt", (), copy.now_ns + 10 * MS)
        assert list(np.asarray(copy.view("link_rate_bps"))) == [1_500_000, 2_500_000]
        copy.run("minrtt", ())
        assert copy.done and copy.n_arrived == arrived
        assert int(np.asarray(copy.cross_view("packets_sent"))[0]) <= cross_sent + 1  # the one it was sending
        runs.append((copy.reward_total, np.asarray(copy.view("random_losses")).copy()))
    assert runs[0][0] == runs[1][0] and np.array_equal(runs[0][1], runs[1][1])
    assert not np.array_equal(runs[0][1], runs[2][1])
    announced = sim.clone()
    announced.hold_future([1_500_000, 2_500_000], 11, arrivals=True)
    announced.run("minrtt", ())
    assert announced.n_arrived == sim.n_blocks  # the announced blocks arrive, on the held links
    assert list(np.asarray(announced.view("link_rate_bps"))) == [1_500_000, 2_500_000]
    with pytest.raises(ValueError, match="2 paths"):
        sim.clone().hold_future([1], 0)
    with pytest.raises(ValueError, match=r"outside \[0, 1e12\]"):
        sim.clone().hold_future([-1, 5], 0)


def replay(episode: Any, actions: list[int]) -> Any:
    """A fresh simulation driven through ``actions`` by the step API (no clone), stopped
    at the next decision point."""
    sim = episode.make_sim()
    for a in actions:
        assert sim.next_decision() >= 0
        sim.apply(a)
    sim.next_decision()
    return sim


def exhaustive_choice(episode: Any, actions: list[int], horizon_ns: float) -> int:
    """Every sendable block tried on its own replay, the base's Python specification (not
    the native twin) deciding from there, decision by decision, to the horizon; the best
    by weight completed on time, ties to MinRTT's own choice, then by (deadline, index)."""
    sim = replay(episode, actions)
    obs = Observation(sim)
    base = registry.make("minrtt").python()
    base.reset(obs)
    own = int(base.decide(obs))
    order = [own] + [b for b in obs.sendable_by_deadline().tolist() if b != own]
    until = sim.now_ns + horizon_ns
    values = []
    for b in order:
        copy = replay(episode, actions)
        copy.apply(b)
        spec = registry.make("minrtt").python()
        view = Observation(copy)
        spec.reset(view)
        while copy.next_decision() >= 0 and copy.now_ns < until:
            copy.apply(spec.decide(view))
        values.append(copy.reward_total)
    return order[int(np.argmax(values))]  # argmax: the first of the best


@pytest.mark.parametrize("horizon_s", [math.inf, 0.006])
def test_rollout_on_a_tiny_scenario_matches_an_exhaustive_search(horizon_s: float) -> None:
    """At every decision of its own trajectory, clairvoyant rollout:minrtt chooses what the
    exhaustive search chooses; it departs from MinRTT and, over the whole episode, is never
    worse than MinRTT (the cost-improvement property)."""
    episode = build_episode(resolve(tiny()), 0)
    policy = RolloutPolicy("minrtt", variant="clairvoyant", horizon_s=horizon_s, candidates=64)
    actions: list[int] = []
    sim = episode.make_sim()
    obs = Observation(sim)
    policy.reset(obs)
    departed = 0
    while sim.next_decision() >= 0:
        choice = policy.decide(obs)
        assert choice == exhaustive_choice(episode, actions, horizon_s * 1e9), f"decision {len(actions)}"
        own = registry.make("minrtt").python()
        own.reset(obs)
        departed += choice != own.decide(obs)
        sim.apply(choice)
        actions.append(choice)
    assert departed > 0 and policy.lookahead_decisions > 0
    base = simulate(tiny(), "minrtt", seed=0).summary["weighted_on_time_rate"]
    ours = simulate(tiny(), RolloutPolicy("minrtt", variant="clairvoyant", horizon_s=horizon_s, candidates=64),
                    seed=0).summary["weighted_on_time_rate"]
    assert sim.reward_total == ours * len(tiny()["workload"]["blocks"])  # unit weights: the same trajectory
    if math.isinf(horizon_s):
        assert ours >= base


def test_rollout_ids_and_bad_parameters() -> None:
    policy = registry.make("rollout:dams", variant="clairvoyant", horizon_s=0.5, candidates=3)
    assert isinstance(policy, RolloutPolicy) and policy.name == "rollout:dams:clairvoyant"
    assert registry.make("rollout:dams", variant="announced").name == "rollout:dams:announced"
    assert registry.kind("rollout:minrtt") == "lookahead" and "rollout:BASE" not in registry.ids("baseline")
    with pytest.raises(PolicyError, match="native twin"):
        registry.make("rollout:optimum")
    with pytest.raises(PolicyError, match="variant"):
        registry.make("rollout:minrtt", variant="psychic")
    with pytest.raises(PolicyError, match="horizon_s"):
        registry.make("rollout:minrtt", horizon_s=0)
    with pytest.raises(PolicyError, match="candidates"):
        registry.make("rollout:minrtt", candidates=0)


def test_a_rollout_of_one_candidate_is_its_base_with_the_base_parameters_given() -> None:
    """With one candidate the rollout sends its base's choice at every decision, so its
    episode is the base's; ``base_params`` reach the base (DAMS held at 1.5 BDP in flight
    here, whose episode differs from plain DAMS's, so a dropped parameter shows)."""
    scenario = resolve("dams-dynamic-1-rtt-40").replace(duration_s=3.0)
    held = simulate(scenario, registry.make("dams", hold_gain=1.5), seed=3).summary
    plain = simulate(scenario, "dams", seed=3).summary
    assert held != plain
    rollout = registry.make("rollout:dams", candidates=1, base_params={"hold_gain": 1.5})
    assert rollout.params()["base_params"] == {"hold_gain": 1.5}
    ours = simulate(scenario, rollout, seed=3).summary
    assert {k: v for k, v in ours.items() if k != "wall_s"} == {k: v for k, v in held.items() if k != "wall_s"}
    with pytest.raises(PolicyError, match="base_params = \\[1\\]; expected a mapping"):
        registry.make("rollout:dams", base_params=[1])
    with pytest.raises(PolicyError, match="takes no parameter 'nope'"):
        registry.make("rollout:dams", base_params={"nope": 1})


def test_an_honest_rollout_holds_each_path_at_the_rate_asked_for() -> None:
    """``held_rate``: the window's rate (``rate_bps``) or the latest delivery-rate sample.
    Under DAMS held at 1.5 BDP the window is not filled and grows past the path's rate, so
    the two differ, and so do the rollouts' episodes."""
    scenario = resolve("dams-dynamic-1-rtt-40").replace(duration_s=2.0)
    window = registry.make("rollout:dams", base_params={"hold_gain": 1.5, "rate_window_ms": 0.001})
    delivery = registry.make("rollout:dams", base_params={"hold_gain": 1.5, "rate_window_ms": 0.001},
                             held_rate="delivery")
    assert window.params()["held_rate"] == "window" and delivery.params()["held_rate"] == "delivery"
    seen: list[tuple[list[int], list[int], np.ndarray, np.ndarray]] = []
    inner = registry.make("dams", hold_gain=1.5, rate_window_ms=0.001)

    class Spy:
        name = "spy"
        native = None

        def reset(self, obs: Observation) -> None:
            inner.reset(obs)

        def decide(self, obs: Observation) -> int:
            seen.append((window.held_rates(obs), delivery.held_rates(obs), obs.rate_bps.copy(),
                         obs.delivery_rate_bps.copy()))
            return inner.decide(obs)

    simulate(scenario, Spy(), seed=3)
    differ = 0
    for held_window, held_delivery, rate, sample in seen:
        assert held_window == [int(r) for r in rate]
        assert held_delivery == [int(d if d > 0 else r) for d, r in zip(sample, rate)]
        differ += held_window != held_delivery
    assert differ > len(seen) // 2
    ours = {k: v for k, v in simulate(scenario, window, seed=3).summary.items() if k != "wall_s"}
    theirs = {k: v for k, v in simulate(scenario, delivery, seed=3).summary.items() if k != "wall_s"}
    assert ours != theirs
    with pytest.raises(PolicyError, match="held_rate = 'link'; expected one of window, delivery"):
        registry.make("rollout:dams", held_rate="link")
