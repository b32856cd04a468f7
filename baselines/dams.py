"""Block-splitting multipath schedulers of the DAMS paper: DEMS, DAMS, DAMS-C, DAMS-Robust.

[dams] ("DAMS: Deadline-Aware Multipath Scheduler for streaming blocks") proposes DAMS
and evaluates it against DEMS and its own variants DAMS-C and DAMS-Robust. All four plan,
block by block, how many bytes of each block every path carries; they differ in

========== =============================== ========================= ==================
scheduler  block order                     split of a block          deadlines
========== =============================== ========================= ==================
DEMS       FIFO, one block at a time       arrive together           ignored
DAMS       EDF + selective preservation    finish sending together   eq. (1), cancel
DAMS-C     EDF + selective preservation    arrive together           eq. (1), cancel
DAMS-Rob.  EDF + selective preservation    finish sending together   eq. (1) with (2)
========== =============================== ========================= ==================

Inputs ([dams] Sec. III-A): the bandwidth ``BW_j`` of path ``j`` is
``Observation.rate_bps`` (``cwnd * 8e9 / srtt`` for window-based paths, "the ratio of
congestion window and RTT"; the link's bandwidth for ideal ones) and the one-way delay is
``RTT_j / 2`` with ``RTT_j = srtt``. DAMS-Robust adds ``alpha * rttvar_j / 2`` to it
(eq. (2), see :class:`DAMSRobust`). Two options not in the paper change these inputs:
``forward_queue`` (docs/model.md 7.15) and ``hold_gain``, which also lets a path WAIT
while its bytes in flight would fill the bottleneck's queue (docs/model.md 7.16).

Mapping onto the per-path decision point. The policy keeps a *plan*: for each block it
has scheduled, a status (preserved or delayed) and per path a target of cumulative bytes
sent, ``target[b][j] = bytes_sent[b][j] + share`` at the time of planning. A deciding path
sends a packet of the first block in the plan's order that is sendable and whose
``bytes_sent[b][j]`` is still below its target on that path, and WAITs otherwise (the
plan gives it nothing to do now). The plan is recomputed from the current state
(Sec. III-C and IV: "when a new block comes or network condition changes, the blocks in
the sending buffer are rescheduled") when

- a block has arrived since the last plan (DAMS family), or the block at the head of
  the FIFO changed (DEMS);
- a block was cancelled: DAMS cancels blocks whose deadline has passed; a block that
  the harness cancelled (``drop_expired``) is noticed because the earliest deadline of
  the last plan has passed;
- the network changed: some path's ``rate_bps`` or one-way delay estimate differs from
  the value the last plan used by more than ``change_threshold`` times that value;
- a block in the buffer has bytes the plan does not cover: a packet declared lost adds
  bytes to retransmit (Sec. IV: "the retransmitted data are treated as a part of the
  original block and participate in multipath scheduling"), or a block was not in the
  buffer when the plan was made.

With the in-order receiver a cancelled block may still hold retransmissions that the
receiver waits for (docs/model.md 6.2); such a block stays in the buffer, is always kept
(never delayed) and counts in ``C_seq``.

All arithmetic is on Python ints (bytes, ns) and binary64 floats evaluated in the same
order as the native twin (envs/core/policies/dams.c), which makes identical decisions.
"""

from __future__ import annotations

import math

from ..envs.policy import WAIT, Observation, Policy

__all__ = ["DEMS", "DAMS", "DAMSC", "DAMSRobust", "water_fill", "split_block"]

_PRESERVED = 1
_DELAYED = 2
_NO_EXPIRY = 2**63 - 1
_BITS_PER_BYTE_NS = 8e9  # rate_bps / 8e9 = bytes per nanosecond
_NO_BUCKET = -2  # no rate window yet: now // half window is never this or one more
_MAX_HOLD_GAIN = 1e6
_MIN_RATE_WINDOW_MS = 1e-3
_MAX_RATE_WINDOW_MS = 3.6e6


