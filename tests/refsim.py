"""Independent pure-Python reference simulator of ``docs/model.md``.

This module is a differential oracle for the C core ``mpsched.envs._core``. It is
written from the specification alone, for clarity rather than speed, and imports
nothing from :mod:`mpsched` (standard library only). Section numbers in the comments
("§7.3 step 5") refer to ``docs/model.md``.

Public API: :func:`run_reference` and the constant :data:`WAIT`. The helpers
:func:`splitmix64`, :class:`Xoshiro256ss` and :class:`Bandwidth` are exposed for the
unit tests of this module.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import OrderedDict, deque

__all__ = ["WAIT", "NEVER", "run_reference", "splitmix64", "Xoshiro256ss", "Bandwidth"]

WAIT = -1
NEVER = math.inf  # §3: a time larger than any end_ns (compares exactly with Python ints)

MASK64 = (1 << 64) - 1
GOLDEN_GAMMA = 0x9E3779B97F4A7C15
G_NS = 1_000_000  # §7: the clock granularity G = 1 ms of the RTO formula
SSTHRESH_INITIAL = 1 << 62

# Piece states (§7).
UNSENT, OUT, LOST, ACKED = "UNSENT", "OUT", "LOST", "ACKED"
# Packet-record states (§7): OUT, HOLE, ACKED, LOST.
HOLE = "HOLE"
# Recovery states (§7).
REC_NONE, REC_FAST, REC_RTO = "NONE", "FAST", "RTO"

# Event classes (§8), in tie-break order.
EV_RECEIVE, EV_ACK, EV_LINK, EV_ARRIVAL, EV_RTO = 0, 1, 2, 3, 4


def ceil_div(a: int, b: int) -> int:
    """``ceil(a / b)`` for non-negative ints, as written in the preamble of model.md."""
    return (a + b - 1) // b


def clamp(x: int, lo: int, hi: int) -> int:
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
    """xoshiro256** (§5). ``Xoshiro256ss.for_path(seed, j)`` is path j's stream."""

    def __init__(self, s0: int, s1: int, s2: int, s3: int):
        self.s = [s0 & MASK64, s1 & MASK64, s2 & MASK64, s3 & MASK64]

    @classmethod
    def for_path(cls, seed: int, j: int) -> "Xoshiro256ss":
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


# --------------------------------------------------------------------------- §3 bandwidth


class Bandwidth:
    """The piecewise-constant rate of one path and the service-time algorithm (§3)."""

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


# --------------------------------------------------------------------------- state


