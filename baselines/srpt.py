"""Stream-aware schedulers of Jonglez, Heusse and Gaujal [jonglez20]: SRPT-ECF and the
schedulers it is compared with, SA-ECF, FCFS-minRTT and SRPT-minRTT.

The paper's *streams* (atomic messages) are our blocks. Its network model (Sec. II) gives
each path ``p`` a latency ``D_p`` and a rate ``R_p``; data sent on ``p`` at time ``t``
arrives at ``t + D_p``. We read them from what the sender knows at a decision point:

- ``R_p``: :attr:`Observation.rate_bps` (``cwnd * 8e9 / srtt`` for window-based paths,
  the link's bandwidth for ideal ones), divided by ``8e9`` to get bytes per nanosecond;
- ``D_p``: half the smoothed RTT, ``srtt_p / 2``. Sec. II calls ``D_p`` a round-trip
  latency, but eq. (1) and the worked examples (Figs. 3 and 5) use it as the time data
  takes to reach the receiver (an 800 B stream alone on a 200 KB/s, 5 ms path
  completes at 5 + 800/200 = 9 ms); the sender only sees round trips, so it splits
  them evenly. The smoothed RTT rather than the minimum is used because it includes the
  queueing delay that the next packet will meet (ECF, Lim et al. CoNEXT 2017, also uses
  the smoothed RTT); on an ideal path it is the propagation RTT plus one packet's
  service time.

Paths are ranked by increasing latency, ties by index (``(srtt, index)``). Eqs. (1)-(3),
generalized to ``n`` paths as Sec. II describes ("n - 1 similar size thresholds"): with
the data of the paths before it in that rank, path ``m`` becomes useful once the data to
send exceeds

    S_lim(m) = sum over q ranked before m of R_q * (D_m - D_q)

(for two paths ``R_1 (D_2 - D_1)``, eq. (3)); a size ``S`` uses the ``m`` first paths,
those with ``S_lim < S``, and completes after

    C*(S) = (S + sum_{q <= m} R_q D_q) / sum_{q <= m} R_q

(``D_1 + S / R_1`` for one path, eq. (1); ``D_2 + (S - S_lim) / (R_1 + R_2)`` for two,
eq. (2)); infinite when the paths used have no rate at all. Reals are binary64, summed
in rank order, exactly as the native twins (envs/core/policies/srpt.c) compute them.

None of these schedulers is deadline-aware: the paper has no deadlines, and blocks past
theirs keep being sent.
"""

from __future__ import annotations

import math

from ..envs.policy import WAIT, Observation, Policy
from .classic import MinRTT
from .deadline import minrtt_defers

__all__ = ["SRPTECF", "SAECF", "FCFSMinRTT", "SRPTMinRTT", "PathModel", "remaining_bytes"]

PAPER = "Jonglez, Heusse & Gaujal, SRPT-ECF, FIT 2020 [jonglez20]"


class PathModel:
    """The paper's network model (Sec. II) read from the sender at a decision point.

    Attributes
    ----------
    latency : list of float
        ``D_p = srtt_p / 2`` in nanoseconds.
    rate : list of float
        ``R_p = rate_bps_p / 8e9`` in bytes per nanosecond.
    rank : list of int
        Paths by increasing ``(srtt, index)``.
    threshold : list of float
        ``S_lim`` of each path (by path index) in bytes: the path carries data only while
        more than this is waiting (eqs. (1)-(3) for n paths; 0 for the first-ranked path).
    """

    __slots__ = ("latency", "rate", "rank", "threshold")

    def __init__(self, obs: Observation) -> None:
        P = obs.n_paths
        srtt = [int(v) for v in obs.srtt_ns]
        self.latency = [float(srtt[p]) * 0.5 for p in range(P)]
        self.rate = [float(obs.rate_bps[p]) / 8e9 for p in range(P)]
        self.rank = sorted(range(P), key=lambda p: (srtt[p], p))
        self.threshold = [0.0] * P
        for m in range(1, P):
            path = self.rank[m]
            s_lim = 0.0
            for q in range(m):
                before = self.rank[q]
                s_lim += self.rate[before] * (self.latency[path] - self.latency[before])
            self.threshold[path] = s_lim

    def completion(self, size: int) -> float:
        """``C*(size)``: nanoseconds to deliver ``size`` bytes with ECF on idle paths
        (eqs. (1)-(2) for n paths)."""
        s = float(size)
        used = 1
        while used < len(self.rank) and s > self.threshold[self.rank[used]]:
            used += 1
        rate_sum, rate_latency = 0.0, 0.0
        for q in range(used):
            p = self.rank[q]
            rate_sum += self.rate[p]
            rate_latency += self.rate[p] * self.latency[p]
        return (s + rate_latency) / rate_sum if rate_sum > 0.0 else math.inf


