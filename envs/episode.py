"""From a scenario and a seed to the arrays the C core runs.

:func:`build_episode` is the single place where randomness enters an episode: the seed
feeds one :class:`numpy.random.SeedSequence` whose children draw the workload, any random
trace offsets and the 64-bit seed of the core's own streams. The same scenario and seed
therefore give bit-identical episodes in any process.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _core
from .errors import ScenarioError
from .scenario import Scenario
from .traces import BandwidthSchedule, build_bandwidth
from .workloads import BlockTable, generate_workload

__all__ = ["Episode", "build_episode", "loss_threshold"]

_NS_PER_S = 1_000_000_000
_MAX_TIME_NS = 1 << 62


def loss_threshold(loss: float) -> int:
    """Integer threshold of the core's i.i.d. loss test (docs/model.md section 1)."""
    return int(round(loss * 2**53))


def _ring_capacity(schedule: BandwidthSchedule, rtt_ns: int, queue_bytes: int, cwnd_bytes: int,
                   packet_bytes: int) -> int:
    """Bound on unresolved packets of a path, sized so that it does not bind in practice.

    Four times what the path can hold at its peak rate over the base RTT, plus its queue
    and initial window, in packets of the typical size; a power of two in [256, 2^20].
    """
    in_flight = schedule.peak_bps() / 8.0 * rtt_ns / _NS_PER_S + queue_bytes + cwnd_bytes
    packets = 4.0 * in_flight / packet_bytes + 64.0
    return int(min(1 << 20, max(256, 1 << math.ceil(math.log2(packets)))))


@dataclass(frozen=True)
class Episode:
    """Everything one episode needs: the scenario, its block table and bandwidths.

    Attributes
    ----------
    scenario : Scenario
    seed : int
        The episode seed it was built from.
    blocks : BlockTable
        Sorted by arrival; row ``b`` is block ``b`` of the core.
    schedules : tuple of BandwidthSchedule
        One per path.
    core_seed : int
        Seed of the core's random streams (64 bits).
    end_ns : int
        Horizon of the simulation.
    ring_capacities : tuple of int
        Per-path bound on unresolved packets (docs/model.md section 7).
    """

    scenario: Scenario
    seed: int
    blocks: BlockTable
    schedules: tuple[BandwidthSchedule, ...]
    core_seed: int
    end_ns: int
    ring_capacities: tuple[int, ...]

    @property
    def duration_ns(self) -> int:
        return int(round(self.scenario.duration_s * _NS_PER_S))

    def core_inputs(self) -> dict[str, Any]:
        """Keyword arguments of :class:`mpsched.envs._core.Sim` (docs/model.md section 1)."""
        sc = self.scenario
        t = sc.transport
        paths = []
        for spec, sched, ring in zip(sc.paths, self.schedules, self.ring_capacities):
            paths.append({
                "fwd_delay_ns": int(round(spec.fwd_delay_s * _NS_PER_S)),
                "rev_delay_ns": int(round(spec.rev_delay_s * _NS_PER_S)),
                "queue_bytes": int(spec.queue_bytes),
                "loss_threshold": loss_threshold(spec.loss),
                "cc": spec.cc,
                "initial_cwnd_bytes": t.initial_cwnd_packets * t.mss_bytes,
                "min_rto_ns": int(round(t.min_rto_ms * 1e6)),
                "max_rto_ns": int(round(t.max_rto_s * _NS_PER_S)),
                "bw_start_ns": sched.start_ns,
                "bw_rate_bps": sched.rate_bps,
                "bw_cycle_ns": int(sched.cycle_ns),
                "ring_capacity": ring,
            })
        b = self.blocks
        return {
            "mss_bytes": t.mss_bytes,
            "header_bytes": t.header_bytes,
            "end_ns": self.end_ns,
            "seed": self.core_seed,
            "paths": paths,
            "blocks": {
                "arrival_ns": b.arrival_ns,
                "size_bytes": b.size_bytes,
                "deadline_ns": b.deadline_ns,
                "priority": b.priority,
                "weight": b.weight,
            },
        }

    def make_sim(self) -> _core.Sim:
        """A fresh core episode, reset with :attr:`core_seed`."""
        return _core.Sim(**self.core_inputs())


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
    schedules = tuple(build_bandwidth(p.bandwidth, scenario.base_dir, trace_rng) for p in scenario.paths)
    core_seed = int(core_seq.generate_state(1, dtype=np.uint64)[0])

    duration_ns = int(round(scenario.duration_s * _NS_PER_S))
    if scenario.horizon_s is not None:
        end_ns = int(round(scenario.horizon_s * _NS_PER_S))
    else:
        end_ns = max(duration_ns, int(blocks.deadline_ns.max()))
    if end_ns > _MAX_TIME_NS or int(blocks.deadline_ns.max()) > _MAX_TIME_NS:
        raise ScenarioError("horizon_s", end_ns / _NS_PER_S, "a horizon and deadlines below 2^62 ns (146 years)")

    t = scenario.transport
    packet = min(t.mss_bytes, max(1, int(np.median(blocks.size_bytes)))) + t.header_bytes
    rings = tuple(
        _ring_capacity(sched, int(round(p.rtt_s * _NS_PER_S)), p.queue_bytes,
                       t.initial_cwnd_packets * t.mss_bytes, packet)
        for p, sched in zip(scenario.paths, schedules)
    )
    return Episode(scenario, int(seed), blocks, schedules, core_seed, end_ns, rings)
