"""Tests of the pure-Python reference simulator ``tests/refsim.py`` itself.

Every exact expectation below is derived by hand from ``docs/model.md`` in the comment
next to it. Conventions used throughout: with ``rate = 10^9`` bit/s a packet of ``W``
wire bytes takes ``8 * W`` ns of service (``work = 8 W 10^9``, ``need = work / r``).
"""

from __future__ import annotations

import numpy as np
import pytest

from refsim import NEVER, WAIT, Bandwidth, Xoshiro256ss, run_reference, splitmix64

GBPS = 10**9


def make_path(**overrides) -> dict:
    path = {
        "fwd_delay_ns": 10_000,
        "rev_delay_ns": 10_000,
        "queue_bytes": 100_000,
        "loss_threshold": 0,
        "cc": "ideal",
        "initial_cwnd_bytes": 10_000,
        "min_rto_ns": 1_000_000,
        "max_rto_ns": 1_000_000_000,
        "bw_start_ns": [0],
        "bw_rate_bps": [GBPS],
        "bw_cycle_ns": 0,
        "ring_capacity": 1024,
    }
    path.update(overrides)
    return path


def make_spec(paths, sizes, arrivals=None, *, mss=1000, header=0, end_ns=10**12, seed=1,
              deadlines=None, weights=None) -> dict:
    n = len(sizes)
    arrivals = arrivals if arrivals is not None else [0] * n
    return {
        "mss_bytes": mss,
        "header_bytes": header,
        "end_ns": end_ns,
        "seed": seed,
        "paths": paths,
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
    # Path streams: the same (seed, path) repeats, another path differs.
    assert Xoshiro256ss.for_path(5, 0).next() == Xoshiro256ss.for_path(5, 0).next()
    assert Xoshiro256ss.for_path(5, 0).next() != Xoshiro256ss.for_path(5, 1).next()
    # for_path(seed, j) starts splitmix64 at seed + (j + 1) * gamma: path 0 of seed
    # 0 therefore starts at gamma, i.e. its first state word is splitmix64's *second*
    # output from state 0.
    _, second = splitmix64(splitmix64(0)[0])
    assert Xoshiro256ss.for_path(0, 0).s[0] == second


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


def test_newreno_rto_recovers_tail_losses_by_hand():
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
    path = make_path(cc="newreno", fwd_delay_ns=100_000, rev_delay_ns=100_000,
                     queue_bytes=1000, initial_cwnd_bytes=4000)
    out = run_reference(make_spec([path], [4000]), "minrtt")
    assert out["queue_drops"] == [2]
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
        assert out["delivered_bytes"][j] + lost_packets * mss == out["path_bytes_sent"][j]
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
    as_numpy["paths"] = [dict(spec["paths"][0],
                              bw_start_ns=np.array([0], dtype=np.int64),
                              bw_rate_bps=np.array([GBPS], dtype=np.int64),
                              fwd_delay_ns=np.int64(10_000))]
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
