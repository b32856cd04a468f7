"""The slot-set network (:class:`~mpsched.agents.features.SlotSetExtractor` and
:class:`~mpsched.agents.features.SlotHeads`) written out in numpy: :func:`actor_critic`.

Two callers read a :class:`~mpsched.agents.features.SlotPolicy` this way, each for the
fixed cost of a torch operation (about 5-10 us on small tensors against 1-2 us for numpy):

- :class:`~mpsched.agents.inference.SlotSetScorer`, the deterministic agent inside
  ``simulate``: float64 copies of the weights, one observation at a time;
- :meth:`SlotPolicy.forward <mpsched.agents.features.SlotPolicy.forward>` without
  gradients, the step of every rollout MaskablePPO collects: float32 views of the weights
  (they follow training), the whole batch at once.

Both compute what the torch modules compute, operation for operation in the modules'
order; ``tests/test_agents.py`` compares them with torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
from torch import nn

from ..envs.env import PATH_FEATURES, SLOT_FEATURES
from .vec_env import PACKET_MBIT

__all__ = ["SLOT_INPUTS", "SlotWeights", "slot_weights", "actor_critic", "squashed_columns"]

_SLOT_BASE = len(SLOT_FEATURES)
_PATH_FEATURES = len(PATH_FEATURES)
TIME_CLIP_S = 1.0
"""The time to a block's deadline is clipped to +-1 s: farther than that, a deadline is
simply far (a bulk transfer's may be seconds away, the training video's are 200 ms)."""


SLOT_INPUTS: tuple[str, ...] = SLOT_FEATURES + (
    "inflight_packets", "inflight_packets_here", "packets_queued_ahead", "expired", "sent_fraction",
    "load", "slack_here_s")
"""What the slot encoder reads of each slot: the block's own features, then derived ones.
None is indexed by path, so a model trained on two paths reads a third path's blocks with
weights it has trained:

- ``inflight_packets``: the block's packets in flight on every path, summed;
- ``inflight_packets_here``: those on the deciding path;
- ``packets_queued_ahead``: the packets still to send of the slots before it (slots are in
  urgency order: what an earliest-deadline sender sends first);
- ``expired``: 1 past the deadline;
- ``sent_fraction``: the share of the block no longer waiting to be sent;
- ``load``: ``log1p`` of the time the paths' summed delivery rates (at least 0.1 Mbit/s)
  need for the packets queued ahead and the block's own, over its time to deadline
  (clipped to [0, 100]): above log 2 the block cannot be on time behind the ones ahead;
  scale-free, so a 45-packet bulk chunk and a 12-packet video frame under the same load
  read alike;
- ``slack_here_s``: the time to deadline less the deciding path's one-way delay (half its
  smoothed RTT), clipped to +-TIME_CLIP_S: below 0 the block arrives late on this path.

Stored in a model's agent.json; a model that read others is refused on load."""


@cache
def squashed_columns() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Boolean column masks of the slot encoder's inputs (:data:`SLOT_INPUTS`) that are
    packet counts (log1p-compressed: a video frame is about 12 packets, a bulk block
    thousands) and that are times (clipped to TIME_CLIP_S), and of the path features that
    are counts or rates (log1p-compressed). Built once (read-only): every decision reads
    them."""
    counts = np.isin(np.array(SLOT_INPUTS), ["remaining_packets", "size_packets", "inflight_packets",
                                             "inflight_packets_here", "packets_queued_ahead"])
    times = np.zeros(len(SLOT_INPUTS), np.bool_)
    times[SLOT_FEATURES.index("time_to_deadline_s")] = True
    path_counts = np.isin(np.array(PATH_FEATURES), ["cwnd_packets", "inflight_packets", "delivery_rate_mbps"])
    for mask in (counts, times, path_counts):
        mask.setflags(write=False)
    return counts, times, path_counts


@dataclass(frozen=True)
class SlotWeights:
    """The arrays of a slot-set network: the normalization buffers, and each linear layer
    as (weight transposed, bias); the critic's layers and the value head are None where
    only the actor is needed."""

    num_slots: int
    max_paths: int
    slot_width: int
    embed_dim: int
    slot_mean: np.ndarray
    slot_std: np.ndarray
    path_mean: np.ndarray
    path_std: np.ndarray
    path: tuple[np.ndarray, np.ndarray]
    enc1: tuple[np.ndarray, np.ndarray]
    enc2: tuple[np.ndarray, np.ndarray]
    slot1: tuple[np.ndarray, np.ndarray]
    slot2: tuple[np.ndarray, np.ndarray]
    wait1: tuple[np.ndarray, np.ndarray]
    wait2: tuple[np.ndarray, np.ndarray]
    critic1: tuple[np.ndarray, np.ndarray] | None = None
    critic2: tuple[np.ndarray, np.ndarray] | None = None
    value: tuple[np.ndarray, np.ndarray] | None = None


def _check_layers(sequence: nn.Sequential, kinds: tuple[type[nn.Module], ...], what: str) -> None:
    """:func:`actor_critic` hard-codes each stack's layers: refuse a network built otherwise."""
    found = tuple(type(m) for m in sequence)
    if found != kinds:
        raise TypeError(f"{what}: layers {[k.__name__ for k in found]}, the numpy forward pass computes "
                        f"{[k.__name__ for k in kinds]}")