class Lane:
    """A pending-event lane (§8): ``(time, item)`` pairs kept ordered by time.

    Insertion keeps equal times in insertion order. (On an ACK lane a negative ACK can
    be scheduled before a positive ACK that is due earlier, so a plain append would not
    keep the lane ordered.)
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

    def __init__(self, index: int, arrival, size, deadline, priority, weight, mss: int, P: int):
        self.index = index
        self.arrival_ns = int(arrival)
        self.size = int(size)
        self.deadline_ns = int(deadline)
        self.priority = int(priority)
        self.weight = float(weight)
        self.mss = mss
        # §2: n = ceil(S / mss) pieces.
        self.n_pieces = ceil_div(self.size, mss)
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

    def unsent_bytes(self) -> int:
        # §7: bytes of pieces >= next_new (all pieces before next_new are full-size
        # except possibly the last one).
        return self.size - min(self.next_new * self.mss, self.size)

    def sendable(self) -> bool:
        # §7: arrived, not cancelled, and unsent or lost-pending bytes remain.
        return (
            self.arrived
            and not self.cancelled
            and (self.unsent_bytes() > 0 or self.lost_pending_bytes > 0)
        )


class Packet:
    """One transmitted packet and its sender-side record (§7.1 step 3)."""

    def __init__(self, pn, block, piece, size, send_ns, snap_delivered, snap_time):
        self.pn = pn
        self.block = block
        self.piece = piece
        self.size = size  # payload bytes
        self.send_ns = send_ns
        self.snap_delivered = snap_delivered
        self.snap_time = snap_time
        self.state = OUT
        self.hole_since = 0


class Path:
    """Configuration, link (§4), random stream (§5), sender state (§7) and counters."""

    def __init__(self, j: int, cfg: dict, mss: int, seed: int):
        self.j = j
        self.mss = mss
        self.fwd_delay_ns = int(cfg["fwd_delay_ns"])
        self.rev_delay_ns = int(cfg["rev_delay_ns"])
        self.queue_bytes = int(cfg["queue_bytes"])
        self.loss_threshold = int(cfg["loss_threshold"])
        self.cc = str(cfg["cc"])
        if self.cc not in ("ideal", "newreno"):
            raise ValueError(f"path {j}: cc must be 'ideal' or 'newreno', got {self.cc!r}")
        self.min_rto_ns = int(cfg["min_rto_ns"])
        self.max_rto_ns = int(cfg["max_rto_ns"])
        self.ring_capacity = int(cfg["ring_capacity"])
        self.bandwidth = Bandwidth(
            [int(x) for x in cfg["bw_start_ns"]],
            [int(x) for x in cfg["bw_rate_bps"]],
            int(cfg["bw_cycle_ns"]),
        )
        self.rng = Xoshiro256ss.for_path(seed, j)

        # §4 link: the packet in service, when it finishes, and the FIFO of waiting ones.
        self.in_service: Packet | None = None
        self.service_end_ns = None
        self.waiting: deque[Packet] = deque()
        self.waiting_bytes = 0

        # §8 lanes of this path (the link lane is in_service/service_end_ns, the RTO
        # lane is rto_deadline).
        self.receive_lane = Lane()
        self.ack_lane = Lane()

        # §7 initial values.
        base_rtt = self.fwd_delay_ns + self.rev_delay_ns
        self.next_pn = 0
        self.records: OrderedDict[int, Packet] = OrderedDict()  # unresolved, oldest first
        self.inflight_bytes = 0
        # §7: an ideal subflow has no window and reports cwnd 0.
        self.cwnd = int(cfg["initial_cwnd_bytes"]) if cfg["cc"] == "newreno" else 0
        self.ssthresh = SSTHRESH_INITIAL
        self.ca_acc = 0
        self.recovery = REC_NONE
        self.recover_pn = -1
        self.srtt = base_rtt
        self.min_rtt = base_rtt
        self.rttvar = base_rtt // 2
        self.rto = clamp(self.srtt + max(G_NS, 4 * self.rttvar), self.min_rto_ns, self.max_rto_ns)
        self.rto_deadline = None  # None: off
        self.ack_count = 0
        self.scan_pn = 0
        self.delivered = 0
        self.delivered_time = 0
        self.delivery_rate_bps = 0
        # (min_rtt and delivery_rate_bps are §7 state that no output reports.)

        # Outputs.
        self.packets_sent = 0
        self.path_bytes_sent = 0
        self.retransmissions = 0
        self.queue_drops = 0
        self.random_losses = 0
        self.declared_lost = 0
        self.rto_count = 0
        self.fast_recoveries = 0
        self.delivered_bytes = 0

    def link_idle(self) -> bool:
        return self.in_service is None and not self.waiting

    def ready(self) -> bool:
        # §7 "ready": fewer than ring_capacity unresolved records, and per cc.
        if len(self.records) >= self.ring_capacity:
            return False
        if self.cc == "ideal":
            return self.link_idle()
        return self.inflight_bytes + self.mss <= self.cwnd


# --------------------------------------------------------------------------- policies


class DecisionView:
    """What a policy sees at one decision point (§9)."""

    def __init__(self, sim: "Simulator", now_ns: int, path: int, decision_index: int):
        self._sim = sim
        self.now_ns = now_ns
        self.path = path
        self.ready = [p.ready() for p in sim.paths]
        self.srtt_ns = [p.srtt for p in sim.paths]
        self.decision_index = decision_index

    @property
    def sendable(self) -> list[int]:
        """Sendable block indices, ascending; recomputed so that cancels show at once."""
        return self._sim.sendable_blocks()

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
        self.paths = [
            Path(j, cfg, self.mss, seed) for j, cfg in enumerate(spec["paths"])
        ]
        P = len(self.paths)
        bl = spec["blocks"]
        self.blocks = [
            Block(b, *row, mss=self.mss, P=P)
            for b, row in enumerate(
                zip(bl["arrival_ns"], bl["size_bytes"], bl["deadline_ns"], bl["priority"],
                    bl["weight"])
            )
        ]
        # §8 arrival lane: block indices in arrival order (rows are already sorted).
        self.arrival_lane: deque[int] = deque(range(len(self.blocks)))

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

    # ----------------------------------------------------------------- §8 events

    def next_event(self):
        """The pending event with the smallest (time, class, path), or None."""
        candidates = []
        for p in self.paths:
            if p.receive_lane.items:
                candidates.append((p.receive_lane.head_time(), EV_RECEIVE, p.j))
            if p.ack_lane.items:
                candidates.append((p.ack_lane.head_time(), EV_ACK, p.j))
            if p.in_service is not None:
                candidates.append((p.service_end_ns, EV_LINK, p.j))
            if p.rto_deadline is not None:
                candidates.append((p.rto_deadline, EV_RTO, p.j))
        if self.arrival_lane:
            # A single lane: its path key never decides a tie.
            candidates.append((self.blocks[self.arrival_lane[0]].arrival_ns, EV_ARRIVAL, 0))
        return min(candidates) if candidates else None

    def process(self, event) -> None:
        t, cls, j = event
        p = self.paths[j]
        if cls == EV_RECEIVE:
            _, pkt = p.receive_lane.pop()
            self.on_receive(p, pkt, t)
        elif cls == EV_ACK:
            _, (positive, pkt) = p.ack_lane.pop()
            if positive:
                self.on_ack(p, pkt, t)
            else:
                # §7.6: a negative ACK declares the packet lost; resolved records are
                # then dropped from the oldest end.
                self.declare_lost(p, pkt)
                self.resolve_records(p)
        elif cls == EV_LINK:
            self.on_service_end(p, t)
        elif cls == EV_ARRIVAL:
            self.blocks[self.arrival_lane.popleft()].arrived = True
        else:
            self.on_rto(p, t)

    def run(self) -> None:
        # §8: process events one at a time in (time, class, path) order; run the
        # decision rounds whenever the next event is later (or there is none); stop
        # when the next event is later than end_ns or none is left.
        while True:
            event = self.next_event()
            if event is None or event[0] > self.end_ns:
                return
            self.process(event)
            t = event[0]
            self.last_event_ns = t
            following = self.next_event()
            if following is None or following[0] > t:
                self.decision_rounds(t)

    # ----------------------------------------------------------------- §4 link

    def link_enqueue(self, p: Path, pkt: Packet, t: int) -> None:
        wire = pkt.size + self.header
        if p.in_service is None:
            self.start_service(p, pkt, t)
        elif p.waiting_bytes + wire <= p.queue_bytes:
            p.waiting.append(pkt)
            p.waiting_bytes += wire
        else:
            p.queue_drops += 1  # drop-tail; nobody is told

    def start_service(self, p: Path, pkt: Packet, t: int) -> None:
        p.in_service = pkt
        p.service_end_ns = p.bandwidth.service_end(t, pkt.size + self.header)

    def on_service_end(self, p: Path, t1: int) -> None:
        pkt = p.in_service
        p.in_service = None
        p.service_end_ns = None
        # §4: one draw per finished packet when loss_threshold > 0.
        lost = p.loss_threshold > 0 and (p.rng.next() >> 11) < p.loss_threshold
        if lost:
            p.random_losses += 1
            if p.cc == "ideal":
                # §7.6: negative ACK when the ACK would have arrived.
                p.ack_lane.push(t1 + p.fwd_delay_ns + p.rev_delay_ns, (False, pkt))
        else:
            p.receive_lane.push(t1 + p.fwd_delay_ns, pkt)
        # §4: the next waiting packet starts service at t1.
        if p.waiting:
            nxt = p.waiting.popleft()
            p.waiting_bytes -= nxt.size + self.header
            self.start_service(p, nxt, t1)

    # ----------------------------------------------------------------- §6 receiver

    def on_receive(self, p: Path, pkt: Packet, t: int) -> None:
        blk = self.blocks[pkt.block]
        p.delivered_bytes += pkt.size
        if not blk.received[pkt.piece]:
            blk.received[pkt.piece] = True
            blk.recv_bytes += pkt.size
            if blk.recv_bytes == blk.size:
                blk.completion_ns = t
                if t <= blk.deadline_ns:
                    self.reward += blk.weight
        else:
            blk.duplicate_bytes += pkt.size
        # The acknowledgement reaches the sender rev_delay_ns later.
        p.ack_lane.push(t + p.rev_delay_ns, (True, pkt))

    # ----------------------------------------------------------------- §7.1 sending

    def send(self, p: Path, b: int, t: int) -> None:
        blk = self.blocks[b]
        j = p.j
        # Step 1: the oldest queued piece still LOST, else the next never-sent piece.
        piece = None
        while blk.retx_queue:
            i = blk.retx_queue.popleft()
            if blk.piece_state[i] == LOST:
                piece = i
                break
        is_retransmission = piece is not None
        if piece is None:
            piece = blk.next_new
            blk.next_new += 1
        size = blk.piece_size(piece)
        if is_retransmission:
            blk.lost_pending_bytes -= size
        # Step 2.
        if blk.first_send_ns < 0:
            blk.first_send_ns = t
        blk.piece_state[piece] = OUT
        blk.bytes_sent[j] += size
        blk.inflight_bytes[j] += size
        path_inflight_before = p.inflight_bytes
        p.inflight_bytes += size
        # Step 3: the record, with its delivery-rate snapshot.
        snap_time = t if path_inflight_before == 0 else p.delivered_time
        pkt = Packet(p.next_pn, b, piece, size, t, p.delivered, snap_time)
        p.records[pkt.pn] = pkt
        p.next_pn += 1
        p.packets_sent += 1
        p.path_bytes_sent += size
        if is_retransmission:
            p.retransmissions += 1
        # Step 4.
        if p.cc == "newreno" and p.rto_deadline is None:
            p.rto_deadline = t + p.rto
        # Step 5.
        self.link_enqueue(p, pkt, t)

    # ----------------------------------------------------------------- §7.2 loss

    def declare_lost(self, p: Path, pkt: Packet) -> None:
        blk = self.blocks[pkt.block]
        pkt.state = LOST
        p.inflight_bytes -= pkt.size
        blk.inflight_bytes[p.j] -= pkt.size
        p.declared_lost += 1
        if blk.piece_state[pkt.piece] == OUT:
            blk.piece_state[pkt.piece] = LOST
            if not blk.cancelled:
                blk.retx_queue.append(pkt.piece)
                blk.lost_pending_bytes += pkt.size

    # ----------------------------------------------------------------- §7.3 ACKs

    def on_ack(self, p: Path, pkt: Packet, t: int) -> None:
        blk = self.blocks[pkt.block]
        s = pkt.size
        newreno = p.cc == "newreno"
        # Step 1.
        newly = pkt.state in (OUT, HOLE)
        inflight_before = p.inflight_bytes
        if newly:
            p.inflight_bytes -= s
            blk.inflight_bytes[p.j] -= s
        # Step 2. (A cancelled block's LOST pieces were never counted, see cancel().)
        if blk.piece_state[pkt.piece] != ACKED:
            if blk.piece_state[pkt.piece] == LOST and not blk.cancelled:
                blk.lost_pending_bytes -= s
            blk.piece_state[pkt.piece] = ACKED
            blk.acked_bytes += s
        # Step 3: RTT sample.
        rtt = t - pkt.send_ns
        p.rttvar = (3 * p.rttvar + abs(p.srtt - rtt)) // 4
        p.srtt = (7 * p.srtt + rtt) // 8
        p.rto = clamp(p.srtt + max(G_NS, 4 * p.rttvar), p.min_rto_ns, p.max_rto_ns)
        p.min_rtt = min(p.min_rtt, rtt)
        # Step 4: delivery rate.
        p.delivered += s
        p.delivered_time = t
        if t > pkt.snap_time:
            sample = (p.delivered - pkt.snap_delivered) * 8 * 10**9 // (t - pkt.snap_time)
            p.delivery_rate_bps = (7 * p.delivery_rate_bps + sample) // 8
        # Step 5: loss detection (newreno) and dropping of resolved records.
        if newreno:
            for q in range(p.scan_pn, pkt.pn):
                rec = p.records.get(q)
                if rec is not None and rec.state == OUT:
                    rec.state = HOLE
                    rec.hole_since = p.ack_count
            pkt.state = ACKED
            p.scan_pn = max(p.scan_pn, pkt.pn + 1)
            p.ack_count += 1
        else:
            pkt.state = ACKED
        self.resolve_records(p)
        # Step 6: window growth (newreno).
        if newreno and newly and p.recovery == REC_NONE and 2 * inflight_before >= p.cwnd:
            if p.cwnd < p.ssthresh:
                p.cwnd += min(s, self.mss)
            else:
                p.ca_acc += s
                if p.ca_acc >= p.cwnd:
                    p.ca_acc -= p.cwnd
                    p.cwnd += self.mss
        # Step 7: recovery exit.
        if p.recovery != REC_NONE and pkt.pn > p.recover_pn:
            p.recovery = REC_NONE
        # Step 8: RTO timer (newreno).
        if newreno:
            if p.inflight_bytes == 0:
                p.rto_deadline = None
            elif newly:
                p.rto_deadline = t + p.rto

    def resolve_records(self, p: Path) -> None:
        """§7.3 step 5: drop resolved records from the oldest end.

        ACKED and LOST records are dropped; with newreno a HOLE that has seen three
        later acknowledgements is declared lost (§7.2), triggers a congestion event
        (§7.4) and is dropped.
        """
        while p.records:
            oldest = next(iter(p.records.values()))
            if oldest.state in (ACKED, LOST):
                p.records.popitem(last=False)
            elif (
                p.cc == "newreno"
                and oldest.state == HOLE
                and p.ack_count - oldest.hole_since >= 3
            ):
                flight = p.inflight_bytes
                self.declare_lost(p, oldest)
                p.records.popitem(last=False)
                self.congestion_event(p, oldest.pn, flight)
            else:
                return

    # ----------------------------------------------------------------- §7.4 / §7.5

    def congestion_event(self, p: Path, pn: int, flight: int) -> None:
        if p.recovery != REC_NONE and pn <= p.recover_pn:
            return  # one reduction per window
        p.ssthresh = max(flight // 2, 2 * self.mss)
        p.cwnd = p.ssthresh
        p.ca_acc = 0
        p.recovery = REC_FAST
        p.recover_pn = p.next_pn - 1
        p.fast_recoveries += 1

    def on_rto(self, p: Path, t: int) -> None:
        flight = p.inflight_bytes
        for rec in list(p.records.values()):
            if rec.state in (OUT, HOLE):
                self.declare_lost(p, rec)
        p.ssthresh = max(flight // 2, 2 * self.mss)
        p.cwnd = self.mss
        p.ca_acc = 0
        p.recovery = REC_RTO
        p.recover_pn = p.next_pn - 1
        p.rto = min(2 * p.rto, p.max_rto_ns)
        p.rto_deadline = None
        p.records.clear()
        p.scan_pn = p.next_pn
        p.rto_count += 1

    # ----------------------------------------------------------------- §9 decisions

    def sendable_blocks(self) -> list[int]:
        return [blk.index for blk in self.blocks if blk.sendable()]

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
        blk.next_new = blk.n_pieces  # drop the never-sent pieces
        blk.retx_queue.clear()
        blk.lost_pending_bytes = 0

    def decide(self, j: int, t: int) -> int:
        view = DecisionView(self, t, j, self.decisions)
        self.decisions += 1
        action = int(self.policy(view))
        if action != WAIT and action not in self.sendable_blocks():
            raise ValueError(
                f"policy chose block {action} at path {j}, t={t}, which is not sendable"
            )
        return action

    def decision_rounds(self, t: int) -> None:
        P = len(self.paths)
        waited = [False] * P
        while True:
            sent_any = False
            for j in range(P):
                if not self.sendable_blocks():
                    return
                p = self.paths[j]
                if waited[j] or not p.ready():
                    continue
                action = self.decide(j, t)
                if action == WAIT:
                    waited[j] = True
                else:
                    self.send(p, action, t)
                    sent_any = True
            if not sent_any:
                return
            waited = [False] * P

    # ----------------------------------------------------------------- §11 outputs

    def outputs(self) -> dict:
        blocks, paths = self.blocks, self.paths
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
            "path_bytes_sent": [p.path_bytes_sent for p in paths],
            "retransmissions": [p.retransmissions for p in paths],
            "queue_drops": [p.queue_drops for p in paths],
            "random_losses": [p.random_losses for p in paths],
            "declared_lost": [p.declared_lost for p in paths],
            "rto_count": [p.rto_count for p in paths],
            "fast_recoveries": [p.fast_recoveries for p in paths],
            "delivered_bytes": [p.delivered_bytes for p in paths],
            "final_srtt_ns": [p.srtt for p in paths],
            "final_cwnd_bytes": [p.cwnd for p in paths],
            "decisions": self.decisions,
            "reward": self.reward,
            "last_event_ns": self.last_event_ns,
        }


def run_reference(spec: dict, policy) -> dict:
    """Simulate one episode of ``docs/model.md`` and return its outputs.

    ``policy`` is ``"minrtt"``, ``"rr"`` or a callable ``policy(view) -> int`` returning
    a sendable block index or :data:`WAIT`; see :class:`DecisionView` for the view.
    """
    sim = Simulator(spec, policy)
    sim.run()
    return sim.outputs()
