"""The Gymnasium environment ``mpsched/MultipathDeadline-v0``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from . import _core
from .episode import build_episode
from .errors import ActionError, ArgumentError, MpschedError
from .scenario import Scenario
from .scenarios import DEFAULT, resolve

__all__ = ["EnvState", "MultipathDeadlineEnv", "PATH_FEATURES", "SLOT_FEATURES", "observation_layout"]


@dataclass(frozen=True, eq=False)
class EnvState:
    """A snapshot of a :class:`MultipathDeadlineEnv` episode (``get_state()``), to return
    to with ``set_state()`` as often as needed.

    Attributes
    ----------
    sim : mpsched.envs._core.Sim
        A clone of the core episode, never stepped itself (``set_state`` steps a clone
        of it).
    done : bool
        Whether the episode had ended.
    episode_seed : int or None
        The seed the episode was drawn from.
    observation, action_mask, slot_blocks : numpy.ndarray
        What the environment showed at the snapshot.
    """

    sim: _core.Sim
    done: bool
    episode_seed: int | None
    observation: np.ndarray
    action_mask: np.ndarray
    slot_blocks: np.ndarray

INVALID_ACTION_MODES = ("raise", "wait")
_MAX_SEED = 2**63


SLOT_FEATURES: tuple[str, ...] = tuple(_core.OBS_SLOT_FEATURES)
"""The features of a block slot, in order (the core's, envs/core/obs.h); each slot then
holds the block's packets in flight on each of the Pmax paths."""
PATH_FEATURES: tuple[str, ...] = tuple(_core.OBS_PATH_FEATURES)
"""The features of a path entry, in order (the core's, envs/core/obs.h)."""


def observation_layout(num_slots: int, max_paths: int) -> dict[str, slice]:
    """Where each part of the flat observation lives (see the environment docstring)."""
    block = (len(SLOT_FEATURES) + max_paths) * num_slots
    paths = block + len(PATH_FEATURES) * max_paths
    return {"blocks": slice(0, block), "paths": slice(block, paths), "deciding_path": slice(paths, paths + max_paths)}


def observation_space(dim: int) -> spaces.Box:
    """The flat observation space (values are finite float32)."""
    f32 = np.finfo(np.float32)
    return spaces.Box(f32.min, f32.max, shape=(dim,), dtype=np.float32)


def _check_kwargs(scenario: Scenario, num_slots: Any, max_paths: Any, invalid_action: Any) -> tuple[int, int]:
    integer = (int, np.integer)
    if isinstance(num_slots, bool) or not isinstance(num_slots, integer) or not 1 <= num_slots <= _core.MAX_SLOTS:
        raise ArgumentError("num_slots", num_slots, f"an integer in [1, {_core.MAX_SLOTS}]")
    n_paths = len(scenario.paths)
    if max_paths is None:
        max_paths = n_paths
    if isinstance(max_paths, bool) or not isinstance(max_paths, integer) or not n_paths <= max_paths <= _core.MAX_PATHS:
        raise ArgumentError("max_paths", max_paths,
                            f"an integer in [{n_paths} (paths of {scenario.name!r}), {_core.MAX_PATHS}]")
    if invalid_action not in INVALID_ACTION_MODES:
        raise ArgumentError("invalid_action", invalid_action, f"one of {INVALID_ACTION_MODES}")
    return int(num_slots), int(max_paths)


def check_seed(seed: Any, name: str = "seed") -> None:
    """``seed`` is None or an integer in ``[0, 2^63)``, else :class:`ArgumentError`."""
    if seed is None:
        return
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < _MAX_SEED:
        raise ArgumentError(name, seed, "None or an integer in [0, 2^63 - 1]")


def check_action(action: Any, num_slots: int, copies: bool = False) -> int:
    """An action as a Python int, or ActionError when it is not one of the action space
    (Discrete(K + 1), or Discrete(2K + 1) with copies)."""
    n = 2 * num_slots + 1 if copies else num_slots + 1
    if isinstance(action, np.ndarray) and action.shape == ():
        action = action.item()
    if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
        raise ActionError(f"action {action!r} is not an integer of Discrete({n})")
    if not 0 <= action < n:
        copy = f", copies from slot k = {num_slots + 1} + k" if copies else ""
        raise ActionError(f"action {int(action)} is outside Discrete({n}): slots 0..{num_slots - 1}, "
                          f"WAIT = {num_slots}{copy}")
    return int(action)


class MultipathDeadlineEnv(gym.Env):
    """
    ## Description

    A sender owns several network paths and a buffer of *blocks* (video frames, web
    objects, stream chunks), each with a size, a priority and a deadline. Whenever a path
    can take another packet, the agent chooses which block the packet comes from, or
    lets the path wait. A block counts only if all of its bytes reach the receiver by its
    deadline. Paths have time-varying bandwidth, propagation delay, a drop-tail queue,
    random loss and their own congestion control, simulated packet by packet by the C
    core (docs/model.md). This is the problem of the DAMS paper (Deadline-Aware Multipath
    Scheduler for streaming blocks) and its comparison schedulers.

    ## Action Space

    `Discrete(K + 1)`: action `k < K` sends the next packet of the block in slot `k` of
    the observation on the deciding path; action `K` is WAIT (the path idles until
    something changes). `action_masks()` marks the slots that hold a block (WAIT is always
    allowed). An empty slot counts as WAIT (`invalid_action="wait"`, the default) or
    raises (`invalid_action="raise"`); an action outside the space always raises.

    With `copies=True`, `Discrete(2K + 1)`: action `K + 1 + k` sends a copy of a piece of
    the block in slot `k` that is in flight on other paths (its lowest such piece; the
    first copy to arrive counts, docs/model.md 7.1) on the deciding path; the slots then
    also hold blocks whose bytes are all in flight, and the path is asked while a piece is
    in flight even when nothing is sendable. The mask allows a send only for a block with
    something to send and a copy only where the deciding path can copy one of its pieces;
    an action the mask refuses counts as WAIT or raises, as an empty slot does.

    ## Observation Space

    A flat `Box(float32 min, float32 max, (K * (6 + Pmax) + 11 * Pmax,), float32)`:

    - K block slots, each: valid, remaining packets to send, time to deadline [s],
      priority, weight, size [packets], packets in flight on each of Pmax paths;
    - Pmax paths, each: present, srtt [s], rttvar [s], cwnd [packets] (0 for `ideal`),
      packets in flight, delivery-rate estimate [Mbit/s], in recovery, can send,
      smallest RTT [s], flight in bandwidth-delay products (packets in flight over the
      delivery-rate estimate times the smallest RTT; 0 before the first rate sample);
    - Pmax: one-hot of the deciding path.

    Slots hold the blocks that have bytes to send, most urgent first: unexpired blocks by
    earliest deadline, then expired ones, most recently expired first.
    `observation_layout(K, Pmax)` gives the slices.

    ## Rewards

    The weight (credit) of every block that completes at the receiver no later than its
    deadline since the previous step. The episode return is the weighted number of
    on-time blocks.

    ## Starting State

    The scenario's episode drawn from the seed: the workload's blocks (e.g. frame sizes),
    random trace offsets and the core's loss streams. The first observation is the first
    decision point, after the first block has arrived.

    ## Episode End

    The episode terminates when the simulation passes its horizon (the last block
    deadline by default: nothing can count afterwards) or nothing can happen any more.
    There is no truncation unless a `TimeLimit` is added.

    ## Arguments

    - `scenario`: a `Scenario`, a built-in name, a YAML path or a mapping
      (default `"dams-dynamic-1-rtt-40"`).
    - `num_slots` (K, default 16): block slots in the observation, 1..64.
    - `max_paths` (Pmax): path slots, at least the scenario's paths (default: exactly).
    - `invalid_action`: `"wait"` (default) or `"raise"`, for actions the mask refuses.
    - `copies`: add the copy actions (default False).

    ```python
    import gymnasium as gym
    import mpsched.envs

    env = gym.make("mpsched/MultipathDeadline-v0", scenario="dams-rtt-40")
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(0)
    ```

    ## Version History

    - v0: initial version; `copies` added later (off by default: the space is unchanged).
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 30}

    def __init__(self, scenario: Scenario | str | Path | Mapping[str, Any] = DEFAULT, num_slots: int = 16,
                 max_paths: int | None = None, invalid_action: str = "wait", render_mode: str | None = None,
                 copies: bool = False) -> None:
        self.scenario = resolve(scenario)
        self.num_slots, self.max_paths = _check_kwargs(self.scenario, num_slots, max_paths, invalid_action)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ArgumentError("render_mode", render_mode, f"None or one of {self.metadata['render_modes']}")
        if not isinstance(copies, (bool, np.bool_)):
            raise ArgumentError("copies", copies, "True or False")
        self.render_mode = render_mode
        self.invalid_action = invalid_action
        self.copies = bool(copies)
        dim = _core.obs_dim(self.num_slots, self.max_paths)
        actions = 2 * self.num_slots + 1 if self.copies else self.num_slots + 1
        self.observation_space = observation_space(dim)
        self.action_space = spaces.Discrete(actions)
        self._obs = np.zeros(dim, dtype=np.float32)
        self._mask = np.zeros(actions, dtype=np.bool_)
        self._slots = np.full(self.num_slots, -1, dtype=np.int32)
        self._sim: _core.Sim | None = None
        self._done = True
        self.episode_seed: int | None = None

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        check_seed(seed)
        super().reset(seed=seed)
        episode_seed = int(seed) if seed is not None else int(self.np_random.integers(_MAX_SEED))
        self.episode_seed = episode_seed
        sim = build_episode(self.scenario, episode_seed).make_sim()
        sim.copies = self.copies
        sim.bind_obs(self.num_slots, self.max_paths, self.invalid_action == "wait", self._obs, self._mask, self._slots)
        self._sim = sim
        # No decision is pending yet: the action is ignored and the core runs to the first one.
        _, self._done, path, now_ns = sim.obs_step(self.num_slots)
        return self._obs.copy(), {"path": path, "time_s": now_ns * 1e-9}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self._done or self._sim is None:  # the Sim exists whenever an episode runs (reset)
            raise RuntimeError("the episode is over: call reset() before step()")
        try:
            reward, self._done, path, now_ns = self._sim.obs_step(action)
        except MpschedError:
            raise
        except (TypeError, ValueError, OverflowError):
            check_action(action, self.num_slots, self.copies)  # names what is wrong with the action itself
            raise ActionError(f"action {action!r} {self._refusal(int(action))} (see action_masks()); "
                              f"WAIT = {self.num_slots}") from None
        return self._obs.copy(), reward, self._done, False, {"path": path, "time_s": now_ns * 1e-9}

    def _refusal(self, action: int) -> str:
        """Why the mask refuses an action of the space."""
        k = action if action < self.num_slots else action - self.num_slots - 1
        if self._slots[k] < 0:
            return f"names an empty slot ({k})"
        if action < self.num_slots:
            return f"names slot {k}, whose block has nothing to send now"
        return f"copies from slot {k}, whose block has no piece in flight that the deciding path may copy"

    def action_masks(self) -> np.ndarray:
        """Valid actions of the current decision (slots holding a block, and WAIT)."""
        return self._mask.copy()

    def get_state(self) -> EnvState:
        """A snapshot of the episode as it stands (a clone of the core's state, C-level).

        The environment goes on unchanged; ``set_state(snapshot)`` returns it (or another
        environment made with the same arguments) to this point, from which the same
        actions give the same observations and rewards. The random generator that draws
        the seeds of later ``reset()`` calls is not part of it.
        """
        if self._sim is None:
            raise RuntimeError("no episode to snapshot: call reset() first")
        return EnvState(self._sim.clone(), self._done, self.episode_seed, self._obs.copy(), self._mask.copy(),
                        self._slots.copy())

    def set_state(self, state: EnvState) -> None:
        """Continue from a snapshot of :meth:`get_state`; the snapshot stays usable."""
        if not isinstance(state, EnvState):
            raise ArgumentError("state", type(state).__name__, "an EnvState from get_state()")
        if state.observation.shape != self._obs.shape or state.slot_blocks.shape != self._slots.shape:
            raise ArgumentError("state", f"observation of shape {state.observation.shape}",
                                f"a snapshot of an environment with num_slots={self.num_slots} and "
                                f"max_paths={self.max_paths}")
        sim = state.sim.clone()
        sim.bind_obs(self.num_slots, self.max_paths, self.invalid_action == "wait", self._obs, self._mask, self._slots)
        self._obs[:] = state.observation
        self._mask[:] = state.action_mask
        self._slots[:] = state.slot_blocks
        self._sim = sim
        self._done = state.done
        self.episode_seed = state.episode_seed

    def slot_blocks(self) -> np.ndarray:
        """Block index behind each slot of the current observation (-1 when empty)."""
        return self._slots.copy()

    @property
    def sim(self) -> _core.Sim | None:
        """The core episode (read its state with ``sim.view(name)``)."""
        return self._sim

    def render(self) -> str | None:
        if self.render_mode != "ansi" or self._sim is None:
            return None
        sim = self._sim
        srtt = np.asarray(sim.view("srtt_ns")) / 1e6
        cwnd = np.asarray(sim.view("cwnd_bytes"))
        lines = [f"t = {sim.now_ns / 1e9:.6f} s, deciding path {sim.pending_path}, "
                 f"{sim.n_sendable} sendable of {sim.n_arrived} arrived blocks, reward so far {sim.reward_total:g}"]
        for j, p in enumerate(self.scenario.paths):
            lines.append(f"  {p.name}: srtt {srtt[j]:.2f} ms, cwnd {cwnd[j]} B")
        return "\n".join(lines)
