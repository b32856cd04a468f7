"""Speed benchmark of the simulator core and the environments (``mpsched bench``).

Every figure is measured in the same run as its reference, so ratios are meaningful on
any machine:

- whole-episode packets/s with the native MinRTT policy, ideal and NewReno paths (the
  core's event loop alone: episodes are built before timing starts);
- whole-episode packets/s of every baseline with a native twin, on the benchmark
  scenario as it is, and its time per packet as a ratio to MinRTT's;
- the same for every baseline on a deep backlog: the benchmark scenario's paths fed
  twice the data they carry in single-packet blocks, so that about two thousand blocks
  wait at once and what a policy's work per decision costs in the number of waiting
  blocks shows (time per packet as a ratio to MinRTT's on the same episode);
- the same for each window-based controller (NewReno, Cubic, LIA, OLIA) on a backlogged,
  lossy variant of the benchmark scenario (bulk data, 0.5 % loss), where congestion
  avoidance and loss recovery run on most acknowledgements, with each controller's time
  per packet as a ratio to NewReno's;
- the cost of path dynamics (docs/model.md 4-6): whole-episode packets/s with native
  MinRTT on the benchmark scenario as it is and with 10 ms of jitter each way on every
  path, a delay step every second, or a 200 ms outage every 10 s, as ratios to the
  scenario as it is (alternated measurements, the fastest of each kept);
- single-environment steps/s through ``gym.make`` with random valid actions, next to
  ``CartPole-v1`` through ``gym.make`` with random actions drawn the same way;
- what a user's one-episode process meets: ``simulate()`` on the benchmark scenario at
  its length and at 8 times it, against the core's own time on the same episode (the
  rest is building the episode and the scores); the import of ``mpsched.envs`` in a fresh
  interpreter (time and resident memory, beside numpy's import alone) and a whole
  process that simulates one episode, beside one that imports numpy and exits;
- against a block-level simulator in pure Python (:mod:`.block_reference`, DAMS over
  rate-and-delay pipes) on 814 frames of AVC video over two cellular-like paths
  (:func:`peer_scenario`) at that length and 8 times it: ``simulate()`` with DAMS against
  the reference's simulation in this process, a whole process of each (ours: ``simulate``
  on the scenario's YAML file; the reference: its script on the blocks and traces), and
  each one's on-time rate (their models differ: the reference has no congestion control,
  acknowledgements or queues);
- snapshots: ``Sim.clone()`` of the benchmark scenario's episode halfway through (the
  deep copy rollout planners and ``env.get_state()`` make), clones per second;
- the native vector environment's memory per sub-environment (resident memory added
  by making and resetting 1,024 of them, Linux only) and the time that reset takes;
- training (:mod:`.training_bench`, when the ``rl`` extra is installed): MaskablePPO's
  environment steps per second through the native adapter beside SB3's PPO on
  ``CartPole-v1`` with the same PPO settings, alternated, and where each one's time goes;
- native vector-environment steps/s (sub-environment steps) at several batch sizes,
  with random valid actions drawn by numpy for the whole batch; also at 256 envs on an
  overloaded scenario, where random actions let the sender's backlog grow to hundreds of
  blocks and every observation slot is filled; beside gymnasium's ``CartPole-v1`` at 256
  envs through ``gym.make_vec``, both as its numpy vector environment and as a sync vector
  of single environments.

With ``--length-scaling`` (:func:`length_scaling`), every native twin's time per packet
on the benchmark scenario, the overloaded scenario (4.3 Mbit/s of video on paths that
carry about 3: the sender's buffer grows all episode), the deep backlog, each at its
own length and at 8 times it, and a bulk transfer (one file that takes 5 s, and one 8
times its size), with the ratio 8x / 1x: a twin whose work per decision grows with the
episode shows a ratio above 1, one whose work is bounded stays near 1.

The benchmark scenario is the DAMS paper's first stable setting (``dams-rtt-40``: 2 and 3
Mbit/s, RTT 10 and 40 ms, AVC 4.3 Mbit/s for 60 s).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, cast

import gymnasium as gym
import numpy as np

from .. import baselines
from ..envs import ENV_ID, _core, registry, scenarios
from ..envs.episode import build_episode
from ..envs.scenario import Scenario, set_path_cc
from ..envs.simulate import simulate
from ..envs.vector import MultipathDeadlineVectorEnv
from . import block_reference, machine
from .training_bench import format_training, training_comparison

__all__ = ["run_benchmarks", "format_report", "length_scaling", "format_length_scaling"]

BENCH_SCENARIO = "dams-rtt-40"
OVERLOADED_SCENARIO = "dams-dynamic-1-rtt-40"
VECTOR_SIZES = (1, 64, 256, 1024)
# gymnasium's own vector CartPole (numpy, one array for every pole) and its sync wrapper
CARTPOLE_VECTOR_MODES = ("vector_entry_point", "sync")
WINDOW_CONTROLLERS = ("newreno", "cubic", "lia", "olia")
CONTROLLER_LABELS = {"newreno": "NewReno", "cubic": "Cubic", "lia": "LIA", "olia": "OLIA"}


def _with_cc(scenario: Scenario, cc: str) -> Scenario:
    d = scenario.to_dict()
    d["transport"]["cc"] = cc
    for p in d["paths"]:
        set_path_cc(p, cc)
    return Scenario.from_dict(d)


def _backlogged(scenario: Scenario) -> Scenario:
    """The scenario's paths with 0.5 % loss, fed more bulk data than they carry."""
    d = scenario.to_dict()
    for p in d["paths"]:
        p["loss"] = 0.005
    d["workload"] = {"type": "bulk", "rate_mbps": 20.0, "chunk_bytes": 1_000_000, "deadline_ms": 2000}
    d["name"] = f"{scenario.name}-bulk-lossy"
    return Scenario.from_dict(d)


