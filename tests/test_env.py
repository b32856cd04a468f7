"""The Gymnasium environment and its native vector twin."""

from __future__ import annotations

import gymnasium as gym
import mpsched.envs  # noqa: F401  (registers the environment)
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode
from mpsched.envs import ENV_ID, WAIT, ActionError, Observation, _core
from mpsched.envs.env import MultipathDeadlineEnv, observation_layout
from mpsched.envs.episode import build_episode
from mpsched.envs.errors import ArgumentError
from mpsched.envs.scenarios import resolve
from mpsched.envs.vector import MultipathDeadlineVectorEnv

SHORT = {
    "name": "short",
    "duration_s": 0.4,
    "paths": [
        {"bandwidth": 3.0, "rtt_ms": 20, "loss": 0.02, "cc": "newreno"},
        {"bandwidth": {"type": "square", "high_mbps": 2, "low_mbps": 0.5, "period_s": 0.2}, "rtt_ms": 60,
         "cc": "ideal", "loss": 0.01},
    ],
    "workload": {"type": "avc", "fps": 30, "bitrate_mbps": 4.0, "deadline_ms": 150},
}


def random_valid(rng: np.random.Generator, mask: np.ndarray) -> int:
    return int(rng.choice(np.flatnonzero(mask)))


def test_check_env_passes() -> None:
    check_env(gym.make(ENV_ID, scenario=SHORT, render_mode="ansi").unwrapped, skip_render_check=False)


def test_gym_make_and_spaces() -> None:
    env = gym.make(ENV_ID, scenario=SHORT, num_slots=8)
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert env.action_space == gym.spaces.Discrete(9)
    layout = observation_layout(8, 2)
    assert layout["deciding_path"].stop == obs.shape[0]
    assert obs[layout["deciding_path"]].sum() == 1.0
    assert info["path"] in (0, 1)
    mask = env.unwrapped.action_masks()
    assert mask.dtype == np.bool_ and mask[-1] and mask[0]


def test_episode_reward_is_weighted_on_time_blocks() -> None:
    env = MultipathDeadlineEnv(SHORT)
    env.reset(seed=5)
    rng = np.random.default_rng(0)
    total, done = 0.0, False
    while not done:
        _, reward, done, truncated, _ = env.step(random_valid(rng, env.action_masks()))
        assert not truncated
        total += reward
    sim = env.sim
    on_time = (np.asarray(sim.view("flags")) & _core.FLAG_ON_TIME) != 0
    assert total == pytest.approx(float(np.asarray(sim.view("weight"))[on_time].sum()))
    assert total > 0
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)


def test_observation_writes_what_the_environment_observes() -> None:
    """A policy's view of a step-API episode gives the environment's observation, mask and
    slots at every decision (K = 4 leaves blocks outside the slots)."""
    K, P = 4, 3
    env = MultipathDeadlineEnv(SHORT, num_slots=K, max_paths=P)
    env_obs, _ = env.reset(seed=5)
    sim = build_episode(resolve(SHORT), 5).make_sim()
    view = Observation(sim)
    obs = np.zeros(_core.obs_dim(K, P), np.float32)
    mask = np.zeros(K + 1, np.bool_)
    slots = np.full(K, -1, np.int32)
    rng = np.random.default_rng(1)
    done, decisions = False, 0
    while not done:
        assert sim.next_decision() >= 0
        view.write_env_observation(K, P, obs, mask, slots)
        np.testing.assert_array_equal(obs, env_obs)
        np.testing.assert_array_equal(mask, env.action_masks())
        np.testing.assert_array_equal(slots, env.slot_blocks())
        action = random_valid(rng, mask)
        sim.apply(WAIT if action == K else int(slots[action]))
        env_obs, _, done, _, _ = env.step(action)
        decisions += 1
    assert sim.next_decision() < 0 and decisions > 50
    with pytest.raises(TypeError, match="obs: expected dtype"):
        view.write_env_observation(K, P, obs.astype(np.float64), mask, slots)
    with pytest.raises(ValueError, match="max_paths"):
        view.write_env_observation(K, 1, obs, mask, slots)


def test_path_features_are_the_paths_state() -> None:
    """At every decision each path's entry holds the core's state of that path: the
    smallest RTT, and the flight in bandwidth-delay products (bytes in flight over the
    delivery-rate estimate times the smallest RTT; 0 before the first rate sample)."""
    K, P = 4, 2
    env = MultipathDeadlineEnv(SHORT, num_slots=K, max_paths=P)
    obs, _ = env.reset(seed=3)
    layout = observation_layout(K, P)
    names = list(_core.OBS_PATH_FEATURES)
    rng = np.random.default_rng(0)
    done, checked_bdp = False, 0
    while not done:
        view = Observation(env.sim)
        paths = obs[layout["paths"]].reshape(P, len(names))
        for j in range(view.n_paths):
            row = dict(zip(names, paths[j]))
            assert row["min_rtt_s"] == np.float32(int(view.min_rtt_ns[j]) * 1e-9)
            assert row["min_rtt_s"] <= row["srtt_s"] + 1e-9
            bdp_bits = float(view.delivery_rate_bps[j]) * int(view.min_rtt_ns[j]) * 1e-9
            expected = int(view.path_inflight_bytes[j]) * 8.0 / bdp_bits if bdp_bits > 0 else 0.0
            assert row["flight_bdp"] == pytest.approx(expected, rel=1e-6)
            checked_bdp += expected > 0
        obs, _, done, _, _ = env.step(random_valid(rng, env.action_masks()))
    assert checked_bdp > 50