def water_fill(rem: int, base: list[float], q: list[float]) -> tuple[float, list[float]]:
    """The level ``F`` at which ``sum_j max(0, F - base_j) * q_j == rem`` and each path's
    share ``(F - base_j) * q_j`` (0 for paths that do not reach ``F``).

    ``base_j`` is when path ``j`` can start (ns after now), ``q_j`` its rate in bytes/ns;
    paths with ``q_j <= 0`` carry nothing. Paths join in order of ``(base_j, j)``. With
    ``base_j`` the time a path is free, all paths *finish sending* at ``F`` (DAMS, Fig. 4);
    with ``base_j`` the time its first byte would *arrive*, all parts arrive at ``F``
    (DEMS's simultaneous subflow completion, Fig. 1). Returns ``(0.0, zeros)`` when no
    path has a positive rate.
    """
    P = len(base)
    x = [0.0] * P
    usable = sorted((i for i in range(P) if q[i] > 0.0), key=lambda i: (base[i], i))
    if not usable:
        return 0.0, x
    sum_q = 0.0
    sum_bq = 0.0
    level = 0.0
    members = 0
    for k, i in enumerate(usable):
        sum_q += q[i]
        sum_bq += base[i] * q[i]
        level = (float(rem) + sum_bq) / sum_q
        members = k + 1
        if members == len(usable) or level <= base[usable[members]]:
            break
    for i in usable[:members]:
        x[i] = (level - base[i]) * q[i]
    return level, x


def _integer_shares(rem: int, x: list[float], q: list[float], owd_order: list[int]) -> list[int]:
    """Whole bytes per path summing to exactly ``rem``: each real share truncated (in
    order of one-way delay, never beyond what is left), the rounding remainder to the
    lowest-delay path that has a positive rate (the lowest-delay path if none has)."""
    a = [0] * len(x)
    assigned = 0
    for i in owd_order:
        n = int(x[i]) if x[i] > 0.0 else 0
        if n > rem - assigned:
            n = rem - assigned
        a[i] = n
        assigned += n
    first = owd_order[0]
    for i in owd_order:
        if q[i] > 0.0:
            first = i
            break
    a[first] += rem - assigned
    return a


def split_block(rem: int, free: list[float], q: list[float], owd: list[float], owd_order: list[int],
                arrive_together: bool, latest: list[float] | None) -> list[int]:
    """Bytes of one block per path; advances ``free`` (when each path finishes what the
    plan gave it so far, ns after now) past this block.

    Parameters
    ----------
    rem : int
        Bytes of the block still to send.
    free : list of float
        Per path, when it has sent the blocks planned before this one; updated in place.
    q : list of float
        Rates, bytes per ns.
    owd : list of float
        One-way delays, ns.
    owd_order : list of int
        Paths sorted by ``(owd, index)``.
    arrive_together : bool
        True: the parts *arrive* at the same time (DEMS, DAMS-C). False: the parts
        *finish sending* at the same time (DAMS, Sec. III-C, Fig. 4).
    latest : list of float or None
        DAMS only, for a block the selective preservation kept: per path the latest time
        (ns after now) a byte may finish sending and still arrive by the deadline,
        ``deadline - now - owd_j``. Bytes the equal-finish split would send later are moved
        to lower-delay paths with room before their own ``latest`` (Sec. III-C: "moving
        the part of the data beyond the deadline to the path with smaller one-way delay";
        Sec. VI: the smallest-delay path first, then the next).
    """
    P = len(free)
    if arrive_together:
        level, x = water_fill(rem, [free[i] + owd[i] for i in range(P)], q)
        end = [level - owd[i] if x[i] > 0.0 else free[i] for i in range(P)]
    else:
        level, x = water_fill(rem, free, q)
        end = [level if x[i] > 0.0 else free[i] for i in range(P)]
    if latest is not None:
        excess = [0.0] * P
        total_excess = 0.0
        for i in range(P):
            if x[i] > 0.0 and level > latest[i]:
                cut = free[i] if free[i] > latest[i] else latest[i]
                late = (level - cut) * q[i]
                if late > x[i]:
                    late = x[i]
                if late > 0.0:
                    excess[i] = late
                    total_excess += late
        if total_excess > 0.0:
            room = [0.0] * P
            total_room = 0.0
            for i in owd_order:
                if q[i] > 0.0 and end[i] < latest[i]:
                    room[i] = (latest[i] - end[i]) * q[i]
                    total_room += room[i]
            moved = total_excess if total_excess < total_room else total_room
            left = moved
            for i in reversed(owd_order):  # the highest-delay path gives first
                if excess[i] > 0.0 and left > 0.0:
                    take = excess[i] if excess[i] < left else left
                    x[i] -= take
                    end[i] -= take / q[i]
                    left -= take
            left = moved
            for i in owd_order:  # the lowest-delay path takes first
                if room[i] > 0.0 and left > 0.0:
                    give = room[i] if room[i] < left else left
                    x[i] += give
                    end[i] += give / q[i]
                    left -= give
    free[:] = end
    return _integer_shares(rem, x, q, owd_order)


