"""Training: MaskablePPO, PPO, DQN, behaviour cloning and DAgger on a suite's train split.

:func:`train` is ``mpsched train``: it reads the algorithm's hyperparameters
(``agents/hyperparams/ALGO.yaml``, overridden by ``--hp key=value``), draws episodes from
a pool of training episodes (a suite's train groups) through :class:`~mpsched.agents.vec_env.NativeVecEnv`,
optionally clones an expert first (``--from-expert``) or imitates a teacher on the
learner's own states (``dagger``, :mod:`mpsched.agents.dagger`), evaluates on held-out episodes of
the test groups every ``eval_freq`` steps, writes checkpoints, and saves the model
directory (:mod:`mpsched.agents.model`).
"""

from __future__ import annotations

import copy
import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
import yaml
from stable_baselines3.common.callbacks import BaseCallback, CallbackList
from stable_baselines3.common.utils import set_random_seed
from stable_baselines3.common.vec_env import VecEnv, VecMonitor, VecNormalize

from ..envs.env import PATH_FEATURES
from ..envs.episode import build_episode
from ..envs.errors import MpschedError
from ..envs.pool import EpisodePool
from .dagger import make_teacher, mixture_demonstrations
from .experts import EXPERTS, Demonstrations, demonstrations
from .features import EXTRACTORS, FlatExtractor, SlotSetExtractor
from .model import (
    ALGOS,
    META_FILE,
    MODEL_FILE,
    AgentPolicy,
    action_scores,
    greedy_actions,
    load,
    policy_setup,
    sb3_class,
)
from .slot_numpy import SLOT_INPUTS
from .vec_env import MaskRules, NativeVecEnv

__all__ = ["HYPERPARAMS_DIR", "TrainingError", "TrainResult", "behaviour_clone", "evaluate_batched",
           "load_hyperparams", "train"]

HYPERPARAMS_DIR = Path(__file__).resolve().parent / "hyperparams"

_RUN_KEYS = ("n_timesteps", "eval_freq", "eval_episodes", "checkpoint_freq", "torch_threads")
_ENV_KEYS = ("n_envs", "num_slots", "extractor", "mask_expired", "hold_gain", "mask_reachable", "normalize_reward")
_BC_KEYS = ("expert_steps", "bc_epochs", "bc_batch_size", "bc_learning_rate", "finetune")
_DAGGER_KEYS = ("teacher", "teacher_params", "dagger_iterations", "beta_decay")
IMITATION_ALGOS = ("bc", "dagger")
"""Algorithms that only imitate (no environment reward): ``--timesteps`` counts labelled decisions."""
FROM_MODEL_ALGOS = ("maskable_ppo", "dagger")
"""Algorithms that can start from a saved model's network (``--from-model``)."""
MASK_KEYS = ("mask_expired", "hold_gain", "mask_reachable")
"""Hyperparameters of the mask rules (:class:`~mpsched.agents.vec_env.MaskRules`)."""
_NETWORK_KEYS = ("num_slots", "extractor", "policy_kwargs")
"""Hyperparameters that shape the network: a start model must have been trained with the same."""
CHECKPOINTS = "checkpoints"
VECNORMALIZE_FILE = "vecnormalize.pkl"


class TrainingError(MpschedError):
    """Bad input to training: an unknown algorithm or expert, a bad hyperparameter."""


@dataclass
class TrainResult:
    """What a training run produced."""

    out: Path
    algo: str
    seed: int
    timesteps: int
    """Environment steps of reinforcement learning (``bc``: expert decisions; ``dagger``:
    teacher-labelled decisions)."""
    train_s: float
    evaluations: list[dict[str, float]] = field(default_factory=list)
    imitation: dict[str, Any] = field(default_factory=dict)
    model: Any = None
    """The trained SB3 model (as saved in ``out/model.zip``)."""


# ---------------------------------------------------------------------------------------
# Hyperparameters
# ---------------------------------------------------------------------------------------


