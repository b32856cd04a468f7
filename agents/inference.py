"""The greedy action scores of a slot-set network, computed in numpy: :class:`SlotSetScorer`.

A trained :class:`~mpsched.agents.features.SlotPolicy` is a small network (a shared slot
encoder of two 32-wide layers, a path encoder, pooling and two 64-wide heads) asked for
one decision at a time inside :func:`~mpsched.envs.simulate`. Through torch a decision
costs about 0.5 ms, mostly the framework's fixed cost per module call; a whole 60 s web
or bulk episode of the leaderboard took 36-53 s that way. The same function written out
in numpy costs about 85 us per decision (12 s for those episodes).

The scorer evaluates the network's actor (features, heads, logits; the critic is not
needed to act) in float64 from the float32 weights: the function the model defines,
computed more exactly than by its float32 forward pass. The two agree to about 1e-4 on
the logits, so their greedy actions differ only where two actions score within that of
each other (measured: 99 of 203,304 decisions of the default model on three leaderboard
episodes, each where torch's best two scores are within 1e-6, mostly exact float32 ties);
``tests/test_agents.py`` checks both statements.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from torch import nn

from .features import _DERIVED, _PATH_FEATURES, _SLOT_BASE, SlotHeads, SlotPolicy, SlotSetExtractor

__all__ = ["SlotSetScorer"]


def _linear(layer: Any) -> tuple[np.ndarray, np.ndarray]:
    """(weight transposed, bias) of an ``nn.Linear`` in float64."""
    if not isinstance(layer, nn.Linear):
        raise TypeError(f"expected a linear layer, got {type(layer).__name__}")
    return (layer.weight.detach().numpy().astype(np.float64).T.copy(),
            layer.bias.detach().numpy().astype(np.float64).copy())


def _buffer(tensor: Any) -> np.ndarray:
    return np.asarray(tensor.detach().numpy(), dtype=np.float64).copy()


def _check_layers(sequence: nn.Sequential, kinds: tuple[type[nn.Module], ...], what: str) -> None:
    """The scorer hard-codes each stack's layers: refuse a network built otherwise."""
    found = tuple(type(m) for m in sequence)
    if found != kinds:
        raise TypeError(f"{what}: layers {[k.__name__ for k in found]}, the scorer computes "
                        f"{[k.__name__ for k in kinds]}")


