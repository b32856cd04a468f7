"""Network-model features through the public API: coupled congestion control, the
in-order receiver and its seed-003 measures, cross traffic, bursty loss."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from mpsched.envs import Scenario, simulate
from mpsched.envs.policy import Observation


class Greedy:
    """Sends the oldest sendable block on whichever path asks: paths never wait for
    each other, so only the controllers can couple them."""

    name = "greedy"

    def decide(self, obs: Observation) -> int:
        return int(obs.sendable()[0])


def bulk(rate_mbps: float = 100.0, chunk_bytes: int = 1448 * 700) -> dict[str, Any]:
    return {"type": "bulk", "rate_mbps": rate_mbps, "chunk_bytes": chunk_bytes, "deadline_ms": 1000}


def two_paths(cc: str, second_mbps: float, duration_s: float = 20.0) -> dict[str, Any]:
    return {
        "name": f"{cc}-{second_mbps}",
        "duration_s": duration_s,
        "transport": {"mss_bytes": 1448},
        "paths": [
            {"bandwidth": 10, "rtt_ms": 40, "loss": 0.01, "cc": cc},
            {"bandwidth": second_mbps, "rtt_ms": 80, "loss": 0.01, "cc": cc},
        ],
        "workload": bulk(),
    }


@pytest.mark.parametrize("cc,coupled", [("newreno", False), ("cubic", False), ("lia", True), ("olia", True)])
def test_only_coupled_controllers_read_the_other_subflows(cc: str, coupled: bool) -> None:
    """Path 0 is identical in both runs; only path 1's bandwidth changes. Every piece is
    one full packet, so path 0 sees the same packets whichever blocks it carries."""
    a = simulate(two_paths(cc, 2.0), Greedy(), seed=4).paths.loc[0]
    b = simulate(two_paths(cc, 30.0), Greedy(), seed=4).paths.loc[0]
    keys = ["packets_sent", "random_losses", "fast_recoveries", "cwnd_bytes", "srtt_s"]
    same = all(a[k] == b[k] for k in keys)
    assert same != coupled, (a["packets_sent"], b["packets_sent"])


def asymmetric(rbuf_bytes: int, receiver: str = "in_order", duration_s: float = 5.0) -> dict[str, Any]:
    return {
        "name": "asymmetric",
        "duration_s": duration_s,
        "transport": {"mss_bytes": 1500, "header_bytes": 0},
        "receiver": {"type": receiver, "rbuf_bytes": rbuf_bytes},
        "paths": [{"name": "fast", "bandwidth": 10, "rtt_ms": 20}, {"name": "slow", "bandwidth": 2, "rtt_ms": 200}],
        "workload": bulk(40),
    }


def test_in_order_receiver_delivers_in_sequence_within_the_buffer() -> None:
    rbuf = 30_000
    r = simulate(asymmetric(rbuf), "rr", seed=0)
    delivered = r.pieces[r.pieces["delivery_ns"] >= 0]
    assert len(delivered) > 100
    assert np.all(np.diff(delivered["delivery_ns"].to_numpy()) >= 0)  # in sequence
    assert np.all(delivered["delivery_ns"] >= delivered["arrival_ns"])
    occupancy = r.receive_buffer()
    assert occupancy["rbuf_bytes"].min() >= 0
    assert occupancy["rbuf_bytes"].max() == r.summary["max_rbuf_bytes"] <= rbuf  # [daps] eq. (1)
    assert r.summary["max_blocking_s"] > 0.05  # fast-path pieces wait for the 200 ms path
    cumulative = r.cumulative_delivery()
    assert cumulative["delivered_bytes"].iloc[-1] == delivered["size_bytes"].sum()
    assert np.all(np.diff(cumulative["delivered_bytes"].to_numpy()) > 0)


def test_a_small_receive_buffer_limits_throughput() -> None:
    small = simulate(asymmetric(6_000), "rr", seed=0).cumulative_delivery()["delivered_bytes"].iloc[-1]
    large = simulate(asymmetric(400_000), "rr", seed=0).cumulative_delivery()["delivered_bytes"].iloc[-1]
    assert small < 0.5 * large


def test_block_receiver_has_no_buffer_series_but_has_slow_path_share() -> None:
    r = simulate(asymmetric(30_000, receiver="block"), "rr", seed=0)
    assert r.pieces is None
    with pytest.raises(ValueError, match="block-aware receiver"):
        r.receive_buffer()
    share = r.summary["slow_path_share"]
    assert share == pytest.approx(r.paths.loc[1, "bytes_sent"] / r.paths["bytes_sent"].sum())
    assert 0.0 < share < 0.5
    single = simulate({**asymmetric(30_000, "block"), "paths": [asymmetric(0)["paths"][0]]}, "rr", seed=0)
    assert np.isnan(single.summary["slow_path_share"])


def shared_with_cross(start_s: float, stop_s: float | None) -> dict[str, Any]:
    return {
        "name": "cross",
        "duration_s": 3.0,
        "links": [{"name": "bottleneck", "bandwidth": 10, "queue_ms": 50}],
        "receiver": {"type": "in_order", "rbuf_bytes": 1_000_000},
        "paths": [{"link": "bottleneck", "rtt_ms": 30}],
        "cross_traffic": [{"link": "bottleneck", "rtt_ms": 30, "start_s": start_s, "stop_s": stop_s}],
        "workload": bulk(40),
    }


def delivered_between(result: Any, a_s: float, b_s: float) -> int:
    c = result.cumulative_delivery()
    t, d = c["time_ns"].to_numpy(), c["delivered_bytes"].to_numpy()
    before = lambda s: int(d[t < s * 1e9][-1]) if np.any(t < s * 1e9) else 0  # noqa: E731
    return before(b_s) - before(a_s)


def test_cross_flow_takes_a_share_only_while_it_runs() -> None:
    r = simulate(shared_with_cross(1.0, 2.0), "minrtt", seed=0)
    alone = simulate(shared_with_cross(10.0, None), "minrtt", seed=0)
    assert alone.cross.loc[0, "packets_sent"] == 0  # starts after the end
    assert r.cross.loc[0, "packets_sent"] > 100
    # 10 Mbit/s is ~1.25 MB/s; while the cross flow runs the connection gets clearly less
    during = delivered_between(r, 1.2, 2.0)
    assert during < 0.8 * delivered_between(alone, 1.2, 2.0)
    assert delivered_between(r, 2.5, 3.0) > 0.8 * delivered_between(alone, 2.5, 3.0)


def test_scenario_round_trip_keeps_new_fields() -> None:
    d = {
        **shared_with_cross(0.5, 2.0),
        "receiver": {"type": "in_order", "rbuf_bytes": 100_000},
        "paths": [{"link": "bottleneck", "rtt_ms": 30, "cc": "olia",
                   "loss": {"model": "gilbert_elliott", "p": 0.01, "r": 0.3, "loss_bad": 0.5, "loss_good": 0.001}}],
    }
    sc = Scenario.from_dict(d)
    again = Scenario.from_dict(sc.to_dict())
    assert again == sc
    assert sc.paths[0].loss.long_run_rate == pytest.approx((0.01 * 0.5 + 0.3 * 0.001) / 0.31)


def test_gilbert_elliott_losses_come_in_bursts_iid_do_not() -> None:
    def run(loss: Any) -> tuple[int, int]:
        sc = {"name": "loss", "duration_s": 60, "workload": bulk(50),
              "paths": [{"bandwidth": 20, "rtt_ms": 20, "cc": "ideal", "loss": loss}]}
        p = simulate(sc, "minrtt", seed=2).paths.loc[0]
        return int(p["random_losses"]), int(p["loss_bursts"])

    ge_lost, ge_bursts = run({"model": "gilbert_elliott", "p": 0.005, "r": 0.1})
    iid_lost, iid_bursts = run(0.005 / 0.105)
    assert ge_lost == pytest.approx(iid_lost, rel=0.15)  # same long-run rate
    assert ge_lost / ge_bursts > 5 * iid_lost / iid_bursts


def stream_scenario(rbuf_bytes: int, n_blocks: int = 4) -> dict[str, Any]:
    """Two ideal 8 Mbit/s paths (1000 B = 1 ms), one-way delays 5 and 50 ms; blocks of one
    packet, all at t = 0; the in-order receiver with the stream sequence."""
    return {
        "name": "stream",
        "duration_s": 0.5,
        "transport": {"mss_bytes": 1000, "header_bytes": 0},
        "receiver": {"type": "in_order", "rbuf_bytes": rbuf_bytes, "sequence": "stream"},
        "paths": [{"bandwidth": 8.0, "one_way_delay_ms": 5, "cc": "ideal"},
                  {"bandwidth": 8.0, "one_way_delay_ms": 50, "cc": "ideal"}],
        "workload": {"type": "explicit", "blocks": [
            {"arrival_ms": 0, "size_bytes": 1000, "deadline_ms": 400} for _ in range(n_blocks)]},
    }


class SlowPathTakesTheLast:
    """Path 1 (slow) sends the last sendable block, path 0 the first: out of order."""

    name = "slow-takes-last"

    def decide(self, obs: Observation) -> int:
        blocks = obs.sendable()
        return int(blocks[-1] if obs.path == 1 else blocks[0])


def test_stream_sequence_lets_a_scheduler_send_ahead_on_the_slow_path() -> None:
    """At 0 ms path 0 sends block 0 (arrives 6 ms) and the slow path block 3 (51 ms); at
    1 ms path 0 sends block 1 (7 ms) and the slow path block 2 (52 ms).

    Stream sequence (byte order 0, 1, 2, 3): blocks 0 and 1 are delivered on arrival,
    block 3 waits for block 2: completions 6, 7, 52, 52 ms. Positions given at first
    send (0, 3, 1, 2): block 1 waits behind block 3: 6, 51, 52, 51 ms.
    """
    ms = 1_000_000
    r = simulate(stream_scenario(100_000), SlowPathTakesTheLast())
    assert list(r.blocks["completion_ns"]) == [6 * ms, 7 * ms, 52 * ms, 52 * ms]
    assert list(r.pieces["piece"]) == [0, 1, 2, 3]  # sequence order = byte order
    assert r.summary["max_blocking_s"] == 0.001
    send = simulate({**stream_scenario(100_000), "receiver": {"type": "in_order", "rbuf_bytes": 100_000}},
                    SlowPathTakesTheLast())
    assert list(send.blocks["completion_ns"]) == [6 * ms, 51 * ms, 52 * ms, 51 * ms]
    assert list(send.pieces["piece"]) == [0, 3, 1, 2]


def test_stream_sequence_window_is_per_block() -> None:
    """rbuf 2000 B: only blocks 0 and 1 fit the window at first. The slow path may not
    send ahead to block 3; it takes block 1, and block 2 waits for data_ack = 1000."""
    r = simulate(stream_scenario(2000), SlowPathTakesTheLast())
    ms = 1_000_000
    first_send = [int(x) for x in r.blocks["first_send_ns"]]
    assert first_send[:2] == [0, 0]
    assert min(first_send[2:]) >= 11 * ms  # after block 0's acknowledgement (5 + 5 ms, + 1 ms service)
    assert r.summary["max_rbuf_bytes"] <= 2000


def test_stream_sequence_skips_the_unsent_bytes_of_a_cancelled_block() -> None:
    class CancelFirst:
        name = "cancel-first"

        def decide(self, obs: Observation) -> int:
            if not obs.cancelled[0]:
                obs.cancel(0)
            return int(obs.sendable()[0])

    r = simulate(stream_scenario(100_000, n_blocks=2), CancelFirst())
    assert list(r.blocks["cancelled"]) == [True, False]
    assert int(r.blocks.loc[1, "completion_ns"]) == 6_000_000  # not held up by block 0
    with pytest.raises(Exception, match="sequence"):
        Scenario.from_dict({**stream_scenario(100_000), "receiver": {"type": "block", "sequence": "stream"}})