def _set_dotted(target: dict[str, Any], key: str, value: Any) -> None:
    parts = key.split(".")
    node = target
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[parts[-1]] = value


def _override(text: str) -> tuple[str, str]:
    """The key (stripped) and raw value of a ``--hp KEY=VALUE`` override."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise TrainingError(f"--hp: got {text!r}; expected KEY=VALUE (e.g. learning_rate=1e-4)")
    return key.strip(), raw


def load_hyperparams(algo: str, suite: str = "default", overrides: Sequence[str] = ()) -> dict[str, Any]:
    """An algorithm's hyperparameters for a suite (its entry, else ``default``) with
    ``key=value`` overrides (values in YAML; dotted keys reach nested mappings).

    Raises
    ------
    TrainingError
        For an unknown algorithm or a malformed override.
    """
    if algo not in ALGOS:
        raise TrainingError(f"algo: got {algo!r}; expected one of {', '.join(ALGOS)}")
    table = yaml.safe_load((HYPERPARAMS_DIR / f"{algo}.yaml").read_text())
    hp = copy.deepcopy(table.get(suite, table["default"]))
    for text in overrides:
        key, raw = _override(text)
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError as exc:
            raise TrainingError(f"--hp {key}: {raw!r} is not a YAML value ({exc})") from None
        if isinstance(value, str):
            try:  # YAML reads 1e-4 (no decimal point) as a string
                value = float(value)
            except ValueError:
                pass
        _set_dotted(hp, key, value)
    if hp.get("extractor", "set") not in EXTRACTORS:
        raise TrainingError(f"extractor: got {hp.get('extractor')!r}; expected one of {', '.join(EXTRACTORS)}")
    return hp


def _algo_kwargs(hp: Mapping[str, Any]) -> dict[str, Any]:
    skip = set(_RUN_KEYS) | set(_ENV_KEYS) | set(_BC_KEYS) | set(_DAGGER_KEYS) | {"policy_kwargs"}
    return {k: v for k, v in hp.items() if k not in skip}


# ---------------------------------------------------------------------------------------
# Normalization and cloning
# ---------------------------------------------------------------------------------------


def fit_normalization(model: Any, observations: np.ndarray) -> None:
    """Fit every extractor of the model (DQN has one per Q-network) on observations."""
    for module in model.policy.modules():
        if isinstance(module, (FlatExtractor, SlotSetExtractor)):
            module.fit_normalization(observations)


def _sample_observations(env: VecEnv, steps: int, seed: int) -> np.ndarray:
    """Observations of uniformly random allowed actions (to fit the normalization)."""
    rng = np.random.default_rng(seed)
    obs = env.reset()
    out = [obs]
    for _ in range(max(1, steps // env.num_envs)):
        masks = np.stack(env.env_method("action_masks"))
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        obs, _, _, _ = env.step(actions)
        out.append(obs)
    return np.concatenate(cast(list[np.ndarray], out))  # Box observations: arrays


def behaviour_clone(model: Any, algo: str, demos: Demonstrations, epochs: int, batch_size: int,
                    learning_rate: float, seed: int, log: Callable[[str], None] = print) -> dict[str, float]:
    """Train the policy's action scores to the expert's actions (cross-entropy over the
    allowed actions); 5 % of the decisions are held out to measure the accuracy.

    Returns
    -------
    dict
        ``train_accuracy``, ``heldout_accuracy``, ``loss``, ``decisions``.
    """
    if len(demos) < 20:
        raise TrainingError(f"behaviour cloning needs demonstrations; got {len(demos)} decisions")
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(demos))
    cut = max(1, len(demos) // 20)
    held, used = order[:cut], order[cut:]
    obs = torch.as_tensor(demos.observations)
    masks = torch.as_tensor(demos.masks)
    actions = torch.as_tensor(demos.actions)
    policy = model.policy
    optimizer = torch.optim.Adam(policy.parameters(), lr=learning_rate)
    generator = torch.Generator().manual_seed(seed)

    def accuracy(index: np.ndarray) -> float:
        policy.set_training_mode(False)
        hits = 0
        for start in range(0, len(index), 4096):
            i = index[start: start + 4096]
            hits += int((torch.as_tensor(greedy_actions(model, algo, demos.observations[i], demos.masks[i]))
                         == actions[i]).sum())
        return hits / max(1, len(index))

    loss_value = float("nan")
    used_t = torch.as_tensor(used)
    for epoch in range(epochs):
        policy.set_training_mode(True)
        perm = used_t[torch.randperm(len(used_t), generator=generator)]
        total, batches = 0.0, 0
        for start in range(0, len(perm), batch_size):
            i = perm[start: start + batch_size]
            scores = action_scores(model, algo, obs[i]).masked_fill(~masks[i], -torch.inf)
            loss = torch.nn.functional.cross_entropy(scores, actions[i])
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
            optimizer.step()
            total += float(loss.detach())
            batches += 1
        loss_value = total / max(1, batches)
        log(f"behaviour cloning: epoch {epoch + 1}/{epochs}, loss {loss_value:.4f}")
    result = {"train_accuracy": accuracy(used[: min(len(used), 50000)]), "heldout_accuracy": accuracy(held),
              "loss": loss_value, "decisions": float(len(demos))}
    policy.set_training_mode(False)
    return result


# ---------------------------------------------------------------------------------------
# Held-out evaluation
# ---------------------------------------------------------------------------------------


def evaluation_pool(pool: EpisodePool, episodes: int) -> EpisodePool:
    """The first ``episodes`` episodes taking one seed of every scenario in turn."""
    picked: list[list[int]] = [[] for _ in pool.scenarios]
    count, depth = 0, 0
    while count < episodes and any(depth < len(s) for s in pool.seeds):
        for i, seeds in enumerate(pool.seeds):
            if count < episodes and depth < len(seeds):
                picked[i].append(seeds[depth])
                count += 1
        depth += 1
    keep = [i for i, p in enumerate(picked) if p]
    return replace(pool, scenarios=tuple(pool.scenarios[i] for i in keep), seeds=tuple(tuple(picked[i]) for i in keep))


def evaluate_batched(model: Any, algo: str, pool: EpisodePool, num_slots: int, max_paths: int,
                     rules: MaskRules) -> dict[str, float]:
    """Weighted on-time rate of the greedy policy on every episode of a pool, all stepped
    together (one native call and one network call per step).

    Returns
    -------
    dict
        ``weighted_on_time_rate`` (mean over episodes) and ``episodes``.
    """
    episodes = pool.episodes
    env = NativeVecEnv(pool, len(episodes), num_slots, max_paths, rules=rules, sequential=True)
    totals = np.array([float(np.sum(build_episode(sc, s).blocks.weight)) for sc, s in episodes])
    obs = env.reset()
    returns = np.zeros(len(episodes))
    running = np.ones(len(episodes), dtype=bool)
    while running.any():
        actions = greedy_actions(model, algo, obs, env.action_masks())
        # NativeVecEnv.step_wait returns arrays; SB3 types VecEnv.step for any observation space
        obs, rewards, dones, _ = cast(tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]],
                                      env.step(actions))
        returns += rewards * running
        running &= ~dones
    rates = np.where(totals > 0, returns / np.maximum(totals, 1e-12), 0.0)
    return {"weighted_on_time_rate": float(rates.mean()), "episodes": float(len(episodes))}


# ---------------------------------------------------------------------------------------
# Callbacks
# ---------------------------------------------------------------------------------------


class ProgressBar(BaseCallback):
    """A tqdm bar over the run's environment steps."""

    def __init__(self, total: int, initial: int = 0) -> None:
        super().__init__()
        self.total, self.initial = total, initial
        self.bar: Any = None

    def _on_training_start(self) -> None:
        from tqdm import tqdm

        self.bar = tqdm(total=self.total, initial=self.initial, unit="step", dynamic_ncols=True, file=sys.stderr)

    def _on_step(self) -> bool:
        self.bar.update(self.training_env.num_envs)
        return True

    def _on_training_end(self) -> None:
        self.bar.close()


