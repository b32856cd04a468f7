"""Feature extractors and the slot-scoring policy of the learned schedulers.

The flat observation of ``mpsched/MultipathDeadline-v0`` (docs/model.md, section 10;
:func:`mpsched.envs.env.observation_layout`) holds K block slots, Pmax path entries and the
one-hot of the deciding path. Two extractors read it:

- :class:`FlatExtractor`: the whole vector, standardized entry by entry (SB3's default MLP
  then reads it);
- :class:`SlotSetExtractor`: one encoder shared by every slot (a block's own features,
  derived ones none of which is indexed by path, :data:`~mpsched.agents.slot_numpy.SLOT_INPUTS`,
  and the deciding path's state), masked mean and max pooling over the occupied slots,
  and a shared path encoder. Its pooled summary does not
  change when slots are permuted; its per-slot embeddings permute with the slots.

:class:`SlotPolicy` (MaskablePPO, PPO) scores every slot with one shared head on its
embedding and the pooled summary, and WAIT from the summary alone: the action
distribution permutes with the slots and the value does not depend on their order.

Both extractors standardize their inputs with statistics fitted on observations before
training (:meth:`fit_normalization`) and stored as buffers, so that they are saved and
loaded with the model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import gymnasium as gym
import numpy as np
import torch
from sb3_contrib.common.maskable.distributions import MaskableCategoricalDistribution, MaybeMasks
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn
from torch.nn import functional as F

from ..envs.env import PATH_FEATURES, SLOT_FEATURES
from .slot_numpy import SLOT_INPUTS, TIME_CLIP_S, SlotWeights, actor_critic, slot_weights, squashed_columns
from .vec_env import PACKET_MBIT

__all__ = ["FlatExtractor", "SlotSetExtractor", "SlotPolicy", "MaskedCategorical", "EXTRACTORS", "slot_dims"]

_SLOT_BASE = len(SLOT_FEATURES)
_PATH_FEATURES = len(PATH_FEATURES)
_MIN_STD = 1e-3


def slot_dims(obs_dim: int, num_slots: int) -> int:
    """Pmax from the observation length: ``K (6 + Pmax) + (path features + 1) Pmax = obs_dim``."""
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
    count_columns: torch.Tensor
    time_columns: torch.Tensor
    path_count_columns: torch.Tensor

    def __init__(self, observation_space: gym.spaces.Box, num_slots: int = 16, embed_dim: int = 32,
                 path_dim: int = 32) -> None:
        K = int(num_slots)
        P = slot_dims(int(observation_space.shape[0]), K)
        super().__init__(observation_space, features_dim=K * embed_dim + 2 * embed_dim + 2 * path_dim)
        self.num_slots, self.max_paths, self.embed_dim, self.path_dim = K, P, embed_dim, path_dim
        self.slot_width = _SLOT_BASE + P
        slot_in = len(SLOT_INPUTS)
        self.register_buffer("slot_mean", torch.zeros(slot_in))
        self.register_buffer("slot_std", torch.ones(slot_in))
        self.register_buffer("path_mean", torch.zeros(_PATH_FEATURES))
        self.register_buffer("path_std", torch.ones(_PATH_FEATURES))
        # which inputs _parts compresses; not saved with the model (squashed_columns builds them)
        for name, columns in zip(("count_columns", "time_columns", "path_count_columns"), squashed_columns()):
            self.register_buffer(name, torch.tensor(columns), persistent=False)
        self.path_encoder = nn.Sequential(nn.Linear(_PATH_FEATURES, path_dim), nn.ReLU())
        self.slot_encoder = nn.Sequential(
            nn.Linear(slot_in + 2 * path_dim, embed_dim), nn.ReLU(), nn.Linear(embed_dim, embed_dim), nn.ReLU())

    def _parts(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Slot features with the derived ones, the slot mask, path features, deciding one-hot;
        counts log1p-compressed and times clipped (:func:`~mpsched.agents.slot_numpy.squashed_columns`)."""
        K, P, w = self.num_slots, self.max_paths, self.slot_width
        slots = obs[:, : K * w].reshape(-1, K, w)
        paths = obs[:, K * w: K * w + _PATH_FEATURES * P].reshape(-1, P, _PATH_FEATURES)
        deciding = obs[:, K * w + _PATH_FEATURES * P:]
        valid = slots[..., 0]
        remaining = slots[..., 1] * valid
        # the derived inputs of SLOT_INPUTS (slot_numpy.py says what each one is)
        inflight_all = slots[..., _SLOT_BASE:].sum(-1, keepdim=True)
        inflight_here = (slots[..., _SLOT_BASE:] * deciding[:, None, :]).sum(-1, keepdim=True)
        ahead = torch.cumsum(remaining, dim=1) - remaining
        time_to_deadline = slots[..., 2]
        expired = (time_to_deadline <= 0) * valid
        size = slots[..., 5]
        sent = torch.where(size > 0, 1.0 - remaining / size.clamp(min=1.0), torch.zeros_like(size)) * valid
        rate_mbps = paths[..., 5].sum(-1, keepdim=True).clamp(min=0.1)
        load = torch.log1p(((ahead + remaining) * PACKET_MBIT / (rate_mbps * time_to_deadline.clamp(min=1e-3)))
                           .clamp(0.0, 100.0)) * valid
        one_way_delay = (paths[..., 1] * deciding).sum(-1, keepdim=True) * 0.5
        slack = (time_to_deadline - one_way_delay).clamp(-TIME_CLIP_S, TIME_CLIP_S) * valid
        features = torch.cat([slots[..., :_SLOT_BASE], inflight_all, inflight_here, ahead[..., None],
                              expired[..., None], sent[..., None], load[..., None], slack[..., None]], -1)
        features = torch.where(self.count_columns, torch.log1p(features.clamp(min=0.0)), features)
        features = torch.where(self.time_columns, features.clamp(-TIME_CLIP_S, TIME_CLIP_S), features)
        paths = torch.where(self.path_count_columns, torch.log1p(paths.clamp(min=0.0)), paths)
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
        first, second = cast(nn.Linear, self.slot_encoder[0]), self.slot_encoder[2]

        def rest(x: torch.Tensor) -> torch.Tensor:
            return F.relu(second(F.relu(x)))

        count = valid.sum(1, keepdim=True).clamp(min=1.0)
        # Embeddings are ReLU outputs and empty slots zero, so the maximum over every slot
        # is the maximum over the occupied ones, and zero when none is occupied.
        if compacts(normalized):
            B, E = len(context), self.embed_dim
            emb, rows, owner = occupied_map(first, rest, normalized, context, valid > 0, context.new_zeros(B, E))
            pooled_mean = rows.new_zeros(B, E).index_add(0, owner, rows) / count
            pooled_max = cast(torch.Tensor, _RowMaximum.apply(rows, owner, B))
        else:
            emb = rest(shared_input_linear(first, normalized, context)) * valid[..., None]
            pooled_mean = emb.sum(1) / count
            pooled_max = emb.amax(1)
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