def remaining_bytes(obs: Observation, block: int) -> int:
    """Bytes the sender still has to send for ``block``: never sent plus waiting
    retransmission (the paper's remaining size)."""
    return int(obs.unsent_bytes[block]) + int(obs.lost_bytes[block])


class SRPTECF(Policy):
    """SRPT-ECF: shortest isolated remaining completion time first, paths by ECF.

    Jonglez, Heusse & Gaujal, FIT 2020 [jonglez20], Sec. III-A with the online variant of
    Sec. IV-A. Two steps at every decision:

    a) *Order* the sendable blocks by ``(priority, isolated remaining completion time,
       index)``, the priority first (Sec. III-C: a strict-priority scheme, ordered
       lexicographically). The paper does not say which end of its priorities is the more
       important; here a larger ``priority`` comes first, the project's convention. The
       isolated remaining completion time is eq. (5):
       ``max(C*(S_k), T_in-flight(k))`` with ``S_k`` the block's remaining bytes and
       ``T_in-flight`` the time until its packets in flight arrive: over the paths ``p``
       where it has bytes in flight, ``last send of the block on p + D_p - now`` (the
       paper's "record the last time at which we sent a packet on a path p and add the
       path delay D_p", kept per block), 0 when nothing is in flight.
    b) *Allocate* paths with ECF on the cumulative size: block ``k`` in that order has
       effective size ``S_k^ECF``, the remaining bytes of the blocks up to and including
       ``k`` (the text prints ``sum_{i<k}``; its own example, ``S_0^ECF = S_1 + S_0`` for
       the second block of Fig. 5, and the argument "we schedule the data of all
       messages before m_k" include ``k`` itself), and path ``j`` carries data of block
       ``k`` only when ``S_k^ECF > S_lim(j)``.

    Mapping onto the per-path decision point: when path ``j`` can send, it takes the
    first block in the order whose cumulative size exceeds ``S_lim(j)``; when even the
    total is at or below it, ``j`` waits (ECF: the faster paths finish the data sooner).
    The lowest-latency path has ``S_lim = 0`` and always serves the first block. Only
    sendable blocks count, with their remaining (unsent plus lost) bytes.

    Cost: the native twin does not sort the buffer. The core keeps the sendable blocks in
    a heap by ``(priority, remaining bytes, index)``, which is step a)'s order for every
    block with nothing in flight (``C*`` increases strictly with the size while every
    path has a positive rate and one byte moves it by more than its binary64 rounding;
    otherwise, as with a path's window grown so large that blocks of different sizes
    round to one ``C*``, the twin scans every sendable block and the ties go by index, as
    here), and the blocks with bytes in flight apart; a decision
    merges the two until the cumulative size passes ``S_lim(j)``, so it looks at the
    blocks in flight and the few that fill ``S_lim(j)``, whatever the buffer holds (13
    per decision on the benchmark paths with 3,600 blocks waiting). Step b) itself is as
    long as ``S_lim(j)`` over the block size: with 1-byte blocks a slower path's decision
    takes thousands. Those blocks count against the work budget (docs/model.md
    section 12).

    No parameters: the paper's algorithm has none.
    """

    name = "srpt-ecf"
    native = "srpt-ecf"
    paper = PAPER + " Sec. III-A, IV-A"

    def __init__(self) -> None:
        super().__init__()
        self._last_send: dict[tuple[int, int], int] = {}

    def reset(self, obs: Observation) -> None:
        self._last_send = {}

    def isolated_completion(self, obs: Observation, model: PathModel, block: int) -> float:
        """Eq. (5): ``max(C*(S_k), T_in-flight(k))`` in nanoseconds from now."""
        c_ecf = model.completion(remaining_bytes(obs, block))
        in_flight = 0.0
        for p in range(obs.n_paths):
            if int(obs.inflight_bytes[block, p]) > 0:
                arrival = float(self._last_send[(block, p)] - obs.now_ns) + model.latency[p]
                if arrival > in_flight:
                    in_flight = arrival
        return c_ecf if c_ecf >= in_flight else in_flight

    def decide(self, obs: Observation) -> int:
        j = obs.path
        model = PathModel(obs)
        blocks = [int(b) for b in obs.sendable()]
        priority = obs.priority
        key = {b: (-int(priority[b]), self.isolated_completion(obs, model, b), b) for b in blocks}
        cumulative = 0
        for b in sorted(blocks, key=key.__getitem__):
            cumulative += remaining_bytes(obs, b)
            if float(cumulative) > model.threshold[j]:
                self._last_send[(b, j)] = obs.now_ns
                return b
        return WAIT