def _check_threshold(change_threshold: float) -> float:
    value = float(change_threshold)
    if not (math.isfinite(value) and value >= 0.0):
        raise ValueError(f"change_threshold must be a finite number >= 0, got {change_threshold!r}")
    return value


def _check_range(name: str, value: float, low: float, high: float) -> float:
    number = math.nan if isinstance(value, bool) else float(value)
    if not (math.isfinite(number) and low <= number <= high):
        raise ValueError(f"{name} must be a number in [{low:g}, {high:g}], got {value!r}")
    return number


class _Planner(Policy):
    """Shared machinery: the plan, its triggers and the per-path choice (module doc)."""

    _edf = True
    _arrive_together = False
    _alpha = 0.0

    def __init__(self, change_threshold: float = 0.1, forward_queue: bool = False, hold_gain: float = 0.0,
                 rate_window_ms: float = 200.0) -> None:
        super().__init__()
        self.change_threshold = _check_threshold(change_threshold)
        if not isinstance(forward_queue, bool):
            raise ValueError(f"forward_queue must be true or false, got {forward_queue!r}")
        self.forward_queue = forward_queue
        self.hold_gain = _check_range("hold_gain", hold_gain, 0.0, _MAX_HOLD_GAIN)
        self.rate_window_ms = _check_range("rate_window_ms", rate_window_ms, _MIN_RATE_WINDOW_MS, _MAX_RATE_WINDOW_MS)
        self._half_window_ns = max(1, int(self.rate_window_ms * 500000.0))
        self._reset_plan()

    def _reset_plan(self) -> None:
        self._epoch = 0
        self._block_epoch: dict[int, int] = {}
        self._status: dict[int, int] = {}
        self._target: dict[int, list[int]] = {}
        self._planned_arrived = 0
        self._planned_expiry = _NO_EXPIRY
        self._planned_head = -1
        self._rate0: list[float] = []
        self._owd0: list[float] = []
        self._rate_bucket: list[int] = []
        self._rate_bucket_max: list[int] = []
        self._rate_prev_max: list[int] = []

    def reset(self, obs: Observation) -> None:
        self._reset_plan()
        self._rate0 = [0.0] * obs.n_paths
        self._owd0 = [0.0] * obs.n_paths
        self._rate_bucket = [_NO_BUCKET] * obs.n_paths
        self._rate_bucket_max = [0] * obs.n_paths
        self._rate_prev_max = [0] * obs.n_paths

    # inputs ---------------------------------------------------------------------------
    def _rates(self, obs: Observation) -> list[float]:
        """Rate per path, bit/s: ``rate_bps`` (the paper's ``cwnd / srtt``), or with
        ``hold_gain > 0`` the largest delivery rate seen at a decision over the last one to
        two half windows of ``rate_window_ms`` (``rate_bps`` until there is one)."""
        P = obs.n_paths
        if self.hold_gain <= 0.0:
            return [float(obs.rate_bps[i]) for i in range(P)]
        k = obs.now_ns // self._half_window_ns
        rate = []
        for i in range(P):
            if k != self._rate_bucket[i]:
                self._rate_prev_max[i] = self._rate_bucket_max[i] if k == self._rate_bucket[i] + 1 else 0
                self._rate_bucket[i] = k
                self._rate_bucket_max[i] = 0
            sample = int(obs.delivery_rate_bps[i])
            if sample > self._rate_bucket_max[i]:
                self._rate_bucket_max[i] = sample
            best = max(self._rate_bucket_max[i], self._rate_prev_max[i])
            rate.append(float(best) if best > 0 else float(obs.rate_bps[i]))
        return rate

    def _hold(self, obs: Observation, rate: list[float], b: int) -> int:
        """``b``, or WAIT while the deciding path's bytes in flight reach both two packets
        and ``hold_gain x rate x min_rtt``."""
        if b == WAIT or self.hold_gain <= 0.0:
            return b
        j = obs.path
        inflight = int(obs.path_inflight_bytes[j])
        cap = self.hold_gain * rate[j] * float(int(obs.min_rtt_ns[j])) / _BITS_PER_BYTE_NS
        if inflight >= 2 * obs.mss_bytes and float(inflight) >= cap:
            return WAIT
        return b

    def _owd(self, obs: Observation) -> list[float]:
        """One-way delay per path, ns: ``(srtt + alpha * rttvar) / 2`` (alpha = 0 but in
        DAMS-Robust), the papers' ``RTT_j / 2``; with ``forward_queue``, ``srtt`` is replaced
        by ``2 srtt - min_rtt``, so the delay is ``srtt - min_rtt / 2``: the queueing a
        window keeps at the bottleneck is on the way to the receiver (docs/model.md 7.15)."""
        owd = []
        for i in range(obs.n_paths):
            srtt = int(obs.srtt_ns[i])
            if self.forward_queue:
                srtt = 2 * srtt - int(obs.min_rtt_ns[i])
            owd.append((float(srtt) + self._alpha * float(int(obs.rttvar_ns[i]))) * 0.5)
        return owd

    def _network_changed(self, rate: list[float], owd: list[float]) -> bool:
        th = self.change_threshold
        for i in range(len(rate)):
            if abs(rate[i] - self._rate0[i]) > th * self._rate0[i]:
                return True
            if abs(owd[i] - self._owd0[i]) > th * self._owd0[i]:
                return True
        return False

    def _planned_left(self, obs: Observation, b: int) -> int:
        target = self._target[b]
        left = 0
        for i in range(obs.n_paths):
            d = target[i] - int(obs.bytes_sent[b, i])
            if d > 0:
                left += d
        return left

    def _record(self, obs: Observation, b: int, shares: list[int], status: int) -> None:
        self._block_epoch[b] = self._epoch
        self._status[b] = status
        self._target[b] = [int(obs.bytes_sent[b, i]) + shares[i] for i in range(obs.n_paths)]

    def _may_send(self, obs: Observation, b: int, j: int) -> bool:
        return int(obs.bytes_sent[b, j]) < self._target[b][j]

    # the DAMS family -------------------------------------------------------------------
    def _pending(self, obs: Observation) -> list[int]:
        """Blocks with bytes to send (never sent or waiting retransmission), in order of
        ``(deadline, index)``: the sender buffer of Sec. III-C."""
        remaining = obs.remaining_bytes
        deadline = obs.deadline_ns
        blocks = [b for b in range(obs.n_arrived) if int(remaining[b]) > 0]
        return sorted(blocks, key=lambda b: (int(deadline[b]), b))

    def _decide_edf(self, obs: Observation) -> int:
        now = obs.now_ns
        P = obs.n_paths
        rate = self._rates(obs)
        owd = self._owd(obs)
        # Sec. III-B: "once time exceeds the deadline of a block, it will be cancelled";
        # DAMS-Robust uses its adjusted deadline, the latest over the paths (eq. (2)).
        guard = self._alpha * float(min(int(obs.rttvar_ns[i]) for i in range(P))) * 0.5
        need = False
        for b in self._pending(obs):
            if not obs.cancelled[b] and float(int(obs.deadline_ns[b]) - now) < guard:
                obs.cancel(b)
                need = True
        pending = self._pending(obs)
        remaining = obs.remaining_bytes
        if not need:
            need = (obs.n_arrived != self._planned_arrived or now > self._planned_expiry
                    or self._network_changed(rate, owd))
        if not need:
            for b in pending:
                if self._block_epoch.get(b, 0) != self._epoch or int(remaining[b]) > self._planned_left(obs, b):
                    need = True
                    break
        if need:
            self._plan_edf(obs, pending, rate, owd)
        j = obs.path
        sendable = set(int(b) for b in obs.sendable())
        first_delayed = WAIT
        for b in pending:
            if b not in sendable or not self._may_send(obs, b, j):
                continue
            if self._status[b] == _PRESERVED:
                return self._hold(obs, rate, b)
            if first_delayed == WAIT:
                first_delayed = b
        return self._hold(obs, rate, first_delayed)

    def _plan_edf(self, obs: Observation, pending: list[int], rate: list[float], owd: list[float]) -> None:
        """Selective preservation (Sec. III-B, eq. (1)) then the per-path split of every
        block in the resulting order (Sec. III-C)."""
        now = obs.now_ns
        P = obs.n_paths
        remaining = obs.remaining_bytes
        cancelled = obs.cancelled
        deadline = obs.deadline_ns
        weight = obs.weight
        q = [rate[i] / _BITS_PER_BYTE_NS for i in range(P)]
        self._epoch += 1
        preserved: list[int] = []
        delayed: list[int] = []
        c_seq = 0
        for b in pending:
            rem = int(remaining[b])
            preserved.append(b)
            c_seq += rem
            if cancelled[b]:
                continue  # bytes the in-order receiver waits for: always sent, first
            # eq. (1) online: C_i = sum_j max(0, D_i - now - RTT_j / 2) * BW_j
            slack = float(int(deadline[b]) - now)
            capacity = 0.0
            for i in range(P):
                window = slack - owd[i]
                if window > 0.0:
                    capacity += window * q[i]
            # the blocks kept so far (C_seq, this one included) must fit; otherwise delay
            # the block with the smallest normalized credit d = c / (r s)
            while float(c_seq) > capacity:
                victim = -1
                best = 0.0
                for k, c in enumerate(preserved):
                    if cancelled[c]:
                        continue
                    d = float(weight[c]) / float(int(remaining[c]))
                    if victim < 0 or d <= best:
                        victim, best = k, d
                v = preserved.pop(victim)
                c_seq -= int(remaining[v])
                delayed.append(v)
                if v == b:
                    break
        delayed.sort(key=lambda b: (int(deadline[b]), b))
        owd_order = sorted(range(P), key=lambda i: (owd[i], i))
        free = [0.0] * P
        for b in preserved:
            latest = None
            if not self._arrive_together:
                slack = float(int(deadline[b]) - now)
                latest = [slack - owd[i] for i in range(P)]
            shares = split_block(int(remaining[b]), free, q, owd, owd_order, self._arrive_together, latest)
            self._record(obs, b, shares, _PRESERVED)
        for b in delayed:
            shares = split_block(int(remaining[b]), free, q, owd, owd_order, self._arrive_together, None)
            self._record(obs, b, shares, _DELAYED)
        expiry = _NO_EXPIRY
        for b in pending:
            if not cancelled[b] and int(deadline[b]) < expiry:
                expiry = int(deadline[b])
        self._planned_expiry = expiry
        self._planned_arrived = obs.n_arrived
        self._rate0 = list(rate)
        self._owd0 = list(owd)

    # DEMS ------------------------------------------------------------------------------
    def _decide_fifo(self, obs: Observation) -> int:
        P = obs.n_paths
        rate = self._rates(obs)
        owd = self._owd(obs)
        remaining = obs.remaining_bytes
        head = next((b for b in range(obs.n_arrived) if int(remaining[b]) > 0), -1)
        if head < 0:
            return WAIT
        if (head != self._planned_head or self._network_changed(rate, owd)
                or int(remaining[head]) > self._planned_left(obs, head)):
            q = [rate[i] / _BITS_PER_BYTE_NS for i in range(P)]
            owd_order = sorted(range(P), key=lambda i: (owd[i], i))
            shares = split_block(int(remaining[head]), [0.0] * P, q, owd, owd_order, True, None)
            self._record(obs, head, shares, _PRESERVED)
            self._planned_head = head
            self._rate0 = list(rate)
            self._owd0 = list(owd)
        j = obs.path
        if self._may_send(obs, head, j) and head in set(int(b) for b in obs.sendable()):
            return self._hold(obs, rate, head)
        return WAIT

    def decide(self, obs: Observation) -> int:
        return self._decide_edf(obs) if self._edf else self._decide_fifo(obs)


