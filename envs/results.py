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
  relative deadline), on a fixed schedule or, with the workload's ``player: {type:
  catchup}``, freezing and catching up; NaN for workloads that are not video.

With the in-order receiver [daps], per piece: the blocking time (delivery in sequence
minus arrival, Fig. 3), the application delay (delivery minus first transmission,
Fig. 7) and the receive-buffer occupancy over time (Figs. 8-9):
``max_blocking_s``, ``mean_blocking_s``, ``mean_app_delay_s``, ``mean_rbuf_bytes``
(time average) and ``max_rbuf_bytes``. :meth:`EpisodeResult.receive_buffer` gives the
occupancy as a time series and :meth:`EpisodeResult.cumulative_delivery` the bytes
delivered to the application over time (Figs. 5-6).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _core
from .episode import Episode
from .playout import catchup_playout_stats, playout_stats

if TYPE_CHECKING:
    import pandas as pd

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

Columns = dict[str, Any]
"""A table kept as named numpy arrays (or lists), in column order."""

_NULLABLE_TIMES = ("first_send_ns", "completion_ns")
"""Block columns where the core's -1 means "never": missing values in the DataFrame."""


def _frame(columns: Columns, index_name: str) -> pd.DataFrame:
    import pandas as pd

    table = pd.DataFrame(columns)
    table.index.name = index_name
    return table


def _block_frame(columns: Columns) -> pd.DataFrame:
    import pandas as pd

    data = dict(columns)
    for name in _NULLABLE_TIMES:
        times = pd.array(data[name], dtype="Int64")
        times[data[name] < 0] = pd.NA
        data[name] = times
    data["kind"] = pd.Categorical(data["kind"])
    return _frame(data, "block")


@dataclass(eq=False, repr=False)
class EpisodeResult:
    """Outcome of one episode.

    The tables are kept as numpy arrays and become DataFrames when first asked for, so a
    caller that only needs the scores never builds them (nor imports pandas).

    Attributes
    ----------
    scenario : str
        Scenario name.
    policy : str
        Policy name.
    seed : int
        Episode seed.
    summary : dict
        Scores (see the module docstring and :data:`SUMMARY_KEYS`).
    wall_s : float
        Wall-clock time of the simulation.
    block_columns, path_columns, cross_columns, piece_columns : dict
        The tables below as numpy arrays by column (``cross_columns`` empty without
        cross traffic, ``piece_columns`` None with the block-aware receiver).
    extra : dict
        Policy-specific additions (e.g. an optimum's upper bound).
    """

    scenario: str
    policy: str
    seed: int
    summary: dict[str, float]
    wall_s: float
    block_columns: Columns
    path_columns: Columns
    cross_columns: Columns
    piece_columns: Columns | None
    extra: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def blocks(self) -> pd.DataFrame:
        """One row per block (index ``block``, in arrival order)."""
        return _block_frame(self.block_columns)

    @cached_property
    def paths(self) -> pd.DataFrame:
        """One row per path (index ``path``)."""
        return _frame(self.path_columns, "path")

    @cached_property
    def cross(self) -> pd.DataFrame:
        """One row per cross flow (index ``cross``); empty without cross traffic."""
        if not self.cross_columns:
            import pandas as pd

            return pd.DataFrame()
        return _frame(self.cross_columns, "cross")

    @cached_property
    def pieces(self) -> pd.DataFrame | None:
        """In-order receiver only: one row per piece sent, in sequence order, with its
        block, size, first transmission, arrival and in-sequence delivery times."""
        return None if self.piece_columns is None else _frame(self.piece_columns, "position")

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
        blocks: Columns = {
            "arrival_ns": bt.arrival_ns,
            "deadline_ns": deadline,
            "size_bytes": bt.size_bytes,
            "priority": bt.priority,
            "weight": bt.weight,
            "kind": bt.kind,
            "frame": bt.frame,
            "first_send_ns": first_send,
            "completion_ns": completion,
            "completed": completed,
            "on_time": on_time,
            "cancelled": cancelled,
            "cancelled_after_send": cancelled & (first_send >= 0),
            "bytes_sent": sent.sum(axis=1),
        }
        for j in range(P):
            blocks[f"bytes_sent_p{j}"] = sent[:, j]
        blocks.update({
            "acked_bytes": v("acked_bytes"),
            "recv_bytes": recv,
            "duplicate_bytes": dup,
            "bytes_wasted": wasted,
            "queuing_delay_s": np.where(first_send >= 0, (first_send - bt.arrival_ns) / _NS, np.nan),
            "completion_time_s": np.where(completed, (completion - bt.arrival_ns) / _NS, np.nan),
        })

        sim_time_ns = max(sim.last_event_ns, 0)
        paths: Columns = {
            "name": [p.name for p in sc.paths],
            "cc": [p.cc for p in sc.paths],
            "link": [p.link or "own" for p in sc.paths],
            "mean_bandwidth_bps": [x.mean_bps(episode.duration_ns) for x in episode.path_schedules],
            **_subflow_columns(sim.view, sim_time_ns),
        }
        cross: Columns = {}
        if sim.n_cross:
            cross = {
                "name": [c.name for c in sc.cross_traffic],
                "cc": [c.cc for c in sc.cross_traffic],
                "link": [c.link for c in sc.cross_traffic],
                **_subflow_columns(sim.cross_view, sim_time_ns),
            }
        pieces = _piece_columns(sim, bt.size_bytes) if sim.receiver == "in_order" else None
        summary = _summarize(blocks, bt.frame_rate, sc.duration_s, sim, sim_time_ns, wall_s)
        summary.update(_playout_summary(blocks, bt.frame_rate, sc.workload))
        if pieces is not None:
            summary.update(_receive_buffer_summary(pieces))
        rtt = np.array([p.rtt_s for p in sc.paths])
        sent_bytes = paths["bytes_sent"]
        summary["slow_path_share"] = (_ratio(sent_bytes[int(np.argmax(rtt))], sent_bytes.sum())
                                      if rtt.max() > rtt.min() else float("nan"))
        return cls(sc.name, policy, episode.seed, summary, wall_s, blocks, paths, cross, pieces)

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
        import pandas as pd

        if self.piece_columns is None:
            raise ValueError("receive_buffer: the episode used the block-aware receiver; "
                             "set receiver: {type: in_order} in the scenario")
        instants, level = _occupancy(self.piece_columns)
        return pd.DataFrame({"time_ns": instants, "rbuf_bytes": level})

    def cumulative_delivery(self) -> pd.DataFrame:
        """Bytes handed to the application over time ([daps] Figs. 5-6).

        In-order receiver: each piece at its delivery in sequence. Block-aware receiver:
        each block's bytes when its last byte arrives.

        Returns
        -------
        pandas.DataFrame
            Columns ``time_ns`` and ``delivered_bytes`` (cumulative, one row per instant).
        """
        import pandas as pd

        if self.piece_columns is not None:
            pieces = self.piece_columns
            done = pieces["delivery_ns"] >= 0
            times, sizes = pieces["delivery_ns"][done], pieces["size_bytes"][done]
        else:
            blocks = self.block_columns
            done = blocks["completed"]
            times, sizes = blocks["completion_ns"][done], blocks["size_bytes"][done]
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