_COMPACT_ROWS = 1024
"""Slot rows (batch size x K) from which the per-slot layers run on the occupied slots
only (:func:`occupied_map`): in a 512-row training batch that removes most of the
per-slot work (about three slots in four are empty), while in a 16-row rollout step
gathering and scattering the rows costs more than they save."""


class _RowMaximum(torch.autograd.Function):
    """Column-wise maximum of the rows of each batch row, floored at zero:
    ``out[b] = max(0, max over rows[i] with owner[i] == b)``, shape (B, width).

    The gradient goes to every row that attains its maximum (those are ReLU outputs: a
    tie at zero passes nothing further). Dense ``amax`` over (B, K, width) with K - 1 of
    K slots empty did the same in twice the time, mostly its backward pass.
    """

    @staticmethod
    def forward(ctx: Any, rows: torch.Tensor, owner: torch.Tensor, batch: int) -> torch.Tensor:
        out = rows.new_zeros(batch, rows.shape[1]).scatter_reduce_(
            0, owner[:, None].expand_as(rows), rows, "amax", include_self=True)
        ctx.save_for_backward(rows, owner, out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        rows, owner, out = ctx.saved_tensors
        return grad.index_select(0, owner) * (rows == out.index_select(0, owner)), None, None


def compacts(per_slot: torch.Tensor) -> bool:
    """Whether a (B, K, w) batch of slots is large enough for :func:`occupied_map`."""
    return per_slot.shape[0] * per_slot.shape[1] >= _COMPACT_ROWS


def occupied_map(first: nn.Linear, rest: Callable[[torch.Tensor], torch.Tensor], per_slot: torch.Tensor,
                 shared: torch.Tensor, occupied: torch.Tensor,
                 fill: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``rest(shared_input_linear(first, per_slot, shared))`` computed on the slots where
    ``occupied`` holds only; the others get ``fill``, the value the caller knows they have.

    Parameters
    ----------
    per_slot : tensor (B, K, w)
    shared : tensor (B, s)
    occupied : bool tensor (B, K)
    fill : tensor (B, out)

    Returns
    -------
    outputs : tensor (B, K, out)
    rows : tensor (n, out)
        The occupied slots' outputs, in batch-row order.
    owner : int tensor (n,)
        The batch row of each.
    """
    B, K, width = per_slot.shape
    weight = first.weight
    index = occupied.reshape(-1).nonzero().squeeze(1)
    rows = F.linear(per_slot.reshape(B * K, width).index_select(0, index), weight[:, :width])
    shared_part = F.linear(shared, weight[:, width:], first.bias)
    owner = torch.div(index, K, rounding_mode="floor")
    out = rest(rows + shared_part.index_select(0, owner))
    return fill.repeat_interleave(K, 0).index_copy(0, index, out).reshape(B, K, -1), out, owner


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
        # one split for both heads: its gradient is one concatenation, where two slices
        # would each fill a zero gradient of the whole features and add them
        K, d = self.num_slots, self.embed_dim
        emb, summary = features.split([K * d, features.shape[1] - K * d], dim=1)
        return emb.reshape(-1, K, d), summary

    def _actor(self, emb: torch.Tensor, summary: torch.Tensor) -> torch.Tensor:
        first, second = cast(nn.Linear, self.slot_score[0]), self.slot_score[2]

        def rest(x: torch.Tensor) -> torch.Tensor:
            return second(torch.tanh(x))

        if compacts(emb):
            # A slot whose embedding is zero (every empty slot; embeddings are >= 0)
            # scores what a zero embedding scores: one value per row, computed once.
            zero_embedding = rest(F.linear(summary, first.weight[:, self.embed_dim:], first.bias))
            scores = occupied_map(first, rest, emb, summary, emb.amax(-1) > 0, zero_embedding)[0]
        else:
            scores = rest(shared_input_linear(first, emb, summary))
        return torch.cat([scores.squeeze(-1), self.wait_score(summary)], -1)

    def forward_actor(self, features: torch.Tensor) -> torch.Tensor:
        return self._actor(*self._split(features))

    def forward_critic(self, features: torch.Tensor) -> torch.Tensor:
        return self.critic(self._split(features)[1])

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        emb, summary = self._split(features)
        return self._actor(emb, summary), self.critic(summary)


class MaskedCategorical(MaskableCategoricalDistribution):
    """sb3-contrib's masked categorical distribution, computed on tensors directly.

    ``MaskableCategoricalDistribution`` builds three ``torch.distributions.Categorical``
    objects per call, each normalizing the logits again and checking its arguments, and
    samples by ``torch.multinomial``: in a 16-row rollout step that was a fifth of the
    policy's forward pass. This class computes the same distribution once: masked logits
    set to -1e8 and normalized by their log-sum-exp when first read; the entropy with
    masked terms zeroed; samples by the Gumbel-max trick (the argmax of the
    log-probabilities plus independent standard Gumbel noise is a sample of the
    distribution; a masked action, at -1e8, never wins). ``tests/test_agents.py`` checks
    it against sb3-contrib's.
    """

    def __init__(self, action_dim: int) -> None:
        super().__init__(action_dim)
        self._raw = self._unnormalized = torch.zeros(0, action_dim)
        self.masks: torch.Tensor | None = None
        self._logits: torch.Tensor | None = None
        self._probs: torch.Tensor | None = None

    def _normalize(self, logits: torch.Tensor, masks: torch.Tensor | None) -> None:
        """Set the logits; they are normalized when first read."""
        self._unnormalized, self.masks = logits, masks
        self._logits = self._probs = None

    @property
    def logits(self) -> torch.Tensor:
        """Log-probabilities of the actions, masked ones at about -1e8."""
        if self._logits is None:
            self._logits = self._unnormalized - self._unnormalized.logsumexp(dim=-1, keepdim=True)
        return self._logits

    @property
    def probs(self) -> torch.Tensor:
        if self._probs is None:
            self._probs = F.softmax(self.logits, dim=-1)
        return self._probs

    def proba_distribution(self, action_logits: torch.Tensor) -> MaskedCategorical:
        self._raw = action_logits.view(-1, self.action_dim)
        self._normalize(self._raw, None)
        return self

    def apply_masking(self, masks: MaybeMasks) -> None:
        if masks is None:
            self._normalize(self._raw, None)
            return
        mask = torch.as_tensor(masks, dtype=torch.bool, device=self._raw.device).reshape(self._raw.shape)
        huge_negative = torch.tensor(-1e8, dtype=self._raw.dtype, device=self._raw.device)
        self._normalize(torch.where(mask, self._raw, huge_negative), mask)

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        return self.logits.gather(-1, actions.long().reshape(-1, 1)).squeeze(-1)

    def entropy(self) -> torch.Tensor:
        if self.masks is None:
            p_log_p = self.logits.clamp(min=torch.finfo(self.logits.dtype).min) * self.probs
        else:
            p_log_p = torch.where(self.masks, self.logits * self.probs, torch.tensor(0.0, device=self.logits.device))
        return -p_log_p.sum(-1)

    def sample(self) -> torch.Tensor:
        # uniform draws kept off 0 so that the noise -log(-log u) stays finite
        uniform = torch.rand_like(self.logits).clamp_(min=torch.finfo(self.logits.dtype).tiny)
        return (self.logits - (-uniform.log()).log()).argmax(-1)

    def mode(self) -> torch.Tensor:
        return torch.argmax(self.probs, dim=1)


NUMPY_ROWS = 64
"""Batches from which :meth:`SlotPolicy.forward` runs in torch even without gradients:
numpy's cost grows with the rows (0.2 ms for 16, 0.6 ms for 64, 7.7 ms for 512 on the
2-core development machine) while torch's compacted slots (:func:`occupied_map`) grow
slower, and larger products may start numpy's BLAS threads beside torch's."""


class SlotPolicy(MaskableActorCriticPolicy):
    """MaskablePPO policy whose logits come from :class:`SlotHeads` (module docstring).

    Needs :class:`SlotSetExtractor`; ``net_arch`` is the heads' hidden width (an int or
    a one-element list).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("features_extractor_class", SlotSetExtractor)
        if kwargs["features_extractor_class"] is not SlotSetExtractor:
            raise ValueError("SlotPolicy reads SlotSetExtractor features (extractor: set)")
        self._numpy_weights: SlotWeights | None = None
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
        self.action_dist = MaskedCategorical(cast(gym.spaces.Discrete, self.action_space).n.item())
        # The heads already give one logit per action: no linear layer mixes the slots.
        self.action_net = nn.Identity()
        heads = cast(SlotHeads, self.mlp_extractor)  # _build_mlp_extractor's
        for head in (heads.slot_score, heads.wait_score):
            last = cast(nn.Linear, head[-1])  # SlotHeads' scores end in a linear layer
            nn.init.orthogonal_(last.weight, gain=0.01)
            nn.init.zeros_(last.bias)
        if self.optimizer_class is torch.optim.Adam:
            # one fused kernel per step instead of about ten operations per parameter
            # tensor (20 tensors): 0.16 ms instead of 0.64 ms per 512-row update
            self.optimizer_kwargs = {"fused": True, **self.optimizer_kwargs}
        self.optimizer = self.optimizer_class(  # type: ignore[call-arg]  # SB3: optimizer_class takes lr
            self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)

    def forward(self, obs: torch.Tensor, deterministic: bool = False,
                action_masks: np.ndarray | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Actions, values and log-probabilities, as MaskableActorCriticPolicy gives them.

        Without gradients, on the CPU and for fewer than :data:`NUMPY_ROWS` rows (every
        step of a rollout) the network runs in numpy on views of its float32 weights
        (:func:`~mpsched.agents.slot_numpy.actor_critic`): the forward pass of a 16-row
        rollout step is about 70 torch operations at 5-10 us each, 600-800 us against
        about 400 us this way. Otherwise it runs in torch.
        """
        if torch.is_grad_enabled() or obs.device.type != "cpu" or len(obs) >= NUMPY_ROWS:
            return super().forward(obs, deterministic, action_masks)
        if self._numpy_weights is None:
            self._numpy_weights = slot_weights(self, critic=True)
        scores, values = actor_critic(self._numpy_weights, obs.detach().numpy(), critic=True)
        distribution = self.action_dist.proba_distribution(torch.from_numpy(scores))
        if action_masks is not None:
            distribution.apply_masking(action_masks)
        actions = distribution.get_actions(deterministic=deterministic)
        return actions, torch.from_numpy(cast(np.ndarray, values)), distribution.log_prob(actions)

    def _apply(self, fn: Any, *args: Any, **kwargs: Any) -> SlotPolicy:
        # .to(), .float() and the like may replace the tensors the numpy views read
        self._numpy_weights = None
        return super()._apply(fn, *args, **kwargs)
