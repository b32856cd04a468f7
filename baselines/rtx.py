"""TCP-state-driven path selectors for streaming video: LPC, LET and the
retransmission-aware SPDX, LPCX, LETX.

Matsufuji, Nagayama, Cavendish, Nobayashi, Ikenaga, "TCP State Driven MPTCP Packet
Scheduling for Streaming Video", INTERNET 2018 [matsufuji18], Sec. V. Each scheduler picks
*which path* takes the next packet from the subflows' TCP state; blocks are served first
in, first out, and deadlines are ignored (the paper's schedulers are not deadline-aware:
late video data is still sent, and the client discards late pictures). SPD, the
paper's baseline, is MinRTT (``spd`` in :mod:`mpsched.baselines.classic`).

The selectors of Sec. V, over the paths "with space in their congestion window" (the
paths that can send, ``can_send``), ties to the lowest index:

- SPD, shortest packet delay: the smallest smoothed RTT ``srtt_ns``.
- LPC, largest packet credits: the largest "number of packets allowed by cwnd size minus
  the packets that have not been acknowledged yet", read here as the full-size packets
  the window still admits, ``(cwnd_bytes - path_inflight_bytes) // mss_bytes`` (at least
  1 on a path that can send). A path without a window (``cc: ideal``, ``cwnd_bytes ==
  0``), which can send only when its link is idle, admits exactly one packet: credit 1.
- LET, largest estimated throughput: the largest ``cwnd / sRTT``, which is the
  observation's ``rate_bps`` (``cwnd * 8e9 / max(srtt, 1)``; an ideal path's link rate,
  docs/model.md section 10).

RTX awareness (Sec. V, "RTX Aware"): "avoid injecting packets into paths that are in
retransmit/recovery mode [...] LETX first eliminates paths in TCP retransmission and
among the remaining ones it selects the path of maximum estimated throughput. If all
sub-flows are in retransmission state, no path is selected." A path is in retransmission
state when ``recovery != 0``: 1 after a loss found by three duplicate acknowledgements
(fast retransmit and fast recovery, RFC 6582), 2 after a retransmission timeout; either
ends at the first acknowledgement of a packet sent on the path after it began
(docs/model.md 7.3-7.5).

Mapping onto the per-path decision point (as :class:`~mpsched.baselines.classic.MinRTT`):
when path ``j`` can send, the selector picks one path among the candidates; ``j`` sends
the oldest sendable block if it is that path and waits otherwise (the chosen path is
offered the packet in the same decision round). The candidates are the paths that can
send; for the X variants, those of them out of recovery.

When every path that can send is in recovery (in particular when the only path that can
send is in recovery while the others' windows are full), the X variants fall back to the
base selector over all of them rather than waiting. In the paper's Linux testbed a
subflow in recovery retransmits its own losses outside the scheduler and leaves recovery
about one RTT later, so "no path is selected" is a short pause. In this model
retransmissions are scheduled like any other packet and recovery ends only as above: a
path never offered a packet would stay in recovery for good, a lossy path would be
dropped for the rest of the episode after its first loss, and the connection would stall
for good once every path had lost a packet. The fallback keeps the paper's preference
(while any path out of recovery can send, a path in recovery waits) without that stall.
Native twins: envs/core/policies/rtx.c.
"""

from __future__ import annotations

import numpy as np

from ..envs.policy import WAIT, Observation, Policy

__all__ = [
    "LPC", "LET", "SPDX", "LPCX", "LETX",
    "rtx_candidates", "spd_choice", "lpc_credit", "lpc_choice", "let_choice",
]

PAPER = "Matsufuji et al., INTERNET 2018 [matsufuji18] Sec. V"


def rtx_candidates(can_send: np.ndarray, recovery: np.ndarray) -> list[bool]:
    """The paths an RTX-aware selector chooses from ([matsufuji18] Sec. V, "RTX Aware").

    The paths that can send and are out of recovery (``recovery == 0``); when every path
    that can send is in recovery, all the paths that can send (see the module docstring).
    """
    ready = [bool(x) for x in can_send]
    fresh = [ready[i] and int(recovery[i]) == 0 for i in range(len(ready))]
    return fresh if any(fresh) else ready


def spd_choice(srtt_ns: np.ndarray, candidates: list[bool]) -> int:
    """SPD ([matsufuji18] Sec. V): the candidate with the smallest smoothed RTT, ties to the
    lowest index; -1 when there is no candidate."""
    best = -1
    for i, ok in enumerate(candidates):
        if ok and (best < 0 or int(srtt_ns[i]) < int(srtt_ns[best])):
            best = i
    return best


def lpc_credit(cwnd_bytes: int, inflight_bytes: int, mss_bytes: int) -> int:
    """LPC's packet credits of a path that can send ([matsufuji18] Sec. V): the full-size
    packets its window still admits, ``(cwnd - inflight) // mss``; 1 for a path without
    a window (``cwnd == 0``, ``cc: ideal``), whose idle link takes one packet."""
    if cwnd_bytes == 0:
        return 1
    return (cwnd_bytes - inflight_bytes) // mss_bytes


