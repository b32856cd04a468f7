"""DAgger: imitation on the states the learner itself visits, labelled by a teacher.

Behaviour cloning trains on the states an expert visits; the clone then meets states the
expert never did, where its errors compound (Ross, Gordon and Bagnell, "A Reduction of
Imitation Learning and Structured Prediction to No-Regret Online Learning", AISTATS 2011,
Algorithm 3.1). DAgger instead:

1. runs a mixture that acts as the teacher with probability ``beta_i`` and as the current
   network otherwise (``beta_0 = 1``: the teacher alone, ``beta_i = beta_decay ** i``);
2. records, at every decision point the mixture reaches, the observation and the
   *teacher's* action for it;
3. adds these to every earlier iteration's and trains the network on the aggregate
   (behaviour cloning, :func:`mpsched.agents.train.behaviour_clone`).

The teacher is any registered policy whose decisions can be asked one at a time on a
running simulation: a scheduler's Python specification (``dams``), or a look-ahead
(``rollout:dams`` with ``variant: clairvoyant``, :mod:`mpsched.solvers.rollout`), which
tries candidate blocks on copies of the simulation and is the policy-improvement step
of expert iteration. A teacher's block that no slot shows (beyond the K most urgent) or
that the mask refuses gives no label; the mixture still sends it. Where the learner acts,
the teacher decides on a copy of the simulation (:meth:`~mpsched.envs._core.Sim.clone`),
so that what it cancels while deciding does not change the learner's episode; a teacher
that keeps state between decisions keeps it as if its own choices had been sent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..envs import registry
from ..envs.episode import build_episode
from ..envs.policy import WAIT, Observation
from ..envs.pool import EpisodePool
from ..envs.scenario import Scenario
from .experts import Demonstrations, EpisodeRecorder, collect
from .model import greedy_actions
from .vec_env import DEFAULT_MASK_RULES, MaskRules

__all__ = ["make_teacher", "mixture_demonstrations"]


def make_teacher(name: str, params: Mapping[str, Any] | None = None) -> Any:
    """The teacher policy ``name`` (a registry id) with ``params``; its Python decisions
    are asked one by one (a native scheduler's specification stands for it)."""
    policy = registry.make(name, **dict(params or {}))
    python = getattr(policy, "python", None)
    return python() if callable(python) else policy


def _episode(model: Any, algo: str, teacher: Any, scenario: Scenario, seed: int, num_slots: int, max_paths: int,
             rules: MaskRules, beta: float, rng: np.random.Generator, step_budget: int) -> Demonstrations:
    episode = build_episode(scenario, seed)
    sim = episode.make_sim()
    paths = tuple(p.name for p in scenario.paths)
    view = Observation(sim, paths)
    teacher.reset(view)
    recorder = EpisodeRecorder(sim, num_slots, max_paths, rules)
    while sim.next_decision() >= 0 and len(recorder.actions) < step_budget:
        recorder.observe()
        teacher_acts = beta >= 1.0 or rng.random() < beta
        # a teacher may cancel blocks as it decides (DAMS drops those it cannot deliver in
        # time): when the learner acts, the teacher decides on a copy of the simulation
        block = teacher.decide(view if teacher_acts else Observation(sim.clone(), paths))
        recorder.record(block)
        if not teacher_acts:
            action = int(greedy_actions(model, algo, recorder.obs[None], recorder.mask[None])[0])
            block = WAIT if action == num_slots else int(recorder.slots[action])
        sim.apply(block)
    return recorder.demonstrations(float(np.sum(episode.blocks.weight)))


def mixture_demonstrations(model: Any, algo: str, teacher: Any, pool: EpisodePool, steps: int, num_slots: int,
                           max_paths: int, beta: float, seed: int = 0, rules: MaskRules = DEFAULT_MASK_RULES,
                           progress: Callable[[int], None] | None = None) -> Demonstrations:
    """At least ``steps`` teacher-labelled decisions on episodes run by the mixture.

    Parameters
    ----------
    model, algo
        The network being trained (its greedy action acts with probability ``1 - beta``).
    teacher
        A policy with ``reset(obs)`` and ``decide(obs)`` (:func:`make_teacher`).
    pool : EpisodePool
        Training episodes, drawn with ``seed``.
    steps : int
        Labelled decisions to record (the last episode is cut at the budget).
    num_slots, max_paths : int
        The observation's K and Pmax.
    beta : float
        Probability that the teacher's block is sent at a decision, in [0, 1].
    rules : MaskRules
        Record the masks as :class:`~mpsched.agents.vec_env.NativeVecEnv` gives them.
    progress : callable, optional
        Called with the labels each episode recorded.

    Returns
    -------
    Demonstrations
        Observations, masks, the teacher's actions; ``weighted_on_time`` is the mixture's
        score on the episodes that ran to their end.
    """
    if not 0.0 <= beta <= 1.0:
        raise ValueError(f"beta: got {beta!r}; expected a probability in [0, 1]")
    rng = np.random.default_rng(seed)
    return collect(pool, steps, rng, progress,
                   lambda scenario, episode_seed, budget: _episode(model, algo, teacher, scenario, episode_seed,
                                                                   num_slots, max_paths, rules, beta, rng,
                                                                   budget))
