"""The achievable optimum: an optimal schedule replayed in the packet simulator
(:class:`Optimum`) and the best schedule simulated on an episode (:func:`optimum`).

The conservative model's solution (:func:`mpsched.solvers.solve` with
``model="conservative"``) is a set of blocks with a slot allocation that meets every
deadline with the slack of a whole slot. :class:`Optimum` sends exactly those blocks,
with ideal congestion control (a path sends when its link is idle): at a decision point
of path ``j`` it sends the chosen block with the earliest deadline among those whose next
packet, sent now on ``j``, would still reach the receiver in time, which it knows exactly
from the link's bandwidth schedule (docs/model.md section 3). Blocks that were not chosen
are cancelled when they arrive, and a chosen block is cancelled once no path can deliver
it in time. A path that waits because its link serves nothing now is asked again when
the link's rate changes (the rate lane, docs/model.md section 8).

Earliest-deadline-first meets every deadline that any order meets for a fixed set on one
server (Jackson's rule, preemptive, with release times); letting each path pick
dynamically, rather than following the allocation's split of each block between the
paths, absorbs most of what packetization costs (a packet is not preempted and a block's
last piece overshoots any share planned on a path). What it cannot absorb (a path whose
slot carries less than a packet) is why the replay is only one candidate of
:func:`optimum`, which also simulates every registered baseline and any schedule it is
given, and returns the best: at least every candidate by construction, at most the
relaxed model's upper bound.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ..envs import registry
from ..envs.episode import Episode, build_episode
from ..envs.policy import WAIT, Observation, Policy
from ..envs.results import EpisodeResult
from ..envs.scenario import Scenario, set_path_cc
from ..envs.scenarios import resolve
from ..envs.simulate import simulate_episode
from .problem import NEVER_NS, delay_steps, silent_spans
from .solve import SolveResult, solve

__all__ = ["CandidateRun", "Optimum", "OfflineOptimum", "SCORE", "baseline_candidates", "optimum", "with_ideal_cc"]

SCORE = "weighted_on_time_rate"
"""The score the optimum maximizes (the slot models' objective)."""


class Optimum(Policy):
    """Sends the blocks of a solved schedule, earliest deadline first (module docstring).

    Parameters
    ----------
    plan : SolveResult
        A solve of the episode that will be simulated (normally the conservative model).
    episode : Episode
        That episode (the paths' one-way delays, the packet header).
    """

    name = "optimum"
    paper = "offline optimum of the conservative slot model (mpsched.solvers)"
    deadline_aware = True

    def __init__(self, plan: SolveResult, episode: Episode) -> None:
        super().__init__()
        self.plan = plan
        self.episode = episode
        inputs = episode.core_inputs()
        self._chosen = np.zeros(plan.problem.n_blocks, dtype=bool)
        self._chosen[plan.chosen] = True
        self._deadline = episode.blocks.deadline_ns.astype(np.int64).tolist()
        # a packet served at t arrives by t + the conservative delay, not before t + the
        # smallest delay of any path (docs/model.md section 4; solvers/problem.py)
        steps = [delay_steps(q)[1] for q in inputs["paths"]]
        self._delay = [int(d.max()) + int(q.get("fwd_jitter_ns", 0)) for d, q in zip(steps, inputs["paths"])]
        self._fastest = min(int(d.min()) for d in steps)
        # where a packet sent on a path may meet an outage: it waits (conservative model)
        self._silent = [silent_spans(q, "conservative") for q in inputs["paths"]]
        self._schedules = episode.path_schedules
        self._header = int(inputs["header_bytes"])
        self._seen = 0

    def params(self) -> dict[str, Any]:
        return {"slot_ms": self.plan.slot_ns / 1e6, "model": self.plan.model}

    def __repr__(self) -> str:
        return f"Optimum(scenario={self.plan.scenario!r}, model={self.plan.model!r}, chosen={len(self.plan.chosen)})"

    def reset(self, obs: Observation) -> None:
        self._seen = 0

    def decide(self, obs: Observation) -> int:
        now, j = obs.now_ns, obs.path
        arrived = obs.n_arrived
        cancelled = obs.cancelled
        for b in range(self._seen, arrived):  # the schedule leaves these out
            if not self._chosen[b] and not cancelled[b]:
                obs.cancel(b)
        self._seen = arrived
        silent = self._silent[j]
        i = bisect_right(silent, (now, NEVER_NS)) - 1
        if i >= 0 and silent[i][0] <= now < silent[i][1]:
            return WAIT  # a packet sent now may be lost to an outage; asked again later
        unsent = obs.unsent_bytes
        lost = obs.lost_bytes
        mss = obs.mss_bytes
        fastest = now + self._fastest
        delay = self._delay[j]
        schedule = self._schedules[j]
        best, best_deadline = WAIT, 0
        for b in obs.sendable().tolist():
            deadline = self._deadline[b]
            if fastest > deadline:
                obs.cancel(b)  # no path delivers it in time any more
                continue
            if best != WAIT and deadline >= best_deadline:
                continue
            # the next piece: a retransmission (full-size bound) or the next new piece
            piece = mss if lost[b] > 0 else min(mss, int(unsent[b]))
            # ideal control sends into an idle link: service starts now, and the
            # offline schedule knows when it ends (docs/model.md section 3)
            if schedule.service_end_ns(now, piece + self._header, deadline - delay) is None:
                continue  # it would arrive late on this path
            best, best_deadline = b, deadline
        return best


def with_ideal_cc(scenario: Scenario) -> Scenario:
    """The scenario with ideal congestion control on every path (docs/model.md 7.6).

    What the way back does goes with the window: an ideal path learns the fate of every
    packet at once (section 6), so a path's ``ack_loss`` and reverse bottleneck are dropped,
    and so are the parameters of a ``ccp`` window (7.13).
    """
    d = scenario.to_dict()
    d.setdefault("transport", {})["cc"] = "ideal"
    for path in d["paths"]:
        set_path_cc(path, "ideal")
        for key in ("ack_loss", "ack_bandwidth", "ack_bytes", "ack_queue_bytes"):
            path.pop(key, None)
    return Scenario.from_dict(d, base_dir=scenario.base_dir)


CandidateRun = Callable[[], EpisodeResult]
"""One candidate schedule of :func:`optimum`: simulates an episode and returns its result."""


def baseline_candidates(scenario: Scenario, seed: int) -> dict[str, CandidateRun]:
    """Every registered baseline, with default parameters, as candidates of :func:`optimum`.

    Each runs with and without ``drop_expired`` (label suffix ``+drop``), on the scenario
    as given and, where that differs, on the scenario with ideal congestion control
    (suffix ``@ideal``: the transport the conservative replay uses).
    """
    transports = {"": scenario}
    ideal = with_ideal_cc(scenario)
    if ideal.to_dict() != scenario.to_dict():
        transports["@ideal"] = ideal
    runs: dict[str, CandidateRun] = {}
    for suffix, sc in transports.items():
        episode = build_episode(sc, seed)
        for name in registry.ids("baseline"):
            for drop in (False, True):
                label = name + suffix + ("+drop" if drop else "")
                runs[label] = partial(_run_baseline, episode, name, drop)
    return runs


def _run_baseline(episode: Episode, name: str, drop_expired: bool) -> EpisodeResult:
    return simulate_episode(episode, registry.make(name), drop_expired)


def optimum(
    scenario: Scenario | str | Path | Mapping[str, Any],
    seed: int | None = None,
    *,
    slot_ms: float = 10.0,
    time_limit_s: float = 60.0,
    threads: int = 2,
    backend: str = "auto",
    candidates: Mapping[str, CandidateRun] | None = None,
    with_baselines: bool = True,
) -> EpisodeResult:
    """The achievable optimum: the best schedule achieved in the simulator, with the bound.

    The true optimum of an episode lies between two numbers this computes. Above it, the
    relaxed slot model's upper bound, which no policy exceeds. Below it, the best
    weighted on-time rate among schedules actually simulated on the episode:

    - ``replay``: the conservative slot model's solution replayed by :class:`Optimum`
      (ideal congestion control);
    - with ``with_baselines``, every registered baseline (:func:`baseline_candidates`);
    - every schedule in ``candidates`` (a suite passes its other policies, learned ones
      included).

    So the result is at least every candidate by construction, and a policy's gap to the
    true optimum lies in ``[1 - score / value, 1 - score / upper_bound]``
    (:func:`mpsched.solvers.gap_columns`). Ties go to the earlier candidate in the order
    above.

    Parameters
    ----------
    scenario : Scenario, str, Path or mapping
    seed : int, optional
        Episode seed (the scenario's when omitted).
    slot_ms, time_limit_s, threads, backend
        As in :func:`mpsched.solvers.solve`.
    candidates : mapping of label to callable, optional
        More schedules: each callable simulates this episode and returns its result.
    with_baselines : bool
        Include every registered baseline (default True).

    Returns
    -------
    EpisodeResult
        The best candidate's result, named ``optimum``; ``extra`` holds ``source`` (the
        label of the candidate it is), ``candidate_values`` (every candidate's score),
        ``replay_value``, ``upper_bound`` (relaxed model), ``conservative_value``,
        ``slot_ms`` and both :class:`SolveResult` objects (``relaxed``, ``conservative``).
    """
    sc = resolve(scenario)
    seed = sc.seed if seed is None else seed
    kwargs: dict[str, Any] = {"slot_ms": slot_ms, "time_limit_s": time_limit_s, "threads": threads, "seed": seed,
                              "backend": backend}
    conservative = solve(sc, model="conservative", **kwargs)
    relaxed = solve(sc, model="relaxed", **kwargs)
    ideal = build_episode(with_ideal_cc(sc), seed)
    runs: dict[str, CandidateRun] = {"replay": lambda: simulate_episode(ideal, Optimum(conservative, ideal))}
    if with_baselines:
        runs.update(baseline_candidates(sc, seed))
    for label, run in (candidates or {}).items():
        if label in runs:
            raise ValueError(f"candidates: label {label!r} is taken (replay and the baselines' labels are reserved)")
        runs[label] = run
    values: dict[str, float] = {}
    best: tuple[str, EpisodeResult] | None = None
    for label, run in runs.items():
        result = run()
        values[label] = float(result.summary[SCORE])
        if best is None or values[label] > values[best[0]]:
            best = (label, result)
    assert best is not None  # the replay is always a candidate
    source, result = best
    extra = dict(result.extra)
    extra.update({
        "source": source,
        "candidate_values": values,
        "replay_value": values["replay"],
        "upper_bound": relaxed.upper_bound,
        "conservative_value": conservative.value,
        "slot_ms": slot_ms,
        "relaxed": relaxed,
        "conservative": conservative,
    })
    return replace(result, policy="optimum", extra=extra)


class OfflineOptimum:
    """The ``optimum`` entry of a suite: the achievable optimum (:func:`optimum`) of each
    episode it is given.

    Parameters
    ----------
    slot_ms, time_limit_s, threads, backend
        As in :func:`optimum`.

    Examples
    --------
    >>> OfflineOptimum(slot_ms=5).simulate("dams-rtt-40", seed=1)  # doctest: +SKIP
    """

    name = "optimum"

    def __init__(self, slot_ms: float = 10.0, time_limit_s: float = 60.0, threads: int = 1,
                 backend: str = "auto") -> None:
        from .solve import SOLVE_BACKENDS, _check_args

        _check_args(slot_ms, time_limit_s, threads, "conservative", backend)
        if backend not in SOLVE_BACKENDS:
            raise ValueError(f"backend: got {backend!r}; expected one of {', '.join(SOLVE_BACKENDS)}")
        self.slot_ms = slot_ms
        self.time_limit_s = time_limit_s
        self.threads = threads
        self.backend = backend

    def params(self) -> dict[str, Any]:
        return {"slot_ms": self.slot_ms, "time_limit_s": self.time_limit_s, "threads": self.threads,
                "backend": self.backend}

    def simulate(self, scenario: Scenario | str | Path | Mapping[str, Any], seed: int | None = None,
                 drop_expired: bool = False, candidates: Mapping[str, CandidateRun] | None = None) -> EpisodeResult:
        """:func:`optimum` of one episode, with ``candidates`` beside the registered
        baselines (a suite's other policies). ``drop_expired`` changes nothing: the
        baselines run both ways, and each candidate runs as its caller set it."""
        return optimum(scenario, seed, slot_ms=self.slot_ms, time_limit_s=self.time_limit_s,
                       threads=self.threads, backend=self.backend, candidates=candidates)