def lpc_choice(cwnd_bytes: np.ndarray, inflight_bytes: np.ndarray, mss_bytes: int, candidates: list[bool]) -> int:
    """LPC ([matsufuji18] Sec. V): the candidate with the most packet credits
    (:func:`lpc_credit`), ties to the lowest index; -1 when there is no candidate."""
    best, best_credit = -1, 0
    for i, ok in enumerate(candidates):
        if not ok:
            continue
        credit = lpc_credit(int(cwnd_bytes[i]), int(inflight_bytes[i]), mss_bytes)
        if best < 0 or credit > best_credit:
            best, best_credit = i, credit
    return best


def let_choice(rate_bps: np.ndarray, candidates: list[bool]) -> int:
    """LET ([matsufuji18] Sec. V): the candidate with the largest estimated throughput
    ``cwnd / sRTT`` (the observation's ``rate_bps``), ties to the lowest index; -1 when
    there is no candidate."""
    best, best_rate = -1, 0.0
    for i, ok in enumerate(candidates):
        if ok and (best < 0 or float(rate_bps[i]) > best_rate):
            best, best_rate = i, float(rate_bps[i])
    return best


class _PathSelector(Policy):
    """A path selector serving blocks first in, first out: the deciding path sends the
    oldest sendable block when it is the selector's choice among the candidates, and
    waits otherwise."""

    paper = PAPER
    rtx_aware: bool = False
    """Whether paths in recovery are dropped from the candidates first (the X variants)."""

    def choose(self, obs: Observation, candidates: list[bool]) -> int:
        raise NotImplementedError

    def decide(self, obs: Observation) -> int:
        if self.rtx_aware:
            candidates = rtx_candidates(obs.can_send, obs.recovery)
        else:
            candidates = [bool(x) for x in obs.can_send]
        if self.choose(obs, candidates) != obs.path:
            return WAIT
        return int(obs.sendable()[0])


class _SPDSelector(_PathSelector):
    def choose(self, obs: Observation, candidates: list[bool]) -> int:
        return spd_choice(obs.srtt_ns, candidates)


class _LPCSelector(_PathSelector):
    def choose(self, obs: Observation, candidates: list[bool]) -> int:
        return lpc_choice(obs.cwnd_bytes, obs.path_inflight_bytes, obs.mss_bytes, candidates)


class _LETSelector(_PathSelector):
    def choose(self, obs: Observation, candidates: list[bool]) -> int:
        return let_choice(obs.rate_bps, candidates)


class LPC(_LPCSelector):
    """LPC, largest packet credits ([matsufuji18] Sec. V; proposed in the authors' PACRIM 2017
    paper, ref. [12]).

    "Among the sub-flows with space in their cwnd, this scheduler selects the one with
    largest available space. Available space is the number of packets allowed by cwnd
    size minus the packets that have not been acknowledged yet": the path that can send
    with the largest ``(cwnd_bytes - path_inflight_bytes) // mss_bytes`` (1 for an ideal
    path), ties to the lowest index. Blocks are FIFO; the deciding path waits unless it
    is the choice. No parameters.
    """

    name = "lpc"
    native = "lpc"


class LET(_LETSelector):
    """LET, largest estimated throughput ([matsufuji18] Sec. V; ref. [12]).

    "Among the sub-flows with large enough cwnd to accommodate new packets, the
    scheduler estimates the throughput of each sub-flow, as cwnd/sRTT (smooth RTT) and
    selects the one with largest throughput": the path that can send with the largest
    ``rate_bps`` (docs/model.md section 10), ties to the lowest index. Blocks are FIFO;
    the deciding path waits unless it is the choice. No parameters.
    """

    name = "let"
    native = "let"


class SPDX(_SPDSelector):
    """SPDX, RTX-aware shortest packet delay ([matsufuji18] Sec. V, "RTX Aware" over SPD).

    MinRTT over the paths that can send and are out of recovery (``recovery == 0``);
    when every path that can send is in recovery, MinRTT over all of them (module
    docstring). Ties to the lowest index; blocks FIFO. No parameters.
    """

    name = "spdx"
    native = "spdx"
    rtx_aware = True


class LPCX(_LPCSelector):
    """LPCX, RTX-aware largest packet credits ([matsufuji18] Sec. V, "RTX Aware" over LPC).

    :class:`LPC` over the paths that can send and are out of recovery; over all the paths
    that can send when every one of them is in recovery (module docstring). No
    parameters.
    """

    name = "lpcx"
    native = "lpcx"
    rtx_aware = True


class LETX(_LETSelector):
    """LETX, RTX-aware largest estimated throughput ([matsufuji18] Sec. V, "RTX Aware" over
    LET).

    "LETX first eliminates paths in TCP retransmission and among the remaining ones it
    selects the path of maximum estimated throughput": :class:`LET` over the paths that
    can send and are out of recovery; over all the paths that can send when every one of
    them is in recovery (module docstring). No parameters.
    """

    name = "letx"
    native = "letx"
    rtx_aware = True
