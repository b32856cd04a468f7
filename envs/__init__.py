"""The multipath deadline scheduling problem: scenarios, simulator, environments.

Importing this package registers the Gymnasium environment
``mpsched/MultipathDeadline-v0`` (with a native ``vector_entry_point``).

>>> from mpsched.envs import simulate
>>> result = simulate("dams-rtt-40", "minrtt", seed=0)
>>> 0.0 <= result.summary["on_time_rate"] <= 1.0
True
"""

import gymnasium as _gym

from . import scenarios
from .episode import Episode, build_episode
from .errors import ActionError, MpschedError, PolicyError, ScenarioError, TraceError
from .policy import WAIT, Observation, Policy
from .results import SUMMARY_KEYS, EpisodeResult
from .scenario import PathSpec, Scenario, TransportSpec
from .simulate import simulate

__all__ = [
    "ENV_ID",
    "ActionError",
    "Episode",
    "EpisodeResult",
    "MpschedError",
    "Observation",
    "PathSpec",
    "Policy",
    "PolicyError",
    "SUMMARY_KEYS",
    "Scenario",
    "ScenarioError",
    "TraceError",
    "TransportSpec",
    "WAIT",
    "build_episode",
    "scenarios",
    "simulate",
]

ENV_ID = "mpsched/MultipathDeadline-v0"
"""Gymnasium id of the environment."""

if ENV_ID not in _gym.registry:
    _gym.register(
        id=ENV_ID,
        entry_point="mpsched.envs.env:MultipathDeadlineEnv",
        vector_entry_point="mpsched.envs.vector:MultipathDeadlineVectorEnv",
    )