def _deep_backlog(scenario: Scenario) -> Scenario:
    """The scenario's paths for 5 s, fed 10 Mbit/s (twice the 2 + 3 Mbit/s of the
    benchmark scenario's paths) in 1500 B blocks with a deadline of 1 s."""
    d = scenario.to_dict()
    d["duration_s"] = d["horizon_s"] = 5.0
    d["workload"] = {"type": "bulk", "rate_mbps": 10.0, "chunk_bytes": 1500, "deadline_ms": 1000}
    d["name"] = f"{scenario.name}-deep-backlog"
    return Scenario.from_dict(d)


LENGTH_FACTOR = 8
SCALING_SCENARIOS = ("bench", "overloaded", "deep-backlog", "bulk-transfer")
BULK_TRANSFER_S = 5.0
"""Length of the 1x bulk transfer (:func:`_bulk_transfer`)."""


def _lengthened(scenario: Scenario, factor: int) -> Scenario:
    """The scenario with its duration (and horizon, if set) multiplied by factor."""
    d = scenario.to_dict()
    d["duration_s"] = d["duration_s"] * factor
    if d.get("horizon_s") is not None:
        d["horizon_s"] = d["horizon_s"] * factor
    d["name"] = f"{scenario.name}-x{factor}"
    return Scenario.from_dict(d)


def _fastest(measures: list[Callable[[], float]], seconds: float, min_rounds: int) -> list[float]:
    """The smallest value each measure gave, the measures called in turn round after round
    until ``seconds`` have passed and at least ``min_rounds`` rounds were made, so that a
    slow moment of the machine does not land on one of them only."""
    best = [float("inf")] * len(measures)
    start, rounds = time.perf_counter(), 0
    while rounds < min_rounds or time.perf_counter() - start < seconds:
        for i, measure in enumerate(measures):
            best[i] = min(best[i], measure())
        rounds += 1
    return best


def _seconds(call: Callable[[], object]) -> Callable[[], float]:
    """A measure: the wall time of one call."""
    def measure() -> float:
        t = time.perf_counter()
        call()
        return time.perf_counter() - t
    return measure


def _native_run_s(sim: _core.Sim, native: str, params: tuple[float, ...]) -> Callable[[], float]:
    """A measure: seconds of one whole native episode (reset with seed 1 first, untimed)."""
    def measure() -> float:
        sim.reset(1)
        return _seconds(lambda: sim.run(native, params))()
    return measure


def _bulk_transfer(seconds: float) -> Scenario:
    """One file that the two paths (20 Mbit/s at 40 ms, 10 Mbit/s at 80 ms with 0.1 % loss)
    carry in about ``seconds``: one block of that many bytes, due at the end. A block's
    pieces then number in the tens of thousands, and a scheduler that walks them at every
    decision costs more per packet the longer the transfer."""
    return Scenario.from_dict({
        "name": f"bulk-transfer-{seconds:g}s", "duration_s": seconds,
        "paths": [{"name": "fast", "bandwidth": {"type": "constant", "mbps": 20.0}, "rtt_ms": 40.0},
                  {"name": "lossy", "bandwidth": {"type": "constant", "mbps": 10.0}, "rtt_ms": 80.0, "loss": 0.001}],
        "workload": {"type": "explicit", "blocks": [{"arrival_ms": 0.0, "size_bytes": int(30e6 / 8 * seconds),
                                                     "deadline_ms": 1e3 * seconds}]},
    })


def _scaling_pair(kind: str, factor: int) -> tuple[Scenario, Scenario]:
    """The scenario of a scaling kind at 1x and ``factor`` x its length (the bulk transfer's
    file grows with it)."""
    if kind == "bench":
        base = scenarios.get(BENCH_SCENARIO)
    elif kind == "overloaded":
        base = scenarios.get(OVERLOADED_SCENARIO)
    elif kind == "deep-backlog":
        base = _deep_backlog(scenarios.get(BENCH_SCENARIO))
    elif kind == "bulk-transfer":
        return _bulk_transfer(BULK_TRANSFER_S), _bulk_transfer(BULK_TRANSFER_S * factor)
    else:
        raise ValueError(f"unknown scaling scenario {kind!r}; expected one of {SCALING_SCENARIOS}")
    return base, _lengthened(base, factor)


