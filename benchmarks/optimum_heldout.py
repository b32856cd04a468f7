"""The achievable optimum against every policy on bursty, held-out workloads.

Usage::

    python benchmarks/optimum_heldout.py [--seeds 0 1] [--duration 20] [--mahimahi A.down B.down]
                                         [--frames FILE] [--json OUT] [--scores-only OUT]
    python benchmarks/optimum_heldout.py --compare BEFORE.json AFTER.json

Builds three kinds of scenario the built-in suites do not have, each with paths read
from Mahimahi packet-delivery traces (1 ms bins, so the bandwidth is an on/off schedule):

- ``web-mahimahi``: a web workload over two cellular traces;
- ``pages-explicit``: two HTTP/2-like page loads as explicit blocks, each object with its
  own deadline, over the same traces;
- ``frames-lowrate``: a per-frame video file over two low-rate traces (UMTS/EVDO-like).

By default the traces and the frame file are generated here (seeded, Mahimahi's and a
frame log's formats), so that the benchmark runs anywhere; ``--mahimahi`` and ``--frames``
take real files instead. For each scenario and seed it prints DAMS, DAMS-C, the best
registered baseline, the conservative schedule's replay, the ``optimum`` row (the best
achieved schedule, :func:`mpsched.solvers.optimum`) and the relaxed upper bound.

``--scores-only OUT`` writes every registered baseline's score instead (with and without
``drop_expired``, with the scenario's and with ideal congestion control); it runs at any
revision of the package, so that ``--compare BEFORE AFTER`` shows how a change to the
simulator moved every policy.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from mpsched.envs import registry
from mpsched.envs.scenario import Scenario
from mpsched.envs.simulate import simulate
from mpsched.solvers import optimum
from mpsched.solvers.replay import with_ideal_cc

SCORE = "weighted_on_time_rate"


def write_mahimahi(path: Path, mean_mbps: tuple[float, ...], seconds: int, seed: int) -> Path:
    """A Mahimahi trace: one line per 1500-byte delivery opportunity, in ms.

    The rate follows a Markov chain over ``mean_mbps`` (a state held 0.5-3 s); within a
    state the opportunities per millisecond are Poisson, so low rates give mostly empty
    milliseconds, as real UMTS and EVDO traces do.
    """
    rng = np.random.default_rng(seed)
    lines: list[str] = []
    t_ms = 0
    while t_ms < seconds * 1000:
        hold = int(rng.integers(500, 3000))
        per_ms = float(rng.choice(mean_mbps)) * 1e6 / (1500 * 8 * 1000)
        counts = rng.poisson(per_ms, hold)
        for k, c in enumerate(counts):
            lines.extend([str(t_ms + k)] * int(c))
        t_ms += hold
    if not lines or lines[-1] != str(t_ms):
        lines.append(str(t_ms))
    path.write_text("\n".join(lines) + "\n")
    return path


def write_frames(path: Path, seconds: int, seed: int) -> Path:
    """A frame log in the MMGC'19 form: time (s), size (bits), I-frame flag; 25 fps,
    an I-frame every 50 frames, about 1.2 Mbit/s."""
    rng = np.random.default_rng(seed)
    rows = []
    for k in range(seconds * 25):
        key = k % 50 == 0
        bits = (380_000 if key else 40_000) * float(rng.lognormal(0.0, 0.3))
        rows.append(f"{k / 25:.6f}\t{bits:.1f}\t{int(key)}")
    path.write_text("\n".join(rows) + "\n")
    return path


def page_loads(n_pages: int, seed: int) -> list[dict[str, Any]]:
    """Explicit blocks of ``n_pages`` page loads, 4 s apart: an HTML document due 300 ms
    after its request, then objects of lognormal sizes requested when the document
    arrives, each due 400-1500 ms after its request (per-object deadlines)."""
    rng = np.random.default_rng(seed)
    blocks = []
    for page in range(n_pages):
        t0 = 4000.0 * page
        blocks.append({"arrival_ms": t0, "size_bytes": 30_000, "deadline_ms": t0 + 300, "priority": 2})
        for _ in range(int(rng.integers(20, 40))):
            start = t0 + 150 + float(rng.uniform(0, 200))
            size = int(min(max(rng.lognormal(np.log(12_000), 1.0), 300), 400_000))
            due = start + float(rng.uniform(400, 1500))
            blocks.append({"arrival_ms": round(start, 3), "size_bytes": size, "deadline_ms": round(due, 3),
                           "priority": 1})
    blocks.sort(key=lambda b: b["arrival_ms"])
    return blocks


def build_scenarios(folder: Path, duration_s: int, mahimahi: list[str] | None,
                    frames: str | None) -> dict[str, Scenario]:
    if mahimahi:
        fast, slow = (str(Path(p).resolve()) for p in mahimahi)
    else:
        fast = str(write_mahimahi(folder / "lte.down", (0.5, 4.0, 10.0, 20.0), 120, 1))
        slow = str(write_mahimahi(folder / "umts.down", (0.2, 1.0, 3.0), 120, 2))
    low_a = str(write_mahimahi(folder / "umts-low.down", (0.3, 0.8, 1.5), 120, 3))
    low_b = str(write_mahimahi(folder / "evdo-low.down", (0.2, 0.6, 1.2), 120, 4))
    video = str(Path(frames).resolve()) if frames else str(write_frames(folder / "frames.tsv", 120, 5))

    def mm(file: str) -> dict[str, Any]:
        return {"type": "trace", "format": "mahimahi", "file": file, "random_offset": True}

    cellular = [{"name": "lte", "bandwidth": mm(fast), "rtt_ms": 40},
                {"name": "umts", "bandwidth": mm(slow), "rtt_ms": 90}]
    specs = {
        "web-mahimahi": {"paths": cellular,
                         "workload": {"type": "web", "page_interval_s": 2, "deadline_ms": 1000}},
        "pages-explicit": {"paths": cellular,
                           "workload": {"type": "explicit", "blocks": page_loads(2, 7)}},
        "frames-lowrate": {"paths": [{"name": "umts", "bandwidth": mm(low_a), "rtt_ms": 80},
                                     {"name": "evdo", "bandwidth": mm(low_b), "rtt_ms": 120}],
                           "workload": {"type": "frames", "file": video, "size_unit": "bits", "type_column": 2,
                                        "deadline_ms": 400}},
    }
    return {name: Scenario.from_dict({"name": name, "duration_s": duration_s, **spec}, base_dir=folder)
            for name, spec in specs.items()}


def measure(sc: Scenario, seed: int) -> dict[str, Any]:
    scores = {name: simulate(sc, name, seed=seed).summary[SCORE] for name in registry.ids("baseline")}
    best = optimum(sc, seed)
    best_policy = max(scores, key=lambda k: scores[k])
    return {
        "scenario": sc.name, "seed": seed,
        "dams": scores["dams"], "dams-c": scores["dams-c"],
        "best_baseline": best_policy, "best_baseline_score": scores[best_policy],
        "replay": best.extra["replay_value"], "optimum": best.summary[SCORE],
        "optimum_source": best.extra["source"], "upper_bound": best.extra["upper_bound"],
    }


def every_score(sc: Scenario, seed: int) -> dict[str, float]:
    """Every registered baseline's score, with and without ``drop_expired``, with the
    scenario's congestion control and with ideal control, keyed ``policy/transport/drop``."""
    out = {}
    for transport, played in (("own", sc), ("ideal", with_ideal_cc(sc))):
        for name in registry.ids("baseline"):
            for drop in (False, True):
                result = simulate(played, name, seed=seed, drop_expired=drop)
                out[f"{name}/{transport}/{int(drop)}"] = result.summary[SCORE]
    return out