def _subflow_columns(view: Any, sim_time_ns: int) -> Columns:
    """Statistics of paths (view = Sim.view) or cross flows (view = Sim.cross_view)."""

    def v(name: str) -> np.ndarray:
        return np.array(view(name), copy=True)

    delivered = v("delivered_bytes")
    return {
        "packets_sent": v("packets_sent"),
        "bytes_sent": v("path_bytes_sent"),
        "retransmissions": v("retransmissions"),
        "redundant_packets": v("redundant_packets"),
        "redundant_bytes": v("redundant_bytes"),
        "queue_drops": v("queue_drops"),
        "random_losses": v("random_losses"),
        "loss_bursts": v("loss_bursts"),
        "outage_losses": v("outage_losses"),
        "outage_ack_losses": v("outage_ack_losses"),
        "ack_losses": v("ack_losses"),
        "ack_queue_drops": v("ack_queue_drops"),
        "declared_lost": v("declared_lost"),
        "rto_count": v("rto_count"),
        "fast_recoveries": v("fast_recoveries"),
        "delivered_bytes": delivered,
        "dropped_bytes": v("dropped_bytes"),
        "throughput_bps": delivered * 8.0 / (sim_time_ns / _NS) if sim_time_ns > 0 else np.zeros(len(delivered)),
        "srtt_s": v("srtt_ns") / _NS,
        "min_rtt_s": v("min_rtt_ns") / _NS,
        "cwnd_bytes": v("cwnd_bytes"),
    }


def _piece_columns(sim: _core.Sim, block_sizes: np.ndarray) -> Columns:
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

    return {
        "piece": order,
        "block": block,
        "size_bytes": size,
        "first_send_ns": at("piece_first_send_ns"),
        "arrival_ns": at("piece_arrival_ns"),
        "delivery_ns": at("piece_delivery_ns"),
    }


def _playout_summary(blocks: Columns, frame_rate: float | None, workload: dict[str, Any]) -> dict[str, float]:
    """Picture discards and buffer underflows of the video playout client [matsufuji18]."""
    frame = blocks["frame"]
    if not frame_rate or not (frame >= 0).any():
        return {"picture_discards": float("nan"), "buffer_underflows": float("nan"),
                "underflow_recovery_s": float("nan")}
    startup_ms = workload.get("playout_startup_ms") or workload["deadline_ms"]
    first = int(blocks["arrival_ns"][frame == 0].min())
    client = (frame, blocks["priority"], blocks["completion_ns"], first, frame_rate, startup_ms / 1e3)
    player = workload.get("player", {"type": "fixed"})
    if player["type"] == "catchup":
        stats = catchup_playout_stats(*client, player["speed"], player["max_late_ms"] / 1e3)
    else:
        stats = playout_stats(*client)
    return {
        "picture_discards": stats.picture_discards,
        "buffer_underflows": stats.buffer_underflows,
        "underflow_recovery_s": stats.underflow_recovery_s,
    }


