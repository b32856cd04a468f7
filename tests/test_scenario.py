"""Scenarios: the built-ins, conversions, files, defaults."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from mpsched.envs import Scenario, build_episode, scenarios, simulate


@pytest.mark.parametrize("name", scenarios.names())
def test_builtins_round_trip(name: str) -> None:
    sc = scenarios.get(name)
    assert sc.name == name
    assert Scenario.from_dict(sc.to_dict()) == sc
    assert Scenario.from_dict(yaml.safe_load(sc.to_yaml())) == sc
    ep = build_episode(sc, seed=0)
    assert len(ep.blocks) == 1800  # 60 s of 30 fps video


def test_builtins_follow_the_dams_paper() -> None:
    rtt = scenarios.get("dams-rtt-160")
    assert [p.rtt_s for p in rtt.paths] == [0.01, 0.16]
    assert [p.bandwidth["mbps"] for p in rtt.paths] == [2.0, 3.0]
    bw = scenarios.get("dams-bw-0.5-1")
    assert [p.bandwidth["mbps"] for p in bw.paths] == [0.5, 1.0]
    assert [p.loss.rate for p in bw.paths] == [0.0001, 0.0001]
    assert [p.rtt_s for p in bw.paths] == [0.01, 0.02]
    dyn = build_episode(scenarios.get("dams-dynamic-2-rtt-80"), seed=0)
    first, second = dyn.path_schedules
    assert [first.rate_at(t) for t in (0, 999_999_999, 1_000_000_000, 1_999_999_999, 2_000_000_000)] == [
        2_500_000, 2_500_000, 500_000, 500_000, 2_500_000]
    assert second.rate_at(1_500_000_000) == 1_000_000
    for sc in (rtt, bw):
        assert sc.workload["bitrate_mbps"] == 4.3 and sc.workload["deadline_ms"] == 200


def test_yaml_file_with_a_relative_trace(tmp_path: Path) -> None:
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "link.log").write_text("0 2.0\n1 4.0\n2 2.0\n")
    (tmp_path / "s.yaml").write_text(
        "name: from-file\n"
        "duration_s: 2\n"
        "paths:\n"
        "  - {bandwidth: {type: trace, format: cooked, file: traces/link.log}, rtt_ms: 30}\n"
        "  - {bandwidth: 1.5, rtt_ms: 50, queue_packets: 20}\n"
        "workload: {type: bulk, rate_mbps: 1.0}\n"
    )
    sc = Scenario.from_yaml(tmp_path / "s.yaml")
    assert sc.to_dict()["paths"][0]["bandwidth"]["file"] == str(tmp_path / "traces" / "link.log")
    assert sc.paths[1].queue_bytes == 20 * 1448
    # the trace's mean (about 2.67 Mbit/s over its 3 s) sizes the default 100 ms queue
    assert sc.paths[0].queue_bytes == pytest.approx(8_000_000 / 3 * 0.1 / 8, rel=0.01)
    # a copy elsewhere still finds the trace: to_dict made the path absolute
    moved = Scenario.from_dict(sc.to_dict())
    assert build_episode(moved, 1).path_schedules[0].rate_at(1_500_000_000) == 4_000_000
    r = simulate(tmp_path / "s.yaml", "rr", seed=0)
    assert r.scenario == "from-file"


def test_defaults_and_replace() -> None:
    sc = Scenario.from_dict({"duration_s": 1, "paths": [{"bandwidth": 8, "rtt_ms": 10}], "workload": {"type": "avc"}})
    p = sc.paths[0]
    assert (p.fwd_delay_s, p.rev_delay_s, p.cc, p.loss.rate) == (0.005, 0.005, "newreno", 0.0)
    assert p.queue_bytes == 100_000  # 100 ms at 8 Mbit/s
    assert sc.transport.mss_bytes == 1448 and sc.receiver.type == "block"
    shorter = sc.replace(duration_s=0.5, name="half")
    assert (shorter.duration_s, shorter.name, shorter.paths) == (0.5, "half", sc.paths)
    ep = build_episode(sc, 0)
    assert ep.end_ns == int(ep.blocks.deadline_ns.max())


@pytest.mark.parametrize(("key", "default", "other"), [("fast_recovery", "immediate", "prr"),
                                                      ("cubic_arithmetic", "rfc9438", "segments")])
def test_transport_options_are_written_only_where_they_are_not_the_default(key: str, default: str,
                                                                           other: str) -> None:
    """transport.fast_recovery and transport.cubic_arithmetic reach every subflow of the
    core; the canonical form (and so the scenario hash result stores key rows by) of a
    scenario that leaves them at the default is the one it had before the options existed."""
    base = {"duration_s": 1, "links": [{"name": "shared", "bandwidth": 8}],
            "paths": [{"link": "shared", "rtt_ms": 10}], "workload": {"type": "avc"},
            "cross_traffic": [{"link": "shared", "rtt_ms": 20, "cc": "cubic"}]}
    plain = Scenario.from_dict(base)
    assert getattr(plain.transport, key) == default
    assert key not in plain.to_dict()["transport"]
    changed = Scenario.from_dict({**base, "transport": {key: other}})
    assert changed.to_dict()["transport"][key] == other
    assert Scenario.from_dict(changed.to_dict()) == changed
    core = build_episode(changed, 0).core_inputs()
    assert [p[key] for p in core["paths"] + core["cross"]] == [other, other]


def test_asymmetric_delays_and_horizon() -> None:
    sc = Scenario.from_dict({
        "duration_s": 1, "horizon_s": 5,
        "paths": [{"bandwidth": 2, "fwd_delay_ms": 30, "rev_delay_ms": 10, "queue_ms": 50}],
        "workload": {"type": "avc", "fps": 10},
    })
    inputs = build_episode(sc, 0).core_inputs()
    p = inputs["paths"][0]
    assert (p["fwd_delay_ns"], p["rev_delay_ns"], inputs["links"][p["link"]]["queue_bytes"]) == (
        30_000_000, 10_000_000, 12_500)
    assert inputs["end_ns"] == 5_000_000_000


def test_seed_changes_the_workload_draw() -> None:
    sc = scenarios.get("dams-rtt-40")
    a, b = build_episode(sc, 1), build_episode(sc, 2)
    assert not np.array_equal(a.blocks.size_bytes, b.blocks.size_bytes)
    np.testing.assert_array_equal(a.blocks.size_bytes, build_episode(sc, 1).blocks.size_bytes)
    assert a.core_seed != b.core_seed