def length_scaling(seconds: float, policies: tuple[str, ...] | None = None,
                   kinds: tuple[str, ...] = SCALING_SCENARIOS, factor: int = LENGTH_FACTOR) -> dict[str, Any]:
    """Time per packet of native twins at 1x and ``factor`` x the episode length.

    The two lengths are run alternately until ``seconds`` have passed for the pair (at
    least twice each), and each keeps its fastest run (:func:`_fastest`).

    Returns
    -------
    dict
        ``{kind: {policy: {"ns_per_packet_1x", "ns_per_packet_8x", "ratio"}}}`` (the
        second key names the factor), plus ``"factor"``.
    """
    names = policies or tuple(n for n, cls in baselines.REGISTRY.items() if cls.native)
    out: dict[str, Any] = {"factor": factor}
    for kind in kinds:
        sims = [build_episode(sc, seed=0).make_sim() for sc in _scaling_pair(kind, factor)]
        rows: dict[str, dict[str, float]] = {}
        for name in names:
            instance = registry.make(name)
            best_s = _fastest([_native_run_s(sim, instance.native, instance.native_params()) for sim in sims],
                              seconds, 2)
            best = [t * 1e9 / int(np.asarray(sim.view("packets_sent")).sum()) for t, sim in zip(best_s, sims)]
            rows[name] = {"ns_per_packet_1x": best[0], f"ns_per_packet_{factor}x": best[1], "ratio": best[1] / best[0]}
        out[kind] = rows
    return out


def format_length_scaling(r: dict[str, Any]) -> str:
    """The table of :func:`length_scaling`: one row per twin, a column pair per scenario."""
    factor = r["factor"]
    kinds = [k for k in r if k != "factor"]
    head = f"{'time per packet [ns]':<16}" + "".join(f"{k + f' 1x / {factor}x / ratio':>34}" for k in kinds)
    lines = [f"native twins at 1x and {factor}x the episode length", "", head]
    for name in r[kinds[0]]:
        cells = []
        for k in kinds:
            row = r[k][name]
            cells.append(f"{row['ns_per_packet_1x']:>12,.0f}{row[f'ns_per_packet_{factor}x']:>12,.0f}{row['ratio']:>10.2f}")
        lines.append(f"{name:<16}" + "".join(cells))
    return "\n".join(lines)


def _timed(step: Callable[[], int], seconds: float) -> tuple[int, float]:
    """Call step() until `seconds` have passed; returns (units counted, elapsed)."""
    units = 0
    start = time.perf_counter()
    elapsed = 0.0
    while elapsed < seconds:
        units += step()
        elapsed = time.perf_counter() - start
    return units, elapsed


def episode_packets_per_s(cc: str | None, seconds: float, backlogged: bool = False,
                          policy: str = "minrtt", deep_backlog: bool = False) -> dict[str, float]:
    """Packets per second of whole native episodes of a registered policy (default
    parameters) on the benchmark scenario, with every path's controller set to ``cc``
    (None: the scenario's own); ``backlogged`` and ``deep_backlog`` pick the variants
    of the module docstring."""
    scenario = scenarios.get(BENCH_SCENARIO)
    if backlogged:
        scenario = _backlogged(scenario)
    if deep_backlog:
        scenario = _deep_backlog(scenario)
    if cc is not None:
        scenario = _with_cc(scenario, cc)
    episode = build_episode(scenario, seed=0)
    sim = episode.make_sim()
    packets_view = np.asarray(sim.view("packets_sent"))
    seeds = iter(range(1, 1 << 30))
    instance = registry.make(policy)
    native, params = instance.native, instance.native_params()

    def one() -> int:
        sim.reset(next(seeds))
        sim.run(native, params)
        return int(packets_view.sum())

    packets, elapsed = _timed(one, seconds)
    return {"packets_per_s": packets / elapsed, "packets_per_episode": float(packets_view.sum())}


PATH_DYNAMICS = ("none", "jitter", "delay_steps", "outages")


def _with_dynamics(scenario: Scenario, kind: str) -> Scenario:
    """The scenario with one kind of path dynamics on every path (see the module docstring)."""
    d = scenario.to_dict()
    end = int(d["duration_s"])
    for p in d["paths"]:
        if kind == "jitter":
            p["delay"] = {"jitter_ms": 10.0, "rev_jitter_ms": 10.0}
        elif kind == "delay_steps":
            p["delay"] = {"steps": [[float(t), 40.0 + 20.0 * (t % 3)] for t in range(1, end)]}
        elif kind == "outages":
            p["outages"] = [[float(t), t + 0.2] for t in range(5, end, 10)]
    return Scenario.from_dict(d)


