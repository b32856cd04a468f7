"""Learned schedulers: stable-baselines3 agents on ``mpsched/MultipathDeadline-v0``.

- :mod:`~mpsched.agents.vec_env`: the SB3 adapter over the native vector environment;
- :mod:`~mpsched.agents.features`: the permutation-invariant slot-set extractor, the flat
  one, and the slot-scoring policy;
- :mod:`~mpsched.agents.experts`: demonstrations of DAMS and of the offline optimum;
- :mod:`~mpsched.agents.train`: MaskablePPO, PPO, DQN and behaviour cloning
  (``mpsched train``);
- :mod:`~mpsched.agents.model`: saved models as deterministic policies (:func:`load`,
  ``agent:NAME`` in suites, ``mpsched evaluate``).

Needs the ``rl`` extra (``pip install 'mpsched[rl]'``).
"""

from .model import ALGOS, ZOO_DIR, AgentPolicy, load, zoo_names

__all__ = ["ALGOS", "ZOO_DIR", "AgentPolicy", "load", "zoo_names"]
