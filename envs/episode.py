"""From a scenario and a seed to the arrays the C core runs.

:func:`build_episode` is the single place where randomness enters an episode: the seed
feeds one :class:`numpy.random.SeedSequence` whose children draw the workload, any random
trace offsets and the 64-bit seed of the core's own streams. The same scenario and seed
therefore give bit-identical episodes in any process.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from . import _core
from .bandwidth import BandwidthSchedule, build_bandwidth
from .delays import DelaySchedule
from .errors import BudgetError, ScenarioError
from .scenario import CrossFlowSpec, LossSpec, PathSpec, Scenario
from .workloads import BlockTable, generate_workload

__all__ = ["Episode", "build_episode", "loss_threshold", "MAX_EVENTS", "max_events"]

_NS_PER_S = 1_000_000_000
_MAX_TIME_NS = 1 << 62

MAX_EVENTS = 2**30
"""Default work budget: the most events (docs/model.md section 8) one episode may process,
about 90 s of the core's time at its 12 M events/s. ``MPSCHED_MAX_EVENTS`` overrides it (0: no budget)."""

BUDGET_VARIABLE = "MPSCHED_MAX_EVENTS"


def max_events() -> int:
    """The work budget in force: ``MPSCHED_MAX_EVENTS`` when set, else :data:`MAX_EVENTS`.

    Raises
    ------
    ScenarioError
        If the variable is not an integer in ``[0, 2^62]``.
    """
    raw = os.environ.get(BUDGET_VARIABLE)
    if raw is None:
        return MAX_EVENTS
    try:
        value = int(raw.strip())
    except ValueError:
        value = -1
    if not 0 <= value <= _MAX_TIME_NS:
        raise ScenarioError(BUDGET_VARIABLE, raw, f"an integer in [0, {_MAX_TIME_NS}] (0: no work budget)")
    return value


def loss_threshold(probability: float) -> int:
    """Integer threshold of the core's loss draws (docs/model.md section 1)."""
    return int(round(probability * 2**53))


def _ring_capacity(peak_bps: int, rtt_ns: int, queue_bytes: int, cwnd_bytes: int, packet_bytes: int) -> int:
    """Bound on unresolved packets of a subflow, sized so that it does not bind in practice.

    Four times what the bottleneck can hold at its peak rate over the base RTT, plus its
    queue and the initial window, in packets of the typical size; a power of two in
    [256, 2^20].
    """
    in_flight = peak_bps / 8.0 * rtt_ns / _NS_PER_S + queue_bytes + cwnd_bytes
    packets = 4.0 * in_flight / packet_bytes + 64.0
    return int(min(1 << 20, max(256, 1 << math.ceil(math.log2(packets)))))


def _loss_fields(loss: LossSpec) -> dict[str, Any]:
    return {
        "loss_model": loss.model,
        "loss_threshold": loss_threshold(loss.rate),
        "ge_p_threshold": loss_threshold(loss.p) if loss.model == "gilbert_elliott" else 0,
        "ge_r_threshold": loss_threshold(loss.r) if loss.model == "gilbert_elliott" else 0,
        "ge_bad_loss_threshold": loss_threshold(loss.loss_bad) if loss.model == "gilbert_elliott" else 0,
    }


