"""Learned schedulers: the native SB3 adapter, training of every algorithm end to end,
saved models as deterministic policies, masks, and the errors of bad input."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("stable_baselines3")
pytest.importorskip("sb3_contrib")

import yaml  # noqa: E402
from mpsched.agents import ALGOS, AgentPolicy, load, zoo_names  # noqa: E402
from mpsched.agents import features as features_module  # noqa: E402
from mpsched.agents import model as agent_model  # noqa: E402
from mpsched.agents.dagger import make_teacher, mixture_demonstrations  # noqa: E402
from mpsched.agents.evaluate import run_episodes  # noqa: E402
from mpsched.agents.experts import demonstrations  # noqa: E402
from mpsched.agents.features import MaskedCategorical, SlotPolicy, SlotSetExtractor, shared_input_linear  # noqa: E402
from mpsched.agents.inference import SlotSetScorer  # noqa: E402
from mpsched.agents.model import greedy_actions  # noqa: E402
from mpsched.agents.slot_numpy import SLOT_INPUTS  # noqa: E402
from mpsched.agents.train import TrainingError, evaluate_batched, load_hyperparams, train  # noqa: E402
from mpsched.agents.vec_env import MaskRules, NativeVecEnv, PoolEnv, refine_masks  # noqa: E402
from mpsched.envs import PolicyError, simulate  # noqa: E402
from mpsched.envs.env import PATH_FEATURES, SLOT_FEATURES, MultipathDeadlineEnv, observation_layout  # noqa: E402
from mpsched.envs.pool import EpisodePool  # noqa: E402
from mpsched.envs.scenarios import resolve  # noqa: E402
from mpsched.experiments.suite import PolicySpec, SuiteError, load_suite  # noqa: E402
from sb3_contrib.common.maskable.distributions import MaskableCategoricalDistribution  # noqa: E402

torch.set_num_threads(1)

SHORT = {"train": ("dams-rtt-40", 2.0), "test": ("dams-dynamic-1-rtt-40", 2.0)}
FAST = {
    "maskable_ppo": ["n_envs=4", "n_steps=64", "batch_size=64", "n_epochs=1", "expert_steps=300", "bc_epochs=1"],
    "ppo": ["n_envs=4", "n_steps=64", "batch_size=64", "n_epochs=1", "extractor=flat",
            "policy_kwargs.net_arch=[32]"],
    "dqn": ["n_envs=4", "learning_starts=100", "buffer_size=2000", "batch_size=32"],
    "bc": ["bc_epochs=1"],
    "dagger": ["bc_epochs=1", "dagger_iterations=2", "teacher=rollout:dams", "hold_gain=0",
               "teacher_params={variant: clairvoyant, horizon_s: 0.2, candidates: 2}"],
}


def tiny_suite(folder: Path) -> Path:
    """A suite file whose train and test groups hold one two-second scenario each."""
    groups = []
    for part, (base, duration) in SHORT.items():
        groups.append({"name": part, "seeds": [0, 1] if part == "train" else [7],
                       "scenarios": [{"name": f"{part}-short", "base": base, "set": {"duration_s": duration}}],
                       "policies": ["minrtt"]})
    path = folder / "tiny.yaml"
    path.write_text(yaml.safe_dump({"name": "tiny", "groups": groups, "split": {"train": ["train"], "test": ["test"]}}))
    return path


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Every algorithm trained for a few hundred steps (bc: 300 expert decisions)."""
    folder = tmp_path_factory.mktemp("agents")
    suite = tiny_suite(folder)
    out = {}
    for algo in ALGOS:
        expert = "dams" if algo == "maskable_ppo" else None
        steps = 300 if algo in ("bc", "dagger") else 512
        split = load_suite(str(suite))
        result = train(algo, split.pool("train"), split.pool("test"), steps, folder / algo, from_expert=expert, seed=3,
                       overrides=FAST[algo] + ["eval_episodes=1", "eval_freq=256", "checkpoint_freq=256"],
                       progress=False, log=lambda line: None)
        out[algo] = result
    out["suite"] = suite
    return out


def pool(part: str = "test") -> EpisodePool:
    name, duration = SHORT[part]
    return EpisodePool((resolve(name).replace(duration_s=duration),), ((7, 8),))


@pytest.mark.parametrize("algo", ALGOS)
def test_every_algorithm_trains_end_to_end(trained: dict, algo: str) -> None:
    result = trained[algo]
    assert (result.out / "model.zip").exists() and (result.out / "agent.json").exists()
    assert result.evaluations and 0.0 <= result.evaluations[-1]["weighted_on_time_rate"] <= 1.0
    if algo not in ("bc", "dagger"):
        assert result.timesteps >= 512
    policy = load(result.out)
    r = simulate(pool().scenarios[0], policy, seed=7)
    assert r.policy == f"agent:{result.out}" and r.summary["n_blocks"] > 0


def test_cloning_records_the_expert(trained: dict) -> None:
    imitation = trained["maskable_ppo"].imitation
    assert imitation["expert"] == "dams" and imitation["decisions"] >= 300
    assert 0.0 <= imitation["heldout_accuracy"] <= 1.0
    assert (trained["maskable_ppo"].out / "checkpoints").is_dir()


