"""Training throughput: MaskablePPO through the native vector adapter beside SB3's PPO on
``CartPole-v1`` (the rows of ``mpsched bench`` and ``benchmarks/train_throughput.py``).

Both learn with the same PPO settings, the ``maskable_ppo`` preset's (16 copies, 256
steps per rollout, minibatches of 512, 4 epochs): MaskablePPO with the preset's policy
(the slot-set extractor) on episodes of the ``agents`` suite's train split, PPO with SB3's
MLP policy on a DummyVecEnv of CartPole copies. The figure is environment steps over the
wall time of ``learn`` (collecting and updates); the two are measured in alternating
order, several rounds, and reported as the best of each and as the median of each
round's own ratio (the machine's speed drifts less within a round than across rounds).

:func:`time_shares` says where a ``learn`` spends its time: stepping the environments
(simulator, observations and masks), the policy's forward pass while collecting, the rest
of collecting (SB3's buffers and callbacks), and in the updates the forward pass, the
backward pass and the rest (optimizer, losses, gradient clipping, minibatches).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

__all__ = ["maskable_model", "cartpole_model", "learn_steps_per_s", "time_shares", "shares_per_step",
           "training_comparison", "format_training"]

SHARE_PARTS = ("environment", "collect: forward", "collect: rest", "update: forward", "update: backward",
               "update: rest (optimizer, losses, minibatches)", "total")
"""The parts of :func:`shares_per_step`, in the order they are printed."""


def maskable_model(envs: int = 16, extractor: str = "set", seed: int = 0, env: Any = None) -> Any:
    """MaskablePPO with the ``maskable_ppo`` preset on ``env``, by default ``envs`` native
    copies (:class:`~mpsched.agents.vec_env.NativeVecEnv`) of the ``agents`` suite's train
    split."""
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import VecMonitor

    from ..agents.model import policy_setup
    from ..agents.train import _algo_kwargs, load_hyperparams
    from ..agents.vec_env import NativeVecEnv
    from .suite import load_suite

    hp = load_hyperparams("maskable_ppo", "agents", [f"extractor={extractor}"])
    policy, policy_kwargs = policy_setup("maskable_ppo", hp)
    if env is None:
        env = NativeVecEnv(load_suite("agents").pool("train"), envs, int(hp["num_slots"]), seed=seed)
    return MaskablePPO(policy, VecMonitor(env), policy_kwargs=policy_kwargs, seed=seed, device="cpu",
                       **_algo_kwargs(hp))


def cartpole_model(envs: int = 16, seed: int = 0) -> Any:
    """SB3's PPO, MLP policy, on a DummyVecEnv of ``envs`` CartPole-v1 copies with the
    ``maskable_ppo`` preset's PPO settings."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    from ..agents.train import _algo_kwargs, load_hyperparams

    hp = load_hyperparams("maskable_ppo", "agents")
    return PPO("MlpPolicy", make_vec_env("CartPole-v1", n_envs=envs, seed=seed), seed=seed, device="cpu",
               **_algo_kwargs(hp))


def learn_steps_per_s(model: Any, steps: int) -> float:
    """Environment steps per second of ``model.learn(steps)``."""
    start = time.perf_counter()
    model.learn(total_timesteps=steps)
    return float(model.num_timesteps) / (time.perf_counter() - start)


