"""Feature extractors and the slot-scoring policy of the learned schedulers.

The flat observation of ``mpsched/MultipathDeadline-v0`` (docs/model.md, section 10;
:func:`mpsched.envs.env.observation_layout`) holds K block slots, Pmax path entries and the
one-hot of the deciding path. Two extractors read it:

- :class:`FlatExtractor`: the whole vector, standardized entry by entry (SB3's default MLP
  then reads it);
- :class:`SlotSetExtractor`: one encoder shared by every slot (a block's own features,
  the bytes queued ahead of it and the deciding path's state), masked mean and max
  pooling over the occupied slots, and a shared path encoder. Its pooled summary does not
  change when slots are permuted; its per-slot embeddings permute with the slots.

:class:`SlotPolicy` (MaskablePPO, PPO) scores every slot with one shared head on its
embedding and the pooled summary, and WAIT from the summary alone: the action
distribution permutes with the slots and the value does not depend on their order.

Both extractors standardize their inputs with statistics fitted on observations before
training (:meth:`fit_normalization`) and stored as buffers, so that they are saved and
loaded with the model.
"""

from __future__ import annotations

from typing import Any, cast

import gymnasium as gym
import numpy as np
import torch
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn
from torch.nn import functional as F

from ..envs.env import PATH_FEATURES, SLOT_FEATURES

__all__ = ["FlatExtractor", "SlotSetExtractor", "SlotPolicy", "EXTRACTORS", "slot_dims"]

_SLOT_BASE = len(SLOT_FEATURES)
_PATH_FEATURES = len(PATH_FEATURES)
_DERIVED = 3            # packets in flight on the deciding path, packets queued ahead, expired
_MIN_STD = 1e-3


def slot_dims(obs_dim: int, num_slots: int) -> int:
    """Pmax from the observation length: ``K (6 + Pmax) + 9 Pmax = obs_dim``."""
    max_paths, rest = divmod(obs_dim - _SLOT_BASE * num_slots, num_slots + _PATH_FEATURES + 1)
    if rest or max_paths < 1:
        raise ValueError(f"an observation of length {obs_dim} does not hold {num_slots} slots")
    return max_paths


