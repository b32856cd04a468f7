"""Rollout of a scheduler against the scheduler itself on the agents suite's test split.

For every test scenario and seed (``--quick``: the suite's quick variant, 20 s episodes
and two seeds) it runs the base scheduler and its rollouts, honest, announced (the
workload's future known) and clairvoyant (:mod:`mpsched.solvers.rollout`), and prints per scenario and overall: the
weighted on-time rate of each (mean over seeds, and the mean paired difference from the
base with its 95 % confidence interval over episodes), and the cost of a rollout decision
(wall time per decision, look-ahead decisions per decision, and the whole episode's wall
time as a multiple of the base's).

    python benchmarks/rollout_improvement.py [--base dams] [--base-params "{hold_gain: 1.5}"]
        [--held-rate window] [--horizon 0.5] [--candidates 4] [--quick] [--groups test-dynamic ...] [--seeds 1000 1001]
        [--variants honest ...] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import yaml
from mpsched.envs import registry, simulate
from mpsched.experiments.report import ci95
from mpsched.experiments.suite import load_suite
from mpsched.solvers.rollout import HELD_RATES, VARIANTS, RolloutPolicy


def run(case: Any, policy: Any, seed: int) -> dict[str, float]:
    begin = time.perf_counter()
    result = simulate(case.scenario, policy, seed=seed)
    wall = time.perf_counter() - begin
    out = {"score": float(result.summary["weighted_on_time_rate"]), "wall_s": wall,
           "decisions": float(result.summary["decisions"])}
    if isinstance(policy, RolloutPolicy):
        out["lookahead_per_decision"] = policy.lookahead_decisions / max(1, policy.decisions)
    return out


def _mapping(text: str) -> dict[str, Any]:
    value = yaml.safe_load(text)
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"{text!r} is not a YAML mapping such as \"{{hold_gain: 1.5}}\"")
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", default="dams")
    parser.add_argument("--base-params", type=_mapping, default={},
                        help="the base's parameters as a YAML mapping, for the base and its rollouts alike")
    parser.add_argument("--held-rate", choices=HELD_RATES, default="window",
                        help="the rate an honest or announced copy holds each path's bandwidth at")
    parser.add_argument("--horizon", type=float, default=0.5, help="look-ahead in simulated seconds")
    parser.add_argument("--candidates", type=int, default=4)
    parser.add_argument("--quick", action="store_true", help="the suite's quick variant (20 s episodes, 2 seeds)")
    parser.add_argument("--groups", nargs="*", default=None, help="test groups (default: the whole test split)")
    parser.add_argument("--seeds", nargs="*", type=int, default=None, help="override the groups' seeds")
    parser.add_argument("--variants", nargs="*", choices=VARIANTS, default=list(VARIANTS),
                        help="rollout variants to run (default: all)")
    parser.add_argument("--json", default=None, help="also write every episode's figures here")
    args = parser.parse_args()

    suite = load_suite("agents", quick=args.quick)
    groups = [g for g in suite.split_groups("test") if not args.groups or g.name in args.groups]
    base_params = args.base_params
    policies: dict[str, Any] = {args.base: lambda: registry.make(args.base, **base_params)}
    for variant in args.variants:
        policies[f"rollout-{variant}"] = lambda v=variant: RolloutPolicy(args.base, variant=v, horizon_s=args.horizon,
                                                                         candidates=args.candidates,
                                                                         base_params=base_params,
                                                                         held_rate=args.held_rate)
    rows = []
    for g in groups:
        for case in g.cases:
            for seed in args.seeds or g.seeds:
                row: dict[str, Any] = {"scenario": case.name, "seed": seed}
                for label, make in policies.items():
                    row[label] = run(case, make(), seed)
                rows.append(row)
                print(case.name, seed, "  ".join(f"{k} {row[k]['score']:.4f} ({row[k]['wall_s']:.1f} s)"
                                                 for k in policies), flush=True)
    print(f"\nbase {args.base} {base_params or ''}, horizon {args.horizon} s, {args.candidates} candidates, "
          f"held rate {args.held_rate}, {len(rows)} episodes")
    for scope in sorted({r["scenario"] for r in rows}) + ["all"]:
        mine = [r for r in rows if scope in ("all", r["scenario"])]
        line = [f"{scope:>24}"]
        for label in policies:
            mean = sum(r[label]["score"] for r in mine) / len(mine)
            text = f"{label} {mean:.4f}"
            if label != args.base:
                diff, half, _ = ci95([r[label]["score"] - r[args.base]["score"] for r in mine])
                text += f" ({diff:+.4f} ± {half:.4f})"
            line.append(text)
        print("  ".join(line))
    for label in policies:
        if label == args.base:
            continue
        per_decision = sum(r[label]["wall_s"] for r in rows) / sum(r[label]["decisions"] for r in rows)
        ratio = sum(r[label]["wall_s"] for r in rows) / sum(r[args.base]["wall_s"] for r in rows)
        lookahead = sum(r[label]["lookahead_per_decision"] for r in rows) / len(rows)
        print(f"{label}: {per_decision * 1e6:.0f} us per decision, {lookahead:.0f} look-ahead decisions per "
              f"decision, {ratio:.0f}x the base's episode wall time")
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "episodes": rows}, indent=1))


if __name__ == "__main__":
    main()