class SAECF(Policy):
    """SA-ECF as [jonglez20] runs it: weighted round-robin over blocks, ECF over paths.

    Rabitsch, Hurtig & Brunstrom, EPIQ 2018 ([jonglez20] ref. [8]), as described and
    configured in [jonglez20] Sec. III-A (Fig. 6) and IV-C: a weighted round-robin with a
    byte quantum serves the streams, equal weights for all (so priorities are not read),
    and ECF allocates the paths to the aggregate. Blocks take turns in index (arrival)
    order, cyclically; a turn lasts until the block has sent at least ``quantum_bytes``
    (one packet at least, so a quantum below the packet size gives a packet per turn)
    or until it is no longer sendable. ECF treats all sendable data as one stream: path
    ``j`` carries a packet only while the total remaining bytes exceed ``S_lim(j)``
    (eqs. (1)-(3) for n paths), and otherwise waits.

    Mapping onto the per-path decision point: a path that ECF lets send takes the next
    packet of the round-robin sequence, whichever path asks; the turn counts the bytes
    that packet carries (the ``mss``, or what the block has left when less: its waiting
    retransmissions first, as the sender sends them first).

    Parameters
    ----------
    quantum_bytes : int
        Bytes a block sends per turn; 150 in the paper (Fig. 6).
    """

    name = "sa-ecf"
    native = "sa-ecf"
    paper = "Rabitsch et al., EPIQ 2018, as run in " + PAPER + " Fig. 6"

    def __init__(self, quantum_bytes: int = 150) -> None:
        super().__init__()
        if isinstance(quantum_bytes, bool) or int(quantum_bytes) != quantum_bytes \
                or not 1 <= int(quantum_bytes) <= 2**31 - 1:
            raise ValueError(f"quantum_bytes must be an integer in [1, 2^31 - 1], got {quantum_bytes!r}")
        self.quantum_bytes = int(quantum_bytes)
        self._turn_block = -1
        self._turn_bytes = 0

    def reset(self, obs: Observation) -> None:
        self._turn_block = -1
        self._turn_bytes = 0

    def decide(self, obs: Observation) -> int:
        j = obs.path
        model = PathModel(obs)
        blocks = [int(b) for b in obs.sendable()]
        total = sum(remaining_bytes(obs, b) for b in blocks)
        if not float(total) > model.threshold[j]:
            return WAIT
        if self._turn_block not in blocks or self._turn_bytes >= self.quantum_bytes:
            later = [b for b in blocks if b > self._turn_block]
            self._turn_block = later[0] if later else blocks[0]
            self._turn_bytes = 0
        b = self._turn_block
        lost = int(obs.lost_bytes[b])
        self._turn_bytes += min(obs.mss_bytes, lost if lost > 0 else int(obs.unsent_bytes[b]))
        return b


class FCFSMinRTT(MinRTT):
    """FCFS-minRTT: blocks first-come first-served on the MinRTT path ([jonglez20] Sec. IV-C).

    "First-Come-First-Serve (FCFS-minRTT) that schedules streams in their order of
    arrival": exactly :class:`mpsched.baselines.classic.MinRTT` (same native twin),
    registered under the paper's name.
    """

    name = "fcfs-minrtt"
    paper = PAPER + " Sec. IV-C: FCFS-minRTT = MinRTT"


class SRPTMinRTT(Policy):
    """SRPT-minRTT: the block with the fewest remaining bytes first, on the MinRTT path.

    [jonglez20] Sec. IV-C: "SRPT-minRTT that orders streams by size". The order is
    ``(priority, remaining bytes, index)``, a larger priority first as in SRPT-ECF
    (Sec. III-C), so that the two differ only in the path rule; remaining bytes are those
    still to send (never sent plus waiting retransmission). The path rule is MinRTT's: a
    path waits while another ready path has a smaller ``(srtt, index)``.
    """

    name = "srpt-minrtt"
    native = "srpt-minrtt"
    paper = PAPER + " Sec. IV-C"

    def decide(self, obs: Observation) -> int:
        if minrtt_defers(obs):
            return WAIT
        priority = obs.priority
        return min((int(b) for b in obs.sendable()),
                   key=lambda b: (-int(priority[b]), remaining_bytes(obs, b), b))
