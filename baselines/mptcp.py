"""MPTCP path schedulers for heterogeneous paths: ECF, BLEST and OTIAS.

ECF and BLEST refine MinRTT (:class:`mpsched.baselines.classic.MinRTT`) with one question asked
when the fastest path is busy and a slower one could take the packet: is it better to
leave the slower path idle and wait for the fastest one? ECF answers from the time the
data still queued would take on either path; BLEST from whether the slower path's packet
would block the connection's send window. Blocks are served first-in first-out and
deadlines are ignored (late blocks keep being sent), as in MPTCP.

Common mapping onto the per-path decision point (docs/model.md section 9). The Linux
schedulers pick a subflow for the next segment: ``minsk``, the path with the smallest
smoothed RTT among all paths, and ``bestsk``, the default (MinRTT) choice among the
paths whose window has room; when the two differ the scheduler may return no subflow.
Here path ``j`` asks: it waits when another ready path has a smaller ``(srtt, index)``
(that path is ``bestsk`` and is offered the packet in the same decision round); if ``j``
is the fastest path overall it sends; otherwise ``j`` is the slower ``bestsk`` and the
scheduler's test decides between sending the oldest sendable block on ``j`` and WAIT.

The tests use congestion windows. A path with ideal congestion control has none (it is
clocked by its link, docs/model.md 7.6); its window is taken to be the bytes its rate
fills in one smoothed RTT, ``rate_bps * srtt / 8e9`` (for a window-based path this
expression gives back its ``cwnd``, which is used as is). RTTs are the RFC 6298
``srtt`` and ``rttvar`` of docs/model.md 7.3. OTIAS maps differently (its class says
how): it places each packet on a path when the data is there, and a path sends what was
placed on it. Native twins: envs/core/policies/mptcp.c.
"""

from __future__ import annotations

import numpy as np

from ..envs.policy import WAIT, Observation, Policy

__all__ = ["ECF", "BLEST", "OTIAS", "fastest_path", "best_ready_path", "window_bytes", "queued_bytes", "ecf_waits"]


def fastest_path(obs: Observation) -> int:
    """The path with the smallest ``(srtt, index)`` among all paths (``minsk``)."""
    srtt = obs.srtt_ns
    best = 0
    for i in range(1, obs.n_paths):
        if srtt[i] < srtt[best]:
            best = i
    return best


def best_ready_path(obs: Observation) -> int:
    """The ready path with the smallest ``(srtt, index)`` (``bestsk``, MinRTT's choice).
    The deciding path is ready, so there is one."""
    srtt = obs.srtt_ns
    best = -1
    for i in range(obs.n_paths):
        if obs.can_send[i] and (best < 0 or srtt[i] < srtt[best]):
            best = i
    return best


def window_bytes(obs: Observation, p: int) -> float:
    """Congestion window of path ``p`` in bytes; for an ideal (link-clocked) path, the
    bytes its rate fills in one smoothed RTT, ``rate_bps * srtt / 8e9``."""
    cwnd = int(obs.cwnd_bytes[p])
    if cwnd > 0:
        return float(cwnd)
    return float(obs.rate_bps[p]) * float(int(obs.srtt_ns[p])) / 8e9


def queued_bytes(obs: Observation) -> int:
    """Bytes the sender has yet to send for the sendable blocks: never sent plus waiting
    retransmission (the data queued at the connection level but not on any subflow)."""
    s = obs.sendable()
    return int(np.sum(obs.unsent_bytes[s], dtype=np.int64)) + int(np.sum(obs.lost_bytes[s], dtype=np.int64))


