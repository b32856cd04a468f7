"""Stable-Baselines3 environments over the native vector environment.

:class:`NativeVecEnv` is an SB3 :class:`~stable_baselines3.common.vec_env.VecEnv` whose
``step`` is one call into the C core for all copies
(:class:`~mpsched.envs.vector.MultipathDeadlineVectorEnv`), instead of one Python
environment per copy. Each copy draws its episodes, in turn, from a pool of
``(scenario, seed)`` pairs (:class:`~mpsched.envs.pool.EpisodePool`).

Action masks (:func:`refine_masks`): the environment's (slots holding a block, and WAIT),
less WAIT where it would leave the whole connection idle with a block to send, and with
the model's :class:`MaskRules` less the slots whose block is past its deadline (a packet
of such a block can no longer count, docs/model.md section 4, so a learned scheduler
never needs it) and every send while the deciding path's flight is at its cap.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env import VecEnv

from ..envs.env import PATH_FEATURES, SLOT_FEATURES, MultipathDeadlineEnv
from ..envs.episode import build_episode
from ..envs.pool import EpisodePool
from ..envs.scenario import Scenario
from ..envs.vector import MultipathDeadlineVectorEnv

__all__ = ["DEFAULT_MASK_RULES", "MaskRules", "NativeVecEnv", "PoolEnv", "make_pool_env", "refine_masks"]

_SLOT_BASE = len(SLOT_FEATURES)
_TIME_TO_DEADLINE = SLOT_FEATURES.index("time_to_deadline_s")
_PATH_WIDTH = len(PATH_FEATURES)
_SRTT = PATH_FEATURES.index("srtt_s")
_INFLIGHT = PATH_FEATURES.index("inflight_packets")
_DELIVERY_RATE = PATH_FEATURES.index("delivery_rate_mbps")
_CAN_SEND = PATH_FEATURES.index("can_send")
_FLIGHT_BDP = PATH_FEATURES.index("flight_bdp")
_REMAINING = SLOT_FEATURES.index("remaining_packets")
PACKET_MBIT = 1448 * 8 / 1e6
"""A packet of the observation's counts in Mbit: a full segment of the default MSS, 1448
bytes (what turns packets to send and rates in Mbit/s into seconds)."""


@dataclass(frozen=True)
class MaskRules:
    """What an agent's masks refuse beyond the environment's (:func:`refine_masks`).

    Attributes
    ----------
    expired : bool
        Refuse the slots whose block is past its deadline.
    hold_gain : float
        Refuse every send while the deciding path has at least two packets and at least
        ``hold_gain`` bandwidth-delay products in flight (the observation's ``flight_bdp``);
        0 never refuses. This is the in-flight cap of the held DAMS family (docs/model.md
        7.16) with the smoothed delivery rate: the network then chooses which block, or
        WAIT, only where the cap lets the path send.
    reachable : bool
        Refuse the blocks that cannot arrive by their deadline at the sender's own
        estimates. A block whose time to deadline is at most the deciding path's one-way
        delay (half its smoothed RTT, as DAMS estimates it, [dams] Sec. III-A) is refused
        outright: its next packet would arrive late. While some block could still be
        completed in time, a block is also refused when its packets still to send need
        longer than its time to deadline less that delay at the paths' summed delivery
        rates (packets taken as :data:`PACKET_MBIT`); when none could, or before the first
        rate sample, this second test refuses nothing, so a low estimate never idles the
        connection. Under overload this keeps a sender from spending the paths on a
        block that will be late and making the next one late too, the domino effect of
        earliest-deadline-first.
    """

    expired: bool = True
    hold_gain: float = 0.0
    reachable: bool = False

    def __post_init__(self) -> None:
        if not (isinstance(self.hold_gain, (int, float)) and math.isfinite(self.hold_gain)
                and 0.0 <= self.hold_gain <= 1e6):
            raise ValueError(f"hold_gain: got {self.hold_gain!r}; expected a number in [0, 1e6]")

    @classmethod
    def of(cls, settings: Mapping[str, Any]) -> MaskRules:
        """The rules of hyperparameters or of a model's agent.json: ``mask_expired``,
        ``hold_gain`` (0 when absent) and ``mask_reachable`` (false when absent)."""
        return cls(bool(settings["mask_expired"]), float(settings.get("hold_gain", 0.0)),
                   bool(settings.get("mask_reachable", False)))


DEFAULT_MASK_RULES = MaskRules()
"""Expired slots refused, no cap."""


def refine_masks(masks: np.ndarray, observations: np.ndarray, num_slots: int, max_paths: int,
                 rules: MaskRules) -> np.ndarray:
    """The environment's masks less what ``rules`` refuse, and less WAIT where it would
    leave the connection idle (in place).

    WAIT idles the connection when a slot may be sent, no path has a packet in flight
    and no path after the deciding one can send (the decision round asks paths in index
    order, docs/model.md section 9): nothing would ask again before the next block
    arrives or a timer fires. With ``rules.reachable`` a later path counts only if some
    block can still arrive in time on it.
    """
    K, P = num_slots, max_paths
    width = _SLOT_BASE + P
    start = K * width
    paths = observations[..., start: start + _PATH_WIDTH * P].reshape(observations.shape[:-1] + (P, _PATH_WIDTH))
    deciding = observations[..., start + _PATH_WIDTH * P:]
    time_to_deadline = observations[..., _TIME_TO_DEADLINE: K * width: width]
    if rules.expired:
        masks[..., :K] &= time_to_deadline > 0
    later = np.cumsum(deciding, axis=-1) - deciding > 0  # the paths after the deciding one
    later_sends = (paths[..., _CAN_SEND] > 0) & later
    if rules.reachable:
        half_rtt = paths[..., _SRTT] * 0.5  # each path's one-way delay, as DAMS estimates it
        # a later path relieves this one of sending only if some block can reach in time on it
        later_sends &= (masks[..., None, :K] & (time_to_deadline[..., None, :] > half_rtt[..., None])).any(axis=-1)
        one_way_delay = (half_rtt * deciding).sum(-1)[..., None]
        masks[..., :K] &= time_to_deadline > one_way_delay
        rate_mbps = paths[..., _DELIVERY_RATE].sum(-1)
        sending_s = (observations[..., _REMAINING: K * width: width] * PACKET_MBIT
                     / np.maximum(rate_mbps, 1e-9)[..., None])
        in_time = masks[..., :K] & (time_to_deadline > one_way_delay + sending_s)
        some = (in_time.any(-1) & (rate_mbps > 0))[..., None]
        masks[..., :K] = np.where(some, in_time, masks[..., :K])
    idle = (paths[..., _INFLIGHT].sum(axis=-1) == 0) & ~later_sends.any(axis=-1) & masks[..., :K].any(axis=-1)
    masks[..., K] &= ~idle
    if rules.hold_gain > 0.0:
        here = (paths * deciding[..., None]).sum(axis=-2)
        held = (here[..., _INFLIGHT] >= 2.0) & (here[..., _FLIGHT_BDP] >= rules.hold_gain)
        masks[..., :K] &= ~held[..., None]
    return masks


class _PoolVectorEnv(MultipathDeadlineVectorEnv):
    """The native vector environment with each new episode drawn from a pool."""

    def __init__(self, num_envs: int, pool: EpisodePool, num_slots: int, max_paths: int, seed: int,
                 sequential: bool) -> None:
        super().__init__(num_envs, list(pool.scenarios), num_slots=num_slots, max_paths=max_paths, copy=False)
        self.pool = pool
        self.pool_rng = np.random.default_rng(seed)
        self.sequential = sequential
        self._next = 0

    def _new_sim(self, i: int, seed: int | None) -> Any:
        if self.sequential:
            episodes = self.pool.episodes
            scenario, episode_seed = episodes[self._next % len(episodes)]
            self._next += 1
        else:
            scenario, episode_seed = self.pool.draw(self.pool_rng)
        self.scenarios[i] = scenario
        return build_episode(scenario, episode_seed).make_sim()


class NativeVecEnv(VecEnv):
    """SB3 vector environment stepping every copy in one native call (module docstring).

    Parameters
    ----------
    pool : EpisodePool
        Episodes the copies draw from.
    num_envs : int
        Copies.
    num_slots : int
        K, block slots in the observation.
    max_paths : int, optional
        Pmax (default: the pool's largest number of paths).
    seed : int
        Seed of the draws from the pool.
    rules : MaskRules
        What the masks refuse beyond the environment's.
    sequential : bool
        Take the pool's episodes in order instead of drawing them (evaluation).
    """

    render_mode = None

    def __init__(self, pool: EpisodePool, num_envs: int = 8, num_slots: int = 16, max_paths: int | None = None,
                 seed: int = 0, rules: MaskRules = DEFAULT_MASK_RULES, sequential: bool = False) -> None:
        self.num_slots = int(num_slots)
        self.max_paths = int(max_paths or pool.max_paths)
        self.rules = rules
        self.venv = _PoolVectorEnv(num_envs, pool, self.num_slots, self.max_paths, seed, sequential)
        super().__init__(num_envs, self.venv.single_observation_space, self.venv.single_action_space)
        self._actions = np.zeros(num_envs, dtype=np.int64)
        self._seed = seed

    def reset(self) -> np.ndarray:
        obs, _ = self.venv.reset(seed=self._seed)
        return obs.copy()

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions, dtype=np.int64).reshape(self.num_envs)

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        obs, rewards, terminated, _, info = self.venv.step(self._actions)
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if "final_obs" in info:
            for i in np.flatnonzero(info["_final_obs"]):
                infos[i]["terminal_observation"] = info["final_obs"][i]
                infos[i]["TimeLimit.truncated"] = False
        return obs.copy(), rewards.astype(np.float32), terminated.copy(), infos

    def action_masks(self) -> np.ndarray:
        """Valid actions per copy, shape (num_envs, K + 1)."""
        return refine_masks(self.venv.action_masks(), self.venv._obs, self.num_slots, self.max_paths, self.rules)

    def close(self) -> None:
        self.venv.close()

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        return [getattr(self, attr_name)] * len(self._indices(indices))

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        setattr(self, attr_name, value)

    def env_method(self, method_name: str, *method_args: Any, indices: Any = None, **method_kwargs: Any) -> list[Any]:
        if method_name == "action_masks":
            return list(self.action_masks()[self._indices(indices)])
        raise AttributeError(f"NativeVecEnv has no per-copy method {method_name!r}")

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        return [False] * len(self._indices(indices))

    def seed(self, seed: int | None = None) -> list[int | None]:
        if seed is not None:
            self._seed = int(seed)
            self.venv.pool_rng = np.random.default_rng(seed)
        return [seed] * self.num_envs

    def _indices(self, indices: Any) -> list[int]:
        if indices is None:
            return list(range(self.num_envs))
        if isinstance(indices, int):
            return [indices]
        return list(indices)


class PoolEnv(gym.Wrapper):
    """One scalar :class:`MultipathDeadlineEnv` drawing its episodes from a pool (for
    SB3's DummyVecEnv, the comparison of :class:`NativeVecEnv`), with the same masks."""

    env: MultipathDeadlineEnv

    def __init__(self, pool: EpisodePool, num_slots: int = 16, max_paths: int | None = None, seed: int = 0,
                 rules: MaskRules = DEFAULT_MASK_RULES) -> None:
        self.pool = pool
        self.num_slots = int(num_slots)
        self.max_paths = int(max_paths or pool.max_paths)
        self.rules = rules
        self.pool_rng = np.random.default_rng(seed)
        self._envs: dict[int, MultipathDeadlineEnv] = {}
        super().__init__(self._env_for(pool.scenarios[0]))
        self._obs: np.ndarray | None = None

    def _env_for(self, scenario: Scenario) -> MultipathDeadlineEnv:
        key = id(scenario)
        if key not in self._envs:
            self._envs[key] = MultipathDeadlineEnv(scenario, num_slots=self.num_slots, max_paths=self.max_paths)
        return self._envs[key]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        if seed is not None:
            self.pool_rng = np.random.default_rng(seed)
        scenario, episode_seed = self.pool.draw(self.pool_rng)
        self.env = self._env_for(scenario)
        self._obs, info = self.env.reset(seed=episode_seed)
        return self._obs, info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        self._obs, reward, terminated, truncated, info = self.env.step(action)
        return self._obs, reward, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        masks = self.env.action_masks()
        if self._obs is not None:
            refine_masks(masks, self._obs, self.num_slots, self.max_paths, self.rules)
        return masks


def make_pool_env(pool: EpisodePool, num_slots: int, max_paths: int | None, seed: int,
                  rules: MaskRules) -> Callable[[], PoolEnv]:
    """A factory of :class:`PoolEnv` for DummyVecEnv."""
    return lambda: PoolEnv(pool, num_slots, max_paths, seed, rules)

