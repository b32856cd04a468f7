"""A large synthetic sweep: 100,000 short two-path episodes through the sweep on local Ray,
then ``mpsched report`` on its results.

Prints the sweep's wall time, the driver's resident memory sampled as the sweep goes
(every second; a tenth of the samples are printed) and its peak, the row
groups of the stored parquet files (the most rows in one group), and the wall time and
peak resident memory of ``mpsched report`` run on the results in a child process.

``--replicate K`` then stores K - 1 more copies of every row, each as a scenario of its
own (and a manifest with those scenarios), so that the report meets K times the rows (a complete
suite of ``K * episodes`` episodes) without running them: how the report's time and
memory grow with the rows, up to the suite limit of 1,000,000 episodes.

    python benchmarks/large_sweep.py [--episodes 100000] [--replicate K] [--workers N] [--out DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from mpsched.experiments.suite import Suite
from mpsched.experiments.sweep import ROW_GROUP_ROWS, ResultStore, run_sweep, suite_layout

SCENARIO = {
    "name": "tiny-web",
    "duration_s": 0.2,
    "paths": [{"name": "wifi", "bandwidth": 20, "rtt_ms": 20}, {"name": "lte", "bandwidth": 5, "rtt_ms": 60}],
    "workload": {"type": "web", "page_interval_s": 0.05, "deadline_ms": 200},
}
POLICIES = ["minrtt", "rr"]


def large_suite(episodes: int) -> Suite:
    """One 0.2 s two-path web scenario x two native policies x episodes / 2 seeds."""
    return Suite.from_dict({"name": "large-sweep", "seeds": max(1, episodes // len(POLICIES)),
                            "groups": [{"name": "web", "scenarios": [{"name": "tiny-web", "base": SCENARIO}],
                                        "policies": POLICIES}]})


REPORT_AND_MEASURE = """
import sys
from pathlib import Path
from mpsched.experiments.cli import main
code = main(["report", *sys.argv[1:]])
hwm = next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("VmHWM:"))
print(hwm.split()[1], file=sys.stderr)
sys.exit(code)
"""


def replicate(out: Path, copies: int) -> int:
    """Store ``copies - 1`` more copies of the rows in ``out``, each as a scenario of its
    own (``tiny-web-2``, ...), and rewrite the manifest for a suite with those scenarios.
    Returns the rows stored."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    store = ResultStore(out)
    manifest = store.manifest()
    files = store.files()
    for k in range(2, copies + 1):
        for i, f in enumerate(files):
            table = pq.read_table(f)
            column = table.schema.get_field_index("scenario")
            name = pa.array([f"{SCENARIO['name']}-{k}"] * table.num_rows, table.schema.field("scenario").type)
            pq.write_table(table.set_column(column, "scenario", name), store.rows_dir / f"part-copy{k}-{i}.parquet",
                           row_group_size=ROW_GROUP_ROWS, compression="zstd")
    spec = json.loads(json.dumps(manifest["spec"]))
    scenarios = spec["groups"][0]["scenarios"]
    scenarios += [{**scenarios[0], "name": f"{SCENARIO['name']}-{k}"} for k in range(2, copies + 1)]
    suite = Suite.from_dict(spec)
    manifest.update(spec=spec, digest=suite.digest(), layout=suite_layout(suite))
    tmp = store.manifest_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True, default=str) + "\n")
    os.replace(tmp, store.manifest_path)
    return sum(pq.ParquetFile(f).metadata.num_rows for f in store.files())


def rss_mib() -> float:
    """This process's resident memory now (Linux ``/proc/self/statm``)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize() / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--replicate", type=int, default=1, metavar="K",
                        help="report on K times the rows: K - 1 copies under new seeds (default 1: none)")
    parser.add_argument("--workers", type=int, default=None, help="CPUs of the local Ray (default: all)")
    parser.add_argument("--out", default=None, help="keep the results here (default: a temporary folder)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    import pyarrow.parquet as pq

    suite = large_suite(args.episodes)
    samples: list[tuple[float, float]] = [(0.0, rss_mib())]
    done = threading.Event()

    def sample() -> None:
        begin = time.perf_counter()
        while not done.wait(1.0):
            samples.append((time.perf_counter() - begin, rss_mib()))

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out or tmp) / "large-sweep"
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        begin = time.perf_counter()
        stats = run_sweep(suite, out, executor="ray", workers=args.workers, progress=False)
        sweep_s = time.perf_counter() - begin
        done.set()
        sampler.join()
        peak_driver_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        groups = [pq.ParquetFile(f).metadata for f in sorted((out / "rows").glob("*.parquet"))]
        reported_rows = replicate(out, args.replicate) if args.replicate > 1 else stats.ran
        report_dir = Path(tmp) / "report"
        begin = time.perf_counter()
        # the child reads its own high-water mark: a child's ru_maxrss also counts the
        # parent's memory it was forked with
        child = subprocess.run([sys.executable, "-c", REPORT_AND_MEASURE, str(out), "--out", str(report_dir)],
                               check=True, capture_output=True, text=True)
        report_s = time.perf_counter() - begin
        report_peak_mib = float(child.stderr.strip().splitlines()[-1]) / 1024

    tenth = max(1, len(samples) // 10)
    result = {
        "episodes": stats.episodes,
        "stored": stats.ran,
        "failed": len(stats.failed),
        "tasks": stats.tasks,
        "workers": stats.workers,
        "sweep_wall_s": round(sweep_s, 1),
        "ray_startup_s": round(stats.startup_s, 1),
        "driver_rss_mib_over_time": [(round(t), round(m, 1)) for t, m in samples[::tenth]],
        "driver_peak_rss_mib": round(peak_driver_mib, 1),
        "row_files": len(groups),
        "row_groups": sum(g.num_row_groups for g in groups),
        "max_rows_per_group": max(g.row_group(k).num_rows for g in groups for k in range(g.num_row_groups)),
        "report_rows": reported_rows,
        "report_wall_s": round(report_s, 1),
        "report_peak_rss_mib": round(report_peak_mib, 1),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for k, v in result.items():
            print(f"{k:>26}: {v}")


if __name__ == "__main__":
    main()
