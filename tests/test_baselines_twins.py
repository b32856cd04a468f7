"""Every baseline's Python specification against its native twin.

On random episodes (any controller, shared links, cross traffic, either receiver, loss,
expired blocks dropped or not) the two must make the same decisions and reach the same
state: the twin is only a faster way to run the specification.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpsched import baselines
from mpsched.envs.simulate import drive

from specs import core_specs, make_sim

TWINNED = [name for name in baselines.names() if baselines.REGISTRY[name].native]
COMPARED_VIEWS = ("completion_ns", "first_send_ns", "cancel_ns", "bytes_sent", "acked_bytes", "packets_sent",
                  "srtt_ns", "cwnd_bytes")

_THRESHOLD = st.floats(0.0, 2.0)
# Each parameter over its whole valid range (the constructors' checks), ends included.
PARAMETERS: dict[str, dict[str, st.SearchStrategy]] = {
    "blest": {"lambda_scale": st.floats(0.01, 10.0)},
    "dams": {"change_threshold": _THRESHOLD},
    "dams-c": {"change_threshold": _THRESHOLD},
    "dams-robust": {"alpha": st.floats(0.0, 4.0), "change_threshold": _THRESHOLD},
    "daps": {"rtt_tolerance": st.floats(0.0, 0.99),
             "cwnd_growth_packets": st.one_of(st.floats(0.0, 8.0), st.just(1e6))},
    "dems": {"change_threshold": _THRESHOLD},
    "dtp": {"priority_weight": st.floats(0.0, 1.0)},
    "ecf": {"beta": st.floats(0.0, 1.0), "rate_thresholds": st.booleans()},
    "sa-ecf": {"quantum_bytes": st.integers(1, 20_000)},
}


def assert_twins_agree(name: str, spec: dict, params: dict) -> None:
    native, python = make_sim(spec), make_sim(spec)
    policy = baselines.get(name, **params)
    drive(native, policy)
    drive(python, policy.python())
    assert native.decisions == python.decisions
    assert native.last_event_ns == python.last_event_ns
    for view in COMPARED_VIEWS:
        np.testing.assert_array_equal(np.asarray(native.view(view)), np.asarray(python.view(view)),
                                      err_msg=f"{name} {params}: {view}")
    assert native.reward_total == python.reward_total


@pytest.mark.parametrize("name", TWINNED)
def test_specification_and_native_twin_agree(name: str) -> None:
    @settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(spec=core_specs(max_blocks=12))
    def check(spec: dict) -> None:
        assert_twins_agree(name, spec, {})

    check()


@pytest.mark.parametrize("name", sorted(PARAMETERS))
def test_specification_and_native_twin_agree_for_any_parameters(name: str) -> None:
    """The parameters reach the twin in the order and the meaning the spec gives them."""
    @settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(spec=core_specs(max_blocks=12), params=st.fixed_dictionaries(PARAMETERS[name]))
    def check(spec: dict, params: dict) -> None:
        assert_twins_agree(name, spec, params)

    check()


def test_every_parameter_of_a_twin_is_drawn() -> None:
    for name in TWINNED:
        assert set(baselines.get(name).params()) == set(PARAMETERS.get(name, {})), name


def test_every_native_twin_has_a_specification() -> None:
    from mpsched.envs import _core

    twins = {baselines.REGISTRY[name].native for name in TWINNED}
    assert twins == set(_core.native_policies())
    for name in TWINNED:
        cls = baselines.REGISTRY[name]
        assert _core.native_policies()[cls.native] == len(baselines.get(name).native_params())


def test_registry_has_every_scheduler_of_the_papers() -> None:
    expected = {"minrtt", "rr", "ecf", "blest", "dems", "dams", "dams-c", "dams-robust", "daps", "blind-rr",
                "srpt-ecf", "sa-ecf", "fcfs-minrtt", "srpt-minrtt", "spd", "lpc", "let", "spdx", "lpcx", "letx",
                "edf", "dtp"}
    assert expected <= set(baselines.names())
    for name in expected:
        cls = baselines.REGISTRY[name]
        assert cls.native, name  # every paper scheduler runs natively
        assert cls.paper and (cls.__doc__ or "").strip(), name
