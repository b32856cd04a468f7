"""Schedulers that send copies of data already in flight: redundancy as deployed stacks do it.

A copy goes out on another path while the first transmission is still in flight; the
receiver keeps the first to arrive (docs/model.md 7.1, copies). Redundancy trades
bytes for delay and for robustness to loss and path failure: the results' path table
counts the copies (``redundant_packets``, ``redundant_bytes``). Each class is the readable
specification of a native twin (envs/core/policies/redundancy.c).
"""

from __future__ import annotations

from ..envs.policy import WAIT, Observation, Policy, copy_of

__all__ = ["Redundant"]


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
                return copy_of(int(copyable[0]))
        sendable = obs.sendable()
        if not len(sendable):
            return WAIT
        srtt = obs.srtt_ns
        for i in range(obs.n_paths):
            if i != j and obs.can_send[i] and (srtt[i], i) < (srtt[j], j):
                return WAIT
        return int(sendable[0])
