"""The C core against the independent Python reference (tests/refsim.py).

Both implement docs/model.md; on random small episodes they must agree exactly, not
approximately: every block's completion time, every counter, the final RTT estimates and
windows, the cross flows' counters and the in-order receiver's per-piece times.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refsim import run_reference
from specs import BLOCK_OUTPUTS, CROSS_OUTPUTS, IN_ORDER_OUTPUTS, PATH_OUTPUTS, core_specs, run_core, scripted_policy

POLICIES = {"minrtt": "minrtt", "rr": "rr", "scripted": scripted_policy}
COMPARED = list(BLOCK_OUTPUTS.values()) + list(PATH_OUTPUTS.values()) + list(CROSS_OUTPUTS.values())


def assert_same(spec: dict, policy_name: str) -> None:
    policy = POLICIES[policy_name]
    ref = run_reference(spec, policy)
    core = run_core(spec, policy)
    keys = COMPARED + (list(IN_ORDER_OUTPUTS) if spec["receiver"] == "in_order" else [])
    for key in keys:
        expected = np.asarray(ref[key], dtype=np.asarray(core[key]).dtype)
        np.testing.assert_array_equal(np.asarray(core[key]), expected, err_msg=f"{key} differs ({policy_name})")
    assert core["decisions"] == ref["decisions"]
    assert core["last_event_ns"] == ref["last_event_ns"]
    assert core["reward"] == pytest.approx(ref["reward"], abs=1e-9)


SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@settings(max_examples=300, **SETTINGS)
@given(spec=core_specs(), policy_name=st.sampled_from(sorted(POLICIES)))
def test_core_matches_reference(spec: dict, policy_name: str) -> None:
    assert_same(spec, policy_name)


@pytest.mark.parametrize("cc", ["ideal", "newreno", "cubic", "lia", "olia"])
def test_core_matches_reference_per_controller(cc: str) -> None:
    @settings(max_examples=60, **SETTINGS)
    @given(spec=core_specs(cc=cc), policy_name=st.sampled_from(sorted(POLICIES)))
    def check(spec: dict, policy_name: str) -> None:
        assert_same(spec, policy_name)

    check()


@settings(max_examples=80, **SETTINGS)
@given(spec=core_specs(receiver="in_order"), policy_name=st.sampled_from(sorted(POLICIES)))
def test_core_matches_reference_in_order(spec: dict, policy_name: str) -> None:
    assert_same(spec, policy_name)


@settings(max_examples=80, **SETTINGS)
@given(spec=core_specs(shared=True, cross=True), policy_name=st.sampled_from(sorted(POLICIES)))
def test_core_matches_reference_shared_links_and_cross_traffic(spec: dict, policy_name: str) -> None:
    assert_same(spec, policy_name)


def test_differential_cases_are_not_trivial() -> None:
    """The generator reaches losses, bursts, drops, RTOs, fast recovery, cancellations,
    cross-flow packets and in-order receive-buffer waits."""
    seen = {"queue_drops": 0, "random_losses": 0, "loss_bursts": 0, "rto_count": 0, "fast_recoveries": 0,
            "cancelled": 0, "retransmissions": 0, "cross_packets_sent": 0, "cross_queue_drops": 0,
            "in_order_waits": 0}

    @settings(max_examples=150, database=None, **SETTINGS)
    @given(spec=core_specs())
    def collect(spec: dict) -> None:
        out = run_core(spec, scripted_policy)
        for key in seen:
            if key in out:
                seen[key] += int(np.sum(out[key]))
        seen["cancelled"] += int(np.sum(out["cancel_ns"] >= 0))
        if spec["receiver"] == "in_order":
            delivered = out["piece_delivery_ns"] >= 0
            seen["in_order_waits"] += int(np.sum(out["piece_delivery_ns"][delivered] > out["piece_arrival_ns"][delivered]))

    collect()
    assert all(v > 0 for v in seen.values()), seen
