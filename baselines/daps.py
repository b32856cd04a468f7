"""DAPS, delay-aware packet scheduling, with blind round-robin as its fallback.

Kuhn, Lochin, Mifdaoui, Sarwar, Mehani and Boreli, "DAPS: Intelligent Delay-Aware Packet
Scheduling For Multipath Transport", IEEE ICC 2014 ([daps]; [daps-slides] is its slides).
Blocks are served first-in first-out and deadlines are ignored: DAPS only chooses which
path takes the next packet of the connection's byte stream. The native twin is
envs/core/policies/daps.c; the two make identical decisions.
"""

from __future__ import annotations

from ..envs.policy import WAIT, Observation, Policy
from .classic import round_robin_turn

__all__ = ["DAPS"]


class DAPS(Policy):
    """DAPS ([daps], Sec. III, Algorithm 3), blind round-robin while paths are unstable.

    **The schedule (Algorithm 3).** With ``r_f`` and ``r_s`` the smoothed RTTs of the fast
    and the slow path and ``eta = floor(r_s / r_f)``, a schedule gives the next
    ``max_f = min(eta, cwnd_f - unack_f)`` packets of the stream to the fast path and the
    following ``cwnd_s - unack_s`` to the slow path, so that the fast path's packets, sent
    "during the longest forward delay r_s/2", arrive before the slow path's. The
    algorithm's precondition ``n_pkts > cwnd_f - unack_f`` ("too many packets for the fast
    path only") is checked: when the bytes still to send (of the sendable blocks; with the
    stream sequence, of the whole sender buffer) fit into the fast path's free window, the
    schedule gives them all to the fast path. Windows count whole packets:
    ``(cwnd - inflight) // mss`` for window-based paths, one packet for an ideal
    (link-clocked) path that can send, none for a path that cannot.

    *n paths* (the paper has two): paths are ordered by ``(srtt, index)``; the slowest one
    plays ``p_s`` and takes its whole free window last; every other path ``k``, in that
    order, takes ``floor(r_max / r_k)`` (capped as ``max_f`` with the send sequence)
    before it, ``r_max`` being the largest RTT (the "longest forward delay" of Sec. III-B
    and ``r_s = max_i r_i`` of Sec. II-B). With two paths this is Algorithm 3.

    **When schedules are made** (Sec. III-B and the slides' pseudo-code, [daps-slides]): an
    execution of Algorithm 2 is a decision instant. At an instant where at least two paths
    can send ("capacity on multiple paths"), a new schedule replaces the last one (which
    also reschedules what the last one could not send, the lowest sequence numbers going
    to the fast path), once per instant and again whenever no path that can send has
    work left in it. When no path that can send has work, only the deciding path ``j``
    can send (or the new schedule gave the others nothing). The slides give both cases
    the same rule, "DAPS sends as much packets as possible, considering the rwnd", and
    add "and the last generated S" for the slow path. So with "capacity on the fast path
    only", ``j`` sends the oldest sendable block if it is the path with the smallest
    ``(srtt, index)``. With "capacity on the slow path only", a slower ``j`` sends too, but
    what the last schedule gave another path stays that path's: with the stream sequence
    ``j`` sends the first sendable block holding no retransmission that lies outside
    every other path's run (so beyond the schedule when its own run is sent); with the
    send sequence, whose schedule holds no positions (see below), the oldest sendable
    block.

    **Sequence numbers** (docs/model.md 6.2). The in-order receiver numbers data either
    as it is first sent (``sequence: send``, the default) or in the application's byte
    order (``sequence: stream``, :attr:`~mpsched.envs.Observation.stream_sequence`); the
    schedule is kept and followed differently.

    *Send sequence.* A path that sends takes the next position of the stream, whichever
    block it sends, so a schedule of ``(TSN, path)`` pairs is an order in which paths take
    the next packet: *slots* in schedule order, ``max_f`` for the fast path then
    ``cwnd_s - unack_s`` for the slow one (the state keeps the schedule's path order and
    the slots left per path). Algorithm 2 transmits a schedule in its order in one
    execution, so the sequence numbers come out exactly as Algorithm 3 assigns them. The
    work of path ``i`` is a slot left; at an instant the owner of the next slot is the
    first path in schedule order that can send and has one, and ``j`` sends the oldest
    sendable block (taking the slot) if it is the owner, waits if another path is, and
    sends it as well when there is no owner (capacity on one path only). A sequence
    number cannot be held back for a packet not sent yet: the fast path's packets sent
    while a slow packet is in flight follow it in sequence.

    *Stream sequence.* Block ``b``'s bytes hold their positions whenever they leave, so
    the TSNs of Algorithm 3 are blocks (with one-packet blocks, e.g. bulk data whose
    ``chunk_bytes`` is the MSS, a block is one chunk of the paper), and the schedule is a
    partition of the blocks with bytes to send (``remaining_bytes > 0``: the sender
    buffer, whatever the receive window), in index order, into consecutive *runs*: the
    next ``eta`` blocks for the fast path, the following ``cwnd_s - unack_s`` for the slow
    path, the rest unscheduled. The fast path's share is not capped by its free window:
    that cap is what Algorithm 2 can transmit at once, needed where positions are given
    on sending; here the ``eta`` positions are held for the packets the fast path sends
    "during the longest forward delay r_s/2" as its window opens, while the slow path's
    later blocks are already on their way. The state keeps the schedule's path order and
    one half-open range of block indices per path, ``[run_lo, run_hi)``: the fast path's
    starts at block 0, each other path's where the previous one ends, and each ends before
    the first block of the next share (at ``n_arrived`` when the sender buffer runs out;
    paths left without a share have empty runs). The work of path ``i`` is the first
    sendable block of its run: when ``j`` decides it sends that block, so the slow path
    sends ahead, a later block before the earlier ones go out on the fast path; without
    one it waits while another path that can send has work (the schedule goes out before
    anything beyond it) and otherwise acts as above. Blocks with bytes to retransmit are
    the fast path's alone ("packets that need be retransmitted, regardless of which path
    they were initially sent", are rescheduled with the lowest TSNs, on the fast path): a
    slower path's work skips them, and one lost after the schedule was made waits for the
    fast path, in its run or as the oldest sendable block. A block of a run whose next
    piece ends beyond the receive window (``data_acked + rbuf_bytes``, 7) is not sendable:
    its path waits, as Algorithm 2 skips the entries ``rwnd`` does not allow, and the next
    schedule reassigns it ("a new schedule including all the packets that could not have
    been transmitted"). This window bounds positions, where SCTP's ``rwnd`` counts the
    bytes outstanding (eq. (1)), so the positions held for the fast path take up window
    too.

    **When DAPS applies** (Sec. III-C). A schedule is valid only while RTTs and windows
    are stable. Each path is sampled once per its own RTT (the first decision at or after
    the previous sample plus the ``srtt`` then measured); sample ``t + 1`` is stable when

    - eq. (5): ``(1 - rtt_tolerance) R(t) <= R(t+1) <= (1 + rtt_tolerance) R(t)``, and
    - eq. (6): ``cwnd(t) <= cwnd(t+1) <= cwnd(t) + cwnd_growth_packets * mss``.

    Eq. (6) is garbled in the text (its upper bound reduces to ``cwnd(t+1)`` itself); it
    is read as ``cwnd(t) (1 + 1/cwnd(t))`` in packets, the congestion-avoidance growth of
    one segment per RTT, which "excludes the slow-start phase" as the paper says (slow
    start doubles the window per RTT) and any decrease. DAPS applies while there are two
    paths or more and the last sample of every path is stable (a path has none before its
    first RTT has passed); otherwise blind round-robin decides (Algorithm 1 as
    :class:`~mpsched.baselines.classic.BlindRoundRobin` reads it: paths in turn, one
    packet per turn, FIFO blocks) and the schedule is dropped. Eq. (4), ``r_s >> r_f``,
    is not a switch: the paper leaves its threshold to future work (Sec. V) and never
    found DAPS less efficient than blind round-robin.

    Parameters
    ----------
    rtt_tolerance : float
        Relative RTT change between samples that eq. (5) accepts; 0.1 in the paper.
    cwnd_growth_packets : float
        Most growth of a window between samples, in packets, that eq. (6) accepts; 1 in
        the paper (as read above). A very large value gives the literal formula: the
        window must not shrink.
    """

    name = "daps"
    native = "daps"
    paper = "Kuhn et al., DAPS [daps] Algorithm 3, eqs. (5)-(6)"

    def __init__(self, rtt_tolerance: float = 0.1, cwnd_growth_packets: float = 1.0) -> None:
        super().__init__()
        if not 0.0 <= float(rtt_tolerance) < 1.0:
            raise ValueError(f"rtt_tolerance must be in [0, 1), got {rtt_tolerance!r}")
        if not 0.0 <= float(cwnd_growth_packets) <= 1e6:
            raise ValueError(f"cwnd_growth_packets must be in [0, 1e6], got {cwnd_growth_packets!r}")
        self.rtt_tolerance = float(rtt_tolerance)
        self.cwnd_growth_packets = float(cwnd_growth_packets)

    # per-episode state ---------------------------------------------------------------
    def reset(self, obs: Observation) -> None:
        P = obs.n_paths
        self._stream = obs.in_order and obs.stream_sequence  # positions in byte order (6.2)
        self._cursor = 0  # blind round-robin's turn
        self._made_ns = -1  # instant at which the current schedule was made
        self._order: list[int] = list(range(P))  # send sequence: the schedule's paths, in slot order
        self._slots = [0] * P  # send sequence: slots left per path
        self._run_lo = [0] * P  # stream sequence: each path's run of blocks, [run_lo, run_hi)
        self._run_hi = [0] * P
        self._ref_srtt = [int(obs.srtt_ns[i]) for i in range(P)]
        self._ref_cwnd = [int(obs.cwnd_bytes[i]) for i in range(P)]
        self._next_sample_ns = [obs.now_ns + max(int(obs.srtt_ns[i]), 1) for i in range(P)]
        self._stable = [False] * P

    # Sec. III-C ------------------------------------------------------------------------
    def _sample(self, obs: Observation) -> bool:
        """Takes the samples that are due; whether every path's last sample is stable."""
        now = obs.now_ns
        low, high = 1.0 - self.rtt_tolerance, 1.0 + self.rtt_tolerance
        growth = self.cwnd_growth_packets * float(obs.mss_bytes)
        all_stable = obs.n_paths >= 2
        for i in range(obs.n_paths):
            if now >= self._next_sample_ns[i]:
                srtt, cwnd = int(obs.srtt_ns[i]), int(obs.cwnd_bytes[i])
                r, w = float(self._ref_srtt[i]), self._ref_cwnd[i]
                self._stable[i] = (r * low <= float(srtt) <= r * high  # eq. (5)
                                   and w <= cwnd and float(cwnd) <= float(w) + growth)  # eq. (6)
                self._ref_srtt[i], self._ref_cwnd[i] = srtt, cwnd
                self._next_sample_ns[i] = now + max(srtt, 1)
            all_stable = all_stable and self._stable[i]
        return all_stable

    # Algorithm 3 -------------------------------------------------------------------
    @staticmethod
    def _free_packets(obs: Observation, i: int) -> int:
        """Packets path i can send now: cwnd_i - unack_i in whole packets."""
        if not obs.can_send[i]:
            return 0
        cwnd = int(obs.cwnd_bytes[i])
        if cwnd == 0:  # ideal: clocked by its link, one packet whenever the link is idle
            return 1
        return max(cwnd - int(obs.path_inflight_bytes[i]), 0) // obs.mss_bytes

    @staticmethod
    def _path_order(obs: Observation) -> list[int]:
        srtt = obs.srtt_ns
        return sorted(range(obs.n_paths), key=lambda i: (int(srtt[i]), i))

    def _make_schedule(self, obs: Observation) -> None:
        """Send sequence: slots per path, in schedule order."""
        order = self._path_order(obs)
        srtt = [int(obs.srtt_ns[i]) for i in range(obs.n_paths)]
        free = [self._free_packets(obs, i) for i in range(obs.n_paths)]
        fastest, slowest = order[0], order[-1]
        slots = [0] * obs.n_paths
        pending = sum(int(obs.unsent_bytes[b]) + int(obs.lost_bytes[b]) for b in obs.sendable())
        if pending <= free[fastest] * obs.mss_bytes:
            slots[fastest] = free[fastest]  # Algorithm 3's precondition fails: the fast path alone
        else:
            r_max = max(srtt[slowest], 1)
            for i in order[:-1]:
                slots[i] = min(r_max // max(srtt[i], 1), free[i])  # max_f = min(eta, cwnd_f - unack_f)
            slots[slowest] = free[slowest]  # cwnd_s - unack_s
        self._order, self._slots = order, slots
        self._made_ns = obs.now_ns

    def _make_runs(self, obs: Observation) -> None:
        """Stream sequence: consecutive runs of the blocks with bytes to send, one per path
        in (srtt, index) order: eta = floor(r_max / r_k) blocks for each path but the
        slowest, then the slowest path's free window."""
        P = obs.n_paths
        order = self._path_order(obs)
        fastest, slowest = order[0], order[-1]
        todo = [int(b) for b in (obs.remaining_bytes > 0).nonzero()[0]]  # the sender buffer, in stream order
        lo, hi = [0] * P, [0] * P
        pending = sum(int(obs.remaining_bytes[b]) for b in todo)
        if pending <= self._free_packets(obs, fastest) * obs.mss_bytes:
            hi[fastest] = obs.n_arrived  # Algorithm 3's precondition fails: the fast path alone
        else:
            r_max = max(int(obs.srtt_ns[slowest]), 1)
            taken, start = 0, 0
            for i in order:
                if taken == len(todo):
                    break  # the sender buffer is exhausted: the paths left get no run
                if i == slowest:
                    share = self._free_packets(obs, i)  # cwnd_s - unack_s
                else:
                    share = r_max // max(int(obs.srtt_ns[i]), 1)  # eta, whatever the free window
                taken = min(taken + share, len(todo))
                end = todo[taken] if taken < len(todo) else obs.n_arrived  # before the next share's first
                lo[i], hi[i] = start, end
                start = end
        self._order, self._run_lo, self._run_hi = order, lo, hi
        self._made_ns = obs.now_ns

    def _run_first(self, obs: Observation, sendable: list[int], i: int) -> int:
        """The first sendable block of path i's run, or -1. Retransmissions are the fast
        path's (Sec. III-B): a slower path's run holds new data only."""
        lo, hi = self._run_lo[i], self._run_hi[i]
        if i == self._order[0]:
            return next((b for b in sendable if lo <= b < hi), -1)
        lost = obs.lost_bytes
        return next((b for b in sendable if lo <= b < hi and int(lost[b]) == 0), -1)

    def _owner(self, obs: Observation) -> int:
        """Send sequence: the first path in schedule order that can send and has a slot
        left, or -1."""
        for i in self._order:
            if self._slots[i] > 0 and obs.can_send[i]:
                return i
        return -1

    def _decide_send(self, obs: Observation, ready: int) -> int:
        j = obs.path
        if ready >= 2 and (self._made_ns != obs.now_ns or self._owner(obs) < 0):
            self._make_schedule(obs)
        owner = self._owner(obs)
        if owner >= 0:
            if owner != j:
                return WAIT
            self._slots[j] -= 1
        return int(obs.sendable()[0])  # j's slot, or j alone can send

    def _decide_stream(self, obs: Observation, ready: int) -> int:
        j = obs.path
        sendable = [int(b) for b in obs.sendable()]
        ready_paths = [i for i in range(obs.n_paths) if obs.can_send[i]]
        if ready >= 2 and (self._made_ns != obs.now_ns
                           or all(self._run_first(obs, sendable, i) < 0 for i in ready_paths)):
            self._make_runs(obs)
        b = self._run_first(obs, sendable, j)
        if b >= 0:
            return b  # j's next position in the schedule
        if any(self._run_first(obs, sendable, i) >= 0 for i in ready_paths):
            return WAIT  # the schedule goes out before anything beyond it (Algorithm 2)
        if j == self._path_order(obs)[0]:
            return sendable[0]  # capacity on the fast path only
        # capacity on a slower path only: as much as the window allows, outside the others' runs
        lost = obs.lost_bytes
        others = [(self._run_lo[i], self._run_hi[i]) for i in range(obs.n_paths) if i != j]
        return next((b for b in sendable
                     if int(lost[b]) == 0 and not any(lo <= b < hi for lo, hi in others)), WAIT)

    def decide(self, obs: Observation) -> int:
        if not self._sample(obs):
            self._slots = [0] * obs.n_paths
            self._run_lo = [0] * obs.n_paths
            self._run_hi = [0] * obs.n_paths
            action, self._cursor = round_robin_turn(obs, self._cursor)  # Algorithm 1
            return action
        ready = sum(1 for i in range(obs.n_paths) if obs.can_send[i])
        return self._decide_stream(obs, ready) if self._stream else self._decide_send(obs, ready)
