"""Cross-validation against ns-3 (``mpsched validate --against ns3``; the ``ns3`` extra).

Each case is one bulk TCP flow over one bottleneck, built twice with the same link rate,
one-way delays, drop-tail queue (in packets), random loss of data packets, MSS, wire
overhead and initial window: once as an mpsched scenario (one path, one block larger than
the run can carry, there from the start, MinRTT), once as an ns-3 program (two nodes joined by a
point-to-point link, a ``BulkSendApplication`` and a ``PacketSink``). Both report the
goodput (payload bytes delivered to the receiver over the run) and the wall time of the
simulation alone (ns-3's import and the episode's build excluded).

The ns-3 side is set up so that the device queue is the bottleneck queue and the TCP
sender is the standard one the core models (docs/model.md sections 4 and 7):

- the point-to-point device's ``DropTailQueue`` holds ``queue_packets`` packets and the
  traffic-control layer's default queue disc is removed;
- random loss is *paired*: an error model on the receiving device drops exactly the data
  packets, counted in the order they leave the bottleneck, that the core's episode with
  the same seed loses (:func:`lost_data_packets`; docs/model.md sections 4-5: one draw per
  packet as it leaves the link). Both simulators then meet the same loss process, and a
  difference in goodput is the transports' rather than two random draws' (with
  independent draws, one 60 s run at 1 % loss and 200 ms carries about 35 losses and its
  goodput varies by 8-10 % from seed to seed on either side). Acknowledgements travel the
  other way and are never dropped, as in the core;
- SACK on, initial window 10, MSS 1448 bytes, an acknowledgement per packet
  (``DelAckCount`` 1, as the core's receiver);
- fast recovery by PRR on both sides (the core's ``fast_recovery: prr``; in ns-3 its
  default ``TcpPrrRecovery`` step for step with the two corrections later ns-3 releases
  made: in ns-3 3.44 ``prr_delivered * ssthresh`` wraps in 32 bits for windows over about
  64 segments, and a duplicate ACK adds a segment to DeliveredData on top of the SACKed
  bytes; :attr:`Ns3Case.ns3_recovery`);
- Cubic in whole segments on both sides (ns-3's ``TcpCubic`` counts as Linux does; the
  core's ``cubic_arithmetic: segments``, docs/model.md 7.8.1);
- minimum RTO 1 s on both sides (RFC 6298 and ns-3's default). ns-3 restarts its timer
  only when the cumulative acknowledgement advances, and in a fast recovery on its first
  partial acknowledgement only (RFC 6582's Impatient variant); the core on every newly
  acknowledged packet. With 200 ms and a 200 ms path ns-3 times out in almost every
  recovery; with 1 s in about a third of the grid's cases (52 of 162), and each case
  beyond the bounds is run again with ns-3 changed (:data:`TIMEOUT_SENSITIVITIES`);
- Cubic without HyStart (the core has no slow-start exit but loss);
- the run lasts ``seconds`` after the handshake in ns-3 (the core starts with the
  handshake's RTT sample already taken, docs/model.md 7): ns-3 stops one base RTT later.
- a packet on the wire is 1448 + 54 bytes: TCP with the timestamp option (32), IPv4 (20)
  and PPP (2), the core's ``header_bytes``.

docs/model.md section 7.14 lists what still differs, each with its measured effect.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..envs.streams import CoreStream

__all__ = ["Ns3Case", "GRID", "QUICK", "WIRE_HEADER_BYTES", "MSS_BYTES", "mpsched_episode", "mpsched_goodput",
           "ns3_goodput", "compare", "TIMEOUT_SENSITIVITIES", "timeout_sensitivities", "within_bounds",
           "format_comparison", "ns3_available", "lost_data_packets", "paired_losses", "NS3_RTO_RESTARTS",
           "write_report", "SharedCase", "SHARED", "SHARED_PHASES", "phase_offsets_ms", "compare_shared",
           "mpsched_shared_scenario", "mpsched_shared_goodputs", "ns3_shared_goodputs", "ns3_shared_back_to_back",
           "StepCase", "STEPS", "compare_steps", "mpsched_step_goodputs", "SAMPLE_S", "samples",
           "mpsched_trajectory", "trajectory_errors"]

MSS_BYTES = 1448
WIRE_HEADER_BYTES = 54  # TCP 20 + timestamp option 12, IPv4 20, PPP 2
CONTROLLERS = {"newreno": "ns3::TcpNewReno", "cubic": "ns3::TcpCubic"}
NS3_RECOVERIES = {
    "prr-sack": "ns-3 3.44's `TcpPrrRecovery` step for step with `prr_delivered * ssthresh` formed in 64 bits (ns-3 "
                "3.44 forms it in 32 bits, which wraps for windows over about 64 segments) and DeliveredData from the "
                "SACKed bytes alone (ns-3 3.44 adds a segment per duplicate ACK), as later ns-3 releases and RFC 6937 "
                "have it",
    "prr": "ns-3 3.44's own `TcpPrrRecovery`",
    "prr-32": "a copy of ns-3 3.44's `TcpPrrRecovery`",
    "prr-64": "ns-3 3.44's `TcpPrrRecovery` step for step with `prr_delivered * ssthresh` formed in 64 bits",
    "classic": "ns-3's `TcpClassicRecovery`",
}
"""ns-3's fast recoveries (:attr:`Ns3Case.ns3_recovery`), each with the words the report
uses for it: ns-3 3.44's PRR with the two corrections later ns-3 releases made (the
comparison's), ns-3's own ``TcpPrrRecovery``, the copy of it as ns-3 3.44 has it (equal
to ``prr``, a check of the copy), the copy with one of the corrections, and
``TcpClassicRecovery``."""
NS3_RTO_RESTARTS = ("first-partial-ack", "every-partial-ack")
"""When ns-3's retransmission timer restarts during a fast recovery
(:attr:`Ns3Case.ns3_rto_restart`): on the recovery's first partial acknowledgement only, as
ns-3 does (RFC 6582 section 3.2 step 5, its Impatient variant), or on every one (section
4's Slow-but-Steady variant; a sensitivity run)."""
SAMPLE_S = 0.01
"""Period at which the smoothed RTT and the congestion window are sampled in both
simulators (from one period after the handshake on)."""
DATA_PACKET_MIN_BYTES = 200
"""A packet at the receiving device at least this long carries data: the bulk sender's
packets are MSS + 54 bytes on the wire, a SYN or an acknowledgement (SACK blocks
included) at most 102."""
TIMED_NS3 = "ns-3 as the wheel builds it: with its logging and asserts compiled in"
"""Which ns-3 the speed ratios are against (docs/model.md 7.14 measures what that costs)."""


def lost_data_packets(core_seed: int, loss: float, count: int, subflow: int = 0) -> list[int]:
    """Which of a subflow's first ``count`` packets off its bottleneck the core loses.

    Parameters
    ----------
    core_seed : int
        The episode's core seed (:attr:`mpsched.envs.episode.Episode.core_seed`).
    loss : float
        The subflow's iid loss probability.
    count : int
        How many packets to decide.
    subflow : int
        The subflow's index (its random stream).

    Returns
    -------
    list of int
        The 0-based ordinals, ascending, of the lost packets: the packets whose draw from the
        subflow's xoshiro256** stream (docs/model.md section 5) is below the loss threshold
        (section 4), one draw per packet as it leaves the link.
    """
    from ..envs.episode import loss_threshold

    threshold = loss_threshold(loss)
    stream = CoreStream(core_seed, subflow)
    lost = []
    for k in range(count):
        result = stream.next()
        if (result >> 11) < threshold:
            lost.append(k)
    return lost


_NS3_LOSS_MODEL = r"""
#include <algorithm>
#include <cstdint>
#include <vector>
#include "ns3/ipv4-header.h"
#include "ns3/ppp-header.h"
#include "ns3/tcp-header.h"
#include "ns3/tcp-socket-base.h"
namespace mpsched_ns3 {
// Drops the data packets (at least min_bytes long) whose ordinal among the data packets
// this device receives is listed in `lost` (ascending); other packets pass uncounted.
// With spare_retransmissions, a listed packet whose TCP segment starts below the highest
// sequence number received so far (a retransmission) passes and is counted in `spared`.
class PairedDataLoss : public ns3::ErrorModel {
  public:
    std::vector<uint32_t> lost;
    uint32_t min_bytes = 0, seen = 0, dropped = 0, spared = 0;
    bool spare_retransmissions = false;
  private:
    size_t next_ = 0;
    bool any_ = false;
    ns3::SequenceNumber32 highest_{0};
    bool Retransmission(ns3::Ptr<const ns3::Packet> p) {
        ns3::Ptr<ns3::Packet> copy = p->Copy();
        ns3::PppHeader ppp;
        copy->RemoveHeader(ppp);
        ns3::Ipv4Header ip;
        copy->RemoveHeader(ip);
        ns3::TcpHeader tcp;
        copy->RemoveHeader(tcp);
        const ns3::SequenceNumber32 start = tcp.GetSequenceNumber();
        const ns3::SequenceNumber32 end = start + copy->GetSize();
        const bool again = any_ && start < highest_;
        if (!any_ || end > highest_) highest_ = end;
        any_ = true;
        return again;
    }
    bool DoCorrupt(ns3::Ptr<ns3::Packet> p) override {
        if (p->GetSize() < min_bytes) return false;
        const bool again = spare_retransmissions && Retransmission(p);
        const uint32_t k = seen++;
        while (next_ < lost.size() && lost[next_] < k) next_++;
        const bool hit = next_ < lost.size() && lost[next_] == k;
        if (hit && again) {
            spared++;
            return false;
        }
        dropped += hit;
        return hit;
    }
    void DoReset() override { next_ = 0; seen = 0; dropped = 0; spared = 0; any_ = false; }
};
// ns-3 3.44's TcpPrrRecovery step for step (RFC 6937: RecoverFS = bytes in flight at
// entry; below ssthresh the conservative bound, one segment more on an ACK of
// retransmitted data), with two of its choices as parameters. WIDE: ns-3 3.44 forms
// prr_delivered * ssthresh and prr_delivered - prr_out in 32 bits; the product wraps once
// it passes 2^32 (bytes squared), from a RecoverFS of about 64 segments on, and PRR then
// sends next to nothing until the pipe has fallen to ssthresh. WIDE forms both in 64
// bits. DUPACK_SEGMENT: ns-3 3.44 adds one segment to DeliveredData per duplicate ACK
// (until prr_delivered reaches RecoverFS) on top of the newly SACKed bytes its caller
// passes; RFC 6937 (section 3) adds it only where SACK is off. Later ns-3 releases do
// both as RFC 6937: WIDE and no DUPACK_SEGMENT. <false, true> is ns-3 3.44's class
// (tests/test_ns3.py).
template <bool WIDE, bool DUPACK_SEGMENT>
class PrrRecovery : public ns3::TcpClassicRecovery {
    static_assert(WIDE || DUPACK_SEGMENT, "the 32-bit copy is ns-3 3.44's class, extra segment included");
  public:
    static const char* Name() {
        if (!WIDE) return "mpsched::PrrRecovery32";
        return DUPACK_SEGMENT ? "mpsched::PrrRecovery64" : "mpsched::PrrRecoverySack";
    }
    static ns3::TypeId GetTypeId() {
        static ns3::TypeId tid =
            ns3::TypeId(Name()).SetParent<ns3::TcpClassicRecovery>().template AddConstructor<PrrRecovery>();
        return tid;
    }
    std::string GetName() const override { return Name(); }
    void EnterRecovery(ns3::Ptr<ns3::TcpSocketState> tcb, uint32_t, uint32_t, uint32_t delivered) override {
        out_ = 0;
        delivered_ = 0;
        recover_fs_ = std::max<uint32_t>(1, tcb->m_bytesInFlight);
        DoRecovery(tcb, delivered, true);
    }
    void DoRecovery(ns3::Ptr<ns3::TcpSocketState> tcb, uint32_t delivered, bool dupack) override {
        const uint32_t mss = tcb->m_segmentSize, ssthresh = tcb->m_ssThresh, inflight = tcb->m_bytesInFlight;
        if (DUPACK_SEGMENT && dupack && delivered_ < recover_fs_) delivered += mss;
        if (delivered == 0) return;
        delivered_ += delivered;
        int64_t send;
        if (inflight > ssthresh) {
            const uint64_t product = WIDE ? uint64_t(delivered_) * ssthresh : uint64_t(uint32_t(delivered_ * ssthresh));
            send = int64_t((product + recover_fs_ - 1) / recover_fs_) - int64_t(out_);
        } else {
            int64_t limit = WIDE ? std::max<int64_t>(int64_t(delivered_) - int64_t(out_), delivered)
                                 : int64_t(int32_t(std::max<uint32_t>(delivered_ - out_, delivered)));
            if (tcb->m_isRetransDataAcked) limit += mss;
            send = std::min<int64_t>(limit, int64_t(ssthresh) - int64_t(inflight));
        }
        send = std::max<int64_t>(send, out_ > 0 ? 0 : mss);  // the fast retransmit on entry
        tcb->m_cWnd = uint32_t(int64_t(inflight) + send);
        tcb->m_cWndInfl = tcb->m_cWnd;
    }
    void ExitRecovery(ns3::Ptr<ns3::TcpSocketState> tcb) override { tcb->m_cWndInfl = tcb->m_cWnd; }
    void UpdateBytesSent(uint32_t sent) override { out_ += sent; }
    ns3::Ptr<ns3::TcpRecoveryOps> Fork() override { return ns3::CopyObject<PrrRecovery>(this); }
  private:
    uint32_t delivered_ = 0, out_ = 0, recover_fs_ = 1;
};
inline ns3::TypeId PrrRecovery32Id() { return PrrRecovery<false, true>::GetTypeId(); }
inline ns3::TypeId PrrRecovery64Id() { return PrrRecovery<true, true>::GetTypeId(); }
inline ns3::TypeId PrrRecoverySackId() { return PrrRecovery<true, false>::GetTypeId(); }
// Sets a point-to-point device's rate at `at_s` seconds of simulated time.
void ScheduleDataRate(ns3::Ptr<ns3::NetDevice> device, double at_s, uint64_t bps) {
    ns3::Ptr<ns3::PointToPointNetDevice> p2p = ns3::DynamicCast<ns3::PointToPointNetDevice>(device);
    ns3::Simulator::Schedule(ns3::Seconds(at_s), &ns3::PointToPointNetDevice::SetDataRate, p2p, ns3::DataRate(bps));
}
// Reads TcpSocketBase's protected m_isFirstPartialAck through a member pointer formed in
// a derived class.
struct FirstPartialAck : ns3::TcpSocketBase {
    static bool ns3::TcpSocketBase::*Member() { return &FirstPartialAck::m_isFirstPartialAck; }
};
// Samples a bulk sender's smoothed RTT and congestion window every `period` from `first`
// (its socket's "RTT" and "CongestionWindow" trace sources hold the latest values), and
// counts its entries into fast recovery and into loss recovery (a retransmission timeout)
// from its "CongState" trace source.
// With every_partial_ack_restarts, the socket's "first partial ACK" flag is set again as
// each segment arrives (its "Rx" trace fires before the segment is processed): every
// partial ACK then restarts the retransmission timer (RFC 6582 section 4's Slow-but-Steady
// variant) where ns-3 restarts it on the first partial ACK of a recovery only (the
// Impatient variant, RFC 6582 section 3.2 step 5).
class TcpSampler {
  public:
    std::vector<int64_t> srtt_ns;
    std::vector<uint32_t> cwnd_bytes;
    uint32_t fast_recoveries = 0, timeouts = 0;
    bool every_partial_ack_restarts = false;
    void Start(ns3::Ptr<ns3::Application> app, double first_s, double period_s) {
        app_ = app;
        period_ = ns3::Seconds(period_s);
        ns3::Simulator::Schedule(ns3::NanoSeconds(1), &TcpSampler::Attach, this);
        ns3::Simulator::Schedule(ns3::Seconds(first_s), &TcpSampler::Sample, this);
    }
  private:
    ns3::Ptr<ns3::Application> app_;
    ns3::Time period_;
    int64_t srtt_ = 0;
    uint32_t cwnd_ = 0;
    void Attach() {
        ns3::Ptr<ns3::Socket> socket = ns3::DynamicCast<ns3::BulkSendApplication>(app_)->GetSocket();
        socket->TraceConnectWithoutContext("RTT", ns3::MakeCallback(&TcpSampler::OnRtt, this));
        socket->TraceConnectWithoutContext("CongestionWindow", ns3::MakeCallback(&TcpSampler::OnCwnd, this));
        socket->TraceConnectWithoutContext("CongState", ns3::MakeCallback(&TcpSampler::OnCongState, this));
        if (every_partial_ack_restarts) {
            socket_ = ns3::DynamicCast<ns3::TcpSocketBase>(socket);
            socket->TraceConnectWithoutContext("Rx", ns3::MakeCallback(&TcpSampler::OnRx, this));
        }
    }
    ns3::Ptr<ns3::TcpSocketBase> socket_;
    void OnRx(ns3::Ptr<const ns3::Packet>, const ns3::TcpHeader&, ns3::Ptr<const ns3::TcpSocketBase>) {
        ns3::PeekPointer(socket_)->*FirstPartialAck::Member() = true;
    }
    void OnCongState(ns3::TcpSocketState::TcpCongState_t, ns3::TcpSocketState::TcpCongState_t now) {
        fast_recoveries += now == ns3::TcpSocketState::CA_RECOVERY;
        timeouts += now == ns3::TcpSocketState::CA_LOSS;
    }
    void OnRtt(ns3::Time, ns3::Time now) { srtt_ = now.GetNanoSeconds(); }
    void OnCwnd(uint32_t, uint32_t now) { cwnd_ = now; }
    void Sample() {
        srtt_ns.push_back(srtt_);
        cwnd_bytes.push_back(cwnd_);
        ns3::Simulator::Schedule(period_, &TcpSampler::Sample, this);
    }
};
// Counts, per sender of a shared case (source 10.1.1.x or 10.1.2.x), the data packets the
// router (node 2) forwards, those that follow the same sender's previous one within
// `back_to_back_ns` (sent back to back), and which of them the bottleneck refuses. A packet
// passes the router's "Tx" trace and then either its device queue's "Enqueue" or, the
// queue being full, a drop in the traffic-control layer, synchronously.
class BackToBackProbe {
  public:
    uint64_t packets[2] = {0, 0}, back_to_back[2] = {0, 0}, drops[2] = {0, 0}, back_to_back_drops[2] = {0, 0};
    int64_t back_to_back_ns = 20000;
    void Schedule() { ns3::Simulator::Schedule(ns3::NanoSeconds(0), &BackToBackProbe::Connect, this); }
    void Settle() {
        if (pending_ >= 0) {
            drops[pending_]++;
            back_to_back_drops[pending_] += pending_back_to_back_;
            pending_ = -1;
        }
    }
  private:
    int64_t last_[2] = {INT64_MIN / 2, INT64_MIN / 2};
    int pending_ = -1;
    bool pending_back_to_back_ = false;
    void Connect() {
        ns3::Config::ConnectWithoutContext("/NodeList/2/$ns3::Ipv4L3Protocol/Tx",
                                           ns3::MakeCallback(&BackToBackProbe::OnTx, this));
        ns3::Config::ConnectWithoutContext("/NodeList/2/DeviceList/*/$ns3::PointToPointNetDevice/TxQueue/Enqueue",
                                           ns3::MakeCallback(&BackToBackProbe::OnEnqueue, this));
    }
    void OnTx(ns3::Ptr<const ns3::Packet> p, ns3::Ptr<ns3::Ipv4>, uint32_t) {
        Settle();
        ns3::Ipv4Header ip;
        p->PeekHeader(ip);
        const int k = (int)((ip.GetSource().Get() >> 8) & 0xff) - 1;
        if ((k != 0 && k != 1) || ip.GetPayloadSize() <= 100) return;  // the handshake's segments
        const int64_t now = ns3::Simulator::Now().GetNanoSeconds();
        const bool b = now - last_[k] <= back_to_back_ns;
        last_[k] = now;
        packets[k]++;
        back_to_back[k] += b;
        pending_ = k;
        pending_back_to_back_ = b;
    }
    void OnEnqueue(ns3::Ptr<const ns3::Packet>) { pending_ = -1; }
};
ns3::Ptr<PairedDataLoss> MakePairedDataLoss(const std::vector<uint32_t>& lost, uint32_t min_bytes,
                                            bool spare_retransmissions) {
    ns3::Ptr<PairedDataLoss> m = ns3::CreateObject<PairedDataLoss>();
    m->lost = lost;
    m->min_bytes = min_bytes;
    m->spare_retransmissions = spare_retransmissions;
    return m;
}
}
"""


@dataclass(frozen=True)
class Ns3Case:
    """One bulk flow over one bottleneck.

    Attributes
    ----------
    cc : {"newreno", "cubic"}
    rate_mbps : float
        Bottleneck rate.
    rtt_ms : float
        Round-trip propagation delay (half each way).
    loss : float
        Probability that a data packet is lost.
    queue_bdp : float
        Drop-tail queue as a multiple of the bandwidth-delay product (at least 4 packets).
    seconds : float
        Length of the run.
    min_rto_ms : float
        Lower bound of the retransmission timeout, both sides.
    fast_recovery : {"prr", "immediate"}
        mpsched's window reduction in fast recovery (ns-3 always uses PRR).
    cubic_arithmetic : {"segments", "rfc9438"}
        mpsched's Cubic arithmetic (docs/model.md 7.8, 7.8.1); ns-3's TcpCubic counts in
        whole segments, as Linux does.
    ns3_recovery : {"prr-sack", "prr", "prr-32", "prr-64", "classic"}
        ns-3's fast recovery (:data:`NS3_RECOVERIES`; docs/model.md 7.14). ``prr-sack``
        (the default) is ns-3 3.44's ``TcpPrrRecovery`` step for step with the two
        corrections later ns-3 releases made, which make it RFC 6937's PRR as this model
        has it: ``prr_delivered * ssthresh`` formed in 64 bits (in 32 bits it wraps from a
        RecoverFS of about 64 segments on and silences PRR until the pipe falls to
        ssthresh), and DeliveredData from the SACKed bytes alone (ns-3 3.44 adds a segment
        per duplicate ACK). ``prr`` is ns-3's own class, ``prr-32`` the copy as ns-3 3.44
        has it (the same figures as ``prr``), ``prr-64`` the copy with the first
        correction only, ``classic`` ``TcpClassicRecovery``; all but the default are for
        sensitivity runs.
    ns3_rto_restart : {"first-partial-ack", "every-partial-ack"}
        When ns-3's retransmission timer restarts in a fast recovery
        (:data:`NS3_RTO_RESTARTS`): ns-3's own rule (the default) restarts it on the
        first partial acknowledgement only, so a recovery that lasts longer than one
        timeout after it ends in a timeout; ``every-partial-ack`` is a sensitivity run.
        This model restarts its timer on every newly acknowledged packet (docs/model.md
        7.3, step 8).
    ns3_spare_retransmissions : bool
        A sensitivity run: ns-3's paired loss passes a listed data packet that retransmits
        earlier data (its segment starts below the highest sequence number received). ns-3
        3.44 has no RACK and finds a lost retransmission only by its retransmission
        timer; this model's retransmissions are new packets that the 3-packet rule
        declares lost like any other (docs/model.md 7.14). mpsched's run is unchanged.
    """

    cc: str
    rate_mbps: float
    rtt_ms: float
    loss: float
    queue_bdp: float
    seconds: float = 30.0
    min_rto_ms: float = 1000.0
    fast_recovery: str = "prr"
    cubic_arithmetic: str = "segments"
    ns3_recovery: str = "prr-sack"
    ns3_rto_restart: str = "first-partial-ack"
    ns3_spare_retransmissions: bool = False

    @property
    def queue_packets(self) -> int:
        bdp = self.rate_mbps * 1e6 / 8 * self.rtt_ms / 1e3 / (MSS_BYTES + WIRE_HEADER_BYTES)
        return max(4, int(round(self.queue_bdp * bdp)))

    @property
    def label(self) -> str:
        return (f"{self.cc} {self.rate_mbps:g} Mbit/s {self.rtt_ms:g} ms loss {100 * self.loss:g} % "
                f"queue {self.queue_bdp:g} BDP")


def _grid() -> Iterator[Ns3Case]:
    for cc in CONTROLLERS:
        for rate in (2.0, 10.0, 50.0):
            for rtt in (20.0, 80.0, 200.0):
                for loss in (0.0, 0.001, 0.01):
                    for queue in (0.5, 1.0, 2.0):
                        yield Ns3Case(cc, rate, rtt, loss, queue)


GRID: tuple[Ns3Case, ...] = tuple(_grid())
"""NewReno and Cubic x {2, 10, 50} Mbit/s x RTT {20, 80, 200} ms x loss {0, 0.1, 1} % x
queue {0.5, 1, 2} BDP: 162 cases."""

QUICK: tuple[Ns3Case, ...] = tuple(
    Ns3Case(cc, rate, rtt, loss, 1.0, 20.0)
    for cc in CONTROLLERS for rate, rtt in ((10.0, 40.0), (2.0, 200.0)) for loss in (0.0, 0.001, 0.01))
"""Twelve cases of 20 s: both controllers, two links, the three loss rates, a 1-BDP queue."""


def _scenario_name(prefix: str, label: str) -> str:
    """A scenario name from a case's label: words joined by dashes, no symbols."""
    for symbol, word in (("/", ""), (",", ""), (">", ""), ("%", "pct"), ("+", "and"), (" ", "-")):
        label = label.replace(symbol, word)
    return f"{prefix}-{label}"


def mpsched_scenario(case: Ns3Case) -> dict[str, Any]:
    """The case as an mpsched scenario: one path and one block more than the link carries
    in the run, there at the start (a bulk workload's first chunk would arrive one chunk
    time after it)."""
    return {
        "name": _scenario_name("ns3", case.label),
        "duration_s": case.seconds, "horizon_s": case.seconds,
        "transport": {"mss_bytes": MSS_BYTES, "header_bytes": WIRE_HEADER_BYTES, "initial_cwnd_packets": 10,
                      "min_rto_ms": case.min_rto_ms, "fast_recovery": case.fast_recovery,
                      "cubic_arithmetic": case.cubic_arithmetic},
        "paths": [{"name": "bottleneck", "bandwidth": case.rate_mbps, "rtt_ms": case.rtt_ms,
                   "queue_bytes": case.queue_packets * (MSS_BYTES + WIRE_HEADER_BYTES), "loss": case.loss,
                   "cc": case.cc}],
        "workload": {"type": "explicit", "blocks": [{"arrival_ms": 0.0, "size_bytes": bulk_bytes(case),
                                                     "deadline_ms": 1e3 * case.seconds}]},
    }


def bulk_bytes(case: Ns3Case) -> int:
    """The size of the one block a case sends, there from the start like the bulk sender's
    data: twice what the link carries in the run, at most the largest block."""
    return min(2**31 - 1, int(2 * case.rate_mbps * 1e6 / 8 * case.seconds))


def mpsched_episode(case: Ns3Case, seed: int = 1) -> Any:
    """The case's mpsched episode for ``seed`` (:func:`mpsched.envs.episode.build_episode`)."""
    from ..envs import scenarios
    from ..envs.episode import build_episode

    return build_episode(scenarios.resolve(mpsched_scenario(case)), seed)


def mpsched_goodput(case: Ns3Case, seed: int = 1) -> dict[str, float]:
    """Goodput [bit/s], retransmissions, random losses, fast recoveries and retransmission
    timeouts of the case in mpsched, and the core's wall time."""
    sim = mpsched_episode(case, seed).make_sim()
    begin = time.perf_counter()
    sim.run("minrtt", ())
    wall = time.perf_counter() - begin
    delivered = float(np.asarray(sim.view("delivered_bytes")).sum())
    counts = {key: float(np.asarray(sim.view(view)).sum())
              for key, view in (("retransmissions", "retransmissions"), ("random_losses", "random_losses"),
                                ("fast_recoveries", "fast_recoveries"), ("timeouts", "rto_count"))}
    return {"goodput_bps": delivered * 8 / case.seconds, **counts, "wall_s": wall}


def samples(case: Ns3Case) -> int:
    """How many samples of the run both simulators take: one every :data:`SAMPLE_S`,
    the last one period before the run ends."""
    return max(0, int(round(case.seconds / SAMPLE_S)) - 1)


def mpsched_trajectory(case: Ns3Case, seed: int = 1) -> dict[str, np.ndarray]:
    """The case's smoothed RTT [ns] and congestion window [bytes] in mpsched, sampled
    every :data:`SAMPLE_S`: the values at its last decision point at or before each sample
    time. The core stops only at decision points (``Sim.run`` with ``until_ns``; the same
    run as a whole one, docs/model.md section 8), one per acknowledgement that opens the
    window in a bulk transfer; a change between two of them (an acknowledgement that
    leaves the window full) shows at the next."""
    sim = mpsched_episode(case, seed).make_sim()
    srtt_view, cwnd_view = np.asarray(sim.view("srtt_ns")), np.asarray(sim.view("cwnd_bytes"))
    times, srtt, cwnd = [0], [int(srtt_view[0])], [int(cwnd_view[0])]
    while not sim.done:
        sim.run("minrtt", (), sim.now_ns + 1)
        times.append(sim.now_ns)
        srtt.append(int(srtt_view[0]))
        cwnd.append(int(cwnd_view[0]))
    at = np.arange(1, samples(case) + 1, dtype=np.int64) * int(round(SAMPLE_S * 1e9))
    last = np.searchsorted(np.array(times, dtype=np.int64), at, side="right") - 1
    return {"srtt_ns": np.array(srtt, dtype=np.int64)[last], "cwnd_bytes": np.array(cwnd, dtype=np.int64)[last]}


def trajectory_errors(ours: dict[str, np.ndarray], theirs: dict[str, np.ndarray]) -> dict[str, float]:
    """The sampled trajectories compared: each side's mean and 95th percentile of the
    smoothed RTT [ms], the relative error of mpsched's mean, the congestion window's mean
    absolute difference sample by sample relative to ns-3's mean window (``cwnd_error``:
    sawtooths out of phase count), and the relative error of its mean
    (``mean_cwnd_error``)."""
    n = min(len(ours["srtt_ns"]), len(theirs["srtt_ns"]))
    if n == 0:
        return {}
    rtt_ours, rtt_theirs = ours["srtt_ns"][:n] / 1e6, theirs["srtt_ns"][:n] / 1e6
    cwnd_ours = ours["cwnd_bytes"][:n].astype(np.float64)
    cwnd_theirs = theirs["cwnd_bytes"][:n].astype(np.float64)
    return {"mpsched_mean_rtt_ms": float(rtt_ours.mean()), "ns3_mean_rtt_ms": float(rtt_theirs.mean()),
            "mean_rtt_error": float(rtt_ours.mean() / rtt_theirs.mean() - 1.0),
            "mpsched_p95_rtt_ms": float(np.percentile(rtt_ours, 95)),
            "ns3_p95_rtt_ms": float(np.percentile(rtt_theirs, 95)),
            "cwnd_error": float(np.abs(cwnd_ours - cwnd_theirs).mean() / cwnd_theirs.mean()),
            "mean_cwnd_error": float(cwnd_ours.mean() / cwnd_theirs.mean() - 1.0)}


def paired_losses(case: Ns3Case, seed: int = 1) -> list[int]:
    """The ordinals of the data packets the case's mpsched episode with ``seed`` loses, as
    many as the link can carry in the run (:func:`lost_data_packets`)."""
    if case.loss <= 0:
        return []
    core_seed = mpsched_episode(case, seed).core_seed
    capacity = int(case.rate_mbps * 1e6 / 8 * case.seconds / (MSS_BYTES + WIRE_HEADER_BYTES)) + 1
    return lost_data_packets(core_seed, case.loss, capacity)


def ns3_available() -> bool:
    """Whether the ``ns3`` extra (``pip install ns3``) is installed."""
    import importlib.util

    return importlib.util.find_spec("ns") is not None


def _ns3_with_tcp_defaults(cc: str, min_rto_ms: float, recovery: str = "prr-sack") -> Any:
    """ns-3's bindings (the ``ns`` namespace) with the TCP defaults of the module docstring
    set for sockets of controller ``cc``, fast recovery ``recovery`` (:class:`Ns3Case`)."""
    if recovery not in NS3_RECOVERIES:
        raise ValueError(f"ns3_recovery: got {recovery!r}; expected one of {', '.join(NS3_RECOVERIES)}")
    from ns import ns  # the ns3 extra; a missing module is the caller's to report

    if not hasattr(ns.cppyy.gbl, "mpsched_ns3"):
        ns.cppyy.cppdef(_NS3_LOSS_MODEL)
    copies = ns.cppyy.gbl.mpsched_ns3
    recoveries = {"prr": ns.TcpPrrRecovery.GetTypeId, "classic": ns.TcpClassicRecovery.GetTypeId,
                  "prr-32": copies.PrrRecovery32Id, "prr-64": copies.PrrRecovery64Id,
                  "prr-sack": copies.PrrRecoverySackId}
    defaults = {
        "ns3::TcpL4Protocol::SocketType": ns.StringValue(CONTROLLERS[cc]),
        "ns3::TcpSocket::SegmentSize": ns.UintegerValue(MSS_BYTES),
        "ns3::TcpSocket::InitialCwnd": ns.UintegerValue(10),
        "ns3::TcpSocket::DelAckCount": ns.UintegerValue(1),
        "ns3::TcpSocket::SndBufSize": ns.UintegerValue(1 << 27),
        "ns3::TcpSocket::RcvBufSize": ns.UintegerValue(1 << 27),
        "ns3::TcpSocketBase::Sack": ns.BooleanValue(True),
        "ns3::TcpCubic::HyStart": ns.BooleanValue(False),
        "ns3::TcpSocketBase::MinRto": ns.TimeValue(ns.NanoSeconds(int(round(min_rto_ms * 1e6)))),
        "ns3::TcpL4Protocol::RecoveryType": ns.TypeIdValue(recoveries[recovery]()),
    }
    for name, value in defaults.items():
        ns.Config.SetDefault(name, value)
    return ns


def ns3_goodput(case: Ns3Case, seed: int = 1, step: tuple[float, float] | None = None) -> dict[str, Any]:
    """Goodput [bit/s] of the case in ns-3 (the module docstring's setup, losing the data
    packets that mpsched's episode with ``seed`` loses), the data packets it received and
    dropped (and, with ``ns3_spare_retransmissions``, passed: ``spared_losses``), the
    sender's entries into fast recovery and into loss recovery (``timeouts``: consecutive
    timeouts with no acknowledgement between them count once), the wall time of
    ``Simulator.Run`` alone, and the sender's smoothed RTT [ns] and congestion window
    [bytes] sampled every :data:`SAMPLE_S` from one period after the handshake
    (``srtt_ns``, ``cwnd_bytes``). The first call imports ns-3 (about 15 s: its bindings
    compile).

    With ``step = (step_s, rate_mbps)`` the link's rate changes to ``rate_mbps`` at
    ``step_s`` of the run (after the handshake), and the result also has the goodput
    before (``goodput_before_bps``) and after it (``goodput_after_bps``)."""
    if case.ns3_rto_restart not in NS3_RTO_RESTARTS:
        raise ValueError(f"ns3_rto_restart: got {case.ns3_rto_restart!r}; expected one of "
                         f"{', '.join(NS3_RTO_RESTARTS)}")
    ns = _ns3_with_tcp_defaults(case.cc, case.min_rto_ms, case.ns3_recovery)
    lost = paired_losses(case, seed)
    nodes = ns.NodeContainer()
    nodes.Create(2)
    link = ns.PointToPointHelper()
    link.SetDeviceAttribute("DataRate", ns.StringValue(f"{int(round(case.rate_mbps * 1e6))}bps"))
    link.SetChannelAttribute("Delay", ns.TimeValue(ns.NanoSeconds(int(round(case.rtt_ms * 5e5)))))
    link.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", ns.QueueSizeValue(ns.QueueSize(f"{case.queue_packets}p")))
    devices = link.Install(nodes)
    ns.InternetStackHelper().Install(nodes)
    addresses = ns.Ipv4AddressHelper()
    addresses.SetBase(ns.Ipv4Address("10.1.1.0"), ns.Ipv4Mask("255.255.255.0"))
    interfaces = addresses.Assign(devices)
    ns.TrafficControlHelper().Uninstall(devices)  # the device queue is the bottleneck queue
    ordinals = ns.cppyy.gbl.std.vector["uint32_t"](lost)
    errors = ns.cppyy.gbl.mpsched_ns3.MakePairedDataLoss(ordinals, DATA_PACKET_MIN_BYTES,
                                                         case.ns3_spare_retransmissions)
    devices.Get(1).SetAttribute("ReceiveErrorModel", ns.PointerValue(errors))
    port = 9
    any_address = ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port).ConvertTo()
    sink_apps = ns.PacketSinkHelper("ns3::TcpSocketFactory", any_address).Install(nodes.Get(1))
    sender = ns.BulkSendHelper("ns3::TcpSocketFactory",
                               ns.InetSocketAddress(interfaces.GetAddress(1), port).ConvertTo())
    sender.SetAttribute("MaxBytes", ns.UintegerValue(0))
    sender_apps = sender.Install(nodes.Get(0))
    for apps in (sink_apps, sender_apps):
        apps.Start(ns.Seconds(0))
    sink = ns.DynamicCast[ns.PacketSink](sink_apps.Get(0))
    handshake_s = case.rtt_ms / 1e3
    sampler = ns.cppyy.gbl.mpsched_ns3.TcpSampler()
    sampler.every_partial_ack_restarts = case.ns3_rto_restart == "every-partial-ack"
    sampler.Start(sender_apps.Get(0), handshake_s + SAMPLE_S, SAMPLE_S)
    stops = [case.seconds]
    if step is not None:
        ns.cppyy.gbl.mpsched_ns3.ScheduleDataRate(devices.Get(0), step[0] + handshake_s, int(round(step[1] * 1e6)))
        stops.insert(0, step[0])
    received, wall = [], 0.0
    for stop_s in stops:
        ns.Simulator.Stop(ns.NanoSeconds(int(round((stop_s + handshake_s) * 1e9))) - ns.Simulator.Now())
        begin = time.perf_counter()
        ns.Simulator.Run()
        wall += time.perf_counter() - begin
        received.append(int(sink.GetTotalRx()))
    data_packets, dropped = int(errors.seen), int(errors.dropped)
    ns.Simulator.Destroy()
    n = samples(case)
    result = {"goodput_bps": received[-1] * 8 / case.seconds, "data_packets": data_packets, "random_losses": dropped,
              "spared_losses": int(errors.spared), "expected_losses": sum(1 for k in lost if k < data_packets),
              "fast_recoveries": int(sampler.fast_recoveries), "timeouts": int(sampler.timeouts), "wall_s": wall,
              "srtt_ns": np.array(list(sampler.srtt_ns), dtype=np.int64)[:n],
              "cwnd_bytes": np.array(list(sampler.cwnd_bytes), dtype=np.int64)[:n]}
    if step is not None:
        result["goodput_before_bps"] = received[0] * 8 / step[0]
        result["goodput_after_bps"] = (received[1] - received[0]) * 8 / (case.seconds - step[0])
    return result