def test_seeding_contract() -> None:
    def rollout(env: MultipathDeadlineEnv, seed: int | None, steps: int = 300) -> list[np.ndarray]:
        obs, _ = env.reset(seed=seed)
        out = [obs]
        rng = np.random.default_rng(1)
        for _ in range(steps):
            obs, _, done, _, _ = env.step(random_valid(rng, env.action_masks()))
            out.append(obs)
            if done:
                break
        return out

    a, b = MultipathDeadlineEnv(SHORT), MultipathDeadlineEnv(SHORT)
    for x, y in zip(rollout(a, 3), rollout(b, 3)):
        np.testing.assert_array_equal(x, y)
    # an unseeded reset after a seeded one continues the seeded stream
    a.reset(seed=4)
    b.reset(seed=4)
    for x, y in zip(rollout(a, None), rollout(b, None)):
        np.testing.assert_array_equal(x, y)
    different = rollout(MultipathDeadlineEnv(SHORT), 99)
    assert any(not np.array_equal(x, y) for x, y in zip(rollout(a, 3), different))


def test_invalid_actions() -> None:
    env = MultipathDeadlineEnv(SHORT, num_slots=4, invalid_action="raise")
    env.reset(seed=0)
    with pytest.raises(ActionError, match="outside Discrete"):
        env.step(5)
    with pytest.raises(ActionError, match="outside Discrete"):
        env.step(-1)
    with pytest.raises(ActionError, match="not an integer"):
        env.step(1.5)
    with pytest.raises(ActionError, match="not an integer"):
        env.step(True)
    empty = np.flatnonzero(~env.action_masks())
    if len(empty):
        with pytest.raises(ActionError, match="empty slot"):
            env.step(int(empty[0]))
    lenient = MultipathDeadlineEnv(SHORT, num_slots=4)  # invalid_action="wait"
    lenient.reset(seed=0)
    lenient.step(3)  # an empty slot is a WAIT, not an error
    with pytest.raises(ValueError, match="invalid_action"):
        MultipathDeadlineEnv(SHORT, invalid_action="ignore")
    with pytest.raises(ValueError, match="num_slots"):
        MultipathDeadlineEnv(SHORT, num_slots=0)
    with pytest.raises(ValueError, match="max_paths"):
        MultipathDeadlineEnv(SHORT, max_paths=1)


def test_make_vec_uses_the_native_vector_env() -> None:
    venv = gym.make_vec(ENV_ID, num_envs=3, scenario=SHORT)
    assert isinstance(venv.unwrapped, MultipathDeadlineVectorEnv)
    assert venv.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    obs, _ = venv.reset(seed=0)
    assert obs.shape == (3, venv.single_observation_space.shape[0])


@pytest.mark.parametrize("num_envs", [1, 4])
def test_vector_env_equals_scalar_envs(num_envs: int) -> None:
    """Same seeds and actions: same observations, rewards, flags and masks, across
    same-step autoresets."""
    seed, steps = 10, 4000
    venv = MultipathDeadlineVectorEnv(num_envs=num_envs, scenario=SHORT, num_slots=6)
    envs = [MultipathDeadlineEnv(SHORT, num_slots=6) for _ in range(num_envs)]
    vobs, _ = venv.reset(seed=seed)
    for i, env in enumerate(envs):
        obs, _ = env.reset(seed=seed + i)
        np.testing.assert_array_equal(vobs[i], obs)
    rng = np.random.default_rng(0)
    resets = 0
    for _ in range(steps):
        masks = venv.action_masks()
        for i, env in enumerate(envs):
            np.testing.assert_array_equal(masks[i], env.action_masks())
        actions = np.array([random_valid(rng, m) for m in masks], dtype=np.int64)
        vobs, vrew, vterm, vtrunc, infos = venv.step(actions)
        for i, env in enumerate(envs):
            obs, rew, term, trunc, _ = env.step(int(actions[i]))
            assert vrew[i] == rew and vterm[i] == term and vtrunc[i] == trunc
            if term:
                resets += 1
                np.testing.assert_array_equal(infos["final_obs"][i], obs)
                assert infos["_final_obs"][i]
                obs, _ = env.reset()
            np.testing.assert_array_equal(vobs[i], obs)
    assert resets >= num_envs, "the test should cross episode boundaries"