def ecf_waits(k: float, w_f: float, srtt_f: float, w_s: float, srtt_s: float, delta: float,
              waiting: float, beta: float) -> bool | None:
    """ECF's test (Lim et al., CoNEXT 2017, Algorithm 1; Linux mptcp_ecf.c).

    With ``k`` bytes queued, the fastest path ``f`` (window ``w_f`` bytes, RTT
    ``srtt_f``) would deliver them in about ``n * srtt_f`` with ``n = 1 + k / w_f``
    windows (the kernel counts at least one whole window: ``k`` is raised to ``w_f``);
    the slower path ``s`` would need ``srtt_s + delta``. If the fastest path is sooner
    (by the factor ``1 + waiting * beta`` once already waiting: hysteresis), and sending
    on ``s`` would itself take ``k / w_s * srtt_s >= 2 srtt_f + delta`` (``k`` raised to
    ``w_s``), ECF waits for ``f``. Cross-multiplied as in the kernel so that no window
    divides:

        srtt_f * (max(k, w_f) + w_f) < (1 + waiting * beta) * w_f * (srtt_s + delta)
        srtt_s * max(k, w_s) >= w_s * (2 * srtt_f + delta)

    Returns
    -------
    bool or None
        True: wait (set ``waiting``); False: send on ``s`` with ``waiting`` kept; None:
        the first inequality fails, send on ``s`` and clear ``waiting``.
    """
    x_f = k if k > w_f else w_f
    if srtt_f * (x_f + w_f) < (1.0 + beta * waiting) * (w_f * (srtt_s + delta)):
        x_s = k if k > w_s else w_s
        return srtt_s * x_s >= w_s * (2.0 * srtt_f + delta)
    return None


