"""Saved models and the deterministic policy they give: :class:`AgentPolicy`, :func:`load`.

A model directory holds

- ``model.zip``: the SB3 model (network weights, with the extractor's input
  normalization as buffers);
- ``agent.json``: what the policy needs to run it (algorithm, K, Pmax, whether expired
  blocks are masked) and how it was trained (command, seed, time, scores);
- ``vecnormalize.pkl``: the reward normalization used in training (when any).

Shipped models live in ``agents/zoo/NAME/``; ``agent:NAME`` in a suite and ``load(NAME)``
find them by name, any other argument is a directory.
"""

from __future__ import annotations

import copy
import json
import zipfile
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..envs.env import PATH_FEATURES
from ..envs.errors import PolicyError
from ..envs.policy import WAIT, Observation, Policy
from ..envs.textfiles import exists
from .features import EXTRACTORS, SlotPolicy
from .inference import SlotSetScorer
from .slot_numpy import SLOT_INPUTS
from .vec_env import MaskRules, refine_masks

__all__ = ["ALGOS", "ZOO_DIR", "AgentPolicy", "load", "model_dir", "read_meta", "zoo_names"]

ZOO_DIR = Path(__file__).resolve().parent / "zoo"
"""Folder of the shipped models."""

ALGOS: tuple[str, ...] = ("maskable_ppo", "ppo", "dqn", "bc", "dagger")
"""Training algorithms (``bc`` saves a MaskablePPO model trained by cloning alone)."""

META_FILE = "agent.json"
MODEL_FILE = "model.zip"


def zoo_names() -> list[str]:
    """Names of the shipped models."""
    return sorted(p.name for p in ZOO_DIR.iterdir() if (p / META_FILE).exists()) if ZOO_DIR.exists() else []


def model_dir(name_or_path: str | Path) -> Path:
    """The directory of a shipped model's name or of a path.

    Raises
    ------
    PolicyError
        When neither is a model directory (naming what was looked for).
    """
    text = str(name_or_path)
    candidates = [Path(text)]
    if "/" not in text and text not in (".", ".."):
        candidates.append(ZOO_DIR / text)
    for path in candidates:
        if exists(path, "dir"):
            missing = [f for f in (META_FILE, MODEL_FILE) if not (path / f).exists()]
            if missing:
                raise PolicyError(f"agent {text!r}: {path} is not a model directory (missing {', '.join(missing)}; "
                                  "mpsched train --out DIR writes one)")
            return path
    raise PolicyError(f"agent {text!r}: no model directory {text!r} and no shipped model of that name "
                      f"(shipped: {', '.join(zoo_names()) or 'none'})")


def read_meta(directory: str | Path) -> dict[str, Any]:
    """A model directory's ``agent.json``."""
    path = Path(directory) / META_FILE
    try:
        meta = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise PolicyError(f"agent {str(directory)!r}: cannot read {path} ({exc})") from None
    for key in ("algo", "num_slots", "max_paths", "mask_expired"):
        if key not in meta:
            raise PolicyError(f"agent {str(directory)!r}: {path} has no {key!r}")
    if meta["algo"] not in ALGOS:
        raise PolicyError(f"agent {str(directory)!r}: algo {meta['algo']!r} is not one of {', '.join(ALGOS)}")
    if meta.get("path_features") != list(PATH_FEATURES):
        seen = ", ".join(meta["path_features"]) if "path_features" in meta else "an earlier layout's (not recorded)"
        raise PolicyError(f"agent {str(directory)!r}: trained on the path features {seen}; this build observes "
                          f"{', '.join(PATH_FEATURES)} (envs/core/obs.h): train it again")
    if meta.get("extractor", "set") == "set" and meta.get("slot_inputs") != list(SLOT_INPUTS):
        seen = ", ".join(meta["slot_inputs"]) if "slot_inputs" in meta else "an earlier layout's (not recorded)"
        raise PolicyError(f"agent {str(directory)!r}: its slot encoder read {seen}; this build's reads "
                          f"{', '.join(SLOT_INPUTS)} (mpsched.agents.slot_numpy.SLOT_INPUTS): train it again")
    try:
        MaskRules.of(meta)
    except (TypeError, ValueError) as exc:
        raise PolicyError(f"agent {str(directory)!r}: {path}: {exc}") from None
    return meta


def sb3_class(algo: str) -> Any:
    """The SB3 class that saves and loads a model of this algorithm."""
    if algo in ("maskable_ppo", "bc", "dagger"):
        from sb3_contrib import MaskablePPO

        return MaskablePPO
    if algo == "ppo":
        from stable_baselines3 import PPO

        return PPO
    if algo == "dqn":
        from stable_baselines3 import DQN

        return DQN
    raise ValueError(f"algo: got {algo!r}; expected one of {', '.join(ALGOS)}")


