"""Benchmarks of the offline optimum (:mod:`mpsched.solvers`), as Markdown tables.

Usage::

    python benchmarks/solve_scaling.py scaling [--scenario NAME] [--horizons 10 60 300 600]
    python benchmarks/solve_scaling.py backends [--scenario NAME] [--time-limit 60] [--threads 2]
    python benchmarks/solve_scaling.py slots [--slots 10 5 2 1 0.5]
    python benchmarks/solve_scaling.py gaps [--scenarios NAME ...]
    python benchmarks/solve_scaling.py replay
    python benchmarks/solve_scaling.py outside [--time-limit 60]

- ``scaling``: solve time of the relaxed and conservative models against the horizon
  (the scenario's ``duration_s`` set to each value), with the default method, and of
  HiGHS alone on the MILP up to ``--milp-up-to`` seconds of horizon;
- ``backends``: each method on one scenario (value, bound, gap, time), the MILP solvers
  on their own (warm started from DAMS and EDF, without the sweep's start and bound);
- ``slots``: relaxed and conservative optima per slot size on every built-in scenario;
- ``gaps``: every native baseline's weighted on-time rate and its gap interval, from the
  achievable optimum (:func:`mpsched.solvers.optimum`) to the relaxed upper bound, with
  the scenario's own congestion control;
- ``replay``: the conservative optimum replayed in the simulator against its value;
- ``outside``: 60 s video scenarios outside the sweep's class (three and four
  bottlenecks; I frames due 400 ms after arrival and the others 200 ms, so windows are
  not agreeable): HiGHS alone on the MILP, the default solve (the sweep's restriction
  and relaxations around HiGHS), and the default solve stopping within 1 %; the starts
  the sweep gives, the restriction's and the best repaired relaxation's.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from mpsched import baselines
from mpsched.envs import scenarios
from mpsched.envs.episode import build_episode
from mpsched.envs.scenario import Scenario
from mpsched.envs.simulate import simulate
from mpsched.solvers import gap_columns, optimum, solve
from mpsched.solvers.problem import build_problem
from mpsched.solvers.sweep import applicable

STABLE = ("dams-rtt-40", "dams-rtt-80", "dams-rtt-120", "dams-rtt-160", "dams-rtt-200")
DYNAMIC = ("dams-dynamic-1-rtt-40", "dams-dynamic-1-rtt-80", "dams-dynamic-2-rtt-40", "dams-dynamic-2-rtt-80")


def _markdown(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    def cell(x: object) -> str:
        return f"{x:.4f}" if isinstance(x, float) else str(x)

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(x) for x in row) + " |" for row in rows]
    return "\n".join(lines)


def _with_duration(name: str, duration_s: float) -> Scenario:
    d = scenarios.resolve(name).to_dict()
    d["duration_s"] = duration_s
    d["name"] = f"{name}@{duration_s:g}s"
    return Scenario.from_dict(d)


def _more_paths(n_paths: int, bitrate_mbps: float) -> dict:
    """dams-dynamic-1-rtt-40 with up to two more square-wave paths and a higher bitrate."""
    d = scenarios.resolve("dams-dynamic-1-rtt-40").to_dict()
    extra = [{"high_mbps": 1.5, "low_mbps": 0.5, "period_s": 3.0, "phase_s": 0.5, "delay_ms": 12.0, "queue": 20000},
             {"high_mbps": 1.0, "low_mbps": 0.3, "period_s": 5.0, "phase_s": 1.0, "delay_ms": 30.0, "queue": 15000}]
    for i, e in enumerate(extra[:n_paths - 2]):
        path = dict(d["paths"][1], name=f"path{i + 3}", queue_bytes=e["queue"], fwd_delay_ms=e["delay_ms"],
                    rev_delay_ms=e["delay_ms"])
        path["bandwidth"] = {"type": "square", "high_mbps": e["high_mbps"], "low_mbps": e["low_mbps"],
                             "period_s": e["period_s"], "phase_s": e["phase_s"], "duty": 0.5}
        d["paths"].append(path)
    d["workload"] = dict(d["workload"], bitrate_mbps=bitrate_mbps)
    d["name"] = f"{n_paths}-paths-{bitrate_mbps:g}mbps"
    return d


def _late_i_frames(d: dict) -> dict:
    """The same frames as explicit blocks, I frames due 400 ms after arrival (others 200 ms)."""
    blocks = build_episode(Scenario.from_dict(d), None).blocks
    rows = [{"arrival_ms": a / 1e6, "size_bytes": int(size), "priority": int(priority), "weight": float(weight),
             "kind": str(kind), "deadline_ms": (a + (400_000_000 if kind == "I" else due - a)) / 1e6}
            for a, size, due, priority, weight, kind in zip(blocks.arrival_ns.tolist(), blocks.size_bytes,
                                                            blocks.deadline_ns.tolist(), blocks.priority,
                                                            blocks.weight, blocks.kind)]
    return dict(d, name=d["name"] + "-i-frames-400ms", workload={"type": "explicit", "blocks": rows})


def outside(time_limit_s: float, threads: int) -> str:
    cases = [_more_paths(3, 4.3), _more_paths(3, 5.0), _more_paths(3, 5.5), _more_paths(4, 5.5),
             _late_i_frames(_more_paths(2, 4.3)), _late_i_frames(_more_paths(3, 5.0))]
    rows = []
    for d in cases:
        sc = Scenario.from_dict(d)
        problem = build_problem(build_episode(sc, None), 10_000_000, "relaxed")
        milp = solve(sc, time_limit_s=time_limit_s, threads=threads, backend="highs", assist=False)
        full = solve(sc, time_limit_s=time_limit_s, threads=threads)
        quick = solve(sc, time_limit_s=time_limit_s, threads=threads, relative_gap=0.01)
        repaired = max(v for label, v in full.warm_start.items() if label.startswith("sweep-relaxation"))
        rows.append((sc.name, applicable(problem), problem.n_blocks,
                     f"{milp.value:.4f} / {milp.upper_bound:.4f} ({milp.gap:.2%}, {milp.solve_s:.0f} s)",
                     full.warm_start["sweep-restriction"], repaired,
                     f"{full.value:.4f} / {full.upper_bound:.4f} ({full.gap:.2%}, {full.solve_s:.0f} s)",
                     f"{quick.gap:.2%}, {quick.solve_s:.1f} s"))
    return _markdown(("scenario", "outside the sweep's class: it has", "blocks", "HiGHS alone: value / bound",
                      "start: restriction", "start: repaired relaxation", "default solve: value / bound",
                      "solve within 1 %: gap, time"), rows)


def scaling(scenario: str, horizons: Sequence[float], slot_ms: float, time_limit_s: float, threads: int,
            milp_up_to: float) -> str:
    rows = []
    for horizon in horizons:
        sc = _with_duration(scenario, horizon)
        for model in ("relaxed", "conservative"):
            r = solve(sc, model=model, slot_ms=slot_ms, time_limit_s=time_limit_s, threads=threads)
            rows.append((f"{horizon:g}", model, r.problem.n_blocks, r.problem.n_variables, r.backend, r.status,
                         r.value, r.upper_bound, f"{r.gap:.2%}", f"{r.solve_s:.2f}"))
        if horizon <= milp_up_to:
            r = solve(sc, model="relaxed", slot_ms=slot_ms, time_limit_s=time_limit_s, threads=threads,
                      backend="highs", assist=False)
            rows.append((f"{horizon:g}", "relaxed", r.problem.n_blocks, r.problem.n_variables, r.backend, r.status,
                         r.value, r.upper_bound, f"{r.gap:.2%}", f"{r.solve_s:.2f}"))
    return _markdown(("horizon s", "model", "blocks", "variables", "method", "status", "value", "bound", "gap",
                      "time s"), rows)


def backends(scenario: str, slot_ms: float, time_limit_s: float, threads: int) -> str:
    rows = []
    for backend in ("sweep", "highs", "scip", "cpsat"):
        start = time.monotonic()
        r = solve(scenario, model="relaxed", slot_ms=slot_ms, time_limit_s=time_limit_s, threads=threads,
                  backend=backend, assist=False)
        warm = max(r.warm_start.values()) if r.warm_start else float("nan")
        rows.append((backend, r.status, r.value, r.upper_bound, f"{r.gap:.2%}", warm,
                     f"{time.monotonic() - start:.1f}"))
    r = solve(scenario, model="lp", slot_ms=slot_ms, time_limit_s=time_limit_s, threads=threads)
    rows.append(("glop (LP)", r.status, r.value, r.upper_bound, f"{r.gap:.2%}", float("nan"), f"{r.solve_s:.1f}"))
    return _markdown(("method", "status", "value", "bound", "gap", "warm start", "time s"), rows)


def slots(names: Sequence[str], slot_sizes: Sequence[float]) -> str:
    rows = []
    for name in names:
        for slot in slot_sizes:
            relaxed = solve(name, model="relaxed", slot_ms=slot)
            conservative = solve(name, model="conservative", slot_ms=slot)
            rows.append((name, f"{slot:g}", relaxed.value, conservative.value,
                         f"{1 - conservative.value / relaxed.value if relaxed.value else 0.0:.3%}",
                         f"{relaxed.solve_s + conservative.solve_s:.2f}"))
    return _markdown(("scenario", "slot ms", "relaxed", "conservative", "difference", "time s"), rows)


def gaps(names: Sequence[str], slot_ms: float) -> str:
    policies = [n for n, cls in baselines.REGISTRY.items() if cls.native]
    header = ["policy"] + list(names)
    bounds = {}
    table: dict[str, dict[str, str]] = {p: {} for p in policies}
    for name in names:
        best = optimum(name, slot_ms=slot_ms)
        bounds[name] = (best.extra["upper_bound"], best.summary["weighted_on_time_rate"])
        results = [simulate(name, p) for p in policies]
        frame = gap_columns(results, *bounds[name])
        for row in frame.itertuples():
            table[row.policy][name] = (f"{row.weighted_on_time_rate:.3f} "
                                       f"({row.gap_to_best_achieved:.1%}-{row.gap_to_upper_bound:.1%})")
    rows = [["upper bound (relaxed)"] + [f"{bounds[n][0]:.4f}" for n in names],
            ["achievable optimum"] + [f"{bounds[n][1]:.4f}" for n in names]]
    order = sorted(policies, key=lambda p: -sum(float(table[p][n].split()[0]) for n in names))
    rows += [[p] + [table[p][n] for n in names] for p in order]
    return _markdown(header, rows)


def replay(names: Sequence[str], slot_ms: float) -> str:
    rows = []
    for name in names:
        start = time.monotonic()
        r = optimum(name, slot_ms=slot_ms)
        score = r.extra["replay_value"]
        cons = r.extra["conservative_value"]
        rows.append((name, score, cons, f"{score / cons if cons else 1.0:.2%}", r.extra["upper_bound"],
                     f"{time.monotonic() - start:.1f}"))
    return _markdown(("scenario", "replay", "conservative", "replay / conservative", "upper bound", "time s"), rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("table", choices=("scaling", "backends", "slots", "gaps", "replay", "outside"))
    parser.add_argument("--scenario", default="dams-dynamic-1-rtt-40")
    parser.add_argument("--scenarios", nargs="*", default=None)
    parser.add_argument("--horizons", nargs="*", type=float, default=[10, 60, 300, 600])
    parser.add_argument("--slots", nargs="*", type=float, default=[10, 5, 2, 1, 0.5])
    parser.add_argument("--slot-ms", type=float, default=10.0)
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--milp-up-to", type=float, default=60.0,
                        help="also run HiGHS on horizons up to this many seconds")
    args = parser.parse_args(argv)
    if args.table == "scaling":
        print(scaling(args.scenario, args.horizons, args.slot_ms, args.time_limit, args.threads, args.milp_up_to))
    elif args.table == "backends":
        print(backends(args.scenario, args.slot_ms, args.time_limit, args.threads))
    elif args.table == "slots":
        print(slots(args.scenarios or scenarios.names(), args.slots))
    elif args.table == "outside":
        print(outside(args.time_limit, args.threads))
    elif args.table == "gaps":
        print(gaps(args.scenarios or (STABLE + DYNAMIC), args.slot_ms))
    else:
        print(replay(args.scenarios or scenarios.names(), args.slot_ms))
    return 0


if __name__ == "__main__":
    sys.exit(main())
