"""Scoring a trained model on a suite's test split: :func:`evaluate` (``mpsched evaluate``).

The model's episodes run together: every episode's simulator writes its observation into
one row of a shared buffer, one network call decides for all of them, and each episode
then advances to its next decision (the environment's ``obs_step``). The decisions are
those of :class:`~mpsched.agents.model.AgentPolicy` in :func:`mpsched.envs.simulate`,
and each episode gives the same :class:`~mpsched.envs.EpisodeResult`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..envs import _core
from ..envs.episode import build_episode
from ..envs.pool import EpisodePool
from ..envs.results import EpisodeResult
from ..envs.scenario import Scenario
from ..envs.simulate import simulate
from .model import AgentPolicy, load

__all__ = ["Evaluation", "evaluate", "run_episodes"]


def run_episodes(policy: AgentPolicy, episodes: Sequence[tuple[Scenario, int]], drop_expired: bool = False,
                 progress: Callable[[int], None] | None = None) -> list[EpisodeResult]:
    """Episodes of a model, stepped together (module docstring), in the given order."""
    K, P = policy.num_slots, policy.max_paths
    n = len(episodes)
    dim = _core.obs_dim(K, P)
    obs = np.zeros((n, dim), np.float32)
    masks = np.zeros((n, K + 1), np.bool_)
    slots = np.full((n, K), -1, np.int32)
    built = [build_episode(sc, seed) for sc, seed in episodes]
    sims = [ep.make_sim(drop_expired=drop_expired) for ep in built]
    running = np.ones(n, dtype=bool)
    start = time.perf_counter()
    for i, sim in enumerate(sims):
        sim.bind_obs(K, P, True, obs[i], masks[i], slots[i])
        running[i] = not sim.obs_step(K)[1]  # no decision is pending: run to the first one
    while running.any():
        live = np.flatnonzero(running)
        actions = policy.act(obs[live], masks[live])
        for i, action in zip(live.tolist(), actions.tolist()):
            if sims[i].obs_step(action)[1]:
                running[i] = False
                if progress is not None:
                    progress(1)
    wall = (time.perf_counter() - start) / max(1, n)
    return [EpisodeResult.from_sim(sim, ep, policy.name, wall) for sim, ep in zip(sims, built)]


@dataclass
class Evaluation:
    """Results of a model (and the baselines beside it) on a suite's split; ``skipped``:
    the scenarios with more paths than the model observes (the model has no episode
    there, the baselines do)."""

    suite: str
    split: str
    results: list[EpisodeResult]
    upper_bounds: dict[tuple[str, int], float]
    skipped: list[str] = field(default_factory=list)
    model: str = ""
    """The model's policy name in ``results`` (``agent:NAME``)."""

    def table(self, metric: str = "weighted_on_time_rate") -> list[dict[str, Any]]:
        """Mean of a metric per scenario and policy (rows: scenarios, then ``mean``), with
        the mean relaxed upper bound when it was computed. The ``mean`` row is over the
        scenarios the model ran (not the skipped ones), for every policy alike."""
        scenarios = list(dict.fromkeys(r.scenario for r in self.results))
        policies = list(dict.fromkeys(r.policy for r in self.results))
        common = [sc for sc in scenarios if sc not in self.skipped]
        rows = []
        for sc in scenarios + ["mean"]:
            members = common if sc == "mean" else [sc]
            row: dict[str, Any] = {"scenario": sc}
            for p in policies:
                vals = [r.summary[metric] for r in self.results if r.policy == p and r.scenario in members]
                row[p] = float(np.mean(vals)) if vals else float("nan")
            if self.upper_bounds:
                ub = [v for (name, _), v in self.upper_bounds.items() if name in members]
                row["upper_bound"] = float(np.mean(ub)) if ub else float("nan")
            rows.append(row)
        return rows


def evaluate(model: str | Path, pool: EpisodePool, baselines: Sequence[str] = (),
             upper_bound: bool = False, progress: Callable[[int], None] | None = None) -> Evaluation:
    """A model's episodes on every scenario and seed of a pool (a suite's split:
    :meth:`mpsched.experiments.suite.Suite.pool`), and optionally other policies' and the
    relaxed upper bound (:func:`mpsched.solvers.solve`), all with the pool's
    ``drop_expired``.

    Parameters
    ----------
    model : str or Path
        A shipped model's name or a model directory.
    pool : EpisodePool
        The episodes (:meth:`EpisodePool.with_seeds` for other seeds).
    baselines : sequence of str
        Policy ids (:mod:`mpsched.envs.registry`) to run on the same episodes.
    upper_bound : bool
        Also solve the relaxed slot model of every episode.
    progress : callable, optional
        Called with 1 per finished episode.
    """
    policy = load(model)
    episodes = [(sc, int(seed)) for sc, seed in pool.episodes]
    drop = pool.drop_expired
    skipped = list(dict.fromkeys(sc.name for sc, _ in episodes if len(sc.paths) > policy.max_paths))
    results = run_episodes(policy, [(sc, seed) for sc, seed in episodes if sc.name not in skipped],
                           drop_expired=drop, progress=progress)
    for name in baselines:
        for sc, seed in episodes:
            results.append(simulate(sc, name, seed=seed, drop_expired=drop))
    bounds: dict[tuple[str, int], float] = {}
    if upper_bound:
        from ..solvers import solve

        for sc, seed in episodes:
            bounds[(sc.name, seed)] = float(solve(sc, model="relaxed", seed=seed).upper_bound)
    return Evaluation(pool.suite, pool.part, results, bounds, skipped, policy.name)
