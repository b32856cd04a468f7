"""LPC, LET and the RTX-aware SPDX, LPCX, LETX ([matsufuji18] Sec. V): each selector's choice
on constructed states, hand-computed tiny episodes, and the 2p-d acceptance check."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from mpsched.baselines.rtx import let_choice, lpc_choice, lpc_credit, rtx_candidates, spd_choice
from mpsched.envs import WAIT, registry, simulate

MS = 1_000_000
RTX = ("lpc", "let", "spdx", "lpcx", "letx")


# --- the selectors on constructed states -----------------------------------------------

def state(**paths: Any) -> SimpleNamespace:
    """An observation of three paths with one sendable block (index 7); the fields not
    given are equal on every path."""
    base = {
        "srtt_ns": [50 * MS] * 3, "cwnd_bytes": [10_000] * 3, "path_inflight_bytes": [0] * 3,
        "rate_bps": [1e6] * 3, "recovery": [0] * 3, "can_send": [1] * 3,
    }
    base.update(paths)
    arrays = {k: np.array(v) for k, v in base.items()}
    return SimpleNamespace(path=0, n_paths=3, mss_bytes=1000, sendable=lambda: np.array([7, 9]), **arrays)


def choices(obs: SimpleNamespace) -> dict[str, int]:
    """The path each policy sends on: the one whose decision is not WAIT."""
    out = {}
    for name in ("spd",) + RTX:
        policy = registry.make(name).python()
        senders = []
        for j in range(obs.n_paths):
            if obs.can_send[j]:
                obs.path = j
                action = policy.decide(obs)
                if action != WAIT:
                    assert action == 7  # the oldest sendable block
                    senders.append(j)
        assert len(senders) == 1, (name, senders)
        out[name] = senders[0]
    return out


def test_lpc_takes_the_most_packet_credits() -> None:
    """Credits (cwnd - inflight) // mss: 10 - 4 = 6, 8 - 0 = 8, (20000 - 12500) // 1000 = 7
    (7.5 packets of room are 7 full-size packets): path 1. SPD takes path 2 (30 ms), LET
    path 0 (the largest rate)."""
    obs = state(srtt_ns=[60 * MS, 40 * MS, 30 * MS], cwnd_bytes=[10_000, 8000, 20_000],
                path_inflight_bytes=[4000, 0, 12_500], rate_bps=[3e6, 2e6, 1e6])
    assert [lpc_credit(int(c), int(f), 1000) for c, f in zip(obs.cwnd_bytes, obs.path_inflight_bytes)] == [6, 8, 7]
    assert choices(obs) == {"spd": 2, "lpc": 1, "let": 0, "spdx": 2, "lpcx": 1, "letx": 0}


def test_ties_go_to_the_lowest_index() -> None:
    """7.5 and 7.9 packets of room are both 7 credits: paths 1 and 2 tie, path 1 wins; equal
    rates and equal RTTs also go to the lowest index that can send."""
    obs = state(cwnd_bytes=[3000, 10_000, 10_000], path_inflight_bytes=[0, 2500, 2100], can_send=[0, 1, 1])
    assert choices(obs) == {"spd": 1, "lpc": 1, "let": 1, "spdx": 1, "lpcx": 1, "letx": 1}


def test_an_ideal_path_has_one_packet_of_credit() -> None:
    """A path without a window (cwnd 0, ideal) admits one packet; a window-based path that
    can send admits at least one, so on a tie the lower index wins."""
    assert lpc_credit(0, 5000, 1000) == 1
    assert lpc_choice(np.array([0, 1000]), np.array([0, 0]), 1000, [True, True]) == 0
    assert lpc_choice(np.array([0, 2000]), np.array([0, 0]), 1000, [True, True]) == 1


def test_x_variants_drop_the_paths_in_recovery() -> None:
    """Path 0 has the smallest RTT, the most credits and the largest rate, but is in fast
    recovery; path 1 is after a timeout. Every X variant sends on path 2, its base
    selector on path 0."""
    obs = state(srtt_ns=[20 * MS, 30 * MS, 40 * MS], cwnd_bytes=[30_000, 20_000, 10_000],
                rate_bps=[9e6, 6e6, 2e6], recovery=[1, 2, 0])
    assert rtx_candidates(obs.can_send, obs.recovery) == [False, False, True]
    assert choices(obs) == {"spd": 0, "lpc": 0, "let": 0, "spdx": 2, "lpcx": 2, "letx": 2}


def test_x_variants_fall_back_when_every_path_that_can_send_is_in_recovery() -> None:
    """Path 2 is out of recovery but its window is full; paths 0 and 1 can send and are in
    recovery: the X variants choose among them as their base selector does."""
    obs = state(srtt_ns=[40 * MS, 20 * MS, 10 * MS], cwnd_bytes=[30_000, 20_000, 10_000],
                rate_bps=[1e6, 9e6, 9e6], recovery=[1, 2, 0], can_send=[1, 1, 0])
    assert rtx_candidates(obs.can_send, obs.recovery) == [True, True, False]
    assert choices(obs) == {"spd": 1, "lpc": 0, "let": 1, "spdx": 1, "lpcx": 0, "letx": 1}


def test_pure_selectors_without_candidates() -> None:
    none = [False, False]
    assert spd_choice(np.array([1, 2]), none) == -1
    assert lpc_choice(np.array([5000, 5000]), np.array([0, 0]), 1000, none) == -1
    assert let_choice(np.array([1.0, 2.0]), none) == -1


# --- tiny episodes -----------------------------------------------------------------------

def two_paths(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    """NewReno paths of 8 Mbit/s with 1000 B packets (1 ms each) and an initial window of
    8 packets: path 0 one-way 10 ms with room for 4 waiting packets, path 1 one-way 30 ms."""
    return {
        "duration_s": 1.0,
        "transport": {"mss_bytes": 1000, "initial_cwnd_packets": 8},
        "paths": [
            {"bandwidth": 8.0, "one_way_delay_ms": 10, "cc": "newreno", "queue_packets": 4},
            {"bandwidth": 8.0, "one_way_delay_ms": 30, "cc": "newreno", "queue_packets": 100},
        ],
        "workload": {"type": "explicit", "blocks": blocks},
    }


BURST = [{"arrival_ms": 0, "size_bytes": 8000, "deadline_ms": 1000}]


def per_path(result: Any) -> list[tuple[int, int, int]]:
    """(completion ns, bytes sent on path 0, on path 1) per block."""
    return [(int(r.completion_ns), int(r.bytes_sent_p0), int(r.bytes_sent_p1)) for r in result.blocks.itertuples()]


def test_lpc_spreads_a_window_over_both_paths() -> None:
    """LPC: credits 8 and 8, path 0 sends (7 left), path 1 sends, ...: pieces 0, 2, 4, 6 on
    path 0 (served 0-4 ms, received by 14 ms), 1, 3, 5, 7 on path 1 (received by 34 ms).

    SPD puts the whole window on path 0 (20 ms RTT): one packet in service, four waiting,
    pieces 5-7 dropped at the queue. Acknowledgements of pieces 0-4 arrive at 21-25 ms;
    with no duplicate acknowledgement after them only the timeout finds the losses, at
    25 ms + 200 ms (the minimum RTO; srtt + 4 rttvar is about 40 ms). The timed-out path
    (window 1 packet) resends piece 5 (received at 236 ms), path 1 pieces 6 and 7 (served
    225-227 ms, received at 257 ms)."""
    assert per_path(simulate(two_paths(BURST), "lpc")) == [(34 * MS, 4000, 4000)]
    assert per_path(simulate(two_paths(BURST), "spd")) == [(257 * MS, 9000, 2000)]


def test_spdx_avoids_the_path_after_a_timeout() -> None:
    """The same burst: at 225 ms path 0 has timed out (recovery 2) and both paths can send.
    SPD resends piece 5 on path 0 (smaller RTT); SPDX sends all three lost pieces on path 1
    (received at 256, 257, 258 ms). LET and LETX do the same: path 0's window collapsed to
    one packet (1000 B / 22 ms < 8000 B / 60 ms), so its estimated throughput is lower."""
    for name in ("spdx", "let", "letx"):
        assert per_path(simulate(two_paths(BURST), name)) == [(258 * MS, 8000, 3000)], name


def test_spdx_sends_on_a_path_in_recovery_when_no_other_can_send() -> None:
    """A second block of 6 packets arrives at 226 ms, when path 1 holds the three resent
    pieces: path 1 (out of recovery) takes 5 packets and its window is full; path 0, in
    recovery since the timeout, is then the only path that can send and takes the last
    packet (served 226-227 ms) instead of waiting for path 1's acknowledgements (the first
    at 286 ms). Path 1's packets are served 228-233 ms: the block completes at 263 ms."""
    blocks = BURST + [{"arrival_ms": 226, "size_bytes": 6000, "deadline_ms": 1000}]
    assert per_path(simulate(two_paths(blocks), "spdx")) == [(258 * MS, 8000, 3000), (263 * MS, 1000, 5000)]


