"""ns-3's build profile and its speed: the same bulk flows timed in ns-3 builds that differ
only in their profile, and in the ns-3 that ``pip install ns3`` gives, in one run.

mpsched's speed against ns-3 (``mpsched validate --against ns3``) is measured against the
``ns3`` wheel on PyPI. That wheel is a CMake Release build (-O3) with ns-3's logging and
asserts compiled in: its ``lib64/cmake/ns3/ns3Targets.cmake`` defines
``NS3_BUILD_PROFILE_RELEASE``, ``NS3_LOG_ENABLE`` and ``NS3_ASSERT_ENABLE``, which ns-3's own
``release`` and ``optimized`` profiles leave out. This benchmark measures what they cost.

From an ns-3 source tree (Debian's source package is one: ``ns3_3.37.orig.tar.bz2`` in
deb.debian.org's ``pool/main/n/ns3/``) it builds the modules a bulk flow needs in three
profiles, each in its own copy of the tree under ``--work``:

- ``logs+asserts``: CMake's release build type with ``NS3_LOG`` and ``NS3_ASSERT`` on, as
  the wheel;
- ``release``: ns-3's release profile (``./ns3 configure -d release``): neither;
- ``optimized``: ns-3's optimized profile (``-d optimized``): neither, and ``-march=native``.

It compiles benchmarks/ns3_bulk_flow.cc against each, and against the installed wheel with
the definitions its CMake targets name when the ``ns3`` extra is installed, then runs three
cases of the ns-3 grid (experiments/ns3.py; 30 s each, random loss drawn by ns-3) round by
round, every build in turn within a round. It prints each case's median wall time of
``Simulator::Run`` per build and its ratio to the ``logs+asserts`` build of the same source,
and checks that the builds of one source deliver the same goodput (the same simulation).
Needs cmake, ninja and g++; the three builds take about 3 minutes each on two cores.

    python benchmarks/ns3_build_profile.py --source DIR [--work DIR] [--rounds 5] [--jobs 2] [--json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from mpsched.experiments.ns3 import Ns3Case

PROGRAM = Path(__file__).resolve().with_name("ns3_bulk_flow.cc")
MODULES = "point-to-point;internet;applications;traffic-control"
TARGETS = ["libcore", "libnetwork", "libinternet", "libpoint-to-point", "libapplications", "libtraffic-control"]
COMMON_CMAKE = ["-G", "Ninja", "-DNS3_PYTHON_BINDINGS=OFF", "-DNS3_EXAMPLES=OFF", "-DNS3_TESTS=OFF",
                f"-DNS3_ENABLED_MODULES={MODULES}", "-DNS3_WARNINGS_AS_ERRORS=OFF"]
RELEASE = ["-DCMAKE_BUILD_TYPE=release"]
PROFILES = {  # each profile's CMake options
    "logs+asserts": [*RELEASE, "-DNS3_LOG=ON", "-DNS3_ASSERT=ON", "-DNS3_NATIVE_OPTIMIZATIONS=OFF"],
    "release": [*RELEASE, "-DNS3_LOG=OFF", "-DNS3_ASSERT=OFF", "-DNS3_NATIVE_OPTIMIZATIONS=OFF"],
    "optimized": [*RELEASE, "-DNS3_LOG=OFF", "-DNS3_ASSERT=OFF", "-DNS3_NATIVE_OPTIMIZATIONS=ON"],
}
REFERENCE = "logs+asserts"
WHEEL = "pip wheel"
CASES = [Ns3Case(cc="newreno", rate_mbps=10, rtt_ms=80, loss=0.001, queue_bdp=1.0, seconds=30.0),
         Ns3Case(cc="cubic", rate_mbps=2, rtt_ms=80, loss=0.0, queue_bdp=0.5, seconds=30.0),
         Ns3Case(cc="newreno", rate_mbps=2, rtt_ms=20, loss=0.001, queue_bdp=2.0, seconds=30.0)]
WHEEL_STANDARD = "-std=c++20"  # the wheel (3.44) names no standard in its targets; its headers need C++20
PROFILE_DEFINITIONS = ("NS3_BUILD_PROFILE_DEBUG", "NS3_BUILD_PROFILE_RELEASE", "NS3_BUILD_PROFILE_OPTIMIZED",
                       "NS3_LOG_ENABLE", "NS3_ASSERT_ENABLE")


def run_checked(command: list[str], what: str) -> str:
    """Runs ``command``; a failure raises with ``what`` and the end of its output."""
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {done.returncode}):\n{(done.stdout + done.stderr)[-3000:]}")
    return done.stdout


def build_flags(text: str) -> list[str]:
    """The flags a program built against an ns-3 build needs, read from that build's own
    files (``text``): its profile's definitions, and the ``-march`` and C++ standard ns-3
    was compiled with where they name them."""
    flags = [f"-D{d}" for d in PROFILE_DEFINITIONS if re.search(rf"(?:-D|\b){d}\b", text)]
    return flags + [m.group(0) for m in (re.search(r"-march=\S+", text), re.search(r"-std=\S+", text)) if m]


def compile_program(include: Path, libraries: list[Path], flags: list[str], out: Path) -> Path:
    """benchmarks/ns3_bulk_flow.cc built against one ns-3 build (:func:`build_flags`)."""
    if not libraries:
        raise RuntimeError(f"no libns3 libraries beside {include}")
    run_checked(["g++", "-O3", "-DNDEBUG", *flags, f"-I{include}", str(PROGRAM), "-o", str(out),
                 f"-Wl,-rpath,{libraries[0].parent}", *map(str, libraries)], f"compiling {out.name}")
    return out


def build_profile(source: Path, work: Path, name: str, jobs: int) -> Path:
    """The program built against ns-3 from ``source`` in profile ``name`` (its own copy of
    the tree, so that the profiles' outputs do not meet)."""
    tree = work / re.sub(r"\W", "-", name) / "ns-3"
    if not tree.exists():
        shutil.copytree(source, tree, ignore=shutil.ignore_patterns("build", "cmake-cache"))
    run_checked(["cmake", "-S", str(tree), "-B", str(tree / "build"), *COMMON_CMAKE, *PROFILES[name]],
                f"configuring {name}")
    run_checked(["ninja", "-C", str(tree / "build"), f"-j{jobs}", *TARGETS], f"building {name}")
    libraries = sorted((tree / "build" / "lib").glob("libns3*.so"))
    flags = build_flags((tree / "build" / "build.ninja").read_text())
    return compile_program(tree / "build" / "include", libraries, flags, tree.parent / "ns3_bulk_flow")


def build_against_wheel(work: Path) -> tuple[Path, list[str]] | None:
    """The program built against the installed ``ns3`` wheel, and the flags used (those its
    CMake targets give their users); None when the extra is not installed. The package is
    located, not imported (its import compiles the bindings)."""
    spec = importlib.util.find_spec("ns3")
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations)))
    flags = build_flags((root / "lib64" / "cmake" / "ns3" / "ns3Targets.cmake").read_text())
    if not any(f.startswith("-std=") for f in flags):
        flags.append(WHEEL_STANDARD)
    libraries = sorted((root / "lib64").glob("libns3*.so"))
    return compile_program(root / "include", libraries, flags, work / "ns3_bulk_flow_wheel"), flags


