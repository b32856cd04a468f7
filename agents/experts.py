"""Expert demonstrations for behaviour cloning: DAMS and the offline optimum's replay.

An expert runs an episode as it would in :func:`mpsched.envs.simulate`; at each decision
point the environment's observation is written first (the same vector the agent gets),
the expert decides, and its block is mapped to the slot that shows it (WAIT to K).
Decisions whose block is in no slot (beyond the K most urgent) are not recorded.

- ``dams``: :class:`mpsched.baselines.DAMS`. A single decision of the native twin cannot
  be asked for (the core runs a native policy to the end of the episode), so the Python
  specification decides; it makes the twin's decisions bit for bit
  (tests/test_baselines_twins.py).
- ``optimum``: :class:`mpsched.solvers.Optimum`, the conservative slot model's solution
  replayed with ideal congestion control (:func:`mpsched.solvers.replay.optimum`), on
  the scenario with ideal congestion control.

Experts cancel blocks (DAMS those that cannot make their deadline, the optimum those
outside its schedule); the agent cannot, and does not need to: a cancelled block only
stops being sent, which the agent achieves by not choosing it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..envs import _core, registry
from ..envs.episode import build_episode
from ..envs.policy import WAIT, Observation
from ..envs.pool import EpisodePool
from ..envs.scenario import Scenario
from .vec_env import DEFAULT_MASK_RULES, MaskRules, refine_masks

__all__ = ["EXPERTS", "Demonstrations", "EpisodeRecorder", "collect", "demonstrations", "expert_policy"]

EXPERTS: tuple[str, ...] = ("dams", "optimum")


@dataclass
class Demonstrations:
    """Observations, action masks, expert actions (slot or K for WAIT), and the weighted
    on-time rate of the episodes that ran to their end (for reference)."""

    observations: np.ndarray
    masks: np.ndarray
    actions: np.ndarray
    episodes: int
    weighted_on_time: list[float]

    def __len__(self) -> int:
        return len(self.actions)

    @classmethod
    def concatenate(cls, parts: list[Demonstrations]) -> Demonstrations:
        return cls(np.concatenate([p.observations for p in parts]), np.concatenate([p.masks for p in parts]),
                   np.concatenate([p.actions for p in parts]), sum(p.episodes for p in parts),
                   [x for p in parts for x in p.weighted_on_time])


def expert_policy(expert: str, scenario: Scenario, seed: int) -> tuple[Any, Scenario]:
    """The expert's policy object for one episode and the scenario it runs on."""
    if expert == "dams":
        return registry.make("dams").python(), scenario
    if expert == "optimum":
        from ..solvers import solve
        from ..solvers.replay import Optimum, with_ideal_cc

        plan = solve(scenario, model="conservative", seed=seed, threads=1)
        ideal = with_ideal_cc(scenario)
        return Optimum(plan, build_episode(ideal, seed)), ideal
    raise ValueError(f"expert: got {expert!r}; expected one of {', '.join(EXPERTS)}")


