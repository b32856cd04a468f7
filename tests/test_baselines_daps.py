"""DAPS ([daps], Algorithm 3, eqs. (5)-(6)) on hand-computed episodes, and against
blind round-robin on the paper's Table II cases with a receive buffer below Rbuf_min.

With the in-order receiver's stream sequence (positions in byte order) DAPS sends later
blocks ahead on the slow path, as the paper's schedule does; with the send sequence
(positions as data first leaves) it cannot. The paper measures up to 77 % less
receive-buffer occupancy with DAPS (Sec. IV, 9 to 2 packets) and DAPS at the slow path's
capacity in all three small-buffer cases (Fig. 5). Here the two schedulers nearly tie:
most of the occupancy is data held up by retransmissions (the fast path's 2.5 kB queue
drops packets every few round trips), and which one leads depends on the fast path's
loss recovery. The cases where DAPS does not lead are strict xfails with the measured
numbers, so they fail the day the ordering returns.
"""

from __future__ import annotations

from typing import Any

import pytest
from mpsched import baselines
from mpsched.envs import EpisodeResult, PolicyError, registry, simulate

PACKET = 1500  # L of [daps] Sec. II-C


# ---------------------------------------------------------------------------------------
# Hand-computed episodes: 8 Mbit/s NewReno paths, 1000 B packets (1 ms each), windows of
# 20 packets unless said otherwise; every block is one packet, so the path that sent
# block k is the path of the k-th packet of the stream.
# ---------------------------------------------------------------------------------------


def paths_scenario(one_way_ms: list[float], blocks: list[dict[str, Any]], cwnd_packets: int = 20) -> dict[str, Any]:
    return {
        "duration_s": 0.6,
        "transport": {"mss_bytes": 1000, "header_bytes": 0, "cc": "newreno", "initial_cwnd_packets": cwnd_packets},
        "paths": [{"bandwidth": 8.0, "one_way_delay_ms": d} for d in one_way_ms],
        "workload": {"type": "explicit", "blocks": blocks},
    }


def packets(at_ms: float, n: int) -> list[dict[str, Any]]:
    return [{"arrival_ms": at_ms, "size_bytes": 1000, "deadline_ms": at_ms + 200}] * n


def path_sequence(result: EpisodeResult, first: int = 0) -> str:
    """The path that sent each one-packet block from ``first`` on, as digits."""
    b = result.blocks
    n_paths = len(result.paths)
    return "".join(str(next(i for i in range(n_paths) if b.loc[k, f"bytes_sent_p{i}"] > 0))
                   for k in range(first, len(b)))


FAST_SLOW = [10, 50]  # RTT 20 and 100 ms: eta = floor(100 / 20) = 5


def test_two_path_schedule_fast_path_first_then_the_slow_window() -> None:
    """30 packets at 150 ms, when both paths have one RTT of unchanged samples (stable).
    Algorithm 3: eta = 5, cwnd_f - unack_f = cwnd_s - unack_s = 20, and 30 > 20 packets:
    S = 5 packets on the fast path, then 20 on the slow path. The fast path then alone has
    room: it sends the remaining 5. Blind round-robin alternates from path 0."""
    sc = paths_scenario(FAST_SLOW, packets(150, 30))
    assert path_sequence(simulate(sc, "daps")) == "0" * 5 + "1" * 20 + "0" * 5
    assert path_sequence(simulate(sc, "blind-rr")) == "01" * 15


def test_data_that_fits_the_fast_window_goes_to_the_fast_path_alone() -> None:
    """Algorithm 3 requires n_pkts > cwnd_f - unack_f: 15 packets fit the fast path's 20
    free, so the schedule gives them all to it and the slow path waits."""
    assert path_sequence(simulate(paths_scenario(FAST_SLOW, packets(150, 15)), "daps")) == "0" * 15