def policy_setup(algo: str, hp: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The SB3 policy (class or alias) and its keyword arguments for hyperparameters ``hp``."""
    kwargs = copy.deepcopy(dict(hp.get("policy_kwargs", {}) or {}))
    extractor = hp.get("extractor", "set")
    ex_kwargs = dict(kwargs.pop("features_extractor_kwargs", {}) or {})
    ex_kwargs["num_slots"] = int(hp["num_slots"])
    if extractor == "flat":
        ex_kwargs = {"num_slots": int(hp["num_slots"])}
    kwargs["features_extractor_class"] = EXTRACTORS[extractor]
    kwargs["features_extractor_kwargs"] = ex_kwargs
    if algo == "dqn":
        return "MlpPolicy", kwargs
    if extractor == "set":
        return SlotPolicy, kwargs
    if algo == "ppo":
        return "MlpPolicy", kwargs
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    return MaskableActorCriticPolicy, kwargs


def _no_schedule(_: float) -> float:
    """Stands for a training schedule in a model loaded only to act."""
    return 0.0


def safe_entries(path: str | Path, meta: Mapping[str, Any]) -> dict[str, Any]:
    """What replaces every pickled entry of an SB3 ``model.zip`` when it is loaded.

    SB3 stores the policy class, its keyword arguments, the spaces and the schedules of a
    model with cloudpickle; loading those runs whatever code a crafted file holds. Every
    such entry is replaced instead: the policy, its arguments and the spaces are rebuilt
    from ``agent.json`` (the algorithm, the extractor, the recorded hyperparameters, K and
    Pmax), schedules by a constant, anything else by None. Only the weights are read
    from the zip, by ``torch.load(weights_only=True)``.

    Raises
    ------
    PolicyError
        When the zip has no readable ``data`` entry.
    """
    from gymnasium import spaces
    from stable_baselines3.common.type_aliases import TrainFreq, TrainFrequencyUnit

    from ..envs import _core
    from ..envs.env import observation_space

    try:
        with zipfile.ZipFile(path) as zf:
            data = json.loads(zf.read("data"))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise PolicyError(f"agent model {str(path)!r}: not a readable SB3 model ({exc})") from None
    algo = str(meta["algo"])
    K, P = int(meta["num_slots"]), int(meta["max_paths"])
    hp = {**dict(meta.get("hyperparams") or {}), "num_slots": K, "extractor": meta.get("extractor", "set")}
    policy, policy_kwargs = policy_setup(algo, hp)
    if isinstance(policy, str):
        policy = sb3_class(algo).policy_aliases[policy]
    rebuilt: dict[str, Any] = {
        "policy_class": policy,
        "policy_kwargs": policy_kwargs,
        "observation_space": observation_space(int(_core.obs_dim(K, P))),
        "action_space": spaces.Discrete(K + 1),
        "lr_schedule": _no_schedule,
        "clip_range": _no_schedule,
        "exploration_schedule": _no_schedule,
        "train_freq": TrainFreq(1, TrainFrequencyUnit.STEP),
    }
    return {key: rebuilt.get(key) for key, value in data.items() if isinstance(value, dict) and ":serialized:" in value}


@lru_cache(maxsize=8)
def _load_network(path: str, mtime_ns: int, meta_json: str) -> Any:
    """The SB3 model of a zip, loaded once per file version without unpickling anything
    (:func:`safe_entries`); evaluation only reads it."""
    meta = json.loads(meta_json)
    try:
        model = sb3_class(meta["algo"]).load(path, device="cpu", custom_objects=safe_entries(path, meta))
    except (RuntimeError, ValueError, KeyError) as exc:
        raise PolicyError(f"agent model {path!r}: its weights do not fit the network agent.json describes "
                          f"({type(exc).__name__}: {str(exc)[:300]})") from None
    model.policy.set_training_mode(False)
    return model


def action_scores(model: Any, algo: str, observations: torch.Tensor) -> torch.Tensor:
    """Logits (policy gradient) or Q-values (DQN) of every action, shape (n, K + 1)."""
    policy = model.policy
    if algo == "dqn":
        return policy.q_net(observations)
    features = policy.extract_features(observations, policy.pi_features_extractor)
    return policy.action_net(policy.mlp_extractor.forward_actor(features))


def greedy_actions(model: Any, algo: str, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """The best-scored allowed action of each row (deterministic; lowest index on ties).
    Rows with one allowed action all: that action, without the network."""
    masks = np.asarray(masks, dtype=np.bool_)
    if (masks.sum(axis=-1) == 1).all():
        return masks.argmax(axis=-1)
    with torch.no_grad():
        scores = action_scores(model, algo, torch.as_tensor(observations, dtype=torch.float32))
        scores = scores.masked_fill(~torch.as_tensor(masks, dtype=torch.bool), -torch.inf)
        return scores.argmax(dim=1).numpy()


INFERENCE_BATCH_FOR_THREADS = 64
"""Observations in one forward pass from which the caller's torch threads are used."""


class AgentPolicy(Policy):
    """A trained model as a scheduler for :func:`mpsched.envs.simulate` and sweeps.

    At each decision point it writes the environment's observation of the current state
    (the vector it was trained on), masks as in training (empty slots, a WAIT that would
    leave the connection idle, and with the model's :class:`~mpsched.agents.vec_env.MaskRules`
    expired blocks and every send of a path at its cap) and sends a packet of the block in
    the best-scored slot, or WAITs. It never cancels blocks. Deterministic: the same state
    gives the same action.

    Parameters
    ----------
    model : str or Path
        A shipped model's name (``agents/zoo/NAME``) or a model directory.
    """

    paper = "learned scheduler (mpsched.agents)"

    def __init__(self, model: str | Path = "default") -> None:
        super().__init__()
        self.model = str(model)
        self.directory = model_dir(model)
        self.meta = read_meta(self.directory)
        self.name = f"agent:{self.model}"
        self.algo: str = self.meta["algo"]
        self.num_slots: int = int(self.meta["num_slots"])
        self.max_paths: int = int(self.meta["max_paths"])
        self.rules = MaskRules.of(self.meta)
        zip_path = self.directory / MODEL_FILE
        self.network = _load_network(str(zip_path.resolve()), zip_path.stat().st_mtime_ns,
                                     json.dumps(self.meta, sort_keys=True))
        self.scorer = SlotSetScorer.of(self.network.policy)
        from ..envs import _core

        self._obs = np.zeros(_core.obs_dim(self.num_slots, self.max_paths), np.float32)
        self._mask = np.zeros(self.num_slots + 1, np.bool_)
        self._slots = np.full(self.num_slots, -1, np.int32)

    def reset(self, obs: Observation) -> None:
        if obs.n_paths > self.max_paths:
            raise PolicyError(f"{self.name}: the scenario has {obs.n_paths} paths; the model reads at most "
                              f"{self.max_paths}")

    def act(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """Actions (slot, or K for WAIT) for a batch of environment observations and masks.

        A slot-set network (the default extractor) is evaluated by :class:`SlotSetScorer`
        in numpy, about ten times faster per decision than torch. Any other runs its torch
        forward pass on one thread (the caller's setting is restored after): the networks
        are small, a batch of one decision gains nothing from more threads, and on a busy
        machine extra threads wait on each other (15x slower with 2 threads on 2 loaded
        cores).
        """
        masks = refine_masks(np.array(masks, dtype=np.bool_), observations, self.num_slots, self.max_paths, self.rules)
        if self.scorer is not None:
            return self.scorer.greedy(observations, masks)
        threads = torch.get_num_threads()
        if threads == 1 or len(observations) > INFERENCE_BATCH_FOR_THREADS:
            return greedy_actions(self.network, self.algo, observations, masks)
        torch.set_num_threads(1)
        try:
            return greedy_actions(self.network, self.algo, observations, masks)
        finally:
            torch.set_num_threads(threads)

    def decide(self, obs: Observation) -> int:
        obs.write_env_observation(self.num_slots, self.max_paths, self._obs, self._mask, self._slots)
        action = int(self.act(self._obs[None], self._mask[None])[0])
        return WAIT if action == self.num_slots else int(self._slots[action])


def load(name_or_path: str | Path = "default", **params: Any) -> AgentPolicy:
    """The deterministic policy of a shipped model (by name) or a model directory.

    ``agent:NAME`` in a suite calls ``load(NAME, **params)``; no parameters are taken.
    Nothing in the directory is unpickled (:func:`safe_entries`): a model from elsewhere
    cannot run code when it is loaded.

    Raises
    ------
    PolicyError
        For a missing or incomplete model directory, or any parameter.
    """
    if params:
        raise PolicyError(f"agent {str(name_or_path)!r}: takes no parameters (got {', '.join(sorted(params))})")
    return AgentPolicy(name_or_path)