def test_vector_env_rejects_bad_actions_and_changes_nothing() -> None:
    venv = MultipathDeadlineVectorEnv(num_envs=2, scenario=SHORT, num_slots=4, invalid_action="raise")
    obs, _ = venv.reset(seed=0)
    with pytest.raises(ActionError, match="shape"):
        venv.step(np.zeros(3, np.int64))
    with pytest.raises(ActionError, match="integer"):
        venv.step(np.zeros(2, np.float32))
    with pytest.raises(ActionError, match="not valid"):
        venv.step(np.array([0, 7], np.int64))
    with pytest.raises(ActionError, match="not valid"):
        venv.step(np.array([0, -1], np.int64))
    # nothing was stepped by the rejected batches
    after, _, _, _, _ = venv.step(np.array([4, 4], np.int64))
    fresh = MultipathDeadlineVectorEnv(num_envs=2, scenario=SHORT, num_slots=4)
    fresh.reset(seed=0)
    expected, _, _, _, _ = fresh.step(np.array([4, 4], np.int64))
    np.testing.assert_array_equal(after, expected)
    np.testing.assert_array_equal(obs, fresh.reset(seed=0)[0])


def test_vector_env_writes_each_observation_once_into_an_array_no_later_step_touches() -> None:
    """copy=True: every step returns a fresh array the core wrote into (no copy of a shared
    buffer) and no later step, autoreset or refused batch changes it; copy=False: one buffer."""
    venv = MultipathDeadlineVectorEnv(num_envs=3, scenario=SHORT, num_slots=4, invalid_action="raise")
    obs, _ = venv.reset(seed=0)
    returned, seen = [obs], [obs.copy()]
    rng = np.random.default_rng(0)
    ends = 0
    for _ in range(3000):
        obs, _, term, _, _ = venv.step(np.array([random_valid(rng, m) for m in venv.action_masks()], np.int64))
        ends += int(term.sum())
        assert not any(np.shares_memory(obs, r) for r in returned[-2:])
        returned.append(obs)
        seen.append(obs.copy())
    with pytest.raises(ActionError, match="not valid"):
        venv.step(np.array([0, 7, 4], np.int64))
    assert ends >= 3, "the test should cross episode boundaries"
    for r, s in zip(returned, seen):
        np.testing.assert_array_equal(r, s)
    shared = MultipathDeadlineVectorEnv(num_envs=3, scenario=SHORT, num_slots=4, copy=False)
    first, _ = shared.reset(seed=0)
    second, _, _, _, _ = shared.step(np.full(3, 4, np.int64))
    assert second is first
    fresh = MultipathDeadlineVectorEnv(num_envs=3, scenario=SHORT, num_slots=4)
    fresh.reset(seed=0)
    np.testing.assert_array_equal(second, fresh.step(np.full(3, 4, np.int64))[0])


def test_vector_env_accepts_several_scenarios() -> None:
    other = {**SHORT, "name": "other", "paths": SHORT["paths"][:1]}
    venv = MultipathDeadlineVectorEnv(num_envs=3, scenario=[SHORT, other])
    assert venv.max_paths == 2
    assert [s.name for s in venv.scenarios] == ["short", "other", "short"]
    obs, _ = venv.reset(seed=0)
    assert obs.shape[0] == 3


def test_a_snapshot_replays_the_same_future_as_often_as_asked() -> None:
    """get_state() mid-episode, then the same actions from set_state(), twice and in a
    second environment: the same observations, masks, rewards and ends as the first time."""
    env = MultipathDeadlineEnv(scenario="dams-dynamic-1-rtt-40", num_slots=8)
    env.reset(seed=3)
    rng = np.random.default_rng(1)
    for _ in range(500):
        env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
    snapshot = env.get_state()
    actions, first = [], []
    for _ in range(2000):
        a = int(rng.choice(np.flatnonzero(env.action_masks())))
        actions.append(a)
        obs, reward, done, _, info = env.step(a)
        first.append((obs.tobytes(), env.action_masks().tobytes(), reward, done, info["time_s"]))
        if done:
            break
    other = MultipathDeadlineEnv(scenario="dams-dynamic-1-rtt-40", num_slots=8)
    for target in (env, env, other):
        target.set_state(snapshot)
        again = []
        for a in actions:
            obs, reward, done, _, info = target.step(a)
            again.append((obs.tobytes(), target.action_masks().tobytes(), reward, done, info["time_s"]))
        assert again == first
    assert env.sim is not None and env.sim.decisions == snapshot.sim.decisions + len(actions)
    with pytest.raises(ArgumentError, match="num_slots=16"):
        MultipathDeadlineEnv(scenario="dams-dynamic-1-rtt-40", num_slots=16).set_state(snapshot)
