"""The core's compiler options and its speed: the ns-3 grid's bulk flows timed in builds of
the C core that differ only in how they are compiled, in one run.

setup.py compiles the core with the interpreter's flags and its own (``-O2``, hidden
symbols). This benchmark compiles ``envs/core`` again, outside the package, as each of:

- ``setup.py``: the flags setup.py passes, the reference;
- ``-O3``;
- ``-O3 -flto``: link-time optimisation across the core's files;
- ``pgo-timed``: ``-O3`` guided by a profile (``-fprofile-generate``, a training run,
  ``-fprofile-use``) of the very runs it is then timed on, which is the most a profile can give;
- ``pgo-suites``: ``-O3`` guided by a profile of other runs: every baseline with a native
  twin on the first episode of each group of the built-in suites (quick), none of them a
  timed run;
- ``fixed-shape``: setup.py's flags on a copy of the sources in which every read of a
  configuration field that all the timed runs share (:data:`FIXED_SHAPE`: one window-based
  path on one link, no cross traffic, i.i.d. loss, no delay dynamics, ...) is the constant
  it holds in them, so the compiler drops every branch and loop those runs never take:
  what a core specialised for this one configuration gains from its compiler, and a build
  valid for these runs only;
- ``fixed-shape pgo-timed``: the same sources, profile-guided as ``pgo-timed``.

Each build is loaded in a worker process in place of ``mpsched.envs._core``. Every build
first runs the check set (each timed case, and each suite episode with every native
twin; a fixed-shape build the timed cases alone) and must give the reference build's
outputs bit for bit: every view the core exports and its counters. Then, round by round
and every build in turn within a round, each build times each case of the quick ns-3
grid (``mpsched validate --against ns3 --quick``: 12 bulk flows of 20 s): ns per packet
is the median wall time of ``Sim.run`` over the runs of a round divided by the packets
delivered. It prints per build the median over the cases (each case's median over
rounds) and its ratio to the reference, and per case the ratio. Needs GCC; the seven
builds take about two minutes on two cores.

    python benchmarks/core_build_options.py [--rounds 3] [--runs 20] [--json]
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib.machinery
import importlib.util
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "envs" / "core"
REFERENCE = "setup.py"


class Build(NamedTuple):
    """How one build is made: options for compiling and linking, the profile's training set
    (None: no profile), and whether it compiles the fixed-shape copy of the sources."""

    extra: list[str]
    training: str | None = None
    fixed_shape: bool = False


BUILDS: dict[str, Build] = {
    REFERENCE: Build([]),
    "-O3": Build(["-O3"]),
    "-O3 -flto": Build(["-O3", "-flto=auto"]),
    "pgo-timed": Build(["-O3"], "timed"),
    "pgo-suites": Build(["-O3"], "suites"),
    "fixed-shape": Build([], fixed_shape=True),
    "fixed-shape pgo-timed": Build(["-O3"], "timed", fixed_shape=True),
}
# What every timed run's configuration holds (experiments/ns3.py's mpsched_scenario: one
# path and its link, a bulk block, block receiver), as the core's sources read it. A wrong
# value here makes the fixed-shape builds fail their check.
FIXED_SHAPE: dict[str, str] = {
    "s->n_subflows": "1", "s->n_paths": "1", "s->n_links": "1", "s->n_cross": "0",
    "s->copies": "0", "s->stream_seq": "0", "s->receiver": "MPS_RECEIVER_BLOCK",
    "s->track_remaining": "0", "s->track_flight": "0", "s->drop_expired": "0", "s->starts_pending": "0",
    "p->dynamics": "0", "p->window_based": "1", "p->gated": "0", "p->loss_model": "MPS_LOSS_IID",
    "k->bw_cycle_ns": "0",
}


def fix_shape(source: str, fields: dict[str, str] = FIXED_SHAPE) -> tuple[str, dict[str, int]]:
    """``source`` with every read of each field in ``fields`` replaced by its value, and the
    number of reads replaced per field. A write (``=``, a compound assignment, ``++`` or
    ``--`` after it) and an address (``&field``) stay as they are."""
    counts: dict[str, int] = {}
    for field, value in fields.items():
        read = re.compile(r"(?<![\w.>])(?<!(?<!&)&)" + re.escape(field)
                          + r"\b(?!\s*(?:[-+*/%|&^]|<<|>>)?=(?!=)|\s*(?:\+\+|--))")
        source, counts[field] = read.subn(f"({value})", source)
    return source, counts


def fixed_shape_sources(folder: Path) -> dict[str, int]:
    """Copies envs/core to ``folder`` with :func:`fix_shape` applied to every file; the reads
    replaced per field. A field with none (renamed in the core) is an error."""
    shutil.copytree(CORE, folder)
    replaced = dict.fromkeys(FIXED_SHAPE, 0)
    for path in [*folder.rglob("*.c"), *folder.rglob("*.h")]:
        text, counts = fix_shape(path.read_text())
        path.write_text(text)
        for field, count in counts.items():
            replaced[field] += count
    unread = [field for field, count in replaced.items() if count == 0]
    if unread:
        raise RuntimeError(f"no read of {', '.join(unread)} found under {CORE}")
    return replaced


def setup_compile_args() -> list[str]:
    """The ``extra_compile_args`` setup.py gives the core's Extension, read from its source."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Extension":
            for keyword in node.keywords:
                if keyword.arg == "extra_compile_args":
                    return list(ast.literal_eval(keyword.value))
    raise RuntimeError("setup.py: no Extension(..., extra_compile_args=[...]) found")


