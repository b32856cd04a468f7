"""Rollout: one step of policy improvement over any scheduler with a native twin.

The rollout algorithm (Bertsekas, *Rollout, Policy Iteration, and Distributed
Reinforcement Learning*, 2020, section 2.1; the policy-improvement step of expert
iteration): at each decision point, try each candidate block on a copy of the running
simulation (:meth:`mpsched.envs._core.Sim.clone`), let the *base* scheduler decide from
there on for a look-ahead horizon (natively: :meth:`~mpsched.envs._core.Sim.run` with
``until_ns``), and send the candidate whose copy ends with the most weight of blocks
completed on time. Ties go to the base scheduler's own choice, which is always a
candidate: with the whole episode as horizon and a deterministic future, the rollout is
then never worse than its base (the cost-improvement property, Bertsekas Prop. 2.1.1,
where the base heuristic is sequentially consistent).

Variants
--------
``clairvoyant``
    The copies carry the true future: the bandwidth trace, the blocks still to arrive,
    the cross traffic and the random loss draws. A teacher for learned schedulers; no
    real sender can run it.
``honest``
    Each copy's future is only what the sender knows now
    (:meth:`~mpsched.envs._core.Sim.hold_future`): every path's bandwidth held at the
    rate schedulers assume for it (``rate_bps``, docs/model.md section 10), no block
    that has not arrived yet, no cross traffic, and loss draws from a fresh random
    stream (seeded by the episode seed and the decision count, the same for every
    candidate of a decision). An online scheduler a real sender could run, at the cost
    of ``candidates`` simulations of ``horizon_s`` per decision. ``held_rate`` chooses
    the rate: ``window`` (``cwnd * 8e9 / srtt``) or ``delivery`` (the latest
    delivery-rate sample, the rate DAMS held at a cap reads with ``rate_window_ms``
    short); a window that a hold leaves unfilled grows past the path's rate, and with it
    the held future's bandwidth.
``announced``
    As ``honest``, but the blocks still to arrive do arrive in the copies (their times,
    sizes and deadlines): what a sender knows when the application announces its data
    ahead, as [jonglez20] Sec. IV-B recommends. Between the two, it measures what the
    workload's future is worth to the look-ahead, apart from the network's.

Cost
----
Per decision: one clone and one native look-ahead of up to ``horizon_s`` of simulated
time per candidate, so a whole episode costs about ``decisions x candidates`` times the
base scheduler's cost over ``horizon_s``. :attr:`RolloutPolicy.lookahead_decisions`
counts the base's decisions inside the look-aheads.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..envs import _core, registry
from ..envs.errors import PolicyError
from ..envs.policy import Observation, Policy

__all__ = ["HELD_RATES", "VARIANTS", "RolloutPolicy", "make_rollout"]

VARIANTS: tuple[str, ...] = ("honest", "announced", "clairvoyant")
"""What the look-ahead copies know of the future (see the module docstring)."""

HELD_RATES: tuple[str, ...] = ("window", "delivery")
"""The rate at which an honest or announced copy holds each path's bandwidth."""

MAX_CANDIDATES = 64
MAX_HORIZON_S = 3600.0
_NEVER = 2**63 - 1  # the core's MPS_NEVER: no end but the episode's