def test_three_paths_take_the_ratio_to_the_slowest_rtt() -> None:
    """Paths by index: RTT 100, 20 and 40 ms; by RTT: 1, 2, 0. 45 packets at 150 ms.
    S1 = path 1 x min(100 // 20, 20) = 5, path 2 x min(100 // 40, 20) = 2, path 0 x 20:
    27 sent. Paths 1 and 2 can still send, no slot is left: a new schedule at the same
    instant, 18 pending > 15 free on path 1: path 1 x 5, path 2 x 2, path 0 x 0. Again
    (11 pending > 10): 5 and 2. Then 4 pending <= 5 free on path 1: path 1 alone takes them."""
    r = simulate(paths_scenario([50, 10, 20], packets(150, 45)), "daps")
    assert path_sequence(r) == "11111" "22" + "0" * 20 + "11111" "22" "11111" "22" "1111"


def warmed_up(block0_packets: int, later: int, cwnd_packets: int = 20, at_ms: float = 300) -> dict[str, Any]:
    """Block 0 (``block0_packets`` packets) at 0 ms, before any sample: blind round-robin
    alternates it over the paths. Then ``later`` one-packet blocks at ``at_ms``, when both
    paths are sampled against their values at the start (RTT 20 and 100 ms, the initial
    windows)."""
    return paths_scenario(FAST_SLOW, [{"arrival_ms": 0, "size_bytes": 1000 * block0_packets, "deadline_ms": 200}]
                          + packets(at_ms, later), cwnd_packets)


def test_stable_paths_use_the_delay_aware_schedule() -> None:
    """Block 0 of 8 packets: 4 per path, queued 1 ms apart; RTT samples 21..24 ms on the
    fast path and 101..104 on the slow one give srtt 21.103 and 101.103 ms (within 10 %
    of 20 and 100: eq. (5) holds) and windows do not grow (inflight 4 < cwnd / 2: eq. (6)
    holds). At 300 ms: eta = floor(101.103 / 21.103) = 4, so 4 fast, 20 slow, 6 fast."""
    r = simulate(warmed_up(8, 30), "daps")
    assert path_sequence(r, first=1) == "0" * 4 + "1" * 20 + "0" * 6


def test_an_rtt_change_beyond_ten_percent_falls_back_to_blind_round_robin() -> None:
    """Block 0 of 16 packets: 8 per path, RTT samples 21..28 ms: the fast srtt becomes
    23.405 ms, 17 % above 20: eq. (5) fails, so blind round-robin sends the 30 later
    packets (its cursor is back at path 0 after block 0's 16 alternating packets)."""
    r = simulate(warmed_up(16, 30), "daps")
    assert path_sequence(r, first=1) == "01" * 15
    assert path_sequence(r, first=1) == path_sequence(simulate(warmed_up(16, 30), "blind-rr"), first=1)


def test_window_growth_beyond_one_packet_falls_back_to_blind_round_robin() -> None:
    """Windows of 4 packets, block 0 of 8 packets fills both. Slow start on the first
    acknowledgements (inflight 4 and 3 packets >= half the window) grows each window from
    4 to 6 packets: more than one packet in one RTT, eq. (6) fails. The 10 packets at
    300 ms alternate; DAPS would have sent 4 fast then 6 slow."""
    r = simulate(warmed_up(8, 10, cwnd_packets=4), "daps")
    assert path_sequence(r, first=1) == "01" * 5


def test_no_schedule_before_every_path_has_been_sampled() -> None:
    """At 50 ms the slow path (RTT 100 ms) has no sample yet: blind round-robin."""
    assert path_sequence(simulate(paths_scenario(FAST_SLOW, packets(50, 30)), "daps")) == "01" * 15


def test_parameters() -> None:
    assert registry.make("daps").params() == {"rtt_tolerance": 0.1, "cwnd_growth_packets": 1.0}
    assert registry.make("daps", rtt_tolerance=0.2).native_params() == (0.2, 1.0)
    with pytest.raises(PolicyError, match="rtt_tolerance must be in"):
        registry.make("daps", rtt_tolerance=1.5)
    with pytest.raises(PolicyError, match="cwnd_growth_packets must be in"):
        registry.make("daps", cwnd_growth_packets=-1)
    assert not baselines.REGISTRY["daps"].deadline_aware