def test_let_prefers_the_faster_ideal_path() -> None:
    """Ideal paths of 8 and 16 Mbit/s (one-way 10 and 40 ms), two 1000 B blocks at 0:
    LET sends block 0 on path 1 (the larger rate, received at 40.5 ms) and block 1 on
    path 0, whose link is then the only idle one (11 ms); SPD and LPC (one credit each,
    the lower index) the other way round."""
    sc = {
        "duration_s": 0.2,
        "transport": {"mss_bytes": 1000},
        "paths": [{"bandwidth": 8.0, "one_way_delay_ms": 10, "cc": "ideal"},
                  {"bandwidth": 16.0, "one_way_delay_ms": 40, "cc": "ideal"}],
        "workload": {"type": "explicit", "blocks": [{"arrival_ms": 0, "size_bytes": 1000, "deadline_ms": 100}] * 2},
    }
    for name in ("let", "letx"):
        assert per_path(simulate(sc, name)) == [(40_500_000, 0, 1000), (11 * MS, 1000, 0)], name
    for name in ("spd", "lpc", "lpcx"):
        assert per_path(simulate(sc, name)) == [(11 * MS, 1000, 0), (40_500_000, 0, 1000)], name


# --- registry ----------------------------------------------------------------------------

def test_registered_with_native_twins_and_no_parameters() -> None:
    from mpsched.envs import _core

    natives = _core.native_policies()
    for name in RTX:
        policy = registry.make(name)
        assert policy.native == name and natives[name] == ()
        assert policy.params() == {} and not policy.deadline_aware
        assert "[matsufuji18]" in policy.paper


