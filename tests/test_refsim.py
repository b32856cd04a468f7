"""Tests of the pure-Python reference simulator ``tests/refsim.py`` itself.

Every exact expectation below is derived by hand from ``docs/model.md`` in the comment
next to it. Conventions used throughout: with ``rate = 10^9`` bit/s a packet of ``W``
wire bytes takes ``8 * W`` ns of service (``work = 8 W 10^9``, ``need = work / r``).
"""

from __future__ import annotations

import numpy as np
import pytest
from refsim import (
    NEVER,
    WAIT,
    Bandwidth,
    CubicState,
    Xoshiro256ss,
    balia_increase,
    balia_ssthresh,
    cubic_increase,
    cubic_segments_increase,
    cubic_segments_reduce,
    icbrt,
    lia_increase,
    olia_increase,
    run_reference,
    splitmix64,
    trunc_div,
)

GBPS = 10**9


LINK_KEYS = ("queue_bytes", "bw_start_ns", "bw_rate_bps", "bw_cycle_ns")


def make_link(**overrides) -> dict:
    link = {"queue_bytes": 100_000, "bw_start_ns": [0], "bw_rate_bps": [GBPS], "bw_cycle_ns": 0}
    link.update(overrides)
    return link


def make_path(**overrides) -> dict:
    """A subflow dict; it may also carry link keys, which make_spec turns into the
    subflow's own link when no links are given."""
    path = {
        "fwd_delay_ns": 10_000,
        "rev_delay_ns": 10_000,
        "loss_model": "iid",
        "loss_threshold": 0,
        "ge_p_threshold": 0,
        "ge_r_threshold": 0,
        "ge_bad_loss_threshold": 0,
        "cc": "ideal",
        "initial_cwnd_bytes": 10_000,
        "min_rto_ns": 1_000_000,
        "max_rto_ns": 1_000_000_000,
        "ring_capacity": 1024,
    }
    path.update(overrides)
    return path


def make_cross(start_ns, stop_ns, **overrides) -> dict:
    return make_path(**{"cc": "newreno", **overrides, "start_ns": start_ns, "stop_ns": stop_ns})


def make_spec(paths, sizes, arrivals=None, *, links=None, cross=(), receiver="block",
              rbuf=10**9, mss=1000, header=0, end_ns=10**12, seed=1, deadlines=None,
              weights=None) -> dict:
    """The run_reference input. Without ``links`` every path gets a link of its own
    (link j for path j) built from make_link and the link keys it carries; that is the
    model before links were shared."""
    if links is None:
        links = [make_link(**{k: p[k] for k in LINK_KEYS if k in p}) for p in paths]
        paths = [dict({k: v for k, v in p.items() if k not in LINK_KEYS}, link=j)
                 for j, p in enumerate(paths)]
    n = len(sizes)
    arrivals = arrivals if arrivals is not None else [0] * n
    return {
        "mss_bytes": mss,
        "header_bytes": header,
        "end_ns": end_ns,
        "seed": seed,
        "receiver": receiver,
        "rbuf_bytes": rbuf,
        "links": links,
        "paths": paths,
        "cross": list(cross),
        "blocks": {
            "arrival_ns": arrivals,
            "size_bytes": sizes,
            "deadline_ns": deadlines if deadlines is not None else [10**12] * n,
            "priority": [0] * n,
            "weight": weights if weights is not None else [1.0] * n,
        },
    }


# --------------------------------------------------------------------------- §5 RNG


def test_splitmix64_known_answer():
    # The published first output of splitmix64 from state 0.
    state, out = splitmix64(0)
    assert out == 0xE220A8397B1DCDAF
    assert state == 0x9E3779B97F4A7C15


def test_xoshiro256ss_first_outputs_by_hand():
    # State (1, 2, 3, 4). Output 1: rotl(2 * 5, 7) * 9 = (10 << 7) * 9 = 1280 * 9 = 11520.
    # Update: t = 2 << 17; s2 = 3^1 = 2; s3 = 4^2 = 6; s1 = 2^2 = 0; s0 = 1^6 = 7;
    # s2 = 2 ^ (1 << 18); s3 = rotl(6, 45). Output 2: rotl(0 * 5, 7) * 9 = 0.
    rng = Xoshiro256ss(1, 2, 3, 4)
    assert rng.next() == 11520
    assert rng.next() == 0
    # Subflow streams: the same (seed, j) repeats, another subflow differs.
    assert Xoshiro256ss.for_subflow(5, 0).next() == Xoshiro256ss.for_subflow(5, 0).next()
    assert Xoshiro256ss.for_subflow(5, 0).next() != Xoshiro256ss.for_subflow(5, 1).next()
    # for_subflow(seed, j) starts splitmix64 at seed + (j + 1) * gamma: path 0 of seed
    # 0 therefore starts at gamma, i.e. its first state word is splitmix64's *second*
    # output from state 0.
    _, second = splitmix64(splitmix64(0)[0])
    assert Xoshiro256ss.for_subflow(0, 0).s[0] == second


# --------------------------------------------------------------------------- §3 service time


def test_service_time_constant_rate():
    bw = Bandwidth([0], [GBPS], 0)
    # 1500 wire bytes: work = 8 * 1500 * 10^9 = 1.2e13; need = 1.2e13 / 1e9 = 12000.
    assert bw.service_end(5, 1500) == 5 + 12_000
    # Ceiling: 1 byte at 3 Gbit/s: ceil(8e9 / 3e9) = ceil(2.67) = 3.
    assert Bandwidth([0], [3 * GBPS], 0).service_end(0, 1) == 3


def test_service_time_rate_change_inside_packet():
    bw = Bandwidth([0, 10_000], [GBPS, 2 * GBPS], 0)
    # Segment 0 serves 1e9 * 10000 = 1e13 of the 1.2e13 needed (12000 > 10000 ns);
    # the remaining 2e12 at 2e9 take 1000 ns: 10000 + 1000.
    assert bw.service_end(0, 1500) == 11_000


def test_service_time_zero_rate_gap():
    bw = Bandwidth([0, 5_000, 8_000], [GBPS, 0, GBPS], 0)
    # [0, 5000) serves 5e12, leaving 7e12; nothing in [5000, 8000); then 7e12 / 1e9 =
    # 7000 ns from 8000: 15000.
    assert bw.service_end(0, 1500) == 15_000
    # Starting inside the gap waits for its end: 8000 + 12000.
    assert bw.service_end(6_000, 1500) == 20_000


def test_service_time_cycle_wrap():
    # Period 10000: 1 Gbit/s on [0, 4000), zero on [4000, 10000).
    bw = Bandwidth([0, 4_000], [GBPS, 0], 10_000)
    # From 0: 4e12 in [0,4000), 4e12 in [10000,14000), the last 4e12 in
    # [20000, 24000) which exactly fills that segment: 24000.
    assert bw.service_end(0, 1500) == 24_000
    # From 13000: [13000,14000) serves 1e12 (1.1e13 left); periods at 20000 and 30000
    # serve 4e12 each (3e12 left); 3000 ns into the period at 40000: 43000.
    assert bw.service_end(13_000, 1500) == 43_000
    # A short packet fitting in the current on-period: 8 * 100 = 800 ns.
    assert bw.service_end(21_000, 100) == 21_800
    # Starting in an off-period of the second cycle waits for the third cycle.
    assert bw.service_end(15_000, 100) == 20_800


def test_service_time_hold_at_zero_is_never():
    # The last segment (rate 0) holds forever: 5e12 served, then nothing ever.
    bw = Bandwidth([0, 5_000], [GBPS, 0], 0)
    assert bw.service_end(0, 1500) == NEVER
    assert bw.service_end(0, 500) == 4_000  # 8 * 500 = 4000 <= 5000: fits
    # A period serving nothing at all is zero rate forever too.
    assert Bandwidth([0, 10], [0, 0], 100).service_end(0, 1) == NEVER
    assert NEVER > 10**30


# --------------------------------------------------------------------------- ideal cc


