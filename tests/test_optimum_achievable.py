"""The achievable optimum (:func:`mpsched.solvers.optimum`) on small episodes of each
workload kind: at least every registered policy, at most the relaxed upper bound, and its
plan the exhaustive search's optimum.

The scenarios are the kinds on which the conservative schedule's replay used to lose to
heuristics: per-object deadlines (explicit blocks), a frame log, paths on which one 10 ms
slot carries less than a packet, and an on/off bandwidth from a Mahimahi trace.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mpsched.envs import registry, simulate
from mpsched.envs.episode import build_episode
from mpsched.envs.scenario import Scenario
from mpsched.envs.simulate import simulate_episode
from mpsched.solvers import optimum, solve
from mpsched.solvers.replay import Optimum, with_ideal_cc

pytest.importorskip("ortools", reason="the solvers need OR-Tools (the solve extra)")

SCORE = "weighted_on_time_rate"
LOW_RATE_BLOCKS = [(6400, 110), (4000, 90), (8000, 150), (2400, 70), (5600, 120), (9600, 160), (3200, 80), (7200, 130)]
"""(size in bytes, deadline after arrival in ms) of blocks arriving every 45 ms."""


def mahimahi_trace(path: Path) -> Path:
    """On/off deliveries: one packet in each of 5 milliseconds scattered over every 60 ms
    (Mahimahi loops the file), about 1 Mbit/s; most milliseconds deliver nothing."""
    path.write_text("".join(f"{t}\n" for t in (0, 7, 19, 33, 59)))
    return path


def frames_log(path: Path) -> Path:
    """Ten frames at 25 fps in the MMGC'19 form (time s, size bits, I flag)."""
    sizes = [300_000, 56_000, 84_000, 42_000, 70_000, 280_000, 49_000, 63_000, 91_000, 35_000]
    path.write_text("".join(f"{k / 25:.3f}\t{bits}\t{int(k % 5 == 0)}\n" for k, bits in enumerate(sizes)))
    return path


def kinds(folder: Path) -> dict[str, dict[str, Any]]:
    two_paths = [{"name": "fast", "bandwidth": 2.0, "rtt_ms": 40},
                 {"name": "slow", "bandwidth": 0.8, "rtt_ms": 120}]
    objects = [(0, 30000, 200), (30, 9000, 150), (60, 42000, 300), (60, 6000, 120), (90, 21000, 250),
               (120, 15000, 200), (150, 33000, 350), (200, 4500, 150), (240, 18000, 250), (300, 12000, 200)]
    explicit = {"type": "explicit", "blocks": [{"arrival_ms": a, "size_bytes": s, "deadline_ms": a + d}
                                               for a, s, d in objects]}
    return {
        "web-objects": {"paths": two_paths, "workload": explicit},
        "frames": {"duration_s": 0.4, "paths": two_paths,
                   "workload": {"type": "frames", "file": str(frames_log(folder / "frames.tsv")),
                                "size_unit": "bits", "type_column": 2, "deadline_ms": 70}},
        # 10 ms carry 625 and 375 bytes: less than one 1448-byte packet per slot
        "low-rate": {"paths": [{"name": "a", "bandwidth": 0.5, "rtt_ms": 60}, {"name": "b", "bandwidth": 0.3,
                                                                                "rtt_ms": 100}],
                     "workload": {"type": "explicit", "blocks": [{"arrival_ms": 45 * k, "size_bytes": size,
                                                                  "deadline_ms": 45 * k + due}
                                                                 for k, (size, due) in enumerate(LOW_RATE_BLOCKS)]}},
        "mahimahi": {"paths": [{"name": "cell", "rtt_ms": 50, "bandwidth": {
                         "type": "trace", "format": "mahimahi", "file": str(mahimahi_trace(folder / "cell.down")),
                         "random_offset": True}},
                               {"name": "dsl", "bandwidth": 1.0, "rtt_ms": 30}],
                     "workload": explicit},
    }