class HeldOutEvaluation(BaseCallback):
    """Evaluate on held-out episodes every ``freq`` steps; log and keep the scores."""

    def __init__(self, pool: EpisodePool, algo: str, num_slots: int, max_paths: int, rules: MaskRules,
                 freq: int, log: Callable[[str], None]) -> None:
        super().__init__()
        self.pool, self.algo, self.num_slots, self.max_paths = pool, algo, num_slots, max_paths
        self.rules, self.freq, self.log = rules, max(1, int(freq)), log
        self.history: list[dict[str, float]] = []
        self._last = 0

    def evaluate(self) -> dict[str, float]:
        score = evaluate_batched(self.model, self.algo, self.pool, self.num_slots, self.max_paths, self.rules)
        score["timesteps"] = float(self.model.num_timesteps)
        self.history.append(score)
        if self.model.num_timesteps > 0:  # SB3 sets its logger up when learning starts
            self.logger.record("eval/weighted_on_time_rate", score["weighted_on_time_rate"])
        self.log(f"held-out evaluation at {self.model.num_timesteps} steps: weighted on-time rate "
                 f"{score['weighted_on_time_rate']:.4f} ({int(score['episodes'])} episodes)")
        return score

    def _on_training_start(self) -> None:
        self._last = self.model.num_timesteps  # a resumed run counts on from its checkpoint
        if self.model.num_timesteps == 0 and not self.history:
            self.evaluate()  # where learning starts (after cloning, the clone): the curve's first point

    def _on_step(self) -> bool:
        if self.model.num_timesteps - self._last >= self.freq:
            self._last = self.model.num_timesteps
            self.evaluate()
        return True


