"""Training throughput: MaskablePPO environment steps per second through the native vector
adapter (:class:`mpsched.agents.vec_env.NativeVecEnv`) against SB3's DummyVecEnv of scalar
environments (:class:`mpsched.agents.vec_env.PoolEnv`), in one run.

Both learn with the same hyperparameters (the maskable_ppo preset), the same copies and
the same episodes (the agents suite's train split); the figure is environment steps over
the wall time of ``learn`` (rollouts and updates), each measured twice in alternating
order after a warm-up, best of the two kept. Beside them, the reference a reader knows:
SB3's PPO on ``CartPole-v1`` (its MLP policy, a DummyVecEnv of as many copies, the same PPO
settings), measured in the same alternation. Also the environments alone: steps per second
with uniformly random allowed actions (masks read as MaskablePPO reads them). Prints the
load average before and after, the figures and their ratios.

    python benchmarks/train_throughput.py [--steps 40960] [--envs 16] [--extractor set] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
import torch
from mpsched.agents.model import policy_setup
from mpsched.agents.train import _algo_kwargs, load_hyperparams
from mpsched.agents.vec_env import NativeVecEnv, make_pool_env
from mpsched.experiments.suite import load_suite
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.utils import get_action_masks
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecMonitor


def steps_per_second(env: VecEnv, steps: int, extractor: str, seed: int) -> float:
    """Environment steps per second of MaskablePPO's ``learn`` on this vector env."""
    hp = load_hyperparams("maskable_ppo", "agents", [f"extractor={extractor}"])
    policy, policy_kwargs = policy_setup("maskable_ppo", hp)
    model = MaskablePPO(policy, VecMonitor(env), policy_kwargs=policy_kwargs, seed=seed, device="cpu",
                        **_algo_kwargs(hp))
    start = time.perf_counter()
    model.learn(total_timesteps=steps)
    return model.num_timesteps / (time.perf_counter() - start)


def cartpole_steps_per_second(envs: int, steps: int, seed: int) -> float:
    """Environment steps per second of SB3's PPO ``learn`` on CartPole-v1 with the
    maskable_ppo preset's PPO settings."""
    hp = load_hyperparams("maskable_ppo", "agents")
    model = PPO("MlpPolicy", make_vec_env("CartPole-v1", n_envs=envs, seed=seed), seed=seed, device="cpu",
                **_algo_kwargs(hp))
    start = time.perf_counter()
    model.learn(total_timesteps=steps)
    return model.num_timesteps / (time.perf_counter() - start)


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
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    pool = load_suite("agents").pool("train")
    load_before = os.getloadavg()

    def native_env() -> VecEnv:
        return NativeVecEnv(pool, args.envs, 16, seed=0)

    def dummy_env() -> VecEnv:
        return DummyVecEnv([make_pool_env(pool, 16, None, seed, True) for seed in range(args.envs)])

    env_native = env_steps_per_second(native_env(), args.steps, 0)
    env_dummy = env_steps_per_second(dummy_env(), args.steps, 0)
    steps_per_second(native_env(), 2048, args.extractor, 0)  # warm-up: first-call costs of torch
    cartpole_steps_per_second(args.envs, 2048, 0)
    runs: dict[str, list[float]] = {"native": [], "dummy": [], "cartpole": []}
    for order in (("native", "dummy", "cartpole"), ("cartpole", "dummy", "native")):
        for kind in order:
            if kind == "cartpole":
                runs[kind].append(cartpole_steps_per_second(args.envs, args.steps, 0))
                continue
            env = native_env() if kind == "native" else dummy_env()
            runs[kind].append(steps_per_second(env, args.steps, args.extractor, 0))
    native, dummy, cartpole = max(runs["native"]), max(runs["dummy"]), max(runs["cartpole"])
    report = {
        "steps": args.steps, "envs": args.envs, "extractor": args.extractor, "torch_threads": args.threads,
        "native_steps_per_s": round(native, 1), "dummy_vec_env_steps_per_s": round(dummy, 1),
        "ratio": round(native / dummy, 3), "cartpole_ppo_steps_per_s": round(cartpole, 1),
        "native_to_cartpole_ratio": round(native / cartpole, 3), "env_only_native_steps_per_s": round(env_native, 1),
        "env_only_dummy_steps_per_s": round(env_dummy, 1), "env_only_ratio": round(env_native / env_dummy, 3),
        "runs": runs, "load_before": load_before, "load_after": os.getloadavg(),
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"load average before {load_before[0]:.2f}, after {report['load_after'][0]:.2f}")
    print(f"MaskablePPO ({args.extractor} extractor, {args.envs} copies, {args.steps} steps):")
    print(f"  native vector adapter: {native:10.1f} env-steps/s")
    print(f"  DummyVecEnv of scalars: {dummy:9.1f} env-steps/s")
    print(f"  ratio: {native / dummy:.2f}x   (each run: {runs})")
    print(f"SB3 PPO on CartPole-v1, same settings: {cartpole:8.1f} env-steps/s; "
          f"native MaskablePPO / it: {native / cartpole:.2f}x")
    print(f"environments alone, random allowed actions ({args.envs} copies, {args.steps} steps):")
    print(f"  native vector adapter: {env_native:10.1f} env-steps/s")
    print(f"  DummyVecEnv of scalars: {env_dummy:9.1f} env-steps/s")
    print(f"  ratio: {env_native / env_dummy:.2f}x")


if __name__ == "__main__":
    main()