class ECF(Policy):
    """ECF, Earliest Completion First: wait for the fastest path when it would finish
    the queued data sooner than a slower path would.

    Lim, Nahum, Towsley and Gibbens, "ECF: An MPTCP path scheduler to manage
    heterogeneous paths", CoNEXT 2017, the scheduler's pseudocode (Algorithm 1), as
    implemented in Linux MPTCP (multipath-tcp.org, net/mptcp/mptcp_ecf.c, v0.95). When
    the fastest path ``x_f`` (smallest ``srtt``) can send it takes the packet. Otherwise, for the best
    ready slower path ``x_s`` (see the module docstring), with ``k`` the bytes queued at
    the connection and ``delta = max(rttvar_f, rttvar_s)``:

    - ``n = 1 + k / cwnd_f``; if ``n * rtt_f < (1 + waiting * beta) * (rtt_s + delta)``:
      if ``k / cwnd_s * rtt_s >= 2 * rtt_f + delta``, wait (``waiting = 1``), else send
      on ``x_s``;
    - otherwise ``waiting = 0`` and send on ``x_s``

    (:func:`ecf_waits`, with the kernel's floors ``k >= cwnd``). ``waiting`` is one
    flag per connection, kept across decisions. Our reading:

    - ``k``: the bytes not yet sent of the sendable blocks, never-sent plus waiting
      retransmission (:func:`queued_bytes`; the kernel's meta send queue minus what the
      subflows hold);
    - windows in bytes; an ideal path's window is what its rate fills in one ``srtt``
      (:func:`window_bytes`);
    - ``rtt`` is ``srtt`` and ``delta`` the larger RFC 6298 ``rttvar`` (the paper's
      standard deviations; the kernel's ``rttvar_us >> 1`` is twice that estimate).

    With ``rate_thresholds`` the test is instead the single-stream optimum of Jonglez,
    Heusse and Gaujal, "SRPT-ECF" (FIT 2020, [jonglez20]), Sec. II eqs. (1)-(3): with
    paths ordered by latency ``D`` and rate ``R``, path ``i`` shortens the completion
    of the ``S`` bytes left iff ``S > S_lim,i = sum over faster paths p of
    R_p (D_i - D_p)`` (eq. (3) for two paths, ``S_lim = R_1 (D_2 - D_1)``; the n-path
    thresholds of Fig. 4 follow by water-filling). So ``x_s`` waits iff
    ``k <= S_lim,s``, with ``R_p = rate_bps / 8`` and ``D_p = srtt_p / 2``: the paper's
    completion is at the receiver, one latency after sending, not one round trip.
    There is no hysteresis in this model.

    Parameters
    ----------
    beta : float
        Hysteresis of the waiting state; 0.25 in the paper and the kernel
        (``mptcp_ecf_r_beta = 4``).
    rate_thresholds : bool
        Use [jonglez20]'s rate/latency thresholds instead of the kernel's window/RTT test.
    """

    name = "ecf"
    native = "ecf"
    paper = "Lim et al., ECF, CoNEXT 2017 (Linux mptcp_ecf.c)"

    def __init__(self, beta: float = 0.25, rate_thresholds: bool = False) -> None:
        super().__init__()
        if not 0.0 <= float(beta) <= 1.0:
            raise ValueError(f"beta must be in [0, 1], got {beta!r}")
        if rate_thresholds not in (True, False):
            raise ValueError(f"rate_thresholds must be True or False, got {rate_thresholds!r}")
        self.beta = float(beta)
        self.rate_thresholds = bool(rate_thresholds)
        self._waiting = 0

    def reset(self, obs: Observation) -> None:
        self._waiting = 0

    def decide(self, obs: Observation) -> int:
        j = obs.path
        if best_ready_path(obs) != j:
            return WAIT
        f = fastest_path(obs)
        if j != f:
            k = queued_bytes(obs)
            if self.rate_thresholds:
                if self._within_threshold(obs, j, k):
                    return WAIT
            else:
                srtt, rttvar = obs.srtt_ns, obs.rttvar_ns
                delta = float(max(int(rttvar[f]), int(rttvar[j])))
                waits = ecf_waits(float(k), window_bytes(obs, f), float(int(srtt[f])), window_bytes(obs, j),
                                  float(int(srtt[j])), delta, float(self._waiting), self.beta)
                if waits is None:
                    self._waiting = 0
                elif waits:
                    self._waiting = 1
                    return WAIT
        return int(obs.sendable()[0])

    @staticmethod
    def _within_threshold(obs: Observation, s: int, k: int) -> bool:
        """[jonglez20] eq. (3) for n paths: ``k <= sum_p R_p (D_s - D_p)`` over the paths
        ``p`` faster than ``s``, i.e. ``16e9 k <= sum_p rate_bps_p (srtt_s - srtt_p)``."""
        srtt = obs.srtt_ns
        srtt_s = int(srtt[s])
        s_lim = 0.0
        for p in range(obs.n_paths):
            if srtt[p] < srtt_s or (srtt[p] == srtt_s and p < s):
                s_lim += float(obs.rate_bps[p]) * float(srtt_s - int(srtt[p]))
        return float(k) * 16e9 <= s_lim