@dataclass(frozen=True)
class Episode:
    """Everything one episode needs: the scenario, its block table and bottlenecks.

    Attributes
    ----------
    scenario : Scenario
    seed : int
        The episode seed it was built from.
    blocks : BlockTable
        Sorted by arrival; row ``b`` is block ``b`` of the core.
    link_schedules : tuple of BandwidthSchedule
        Bandwidth of each bottleneck: the scenario's shared links, then one per path
        that has its own.
    link_queues : tuple of int
        Drop-tail limit of each bottleneck.
    path_links, cross_links : tuple of int
        Bottleneck index of each path and cross flow.
    core_seed : int
        Seed of the core's random streams (64 bits).
    end_ns : int
        Horizon of the simulation.
    ring_capacities : tuple of int
        Per-subflow bound on unresolved packets (docs/model.md section 7), paths first.
    path_delays : tuple of (DelaySchedule or None)
        Each path's delay dynamics (None: constant delays); empty when no path has any.
    """

    scenario: Scenario
    seed: int
    blocks: BlockTable
    link_schedules: tuple[BandwidthSchedule, ...]
    link_queues: tuple[int, ...]
    path_links: tuple[int, ...]
    cross_links: tuple[int, ...]
    core_seed: int
    end_ns: int
    ring_capacities: tuple[int, ...]
    path_delays: tuple[DelaySchedule | None, ...] = ()

    @property
    def duration_ns(self) -> int:
        return int(round(self.scenario.duration_s * _NS_PER_S))

    @property
    def path_schedules(self) -> tuple[BandwidthSchedule, ...]:
        """The bandwidth of each path's bottleneck."""
        return tuple(self.link_schedules[k] for k in self.path_links)

    def core_inputs(self, drop_expired: bool = False) -> dict[str, Any]:
        """Keyword arguments of :class:`mpsched.envs._core.Sim` (docs/model.md section 1).

        Parameters
        ----------
        drop_expired : bool
            Cancel every block whose deadline has passed before each decision round
            (docs/model.md section 9), whatever the policy does.
        """
        sc = self.scenario
        t = sc.transport
        common = {
            "initial_cwnd_bytes": t.initial_cwnd_packets * t.mss_bytes,
            "min_rto_ns": int(round(t.min_rto_ms * 1e6)),
            "max_rto_ns": int(round(t.max_rto_s * _NS_PER_S)),
            "fast_recovery": t.fast_recovery,
            "cubic_arithmetic": t.cubic_arithmetic,
        }

        def subflow(spec: PathSpec | CrossFlowSpec, link: int, ring: int) -> dict[str, Any]:
            return {
                "link": link,
                "fwd_delay_ns": int(round(spec.fwd_delay_s * _NS_PER_S)),
                "rev_delay_ns": int(round(spec.rev_delay_s * _NS_PER_S)),
                **_loss_fields(spec.loss),
                "cc": spec.cc,
                "ring_capacity": ring,
                **common,
            }

        P = len(sc.paths)
        paths = [subflow(p, k, r) for p, k, r in zip(sc.paths, self.path_links, self.ring_capacities)]
        for d, delays in zip(paths, self.path_delays):
            if delays is not None:
                d.update(delays.core_fields())
        for d, spec in zip(paths, sc.paths):
            if spec.outages is not None:
                d.update(spec.outages.core_fields(sc.base_dir, self.end_ns))
            if spec.backup:
                d["backup"] = True
            if spec.ack_loss:
                d["ack_loss_threshold"] = loss_threshold(spec.ack_loss)
            if spec.ack_bandwidth:
                d["rev_rate_bps"] = max(1, int(round(spec.ack_bandwidth * 1e6)))
                d["ack_bytes"] = spec.ack_bytes
                if spec.ack_queue_bytes is not None:
                    d["rev_queue_bytes"] = spec.ack_queue_bytes
            if spec.start_s:
                d["start_ns"] = int(round(spec.start_s * _NS_PER_S))
            if spec.stop_s is not None:
                d["stop_ns"] = int(round(spec.stop_s * _NS_PER_S))
            if spec.cc == "ccp":  # docs/model.md 7.13: Kp in thousandths, B in bytes (0: estimated)
                d["ccp_gain_milli"] = int(round(spec.ccp_gain * 1000.0))
                d["ccp_storage_bytes"] = (spec.ccp_storage_packets or 0) * t.mss_bytes
        cross = []
        for c, k, r in zip(sc.cross_traffic, self.cross_links, self.ring_capacities[P:]):
            d = subflow(c, k, r)
            d["start_ns"] = int(round(c.start_s * _NS_PER_S))
            d["stop_ns"] = _MAX_TIME_NS if c.stop_s is None else int(round(c.stop_s * _NS_PER_S))
            cross.append(d)
        b = self.blocks
        return {
            "mss_bytes": t.mss_bytes,
            "header_bytes": t.header_bytes,
            "end_ns": self.end_ns,
            "seed": self.core_seed,
            "receiver": sc.receiver.type,
            "rbuf_bytes": sc.receiver.rbuf_bytes,
            "sequence": sc.receiver.sequence,
            "links": [
                {"queue_bytes": int(q), "bw_start_ns": s.start_ns, "bw_rate_bps": s.rate_bps,
                 "bw_cycle_ns": int(s.cycle_ns)}
                for s, q in zip(self.link_schedules, self.link_queues)
            ],
            "paths": paths,
            "cross": cross,
            "blocks": {
                "arrival_ns": b.arrival_ns,
                "size_bytes": b.size_bytes,
                "deadline_ns": b.deadline_ns,
                "priority": b.priority,
                "weight": b.weight,
            },
            "drop_expired": drop_expired,
        }

    def make_sim(self, drop_expired: bool = False) -> _core.Sim:
        """A fresh core episode, reset with :attr:`core_seed` (see :meth:`core_inputs`)."""
        return _core.Sim(**self.core_inputs(drop_expired), max_events=max_events())


