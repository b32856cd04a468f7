"""Every baseline's Python specification against its native twin.

On random episodes (any controller, shared links, cross traffic, either receiver, loss,
expired blocks dropped or not) the two must make the same decisions and reach the same
state: the twin is only a faster way to run the specification.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from mpsched import baselines
from mpsched.envs.simulate import drive

from specs import core_specs, make_sim

TWINNED = [name for name in baselines.names() if baselines.REGISTRY[name].native]
COMPARED_VIEWS = ("completion_ns", "first_send_ns", "cancel_ns", "bytes_sent", "acked_bytes", "packets_sent",
                  "srtt_ns", "cwnd_bytes")


@pytest.mark.parametrize("name", TWINNED)
def test_specification_and_native_twin_agree(name: str) -> None:
    @settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(spec=core_specs(max_blocks=12))
    def check(spec: dict) -> None:
        native, python = make_sim(spec), make_sim(spec)
        policy = baselines.get(name)
        drive(native, policy)
        drive(python, policy.python())
        assert native.decisions == python.decisions
        assert native.last_event_ns == python.last_event_ns
        for view in COMPARED_VIEWS:
            np.testing.assert_array_equal(np.asarray(native.view(view)), np.asarray(python.view(view)),
                                          err_msg=f"{name}: {view}")
        assert native.reward_total == python.reward_total

    check()


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
