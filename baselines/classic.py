"""The classic packet schedulers of multipath transport: MinRTT and round-robin.

They serve blocks first-in first-out and are unaware of deadlines and priorities; they
only choose *when* a path takes the next packet, and keep sending blocks whose deadline
has passed (as the DAMS paper ran them). Each class is the readable specification of a
native twin compiled into the core (envs/core/policies/classic.c); the two make
identical decisions.
"""

from __future__ import annotations

import numpy as np

from ..envs.policy import WAIT, Observation, Policy

__all__ = ["MinRTT", "SPD", "RoundRobin", "BlindRoundRobin", "RandomBlock", "round_robin_turn"]


def round_robin_turn(obs: Observation, cursor: int) -> tuple[int, int]:
    """Round-robin's turn: the first path at or after ``cursor`` that can send takes the
    oldest sendable block and the cursor moves past it; any other deciding path waits.

    Returns the action and the new cursor.
    """
    P = obs.n_paths
    for k in range(P):
        i = (cursor + k) % P
        if not obs.can_send[i]:
            continue
        if i != obs.path:
            return WAIT, cursor
        return int(obs.sendable()[0]), (obs.path + 1) % P
    return WAIT, cursor


class MinRTT(Policy):
    """MinRTT, the default scheduler of Linux MPTCP and of MPQUIC.

    Paasch et al., "Experimental evaluation of multipath TCP schedulers", CSWS 2014
    ([dams] ref. [12], [matsufuji18] "SPD"). The block order is FIFO; each packet goes to the
    path with the smallest smoothed RTT among those whose congestion window has room.

    Mapping onto the per-path decision point: when path ``j`` can send but another path
    that can send has a smaller ``(srtt, index)``, ``j`` waits (that path is offered the
    packet in the same decision round); otherwise ``j`` sends the oldest sendable block.
    """

    name = "minrtt"
    native = "minrtt"
    paper = "Paasch et al., CSWS 2014 (Linux MPTCP default)"

    def decide(self, obs: Observation) -> int:
        j = obs.path
        srtt = obs.srtt_ns
        for i in range(obs.n_paths):
            if i != j and obs.can_send[i] and (srtt[i], i) < (srtt[j], j):
                return WAIT
        return int(obs.sendable()[0])


class RoundRobin(Policy):
    """Round-robin over the paths that can send (the MPTCP "roundrobin" scheduler).

    [dams] §V ("RR: sends packets in a round-robin fashion"). Blocks are FIFO. A cursor
    names the path whose turn it is; the first path at or after the cursor that can send
    takes the packet and the cursor moves past it. Any other deciding path waits.
    """

    name = "rr"
    native = "rr"
    paper = "Linux MPTCP roundrobin; DAMS paper [dams] Sec. V"

    def __init__(self) -> None:
        super().__init__()
        self._cursor = 0

    def reset(self, obs: Observation) -> None:
        self._cursor = 0

    def decide(self, obs: Observation) -> int:
        action, self._cursor = round_robin_turn(obs, self._cursor)
        return action


class SPD(MinRTT):
    """SPD, shortest packet delay: the name [matsufuji18] (Sec. V) gives MinRTT.

    Identical decisions to :class:`MinRTT` (the same native twin); registered under the
    paper's name so that its tables can be reproduced name for name.
    """

    name = "spd"
    paper = "Matsufuji et al., INTERNET 2018 [matsufuji18] Sec. V: SPD = MinRTT"


class BlindRoundRobin(RoundRobin):
    """Blind round-robin, the CMT-SCTP scheduler of the DAPS paper ([daps], Algorithm 1).

    ``for each path p_i: while unack_i < cwnd_i: transmit the next chunk on p_i`` (if the
    receive window allows): chunks go out in sequence to the paths in turn, blind to
    their delays. Blocks are FIFO.

    Mapping onto the decision point: a turn is one packet, as in :class:`RoundRobin` (the
    same native twin). ns-2's CMT-SCTP (``SctpCMTAgent::SendMuch``) gives each
    destination a run up to its window, starting after the destination that sent last.
    With this simulator's acknowledgement per packet, runs put the slow path's packets
    back to back and roughly triple the blocking time of Table I's symmetric cases;
    ns-2's delayed SACKs (one per two packets) do not break the runs up, as each SACK
    still lets a destination fill its window. One packet per turn reproduces eq. (2)
    (``mpsched validate``).
    """

    name = "blind-rr"
    paper = "Kuhn et al., DAPS [daps] Algorithm 1"


class RandomBlock(Policy):
    """Uniformly random sendable block on whichever path asks; never waits.

    A floor for comparisons and a smoke test for the step API. Seeded per episode.

    Parameters
    ----------
    seed : int
        Seed of the policy's own generator, re-applied at every episode start.
    """

    name = "random"
    paper = "a floor for comparisons"

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        self.seed = int(seed)
        self._rng = np.random.default_rng(self.seed)

    def reset(self, obs: Observation) -> None:
        self._rng = np.random.default_rng(self.seed)

    def decide(self, obs: Observation) -> int:
        s = obs.sendable()
        return int(s[self._rng.integers(len(s))])