def compare(before_file: str, after_file: str) -> None:
    """How every score moved between two ``--scores-only`` files, per scenario and seed."""
    before, after = json.loads(Path(before_file).read_text()), json.loads(Path(after_file).read_text())
    print("| scenario | seed | transport | changed | mean move | largest rise | largest fall |")
    print("|---|---:|---|---:|---:|---|---|")
    for episode in sorted(set(before) & set(after)):
        for transport in ("own", "ideal"):
            moves = {k: after[episode][k] - before[episode][k] for k in before[episode]
                     if k.split("/")[1] == transport and k in after[episode]}
            up, down = max(moves, key=lambda k: moves[k]), min(moves, key=lambda k: moves[k])
            scenario, seed = episode.rsplit("/", 1)
            print(f"| {scenario} | {seed} | {transport} | {sum(abs(v) > 1e-12 for v in moves.values())} of "
                  f"{len(moves)} | {np.mean(list(moves.values())):+.4f} | {up.split('/')[0]}"
                  f"{'+drop' if up.endswith('/1') else ''} {moves[up]:+.3f} | {down.split('/')[0]}"
                  f"{'+drop' if down.endswith('/1') else ''} {moves[down]:+.3f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--duration", type=int, default=20, help="episode length, s")
    parser.add_argument("--mahimahi", nargs=2, metavar=("FAST", "SLOW"), help="two Mahimahi .down traces")
    parser.add_argument("--frames", help="a frame log: time (s), size (bits), I flag")
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--scores-only", metavar="OUT",
                        help="write every baseline's score (both drop settings, own and ideal control) to OUT "
                             "and stop: run at two revisions, then --compare")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="how two --scores-only files differ")
    args = parser.parse_args(argv)
    if args.compare:
        compare(*args.compare)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        built = build_scenarios(Path(tmp), args.duration, args.mahimahi, args.frames)
        if args.scores_only:
            scores = {f"{sc.name}/{seed}": every_score(sc, seed) for sc in built.values() for seed in args.seeds}
            Path(args.scores_only).write_text(json.dumps(scores, indent=1))
            return 0
        rows = [measure(sc, seed) for sc in built.values() for seed in args.seeds]
    print("| scenario | seed | DAMS | DAMS-C | best baseline | replay | optimum (source) | upper bound |")
    print("|---|---:|---:|---:|---|---:|---|---:|")
    for r in rows:
        print(f"| {r['scenario']} | {r['seed']} | {r['dams']:.3f} | {r['dams-c']:.3f} | "
              f"{r['best_baseline']} {r['best_baseline_score']:.3f} | {r['replay']:.3f} | "
              f"{r['optimum']:.3f} ({r['optimum_source']}) | {r['upper_bound']:.3f} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
