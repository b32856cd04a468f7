"""What a learned agent's network adds to its mask rules, on the agents suite's test split.

A model's masks (:class:`mpsched.agents.vec_env.MaskRules`: expired blocks, the in-flight
cap, blocks that cannot arrive in time, an idling WAIT) already decide much: where the cap
holds a path only WAIT is left, and the reachable rule removes the blocks an
earliest-deadline sender would waste the paths on. This runs, on every test scenario and
seed, the model itself and *the rules alone*: the same masks, then the most urgent block
they allow (slots are in deadline order), WAIT when they allow none. It prints the weighted
on-time rate of both per scenario and per family (mean over the family's episodes), and
the model's mean paired difference from the rules alone with its 95 % confidence interval
over episodes.

    python benchmarks/agent_rules_ablation.py [--model default] [--duration 20]
        [--seeds 1000 1001 1002] [--groups test-workload ...]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
from mpsched.agents import load
from mpsched.agents.experts import EpisodeRecorder
from mpsched.agents.vec_env import MaskRules
from mpsched.envs import simulate
from mpsched.envs.episode import build_episode
from mpsched.envs.policy import WAIT
from mpsched.envs.results import EpisodeResult
from mpsched.experiments.report import ci95
from mpsched.experiments.suite import load_suite, shortened


def rules_alone(scenario: Any, seed: int, num_slots: int, max_paths: int, rules: MaskRules) -> float:
    """The weighted on-time rate of the most urgent block the rules allow at every decision."""
    episode = build_episode(scenario, seed)
    sim = episode.make_sim()
    recorder = EpisodeRecorder(sim, num_slots, max_paths, rules)
    while sim.next_decision() >= 0:
        recorder.observe()
        allowed = np.flatnonzero(recorder.mask[:num_slots])
        sim.apply(int(recorder.slots[allowed[0]]) if len(allowed) else WAIT)
    return float(EpisodeResult.from_sim(sim, episode, "rules-alone").summary["weighted_on_time_rate"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="default", help="a shipped model's name or a model directory")
    parser.add_argument("--duration", type=float, default=None, help="episode length in s (default: the suite's)")
    parser.add_argument("--seeds", nargs="*", type=int, default=None, help="override the groups' seeds")
    parser.add_argument("--groups", nargs="*", default=None, help="test groups (default: the whole test split)")
    args = parser.parse_args()

    agent = load(args.model)
    meta = agent.meta
    rules = MaskRules.of(meta)
    print(f"model {args.model}: {rules}")
    begin = time.perf_counter()
    families: dict[str, list[tuple[float, float]]] = {}
    print(f"{'scenario':<26}{'model':>8}{'rules':>8}")
    for group in load_suite("agents").split_groups("test"):
        if args.groups and group.name not in args.groups:
            continue
        for case in group.cases:
            scenario = (case if args.duration is None else shortened(case, args.duration)).scenario
            pairs = []
            for seed in args.seeds or group.seeds:
                learned = float(simulate(scenario, agent, seed=seed).summary["weighted_on_time_rate"])
                pairs.append((learned, rules_alone(scenario, seed, int(meta["num_slots"]), int(meta["max_paths"]),
                                                   rules)))
            families.setdefault(group.name, []).extend(pairs)
            print(f"{scenario.name:<26}{np.mean([p[0] for p in pairs]):>8.4f}{np.mean([p[1] for p in pairs]):>8.4f}")
    print(f"\n{'family':<26}{'model':>8}{'rules':>8}  model - rules (95 % CI over episodes)")
    for name, pairs in families.items():
        mean, half, _ = ci95([a - b for a, b in pairs])
        print(f"{name:<26}{np.mean([p[0] for p in pairs]):>8.4f}{np.mean([p[1] for p in pairs]):>8.4f}"
              f"  {mean:+.4f} +- {half:.4f}")
    print(f"({time.perf_counter() - begin:.0f} s)")


if __name__ == "__main__":
    main()