def slot_weights(policy: Any, dtype: type[np.floating[Any]] | None = None, critic: bool = False) -> SlotWeights:
    """The arrays of ``policy`` (a SlotPolicy): views of its tensors that follow training
    (``dtype`` None), or copies in ``dtype``; with ``critic`` the value function's too.

    Raises
    ------
    TypeError
        When the network's layers are not the ones the slot-set policy builds.
    """
    ex, heads = policy.pi_features_extractor, policy.mlp_extractor
    _check_layers(ex.path_encoder, (nn.Linear, nn.ReLU), "path encoder")
    _check_layers(ex.slot_encoder, (nn.Linear, nn.ReLU, nn.Linear, nn.ReLU), "slot encoder")
    _check_layers(heads.slot_score, (nn.Linear, nn.Tanh, nn.Linear), "slot head")
    _check_layers(heads.wait_score, (nn.Linear, nn.Tanh, nn.Linear), "WAIT head")

    def array(tensor: Any) -> np.ndarray:
        view = tensor.detach().numpy()
        return view if dtype is None else view.astype(dtype)

    def linear(layer: Any) -> tuple[np.ndarray, np.ndarray]:
        if not isinstance(layer, nn.Linear):
            raise TypeError(f"expected a linear layer, got {type(layer).__name__}")
        transposed = array(layer.weight).T
        return (transposed if dtype is None else transposed.copy()), array(layer.bias)

    values: dict[str, Any] = {}
    if critic:
        _check_layers(heads.critic, (nn.Linear, nn.Tanh, nn.Linear, nn.Tanh), "critic")
        values = {"critic1": linear(heads.critic[0]), "critic2": linear(heads.critic[2]),
                  "value": linear(policy.value_net)}
    return SlotWeights(
        num_slots=ex.num_slots, max_paths=ex.max_paths, slot_width=ex.slot_width, embed_dim=ex.embed_dim,
        slot_mean=array(ex.slot_mean), slot_std=array(ex.slot_std), path_mean=array(ex.path_mean),
        path_std=array(ex.path_std), path=linear(ex.path_encoder[0]), enc1=linear(ex.slot_encoder[0]),
        enc2=linear(ex.slot_encoder[2]), slot1=linear(heads.slot_score[0]), slot2=linear(heads.slot_score[2]),
        wait1=linear(heads.wait_score[0]), wait2=linear(heads.wait_score[2]), **values)