def _receive_buffer_summary(pieces: Columns) -> dict[str, float]:
    """Blocking time, application delay and buffer occupancy of the in-order receiver."""
    done = pieces["delivery_ns"] >= 0
    if not done.any():
        return {k: float("nan") for k in RECEIVE_BUFFER_KEYS}
    delivery = pieces["delivery_ns"][done]
    blocking = (delivery - pieces["arrival_ns"][done]) / _NS
    app = (delivery - pieces["first_send_ns"][done]) / _NS
    instants, level = _occupancy(pieces)
    span = instants[-1] - instants[0]
    area = float(np.sum(level[:-1] * np.diff(instants)))
    return {
        "max_blocking_s": float(blocking.max()),
        "mean_blocking_s": float(blocking.mean()),
        "mean_app_delay_s": float(app.mean()),
        "mean_rbuf_bytes": float(area / span) if span > 0 else 0.0,
        "max_rbuf_bytes": float(level.max()),
    }


def _occupancy(pieces: Columns) -> tuple[np.ndarray, np.ndarray]:
    """Receive-buffer level (instants, bytes): +size at a piece's arrival, -size at its
    delivery."""
    arrived = pieces["arrival_ns"] >= 0
    done = pieces["delivery_ns"] >= 0
    times = np.concatenate([pieces["arrival_ns"][arrived], pieces["delivery_ns"][done]])
    change = np.concatenate([pieces["size_bytes"][arrived], -pieces["size_bytes"][done]])
    instants, slot = np.unique(times, return_inverse=True)
    level = np.cumsum(np.bincount(slot, weights=change, minlength=len(instants))).astype(np.int64)
    return instants.astype(np.int64), level


def _ratio(num: float, den: float) -> float:
    return float(num) / float(den) if den > 0 else float("nan")


def _missed_frames(frame: np.ndarray, priority: np.ndarray, on_time: np.ndarray) -> int:
    """Frames whose most important blocks (those of the frame's highest priority) are not
    all on time."""
    framed = frame >= 0
    frames, member = np.unique(frame[framed], return_inverse=True)
    priority, on_time = priority[framed], on_time[framed]
    top = np.full(len(frames), np.iinfo(np.int64).min)
    np.maximum.at(top, member, priority)
    essential = priority == top[member]
    missed = np.zeros(len(frames), dtype=bool)
    np.logical_or.at(missed, member[essential], ~on_time[essential])
    return int(missed.sum())


def percentile_95(values: np.ndarray) -> float:
    """``np.percentile(values, 95)`` of finite values, with its default (linear) method's
    arithmetic step for step (numpy's ``_lerp``), without the import of ``numpy.ma`` that
    numpy's first percentile makes (about 10 ms of a one-episode process)."""
    ordered = np.sort(values)
    virtual = (len(ordered) - 1) * 0.95
    below = math.floor(virtual)
    a, b = float(ordered[below]), float(ordered[min(below + 1, len(ordered) - 1)])
    gamma = virtual - below
    diff = b - a
    return b - diff * (1 - gamma) if gamma >= 0.5 else a + diff * gamma


def _summarize(blocks: Columns, frame_rate: float | None, duration_s: float, sim: _core.Sim,
               sim_time_ns: int, wall_s: float) -> dict[str, float]:
    on_time = blocks["on_time"]
    completed = blocks["completed"]
    weight = blocks["weight"]
    priority = blocks["priority"]
    n = len(on_time)
    top = priority == priority.max()
    rebuffer = float("nan")
    if frame_rate:
        rebuffer = float(_missed_frames(blocks["frame"], priority, on_time)) / float(frame_rate)
    ct = blocks["completion_time_s"][completed]
    qd = blocks["queuing_delay_s"][completed]
    cancelled = blocks["cancelled"]
    return {
        "n_blocks": n,
        "on_time_rate": _ratio(on_time.sum(), n),
        "weighted_on_time_rate": _ratio((weight * on_time).sum(), weight.sum()),
        "high_priority_on_time_rate": _ratio(on_time[top].sum(), top.sum()),
        "completion_rate": _ratio(completed.sum(), n),
        "goodput_bps": float((blocks["size_bytes"] * on_time).sum() * 8.0 / duration_s),
        "rebuffer_s": rebuffer,
        "efficiency": _ratio(on_time.sum(), completed.sum()),
        "bytes_wasted": int(blocks["bytes_wasted"].sum()),
        "cancelled": int(cancelled.sum()),
        "cancelled_after_send": int(blocks["cancelled_after_send"].sum()),
        "mean_queuing_delay_s": float(qd.mean()) if len(qd) else float("nan"),
        "mean_completion_time_s": float(ct.mean()) if len(ct) else float("nan"),
        "p95_completion_time_s": percentile_95(ct) if len(ct) else float("nan"),
        "bytes_sent": int(blocks["bytes_sent"].sum()),
        "retransmissions": int(np.asarray(sim.view("retransmissions")).sum()),
        "decisions": int(sim.decisions),
        "sim_time_s": sim_time_ns / _NS,
        "wall_s": float(wall_s),
    }
