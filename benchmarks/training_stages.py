"""Each training stage against the model it starts from, paired by training seed, on the
``agents`` test split.

Up to four stages per seed, each started from an earlier one:

1. ``clone``: behaviour cloning of the teacher on its own states. The DAgger preset
   (``agents/hyperparams/dagger.yaml``) runs ``dagger_iterations`` rounds and its first
   round is this; the first round alone, with the same seed and its share of the labels
   (``--hp dagger_iterations=1 --timesteps n_timesteps / dagger_iterations``), trains the
   same network on the same demonstrations.
2. ``dagger``: the preset, all its rounds.
3. ``ppo``: MaskablePPO from the DAgger model's network and masks (``--from-model``),
   ``--ppo-steps`` environment steps with the preset's ``finetune`` values and the
   learning rate ``--ppo-learning-rate``; with ``--ppo-hold-gain`` its masks hold each
   path at that many bandwidth-delay products in flight instead of the DAgger model's
   cap (``--hp hold_gain=G``), so that it may learn to send past the teacher's.
4. ``dagger-again`` (asked for by name): the preset's rounds once more from the DAgger
   model's network and input normalization (``mpsched train --algo dagger --from-model``):
   as many new teacher labels again, on the states that network and its mixtures with
   the teacher visit, aggregated afresh. It runs with the seed plus
   :data:`AGAIN_SEED_OFFSET`, so that its rounds draw other training episodes than the
   ones before it (with the same seed its first round, the teacher's alone, would
   record the clone's labels once more).

Every model is scored by :func:`mpsched.agents.evaluate.evaluate` on every episode of the
test split (the mean weighted on-time rate over its scenarios and seeds), as ``mpsched
evaluate`` does. The gain of a stage is measured per seed against the stage it starts
from (:data:`STARTS`), and so is every stage's after ``dagger`` against the clone the run
began with; each gain's 95 % confidence interval is Student's t over the seeds' paired
differences. ``--episode-seeds`` scores the test scenarios on those seeds in place of the
split's: a fresh sample of episodes for a choice made on the split. Models and scores are
kept in ``--work`` (``STAGE/seed-S``, each with ``test_score.json``, or
``test_score-seeds-A-B-....json``), so that runs over disjoint seeds can go side by side
and a last run over all of them only reads what is there.

    python benchmarks/training_stages.py --work /tmp/stages --seeds 0 1 2 3 4 5 6 7
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
import torch
from mpsched.agents.train import load_hyperparams, train
from mpsched.experiments.report.stats import ci95
from mpsched.experiments.suite import load_suite

SUITE = "agents"
STAGES = ("clone", "dagger", "ppo", "dagger-again")
DEFAULT_STAGES = ("clone", "dagger", "ppo")
# the stage whose model a stage starts from (DAgger's first round is the clone)
STARTS = {"dagger": "clone", "ppo": "dagger", "dagger-again": "dagger"}
AGAIN_SEED_OFFSET = 1000


def _train(stage: str, seed: int, work: Path, ppo_steps: int, ppo_learning_rate: float,
           ppo_hold_gain: float | None) -> Path:
    """The model of ``stage`` for ``seed``, trained unless ``work`` already holds it."""
    out = work / stage / f"seed-{seed}"
    if (out / "agent.json").exists():
        return out
    hp = load_hyperparams("dagger", SUITE)
    algo, start, train_seed = "dagger", None, seed
    if stage == "clone":
        overrides, timesteps = ["dagger_iterations=1"], int(hp["n_timesteps"]) // int(hp["dagger_iterations"])
    elif stage == "dagger":
        overrides, timesteps = [], int(hp["n_timesteps"])
    elif stage == "dagger-again":
        start, overrides, timesteps = work / STARTS[stage] / f"seed-{seed}", [], int(hp["n_timesteps"])
        train_seed = seed + AGAIN_SEED_OFFSET
    else:
        algo, start, timesteps = "maskable_ppo", work / STARTS[stage] / f"seed-{seed}", ppo_steps
        overrides = [f"finetune.learning_rate={ppo_learning_rate:g}", f"eval_freq={max(1, ppo_steps // 2)}",
                     "torch_threads=1"] + ([] if ppo_hold_gain is None else [f"hold_gain={ppo_hold_gain:g}"])
    suite = load_suite(SUITE)
    command = (f"mpsched train --algo {algo} --suite {SUITE} --seed {train_seed} --timesteps {timesteps} "
               + (f"--from-model {start} " if start else "") + "".join(f"--hp {o} " for o in overrides)
               + f"--out {out}")
    print(command, flush=True)
    train(algo, suite.pool("train"), suite.pool(suite.evaluation_part()), timesteps, out, seed=train_seed,
          overrides=overrides, progress=False, command=command, log=lambda _: None, from_model=start,
          max_paths=max(suite.pool(p).max_paths for p in suite.split))
    return out


def _score_file(episode_seeds: list[int] | None) -> str:
    """The name of a model's score file: the split's, or that of the test scenarios on
    ``episode_seeds``."""
    if episode_seeds is None:
        return "test_score.json"
    return f"test_score-seeds-{'-'.join(map(str, episode_seeds))}.json"


def _score(model: Path, episode_seeds: list[int] | None) -> float:
    """Mean weighted on-time rate of a model over every episode of the test split, or of
    its scenarios on ``episode_seeds`` (kept in the model's folder once measured)."""
    path = model / _score_file(episode_seeds)
    if path.exists():
        return float(json.loads(path.read_text())["weighted_on_time_rate"])
    from mpsched.agents.evaluate import evaluate

    started = time.perf_counter()
    pool = load_suite(SUITE).pool("test")
    evaluation = evaluate(model, pool if episode_seeds is None else pool.with_seeds(episode_seeds))
    rates = [r.summary["weighted_on_time_rate"] for r in evaluation.results]
    score = float(np.mean(rates))
    path.write_text(json.dumps({"weighted_on_time_rate": score, "episodes": len(rates),
                                "evaluate_s": round(time.perf_counter() - started, 1)}) + "\n")
    return score


def _mean_ci(values: list[float], sign: str = "") -> str:
    mean, half, _ = ci95(values)
    return f"{mean:{sign}.4f}" + ("" if math.isnan(half) else f" ± {half:.4f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", required=True, help="folder of the models and their scores")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--stages", nargs="+", choices=STAGES, default=list(DEFAULT_STAGES),
                        help="stages to train and score (a stage needs the one it starts from)")
    parser.add_argument("--ppo-steps", type=int, default=1_500_000, help="environment steps of the ppo stage")
    parser.add_argument("--ppo-learning-rate", type=float, default=1e-4, help="the ppo stage's learning rate")
    parser.add_argument("--ppo-hold-gain", type=float, default=None,
                        help="the ppo stage's hold_gain mask (default: the DAgger model's)")
    parser.add_argument("--episode-seeds", type=int, nargs="+", default=None,
                        help="score on the test scenarios with these seeds instead of the split's")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    work = Path(args.work)
    stages = [s for s in STAGES if s in args.stages]
    print(f"seeds: {', '.join(map(str, args.seeds))}; stages: {', '.join(stages)}")
    scores = {stage: [_score(_train(stage, seed, work, args.ppo_steps, args.ppo_learning_rate,
                                         args.ppo_hold_gain), args.episode_seeds)
                      for seed in args.seeds] for stage in stages}
    pairs = [(STARTS[b], b) for b in stages if STARTS.get(b) in stages]
    if "clone" in stages:  # every stage after dagger against the clone the run began with
        pairs += [("clone", b) for b in stages if STARTS.get(b, "clone") != "clone"]
    print("\n| seed | " + " | ".join(stages) + "".join(f" | {b} - {a}" for a, b in pairs) + " |")
    print("|---:" * (1 + len(stages) + len(pairs)) + "|")
    for i, seed in enumerate(args.seeds):
        print(f"| {seed} | " + " | ".join(f"{scores[s][i]:.4f}" for s in stages)
              + "".join(f" | {scores[b][i] - scores[a][i]:+.4f}" for a, b in pairs) + " |")
    print(f"\nmean ± 95 % CI over {len(args.seeds)} seeds (Student's t):")
    for stage in stages:
        print(f"- {stage}: {_mean_ci(scores[stage])}")
    for a, b in pairs:
        gains = [y - x for x, y in zip(scores[a], scores[b])]
        print(f"- {b} against {a}, paired: {_mean_ci(gains, '+')}; ahead on {sum(g > 0 for g in gains)} of "
              f"{len(gains)} seeds")


if __name__ == "__main__":
    main()