class RolloutPolicy:
    """Rollout of a base scheduler (see the module docstring).

    Parameters
    ----------
    base : str
        Id of a registered scheduler with a native twin (``minrtt``, ``dams``, ...).
    variant : {"honest", "announced", "clairvoyant"}
        What the look-ahead copies know of the future.
    horizon_s : float
        Simulated time each look-ahead covers, in (0, 3600] s; ``inf`` runs each copy to
        the end of the episode.
    candidates : int
        Blocks tried per decision, in [1, 64]: the base's choice and the sendable blocks
        with the earliest deadlines (then the lowest index).
    base_params : mapping, optional
        The base scheduler's parameters (e.g. ``{"hold_gain": 1.5}`` for DAMS held at
        1.5 bandwidth-delay products in flight), for its decisions and its look-aheads
        alike.
    held_rate : {"window", "delivery"}
        The rate each path's bandwidth is held at in an honest or announced copy:
        :attr:`~mpsched.envs.policy.Observation.rate_bps` (``cwnd * 8e9 / srtt``) or the
        latest delivery-rate sample (``delivery_rate_bps``; ``rate_bps`` until a path
        has one). Unused by the clairvoyant variant.
    """

    def __init__(self, base: str, variant: str = "honest", horizon_s: float = 1.0, candidates: int = 4,
                 base_params: Mapping[str, Any] | None = None, held_rate: str = "window") -> None:
        if base_params is not None and not isinstance(base_params, Mapping):
            raise PolicyError(f"rollout:{base}: base_params = {base_params!r}; expected a mapping of the base's "
                              "parameters")
        made = registry.make(base, **dict(base_params or {})) if isinstance(base, str) else None
        if not isinstance(made, Policy) or made.native is None:
            raise PolicyError(f"rollout:{base}: the base must be a registered scheduler with a native twin "
                              "(one of " + ", ".join(_native_ids()) + ")")
        if variant not in VARIANTS:
            raise PolicyError(f"rollout:{base}: variant = {variant!r}; expected one of {', '.join(VARIANTS)}")
        if not isinstance(horizon_s, (int, float)) or isinstance(horizon_s, bool) or math.isnan(horizon_s) or \
                not (0 < horizon_s <= MAX_HORIZON_S or horizon_s == math.inf):
            raise PolicyError(f"rollout:{base}: horizon_s = {horizon_s!r}; expected a time in (0, {MAX_HORIZON_S:g}] s "
                              "or inf")
        if isinstance(candidates, bool) or not isinstance(candidates, int) or not 1 <= candidates <= MAX_CANDIDATES:
            raise PolicyError(f"rollout:{base}: candidates = {candidates!r}; expected an int in [1, {MAX_CANDIDATES}]")
        if held_rate not in HELD_RATES:
            raise PolicyError(f"rollout:{base}: held_rate = {held_rate!r}; expected one of {', '.join(HELD_RATES)}")
        self.base_id = base
        self.variant = variant
        self.horizon_s = float(horizon_s)
        self.candidates = candidates
        self.base_params = dict(base_params or {})
        self.held_rate = held_rate
        self.name = f"rollout:{base}" if variant == "honest" else f"rollout:{base}:{variant}"
        self._native = made.native
        self._native_params = made.native_params()
        self._base = made.python()  # the specification: its choice, decision by decision
        self.lookahead_decisions = 0
        """Decisions the base made inside look-aheads since :meth:`reset`."""
        self.decisions = 0

    def params(self) -> dict[str, Any]:
        return {"base": self.base_id, "variant": self.variant, "horizon_s": self.horizon_s,
                "candidates": self.candidates, "base_params": dict(self.base_params), "held_rate": self.held_rate}

    def __repr__(self) -> str:
        return "RolloutPolicy(" + ", ".join(f"{k}={v!r}" for k, v in self.params().items()) + ")"

    def reset(self, obs: Observation) -> None:
        self._base.reset(obs)
        self.lookahead_decisions = 0
        self.decisions = 0

    def decide(self, obs: Observation) -> int:
        own = self._base.decide(obs)
        self.decisions += 1
        options = self.candidate_blocks(obs, own)
        if len(options) == 1:
            return options[0]
        sim = obs.simulator
        until = _NEVER if math.isinf(self.horizon_s) else sim.now_ns + int(round(self.horizon_s * 1e9))
        rates = None if self.variant == "clairvoyant" else self.held_rates(obs)
        seed = (sim.seed * 1_000_003 + sim.decisions) % 2**64
        best, best_value = own, self.value(sim, own, until, rates, seed)
        for block in options:
            if block == own:
                continue
            value = self.value(sim, block, until, rates, seed)
            if value > best_value:  # strictly better: ties keep the base's choice
                best, best_value = block, value
        return best

    def held_rates(self, obs: Observation) -> list[int]:
        """Each path's bandwidth in an honest or announced copy [bit/s] (``held_rate``)."""
        rates = obs.rate_bps
        if self.held_rate == "delivery":
            rates = np.where(obs.delivery_rate_bps > 0, obs.delivery_rate_bps, rates)
        return [int(min(max(float(r), 0.0), 1e12)) for r in rates]

    def candidate_blocks(self, obs: Observation, own: int) -> list[int]:
        """The base's choice first, then the sendable blocks by (deadline, index), at
        most :attr:`candidates` in all."""
        out = [int(own)]
        for b in obs.sendable_by_deadline().tolist():
            if len(out) >= self.candidates:
                break
            if b != own:
                out.append(b)
        return out

    def value(self, sim: _core.Sim, block: int, until_ns: int, rates: list[int] | None, seed: int) -> float:
        """Weight completed on time on a copy of ``sim`` that sends ``block`` now and then
        follows the base up to ``until_ns``."""
        copy = sim.clone()
        copy.apply(block)
        if rates is not None:
            copy.hold_future(rates, seed, arrivals=self.variant == "announced")
        before = copy.decisions
        copy.run(self._native, self._native_params, until_ns)
        self.lookahead_decisions += copy.decisions - before
        return float(copy.reward_total)


def _native_ids() -> list[str]:
    from .. import baselines

    return [name for name, cls in baselines.REGISTRY.items() if cls.native is not None]


def make_rollout(base: str, variant: str = "honest", horizon_s: float = 1.0, candidates: int = 4,
                 base_params: Mapping[str, Any] | None = None, held_rate: str = "window") -> RolloutPolicy:
    """``rollout:BASE``: :class:`RolloutPolicy` of the scheduler BASE."""
    return RolloutPolicy(base, variant=variant, horizon_s=horizon_s, candidates=candidates, base_params=base_params,
                         held_rate=held_rate)