def test_a_looser_rtt_tolerance_keeps_the_schedule() -> None:
    """The 17 % RTT change of the fallback case passes eq. (5) with a 20 % tolerance."""
    r = simulate(warmed_up(16, 30), registry.make("daps", rtt_tolerance=0.2))
    assert path_sequence(r, first=1) != "01" * 15
    assert path_sequence(r, first=1).startswith("0000")


# ---------------------------------------------------------------------------------------
# The stream sequence: ideal 8 Mbit/s paths (1000 B = 1 ms, a path can send whenever its
# link is idle), one-way delays 10 and 50 ms (RTT 20 and 100: eta = 5), twelve one-packet
# blocks at 150 ms, when the first samples (unchanged RTTs, no windows) are stable. A fast
# packet sent at t arrives at t + 11 ms, a slow one at t + 51 ms; an acknowledgement takes
# the reverse delay.
# ---------------------------------------------------------------------------------------


def stream_scenario(rbuf_bytes: int, sequence: str = "stream") -> dict[str, Any]:
    return {
        "duration_s": 0.6,
        "transport": {"mss_bytes": 1000, "header_bytes": 0},
        "receiver": {"type": "in_order", "rbuf_bytes": rbuf_bytes, "sequence": sequence},
        "paths": [{"bandwidth": 8.0, "one_way_delay_ms": d, "cc": "ideal"} for d in FAST_SLOW],
        "workload": {"type": "explicit", "blocks": packets(150, 12)},
    }


def ms_list(column: Any) -> list[float]:
    return [int(x) / 1e6 for x in column]


def test_stream_sequence_slow_path_sends_ahead() -> None:
    """Each ms both links are idle: a schedule. 150 ms: the fast path's run is the next
    eta = 5 blocks, 0-4 (an ideal path's free window of one packet does not cap it), the
    slow path's the next one (its free window): block 5, sent at once, ahead of blocks
    1-4. 151 ms: blocks with bytes to send 1-4, 6, 7, ...: the fast run holds 1-4 and 6,
    the slow run block 7; then 152: 2 and 9, 153: 3 and 11. 154 ms: four blocks left
    (4, 6, 8, 10), fewer than eta: all the fast path's, and the slow path alone waits.

    Fast: 0-4 at 150-154, 6, 8, 10 at 155-157; slow: 5, 7, 9, 11 at 150-153. Arrivals
    161-165 (0-4), 201-204 (5, 7, 9, 11), 166-168 (6, 8, 10): 6 waits for 5, 8 for 7, 10 for
    9. With the send sequence the same paths take positions alternately (min(eta, 1) = 1
    slot each), so the fast path's blocks 2, 4, ... wait behind the slow path's 1, 3, ...
    """
    r = simulate(stream_scenario(100_000), "daps")
    assert path_sequence(r) == "00000" "1010101"
    assert ms_list(r.blocks["first_send_ns"]) == [150, 151, 152, 153, 154, 150, 155, 151, 156, 152, 157, 153]
    assert ms_list(r.blocks["completion_ns"]) == [161, 162, 163, 164, 165, 201, 201, 202, 202, 203, 203, 204]
    send = simulate(stream_scenario(100_000, "send"), "daps")
    assert path_sequence(send) == "01" * 6
    assert path_sequence(simulate(stream_scenario(100_000), "blind-rr")) == "01" * 6
    assert r.summary["mean_blocking_s"] < send.summary["mean_blocking_s"]


