"""Independent pure-Python reference simulator of ``docs/model.md``.

This module is a differential oracle for the C core ``mpsched.envs._core``. It is
written from the specification alone, for clarity rather than speed, and imports
nothing from :mod:`mpsched` (standard library only). Section numbers in the comments
("§7.3 step 5") refer to ``docs/model.md``.

Public API: :func:`run_reference` and the constant :data:`WAIT`. The helpers
:func:`splitmix64`, :class:`Xoshiro256ss`, :class:`Bandwidth`, :func:`icbrt`,
:func:`trunc_div`, :class:`CubicState`, :func:`cubic_increase`, :func:`cubic_segments_increase`,
:func:`cubic_segments_reduce`, :func:`lia_increase`, :func:`olia_increase` and
:func:`ccp_window` are exposed for the unit tests of this module.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import OrderedDict, deque

__all__ = [
    "NEVER",
    "WAIT",
    "Bandwidth",
    "CubicState",
    "Xoshiro256ss",
    "ccp_window",
    "cubic_increase",
    "cubic_segments_increase",
    "cubic_segments_reduce",
    "icbrt",
    "lia_increase",
    "olia_increase",
    "run_reference",
    "splitmix64",
    "trunc_div",
]

WAIT = -1
NEVER = math.inf  # §3: a time larger than any end_ns (compares exactly with Python ints)

MASK64 = (1 << 64) - 1
GOLDEN_GAMMA = 0x9E3779B97F4A7C15
G_NS = 1_000_000  # §7: the clock granularity G = 1 ms of the RTO formula
SSTHRESH_INITIAL = 1 << 62
JITTER_STREAM = 64  # §5: subflow j's jitter stream is the stream of number j + 64
ACK_STREAM = 128  # §5: and its acknowledgement-loss stream that of number j + 128

# Piece states (§7).
UNSENT, OUT, LOST, ACKED = "UNSENT", "OUT", "LOST", "ACKED"
# Packet-record states (§7): OUT, HOLE, ACKED, LOST.
HOLE = "HOLE"
# Recovery states (§7).
REC_NONE, REC_FAST, REC_RTO = "NONE", "FAST", "RTO"

# Event classes (§8), in tie-break order.
EV_RECEIVE, EV_ACK, EV_LINK, EV_ARRIVAL, EV_START, EV_RTO, EV_RATE = 0, 1, 2, 3, 4, 5, 6

PATH_CCS = ("ideal", "newreno", "cubic", "lia", "olia", "balia", "wvegas", "ccp")
# §1 forbids "ideal" for cross flows; lia, olia, balia and wvegas couple *paths* only
# (§7.9-§7.12), so the coupled increase of a cross flow is not defined by the page:
# refused too, and so is ccp (§1: a cross flow is newreno or cubic).
CROSS_CCS = ("newreno", "cubic")


def ceil_div(a: int, b: int) -> int:
    """``ceil(a / b)`` for non-negative ints, as written in the preamble of model.md."""
    return (a + b - 1) // b


def clamp(x, lo, hi):
    return min(max(x, lo), hi)


# --------------------------------------------------------------------------- §5 RNG


def splitmix64(state: int) -> tuple[int, int]:
    """One splitmix64 step (§5): returns ``(new_state, output)``."""
    state = (state + GOLDEN_GAMMA) & MASK64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return state, z ^ (z >> 31)


def rotl64(x: int, k: int) -> int:
    return ((x << k) | (x >> (64 - k))) & MASK64


class Xoshiro256ss:
    """xoshiro256** (§5). ``Xoshiro256ss.for_subflow(seed, j)`` is subflow j's stream."""

    def __init__(self, s0: int, s1: int, s2: int, s3: int):
        self.s = [s0 & MASK64, s1 & MASK64, s2 & MASK64, s3 & MASK64]

    @classmethod
    def for_subflow(cls, seed: int, j: int) -> Xoshiro256ss:
        # §5: four consecutive splitmix64 outputs started at seed + (j + 1) * gamma.
        state = (seed + (j + 1) * GOLDEN_GAMMA) & MASK64
        words = []
        for _ in range(4):
            state, out = splitmix64(state)
            words.append(out)
        return cls(*words)

    def next(self) -> int:
        s0, s1, s2, s3 = self.s
        result = (rotl64((s1 * 5) & MASK64, 7) * 9) & MASK64
        t = (s1 << 17) & MASK64
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = rotl64(s3, 45)
        self.s = [s0, s1, s2, s3]
        return result

    def below(self, h: int) -> bool:
        """§4: one draw ``x``; "below h" means ``(x >> 11) < h``."""
        return (self.next() >> 11) < h


# --------------------------------------------------------------------------- §3 bandwidth


class Bandwidth:
    """The piecewise-constant rate of one link and the service-time algorithm (§3)."""

    def __init__(self, starts: list[int], rates: list[int], cycle: int):
        self.starts = starts
        self.rates = rates
        self.cycle = cycle
        if cycle:
            # Bits-times-10^9 one full period serves; used to skip whole periods.
            ends = starts[1:] + [cycle]
            self.cycle_work = sum(r * (e - s) for r, s, e in zip(rates, starts, ends))

    def segment(self, t: int):
        """``(rate(t), absolute end of the segment containing t)``; the end may be NEVER."""
        if self.cycle == 0:
            base, tp = 0, t
        else:
            tp = t % self.cycle
            base = t - tp
        k = bisect_right(self.starts, tp) - 1
        if k + 1 < len(self.starts):
            end = base + self.starts[k + 1]
        elif self.cycle:
            end = base + self.cycle  # the last segment ends at bw_cycle_ns
        else:
            end = NEVER  # the last segment never ends
        return self.rates[k], end

    def next_change(self, t: int):
        """The first time after ``t`` at which the rate differs from ``rate(t)`` (§8 rate
        lane), or None if it never does."""
        if len(set(self.rates)) == 1:
            return None
        rate, end = self.segment(t)
        while end != NEVER:
            if self.segment(end)[0] != rate:
                return end
            end = self.segment(end)[1]
        return None

    def service_end(self, t0: int, wire_bytes: int):
        """Time a packet of ``wire_bytes`` starting service at ``t0`` finishes (§3)."""
        work = 8 * wire_bytes * 10**9
        t = t0
        while True:
            if self.cycle and t % self.cycle == 0 and work > self.cycle_work:
                # At a period start with more work left than a whole period serves, the
                # loop below would cross that period without finishing and subtract
                # exactly cycle_work from work; take all such periods in one step. A
                # period that serves nothing means zero rate forever.
                if self.cycle_work == 0:
                    return NEVER
                periods = (work - 1) // self.cycle_work
                t += periods * self.cycle
                work -= periods * self.cycle_work
            r, e = self.segment(t)
            if r > 0:
                need = ceil_div(work, r)
                if t + need <= e:
                    return t + need
                work -= r * (e - t)
            if e == NEVER:
                return NEVER  # zero rate forever
            t = e


# --------------------------------------------------------------------------- §7.8-7.10