def build_episode(scenario: Scenario, seed: int | None = None) -> Episode:
    """Draw one episode of a scenario.

    Parameters
    ----------
    scenario : Scenario
    seed : int, optional
        Episode seed; ``scenario.seed`` when omitted.

    Returns
    -------
    Episode
    """
    if seed is None:
        seed = scenario.seed
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ScenarioError("seed", seed, "a non-negative integer")
    workload_seq, trace_seq, core_seq = np.random.SeedSequence(int(seed)).spawn(3)
    blocks = generate_workload(
        scenario.workload, scenario.duration_s, np.random.default_rng(workload_seq), scenario.base_dir
    ).sorted_by_arrival()
    trace_rng = np.random.default_rng(trace_seq)
    # bottlenecks: the shared links in order, then the own link of each path without one
    bandwidths = [x.bandwidth for x in scenario.links]
    queues = [x.queue_bytes for x in scenario.links]
    index = {x.name: k for k, x in enumerate(scenario.links)}
    path_links = []
    for p in scenario.paths:
        if p.link is not None:
            path_links.append(index[p.link])
        else:
            # a path without a shared link has its own bottleneck (PathSpec.from_dict)
            path_links.append(len(bandwidths))
            bandwidths.append(cast(dict[str, Any], p.bandwidth))
            queues.append(cast(int, p.queue_bytes))
    schedules = tuple(build_bandwidth(bw, scenario.base_dir, trace_rng) for bw in bandwidths)
    cross_links = tuple(index[c.link] for c in scenario.cross_traffic)
    core_seed = int(core_seq.generate_state(1, dtype=np.uint64)[0])

    duration_ns = int(round(scenario.duration_s * _NS_PER_S))
    if scenario.horizon_s is not None:
        end_ns = int(round(scenario.horizon_s * _NS_PER_S))
    else:
        end_ns = max(duration_ns, int(blocks.deadline_ns.max()))
    if end_ns > _MAX_TIME_NS or int(blocks.deadline_ns.max()) > _MAX_TIME_NS:
        raise ScenarioError("horizon_s", end_ns / _NS_PER_S, "a horizon and deadlines below 2^62 ns (146 years)")

    t = scenario.transport
    packets = int(np.sum((blocks.size_bytes + (t.mss_bytes - 1)) // t.mss_bytes))
    if packets > _core.MAX_PACKETS:
        raise ScenarioError("workload", packets, f"at most {_core.MAX_PACKETS} packets of mss_bytes = {t.mss_bytes} "
                            "per episode (the simulator keeps state per packet: use a larger mss, fewer or "
                            "smaller blocks, or a shorter duration)")
    _check_work(scenario, blocks, packets, schedules, path_links, cross_links, end_ns)
    packet = min(t.mss_bytes, max(1, int(np.median(blocks.size_bytes)))) + t.header_bytes
    subflows: list[tuple[PathSpec | CrossFlowSpec, int]] = [(p, k) for p, k in zip(scenario.paths, path_links)]
    subflows += [(c, k) for c, k in zip(scenario.cross_traffic, cross_links)]
    delays = tuple(p.delay.schedule(p.fwd_delay_s, p.rev_delay_s, scenario.base_dir, end_ns)
                   if p.delay is not None else None for p in scenario.paths)
    rtts = [int(round(f.rtt_s * _NS_PER_S)) for f, _ in subflows]
    for j, d in enumerate(delays):
        if d is not None:
            rtts[j] = max(rtts[j], d.peak_rtt_ns())
    rings = tuple(
        _ring_capacity(schedules[k].peak_bps(), rtt, queues[k], t.initial_cwnd_packets * t.mss_bytes, packet)
        for (_, k), rtt in zip(subflows, rtts)
    )
    return Episode(scenario, int(seed), blocks, schedules, tuple(queues), tuple(path_links), cross_links,
                   core_seed, end_ns, rings, delays if any(d is not None for d in delays) else ())


def _check_work(scenario: Scenario, blocks: BlockTable, packets: int, schedules: tuple[BandwidthSchedule, ...],
                path_links: list[int], cross_links: tuple[int, ...], end_ns: int) -> None:
    """Refuse, before it runs, an episode whose estimated work exceeds the budget.

    The estimate counts the events of sending every block once (docs/model.md section 8): a
    link, a receive and an acknowledgement event for every packet of a block sent once, an
    arrival per block, the same three for every packet a cross flow's link can carry while
    it sends, and every rate change of a link used by a path within the horizon.
    Retransmissions and drops add to it and blocks left unsent when the horizon ends take
    from it; the core stops an episode that passes the budget while running (:class:`~mpsched.envs.errors.BudgetError`).
    """
    budget = max_events()
    if budget == 0:
        return
    t = scenario.transport
    wire_bits = 8 * (t.mss_bytes + t.header_bytes)
    cross_packets = 0
    for c, k in zip(scenario.cross_traffic, cross_links):
        start = min(int(round(c.start_s * _NS_PER_S)), end_ns)
        stop = end_ns if c.stop_s is None else min(int(round(c.stop_s * _NS_PER_S)), end_ns)
        if stop > start:
            cross_packets += (schedules[k].bits_until(stop) - schedules[k].bits_until(start)) // wire_bits + 1
    rate_changes = sum(schedules[k].rate_changes_until(end_ns) for k in sorted(set(path_links)))
    events = 3 * packets + len(blocks.size_bytes) + 3 * cross_packets + rate_changes
    if events > budget:
        raise BudgetError(budget, None, end_ns,
                          f"about {events} events to send each of its {packets} packets of blocks once, with "
                          f"{cross_packets} packets of cross flows and {rate_changes} rate changes within its "
                          f"{end_ns / _NS_PER_S:.6g} s horizon")
