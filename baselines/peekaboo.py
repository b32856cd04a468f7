"""Peekaboo: a MinRTT scheduler that learns, within the episode, when to wait for the
fastest path instead of sending on a slower one.

Wu, Alay, Brunstrom, Ferlin and Caso, "Peekaboo: Learning-based multipath scheduling for
dynamic heterogeneous environments", IEEE JSAC 38(10), 2020; its mp-quic implementation
(the online-learning stage, ``selectPathLowBandit`` in ``scheduler.go``). Native twin:
envs/core/policies/peekaboo.c.
"""

from __future__ import annotations

import math
from collections import deque
from typing import NamedTuple

from ..envs.policy import WAIT, Observation, Policy
from ..envs.streams import POLICY_STREAM, CoreStream
from .mptcp import best_ready_path, window_bytes

__all__ = ["Peekaboo"]

FEATURES = 6
"""The context's length: three windows over an RTT for each of the two paths."""

WAIT_ACTION, SEND_ACTION = 0, 1
"""The two arms: wait for the fastest path ("F" in the code), send on the slower ("S")."""

MAX_PENDING = 6000
"""Decisions kept per arm until their reward is known (the code's buffers hold 6000)."""


class Pending(NamedTuple):
    """A decision waiting for its reward: its context, when it was taken, and the packet
    whose acknowledgement rewards it (path, packet number)."""

    context: tuple[float, ...]
    at_ns: int
    path: int
    packet: int


def _dot(a: list[float], b: list[float] | tuple[float, ...]) -> float:
    total = 0.0
    for i in range(FEATURES):
        total += a[i] * b[i]
    return total


def _times(matrix: list[list[float]], x: list[float] | tuple[float, ...]) -> list[float]:
    return [_dot(matrix[i], x) for i in range(FEATURES)]