def test_ideal_one_path_completion_by_hand():
    # mss 1000, header 50, block of 2500 bytes at t=0 -> pieces 1000, 1000, 500 ->
    # wire 1050, 1050, 550 bytes. Rate 9e8 bit/s:
    #   1050: ceil(8 * 1050e9 / 9e8) = ceil(9333.33) = 9334 ns
    #    550: ceil(8 *  550e9 / 9e8) = ceil(4888.89) = 4889 ns
    # Ideal sends only into an idle link, so the pieces go back to back: sent at 0,
    # 9334, 18668; the last finishes at 18668 + 4889 = 23557 and reaches the receiver
    # fwd = 10000 later: completion = 10000 + 9334 + 9334 + 4889 = 33557.
    path = make_path(fwd_delay_ns=10_000, rev_delay_ns=5_000, bw_rate_bps=[900_000_000])
    out = run_reference(make_spec([path], [2500], mss=1000, header=50), "minrtt")
    assert out["first_send_ns"] == [0]
    assert out["completion_ns"] == [33_557]
    assert out["recv_bytes"] == [2500]
    assert out["acked_bytes"] == [2500]
    assert out["duplicate_bytes"] == [0]
    assert out["bytes_sent"] == [[2500]]
    assert out["packets_sent"] == [3]
    assert out["path_bytes_sent"] == [2500]
    assert out["delivered_bytes"] == [2500]
    # One decision at each of t = 0, 9334, 18668; none afterwards (nothing sendable).
    assert out["decisions"] == 3
    assert out["reward"] == 1.0
    # The last ACK: 23557 + 10000 + 5000 = 38557.
    assert out["last_event_ns"] == 38_557
    # srtt, from base_rtt = 15000, rttvar = 7500:
    #   ACK 0 at 9334 + 15000 = 24334, rtt 24334: srtt = (7*15000 + 24334)//8 = 16166,
    #     rttvar = (3*7500 + 9334)//4 = 7958
    #   ACK 1 at 18668 + 15000 = 33668, rtt 24334: srtt = (7*16166 + 24334)//8 = 17187
    #   ACK 2 at 23557 + 15000 = 38557, rtt 19889: srtt = (7*17187 + 19889)//8 = 17524
    assert out["final_srtt_ns"] == [17_524]
    assert out["final_cwnd_bytes"] == [0]  # ideal has no window (model.md 7)
    assert out["queue_drops"] == [0]
    assert out["retransmissions"] == [0]


def test_horizon_stops_processing():
    # Same episode cut at end_ns = 20000: the last piece's arrival (33557) and the
    # ACKs (>= 24334) are beyond the horizon; the link event at 18668 is the last one.
    path = make_path(fwd_delay_ns=10_000, rev_delay_ns=5_000, bw_rate_bps=[900_000_000])
    out = run_reference(make_spec([path], [2500], header=50, end_ns=20_000), "minrtt")
    assert out["completion_ns"] == [-1]
    assert out["recv_bytes"] == [1000]  # piece 0 arrived at 19334
    assert out["last_event_ns"] == 19_334
    assert out["decisions"] == 3


def test_ideal_two_paths_minrtt_by_hand():
    # Path 0: delays 10000/10000 (srtt 20000); path 1: 20000/20000 (srtt 40000). Both
    # 1 Gbit/s, header 0, mss 1000: 8000 ns per packet. One block of 3000 bytes at 0.
    # t=0, round 1: path 0 (smallest srtt) sends piece 0; path 1: path 0 is busy, so
    #   not ready, and path 1 sends piece 1. Round 2: nobody ready. (2 decisions)
    # t=8000: both links finish (path 0 then path 1, same time), then one decision
    #   round: path 0 sends piece 2; at path 1 nothing is sendable: stop. (3 decisions)
    # Arrivals: piece 0 at 18000, piece 2 at 16000 + 10000 = 26000, piece 1 at
    #   8000 + 20000 = 28000 = completion.
    paths = [
        make_path(fwd_delay_ns=10_000, rev_delay_ns=10_000),
        make_path(fwd_delay_ns=20_000, rev_delay_ns=20_000),
    ]
    out = run_reference(make_spec(paths, [3000]), "minrtt")
    assert out["bytes_sent"] == [[2000, 1000]]
    assert out["packets_sent"] == [2, 1]
    assert out["completion_ns"] == [28_000]
    assert out["decisions"] == 3


def test_minrtt_waits_for_the_faster_path():
    # Two blocks of one piece; path 1 has the smaller srtt. At t=0 path 0 asks first and
    # waits (path 1 is ready with smaller srtt); path 1 sends block 0. Round 2: path 0
    # asks again (waited was reset) and, path 1 now busy, sends block 1.
    paths = [
        make_path(fwd_delay_ns=20_000, rev_delay_ns=20_000),
        make_path(fwd_delay_ns=10_000, rev_delay_ns=10_000),
    ]
    out = run_reference(make_spec(paths, [1000, 1000]), "minrtt")
    assert out["bytes_sent"] == [[0, 1000], [1000, 0]]
    assert out["decisions"] == 3
    # Block 0: 8000 + 10000; block 1: 8000 + 20000.
    assert out["completion_ns"] == [18_000, 28_000]