def compile_core(out: Path, objects: Path, extra: list[str], jobs: int, core: Path = CORE) -> None:
    """Compiles every source under ``core`` (envs/core) into ``objects`` and links the extension
    ``out``, with the interpreter's flags, setup.py's and then ``extra``, as setuptools does."""
    cc = shlex.split(sysconfig.get_config_var("CC") or "gcc")
    flags = [*shlex.split(sysconfig.get_config_var("CFLAGS") or ""),
             *shlex.split(sysconfig.get_config_var("CCSHARED") or ""),
             f"-I{core}", f"-I{sysconfig.get_paths()['include']}"]
    setup_args = setup_compile_args()
    sources = sorted(core.rglob("*.c"))
    targets = [objects / source.relative_to(core).with_suffix(".o") for source in sources]

    def one(pair: tuple[Path, Path]) -> None:
        source, target = pair
        target.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([*cc, *flags, "-c", str(source), "-o", str(target), *setup_args, *extra],
                       check=True, capture_output=True, text=True)

    with ThreadPoolExecutor(jobs) as pool:
        list(pool.map(one, zip(sources, targets)))
    ldshared = shlex.split(sysconfig.get_config_var("LDSHARED") or "gcc -shared")
    subprocess.run([*ldshared, *map(str, targets), "-lm", *extra, "-o", str(out)], check=True, capture_output=True,
                   text=True)


def build(name: str, work: Path, jobs: int) -> Path:
    """The extension file of one build of :data:`BUILDS` (a profile-guided one trains first)."""
    extra, training, fixed_shape = BUILDS[name]
    folder = work / name.replace(" ", "_").lstrip("-")
    out = folder / f"_core{sysconfig.get_config_var('EXT_SUFFIX')}"
    core = CORE
    if fixed_shape:
        core = folder / "src"
        fixed_shape_sources(core)
    if training is None:
        compile_core(out, folder / "obj", extra, jobs, core)
        return out
    counts = folder / "counts"
    compile_core(out, folder / "obj", [*extra, "-fprofile-generate", f"-fprofile-dir={counts}",
                                       "-fprofile-update=single"], jobs, core)
    worker(out, "train", training)
    # the same object paths: GCC finds an object's counts by its path
    compile_core(out, folder / "obj", [*extra, "-fprofile-use", f"-fprofile-dir={counts}", "-fprofile-partial-training",
                                       "-Wno-missing-profile"], jobs, core)
    return out


def worker(core: Path, task: str, *args: str) -> Any:
    """Runs ``task`` in a fresh interpreter with ``core`` as ``mpsched.envs._core``; its JSON answer."""
    done = subprocess.run([sys.executable, __file__, "--worker", str(core), task, *args], capture_output=True,
                          text=True, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"worker {task} on {core}: {done.stderr[-2000:]}")
    return json.loads(done.stdout)


# ----------------------------------------------------------------------- worker side


