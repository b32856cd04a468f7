"""EDF and DTP on hand-computed episodes, the drop_expired harness option, and the
registry's parameters."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest
from mpsched import baselines
from mpsched.envs import PolicyError, registry, simulate
from mpsched.experiments.cli import main

MS = 1_000_000


def one_path(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    """One 8 Mbit/s ideal path, one-way delay 10 ms, 1000 B packets: 1 ms each."""
    return {
        "duration_s": 0.1,
        "transport": {"mss_bytes": 1000},
        "paths": [{"bandwidth": 8.0, "one_way_delay_ms": 10, "cc": "ideal"}],
        "workload": {"type": "explicit", "blocks": blocks},
    }


URGENT_SECOND = one_path([
    {"arrival_ms": 0, "size_bytes": 2000, "deadline_ms": 100},
    {"arrival_ms": 0, "size_bytes": 1000, "deadline_ms": 20},
])
HOPELESS_FIRST = one_path([
    {"arrival_ms": 0, "size_bytes": 5000, "deadline_ms": 2},
    {"arrival_ms": 0, "size_bytes": 1000, "deadline_ms": 20},
])


def completions(result: Any) -> list[int | None]:
    return [None if v is pd.NA else int(v) for v in result.blocks["completion_ns"]]


def test_edf_sends_the_earliest_deadline_first() -> None:
    assert completions(simulate(URGENT_SECOND, "minrtt")) == [12 * MS, 13 * MS]  # FIFO
    assert completions(simulate(URGENT_SECOND, "edf")) == [13 * MS, 11 * MS]


def test_edf_cancels_a_block_once_its_deadline_has_passed() -> None:
    """Block 0 sends at 0, 1 and 2 ms (its deadline, 2 ms, has not passed), is cancelled
    at the decision at 3 ms, and block 1 goes out at 3 ms: received at 14 ms."""
    r = simulate(HOPELESS_FIRST, "edf")
    assert list(r.blocks["cancelled"]) == [True, False]
    assert int(r.blocks.loc[0, "bytes_sent"]) == 3000
    assert completions(r) == [None, 14 * MS]


def test_drop_expired_forces_deadline_unaware_policies_too() -> None:
    fifo = simulate(HOPELESS_FIRST, "minrtt")
    assert completions(fifo) == [15 * MS, 16 * MS]  # keeps sending the late block
    dropped = simulate(HOPELESS_FIRST, "minrtt", drop_expired=True)
    assert list(dropped.blocks["cancelled"]) == [True, False]
    assert completions(dropped) == [None, 14 * MS]


def test_dtp_prefers_the_important_block_when_urgency_is_equal() -> None:
    sc = one_path([
        {"arrival_ms": 0, "size_bytes": 1000, "deadline_ms": 50, "priority": 0},
        {"arrival_ms": 0, "size_bytes": 1000, "deadline_ms": 50, "priority": 2},
    ])
    assert completions(simulate(sc, "dtp")) == [12 * MS, 11 * MS]
    # with importance weighted 0 only urgency counts: a tie, and the lower index wins
    assert completions(simulate(sc, registry.make("dtp", priority_weight=0.0))) == [11 * MS, 12 * MS]


def test_dtp_prefers_the_block_nearer_completion() -> None:
    """Equal slack and priority: remaining / size decides (1000 of 1000 vs 3000 of 3000
    are equal at first; after one packet of the big block it is 2/3 < 1)."""
    sc = one_path([
        {"arrival_ms": 0, "size_bytes": 3000, "deadline_ms": 50},
        {"arrival_ms": 0, "size_bytes": 1000, "deadline_ms": 50},
    ])
    assert completions(simulate(sc, "dtp")) == [13 * MS, 14 * MS]


def test_parameters_through_get_and_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert registry.make("dtp", priority_weight=0.25).params() == {"priority_weight": 0.25}
    assert registry.parse_param("dtp", "priority_weight=0.7") == ("priority_weight", 0.7)
    with pytest.raises(PolicyError, match="priority_weight.*expected a float"):
        registry.parse_param("dtp", "priority_weight=high")
    with pytest.raises(PolicyError, match="takes no parameter 'alpha'.*priority_weight"):
        registry.parse_param("dtp", "alpha=1")
    with pytest.raises(PolicyError, match="must be in \\[0, 1\\]"):
        registry.make("dtp", priority_weight=2.0)
    assert main(["run", "--scenario", "dams-rtt-40", "--policy", "dtp", "--param", "priority_weight=0.7",
                 "--drop-expired", "--json"]) == 0
    assert main(["run", "--scenario", "dams-rtt-40", "--policy", "dtp", "--param", "weight"]) == 2
    assert "expected key=value" in capsys.readouterr().err


def test_list_shows_each_policy_with_its_paper(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--policies"]) == 0
    out = capsys.readouterr().out
    for name in registry.ids("baseline"):
        cls = baselines.REGISTRY[name]
        assert name in out and cls.paper in out
    assert "rollout:BASE" in out and "mpsched.solvers.rollout:make_rollout" in out