def test_stream_sequence_slow_path_alone_sends_beyond_the_schedule() -> None:
    """The slow path's link twice as fast (16 Mbit/s: a packet every 0.5 ms, arriving
    50.5 ms after it is sent): at each half millisecond the slow path alone can send.
    "Capacity on the slow path only: DAPS sends as much packets as possible, considering
    the rwnd and the last generated S" [daps-slides]: it sends the first block outside the
    fast path's run. 150 ms: runs 0-4 (fast) and 5 (slow); both send. 150.5: block 6.
    151: the blocks with bytes to send are 1-4, 7-11: the fast run is 1-4 and 7 (blocks
    0-7), the slow run 8; 151.5: block 9. 152: the fast run reaches block 10, the slow run
    is 11; 152.5: nothing outside the fast run is left, the slow path waits. The fast
    path sends 3, 4, 7, 10 at 153-156. Block 7 (at 166 ms) waits for 6 (201 ms), 10 for 9."""
    sc = stream_scenario(100_000)
    sc["paths"][1]["bandwidth"] = 16.0
    r = simulate(sc, "daps")
    assert path_sequence(r) == "00000" "11" "0" "11" "0" "1"
    assert ms_list(r.blocks["first_send_ns"]) == [150, 151, 152, 153, 154, 150, 150.5, 155, 151, 151.5, 156, 152]
    assert ms_list(r.blocks["completion_ns"]) == [161, 162, 163, 164, 165, 200.5, 201, 201, 201.5, 202, 202, 202.5]
    # With the send sequence a schedule holds no positions: one slot each at whole
    # milliseconds (an ideal path's free window is one packet), and the slow path alone
    # takes the next position at each half: the order of blind round-robin.
    sc["receiver"]["sequence"] = "send"
    assert path_sequence(simulate(sc, "daps")) == "011" * 4 == path_sequence(simulate(sc, "blind-rr"))


def test_stream_sequence_slow_block_beyond_the_window_waits() -> None:
    """rbuf 7000 B: a block is sendable while its end is within data_acked + 7000.
    150 ms: runs 0-4 (fast) and 5 (slow, ends at 6000): both send. 151-154 ms: the slow
    run is the block after the fast path's five (7, 8, 9, 10), beyond the window: the slow
    path waits and the fast path sends 1-4, then 6 at 155 (ends at 7000). Nothing is
    sendable until block 0's acknowledgement at 171 ms (data_acked 1000); from then on
    each acknowledgement opens one block, and with no more than eta left the fast path takes
    7-11 at 171-175. All wait for block 5 (201 ms); blind round-robin, whose slow packets
    hold back the window, needs until 303 ms."""
    r = simulate(stream_scenario(7000), "daps")
    assert path_sequence(r) == "00000" "1" "000000"
    assert ms_list(r.blocks["first_send_ns"]) == [150, 151, 152, 153, 154, 150, 155, 171, 172, 173, 174, 175]
    assert ms_list(r.blocks["completion_ns"]) == [161, 162, 163, 164, 165] + [201] * 7
    assert r.summary["max_rbuf_bytes"] <= 7000
    blind = simulate(stream_scenario(7000), "blind-rr")
    assert int(blind.blocks["completion_ns"].max()) == 303_000_000


def test_stream_sequence_window_within_the_fast_share_keeps_the_slow_path_idle() -> None:
    """rbuf 5000 B: the window never reaches past the fast path's five blocks, so the
    slow path's run is always beyond it and every block goes over the fast path."""
    assert path_sequence(simulate(stream_scenario(5000), "daps")) == "0" * 12


# ---------------------------------------------------------------------------------------
# Table II of [daps]: c_f = 1 Mbit/s, r_f = 20 ms, bulk data, the in-order receiver
# ---------------------------------------------------------------------------------------


def rbuf_min_bytes(capacities_mbps: list[float], rtts_ms: list[float]) -> float:
    """[daps] eq. (3): the sum of the capacities times the largest RTT."""
    return sum(capacities_mbps) * 1e6 / 8 * max(rtts_ms) / 1e3


def test_rbuf_min_worked_example() -> None:
    """[daps] Sec. II-D: 10 and 1 Mbit/s, 20 and 200 ms need 275 kB."""
    assert rbuf_min_bytes([10, 1], [20, 200]) == pytest.approx(275_000)


# (c_s Mbit/s, r_s ms, Rbuf bytes): the cases with Rbuf < Rbuf_min
TABLE_II_SMALL_BUFFER = ((2, 100, 35_000), (1, 200, 45_000), (2, 200, 45_000))


