"""Bad input anywhere at the boundary raises a clear exception; nothing crashes."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mpsched.envs import ActionError, PolicyError, Scenario, ScenarioError, TraceError, _core, registry, simulate
from mpsched.envs.env import MultipathDeadlineEnv
from mpsched.envs.episode import build_episode
from mpsched.envs.errors import ArgumentError, BudgetError, SuiteError
from mpsched.envs.vector import MultipathDeadlineVectorEnv
from mpsched.experiments.suite import load_suite
from specs import make_sim

GOOD = {
    "duration_s": 0.5,
    "paths": [{"bandwidth": 2.0, "rtt_ms": 20}, {"bandwidth": 3.0, "rtt_ms": 40}],
    "workload": {"type": "avc"},
}


def with_path(**changes: Any) -> dict[str, Any]:
    return {**GOOD, "paths": [{**GOOD["paths"][0], **changes}, GOOD["paths"][1]]}


def trace_scenario(tmp: Path, name: str, content: str, fmt: str = "cooked") -> dict[str, Any]:
    f = tmp / name
    f.write_text(content)
    return with_path(bandwidth={"type": "trace", "format": fmt, "file": str(f)})


def core_spec(**changes: Any) -> dict[str, Any]:
    spec = {
        "mss_bytes": 1448, "header_bytes": 0, "end_ns": 10**10, "seed": 1, "receiver": "block", "rbuf_bytes": 65536,
        "sequence": "send",
        "links": [{"queue_bytes": 20_000, "bw_start_ns": np.array([0], np.int64),
                   "bw_rate_bps": np.array([10**6], np.int64), "bw_cycle_ns": 0}],
        "paths": [{
            "link": 0, "fwd_delay_ns": 10**6, "rev_delay_ns": 10**6, "loss_model": "iid", "loss_threshold": 0,
            "ge_p_threshold": 0, "ge_r_threshold": 0, "ge_bad_loss_threshold": 0, "cc": "newreno",
            "initial_cwnd_bytes": 14480, "min_rto_ns": 2 * 10**8, "max_rto_ns": 6 * 10**10, "ring_capacity": 256,
            "fast_recovery": "immediate", "cubic_arithmetic": "rfc9438",
        }],
        "cross": [],
        "blocks": {
            "arrival_ns": np.array([0, 10], np.int64), "size_bytes": np.array([100, 200], np.int64),
            "deadline_ns": np.array([10**8, 10**8], np.int64), "priority": np.array([0, 1], np.int32),
            "weight": np.array([1.0, 1.0]),
        },
    }
    for key, value in changes.items():
        for part in (spec["links"][0], spec["paths"][0], spec["blocks"], spec):
            if key in part:
                part[key] = value
                break
        else:
            raise KeyError(key)
    return spec


def shared(path_link: str = "s", cross: dict[str, Any] | None = None, **path_changes: Any) -> dict[str, Any]:
    """Two paths on one shared link, with one cross flow changed by ``cross``."""
    return {
        **GOOD,
        "links": [{"name": "s", "bandwidth": 10}],
        "paths": [{"link": path_link, "rtt_ms": 20, **path_changes}, {"link": "s", "rtt_ms": 40}],
        "cross_traffic": [{"link": "s", "rtt_ms": 30, **(cross or {})}],
    }


def cross_flow(**changes: Any) -> dict[str, Any]:
    return {**core_spec()["paths"][0], "start_ns": 0, "stop_ns": 10**9, **changes}


def suite_scenarios(scenarios: list[Any]) -> Any:
    return load_suite({"name": "s", "groups": [{"name": "g", "scenarios": scenarios, "policies": ["minrtt"]}]})


def pending_env(**kwargs: Any) -> MultipathDeadlineEnv:
    env = MultipathDeadlineEnv(GOOD, num_slots=4, **kwargs)
    env.reset(seed=0)
    return env


def pending_vector(**kwargs: Any) -> MultipathDeadlineVectorEnv:
    venv = MultipathDeadlineVectorEnv(num_envs=2, scenario=GOOD, num_slots=4, **kwargs)
    venv.reset(seed=0)
    return venv


class BadPolicy:
    name = "bad"

    def decide(self, obs: Any) -> int:
        return 10**6


class NotAPolicy:
    pass


def idle_sim() -> _core.Sim:
    return make_sim(core_spec())


# (id, action that must fail, exception type, regex the message must match)
CASES: list[tuple[str, Callable[[Path], Any], type[Exception], str]] = [
    # found by tests/fuzz: arguments of the environments raised bare ValueError, TypeError
    # or gymnasium's own error type
    ("HAR whose log is a number", lambda t: simulate({**GOOD, "workload": {
        "type": "explicit", "file": str(t / "p.har"), "deadline_ms": 100}}, "minrtt") if (t / "p.har").write_text(
        '{"log": -2.4e16}') else None, TraceError, r"p\.har: not an HTTP Archive: no log\.entries list"),
    ("a scenario name too long for a file name", lambda t: suite_scenarios(["x" * 300]), SuiteError,
     r"scenarios\[0\]\.base: got 'xxx.*expected a built-in scenario name"),
    ("a suite name too long for a file name", lambda t: load_suite("y" * 300), SuiteError,
     r"expected a built-in suite"),
    ("an agent name too long for a file name", lambda t: registry.make("agent:" + "z" * 300), PolicyError,
     r"no model directory"),
    ("a frame past 2^31 - 1 bytes", lambda t: simulate({**GOOD, "workload": {"type": "avc", "fps": 1e-9}}, "minrtt"),
     ScenarioError, r"workload: got \d{16}\.0; expected blocks of at most 2147483647 bytes"),
    ("a frame past 2^63 bytes", lambda t: simulate({**GOOD, "workload": {"type": "svc", "fps": 1e-9,
                                                                         "bitrate_mbps": 1e6}}, "minrtt"),
     ScenarioError, r"got \d\.\d+e\+19; expected blocks of at most 2147483647"),
    ("a NUL byte in a trace file name", lambda t: simulate(with_path(bandwidth={"type": "trace", "format": "cooked",
                                                                                "file": "a\0b"}), "minrtt"),
     TraceError, r"not a usable file name: embedded null byte"),
    ("a NUL byte in a scenario file name", lambda t: Scenario.from_yaml("s\0.yaml"), TraceError,
     r"not a usable file name"),
    ("env: num_slots of a wrong type", lambda t: MultipathDeadlineEnv(GOOD, num_slots={"type": 3}), ArgumentError,
     r"num_slots: got \{'type': 3\}; expected an integer in \[1, 64\]"),
    ("env: tiny float max_paths", lambda t: MultipathDeadlineEnv(GOOD, max_paths=-5e-324), ArgumentError,
     r"max_paths: got -5e-324"),
    ("env: invalid_action None", lambda t: MultipathDeadlineEnv(GOOD, invalid_action=None), ArgumentError,
     r"invalid_action: got None; expected one of \('raise', 'wait'\)"),
    ("env: render_mode False", lambda t: MultipathDeadlineEnv(GOOD, render_mode=False), ArgumentError,
     r"render_mode: got False"),
    ("env: seed a string", lambda t: MultipathDeadlineEnv(GOOD).reset(seed="3"), ArgumentError,
     r"seed: got '3'; expected None or an integer in \[0, 2\^63 - 1\]"),
    ("env: seed 2^63", lambda t: MultipathDeadlineEnv(GOOD).reset(seed=2**63), ArgumentError,
     r"seed: got 9223372036854775808"),
    ("vector: num_envs a string", lambda t: MultipathDeadlineVectorEnv(num_envs="x", scenario=GOOD), ArgumentError,
     r"num_envs: got 'x'; expected an integer in \[1, 4096\]"),
    ("vector: num_envs 2^53 + 1", lambda t: MultipathDeadlineVectorEnv(num_envs=2**53 + 1, scenario=GOOD),
     ArgumentError, r"num_envs: got 9007199254740993"),
    ("vector: seed a float", lambda t: pending_vector().reset(seed=1e20), ArgumentError,
     r"seed: got 1e\+20; expected None, an integer or a sequence of 2 seeds"),
    ("vector: seeds past 2^63", lambda t: pending_vector().reset(seed=2**63 - 1), ArgumentError,
     r"seed \+ num_envs - 1: got 9223372036854775808"),
    ("vector: a seed of a list negative", lambda t: pending_vector().reset(seed=[0, -1]), ArgumentError,
     r"seed\[1\]: got -1"),
    ("negative rate", lambda t: Scenario.from_dict(with_path(bandwidth=-2.0)), ScenarioError, r"paths\[0\]\.bandwidth"),
    ("NaN rate", lambda t: Scenario.from_dict(with_path(bandwidth=float("nan"))), ScenarioError, r"bandwidth.*nan"),
    ("bool as number", lambda t: Scenario.from_dict(with_path(bandwidth=True)), ScenarioError, r"bandwidth"),
    ("empty trace", lambda t: Scenario.from_dict(trace_scenario(t, "empty.log", "")), TraceError, r"empty\.log"),
    ("non-monotonic trace", lambda t: Scenario.from_dict(trace_scenario(t, "back.log", "0 1.0\n2 1.0\n1 1.0\n")),
     TraceError, r"back\.log:3"),
    ("garbage trace line", lambda t: Scenario.from_dict(trace_scenario(t, "junk.log", "0 1.0\n1 fast\n")),
     TraceError, r"junk\.log:2"),
    ("garbage mahimahi line", lambda t: Scenario.from_dict(trace_scenario(t, "m.down", "1\n2\nx\n", "mahimahi")),
     TraceError, r"m\.down:3"),
    ("missing trace file", lambda t: Scenario.from_dict(with_path(bandwidth={"type": "trace", "format": "cooked",
                                                                             "file": str(t / "nope.log")})),
     TraceError, r"nope\.log"),
    ("zero paths", lambda t: Scenario.from_dict({**GOOD, "paths": []}), ScenarioError, r"paths.*1 to 8"),
    ("nine paths", lambda t: Scenario.from_dict({**GOOD, "paths": [GOOD["paths"][0]] * 9}), ScenarioError,
     r"paths.*1 to 8"),
    ("unknown cc", lambda t: Scenario.from_dict(with_path(cc="bbr")), ScenarioError, r"paths\[0\]\.cc.*'bbr'"),
    ("negative delay", lambda t: Scenario.from_dict(with_path(rtt_ms=-5)), ScenarioError, r"paths\[0\]\.rtt_ms"),
    ("two delay forms", lambda t: Scenario.from_dict(with_path(one_way_delay_ms=5)), ScenarioError,
     r"exactly one of rtt_ms"),
    ("queue below a packet", lambda t: Scenario.from_dict(with_path(queue_bytes=10)), ScenarioError,
     r"paths\[0\]\.queue_bytes"),
    ("loss of 1", lambda t: Scenario.from_dict(with_path(loss=1.0)), ScenarioError, r"paths\[0\]\.loss"),
    ("unknown key", lambda t: Scenario.from_dict({**GOOD, "durration_s": 3}), ScenarioError, r"durration_s"),
    ("missing duration", lambda t: Scenario.from_dict({k: v for k, v in GOOD.items() if k != "duration_s"}),
     ScenarioError, r"duration_s"),
    ("unknown workload", lambda t: Scenario.from_dict({**GOOD, "workload": {"type": "hologram"}}), ScenarioError,
     r"workload\.type"),
    ("workload out of range", lambda t: Scenario.from_dict({**GOOD, "workload": {"type": "avc", "fps": -30}}),
     ScenarioError, r"workload\.fps"),
    ("unknown loss model", lambda t: Scenario.from_dict(with_path(loss={"model": "markov"})), ScenarioError,
     r"paths\[0\]\.loss\.model.*'markov'"),
    ("Gilbert-Elliott without r", lambda t: Scenario.from_dict(with_path(loss={"model": "gilbert_elliott", "p": 0.1})),
     ScenarioError, r"paths\[0\]\.loss\.r"),
    ("Gilbert-Elliott p above 1", lambda t: Scenario.from_dict(
        with_path(loss={"model": "gilbert_elliott", "p": 1.5, "r": 0.2})), ScenarioError, r"paths\[0\]\.loss\.p"),
    ("path on an unknown link", lambda t: Scenario.from_dict(shared(path_link="tail")), ScenarioError,
     r"paths\[0\]\.link.*'tail'"),
    ("shared path with its own bandwidth", lambda t: Scenario.from_dict(shared(bandwidth=5.0)), ScenarioError,
     r"paths\[0\]\.bandwidth.*shared link"),
    ("two links of one name", lambda t: Scenario.from_dict(
        {**shared(), "links": [{"name": "s", "bandwidth": 10}, {"name": "s", "bandwidth": 5}]}), ScenarioError,
     r"distinct link names"),
    ("coupled cross flow", lambda t: Scenario.from_dict(shared(cross={"cc": "lia"})), ScenarioError,
     r"cross_traffic\[0\]\.cc.*'lia'"),
    ("cross flow stops before it starts", lambda t: Scenario.from_dict(shared(cross={"start_s": 5, "stop_s": 1})),
     ScenarioError, r"cross_traffic\[0\]\.stop_s"),
    ("unknown receiver", lambda t: Scenario.from_dict({**GOOD, "receiver": "sack"}), ScenarioError,
     r"receiver.*'sack'"),
    ("unknown fast recovery", lambda t: Scenario.from_dict({**GOOD, "transport": {"fast_recovery": "rate-halving"}}),
     ScenarioError, r"transport\.fast_recovery.*'rate-halving'"),
    ("unknown Cubic arithmetic", lambda t: Scenario.from_dict({**GOOD, "transport": {"cubic_arithmetic": "float"}}),
     ScenarioError, r"transport\.cubic_arithmetic.*'float'"),
    ("receive buffer below a packet", lambda t: Scenario.from_dict(
        {**GOOD, "receiver": {"type": "in_order", "rbuf_bytes": 100}}), ScenarioError, r"receiver\.rbuf_bytes"),
    ("unknown sequence", lambda t: Scenario.from_dict(
        {**GOOD, "receiver": {"type": "in_order", "sequence": "random"}}), ScenarioError,
     r"receiver\.sequence.*'random'"),
    ("malformed YAML", lambda t: (t / "s.yaml").write_text("paths: [\n") and Scenario.from_yaml(t / "s.yaml"),
     TraceError, r"s\.yaml:2: column 1: not valid YAML: while parsing a flow node; expected the node content"),
    ("YAML not UTF-8", lambda t: (t / "s.yaml").write_bytes(b"name: \xff\n") and Scenario.from_yaml(t / "s.yaml"),
     TraceError, r"s\.yaml: not UTF-8 text"),
    ("unknown scenario name", lambda t: simulate("dams-rtt-41", "minrtt"), ScenarioError, r"dams-rtt-41"),
    ("negative seed", lambda t: simulate(GOOD, "minrtt", seed=-1), ScenarioError, r"seed"),
    ("unknown policy", lambda t: simulate(GOOD, "fastest"), PolicyError, r"'fastest'.*known policies"),
    ("unknown policy parameter", lambda t: registry.make("random", temperature=2), PolicyError, r"temperature"),
    ("not a policy", lambda t: simulate(GOOD, NotAPolicy()), PolicyError, r"decide"),
    ("policy picks a missing block", lambda t: simulate(GOOD, BadPolicy()), PolicyError, r"bad.*does not exist"),
    ("action out of range", lambda t: pending_env().step(7), ActionError, r"outside Discrete\(5\)"),
    ("action of wrong type", lambda t: pending_env().step("0"), ActionError, r"not an integer"),
    ("vector actions wrong dtype", lambda t: pending_vector().step(np.zeros(2, np.float64)), ActionError, r"integer"),
    ("vector actions wrong shape", lambda t: pending_vector().step(np.zeros((2, 1), np.int64)), ActionError, r"shape"),
    ("vector action out of range", lambda t: pending_vector().step(np.array([0, 9])), ActionError, r"actions\[1\]"),
    ("core: wrong array dtype", lambda t: make_sim(core_spec(size_bytes=np.array([1.0, 2.0]))), TypeError,
     r"blocks\.size_bytes.*int64"),
    ("core: arrays of unequal length", lambda t: make_sim(core_spec(priority=np.array([0], np.int32))), ValueError,
     r"blocks\.priority"),
    ("core: arrivals out of order", lambda t: make_sim(core_spec(arrival_ns=np.array([10, 0], np.int64))),
     ValueError, r"arrival_ns\[1\]"),
    ("core: schedule not starting at 0", lambda t: make_sim(core_spec(bw_start_ns=np.array([5], np.int64))),
     ValueError, r"bw_start_ns\[0\]"),
    ("core: negative rate", lambda t: make_sim(core_spec(bw_rate_bps=np.array([-1], np.int64))), ValueError,
     r"bw_rate_bps\[0\]"),
    ("core: unknown cc", lambda t: make_sim(core_spec(cc="vegas")), ValueError, r"vegas"),
    ("core: ring not a power of two", lambda t: make_sim(core_spec(ring_capacity=100)), ValueError,
     r"ring_capacity"),
    ("core: unknown loss model", lambda t: make_sim(core_spec(loss_model="markov")), ValueError, r"markov"),
    ("core: unknown fast recovery", lambda t: make_sim(core_spec(fast_recovery="fack")), ValueError,
     r"paths\[0\]\.fast_recovery: unknown value 'fack' \(known: immediate, prr\)"),
    ("core: unknown Cubic arithmetic", lambda t: make_sim(core_spec(cubic_arithmetic="bytes")), ValueError,
     r"paths\[0\]\.cubic_arithmetic: unknown value 'bytes' \(known: rfc9438, segments\)"),
    ("core: link out of range", lambda t: make_sim(core_spec(link=3)), ValueError, r"paths\[0\]\.link: 3"),
    ("core: coupled cross flow", lambda t: make_sim(core_spec(cross=[cross_flow(cc="olia")])), ValueError,
     r"cross\[0\]\.cc"),
    ("core: cross flow stops before it starts",
     lambda t: make_sim(core_spec(cross=[cross_flow(start_ns=9, stop_ns=1)])),
     ValueError, r"cross\[0\].*start_ns 9"),
    ("core: receive buffer below a packet", lambda t: make_sim(core_spec(rbuf_bytes=100)), ValueError, r"rbuf_bytes"),
    ("core: unknown receiver", lambda t: make_sim(core_spec(receiver="sack")), ValueError, r"sack"),
    ("core: in-order view with the block receiver", lambda t: idle_sim().view("piece_delivery_ns"), KeyError,
     r"in-order receiver"),
    ("core: unknown sequence", lambda t: make_sim(core_spec(sequence="random")), ValueError, r"sequence.*random"),
    ("core: stream sequence with the block receiver", lambda t: make_sim(core_spec(sequence="stream")), ValueError,
     r"sequence.*in-order receiver"),
    ("core: apply with no decision", lambda t: idle_sim().apply(0), RuntimeError, r"no decision is pending"),
    ("core: cancel outside a decision", lambda t: idle_sim().cancel(0), RuntimeError, r"during a decision"),
    ("core: writable view", lambda t: np.asarray(idle_sim().view("srtt_ns")).__setitem__(0, 1), ValueError,
     r"read-only"),
    ("core: unknown view", lambda t: idle_sim().view("secrets"), KeyError, r"secrets"),
    ("core: unknown native policy", lambda t: idle_sim().run("oracle"), ValueError, r"oracle"),
    ("core: more packets than an episode holds",
     lambda t: make_sim(core_spec(mss_bytes=1, size_bytes=np.array([2**31 - 1, 2**31 - 1], np.int64))), ValueError,
     r"blocks: \d+ packets of 1 bytes in all \(through block 0\); at most 67108864 per episode"),
    ("more packets than an episode holds",
     lambda t: simulate({**GOOD, "duration_s": 10, "workload": {"type": "bulk", "rate_mbps": 10**5,
                                                               "chunk_bytes": 2**31 - 1}}, "minrtt"),
     ScenarioError, r"workload: got \d+; expected at most 67108864 packets of mss_bytes = 1448 per episode"),
    ("an action too large for any integer type",
     lambda t: stepped_env().step(10**30), ActionError, r"action 10{30} is outside Discrete\(17\)"),
    ("ten billion seeds", lambda t: suite_with_seeds(10**10), SuiteError,
     r"seeds: got 10000000000; expected between 1 and 100000 seeds"),
    ("a grid of a hundred thousand scenarios",
     lambda t: load_any_suite({"name": "s", "seeds": 1, "groups": [{"name": "g", "policies": ["minrtt"], "scenarios": [
         {"base": "dams-rtt-40", "grid": {"a": list(range(100)), "b": list(range(1000))},
          "set": {"workload.deadline_ms": 100}}]}]}),
     SuiteError, r"grid: got '100 x 1000 = 100000 points'; expected at most 10000 points per scenario entry"),
    ("a suite of ten million episodes",
     lambda t: load_any_suite({"name": "s", "seeds": 100_000, "groups": [
         {"name": "g", "scenarios": ["dams-rtt-40", "dams-rtt-80"], "policies": ["*"]}]}),
     SuiteError, r"groups: got '\d+ episodes .*'; expected at most 1000000 episodes per suite"),
    ("a seed beyond 64 bits", lambda t: suite_with_seeds([2**70]), SuiteError, r"seeds in \[0, 2\^63 - 1\]"),
    ("native policy parameter outside the twin's range",
     lambda t: idle_sim().run("dtp", (2.0,)), ValueError, r"priority_weight = 2\.0 is outside \[0\.0, 1\.0\]"),
]


def stepped_env() -> MultipathDeadlineEnv:
    env = MultipathDeadlineEnv("dams-rtt-40")
    env.reset(seed=0)
    return env


def load_any_suite(spec: dict[str, Any]) -> Any:
    from mpsched.experiments.suite import load_suite

    return load_suite(spec)


def suite_with_seeds(seeds: Any) -> Any:
    return load_any_suite({"name": "s", "seeds": seeds,
                           "groups": [{"name": "g", "scenarios": ["dams-rtt-40"], "policies": ["minrtt"]}]})


def test_a_huge_offending_value_is_cut_in_the_message(tmp_path: Path) -> None:
    """A 700 kB value (or trace line) is named by its start and length, not dumped into
    the message."""
    from mpsched.envs.bandwidth import load_trace_file

    huge = "x" * 700_000
    with pytest.raises(ScenarioError) as info:
        Scenario.from_dict({**GOOD, "duration_s": huge})
    message = str(info.value)
    assert len(message) < 400 and "(700002 characters)" in message and message.startswith("duration_s: got 'xxx")
    with pytest.raises(SuiteError, match=r"\(700002 characters\)") as suite_info:
        suite_with_seeds(huge)
    assert len(str(suite_info.value)) < 400
    trace = tmp_path / "long.log"
    trace.write_text("0 1\n" + "y" * 700_000 + "\n")
    with pytest.raises(TraceError) as trace_info:
        load_trace_file(trace, format="cooked")
    assert len(str(trace_info.value)) < 500 and "characters)" in str(trace_info.value)


def test_the_largest_block_runs() -> None:
    """A block of 2^31 - 1 bytes (the largest allowed) is cut into packets without
    overflowing the core's 32-bit packet count, in a scenario and in the core directly."""
    sc = {**GOOD, "duration_s": 1.0,
          "workload": {"type": "explicit", "blocks": [{"arrival_ms": 0, "size_bytes": 2**31 - 1, "deadline_ms": 10}]}}
    result = simulate(sc, "minrtt", seed=0)
    assert result.summary["n_blocks"] == 1 and result.summary["on_time_rate"] == 0.0
    assert result.paths["bytes_sent"].sum() > 0
    sim = make_sim(core_spec(mss_bytes=1448, size_bytes=np.array([2**31 - 1, 100], np.int64)))
    sim.run("minrtt")
    assert np.asarray(sim.view("bytes_sent")).sum() > 0



