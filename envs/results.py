"""The result of one episode: a per-block table, a per-path table and summary scores.

Every scheduler, the offline optimum and every learned agent produce this same shape, so
they compare row by row. Scores follow the seed papers:

- ``on_time_rate``: blocks fully received by their deadline / blocks offered ([dams]
  "block completion rate");
- ``weighted_on_time_rate``: the same weighted by each block's credit;
- ``high_priority_on_time_rate``: over the blocks of the highest priority present;
- ``goodput_bps``: bits of on-time blocks / duration ([dams] "average bitrate",
  data_volume / video_len);
- ``rebuffer_s``: missed frames / frame rate, a frame being missed when its most
  important block (the whole frame for AVC, the base layer for SVC) misses its deadline
  ([dams] §V-A); NaN for workloads that are not video;
- ``efficiency``: on-time blocks / blocks received at any time ([dams] Fig. 13);
- ``bytes_wasted``: bytes that reached the receiver without counting: every byte of a
  block that missed its deadline, plus duplicate copies;
- ``cancelled_after_send``: blocks cancelled after some of their bytes were sent
  ([dams] Fig. 9);
- ``mean_queuing_delay_s``: first send minus arrival over blocks that reached the
  receiver ([dams] Fig. 10);
- ``slow_path_share``: bytes sent on the path with the largest base RTT / bytes sent
  ([daps] "slow path usage"); NaN with one path or when every path has the same RTT;
- ``picture_discards``, ``buffer_underflows``, ``underflow_recovery_s``: the video
  playout client of [matsufuji18] (:mod:`mpsched.envs.playout`), frames playing from the first
  frame's arrival plus the start-up delay (the workload's ``playout_startup_ms``, else its
  relative deadline); NaN for workloads that are not video.

With the in-order receiver [daps], per piece: the blocking time (delivery in sequence
minus arrival, Fig. 3), the application delay (delivery minus first transmission,
Fig. 7) and the receive-buffer occupancy over time (Figs. 8-9):
``max_blocking_s``, ``mean_blocking_s``, ``mean_app_delay_s``, ``mean_rbuf_bytes``
(time average) and ``max_rbuf_bytes``. :meth:`EpisodeResult.receive_buffer` gives the
occupancy as a time series and :meth:`EpisodeResult.cumulative_delivery` the bytes
delivered to the application over time (Figs. 5-6).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from . import _core
from .episode import Episode
from .playout import playout_stats

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
    "slow_path_share",
    "decisions",
    "sim_time_s",
    "picture_discards",
    "buffer_underflows",
    "underflow_recovery_s",
)

RECEIVE_BUFFER_KEYS: tuple[str, ...] = (
    "max_blocking_s",
    "mean_blocking_s",
    "mean_app_delay_s",
    "mean_rbuf_bytes",
    "max_rbuf_bytes",
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
    cross : pandas.DataFrame
        One row per cross flow (index ``cross``); empty without cross traffic.
    pieces : pandas.DataFrame or None
        In-order receiver only: one row per piece sent, in sequence order, with its block,
        size, first transmission, arrival and in-sequence delivery times.
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
    cross: pd.DataFrame = field(default_factory=pd.DataFrame)
    pieces: pd.DataFrame | None = None
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
        paths = _subflow_table(sim.view, sim_time_ns)
        paths.insert(0, "name", [p.name for p in sc.paths])
        paths.insert(1, "cc", [p.cc for p in sc.paths])
        paths.insert(2, "link", [p.link or "own" for p in sc.paths])
        paths.insert(3, "mean_bandwidth_bps", [x.mean_bps(episode.duration_ns) for x in episode.path_schedules])
        paths.index.name = "path"
        cross = _subflow_table(sim.cross_view, sim_time_ns) if sim.n_cross else pd.DataFrame()
        if sim.n_cross:
            cross.insert(0, "name", [c.name for c in sc.cross_traffic])
            cross.insert(1, "cc", [c.cc for c in sc.cross_traffic])
            cross.insert(2, "link", [c.link for c in sc.cross_traffic])
            cross.index.name = "cross"
        pieces = _piece_table(sim, bt.size_bytes) if sim.receiver == "in_order" else None
        summary = _summarize(blocks, bt.frame_rate, sc.duration_s, sim, sim_time_ns, wall_s)
        summary.update(_playout_summary(blocks, bt.frame_rate, sc.workload))
        if pieces is not None:
            summary.update(_receive_buffer_summary(pieces))
        rtt = np.array([p.rtt_s for p in sc.paths])
        sent_bytes = paths["bytes_sent"].to_numpy()
        summary["slow_path_share"] = (_ratio(sent_bytes[int(np.argmax(rtt))], sent_bytes.sum())
                                      if rtt.max() > rtt.min() else float("nan"))
        return cls(sc.name, policy, episode.seed, blocks, paths, summary, wall_s, cross=cross, pieces=pieces)

    def receive_buffer(self) -> pd.DataFrame:
        """Occupancy of the in-order receive buffer over time ([daps] Figs. 8-9).

        Returns
        -------
        pandas.DataFrame
            Columns ``time_ns`` and ``rbuf_bytes``: the level from each instant at which
            it changes until the next one (a piece that arrives in sequence is delivered
            at once and never counts).

        Raises
        ------
        ValueError
            With the block-aware receiver, which has no shared buffer.
        """
        if self.pieces is None:
            raise ValueError("receive_buffer: the episode used the block-aware receiver; "
                             "set receiver: {type: in_order} in the scenario")
        return _occupancy(self.pieces)

    def cumulative_delivery(self) -> pd.DataFrame:
        """Bytes handed to the application over time ([daps] Figs. 5-6).

        In-order receiver: each piece at its delivery in sequence. Block-aware receiver:
        each block's bytes when its last byte arrives.

        Returns
        -------
        pandas.DataFrame
            Columns ``time_ns`` and ``delivered_bytes`` (cumulative, one row per instant).
        """
        if self.pieces is not None:
            done = self.pieces[self.pieces["delivery_ns"] >= 0]
            times, sizes = done["delivery_ns"].to_numpy(), done["size_bytes"].to_numpy()
        else:
            done = self.blocks[self.blocks["completed"]]
            times = done["completion_ns"].to_numpy(dtype=np.int64)
            sizes = done["size_bytes"].to_numpy()
        instants, slot = np.unique(times, return_inverse=True)
        delivered = np.cumsum(np.bincount(slot, weights=sizes, minlength=len(instants))).astype(np.int64)
        return pd.DataFrame({"time_ns": instants.astype(np.int64), "delivered_bytes": delivered})

    def row(self) -> dict[str, Any]:
        """A flat record: identifiers plus every summary score (for result tables)."""
        return {"scenario": self.scenario, "policy": self.policy, "seed": self.seed, **self.summary}

    def __repr__(self) -> str:
        s = self.summary
        return (f"EpisodeResult(scenario={self.scenario!r}, policy={self.policy!r}, seed={self.seed}, "
                f"on_time_rate={s['on_time_rate']:.4f}, weighted_on_time_rate={s['weighted_on_time_rate']:.4f})")


def _subflow_table(view: Any, sim_time_ns: int) -> pd.DataFrame:
    """Statistics of paths (view = Sim.view) or cross flows (view = Sim.cross_view)."""

    def v(name: str) -> np.ndarray:
        return np.array(view(name), copy=True)

    delivered = v("delivered_bytes")
    return pd.DataFrame({
        "packets_sent": v("packets_sent"),
        "bytes_sent": v("path_bytes_sent"),
        "retransmissions": v("retransmissions"),
        "queue_drops": v("queue_drops"),
        "random_losses": v("random_losses"),
        "loss_bursts": v("loss_bursts"),
        "declared_lost": v("declared_lost"),
        "rto_count": v("rto_count"),
        "fast_recoveries": v("fast_recoveries"),
        "delivered_bytes": delivered,
        "dropped_bytes": v("dropped_bytes"),
        "throughput_bps": delivered * 8.0 / (sim_time_ns / _NS) if sim_time_ns > 0 else np.zeros(len(delivered)),
        "srtt_s": v("srtt_ns") / _NS,
        "min_rtt_s": v("min_rtt_ns") / _NS,
        "cwnd_bytes": v("cwnd_bytes"),
    })


def _piece_table(sim: _core.Sim, block_sizes: np.ndarray) -> pd.DataFrame:
    """Pieces of the in-order receiver that were sent, in sequence order (docs/model.md
    6.2: first-transmission order, or piece order with the stream sequence)."""
    order = np.array(sim.view("dsn_order"), copy=True)[: sim.n_dsn]
    if sim.sequence == "stream":
        order.sort()
    offsets = np.asarray(sim.view("piece_off"))
    block = np.searchsorted(offsets, order, side="right") - 1
    index = order - offsets[block]
    mss = sim.mss_bytes
    last = (block_sizes[block] - 1) // mss
    size = np.where(index < last, mss, block_sizes[block] - last * mss)

    def at(name: str) -> np.ndarray:
        return np.asarray(sim.view(name))[order]

    table = pd.DataFrame({
        "piece": order,
        "block": block,
        "size_bytes": size,
        "first_send_ns": at("piece_first_send_ns"),
        "arrival_ns": at("piece_arrival_ns"),
        "delivery_ns": at("piece_delivery_ns"),
    })
    table.index.name = "position"
    return table


def _playout_summary(blocks: pd.DataFrame, frame_rate: float | None, workload: dict[str, Any]) -> dict[str, float]:
    """Picture discards and buffer underflows of the video playout client [matsufuji18]."""
    frame = blocks["frame"].to_numpy()
    if not frame_rate or not (frame >= 0).any():
        return {"picture_discards": float("nan"), "buffer_underflows": float("nan"),
                "underflow_recovery_s": float("nan")}
    startup_ms = workload.get("playout_startup_ms") or workload["deadline_ms"]
    completion = blocks["completion_ns"].fillna(-1).to_numpy(dtype=np.int64)
    first = int(blocks.loc[frame == 0, "arrival_ns"].min())
    stats = playout_stats(frame, blocks["priority"].to_numpy(), completion, first, frame_rate, startup_ms / 1e3)
    return {
        "picture_discards": stats.picture_discards,
        "buffer_underflows": stats.buffer_underflows,
        "underflow_recovery_s": stats.underflow_recovery_s,
    }


def _receive_buffer_summary(pieces: pd.DataFrame) -> dict[str, float]:
    """Blocking time, application delay and buffer occupancy of the in-order receiver."""
    done = pieces[pieces["delivery_ns"] >= 0]
    if done.empty:
        return {k: float("nan") for k in RECEIVE_BUFFER_KEYS}
    blocking = (done["delivery_ns"] - done["arrival_ns"]).to_numpy() / _NS
    app = (done["delivery_ns"] - done["first_send_ns"]).to_numpy() / _NS
    occupancy = _occupancy(pieces)
    instants = occupancy["time_ns"].to_numpy()
    level = occupancy["rbuf_bytes"].to_numpy()
    span = instants[-1] - instants[0]
    area = float(np.sum(level[:-1] * np.diff(instants)))
    return {
        "max_blocking_s": float(blocking.max()),
        "mean_blocking_s": float(blocking.mean()),
        "mean_app_delay_s": float(app.mean()),
        "mean_rbuf_bytes": float(area / span) if span > 0 else 0.0,
        "max_rbuf_bytes": float(level.max()),
    }


def _occupancy(pieces: pd.DataFrame) -> pd.DataFrame:
    """Receive-buffer level: +size at a piece's arrival, -size at its delivery."""
    arrived = pieces[pieces["arrival_ns"] >= 0]
    done = pieces[pieces["delivery_ns"] >= 0]
    times = np.concatenate([arrived["arrival_ns"].to_numpy(), done["delivery_ns"].to_numpy()])
    change = np.concatenate([arrived["size_bytes"].to_numpy(), -done["size_bytes"].to_numpy()])
    instants, slot = np.unique(times, return_inverse=True)
    level = np.cumsum(np.bincount(slot, weights=change, minlength=len(instants))).astype(np.int64)
    return pd.DataFrame({"time_ns": instants.astype(np.int64), "rbuf_bytes": level})


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
