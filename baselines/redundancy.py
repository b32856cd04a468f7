"""Schedulers that send copies of data already in flight: redundancy as deployed stacks do it.

A copy goes out on another path while the first transmission is still in flight; the
receiver keeps the first to arrive (docs/model.md 7.1, copies). Redundancy trades
bytes for delay and for robustness to loss and path failure: the results' path table
counts the copies (``redundant_packets``, ``redundant_bytes``). Each class is the readable
specification of a native twin (envs/core/policies/redundancy.c).
"""

from __future__ import annotations

import numpy as np

from ..envs.policy import WAIT, Observation, Policy

__all__ = ["Redundant", "XquicReinjection", "XlinkReinjection", "minrtt_new_data", "longest_waiting_copy"]


def minrtt_new_data(obs: Observation) -> int:
    """New data as :class:`~mpsched.baselines.classic.MinRTT` sends it: the oldest sendable
    block if no other ready path has a smaller ``(srtt, index)``, else WAIT; WAIT as well
    when nothing is sendable (a policy that copies is asked also then)."""
    sendable = obs.sendable()
    if not len(sendable):
        return WAIT
    j, srtt = obs.path, obs.srtt_ns
    for i in range(obs.n_paths):
        if i != j and obs.can_send[i] and (srtt[i], i) < (srtt[j], j):
            return WAIT
    return int(sendable[0])


def longest_waiting_copy(obs: Observation, after_ns: float) -> int:
    """xquic's reinjection choice for the deciding path ``j``: a copy of the piece that has
    waited longest (smallest latest transmission time, then lowest index) among the pieces
    in flight on exactly one path, not ``j``, of blocks not cancelled, for at least
    ``after_ns``; WAIT when there is none."""
    j = obs.path
    paths = obs.piece_paths.astype(np.int64)
    single = (paths & (paths - 1)) == 0
    candidates = np.flatnonzero(obs.piece_in_flight & single & ((paths >> j) & 1 == 0))
    if len(candidates):
        blocks = np.searchsorted(obs.piece_off, candidates, side="right") - 1
        sent = obs.piece_sent_ns[candidates]
        due = (~obs.cancelled[blocks]) & ((obs.now_ns - sent).astype(np.float64) >= after_ns)
        if due.any():
            pieces, times = candidates[due], sent[due]
            g = int(pieces[np.lexsort((pieces, times))[0]])
            b = int(np.searchsorted(obs.piece_off, g, side="right") - 1)
            return obs.copy(b, g - int(obs.piece_off[b]))
    return WAIT


class Redundant(Policy):
    """Linux MPTCP's ``redundant`` scheduler: every packet on every active path.

    Pinedo and Lopez, ``net/mptcp/mptcp_redundant.c`` (multipath-tcp.org kernel v0.89
    onwards): a new segment goes out on the subflow the default scheduler picks (MinRTT),
    and a copy of it is queued for every other active subflow in the reinjection queue,
    which a subflow serves before new data; a copy of data already acknowledged is
    dropped, and backup subflows get no copies.

    Mapping onto the decision point: path ``j`` (not a backup) sends a copy of the oldest
    piece in flight that it has not sent (the lowest block with one; docs/model.md 7.1
    picks the block's lowest such piece); otherwise new data as :class:`MinRTT`: ``j``
    waits while another ready path has a smaller ``(srtt, index)``, else sends the oldest
    sendable block. "Oldest" is the block order (blocks are sent first-in first-out).

    Cost: the native twin looks at the pieces in flight of the open blocks, from each
    block's out floor (no piece below it is in flight), so its work per decision grows with
    the window, not with the episode: 1.03 times the time per packet on a transfer 8 times
    longer (``mpsched bench --length-scaling``, bulk transfer), but on a path with
    thousands of packets in flight (the fuzz corpus's two 62 MB blocks at 62 Mbit/s, 450,000
    packets) about 100 times MinRTT's: 11-15 s against 0.12 s.
    """

    name = "redundant"
    native = "redundant"
    copies = True
    paper = "Linux MPTCP redundant scheduler (mptcp_redundant.c, Pinedo and Lopez)"

    def decide(self, obs: Observation) -> int:
        j = obs.path
        if not obs.backup[j]:
            copyable = obs.copyable()
            if len(copyable):
                return obs.copy(int(copyable[0]))
        return minrtt_new_data(obs)


