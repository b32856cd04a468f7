"""What the fuzz worker does with each kind of input (see :mod:`inputs`).

Every target takes one generated input and drives the public API with it to the end:
a scenario is built and simulated, a trace loaded and run, a suite planned and its first
episode run, an environment reset and stepped. A target returns normally or raises; the
worker classifies what it raised.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from inputs import FILES
from mpsched.envs import registry, simulate
from mpsched.envs.bandwidth import load_trace_file
from mpsched.envs.env import MultipathDeadlineEnv
from mpsched.envs.policy import WAIT, Observation, Policy
from mpsched.envs.scenarios import resolve
from mpsched.envs.vector import MultipathDeadlineVectorEnv
from mpsched.experiments import cli
from mpsched.experiments.suite import Suite, load_suite

SMALL_SCENARIOS: dict[str, dict[str, Any]] = {
    "short": {"duration_s": 0.3, "paths": [{"bandwidth": 2.0, "rtt_ms": 20}, {"bandwidth": 3.0, "rtt_ms": 60}],
              "workload": {"type": "avc"}},
    "lossy": {"duration_s": 0.3, "horizon_s": 2.0,
              "paths": [{"bandwidth": 2.0, "rtt_ms": 20, "loss": 0.3, "cc": "ideal"},
                        {"bandwidth": 3.0, "rtt_ms": 60, "loss": 0.1}],
              "workload": {"type": "web", "page_interval_s": 0.1}},
    "shared": {"duration_s": 0.3, "links": [{"name": "s", "bandwidth": 5}],
               "paths": [{"link": "s", "rtt_ms": 20}, {"bandwidth": 1, "rtt_ms": 80}],
               "cross_traffic": [{"link": "s", "rtt_ms": 30}], "workload": {"type": "avc"}},
}
"""Scenarios of the environment targets, a fraction of a second each."""


def write_files(tree: Any, folder: Path) -> Any:
    """``tree`` with its ``@files`` written to ``folder`` and every ``"@name"`` string
    replaced by the path of that file."""
    if isinstance(tree, dict):
        files = tree.get(FILES, {})
        for name, text in files.items():
            (folder / name).write_text(text, encoding="utf-8", errors="surrogatepass")
        return {k: write_files(v, folder) for k, v in tree.items() if k != FILES}
    if isinstance(tree, list):
        return [write_files(v, folder) for v in tree]
    if isinstance(tree, str) and tree.startswith("@") and len(tree) > 1:
        return str(folder / tree[1:])
    return tree


def run_scenario(data: tuple[dict[str, Any], dict[str, Any]], folder: Path) -> None:
    scenario, options = data
    simulate(write_files(scenario, folder), options["policy"], seed=options["seed"],
             drop_expired=options["drop_expired"]).row()


def run_trace(data: dict[str, Any], folder: Path) -> None:
    f = folder / ("trace.csv" if data["format"] == "csv" else "trace.log")
    f.write_text(data["text"], encoding="utf-8", errors="surrogatepass")
    schedule = load_trace_file(f, data["format"], **data["options"])
    scenario = {"duration_s": 0.5, "paths": [{"bandwidth": {"type": "trace", "format": data["format"],
                                                            "file": str(f), **data["options"]}, "rtt_ms": 20}],
                "workload": {"type": "avc", "bitrate_mbps": 1.0}}
    if schedule.peak_bps() > 0:
        simulate(scenario, "minrtt", seed=0).row()


def run_suite(data: dict[str, Any], folder: Path) -> None:
    run_suite_object(Suite.from_dict(write_files(data, folder), folder))


def run_suite_object(s: Suite) -> None:
    episodes = s.episodes()
    if episodes:
        e = episodes[0]
        simulate(e.case.scenario, e.policy.build(), seed=e.seed, drop_expired=e.drop_expired).row()


def _action(a: Any) -> Any:
    """Numpy forms of an action named by a string starting ``np.``."""
    return {"np.int64": np.int64(1), "np.float32": np.float32(1.0), "np.array0d": np.array(2),
            "np.array2": np.array([1, 2])}.get(a, a) if isinstance(a, str) else a


def run_env(data: dict[str, Any], folder: Path) -> None:
    env = MultipathDeadlineEnv(scenario=SMALL_SCENARIOS[data["scenario"]], **data["kwargs"])
    env.reset(seed=data["seed"])
    done = False
    for a in data["actions"]:
        if done:
            env.reset(seed=0)
        _, _, done, _, _ = env.step(_action(a))


def _actions(a: Any, n: int) -> Any:
    if isinstance(a, list):
        return np.resize(np.array(a, dtype=np.int64), n)
    return {"float": np.zeros(n, np.float64), "2d": np.zeros((n, 2), np.int64), "empty": np.zeros(0, np.int64),
            "huge": np.full(n, 2**62, np.int64), "object": np.array([None] * n, dtype=object),
            "bool": np.ones(n, bool)}.get(a, a) if isinstance(a, str) else a


def run_vector(data: dict[str, Any], folder: Path) -> None:
    venv = MultipathDeadlineVectorEnv(num_envs=data["num_envs"], scenario=SMALL_SCENARIOS[data["scenario"]],
                                      **data["kwargs"])
    venv.reset(seed=data["seed"])
    for a in data["actions"]:
        venv.step(_actions(a, venv.num_envs))


class _ScriptedCopies(Policy):
    """A policy that sends copies, answering from a list (then the first copyable piece
    or new data)."""

    name = "scripted-copies"
    copies = True

    def __init__(self, actions: list[Any]) -> None:
        super().__init__()
        self.actions = list(actions)

    def decide(self, obs: Observation) -> int:
        if self.actions:
            return self.actions.pop(0)
        copyable = obs.copyable()
        if len(copyable):
            return obs.copy(int(copyable[0]))
        sendable = obs.sendable()
        return int(sendable[0]) if len(sendable) else WAIT


def run_copies(data: dict[str, Any], folder: Path) -> None:
    simulate(SMALL_SCENARIOS[data["scenario"]], _ScriptedCopies(data["actions"]), seed=0).row()


def run_policy(data: dict[str, Any], folder: Path) -> None:
    policy = registry.make(data["id"], **data["params"])
    simulate(SMALL_SCENARIOS["short"], policy, seed=0).row()


def run_cli(argv: list[str], folder: Path) -> None:
    """``mpsched ARGV``; a usage error (argparse exits 2) or an error message (exit 2) is
    a refusal, any other exit code or exception a failure."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            code = cli.main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
    if code not in (0, 2):
        raise RuntimeError(f"mpsched exited {code}: {out.getvalue()[-300:]}")
    if code == 2:
        raise Refused(out.getvalue()[-300:])