@pytest.mark.parametrize("action,error,pattern", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_raises_a_clear_error(tmp_path: Path, action: Callable[[Path], Any], error: type[Exception],
                                        pattern: str) -> None:
    with pytest.raises(error, match=pattern):
        action(tmp_path)


def test_there_are_at_least_twenty_kinds() -> None:
    assert len(CASES) >= 20


def test_a_rejected_step_changes_nothing() -> None:
    env = pending_env(invalid_action="raise")
    before = env.action_masks(), env.sim.now_ns, env.sim.decisions
    with pytest.raises(ActionError):
        env.step(99)
    assert env.sim.now_ns == before[1] and env.sim.decisions == before[2]
    np.testing.assert_array_equal(env.action_masks(), before[0])


def test_a_week_of_cross_traffic_is_refused_before_it_runs() -> None:
    """The default work budget refuses, up front, a cross flow sending at 10 Mbit/s for a
    week (about 5 x 10^8 packets), naming what the estimate is made of."""
    sc = {**shared(), "horizon_s": 7 * 86400}
    cross_packets = 10**7 * 7 * 86400 // (8 * 1448) + 1  # the link's bits over the week, in packets
    with pytest.raises(BudgetError, match=rf"with {cross_packets} packets of cross flows.*work budget of "
                                          r"1073741824 events"):
        simulate(sc, "minrtt", seed=0)


def test_a_lossy_episode_is_stopped_at_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retransmissions are beyond the estimate: the core stops an episode that passes the
    budget while running, through ``simulate``, the environment and the vector environment,
    and processes no event past it."""
    lossy = {**GOOD, "horizon_s": 5.0, "paths": [{**p, "loss": 0.5, "cc": "ideal"} for p in GOOD["paths"]]}
    ep = build_episode(Scenario.from_dict(lossy), 0)
    unlimited = ep.make_sim()
    unlimited.run("minrtt")
    estimate = 3 * int(np.sum((ep.blocks.size_bytes + 1447) // 1448)) + len(ep.blocks.size_bytes)
    assert unlimited.events > estimate + 100
    budget = estimate + 50
    monkeypatch.setenv("MPSCHED_MAX_EVENTS", str(budget))
    with pytest.raises(BudgetError, match=rf"passed the work budget of {budget} events at simulated time") as info:
        simulate(lossy, "minrtt", seed=0)
    assert 0 < info.value.reached_ns < ep.end_ns
    sim = ep.make_sim()
    with pytest.raises(BudgetError):
        sim.run("minrtt")
    assert sim.events == budget + 1 and sim.now_ns == info.value.reached_ns
    env = MultipathDeadlineEnv(scenario=lossy)
    env.reset(seed=0)
    with pytest.raises(BudgetError):
        for _ in range(10**6):
            env.step(int(np.argmax(env.action_masks())))
    venv = MultipathDeadlineVectorEnv(scenario=lossy, num_envs=2)
    venv.reset(seed=0)
    with pytest.raises(BudgetError):
        for _ in range(10**6):
            venv.step(np.argmax(venv.action_masks(), axis=1))


TINY_BLOCKS = {
    "name": "tiny-blocks", "duration_s": 30.0,
    "paths": [{"name": "a", "bandwidth": {"type": "constant", "mbps": 0.02}, "fwd_delay_ms": 5, "rev_delay_ms": 5},
              {"name": "b", "bandwidth": {"type": "constant", "mbps": 0.03}, "fwd_delay_ms": 20, "rev_delay_ms": 20}],
    "workload": {"type": "bulk", "rate_mbps": 0.08, "chunk_bytes": 1, "deadline_ms": 20000},
}


@pytest.mark.parametrize("policy", ["dams", "dams-c", "dams-robust", "dtp", "srpt-ecf"])
def test_policies_that_walk_the_buffer_count_it_against_the_budget(policy: str) -> None:
    """A bulk flow in 1-byte blocks on slow paths leaves hundreds of thousands of blocks
    waiting; DAMS re-plans over all of them at every arrival. Its events fit the budget,
    so only the blocks the decisions look at (Sim.policy_work) can stop it in time."""
    ep = build_episode(Scenario.from_dict(TINY_BLOCKS), 0)
    budget = 2**22
    assert 4 * len(ep.blocks.size_bytes) < budget  # the up-front estimate lets it run
    sim = _core.Sim(**ep.core_inputs(), max_events=budget)
    native = registry.make(policy)
    with pytest.raises(BudgetError, match=rf"passed the work budget of {budget} events"):
        sim.run(native.native, native.native_params())
    assert sim.events < budget // 2 < sim.policy_work
    minrtt = _core.Sim(**ep.core_inputs(), max_events=budget)
    minrtt.run("minrtt")
    assert minrtt.policy_work == 0 and minrtt.done


def test_the_budget_variable_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MPSCHED_MAX_EVENTS", "lots")
    with pytest.raises(ScenarioError, match=r"MPSCHED_MAX_EVENTS: got 'lots'; expected an integer"):
        simulate(GOOD, "minrtt", seed=0)
    monkeypatch.setenv("MPSCHED_MAX_EVENTS", "0")
    assert simulate({**shared(), "horizon_s": 3.0}, "minrtt", seed=0).summary["n_blocks"] > 0


@pytest.mark.parametrize("error", [
    ScenarioError("paths[0].rtt_ms", -1, "a number >= 0"),
    TraceError("bw.log", 7, "time 'x' is not a number"),
    SuiteError("s", "seeds", 0, "between 1 and 100000 seeds"),
    BudgetError(100, 5_000_000, 10**9),
    BudgetError(100, None, 10**9, "about 300 events"),
    PolicyError("unknown policy 'x'"),
], ids=lambda e: type(e).__name__)
def test_errors_cross_processes_intact(error: Exception) -> None:
    """Ray and subprocesses pickle exceptions: every error class comes back equal in
    type, message and fields."""
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error) and str(back) == str(error) and vars(back) == vars(error)