def table_ii_scenario(c_s: float, r_s: float, rbuf: int, sequence: str = "stream",
                      duration_s: float = 60.0) -> dict[str, Any]:
    """Two NewReno paths with queues of one bandwidth-delay product (the rule of thumb of
    Sec. II-C, as in ``mpsched validate``), bulk data in one-packet blocks (L = 1500 B),
    the in-order receiver with the given sequence."""
    c_f, r_f = 1.0, 20.0

    def path(name: str, mbps: float, rtt_ms: float) -> dict[str, Any]:
        bdp = int(mbps * 1e6 * rtt_ms / 1e3 / 8)
        return {"name": name, "bandwidth": mbps, "rtt_ms": rtt_ms, "queue_bytes": max(PACKET, bdp)}

    return {
        "name": f"daps-table-ii-{c_s:g}/{r_s:g}-{rbuf}-{sequence}",
        "duration_s": duration_s,
        "horizon_s": duration_s,
        "transport": {"mss_bytes": PACKET, "header_bytes": 0, "cc": "newreno"},
        "receiver": {"type": "in_order", "rbuf_bytes": rbuf, "sequence": sequence},
        "paths": [path("fast", c_f, r_f), path("slow", c_s, r_s)],
        "workload": {"type": "bulk", "rate_mbps": 4 * (c_f + c_s), "chunk_bytes": PACKET, "deadline_ms": 1000},
    }


TABLE_II_IDS = [f"{c_s}/{r_s}-{rbuf // 1000}kB" for c_s, r_s, rbuf in TABLE_II_SMALL_BUFFER]

# Measured (60 s, no randomness) since a loss found after its recovery ended no longer halves
# the window a second time (docs/model.md 7.4). Before that change DAPS led in all six
# checks, in 2/100 by 1.454 against 1.077 Mbit/s on the slow path, while blind round-robin's
# fast path entered fast recovery 292 times for 342 queue drops (now 229 for 400).
RBUF_NOT_LOWER = {
    (2, 100, 35_000): "[daps] Fig. 8 not reproduced here: mean occupancy DAPS 10,231 B, blind round-robin 8,058 B",
    (2, 200, 45_000): "[daps] Fig. 8 not reproduced here: mean occupancy DAPS 10,299 B, blind round-robin 9,686 B",
}
SLOW_PATH_NOT_MORE = {
    (2, 100, 35_000): "[daps] Fig. 5 not reproduced here: slow path DAPS 1.1740, blind round-robin 1.1762 Mbit/s",
    (1, 200, 45_000): "[daps] Fig. 5 not reproduced here: slow path DAPS 0.7068, blind round-robin 0.7074 Mbit/s",
    (2, 200, 45_000): "[daps] Fig. 5 not reproduced here: slow path DAPS 1.0870, blind round-robin 1.1184 Mbit/s",
}


def table_ii_params(not_reproduced: dict[tuple[float, float, int], str]) -> list[Any]:
    """The small-buffer cases, those in ``not_reproduced`` as strict xfails with its reason."""
    return [pytest.param(case, id=case_id,
                         marks=[pytest.mark.xfail(strict=True, reason=not_reproduced[case])]
                         if case in not_reproduced else [])
            for case, case_id in zip(TABLE_II_SMALL_BUFFER, TABLE_II_IDS, strict=True)]


@pytest.mark.parametrize("case", table_ii_params(RBUF_NOT_LOWER))
def test_daps_lowers_receive_buffer_occupancy_below_rbuf_min(case: tuple[float, float, int]) -> None:
    c_s, r_s, rbuf = case
    assert rbuf < rbuf_min_bytes([1.0, c_s], [20.0, r_s])
    sc = table_ii_scenario(*case)
    blind, daps = simulate(sc, "blind-rr").summary, simulate(sc, "daps").summary
    assert daps["mean_rbuf_bytes"] < blind["mean_rbuf_bytes"]


@pytest.mark.parametrize("case", table_ii_params(SLOW_PATH_NOT_MORE))
def test_daps_uses_the_slow_path_more_below_rbuf_min(case: tuple[float, float, int]) -> None:
    """Fig. 5: "average usage of the slow path", its throughput over 60 s."""
    sc = table_ii_scenario(*case)
    blind, daps = simulate(sc, "blind-rr").paths, simulate(sc, "daps").paths
    assert daps.loc[1, "throughput_bps"] > blind.loc[1, "throughput_bps"]