class DEMS(_Planner):
    """DEMS: one block at a time, split so that its parts arrive together.

    Guo et al., "Accelerating multipath transport through balanced subflow completion",
    MobiCom 2017, as the DAMS paper describes and runs it ([dams] Sec. I, V-A, V-C):
    blocks are sent first-in first-out; each block is split over the paths so that the
    subflows complete simultaneously at the receiver (Fig. 1); "DEMS sends the next block
    after the previous one finishes sending on both paths" (Sec. V-C1). It is not aware of
    deadlines: it never cancels and keeps sending late blocks.

    Mapping: the head of the FIFO (the lowest-index block with bytes to send) is split with
    :func:`water_fill` on each path's arrival time ``now + srtt_j / 2`` (all paths start
    now: the previous block has finished sending everywhere); a path sends the head while
    it is below its share and WAITs once its share is sent, until the head has no bytes
    left and the next block becomes the head. The split is recomputed when the head
    changes, when the network changes (``change_threshold``) and when the head has bytes
    its split does not cover (a loss).

    Parameters
    ----------
    change_threshold : float
        Relative change of a path's rate or one-way delay estimate since the last split
        that counts as a network change (0.1: 10 %). Not in the paper, which recomputes
        "when this module perceives network changes" (Sec. IV).
    forward_queue : bool
        Take the one-way delay as ``srtt - min_rtt / 2`` instead of the paper's
        ``srtt / 2`` (false): all of the queueing delay a window keeps is on the forward
        path (docs/model.md 7.15). Not in the paper.
    hold_gain, rate_window_ms : float
        As in :class:`DAMS` (0: no hold; 200 ms).
    """

    name = "dems"
    native = "dems"
    paper = "Guo et al., DEMS, MobiCom 2017; as run in DAMS [dams] Sec. V"
    deadline_aware = False
    _edf = False
    _arrive_together = True


