"""Benchmarks of the offline optimum (:mod:`mpsched.solvers`), as Markdown tables.

Usage::

    python benchmarks/solve_scaling.py scaling [--scenario NAME] [--horizons 10 60 300 600]
    python benchmarks/solve_scaling.py backends [--scenario NAME] [--time-limit 60] [--threads 2]
    python benchmarks/solve_scaling.py slots [--slots 10 5 2 1 0.5]
    python benchmarks/solve_scaling.py gaps [--scenarios NAME ...]
    python benchmarks/solve_scaling.py replay

- ``scaling``: solve time of the relaxed and conservative models against the horizon
  (the scenario's ``duration_s`` set to each value), with the default method, and of
  HiGHS alone on the MILP up to ``--milp-up-to`` seconds of horizon;
- ``backends``: each method on one scenario (value, bound, gap, time), the MILP solvers
  on their own (warm started from DAMS and EDF, without the sweep's start and bound);
- ``slots``: relaxed and conservative optima per slot size on every built-in scenario;
- ``gaps``: every native baseline's weighted on-time rate and its gap interval, from the
  achievable optimum (:func:`mpsched.solvers.optimum`) to the relaxed upper bound, with
  the scenario's own congestion control;
- ``replay``: the conservative optimum replayed in the simulator against its value.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from mpsched import baselines
from mpsched.envs import scenarios
from mpsched.envs.scenario import Scenario
from mpsched.envs.simulate import simulate
from mpsched.solvers import gap_columns, optimum, solve

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
    parser.add_argument("table", choices=("scaling", "backends", "slots", "gaps", "replay"))
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
    elif args.table == "gaps":
        print(gaps(args.scenarios or (STABLE + DYNAMIC), args.slot_ms))
    else:
        print(replay(args.scenarios or scenarios.names(), args.slot_ms))
    return 0


if __name__ == "__main__":
    sys.exit(main())