def test_rr_alternates_paths():
    # Path 0 at 1 Gbit/s (8000 ns per packet), path 1 at 0.5 Gbit/s (16000 ns); both
    # delays 1000/1000. One block of 4 pieces at 0. Cursor c = 0.
    # t=0: path 0 first ready from c=0 -> sends piece 0, c=1; path 1 first ready from
    #   c=1 -> sends piece 1, c=0. (2 decisions)
    # t=8000: path 0 idle; first ready from c=0 is path 0 -> piece 2, c=1. (3)
    # t=16000: both links finish. Path 0: first ready from c=1 is path 1 -> WAIT.
    #   Path 1 -> piece 3, c=0. Round 2: nothing sendable. (5 decisions)
    # MinRTT would have sent piece 3 on the faster path 0; rr alternates.
    # Piece 3 finishes at 32000 and arrives at 33000 = completion.
    paths = [make_path(fwd_delay_ns=1000, rev_delay_ns=1000),
             make_path(fwd_delay_ns=1000, rev_delay_ns=1000, bw_rate_bps=[GBPS // 2])]
    out = run_reference(make_spec(paths, [4000]), "rr")
    assert out["bytes_sent"] == [[2000, 2000]]
    assert out["decisions"] == 5
    assert out["completion_ns"] == [33_000]


def test_ideal_negative_acks_by_hand():
    # loss_threshold = 2^53: (x >> 11) < 2^53 for every draw, so every packet is lost.
    # Delays 1000/1000, 8000 ns per packet: sent at 0, finishes at 8000 (lost), negative
    # ACK at 8000 + 2000 = 10000 declares it lost, retransmitted at 10000, and so on.
    # With end_ns = 35000: sends at 0, 10000, 20000, 30000; losses at 8000, 18000,
    # 28000 (38000 is beyond the horizon); negative ACKs at 10000, 20000, 30000.
    path = make_path(fwd_delay_ns=1000, rev_delay_ns=1000, loss_threshold=2**53)
    out = run_reference(make_spec([path], [1000], end_ns=35_000), "minrtt")
    assert out["packets_sent"] == [4]
    assert out["retransmissions"] == [3]
    assert out["random_losses"] == [3]
    assert out["declared_lost"] == [3]
    assert out["delivered_bytes"] == [0]
    assert out["completion_ns"] == [-1]
    assert out["decisions"] == 4
    assert out["last_event_ns"] == 30_000
    assert out["final_srtt_ns"] == [2000]  # no RTT sample from a negative ACK


# --------------------------------------------------------------------------- newreno


def test_newreno_ring_capacity_binds():
    # ring_capacity 2, cwnd 10 packets, delays 100000/100000, 8000 ns per packet.
    # t=0: pieces 0 and 1 sent (2 decisions); then 2 unresolved records: not ready.
    # ACK of packet 0 at 8000 + 200000 = 208000 resolves it: piece 2 sent at 208000,
    # finishes 216000, arrives 316000 = completion.
    path = make_path(cc="newreno", fwd_delay_ns=100_000, rev_delay_ns=100_000,
                     ring_capacity=2)
    out = run_reference(make_spec([path], [3000]), "minrtt")
    assert out["completion_ns"] == [316_000]
    assert out["decisions"] == 3


@pytest.mark.parametrize("cc", ["newreno", "cubic", "lia", "olia"])
def test_rto_recovers_tail_losses_by_hand(cc):
    # Slow start is common to every window-based controller (model.md 7.3 step 6) and
    # this episode never reaches congestion avoidance, so all four give the same
    # outputs; only ssthresh after the timeout differs (NewReno, LIA and OLIA:
    # max(flight // 2, 2 mss) = 2000; Cubic: max(6000 * 7 // 10, 2000) = 4200), and
    # the final cwnd 2000 is below both.
    # mss 1000, header 0, 1 Gbit/s (8000 ns per packet), delays 100000/100000,
    # queue 1000 bytes (one waiting packet), initial cwnd 4000, min_rto 1 ms.
    # Initially srtt 200000, rttvar 100000, rto = 200000 + max(1e6, 400000) = 1200000.
    # t=0: four rounds send pieces 0..3 as packets 0..3 (4 decisions): packet 0 in
    #   service, packet 1 waits, packets 2 and 3 are dropped (waiting 1000 + 1000 > 1000).
    #   RTO deadline 1200000.
    # ACK 0 at 8000 + 200000 = 208000: rtt 208000, rttvar = (300000 + 8000)//4 = 77000,
    #   srtt = (1400000 + 208000)//8 = 201000, rto = 1201000; slow start (2*4000 >= 4000)
    #   cwnd 5000; deadline 208000 + 1201000.
    # ACK 1 at 216000: rtt 216000, rttvar = (231000 + 15000)//4 = 61500,
    #   srtt = (1407000 + 216000)//8 = 202875, rto = 1202875; 2*3000 >= 5000: cwnd 6000;
    #   deadline 216000 + 1202875 = 1418875. No later ACK can mark 2 and 3 as holes.
    # RTO at 1418875: flight 2000, packets 2, 3 declared lost, ssthresh max(1000, 2000)
    #   = 2000, cwnd 1000, rto = 2405750, recover_pn 3. Piece 2 resent as packet 4 (1
    #   decision; then inflight 1000 + 1000 > cwnd).
    # ACK 4 at 1418875 + 208000 = 1626875: rtt 208000, rttvar = (184500 + 5125)//4 =
    #   47406, srtt = (1420125 + 208000)//8 = 203515; no growth (recovery RTO), then
    #   exit (4 > 3). Piece 3 resent as packet 5 at 1626875 (1 decision), finishes at
    #   1634875, arrives 1734875 = completion.
    # ACK 5 at 1834875: srtt = (7*203515 + 208000)//8 = 204075; slow start: cwnd 2000.
    path = make_path(cc=cc, fwd_delay_ns=100_000, rev_delay_ns=100_000,
                     queue_bytes=1000, initial_cwnd_bytes=4000)
    out = run_reference(make_spec([path], [4000]), "minrtt")
    assert out["queue_drops"] == [2]
    assert out["dropped_bytes"] == [2000]
    assert out["rto_count"] == [1]
    assert out["declared_lost"] == [2]
    assert out["retransmissions"] == [2]
    assert out["packets_sent"] == [6]
    assert out["fast_recoveries"] == [0]
    assert out["completion_ns"] == [1_734_875]
    assert out["decisions"] == 6
    assert out["final_srtt_ns"] == [204_075]
    assert out["final_cwnd_bytes"] == [2000]
    assert out["last_event_ns"] == 1_834_875
    assert out["delivered_bytes"] == [4000]
    assert out["path_bytes_sent"] == [6000]


def _check_conservation(spec: dict, out: dict) -> None:
    """Byte accounting for specs whose block sizes are multiples of mss, so that every
    packet carries exactly mss payload bytes, run to quiescence."""
    mss = spec["mss_bytes"]
    for c in range(len(spec["cross"])):
        sent = out["cross_packets_sent"][c] * mss
        lost = out["cross_queue_drops"][c] + out["cross_random_losses"][c]
        assert out["cross_dropped_bytes"][c] == lost * mss
        assert out["cross_delivered_bytes"][c] + out["cross_dropped_bytes"][c] == sent
    sizes = list(spec["blocks"]["size_bytes"])
    for b, size in enumerate(sizes):
        assert out["completion_ns"][b] >= 0
        assert out["recv_bytes"][b] == size
        assert out["acked_bytes"][b] == size
    P = len(spec["paths"])
    for j in range(P):
        assert out["path_bytes_sent"][j] == sum(out["bytes_sent"][b][j] for b in range(len(sizes)))
        assert out["path_bytes_sent"][j] == out["packets_sent"][j] * mss
        lost_packets = out["queue_drops"][j] + out["random_losses"][j]
        assert out["dropped_bytes"][j] == lost_packets * mss
        assert out["delivered_bytes"][j] + out["dropped_bytes"][j] == out["path_bytes_sent"][j]
    total_sent = sum(out["path_bytes_sent"])
    assert total_sent == sum(sum(row) for row in out["bytes_sent"])
    # First copies plus duplicates are everything the receivers got.
    assert sum(out["delivered_bytes"]) == sum(sizes) + sum(out["duplicate_bytes"])


def test_newreno_queue_drops_fast_recovery_and_conservation():
    # 1 Gbit/s, 2 ms RTT (a BDP of 250 packets), a 5-packet queue and a 400-packet
    # block: slow start overflows the queue, holes get three later ACKs and fast
    # recovery follows; every byte still arrives.
    path = make_path(cc="newreno", fwd_delay_ns=1_000_000, rev_delay_ns=1_000_000,
                     queue_bytes=5000, initial_cwnd_bytes=10_000)
    spec = make_spec([path], [400_000])
    out = run_reference(spec, "minrtt")
    assert out["queue_drops"][0] > 0
    assert out["fast_recoveries"][0] > 0
    assert out["declared_lost"][0] >= 1
    assert out["retransmissions"][0] >= 1
    _check_conservation(spec, out)


def test_newreno_two_paths_with_random_loss_conservation():
    paths = [
        make_path(cc="newreno", fwd_delay_ns=500_000, rev_delay_ns=500_000,
                  queue_bytes=8000, loss_threshold=round(0.02 * 2**53)),
        make_path(cc="newreno", fwd_delay_ns=800_000, rev_delay_ns=700_000,
                  queue_bytes=20_000, bw_rate_bps=[GBPS // 2], loss_threshold=round(0.01 * 2**53)),
    ]
    spec = make_spec(paths, [50_000, 120_000, 30_000], arrivals=[0, 200_000, 1_000_000], seed=7)
    out = run_reference(spec, "minrtt")
    assert sum(out["random_losses"]) > 0
    assert all(x > 0 for x in out["packets_sent"])
    _check_conservation(spec, out)
    out_rr = run_reference(spec, "rr")
    _check_conservation(spec, out_rr)


# --------------------------------------------------------------------------- §4 shared links


def test_two_paths_share_one_fifo_link_by_hand():
    # One link at 1 Gbit/s (8000 ns per 1000-byte packet, header 0) named by two
    # newreno paths with cwnd 2000 (two packets each): path 0 delays 10000/10000 (srtt
    # 20000), path 1 delays 20000/20000 (srtt 40000). One block of 4 pieces at 0.
    # t=0, round 1: path 0 (smaller srtt) sends piece 0, which starts service; path 1
    #   waits (path 0 is ready with a smaller srtt). Round 2: path 0 sends piece 1, which
    #   waits; path 1 (path 0 now full) sends piece 2, which waits. Round 3: path 1 sends
    #   piece 3. Round 4: nobody ready. 5 decisions.
    # FIFO service in hand-over order: piece 0 [0, 8000), piece 1 [8000, 16000), piece 2
    #   (path 1) [16000, 24000), piece 3 [24000, 32000). On links of their own piece 2
    #   would have finished at 8000.
    # Arrivals: piece 2 at 24000 + 20000, piece 3 at 32000 + 20000 = 52000 = completion.
    # ACKs: path 0 at 28000 and 36000, path 1 at 64000 and 72000 = the last event.
    # cwnd: the first ACK of each path has inflight_before 2000 (2 * 2000 >= 2000):
    #   slow start to 3000; the second has inflight_before 1000 (2000 < 3000): none.
    # srtt path 0: rtt 28000: (7*20000 + 28000)//8 = 21000; rtt 36000:
    #   (7*21000 + 36000)//8 = 22875. Path 1: rtt 64000: (7*40000 + 64000)//8 = 43000;
    #   rtt 72000: (7*43000 + 72000)//8 = 46625.
    paths = [
        make_path(cc="newreno", initial_cwnd_bytes=2000, link=0),
        make_path(cc="newreno", initial_cwnd_bytes=2000, link=0, fwd_delay_ns=20_000,
                  rev_delay_ns=20_000),
    ]
    out = run_reference(make_spec(paths, [4000], links=[make_link()]), "minrtt")
    assert out["decisions"] == 5
    assert out["bytes_sent"] == [[2000, 2000]]
    assert out["completion_ns"] == [52_000]
    assert out["last_event_ns"] == 72_000
    assert out["final_cwnd_bytes"] == [3000, 3000]
    assert out["final_srtt_ns"] == [22_875, 46_625]
    assert out["queue_drops"] == [0, 0]


def test_shared_link_drop_tail_counts_the_packets_subflow():
    # Same two paths on one link whose queue holds one waiting packet (1000 bytes).
    # t=0: piece 0 (path 0) in service, piece 1 (path 0) waits, piece 2 (path 1) and
    # piece 3 (path 1) are dropped: the queue is shared, the drops are path 1's.
    paths = [
        make_path(cc="newreno", initial_cwnd_bytes=2000, link=0),
        make_path(cc="newreno", initial_cwnd_bytes=2000, link=0, fwd_delay_ns=20_000,
                  rev_delay_ns=20_000),
    ]
    spec = make_spec(paths, [4000], links=[make_link(queue_bytes=1000)])
    out = run_reference(spec, "minrtt")
    assert out["queue_drops"][0] == 0
    assert out["queue_drops"][1] >= 2
    assert out["dropped_bytes"][1] == 1000 * out["queue_drops"][1]
    _check_conservation(spec, out)


# --------------------------------------------------------------------------- cross flows


def test_cross_flow_competes_from_start_to_stop_by_hand():
    # One link at 1 Gbit/s (8000 ns per packet). Path 0: newreno, cwnd 1000 (one
    # packet), delays 10000/10000. Cross flow (subflow 1): newreno, cwnd 2000, delays
    # 5000/5000, sending in [4000, 30000). One block of 3 pieces at 0.
    # t=0: the cross flow is not ready before start_ns; path 0 sends piece 0 [0, 8000).
    # t=4000 (start event): the cross flow sends c0 and c1 (both wait), then is full.
    # Link: c0 [8000, 16000), c1 [16000, 24000); piece 0 arrives at 18000 (ACK 28000),
    #   c0 at 21000 (ACK 26000), c1 at 29000 (ACK 34000).
    # t=26000: ACK c0, slow start (2 * 2000 >= 2000): cross cwnd 3000; it sends c2
    #   [26000, 34000) and c3 (waits).
    # t=28000: ACK piece 0, slow start: path cwnd 2000; it sends pieces 1 and 2, which
    #   wait behind c3 (2 decisions; 3 in all).
    # t=34000: ACK c1 (class 1) before the link event (class 2): cross cwnd 4000 with
    #   inflight 2000, but 34000 >= stop_ns: the cross flow sends no more.
    # Link: c3 [34000, 42000), piece 1 [42000, 50000), piece 2 [50000, 58000). Piece 2
    #   arrives at 68000 = completion; its ACK at 78000 is the last event.
    # c2 arrives at 39000 (ACK 44000: inflight_before 2000, 4000 >= 4000: cwnd 5000),
    #   c3 at 47000 (ACK 52000: 2000 < 5000, no growth).
    # Cross srtt from 10000: rtt 22000 -> 11500; 30000 -> 13812; 18000 -> 14335;
    #   26000 -> (7*14335 + 26000)//8 = 15793.
    # Path cwnd: ACK piece 1 (inflight_before 2000) -> 3000; ACK piece 2 (1000): none.
    spec = make_spec(
        [make_path(cc="newreno", initial_cwnd_bytes=1000, link=0)], [3000],
        links=[make_link()],
        cross=[make_cross(4000, 30_000, initial_cwnd_bytes=2000, fwd_delay_ns=5000,
                          rev_delay_ns=5000, link=0)],
    )
    out = run_reference(spec, "minrtt")
    assert out["cross_packets_sent"] == [4]
    assert out["cross_delivered_bytes"] == [4000]
    assert out["cross_final_cwnd_bytes"] == [5000]
    assert out["cross_final_srtt_ns"] == [15_793]
    assert out["cross_queue_drops"] == [0]
    assert out["cross_declared_lost"] == [0]
    assert out["completion_ns"] == [68_000]
    assert out["decisions"] == 3
    assert out["packets_sent"] == [3]
    assert out["final_cwnd_bytes"] == [3000]
    assert out["last_event_ns"] == 78_000
    # Cross flows are not offered to the policy and own no block bytes.
    assert out["bytes_sent"] == [[3000]]
    assert len(out["packets_sent"]) == 1


def test_cross_flow_start_event_beyond_horizon_and_empty_window():
    # A cross flow whose start_ns is after end_ns never sends; one with
    # start_ns == stop_ns never sends either, but its start event is processed.
    path = make_path(link=0)
    late = make_cross(5_000_000, 6_000_000, link=1)
    empty = make_cross(50_000, 50_000, link=1)
    spec = make_spec([path], [1000], links=[make_link(), make_link()], cross=[late, empty],
                     end_ns=1_000_000)
    out = run_reference(spec, "minrtt")
    assert out["cross_packets_sent"] == [0, 0]
    assert out["completion_ns"] == [18_000]
    assert out["last_event_ns"] == 50_000  # the start event of the empty cross flow


def test_cross_flow_losses_are_declared_not_requeued_and_use_stream_j():
    # A lossy cross flow on a link of its own, next to a lossless path: its losses are
    # declared (fast recovery, RTO) and nothing is retransmitted for it. Every packet
    # that leaves its link takes exactly one draw of subflow 1's stream (iid), so the
    # random losses are the draws below the threshold among the first (delivered
    # packets + random losses) draws of Xoshiro256ss.for_subflow(seed, 1).
    h = round(0.1 * 2**53)
    spec = make_spec(
        [make_path(cc="newreno", link=0)], [20_000], links=[make_link(), make_link(queue_bytes=5000)],
        cross=[make_cross(0, 3_000_000, link=1, loss_threshold=h, fwd_delay_ns=200_000,
                          rev_delay_ns=200_000)],
        seed=11,
    )
    out = run_reference(spec, "minrtt")
    losses = out["cross_random_losses"][0]
    assert losses > 0
    assert out["cross_declared_lost"][0] > 0
    finished = out["cross_delivered_bytes"][0] // 1000 + losses
    rng = Xoshiro256ss.for_subflow(11, 1)
    assert sum((rng.next() >> 11) < h for _ in range(finished)) == losses
    assert out["random_losses"] == [0]
    _check_conservation(spec, out)


# --------------------------------------------------------------------------- Gilbert-Elliott


def test_gilbert_elliott_bad_forever_loses_everything():
    # ge_p = 2^53: the first transition draw takes GOOD to BAD; ge_r = 0 keeps it BAD;
    # ge_bad_loss = 2^53 loses every packet. The episode of test_ideal_negative_acks_by_hand:
    # sends at 0, 10000, 20000, 30000, losses at 8000, 18000, 28000.
    path = make_path(fwd_delay_ns=1000, rev_delay_ns=1000, loss_model="gilbert_elliott",
                     ge_p_threshold=2**53, ge_r_threshold=0, ge_bad_loss_threshold=2**53)
    out = run_reference(make_spec([path], [1000], end_ns=35_000), "minrtt")
    assert out["packets_sent"] == [4]
    assert out["random_losses"] == [3]
    assert out["dropped_bytes"] == [3000]
    assert out["delivered_bytes"] == [0]


def test_gilbert_elliott_alternates_states_by_hand():
    # ge_p = ge_r = 2^53: every transition draw flips the state, so packets see BAD,
    # GOOD, BAD, GOOD...; BAD loses all (2^53), GOOD none (loss_threshold 0).
    # Ideal path, delays 1000/1000, 8000 ns per packet, block of 2 pieces:
    #   pkt0 = piece 0 [0, 8000): BAD, lost -> negative ACK at 10000.
    #   pkt1 = piece 1 [8000, 16000): GOOD, arrives 17000.
    #   pkt2 = piece 0 again [16000, 24000) (declared lost at 10000, link busy until
    #   16000): BAD, lost -> negative ACK at 26000.
    #   pkt3 = piece 0 [26000, 34000): GOOD, arrives 35000 = completion.
    path = make_path(fwd_delay_ns=1000, rev_delay_ns=1000, loss_model="gilbert_elliott",
                     ge_p_threshold=2**53, ge_r_threshold=2**53, ge_bad_loss_threshold=2**53)
    out = run_reference(make_spec([path], [2000]), "minrtt")
    assert out["packets_sent"] == [4]
    assert out["random_losses"] == [2]
    assert out["retransmissions"] == [2]
    assert out["completion_ns"] == [35_000]
    assert out["last_event_ns"] == 36_000


def test_gilbert_elliott_takes_two_draws_per_packet():
    # ge_p = 0 keeps the state GOOD; the loss then depends on the *second* draw of each
    # packet's pair only. One ideal path sends one packet at a time, so packet k takes
    # draws 2k and 2k + 1 of the stream: count the losses before 10 pieces got through.
    h = 2**52  # a loss probability of 1/2 in GOOD
    path = make_path(fwd_delay_ns=1000, rev_delay_ns=1000, loss_model="gilbert_elliott",
                     loss_threshold=h, ge_p_threshold=0, ge_r_threshold=0,
                     ge_bad_loss_threshold=0)
    out = run_reference(make_spec([path], [10_000], seed=3), "minrtt")
    rng = Xoshiro256ss.for_subflow(3, 0)
    delivered = losses = 0
    while delivered < 10:
        rng.next()  # the transition draw
        if (rng.next() >> 11) < h:
            losses += 1
        else:
            delivered += 1
    assert losses > 0
    assert out["random_losses"] == [losses]
    assert out["packets_sent"] == [10 + losses]


# --------------------------------------------------------------------------- §6.2 in-order


def test_in_order_receiver_and_window_by_hand():
    # Two ideal paths on links of their own (8000 ns per packet): path 0 slow (delays
    # 30000/30000), path 1 fast (10000/10000); rbuf 3000 = three pieces; rr; one block
    # of 6 pieces at 0. window_open: conn_next_dsn + 1000 <= data_acked + 3000.
    # t=0: rr sends piece 0 on path 0 (c=1) and piece 1 on path 1 (c=0); 2 decisions.
    # t=8000: both links idle; piece 2 on path 0 (conn 3000, c=1); at path 1 the
    #   window is closed (3000 + 1000 > 0 + 3000) and nothing is sendable: 3 decisions.
    # Receiver: piece 1 arrives first (18000) and waits (piece 0 missing): its ACK
    #   carries data_ack 0. Piece 0 at 38000: pieces 0 and 1 delivered at 38000
    #   (data_ack 2000, at the sender at 68000). Piece 2 at 46000: delivered at once
    #   (data_ack 3000, at the sender at 76000).
    # t=68000: data_acked 2000, window open to conn 5000. rr (c=1): path 0 waits (path
    #   1 is first ready), path 1 sends piece 3 (c=0); round 2: path 0 sends piece 4
    #   (c=1); path 1: closed. 6 decisions.
    # t=76000: the ACK (class 1) before both links free (class 2); data_acked 3000.
    #   Path 0 waits (c=1), path 1 sends piece 5; round 2: nothing sendable. 8 decisions.
    # Piece 3 (path 1, [68000, 76000)) arrives 86000 and is delivered; piece 5 (path 1,
    #   [76000, 84000)) arrives 94000 and waits for piece 4 (path 0, [68000, 76000)),
    #   which arrives at 106000: both delivered, the block completes at 106000. The last
    #   ACK is piece 4's at 136000.
    paths = [make_path(fwd_delay_ns=30_000, rev_delay_ns=30_000),
             make_path(fwd_delay_ns=10_000, rev_delay_ns=10_000)]
    out = run_reference(make_spec(paths, [6000], receiver="in_order", rbuf=3000), "rr")
    assert out["piece_first_send_ns"] == [0, 0, 8000, 68_000, 68_000, 76_000]
    assert out["piece_arrival_ns"] == [38_000, 18_000, 46_000, 86_000, 106_000, 94_000]
    assert out["piece_delivery_ns"] == [38_000, 38_000, 46_000, 86_000, 106_000, 106_000]
    assert out["dsn_order"] == [0, 1, 2, 3, 4, 5]
    assert out["rcv_nxt"] == 6000
    assert out["decisions"] == 8
    assert out["bytes_sent"] == [[3000, 3000]]
    assert out["completion_ns"] == [106_000]
    assert out["last_event_ns"] == 136_000
    # The block-aware receiver has no window and no per-piece outputs: piece 2 goes
    # out at t=0 already.
    out_block = run_reference(make_spec(paths, [6000], rbuf=3000), "rr")
    assert out_block["piece_arrival_ns"] is None and out_block["rcv_nxt"] is None
    assert out_block["dsn_order"] is None
    assert out_block["first_send_ns"] == [0]


ALTERNATING_GE = {"fwd_delay_ns": 1000, "rev_delay_ns": 1000, "loss_model": "gilbert_elliott",
                  "ge_p_threshold": 2**53, "ge_r_threshold": 2**53,
                  "ge_bad_loss_threshold": 2**53}


def test_in_order_retransmits_while_the_window_is_closed_by_hand():
    # One ideal path whose packets are lost, kept, lost, kept... (states BAD, GOOD, ...,
    # see test_gilbert_elliott_alternates_states_by_hand), delays 1000/1000, 8000 ns
    # per packet, rbuf 1000: the window is open only when everything sent was
    # delivered in sequence. Blocks of 2 pieces and 1 piece at 0.
    # t=0: sendable [0, 1]; piece (0,0) = dsn 0 [0, 8000): lost, negative ACK at 10000.
    # t=8000: link idle, window closed (1000 + 1000 > 0 + 1000): nothing sendable.
    # t=10000: (0,0) LOST: block 0 is sendable for its retransmission while the window
    #   is closed (block 1 is not): sendable [0]; sent [10000, 18000): kept, arrives
    #   19000, delivered; the ACK (data_ack 1000) at 20000.
    # t=20000: window open (2000 <= 2000): sendable [0, 1]; (0,1) = dsn 1 [20000,
    #   28000): lost, negative ACK 30000.
    # t=30000: closed again (2000 + 1000 > 1000 + 1000): sendable [0]; (0,1) again
    #   [30000, 38000): kept, arrives 39000 = completion of block 0; ACK at 40000.
    # t=40000: sendable [1]; (1,0) = dsn 2 [40000, 48000): lost, negative ACK 50000.
    # t=50000: sendable [1] (closed: 3000 + 1000 > 2000 + 1000); resent [50000, 58000),
    #   arrives 59000 = completion of block 1; ACK at 60000.
    seen = []

    def policy(view):
        seen.append((view.now_ns, list(view.sendable)))
        return view.sendable[0]

    out = run_reference(make_spec([make_path(**ALTERNATING_GE)], [2000, 1000],
                                  receiver="in_order", rbuf=1000), policy)
    assert seen == [(0, [0, 1]), (10_000, [0]), (20_000, [0, 1]), (30_000, [0]),
                    (40_000, [1]), (50_000, [1])]
    assert out["completion_ns"] == [39_000, 59_000]
    assert out["piece_first_send_ns"] == [0, 20_000, 40_000]
    assert out["piece_arrival_ns"] == [19_000, 39_000, 59_000]
    assert out["piece_delivery_ns"] == [19_000, 39_000, 59_000]
    assert out["packets_sent"] == [6]
    assert out["retransmissions"] == [3]
    assert out["random_losses"] == [3]
    assert out["declared_lost"] == [3]
    assert out["last_event_ns"] == 60_000


def test_in_order_keeps_retransmissions_of_a_cancelled_block_by_hand():
    # The alternating path again, one block of 2 pieces, rbuf large.
    # t=0: piece 0 [0, 8000): lost, negative ACK at 10000. t=8000: piece 1 [8000,
    #   16000): kept, arrives 17000 and waits for piece 0.
    # t=10000: piece 0 declared lost (the link is busy: no decision).
    # t=16000: the policy cancels block 0. In-order: the retransmission queue stays
    #   (piece 0 holds sequence position 0) and the block stays sendable: piece 0 is
    #   resent [16000, 24000): lost (BAD), negative ACK at 26000; the LOST piece of the
    #   cancelled block is queued again; resent at 26000 [26000, 34000): kept, arrives
    #   35000: pieces 0 and 1 are delivered, the block completes.
    # Block-aware receiver: the cancel empties the queue and nothing is resent.
    def policy(view):
        if view.now_ns == 16_000:
            view.cancel(0)
        return view.sendable[0] if view.sendable else WAIT

    spec = make_spec([make_path(**ALTERNATING_GE)], [2000], receiver="in_order")
    out = run_reference(spec, policy)
    assert out["cancelled"] == [True]
    assert out["cancel_ns"] == [16_000]
    assert out["packets_sent"] == [4]
    assert out["retransmissions"] == [2]
    assert out["decisions"] == 4
    assert out["piece_arrival_ns"] == [35_000, 17_000]
    assert out["piece_delivery_ns"] == [35_000, 35_000]
    assert out["completion_ns"] == [35_000]
    out_block = run_reference(dict(spec, receiver="block"), policy)
    assert out_block["packets_sent"] == [2]
    assert out_block["decisions"] == 3
    assert out_block["recv_bytes"] == [1000]
    assert out_block["completion_ns"] == [-1]


def test_in_order_sequence_follows_first_transmissions():
    # A callable policy sends block 1 before block 0: block 1's pieces take the first
    # sequence positions. Global pieces: block 0 = 0, 1; block 1 = 2.
    # Ideal path, 8000 ns per packet, delays 10000/10000: piece 2 at 0, 0 at 8000, 1 at
    # 16000; arrivals 18000, 26000, 34000, each delivered at once.
    out = run_reference(
        make_spec([make_path()], [2000, 1000], receiver="in_order"),
        lambda view: view.sendable[-1],
    )
    assert out["dsn_order"] == [2, 0, 1]
    assert out["piece_first_send_ns"] == [8000, 16_000, 0]
    assert out["piece_delivery_ns"] == [26_000, 34_000, 18_000]
    assert out["completion_ns"] == [34_000, 18_000]


def test_in_order_lossy_two_paths_invariants():
    paths = [
        make_path(cc="lia", fwd_delay_ns=500_000, rev_delay_ns=500_000, queue_bytes=8000,
                  loss_threshold=round(0.02 * 2**53)),
        make_path(cc="lia", fwd_delay_ns=800_000, rev_delay_ns=700_000, queue_bytes=20_000,
                  bw_rate_bps=[GBPS // 2], loss_threshold=round(0.01 * 2**53)),
    ]
    spec = make_spec(paths, [50_000, 120_000, 30_000], arrivals=[0, 200_000, 1_000_000],
                     seed=7, receiver="in_order", rbuf=20_000)
    out = run_reference(spec, "minrtt")
    _check_conservation(spec, out)
    n = 200
    assert sorted(out["dsn_order"]) == list(range(n))
    assert out["rcv_nxt"] == 200_000
    delivery = [out["piece_delivery_ns"][g] for g in out["dsn_order"]]
    assert delivery == sorted(delivery)  # delivered in sequence
    assert all(out["piece_delivery_ns"][g] >= out["piece_arrival_ns"][g] >= out["piece_first_send_ns"][g]
               for g in range(n))
    assert any(out["piece_delivery_ns"][g] > out["piece_arrival_ns"][g] for g in range(n))


# --------------------------------------------------------------------------- controllers


def test_trunc_div_rounds_toward_zero():
    assert trunc_div(7, 2) == 3
    assert trunc_div(-7, 2) == -3  # floor division would give -4
    assert trunc_div(-8, 2) == -4
    assert trunc_div(-296_352 * 10**18, 10**19) == -29_635  # -29635.2; floor: -29636


def test_icbrt_is_exact():
    assert [icbrt(x) for x in (0, 1, 7, 8, 26, 27, 63, 64)] == [0, 1, 1, 2, 2, 3, 3, 4]
    for y in (10**6, 2**40 - 3, 4_217_163, 10**10):
        assert icbrt(y**3) == y
        assert icbrt(y**3 - 1) == y - 1
        assert icbrt((y + 1) ** 3 - 1) == y
    # K of W_max - cwnd = 30 packets: cbrt(30 / 0.4) s = 4.2171633 s;
    # 4217163^3 = 74999982579649749747 <= 75 * 10^18 < 4217164^3 = 75000035933053706944.
    assert icbrt(30_000 * 25 * 10**17 // 1000) == 4_217_163


def test_cubic_increase_on_a_hand_picked_state():
    # mss 1000, W_max 100000, cwnd 50000: K^3 = 50000 * 25e17 // 1000 = 1.25e20, so
    # k_us = 5000000 exactly (5 s) and origin = W_max. srtt 800000999 ns: t_us =
    # (t - epoch_start + srtt) // 1000 = 800000 at the first call (epoch starts at t).
    # d = 800000 - 5000000 = -4200000; d^3 = -74088e15; 4 * 1000 * d^3 / 1e19 =
    # -29635.2 -> -29635 (toward zero); target = 100000 - 29635 = 70365, within
    # [50000, 75000]. s = 1000: cub_acc = 20365 * 1000 = 20365000, inc = 407, cub_acc =
    # 20365000 - 407 * 50000 = 15000. est_acc = 9 * 1000 * 1000 = 9000000, inc2 =
    # 9000000 // 850000 = 10, est_acc = 500000; w_est = 50010 < 50407 = cwnd.
    st = CubicState()
    st.w_max = 100_000
    cwnd = cubic_increase(st, 50_000, 1000, 7_000, 800_000_999, 1000)
    assert (st.epoch_start, st.k_us, st.origin) == (7_000, 5_000_000, 100_000)
    assert cwnd == 50_407
    assert (st.cub_acc, st.est_acc, st.w_est) == (15_000, 500_000, 50_010)


def test_cubic_reno_friendly_estimate_wins_at_the_origin():
    # Fresh state (W_max 0): origin = cwnd = 10000, K = 0; srtt 0 and the epoch start
    # give t_us = 0, d = 0, target = cwnd: no cubic growth. est_acc = 9e6, inc2 =
    # 9e6 // 170000 = 52 (est_acc 160000), w_est = 10052 > cwnd: cwnd = 10052.
    st = CubicState()
    assert cubic_increase(st, 10_000, 1000, 5, 0, 1000) == 10_052
    assert (st.k_us, st.origin, st.est_acc, st.cub_acc) == (0, 10_000, 160_000, 0)


def test_cubic_in_segments_grows_one_segment_per_cnt_acknowledged():
    # §7.8.1, mss 1000, cwnd 70 segments, W_max 100: k_us = icbrt(30 * 25e17) = 4217163
    # (cbrt(30 / 0.4) s), origin 100. min RTT 200 ms, every call at the epoch's start:
    # t_us = 200000, d = 4017163, d^3 = 64827363878508349747, delta = 4 d^3 // 1e19 = 25,
    # target = 100 - 25 = 75 (t < K), cnt = 70 // (75 - 70) = 14. The Reno-friendly
    # estimate needs (70 * 15) >> 3 = 131 segments for its first one. So the window
    # grows by one segment at the 14th acknowledged segment, and cub_acc starts again.
    st = CubicState()
    st.w_max = 100
    cwnds = [70_000]
    for _ in range(14):
        cwnds.append(cubic_segments_increase(st, cwnds[-1], 1000, 5_000, 200_000_000, 1000))
    assert (st.epoch_start, st.k_us, st.origin, st.w_est) == (5_000, 4_217_163, 100, 70)
    assert cwnds[1:14] == [70_000] * 13 and cwnds[14] == 71_000
    assert (st.cub_acc, st.est_acc) == (0, 14)


def test_cubic_in_segments_carries_a_large_credit_over_acknowledgements():
    # A fresh state (no loss yet: W_max 0, so cnt <= 20) credited 30,500 bytes at once, as
    # at the end of a recovery: 30 segments, 500 bytes kept. K = 0, min RTT 0: target =
    # cwnd = 10, cnt = min(100 * 10, 20) = 20. The estimate's step is (10 * 15) >> 3 = 18
    # segments: ack_cnt 30 > 18 gives one (ack_cnt 12, w_est 11), so cnt = min(20, 10 // 1)
    # = 10. cub_acc 30 >= 10: one segment (at most one per acknowledgement), 20 kept.
    # The next 500 bytes complete a segment: cwnd 11, target 10 <= 11, cnt 20, the
    # estimate's step (11 * 15) >> 3 = 20 > 13; cub_acc 21 >= 20: one more segment.
    st = CubicState()
    cwnd = cubic_segments_increase(st, 10_000, 30_500, 7, 0, 1000)
    assert (cwnd, st.cub_acc, st.est_acc, st.w_est, st.bytes_acc) == (11_000, 20, 12, 11, 500)
    cwnd = cubic_segments_increase(st, cwnd, 500, 7, 0, 1000)
    assert (cwnd, st.cub_acc, st.est_acc, st.w_est, st.bytes_acc) == (12_000, 1, 13, 11, 0)


def test_cubic_in_segments_grows_at_most_one_segment_per_two_acknowledged():
    # An epoch under way (origin 10, K = 0, min RTT 0: target 10 = cwnd) whose Reno-friendly
    # estimate is far ahead (w_est 100): cnt = min(20, 10 // (100 - 10)) = 0, floored at 2.
    st = CubicState()
    st.epoch_start, st.origin, st.w_est = 0, 10, 100
    assert cubic_segments_increase(st, 10_000, 1000, 0, 0, 1000) == 10_000
    assert cubic_segments_increase(st, 10_000, 1000, 0, 0, 1000) == 11_000
    assert st.cub_acc == 0


def test_cubic_in_segments_reduces_in_whole_segments():
    # 70,500 bytes are 70 segments: below W_max 100, fast convergence gives 70 * 17 // 20
    # = 59 (59.5 in Linux's arithmetic, truncated); ssthresh 70 * 7 // 10 = 49 segments. A
    # timeout forgets W_max (ns-3's CubicReset in the loss state).
    st = CubicState()
    st.w_max = 100
    assert cubic_segments_reduce(st, 70_500, 1000, timeout=False) == 49_000
    assert (st.w_max, st.epoch_start) == (59, -1)
    assert cubic_segments_reduce(st, 2_500, 1000, timeout=True) == 2_000
    assert st.w_max == 0


def test_cubic_decrease_with_fast_convergence_in_a_run():
    # End to end: a cubic path through a queue overflow; fast recovery happens and every
    # byte arrives.
    path = make_path(cc="cubic", fwd_delay_ns=1_000_000, rev_delay_ns=1_000_000,
                     queue_bytes=5000, initial_cwnd_bytes=10_000)
    spec = make_spec([path], [400_000])
    out = run_reference(spec, "minrtt")
    assert out["fast_recoveries"][0] > 0
    _check_conservation(spec, out)


def test_lia_two_equal_paths_alpha_one_half():
    # cwnd 2^13, srtt 2^10 on both: tot = 2^14, best = 2^13 / 2^20 = 2^-7, den =
    # 2 * 2^13 / 2^10 = 16, alpha = 2^14 * 2^-7 / 256 = 1/2 (all exact in binary64).
    # inc = min(0.5 * 1000 * 1000 / 2^14, 1000 * 1000 / 2^13) = min(30.517578125,
    # 61.03515625) = 30.517578125: whole 30, lia_acc 0.517578125; the same increase
    # again: acc 31.03515625, whole 31, acc 0.03515625.
    whole, acc = lia_increase([8192, 8192], [1024, 1024], 0, 1000, 1000, 0.0)
    assert (whole, acc) == (30, 0.517578125)
    assert lia_increase([8192, 8192], [1024, 1024], 1, 1000, 1000, acc) == (31, 0.03515625)


def test_lia_reno_cap_binds_on_the_big_slow_path():
    # Path 0: cwnd 2^10, srtt 2^5 (cwnd / rtt^2 = 1 = best); path 1: cwnd 2^14, srtt 2^10.
    # tot = 17408, den = 32 + 16 = 48, alpha = 17408 / 2304 = 7.555...: for path 1
    # alpha / tot = 1 / 2304 > 1 / cwnd_1, so the uncoupled term s * mss / cwnd_1 =
    # 1e6 / 16384 = 61.03515625 is the minimum: whole 61, acc 0.03515625. For path 0 the
    # coupled term 1e6 / 2304 = 434.03 is the minimum (below 1e6 / 1024 = 976.56).
    assert lia_increase([1024, 16384], [32, 1024], 1, 1000, 1000, 0.0) == (61, 0.03515625)
    whole, acc = lia_increase([1024, 16384], [32, 1024], 0, 1000, 1000, 0.0)
    assert whole == 434
    assert acc == pytest.approx(1e6 / 2304 - 434, abs=1e-9)


def test_olia_equal_paths_have_alpha_zero():
    # Equal cwnd and l: M = B = {0, 1}, X empty, alpha = 0. inc = 2^13 / 2^20 / 16^2 *
    # 1000 * 1000 = 2^-15 * 1e6 = 30.517578125 (exact): cwnd 8192 + 30, acc 0.517578125.
    cwnd, acc = olia_increase([8192, 8192], [1024, 1024], [5000, 5000], [0, 0], 0, 1000,
                              1000, 0.0)
    assert (cwnd, acc) == (8222, 0.517578125)


def test_olia_moves_window_from_the_largest_to_the_best_path():
    # cwnd [2^14, 2^13], srtt 2^10 both, l1 [0, 0], l2 [1000, 2000]: M = {0} (largest
    # cwnd), q = l^2 / rtt is largest for path 1: B = {1}, X = {1}. |S| = 2:
    # alpha_1 = 1 / (2 * 1) = 0.5, alpha_0 = -1 / (2 * 1) = -0.5. den = 16 + 8 = 24.
    # Path 1: 2^-7 / 576 * 1e6 = 13.5634 plus 0.5 * 1e6 / 8192 = 61.0352: 74.5986 ->
    #   cwnd 8192 + 74 = 8266.
    # Path 0: 2^-6 / 576 * 1e6 = 27.1267 minus 0.5 * 1e6 / 16384 = 30.5176: -3.3908 ->
    #   whole -4, cwnd 16380, acc 0.6092.
    args = ([16384, 8192], [1024, 1024], [0, 0], [1000, 2000])
    cwnd1, acc1 = olia_increase(*args, 1, 1000, 1000, 0.0)
    assert cwnd1 == 8266
    assert acc1 == pytest.approx(1e6 / 73728 + 61.03515625 - 74, abs=1e-9)
    cwnd0, acc0 = olia_increase(*args, 0, 1000, 1000, 0.0)
    assert cwnd0 == 16380
    assert acc0 == pytest.approx(1e6 / 36864 - 30.517578125 + 4, abs=1e-9)
    # The window never falls below mss: cwnd [1024, 1000] (M = {0}), path 1 has the
    # larger l: path 0 loses about 238 bytes, clamped at mss = 1000.
    assert olia_increase([1024, 1000], [1024, 1024], [0, 0], [1000, 2000], 0, 1000, 1000,
                         0.0)[0] == 1000


def test_balia_by_hand():
    # docs/model.md 7.11, mss 1000, rtt 100000 ns on both paths, s = 1000 bytes.
    # One path, cwnd 10000: x = 0.1, X = 0.1, alpha = 1: 0.1 / (1e5 * 0.01) * 1e6 * 1 =
    # 100 bytes, NewReno's s * mss / cwnd.
    assert balia_increase([10_000], [100_000], 0, 1000, 1000, 0.0)[0] == 10_100
    # cwnds 10000 and 20000: x = 0.1 and 0.2, X = 0.3. The slower path (alpha 2):
    # 0.1 / (1e5 * 0.09) * 1e6 * (3 * 6 / 10) = 20 bytes in real arithmetic (LIA: 33.3,
    # NewReno: 100); binary64 in the page's order gives 19.999999999999996: 19 whole
    # bytes, the rest carried in balia_acc. The faster (alpha 1): 0.2 / 9000 * 1e6 = 22.2.
    cwnd, acc = balia_increase([10_000, 20_000], [100_000, 100_000], 0, 1000, 1000, 0.0)
    assert cwnd == 10_019 and acc == pytest.approx(1.0, abs=1e-12)
    cwnd, acc = balia_increase([10_000, 20_000], [100_000, 100_000], 1, 1000, 1000, 0.0)
    assert cwnd == 20_022 and acc == pytest.approx(2 / 9, abs=1e-9)
    # Decrease for a flight of 10000: the slower path cuts 10000 / 2 * min(2, 1.5) = 7500
    # (ssthresh 2500), the faster one half (5000); never below 2 mss.
    assert balia_ssthresh([10_000, 20_000], [100_000, 100_000], 0, 10_000, 1000) == 2500
    assert balia_ssthresh([10_000, 20_000], [100_000, 100_000], 1, 10_000, 1000) == 5000
    assert balia_ssthresh([10_000, 20_000], [100_000, 100_000], 0, 4000, 1000) == 2000


@pytest.mark.parametrize("cc", ["cubic", "lia", "olia", "balia", "wvegas", "ccp"])
def test_coupled_and_cubic_paths_share_a_link_with_cross_traffic(cc):
    # Two paths of one controller and a cubic cross flow on one link, random losses:
    # everything still arrives and the byte accounting holds for every subflow.
    paths = [
        make_path(cc=cc, link=0, fwd_delay_ns=300_000, rev_delay_ns=300_000,
                  loss_threshold=round(0.01 * 2**53)),
        make_path(cc=cc, link=0, fwd_delay_ns=600_000, rev_delay_ns=400_000),
    ]
    cross = [make_cross(100_000, 4_000_000, cc="cubic", link=0, fwd_delay_ns=200_000,
                        rev_delay_ns=200_000)]
    spec = make_spec(paths, [100_000, 60_000], arrivals=[0, 500_000],
                     links=[make_link(queue_bytes=15_000)], cross=cross, seed=5)
    out = run_reference(spec, "minrtt")
    assert out["cross_packets_sent"][0] > 0
    assert sum(out["queue_drops"]) + out["cross_queue_drops"][0] > 0
    _check_conservation(spec, out)


# --------------------------------------------------------------------------- callables


def test_callable_policy_cancels_a_block():
    # One ideal path, delays 10000/10000, 8000 ns per packet. Block 0 = 3 pieces and
    # block 1 = 1 piece, both at 0.
    # Decision 0 (t=0): send block 0 (piece 0).
    # Decision 1 (t=8000): cancel block 0, then the only sendable block is 1: send it.
    # Block 1 finishes at 16000 and arrives at 26000; nothing is sendable afterwards.
    seen = []

    def policy(view):
        seen.append((view.decision_index, view.now_ns, view.path, list(view.sendable),
                     list(view.ready), list(view.srtt_ns)))
        if view.decision_index == 1:
            view.cancel(0)
            assert view.sendable == [1]
        return view.sendable[0]

    out = run_reference(make_spec([make_path()], [3000, 1000]), policy)
    assert seen == [
        (0, 0, 0, [0, 1], [True], [20_000]),
        (1, 8000, 0, [0, 1], [True], [20_000]),
    ]
    assert out["cancelled"] == [True, False]
    assert out["cancel_ns"] == [8000, -1]
    assert out["bytes_sent"] == [[1000], [1000]]  # pieces 1 and 2 of block 0 never sent
    assert out["recv_bytes"] == [1000, 1000]
    assert out["acked_bytes"] == [1000, 1000]
    assert out["completion_ns"] == [-1, 26_000]
    assert out["decisions"] == 2
    assert out["reward"] == 1.0


def test_cancel_of_fully_acked_block_does_nothing():
    # Block 0 (one piece) is sent at 0 and acknowledged at 8000 + 20000 = 28000; block
    # 1 arrives at 50000, when the policy cancels block 0: no effect.
    def policy(view):
        if view.now_ns == 50_000:
            view.cancel(0)
        return view.sendable[0]

    out = run_reference(make_spec([make_path()], [1000, 1000], arrivals=[0, 50_000]), policy)
    assert out["cancelled"] == [False, False]
    assert out["cancel_ns"] == [-1, -1]
    assert out["completion_ns"] == [18_000, 68_000]


def test_callable_returning_unsendable_block_raises():
    with pytest.raises(ValueError):
        run_reference(make_spec([make_path()], [1000]), lambda view: 5)

    def cancel_then_pick(view):
        view.cancel(0)
        return 0

    with pytest.raises(ValueError):
        run_reference(make_spec([make_path()], [1000, 1000]), cancel_then_pick)


def test_callable_wait_everywhere_sends_nothing():
    out = run_reference(make_spec([make_path(), make_path()], [1000]), lambda view: WAIT)
    # t=0: each path asks once and waits; the round sent nothing: stop. No later events
    # at which anything is sendable and a path ready but the arrival itself.
    assert out["decisions"] == 2
    assert out["first_send_ns"] == [-1]
    assert out["last_event_ns"] == 0


def test_deadline_and_weights():
    # Block 0 arrives at 18000 > deadline 17999: not on time; block 1 (weight 2.5) is.
    spec = make_spec([make_path()], [1000, 1000], deadlines=[17_999, 10**9],
                     weights=[1.0, 2.5])
    out = run_reference(spec, "minrtt")
    assert out["completion_ns"] == [18_000, 26_000]
    assert out["reward"] == 2.5


# --------------------------------------------------------------------------- determinism


def _lossy_spec(seed):
    paths = [make_path(cc="newreno", fwd_delay_ns=300_000, rev_delay_ns=300_000,
                       queue_bytes=10_000, loss_threshold=round(0.05 * 2**53)),
             make_path(cc="ideal", fwd_delay_ns=200_000, rev_delay_ns=200_000,
                       loss_threshold=round(0.05 * 2**53))]
    return make_spec(paths, [40_000, 40_000], arrivals=[0, 100_000], seed=seed)


def test_determinism_and_seed_dependence():
    a = run_reference(_lossy_spec(123), "minrtt")
    b = run_reference(_lossy_spec(123), "minrtt")
    assert a == b
    c = run_reference(_lossy_spec(124), "minrtt")
    assert c != a


def test_numpy_inputs_are_accepted():
    spec = make_spec([make_path()], [3000, 1000])
    as_numpy = dict(spec)
    as_numpy["seed"] = np.uint64(2**64 - 1)
    as_numpy["links"] = [dict(spec["links"][0],
                              bw_start_ns=np.array([0], dtype=np.int64),
                              bw_rate_bps=np.array([GBPS], dtype=np.int64),
                              queue_bytes=np.int64(100_000))]
    as_numpy["paths"] = [dict(spec["paths"][0], link=np.int64(0), fwd_delay_ns=np.int64(10_000))]
    as_numpy["blocks"] = {
        "arrival_ns": np.array([0, 0], dtype=np.int64),
        "size_bytes": np.array([3000, 1000], dtype=np.int64),
        "deadline_ns": np.array([10**12, 10**12], dtype=np.int64),
        "priority": np.array([0, 0], dtype=np.int32),
        "weight": np.array([1.0, 1.0]),
    }
    out_np = run_reference(as_numpy, "minrtt")
    out_py = run_reference(dict(spec, seed=2**64 - 1), "minrtt")
    assert out_np == out_py
    assert type(out_np["completion_ns"][0]) is int
    assert type(out_np["reward"]) is float