def actor_critic(w: SlotWeights, obs: np.ndarray, critic: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """The action scores (K slot logits, then WAIT's), shape ``(..., K + 1)``, of
    observations ``(..., obs_dim)``, and with ``critic`` the values ``(..., 1)``: line for
    line :meth:`SlotSetExtractor.forward`, :meth:`SlotHeads.forward` and the value head."""
    K, P, w_ = w.num_slots, w.max_paths, w.slot_width
    lead = obs.shape[:-1]
    slots = obs[..., : K * w_].reshape(lead + (K, w_))
    paths = obs[..., K * w_: K * w_ + _PATH_FEATURES * P].reshape(lead + (P, _PATH_FEATURES))
    deciding = obs[..., K * w_ + _PATH_FEATURES * P:]
    valid = slots[..., 0]
    remaining = slots[..., 1] * valid
    inflight_all = slots[..., _SLOT_BASE:].sum(-1)
    inflight_here = (slots[..., _SLOT_BASE:] * deciding[..., None, :]).sum(-1)
    ahead = np.cumsum(remaining, axis=-1) - remaining
    time_to_deadline = slots[..., 2]
    expired = (time_to_deadline <= 0) * valid
    size = slots[..., 5]
    sent = np.where(size > 0, 1.0 - remaining / np.maximum(size, 1.0), 0.0) * valid
    rate_mbps = np.maximum(paths[..., 5].sum(-1)[..., None], 0.1)
    load = np.log1p(np.clip((ahead + remaining) * PACKET_MBIT / (rate_mbps * np.maximum(time_to_deadline, 1e-3)),
                            0.0, 100.0)) * valid
    one_way_delay = (paths[..., 1] * deciding).sum(-1)[..., None] * 0.5
    slack = np.clip(time_to_deadline - one_way_delay, -TIME_CLIP_S, TIME_CLIP_S) * valid
    features = np.concatenate([slots[..., :_SLOT_BASE], inflight_all[..., None], inflight_here[..., None],
                               ahead[..., None], expired[..., None], sent[..., None], load[..., None],
                               slack[..., None]], -1)
    counts, times, path_counts = squashed_columns()
    features = np.where(counts, np.log1p(np.maximum(features, 0.0)), features)
    features = np.where(times, np.clip(features, -TIME_CLIP_S, TIME_CLIP_S), features)
    paths = np.where(path_counts, np.log1p(np.maximum(paths, 0.0)), paths)

    present = paths[..., :1]
    path_w, path_b = w.path
    path_emb = np.maximum(((paths - w.path_mean) / w.path_std) @ path_w + path_b, 0.0) * present
    here = (path_emb * deciding[..., None]).sum(-2)
    mean_path = path_emb.sum(-2) / np.maximum(present.sum(-2), 1.0)
    context = np.concatenate([here, mean_path], -1)

    width = features.shape[-1]
    enc1_w, enc1_b = w.enc1
    enc2_w, enc2_b = w.enc2
    normalized = (features - w.slot_mean) / w.slot_std
    first = normalized @ enc1_w[:width] + (context @ enc1_w[width:] + enc1_b)[..., None, :]
    emb = np.maximum(np.maximum(first, 0.0) @ enc2_w + enc2_b, 0.0) * valid[..., None]
    count = np.maximum(valid.sum(-1)[..., None], 1.0)
    pooled_mean = emb.sum(-2) / count
    pooled_max = np.maximum((emb - (1.0 - valid[..., None]) * 1e4).max(-2), 0.0)
    summary = np.concatenate([pooled_mean, pooled_max, context], -1)

    E = w.embed_dim
    (slot1_w, slot1_b), (slot2_w, slot2_b) = w.slot1, w.slot2
    (wait1_w, wait1_b), (wait2_w, wait2_b) = w.wait1, w.wait2
    hidden = np.tanh(emb @ slot1_w[:E] + (summary @ slot1_w[E:] + slot1_b)[..., None, :])
    slot_scores = (hidden @ slot2_w + slot2_b)[..., 0]
    wait_score = np.tanh(summary @ wait1_w + wait1_b) @ wait2_w + wait2_b
    scores = np.concatenate([slot_scores, wait_score], -1)
    if not critic:
        return scores, None
    if w.critic1 is None or w.critic2 is None or w.value is None:
        raise ValueError("these weights hold no critic: slot_weights(policy, critic=True)")
    (c1_w, c1_b), (c2_w, c2_b), (v_w, v_b) = w.critic1, w.critic2, w.value
    latent = np.tanh(np.tanh(summary @ c1_w + c1_b) @ c2_w + c2_b)
    return scores, latent @ v_w + v_b