class DAMS(_Planner):
    """DAMS: EDF with selective preservation; each block finishes sending on all paths
    together.

    [dams] Sec. III-B to III-C.

    - Order (III-B): the blocks with bytes to send, by ``(deadline, index)``.
    - Selective preservation (III-B, eq. (1)): block by block in that order, the blocks
      kept so far plus this one must fit in the capacity this block can use before its
      deadline, ``C_i = sum_j max(0, D_i - now - RTT_j / 2) * BW_j`` (eq. (1) online: now
      replaces the arrival time ``A_i``; the kept earlier blocks are ``C_seq``). While they
      do not, the kept block (this one included) with the smallest normalized credit
      ``d = c / (r s)`` is *delayed*: ``r s`` is its remaining bytes (never sent plus waiting
      retransmission) and ``c`` its credit, the block's ``weight`` (the score an on-time
      block earns, which the workloads derive from priority: "the credit c is positively
      correlated with the priority p"). Ties go to the block latest in EDF order. With equal
      credits this is Moore and Hodgson's rule, optimal for the number of on-time blocks,
      as the paper notes ("DAMS selects the smallest block ... the optimal solution").
    - Delay and cancel (II, III-B): a delayed block "makes way for subsequent data": it is
      planned after every kept block and sent only with what they leave. A block is
      cancelled once its deadline has passed ("once time exceeds the deadline of a block,
      it will be cancelled and will no longer participate in scheduling afterwards").
      Not sending delayed blocks at all would stall: once the rate estimates are low
      (a window-based path after a timeout has one packet of window) every block fails
      eq. (1), nothing is sent, no acknowledgement updates the estimates, and the
      connection never sends again.
    - Split (III-C, Fig. 4): each block, in plan order, is split so that it *finishes
      sending* on all paths at the same time (:func:`water_fill` on when each path is
      free); if a part would arrive after the deadline, the bytes beyond it move to
      lower-delay paths, the lowest first (III-C, VI).
    - Rescheduled on block arrival, cancellation, network change and uncovered bytes
      (module doc).

    Cost: inherently linear in the pending blocks per decision. Eq. (1) tests every
    pending block against the capacity left before its own deadline from *now*, so a
    re-plan (at every block arrival, as the paper reschedules) visits them all, and the
    plan's per-path targets are checked block by block. The native twin walks them in
    deadline order from the first word that holds one, so its cost does not grow with the
    episode (``mpsched bench --length-scaling``: 8x the episode within 1.4x per packet on
    the three benchmark scenarios, the rest the deep backlog's warm-up), but it does
    grow with the buffer. Measured on the benchmark paths fed 10 Mbit/s of 1500 B blocks
    for 20 s, with the deadline setting the buffer (time per packet against MinRTT's
    0.3 us): 3.5 us at 133 block visits per decision (scan and re-plan), 15.7 us at 575,
    46 us at 1,120, 123 us at 3,578. The visits count against the work budget
    (docs/model.md section 12).

    Parameters
    ----------
    change_threshold : float
        Relative change of a path's rate or one-way delay estimate since the last plan
        that counts as a network change (0.1: 10 %). Not in the paper, which reschedules
        "when this module perceives network changes" (Sec. IV).
    forward_queue : bool
        Take the one-way delay as ``srtt - min_rtt / 2`` instead of the paper's
        ``srtt / 2`` (false): all of the queueing delay a window keeps is on the forward
        path (docs/model.md 7.15). Not in the paper.
    hold_gain : float
        0 (the paper's scheduler): send whenever the window allows. Above 0, hold each
        path's bytes in flight below ``hold_gain x BW_j x min_rtt_j`` (and at least two
        packets), WAITing otherwise, with ``BW_j`` the path's delivery rate at its largest
        over ``rate_window_ms`` in place of ``cwnd / srtt`` (docs/model.md 7.16): BBR's
        in-flight cap (Cardwell et al., "BBR: Congestion-Based Congestion Control", ACM
        Queue 14(5), 2016: ``cwnd_gain x BtlBw x RTprop``) applied by the scheduler, so
        that a loss-based window does not fill the bottleneck's queue. Not in the paper.
    rate_window_ms : float
        How long a delivery-rate sample counts with ``hold_gain > 0``: the largest sample
        seen at a decision in the current half window and the one before it (200 ms).
    """

    name = "dams"
    native = "dams"
    paper = "DAMS [dams] Sec. III-B, III-C, eq. (1)"
    deadline_aware = True