def test_saved_model_gives_identical_actions(trained: dict) -> None:
    env = NativeVecEnv(pool(), 2, 16, seed=0)
    obs = [env.reset()]
    masks = [env.action_masks()]
    for _ in range(200):
        obs_t, _, _, _ = env.step(greedy_actions(trained["maskable_ppo"].model, "maskable_ppo", obs[-1], masks[-1]))
        obs.append(obs_t)
        masks.append(env.action_masks())
    obs_all, masks_all = np.concatenate(obs), np.concatenate(masks)
    for algo in ALGOS:
        model = trained[algo].model
        loaded = load(trained[algo].out)
        # a slot-set network acts through its numpy scorer (float64), any other through torch
        scorer = SlotSetScorer.of(model.policy) if algo != "dqn" else None
        assert (loaded.scorer is None) == (scorer is None), algo
        expected = (scorer.greedy(obs_all, masks_all) if scorer is not None
                    else greedy_actions(model, algo, obs_all, masks_all))
        assert np.array_equal(loaded.act(obs_all, masks_all), expected), algo


def test_numpy_scorer_computes_the_network() -> None:
    """The shipped model's scores from numpy (float64) and from its torch forward pass
    (float32) on the observations of a real episode: equal to float32 rounding, and the
    greedy actions equal wherever torch's best two allowed actions are farther apart than
    twice the largest difference (the only place the two may choose differently)."""
    policy = load("default")
    assert policy.scorer is not None
    observations: list[np.ndarray] = []
    masks: list[np.ndarray] = []
    act = policy.act

    def recording(obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        observations.append(obs[0].copy())
        masks.append(mask[0].copy())
        return act(obs, mask)

    policy.act = recording  # type: ignore[method-assign]
    simulate(resolve("dams-rtt-40").replace(duration_s=4.0), policy, seed=1)
    obs_all, masks_all = np.array(observations), np.array(masks)
    assert len(obs_all) > 1000
    with torch.no_grad():
        reference = agent_model.action_scores(policy.network, policy.algo, torch.as_tensor(obs_all)).numpy()
    ours = policy.scorer.scores(obs_all)
    assert np.array_equal(ours[5], policy.scorer.scores(obs_all[5]))
    difference = np.abs(ours - reference)
    # float32 rounding over sums of a few hundred terms (measured: 3e-6 here, 3.5e-5 on the
    # leaderboard's web and bulk episodes)
    assert (difference / (1.0 + np.abs(reference))).max() < 1e-4
    allowed = np.where(masks_all, reference, -np.inf)
    top_two = np.sort(allowed, axis=1)[:, -2:]
    decisive = top_two[:, 1] - top_two[:, 0] > 2 * difference.max()
    assert decisive.mean() > 0.9
    assert np.array_equal(policy.scorer.greedy(obs_all, masks_all)[decisive], allowed.argmax(1)[decisive])


def test_numpy_scorer_refuses_another_architecture() -> None:
    network = load("default").network.policy
    changed = copy.deepcopy(network)
    changed.mlp_extractor.wait_score = torch.nn.Sequential(torch.nn.Linear(128, 64), torch.nn.ReLU(),
                                                           torch.nn.Linear(64, 1))
    with pytest.raises(TypeError, match="WAIT head"):
        SlotSetScorer(changed)


def test_evaluation_is_deterministic_and_matches_simulate(trained: dict) -> None:
    policy = load(trained["maskable_ppo"].out)
    episodes = pool().episodes
    first = run_episodes(policy, episodes)
    second = run_episodes(policy, episodes)
    alone = [simulate(sc, load(trained["maskable_ppo"].out), seed=s) for sc, s in episodes]
    for a, b, c in zip(first, second, alone):
        assert {k: v for k, v in a.summary.items() if k != "wall_s"} == \
            {k: v for k, v in b.summary.items() if k != "wall_s"}
        assert a.blocks.equals(c.blocks)
        assert a.summary["weighted_on_time_rate"] == c.summary["weighted_on_time_rate"]


@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_masked_actions_are_never_taken(trained: dict, algo: str) -> None:
    """Unmasked algorithms too: the policy picks among the allowed actions only, and the
    environment raises on an empty slot (invalid_action="raise")."""
    policy = load(trained[algo].out)
    sc = pool().scenarios[0]
    env = MultipathDeadlineEnv(sc, num_slots=policy.num_slots, max_paths=policy.max_paths, invalid_action="raise")
    obs, _ = env.reset(seed=7)
    done, steps = False, 0
    while not done:
        mask = env.action_masks()
        action = int(policy.act(obs[None], mask[None])[0])
        assert mask[action]
        slot_ttd = obs[2: 16 * 8: 8]
        assert action == 16 or slot_ttd[action] > 0
        obs, _, done, _, _ = env.step(action)
        steps += 1
    assert steps > 100


def _paths_observation(K: int, P: int, deciding: int, inflight: list[float], can_send: list[float],
                      flight_bdp: list[float] | None = None) -> np.ndarray:
    """An observation with one unexpired block in slot 0 and the given paths' state."""
    layout = observation_layout(K, P)
    obs = np.zeros(layout["deciding_path"].stop, np.float32)
    obs[0], obs[2] = 1.0, 0.1  # slot 0: valid, 100 ms to its deadline
    paths = obs[layout["paths"]].reshape(P, len(PATH_FEATURES))
    paths[:, PATH_FEATURES.index("present")] = 1.0
    paths[:, PATH_FEATURES.index("inflight_packets")] = inflight
    paths[:, PATH_FEATURES.index("can_send")] = can_send
    paths[:, PATH_FEATURES.index("flight_bdp")] = flight_bdp or [0.0] * P
    obs[layout["deciding_path"]][deciding] = 1.0
    return obs


@pytest.mark.parametrize(("deciding", "inflight", "can_send", "wait_allowed"), [
    (2, [0, 0, 0], [1, 1, 1], False),  # the last path asked, nothing in flight: WAIT idles
    (0, [0, 0, 0], [1, 0, 0], False),  # no later path can send
    (0, [0, 0, 0], [1, 0, 1], True),   # path 2 is asked after path 0
    (1, [0, 0, 0], [1, 1, 0], False),  # path 0 was asked before, and waited
    (2, [0, 1, 0], [1, 1, 1], True),   # an acknowledgement will come back on path 1
])
def test_wait_is_refused_only_where_it_would_leave_the_connection_idle(deciding: int, inflight: list[float],
                                                                       can_send: list[float],
                                                                       wait_allowed: bool) -> None:
    K, P = 2, 3
    obs = _paths_observation(K, P, deciding, inflight, can_send)
    masks = refine_masks(np.array([True, False, True]), obs, K, P, MaskRules())
    assert masks.tolist() == [True, False, wait_allowed]
    # with nothing to send (the only block past its deadline), WAIT stays
    obs[2] = -0.1
    assert refine_masks(np.array([True, False, True]), obs, K, P, MaskRules()).tolist() == [False, False, True]
    # the rule reads batches too, row by row
    batch = np.stack([_paths_observation(K, P, deciding, inflight, can_send)] * 3)
    refined = refine_masks(np.ones((3, K + 1), np.bool_), batch, K, P, MaskRules(expired=False))
    assert refined[:, K].tolist() == [wait_allowed] * 3


@pytest.mark.parametrize(("deciding", "inflight", "flight_bdp", "held"), [
    (0, [3, 0], [1.5, 0.0], True),    # at the cap
    (0, [3, 0], [1.49, 0.0], False),  # below it
    (1, [3, 0], [1.5, 0.0], False),   # the other path is at its cap, not the deciding one
    (0, [1, 0], [4.0, 0.0], False),   # fewer than two packets in flight: never held
])
def test_the_cap_refuses_every_send_while_the_deciding_paths_flight_is_at_it(deciding: int, inflight: list[float],
                                                                               flight_bdp: list[float],
                                                                               held: bool) -> None:
    K, P = 2, 2
    obs = _paths_observation(K, P, deciding, inflight, [1, 1], flight_bdp)
    masks = refine_masks(np.array([True, False, True]), obs, K, P, MaskRules(hold_gain=1.5))
    assert masks.tolist() == ([False, False, True] if held else [True, False, True])
    assert refine_masks(np.array([True, False, True]), obs, K, P, MaskRules()).tolist() == [True, False, True]


def _blocks_observation(time_to_deadline_s: list[float], remaining: list[float], srtt_s: list[float],
                       rate_mbps: list[float], deciding: int) -> np.ndarray:
    """An observation with a block in each slot (its time to deadline and packets still to
    send), two paths with the given smoothed RTTs and delivery rates, one packet in flight
    on each."""
    K, P = len(time_to_deadline_s), 2
    obs = _paths_observation(K, P, deciding, [1, 1], [1, 1])
    layout = observation_layout(K, P)
    slots = obs[layout["blocks"]].reshape(K, -1)
    slots[:, SLOT_FEATURES.index("valid")] = 1.0
    slots[:, SLOT_FEATURES.index("time_to_deadline_s")] = time_to_deadline_s
    slots[:, SLOT_FEATURES.index("remaining_packets")] = remaining
    paths = obs[layout["paths"]].reshape(P, len(PATH_FEATURES))
    paths[:, PATH_FEATURES.index("srtt_s")] = srtt_s
    paths[:, PATH_FEATURES.index("delivery_rate_mbps")] = rate_mbps
    obs[layout["blocks"]] = slots.reshape(-1)
    obs[layout["paths"]] = paths.reshape(-1)
    return obs


@pytest.mark.parametrize(("ttd", "remaining", "srtt", "rate", "deciding", "allowed"), [
    # 150 ms one way on path 1: only the block 200 ms from its deadline can arrive by it there
    ([0.1, 0.2], [1, 1], [0.02, 0.3], [2.0, 2.0], 1, [False, True]),
    ([0.1, 0.2], [1, 1], [0.02, 0.3], [2.0, 2.0], 0, [True, True]),
    # 20 packets need 116 ms at 2 Mbit/s: the first cannot be sent in time, the second can
    ([0.1, 0.3], [20, 20], [0.02, 0.02], [1.0, 1.0], 0, [False, True]),
    # when no block can, none is refused for its sending time (a low estimate never idles)
    ([0.1, 0.11], [20, 20], [0.02, 0.02], [1.0, 1.0], 0, [True, True]),
    # nor before the first rate sample
    ([0.1, 0.3], [20, 20], [0.02, 0.02], [0.0, 0.0], 0, [True, True]),
])
def test_the_reachable_rule_refuses_the_blocks_that_cannot_arrive_in_time(ttd: list[float], remaining: list[float],
                                                                         srtt: list[float], rate: list[float],
                                                                         deciding: int, allowed: list[bool]) -> None:
    K, P = len(ttd), 2
    obs = _blocks_observation(ttd, remaining, srtt, rate, deciding)
    masks = refine_masks(np.ones(K + 1, np.bool_), obs.copy(), K, P, MaskRules(reachable=True))
    assert masks[:K].tolist() == allowed
    assert refine_masks(np.ones(K + 1, np.bool_), obs, K, P, MaskRules()).tolist() == [True] * (K + 1)
    batch = np.stack([obs] * 2)
    assert refine_masks(np.ones((2, K + 1), np.bool_), batch, K, P, MaskRules(reachable=True))[:, :K].tolist() \
        == [allowed] * 2


def test_a_later_path_that_no_block_can_reach_in_time_on_does_not_make_wait_safe() -> None:
    """Path 0 is asked first with nothing in flight; path 1 can send but is 150 ms one way,
    too long for any block: under the reachable rule WAIT on path 0 would idle the
    connection, so it is refused; without the rule path 1 counts and WAIT stays."""
    K, P = 2, 2
    obs = _blocks_observation([0.1, 0.12], [1, 1], [0.02, 0.3], [2.0, 2.0], deciding=0)
    layout = observation_layout(K, P)
    paths = obs[layout["paths"]].reshape(P, len(PATH_FEATURES))
    paths[:, PATH_FEATURES.index("inflight_packets")] = 0.0
    obs[layout["paths"]] = paths.reshape(-1)
    assert refine_masks(np.ones(K + 1, np.bool_), obs.copy(), K, P, MaskRules(reachable=True)).tolist() \
        == [True, True, False]
    assert refine_masks(np.ones(K + 1, np.bool_), obs.copy(), K, P, MaskRules()).tolist() == [True, True, True]
    slots = obs[layout["blocks"]].reshape(K, -1)
    slots[1, SLOT_FEATURES.index("time_to_deadline_s")] = 0.2  # reaches in time on path 1 as well
    obs[layout["blocks"]] = slots.reshape(-1)
    assert refine_masks(np.ones(K + 1, np.bool_), obs, K, P, MaskRules(reachable=True)).tolist() == [True, True, True]


def test_mask_rules_are_checked_and_read_from_settings() -> None:
    assert MaskRules.of({"mask_expired": False}) == MaskRules(expired=False, hold_gain=0.0, reachable=False)
    assert MaskRules.of({"mask_expired": True, "hold_gain": 1.5}).hold_gain == 1.5
    assert MaskRules.of({"mask_expired": True, "mask_reachable": True}).reachable
    for bad in (-1.0, float("nan"), float("inf"), 1e7):
        with pytest.raises(ValueError, match="hold_gain: got"):
            MaskRules(hold_gain=bad)


def test_a_policy_that_always_waits_still_sends_under_the_refined_mask() -> None:
    """WAIT whenever the mask allows it: the environment's own mask lets the connection
    idle for the whole episode; the refined mask makes the last path asked send."""
    sent = {}
    for refined in (False, True):
        env = MultipathDeadlineEnv(pool().scenarios[0], num_slots=16, max_paths=2)
        obs, _ = env.reset(seed=7)
        done = False
        while not done:
            mask = env.action_masks()
            if refined:
                mask = refine_masks(mask, obs, 16, 2, MaskRules())
            obs, _, done, _, _ = env.step(16 if mask[16] else int(np.flatnonzero(mask)[0]))
        sent[refined] = int(np.asarray(env.sim.view("next_pn")).sum())
    assert sent[False] == 0 and sent[True] > 10


def test_native_adapter_steps_like_scalar_environments() -> None:
    """The same episodes and actions through NativeVecEnv and through PoolEnv."""
    p = EpisodePool(pool().scenarios, ((7,),))
    native = NativeVecEnv(p, 1, 16, seed=0)
    scalar = PoolEnv(p, 16, seed=0)
    a, _ = scalar.reset(seed=0)
    b = native.reset()[0]
    for _ in range(300):
        assert np.array_equal(a, b)
        m = native.action_masks()[0]
        assert np.array_equal(m, scalar.action_masks())
        action = int(np.flatnonzero(m)[0])
        a, ra, done, _, _ = scalar.step(action)
        b_all, rb, _, infos = native.step(np.array([action]))
        b = infos[0]["terminal_observation"] if done else b_all[0]
        assert ra == rb[0]
        if done:
            break


def test_set_extractor_summary_is_permutation_invariant() -> None:
    env = NativeVecEnv(pool(), 2, 16, seed=0)
    obs = env.reset()
    for _ in range(50):
        obs, _, _, _ = env.step(np.full(2, 0))
    ex = SlotSetExtractor(env.observation_space, num_slots=16)
    ex.fit_normalization(obs)
    x = torch.as_tensor(obs)
    width = 8
    slots = x[:, : 16 * width].reshape(2, 16, width)
    perm = torch.randperm(16)
    moved = torch.cat([slots[:, perm].reshape(2, -1), x[:, 16 * width:]], 1)
    d = 32
    a, b = ex(x), ex(moved)
    # The packets-queued-ahead feature follows slot order by design; compare the parts
    # that do not read it: pooled summaries of a model without that input.
    with torch.no_grad():
        ex.slot_std[-2] = float("inf")
        a, b = ex(x), ex(moved)
    assert torch.allclose(a[:, 16 * d:], b[:, 16 * d:], atol=1e-5)
    assert torch.allclose(a[:, : 16 * d].reshape(2, 16, d)[:, perm], b[:, : 16 * d].reshape(2, 16, d), atol=1e-5)


def test_demonstrations_map_expert_blocks_to_slots() -> None:
    demos = demonstrations("dams", pool(), 400, 16, 2, seed=0)
    assert len(demos) >= 400
    assert demos.masks[np.arange(len(demos)), demos.actions].all()
    opt = demonstrations("optimum", pool(), 200, 16, 2, seed=0)
    assert len(opt) >= 200 and opt.masks[np.arange(len(opt)), opt.actions].all()


def test_default_agent_ships_and_runs_in_simulate_and_suites() -> None:
    assert "default" in zoo_names()
    policy = load("default")
    assert isinstance(policy, AgentPolicy) and policy.name == "agent:default"
    card = (policy.directory / "MODEL_CARD.md").read_text()
    assert "mpsched train" in card and "seed" in card
    sc = pool().scenarios[0]
    assert simulate(sc, policy, seed=7).summary["n_blocks"] > 0
    spec = PolicySpec("agent:default", label="agent:default")
    assert isinstance(spec.build(), AgentPolicy)
    assert spec.run(sc, 7, False).policy == "agent:default"


def test_inference_runs_on_one_thread_and_restores_the_callers(trained: dict,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A decision's torch forward pass (a network without a numpy scorer: the flat
    extractor) runs on one torch thread (more only contend on a busy machine); the
    caller's setting is back afterwards and the actions are the same."""
    sc = pool().scenarios[0]
    policy = load(trained["ppo"].out)
    assert policy.scorer is None
    before = torch.get_num_threads()
    during: list[int] = []
    greedy = agent_model.greedy_actions

    def recording(*args: object) -> object:
        during.append(torch.get_num_threads())
        return greedy(*args)

    try:
        torch.set_num_threads(1)
        one = simulate(sc, policy, seed=3)
        torch.set_num_threads(2)
        monkeypatch.setattr(agent_model, "greedy_actions", recording)
        two = simulate(sc, policy, seed=3)
        assert during and set(during) == {1} and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    pd.testing.assert_frame_equal(two.blocks, one.blocks)


def test_hyperparameters_load_and_override() -> None:
    hp = load_hyperparams("maskable_ppo", "agents", ["learning_rate=1e-4", "policy_kwargs.net_arch=[128]"])
    assert hp["learning_rate"] == 1e-4 and hp["policy_kwargs"]["net_arch"] == [128]
    assert hp["policy_kwargs"]["features_extractor_kwargs"]["embed_dim"] == 32
    for algo in ALGOS:
        assert load_hyperparams(algo)["num_slots"] == 16


def test_dagger_with_the_teacher_acting_records_the_teachers_demonstrations(trained: dict) -> None:
    """beta = 1: the mixture is the teacher, so its labelled decisions are exactly the
    expert demonstrations of the same episodes."""
    teacher = make_teacher("dams")
    mixed = mixture_demonstrations(trained["dagger"].model, "dagger", teacher, pool(), 400, 16, 2, 1.0, seed=0)
    expert = demonstrations("dams", pool(), 400, 16, 2, seed=0)
    assert np.array_equal(mixed.observations, expert.observations)
    assert np.array_equal(mixed.actions, expert.actions) and np.array_equal(mixed.masks, expert.masks)


def test_dagger_with_the_learner_acting_labels_the_learners_own_states(trained: dict) -> None:
    """beta = 0: the learner's greedy actions drive the episode (its score is the one
    the batched evaluation gives the model), while the labels are the teacher's, which
    the learner does not always follow."""
    model = trained["dagger"].model
    one = EpisodePool(pool().scenarios, ((7,),))
    mixed = mixture_demonstrations(model, "dagger", make_teacher("dams"), one, 2000, 16, 2, 0.0, seed=0)
    own = evaluate_batched(model, "dagger", one, 16, 2, MaskRules())["weighted_on_time_rate"]
    assert mixed.weighted_on_time and mixed.weighted_on_time[0] == pytest.approx(own, abs=1e-12)
    assert mixed.masks[np.arange(len(mixed)), mixed.actions].all()
    learner = greedy_actions(model, "dagger", mixed.observations, mixed.masks)
    assert 0 < np.mean(learner == mixed.actions) < 1
    with pytest.raises(ValueError, match="beta"):
        mixture_demonstrations(model, "dagger", make_teacher("dams"), one, 10, 16, 2, 1.5)


def test_dagger_rounds_aggregate_and_are_recorded(trained: dict) -> None:
    rounds = trained["dagger"].imitation["rounds"]
    assert [r["beta"] for r in rounds] == [1.0, 0.5]
    assert rounds[1]["aggregate"] == rounds[0]["labels"] + rounds[1]["labels"] >= 300
    assert all(0.0 <= r["test_weighted_on_time_rate"] <= 1.0 for r in rounds)
    assert trained["dagger"].imitation["expert"] == "rollout:dams"
    # the learning curve of a DAgger model is its rounds: the first is the teacher's clone
    from mpsched.experiments.agent_protocol import learning_curves

    curve = learning_curves([trained["dagger"].out])
    assert [c["decisions"] for c in curve] == [r["aggregate"] for r in rounds]
    assert [c["values"][0] for c in curve] == [r["test_weighted_on_time_rate"] for r in rounds]


def test_a_run_from_a_saved_model_starts_from_its_network(trained: dict, tmp_path: Path) -> None:
    """--from-model: with no step of learning the saved network is the start's, weight for
    weight; DAgger from it keeps the start's input normalization (a refit would shift
    every weight's meaning) and trains the rest; agent.json names the start."""
    split = load_suite(str(trained["suite"]))
    start = trained["bc"].out
    started = load(start).network.policy.state_dict()
    quiet = {"progress": False, "log": lambda line: None, "seed": 5}
    ppo = train("maskable_ppo", split.pool("train"), split.pool("test"), 0, tmp_path / "ppo", from_model=start,
                overrides=FAST["maskable_ppo"] + ["eval_episodes=1"], **quiet)
    saved = ppo.model.policy.state_dict()
    assert saved.keys() == started.keys() and all(torch.equal(saved[k], started[k]) for k in saved)
    assert json.loads((tmp_path / "ppo" / "agent.json").read_text())["from_model"]["model"] == str(start)
    dagger = train("dagger", split.pool("train"), split.pool("test"), 200, tmp_path / "dagger", from_model=start,
                   overrides=["bc_epochs=1", "dagger_iterations=1", "eval_episodes=1"], **quiet)
    weights = dagger.model.policy.state_dict()
    normalization = [k for k in weights if k.endswith(("_mean", "_std"))]
    assert normalization and all(torch.equal(weights[k], started[k]) for k in normalization)
    assert not all(torch.equal(weights[k], started[k]) for k in weights)


def test_a_run_from_a_saved_model_takes_its_masks_unless_told_otherwise(trained: dict, tmp_path: Path) -> None:
    split = load_suite(str(trained["suite"]))
    start = tmp_path / "start"
    shutil.copytree(trained["bc"].out, start)
    meta = json.loads((start / "agent.json").read_text())
    meta.update(hold_gain=1.5, mask_reachable=True)
    (start / "agent.json").write_text(json.dumps(meta))
    quiet = {"progress": False, "log": lambda line: None, "seed": 5}
    for out, extra, rules in (("own", [], MaskRules(True, 1.5, True)),
                              ("told", ["hold_gain=0"], MaskRules(True, 0.0, True))):
        train("maskable_ppo", split.pool("train"), split.pool("test"), 0, tmp_path / out, from_model=start,
              overrides=FAST["maskable_ppo"] + ["eval_episodes=1"] + extra, **quiet)
        assert load(tmp_path / out).rules == rules, out


def test_a_start_model_of_another_network_is_refused(trained: dict, tmp_path: Path) -> None:
    split = load_suite(str(trained["suite"]))
    pools = (split.pool("train"), split.pool("test"))
    start = trained["bc"].out
    with pytest.raises(TrainingError, match="its network differs: num_slots 16 \\(this run: 8\\)"):
        train("maskable_ppo", *pools, 0, tmp_path / "x", from_model=start, overrides=["num_slots=8"])
    with pytest.raises(TrainingError, match="a dqn model; a start needs the MaskablePPO network"):
        train("maskable_ppo", *pools, 0, tmp_path / "x", from_model=trained["dqn"].out)
    with pytest.raises(TrainingError, match="dqn cannot start from a saved model"):
        train("dqn", *pools, 0, tmp_path / "x", from_model=start)
    with pytest.raises(TrainingError, match="give one start"):
        train("maskable_ppo", *pools, 0, tmp_path / "x", from_model=start, from_expert="dams")
    with pytest.raises(TrainingError, match="--from-model: agent 'no-such-model'"):
        train("maskable_ppo", *pools, 0, tmp_path / "x", from_model="no-such-model")


def test_bad_input_gives_clear_errors(tmp_path: Path) -> None:
    agents = load_suite("agents")
    split = (agents.pool("train"), agents.pool("test"))
    with pytest.raises(TrainingError, match="algo: got 'a2c'; expected one of maskable_ppo, ppo, dqn, bc, dagger"):
        train("a2c", *split, 10, tmp_path / "x")
    with pytest.raises(TrainingError, match="dagger takes its teacher from the hyperparameters"):
        train("dagger", *split, 10, tmp_path / "x", from_expert="dams")
    with pytest.raises(TrainingError, match="teacher 'rollout:nothing'"):
        train("dagger", *split, 30, tmp_path / "x", overrides=["teacher=rollout:nothing"], progress=False,
              log=lambda line: None)
    with pytest.raises(TrainingError, match="--from-expert: got 'oracle'"):
        train("maskable_ppo", *split, 10, tmp_path / "x", from_expert="oracle")
    with pytest.raises(TrainingError, match="not dqn"):
        train("dqn", *split, 10, tmp_path / "x", from_expert="dams")
    with pytest.raises(TrainingError, match="--hp: got 'learning_rate'"):
        load_hyperparams("ppo", overrides=["learning_rate"])
    with pytest.raises(TrainingError, match="extractor: got 'cnn'"):
        load_hyperparams("ppo", overrides=["extractor=cnn"])
    with pytest.raises(PolicyError, match="no model directory 'no-such-model' and no shipped model"):
        load("no-such-model")
    (tmp_path / "empty").mkdir()
    with pytest.raises(PolicyError, match="missing agent.json, model.zip"):
        load(tmp_path / "empty")
    with pytest.raises(PolicyError, match="takes no parameters"):
        load("default", temperature=1.0)
    with pytest.raises(SuiteError, match="a suite with a split"):
        load_suite("dams-paper").pool("train")
    assert agents.split_groups("test")


def test_cli_train_and_evaluate(trained: dict, capsys: pytest.CaptureFixture[str]) -> None:
    from mpsched.experiments.cli import main

    out = trained["bc"].out
    assert main(["evaluate", "--model", str(out), "--suite", str(trained["suite"]), "--baselines", "minrtt",
                 "--json", "--no-progress"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["scenario"] for r in rows] == ["test-short", "mean"]
    assert set(rows[0]) == {"scenario", f"agent:{out}", "minrtt"}
    assert main(["train", "--algo", "a2c", "--suite", str(trained["suite"]), "--out", str(out.parent / "x")]) == 2
    assert "algo: got 'a2c'" in capsys.readouterr().err


def test_cli_resume_continues_from_the_last_checkpoint(trained: dict, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """--resume loads the latest checkpoint (512 steps, cloning done) and trains on to 768:
    the step count continues, the checkpoints go on from it, the expert is not cloned again."""
    from mpsched.experiments.cli import main

    out = tmp_path / "resumed"
    shutil.copytree(trained["maskable_ppo"].out, out)
    before = sorted(p.name for p in (out / "checkpoints").glob("step_*.zip"))
    assert before[-1] == "step_000000000512.zip"
    hp = FAST["maskable_ppo"] + ["eval_episodes=1", "eval_freq=256", "checkpoint_freq=256"]
    assert main(["train", "--algo", "maskable_ppo", "--suite", str(trained["suite"]), "--timesteps", "768",
                 "--out", str(out), "--seed", "3", "--resume", "--no-progress"] + [f"--hp={h}" for h in hp]) == 0
    printed = capsys.readouterr().out
    assert f"resuming from {out / 'checkpoints' / 'step_000000000512.zip'}" in printed
    assert "expert dams" not in printed and "behaviour cloning" not in printed
    assert sorted(p.name for p in (out / "checkpoints").glob("step_*.zip")) == before + ["step_000000000768.zip"]
    meta = json.loads((out / "agent.json").read_text())
    assert meta["timesteps"] == 768 and meta["imitation"]["expert"] == "dams"
    assert [e["timesteps"] for e in meta["evaluations"]] == [768.0]
    assert load(out).network.num_timesteps == 768


def test_a_model_of_another_observation_layout_is_refused_by_name(trained: dict, tmp_path: Path) -> None:
    """A model trained on other path features (or on a layout before they were recorded)
    would read every feature at the wrong place: loading it names both layouts."""
    out = tmp_path / "older"
    shutil.copytree(trained["bc"].out, out)
    meta = json.loads((out / "agent.json").read_text())
    assert meta["path_features"] == list(PATH_FEATURES) and meta["slot_inputs"] == list(SLOT_INPUTS)

    def refused(changes: dict, match: str) -> None:
        older = {k: v for k, v in {**meta, **changes}.items() if v is not None}
        (out / "agent.json").write_text(json.dumps(older))
        with pytest.raises(PolicyError, match=match):
            load(out)

    refused({"path_features": list(PATH_FEATURES[:8])},
            r"trained on the path features present, .*, can_send; this build observes .*min_rtt_s, flight_bdp .*train "
            r"it again")
    refused({"path_features": None}, "an earlier layout's")
    # the slot encoder's inputs likewise (models of the slot-set extractor)
    refused({"slot_inputs": list(SLOT_INPUTS[:9])},
            r"its slot encoder read valid, .*packets_queued_ahead; this build's reads .*slack_here_s .*train it again")
    refused({"slot_inputs": None}, "its slot encoder read an earlier layout's")


class _RunsCode:
    """Unpickling this writes a file: what a crafted model.zip can make a loader do."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple:
        return (exec, (f"open({str(self.marker)!r}, 'w').write('ran')",))


def test_a_crafted_model_directory_runs_no_code_on_load(tmp_path: Path) -> None:
    """Every pickled entry of a model's data (here the policy class, replaced by an object
    whose unpickling writes a file) is rebuilt from agent.json instead of unpickled: the
    model loads, acts as the shipped one, and the file is never written."""
    import base64
    import zipfile

    import cloudpickle

    marker = tmp_path / "ran.txt"
    crafted = tmp_path / "crafted"
    shutil.copytree(Path(load("default").directory), crafted)
    original = crafted / "model.zip"
    with zipfile.ZipFile(original) as zf:
        entries = {name: zf.read(name) for name in zf.namelist()}
    data = json.loads(entries["data"])
    payload = base64.b64encode(cloudpickle.dumps(_RunsCode(marker))).decode()
    for key in ("policy_class", "policy_kwargs", "lr_schedule"):
        data[key] = {":type:": "<class 'abc.ABCMeta'>", ":serialized:": payload}
    entries["data"] = json.dumps(data).encode()
    original.unlink()
    with zipfile.ZipFile(original, "w") as zf:
        for name, content in entries.items():
            zf.writestr(name, content)
    scenario = resolve("dams-rtt-40").replace(duration_s=2.0)
    result = simulate(scenario, f"agent:{crafted}", seed=1)
    assert not marker.exists()
    shipped = simulate(scenario, "agent:default", seed=1)
    assert result.summary["weighted_on_time_rate"] == shipped.summary["weighted_on_time_rate"]


def test_the_slot_layers_are_the_concatenated_layers() -> None:
    """The extractor's slot encoder and the heads' slot score multiply the part of their
    input shared by every slot once per row; the map is the one on the concatenation."""
    torch.manual_seed(0)
    layer = torch.nn.Linear(7 + 5, 4)
    per_slot, shared = torch.randn(3, 6, 7), torch.randn(3, 5)
    together = layer(torch.cat([per_slot, shared[:, None, :].expand(-1, 6, -1)], -1))
    torch.testing.assert_close(shared_input_linear(layer, per_slot, shared), together, rtol=1e-6, atol=1e-6)
    obs_space = MultipathDeadlineEnv(scenario="dams-rtt-40", num_slots=16).observation_space
    extractor = SlotSetExtractor(obs_space, num_slots=16)
    env = MultipathDeadlineEnv(scenario="dams-rtt-40", num_slots=16)
    obs = torch.as_tensor(np.stack([env.reset(seed=s)[0] for s in range(4)]))
    slots, valid, paths, deciding = extractor._parts(obs)
    path_emb = extractor.path_encoder((paths - extractor.path_mean) / extractor.path_std) * paths[..., :1]
    context = torch.cat([(path_emb * deciding[..., None]).sum(1),
                         path_emb.sum(1) / paths[..., :1].sum(1).clamp(min=1.0)], -1)
    x = torch.cat([(slots - extractor.slot_mean) / extractor.slot_std, context[:, None, :].expand(-1, 16, -1)], -1)
    emb = extractor.slot_encoder(x) * valid[..., None]
    torch.testing.assert_close(extractor(obs)[:, : 16 * extractor.embed_dim], emb.flatten(1), rtol=1e-6, atol=1e-6)


def test_the_masked_distribution_gives_sb3_contribs_numbers() -> None:
    """Log-probabilities, entropies and probabilities as sb3-contrib's
    MaskableCategoricalDistribution gives them, and the same modes, masked or not;
    samples follow the probabilities and never take a masked action."""
    g = torch.Generator().manual_seed(0)
    for rows in (1, 16, 512):
        logits = torch.randn(rows, 17, generator=g) * 3
        masks = (torch.rand(rows, 17, generator=g) < 0.5).numpy()
        masks[:, -1] = True
        actions = torch.as_tensor(np.array([np.flatnonzero(m)[0] for m in masks]))
        for mask in (masks, None):
            ours, theirs = MaskedCategorical(17).proba_distribution(logits), \
                MaskableCategoricalDistribution(17).proba_distribution(logits)
            ours.apply_masking(mask)
            theirs.apply_masking(mask)
            # sb3-contrib normalizes the logits twice (before and after masking), this once
            torch.testing.assert_close(ours.log_prob(actions), theirs.log_prob(actions), rtol=1e-6, atol=1e-6)
            torch.testing.assert_close(ours.entropy(), theirs.entropy(), rtol=1e-6, atol=1e-6)
            torch.testing.assert_close(ours.probs, theirs.distribution.probs, rtol=1e-6, atol=1e-7)
            assert torch.equal(ours.mode(), theirs.mode())
    probs = torch.tensor([0.1, 0.0, 0.6, 0.05, 0.25])
    dist = MaskedCategorical(5).proba_distribution(probs.clamp(min=1e-3).log().repeat(100_000, 1))
    dist.apply_masking(np.repeat([[True, False, True, True, True]], 100_000, 0))
    torch.manual_seed(1)
    counts = torch.bincount(dist.get_actions(), minlength=5).double() / 100_000
    assert counts[1] == 0
    expected = dist.probs[0].double()
    # five standard errors of a frequency out of 100,000 draws
    assert torch.all((counts - expected).abs() <= 5 * (expected * (1 - expected) / 100_000).sqrt() + 1e-12)


def _slot_policy(seed: int) -> SlotPolicy:
    env = MultipathDeadlineEnv(scenario="dams-rtt-40", num_slots=16)
    torch.manual_seed(seed)
    return SlotPolicy(env.observation_space, env.action_space, lambda _: 1e-3, net_arch=[64],
                      features_extractor_kwargs={"num_slots": 16, "embed_dim": 32, "path_dim": 32})


def _visited_observations(rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Observations and masks of random allowed play: full and empty slots, expired blocks."""
    env = MultipathDeadlineEnv(scenario="dams-bw-1.5-2", num_slots=16)
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=3)
    seen, masks = [], []
    while len(seen) < rows:
        mask = env.unwrapped.action_masks()
        seen.append(obs)
        masks.append(mask)
        obs, _, terminated, truncated, _ = env.step(int(rng.choice(np.flatnonzero(mask))))
        if terminated or truncated:
            obs, _ = env.reset()
    return np.stack(seen), np.stack(masks)


def test_large_batches_run_the_slot_layers_on_occupied_slots_only_with_the_same_values_and_gradients() -> None:
    """From 64 rows the extractor and the slot head compute the occupied slots alone and
    pool them by row (occupied_map, _RowMaximum); 16-row pieces of the same batch take
    the dense path. Features, logits, values and every parameter's gradient agree."""
    policy = _slot_policy(0)
    obs_np, masks = _visited_observations(128)
    valid = obs_np[:, 0: 16 * 8: 8]
    assert 0 < valid.mean() < 1 and (valid.sum(1) == 0).any() | (valid.sum(1) < 16).any()
    obs = torch.as_tensor(obs_np)
    actions = torch.as_tensor(np.array([np.flatnonzero(m)[-1] for m in masks]))

    def run(pieces: int) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        policy.zero_grad()
        outputs = []
        for part in torch.arange(128).chunk(pieces):
            values, log_prob, entropy = policy.evaluate_actions(obs[part], actions[part], action_masks=masks[part])
            outputs.append(torch.stack([values.flatten(), log_prob, entropy], 1))
            (values.sum() + log_prob.sum() + entropy.sum()).backward()
        features = torch.cat([policy.extract_features(obs[part]) for part in torch.arange(128).chunk(pieces)])
        grads = {name: param.grad.clone() for name, param in policy.named_parameters() if param.grad is not None}
        return torch.cat(outputs).detach(), features.detach(), grads

    dense_out, dense_features, dense_grads = run(8)
    compact_out, compact_features, compact_grads = run(1)
    torch.testing.assert_close(compact_features, dense_features, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(compact_out, dense_out, rtol=1e-5, atol=1e-5)
    assert dense_grads.keys() == compact_grads.keys() and len(dense_grads) == len(list(policy.parameters()))
    for name, grad in dense_grads.items():
        torch.testing.assert_close(compact_grads[name], grad, rtol=1e-4, atol=1e-5, msg=name)


def test_rollout_steps_run_the_network_in_numpy_and_follow_training(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without gradients a small batch goes through numpy (slot_numpy.actor_critic) on views
    of the weights: the same greedy actions, values and log-probabilities as torch's
    forward pass, before and after an optimizer step changes the weights."""
    policy = _slot_policy(1)
    obs_np, masks = _visited_observations(48)
    obs = torch.as_tensor(obs_np)
    calls = []
    original = features_module.actor_critic

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(features_module, "actor_critic", counted)
    for step in range(2):
        with torch.no_grad():
            actions, values, log_prob = policy(obs, deterministic=True, action_masks=masks)
            assert len(calls) == step + 1
            expected = super(SlotPolicy, policy).forward(obs, deterministic=True, action_masks=masks)
        assert torch.equal(actions, expected[0])
        torch.testing.assert_close(values, expected[1], rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(log_prob, expected[2], rtol=1e-5, atol=1e-5)
        if step == 0:  # one update: the numpy pass must see the new weights
            v, lp, ent = policy.evaluate_actions(obs, actions, action_masks=masks)
            policy.optimizer.zero_grad()
            (v.sum() - lp.sum() - ent.sum()).backward()
            policy.optimizer.step()
            before = values
    assert not torch.equal(before, values)
