"""A paper's claims checked against a suite's results: each claim's statement, the
paper's number, ours, and whether they agree."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .stats import ReportContext, ReportError, metric_format


def _scenario_means(ctx: ReportContext, spec: dict[str, Any], policy: str, metric: str) -> dict[str, float]:
    rows = ctx.group_rows(spec.get("group"))
    if spec.get("scenarios"):
        rows = rows[rows["scenario"].isin(spec["scenarios"])]
    mine = rows[rows["policy"] == policy]
    if mine.empty:
        raise ReportError(f"suite {ctx.res.name}: claim {spec.get('id')}: no rows of {policy!r}")
    if metric not in mine:
        raise ReportError(f"suite {ctx.res.name}: claim {spec.get('id')}: no metric {metric!r}")
    return mine.groupby("scenario")[metric].mean().to_dict()


def _pooled(ctx: ReportContext, spec: dict[str, Any], policy: str, metric: str) -> float:
    return float(np.mean(list(_scenario_means(ctx, spec, policy, metric).values())))


def _fmt_value(metric: str, value: float, unit: bool = True) -> str:
    f = metric_format(metric)
    if math.isnan(value):
        return "-"
    text = f.fmt.format(value * f.scale)
    return f"{text} {f.unit}".rstrip() if unit else text


def _pairs(spec: dict[str, Any]) -> list[tuple[str, str]]:
    if "pairs" in spec:
        return [(str(a), str(b)) for a, b in spec["pairs"]]
    return [(spec["a"], spec["b"])]


def evaluate_claim(ctx: ReportContext, spec: dict[str, Any]) -> tuple[str, float]:
    """Our side of a claim: its text and the number its ``expect`` tests.

    Kinds: ``value`` (a policy's mean), ``ratio`` (a / b of pooled means), ``reduction``
    (1 - a / b), ``diff`` (a - b), ``metric_diff`` (a policy's ``metric`` minus its
    ``other`` metric), ``max_diff`` (largest per-scenario a - b; ``relative``
    divides by b), ``count`` (scenario x pair cases where a ``op`` b, ``op`` one of <, <=,
    >, >=) and ``best`` (scenarios where ``policy`` has the best mean among ``among``).
    """
    kind = spec["kind"]
    metric = spec["metric"]
    if kind == "value":
        v = _pooled(ctx, spec, spec["policy"], metric)
        per = spec.get("divide_by")
        if per:
            return f"{spec['policy']}: {_fmt_value(metric, v)} = {v / per:.2f} of {spec.get('of', per)}", v / per
        return f"{spec['policy']}: {_fmt_value(metric, v)}", v
    if kind in ("ratio", "reduction", "diff"):
        a = _pooled(ctx, spec, spec["a"], metric)
        b = _pooled(ctx, spec, spec["b"], metric)
        base = f"{spec['a']} {_fmt_value(metric, a)}, {spec['b']} {_fmt_value(metric, b)}"
        if kind == "diff":
            return f"{base}: difference {_fmt_value(metric, a - b, unit=False)}", a - b
        ratio = a / b if b else float("nan")
        if kind == "ratio":
            return f"{base}: ratio {ratio:.3f}", ratio
        change = 100 * (1 - ratio)
        return f"{base}: {abs(change):.1f} % {'lower' if change >= 0 else 'higher'}", 1 - ratio
    if kind == "metric_diff":
        a = _pooled(ctx, spec, spec["policy"], metric)
        b = _pooled(ctx, spec, spec["policy"], spec["other"])
        return (f"{spec['policy']}: {metric_format(metric).label} {_fmt_value(metric, a)}, "
                f"{metric_format(spec['other']).label} {_fmt_value(spec['other'], b)}"), a - b
    if kind == "max_diff":
        by_a = _scenario_means(ctx, spec, spec["a"], metric)
        by_b = _scenario_means(ctx, spec, spec["b"], metric)
        common = [s for s in by_a if s in by_b]
        if spec.get("relative"):
            diffs = {s: (by_a[s] - by_b[s]) / by_b[s] if by_b[s] else float("nan") for s in common}
            s = max(common, key=lambda k: -math.inf if math.isnan(diffs[k]) else diffs[k])
            return (f"up to {100 * diffs[s]:+.1f} % ({s}: {_fmt_value(metric, by_a[s])} vs "
                    f"{_fmt_value(metric, by_b[s])})"), diffs[s]
        diffs = {s: by_a[s] - by_b[s] for s in common}
        s = max(common, key=lambda k: diffs[k])
        f = metric_format(metric)
        points = " points" if f.unit == "" and f.scale == 1.0 and "rate" in metric else ""
        return (f"up to {100 * diffs[s] if points else diffs[s] * f.scale:+.1f}{points or ' ' + f.unit} "
                f"({s}: {_fmt_value(metric, by_a[s])} vs {_fmt_value(metric, by_b[s])})"), diffs[s]
    if kind == "count":
        op = spec.get("op", ">")
        tests = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal}
        if op not in tests:
            raise ReportError(f"claim {spec.get('id')}: op {op!r} is not one of {', '.join(tests)}")
        hold, total = 0, 0
        cases = []
        for a_name, b_name in _pairs(spec):
            by_a = _scenario_means(ctx, spec, a_name, metric)
            by_b = _scenario_means(ctx, spec, b_name, metric)
            for s in by_a:
                if s in by_b:
                    total += 1
                    ok = bool(tests[op](by_a[s] + spec.get("margin", 0.0), by_b[s]))
                    hold += ok
                    cases.append(f"{s}: {a_name} {_fmt_value(metric, by_a[s], unit=False)} vs {b_name} "
                                 f"{_fmt_value(metric, by_b[s], unit=False)}")
        detail = f" ({'; '.join(cases)})" if total <= 4 else ""
        return f"{hold} of {total} cases{detail}", float(hold) / total if total else float("nan")
    if kind == "best":
        # the optimum is a bound, not a competitor: "best" means best among the schedulers
        among = spec.get("among") or [p for p in ctx.policies(spec.get("group"), ctx.group_rows(spec.get("group")))
                                      if p != "optimum"]
        means = {p: _scenario_means(ctx, spec, p, metric) for p in among}
        higher = metric_format(metric).higher_is_better
        wins, total = 0, 0
        for s in means[spec["policy"]]:
            vals = {p: means[p].get(s, float("nan")) for p in among}
            best = max(vals.values()) if higher else min(vals.values())
            total += 1
            wins += vals[spec["policy"]] >= best - spec.get("margin", 0.0) if higher else \
                vals[spec["policy"]] <= best + spec.get("margin", 0.0)
        return f"best in {wins} of {total} scenarios", float(wins) / total if total else float("nan")
    raise ReportError(f"claim {spec.get('id')}: unknown kind {kind!r}")


def expectation_text(spec: dict[str, Any], value: float) -> str:
    exp = spec.get("expect")
    if not exp or math.isnan(value):
        return "-"
    ops = {"<": value < exp["value"], "<=": value <= exp["value"], ">": value > exp["value"],
           ">=": value >= exp["value"], "==": value == exp["value"]}
    if exp["op"] not in ops:
        raise ReportError(f"claim {spec.get('id')}: expect.op {exp['op']!r} is not one of {', '.join(ops)}")
    return "yes" if ops[exp["op"]] else "no"