class BLEST(Policy):
    """BLEST, send-window blocking estimation: skip a slower path whose packet would
    keep the fastest path from sending for lack of send window.

    Ferlin, Alay, Mehani and Boreli, "BLEST: Blocking estimation-based MPTCP scheduler
    for heterogeneous networks", IFIP Networking 2016, the send-window blocking estimate
    of the BLEST design (Linux MPTCP net/mptcp/mptcp_blest.c, v0.95). A packet sent on
    the slower path ``x_s`` occupies the connection's send window ``M`` for about
    ``rtt_s``. During that time the fastest path ``x_f``, its window growing by one
    segment per ``rtt_f`` (congestion avoidance), could send

        X = MSS_f * (cwnd_f + (rtt_s / rtt_f - 1) / 2) * rtt_s / rtt_f

    bytes. If ``lambda * X > |M| - MSS_s * (inflight_s + 1)``, sending on ``x_s`` would
    block ``x_f``: ``x_s`` is not used and the connection waits for ``x_f``. When the
    fastest path can send it takes the packet, as in MinRTT.

    Our reading:

    - ``|M|`` is the connection's receive window, the in-order receiver's buffer
      ``rbuf_bytes`` counted from the data acknowledgement (docs/model.md section 7);
      ``MSS_s * (inflight_s + 1)`` is the slower path's bytes in flight plus one
      ``mss``; ``cwnd_f`` in bytes is :func:`window_bytes` (an ideal path's window is
      what its rate fills in one ``srtt``); ``rtt`` is ``srtt`` (at least 1 ns). This is
      the paper's ``X``; the kernel estimates it differently (whole RTTs of an average
      of the smallest and largest ``srtt``, doubling in slow start);
    - ``lambda`` is fixed. The kernel starts it at 1.2 and moves it within
      ``[1.0, 1.3]``: +0.04 after a retransmission made because the send window was
      full, -0.01 otherwise, at most once per RTT. No decision happens here while the
      window is closed (nothing new is sendable), and the simulated sender makes no
      such window-driven retransmissions, so there is no event to adapt on;
    - with the block-aware receiver there is no receive window (nothing blocks), so the
      test never skips a path and BLEST makes MinRTT's decisions.

    Parameters
    ----------
    lambda_scale : float
        ``lambda``, the scaling of the fast path's estimate; 1.2, the kernel's value.
    """

    name = "blest"
    native = "blest"
    paper = "Ferlin et al., BLEST, IFIP Networking 2016 (Linux mptcp_blest.c)"

    def __init__(self, lambda_scale: float = 1.2) -> None:
        super().__init__()
        if not 0.0 < float(lambda_scale) <= 10.0:
            raise ValueError(f"lambda_scale must be in (0, 10], got {lambda_scale!r}")
        self.lambda_scale = float(lambda_scale)

    def decide(self, obs: Observation) -> int:
        j = obs.path
        if best_ready_path(obs) != j:
            return WAIT
        f = fastest_path(obs)
        if j != f and obs.in_order and self._blocks(obs, f, j):
            return WAIT
        return int(obs.sendable()[0])

    def _blocks(self, obs: Observation, f: int, s: int) -> bool:
        """BLEST's blocking test: ``lambda * X > |M| - MSS_s * (inflight_s + 1)``."""
        rtt_f = float(max(int(obs.srtt_ns[f]), 1))
        rtt_s = float(max(int(obs.srtt_ns[s]), 1))
        ratio = rtt_s / rtt_f
        mss = obs.mss_bytes
        fast_bytes = (window_bytes(obs, f) + float(mss) * (ratio - 1.0) / 2.0) * ratio
        avail = obs.rbuf_bytes - (int(obs.path_inflight_bytes[s]) + mss)
        return self.lambda_scale * fast_bytes > float(avail)