def path_dynamics_packets_per_s(seconds: float) -> dict[str, float]:
    """Whole-episode packets/s of native MinRTT on the benchmark scenario with each kind
    of :data:`PATH_DYNAMICS` (``none``: as it is)."""
    sims = [build_episode(_with_dynamics(scenarios.get(BENCH_SCENARIO), k), seed=0).make_sim()
            for k in PATH_DYNAMICS]
    packets = []
    for sim in sims:
        sim.reset(1)
        sim.run("minrtt", ())
        packets.append(int(np.asarray(sim.view("packets_sent")).sum()))
    best = _fastest([_native_run_s(sim, "minrtt", ()) for sim in sims], seconds, min_rounds=3)
    return {k: n / t for k, n, t in zip(PATH_DYNAMICS, packets, best)}


def env_steps_per_s(env_id: str, seconds: float, masked: bool, **kwargs: Any) -> float:
    """Steps per second of one environment made with gym.make, random valid actions."""
    env = gym.make(env_id, **kwargs)
    n_actions = int(cast(gym.spaces.Discrete, env.action_space).n)
    rng = np.random.default_rng(0)
    uniform = rng.random(1 << 16)
    env.reset(seed=0)
    base: Any = env.unwrapped  # the environment itself: action_masks() is its own (MaskablePPO's)
    counter = [0]

    def one() -> int:
        steps = 0
        for _ in range(256):
            u = uniform[counter[0] & 0xFFFF]
            counter[0] += 1
            if masked:
                valid = np.flatnonzero(base.action_masks())
                action = int(valid[int(u * len(valid))])
            else:
                action = int(u * n_actions)
            _, _, terminated, truncated, _ = env.step(action)
            steps += 1
            if terminated or truncated:
                env.reset()
        return steps

    steps, elapsed = _timed(one, seconds)
    env.close()
    return steps / elapsed


def vector_steps_per_s(num_envs: int, seconds: float, scenario: str = BENCH_SCENARIO) -> float:
    """Sub-environment steps per second of the native vector env, random valid actions."""
    venv = MultipathDeadlineVectorEnv(num_envs=num_envs, scenario=scenario)
    K = venv.num_slots
    rng = np.random.default_rng(0)
    venv.reset(seed=0)

    def one() -> int:
        for _ in range(16):
            masks = venv.action_masks()
            n_valid = masks[:, :K].sum(axis=1)
            actions = (rng.random(num_envs) * (n_valid + 1)).astype(np.int64)
            actions[actions == n_valid] = K
            venv.step(actions)
        return 16 * num_envs

    steps, elapsed = _timed(one, seconds)
    venv.close()
    return steps / elapsed


def cartpole_vector_steps_per_s(num_envs: int, seconds: float, mode: str) -> float:
    """Sub-environment steps per second of gymnasium's ``CartPole-v1`` vectorized by
    ``gym.make_vec`` in ``mode``: ``vector_entry_point`` (its numpy vector environment,
    every pole in one array) or ``sync`` (one Python environment after another), random
    actions drawn by numpy for the whole batch."""
    venv = gym.make_vec("CartPole-v1", num_envs=num_envs, vectorization_mode=mode)
    rng = np.random.default_rng(0)
    venv.reset(seed=0)

    def one() -> int:
        for _ in range(16):
            venv.step((rng.random(num_envs) * 2).astype(np.int64))
        return 16 * num_envs

    steps, elapsed = _timed(one, seconds)
    venv.close()
    return steps / elapsed


def simulate_overhead(seconds: float, factor: int = LENGTH_FACTOR) -> dict[str, float]:
    """``simulate()`` against the core's own run on the benchmark scenario (MinRTT), at 1x
    and ``factor`` x its length: the fastest of runs alternated for ``seconds`` (at least
    three each)."""
    base = scenarios.get(BENCH_SCENARIO)
    out: dict[str, float] = {}
    for label, scenario in (("1x", base), (f"{factor}x", _lengthened(base, factor))):
        instance = registry.make("minrtt")
        sim = build_episode(scenario, seed=0).make_sim()
        best_simulate, best_core = _fastest(
            [_seconds(partial(simulate, scenario, instance, seed=0)),
             _native_run_s(sim, instance.native, instance.native_params())], seconds, 3)
        out[f"simulate_s_{label}"] = best_simulate
        out[f"core_s_{label}"] = best_core
        out[f"outside_core_to_core_{label}"] = (best_simulate - best_core) / best_core
    return out