class Checkpoints(BaseCallback):
    """Save the model (and the reward normalization) every ``freq`` steps."""

    def __init__(self, folder: Path, freq: int) -> None:
        super().__init__()
        self.folder, self.freq = folder, max(1, int(freq))
        self._last = 0

    def _on_training_start(self) -> None:
        self._last = self.model.num_timesteps

    def _on_step(self) -> bool:
        if self.model.num_timesteps - self._last >= self.freq:
            self._last = self.model.num_timesteps
            save_checkpoint(self.model, self.folder)
        return True


def save_checkpoint(model: Any, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"step_{model.num_timesteps:012d}.zip"
    model.save(path)
    env = model.get_env()
    if isinstance(env, VecNormalize):
        env.save(str(path.with_suffix(".pkl")))
    return path


def latest_checkpoint(folder: Path) -> Path | None:
    found = sorted(folder.glob("step_*.zip"))
    return found[-1] if found else None


# ---------------------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------------------


def _make_env(pool: EpisodePool, hp: Mapping[str, Any], seed: int, max_paths: int) -> VecEnv:
    env: VecEnv = NativeVecEnv(pool, int(hp.get("n_envs", 16)), int(hp["num_slots"]), max_paths, seed=seed,
                               rules=MaskRules.of(hp))
    env = VecMonitor(env)
    if hp.get("normalize_reward", False):
        env = VecNormalize(env, norm_obs=False, norm_reward=True, gamma=float(hp.get("gamma", 0.99)))
    return env


def _tensorboard_dir(out: Path) -> str | None:
    try:
        import tensorboard  # noqa: F401  (optional: SB3 writes its logs only when it is installed)
    except ImportError:
        return None
    return str(out / "tb")


def train(algo: str, train_pool: EpisodePool, test_pool: EpisodePool, timesteps: int | None, out: str | Path,
          from_expert: str | None = None, seed: int = 0, overrides: Sequence[str] = (), resume: bool = False,
          progress: bool = True, command: str = "", log: Callable[[str], None] = print,
          max_paths: int | None = None, from_model: str | Path | None = None) -> TrainResult:
    """Train an agent on the episodes of ``train_pool`` and save it to ``out``.

    Parameters
    ----------
    algo : str
        ``maskable_ppo``, ``ppo``, ``dqn``, ``bc`` or ``dagger``.
    train_pool, test_pool : EpisodePool
        Episodes to train on, and those of the held-out evaluations during training (a
        suite's split, :meth:`mpsched.experiments.suite.Suite.pool`: its validation part
        when it has one). The hyperparameters are those of ``train_pool.suite`` (else
        ``default``).
    timesteps : int, optional
        Environment steps of reinforcement learning (for ``bc``: expert decisions; for
        ``dagger``: teacher-labelled decisions over all iterations);
        default: the hyperparameters' ``n_timesteps``.
    out : path
        Model directory to write (checkpoints in ``out/checkpoints``).
    from_expert : str, optional
        ``dams`` or ``optimum``: clone this expert first (``bc`` defaults to ``dams``).
    seed : int
        Seed of the network, the episode draws and the demonstrations.
    overrides : sequence of str
        ``key=value`` hyperparameter overrides.
    resume : bool
        Continue from the latest checkpoint in ``out/checkpoints``.
    progress : bool
        Show a progress bar.
    command : str
        The command line, kept in the model card.
    log : callable
        Where progress lines go.
    max_paths : int, optional
        Paths the model observes (its observation's path entries), at least the pools'
        largest path count: a suite whose test split has more paths than its training
        scenarios passes that count, so that the model can act there.
    from_model : str or Path, optional
        A shipped model's name or a model directory whose network (weights and input
        normalization) the run starts from instead of a fresh one (``maskable_ppo``:
        reinforcement learning from it with the ``finetune`` values; ``dagger``: every
        round's cloning continues from it). Its network hyperparameters
        (``num_slots``, ``extractor``, ``policy_kwargs``) and observed path count must be
        this run's. Its mask rules (``mask_expired``, ``hold_gain``, ``mask_reachable``)
        are the run's unless ``overrides`` set them.
    """
    if algo not in ALGOS:
        raise TrainingError(f"algo: got {algo!r}; expected one of {', '.join(ALGOS)}")
    if algo == "bc" and from_expert is None:
        from_expert = "dams"
    if from_expert is not None and from_expert not in EXPERTS:
        raise TrainingError(f"--from-expert: got {from_expert!r}; expected one of {', '.join(EXPERTS)}")
    if from_expert is not None and algo == "dagger":
        raise TrainingError("--from-expert: dagger takes its teacher from the hyperparameters (teacher, "
                            "teacher_params), not --from-expert")
    if from_expert is not None and algo == "dqn":
        raise TrainingError("--from-expert: imitation starts policy-gradient agents (maskable_ppo, ppo, bc), not dqn")
    if from_model is not None and from_expert is not None:
        raise TrainingError("--from-model and --from-expert: give one start")
    if from_model is not None and algo not in FROM_MODEL_ALGOS:
        raise TrainingError(f"--from-model: {algo} cannot start from a saved model; "
                            f"one of {', '.join(FROM_MODEL_ALGOS)} can")
    suite = train_pool.suite or "default"
    hp = load_hyperparams(algo, suite, overrides)
    total = int(timesteps if timesteps is not None else hp["n_timesteps"])
    if total < 0:
        raise TrainingError(f"--timesteps: got {total}; expected a number >= 0")
    if algo == "bc":
        hp["expert_steps"] = total
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    log(f"seed: {seed}")
    torch.set_num_threads(int(hp.get("torch_threads", 2)))
    set_random_seed(seed)
    test_pool = evaluation_pool(test_pool, int(hp.get("eval_episodes", 6)))
    K = int(hp["num_slots"])
    P = max(train_pool.max_paths, test_pool.max_paths, int(max_paths or 0))
    start = _start_model(from_model, hp, P) if from_model is not None else None
    if start is not None:
        # the start's masks, where --hp does not set others: its network chose among what they left
        given = {_override(o)[0] for o in overrides}
        hp.update({k: start.meta[k] for k in MASK_KEYS if k in start.meta and k not in given})
    try:
        rules = MaskRules.of(hp)
    except ValueError as exc:
        raise TrainingError(str(exc)) from None
    env = _make_env(train_pool, hp, seed, P)
    cls = sb3_class(algo)
    started = time.perf_counter()
    checkpoint = latest_checkpoint(out / CHECKPOINTS) if resume else None
    imitation: dict[str, Any] = {}
    len_demos = 0
    if checkpoint is not None:
        log(f"resuming from {checkpoint}")
        stats = checkpoint.with_suffix(".pkl")
        if isinstance(env, VecNormalize) and stats.exists():
            env = VecNormalize.load(str(stats), env.venv)
        model = cls.load(checkpoint, env=env, device="cpu", tensorboard_log=_tensorboard_dir(out))
        meta_path = out / CHECKPOINTS / "imitation.json"
        if meta_path.exists():
            imitation = json.loads(meta_path.read_text())
    else:
        if resume:
            log(f"no checkpoint in {out / CHECKPOINTS}: starting afresh")
        policy, policy_kwargs = policy_setup(algo, hp)
        kwargs = _algo_kwargs(hp) if algo not in IMITATION_ALGOS else {}
        try:
            model = cls(policy, env, policy_kwargs=policy_kwargs, seed=seed, device="cpu", verbose=0,
                        tensorboard_log=_tensorboard_dir(out), **kwargs)
        except TypeError as exc:
            raise TrainingError(f"hyperparameters of {algo}: {exc}") from None
        if start is not None:
            model.policy.load_state_dict(start.network.policy.state_dict())
            log(f"starting from the network of {start.directory}; masks: {rules}")
        demos = None
        if from_expert is not None and int(hp.get("expert_steps", 0)) > 0:
            steps = int(hp["expert_steps"])
            log(f"expert {from_expert}: recording {steps} decisions on the train split")
            bar = _bar(steps, "expert", progress)
            demos = demonstrations(from_expert, train_pool, steps, K, P, seed=seed, rules=rules,
                                   progress=bar.update)
            bar.close()
            len_demos = len(demos)
        if algo == "dagger":
            imitation, len_demos = _dagger(model, hp, train_pool, test_pool, total, K, P, rules, seed, log,
                                           progress, fit=start is None)
        elif start is not None:
            _apply_finetune(model, hp.get("finetune", {}) or {})
        else:
            fit_normalization(model, demos.observations if demos is not None else
                              _sample_observations(env, 20000, seed))
        if demos is not None:
            imitation = dict(behaviour_clone(model, algo, demos, int(hp["bc_epochs"]), int(hp["bc_batch_size"]),
                                             float(hp["bc_learning_rate"]), seed, log))
            imitation["expert"] = from_expert
            imitation["expert_weighted_on_time_rate"] = float(np.mean(demos.weighted_on_time)) \
                if demos.weighted_on_time else float("nan")
            log(f"behaviour cloning: accuracy {imitation['train_accuracy']:.4f} (train), "
                f"{imitation['heldout_accuracy']:.4f} (held out)")
            _apply_finetune(model, hp.get("finetune", {}) or {})
        (out / CHECKPOINTS).mkdir(parents=True, exist_ok=True)
        (out / CHECKPOINTS / "imitation.json").write_text(json.dumps(imitation))
    evaluation = HeldOutEvaluation(test_pool, algo, K, P, rules, int(hp.get("eval_freq", 50000)), log)
    remaining = 0 if algo in IMITATION_ALGOS else max(0, total - int(model.num_timesteps))
    if remaining > 0:
        callbacks: list[BaseCallback] = [evaluation,
                                         Checkpoints(out / CHECKPOINTS, int(hp.get("checkpoint_freq", 100000)))]
        if progress:
            callbacks.insert(0, ProgressBar(total, int(model.num_timesteps)))
        model.learn(total_timesteps=remaining, callback=CallbackList(callbacks),
                    reset_num_timesteps=checkpoint is None, tb_log_name=algo)
    train_s = time.perf_counter() - started
    if not evaluation.history or evaluation.history[-1]["timesteps"] != model.num_timesteps:
        evaluation.init_callback(model)
        evaluation.evaluate()
    final = evaluation.history[-1]
    steps = len_demos if algo in IMITATION_ALGOS else int(model.num_timesteps)
    result = TrainResult(out, algo, seed, steps, train_s, evaluation.history, imitation, model)
    _save(model, out, algo, hp, suite, from_expert, seed, P, result, command, test_pool.part,
          None if start is None else {"model": str(start.directory), "command": start.meta.get("command", ""),
                                      "seed": start.meta.get("seed")})
    log(f"saved {out} ({train_s:.0f} s of training; held-out weighted on-time rate "
        f"{final['weighted_on_time_rate']:.4f})")
    return result


def _start_model(from_model: str | Path, hp: Mapping[str, Any], max_paths: int) -> AgentPolicy:
    """The saved model a ``--from-model`` run starts from, refused when its network is not
    the one ``hp`` builds."""
    try:
        start = load(from_model)
    except MpschedError as exc:
        raise TrainingError(f"--from-model: {exc}") from None
    folder, meta = start.directory, start.meta
    if sb3_class(meta["algo"]) is not sb3_class("maskable_ppo"):
        raise TrainingError(f"--from-model {folder}: a {meta['algo']} model; a start needs the MaskablePPO network "
                            "(maskable_ppo, bc or dagger)")
    theirs = dict(meta.get("hyperparams") or {}, num_slots=meta["num_slots"], extractor=meta.get("extractor", "set"))
    differ = [f"{k} {theirs.get(k)!r} (this run: {hp.get(k)!r})" for k in _NETWORK_KEYS if theirs.get(k) != hp.get(k)]
    if int(meta["max_paths"]) != max_paths:
        differ.append(f"max_paths {meta['max_paths']} (this run: {max_paths})")
    if differ:
        raise TrainingError(f"--from-model {folder}: its network differs: " + "; ".join(differ))
    return start


def _dagger(model: Any, hp: Mapping[str, Any], train_pool: EpisodePool, test_pool: EpisodePool, total: int,
            num_slots: int, max_paths: int, rules: MaskRules, seed: int, log: Callable[[str], None],
            progress: bool, fit: bool = True) -> tuple[dict[str, Any], int]:
    """DAgger (:mod:`mpsched.agents.dagger`): ``dagger_iterations`` rounds of ``total /
    iterations`` labelled decisions each, the first by the teacher alone; the network is
    cloned again on the aggregate after each round and evaluated on ``test_pool``. With
    ``fit`` the input normalization is fitted on the first round's observations; without,
    the network's own is kept (a start from a saved model)."""
    iterations = int(hp["dagger_iterations"])
    decay = float(hp["beta_decay"])
    if iterations < 1 or not 0.0 <= decay <= 1.0:
        raise TrainingError(f"dagger: dagger_iterations must be >= 1 and beta_decay in [0, 1]; got {iterations} "
                            f"and {decay}")
    teacher_name = str(hp["teacher"])
    try:
        teacher = make_teacher(teacher_name, hp.get("teacher_params") or {})
    except MpschedError as exc:
        raise TrainingError(f"dagger: teacher {teacher_name!r}: {exc}") from None
    per_round = max(20, total // iterations)
    parts: list[Demonstrations] = []
    rounds: list[dict[str, Any]] = []
    result: dict[str, Any] = {}
    for i in range(iterations):
        beta = decay ** i
        log(f"dagger round {i + 1}/{iterations}: beta {beta:.3f}, recording {per_round} decisions labelled by "
            f"{teacher_name}")
        bar = _bar(per_round, "label", progress)
        part = mixture_demonstrations(model, "dagger", teacher, train_pool, per_round, num_slots, max_paths, beta,
                                      seed=seed + i, rules=rules, progress=bar.update)
        bar.close()
        parts.append(part)
        if i == 0 and fit:
            fit_normalization(model, part.observations)
        aggregate = Demonstrations.concatenate(parts)
        result = behaviour_clone(model, "dagger", aggregate, int(hp["bc_epochs"]), int(hp["bc_batch_size"]),
                                 float(hp["bc_learning_rate"]), seed + i, log)
        score = evaluate_batched(model, "dagger", test_pool, num_slots, max_paths, rules)
        rounds.append({"round": i + 1, "beta": beta, "labels": len(part), "aggregate": len(aggregate),
                       "mixture_weighted_on_time_rate": float(np.mean(part.weighted_on_time))
                       if part.weighted_on_time else float("nan"),
                       "heldout_accuracy": result["heldout_accuracy"],
                       "test_weighted_on_time_rate": score["weighted_on_time_rate"]})
        log(f"dagger round {i + 1}: accuracy {result['heldout_accuracy']:.4f} (held out), held-out weighted "
            f"on-time rate {score['weighted_on_time_rate']:.4f}")
    imitation: dict[str, Any] = dict(result)
    imitation.update({"expert": teacher_name, "teacher_params": dict(hp.get("teacher_params") or {}),
                      "rounds": rounds})
    return imitation, sum(len(p) for p in parts)


def _bar(total: int, unit: str, show: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, dynamic_ncols=True, file=sys.stderr, disable=not show)


def _apply_finetune(model: Any, values: Mapping[str, Any]) -> None:
    """Gentler settings for reinforcement learning from a cloned start."""
    from stable_baselines3.common.utils import FloatSchedule

    for key, value in values.items():
        if key == "learning_rate":
            model.learning_rate = float(value)
            model._setup_lr_schedule()
            for group in model.policy.optimizer.param_groups:
                group["lr"] = float(value)
        elif key == "clip_range":
            model.clip_range = FloatSchedule(float(value))
        elif hasattr(model, key):
            setattr(model, key, value)
        else:
            raise TrainingError(f"finetune.{key}: {type(model).__name__} has no such setting")


def _save(model: Any, out: Path, algo: str, hp: Mapping[str, Any], suite: str, from_expert: str | None,
          seed: int, max_paths: int, result: TrainResult, command: str, evaluated_on: str,
          from_model: dict[str, Any] | None = None) -> None:
    model.save(out / MODEL_FILE)
    env = model.get_env()
    if isinstance(env, VecNormalize):
        env.save(str(out / VECNORMALIZE_FILE))
    rules = MaskRules.of(hp)
    meta = {
        "algo": algo,
        "num_slots": int(hp["num_slots"]),
        "max_paths": int(max_paths),
        "mask_expired": rules.expired,
        "hold_gain": rules.hold_gain,
        "mask_reachable": rules.reachable,
        "path_features": list(PATH_FEATURES),
        "slot_inputs": list(SLOT_INPUTS),
        "extractor": hp.get("extractor", "set"),
        "suite": suite,
        "from_expert": from_expert,
        "from_model": from_model,
        "seed": seed,
        "timesteps": result.timesteps,
        "train_s": round(result.train_s, 1),
        "command": command,
        "hyperparams": hp,
        "imitation": result.imitation,
        "evaluations": result.evaluations,
        "evaluated_on": evaluated_on,
    }
    (out / META_FILE).write_text(json.dumps(meta, indent=2, default=str) + "\n")

