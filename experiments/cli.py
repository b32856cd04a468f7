"""The ``mpsched`` command line: one entry point, one subcommand per job."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .. import __version__
from ..envs.errors import MpschedError

__all__ = ["main"]

# A stable setting of the DAMS paper (Fig. 7) where the path RTTs differ enough for the
# schedulers to part ways; the overloaded built-ins leave every FIFO scheduler near 0.
_DEMO_SCENARIO = "dams-rtt-120"
_TABLE_METRICS = ("on_time_rate", "weighted_on_time_rate", "high_priority_on_time_rate", "goodput_bps", "rebuffer_s",
                  "efficiency", "bytes_wasted")
"""The columns of the command line's tables, shown as reports show them
(:func:`mpsched.experiments.report.stats.metric_format`)."""


def _table(rows: list[dict[str, Any]], first: str) -> str:
    from .report.stats import metric_format

    shown = [metric_format(k) for k in _TABLE_METRICS]

    def cell(i: int, value: Any) -> str:
        if isinstance(value, float) and math.isnan(value):
            return "-"
        return shown[i].fmt.format(value * shown[i].scale)

    header = [first] + [m.heading() for m in shown]
    body = [[str(r[first])] + [cell(i, r[k]) for i, k in enumerate(_TABLE_METRICS)] for r in rows]
    widths = [max(len(row[i]) for row in [header] + body) for i in range(len(header))]
    lines = ["  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths)))]
    lines.append("  ".join("-" * w for w in widths))
    for row in body:
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))))
    return "\n".join(lines)


def _json_safe(d: dict[str, Any]) -> dict[str, Any]:
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in d.items()}


def cmd_list(args: argparse.Namespace) -> int:
    from .. import baselines
    from ..envs import registry, scenarios

    if args.show:
        print(scenarios.resolve(args.show).to_yaml(), end="")
        return 0
    if not args.policies:
        print("Scenarios (mpsched run --scenario NAME, or a YAML file):")
        for name in scenarios.names():
            print(f"  {name:<24} {scenarios.get(name).description}")
    if not args.scenarios:
        if not args.policies:
            print()
        print("Policies (mpsched run --policy ID [--param key=value ...]; the same ids in suites and simulate()):")
        for row in baselines.catalog():
            print(f"  {row['name']:<12} {row['paper']}")
            print(f"  {'':<12} native: {row['native']}" + (f"; parameters: {row['params']}" if row["params"] else ""))
        for policy in registry.ids():
            info = registry.describe(policy)
            if policy not in baselines.REGISTRY:
                extra = f" (needs mpsched[{info['extra']}])" if info["extra"] else ""
                print(f"  {info['id']:<12} {info['kind']}: {info['entry_point']}{extra}")
        print(f"  {'module:Class':<12} user: a class importable from the current directory or PYTHONPATH")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from ..envs import registry, scenarios, simulate

    scenario = scenarios.resolve(args.scenario)
    params = dict(registry.parse_param(args.policy, text) for text in args.param)
    policy = registry.make(args.policy, **params)
    seed = scenario.seed if args.seed is None else args.seed
    if not args.json:
        print(f"seed: {seed}")
    result = simulate(scenario, policy, seed=seed, drop_expired=args.drop_expired)
    if args.blocks:
        result.blocks.to_csv(args.blocks)
    if args.json:
        print(json.dumps(_json_safe(result.row()), indent=2))
        return 0
    print(f"scenario: {scenario.name}  policy: {result.policy}  blocks: {result.summary['n_blocks']}")
    print(_table([result.row()], "policy"))
    print()
    print(result.paths.to_string())
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from ..envs import scenarios, simulate

    scenario = scenarios.resolve(args.scenario)
    print(f"seeds: {', '.join(str(s) for s in range(args.seeds))}")
    print(f"scenario: {scenario.name}: {scenario.description}")
    from ..envs import registry

    rows: list[dict[str, Any]] = []
    for policy in registry.ids("baseline"):
        results = [simulate(scenario, policy, seed=s) for s in range(args.seeds)]
        mean = {k: sum(r.summary[k] for r in results) / len(results) for k in _TABLE_METRICS}
        rows.append({"policy": policy, **mean})
    rows.sort(key=lambda r: -r["weighted_on_time_rate"])
    print(_table(rows, "policy"))
    print("\nmeans over seeds, best weighted on-time rate first; every registered scheduler with its"
          " defaults (mpsched list --policies).")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from .validate import exit_code, format_table, run_validations

    progress = None if args.json else (lambda label: print(f"running {label} ...", file=sys.stderr))
    if args.against == "ns3":
        return _validate_against_ns3(args, progress)
    if args.quick:
        raise MpschedError("--quick: only with --against ns3")
    if args.report:
        raise MpschedError("--report: only with --against ns3")
    rows = run_validations(progress)
    print(json.dumps([r.row() for r in rows], indent=2) if args.json else format_table(rows))
    return exit_code(rows)


def _validate_against_ns3(args: argparse.Namespace, progress: Any) -> int:
    from .machine import StealMeter, describe
    from .ns3 import (
        GRID,
        QUICK,
        SHARED,
        STEPS,
        compare,
        compare_shared,
        compare_steps,
        format_comparison,
        ns3_available,
        within_bounds,
        write_report,
    )

    if not ns3_available():
        raise MpschedError("--against ns3 needs ns-3's Python bindings: pip install 'mpsched[ns3]' "
                           "(or pip install ns3)")
    steal = StealMeter().start()
    result = compare(QUICK if args.quick else GRID, progress=progress)
    result["shared"] = compare_shared(SHARED, progress=progress)
    result["steps"] = compare_steps(STEPS, progress=progress)
    result["machine"], result["cpu_steal"] = describe(), steal.share()
    print(json.dumps(result, indent=2) if args.json else format_comparison(result))
    if args.report:
        command = "mpsched validate --against ns3" + (" --quick" if args.quick else "")
        print(f"report: {write_report(result, args.report, command)}", file=sys.stderr)
    return 0 if within_bounds(result) else 1


def cmd_bench(args: argparse.Namespace) -> int:
    from .bench import format_length_scaling, format_report, length_scaling, run_benchmarks

    seconds = 0.5 if args.quick else args.seconds
    if args.length_scaling:
        scaling = length_scaling(seconds)
        print(json.dumps(scaling, indent=2) if args.json else format_length_scaling(scaling))
        return 0
    report = run_benchmarks(seconds=seconds)
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0


def _default_results(name: str) -> Path:
    """``results/NAME`` under the current directory; the folder ignores itself in git."""
    root = Path("results")
    root.mkdir(exist_ok=True)
    ignore = root / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# sweep results (mpsched sweep); not tracked\n*\n")
    return root / name


def _print_sweep(stats: Any) -> None:
    print(f"{stats.suite}: {stats.episodes} episodes, {stats.skipped} already stored, {stats.ran} run, "
          f"{len(stats.failed)} failed; {stats.tasks} tasks on {stats.workers} "
          f"{'Ray CPUs' if stats.executor == 'ray' else 'process'}; "
          + (f"Ray start-up {stats.startup_s:.1f} s, " if stats.executor == "ray" and stats.startup_s else "")
          + f"run {stats.run_s:.1f} s -> {stats.out}")
    for key, why in stats.failed[:10]:
        print(f"  failed {key}: {why}", file=sys.stderr)
    if len(stats.failed) > 10:
        print(f"  ... and {len(stats.failed) - 10} more", file=sys.stderr)


def cmd_sweep(args: argparse.Namespace) -> int:
    from .suite import load_suite, names
    from .sweep import run_sweep

    if args.list or args.suite is None:
        if args.suite is None and not args.list:
            print("mpsched sweep: error: name a SUITE (built-in or YAML file)", file=sys.stderr)
        print("Built-in suites (mpsched sweep NAME [--quick]):")
        for name in names():
            suite = load_suite(name)
            print(f"  {name:<16} {len(suite.episodes()):>6} episodes  {suite.title}")
        return 0 if args.list else 2
    suite = load_suite(args.suite, quick=args.quick)
    out = Path(args.out) if args.out else _default_results(suite.name + ("-quick" if args.quick else ""))
    stats = run_sweep(suite, out, resume=args.resume, executor="local" if args.local else "ray",
                      address=args.address, workers=args.workers, max_episodes_per_task=args.max_episodes_per_task,
                      progress=not args.no_progress)
    _print_sweep(stats)
    return 0 if stats.ok else 1


def _validate(results: Path, sample: int, seed: int) -> bool:
    from .replay import validate

    problems = validate(results, sample=sample, seed=seed)
    for line in problems:
        print(f"  differs: {line}", file=sys.stderr)
    print(f"validate: checked every optimum row against the other policies and re-ran up to {sample} rows "
          f"per suite (seed {seed}): " + ("all agree" if not problems else f"{len(problems)} problems"))
    return not problems


def cmd_report(args: argparse.Namespace) -> int:
    from .report import build_report

    results = Path(args.results)
    if args.validate and not _validate(results, args.sample, args.validate_seed):
        return 1
    out = Path(args.out) if args.out else Path("reports") / results.resolve().name
    md = build_report(results, out, title=args.title)
    print(f"report: {md} and {md.parent / 'index.html'}")
    return 0


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from .report import build_report
    from .suite import load_suite
    from .sweep import ResultStore, run_sweep

    suite = load_suite("leaderboard", quick=args.quick)
    name = "leaderboard-quick" if args.quick else "leaderboard"
    out = Path(args.out) if args.out else Path("reports") / name
    if args.results:
        results = Path(args.results)
    elif args.quick:
        results = _default_results(name)
    else:
        results = out / "results"
    if not args.resume:
        ResultStore(results).clear()
    stats = run_sweep(suite, results, resume=args.resume, executor="local" if args.local else "ray",
                      address=args.address, workers=args.workers, progress=not args.no_progress)
    _print_sweep(stats)
    if not stats.ok:
        return 1
    md = build_report(results, out)
    print(f"leaderboard: {md} and {md.parent / 'index.html'}")
    return 0


def cmd_solve(args: argparse.Namespace) -> int:
    from ..solvers import solve

    def progress(p: Any) -> None:
        known = "".join(f" {label} {x:.4f}" for label, x in (("value", p.value), ("bound", p.bound)) if x is not None)
        line = f"[{p.elapsed_s:7.1f} s] {p.stage}:{known} {p.detail}"
        print("\r" + line[:110].ljust(110), end="", file=sys.stderr, flush=True)

    result = solve(args.scenario, slot_ms=args.slot_ms, time_limit_s=args.time_limit, threads=args.threads,
                   model=args.model, seed=args.seed, backend=args.backend, relative_gap=args.gap, progress=progress)
    print(file=sys.stderr)
    if args.json:
        print(json.dumps(_json_safe(result.row()), indent=2))
        return 0
    print(f"scenario: {result.scenario}  seed: {result.seed}  model: {result.model}  slot: {args.slot_ms:g} ms")
    print(f"status: {result.status} ({result.backend}, {result.solve_s:.2f} s): {result.message}")
    print(f"value (weighted on-time rate): {result.value:.6f}   upper bound: {result.upper_bound:.6f}   "
          f"gap: {result.gap:.3%}   total weight: {result.total_weight:g}")
    print(f"blocks on time: {len(result.chosen)} of {result.problem.n_blocks}")
    return 0


def _agents() -> Any:
    """mpsched.agents, or the error that names the missing extra."""
    try:
        from .. import agents
    except ImportError as exc:
        raise MpschedError(f"learned agents need the 'rl' extra (pip install 'mpsched[rl]'): {exc}") from None
    return agents


def cmd_train(args: argparse.Namespace) -> int:
    _agents()
    from ..agents.train import train
    from .agent_protocol import learning_curves, tier_budget, write_curves
    from .suite import load_suite

    seeds = args.seeds if args.seeds else [args.seed]
    timesteps, overrides = args.timesteps, list(args.hp)
    if args.tier:
        if args.timesteps is not None:
            raise MpschedError("--tier and --timesteps: give one (a tier sets the budget)")
        expert, steps = tier_budget(args.tier, args.from_expert is not None and args.algo != "bc")
        timesteps = expert + steps if args.algo in ("bc", "dagger") else steps
        overrides = ([f"expert_steps={expert}"] if expert else []) + \
            ([f"eval_freq={max(1, steps // 5)}"] if steps else []) + overrides
    suite = load_suite(args.suite)
    part = suite.evaluation_part()
    max_paths = max(suite.pool(p).max_paths for p in suite.split)
    print(f"seeds: {', '.join(map(str, seeds))}; evaluations during training on the {part} split")
    outs = []
    for seed in seeds:
        out = Path(args.out) / f"seed-{seed}" if len(seeds) > 1 else Path(args.out)
        command = " ".join(["mpsched train", f"--algo {args.algo}", f"--suite {args.suite}"]
                           + ([f"--tier {args.tier}"] if args.tier else [])
                           + ([f"--timesteps {args.timesteps}"] if args.timesteps is not None else [])
                           + ([f"--from-expert {args.from_expert}"] if args.from_expert else [])
                           + ([f"--from-model {args.from_model}"] if args.from_model else [])
                           + [f"--seed {seed}"] + [f"--hp {h}" for h in args.hp] + [f"--out {out}"])
        start = args.from_model
        if start is not None and (Path(start) / f"seed-{seed}").is_dir():
            start = str(Path(start) / f"seed-{seed}")  # a train --seeds folder: the same seed's model
        result = train(args.algo, suite.pool("train"), suite.pool(part), timesteps, out,
                       from_expert=args.from_expert, seed=seed, overrides=overrides, resume=args.resume,
                       progress=not args.no_progress, command=command, max_paths=max_paths, from_model=start)
        outs.append(out)
        if result.evaluations:
            last = result.evaluations[-1]
            print(f"{args.algo}, seed {seed}: {result.timesteps} steps in {result.train_s:.0f} s; {part} weighted "
                  f"on-time rate {last['weighted_on_time_rate']:.4f} -> {result.out}")
    if len(seeds) > 1:
        curves = learning_curves(outs)
        write_curves(Path(args.out) / "curves.csv", curves)
        print(f"\nlearning curve ({part} split), weighted on-time rate, mean ± 95 % CI over seeds "
              f"{', '.join(map(str, seeds))} -> {Path(args.out) / 'curves.csv'}")
        for c in curves:
            print(f"  {c['decisions']:>10,} decisions  {c['mean']:.4f} ± {c['ci95']:.4f}   "
                  + "  ".join(f"{v:.4f}" for v in c["values"]))
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    _agents()
    import torch
    from tqdm import tqdm

    from ..agents.evaluate import evaluate
    from ..agents.model import model_dir, read_meta, zoo_names
    from .agent_protocol import family_table, format_mean_ci, learning_curves, seed_dirs, write_report
    from .suite import load_suite

    torch.set_num_threads(args.threads)
    baselines = [b for b in args.baselines.split(",") if b] if args.baselines else []
    suite = load_suite(args.suite)
    pool = suite.pool(args.split)
    models: list[Any] = [args.model] if args.model in zoo_names() else seed_dirs(args.model)
    evaluations = []
    with tqdm(unit="episode", file=sys.stderr, disable=args.no_progress or args.json) as bar:
        for k, model in enumerate(models):
            evaluations.append(evaluate(model, pool, baselines=baselines if k == 0 else [],
                                        upper_bound=args.upper_bound and k == 0, progress=bar.update))
    ev = evaluations[0]
    if args.out:
        import pandas as pd

        pd.DataFrame([r.row() for e in evaluations for r in e.results]).to_csv(args.out, index=False)
    metas = [read_meta(model_dir(m)) for m in models]
    max_paths = int(metas[0]["max_paths"])
    if ev.skipped:
        print(f"no episodes of the model on {', '.join(ev.skipped)}: more paths than the {max_paths} it observes",
              file=sys.stderr)
    rows = ev.table()
    model_results = [[r for r in e.results if r.policy == e.model] for e in evaluations]
    others = [r for r in ev.results if r.policy != ev.model]
    families = {g.name: [c.name for c in g.cases] for g in suite.split_groups(args.split)}
    table = family_table(model_results, others, families, max_paths)
    if args.json:
        if len(models) == 1:
            print(json.dumps([_json_safe(r) for r in rows], indent=2))
        else:  # every training seed's table, and the families' means and CIs over them
            print(json.dumps({"models": [{"model": str(m), "scenarios": [_json_safe(r) for r in e.table()]}
                                         for m, e in zip(models, evaluations)],
                              "families": [_json_safe(f) for f in table]}, indent=2))
        return 0
    if len(models) == 1:
        columns = [c for c in rows[0] if c != "scenario"]
        width = max(len(r["scenario"]) for r in rows)
        print(f"weighted on-time rate, {ev.suite} {ev.split} split (mean over seeds)")
        print("scenario".ljust(width) + "".join(f"  {c:>14}" for c in columns))
        for r in rows:
            print(r["scenario"].ljust(width) + "".join(f"  {r[c]:>14.4f}" for c in columns))
    if len(models) > 1 or args.report:
        print(f"\nper family: the model's mean ± 95 % CI over {len(models)} training seed(s); the others' means")
        for f in table:
            model = format_mean_ci(f["model_mean"], f["model_ci95"])
            best = f"  best heuristic {f['best_heuristic']} {f[f['best_heuristic']]:.4f}" \
                if "best_heuristic" in f else ""
            margin = f", margin {f['margin']:+.4f}" if best and not math.isnan(f["margin"]) else ""
            print(f"  {f['family']:<16} {model:>18}{best}{margin}")
    if args.report:
        curves = learning_curves([model_dir(m) for m in models])
        command = " ".join(["mpsched evaluate", f"--model {args.model}", f"--suite {args.suite}",
                            f"--split {args.split}"] + ([f"--baselines {args.baselines}"] if args.baselines else [])
                           + [f"--report {args.report}"])
        notes = [f"Families (the {args.split} split's groups): "
                 + "; ".join(f"`{g.name}`: {g.title}" for g in suite.split_groups(args.split)) + "."]
        if ev.skipped:
            notes.append(f"The model observes {max_paths} paths: no score on {', '.join(ev.skipped)}.")
        trained = [str(meta.get("command") or f"(no training command recorded for {m})")
                   for m, meta in zip(models, metas)]
        path = write_report(args.report, curves, table, f"{suite.name}: {len(models)} model(s) on the "
                            f"{args.split} split", [*trained, command], notes)
        print(f"report -> {path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mpsched",
        description="Benchmark harness for deadline-aware multipath block scheduling.",
        epilog="example: mpsched run --scenario dams-rtt-40 --policy minrtt --seed 0",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"mpsched {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("list", help="list built-in scenarios and policies",
                       epilog="example: mpsched list --show dams-dynamic-1-rtt-40")
    p.add_argument("--scenarios", action="store_true", help="only scenarios")
    p.add_argument("--policies", action="store_true", help="only policies")
    p.add_argument("--show", metavar="SCENARIO", help="print a scenario's full YAML")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("run", help="simulate one episode and print its scores",
                       epilog="example: mpsched run --scenario dams-rtt-80 --policy dtp --param priority_weight=0.7")
    p.add_argument("--scenario", required=True, help="built-in name or YAML file")
    p.add_argument("--policy", required=True,
                   help="policy id: a scheduler, optimum, agent:NAME or module:Class (mpsched list --policies)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="a policy parameter (repeatable; mpsched list --policies shows them)")
    p.add_argument("--seed", type=int, default=None, help="episode seed (default: the scenario's)")
    p.add_argument("--drop-expired", action="store_true",
                   help="cancel every block once its deadline has passed, whatever the policy does")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--blocks", metavar="CSV", help="also write the per-block table to this CSV file")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("demo", help="run a built-in scenario with every available policy",
                       epilog="example: mpsched demo --scenario dams-rtt-80 --seeds 3")
    p.add_argument("--scenario", default=_DEMO_SCENARIO, help="built-in name or YAML file (default: %(default)s)")
    p.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1 (default: %(default)s)")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("validate", help="check the simulator against closed forms and the seed papers",
                       epilog="example: mpsched validate --json")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.add_argument("--against", choices=("closed-forms", "ns3"), default="closed-forms",
                   help="closed forms and the seed papers (default), or ns-3 on a grid of bulk TCP flows "
                        "(the ns3 extra)")
    p.add_argument("--quick", action="store_true", help="with --against ns3: twelve single-flow cases instead of "
                                                        "162 (the four shared-bottleneck and four rate-step "
                                                        "cases run in both)")
    p.add_argument("--report", metavar="DIR", help="with --against ns3: also write the comparison as a report "
                                                   "(README.md and figures/) to DIR")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("bench", help="measure simulator and environment speed",
                       epilog="example: mpsched bench --json")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.add_argument("--seconds", type=float, default=2.0, help="measuring time per figure (default: %(default)s)")
    p.add_argument("--quick", action="store_true", help="0.5 s per figure")
    p.add_argument("--length-scaling", action="store_true",
                   help="instead: every native twin's time per packet at 1x and 8x the episode length")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("sweep", help="run a suite of scenarios x policies x seeds into parquet (Ray)",
                       epilog="example: mpsched sweep dams-paper --out results/dams --resume")
    p.add_argument("suite", nargs="?", help="built-in suite name or YAML file (--list shows the built-ins)")
    p.add_argument("--out", help="results folder (default: results/SUITE, or results/SUITE-quick)")
    p.add_argument("--address", help="Ray cluster to join (default: RAY_ADDRESS, else a local Ray)")
    p.add_argument("--resume", action="store_true", help="keep stored rows and run only the missing ones")
    p.add_argument("--quick", action="store_true", help="the suite's quick variant (fewer seeds, shorter)")
    p.add_argument("--local", action="store_true", help="run in this process, without Ray")
    p.add_argument("--workers", type=int, help="CPUs of a local Ray (default: all)")
    p.add_argument("--max-episodes-per-task", type=int, metavar="N", help="cap on a task's episodes (default 200)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--list", action="store_true", help="list the built-in suites")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("report", help="Markdown and HTML tables and figures from sweep results",
                       epilog="example: mpsched report results/dams-paper --out reports/dams-paper --validate")
    p.add_argument("results", help="a suite's results folder, or a folder of several")
    p.add_argument("--out", help="report folder (default: reports/NAME of the results folder)")
    p.add_argument("--title", help="page title (default: the suite's)")
    p.add_argument("--validate", action="store_true",
                   help="first re-run a random sample of rows and fail if any differs")
    p.add_argument("--sample", type=int, default=20, help="rows per suite to re-run (default: %(default)s)")
    p.add_argument("--validate-seed", type=int, default=0, help="seed of the sample (default: %(default)s)")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("leaderboard", help="sweep the leaderboard suite on a local Ray and report it",
                       epilog="example: mpsched leaderboard --quick")
    p.add_argument("--quick", action="store_true",
                   help="fewer seeds and shorter episodes (minutes); report in reports/leaderboard-quick")
    p.add_argument("--out", help="report folder (default: reports/leaderboard or reports/leaderboard-quick)")
    p.add_argument("--results", help="results folder (default: OUT/results, or results/leaderboard-quick)")
    p.add_argument("--address", help="Ray cluster to join (default: RAY_ADDRESS, else a local Ray)")
    p.add_argument("--resume", action="store_true", help="keep stored rows and run only the missing ones")
    p.add_argument("--local", action="store_true", help="run in this process, without Ray")
    p.add_argument("--workers", type=int, help="CPUs of a local Ray (default: all)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_leaderboard)

    p = sub.add_parser("solve", help="the offline optimum of a scenario (OR-Tools) and its upper bound",
                       epilog="example: mpsched solve --scenario dams-dynamic-1-rtt-40 --time-limit 60")
    p.add_argument("--scenario", required=True, help="built-in name or YAML file")
    p.add_argument("--slot-ms", type=float, default=10.0, help="slot length (default: %(default)s)")
    p.add_argument("--time-limit", type=float, default=60.0, help="solver time limit in s (default: %(default)s)")
    p.add_argument("--threads", type=int, default=2, help="solver threads (default: %(default)s)")
    p.add_argument("--model", choices=("relaxed", "conservative", "lp"), default="relaxed",
                   help="relaxed: upper bound on every policy; conservative: a followable schedule; "
                        "lp: the LP bound (default: %(default)s)")
    p.add_argument("--backend", choices=("auto", "sweep", "highs", "scip", "cpsat", "exhaustive"), default="auto",
                   help="method (default: %(default)s: the exact sweep where it applies, else HiGHS)")
    p.add_argument("--seed", type=int, default=None, help="episode seed (default: the scenario's)")
    p.add_argument("--gap", type=float, default=1e-6,
                   help="stop once the relative gap to the bound is at most this, e.g. 0.01 (default: %(default)s)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=cmd_solve)

    p = sub.add_parser("train", help="train a learned scheduler on a suite's train split (the 'rl' extra)",
                       epilog="example: mpsched train --algo maskable_ppo --suite agents --from-expert dams "
                              "--timesteps 300000 --out models/ppo --seed 0")
    p.add_argument("--algo", required=True, help="maskable_ppo, ppo, dqn, bc or dagger")
    p.add_argument("--suite", required=True, help="a suite with a train/test split (e.g. agents)")
    p.add_argument("--timesteps", type=int, default=None,
                   help="environment steps (bc: expert decisions; dagger: teacher-labelled decisions; default: the "
                        "hyperparameters' n_timesteps)")
    p.add_argument("--out", required=True, help="model directory to write")
    p.add_argument("--from-expert", choices=("dams", "optimum"), default=None,
                   help="clone this expert's decisions first, then train from that start")
    p.add_argument("--from-model", default=None, metavar="MODEL",
                   help="start from this model's network and masks (a shipped model's name or a model directory; "
                        "with --seeds, a train --seeds folder gives each seed its seed-S model): maskable_ppo "
                        "fine-tunes it, dagger imitates its teacher from it")
    seeds = p.add_mutually_exclusive_group()
    seeds.add_argument("--seed", type=int, default=0, help="seed (default: %(default)s)")
    seeds.add_argument("--seeds", type=int, nargs="+", metavar="S",
                       help="one model per seed in OUT/seed-S, then the learning curve over them (OUT/curves.csv)")
    p.add_argument("--tier", choices=("100k", "1m"), default=None,
                   help="a budget of decisions taken in the environment (with --from-expert: half cloned, half "
                        "learned), evaluated 5 times; instead of --timesteps")
    p.add_argument("--hp", action="append", default=[], metavar="KEY=VALUE",
                   help="override a hyperparameter of agents/hyperparams/ALGO.yaml (repeatable; dotted keys)")
    p.add_argument("--resume", action="store_true", help="continue from the latest checkpoint in OUT/checkpoints")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("evaluate", help="score a trained model on a suite's test split",
                       epilog="example: mpsched evaluate --model default --suite agents --baselines minrtt,rr,edf,dams")
    p.add_argument("--model", required=True,
                   help="a shipped model's name (agents/zoo), a model directory, or the OUT of train --seeds "
                        "(every seed-S model: scores per family with a 95 %% CI over the seeds)")
    p.add_argument("--suite", required=True, help="a suite with a train/test split")
    p.add_argument("--split", choices=("test", "validation", "train"), default="test", help="(default: %(default)s)")
    p.add_argument("--report", metavar="DIR", help="write the learning curve and the per-family table to DIR "
                                                    "(README.md, figures/)")
    p.add_argument("--baselines", default="", metavar="A,B", help="registered policies to score on the same episodes")
    p.add_argument("--upper-bound", action="store_true", help="also the relaxed slot model's bound per episode")
    p.add_argument("--out", metavar="CSV", help="write every episode's scores to this CSV file")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default: %(default)s)")
    p.add_argument("--json", action="store_true", help="print the table as JSON")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_evaluate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except MpschedError as exc:
        print(f"mpsched: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
