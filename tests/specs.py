"""Random small episodes in the core's input format, and a driver that runs the C core
with the same policy interface as the reference simulator (tests/refsim.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import strategies as st
from mpsched.envs import _core

MS = 1_000_000
LOSS_RATES = (0.0, 0.0, 0.01, 0.1)

# Outputs compared between the core and the reference: core view name -> reference key.
BLOCK_OUTPUTS = {
    "completion_ns": "completion_ns",
    "first_send_ns": "first_send_ns",
    "recv_bytes": "recv_bytes",
    "duplicate_bytes": "duplicate_bytes",
    "acked_bytes": "acked_bytes",
    "cancel_ns": "cancel_ns",
    "bytes_sent": "bytes_sent",
}
PATH_OUTPUTS = {
    "packets_sent": "packets_sent",
    "path_bytes_sent": "path_bytes_sent",
    "retransmissions": "retransmissions",
    "redundant_packets": "redundant_packets",
    "redundant_bytes": "redundant_bytes",
    "queue_drops": "queue_drops",
    "random_losses": "random_losses",
    "loss_bursts": "loss_bursts",
    "outage_losses": "outage_losses",
    "outage_ack_losses": "outage_ack_losses",
    "ack_losses": "ack_losses",
    "ack_queue_drops": "ack_queue_drops",
    "rto_streak": "rto_streak",
    "declared_lost": "declared_lost",
    "rto_count": "rto_count",
    "fast_recoveries": "fast_recoveries",
    "delivered_bytes": "delivered_bytes",
    "srtt_ns": "final_srtt_ns",
    "cwnd_bytes": "final_cwnd_bytes",
    "dropped_bytes": "dropped_bytes",
}
CROSS_OUTPUTS = {
    "packets_sent": "cross_packets_sent",
    "delivered_bytes": "cross_delivered_bytes",
    "queue_drops": "cross_queue_drops",
    "random_losses": "cross_random_losses",
    "loss_bursts": "cross_loss_bursts",
    "outage_losses": "cross_outage_losses",
    "outage_ack_losses": "cross_outage_ack_losses",
    "ack_losses": "cross_ack_losses",
    "ack_queue_drops": "cross_ack_queue_drops",
    "dropped_bytes": "cross_dropped_bytes",
    "declared_lost": "cross_declared_lost",
    "rto_count": "cross_rto_count",
    "fast_recoveries": "cross_fast_recoveries",
    "cwnd_bytes": "cross_final_cwnd_bytes",
    "srtt_ns": "cross_final_srtt_ns",
}
PIECE_OUTPUTS = ("piece_sent_ns",)
IN_ORDER_OUTPUTS = ("piece_arrival_ns", "piece_delivery_ns", "piece_first_send_ns", "dsn_order", "rcv_nxt")


CONTROLLERS = ("ideal", "newreno", "cubic", "lia", "olia", "balia", "wvegas", "ccp")


@st.composite
def bandwidths(draw: st.DrawFn) -> tuple[list[int], list[int], int]:
    """A piecewise schedule: starts, rates (the first positive), cycle (0 = hold).

    Segments are whole milliseconds: each rate change is an event while blocks wait
    (docs/model.md section 8), and nanosecond-long periods would give the Python
    reference billions of them over a 20 s episode. Packets still span several segments
    (1500 bytes take 12 ms at 1 Mbit/s)."""
    n = draw(st.integers(1, 3))
    starts = [0] + sorted(MS * k for k in draw(st.sets(st.integers(1, 50), min_size=n - 1, max_size=n - 1)))
    rates = [draw(st.sampled_from([1_000_000, 5_000_000, 20_000_000]))]
    rates += [draw(st.sampled_from([0, 100_000, 1_000_000, 5_000_000, 20_000_000])) for _ in range(n - 1)]
    cycle = draw(st.sampled_from([0, starts[-1] + MS * draw(st.integers(1, 30))]))
    return starts, rates, cycle


def _threshold(p: float) -> int:
    return int(round(p * 2**53))


@st.composite
def delay_dynamics(draw: st.DrawFn) -> dict[str, Any]:
    """Delay steps, jitter bounds and outages of one subflow (docs/model.md sections 4
    and 6): up to three steps in the first 600 ms, delays up to 60 ms, jitter up to 20 ms
    each way (often larger than a packet's service time, so that the order rule binds)."""
    n = draw(st.integers(0, 3))
    starts = sorted(draw(st.sets(st.integers(1, 600 * MS), min_size=n, max_size=n)))
    return {
        "delay_start_ns": np.array(starts, np.int64),
        "fwd_delay_step_ns": np.array(draw(st.lists(st.integers(0, 60 * MS), min_size=n, max_size=n)), np.int64),
        "rev_delay_step_ns": np.array(draw(st.lists(st.integers(0, 60 * MS), min_size=n, max_size=n)), np.int64),
        "fwd_jitter_ns": draw(st.sampled_from([0, 0, 1, 300_000, 20 * MS])),
        "rev_jitter_ns": draw(st.sampled_from([0, 0, 1, 300_000, 20 * MS])),
        **draw(outages()),
    }


@st.composite
def outages(draw: st.DrawFn) -> dict[str, np.ndarray]:
    """Up to three outages of one subflow in the first 400 ms, while blocks arrive and
    are sent (docs/model.md sections 4 and 6), from 1 ns to 300 ms long: packets and
    acknowledgements on the way are lost, timeouts back off, and the subflow probes its
    way back."""
    n = draw(st.integers(0, 3))
    edges = sorted(draw(st.sets(st.integers(0, 400 * MS), min_size=2 * n, max_size=2 * n)))
    starts, ends = edges[0::2], edges[1::2]
    ends = [min(e, s + 300 * MS) for s, e in zip(starts, ends)]
    return {"down_start_ns": np.array(starts, np.int64), "down_end_ns": np.array(ends, np.int64)}


@st.composite
def subflows(draw: st.DrawFn, n_links: int, mss: int, cc: str | None, cross: bool,
             fast_recovery: str | None = None, dynamics: bool | None = None,
             cubic_arithmetic: str | None = None) -> dict[str, Any]:
    """One subflow dict of docs/model.md section 1; with delay dynamics when
    ``dynamics`` is true, drawn when it is None (a third of the time)."""
    ge = draw(st.booleans()) and draw(st.booleans())
    d = {
        "link": draw(st.integers(0, n_links - 1)),
        "fwd_delay_ns": draw(st.integers(0, 30 * MS)),
        "rev_delay_ns": draw(st.integers(0, 30 * MS)),
        "loss_model": "gilbert_elliott" if ge else "iid",
        "loss_threshold": _threshold(draw(st.sampled_from(LOSS_RATES))),
        "ge_p_threshold": _threshold(draw(st.sampled_from([0.0, 0.05, 0.3]))) if ge else 0,
        "ge_r_threshold": _threshold(draw(st.sampled_from([0.1, 0.5, 1.0]))) if ge else 0,
        "ge_bad_loss_threshold": _threshold(draw(st.sampled_from([0.2, 1.0]))) if ge else 0,
        "cc": cc or draw(st.sampled_from(("newreno", "cubic") if cross else CONTROLLERS)),
        "initial_cwnd_bytes": mss * draw(st.integers(1, 10)),
        "min_rto_ns": draw(st.sampled_from([1 * MS, 200 * MS])),
        "max_rto_ns": 60_000 * MS,
        "ring_capacity": draw(st.sampled_from([16, 64, 1024])),
        "fast_recovery": fast_recovery or draw(st.sampled_from(["immediate", "prr"])),
        "cubic_arithmetic": cubic_arithmetic or draw(st.sampled_from(["rfc9438", "segments"])),
    }
    if d["cc"] == "ccp":  # §7.13: a gain on either side of 3 (stable and oscillating); storage estimated or given
        d["ccp_gain_milli"] = draw(st.sampled_from([1, 500, 2000, 3000, 4500, 100_000]))
        d["ccp_storage_bytes"] = draw(st.sampled_from([0, 0, mss, 40 * mss, 2**50]))
    if dynamics or (dynamics is None and draw(st.integers(0, 2)) == 0):
        d.update(draw(delay_dynamics()))
        if d["cc"] != "ideal":  # a lossy acknowledgement path
            d["ack_loss_threshold"] = _threshold(draw(st.sampled_from([0.0, 0.0, 0.05, 0.3])))
            if draw(st.booleans()):  # a bottleneck on the way back (§6)
                d["rev_rate_bps"] = draw(st.sampled_from([20_000, 200_000, 5_000_000]))
                d["ack_bytes"] = draw(st.sampled_from([1, 40, 1500]))
                if draw(st.integers(0, 2)) > 0:
                    d["rev_queue_bytes"] = d["ack_bytes"] * draw(st.sampled_from([1, 2, 8]))
        if not cross:  # a backup path, a path added or removed mid-episode
            d["backup"] = draw(st.booleans())
            d["start_ns"] = draw(st.sampled_from([0, 0, 1, draw(st.integers(1, 300 * MS))]))
            if draw(st.booleans()):
                d["stop_ns"] = d["start_ns"] + draw(st.integers(0, 500 * MS))
    if cross:
        start = draw(st.integers(0, 100 * MS))
        d["start_ns"] = start
        d["stop_ns"] = start + draw(st.integers(0, 400 * MS))
    return d


@st.composite
def core_specs(draw: st.DrawFn, cc: str | None = None, max_blocks: int = 10, receiver: str | None = None,
               shared: bool | None = None, cross: bool | None = None, min_blocks: int = 1,
               fast_recovery: str | None = None, dynamics: bool | None = None,
               cubic_arithmetic: str | None = None) -> dict[str, Any]:
    """A small random episode in the format of docs/model.md section 1.

    By default links may be shared by several paths, cross flows may compete, and the
    receiver is block-aware or in-order, each window-based subflow's fast recovery is
    immediate or PRR and its Cubic arithmetic RFC 9438's or in segments, and a subflow
    may have delay steps and jitter; the keyword
    arguments pin any of these.
    Between min_blocks and max_blocks blocks arrive in the first 200 ms.
    """
    n_paths = draw(st.integers(1, 3))
    mss = draw(st.sampled_from([100, 500, 1448]))
    header = draw(st.sampled_from([0, 0, 40]))
    share = draw(st.booleans()) if shared is None else shared
    n_links = draw(st.integers(1, n_paths)) if share else n_paths
    links = []
    for _ in range(n_links):
        starts, rates, cycle = draw(bandwidths())
        links.append({
            "queue_bytes": (mss + header) * draw(st.integers(1, 30)),
            "bw_start_ns": np.array(starts, np.int64),
            "bw_rate_bps": np.array(rates, np.int64),
            "bw_cycle_ns": cycle,
        })
    paths = [draw(subflows(n_links, mss, cc, cross=False, fast_recovery=fast_recovery, dynamics=dynamics,
                           cubic_arithmetic=cubic_arithmetic))
             for _ in range(n_paths)]
    if not share:
        for j, p in enumerate(paths):
            p["link"] = j
    if cross is None:
        n_cross = draw(st.sampled_from([0, 0, 1, 2]))
    else:
        n_cross = draw(st.integers(1, 2)) if cross else 0
    crosses = [draw(subflows(n_links, mss, None, cross=True, fast_recovery=fast_recovery, dynamics=dynamics,
                             cubic_arithmetic=cubic_arithmetic))
               for _ in range(n_cross)]
    chosen_receiver = receiver or draw(st.sampled_from(["block", "in_order"]))
    n = draw(st.integers(min_blocks, max_blocks))
    arrival = sorted(draw(st.lists(st.integers(0, 200 * MS), min_size=n, max_size=n)))
    size = draw(st.lists(st.integers(1, 30_000), min_size=n, max_size=n))
    slack = draw(st.lists(st.integers(0, 300 * MS), min_size=n, max_size=n))
    return {
        "mss_bytes": mss,
        "header_bytes": header,
        "end_ns": draw(st.sampled_from([500 * MS, 3_000 * MS, 20_000 * MS])),
        "seed": draw(st.integers(0, 2**64 - 1)),
        "receiver": chosen_receiver,
        "sequence": draw(st.sampled_from(["send", "stream"])) if chosen_receiver == "in_order" else "send",
        "rbuf_bytes": mss * draw(st.integers(1, 60)),
        "drop_expired": draw(st.booleans()),
        "links": links,
        "paths": paths,
        "cross": crosses,
        "blocks": {
            "arrival_ns": np.array(arrival, np.int64),
            "size_bytes": np.array(size, np.int64),
            "deadline_ns": np.array([a + d for a, d in zip(arrival, slack)], np.int64),
            "priority": np.array(draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)), np.int32),
            "weight": np.array(draw(st.lists(st.floats(0, 4), min_size=n, max_size=n)), np.float64),
        },
    }


