"""A native batched vector environment: N episodes stepped in one C call.

Observations, masks, rewards and termination flags are written by the core straight
into numpy buffers allocated once (the EnvPool / PufferLib pattern). Sub-environments
reset in the step their episode ends (``AutoresetMode.SAME_STEP``): the returned
observation is the first one of the new episode and ``info["final_obs"]`` holds the last
one of the old. Given the same seeds and actions it returns exactly what N
:class:`~mpsched.envs.env.MultipathDeadlineEnv` would.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from . import _core
from .env import _MAX_SEED, _check_kwargs, check_seed, observation_space
from .episode import build_episode
from .errors import ActionError, ArgumentError, MpschedError
from .scenario import Scenario
from .scenarios import DEFAULT, resolve

__all__ = ["MultipathDeadlineVectorEnv"]

ScenarioLike = Scenario | str | Path | Mapping[str, Any]


MAX_NUM_ENVS = 4096
"""Most sub-environments of one vector environment (each holds its episode's state, about
0.4 MiB for the default scenario, and takes about 2.5 ms to reset)."""


class MultipathDeadlineVectorEnv(VectorEnv):
    """N copies of ``mpsched/MultipathDeadline-v0`` stepped natively.

    Parameters
    ----------
    num_envs : int
        Number of sub-environments.
    scenario : scenario or sequence of scenarios
        One scenario for all, or a sequence assigned to sub-environments in turn (all
        must fit in ``max_paths``).
    num_slots, max_paths, invalid_action
        As for :class:`~mpsched.envs.env.MultipathDeadlineEnv`.
    copy : bool
        Return observations no later step overwrites (default: each step writes a fresh
        array) or the same buffer every time; rewards and flags are copies either way.
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(self, num_envs: int = 1, scenario: ScenarioLike | Sequence[ScenarioLike] = DEFAULT,
                 num_slots: int = 16, max_paths: int | None = None, invalid_action: str = "wait",
                 copy: bool = True, **kwargs: Any) -> None:
        if kwargs.pop("copies", False):
            raise ArgumentError("copies", True, "False: the native vector env has no copy actions (the environment "
                                "itself has: MultipathDeadlineEnv(copies=True), or make_vec with "
                                "vectorization_mode='sync')")
        if kwargs:
            raise TypeError(f"unexpected arguments: {', '.join(sorted(kwargs))}")
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) \
                or not 1 <= num_envs <= MAX_NUM_ENVS:
            raise ArgumentError("num_envs", num_envs, f"an integer in [1, {MAX_NUM_ENVS}]")
        many = isinstance(scenario, Sequence) and not isinstance(scenario, (str, bytes))
        pool = ([resolve(s) for s in cast(Sequence[ScenarioLike], scenario)] if many
                else [resolve(cast(ScenarioLike, scenario))])
        if not pool:
            raise ArgumentError("scenario", scenario, "a scenario or a non-empty sequence of scenarios")
        if max_paths is None:
            max_paths = max(len(s.paths) for s in pool)
        for s in pool:
            self.num_slots, self.max_paths = _check_kwargs(s, num_slots, max_paths, invalid_action)
        self.num_envs = int(num_envs)
        self.scenarios = [pool[i % len(pool)] for i in range(self.num_envs)]
        self.invalid_as_wait = invalid_action == "wait"
        self.copy = bool(copy)
        dim = _core.obs_dim(self.num_slots, self.max_paths)
        self.single_observation_space = observation_space(dim)
        self.single_action_space = spaces.Discrete(self.num_slots + 1)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        n, K = self.num_envs, self.num_slots
        self._obs = np.zeros((n, dim), dtype=np.float32)
        self._masks = np.zeros((n, K + 1), dtype=np.bool_)
        self._slots = np.full((n, K), -1, dtype=np.int32)
        self._rewards = np.zeros(n, dtype=np.float64)
        self._terminations = np.zeros(n, dtype=np.bool_)
        self._truncations = np.zeros(n, dtype=np.bool_)
        self._env_rngs: list[np.random.Generator | None] = [None] * n
        self._batch: _core.Batch | None = None

    def _new_sim(self, i: int, seed: int | None) -> _core.Sim:
        """Episode of sub-environment i, seeded exactly as the scalar environment's reset."""
        if seed is not None:
            self._env_rngs[i] = seeding.np_random(seed)[0]
            episode_seed = int(seed)
        else:
            rng = self._env_rngs[i]
            if rng is None:
                rng = self._env_rngs[i] = seeding.np_random()[0]
            episode_seed = int(rng.integers(_MAX_SEED))
        return build_episode(self.scenarios[i], episode_seed).make_sim()

    def reset(self, *, seed: int | Sequence[int] | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset every sub-environment; ``seed=s`` seeds sub-environment ``i`` with ``s + i``."""
        if seed is None:
            seeds: list[int | None] = [None] * self.num_envs
        elif isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            check_seed(seed)
            check_seed(seed + self.num_envs - 1, "seed + num_envs - 1")
            super().reset(seed=int(seed))
            seeds = [int(seed) + i for i in range(self.num_envs)]
        else:
            if not isinstance(seed, Sequence) or isinstance(seed, (str, bytes)) or len(seed) != self.num_envs:
                raise ArgumentError("seed", seed, f"None, an integer or a sequence of {self.num_envs} seeds")
            for i, s in enumerate(seed):
                check_seed(s, f"seed[{i}]")
            seeds = list(seed)
        sims = [self._new_sim(i, s) for i, s in enumerate(seeds)]
        if self.copy:
            self._obs = np.empty_like(self._obs)
        self._batch = _core.Batch(sims, self.num_slots, self.max_paths, self._obs, self._masks, self._slots,
                                  self._rewards, self._terminations)
        for i, sim in enumerate(sims):
            self._batch.set(i, sim)
        return self._obs, {}

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        if self._batch is None:
            raise RuntimeError("call reset() before step()")
        a = np.asarray(actions)
        if a.shape != (self.num_envs,) or not np.issubdtype(a.dtype, np.integer):
            raise ActionError(
                f"actions: expected an integer array of shape ({self.num_envs},), got dtype {a.dtype} shape {a.shape}"
            )
        # observations are written once, into the array returned (copy) or the one buffer
        obs = np.empty_like(self._obs) if self.copy else self._obs
        try:
            ended = self._batch.step(np.ascontiguousarray(a, dtype=np.int64), self.invalid_as_wait, obs)
        except MpschedError:
            self._obs = obs  # the batch took obs before an episode failed
            raise
        except ValueError as exc:
            raise ActionError(str(exc)) from None
        self._obs = obs
        rewards = self._rewards.copy()
        terminations = self._terminations.copy()
        infos: dict[str, Any] = {}
        if ended:
            for i in np.flatnonzero(terminations):
                infos = self._add_info(infos, {"final_obs": self._obs[i].copy(), "final_info": {}}, int(i))
                self._batch.set(int(i), self._new_sim(int(i), None))
        return obs, rewards, terminations, self._truncations.copy(), infos

    def action_masks(self) -> np.ndarray:
        """Valid actions per sub-environment, shape (num_envs, num_slots + 1)."""
        return self._masks.copy()