def time_shares(model: Any, steps: int) -> dict[str, float]:
    """Seconds of one ``learn`` of ``steps`` in each part (module docstring), by timing the
    methods SB3 calls: the vector env's ``step`` and ``env_method`` (the masks), the
    policy's ``forward`` (collecting) and ``evaluate_actions`` (updates),
    ``collect_rollouts``, ``train`` and ``Tensor.backward``."""
    import torch

    spent: dict[str, float] = {}

    def timed(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                spent[name] = spent.get(name, 0.0) + time.perf_counter() - start
        return call

    model.env.step = timed("environment", model.env.step)
    model.env.env_method = timed("environment", model.env.env_method)
    model.policy.forward = timed("collect: forward", model.policy.forward)
    model.policy.evaluate_actions = timed("update: forward", model.policy.evaluate_actions)
    model.collect_rollouts = timed("collect", model.collect_rollouts)
    model.train = timed("update", model.train)
    backward = torch.Tensor.backward
    torch.Tensor.backward = timed("update: backward", backward)  # type: ignore[method-assign]
    try:
        model.learn(total_timesteps=steps)
    finally:
        torch.Tensor.backward = backward  # type: ignore[method-assign]
    spent["steps"] = float(model.num_timesteps)
    return spent


def shares_per_step(spent: dict[str, float]) -> dict[str, float]:
    """Microseconds per environment step of each of :data:`SHARE_PARTS`; the rests by
    difference."""
    us = {name: seconds / spent["steps"] * 1e6 for name, seconds in spent.items() if name != "steps"}
    environment, collect_forward = us.get("environment", 0.0), us.get("collect: forward", 0.0)
    update_forward, update_backward = us.get("update: forward", 0.0), us.get("update: backward", 0.0)
    return dict(zip(SHARE_PARTS, (
        environment, collect_forward, us["collect"] - environment - collect_forward,
        update_forward, update_backward, us["update"] - update_forward - update_backward,
        us["collect"] + us["update"])))


def training_comparison(steps: int = 16384, rounds: int = 3, envs: int = 16, extractor: str = "set",
                        seed: int = 0) -> dict[str, Any]:
    """MaskablePPO (native) and CartPole PPO steps per second, alternated ``rounds``
    times after a warm-up, and one timed ``learn`` of each for :func:`time_shares`; torch
    runs with the preset's ``torch_threads``, as ``mpsched train`` does."""
    import torch

    from ..agents.train import load_hyperparams

    threads = torch.get_num_threads()
    torch.set_num_threads(int(load_hyperparams("maskable_ppo", "agents").get("torch_threads", 2)))
    try:
        return _compare(steps, rounds, envs, extractor, seed)
    finally:
        torch.set_num_threads(threads)


def _compare(steps: int, rounds: int, envs: int, extractor: str, seed: int) -> dict[str, Any]:
    learn_steps_per_s(maskable_model(envs, extractor, seed), 2048)  # first-call costs of torch
    learn_steps_per_s(cartpole_model(envs, seed), 2048)
    runs: dict[str, list[float]] = {"native": [], "cartpole": []}
    for round_ in range(rounds):
        for kind in (("native", "cartpole") if round_ % 2 == 0 else ("cartpole", "native")):
            model = maskable_model(envs, extractor, seed) if kind == "native" else cartpole_model(envs, seed)
            runs[kind].append(learn_steps_per_s(model, steps))
    paired = sorted(n / c for n, c in zip(runs["native"], runs["cartpole"]))
    return {
        "training_steps_per_s": max(runs["native"]),
        "training_cartpole_steps_per_s": max(runs["cartpole"]),
        "training_to_cartpole_ratio": max(runs["native"]) / max(runs["cartpole"]),
        "training_median_paired_ratio": paired[len(paired) // 2],
        "training_runs": runs,
        "training_us_per_step": shares_per_step(time_shares(maskable_model(envs, extractor, seed), steps)),
        "training_cartpole_us_per_step": shares_per_step(time_shares(cartpole_model(envs, seed), steps)),
        "training_steps": steps,
        "training_envs": envs,
        "training_torch_threads": torch_threads(),
    }


def torch_threads() -> int:
    import torch

    return int(torch.get_num_threads())


def format_training(r: dict[str, Any]) -> list[str]:
    """The lines of :func:`training_comparison`'s figures in ``mpsched bench``."""
    lines = [
        f"training, {r['training_envs']} copies, {r['training_steps']} steps per learn, "
        f"{r['training_torch_threads']} torch threads, best of {len(r['training_runs']['native'])} alternated:",
        f"{'  MaskablePPO, native adapter [env-steps/s]':<52}{r['training_steps_per_s']:>16,.0f}",
        f"{'  SB3 PPO on CartPole-v1, same settings [env-steps/s]':<52}{r['training_cartpole_steps_per_s']:>16,.0f}",
        f"{'  ratio MaskablePPO / CartPole (best; median paired)':<52}{r['training_to_cartpole_ratio']:>16.3f}"
        f"  {r['training_median_paired_ratio']:>8.3f}",
        f"{'  where the time goes [us per env-step]':<52}{'MaskablePPO':>16}  {'CartPole':>8}",
    ]
    for part in SHARE_PARTS:
        lines.append(f"{f'    {part}':<52}{r['training_us_per_step'][part]:>16.1f}"
                     f"  {r['training_cartpole_us_per_step'][part]:>8.1f}")
    return lines