class EpisodeRecorder:
    """The observation buffers of one episode's decisions and what is recorded of them:
    the observation, the mask (refined as :class:`~mpsched.agents.vec_env.NativeVecEnv`
    refines it) and the slot that shows a chosen block."""

    def __init__(self, sim: _core.Sim, num_slots: int, max_paths: int, rules: MaskRules) -> None:
        self.sim, self.num_slots, self.max_paths, self.rules = sim, num_slots, max_paths, rules
        self.dim = _core.obs_dim(num_slots, max_paths)
        self.obs = np.zeros(self.dim, np.float32)
        self.slots = np.full(num_slots, -1, np.int32)
        self._mask_buf = np.zeros(num_slots + 1, np.bool_)
        self.mask = self._mask_buf
        self.observations: list[np.ndarray] = []
        self.masks: list[np.ndarray] = []
        self.actions: list[int] = []

    def observe(self) -> None:
        """Write the pending decision's observation and mask."""
        self.sim.bind_obs(self.num_slots, self.max_paths, True, self.obs, self._mask_buf, self.slots)
        self.mask = refine_masks(self._mask_buf.copy(), self.obs, self.num_slots, self.max_paths, self.rules)

    def record(self, block: int) -> None:
        """Record ``block`` as the action of the current observation (its slot, K for
        WAIT), unless no slot shows it or the mask refuses it."""
        if block == WAIT:
            action = self.num_slots
        else:
            where = np.flatnonzero(self.slots == block)
            action = int(where[0]) if len(where) else -1
        if action >= 0 and self.mask[action]:
            self.observations.append(self.obs.copy())
            self.masks.append(self.mask)
            self.actions.append(action)

    def demonstrations(self, total_weight: float) -> Demonstrations:
        """What was recorded, with the episode's weighted on-time rate if it ran to its end."""
        complete = self.sim.done and total_weight > 0
        return Demonstrations(np.array(self.observations, np.float32).reshape(-1, self.dim),
                              np.array(self.masks, np.bool_).reshape(-1, self.num_slots + 1),
                              np.array(self.actions, np.int64), 1,
                              [self.sim.reward_total / total_weight] if complete else [])


def _episode(expert: str, scenario: Scenario, seed: int, num_slots: int, max_paths: int,
             rules: MaskRules, step_budget: int) -> Demonstrations:
    policy, played = expert_policy(expert, scenario, seed)
    episode = build_episode(played, seed)
    sim = episode.make_sim()
    view = Observation(sim, tuple(p.name for p in played.paths))
    policy.reset(view)
    recorder = EpisodeRecorder(sim, num_slots, max_paths, rules)
    while sim.next_decision() >= 0 and len(recorder.actions) < step_budget:
        recorder.observe()
        block = policy.decide(view)
        recorder.record(block)
        sim.apply(block)
    return recorder.demonstrations(float(np.sum(episode.blocks.weight)))


def demonstrations(expert: str, pool: EpisodePool, steps: int, num_slots: int, max_paths: int, seed: int = 0,
                   rules: MaskRules = DEFAULT_MASK_RULES,
                   progress: Callable[[int], None] | None = None) -> Demonstrations:
    """At least ``steps`` decisions of an expert on episodes drawn from a pool (the last
    episode is cut at the budget).

    Parameters
    ----------
    expert : str
        ``"dams"`` or ``"optimum"``.
    pool : EpisodePool
        Training episodes.
    steps : int
        Decisions to record.
    num_slots, max_paths : int
        The observation's K and Pmax.
    seed : int
        Seed of the draws from the pool.
    rules : MaskRules
        Record the masks as :class:`~mpsched.agents.vec_env.NativeVecEnv` gives them.
    progress : callable, optional
        Called with the number of decisions recorded by each episode.
    """
    if expert not in EXPERTS:
        raise ValueError(f"expert: got {expert!r}; expected one of {', '.join(EXPERTS)}")
    return collect(pool, steps, np.random.default_rng(seed), progress,
                   lambda scenario, episode_seed, budget: _episode(expert, scenario, episode_seed, num_slots,
                                                                   max_paths, rules, budget))


def collect(pool: EpisodePool, steps: int, rng: np.random.Generator, progress: Callable[[int], None] | None,
            run: Callable[[Scenario, int, int], Demonstrations]) -> Demonstrations:
    """At least ``steps`` recorded decisions of ``run(scenario, seed, budget)`` on
    episodes drawn from ``pool`` with ``rng``, the last one cut at the budget left."""
    parts: list[Demonstrations] = []
    recorded = 0
    while recorded < steps:
        scenario, episode_seed = pool.draw(rng)
        part = run(scenario, episode_seed, steps - recorded)
        parts.append(part)
        recorded += len(part)
        if progress is not None:
            progress(len(part))
    return Demonstrations.concatenate(parts)