def scripted_policy(view: Any) -> int:
    """A deterministic policy that waits, cancels and picks blocks pseudo-randomly.

    It exercises every part of the decision interface and depends only on what both
    the core and the reference expose: time, decision index and the sendable list.
    """
    h = (view.decision_index * 2654435761 + view.now_ns) % 1_000_003
    if h % 11 == 0:
        return -1
    sendable = view.sendable
    if h % 17 == 0 and len(sendable) > 1:
        view.cancel(sendable[h % len(sendable)])
        sendable = view.sendable
        if not sendable:
            return -1
    return sendable[(h // 7) % len(sendable)]


def copying_policy(view: Any) -> int:
    """:func:`scripted_policy` with copies (docs/model.md 7.1): a third of the decisions
    copy a pseudo-random piece in flight that the path may copy; with nothing sendable, a
    copy when there is one to send, else WAIT."""
    h = (view.decision_index * 2654435761 + view.now_ns) % 1_000_003
    copyable = view.copyable
    if copyable and (h % 3 == 0 or not view.sendable):
        return -2 - copyable[(h // 5) % len(copyable)]
    if not view.sendable:
        return -1
    return scripted_policy(view)


def rate_aware_policy(view: Any) -> int:
    """:func:`scripted_policy`, but a path whose link serves nothing now waits (as the
    replayed optimum does): it relies on the rate lane of docs/model.md section 8 to be
    asked again when the rate changes."""
    if view.link_rate_bps[view.path] == 0:
        return -1
    return scripted_policy(view)


def zero_rate_waiter(view: Any) -> int:
    """Sends the sendable block with the smallest index, but waits while the deciding
    path's link serves nothing."""
    if view.link_rate_bps[view.path] == 0:
        return -1
    return view.sendable[0]


class CoreView:
    """The decision view of tests/refsim.py, read from the C core."""

    def __init__(self, sim: _core.Sim, buf: np.ndarray, path: int, decision_index: int) -> None:
        self._sim = sim
        self._buf = buf
        self.now_ns = sim.now_ns
        self.path = path
        self.ready = [bool(x) for x in np.asarray(sim.view("can_send"))]
        self.srtt_ns = [int(x) for x in np.asarray(sim.view("srtt_ns"))]
        self.link_rate_bps = [int(x) for x in np.asarray(sim.view("link_rate_bps"))]
        self.decision_index = decision_index

    @property
    def sendable(self) -> list[int]:
        return [int(x) for x in self._buf[: self._sim.sendable(self._buf)]]

    @property
    def copyable(self) -> list[int]:
        """Pieces (counted over all blocks) this path may copy, ascending."""
        if not self._sim.copies:
            return []
        state = np.asarray(self._sim.view("piece_state"))
        on = np.asarray(self._sim.view("piece_paths"))
        flags = np.asarray(self._sim.view("flags"))
        first = np.asarray(self._sim.view("piece_off"))
        block = np.searchsorted(first, np.arange(len(state)), side="right") - 1
        usable = (flags[block] & (_core.FLAG_ARRIVED | _core.FLAG_CANCELLED)) == _core.FLAG_ARRIVED
        free = (on & (1 << self.path)) == 0
        return np.flatnonzero((state == _core.PIECE_OUT) & free & usable).tolist()

    def cancel(self, block: int) -> None:
        self._sim.cancel(block)


def make_sim(spec: dict[str, Any]) -> _core.Sim:
    sim = _core.Sim(**{k: v for k, v in spec.items() if k != "copies"})
    sim.copies = bool(spec.get("copies", False))
    return sim


def run_core(spec: dict[str, Any], policy: str | Callable[[Any], int]) -> dict[str, Any]:
    """Run the C core on a spec; outputs keyed like the reference's."""
    sim = make_sim(spec)
    if isinstance(policy, str):
        sim.run(policy)
    else:
        buf = np.zeros(sim.n_blocks, np.int32)
        k = 0
        while (j := sim.next_decision()) >= 0:
            sim.apply(policy(CoreView(sim, buf, j, k)))
            k += 1
    out: dict[str, Any] = {}
    for name, key in {**BLOCK_OUTPUTS, **PATH_OUTPUTS}.items():
        out[key] = np.array(sim.view(name), copy=True)
    for name, key in CROSS_OUTPUTS.items():
        out[key] = np.array(sim.cross_view(name), copy=True)
    if sim.receiver == "in_order":
        for name in ("piece_arrival_ns", "piece_delivery_ns", "piece_first_send_ns"):
            out[name] = np.array(sim.view(name), copy=True)
        out["dsn_order"] = np.array(sim.view("dsn_order"), copy=True)[: sim.n_dsn]
        out["rcv_nxt"] = sim.rcv_nxt
    for name in PIECE_OUTPUTS:
        out[name] = np.array(sim.view(name), copy=True)
    out["rbuf_used"] = sim.rbuf_used
    out["decisions"] = sim.decisions
    out["reward"] = sim.reward_total
    out["last_event_ns"] = sim.last_event_ns
    return out


def most_waiting(blocks: Any) -> int:
    """The most blocks of an episode's block table that had arrived and not yet been sent
    from, at any block arrival: how deep the sender's backlog got."""
    arrived = np.sort(blocks["arrival_ns"].to_numpy())
    started = np.sort(blocks["first_send_ns"].dropna().to_numpy(np.int64))
    return int((np.searchsorted(arrived, arrived, "right") - np.searchsorted(started, arrived, "right")).max())