class DAMSC(_Planner):
    """DAMS-C: the order of DAMS with DEMS's split (the parts of a block arrive together).

    [dams] Sec. V-C: "different from DAMS only in multipath allocation, and it achieves
    simultaneous subflow completion which is the same as DEMS". Order, selective
    preservation, delay and cancellation are those of :class:`DAMS`; each block is split
    with :func:`water_fill` on each path's arrival time (``free_j + srtt_j / 2``), so no
    part arrives after another and no byte needs moving.

    Parameters
    ----------
    change_threshold : float
        As in :class:`DAMS` (0.1).
    forward_queue : bool
        As in :class:`DAMS` (false).
    hold_gain, rate_window_ms : float
        As in :class:`DAMS` (0: no hold; 200 ms).
    """

    name = "dams-c"
    native = "dams-c"
    paper = "DAMS [dams] Sec. V-C: DAMS-C"
    deadline_aware = True
    _arrive_together = True


class DAMSRobust(_Planner):
    """DAMS-Robust: DAMS scheduling with the deadline moved earlier by the RTT's variation.

    [dams] Sec. III-D, eq. (2): ``Deadline' = Deadline - alpha * std_dev / 2``, where
    ``std_dev`` is the standard deviation of recent RTT samples, kept at the sender with an
    EWMA, and ``std_dev / 2`` "is used as the variation of one-way delay"; ``alpha = 1`` in
    the paper (Sec. V-C2).

    ``std_dev`` of path ``j`` is its RFC 6298 ``rttvar``: the EWMA (gain 1/4) of
    ``|srtt - sample|`` that the sender keeps per path, the running estimate of how much
    its RTT varies (for normally distributed samples the mean deviation is 0.8 standard
    deviations; the paper sets ``alpha`` empirically, so the factor is left to it). As the
    one-way delay in eq. (1) is per path, so is the safeguard: path ``j`` counts capacity
    up to ``D_i - alpha * rttvar_j / 2``, which is the same as a one-way delay estimate
    ``(srtt_j + alpha * rttvar_j) / 2``, used for the capacity test, the split and the
    moving of late bytes. A block is cancelled once its adjusted deadline has passed on
    every path, ``now > D_i - alpha * min_j rttvar_j / 2``. With ``alpha = 0`` this is
    :class:`DAMS`. The adjusted one-way delays also drive the network-change test.

    Parameters
    ----------
    alpha : float
        ``alpha`` of eq. (2), >= 0; 1 in the paper.
    change_threshold : float
        As in :class:`DAMS` (0.1).
    forward_queue : bool
        As in :class:`DAMS` (false).
    hold_gain, rate_window_ms : float
        As in :class:`DAMS` (0: no hold; 200 ms).
    """

    name = "dams-robust"
    native = "dams-robust"
    paper = "DAMS [dams] Sec. III-D, eq. (2): DAMS-Robust"
    deadline_aware = True

    def __init__(self, alpha: float = 1.0, change_threshold: float = 0.1, forward_queue: bool = False,
                 hold_gain: float = 0.0, rate_window_ms: float = 200.0) -> None:
        value = float(alpha)
        if not (math.isfinite(value) and value >= 0.0):
            raise ValueError(f"alpha must be a finite number >= 0, got {alpha!r}")
        self.alpha = value
        self._alpha = value
        super().__init__(change_threshold, forward_queue, hold_gain, rate_window_ms)