class XquicReinjection(Policy):
    """xquic's deadline reinjection on its MinRTT scheduler.

    Alibaba xquic, reinjection control ``deadline`` (``xqc_reinj_deadline.c``): before new
    data is scheduled, a packet still in flight that has not been reinjected is sent once
    more on another path once it has been in flight for
    ``max(min(srtt_factor * min_srtt, hard_deadline), lower_bound)``, ``min_srtt`` the
    smallest smoothed RTT of the connection's paths (xquic's defaults: factor 2, no hard
    deadline, no lower bound). New data goes by MinRTT, xquic's default scheduler.

    Mapping onto the decision point: path ``j`` copies the piece that has waited longest
    (smallest latest transmission time, then lowest index) among the pieces in flight on
    exactly one path, not ``j``, for at least that long (docs/model.md 7.1); otherwise new
    data as :class:`MinRTT`. "Not reinjected" is read as "in flight on one path only": a
    copy whose original was declared lost may be reinjected again, which xquic's packet
    flags would not allow. The check runs at decision points (xquic runs it before each
    scheduling pass, which acknowledgements and timers start): a piece that becomes due
    between two events waits for the next one.

    Cost: as :class:`Redundant`'s, per decision the pieces in flight of the open blocks
    from each block's out floor (1.25 times the time per packet on a transfer 8 times
    longer).

    Parameters
    ----------
    srtt_factor : float
        Multiple of the smallest smoothed RTT after which a packet is reinjected.
    hard_deadline_ms : float
        Upper bound of that time (the default, 1e9 ms, never binds).
    lower_bound_ms : float
        Lower bound of that time.
    """

    name = "xquic-reinject"
    native = "xquic_reinject"
    copies = True
    paper = "xquic deadline reinjection (xqc_reinj_deadline.c) with its MinRTT scheduler"

    def __init__(self, srtt_factor: float = 2.0, hard_deadline_ms: float = 1e9, lower_bound_ms: float = 0.0) -> None:
        super().__init__()
        for key, value, high in (("srtt_factor", srtt_factor, 1000.0), ("hard_deadline_ms", hard_deadline_ms, 1e9),
                                 ("lower_bound_ms", lower_bound_ms, 1e9)):
            if not 0.0 <= float(value) <= high:
                raise ValueError(f"{key} must be in [0, {high:g}], got {value!r}")
        self.srtt_factor = float(srtt_factor)
        self.hard_deadline_ms = float(hard_deadline_ms)
        self.lower_bound_ms = float(lower_bound_ms)

    def reinjection_after_ns(self, obs: Observation) -> float:
        """``max(min(srtt_factor * min_srtt, hard_deadline), lower_bound)`` in ns."""
        flexible = self.srtt_factor * float(int(obs.srtt_ns.min()))
        return max(min(flexible, self.hard_deadline_ms * 1e6), self.lower_bound_ms * 1e6)

    def decide(self, obs: Observation) -> int:
        copy = longest_waiting_copy(obs, self.reinjection_after_ns(obs))
        return copy if copy != WAIT else minrtt_new_data(obs)


