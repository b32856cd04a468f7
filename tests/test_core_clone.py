"""``Sim.clone()``: a deep copy of an episode in any state, which continues exactly as the
original would and shares nothing with it."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mpsched.envs import _core, scenarios
from mpsched.envs.episode import build_episode
from specs import CROSS_OUTPUTS, CoreView, core_specs, make_sim, scripted_policy


def drive(sim: _core.Sim, first_index: int, steps: int | None = None) -> int:
    """Decide with the scripted policy from decision `first_index` on, for `steps`
    decisions or to the end; returns the next decision index."""
    buf = np.zeros(max(sim.n_blocks, 1), np.int32)
    k = first_index
    while steps is None or k < first_index + steps:
        j = sim.next_decision()
        if j < 0:
            break
        sim.apply(scripted_policy(CoreView(sim, buf, j, k)))
        k += 1
    return k


def state(sim: _core.Sim) -> dict[str, Any]:
    """Everything the core exposes about an episode."""
    out: dict[str, Any] = {}
    for name in _core.Sim.view_names():
        try:
            out[name] = np.array(sim.view(name), copy=True).tolist()
        except KeyError:  # a view of the other receiver
            continue
    if sim.n_cross:
        for name in CROSS_OUTPUTS:
            out[f"cross_{name}"] = np.array(sim.cross_view(name), copy=True).tolist()
    for name in ("now_ns", "decisions", "events", "policy_work", "last_event_ns", "reward_total", "done",
                 "pending_path", "rbuf_used", "n_arrived"):
        out[name] = getattr(sim, name)
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=core_specs(max_blocks=40), cut=st.integers(0, 300))
def test_a_clone_continues_exactly_as_the_original(spec: dict, cut: int) -> None:
    """Cloned after `cut` decisions, the copy equals the original; driven to the end
    first, it ends where an episode never cloned ends, and the original, driven after
    it, too: neither touched the other's memory."""
    reference = make_sim(spec)
    drive(reference, 0)
    sim = make_sim(spec)
    k = drive(sim, 0, cut)
    clone = sim.clone()
    assert state(clone) == state(sim)
    drive(clone, k)
    drive(sim, k)
    assert state(clone) == state(reference)
    assert state(sim) == state(reference)


def test_a_clone_runs_natively_and_resets_as_a_fresh_episode() -> None:
    ep = build_episode(scenarios.get("dams-dynamic-1-rtt-40"), 0)
    sim = ep.make_sim()
    drive(sim, 0, 2000)
    clone = sim.clone()
    sim.run("minrtt")
    clone.run("minrtt")
    assert state(clone) == state(sim)
    clone.reset(7)
    fresh = ep.make_sim()
    fresh.reset(7)
    clone.run("minrtt")
    fresh.run("minrtt")
    assert state(clone) == state(fresh)


TINY_PACKETS = {
    "name": "tiny-packets", "duration_s": 0.3,
    "paths": [{"name": "long", "bandwidth": {"type": "constant", "mbps": 20}, "rtt_ms": 200, "cc": "newreno"},
              {"name": "short", "bandwidth": {"type": "constant", "mbps": 5}, "rtt_ms": 20, "cc": "ideal"}],
    "workload": {"type": "bulk", "rate_mbps": 2, "chunk_bytes": 1, "deadline_ms": 400},
}


def test_a_clone_owns_the_packet_lanes_that_outgrew_the_episode_allocation() -> None:
    """One-byte packets: thousands on the wire, far more than the lanes' first buffers hold,
    so the lanes have grown outside the episode's single allocation when it is cloned. The
    clone outlives its original (freed first) and ends as an episode never cloned does."""
    ep = build_episode(scenarios.resolve(TINY_PACKETS), 1)
    reference = ep.make_sim()
    drive(reference, 0, 20000)
    reference.run("minrtt")
    sim = ep.make_sim()
    drive(sim, 0, 20000)
    assert np.asarray(sim.view("packets_sent")).sum() > 5000
    clone = sim.clone()
    assert state(clone) == state(sim)
    del sim
    clone.run("minrtt")
    assert state(clone) == state(reference)