def _use_core(path: str) -> None:
    loader = importlib.machinery.ExtensionFileLoader("mpsched.envs._core", path)
    spec = importlib.util.spec_from_file_location("mpsched.envs._core", path, loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    sys.modules["mpsched.envs._core"] = module
    from mpsched.envs import _core

    if _core.__file__ != path:
        raise RuntimeError(f"mpsched.envs._core is {_core.__file__}, not the build under test {path}")


def _timed_cases() -> list[Any]:
    from mpsched.experiments.ns3 import QUICK, mpsched_episode

    return [(case.label, mpsched_episode(case)) for case in QUICK]


def _suite_runs() -> list[tuple[str, Any, Any]]:
    """(label, episode, policy): each group's first quick suite episode with each native twin."""
    from mpsched import baselines
    from mpsched.envs import build_episode, registry
    from mpsched.experiments.suite import load_suite, names

    twins = [(id, registry.make(id)) for id, cls in baselines.REGISTRY.items() if cls.native]
    runs = []
    for suite in names():
        for group in load_suite(suite, quick=True).groups:
            episode = build_episode(group.cases[0].scenario, 1)
            runs += [(f"{suite}/{group.cases[0].hash}/{id}", episode, policy) for id, policy in twins]
    return runs


def _fingerprint(sim: Any) -> str:
    digest = hashlib.sha256()
    for view in sorted(sim.view_names()):
        try:
            digest.update(memoryview(sim.view(view)).tobytes())
        except KeyError as absent:  # a view of a feature this episode does not have
            digest.update(str(absent).encode())
    digest.update(repr((sim.events, sim.decisions, sim.last_event_ns, sim.reward_total)).encode())
    return digest.hexdigest()


def _work(task: str, args: list[str]) -> Any:
    from mpsched.envs.simulate import drive
    from mpsched.experiments.ns3 import MSS_BYTES

    if task in ("check", "check-timed"):
        answer = {}
        for label, episode in _timed_cases():
            sim = episode.make_sim()
            sim.run("minrtt", ())
            answer[label] = _fingerprint(sim)
        for label, episode, policy in _suite_runs() if task == "check" else []:
            sim = episode.make_sim()
            drive(sim, policy)
            answer[label] = _fingerprint(sim)
        return answer
    if task == "train":
        if args[0] == "timed":
            for _, episode in _timed_cases():
                episode.make_sim().run("minrtt", ())
        else:
            for _, episode, policy in _suite_runs():
                drive(episode.make_sim(), policy)
        return {}
    if task == "time":
        runs, answer = int(args[0]), {}
        for label, episode in _timed_cases():
            walls = []
            for _ in range(runs):
                sim = episode.make_sim()
                begin = time.perf_counter()
                sim.run("minrtt", ())
                walls.append(time.perf_counter() - begin)
            packets = float(np.asarray(sim.view("delivered_bytes")).sum()) / MSS_BYTES
            answer[label] = statistics.median(walls) / packets * 1e9
        return answer
    raise ValueError(f"unknown task {task!r}")


# ----------------------------------------------------------------------- driver


def measure(rounds: int, runs: int, jobs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="mpsched-build-options-") as tmp:
        cores = {name: build(name, Path(tmp), jobs) for name in BUILDS}
        checks = {name: worker(core, "check-timed" if BUILDS[name].fixed_shape else "check")
                  for name, core in cores.items()}
        differing = {name: sorted(k for k, v in check.items() if checks[REFERENCE].get(k) != v)
                     for name, check in checks.items()}
        samples: dict[str, dict[str, list[float]]] = {name: {} for name in cores}
        for _ in range(rounds):
            for name, core in cores.items():
                for label, ns in worker(core, "time", str(runs)).items():
                    samples[name].setdefault(label, []).append(ns)
    per_case = {name: {label: statistics.median(v) for label, v in cases.items()} for name, cases in samples.items()}
    reference = per_case[REFERENCE]
    return {
        "runs_checked": {name: len(check) for name, check in checks.items()}, "differing_runs": differing,
        "median_ns_per_packet": {name: statistics.median(c.values()) for name, c in per_case.items()},
        "median_time_ratio": {name: statistics.median(c[k] / reference[k] for k in c) for name, c in per_case.items()},
        "ns_per_packet": per_case, "rounds": rounds, "runs": runs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every build in turn (default: 3)")
    parser.add_argument("--runs", type=int, default=20, help="runs of each case per build and round (default: 20)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel compilations")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.worker:
        _use_core(options.worker[0])
        print(json.dumps(_work(options.worker[1], options.worker[2:])))
        return
    result = measure(options.rounds, options.runs, options.jobs)
    if options.json:
        print(json.dumps(result, indent=1))
        return
    print(f"runs checked, and of them differing from {REFERENCE}'s outputs:")
    for name, labels in result["differing_runs"].items():
        print(f"  {name:<22} {result['runs_checked'][name]:>5} {len(labels):>5}"
              + (f" ({', '.join(labels[:3])}...)" if labels else ""))
    cases = len(result["ns_per_packet"][REFERENCE])
    print(f"\n{'build':<22}{'ns/packet':>11}{'time / ' + REFERENCE:>18}   (median over the {cases} cases)")
    for name in BUILDS:
        print(f"{name:<22}{result['median_ns_per_packet'][name]:>11.1f}{result['median_time_ratio'][name]:>18.3f}")
    widths = {name: max(12, len(name) + 2) for name in BUILDS if name != REFERENCE}
    print(f"\nper case, time / {REFERENCE}'s:")
    for label, ns in result["ns_per_packet"][REFERENCE].items():
        ratios = "".join(f"{result['ns_per_packet'][name][label] / ns:>{width}.3f}" for name, width in widths.items())
        print(f"  {label:<50}{ns:>7.1f} ns{ratios}")
    print(f"  {'':<50}{'':>10}" + "".join(f"{name:>{width}}" for name, width in widths.items()))


if __name__ == "__main__":
    main()