# --- [matsufuji18], scenario 2p-d -------------------------------------------------------------

def scenario_2p_d(cc: str) -> dict[str, Any]:
    """[matsufuji18] Table II, 2p-d: flow 1 RTT 50 ms, 5 Mb/s, 0.5 % random loss; flow 2 RTT
    100 ms, 5 Mb/s, lossless; Table I: a 5.24 Mbit/s H.264 (AVC) video of 10 min 24 s.
    The paper gives neither frame rate, GOP nor client buffer: 30 fps, the workload's
    GOP and a 1 s start-up delay (the VLC client's default network caching)."""
    return {
        "duration_s": 624.0,
        "paths": [
            {"name": "flow1", "bandwidth": 5, "rtt_ms": 50, "loss": 0.005, "cc": cc},
            {"name": "flow2", "bandwidth": 5, "rtt_ms": 100, "cc": cc},
        ],
        "workload": {"type": "avc", "fps": 30, "bitrate_mbps": 5.24, "playout_startup_ms": 1000},
    }


SEEDS = range(1, 6)  # the paper reports five trials per point


@pytest.mark.parametrize("cc", ["lia", "olia"])
def test_2p_d_spdx_discards_no_more_pictures_than_spd(cc: str) -> None:
    discards = {
        name: [simulate(scenario_2p_d(cc), name, seed=seed).summary["picture_discards"] for seed in SEEDS]
        for name in ("spd", "spdx")
    }
    assert sum(discards["spdx"]) <= sum(discards["spd"]), discards