class XlinkReinjection(Policy):
    """XLINK's QoE-driven reinjection: reinject while the player's buffer runs low.

    Zheng et al., "XLINK: QoE-driven multi-path QUIC transport in large-scale video
    services", ACM SIGCOMM 2021, Sec. 4: new data goes by MinRTT; a packet in flight is
    reinjected on another path (once) only while the client's *play-time left* ``dt``,
    fed back by the player, is short. A double threshold decides: reinjection is on when
    ``dt < T_th1``, off when ``dt > T_th2``, and in between on only when ``dt`` is shorter
    than the time the outstanding request still needs. The reinjection itself is xquic's
    (``xqc_reinjection.c``): the oldest unacknowledged packet not yet reinjected, onto a
    path with room other than its own, before new data.

    Our reading:

    - the sender knows the player's state from its acknowledgements: the request the
      player waits for is the oldest block not acknowledged, not cancelled and not past
      its deadline (a live stream's frame is played at its deadline, docs/model.md
      section 1, and one that missed it is skipped), and ``dt`` is the time left to that
      deadline. The remaining time of that request is its bytes not acknowledged over the
      paths' summed delivery-rate estimates (docs/model.md 7.3; infinite while none is
      known). No feedback delay is modelled;
    - the paper's thresholds are not given in the sources we have. The defaults, 50 and
      100 ms, are a quarter and a half of the suites' 200 ms live-video deadlines.
      Measured (seed 0) on eight settings of the dynamics suite and the quick leaderboard
      (jitter, handover, outages, loss, a slow way back, the DAMS paper's 80 ms setting,
      web over Wi-Fi and LTE): with them xlink's weighted on-time rate is at least
      MinRTT's on all eight (80 ms setting: 0.871 against 0.727); with 100 and 150 ms it
      falls below MinRTT on the two overloaded ones (0.718 against 0.727 and 0.768
      against 0.780). With ``low_ms`` above ``high_ms`` the first test wins (on below
      ``low_ms``, off otherwise);
    - what is reinjected is the tail of that request, the chunk that blocks playback: the
      piece of that block in flight on one path only, not the deciding one, that has
      waited longer than its path's smoothed RTT (its acknowledgement is overdue: it is
      lost or stuck), the longest-waiting first (:meth:`overdue_copy`, xquic's choice
      within the block). Copies of later blocks would not shorten the stall, and
      copies of a piece whose acknowledgement is not yet due would mostly duplicate a
      delivery already under way: copying every piece of the awaited block onto the other
      path took 5 to 15 MB of copies on the 60 s overloaded settings and left almost no
      frame on time;
    - the paper's priority-based reinjection gives a copy its stream's priority: it goes
      ahead of the new data of later blocks, not of the block's own unsent data nor of
      older blocks' (with the senders' first-in first-out order: only while the oldest
      sendable block comes after the awaited one).

    Parameters
    ----------
    low_ms : float
        ``T_th1``: below this play-time left, reinjection is on.
    high_ms : float
        ``T_th2``: above it, off.
    """

    name = "xlink"
    native = "xlink"
    copies = True
    paper = "Zheng et al., XLINK, ACM SIGCOMM 2021 (QoE-driven reinjection; xquic's reinjection)"

    def __init__(self, low_ms: float = 50.0, high_ms: float = 100.0) -> None:
        super().__init__()
        for key, value in (("low_ms", low_ms), ("high_ms", high_ms)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1e9:
                raise ValueError(f"{key} must be in [0, 1e9], got {value!r}")
        self.low_ms = float(low_ms)
        self.high_ms = float(high_ms)

    def awaited(self, obs: Observation) -> int | None:
        """The block the player waits for if reinjection is on now, else None (the double
        threshold on its play-time left, class docstring)."""
        waiting = np.flatnonzero((obs.acked_bytes < obs.size_bytes) & ~obs.cancelled & (obs.deadline_ns >= obs.now_ns))
        if not len(waiting):
            return None
        b = int(waiting[0])
        left = float(int(obs.deadline_ns[b]) - obs.now_ns)
        if left < self.low_ms * 1e6:
            return b
        if left > self.high_ms * 1e6:
            return None
        rate = 0.0
        for r in obs.delivery_rate_bps.tolist():
            rate += float(r)
        on = rate <= 0.0 or left < float(int(obs.size_bytes[b]) - int(obs.acked_bytes[b])) * 8e9 / rate
        return b if on else None

    def decide(self, obs: Observation) -> int:
        b = self.awaited(obs)
        if b is not None:
            sendable = obs.sendable()
            if not len(sendable) or int(sendable[0]) > b:  # no older data waits to go first
                copy = self.overdue_copy(obs, b)
                if copy != WAIT:
                    return copy
        return minrtt_new_data(obs)

    @staticmethod
    def overdue_copy(obs: Observation, b: int) -> int:
        """A copy of block ``b``'s piece in flight on exactly one path, not the deciding
        one, for longer than that path's srtt, the longest-waiting first (then lowest
        index); WAIT when there is none."""
        j, first = obs.path, int(obs.piece_off[b])
        paths, state, sent = obs.piece_paths, obs.piece_in_flight, obs.piece_sent_ns
        best = -1
        for g in range(first, first - (-int(obs.size_bytes[b]) // obs.mss_bytes)):
            on = int(paths[g])
            if not state[g] or not on or on & (on - 1) or (on >> j) & 1:
                continue
            if obs.now_ns - int(sent[g]) <= int(obs.srtt_ns[on.bit_length() - 1]):
                continue  # its acknowledgement is not overdue
            if best < 0 or sent[g] < sent[best]:
                best = g
        return WAIT if best < 0 else obs.copy(b, best - first)
