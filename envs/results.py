"""The result of one episode: a per-block table, a per-path table and summary scores.

Every scheduler, the offline optimum and every learned agent produce this same shape, so
they compare row by row. Scores follow the seed papers:

- ``on_time_rate``: blocks fully received by their deadline / blocks offered (seed 000
  "block completion rate");
- ``weighted_on_time_rate``: the same weighted by each block's credit;
- ``high_priority_on_time_rate``: over the blocks of the highest priority present;
- ``goodput_bps``: bits of on-time blocks / duration (seed 000 "average bitrate",
  data_volume / video_len);
- ``rebuffer_s``: missed frames / frame rate, a frame being missed when its most
  important block (the whole frame for AVC, the base layer for SVC) misses its deadline
  (seed 000 §V-A); NaN for workloads that are not video;
- ``efficiency``: on-time blocks / blocks received at any time (seed 000 Fig. 13);
- ``bytes_wasted``: bytes that reached the receiver without counting: every byte of a
  block that missed its deadline, plus duplicate copies;
- ``cancelled_after_send``: blocks cancelled after some of their bytes were sent
  (seed 000 Fig. 9);
- ``mean_queuing_delay_s``: first send minus arrival over blocks that reached the
  receiver (seed 000 Fig. 10).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from . import _core
from .episode import Episode

__all__ = ["EpisodeResult", "SUMMARY_KEYS"]

_NS = 1e9

SUMMARY_KEYS: tuple[str, ...] = (
    "n_blocks",
    "on_time_rate",
    "weighted_on_time_rate",
    "high_priority_on_time_rate",
    "completion_rate",
    "goodput_bps",
    "rebuffer_s",
    "efficiency",
    "bytes_wasted",
    "cancelled",
    "cancelled_after_send",
    "mean_queuing_delay_s",
    "mean_completion_time_s",
    "p95_completion_time_s",
    "bytes_sent",
    "retransmissions",
    "decisions",
    "sim_time_s",
)


def _nullable_times(ns: np.ndarray) -> pd.arrays.IntegerArray:
    """Nanosecond times with the core's -1 ("never") as a missing value."""
    out = pd.array(ns, dtype="Int64")
    out[ns < 0] = pd.NA
    return out


@dataclass
class EpisodeResult:
    """Outcome of one episode.

    Attributes
    ----------
    scenario : str
        Scenario name.
    policy : str
        Policy name.
    seed : int
        Episode seed.
    blocks : pandas.DataFrame
        One row per block (index ``block``, in arrival order).
    paths : pandas.DataFrame
        One row per path (index ``path``).
    summary : dict
        Scores (see the module docstring and :data:`SUMMARY_KEYS`).
    wall_s : float
        Wall-clock time of the simulation.
    extra : dict
        Policy-specific additions (e.g. an optimum's upper bound).
    """

    scenario: str
    policy: str
    seed: int
    blocks: pd.DataFrame
    paths: pd.DataFrame
    summary: dict[str, float]
    wall_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_sim(cls, sim: _core.Sim, episode: Episode, policy: str, wall_s: float = 0.0) -> EpisodeResult:
        """Collect the tables of a finished episode."""
        sc = episode.scenario
        P = sim.n_paths

        def v(name: str) -> np.ndarray:
            return np.array(sim.view(name), copy=True)

        bt = episode.blocks
        first_send = v("first_send_ns")
        completion = v("completion_ns")
        deadline = bt.deadline_ns
        completed = completion >= 0
        on_time = completed & (completion <= deadline)
        cancelled = (v("flags") & _core.FLAG_CANCELLED) != 0
        sent = v("bytes_sent")
        recv = v("recv_bytes")
        dup = v("duplicate_bytes")
        wasted = np.where(on_time, 0, recv) + dup
        data: dict[str, Any] = {
            "arrival_ns": bt.arrival_ns,
            "deadline_ns": deadline,
            "size_bytes": bt.size_bytes,
            "priority": bt.priority,
            "weight": bt.weight,
            "kind": pd.Categorical(bt.kind),
            "frame": bt.frame,
            "first_send_ns": _nullable_times(first_send),
            "completion_ns": _nullable_times(completion),
            "completed": completed,
            "on_time": on_time,
            "cancelled": cancelled,
            "cancelled_after_send": cancelled & (first_send >= 0),
            "bytes_sent": sent.sum(axis=1),
        }
        for j in range(P):
            data[f"bytes_sent_p{j}"] = sent[:, j]
        data.update({
            "acked_bytes": v("acked_bytes"),
            "recv_bytes": recv,
            "duplicate_bytes": dup,
            "bytes_wasted": wasted,
            "queuing_delay_s": np.where(first_send >= 0, (first_send - bt.arrival_ns) / _NS, np.nan),
            "completion_time_s": np.where(completed, (completion - bt.arrival_ns) / _NS, np.nan),
        })
        blocks = pd.DataFrame(data)
        blocks.index.name = "block"

        sim_time_ns = max(sim.last_event_ns, 0)
        duration_ns = episode.duration_ns
        delivered = v("delivered_bytes")
        paths = pd.DataFrame({
            "name": [p.name for p in sc.paths],
            "cc": [p.cc for p in sc.paths],
            "mean_bandwidth_bps": [s.mean_bps(duration_ns) for s in episode.schedules],
            "packets_sent": v("packets_sent"),
            "bytes_sent": v("path_bytes_sent"),
            "retransmissions": v("retransmissions"),
            "queue_drops": v("queue_drops"),
            "random_losses": v("random_losses"),
            "declared_lost": v("declared_lost"),
            "rto_count": v("rto_count"),
            "fast_recoveries": v("fast_recoveries"),
            "delivered_bytes": delivered,
            "dropped_bytes": v("dropped_bytes"),
            "throughput_bps": delivered * 8.0 / (sim_time_ns / _NS) if sim_time_ns > 0 else np.zeros(P),
            "srtt_s": v("srtt_ns") / _NS,
            "min_rtt_s": v("min_rtt_ns") / _NS,
        })
        paths.index.name = "path"
        summary = _summarize(blocks, bt.frame_rate, sc.duration_s, sim, sim_time_ns, wall_s)
        return cls(sc.name, policy, episode.seed, blocks, paths, summary, wall_s)

    def row(self) -> dict[str, Any]:
        """A flat record: identifiers plus every summary score (for result tables)."""
        return {"scenario": self.scenario, "policy": self.policy, "seed": self.seed, **self.summary}

    def __repr__(self) -> str:
        s = self.summary
        return (f"EpisodeResult(scenario={self.scenario!r}, policy={self.policy!r}, seed={self.seed}, "
                f"on_time_rate={s['on_time_rate']:.4f}, weighted_on_time_rate={s['weighted_on_time_rate']:.4f})")