class Peekaboo(Policy):
    """Peekaboo's online stage: MinRTT, and a LinUCB bandit where MinRTT has no answer.

    When the fastest path (smallest ``(srtt, index)`` among the paths that are not
    potentially failed) can send, it sends the oldest sendable block, as MinRTT does.
    When its window is full and a slower path is ready (the ready path with the smallest
    ``(srtt, index)`` asks), the scheduler either sends on the slower path or waits for
    the fastest one; once it has chosen to wait it keeps waiting until the fastest path can
    send again (the code's ``waiting`` flag).

    That choice is a contextual bandit with two arms (LinUCB, the paper's Algorithm 2, as
    the code's online learning stage ``selectPathLowBandit`` runs it): each arm ``a``
    keeps ``A_a`` (6 x 6, the identity at the start) and ``b_a`` (zero); with the context
    ``x`` the arm with the larger ``U_a = theta_a . x + alpha * sqrt(x . A_a^-1 x)``,
    ``theta_a = A_a^-1 b_a``, is preferred (sending on ties, as the code). The arm taken
    learns, ``A_a += x x^T`` and ``b_a += r x``, once its reward ``r`` is known. The
    context ``x`` is, with ``f`` the fastest path and ``s`` the slower one and windows
    over the smoothed RTT: ``cwnd_f / rtt_f``, ``inflight_s / rtt_s``, ``swnd / rtt_f``,
    ``swnd / rtt_s``, ``inflight_f / rtt_f``, ``cwnd_s / rtt_s`` (the code's order; all
    zero if an RTT is 0). The reward of a decision is ``mss / (t - t0)``: ``t0`` when it
    was taken, ``t`` the first decision after the packet it concerns (the packet sent on
    ``s``; for a wait, the next packet the fastest path sends) left the path's unresolved
    packets (acknowledged or declared lost: the code's ``LeastUnacked``). Rewards are
    collected at every decision, oldest first, each arm's decisions in the order taken.

    The paper's deployment stage adds a stochastic adjustment (Sec. IV-C, a two-state
    Markov chain): the preferred arm is taken with probability ``p_wait`` (when it is
    waiting) or ``p_send`` (sending), the other one otherwise; one draw ``u`` from the
    episode's policy stream (docs/model.md section 5) per bandit decision, the preferred
    arm if ``u < p``. The defaults, 1 and 1, are the online stage (the adjustment is off);
    the code's deployment variant (``selectPathPeek``) fixes 0.7 and 0.9.

    Our reading:

    - units are bytes and milliseconds (windows and reward in bytes per ms, the paper's
      unit for its reward). The code divides by nanoseconds; with contexts of about
      1e-3 the exploration term then outweighs what the arms learn for about a million
      updates, and the bandit alternates between its arms;
    - ``swnd``, the connection's send window, is what the in-order receiver's window
      leaves (``rbuf_bytes`` less the data sent beyond its acknowledgement, at least 0);
      the block-aware receiver has no window and ``swnd`` is 0;
    - RTTs are ``srtt`` (the code reads the latest sample); an ideal path's window is
      the bytes its rate fills in one ``srtt`` (:func:`mpsched.baselines.mptcp.window_bytes`);
    - ``A_a^-1`` is kept up to date by the Sherman-Morrison formula instead of inverting
      ``A_a`` at each decision (the same matrix up to rounding);
    - the reward is the code's, per packet. The paper's Algorithm 1 sums discounted
      rewards of the in-order acknowledgements of the next three reference times, and
      sets the adjustment's probabilities from a fit statistic of a separate learning
      stage, re-learning when it drifts; neither is given in full by the sources. The
      per-packet reward makes waiting win whenever the fastest path's RTT plus its wait
      is shorter than the slower path's RTT, whatever the load: a fastest path that
      cannot carry the load alone leaves the slower path idle (``dams-rtt-200``, a 40 ms
      path beside a 200 ms one: 0.000 on time against MinRTT's 0.149);
    - retransmissions are chosen like new data (the code sends them on the slower path
      without asking the bandit);
    - at most :data:`MAX_PENDING` decisions per arm wait for their reward; the oldest is
      dropped unrewarded beyond that (a wait whose packet is never sent, its path no
      longer the fastest, holds up the arm's later rewards until then).

    Parameters
    ----------
    alpha : float
        Weight of LinUCB's exploration term (``banditAlpha``, 0.75 in the code).
    p_wait, p_send : float
        Probability of taking the preferred arm when it is waiting, and when it is
        sending (1 and 1: the online stage, no adjustment).
    """

    name = "peekaboo"
    native = "peekaboo"
    paper = "Wu, Alay, Brunstrom, Ferlin and Caso, Peekaboo, IEEE JSAC 2020 (mp-quic selectPathLowBandit)"

    def __init__(self, alpha: float = 0.75, p_wait: float = 1.0, p_send: float = 1.0) -> None:
        super().__init__()
        for key, value, high in (("alpha", alpha, 100.0), ("p_wait", p_wait, 1.0), ("p_send", p_send, 1.0)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) <= high:
                raise ValueError(f"{key} must be in [0, {high:g}], got {value!r}")
        self.alpha = float(alpha)
        self.p_wait = float(p_wait)
        self.p_send = float(p_send)
        self._reset_state(0)

    def _reset_state(self, seed: int) -> None:
        self._stream = CoreStream(seed, POLICY_STREAM)
        self.a_inverse = [[[1.0 if i == k else 0.0 for k in range(FEATURES)] for i in range(FEATURES)]
                          for _ in range(2)]
        self.b = [[0.0] * FEATURES for _ in range(2)]
        self.pending: list[deque[Pending]] = [deque(), deque()]
        self.waiting = False
        self.choices: list[tuple[int, int]] = []
        """``(time, arm)`` of every bandit decision of the episode (for analysis)."""

    def reset(self, obs: Observation) -> None:
        self._reset_state(obs.simulator.seed)

    def decide(self, obs: Observation) -> int:
        self._collect_rewards(obs)
        j = obs.path
        f = _fastest_usable_path(obs)
        if obs.can_send[f]:
            if j != f:
                return WAIT
            self.waiting = False
            return int(obs.sendable()[0])
        if best_ready_path(obs) != j or self.waiting:
            return WAIT
        x = self.context(obs, f, j)
        prefers_send = self.score(SEND_ACTION, x) >= self.score(WAIT_ACTION, x)
        u = self._stream.uniform()
        if (u < self.p_send) if prefers_send else (u >= self.p_wait):
            self._remember(SEND_ACTION, Pending(x, obs.now_ns, j, int(obs.next_pn[j])))
            self.choices.append((obs.now_ns, SEND_ACTION))
            return int(obs.sendable()[0])
        self.waiting = True
        self._remember(WAIT_ACTION, Pending(x, obs.now_ns, f, int(obs.next_pn[f])))
        self.choices.append((obs.now_ns, WAIT_ACTION))
        return WAIT

    @staticmethod
    def context(obs: Observation, f: int, s: int) -> tuple[float, ...]:
        """The bandit's context ``x`` (class docstring), in bytes per millisecond."""
        rtt_f, rtt_s = int(obs.srtt_ns[f]), int(obs.srtt_ns[s])
        if rtt_f <= 0 or rtt_s <= 0:
            return (0.0,) * FEATURES
        ms_f, ms_s = rtt_f / 1e6, rtt_s / 1e6
        swnd = float(max(0, obs.rbuf_bytes - obs.unacked_data_bytes)) if obs.in_order else 0.0
        return (window_bytes(obs, f) / ms_f, float(int(obs.path_inflight_bytes[s])) / ms_s, swnd / ms_f,
                swnd / ms_s, float(int(obs.path_inflight_bytes[f])) / ms_f, window_bytes(obs, s) / ms_s)

    def score(self, arm: int, x: tuple[float, ...]) -> float:
        """LinUCB's ``U_a = theta_a . x + alpha * sqrt(x . A_a^-1 x)``."""
        inverse = self.a_inverse[arm]
        theta = _times(inverse, self.b[arm])
        spread = _dot(list(x), _times(inverse, x))
        return _dot(theta, x) + self.alpha * math.sqrt(max(spread, 0.0))

    def _remember(self, arm: int, decision: Pending) -> None:
        queue = self.pending[arm]
        if len(queue) == MAX_PENDING:
            queue.popleft()
        queue.append(decision)

    def _collect_rewards(self, obs: Observation) -> None:
        oldest = obs.oldest_pn
        now = obs.now_ns
        for arm in (WAIT_ACTION, SEND_ACTION):
            queue = self.pending[arm]
            while queue and queue[0].packet < int(oldest[queue[0].path]):
                d = queue.popleft()
                self._learn(arm, d.context, obs.mss_bytes / (max(now - d.at_ns, 1) / 1e6))

    def _learn(self, arm: int, x: tuple[float, ...], reward: float) -> None:
        """``A_a += x x^T`` (Sherman-Morrison on ``A_a^-1``) and ``b_a += reward x``."""
        inverse = self.a_inverse[arm]
        v = _times(inverse, x)
        denominator = 1.0 + _dot(list(x), v)
        for i in range(FEATURES):
            row = inverse[i]
            for k in range(FEATURES):
                row[k] -= v[i] * v[k] / denominator
        b = self.b[arm]
        for i in range(FEATURES):
            b[i] += reward * x[i]


def _fastest_usable_path(obs: Observation) -> int:
    """The path with the smallest ``(srtt, index)`` among those not potentially failed
    (``rto_streak == 0``), or among all when every path is."""
    srtt, streak = obs.srtt_ns, obs.rto_streak
    usable = [i for i in range(obs.n_paths) if streak[i] == 0] or list(range(obs.n_paths))
    return min(usable, key=lambda i: (int(srtt[i]), i))