@pytest.fixture(scope="module")
def small_scenarios(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Scenario]:
    folder = tmp_path_factory.mktemp("kinds")
    return {name: Scenario.from_dict({"name": name, "duration_s": 1.5, "horizon_s": 2.5, **spec}, base_dir=folder)
            for name, spec in kinds(folder).items()}


@pytest.mark.parametrize("kind", ["web-objects", "frames", "low-rate", "mahimahi"])
@pytest.mark.parametrize("seed", [0, 1])
def test_achievable_optimum_is_between_every_policy_and_the_bound(small_scenarios: dict[str, Scenario],
                                                                   kind: str, seed: int) -> None:
    sc = small_scenarios[kind]
    best = optimum(sc, seed)
    value, bound = best.summary[SCORE], best.extra["upper_bound"]
    assert best.policy == "optimum" and best.extra["candidate_values"][best.extra["source"]] == value
    # every registered policy, simulated here on its own, both ways and with ideal control
    for transport in (sc, with_ideal_cc(sc)):
        for name in registry.ids("baseline"):
            for drop in (False, True):
                assert simulate(transport, name, seed=seed, drop_expired=drop).summary[SCORE] <= value, (name, drop)
    assert best.extra["replay_value"] <= value <= bound + 1e-12
    # the plan is the exhaustive search's optimum, and the bound the exhaustive relaxed one
    n_blocks = best.extra["conservative"].problem.n_blocks
    assert 0 < n_blocks <= 12
    exhaustive = solve(sc, model="conservative", seed=seed, backend="exhaustive")
    assert exhaustive.value == pytest.approx(best.extra["conservative_value"], abs=1e-12)
    assert solve(sc, model="relaxed", seed=seed, backend="exhaustive").value == pytest.approx(bound, abs=1e-12)


@pytest.mark.parametrize("kind", ["web-objects", "frames", "low-rate", "mahimahi"])
def test_the_plan_is_the_best_block_set_to_replay(small_scenarios: dict[str, Scenario], kind: str) -> None:
    """An exhaustive search in the simulator: every one of the 2^n sets of blocks replayed
    by :class:`Optimum`. None beats the set the conservative solve chose. Where
    packetization costs nothing the replay keeps the plan's value; where one packet takes
    several slots (low-rate), the search shows what no block set can recover."""
    sc = small_scenarios[kind]
    best = optimum(sc, 0, with_baselines=False)
    plan = best.extra["conservative"]
    n = plan.problem.n_blocks
    ideal = build_episode(with_ideal_cc(sc), 0)
    searched = max(simulate_episode(ideal, Optimum(replace(plan, chosen=np.flatnonzero([(mask >> b) & 1
                                                                                          for b in range(n)])),
                                                   ideal)).summary[SCORE]
                   for mask in range(2**n))
    assert best.extra["replay_value"] == searched
    if kind == "low-rate":
        assert searched < best.extra["conservative_value"]
    else:
        assert searched == pytest.approx(best.extra["conservative_value"], abs=1e-12)


def test_a_better_candidate_becomes_the_optimum(small_scenarios: dict[str, Scenario]) -> None:
    """The result is the best candidate whatever produced it; ties go to the earlier."""
    sc = small_scenarios["web-objects"]
    plain = optimum(sc, 0, with_baselines=False)
    assert plain.extra["source"] == "replay" and list(plain.extra["candidate_values"]) == ["replay"]
    better = replace(plain, policy="oracle", summary={**plain.summary, SCORE: plain.summary[SCORE] + 0.5})
    same = replace(plain, policy="twin")
    best = optimum(sc, 0, with_baselines=False, candidates={"twin": lambda: same, "oracle": lambda: better})
    assert best.extra["source"] == "oracle" and best.policy == "optimum"
    assert best.summary[SCORE] == plain.summary[SCORE] + 0.5
    assert optimum(sc, 0, with_baselines=False, candidates={"twin": lambda: same}).extra["source"] == "replay"
    with pytest.raises(ValueError, match="replay"):
        optimum(sc, 0, candidates={"replay": lambda: same})
