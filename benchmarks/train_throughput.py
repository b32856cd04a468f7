"""Training throughput: MaskablePPO environment steps per second through the native vector
adapter (:class:`mpsched.agents.vec_env.NativeVecEnv`) against SB3's DummyVecEnv of scalar
environments (:class:`mpsched.agents.vec_env.PoolEnv`), and against the reference a reader
knows, SB3's PPO on ``CartPole-v1`` with the same PPO settings, in one run.

The three learn with the maskable_ppo preset's settings; MaskablePPO on the agents suite's
train split. Each figure is environment steps over the wall time of ``learn`` (rollouts
and updates), measured ``--rounds`` times in alternating order after a warm-up, best
kept (and each round's own native / CartPole ratio, whose median drifts less with the
machine's speed). Then where the time of one ``learn`` goes, for MaskablePPO and for
CartPole (:func:`mpsched.experiments.training_bench.time_shares`), and the environments
alone: steps per second with uniformly random allowed actions (masks read as
MaskablePPO reads them). Prints the load average before and after.

    python benchmarks/train_throughput.py [--steps 40960] [--envs 16] [--extractor set] [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
import torch
from mpsched.agents.vec_env import DEFAULT_MASK_RULES, make_pool_env
from mpsched.experiments.suite import load_suite
from mpsched.experiments.training_bench import (
    SHARE_PARTS,
    cartpole_model,
    learn_steps_per_s,
    maskable_model,
    shares_per_step,
    time_shares,
)
from sb3_contrib.common.maskable.utils import get_action_masks
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv


def env_steps_per_second(env: VecEnv, steps: int, seed: int) -> float:
    """Environment steps per second with uniformly random allowed actions."""
    rng = np.random.default_rng(seed)
    env.reset()
    start = time.perf_counter()
    done = 0
    while done < steps:
        masks = get_action_masks(env)
        choice = rng.random(masks.shape) * masks
        env.step(choice.argmax(axis=1))
        done += env.num_envs
    return done / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40960, help="environment steps per measurement")
    parser.add_argument("--envs", type=int, default=16, help="copies (default: the preset's 16)")
    parser.add_argument("--extractor", choices=("set", "flat"), default="set")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument("--rounds", type=int, default=3, help="alternations of the three measurements")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    pool = load_suite("agents").pool("train")

    def dummy_env() -> VecEnv:
        return DummyVecEnv([make_pool_env(pool, 16, None, seed, DEFAULT_MASK_RULES) for seed in range(args.envs)])

    builders = {"native": lambda: maskable_model(args.envs, args.extractor, 0),
                "dummy": lambda: maskable_model(args.envs, args.extractor, 0, env=dummy_env()),
                "cartpole": lambda: cartpole_model(args.envs, 0)}
    env_native = env_steps_per_second(builders["native"]().env, args.steps, 0)
    env_dummy = env_steps_per_second(dummy_env(), args.steps, 0)
    learn_steps_per_s(builders["native"](), 2048)  # warm-up: first-call costs of torch
    learn_steps_per_s(builders["cartpole"](), 2048)
    runs: dict[str, list[float]] = {kind: [] for kind in builders}
    for round_ in range(args.rounds):
        order = ("native", "dummy", "cartpole") if round_ % 2 == 0 else ("cartpole", "dummy", "native")
        for kind in order:
            runs[kind].append(learn_steps_per_s(builders[kind](), args.steps))
    native, dummy, cartpole = max(runs["native"]), max(runs["dummy"]), max(runs["cartpole"])
    paired = sorted(n / c for n, c in zip(runs["native"], runs["cartpole"]))
    shares = {kind: shares_per_step(time_shares(builders[kind](), args.steps)) for kind in ("native", "cartpole")}
    report = {
        "steps": args.steps, "envs": args.envs, "extractor": args.extractor, "torch_threads": args.threads,
        "native_steps_per_s": round(native, 1), "dummy_vec_env_steps_per_s": round(dummy, 1),
        "ratio": round(native / dummy, 3), "cartpole_ppo_steps_per_s": round(cartpole, 1),
        "native_to_cartpole_ratio": round(native / cartpole, 3),
        "median_paired_ratio": round(paired[len(paired) // 2], 3),
        "env_only_native_steps_per_s": round(env_native, 1), "env_only_dummy_steps_per_s": round(env_dummy, 1),
        "env_only_ratio": round(env_native / env_dummy, 3), "runs": runs,
        "us_per_step": {kind: {part: round(v, 1) for part, v in d.items()} for kind, d in shares.items()},
        "load_before": load_before, "load_after": os.getloadavg(),
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"load average before {load_before[0]:.2f}, after {report['load_after'][0]:.2f}")
    print(f"MaskablePPO ({args.extractor} extractor, {args.envs} copies, {args.steps} steps, "
          f"{args.threads} torch threads):")
    print(f"  native vector adapter: {native:10.1f} env-steps/s")
    print(f"  DummyVecEnv of scalars: {dummy:9.1f} env-steps/s")
    print(f"  ratio: {native / dummy:.2f}x   (each run: {runs})")
    print(f"SB3 PPO on CartPole-v1, same settings: {cartpole:8.1f} env-steps/s; native MaskablePPO / it: "
          f"{native / cartpole:.2f}x (best runs), {report['median_paired_ratio']:.2f}x (median of each round's)")
    print("where the time goes, microseconds per environment step (one timed learn each):")
    print(f"  {'':<48}{'MaskablePPO':>12}{'CartPole':>12}")
    for part in SHARE_PARTS:
        print(f"  {part:<48}{shares['native'][part]:12.1f}{shares['cartpole'][part]:12.1f}")
    print(f"environments alone, random allowed actions ({args.envs} copies, {args.steps} steps):")
    print(f"  native vector adapter: {env_native:10.1f} env-steps/s")
    print(f"  DummyVecEnv of scalars: {env_dummy:9.1f} env-steps/s")
    print(f"  ratio: {env_native / env_dummy:.2f}x")


if __name__ == "__main__":
    main()