def _process_env() -> dict[str, str]:
    """The environment of the measured processes: this one's, with bytecode caches allowed,
    so that after the first run modules load from them as from an installed package."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _fastest_process(commands: list[list[str]], runs: int) -> list[float]:
    """The fastest wall time of each command run as a process (:func:`_process_env`),
    alternated ``runs`` times."""
    best = [float("inf")] * len(commands)
    for _ in range(runs):
        for i, command in enumerate(commands):
            t = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True, env=_process_env())
            best[i] = min(best[i], time.perf_counter() - t)
    return best


# The peak resident memory of the new process image: Linux's VmHWM (ru_maxrss would count
# the parent's pages at the fork), else ru_maxrss.
_IMPORT_PROBE = ("import os, resource, sys, time\n"
                 "t = time.perf_counter()\n"
                 "import {module}\n"
                 "t = time.perf_counter() - t\n"
                 "peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\n"
                 "if os.path.exists('/proc/self/status'):\n"
                 "    for line in open('/proc/self/status'):\n"
                 "        if line.startswith('VmHWM:'):\n"
                 "            peak = int(line.split()[1]) / 1024\n"
                 "print(t, peak, 'pandas' in sys.modules)\n")


def process_costs(runs: int = 3) -> dict[str, float]:
    """Fresh interpreters: the import of ``mpsched.envs`` (seconds, peak resident MiB,
    whether pandas came with it) beside numpy's alone, and the wall time of a whole process
    that simulates one episode of the benchmark scenario beside one that imports numpy;
    the fastest of ``runs`` each, bytecode caches allowed (:func:`_process_env`)."""

    def probe(module: str) -> tuple[float, float, bool]:
        best: tuple[float, float, bool] | None = None
        for _ in range(runs):
            out = subprocess.run([sys.executable, "-c", _IMPORT_PROBE.format(module=module)], check=True,
                                 capture_output=True, text=True, env=_process_env()).stdout.split()
            got = (float(out[0]), float(out[1]), out[2] == "True")
            best = got if best is None or got[0] < best[0] else best
        assert best is not None
        return best

    envs_s, envs_mib, pandas_loaded = probe("mpsched.envs")
    numpy_s, numpy_mib, _ = probe("numpy")
    episode, bare = _fastest_process(
        [[sys.executable, "-c", f"from mpsched.envs import simulate; simulate({BENCH_SCENARIO!r}, 'minrtt', seed=0)"],
         [sys.executable, "-c", "import numpy"]], runs)
    return {
        "import_envs_s": envs_s, "import_envs_rss_mib": envs_mib, "import_envs_loads_pandas": float(pandas_loaded),
        "import_numpy_s": numpy_s, "import_numpy_rss_mib": numpy_mib,
        "process_one_episode_s": episode, "process_numpy_only_s": bare,
    }


def clones_per_s(seconds: float) -> float:
    """``Sim.clone()`` calls per second on the benchmark scenario's episode, halfway
    through (MinRTT's decisions up to then, through the step API)."""
    episode = build_episode(scenarios.get(BENCH_SCENARIO), seed=0)
    sim = episode.make_sim()
    buf = np.zeros(sim.n_blocks, np.int32)
    while sim.next_decision() >= 0 and sim.now_ns < episode.end_ns // 2:
        n = sim.sendable(buf)
        sim.apply(int(buf[0]) if n else -1)

    def one() -> int:
        for _ in range(64):
            sim.clone()
        return 64

    clones, elapsed = _timed(one, seconds)
    return clones / elapsed


# The block-level comparison ([dams] Sec. V-B's setting): 814 frames of 4.3 Mbit/s AVC video
# at 30 frames/s with 200 ms deadlines over two cellular-like paths averaging 1.50 and 2.36
# Mbit/s with minimum RTTs of 10 and 40 ms (the dams-paper suite's traces, from their start).
PEER_FRAMES = 814
PEER_FPS = 30
PEER_PATHS = (("cellular-1.50.txt", 10), ("cellular-2.36.txt", 40))
PEER_POLICY = "dams"
_TRACES = Path(__file__).parent / "suites" / "traces"


def peer_scenario(factor: int = 1) -> Scenario:
    """The block-level comparison's scenario, ``factor`` times :data:`PEER_FRAMES` frames."""
    return Scenario.from_dict({
        "name": f"block-reference-x{factor}",
        # half a frame interval past the last frame: exactly PEER_FRAMES * factor frames
        "duration_s": (PEER_FRAMES * factor - 0.5) / PEER_FPS,
        "paths": [{"name": f"path{i + 1}", "rtt_ms": rtt,
                   "bandwidth": {"type": "trace", "format": "cooked", "file": str(_TRACES / trace)}}
                  for i, (trace, rtt) in enumerate(PEER_PATHS)],
        "workload": {"type": "avc", "fps": PEER_FPS, "bitrate_mbps": 4.3, "deadline_ms": 200},
    })


def _reference_blocks(scenario: Scenario) -> list[tuple[int, int, int, int, float]]:
    """The scenario's blocks (seed 0) as :mod:`block_reference` reads them."""
    b = build_episode(scenario, seed=0).blocks
    return [(int(a), int(s), int(d), int(p), float(w))
            for a, s, d, p, w in zip(b.arrival_ns, b.size_bytes, b.deadline_ns, b.priority, b.weight)]


def block_reference_comparison(seconds: float, factors: tuple[int, ...] = (1, LENGTH_FACTOR),
                               runs: int = 3) -> dict[str, float]:
    """``simulate()`` with DAMS against :mod:`block_reference` (pure Python, block level)
    on :func:`peer_scenario` at each length factor: the simulation alone in this process
    (fastest of alternated runs for ``seconds``, at least three each) and a whole fresh
    process each (fastest of ``runs``: ``simulate`` on the scenario's YAML file, against
    the reference script on the blocks written to a file and the trace files)."""
    out: dict[str, float] = {}
    for factor in factors:
        scenario = peer_scenario(factor)
        blocks = _reference_blocks(scenario)
        pipes = [block_reference.read_cooked_trace(str(_TRACES / trace), rtt * 500_000) for trace, rtt in PEER_PATHS]
        ours_s, reference_s = _fastest([_seconds(partial(simulate, scenario, PEER_POLICY, seed=0)),
                                        _seconds(partial(block_reference.run, blocks, pipes))], seconds, 3)
        ours = simulate(scenario, PEER_POLICY, seed=0).summary
        reference = block_reference.run(blocks, pipes)
        with tempfile.TemporaryDirectory() as folder:
            yaml_file, blocks_file = Path(folder) / "scenario.yaml", Path(folder) / "blocks.txt"
            yaml_file.write_text(json.dumps(scenario.to_dict()))  # JSON is YAML
            blocks_file.write_text("".join(" ".join(map(str, b)) + "\n" for b in blocks))
            ours_process, reference_process = _fastest_process([
                [sys.executable, "-c",
                 f"from mpsched.envs import simulate; simulate({str(yaml_file)!r}, {PEER_POLICY!r}, seed=0)"],
                [sys.executable, block_reference.__file__, str(blocks_file),
                 *(arg for trace, rtt in PEER_PATHS for arg in ("--path", f"{_TRACES / trace}:{rtt / 2}"))],
            ], runs)
        label = f"{factor}x"
        out |= {
            f"reference_blocks_{label}": float(len(blocks)),
            f"reference_simulate_s_{label}": reference_s, f"reference_simulate_ours_s_{label}": ours_s,
            f"reference_simulate_speedup_{label}": reference_s / ours_s,
            f"reference_process_s_{label}": reference_process, f"reference_process_ours_s_{label}": ours_process,
            f"reference_process_ratio_{label}": ours_process / reference_process,
            f"reference_on_time_rate_{label}": reference["on_time_rate"],
            f"reference_on_time_rate_ours_{label}": ours["on_time_rate"],
        }
    return out


def _resident_bytes() -> float:
    """This process's resident memory (Linux /proc), NaN elsewhere."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return float("nan")


def vector_env_footprint(num_envs: int = 1024) -> dict[str, float]:
    """Resident KiB per sub-environment and seconds of ``reset`` for ``num_envs``
    sub-environments of the benchmark scenario."""
    before = _resident_bytes()
    venv = MultipathDeadlineVectorEnv(num_envs=num_envs, scenario=BENCH_SCENARIO)
    start = time.perf_counter()
    venv.reset(seed=0)
    reset_s = time.perf_counter() - start
    per_env = (_resident_bytes() - before) / num_envs / 1024
    venv.close()
    return {"vector_env_kib_per_env": per_env, "vector_env_reset_s": reset_s, "vector_env_footprint_envs": num_envs}


def training_figures(seconds: float) -> dict[str, Any]:
    """:func:`.training_bench.training_comparison` with learns of 4,096 environment steps
    per half second of ``seconds``; nothing without the ``rl`` extra."""
    try:
        import sb3_contrib  # noqa: F401
    except ImportError:
        return {}
    return training_comparison(steps=4096 * max(1, round(2 * seconds)))


def run_benchmarks(seconds: float = 2.0, vector_sizes: tuple[int, ...] = VECTOR_SIZES) -> dict[str, Any]:
    """All figures of ``mpsched bench``; the keys of ``--json``."""
    ideal = episode_packets_per_s("ideal", seconds)
    newreno = episode_packets_per_s("newreno", seconds)
    bulk = {cc: episode_packets_per_s(cc, seconds, backlogged=True) for cc in WINDOW_CONTROLLERS}
    twinned = [n for n, cls in baselines.REGISTRY.items() if cls.native]
    per_policy = {n: episode_packets_per_s(None, seconds, policy=n)["packets_per_s"] for n in twinned}
    deep = {n: episode_packets_per_s(None, seconds, policy=n, deep_backlog=True)["packets_per_s"] for n in twinned}
    dynamics = path_dynamics_packets_per_s(seconds)
    env_rate = env_steps_per_s(ENV_ID, seconds, masked=True, scenario=BENCH_SCENARIO)
    cartpole_rate = env_steps_per_s("CartPole-v1", seconds, masked=False)
    overhead = simulate_overhead(seconds)
    clones = clones_per_s(seconds)
    footprint = vector_env_footprint()
    process = process_costs()
    reference = block_reference_comparison(seconds)
    vector = {n: vector_steps_per_s(n, seconds) for n in vector_sizes}
    overloaded = vector_steps_per_s(256, seconds, OVERLOADED_SCENARIO)
    cartpole_vector = {mode: cartpole_vector_steps_per_s(256, seconds, mode) for mode in CARTPOLE_VECTOR_MODES}
    training = training_figures(seconds)
    return {
        **training,
        "episode_packets_per_s": ideal["packets_per_s"],
        "episode_packets_per_s_newreno": newreno["packets_per_s"],
        **{f"bulk_packets_per_s_{cc}": r["packets_per_s"] for cc, r in bulk.items()},
        **{f"{cc}_to_newreno_time_ratio": bulk["newreno"]["packets_per_s"] / r["packets_per_s"]
           for cc, r in bulk.items() if cc != "newreno"},
        "baseline_packets_per_s": per_policy,
        "baseline_time_ratio_to_minrtt": {n: per_policy["minrtt"] / v for n, v in per_policy.items()},
        "baseline_packets_per_s_deep_backlog": deep,
        "baseline_deep_backlog_time_ratio_to_minrtt": {n: deep["minrtt"] / v for n, v in deep.items()},
        "path_dynamics_packets_per_s": dynamics,
        "path_dynamics_time_ratio_to_none": {k: dynamics["none"] / v for k, v in dynamics.items()},
        **overhead,
        **process,
        **reference,
        "sim_clones_per_s": clones,
        **footprint,
        "env_steps_per_s": env_rate,
        "cartpole_steps_per_s": cartpole_rate,
        "env_to_cartpole_ratio": env_rate / cartpole_rate,
        "vector_env_steps_per_s": vector.get(256, float("nan")),
        "vector_env_steps_per_s_by_envs": {str(n): v for n, v in vector.items()},
        "vector_to_single_env_ratio_256": vector.get(256, float("nan")) / env_rate,
        "vector_env_steps_per_s_overloaded": overloaded,
        **{f"cartpole_vector_steps_per_s_{mode}": v for mode, v in cartpole_vector.items()},
        **{f"vector_to_cartpole_vector_ratio_{mode}": vector.get(256, float("nan")) / v
           for mode, v in cartpole_vector.items()},
        "scenario": BENCH_SCENARIO,
        "overloaded_scenario": OVERLOADED_SCENARIO,
        "packets_per_episode_ideal": ideal["packets_per_episode"],
        "packets_per_episode_newreno": newreno["packets_per_episode"],
        **{f"packets_per_episode_bulk_{cc}": r["packets_per_episode"] for cc, r in bulk.items()},
        "seconds_per_figure": seconds,
        "machine": machine.describe(),
    }


def format_report(r: dict[str, Any]) -> str:
    """The human-readable table of ``mpsched bench``."""
    lines = [
        f"mpsched bench on {r['scenario']} ({r['machine']})",
        "",
        f"{'figure':<52}{'value':>16}",
        f"{'whole episode, native MinRTT, ideal [packets/s]':<52}{r['episode_packets_per_s']:>16,.0f}",
        f"{'whole episode, native MinRTT, NewReno [packets/s]':<52}{r['episode_packets_per_s_newreno']:>16,.0f}",
    ]
    for cc in WINDOW_CONTROLLERS:
        label = CONTROLLER_LABELS[cc]
        lines.append(f"{f'bulk lossy episode, MinRTT, {label} [packets/s]':<52}{r[f'bulk_packets_per_s_{cc}']:>16,.0f}")
        if cc != "newreno":
            lines.append(f"{f'  time per packet, {label} / NewReno':<52}{r[f'{cc}_to_newreno_time_ratio']:>16.2f}")
    lines.append(f"{'whole episode, each native baseline [packets/s]':<52}{'':>16}  time per packet / MinRTT")
    for name, v in r["baseline_packets_per_s"].items():
        lines.append(f"{f'  {name}':<52}{v:>16,.0f}  {r['baseline_time_ratio_to_minrtt'][name]:>8.2f}")
    lines.append(f"{'the same, deep backlog [packets/s]':<52}{'':>16}  time per packet / MinRTT")
    for name, v in r["baseline_packets_per_s_deep_backlog"].items():
        ratio = r["baseline_deep_backlog_time_ratio_to_minrtt"][name]
        lines.append(f"{f'  {name}':<52}{v:>16,.0f}  {ratio:>8.2f}")
    lines.append(f"{'path dynamics, native MinRTT [packets/s]':<52}{'':>16}  time per packet / none")
    for kind, v in r["path_dynamics_packets_per_s"].items():
        lines.append(f"{f'  {kind}':<52}{v:>16,.0f}  {r['path_dynamics_time_ratio_to_none'][kind]:>8.2f}")
    factor = LENGTH_FACTOR
    for label in ("1x", f"{factor}x"):
        lines += [
            f"{f'simulate(), MinRTT, {label} length [ms]':<52}{r[f'simulate_s_{label}'] * 1e3:>16.1f}",
            f"{'  of which the core [ms]; outside / core':<52}{r[f'core_s_{label}'] * 1e3:>16.1f}"
            f"  {r[f'outside_core_to_core_{label}']:>8.2f}",
        ]
    pandas_note = "pandas loaded" if r["import_envs_loads_pandas"] else "without pandas"
    lines += [
        f"{'import mpsched.envs, fresh process [ms]':<52}{r['import_envs_s'] * 1e3:>16.0f}  ({pandas_note})",
        f"{'  peak resident memory after it [MiB]':<52}{r['import_envs_rss_mib']:>16.0f}",
        f"{'import numpy alone [ms]; [MiB]':<52}{r['import_numpy_s'] * 1e3:>16.0f}  {r['import_numpy_rss_mib']:>8.0f}",
        f"{'whole process, one simulate() episode [ms]':<52}{r['process_one_episode_s'] * 1e3:>16.0f}",
        f"{'whole process, import numpy only [ms]':<52}{r['process_numpy_only_s'] * 1e3:>16.0f}",
    ]
    lines.append(f"block-level pure-Python reference ({PEER_FRAMES} frames, {PEER_POLICY}; "
                 "experiments/block_reference.py):")
    for label in ("1x", f"{factor}x"):
        lines += [
            f"{f'  {label}: reference simulation; simulate() [ms]':<52}"
            f"{r[f'reference_simulate_s_{label}'] * 1e3:>16.1f}  {r[f'reference_simulate_ours_s_{label}'] * 1e3:>8.1f}",
            f"{'    simulate() speed-up over the reference':<52}{r[f'reference_simulate_speedup_{label}']:>16.1f}",
            f"{f'  {label}: whole process, reference; ours [ms]':<52}{r[f'reference_process_s_{label}'] * 1e3:>16.0f}"
            f"  {r[f'reference_process_ours_s_{label}'] * 1e3:>8.0f}",
            f"{'    ours / reference':<52}{r[f'reference_process_ratio_{label}']:>16.2f}",
            f"{f'  {label}: on-time rate, reference (pipes); ours':<52}{r[f'reference_on_time_rate_{label}']:>16.3f}"
            f"  {r[f'reference_on_time_rate_ours_{label}']:>8.3f}",
        ]
    lines += [
        f"{'Sim.clone(), episode halfway through [clones/s]':<52}{r['sim_clones_per_s']:>16,.0f}",
        f"{'gym.make env, random valid actions [steps/s]':<52}{r['env_steps_per_s']:>16,.0f}",
        f"{'gym.make CartPole-v1, random actions [steps/s]':<52}{r['cartpole_steps_per_s']:>16,.0f}",
        f"{'  ratio env / CartPole':<52}{r['env_to_cartpole_ratio']:>16.2f}",
    ]
    for n, v in r["vector_env_steps_per_s_by_envs"].items():
        lines.append(f"{f'native vector env, {n} envs [env-steps/s]':<52}{v:>16,.0f}")
    lines.append(f"{'  ratio vector (256 envs) / single env':<52}{r['vector_to_single_env_ratio_256']:>16.1f}")
    n_envs = r["vector_env_footprint_envs"]
    per_env = r["vector_env_kib_per_env"]
    lines.append(f"{f'native vector env, {n_envs} envs: resident KiB per env':<52}{per_env:>16,.0f}")
    lines.append(f"{f'  reset of the {n_envs} envs [s]':<52}{r['vector_env_reset_s']:>16.2f}")
    overloaded = r["vector_env_steps_per_s_overloaded"]
    lines.append(f"{'native vector env, 256 envs, overloaded [env-steps/s]':<52}{overloaded:>16,.0f}")
    lines.append(f"  (overloaded: {r['overloaded_scenario']}, "
                 "where random actions build a backlog of hundreds of blocks)")
    for mode in CARTPOLE_VECTOR_MODES:
        lines.append(f"{f'CartPole-v1 make_vec {mode}, 256 envs [env-steps/s]':<52}"
                     f"{r[f'cartpole_vector_steps_per_s_{mode}']:>16,.0f}")
        ratio = r[f"vector_to_cartpole_vector_ratio_{mode}"]
        lines.append(f"{'  ratio native vector env (256) / it':<52}{ratio:>16.3f}")
    if "training_steps_per_s" in r:
        lines += format_training(r)
    else:
        lines.append("training: not measured (the rl extra is not installed)")
    return "\n".join(lines)