def compare(cases: tuple[Ns3Case, ...] = QUICK, seed: int = 1,
            progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Every case in both simulators: per case the goodputs, the error of mpsched's against
    ns-3's, each side's fast recoveries and retransmission timeouts, and the speed ratio;
    overall the median and worst absolute goodput error and the median speed ratio.

    Each case beyond :data:`WORST_GOODPUT_ERROR` in which ns-3 timed out is run again in
    ns-3 with each of its :data:`TIMEOUT_SENSITIVITIES` (:func:`timeout_sensitivities`),
    and its row gets what those runs measured."""
    rows = []
    for case in cases:
        if progress:
            progress(case.label)
        ours, theirs = mpsched_goodput(case, seed), ns3_goodput(case, seed)
        sampled = trajectory_errors(mpsched_trajectory(case, seed), theirs)
        rows.append({**asdict(case), "queue_packets": case.queue_packets, "label": case.label, **sampled,
                     "mpsched_goodput_bps": ours["goodput_bps"], "ns3_goodput_bps": theirs["goodput_bps"],
                     "goodput_error": ours["goodput_bps"] / theirs["goodput_bps"] - 1.0
                     if theirs["goodput_bps"] > 0 else math.nan,
                     "mpsched_retransmissions": ours["retransmissions"],
                     "mpsched_random_losses": ours["random_losses"], "ns3_random_losses": theirs["random_losses"],
                     "mpsched_fast_recoveries": ours["fast_recoveries"],
                     "ns3_fast_recoveries": theirs["fast_recoveries"],
                     "mpsched_timeouts": ours["timeouts"], "ns3_timeouts": theirs["timeouts"],
                     "mpsched_wall_s": ours["wall_s"], "ns3_wall_s": theirs["wall_s"],
                     "speed_ratio": theirs["wall_s"] / ours["wall_s"] if ours["wall_s"] > 0 else math.nan})
    for case, row in zip(cases, rows, strict=True):
        if abs(row["goodput_error"]) > WORST_GOODPUT_ERROR and row["ns3_timeouts"] > 0:
            if progress:
                progress(f"{case.label}: ns-3's timeouts")
            row.update(timeout_sensitivities(case, row["mpsched_goodput_bps"], seed))
    errors = np.abs([r["goodput_error"] for r in rows])
    rtt_errors = np.abs([r.get("mean_rtt_error", math.nan) for r in rows])
    return {"cases": rows, "median_abs_goodput_error": float(np.nanmedian(errors)),
            "worst_abs_goodput_error": float(np.nanmax(errors)),
            "median_abs_mean_rtt_error": float(np.nanmedian(rtt_errors)),
            "worst_abs_mean_rtt_error": float(np.nanmax(rtt_errors)),
            "median_cwnd_error": float(np.nanmedian([r.get("cwnd_error", math.nan) for r in rows])),
            "median_speed_ratio": float(np.nanmedian([r["speed_ratio"] for r in rows]))}


TIMEOUT_SENSITIVITIES: dict[str, dict[str, Any]] = {
    "every_partial_ack": {"ns3_rto_restart": "every-partial-ack"},
    "spared": {"ns3_spare_retransmissions": True},
}
"""The two changes to ns-3 that :func:`timeout_sensitivities` runs a case with, each
removing one way ns-3 3.44 times out where this model does not (docs/model.md 7.14):
its retransmission timer restarted on every partial acknowledgement of a recovery rather
than the first only (:attr:`Ns3Case.ns3_rto_restart`), and its random loss sparing
retransmissions, which it finds lost only by the timer (no RACK;
:attr:`Ns3Case.ns3_spare_retransmissions`; run for cases with random loss)."""


def timeout_sensitivities(case: Ns3Case, mpsched_goodput_bps: float, seed: int = 1) -> dict[str, float]:
    """The case in ns-3 once more with each of :data:`TIMEOUT_SENSITIVITIES`: for each
    change ``NAME``, ns-3's goodput (``ns3_NAME_goodput_bps``), mpsched's error against it
    (``NAME_goodput_error``) and ns-3's timeouts (``ns3_NAME_timeouts``); with random loss
    also how many listed losses ns-3 passed (``ns3_spared_losses``)."""
    out: dict[str, float] = {}
    for name, change in TIMEOUT_SENSITIVITIES.items():
        if name == "spared" and case.loss <= 0:
            continue
        theirs = ns3_goodput(replace(case, **change), seed)
        out[f"ns3_{name}_goodput_bps"] = theirs["goodput_bps"]
        out[f"{name}_goodput_error"] = (mpsched_goodput_bps / theirs["goodput_bps"] - 1.0
                                        if theirs["goodput_bps"] > 0 else math.nan)
        out[f"ns3_{name}_timeouts"] = theirs["timeouts"]
        if name == "spared":
            out["ns3_spared_losses"] = theirs["spared_losses"]
    return out


MEDIAN_GOODPUT_ERROR = 0.03
WORST_GOODPUT_ERROR = 0.10
MEDIAN_RTT_ERROR = 0.05
SHARE_ERROR = 0.10


@dataclass(frozen=True)
class StepCase:
    """One bulk flow over a bottleneck whose rate steps once, no random loss.

    Attributes
    ----------
    flow : Ns3Case
        The flow and its link before the step (the queue in BDPs of that rate).
    rate_after_mbps : float
        The rate from ``step_s`` on (ns-3: the device's ``DataRate`` changes).
    step_s : float
        When the rate changes, in seconds of the run.
    """

    flow: Ns3Case
    rate_after_mbps: float
    step_s: float

    @property
    def label(self) -> str:
        f = self.flow
        return (f"{f.cc} {f.rate_mbps:g} -> {self.rate_after_mbps:g} Mbit/s at {self.step_s:g} s, "
                f"{f.rtt_ms:g} ms, queue {f.queue_bdp:g} BDP")


STEPS: tuple[StepCase, ...] = tuple(
    StepCase(Ns3Case(cc, 10.0, 80.0, 0.0, 1.0, seconds=40.0), after, 20.0)
    for cc in CONTROLLERS for after in (2.0, 20.0))
"""NewReno and Cubic on 10 Mbit/s at 80 ms, stepping to 2 and to 20 Mbit/s after 20 s of 40."""


def mpsched_step_goodputs(case: StepCase) -> dict[str, float]:
    """Goodput [bit/s] before and after the step in mpsched, and the core's wall time."""
    from ..envs import scenarios
    from ..envs.episode import build_episode

    flow = case.flow
    sc = mpsched_scenario(flow)
    sc["name"] = _scenario_name("ns3-step", case.label)
    sc["paths"][0]["bandwidth"] = {"type": "piecewise", "mode": "hold",
                                   "points": [[0.0, flow.rate_mbps], [case.step_s, case.rate_after_mbps]]}
    sc["workload"]["blocks"][0]["size_bytes"] = bulk_bytes(replace(flow, rate_mbps=max(flow.rate_mbps,
                                                                                        case.rate_after_mbps)))
    sim = build_episode(scenarios.resolve(sc), 1).make_sim()
    step_ns = int(round(case.step_s * 1e9))
    begin = time.perf_counter()
    sim.run("minrtt", (), step_ns)
    before = float(np.asarray(sim.view("delivered_bytes")).sum())
    at_ns = sim.now_ns
    sim.run("minrtt", ())
    wall = time.perf_counter() - begin
    total = float(np.asarray(sim.view("delivered_bytes")).sum())
    return {"goodput_before_bps": before * 8 / (at_ns / 1e9),
            "goodput_after_bps": (total - before) * 8 / (flow.seconds - at_ns / 1e9), "wall_s": wall}


def compare_steps(cases: tuple[StepCase, ...] = STEPS,
                  progress: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """Every step case in both simulators: the goodput before and after the step and the
    error of mpsched's against ns-3's in each."""
    rows = []
    for case in cases:
        if progress:
            progress(case.label)
        ours = mpsched_step_goodputs(case)
        theirs = ns3_goodput(case.flow, step=(case.step_s, case.rate_after_mbps))
        row: dict[str, Any] = {"label": case.label, "cc": case.flow.cc,
                               "speed_ratio": theirs["wall_s"] / ours["wall_s"]}
        for part in ("before", "after"):
            mine, their = ours[f"goodput_{part}_bps"], theirs[f"goodput_{part}_bps"]
            row.update({f"mpsched_goodput_{part}_bps": mine, f"ns3_goodput_{part}_bps": their,
                        f"error_{part}": mine / their - 1.0 if their > 0 else math.nan})
        rows.append(row)
    return rows


def compare_step_times(case: StepCase, step_times: tuple[float, ...],
                       progress: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """``case`` with its step at each of ``step_times``: the goodput after the step in
    both simulators and mpsched's error. Where a rate step lands in the flows' cycle of
    losses decides how far each window is from its last reduction, so one step time
    alone measures the phase as much as the controllers."""
    rows = []
    for step_s in step_times:
        moved = replace(case, step_s=step_s)
        if progress:
            progress(moved.label)
        ours = mpsched_step_goodputs(moved)["goodput_after_bps"]
        theirs = ns3_goodput(moved.flow, step=(step_s, moved.rate_after_mbps))["goodput_after_bps"]
        rows.append({"step_s": step_s, "mpsched_goodput_after_bps": ours, "ns3_goodput_after_bps": theirs,
                     "error_after": ours / theirs - 1.0 if theirs > 0 else math.nan})
    return rows


@dataclass(frozen=True)
class SharedCase:
    """Two bulk flows from the start over one drop-tail bottleneck, no random loss.

    In mpsched the first is the path and the second a cross flow on the same link; in ns-3
    two sender nodes reach the receiver's node through a router whose device toward it is
    the bottleneck (the access links 100 times faster, without delay unless one flow's
    round trip is the longer).

    Attributes
    ----------
    flow : Ns3Case
        The first flow and the bottleneck.
    second_cc : str
        The second flow's controller.
    rtt_offset_ms : float
        The second flow's round trip minus the first's. The longer one has the difference
        on top of ``flow.rtt_ms`` (ns-3: half of it each way on its sender's access link).
    """

    flow: Ns3Case
    second_cc: str
    rtt_offset_ms: float = 0.0

    @property
    def ccs(self) -> tuple[str, str]:
        return (self.flow.cc, self.second_cc)

    @property
    def label(self) -> str:
        f = self.flow
        offset = f" (second {self.rtt_offset_ms:+.3f} ms)" if self.rtt_offset_ms else ""
        return f"{f.cc} + {self.second_cc}{offset} {f.rate_mbps:g} Mbit/s {f.rtt_ms:g} ms queue {f.queue_bdp:g} BDP"

    @property
    def extra_rtt_ms(self) -> tuple[float, float]:
        """How much each flow's round trip exceeds ``flow.rtt_ms``."""
        return (max(0.0, -self.rtt_offset_ms), max(0.0, self.rtt_offset_ms))


SHARED: tuple[SharedCase, ...] = tuple(
    SharedCase(Ns3Case(cc, 10.0, rtt, 0.0, 1.0, seconds=60.0), "newreno")
    for cc in ("newreno", "cubic") for rtt in (40.0, 80.0))
"""NewReno against NewReno and Cubic against NewReno, on 10 Mbit/s at 40 and 80 ms."""


def mpsched_shared_scenario(case: SharedCase) -> dict[str, Any]:
    """The shared case as an mpsched scenario: the first flow a path, the second a cross
    flow, both on one link."""
    flow = case.flow
    sc = mpsched_scenario(flow)
    sc["name"] = _scenario_name("ns3-shared", case.label)
    sc["links"] = [{"name": "bottleneck", "bandwidth": flow.rate_mbps,
                    "queue_bytes": flow.queue_packets * (MSS_BYTES + WIRE_HEADER_BYTES)}]
    first_extra, second_extra = case.extra_rtt_ms
    sc["paths"] = [{"name": "first", "link": "bottleneck", "rtt_ms": flow.rtt_ms + first_extra, "cc": flow.cc}]
    sc["cross_traffic"] = [{"name": "second", "link": "bottleneck", "rtt_ms": flow.rtt_ms + second_extra,
                            "cc": case.second_cc}]
    return sc


def mpsched_shared_goodputs(case: SharedCase) -> dict[str, Any]:
    """The two flows' goodputs [bit/s] in mpsched, and the core's wall time."""
    from ..envs import scenarios
    from ..envs.episode import build_episode

    flow = case.flow
    sim = build_episode(scenarios.resolve(mpsched_shared_scenario(case)), 1).make_sim()
    begin = time.perf_counter()
    sim.run("minrtt", ())
    wall = time.perf_counter() - begin
    first = float(np.asarray(sim.view("delivered_bytes")).sum())
    second = float(np.asarray(sim.cross_view("delivered_bytes")).sum())
    return {"goodput_bps": [first * 8 / flow.seconds, second * 8 / flow.seconds], "wall_s": wall}


def ns3_shared_goodputs(case: SharedCase) -> dict[str, Any]:
    """The two flows' goodputs [bit/s] in ns-3 (:class:`SharedCase`), and the wall time of
    ``Simulator.Run`` alone. The single-flow sensitivity options (``ns3_rto_restart``,
    ``ns3_spare_retransmissions``) are refused: the two senders run ns-3's own timer and
    meet no random loss."""
    flow = case.flow
    if flow.ns3_rto_restart != NS3_RTO_RESTARTS[0] or flow.ns3_spare_retransmissions:
        raise ValueError("ns3_rto_restart and ns3_spare_retransmissions apply to single-flow cases (ns3_goodput); "
                         "a shared case runs ns-3's own timer and has no random loss")
    ns = _ns3_with_tcp_defaults(flow.cc, flow.min_rto_ms, flow.ns3_recovery)
    senders, router, receiver = ns.NodeContainer(), ns.NodeContainer(), ns.NodeContainer()
    senders.Create(2)
    router.Create(1)
    receiver.Create(1)
    stack = ns.InternetStackHelper()
    for nodes in (senders, router, receiver):
        stack.Install(nodes)
    for k, cc in enumerate(case.ccs):
        tcp = senders.Get(k).GetObject[ns.TcpL4Protocol]()
        tcp.SetAttribute("SocketType", ns.TypeIdValue(ns.TypeId.LookupByName(CONTROLLERS[cc])))
    access = ns.PointToPointHelper()
    access.SetDeviceAttribute("DataRate", ns.StringValue(f"{int(round(100 * flow.rate_mbps * 1e6))}bps"))
    bottleneck = ns.PointToPointHelper()
    bottleneck.SetDeviceAttribute("DataRate", ns.StringValue(f"{int(round(flow.rate_mbps * 1e6))}bps"))
    bottleneck.SetChannelAttribute("Delay", ns.TimeValue(ns.NanoSeconds(int(round(flow.rtt_ms * 5e5)))))
    bottleneck.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize",
                        ns.QueueSizeValue(ns.QueueSize(f"{flow.queue_packets}p")))
    addresses = ns.Ipv4AddressHelper()
    links = []
    for k, extra_ms in enumerate(case.extra_rtt_ms):
        access.SetChannelAttribute("Delay", ns.TimeValue(ns.NanoSeconds(int(round(extra_ms * 5e5)))))
        links.append(access.Install(senders.Get(k), router.Get(0)))
    links.append(bottleneck.Install(router.Get(0), receiver.Get(0)))
    interfaces = []
    for k, devices in enumerate(links):
        addresses.SetBase(ns.Ipv4Address(f"10.1.{k + 1}.0"), ns.Ipv4Mask("255.255.255.0"))
        interfaces.append(addresses.Assign(devices))
        ns.TrafficControlHelper().Uninstall(devices)  # the device queues are the queues
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()
    sinks = []
    for k in range(2):
        port = 9 + k
        any_address = ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port).ConvertTo()
        sink = ns.PacketSinkHelper("ns3::TcpSocketFactory", any_address).Install(receiver.Get(0))
        sender = ns.BulkSendHelper("ns3::TcpSocketFactory",
                                   ns.InetSocketAddress(interfaces[2].GetAddress(1), port).ConvertTo())
        sender.SetAttribute("MaxBytes", ns.UintegerValue(0))
        apps = sender.Install(senders.Get(k))
        for app in (sink, apps):
            app.Start(ns.Seconds(0))
        sinks.append(sink)
    ns.Simulator.Stop(ns.NanoSeconds(int(round((flow.seconds + flow.rtt_ms / 1e3) * 1e9))))
    begin = time.perf_counter()
    ns.Simulator.Run()
    wall = time.perf_counter() - begin
    received = [int(ns.DynamicCast[ns.PacketSink](sink.Get(0)).GetTotalRx()) for sink in sinks]
    ns.Simulator.Destroy()
    return {"goodput_bps": [r * 8 / flow.seconds for r in received], "wall_s": wall}


def ns3_shared_back_to_back(case: SharedCase) -> dict[str, list[int]]:
    """Per flow of the shared case in ns-3: the data packets that reach the bottleneck
    (``packets``), those that follow the flow's previous packet within 20 us, sent back
    to back (``back_to_back``; the access link takes 12 us per packet), the packets the
    full queue drops (``drops``) and how many of those were sent back to back
    (``back_to_back_drops``)."""
    ns = _ns3_with_tcp_defaults(case.flow.cc, case.flow.min_rto_ms, case.flow.ns3_recovery)  # defines the probe's class
    probe = ns.cppyy.gbl.mpsched_ns3.BackToBackProbe()
    probe.Schedule()
    ns3_shared_goodputs(case)
    probe.Settle()
    return {key: [int(v) for v in getattr(probe, key)]
            for key in ("packets", "back_to_back", "drops", "back_to_back_drops")}


SHARED_PHASES = 64
"""How many round-trip offsets :func:`compare_shared` averages each shared case over. The
mean share is an average over the phase of a function that jumps between regimes
(:func:`phase_offsets_ms`), and a coarse grid misses or doubles regimes: the four
interleaved 16-offset grids inside the 64 give NewReno's share against Cubic at 40 ms
errors from +3.3 to +12.1 % against ns-3's, the 64 together +6.5 % (docs/model.md 7.14)."""


def phase_offsets_ms(case: SharedCase, phases: int = SHARED_PHASES) -> list[float]:
    """The second flow's round-trip offsets [ms] a shared case is averaged over: ``phases``
    values evenly spread over [-S, S), ``S`` one full packet's service time at the
    bottleneck (1.2 ms at 10 Mbit/s).

    Two window-limited flows through a drop-tail queue with deterministic timing are
    phase-locked: which flow's packet meets the full queue depends on where the flows'
    packets fall within a service time, and shifting one flow's round trip by a fraction
    of it moves the shares between regimes as far apart as 0.06 and 0.5 (Floyd and
    Jacobson, "On traffic phase effects in packet-switched gateways", 1992; docs/model.md
    7.14 measures it in both simulators). Averaging over the phase is what a share means
    for a network with any jitter; offsets centred on 0 keep either flow from having the
    shorter round trip on average."""
    service_ms = (MSS_BYTES + WIRE_HEADER_BYTES) * 8 / (case.flow.rate_mbps * 1e6) * 1e3
    return [service_ms * (2 * k / phases - 1) for k in range(phases)]


def compare_shared(cases: tuple[SharedCase, ...] = SHARED, phases: int = SHARED_PHASES,
                   progress: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """Every shared case in both simulators at each of its :func:`phase_offsets_ms`: each
    flow's share of the two flows' goodput averaged over the offsets, in mpsched and in
    ns-3, and the relative error of mpsched's mean share; the first flow's share at each
    offset (``*_phase_shares``) and the speed ratio of the runs together."""
    rows = []
    for case in cases:
        if progress:
            progress(case.label)
        offsets = phase_offsets_ms(case, phases)
        mine, their, ours_s, theirs_s = [], [], 0.0, 0.0
        for offset in offsets:
            shifted = replace(case, rtt_offset_ms=offset)
            ours, theirs = mpsched_shared_goodputs(shifted), ns3_shared_goodputs(shifted)
            mine.append(ours["goodput_bps"])
            their.append(theirs["goodput_bps"])
            ours_s += ours["wall_s"]
            theirs_s += theirs["wall_s"]
        mine_a, their_a = np.array(mine), np.array(their)
        phase_shares = mine_a / mine_a.sum(axis=1, keepdims=True)
        ns3_phase_shares = their_a / their_a.sum(axis=1, keepdims=True)
        shares, ns3_shares = phase_shares.mean(axis=0), ns3_phase_shares.mean(axis=0)
        rows.append({"label": case.label, "ccs": list(case.ccs), "rate_mbps": case.flow.rate_mbps,
                     "rtt_ms": case.flow.rtt_ms, "queue_packets": case.flow.queue_packets,
                     "phase_offsets_ms": offsets,
                     "mpsched_goodput_bps": mine_a.mean(axis=0).tolist(),
                     "ns3_goodput_bps": their_a.mean(axis=0).tolist(), "mpsched_shares": shares.tolist(),
                     "ns3_shares": ns3_shares.tolist(), "share_errors": (shares / ns3_shares - 1).tolist(),
                     "mpsched_phase_shares": phase_shares[:, 0].tolist(),
                     "ns3_phase_shares": ns3_phase_shares[:, 0].tolist(),
                     "speed_ratio": theirs_s / ours_s if ours_s > 0 else math.nan})
    return rows


def within_bounds(result: dict[str, Any]) -> bool:
    """Whether a comparison is within the bounds the project holds itself to: median
    |goodput error| at most 3 % and the worst at most 10 %, median |mean RTT error| at
    most 5 % (when the comparison has it), and each flow's share of a shared bottleneck
    (when it has them) within 10 % of ns-3's."""
    shares = [abs(e) for r in result.get("shared", []) for e in r["share_errors"]]
    return bool(result["median_abs_goodput_error"] <= MEDIAN_GOODPUT_ERROR
                and result["worst_abs_goodput_error"] <= WORST_GOODPUT_ERROR
                and result.get("median_abs_mean_rtt_error", 0.0) <= MEDIAN_RTT_ERROR
                and all(e <= SHARE_ERROR for e in shares))


def format_comparison(result: dict[str, Any]) -> str:
    """The comparison as a table, then its summary."""
    lines = [f"{'case':<52}{'mpsched':>11}{'ns-3':>11}{'error':>9}{'timeouts':>10}{'speed':>9}{'mpsched':>10}"
             f"{'ns-3':>10}{'error':>9}{'cwnd':>9}",
             f"{'':<52}{'[Mbit/s]':>11}{'[Mbit/s]':>11}{'':>9}{'[m / n]':>10}{'[x]':>9}{'RTT [ms]':>10}"
             f"{'RTT [ms]':>10}{'':>9}{'error':>9}"]
    for r in result["cases"]:
        line = (f"{r['label']:<52}{r['mpsched_goodput_bps'] / 1e6:>11.3f}{r['ns3_goodput_bps'] / 1e6:>11.3f}"
                f"{100 * r['goodput_error']:>+8.1f}%{_pair(r, 'timeouts'):>10}{r['speed_ratio']:>9.0f}")
        if "mean_rtt_error" in r:
            line += (f"{r['mpsched_mean_rtt_ms']:>10.1f}{r['ns3_mean_rtt_ms']:>10.1f}"
                     f"{100 * r['mean_rtt_error']:>+8.1f}%{100 * r['cwnd_error']:>8.1f}%")
        lines.append(line)
    lines.append(f"goodput error: median |error| {100 * result['median_abs_goodput_error']:.1f} %, worst "
                 f"{100 * result['worst_abs_goodput_error']:.1f} %; mpsched {result['median_speed_ratio']:.0f}x "
                 f"faster than ns-3 in the median case (simulation alone; {TIMED_NS3}, docs/model.md 7.14)")
    if measured_on := _measured_on(result):
        lines.append(measured_on)
    if "median_abs_mean_rtt_error" in result:
        lines.append(f"smoothed RTT sampled every {1e3 * SAMPLE_S:g} ms: median |error of the mean| "
                     f"{100 * result['median_abs_mean_rtt_error']:.1f} %, worst "
                     f"{100 * result['worst_abs_mean_rtt_error']:.1f} %; congestion window: median mean |difference| "
                     f"{100 * result['median_cwnd_error']:.1f} % of ns-3's mean window")
    if result.get("shared"):
        lines += ["", f"{'shared bottleneck (mean over phases)':<52}{'mpsched':>11}{'ns-3':>11}{'error':>9}",
                  f"{'':<52}{'[share]':>11}{'[share]':>11}"]
        for r in result["shared"]:
            for k, cc in enumerate(r["ccs"]):
                lines.append(f"{r['label'] + ': ' + cc + (' (first)' if k == 0 else ' (second)'):<52}"
                             f"{r['mpsched_shares'][k]:>11.3f}{r['ns3_shares'][k]:>11.3f}"
                             f"{100 * r['share_errors'][k]:>+8.1f}%")
    if result.get("steps"):
        lines += ["", f"{'rate step':<52}{'before':>11}{'after':>11}", f"{'':<52}{'[error]':>11}{'[error]':>11}"]
        for r in result["steps"]:
            lines.append(f"{r['label']:<52}{100 * r['error_before']:>+10.1f}%{100 * r['error_after']:>+10.1f}%")
    return "\n".join(lines)


def _measured_on(result: dict[str, Any]) -> str:
    """Where the speed ratios were measured (``result["machine"]``) and the share of the
    CPU time the hypervisor took during the run (``result["cpu_steal"]``), as a sentence;
    empty when the result does not say. The ratios depend on the processor (DEVELOPERS.md,
    "Speed")."""
    if not result.get("machine"):
        return ""
    sentence = f"Speed measured on {result['machine']}"
    steal = result.get("cpu_steal")
    if steal is not None:
        sentence += (f"; the hypervisor took {100 * steal:.1f} % of the CPU time during the run "
                     "(steal in /proc/stat)")
    return sentence + "."


def _median_table(rows: list[dict[str, Any]], key: str) -> list[str]:
    """A Markdown table of the median |rows[key]| by controller (rows) and random loss
    (columns), each cell with its number of cases."""
    losses = sorted({r["loss"] for r in rows})
    lines = ["| controller | " + " | ".join(f"loss {100 * v:g} %" for v in losses) + " |",
             "|:---|" + "---:|" * len(losses)]
    for cc in CONTROLLERS:
        cells = []
        for loss in losses:
            e = np.abs([r[key] for r in rows if r["cc"] == cc and r["loss"] == loss])
            cells.append(f"{100 * np.median(e):.1f} % ({len(e)})" if len(e) else "-")
        lines.append(f"| {cc} | " + " | ".join(cells) + " |")
    return lines


def _phase_figure(plt: Any, shared: list[dict[str, Any]]) -> Any:
    """The first flow's share against the second flow's round-trip offset, one panel per
    shared case, both simulators."""
    fig, axes = plt.subplots(1, len(shared), figsize=(3.2 * len(shared), 3.2), sharey=True, squeeze=False)
    for ax, r in zip(axes[0], shared, strict=True):
        ax.step(r["phase_offsets_ms"], r["mpsched_phase_shares"], where="post", label="mpsched")
        ax.step(r["phase_offsets_ms"], r["ns3_phase_shares"], where="post", label="ns-3", linestyle="--")
        ax.set_title(f"{' + '.join(r['ccs'])}, {r['rtt_ms']:g} ms", fontsize=9)
        ax.set_xlabel("second flow's RTT offset [ms]")
        ax.set_ylim(0, 1)
    axes[0][0].set_ylabel("first flow's share")
    axes[0][0].legend()
    fig.tight_layout()
    return fig


def _pair(row: dict[str, Any], count: str) -> str:
    """A count of both simulators' as "mpsched / ns-3", or "-" where the row has none."""
    if f"ns3_{count}" not in row:
        return "-"
    return f"{row[f'mpsched_{count}']:.0f} / {row[f'ns3_{count}']:.0f}"


def _beyond_bounds(rows: list[dict[str, Any]]) -> list[str]:
    """The report's paragraph on timeouts and its table of the cases beyond
    :data:`WORST_GOODPUT_ERROR`, each with both sides' timeouts and, where they were run,
    :func:`timeout_sensitivities`."""
    timed = [r for r in rows if "ns3_timeouts" in r]
    if not timed:
        return []
    beyond = sorted((r for r in rows if abs(r["goodput_error"]) > WORST_GOODPUT_ERROR),
                    key=lambda r: -abs(r["goodput_error"]))
    lines = [f"**Retransmission timeouts: ns-3 timed out in {sum(r['ns3_timeouts'] > 0 for r in timed)} of "
             f"{len(timed)} cases, mpsched in {sum(r['mpsched_timeouts'] > 0 for r in timed)}.** ns-3 3.44 has no "
             "RACK: a retransmission that is lost again is found only by the retransmission timer. And in a fast "
             "recovery ns-3 restarts the timer on the first partial acknowledgement only (RFC 6582's Impatient "
             "variant), so a recovery that lasts longer than one timeout after it ends in a timeout. This model's "
             "retransmissions are new packets, declared lost by the 3-packet rule like any other, and it restarts "
             "its timer on every newly acknowledged packet (docs/model.md 7.3, 7.14)."]
    if not beyond:
        return lines
    rerun = [r for r in beyond if "every_partial_ack_goodput_error" in r]
    settled = [r for r in rerun
               if min(abs(r.get(f"{name}_goodput_error", math.inf)) for name in TIMEOUT_SENSITIVITIES)
               <= WORST_GOODPUT_ERROR]
    lines += ["", f"{len(beyond)} cases are beyond {100 * WORST_GOODPUT_ERROR:.0f} %. The {len(rerun)} of them in "
              "which ns-3 timed out were run again in ns-3 with its timer restarted on every partial "
              "acknowledgement of a recovery (RFC 6582's Slow-but-Steady variant; ns-3 restarts it on the first "
              "only), and, with random loss, with its random loss sparing retransmissions (a listed packet that "
              "retransmits earlier data passes); mpsched's runs are unchanged (`Ns3Case.ns3_rto_restart`, "
              f"`Ns3Case.ns3_spare_retransmissions`). {len(settled)} of them come within "
              f"{100 * WORST_GOODPUT_ERROR:.0f} % with one of the two.", "",
              "| case | error | timeouts (mpsched / ns-3) | timer restarted on every partial ACK: error (ns-3's "
              "timeouts) | retransmissions spared: error (ns-3's timeouts; losses passed) |",
              "|:---|---:|---:|---:|---:|"]
    for r in beyond:
        restarted = (f"{100 * r['every_partial_ack_goodput_error']:+.1f} % ({r['ns3_every_partial_ack_timeouts']:.0f})"
                     if "every_partial_ack_goodput_error" in r else "-")
        spared = (f"{100 * r['spared_goodput_error']:+.1f} % ({r['ns3_spared_timeouts']:.0f}; "
                  f"{r['ns3_spared_losses']:.0f})" if "spared_goodput_error" in r else "-")
        lines.append(f"| {r['label']} | {100 * r['goodput_error']:+.1f} % | {_pair(r, 'timeouts')} | {restarted} | "
                     f"{spared} |")
    return lines


def write_report(result: dict[str, Any], directory: str | Path, command: str) -> Path:
    """The comparison as a report: ``README.md`` (summary, the error by controller and loss,
    every case), ``figures/errors.png`` (the distribution of the goodput error by loss
    rate, and mpsched's goodput against ns-3's) and, with shared cases,
    ``figures/phases.png`` (:func:`_phase_figure`). Returns the README's path."""
    from .report.figures import _png, _pyplot
    from .sweep import git_revision

    out = Path(directory)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    rows = result["cases"]
    errors = np.array([r["goodput_error"] for r in rows])
    plt = _pyplot()
    fig, (hist, scatter) = plt.subplots(1, 2, figsize=(10, 3.8))
    bins = np.linspace(-0.3, 0.3, 25)
    for loss in sorted({r["loss"] for r in rows}):
        e = np.clip([r["goodput_error"] for r in rows if r["loss"] == loss], bins[0], bins[-1])
        hist.hist(e, bins=bins, histtype="step", linewidth=1.5, label=f"loss {100 * loss:g} %")
    for bound in (-WORST_GOODPUT_ERROR, -MEDIAN_GOODPUT_ERROR, MEDIAN_GOODPUT_ERROR, WORST_GOODPUT_ERROR):
        hist.axvline(bound, color="grey", linestyle=":" if abs(bound) > MEDIAN_GOODPUT_ERROR else "--", linewidth=1)
    hist.set_xlabel("goodput error, mpsched / ns-3 - 1 (clipped to ±30 %)")
    hist.set_ylabel("cases")
    hist.legend()
    for cc, marker in zip(CONTROLLERS, "os", strict=False):
        mine = [r for r in rows if r["cc"] == cc]
        scatter.scatter([r["ns3_goodput_bps"] / 1e6 for r in mine], [r["mpsched_goodput_bps"] / 1e6 for r in mine],
                        s=12, marker=marker, label=cc)
    top = max(max(r["ns3_goodput_bps"], r["mpsched_goodput_bps"]) for r in rows) / 1e6 * 1.3
    scatter.plot([0.1, top], [0.1, top], color="grey", linewidth=1)
    scatter.set_xscale("log")
    scatter.set_yscale("log")
    scatter.set_xlabel("ns-3 goodput [Mbit/s]")
    scatter.set_ylabel("mpsched goodput [Mbit/s]")
    scatter.legend()
    (out / "figures" / "errors.png").write_bytes(_png(fig))
    if result.get("shared"):
        (out / "figures" / "phases.png").write_bytes(_png(_phase_figure(plt, result["shared"])))

    absolute = np.abs(errors)
    arithmetic = ", ".join(sorted({r.get("cubic_arithmetic", "rfc9438") for r in rows}))
    recovery = "; ".join(NS3_RECOVERIES[name] for name in sorted({r.get("ns3_recovery", "prr") for r in rows}))
    measured_on = _measured_on(result)
    lines = [
        "# mpsched against ns-3: bulk NewReno and Cubic over one drop-tail bottleneck",
        "",
        f"`{command}` at git revision {git_revision()}, ns-3 3.44 (`pip install ns3`). Each case is one bulk flow "
        "built as an mpsched scenario and as an ns-3 program with the same link, queue, MSS, wire overhead, initial "
        f"window, minimum RTO and fast recovery (PRR; in ns-3, {recovery}), and the same lost data packets "
        "(paired losses); mpsched's "
        f"Cubic counts `cubic_arithmetic: {arithmetic}` (docs/model.md 7.8, 7.8.1; ns-3's TcpCubic counts in whole "
        "segments). `experiments/ns3.py` gives the set-up, docs/model.md 7.14 what still differs and its measured "
        "size.",
        "",
        f"**Goodput error over {len(rows)} cases: median |error| {100 * np.median(absolute):.1f} %, worst "
        f"{100 * absolute.max():.1f} %; {int((absolute <= MEDIAN_GOODPUT_ERROR).sum())} cases within 3 %, "
        f"{int((absolute <= WORST_GOODPUT_ERROR).sum())} within 10 %. The project's bounds (median at most 3 %, "
        f"worst at most 10 %, median |mean RTT error| at most 5 %, shared-bottleneck shares within 10 %) are "
        f"{'met' if within_bounds(result) else 'not met'}.** mpsched is "
        f"{result['median_speed_ratio']:.0f}x faster than ns-3 in the median case (each simulation alone, "
        f"one process), {TIMED_NS3}, which ns-3's `release` and `optimized` profiles leave out (docs/model.md "
        "7.14 measures what they cost)." + (f" {measured_on}" if measured_on else ""),
        "",
        "![Goodput error by loss rate, and mpsched's goodput against ns-3's](figures/errors.png)",
        "",
        "Median |goodput error| by controller and random loss (cases):",
        "",
        *_median_table(rows, "goodput_error"),
    ]
    if beyond := _beyond_bounds(rows):
        lines += ["", *beyond]
    sampled = [r for r in rows if "mean_rtt_error" in r]
    if sampled:
        rtt = np.abs([r["mean_rtt_error"] for r in sampled])
        lines += ["", f"**Smoothed RTT, sampled every {1e3 * SAMPLE_S:g} ms in both (mpsched: its value at its last "
                  f"decision point at or before each sample time): median |error of the mean| "
                  f"{100 * np.median(rtt):.1f} %, worst {100 * rtt.max():.1f} %; "
                  f"{int((rtt <= MEDIAN_RTT_ERROR).sum())} of {len(rtt)} cases within 5 %.** Congestion window, "
                  f"same samples: the mean |difference| is {100 * np.median([r['cwnd_error'] for r in sampled]):.1f} % "
                  f"of ns-3's mean window in the median case (sawtooths out of phase count), the mean window "
                  f"{100 * np.median(np.abs([r['mean_cwnd_error'] for r in sampled])):.1f} % off.", "",
                  "Median |error of the mean smoothed RTT| by controller and random loss:", "",
                  *_median_table(sampled, "mean_rtt_error")]
    if result.get("shared"):
        phases = len(result["shared"][0]["phase_offsets_ms"])
        lines += ["", "Two flows from the start on one drop-tail bottleneck (1 BDP), no random loss, 60 s: each "
                  "flow's share of the two flows' goodput (mpsched: the path and a cross flow on one link; ns-3: two "
                  f"sender nodes behind a router), the mean over {phases} runs with the second flow's round trip "
                  "offset from the first's by -S to S, S one packet's service time at the bottleneck. At any one "
                  "offset the flows are phase-locked and the shares jump between regimes (figure; docs/model.md "
                  "7.14). The bound is 10 %.", "",
                  "| flows | flow | mpsched share | ns-3 share | error | first flow's share over the offsets, "
                  "mpsched / ns-3 |", "|:---|:---|---:|---:|---:|---:|"]
        for r in result["shared"]:
            spread = (f"{min(r['mpsched_phase_shares']):.3f}-{max(r['mpsched_phase_shares']):.3f} / "
                      f"{min(r['ns3_phase_shares']):.3f}-{max(r['ns3_phase_shares']):.3f}")
            for k, cc in enumerate(r["ccs"]):
                lines.append(f"| {r['label']} | {cc} ({'first' if k == 0 else 'second'}) | "
                             f"{r['mpsched_shares'][k]:.3f} | {r['ns3_shares'][k]:.3f} | "
                             f"{100 * r['share_errors'][k]:+.1f} % | {spread if k == 0 else ''} |")
        lines += ["", "![The first flow's share at each round-trip offset, both simulators](figures/phases.png)"]
    if result.get("steps"):
        lines += ["", "One flow, no random loss, 40 s, the link's rate stepping once after 20 s (ns-3 changes the "
                  "device's DataRate): goodput before and after the step.", "",
                  "| case | before: mpsched / ns-3 [Mbit/s] | error | after: mpsched / ns-3 [Mbit/s] | error |",
                  "|:---|---:|---:|---:|---:|"]
        for r in result["steps"]:
            lines.append(f"| {r['label']} | {r['mpsched_goodput_before_bps'] / 1e6:.3f} / "
                         f"{r['ns3_goodput_before_bps'] / 1e6:.3f} | {100 * r['error_before']:+.1f} % | "
                         f"{r['mpsched_goodput_after_bps'] / 1e6:.3f} / {r['ns3_goodput_after_bps'] / 1e6:.3f} | "
                         f"{100 * r['error_after']:+.1f} % |")
    lines += ["", "Every case, largest |goodput error| first (RTT: the mean smoothed RTT, mpsched / ns-3, and "
              "the error of mpsched's; 95th percentiles the same way; window: the mean |difference| of the sampled "
              "congestion windows over ns-3's mean window):", "",
              "| case | queue [packets] | mpsched [Mbit/s] | ns-3 [Mbit/s] | error | random losses (mpsched / ns-3) "
              "| fast recoveries | timeouts | speed [x] | mean RTT [ms] | RTT error | p95 RTT [ms] | window |",
              "|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in sorted(rows, key=lambda r: -abs(r["goodput_error"])):
        trajectory = (f"{r['mpsched_mean_rtt_ms']:.1f} / {r['ns3_mean_rtt_ms']:.1f} | "
                      f"{100 * r['mean_rtt_error']:+.1f} % | {r['mpsched_p95_rtt_ms']:.1f} / "
                      f"{r['ns3_p95_rtt_ms']:.1f} | {100 * r['cwnd_error']:.0f} %"
                      if "mean_rtt_error" in r else "- | - | - | -")
        lines.append(f"| {r['label']} | {r['queue_packets']} | {r['mpsched_goodput_bps'] / 1e6:.3f} | "
                     f"{r['ns3_goodput_bps'] / 1e6:.3f} | {100 * r['goodput_error']:+.1f} % | "
                     f"{_pair(r, 'random_losses')} | {_pair(r, 'fast_recoveries')} | {_pair(r, 'timeouts')} | "
                     f"{r['speed_ratio']:.0f} | "
                     f"{trajectory} |")
    readme = out / "README.md"
    readme.write_text("\n".join(lines) + "\n")
    return readme
