"""The C core against the independent Python reference (tests/refsim.py).

Both implement docs/model.md; on random small episodes they must agree exactly, not
approximately: every block's completion time, every counter, the final RTT estimates.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refsim import run_reference
from specs import BLOCK_OUTPUTS, PATH_OUTPUTS, core_specs, run_core, scripted_policy

POLICIES = {"minrtt": "minrtt", "rr": "rr", "scripted": scripted_policy}


def assert_same(spec: dict, policy_name: str) -> None:
    policy = POLICIES[policy_name]
    ref = run_reference(spec, policy)
    core = run_core(spec, policy)
    for key in list(BLOCK_OUTPUTS.values()) + list(PATH_OUTPUTS.values()):
        np.testing.assert_array_equal(np.asarray(core[key]), np.asarray(ref[key], dtype=np.asarray(core[key]).dtype),
                                      err_msg=f"{key} differs ({policy_name})")
    assert core["decisions"] == ref["decisions"]
    assert core["last_event_ns"] == ref["last_event_ns"]
    assert core["reward"] == pytest.approx(ref["reward"], abs=1e-9)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=core_specs(), policy_name=st.sampled_from(sorted(POLICIES)))
def test_core_matches_reference(spec: dict, policy_name: str) -> None:
    assert_same(spec, policy_name)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=core_specs(cc="ideal"), policy_name=st.sampled_from(sorted(POLICIES)))
def test_core_matches_reference_ideal(spec: dict, policy_name: str) -> None:
    assert_same(spec, policy_name)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=core_specs(cc="newreno"), policy_name=st.sampled_from(sorted(POLICIES)))
def test_core_matches_reference_newreno(spec: dict, policy_name: str) -> None:
    assert_same(spec, policy_name)


def test_differential_cases_are_not_trivial() -> None:
    """The generator reaches losses, drops, RTOs, fast recovery and cancellations."""
    seen = {"queue_drops": 0, "random_losses": 0, "rto_count": 0, "fast_recoveries": 0, "cancelled": 0,
            "retransmissions": 0}

    @settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
    @given(spec=core_specs(cc="newreno"))
    def collect(spec: dict) -> None:
        out = run_core(spec, scripted_policy)
        for key in ("queue_drops", "random_losses", "rto_count", "fast_recoveries", "retransmissions"):
            seen[key] += int(np.sum(out[key]))
        seen["cancelled"] += int(np.sum(out["cancel_ns"] >= 0))

    collect()
    assert all(v > 0 for v in seen.values()), seen