class SlotSetScorer:
    """Action scores (K slot logits, then WAIT's) of a :class:`SlotPolicy`, in numpy.

    Parameters
    ----------
    policy : SlotPolicy
        The network; its weights are copied (later training does not change the scorer).

    Raises
    ------
    TypeError
        When the network's layers are not the ones :class:`SlotSetExtractor` and
        :class:`SlotHeads` build.
    """

    def __init__(self, policy: SlotPolicy) -> None:
        ex, heads = policy.pi_features_extractor, policy.mlp_extractor
        if not isinstance(ex, SlotSetExtractor) or not isinstance(heads, SlotHeads):
            raise TypeError("SlotSetScorer reads a SlotPolicy over a SlotSetExtractor")
        _check_layers(ex.path_encoder, (nn.Linear, nn.ReLU), "path encoder")
        _check_layers(ex.slot_encoder, (nn.Linear, nn.ReLU, nn.Linear, nn.ReLU), "slot encoder")
        _check_layers(heads.slot_score, (nn.Linear, nn.Tanh, nn.Linear), "slot head")
        _check_layers(heads.wait_score, (nn.Linear, nn.Tanh, nn.Linear), "WAIT head")
        self.num_slots, self.max_paths, self.embed_dim = ex.num_slots, ex.max_paths, ex.embed_dim
        self.slot_width = ex.slot_width
        self.slot_mean, self.slot_std = _buffer(ex.slot_mean), _buffer(ex.slot_std)
        self.path_mean, self.path_std = _buffer(ex.path_mean), _buffer(ex.path_std)
        self.path_w, self.path_b = _linear(ex.path_encoder[0])
        self.enc1_w, self.enc1_b = _linear(ex.slot_encoder[0])
        self.enc2_w, self.enc2_b = _linear(ex.slot_encoder[2])
        self.slot1_w, self.slot1_b = _linear(heads.slot_score[0])
        self.slot2_w, self.slot2_b = _linear(heads.slot_score[2])
        self.wait1_w, self.wait1_b = _linear(heads.wait_score[0])
        self.wait2_w, self.wait2_b = _linear(heads.wait_score[2])

    @classmethod
    def of(cls, policy: Any) -> SlotSetScorer | None:
        """The scorer of a SlotPolicy network, or None for any other (evaluated by torch)."""
        return cls(policy) if isinstance(policy, SlotPolicy) else None

    def scores(self, observations: np.ndarray) -> np.ndarray:
        """Scores of every action, shape ``(..., K + 1)``, for observations ``(..., obs_dim)``
        (one observation, or a batch).

        A batch is scored row by row: a matrix product's rounding depends on the shapes
        it is computed in, and a decision must not depend on how many were asked at once
        (:func:`~mpsched.agents.evaluate.run_episodes` batches what ``simulate`` asks
        one by one).
        """
        obs = np.asarray(observations, dtype=np.float64)
        if obs.ndim == 1:
            return self._scores(obs)
        rows = obs.reshape(-1, obs.shape[-1])
        return np.array([self._scores(row) for row in rows]).reshape(obs.shape[:-1] + (self.num_slots + 1,))

    def _scores(self, obs: np.ndarray) -> np.ndarray:
        """The scores of one observation: line for line :meth:`SlotSetExtractor.forward`
        and :meth:`SlotHeads.forward_actor` (the action net is the identity)."""
        K, P, w = self.num_slots, self.max_paths, self.slot_width
        slots = obs[: K * w].reshape(K, w)
        paths = obs[K * w: K * w + _PATH_FEATURES * P].reshape(P, _PATH_FEATURES)
        deciding = obs[K * w + _PATH_FEATURES * P:]
        valid = slots[..., 0]
        remaining = slots[..., 1] * valid
        inflight_here = (slots[..., _SLOT_BASE:] * deciding[..., None, :]).sum(-1)
        ahead = np.cumsum(remaining, axis=-1) - remaining
        expired = (slots[..., 2] <= 0) * valid
        features = np.concatenate([slots, inflight_here[..., None], ahead[..., None], expired[..., None]], -1)

        present = paths[..., :1]
        path_emb = np.maximum(((paths - self.path_mean) / self.path_std) @ self.path_w + self.path_b, 0.0) * present
        here = (path_emb * deciding[..., None]).sum(-2)
        mean_path = path_emb.sum(-2) / np.maximum(present.sum(-2), 1.0)
        context = np.concatenate([here, mean_path], -1)

        width = w + _DERIVED
        normalized = (features - self.slot_mean) / self.slot_std
        first = normalized @ self.enc1_w[:width] + (context @ self.enc1_w[width:] + self.enc1_b)[..., None, :]
        emb = np.maximum(np.maximum(first, 0.0) @ self.enc2_w + self.enc2_b, 0.0) * valid[..., None]
        count = np.maximum(valid.sum(-1)[..., None], 1.0)
        pooled_mean = emb.sum(-2) / count
        pooled_max = np.maximum((emb - (1.0 - valid[..., None]) * 1e4).max(-2), 0.0)
        summary = np.concatenate([pooled_mean, pooled_max, context], -1)

        E = self.embed_dim
        hidden = np.tanh(emb @ self.slot1_w[:E] + (summary @ self.slot1_w[E:] + self.slot1_b)[..., None, :])
        slot_scores = (hidden @ self.slot2_w + self.slot2_b)[..., 0]
        wait_score = np.tanh(summary @ self.wait1_w + self.wait1_b) @ self.wait2_w + self.wait2_b
        return np.concatenate([slot_scores, wait_score], -1)

    def greedy(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """The best-scored allowed action of each row of a batch (lowest index on ties),
        as :func:`~mpsched.agents.model.greedy_actions` chooses."""
        return np.array([self.best(obs, mask) for obs, mask in zip(observations, masks)], dtype=np.int64)

    def best(self, observation: np.ndarray, mask: np.ndarray) -> int:
        """The best-scored allowed action of one observation (lowest index on ties)."""
        return int(np.where(mask, self.scores(observation), -np.inf).argmax())