def _standardize(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation per column (float32, std floored)."""
    x = np.asarray(x, dtype=np.float64)
    if len(x) == 0:
        return np.zeros(x.shape[1], np.float32), np.ones(x.shape[1], np.float32)
    return x.mean(0).astype(np.float32), np.maximum(x.std(0), _MIN_STD).astype(np.float32)


class FlatExtractor(BaseFeaturesExtractor):
    """The flat observation, standardized entry by entry.

    Parameters
    ----------
    observation_space : gym.spaces.Box
    num_slots : int
        K (kept so that every extractor is built the same way).
    """

    mean: torch.Tensor
    std: torch.Tensor

    def __init__(self, observation_space: gym.spaces.Box, num_slots: int = 16) -> None:
        dim = int(observation_space.shape[0])
        super().__init__(observation_space, features_dim=dim)
        self.num_slots = num_slots
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("std", torch.ones(dim))

    def fit_normalization(self, observations: np.ndarray) -> None:
        mean, std = _standardize(observations)
        self.mean.copy_(torch.as_tensor(mean))
        self.std.copy_(torch.as_tensor(std))

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return (observations - self.mean) / self.std


class SlotSetExtractor(BaseFeaturesExtractor):
    """Shared per-slot encoder, masked pooling and path features (module docstring).

    The output is ``[e_0 .. e_{K-1}, mean_k e_k, max_k e_k, deciding path, mean path]``
    with ``e_k`` zero for an empty slot; :attr:`embed_dim` and :attr:`num_slots` say where
    each part lies.

    Parameters
    ----------
    observation_space : gym.spaces.Box
    num_slots : int
        K.
    embed_dim : int
        Width of a slot embedding.
    path_dim : int
        Width of a path embedding.
    """

    slot_mean: torch.Tensor
    slot_std: torch.Tensor
    path_mean: torch.Tensor
    path_std: torch.Tensor

    def __init__(self, observation_space: gym.spaces.Box, num_slots: int = 16, embed_dim: int = 32,
                 path_dim: int = 32) -> None:
        K = int(num_slots)
        P = slot_dims(int(observation_space.shape[0]), K)
        super().__init__(observation_space, features_dim=K * embed_dim + 2 * embed_dim + 2 * path_dim)
        self.num_slots, self.max_paths, self.embed_dim, self.path_dim = K, P, embed_dim, path_dim
        self.slot_width = _SLOT_BASE + P
        slot_in = self.slot_width + _DERIVED
        self.register_buffer("slot_mean", torch.zeros(slot_in))
        self.register_buffer("slot_std", torch.ones(slot_in))
        self.register_buffer("path_mean", torch.zeros(_PATH_FEATURES))
        self.register_buffer("path_std", torch.ones(_PATH_FEATURES))
        self.path_encoder = nn.Sequential(nn.Linear(_PATH_FEATURES, path_dim), nn.ReLU())
        self.slot_encoder = nn.Sequential(
            nn.Linear(slot_in + 2 * path_dim, embed_dim), nn.ReLU(), nn.Linear(embed_dim, embed_dim), nn.ReLU())

    def _parts(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Raw slot features with the derived ones, the slot mask, path features, deciding one-hot."""
        K, P, w = self.num_slots, self.max_paths, self.slot_width
        slots = obs[:, : K * w].reshape(-1, K, w)
        paths = obs[:, K * w: K * w + _PATH_FEATURES * P].reshape(-1, P, _PATH_FEATURES)
        deciding = obs[:, K * w + _PATH_FEATURES * P:]
        valid = slots[..., 0]
        remaining = slots[..., 1] * valid
        inflight_here = (slots[..., _SLOT_BASE:] * deciding[:, None, :]).sum(-1)
        # Slots are in urgency order: the packets queued ahead of a block are what an
        # earliest-deadline sender would send before it.
        ahead = torch.cumsum(remaining, dim=1) - remaining
        expired = (slots[..., 2] <= 0).float() * valid
        features = torch.cat([slots, inflight_here[..., None], ahead[..., None], expired[..., None]], -1)
        return features, valid, paths, deciding

    def fit_normalization(self, observations: np.ndarray) -> None:
        """Statistics of the occupied slots' and present paths' features."""
        with torch.no_grad():
            slots, valid, paths, _ = self._parts(torch.as_tensor(np.asarray(observations, np.float32)))
        s_mean, s_std = _standardize(slots[valid > 0].numpy())
        present = paths[..., 0] > 0
        p_mean, p_std = _standardize(paths[present].numpy())
        for buf, value in ((self.slot_mean, s_mean), (self.slot_std, s_std), (self.path_mean, p_mean),
                           (self.path_std, p_std)):
            buf.copy_(torch.as_tensor(value))

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        slots, valid, paths, deciding = self._parts(observations)
        present = paths[..., :1]
        path_emb = self.path_encoder((paths - self.path_mean) / self.path_std) * present
        here = (path_emb * deciding[..., None]).sum(1)
        mean_path = path_emb.sum(1) / present.sum(1).clamp(min=1.0)
        context = torch.cat([here, mean_path], -1)
        normalized = (slots - self.slot_mean) / self.slot_std
        first = shared_input_linear(cast(nn.Linear, self.slot_encoder[0]), normalized, context)
        emb = self.slot_encoder[1:](first) * valid[..., None]
        count = valid.sum(1, keepdim=True).clamp(min=1.0)
        pooled_mean = emb.sum(1) / count
        pooled_max = (emb - (1.0 - valid[..., None]) * 1e4).max(1).values.clamp(min=0.0)
        return torch.cat([emb.flatten(1), pooled_mean, pooled_max, context], -1)


def shared_input_linear(layer: nn.Linear, per_slot: torch.Tensor, shared: torch.Tensor) -> torch.Tensor:
    """``layer`` applied to ``[per_slot[:, k], shared]`` for every slot k.

    The same map as concatenating ``shared`` to each slot, but the product with the
    shared part (most of the input: the path context, or the pooled summary) is computed
    once per row instead of once per slot: the weight's columns split at the slot width.
    """
    width = per_slot.shape[-1]
    weight = layer.weight
    return F.linear(per_slot, weight[:, :width]) + F.linear(shared, weight[:, width:], layer.bias)[:, None, :]


EXTRACTORS: dict[str, type[BaseFeaturesExtractor]] = {"flat": FlatExtractor, "set": SlotSetExtractor}
"""Extractor names of the hyperparameter files (``extractor: set``)."""


class SlotHeads(nn.Module):
    """Actor and critic on :class:`SlotSetExtractor` features.

    The actor returns K + 1 logits: slot k from a head shared by all slots on
    ``[e_k, summary]``, WAIT from the summary; the critic reads the summary.
    """

    def __init__(self, num_slots: int, embed_dim: int, summary_dim: int, hidden: int) -> None:
        super().__init__()
        self.num_slots, self.embed_dim = num_slots, embed_dim
        self.latent_dim_pi = num_slots + 1
        self.latent_dim_vf = hidden
        self.slot_score = nn.Sequential(nn.Linear(embed_dim + summary_dim, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        self.wait_score = nn.Sequential(nn.Linear(summary_dim, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        self.critic = nn.Sequential(nn.Linear(summary_dim, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())

    def _split(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        K, d = self.num_slots, self.embed_dim
        return features[:, : K * d].reshape(-1, K, d), features[:, K * d:]

    def forward_actor(self, features: torch.Tensor) -> torch.Tensor:
        emb, summary = self._split(features)
        first = shared_input_linear(cast(nn.Linear, self.slot_score[0]), emb, summary)
        return torch.cat([self.slot_score[1:](first).squeeze(-1), self.wait_score(summary)], -1)

    def forward_critic(self, features: torch.Tensor) -> torch.Tensor:
        return self.critic(self._split(features)[1])

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.forward_actor(features), self.forward_critic(features)


class SlotPolicy(MaskableActorCriticPolicy):
    """MaskablePPO policy whose logits come from :class:`SlotHeads` (module docstring).

    Needs :class:`SlotSetExtractor`; ``net_arch`` is the heads' hidden width (an int or
    a one-element list).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("features_extractor_class", SlotSetExtractor)
        if kwargs["features_extractor_class"] is not SlotSetExtractor:
            raise ValueError("SlotPolicy reads SlotSetExtractor features (extractor: set)")
        super().__init__(*args, **kwargs)

    def _build_mlp_extractor(self) -> None:
        ex = cast(SlotSetExtractor, self.features_extractor)  # __init__ insists on it
        hidden = self.net_arch[0] if isinstance(self.net_arch, list) and self.net_arch else self.net_arch
        hidden = int(hidden) if isinstance(hidden, int) else 64
        summary = ex.features_dim - ex.num_slots * ex.embed_dim
        # SB3 types mlp_extractor as MlpExtractor; any module with its latent_dim_* and forward_* will do
        self.mlp_extractor = SlotHeads(ex.num_slots, ex.embed_dim, summary, hidden)  # type: ignore[assignment]

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        # The heads already give one logit per action: no linear layer mixes the slots.
        self.action_net = nn.Identity()
        heads = cast(SlotHeads, self.mlp_extractor)  # _build_mlp_extractor's
        for head in (heads.slot_score, heads.wait_score):
            last = cast(nn.Linear, head[-1])  # SlotHeads' scores end in a linear layer
            nn.init.orthogonal_(last.weight, gain=0.01)
            nn.init.zeros_(last.bias)
        self.optimizer = self.optimizer_class(  # type: ignore[call-arg]  # SB3: optimizer_class takes lr
            self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)