def icbrt(x: int) -> int:
    """§7.8: the largest integer ``y`` with ``y**3 <= x`` (``x >= 0``), by bisection."""
    lo, hi = 0, 1 << ((x.bit_length() + 2) // 3)  # hi**3 >= 2**bit_length > x
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if mid**3 <= x:
            lo = mid
        else:
            hi = mid - 1
    return lo


def trunc_div(a: int, b: int) -> int:
    """§7.8: ``a / b`` rounded toward zero (``b > 0``)."""
    q = abs(a) // b
    return q if a >= 0 else -q


class CubicState:
    """§7.8 controller state (bytes or µs)."""

    def __init__(self):
        self.w_max = 0
        self.k_us = 0
        self.origin = 0
        self.epoch_start = -1
        self.w_est = 0
        self.est_acc = 0
        self.cub_acc = 0
        self.bytes_acc = 0  # §7.8.1: acknowledged bytes short of a segment
        self.recovery_acked = 0  # §7.8.1: bytes acknowledged in the current fast recovery


def cubic_increase(st: CubicState, cwnd: int, s: int, t: int, srtt: int, mss: int) -> int:
    """§7.8 congestion avoidance for ``s`` bytes at time ``t``; returns the new cwnd."""
    if st.epoch_start < 0:
        st.epoch_start = t
        if cwnd < st.w_max:
            st.k_us = icbrt((st.w_max - cwnd) * 25 * 10**17 // mss)
            st.origin = st.w_max
        else:
            st.k_us = 0
            st.origin = cwnd
        st.w_est = cwnd
        st.est_acc = 0
        st.cub_acc = 0
    t_us = (t - st.epoch_start + srtt) // 1000  # W_cubic(t + RTT)
    d = clamp(t_us - st.k_us, -10**9, 10**9)
    target = st.origin + trunc_div(4 * mss * d**3, 10**19)  # C (t - K)^3 + W_max
    target = clamp(target, cwnd, cwnd + cwnd // 2)
    st.cub_acc += (target - cwnd) * s
    inc = st.cub_acc // cwnd
    st.cub_acc -= inc * cwnd
    st.est_acc += 9 * s * mss
    inc2 = st.est_acc // (17 * cwnd)
    st.est_acc -= inc2 * 17 * cwnd
    st.w_est += inc2  # Reno-friendly estimate, alpha = 9/17
    cwnd += inc
    cwnd = max(cwnd, st.w_est)
    return cwnd


def cubic_segments_increase(st: CubicState, cwnd: int, s: int, t: int, min_rtt: int, mss: int) -> int:
    """§7.8.1 (cubic_arithmetic = segments) congestion avoidance for ``s`` bytes at time
    ``t``: w_max, origin and w_est in segments, est_acc Linux's ack_cnt, cub_acc its
    snd_cwnd_cnt; returns the new cwnd."""
    st.bytes_acc += s
    segs = st.bytes_acc // mss
    st.bytes_acc -= segs * mss
    if segs == 0:
        return cwnd
    seg = cwnd // mss
    if st.epoch_start < 0:
        st.epoch_start = t
        if st.w_max > seg:
            st.k_us = icbrt((st.w_max - seg) * 25 * 10**17)  # cbrt((W_max - cwnd) / 0.4) s in µs
            st.origin = st.w_max
        else:
            st.k_us = 0
            st.origin = seg
        st.w_est = seg
        st.est_acc = 0
    st.est_acc += segs
    t_us = (t + min_rtt - st.epoch_start) // 1000  # W_cubic(t + min RTT)
    d = min(abs(t_us - st.k_us), 10**9)
    delta = 4 * d**3 // 10**19
    target = st.origin - delta if t_us < st.k_us else st.origin + delta
    cnt = seg // (target - seg) if target > seg else 100 * seg
    if st.w_max == 0:
        cnt = min(cnt, 20)
    per = max((seg * 15) >> 3, 1)  # acknowledged segments per segment of the Reno-friendly estimate
    if st.est_acc > per:
        n = (st.est_acc - 1) // per
        st.est_acc -= n * per
        st.w_est += n
    if st.w_est > seg:
        cnt = min(cnt, seg // (st.w_est - seg))
    cnt = max(cnt, 2)
    st.cub_acc += segs
    if st.cub_acc >= cnt:
        st.cub_acc -= cnt
        cwnd += mss
    return cwnd


def cubic_segments_reduce(st: CubicState, cwnd: int, mss: int, timeout: bool) -> int:
    """§7.8.1 decrease and timeout; returns ssthresh."""
    st.epoch_start = -1
    seg = cwnd // mss
    st.w_max = seg * 17 // 20 if seg < st.w_max else seg
    if timeout:
        st.w_max = 0
    return max(seg * 7 // 10, 2) * mss


def cubic_reduce(st: CubicState, cwnd: int, mss: int) -> int:
    """§7.8 decrease and timeout, common part; returns ssthresh."""
    st.epoch_start = -1
    if cwnd < st.w_max:
        st.w_max = cwnd * 17 // 20  # fast convergence
    else:
        st.w_max = cwnd
    return max(cwnd * 7 // 10, 2 * mss)


def lia_increase(cwnds: list[int], srtts: list[int], i: int, s: int, mss: int,
                 acc: float) -> tuple[int, float]:
    """§7.9 congestion avoidance of the ``i``-th path of S for ``s`` bytes.

    ``cwnds`` and ``srtts`` are those of the coupled set S in index order and ``acc`` is
    ``lia_acc_i``. Returns ``(whole, new lia_acc_i)``: cwnd_i grows by ``whole``. Every
    operation is one binary64 operation in the order written on the page.
    """
    rtts = [float(max(x, 1)) for x in srtts]
    cw = [float(x) for x in cwnds]
    tot = 0.0
    for c in cw:
        tot = tot + c
    best = max(c / (r * r) for c, r in zip(cw, rtts))
    den = 0.0
    for c, r in zip(cw, rtts):
        den = den + c / r
    alpha = tot * best / (den * den)
    fs, fmss = float(s), float(mss)
    inc = min(alpha * fs * fmss / tot, fs * fmss / cw[i])
    acc = acc + inc
    whole = math.floor(acc)
    acc = acc - whole
    return whole, acc


def olia_increase(cwnds: list[int], srtts: list[int], l1s: list[int], l2s: list[int],
                  r: int, s: int, mss: int, acc: float) -> tuple[int, float]:
    """§7.10 congestion avoidance of the ``r``-th path of S for ``s`` bytes.

    The lists are those of the coupled set S in index order and ``acc`` is
    ``olia_acc_r``. Returns ``(new cwnd_r, new olia_acc_r)``.
    """
    n = len(cwnds)
    rtts = [float(max(x, 1)) for x in srtts]
    cw = [float(x) for x in cwnds]
    biggest = max(cwnds)
    m_set = {k for k in range(n) if cwnds[k] == biggest}  # exact comparison
    q = []
    for k in range(n):
        lk = float(max(l1s[k], l2s[k]))
        q.append(lk * lk / rtts[k])
    best_q = max(q)
    b_set = {k for k in range(n) if q[k] == best_q}  # exact comparison
    x_set = b_set - m_set
    if r in x_set:
        alpha = 1.0 / (n * len(x_set))
    elif x_set and r in m_set:
        alpha = -1.0 / (n * len(m_set))
    else:
        alpha = 0.0
    den = 0.0
    for c, rt in zip(cw, rtts):
        den = den + c / rt
    fs, fmss = float(s), float(mss)
    inc = cw[r] / (rtts[r] * rtts[r]) / (den * den) * fs * fmss + alpha * fs * fmss / cw[r]
    acc = acc + inc
    whole = math.floor(acc)
    acc = acc - whole
    return max(cwnds[r] + whole, mss), acc


def balia_terms(cwnds: list[int], srtts: list[int], r: int) -> tuple[float, float]:
    """§7.11: ``x_r / (rtt_r * X * X)`` and ``alpha_r = max_k x_k / x_r`` over the coupled
    set S in index order, ``x_k = cwnd_k / rtt_k``, ``X`` their sum."""
    rtts = [float(max(x, 1)) for x in srtts]
    total = 0.0
    best = 0.0
    for c, rt in zip(cwnds, rtts):
        x = float(c) / rt
        total = total + x
        best = max(best, x)
    x_r = float(cwnds[r]) / rtts[r]
    return x_r / (rtts[r] * total * total), best / x_r


def balia_increase(cwnds: list[int], srtts: list[int], r: int, s: int, mss: int,
                   acc: float) -> tuple[int, float]:
    """§7.11 congestion avoidance of the ``r``-th path of S for ``s`` bytes; returns
    ``(new cwnd_r, new balia_acc_r)``."""
    x_over, alpha = balia_terms(cwnds, srtts, r)
    inc = x_over * float(s) * float(mss) * ((1.0 + alpha) * (4.0 + alpha) / 10.0)
    acc = acc + inc
    whole = math.floor(acc)
    acc = acc - whole
    return max(cwnds[r] + whole, mss), acc


def balia_ssthresh(cwnds: list[int], srtts: list[int], r: int, flight: int, mss: int) -> int:
    """§7.11 decrease: ``flight - floor(flight / 2 * min(alpha_r, 1.5))``, at least 2 MSS."""
    _, alpha = balia_terms(cwnds, srtts, r)
    cut = int(float(flight) / 2.0 * min(alpha, 1.5))
    return max(flight - cut, 2 * mss)


WVEGAS_INITIAL_ALPHA = 2  # §7.12: packets a subflow first keeps queued
WVEGAS_TOTAL_ALPHA = 10  # packets the connection keeps queued over its wvegas paths
WVEGAS_GAMMA = 1  # packets queued that end slow start


class WvegasState:
    """§7.12 state of a wvegas subflow."""

    def __init__(self) -> None:
        self.base_rtt: int | None = None  # the smallest RTT the controller was given
        self.restart(0)

    def restart(self, next_pn: int) -> None:
        """§7.12: a new round from the next packet sent, the initial target, no rate."""
        self.round_pn = next_pn
        self.rtt_sum = 0
        self.rtt_count = 0
        self.alpha = WVEGAS_INITIAL_ALPHA
        self.queue_delay = 0
        self.rate = 0.0


CCP_DEFAULT_GAIN_MILLI = 2000  # §1: Kp = 2 when a subflow gives no ccp_gain_milli
CCP_MAX_STORAGE_BYTES = 2**50  # §1, §7.13: the largest storage, given or estimated


def ccp_window(gain_milli: int, storage: int, flight: int, rtt: int, min_rtt: int, mss: int) -> int:
    """§7.13: the window eq. (4) of seed 002 assigns, ``[Kp (B - x) - F] / 2`` in bytes,
    for ``flight`` bytes still outstanding, storage ``B`` (bytes) and the latest RTT
    sample ``rtt`` over the smallest ``min_rtt``; at least 2 MSS."""
    backlog = flight * (rtt - min_rtt) // rtt  # x, Vegas's queued bytes
    return max((gain_milli * (storage - backlog) - 1000 * flight) // 2000, 2 * mss)


# --------------------------------------------------------------------------- state


class Lane:
    """A pending-event lane (§8): ``(time, item)`` pairs kept ordered by time.

    Insertion keeps equal times in insertion order. (The order rules of §4 and §6 make
    every lane receive its items in time order, so each push appends; the search back
    keeps the lane ordered whatever the caller does.)
    """

    def __init__(self):
        self.items: deque = deque()

    def push(self, time, item) -> None:
        pos = len(self.items)
        while pos > 0 and self.items[pos - 1][0] > time:
            pos -= 1
        self.items.insert(pos, (time, item))

    def head_time(self):
        return self.items[0][0] if self.items else None

    def pop(self):
        return self.items.popleft()


class Block:
    """Sender-side (§7) and receiver-side (§6) state of one block, plus its outputs."""

    def __init__(self, index: int, arrival, size, deadline, priority, weight, *, mss: int,
                 P: int, piece_off: int):
        self.index = index
        self.arrival_ns = int(arrival)
        self.size = int(size)
        self.deadline_ns = int(deadline)
        self.priority = int(priority)
        self.weight = float(weight)
        self.mss = mss
        # §2: n = ceil(S / mss) pieces; piece i is global piece piece_off + i (§11).
        self.n_pieces = ceil_div(self.size, mss)
        self.piece_off = piece_off
        # §7 sender state.
        self.arrived = False
        self.cancelled = False
        self.cancel_ns = -1
        self.next_new = 0
        self.retx_queue: deque[int] = deque()
        self.lost_pending_bytes = 0
        self.acked_bytes = 0
        self.first_send_ns = -1
        self.bytes_sent = [0] * P
        self.inflight_bytes = [0] * P  # §7 state that no output reports
        self.piece_state = [UNSENT] * self.n_pieces
        # §7.1 copies: the paths that sent each piece and have not declared that packet
        # lost (the set matters only while the piece is OUT: an acknowledgement is final).
        self.piece_paths: list[set[int]] = [set() for _ in range(self.n_pieces)]
        # §7.1: each piece's latest transmission, kept in an episode with copies (-1 otherwise)
        self.piece_sent_ns = [-1] * self.n_pieces
        # §6 receiver state.
        self.received = [False] * self.n_pieces
        self.recv_bytes = 0
        self.duplicate_bytes = 0
        self.completion_ns = -1

    def piece_size(self, i: int) -> int:
        # §2: every piece is mss bytes except the last, which holds the remainder.
        if i < self.n_pieces - 1:
            return self.mss
        return self.size - (self.n_pieces - 1) * self.mss

    def piece_offset(self, i: int) -> int:
        # §2: piece i starts i * mss bytes into the block.
        return i * self.mss

    def unsent_bytes(self) -> int:
        # §7: bytes of pieces >= next_new (all pieces before next_new are full-size
        # except possibly the last one).
        return self.size - min(self.next_new * self.mss, self.size)


class Packet:
    """One transmitted packet and its sender-side record (§7.1 step 3).

    ``block`` and ``piece`` are None for a cross-flow packet (§2).
    """

    def __init__(self, sf, pn, block, piece, size, send_ns, snap_delivered, snap_time):
        self.sf = sf
        self.pn = pn
        self.block = block
        self.piece = piece
        self.size = size  # payload bytes
        self.send_ns = send_ns
        self.snap_delivered = snap_delivered
        self.snap_time = snap_time
        self.state = OUT
        self.hole_since = 0


class Link:
    """One bottleneck (§1, §3, §4): a FIFO server with a drop-tail queue."""

    def __init__(self, k: int, cfg: dict):
        self.k = k
        self.queue_bytes = int(cfg["queue_bytes"])
        self.bandwidth = Bandwidth(
            [int(x) for x in cfg["bw_start_ns"]],
            [int(x) for x in cfg["bw_rate_bps"]],
            int(cfg["bw_cycle_ns"]),
        )
        # §4: the packet in service, when it finishes (the §8 link lane), and the FIFO
        # of waiting packets.
        self.in_service: Packet | None = None
        self.service_end_ns = None
        self.waiting: deque[Packet] = deque()
        self.waiting_bytes = 0

    def idle(self) -> bool:
        return self.in_service is None and not self.waiting


class Subflow:
    """A path (j < P) or a cross flow (j >= P): configuration, random stream (§5),
    loss state (§4), sender state (§7), controller state (§7.7-7.10) and counters."""

    def __init__(self, j: int, cfg: dict, link: Link, mss: int, seed: int, cross: bool):
        self.j = j
        self.cross = cross
        self.link = link
        self.mss = mss
        self.fwd_delay_ns = int(cfg["fwd_delay_ns"])
        self.rev_delay_ns = int(cfg["rev_delay_ns"])
        self.loss_model = str(cfg["loss_model"])
        if self.loss_model not in ("iid", "gilbert_elliott"):
            raise ValueError(f"subflow {j}: unknown loss_model {self.loss_model!r}")
        self.loss_threshold = int(cfg["loss_threshold"])
        self.ge_p_threshold = int(cfg["ge_p_threshold"])
        self.ge_r_threshold = int(cfg["ge_r_threshold"])
        self.ge_bad_loss_threshold = int(cfg["ge_bad_loss_threshold"])
        self.ge_bad = False  # §4: GOOD at the start
        self.cc = str(cfg["cc"])
        allowed = CROSS_CCS if cross else PATH_CCS
        if self.cc not in allowed:
            raise ValueError(f"subflow {j}: cc must be one of {allowed}, got {self.cc!r}")
        self.window_based = self.cc != "ideal"
        # §7 "ready": a backup path waits while some other path is not potentially failed.
        self.backup = bool(cfg.get("backup", False))
        if self.backup and cross:
            raise ValueError(f"subflow {j}: only paths can be backups")
        self.primaries: list[Subflow] = []
        self.fast_recovery = str(cfg.get("fast_recovery", "immediate"))
        if self.fast_recovery not in ("immediate", "prr"):
            raise ValueError(f"subflow {j}: unknown fast_recovery {self.fast_recovery!r}")
        self.cubic_arithmetic = str(cfg.get("cubic_arithmetic", "rfc9438"))
        if self.cubic_arithmetic not in ("rfc9438", "segments"):
            raise ValueError(f"subflow {j}: unknown cubic_arithmetic {self.cubic_arithmetic!r}")
        self.min_rto_ns = int(cfg["min_rto_ns"])
        self.max_rto_ns = int(cfg["max_rto_ns"])
        self.ring_capacity = int(cfg["ring_capacity"])
        # §1: a cross flow sends in [start_ns, stop_ns); a path too, from 0 for ever unless
        # given. §8 start lane: one event at start_ns, except for a path that starts at 0.
        if cross:
            self.start_ns = int(cfg["start_ns"])
            self.stop_ns = int(cfg["stop_ns"])
        else:
            self.start_ns = int(cfg.get("start_ns", 0))
            self.stop_ns = int(cfg.get("stop_ns", 1 << 62))
        self.start_pending = cross or self.start_ns > 0
        self.rng = Xoshiro256ss.for_subflow(seed, j)
        # §4, §6 delay dynamics: delay steps (times after 0, increasing) and jitter bounds.
        self.delay_starts = [int(x) for x in cfg.get("delay_start_ns", ())]
        self.fwd_delay_steps = [int(x) for x in cfg.get("fwd_delay_step_ns", ())]
        self.rev_delay_steps = [int(x) for x in cfg.get("rev_delay_step_ns", ())]
        if not len(self.delay_starts) == len(self.fwd_delay_steps) == len(self.rev_delay_steps):
            raise ValueError(f"subflow {j}: delay step arrays of different lengths")
        self.fwd_jitter_ns = int(cfg.get("fwd_jitter_ns", 0))
        self.rev_jitter_ns = int(cfg.get("rev_jitter_ns", 0))
        self.jitter_rng = Xoshiro256ss.for_subflow(seed, j + JITTER_STREAM)
        # §6: random loss of acknowledgements (window-based subflows only).
        self.ack_loss_threshold = int(cfg.get("ack_loss_threshold", 0))
        if self.ack_loss_threshold and str(cfg["cc"]) == "ideal":
            raise ValueError(f"subflow {j}: an ideal subflow's acknowledgements are never lost")
        self.ack_rng = Xoshiro256ss.for_subflow(seed, j + ACK_STREAM)
        # §6: a reverse bottleneck serving acknowledgements of ack_bytes at rev_rate_bps,
        # first come first served, drop-tail beyond rev_queue_bytes waiting.
        self.rev_rate_bps = int(cfg.get("rev_rate_bps", 0))
        if self.rev_rate_bps and str(cfg["cc"]) == "ideal":
            raise ValueError(f"subflow {j}: an ideal subflow has no acknowledgement bottleneck")
        self.ack_bytes = int(cfg.get("ack_bytes", 0))
        self.rev_queue_bytes = int(cfg.get("rev_queue_bytes", 1 << 62))
        self.ack_departures: deque[int] = deque()  # of the acks the bottleneck holds
        self.ack_queue_drops = 0
        # §4, §6 outages: the subflow is down in [down_starts[k], down_ends[k]).
        self.down_starts = [int(x) for x in cfg.get("down_start_ns", ())]
        self.down_ends = [int(x) for x in cfg.get("down_end_ns", ())]
        if len(self.down_starts) != len(self.down_ends):
            raise ValueError(f"subflow {j}: outage arrays of different lengths")
        # §4, §6: the times of the previous data packet, acknowledgement and negative
        # acknowledgement of this subflow; none is overtaken by the next.
        self.last_data_ns = 0
        self.last_ack_ns = 0
        self.last_nack_ns = 0

        # §8 lanes of this subflow (the RTO lane is rto_deadline).
        self.receive_lane = Lane()
        self.ack_lane = Lane()
        self.nack_lane = Lane()  # §7.6 negative ACKs, merged with ack_lane by time (ACKs first at ties)

        # §7 initial values.
        base_rtt = self.fwd_delay_ns + self.rev_delay_ns
        self.next_pn = 0
        self.records: OrderedDict[int, Packet] = OrderedDict()  # unresolved, oldest first
        self.inflight_bytes = 0
        # §7: an ideal subflow has no window and reports cwnd 0.
        self.cwnd = int(cfg["initial_cwnd_bytes"]) if self.window_based else 0
        self.ssthresh = SSTHRESH_INITIAL
        self.ca_acc = 0
        self.recovery = REC_NONE
        self.recover_pn = -1
        # §7.4 with fast_recovery = prr: RFC 6937's RecoverFS, prr_delivered, prr_out.
        self.prr_recover_fs = 0
        self.prr_delivered = 0
        self.prr_out = 0
        self.srtt = base_rtt
        self.min_rtt = base_rtt  # §7 state that no output reports
        self.max_srtt = base_rtt  # §7: the largest smoothed RTT (read by ccp, §7.13)
        self.rttvar = base_rtt // 2
        self.rto = clamp(self.srtt + max(G_NS, 4 * self.rttvar), self.min_rto_ns, self.max_rto_ns)
        self.rto_deadline = None  # None: off
        self.ack_count = 0
        self.scan_pn = 0
        self.delivered = 0
        self.delivered_time = 0
        self.delivery_rate_bps = 0  # §7 state that no output reports
        self.max_delivery_rate_bps = 0  # §7: the largest delivery rate (read by ccp, §7.13)
        # Controller state (§7.8-7.10).
        if self.cc == "cubic":
            self.cubic = CubicState()
        elif self.cc == "lia":
            self.lia_acc = 0.0
        elif self.cc == "olia":
            self.olia_acc = 0.0
            self.l1 = 0
            self.l2 = 0
        elif self.cc == "balia":
            self.balia_acc = 0.0
        elif self.cc == "wvegas":
            self.wvegas = WvegasState()
        # §1, §7.13: ccp's gain Kp in thousandths and its storage B in bytes (0: estimated).
        self.ccp_gain_milli = int(cfg.get("ccp_gain_milli", CCP_DEFAULT_GAIN_MILLI))
        self.ccp_storage_bytes = int(cfg.get("ccp_storage_bytes", 0))
        if not 1 <= self.ccp_gain_milli <= 100_000 or not 0 <= self.ccp_storage_bytes <= CCP_MAX_STORAGE_BYTES:
            raise ValueError(f"subflow {j}: ccp_gain_milli or ccp_storage_bytes out of range")

        # Outputs (§11).
        self.packets_sent = 0
        self.bytes_sent = 0
        self.retransmissions = 0
        self.redundant_packets = 0  # §7.1 copies
        self.redundant_bytes = 0
        self.queue_drops = 0
        self.random_losses = 0
        self.loss_bursts = 0
        self.outage_losses = 0
        self.outage_ack_losses = 0
        self.ack_losses = 0
        self.rto_streak = 0  # §7.5: timeouts since the last newly acknowledged packet
        self.last_lost = False
        self.dropped_bytes = 0
        self.declared_lost = 0
        self.rto_count = 0
        self.fast_recoveries = 0
        self.delivered_bytes = 0

    def ready(self, t: int) -> bool:
        # §7 "ready": fewer than ring_capacity unresolved records, and per cc; only in
        # [start_ns, stop_ns).
        if len(self.records) >= self.ring_capacity:
            return False
        if not self.start_ns <= t < self.stop_ns:
            return False
        # a backup path only while every path that is not a backup is potentially failed
        if self.backup and any(p.rto_streak == 0 for p in self.primaries):
            return False
        if self.cc == "ideal":
            return self.link.idle()
        return self.inflight_bytes + self.mss <= self.cwnd

    def delays_at(self, t: int) -> tuple[int, int]:
        """§4: the one-way delays (forward, reverse) at time t: the last step that started
        at or before t, the configured delays before the first."""
        k = bisect_right(self.delay_starts, t)
        if k == 0:
            return self.fwd_delay_ns, self.rev_delay_ns
        return self.fwd_delay_steps[k - 1], self.rev_delay_steps[k - 1]

    def down_during(self, start: int, end: int) -> bool:
        """§4: whether some outage [a, b) has a moment in [start, end]."""
        return any(a <= end and b > start for a, b in zip(self.down_starts, self.down_ends))

    def jitter(self, bound: int) -> int:
        """§4: a draw in [0, bound] from the jitter stream, ``(x * (bound + 1)) >> 64``; no
        draw when the bound is 0."""
        if bound == 0:
            return 0
        return (self.jitter_rng.next() * (bound + 1)) >> 64

    def lost_at_link(self) -> bool:
        """§4: the loss decision for one of this subflow's packets leaving its link."""
        if self.loss_model == "iid":
            return self.loss_threshold > 0 and self.rng.below(self.loss_threshold)
        # gilbert_elliott: a transition draw, then a loss draw in the new state.
        if self.ge_bad:
            if self.rng.below(self.ge_r_threshold):
                self.ge_bad = False
        elif self.rng.below(self.ge_p_threshold):
            self.ge_bad = True
        h = self.ge_bad_loss_threshold if self.ge_bad else self.loss_threshold
        return self.rng.below(h)


# --------------------------------------------------------------------------- policies


class DecisionView:
    """What a policy sees at one decision point (§9); paths only."""

    def __init__(self, sim: Simulator, now_ns: int, path: int, decision_index: int):
        self._sim = sim
        self.now_ns = now_ns
        self.path = path
        self.ready = [p.ready(now_ns) for p in sim.paths]
        self.srtt_ns = [p.srtt for p in sim.paths]
        # §10: the bandwidth of each path's link at the current time (§3).
        self.link_rate_bps = [p.link.bandwidth.segment(now_ns)[0] for p in sim.paths]
        self.decision_index = decision_index

    @property
    def sendable(self) -> list[int]:
        """Sendable block indices, ascending; recomputed so that cancels show at once."""
        return self._sim.sendable_blocks()

    @property
    def copyable(self) -> list[int]:
        """§7.1 copies: pieces (counted over all blocks) this path may copy, ascending."""
        return self._sim.copyable_pieces(self.path) if self._sim.copies else []

    def cancel(self, block: int) -> None:
        self._sim.cancel(int(block), self.now_ns)


def minrtt_policy(view: DecisionView) -> int:
    # §10 minrtt: WAIT if another ready path has a smaller (srtt, index); else FIFO.
    j = view.path
    for i, is_ready in enumerate(view.ready):
        if i != j and is_ready and (view.srtt_ns[i], i) < (view.srtt_ns[j], j):
            return WAIT
    return view.sendable[0]


class RoundRobinPolicy:
    """§10 rr: a cursor over paths; the first ready path from the cursor sends."""

    def __init__(self):
        self.cursor = 0

    def __call__(self, view: DecisionView) -> int:
        P = len(view.ready)
        order = [(self.cursor + k) % P for k in range(P)]
        first_ready = next(i for i in order if view.ready[i])
        if first_ready != view.path:
            return WAIT
        self.cursor = (view.path + 1) % P
        return view.sendable[0]


# --------------------------------------------------------------------------- simulator


class Simulator:
    def __init__(self, spec: dict, policy):
        self.mss = int(spec["mss_bytes"])
        self.header = int(spec["header_bytes"])
        self.end_ns = int(spec["end_ns"])
        seed = int(spec["seed"]) & MASK64
        receiver = str(spec["receiver"])
        if receiver not in ("block", "in_order"):
            raise ValueError(f"receiver must be 'block' or 'in_order', got {receiver!r}")
        self.in_order = receiver == "in_order"
        self.rbuf_bytes = int(spec["rbuf_bytes"])
        sequence = str(spec.get("sequence", "send"))
        if sequence not in ("send", "stream") or (sequence == "stream" and not self.in_order):
            raise ValueError(f"sequence must be 'send', or 'stream' with the in-order receiver, got {sequence!r}")
        # §6.2: with the stream sequence, position k is global piece k (byte order).
        self.stream = sequence == "stream"
        self.drop_expired = bool(spec.get("drop_expired", False))
        # §7.1 copies: the policy may send copies; rounds then go on while a piece is in flight.
        self.copies = bool(spec.get("copies", False))
        self.links = [Link(k, cfg) for k, cfg in enumerate(spec["links"])]
        # §1: subflows 0..P-1 are the paths, P..P+C-1 the cross flows.
        cfgs = [(cfg, False) for cfg in spec["paths"]] + [(cfg, True) for cfg in spec["cross"]]
        self.subflows = []
        for j, (cfg, cross) in enumerate(cfgs):
            k = int(cfg["link"])
            if not 0 <= k < len(self.links):
                raise ValueError(f"subflow {j}: link {k} out of range 0..{len(self.links) - 1}")
            self.subflows.append(Subflow(j, cfg, self.links[k], self.mss, seed, cross))
        P = len(spec["paths"])
        self.paths = self.subflows[:P]
        self.cross = self.subflows[P:]
        for p in self.paths:
            p.primaries = [q for q in self.paths if not q.backup]

        bl = spec["blocks"]
        self.blocks = []
        # §11: block b's piece i is global piece piece_off[b] + i; (b, i) of each.
        self.piece_index: list[tuple[int, int]] = []
        for b, row in enumerate(zip(bl["arrival_ns"], bl["size_bytes"], bl["deadline_ns"],
                                    bl["priority"], bl["weight"])):
            blk = Block(b, *row, mss=self.mss, P=P, piece_off=len(self.piece_index))
            self.blocks.append(blk)
            self.piece_index.extend((b, i) for i in range(blk.n_pieces))
        n_pieces = len(self.piece_index)
        # §6.2 stream sequence: byte offset of each block in the stream.
        self.block_offset = [0]
        for blk in self.blocks:
            self.block_offset.append(self.block_offset[-1] + blk.size)
        self.abandoned: set[int] = set()  # global pieces that left the stream (§9)
        # §8 arrival lane: block indices in arrival order (rows are already sorted).
        self.arrival_lane: deque[int] = deque(range(len(self.blocks)))

        # §7 connection state.
        self.conn_next_dsn = 0
        self.data_acked = 0
        # §6.2 in-order receiver state; dsn_order[k] is the global piece at sequence
        # position k (§7.1 step 1).
        self.dsn_order: list[int] = []
        self.deliver_k = 0
        self.rcv_nxt = 0
        self.rbuf_used = 0  # §6.2 state that no output reports
        # §11 per-piece outputs, by global piece index.
        self.piece_arrival_ns = [-1] * n_pieces
        self.piece_delivery_ns = [-1] * n_pieces
        self.piece_first_send_ns = [-1] * n_pieces

        if policy == "minrtt":
            self.policy = minrtt_policy
        elif policy == "rr":
            self.policy = RoundRobinPolicy()
        elif callable(policy):
            self.policy = policy
        else:
            raise ValueError(f"policy must be 'minrtt', 'rr' or a callable, got {policy!r}")

        self.decisions = 0
        self.reward = 0.0
        self.last_event_ns = -1
        self.now_ns = 0

    # ----------------------------------------------------------------- §8 events

    def next_event(self):
        """The pending event with the smallest (time, class, index), or None."""
        candidates = []
        sendable = bool(self.sendable_blocks())
        for sf in self.subflows:
            if sf.receive_lane.items:
                candidates.append((sf.receive_lane.head_time(), EV_RECEIVE, sf.j))
            if sf.ack_lane.items or sf.nack_lane.items:
                candidates.append((min(lane.head_time() for lane in (sf.ack_lane, sf.nack_lane) if lane.items),
                                   EV_ACK, sf.j))
            if sf.rto_deadline is not None:
                candidates.append((sf.rto_deadline, EV_RTO, sf.j))
            if sf.start_pending:
                candidates.append((sf.start_ns, EV_START, sf.j))
        for link in self.links:
            if link.in_service is not None:
                candidates.append((link.service_end_ns, EV_LINK, link.k))
            # §8 rate lane, while some block is sendable: the first rate change after now.
            change = link.bandwidth.next_change(self.now_ns) if sendable else None
            if change is not None:
                candidates.append((change, EV_RATE, link.k))
        if self.arrival_lane:
            # A single lane: its index never decides a tie.
            candidates.append((self.blocks[self.arrival_lane[0]].arrival_ns, EV_ARRIVAL, 0))
        return min(candidates) if candidates else None

    def process(self, event) -> None:
        t, cls, index = event
        if cls == EV_LINK:
            self.on_service_end(self.links[index], t)
            return
        if cls == EV_ARRIVAL:
            self.blocks[self.arrival_lane.popleft()].arrived = True
            return
        if cls == EV_RATE:
            return  # §8: nothing happens but a time at which section 9 runs at the new rate
        sf = self.subflows[index]
        if cls == EV_RECEIVE:
            _, pkt = sf.receive_lane.pop()
            self.on_receive(sf, pkt, t)
        elif cls == EV_ACK:
            positive = bool(sf.ack_lane.items) and sf.ack_lane.head_time() == t
            _, (pkt, data_ack) = (sf.ack_lane if positive else sf.nack_lane).pop()
            if positive:
                self.on_ack(sf, pkt, data_ack, t)
            else:
                # §7.6: a negative ACK declares the packet lost; resolved records are
                # then dropped from the oldest end.
                self.declare_lost(sf, pkt)
                self.resolve_records(sf)
        elif cls == EV_START:
            sf.start_pending = False  # §8: nothing happens but a time to send at
        else:
            self.on_rto(sf, t)

    def run(self) -> None:
        # §8: process events one at a time in (time, class, index) order; run section
        # 9 whenever the next event is later (or there is none); stop when the next
        # event is later than end_ns or none is left.
        while True:
            event = self.next_event()
            if event is None or event[0] > self.end_ns:
                return
            t = event[0]
            self.now_ns = t
            self.process(event)
            if event[1] != EV_RATE:
                self.last_event_ns = t  # §11: a rate change alone is not counted
            following = self.next_event()
            if following is None or following[0] > t:
                self.section9(t)

    # ----------------------------------------------------------------- §4 link

    def link_enqueue(self, pkt: Packet, t: int) -> None:
        link = pkt.sf.link
        wire = pkt.size + self.header
        if link.in_service is None:
            self.start_service(link, pkt, t)
        elif link.waiting_bytes + wire <= link.queue_bytes:
            link.waiting.append(pkt)
            link.waiting_bytes += wire
        else:
            # Drop-tail; nobody is told.
            pkt.sf.queue_drops += 1
            pkt.sf.dropped_bytes += pkt.size

    def start_service(self, link: Link, pkt: Packet, t: int) -> None:
        link.in_service = pkt
        link.service_end_ns = link.bandwidth.service_end(t, pkt.size + self.header)

    def on_service_end(self, link: Link, t1: int) -> None:
        pkt = link.in_service
        link.in_service = None
        link.service_end_ns = None
        # §4: the next waiting packet starts service at t1.
        if link.waiting:
            nxt = link.waiting.popleft()
            link.waiting_bytes -= nxt.size + self.header
            self.start_service(link, nxt, t1)
        # §4: then the packet's own subflow decides whether it is lost.
        sf = pkt.sf
        lost = sf.lost_at_link()
        # §11: a burst is a maximal run of the subflow's consecutive lost packets.
        sf.loss_bursts += lost and not sf.last_lost
        sf.last_lost = lost
        fwd, rev = sf.delays_at(t1)
        down = False
        if lost:
            sf.random_losses += 1
        else:
            # §4: the forward delay at t1 plus a jitter draw, never before the previous
            # data packet of the subflow that was not lost; lost if the subflow is down
            # at some moment of the way.
            arrive = max(t1 + fwd + sf.jitter(sf.fwd_jitter_ns), sf.last_data_ns)
            down = sf.down_during(t1, arrive)
            sf.outage_losses += down
        if lost or down:
            sf.dropped_bytes += pkt.size
            if sf.cc == "ideal":
                # §7.6: negative ACK when the ACK would have arrived, never before the
                # previous negative ACK.
                sf.last_nack_ns = max(t1 + fwd + rev, sf.last_nack_ns)
                sf.nack_lane.push(sf.last_nack_ns, (pkt, None))
        else:
            sf.last_data_ns = arrive
            sf.receive_lane.push(arrive, pkt)

    # ----------------------------------------------------------------- §6 receivers

    def on_receive(self, sf: Subflow, pkt: Packet, t: int) -> None:
        sf.delivered_bytes += pkt.size
        if pkt.block is not None:  # cross-flow packets are only acknowledged
            if self.in_order:
                self.receive_in_order(pkt, t)
            else:
                self.receive_block(pkt, t)
        # §6: the acknowledgement leaves at once (a path ACK carries data_ack = rcv_nxt,
        # §6.2) and reaches the sender after the reverse delay at t plus a jitter draw,
        # never before the previous acknowledgement.
        # A window-based subflow's acknowledgement is lost if the subflow is down at some
        # moment of its way (§6).
        wire = t
        if sf.rev_rate_bps:
            # the reverse bottleneck: each acknowledgement takes ceil(8e9 * ack_bytes / rate)
            # ns of service after those it holds; it waits only if the others waiting leave
            # room for its bytes
            held = sf.ack_departures
            if held and held[-1] > self.end_ns:
                return  # busy past the horizon: it could only reach the sender after it
            while held and held[0] <= t:
                held.popleft()
            if held and len(held) * sf.ack_bytes > sf.rev_queue_bytes:
                sf.ack_queue_drops += 1
                return
            service = -(-sf.ack_bytes * 8 * 10**9 // sf.rev_rate_bps)
            wire = (held[-1] if held else t) + service
            held.append(wire)
        _, rev = sf.delays_at(wire)
        back = max(wire + rev + sf.jitter(sf.rev_jitter_ns), sf.last_ack_ns)
        if sf.ack_loss_threshold and sf.ack_rng.below(sf.ack_loss_threshold):  # lost at random (§6)
            sf.ack_losses += 1
            return
        if sf.window_based and sf.down_during(t, back):
            sf.outage_ack_losses += 1
            return
        sf.last_ack_ns = back
        sf.ack_lane.push(back, (pkt, self.rcv_nxt))

    def complete_bytes(self, blk: Block, size: int, t: int) -> None:
        # §6.1: recv_bytes grows; the block completes when it reaches the block's size.
        blk.recv_bytes += size
        if blk.recv_bytes == blk.size:
            blk.completion_ns = t
            if t <= blk.deadline_ns:
                self.reward += blk.weight

    def receive_block(self, pkt: Packet, t: int) -> None:
        # §6.1 block-aware receiver: pieces accepted in any order.
        blk = self.blocks[pkt.block]
        if blk.received[pkt.piece]:
            blk.duplicate_bytes += pkt.size
            return
        blk.received[pkt.piece] = True
        self.complete_bytes(blk, pkt.size, t)

    def receive_in_order(self, pkt: Packet, t: int) -> None:
        # §6.2 in-order receiver.
        blk = self.blocks[pkt.block]
        if blk.received[pkt.piece]:
            blk.duplicate_bytes += pkt.size
            return
        blk.received[pkt.piece] = True
        self.piece_arrival_ns[blk.piece_off + pkt.piece] = t
        self.rbuf_used += pkt.size
        self.deliver(t)

    def deliver(self, t: int) -> None:
        """§6.2: deliver in sequence while the piece at position deliver_k has been
        received; with the stream sequence an abandoned piece is skipped."""
        last = len(self.piece_index) if self.stream else len(self.dsn_order)
        while self.deliver_k < last:
            g = self.deliver_k if self.stream else self.dsn_order[self.deliver_k]
            b, i = self.piece_index[g]
            head = self.blocks[b]
            if not head.received[i] and g not in self.abandoned:
                return
            size = head.piece_size(i)
            self.rcv_nxt += size
            self.deliver_k += 1
            if head.received[i]:
                self.piece_delivery_ns[g] = t
                self.rbuf_used -= size
                self.complete_bytes(head, size, t)

    # ----------------------------------------------------------------- §7 sendable

    def window_open(self) -> bool:
        # §7: always open for the block-aware receiver.
        if not self.in_order:
            return True
        return self.conn_next_dsn + self.mss <= self.data_acked + self.rbuf_bytes

    def sendable(self, blk: Block) -> bool:
        # §7: retransmissions (not cancelled, or in-order receiver), or new data while
        # the window is open and the block is not cancelled.
        if not blk.arrived:
            return False
        if blk.lost_pending_bytes > 0 and (not blk.cancelled or self.in_order):
            return True
        if blk.cancelled or blk.unsent_bytes() == 0:
            return False
        if self.stream:
            # §7 stream sequence: the next piece must end inside the receive window.
            end = self.block_offset[blk.index] + blk.piece_offset(blk.next_new) + blk.piece_size(blk.next_new)
            return end <= self.data_acked + self.rbuf_bytes
        return self.window_open()

    def sendable_blocks(self) -> list[int]:
        return [blk.index for blk in self.blocks if self.sendable(blk)]

    def any_piece_out(self) -> bool:
        return any(OUT in blk.piece_state for blk in self.blocks)

    def piece_of(self, g: int) -> tuple[int, int]:
        """(block, piece within it) of piece g counted over all blocks."""
        b = max(blk.index for blk in self.blocks if blk.piece_off <= g)
        return b, g - self.blocks[b].piece_off

    def piece_copyable(self, g: int, j: int) -> bool:
        """§7.1 copies: piece g is OUT, path j does not have it, its block arrived and is
        not cancelled."""
        if not 0 <= g < len(self.piece_arrival_ns):  # one entry per piece of the episode
            return False
        b, i = self.piece_of(g)
        blk = self.blocks[b]
        return blk.arrived and not blk.cancelled and blk.piece_state[i] == OUT and j not in blk.piece_paths[i]

    def copyable_pieces(self, j: int) -> list[int]:
        return [blk.piece_off + i for blk in self.blocks for i in range(blk.n_pieces)
                if self.piece_copyable(blk.piece_off + i, j)]

    def send_copy(self, sf: Subflow, g: int, t: int) -> None:
        """§7.1 copies: piece g once more on sf; it stays OUT."""
        b, piece = self.piece_of(g)
        blk = self.blocks[b]
        size = blk.piece_size(piece)
        blk.piece_paths[piece].add(sf.j)
        blk.piece_sent_ns[piece] = t  # copies are on: a copy is sent only then
        blk.bytes_sent[sf.j] += size
        blk.inflight_bytes[sf.j] += size
        sf.redundant_packets += 1
        sf.redundant_bytes += size
        self.transmit(sf, b, piece, size, t)

    # ----------------------------------------------------------------- §7.1 sending

    def send(self, sf: Subflow, b: int, t: int) -> None:
        blk = self.blocks[b]
        # Step 1: the oldest queued piece still LOST, else the next never-sent piece,
        # which gets the next sequence position.
        piece = None
        while blk.retx_queue:
            i = blk.retx_queue.popleft()
            if blk.piece_state[i] == LOST:
                piece = i
                break
        is_retransmission = piece is not None
        if is_retransmission:
            size = blk.piece_size(piece)
            blk.lost_pending_bytes -= size
        else:
            piece = blk.next_new
            blk.next_new += 1
            size = blk.piece_size(piece)
            if self.stream:
                end = self.block_offset[b] + blk.piece_offset(piece) + size
                self.conn_next_dsn = max(self.conn_next_dsn, end)
            else:
                self.conn_next_dsn += size
            g = blk.piece_off + piece
            self.dsn_order.append(g)
            self.piece_first_send_ns[g] = t
        # Step 2 (the block's part).
        if blk.first_send_ns < 0:
            blk.first_send_ns = t
        blk.piece_state[piece] = OUT
        blk.piece_paths[piece] = {sf.j}
        if self.copies:
            blk.piece_sent_ns[piece] = t
        blk.bytes_sent[sf.j] += size
        blk.inflight_bytes[sf.j] += size
        if is_retransmission:
            sf.retransmissions += 1
        self.transmit(sf, b, piece, size, t)

    def transmit(self, sf: Subflow, b, piece, size: int, t: int) -> None:
        """§7.1 steps 2 (the subflow's part) to 5, for path and cross-flow packets."""
        inflight_before = sf.inflight_bytes
        sf.inflight_bytes += size
        # Step 3: the record, with its delivery-rate snapshot.
        snap_time = t if inflight_before == 0 else sf.delivered_time
        pkt = Packet(sf, sf.next_pn, b, piece, size, t, sf.delivered, snap_time)
        sf.records[pkt.pn] = pkt
        sf.next_pn += 1
        sf.packets_sent += 1
        sf.bytes_sent += size
        if sf.recovery == REC_FAST:
            sf.prr_out += size
        # Step 4.
        if sf.window_based and sf.rto_deadline is None:
            sf.rto_deadline = t + sf.rto
        # Step 5.
        self.link_enqueue(pkt, t)

    # ----------------------------------------------------------------- §7.2 loss

    def declare_lost(self, sf: Subflow, pkt: Packet) -> None:
        pkt.state = LOST
        sf.inflight_bytes -= pkt.size
        sf.declared_lost += 1
        if pkt.block is None:
            return  # a cross-flow packet has no piece: nothing is requeued
        blk = self.blocks[pkt.block]
        blk.inflight_bytes[sf.j] -= pkt.size
        blk.piece_paths[pkt.piece].discard(sf.j)
        # §7.1 copies: a piece with a copy still in flight on another path stays OUT.
        if blk.piece_state[pkt.piece] == OUT and not blk.piece_paths[pkt.piece]:
            blk.piece_state[pkt.piece] = LOST
            if not (blk.cancelled and not self.in_order):
                blk.retx_queue.append(pkt.piece)
                blk.lost_pending_bytes += pkt.size

    # ----------------------------------------------------------------- §7.3 ACKs

    def on_ack(self, sf: Subflow, pkt: Packet, data_ack: int, t: int) -> None:
        s = pkt.size
        recoveries_before = sf.fast_recoveries
        # Step 1.
        newly = pkt.state in (OUT, HOLE)
        inflight_before = sf.inflight_bytes
        if newly:
            sf.inflight_bytes -= s
            if pkt.block is not None:
                self.blocks[pkt.block].inflight_bytes[sf.j] -= s
            sf.rto_streak = 0
        # Step 2 (paths only).
        if pkt.block is not None:
            blk = self.blocks[pkt.block]
            if blk.piece_state[pkt.piece] != ACKED:
                # A LOST piece sits in a retransmission queue unless its block was
                # cancelled with the block-aware receiver (§7.2, §9).
                if blk.piece_state[pkt.piece] == LOST and (not blk.cancelled or self.in_order):
                    blk.lost_pending_bytes -= s
                blk.piece_state[pkt.piece] = ACKED
                blk.acked_bytes += s
            if self.in_order:
                self.data_acked = max(self.data_acked, data_ack)
        # Step 3: RTT sample.
        rtt = t - pkt.send_ns
        sf.rttvar = (3 * sf.rttvar + abs(sf.srtt - rtt)) // 4
        sf.srtt = (7 * sf.srtt + rtt) // 8
        sf.rto = clamp(sf.srtt + max(G_NS, 4 * sf.rttvar), sf.min_rto_ns, sf.max_rto_ns)
        sf.min_rtt = min(sf.min_rtt, rtt)
        sf.max_srtt = max(sf.max_srtt, sf.srtt)
        # Step 4: delivery rate.
        sf.delivered += s
        sf.delivered_time = t
        if t > pkt.snap_time:
            sample = min((sf.delivered - pkt.snap_delivered) * 8 * 10**9 // (t - pkt.snap_time),
                         2**60)
            sf.delivery_rate_bps = (7 * sf.delivery_rate_bps + sample) // 8
            sf.max_delivery_rate_bps = max(sf.max_delivery_rate_bps, sf.delivery_rate_bps)
        # Step 5: loss detection (window-based) and dropping of resolved records.
        if sf.window_based:
            for q in range(sf.scan_pn, pkt.pn):
                rec = sf.records.get(q)
                if rec is not None and rec.state == OUT:
                    rec.state = HOLE
                    rec.hole_since = sf.ack_count
            pkt.state = ACKED
            sf.scan_pn = max(sf.scan_pn, pkt.pn + 1)
            sf.ack_count += 1
        else:
            pkt.state = ACKED
        self.resolve_records(sf)
        if sf.window_based:
            # Step 6: OLIA's l1, then growth while the window is in use.
            if sf.cc == "olia" and newly:
                sf.l1 += s
            if sf.cc == "cubic" and newly and sf.recovery == REC_FAST:
                sf.cubic.recovery_acked += s  # §7.8.1
            if newly and sf.recovery == REC_NONE and 2 * inflight_before >= sf.cwnd:
                if sf.cc == "wvegas":
                    self.wvegas_growth(sf, s, pkt.pn, rtt)  # §7.12: its own slow start too
                elif sf.cwnd < sf.ssthresh:
                    sf.cwnd += min(s, self.mss)  # slow start
                elif sf.cc == "ccp":
                    self.ccp_assign(sf, rtt)  # §7.13
                else:
                    self.congestion_avoidance(sf, s, t)
        # Step 7: recovery exit; with PRR the window of the recovery's acknowledgements.
        if sf.recovery != REC_NONE and pkt.pn > sf.recover_pn:
            fast = sf.recovery == REC_FAST
            if fast and sf.fast_recovery == "prr":
                sf.cwnd = sf.ssthresh
            sf.recovery = REC_NONE
            if fast and sf.cc == "cubic" and sf.cubic_arithmetic == "segments" and 2 * inflight_before >= sf.cwnd:
                # §7.8.1: the segments acknowledged during the recovery, passed at its end
                sf.cwnd = cubic_segments_increase(sf.cubic, sf.cwnd, sf.cubic.recovery_acked, t, sf.min_rtt,
                                                  self.mss)
        elif sf.recovery == REC_FAST and sf.fast_recovery == "prr":
            self.prr_window(sf, s if newly else 0, sf.fast_recoveries != recoveries_before)
        # Step 8: RTO timer (window-based).
        if sf.window_based:
            if sf.inflight_bytes == 0:
                sf.rto_deadline = None
            elif newly:
                sf.rto_deadline = t + sf.rto

    def resolve_records(self, sf: Subflow) -> None:
        """§7.3 step 5: drop resolved records from the oldest end.

        ACKED and LOST records are dropped; for a window-based subflow a HOLE that has
        seen three later acknowledgements is declared lost (§7.2), triggers a congestion
        event (§7.4) and is dropped.
        """
        while sf.records:
            oldest = next(iter(sf.records.values()))
            if oldest.state in (ACKED, LOST):
                sf.records.popitem(last=False)
            elif (
                sf.window_based
                and oldest.state == HOLE
                and sf.ack_count - oldest.hole_since >= 3
            ):
                flight = sf.inflight_bytes
                self.declare_lost(sf, oldest)
                sf.records.popitem(last=False)
                self.congestion_event(sf, oldest.pn, flight)
            else:
                return

    # ----------------------------------------------------------------- §7.7-7.10

    def coupled(self, cc: str) -> list[Subflow]:
        """§7.9/§7.10: the coupled set S, the paths with this cc in index order."""
        return [p for p in self.paths if p.cc == cc]

    def congestion_avoidance_newreno(self, sf: Subflow, s: int) -> None:
        """§7.7 congestion avoidance for s acknowledged bytes."""
        sf.ca_acc += s
        if sf.ca_acc >= sf.cwnd:
            sf.ca_acc -= sf.cwnd
            sf.cwnd += self.mss

    def congestion_avoidance(self, sf: Subflow, s: int, t: int) -> None:
        """The controller's increase for s acknowledged bytes (§7.3 step 6)."""
        if sf.cc == "newreno":
            self.congestion_avoidance_newreno(sf, s)  # §7.7
        elif sf.cc == "cubic" and sf.cubic_arithmetic == "segments":
            sf.cwnd = cubic_segments_increase(sf.cubic, sf.cwnd, s, t, sf.min_rtt, self.mss)  # §7.8.1
        elif sf.cc == "cubic":
            sf.cwnd = cubic_increase(sf.cubic, sf.cwnd, s, t, sf.srtt, self.mss)  # §7.8
        elif sf.cc == "balia":
            group = self.coupled("balia")  # §7.11
            sf.cwnd, sf.balia_acc = balia_increase(
                [p.cwnd for p in group], [p.srtt for p in group], group.index(sf), s, self.mss, sf.balia_acc)
        elif sf.cc == "lia":
            # §7.9.
            group = self.coupled("lia")
            whole, sf.lia_acc = lia_increase(
                [p.cwnd for p in group], [p.srtt for p in group], group.index(sf), s,
                self.mss, sf.lia_acc)
            sf.cwnd += whole
        else:
            # §7.10.
            group = self.coupled("olia")
            sf.cwnd, sf.olia_acc = olia_increase(
                [p.cwnd for p in group], [p.srtt for p in group], [p.l1 for p in group],
                [p.l2 for p in group], group.index(sf), s, self.mss, sf.olia_acc)

    def decrease(self, sf: Subflow, flight: int, timeout: bool) -> None:
        """The controller's decrease (§7.4) or timeout response (§7.5)."""
        if sf.cc == "cubic" and sf.cubic_arithmetic == "segments":
            sf.ssthresh = cubic_segments_reduce(sf.cubic, sf.cwnd, self.mss, timeout)  # §7.8.1
        elif sf.cc == "cubic":
            # §7.8.
            sf.ssthresh = cubic_reduce(sf.cubic, sf.cwnd, self.mss)
        elif sf.cc == "balia":
            group = self.coupled("balia")  # §7.11
            sf.ssthresh = balia_ssthresh([p.cwnd for p in group], [p.srtt for p in group], group.index(sf),
                                         flight, self.mss)
        else:
            if sf.cc == "wvegas":
                sf.wvegas.restart(sf.next_pn)  # §7.12, then as NewReno
            if sf.cc == "olia":
                # §7.10: l2 = l1, l1 = 0, then as NewReno.
                sf.l2 = sf.l1
                sf.l1 = 0
            # §7.7 (NewReno; LIA and OLIA act the same).
            sf.ssthresh = max(flight // 2, 2 * self.mss)
        sf.cwnd = self.mss if timeout else sf.ssthresh

    def ccp_assign(self, sf: Subflow, rtt: int) -> None:
        """§7.13: ccp's congestion avoidance at an acknowledgement whose RTT sample is rtt."""
        storage = sf.ccp_storage_bytes
        if storage == 0:
            storage = min(sf.max_delivery_rate_bps * sf.max_srtt // (8 * 10**9), CCP_MAX_STORAGE_BYTES)
        sf.cwnd = ccp_window(sf.ccp_gain_milli, storage, sf.inflight_bytes, rtt, sf.min_rtt, self.mss)
        sf.ssthresh = min(sf.ssthresh, sf.cwnd)  # so that the next acknowledgement is not slow start

    def wvegas_growth(self, sf: Subflow, s: int, pn: int, rtt: int) -> None:
        """§7.12: the window of a wvegas subflow for s bytes of packet pn acknowledged
        rtt after it was sent."""
        wv, mss = sf.wvegas, self.mss
        grow = min(s, mss)
        wv.base_rtt = rtt if wv.base_rtt is None else min(wv.base_rtt, rtt)
        wv.rtt_sum += rtt
        wv.rtt_count += 1
        if pn < wv.round_pn:
            if sf.cwnd < sf.ssthresh:
                sf.cwnd += grow
            return
        count, total = wv.rtt_count, wv.rtt_sum
        wv.round_pn = sf.next_pn
        wv.rtt_sum = wv.rtt_count = 0
        if count <= 2:
            if sf.cwnd < sf.ssthresh:
                sf.cwnd += grow
            else:
                self.congestion_avoidance_newreno(sf, s)
            return
        mean, base = total // count, wv.base_rtt
        cwnd = sf.cwnd
        diff = cwnd * (mean - base) // mean
        if cwnd < sf.ssthresh:
            if diff > WVEGAS_GAMMA * mss:
                cwnd = min(cwnd, cwnd * base // mean + mss)
                sf.ssthresh = min(sf.ssthresh, cwnd - mss)
            else:
                cwnd += grow
        else:
            if diff >= wv.alpha * mss:
                wv.rate = float(cwnd) / float(mean)
                rates = 0.0
                for p in self.coupled("wvegas"):
                    rates = rates + p.wvegas.rate
                wv.alpha = max(int(wv.rate / rates * WVEGAS_TOTAL_ALPHA), WVEGAS_INITIAL_ALPHA)
            if diff > wv.alpha * mss:
                cwnd -= mss
                sf.ssthresh = min(sf.ssthresh, cwnd - mss)
            elif diff < wv.alpha * mss:
                cwnd += mss
            queue_delay = mean - base
            if wv.queue_delay == 0 or wv.queue_delay > queue_delay:
                wv.queue_delay = queue_delay
            if queue_delay > 0 and queue_delay >= 2 * wv.queue_delay:
                cwnd = cwnd * base // (2 * mean)
                wv.queue_delay = 0
        sf.cwnd = max(cwnd, 2 * mss)

    # ----------------------------------------------------------------- §7.4 / §7.5

    def congestion_event(self, sf: Subflow, pn: int, flight: int) -> None:
        if pn <= sf.recover_pn:
            return  # sent before the current recovery began: one reduction per window
        self.decrease(sf, flight, timeout=False)
        sf.ca_acc = 0
        sf.recovery = REC_FAST
        sf.recover_pn = sf.next_pn - 1
        sf.fast_recoveries += 1
        sf.prr_recover_fs = flight
        sf.prr_delivered = 0
        sf.prr_out = 0
        if sf.cc == "cubic":
            sf.cubic.recovery_acked = 0

    def prr_window(self, sf: Subflow, delivered: int, began: bool) -> None:
        """§7.4, fast_recovery = prr: RFC 6937's sndcnt (slow-start reduction bound), at
        least one packet on the acknowledgement that began the recovery; cwnd = pipe + sndcnt."""
        sf.prr_delivered += delivered
        pipe = sf.inflight_bytes
        if pipe > sf.ssthresh:
            sndcnt = -(-sf.prr_delivered * sf.ssthresh // sf.prr_recover_fs) - sf.prr_out
        else:
            limit = max(sf.prr_delivered - sf.prr_out, delivered) + self.mss
            sndcnt = min(sf.ssthresh - pipe, limit)
        sndcnt = max(sndcnt, 0)
        if began:
            sndcnt = max(sndcnt, self.mss)
        sf.cwnd = pipe + sndcnt

    def on_rto(self, sf: Subflow, t: int) -> None:
        flight = sf.inflight_bytes
        for rec in list(sf.records.values()):
            if rec.state in (OUT, HOLE):
                self.declare_lost(sf, rec)
        self.decrease(sf, flight, timeout=True)
        sf.ca_acc = 0
        sf.recovery = REC_RTO
        sf.recover_pn = sf.next_pn - 1
        sf.rto = min(2 * sf.rto, sf.max_rto_ns)
        sf.rto_deadline = None
        sf.records.clear()
        sf.scan_pn = sf.next_pn
        sf.rto_count += 1
        sf.rto_streak += 1

    # ----------------------------------------------------------------- §9

    def cancel(self, b: int, t: int) -> None:
        """§9 cancellation of block b at time t."""
        if not 0 <= b < len(self.blocks):
            raise ValueError(f"cancel: block {b} out of range 0..{len(self.blocks) - 1}")
        blk = self.blocks[b]
        if not blk.arrived:
            raise ValueError(f"cancel: block {b} has not arrived at t={t}")
        if blk.cancelled or blk.acked_bytes == blk.size:
            return  # already cancelled, or all bytes acknowledged: nothing to do
        blk.cancelled = True
        blk.cancel_ns = t
        never_sent = range(blk.next_new, blk.n_pieces)
        blk.next_new = blk.n_pieces  # drop the never-sent pieces
        if not self.in_order:
            # The block-aware receiver empties the retransmission queue; the in-order
            # receiver keeps it (those pieces hold sequence positions).
            blk.retx_queue.clear()
            blk.lost_pending_bytes = 0
        if self.stream and len(never_sent):
            # §9 stream sequence: the never-sent pieces leave the stream; the receiver
            # skips them and the sender learns the new data_ack at once.
            self.abandoned.update(blk.piece_off + i for i in never_sent)
            self.deliver(t)
            self.data_acked = max(self.data_acked, self.rcv_nxt)

    def decide(self, j: int, t: int) -> int:
        view = DecisionView(self, t, j, self.decisions)
        self.decisions += 1
        action = int(self.policy(view))
        if action < WAIT:  # §7.1 copies: -2 - g, a copy of piece g
            g = -2 - action
            if not self.copies or not self.piece_copyable(g, j):
                raise ValueError(f"policy chose a copy of piece {g} at path {j}, t={t}, which it may not copy")
        elif action != WAIT and action not in self.sendable_blocks():
            raise ValueError(
                f"policy chose block {action} at path {j}, t={t}, which is not sendable"
            )
        return action

    def section9(self, t: int) -> None:
        # Cross flows first, in index order, each while it is ready (a payload of
        # mss_bytes and no piece, §7.1).
        for sf in self.cross:
            while sf.ready(t):
                self.transmit(sf, None, None, self.mss, t)
        # §9 drop_expired: cancel every block with bytes to send whose deadline is before t.
        if self.drop_expired:
            for b, blk in enumerate(self.blocks):
                if blk.arrived and blk.deadline_ns < t and (blk.next_new < blk.n_pieces or blk.lost_pending_bytes > 0):
                    self.cancel(b, t)
        # Then the decision rounds over the paths.
        P = len(self.paths)
        waited = [False] * P
        while True:
            sent_any = False
            for j in range(P):
                if not self.sendable_blocks() and not (self.copies and self.any_piece_out()):
                    return
                p = self.paths[j]
                if waited[j] or not p.ready(t):
                    continue
                action = self.decide(j, t)
                if action == WAIT:
                    waited[j] = True
                elif action < WAIT:
                    self.send_copy(p, -2 - action, t)
                    sent_any = True
                else:
                    self.send(p, action, t)
                    sent_any = True
            if not sent_any:
                return
            waited = [False] * P

    # ----------------------------------------------------------------- §11 outputs

    def outputs(self) -> dict:
        blocks, paths, cross = self.blocks, self.paths, self.cross
        in_order = self.in_order
        return {
            "completion_ns": [b.completion_ns for b in blocks],
            "first_send_ns": [b.first_send_ns for b in blocks],
            "recv_bytes": [b.recv_bytes for b in blocks],
            "duplicate_bytes": [b.duplicate_bytes for b in blocks],
            "acked_bytes": [b.acked_bytes for b in blocks],
            "cancelled": [b.cancelled for b in blocks],
            "cancel_ns": [b.cancel_ns for b in blocks],
            "bytes_sent": [list(b.bytes_sent) for b in blocks],
            "packets_sent": [p.packets_sent for p in paths],
            "path_bytes_sent": [p.bytes_sent for p in paths],
            "retransmissions": [p.retransmissions for p in paths],
            "redundant_packets": [p.redundant_packets for p in paths],
            "redundant_bytes": [p.redundant_bytes for p in paths],
            "queue_drops": [p.queue_drops for p in paths],
            "random_losses": [p.random_losses for p in paths],
            "loss_bursts": [p.loss_bursts for p in paths],
            "outage_losses": [p.outage_losses for p in paths],
            "outage_ack_losses": [p.outage_ack_losses for p in paths],
            "ack_losses": [p.ack_losses for p in paths],
            "ack_queue_drops": [p.ack_queue_drops for p in paths],
            "rto_streak": [p.rto_streak for p in paths],
            "dropped_bytes": [p.dropped_bytes for p in paths],
            "declared_lost": [p.declared_lost for p in paths],
            "rto_count": [p.rto_count for p in paths],
            "fast_recoveries": [p.fast_recoveries for p in paths],
            "delivered_bytes": [p.delivered_bytes for p in paths],
            "final_srtt_ns": [p.srtt for p in paths],
            "final_cwnd_bytes": [p.cwnd for p in paths],
            "cross_packets_sent": [c.packets_sent for c in cross],
            "cross_delivered_bytes": [c.delivered_bytes for c in cross],
            "cross_queue_drops": [c.queue_drops for c in cross],
            "cross_random_losses": [c.random_losses for c in cross],
            "cross_loss_bursts": [c.loss_bursts for c in cross],
            "cross_outage_losses": [c.outage_losses for c in cross],
            "cross_outage_ack_losses": [c.outage_ack_losses for c in cross],
            "cross_ack_losses": [c.ack_losses for c in cross],
            "cross_ack_queue_drops": [c.ack_queue_drops for c in cross],
            "cross_dropped_bytes": [c.dropped_bytes for c in cross],
            "cross_declared_lost": [c.declared_lost for c in cross],
            "cross_rto_count": [c.rto_count for c in cross],
            "cross_fast_recoveries": [c.fast_recoveries for c in cross],
            "cross_final_cwnd_bytes": [c.cwnd for c in cross],
            "cross_final_srtt_ns": [c.srtt for c in cross],
            "piece_arrival_ns": list(self.piece_arrival_ns) if in_order else None,
            "piece_delivery_ns": list(self.piece_delivery_ns) if in_order else None,
            "piece_first_send_ns": list(self.piece_first_send_ns) if in_order else None,
            "dsn_order": list(self.dsn_order) if in_order else None,
            "piece_sent_ns": [x for blk in blocks for x in blk.piece_sent_ns],
            "rcv_nxt": self.rcv_nxt if in_order else None,
            "decisions": self.decisions,
            "reward": self.reward,
            "last_event_ns": self.last_event_ns,
        }


def run_reference(spec: dict, policy) -> dict:
    """Simulate one episode of ``docs/model.md`` and return its outputs.

    ``spec`` holds the keyword arguments of the core's constructor (§1: mss_bytes,
    header_bytes, end_ns, seed, receiver, rbuf_bytes, links, paths, cross, blocks).
    ``policy`` is ``"minrtt"``, ``"rr"`` or a callable ``policy(view) -> int`` returning
    a sendable block index or :data:`WAIT`; see :class:`DecisionView` for the view.
    """
    sim = Simulator(spec, policy)
    sim.run()
    return sim.outputs()