def _ratio(num: float, den: float) -> float:
    return float(num) / float(den) if den > 0 else float("nan")


def _summarize(blocks: pd.DataFrame, frame_rate: float | None, duration_s: float, sim: _core.Sim,
               sim_time_ns: int, wall_s: float) -> dict[str, float]:
    on_time = blocks["on_time"].to_numpy()
    completed = blocks["completed"].to_numpy()
    weight = blocks["weight"].to_numpy()
    priority = blocks["priority"].to_numpy()
    n = len(blocks)
    top = priority == priority.max()
    rebuffer = float("nan")
    if frame_rate:
        framed = blocks[blocks["frame"] >= 0]
        essential = framed["priority"] == framed.groupby("frame")["priority"].transform("max")
        missed_frames = (~framed.loc[essential, "on_time"]).groupby(framed.loc[essential, "frame"]).any().sum()
        rebuffer = float(missed_frames) / float(frame_rate)
    ct = blocks.loc[completed, "completion_time_s"].to_numpy()
    qd = blocks.loc[completed, "queuing_delay_s"].to_numpy()
    cancelled = blocks["cancelled"].to_numpy()
    return {
        "n_blocks": n,
        "on_time_rate": _ratio(on_time.sum(), n),
        "weighted_on_time_rate": _ratio((weight * on_time).sum(), weight.sum()),
        "high_priority_on_time_rate": _ratio(on_time[top].sum(), top.sum()),
        "completion_rate": _ratio(completed.sum(), n),
        "goodput_bps": float((blocks["size_bytes"].to_numpy() * on_time).sum() * 8.0 / duration_s),
        "rebuffer_s": rebuffer,
        "efficiency": _ratio(on_time.sum(), completed.sum()),
        "bytes_wasted": int(blocks["bytes_wasted"].sum()),
        "cancelled": int(cancelled.sum()),
        "cancelled_after_send": int(blocks["cancelled_after_send"].sum()),
        "mean_queuing_delay_s": float(qd.mean()) if len(qd) else float("nan"),
        "mean_completion_time_s": float(ct.mean()) if len(ct) else float("nan"),
        "p95_completion_time_s": float(np.percentile(ct, 95)) if len(ct) else float("nan"),
        "bytes_sent": int(blocks["bytes_sent"].sum()),
        "retransmissions": int(np.asarray(sim.view("retransmissions")).sum()),
        "decisions": int(sim.decisions),
        "sim_time_s": sim_time_ns / _NS,
        "wall_s": float(wall_s),
    }
