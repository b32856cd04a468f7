"""Learned schedulers compared on the held-out test split of the ``agents`` suite.

Two Markdown tables from one command:

- ``extractors``: the permutation-invariant slot-set extractor (``set``) against SB3's
  default MLP (``flat``: the normalized flat observation into SB3's default
  ``net_arch=[64, 64]``), with the same algorithm and budget: behaviour cloning of DAMS,
  and MaskablePPO from scratch.
- ``imitation``: behaviour cloning of the optimum's replayed schedule, behaviour cloning
  of DAMS, MaskablePPO from scratch, and cloning of DAMS followed by MaskablePPO, all with
  the ``set`` extractor and the same budget of ``B`` decisions taken in the environment
  (cloning: ``B`` expert decisions; PPO: ``B`` environment steps; cloning + PPO: ``B / 2``
  of each).

Every run is ``mpsched.agents.train.train`` (what ``mpsched train`` runs) with the
presets of ``agents/hyperparams`` and one held-out evaluation, at the end, over every
episode of the test split (6 scenarios x 5 seeds): the score is the greedy policy's
weighted on-time rate there, mean over training seeds (± their standard deviation when
there are several), with the mean training time (recording, cloning and PPO; not the
evaluation) and the network's parameters. The load average is printed before and after.

    python benchmarks/agents_compare.py [--budget 20000] [--seeds 0 1] [--tables extractors imitation]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from mpsched.agents.train import train
from mpsched.experiments.suite import load_suite

SUITE = "agents"
TEST_EPISODES = 30
"""Episodes of the suite's test split (6 scenarios x 5 seeds)."""
TABLES = ("extractors", "imitation")


@dataclass(frozen=True)
class Method:
    """One training recipe of a table row."""

    label: str
    algo: str
    expert: str | None
    share_rl: float
    """Share of the budget spent on environment steps of PPO (the rest: expert decisions)."""

    def run(self, budget: int, extractor: str, seed: int, out: Path, threads: int) -> tuple[float, float, int]:
        """Train one model and score it on the test split: (weighted on-time rate, training
        seconds, parameters of the network)."""
        rl_steps = int(round(budget * self.share_rl))
        expert_steps = budget - rl_steps
        # No periodic evaluation: the one at the end of training covers the whole test split.
        overrides = [f"extractor={extractor}", f"torch_threads={threads}", f"eval_episodes={TEST_EPISODES}",
                     f"eval_freq={10 * budget}", f"checkpoint_freq={10 * budget}"]
        if extractor == "flat":
            overrides.append("policy_kwargs.net_arch=[64,64]")
        if self.algo == "maskable_ppo" and self.expert is not None:
            overrides.append(f"expert_steps={expert_steps}")
        steps = expert_steps if self.algo == "bc" else rl_steps
        split = load_suite(SUITE)
        result = train(self.algo, split.pool("train"), split.pool("test"), steps, out, from_expert=self.expert,
                       seed=seed, overrides=overrides,
                       progress=False, log=lambda line: None)
        final = result.evaluations[-1]
        if final["episodes"] != TEST_EPISODES:
            raise RuntimeError(f"the final evaluation covered {final['episodes']:.0f} episodes, not the "
                               f"{TEST_EPISODES} of the test split")
        n_params = sum(p.numel() for p in result.model.policy.parameters())
        return final["weighted_on_time_rate"], result.train_s, n_params


BC_DAMS = Method("BC (DAMS)", "bc", "dams", 0.0)
BC_OPTIMUM = Method("BC (optimum)", "bc", "optimum", 0.0)
PPO_SCRATCH = Method("MaskablePPO from scratch", "maskable_ppo", None, 1.0)
BC_PPO = Method("BC (DAMS) + MaskablePPO", "maskable_ppo", "dams", 0.5)


def cell(scores: list[float], times: list[float], n_params: int) -> str:
    """Score (± spread over seeds), mean training seconds and parameters, as table cells."""
    spread = f" ± {np.std(scores, ddof=1):.4f}" if len(scores) > 1 else ""
    return f"{np.mean(scores):.4f}{spread} | {np.mean(times):.0f} | {n_params:,}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=int, default=20000, help="decisions per run (default: %(default)s)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="training seeds (default: 0)")
    parser.add_argument("--tables", nargs="+", choices=TABLES, default=list(TABLES))
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default: %(default)s)")
    parser.add_argument("--out", default=None, help="keep the models here (default: a temporary folder)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    runs: list[tuple[str, Method, str]] = []
    if "extractors" in args.tables:
        runs += [("extractors", m, x) for m in (BC_DAMS, PPO_SCRATCH) for x in ("set", "flat")]
    if "imitation" in args.tables:
        runs += [("imitation", m, "set") for m in (BC_OPTIMUM, BC_DAMS, PPO_SCRATCH, BC_PPO)]
    unique = list(dict.fromkeys((m, x) for _, m, x in runs))

    load_before = os.getloadavg()
    started = time.perf_counter()
    results: dict[tuple[Method, str], tuple[list[float], list[float], int]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(args.out or scratch)
        for method, extractor in unique:
            scores, times, n_params = [], [], 0
            for seed in args.seeds:
                name = f"{method.algo}-{method.expert or 'scratch'}-{method.share_rl:g}-{extractor}-s{seed}"
                score, seconds, n_params = method.run(args.budget, extractor, seed, root / name, args.threads)
                print(f"{method.label} [{extractor}] seed {seed}: {score:.4f} ({seconds:.0f} s)", file=sys.stderr,
                      flush=True)
                scores.append(score)
                times.append(seconds)
            results[(method, extractor)] = (scores, times, n_params)
    load_after = os.getloadavg()

    seeds = ", ".join(map(str, args.seeds))
    print(f"Budget {args.budget} decisions per run; training seeds {seeds}; test split of the `{SUITE}` suite "
          f"({TEST_EPISODES} episodes); load average {load_before[0]:.2f} before, {load_after[0]:.2f} after; "
          f"{time.perf_counter() - started:.0f} s in all.\n")
    if "extractors" in args.tables:
        print("| algorithm | `set` (slot-set extractor) | train s | parameters | `flat` (SB3 MLP) | train s "
              "| parameters |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for method in (BC_DAMS, PPO_SCRATCH):
            print(f"| {method.label} | {cell(*results[(method, 'set')])} | {cell(*results[(method, 'flat')])} |")
        print()
    if "imitation" in args.tables:
        print("| method (`set` extractor) | weighted on-time rate | train s | parameters |")
        print("|---|---:|---:|---:|")
        for method in (BC_OPTIMUM, BC_DAMS, PPO_SCRATCH, BC_PPO):
            print(f"| {method.label} | {cell(*results[(method, 'set')])} |")


if __name__ == "__main__":
    main()