class OTIAS(Policy):
    """OTIAS, out-of-order transmission for in-order arrival: place each packet on the
    path where it is expected to arrive first, queueing it behind a full window.

    Yang, Wang and Amer, "Out-of-order transmission for in-order arrival scheduling for
    multipath TCP", IEEE AINA Workshops 2014, as the Linux MPTCP module
    ``net/mptcp/mptcp_otias.c`` (v0.89) implements it. When data is to be sent every
    packet is given at once to a subflow, even one whose window is full: the packet
    waits in that subflow's send queue and leaves when its window opens. For path ``k``
    with window ``cwnd_k`` and ``free_k`` free packets in it (both in packets),
    ``queued_k`` packets already placed on it and not yet sent, the packet being placed
    waits ``wait_k = 0`` round trips if ``queued_k < free_k``, otherwise
    ``ceil((queued_k - free_k + 1) / cwnd_k)``, and is expected to arrive after
    ``T_k = wait_k * srtt_k + srtt_k / 2``; it goes to the path with the smallest
    ``(T_k, k)``. Later packets may thus go to a slower path that is idle while earlier
    ones wait for the faster: sent out of order so as to arrive in order.

    Mapping onto the decision points (docs/model.md section 9):

    - at each decision the never-sent pieces of the sendable blocks not placed yet are
      placed, oldest block first (the kernel places data as the application writes it,
      up to the connection's receive window; here that is at the next decision, with the
      paths' state then). With the in-order receiver a piece is placed only while the
      data sent beyond the data acknowledgement plus the placed pieces, each counted as
      ``mss`` bytes, leave room for one more ``mss`` in ``rbuf_bytes``;
    - a path that asks sends the oldest block with pieces placed on it (WAIT if that
      block is outside the receive window now). The core sends a block's pieces
      declared lost before its never-sent ones (docs/model.md 7.1): such a send leaves
      the placement as it was;
    - a path asking with nothing placed on it sends the oldest block with pieces to
      retransmit if it is the path with the smallest ``(T_k, k)`` among the ready paths
      whose queue fits in their free window (the kernel never queues a retransmission
      behind a full window); otherwise it waits;
    - the paths that take new pieces are those in ``[start_ns, stop_ns)`` that are not
      potentially failed (``rto_streak > 0``: the kernel skips a subflow marked ``pf``)
      and, for a backup path, only while every other path is potentially failed (the
      rule of docs/model.md 7); if each is potentially failed, all of them. The pieces
      placed on a path that leaves this set are placed again (the kernel reinjects a
      failed subflow's queue);
    - ``cwnd`` and ``free`` are :func:`window_bytes` and ``window_bytes - inflight``
      divided by ``mss``, rounded down (``cwnd`` at least 1, ``free`` at least 0): an
      ideal path's window is what its rate fills in one ``srtt``. The comparison uses
      ``2 T_k = (2 wait_k + 1) srtt_k`` in integers;
    - blocks are served first-in first-out and deadlines are ignored, as in MPTCP; the
      pieces placed for a block that is cancelled (``drop_expired``) are forgotten.

    The module's options that are off by default (opportunistic retransmission and
    penalisation, ``optim``) are not modelled.
    """

    name = "otias"
    native = "otias"
    paper = "Yang, Wang and Amer, OTIAS, IEEE AINA Workshops 2014 (Linux mptcp_otias.c)"

    def __init__(self) -> None:
        super().__init__()
        self.placed = np.zeros((0, 0), dtype=np.int64)
        self.placed_on = [0]
        self.head = [0]
        self.low = 0
        self.frontier = 0

    def reset(self, obs: Observation) -> None:
        n, paths = obs.simulator.n_blocks, obs.n_paths
        self.placed = np.zeros((n, paths), dtype=np.int64)
        """Pieces of each block placed on each path and not sent yet."""
        self.placed_on = [0] * paths
        """Pieces placed on each path and not sent yet: its send queue."""
        self.head = [0] * paths
        """No block below ``head[k]`` has pieces placed on path ``k``."""
        self.low = 0
        """No block below has pieces placed on any path."""
        self.frontier = 0
        """Every block below has all its never-sent pieces placed."""

    def decide(self, obs: Observation) -> int:
        takers = self._takers(obs)
        sendable = obs.sendable()
        in_window = set(sendable.tolist())
        self._forget(obs, takers)
        self._place(obs, takers, in_window)
        j = obs.path
        b = self._queue_head(obs, j)
        if b >= 0:
            if b not in in_window:
                return WAIT
            if int(obs.lost_bytes[b]) == 0:
                self.placed[b, j] -= 1
                self.placed_on[j] -= 1
            return b
        lost = [int(k) for k in sendable if obs.lost_bytes[k] > 0]
        if not lost:
            return WAIT
        best, best_key = -1, 0
        for k in range(obs.n_paths):
            if not obs.can_send[k]:
                continue
            cwnd, free = self._window(obs, k)
            if self.placed_on[k] > free:
                continue
            key = self._arrival2(obs, k, cwnd, free)
            if best < 0 or key < best_key:
                best, best_key = k, key
        return lost[0] if best == j else WAIT

    @staticmethod
    def _window(obs: Observation, k: int) -> tuple[int, int]:
        """``(cwnd_k, free_k)`` in packets."""
        window = window_bytes(obs, k)
        mss = float(obs.mss_bytes)
        cwnd = max(1, int(window / mss))
        free = max(0, int((window - float(int(obs.path_inflight_bytes[k]))) / mss))
        return cwnd, free

    def _arrival2(self, obs: Observation, k: int, cwnd: int, free: int) -> int:
        """Twice the expected arrival ``T_k`` of one more piece placed on path ``k``."""
        queued = self.placed_on[k]
        wait = 0 if queued < free else (queued - free + cwnd) // cwnd
        return (2 * wait + 1) * int(obs.srtt_ns[k])

    @staticmethod
    def _takers(obs: Observation) -> list[int]:
        """The paths that take new pieces (class docstring), ascending."""
        now = obs.now_ns
        streak, backup = obs.rto_streak, obs.backup
        others_failed = all(streak[i] > 0 for i in range(obs.n_paths) if not backup[i])
        open_paths = [k for k in range(obs.n_paths)
                      if obs.start_ns[k] <= now < obs.stop_ns[k] and (not backup[k] or others_failed)]
        return [k for k in open_paths if streak[k] == 0] or open_paths

    def _placed_end(self, obs: Observation) -> int:
        """No block at or past this index has pieces placed: the frontier block (it may be
        partly placed) is the last that can."""
        return self.frontier + (self.frontier < obs.n_arrived)

    def _forget(self, obs: Observation, takers: list[int]) -> None:
        """Drop the placements of blocks with no never-sent piece left (cancelled), and
        take back those of paths that take no new pieces. The blocks looked at end where
        the placements end on entry: taking back a path's pieces lowers the frontier, and
        every later path's placements above it go back too."""
        unsent = obs.unsent_bytes
        end = self._placed_end(obs)
        for b in range(self.low, end):
            row = self.placed[b]
            if unsent[b] == 0 and row.any():
                for k in range(obs.n_paths):
                    self.placed_on[k] -= int(row[k])
                row[:] = 0
        for k in range(obs.n_paths):
            if k in takers or self.placed_on[k] == 0:
                continue
            for b in range(self.low, end):
                if self.placed[b, k]:
                    self.placed_on[k] -= int(self.placed[b, k])
                    self.placed[b, k] = 0
                    self.frontier = min(self.frontier, b)
        while self.low < self.frontier and not self.placed[self.low].any():
            self.low += 1

    def _place(self, obs: Observation, takers: list[int], in_window: set[int]) -> None:
        """Place the never-sent pieces not placed yet, oldest block first."""
        mss = obs.mss_bytes
        budget = -1
        if obs.in_order:
            budget = max(0, max(0, obs.rbuf_bytes - obs.unacked_data_bytes) // mss - sum(self.placed_on))
        windows = {k: self._window(obs, k) for k in takers}
        unsent = obs.unsent_bytes
        while self.frontier < obs.n_arrived:
            b = self.frontier
            left = -(-int(unsent[b]) // mss) - int(self.placed[b].sum())
            if left > 0 and b not in in_window:
                return
            for _ in range(max(left, 0)):
                if budget == 0:
                    return
                budget -= 1
                best = min(takers, key=lambda k: (self._arrival2(obs, k, *windows[k]), k))
                self.placed[b, best] += 1
                self.placed_on[best] += 1
                self.head[best] = min(self.head[best], b)
            self.frontier += 1

    def _queue_head(self, obs: Observation, j: int) -> int:
        """The oldest block with pieces placed on path ``j``, or -1."""
        while self.head[j] < self._placed_end(obs):
            if self.placed[self.head[j], j]:
                return self.head[j]
            self.head[j] += 1
        return -1