def run_yaml(data: dict[str, Any], folder: Path) -> None:
    write_files({FILES: data[FILES]}, folder)
    f = folder / "input.yaml"
    f.write_text(data["text"], encoding="utf-8", errors="surrogatepass")
    if data["kind"] == "scenario":
        simulate(resolve(str(f)), "minrtt", seed=0).row()
    else:
        run_suite_object(load_suite(f))


class Refused(Exception):
    """A command line refused with a message (not an exception the user sees)."""


def crash_now(data: Any, folder: Path) -> None:
    """The harness's own check: a worker killed by a signal, as a crash of the core would."""
    os.kill(os.getpid(), signal.SIGSEGV)


def hang(data: Any, folder: Path) -> None:
    """The harness's own check: an input that never returns."""
    time.sleep(3600)


def raise_builtin(data: Any, folder: Path) -> None:
    """The harness's own check: an error outside the project's classes."""
    raise KeyError(data)


SELF_CHECKS: dict[str, Callable[[Any, Path], None]] = {"crash": crash_now, "hang": hang, "builtin": raise_builtin}
"""Targets that must be counted as a crash, a timeout and a failure."""

TARGETS: dict[str, Callable[[Any, Path], None]] = {
    "scenario": run_scenario,
    "trace": run_trace,
    "suite": run_suite,
    "env": run_env,
    "vector": run_vector,
    "policy": run_policy,
    "copies": run_copies,
    "cli": run_cli,
    "yaml": run_yaml,
    **{f"self-check-{k}": f for k, f in SELF_CHECKS.items()},
}