def case_arguments(case: Ns3Case) -> list[str]:
    return [case.cc, f"{case.rate_mbps:g}", f"{case.rtt_ms:g}", f"{case.loss:g}", str(case.queue_packets),
            f"{case.seconds:g}"]


def run_once(program: Path, case: Ns3Case) -> tuple[float, float]:
    """(goodput [Mbit/s], wall time of Simulator::Run [ms]) of one run."""
    fields = run_checked([str(program), *case_arguments(case)], f"{program} on {case.label}").split()
    return float(fields[fields.index("goodput_mbps") + 1]), float(fields[fields.index("wall_ms") + 1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", type=Path, required=True, help="an ns-3 source tree (its CMakeLists.txt at top)")
    parser.add_argument("--work", type=Path, default=None, help="where the builds go (default: a new temporary folder)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=2, help="parallel compile jobs")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not (args.source / "CMakeLists.txt").is_file():
        parser.error(f"--source {args.source}: no CMakeLists.txt there; expected an ns-3 source tree")
    if args.rounds < 1:
        parser.error("--rounds: expected at least 1")
    missing = [tool for tool in ("cmake", "ninja", "g++") if shutil.which(tool) is None]
    if missing:
        parser.error(f"needs {', '.join(missing)} on PATH")
    work = args.work or Path(tempfile.mkdtemp(prefix="ns3-profiles-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"source {args.source.resolve()}, builds in {work}")

    programs = {name: build_profile(args.source.resolve(), work, name, args.jobs) for name in PROFILES}
    wheel = build_against_wheel(work)
    if wheel is not None:
        programs[WHEEL] = wheel[0]
        print(f"{WHEEL}: built with {' '.join(wheel[1])}")

    runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for _ in range(args.rounds):
        for case in CASES:
            for name, program in programs.items():
                runs.setdefault((case.label, name), []).append(run_once(program, case))

    report: dict[str, Any] = {"source": str(args.source.resolve()), "rounds": args.rounds, "cases": []}
    for case in CASES:
        row: dict[str, Any] = {"case": case.label, "queue_packets": case.queue_packets}
        for name in programs:
            samples = runs[(case.label, name)]
            row[name] = {"median_wall_ms": statistics.median(w for _, w in samples), "goodput_mbps": samples[0][0]}
        goodputs = {row[name]["goodput_mbps"] for name in PROFILES}
        if len(goodputs) != 1:
            raise RuntimeError(f"{case.label}: the builds of one source delivered different goodputs {goodputs}")
        report["cases"].append(row)

    if args.json:
        print(json.dumps(report, indent=2))
        return
    names = list(programs)
    print(f"\nMedian wall time of Simulator::Run over {args.rounds} rounds [ms], and its ratio to {REFERENCE}:\n")
    print("| case | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for row in report["cases"]:
        reference = row[REFERENCE]["median_wall_ms"]
        cells = [f"{row[n]['median_wall_ms']:.1f} ({row[n]['median_wall_ms'] / reference:.2f})" for n in names]
        print(f"| {row['case']} | " + " | ".join(cells) + " |")
    print("\nGoodput [Mbit/s]: " + "; ".join(
        f"{row['case']}: {row[REFERENCE]['goodput_mbps']:.4f}"
        + (f" ({WHEEL}: {row[WHEEL]['goodput_mbps']:.4f})" if WHEEL in row else "") for row in report["cases"]))


if __name__ == "__main__":
    main()
