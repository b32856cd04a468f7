"""Run one episode of a scenario with a policy: :func:`simulate`."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, TypeGuard, cast

from . import _core, registry
from .episode import Episode, build_episode
from .errors import PolicyError
from .policy import DecidingPolicy, Observation, Policy
from .results import EpisodeResult
from .scenario import Scenario
from .scenarios import resolve

__all__ = ["simulate", "simulate_episode", "resolve_policy", "policy_name", "drive"]


class _SimulatingPolicy(Protocol):
    """A policy that runs whole episodes itself (the optimum)."""

    def simulate(self, scenario: Scenario, *, seed: int, drop_expired: bool) -> EpisodeResult: ...


def resolve_policy(policy: str | Policy | DecidingPolicy) -> Any:
    """A policy object from a policy id (:func:`mpsched.envs.registry.make`), or the
    object itself when it has ``decide(obs)`` or ``simulate(scenario, ...)``."""
    if isinstance(policy, str):
        return registry.make(policy)
    if callable(getattr(policy, "decide", None)) or callable(getattr(policy, "simulate", None)):
        return policy
    raise PolicyError(
        f"policy {policy!r} is neither a policy id nor an object with a decide(obs) method"
    )


def policy_name(policy: Policy | DecidingPolicy) -> str:
    """The name a policy carries in result tables."""
    name = getattr(policy, "name", None)
    return name if isinstance(name, str) and name else type(policy).__name__


def drive(sim: _core.Sim, policy: Policy | DecidingPolicy, path_names: tuple[str, ...] = ()) -> None:
    """Run the rest of an episode: natively when the policy has a twin in the core,
    otherwise decision by decision through the step API."""
    native = getattr(policy, "native", None) if getattr(policy, "use_native", False) else None
    sim.copies = bool(getattr(policy, "copies", False))  # docs/model.md 7.1: the policy may send copies
    if native:
        sim.run(native, cast(Policy, policy).native_params())  # only a Policy has a native twin
        return
    obs = Observation(sim, path_names)
    reset = getattr(policy, "reset", None)
    if callable(reset):
        reset(obs)
    decide = policy.decide
    while sim.next_decision() >= 0:
        action = decide(obs)
        try:
            sim.apply(action)
        except (TypeError, ValueError) as exc:
            raise PolicyError(
                f"policy {policy_name(policy)!r} at t = {sim.now_ns / 1e9:.6f} s on path {sim.pending_path}: {exc}"
            ) from None


def simulate(scenario: Scenario | str | Path | Mapping[str, Any], policy: str | Policy | DecidingPolicy,
             seed: int | None = None, drop_expired: bool = False) -> EpisodeResult:
    """Simulate one episode and score it.

    Parameters
    ----------
    scenario : Scenario, str, Path or mapping
        A scenario, a built-in name (:func:`mpsched.envs.scenarios.names`), a YAML file,
        or a scenario mapping.
    policy : str or Policy or object with ``decide(obs) -> int``
        A policy id (:mod:`mpsched.envs.registry`: a scheduler's name, ``optimum``,
        ``agent:NAME``, ``module:Class``), a policy instance (native twins run in C),
        any object implementing ``decide``, or one that simulates episodes itself
        (``simulate(scenario, seed=, drop_expired=)``, as the optimum does).
    seed : int, optional
        Episode seed; the scenario's ``seed`` when omitted. The same scenario and seed
        give bit-identical results.
    drop_expired : bool
        Cancel every block once its deadline has passed, whatever the policy does
        (docs/model.md section 9): a fairness variant for comparing deadline-unaware
        schedulers, which otherwise keep sending late blocks as the papers ran them.

    Returns
    -------
    EpisodeResult
    """
    sc = resolve(scenario)
    pol = resolve_policy(policy)
    if _simulates_itself(pol):
        return pol.simulate(sc, seed=sc.seed if seed is None else seed, drop_expired=bool(drop_expired))
    return simulate_episode(build_episode(sc, seed), pol, drop_expired)


def _simulates_itself(policy: Any) -> TypeGuard[_SimulatingPolicy]:
    """An object that runs whole episodes (the optimum) rather than deciding."""
    return callable(getattr(policy, "simulate", None)) and not callable(getattr(policy, "decide", None))


def simulate_episode(episode: Episode, policy: Policy | DecidingPolicy, drop_expired: bool = False) -> EpisodeResult:
    """:func:`simulate` on an already built episode (a sweep builds each scenario and seed
    once and runs every policy on it).

    Parameters
    ----------
    episode : Episode
        From :func:`mpsched.envs.episode.build_episode`.
    policy : Policy or object with ``decide(obs) -> int`` or ``simulate``
        A resolved policy (see :func:`resolve_policy`).
    drop_expired : bool
        As in :func:`simulate`.

    Returns
    -------
    EpisodeResult
    """
    if _simulates_itself(policy):
        return policy.simulate(episode.scenario, seed=episode.seed, drop_expired=bool(drop_expired))
    sim = episode.make_sim(drop_expired=bool(drop_expired))
    start = time.perf_counter()
    drive(sim, policy, tuple(p.name for p in episode.scenario.paths))
    wall = time.perf_counter() - start
    return EpisodeResult.from_sim(sim, episode, policy_name(policy), wall)
