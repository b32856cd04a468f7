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

from .features import SlotHeads, SlotPolicy, SlotSetExtractor
from .slot_numpy import actor_critic, slot_weights

__all__ = ["SlotSetScorer"]


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
        self.weights = slot_weights(policy, np.float64)
        self.num_slots = ex.num_slots

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
        """The scores of one observation (:func:`~mpsched.agents.slot_numpy.actor_critic`)."""
        return actor_critic(self.weights, obs)[0]

    def greedy(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """The best-scored allowed action of each row of a batch (lowest index on ties),
        as :func:`~mpsched.agents.model.greedy_actions` chooses."""
        return np.array([self.best(obs, mask) for obs, mask in zip(observations, masks)], dtype=np.int64)

    def best(self, observation: np.ndarray, mask: np.ndarray) -> int:
        """The best-scored allowed action of one observation (lowest index on ties); the
        only allowed action without scoring (a path held at its cap, or idle, has one)."""
        allowed = np.flatnonzero(mask)
        if len(allowed) == 1:
            return int(allowed[0])
        return int(np.where(mask, self.scores(observation), -np.inf).argmax())
