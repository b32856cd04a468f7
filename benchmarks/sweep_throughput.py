"""Sweep throughput: 1000 native baseline episodes of 60 s video through the sweep on
local Ray, against the same episodes in a plain in-process loop, in one run.

Prints the load average before and after, the serial time, Ray's start-up (``ray.init``
and one warm-up task per worker) and the sweep's wall time without it (first task
submitted to last row stored), and the ratio of the sweep's time to the serial time
divided by the CPUs Ray used. The issue's bound is a ratio of at most 1.15.

    python benchmarks/sweep_throughput.py [--episodes 1000] [--workers N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

from mpsched.envs import simulate
from mpsched.experiments.suite import Suite
from mpsched.experiments.sweep import run_sweep

SCENARIOS = ["dams-rtt-40", "dams-rtt-80", "dams-rtt-120", "dams-rtt-160", "dams-rtt-200",
             "dams-dynamic-1-rtt-40", "dams-dynamic-1-rtt-80", "dams-dynamic-2-rtt-40", "dams-dynamic-2-rtt-80",
             "dams-bw-2-2.5"]
POLICIES = ["minrtt", "rr", "dams", "dams-c", "dams-robust", "dems", "srpt-ecf", "edf", "dtp", "ecf"]


def bench_suite(episodes: int) -> Suite:
    """10 scenarios x 10 native baselines x episodes / 100 seeds (60 s of AVC video each)."""
    seeds = max(1, episodes // (len(SCENARIOS) * len(POLICIES)))
    return Suite.from_dict({"name": "sweep-bench", "seeds": seeds,
                            "groups": [{"name": "video", "scenarios": SCENARIOS, "policies": POLICIES}]})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=None, help="CPUs of the local Ray (default: all)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    suite = bench_suite(args.episodes)
    episodes = suite.episodes()
    load_before = os.getloadavg()

    begin = time.perf_counter()
    for e in episodes:
        simulate(e.case.scenario, e.policy.build(), seed=e.seed, drop_expired=e.drop_expired).row()
    serial_s = time.perf_counter() - begin

    with tempfile.TemporaryDirectory() as out:
        stats = run_sweep(suite, out, executor="ray", workers=args.workers, progress=False, compact=False)
    load_after = os.getloadavg()
    report = {
        "episodes": len(episodes),
        "serial_s": serial_s,
        "ray_startup_s": stats.startup_s,
        "ray_sweep_s": stats.run_s,
        "ray_cpus": stats.workers,
        "tasks": stats.tasks,
        "serial_per_cpu_s": serial_s / stats.workers,
        "ratio": stats.run_s / (serial_s / stats.workers),
        "failed": len(stats.failed),
        "load_before": load_before,
        "load_after": load_after,
        "cpus": os.cpu_count(),
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{report['episodes']} episodes of 60 s video, native baselines, {report['cpus']} CPUs")
    print(f"load average before: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}")
    print(f"serial in-process loop:          {serial_s:8.2f} s")
    print(f"Ray start-up (init + warm-up):   {stats.startup_s:8.2f} s")
    print(f"Ray sweep, {stats.workers} CPUs, {stats.tasks} tasks: {stats.run_s:8.2f} s")
    print(f"serial / CPUs:                   {report['serial_per_cpu_s']:8.2f} s")
    print(f"ratio (bound 1.15):              {report['ratio']:8.3f}")
    print(f"load average after:  {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")


if __name__ == "__main__":
    main()
