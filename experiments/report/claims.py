"""A paper's claims checked against a suite's results: each claim's statement, the
paper's number, ours, the tolerance and a verdict.

A claim (an entry of a suite's ``claims:``) names what to compute (``kind``, below) and
what the paper says of it: ``expect`` (an ordering or threshold, ``{op, value}``) and,
where the paper gives a number, ``magnitude`` (``{value, rel_tol}`` or ``{value,
abs_tol}``: the paper's number on the scale of ours). Orderings between policies are
strict: a tie is "no difference", never agreement (``margin`` states a paper's "nearly
equal"). A claim the suite cannot evaluate yet says ``attempted: false`` and ``why``.

Verdicts (:data:`VERDICTS`): **reproduced** (the ordering holds in every case it must and
the number is within tolerance), **partly** (the ordering holds but the number is outside
tolerance, or it holds in only some of the cases), **not reproduced**, **not attempted**.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
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


VERDICTS = ("reproduced", "partly", "not reproduced", "not attempted")
"""The verdicts, in the order a scoreboard lists them."""

STRICT_OPS = ("<", ">")
"""Orderings between two policies a ``count`` claim may state: strict, so that a tie is
never agreement."""


@dataclass(frozen=True)
class ClaimOutcome:
    """Our side of a claim.

    Attributes
    ----------
    text : str
        What we measured, as the report's "ours" column shows it.
    value : float
        The number ``expect`` and ``magnitude`` test (NaN when not attempted).
    hold, total, ties : int
        For claims over cases (``count``, ``best``): cases where the paper's ordering
        holds, cases, and cases where the two sides are equal (counted as not holding
        unless a ``margin`` makes "nearly equal" the claim). Zero for other kinds.
    span : tuple of float, optional
        For a claim of a range (``gain``): our lowest and highest, which a ``magnitude``
        with ``low`` and ``high`` checks end by end.
    """

    text: str
    value: float
    hold: int = 0
    total: int = 0
    ties: int = 0
    span: tuple[float, float] | None = None


def _pairs(spec: dict[str, Any]) -> list[tuple[str, str]]:
    if "pairs" in spec:
        return [(str(a), str(b)) for a, b in spec["pairs"]]
    return [(spec["a"], spec["b"])]


def evaluate_claim(ctx: ReportContext, spec: dict[str, Any]) -> ClaimOutcome:
    """Our side of a claim (:class:`ClaimOutcome`).

    Kinds: ``value`` (a policy's mean), ``ratio`` (a / b of pooled means), ``reduction``
    (1 - a / b), ``diff`` (a - b), ``metric_diff`` (a policy's ``metric`` minus its
    ``other`` metric), ``max_diff`` (largest per-scenario a - b; ``relative``
    divides by b), ``count`` (the fraction of scenario x pair cases where a ``op`` b,
    ``op`` strict: < or >; with ``margin`` m, a + m ``op`` b) and ``best`` (the fraction of
    scenarios where ``policy``'s mean is strictly better than every other policy's of
    ``among``; with ``margin`` m, within m of the best other counts), ``gain`` (a's
    pooled mean over each of the policies ``b`` (a list) minus 1; the value is their mean,
    the span their lowest and highest), ``across`` (the fraction of cases, each policy of
    ``policies`` and pair of ``scenario_pairs``, where its mean in the first scenario ``op``
    its mean in the second: the paper comparing settings, not policies), ``trend`` (the
    fraction of ``policies`` whose means along the ordered ``scenarios``, or their gap to
    ``minus``, rise (``op`` <) or fall (>) strictly at every step, or peak inside the series
    (``peak``)) and ``test`` (a worked example the project's test
    ``test`` asserts, so that it holds in every revision that passes its tests; with
    ``measured``, a mapping of ``value``, ``text`` and optionally ``low`` and ``high``, the
    number that test computes and asserts, which ``expect`` and ``magnitude`` then check).
    """
    if spec.get("attempted", True) is False:
        return ClaimOutcome(" ".join(str(spec.get("why", "-")).split()), float("nan"))
    kind = spec["kind"]
    if kind == "test":  # a worked example the paper draws, asserted by the project's tests
        checked = f"checked by the test `{spec['test']}` (the test suite asserts it)"
        measured = spec.get("measured")
        if not measured:
            return ClaimOutcome(checked, float("nan"))
        span = (float(measured["low"]), float(measured["high"])) if "low" in measured else None
        return ClaimOutcome(f"{' '.join(str(measured['text']).split())}; {checked}", float(measured["value"]),
                            span=span)
    metric = spec["metric"]
    if kind == "value":
        v = _pooled(ctx, spec, spec["policy"], metric)
        per = spec.get("divide_by")
        if per:
            return ClaimOutcome(f"{spec['policy']}: {_fmt_value(metric, v)} = {v / per:.2f} of "
                                f"{spec.get('of', per)}", v / per)
        return ClaimOutcome(f"{spec['policy']}: {_fmt_value(metric, v)}", v)
    if kind in ("ratio", "reduction", "diff"):
        a = _pooled(ctx, spec, spec["a"], metric)
        b = _pooled(ctx, spec, spec["b"], metric)
        base = f"{spec['a']} {_fmt_value(metric, a)}, {spec['b']} {_fmt_value(metric, b)}"
        if kind == "diff":
            return ClaimOutcome(f"{base}: difference {_fmt_value(metric, a - b, unit=False)}", a - b)
        ratio = a / b if b else float("nan")
        if kind == "ratio":
            return ClaimOutcome(f"{base}: ratio {ratio:.3f}", ratio)
        change = 100 * (1 - ratio)
        return ClaimOutcome(f"{base}: {abs(change):.1f} % {'lower' if change >= 0 else 'higher'}", 1 - ratio)
    if kind == "metric_diff":
        a = _pooled(ctx, spec, spec["policy"], metric)
        b = _pooled(ctx, spec, spec["policy"], spec["other"])
        return ClaimOutcome(f"{spec['policy']}: {metric_format(metric).label} {_fmt_value(metric, a)}, "
                            f"{metric_format(spec['other']).label} {_fmt_value(spec['other'], b)}", a - b)
    if kind == "max_diff":
        by_a = _scenario_means(ctx, spec, spec["a"], metric)
        by_b = _scenario_means(ctx, spec, spec["b"], metric)
        common = [s for s in by_a if s in by_b]
        if spec.get("relative"):
            diffs = {s: (by_a[s] - by_b[s]) / by_b[s] if by_b[s] else float("nan") for s in common}
            s = max(common, key=lambda k: -math.inf if math.isnan(diffs[k]) else diffs[k])
            return ClaimOutcome(f"up to {100 * diffs[s]:+.1f} % ({s}: {_fmt_value(metric, by_a[s])} vs "
                                f"{_fmt_value(metric, by_b[s])})", diffs[s])
        diffs = {s: by_a[s] - by_b[s] for s in common}
        s = max(common, key=lambda k: diffs[k])
        f = metric_format(metric)
        points = " points" if f.unit == "" and f.scale == 1.0 and "rate" in metric else ""
        return ClaimOutcome(f"up to {100 * diffs[s] if points else diffs[s] * f.scale:+.1f}{points or ' ' + f.unit} "
                            f"({s}: {_fmt_value(metric, by_a[s])} vs {_fmt_value(metric, by_b[s])})", diffs[s])
    if kind == "gain":
        a = _pooled(ctx, spec, spec["a"], metric)
        gains = {b: a / _pooled(ctx, spec, b, metric) - 1.0 for b in spec["b"]}
        finite = [g for g in gains.values() if math.isfinite(g)]
        text = ", ".join(f"{b} {100 * g:+.1f} %" for b, g in gains.items())
        if not finite:
            return ClaimOutcome(f"{spec['a']} over {text}", float("nan"))
        low, high = min(finite), max(finite)
        return ClaimOutcome(f"{spec['a']} over {text} (from {100 * low:+.1f} % to {100 * high:+.1f} %)",
                            float(np.mean(finite)), span=(low, high))
    if kind == "count":
        op = spec.get("op", ">")
        if op not in STRICT_OPS:
            raise ReportError(f"claim {spec.get('id', spec.get('paper'))}: op {op!r} is not one of "
                              f"{', '.join(STRICT_OPS)}: an ordering is strict, a tie is no difference (a margin "
                              "states 'nearly equal')")
        margin = float(spec.get("margin", 0.0))
        hold = total = ties = 0
        cases = []
        for a_name, b_name in _pairs(spec):
            by_a = _scenario_means(ctx, spec, a_name, metric)
            by_b = _scenario_means(ctx, spec, b_name, metric)
            for s in by_a:
                if s in by_b:
                    total += 1
                    ties += by_a[s] == by_b[s]
                    hold += by_a[s] + margin > by_b[s] if op == ">" else by_a[s] + margin < by_b[s]
                    cases.append(f"{s}: {a_name} {_fmt_value(metric, by_a[s], unit=False)} vs {b_name} "
                                 f"{_fmt_value(metric, by_b[s], unit=False)}")
        detail = f" ({'; '.join(cases)})" if total <= 4 else ""
        tie_text = f", {ties} tie{'s' if ties != 1 else ''}" if ties else ""
        return ClaimOutcome(f"{hold} of {total} cases{tie_text}{detail}",
                            float(hold) / total if total else float("nan"), hold, total, ties)
    if kind in ("across", "trend"):
        return _scenario_ordering(ctx, spec)
    if kind == "best":
        # the optimum is a bound, not a competitor: "best" means best among the schedulers
        among = spec.get("among") or [p for p in ctx.policies(spec.get("group"), ctx.group_rows(spec.get("group")))
                                      if p != "optimum"]
        means = {p: _scenario_means(ctx, spec, p, metric) for p in among}
        sign = 1.0 if metric_format(metric).higher_is_better else -1.0
        margin = float(spec.get("margin", 0.0))
        wins = total = ties = 0
        for s, mine in means[spec["policy"]].items():
            others = [sign * means[p].get(s, float("nan")) for p in among if p != spec["policy"]]
            best_other = max((v for v in others if not math.isnan(v)), default=-math.inf)
            total += 1
            ties += sign * mine == best_other
            wins += sign * mine + margin > best_other
        tie_text = f", tied in {ties}" if ties else ""
        return ClaimOutcome(f"best in {wins} of {total} scenarios{tie_text}",
                            float(wins) / total if total else float("nan"), wins, total, ties)
    raise ReportError(f"claim {spec.get('id')}: unknown kind {kind!r}")


def _scenario_ordering(ctx: ReportContext, spec: dict[str, Any]) -> ClaimOutcome:
    """``across``: for each policy of ``policies`` and each pair of ``scenario_pairs``, its
    mean in the first scenario ``op`` its mean in the second. ``trend``: for each policy,
    its means along the ordered ``scenarios`` (less the means of ``minus``, when given: a
    gap between two policies), each consecutive pair ``op`` (``<``: rising, ``>``:
    falling), or with ``op: peak`` rising to a maximum inside the series and falling after
    it. Strict: a tie does not hold."""
    op = spec.get("op", "<")
    allowed = STRICT_OPS + (("peak",) if spec["kind"] == "trend" else ())
    if op not in allowed:
        raise ReportError(f"claim {spec.get('id', spec.get('paper'))}: op {op!r} is not one of {', '.join(allowed)}")
    metric = spec["metric"]
    if spec["kind"] == "across":
        pairs = [(str(a), str(b)) for a, b in spec["scenario_pairs"]]
    else:
        order = [str(x) for x in spec["scenarios"]]
        pairs = list(zip(order, order[1:]))
    wanted = {x for pair in pairs for x in pair}
    hold = total = ties = 0
    cases = []
    for policy in spec["policies"]:
        means = _scenario_means(ctx, {**spec, "scenarios": sorted(wanted)}, policy, metric)
        missing = wanted - set(means)
        if missing:
            raise ReportError(f"claim {spec.get('id', spec.get('paper'))}: no rows of {policy!r} in "
                              f"{', '.join(sorted(missing))}")
        if spec["kind"] == "trend":
            name = policy
            if spec.get("minus"):
                other = _scenario_means(ctx, {**spec, "scenarios": sorted(wanted)}, spec["minus"], metric)
                means = {x: means[x] - other[x] for x in wanted}
                name = f"{policy} - {spec['minus']}"
            series = [means[x] for x in [pairs[0][0]] + [b for _, b in pairs]]
            total += 1
            ties += any(u == v for u, v in zip(series, series[1:]))
            hold += _follows(series, op)
            cases.append(f"{name}: " + " -> ".join(_fmt_value(metric, v, unit=False) for v in series))
            continue
        for a, b in pairs:
            total += 1
            ties += means[a] == means[b]
            hold += means[a] < means[b] if op == "<" else means[a] > means[b]
            cases.append(f"{policy}: {a} {_fmt_value(metric, means[a], unit=False)} vs {b} "
                         f"{_fmt_value(metric, means[b], unit=False)}")
    detail = f" ({'; '.join(cases)})" if total <= 4 else ""
    tie_text = f", {ties} tie{'s' if ties != 1 else ''}" if ties else ""
    return ClaimOutcome(f"{hold} of {total} cases{tie_text}{detail}", float(hold) / total if total else float("nan"),
                        hold, total, ties)


def _follows(series: list[float], op: str) -> bool:
    """Whether a series rises (``<``) or falls (``>``) strictly at every step, or (``peak``)
    rises strictly to a maximum inside it and falls strictly after."""
    if op == "peak":
        top = int(np.argmax(series))
        return (0 < top < len(series) - 1 and all(u < v for u, v in zip(series[:top], series[1:top + 1]))
                and all(u > v for u, v in zip(series[top:], series[top + 1:])))
    return all(u < v if op == "<" else u > v for u, v in zip(series, series[1:]))


_OPS = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
        ">=": lambda a, b: a >= b, "==": lambda a, b: a == b}


def expectation_holds(spec: dict[str, Any], value: float) -> bool | None:
    """Whether our number meets the claim's ``expect`` (None without one)."""
    exp = spec.get("expect")
    if not exp:
        return None
    if exp["op"] not in _OPS:
        raise ReportError(f"claim {spec.get('id', spec.get('paper'))}: expect.op {exp['op']!r} is not one of "
                          f"{', '.join(_OPS)}")
    return not math.isnan(value) and bool(_OPS[exp["op"]](value, exp["value"]))


def _close(mag: dict[str, Any], paper: float, ours: float) -> bool:
    allowed = float(mag["rel_tol"]) * abs(paper) if "rel_tol" in mag else float(mag["abs_tol"])
    return not math.isnan(ours) and abs(ours - paper) <= allowed


def within_tolerance(spec: dict[str, Any], outcome: ClaimOutcome) -> bool | None:
    """Whether our number is within the claim's ``magnitude`` tolerance of the paper's
    (None when the paper gives no number). A paper's range (``low``, ``high``) is met when
    our span's ends are each within tolerance of the paper's."""
    mag = spec.get("magnitude")
    if not mag:
        return None
    if ("rel_tol" in mag) == ("abs_tol" in mag):
        raise ReportError(f"claim {spec.get('id', spec.get('paper'))}: magnitude needs one of rel_tol or abs_tol")
    if "low" in mag:
        if outcome.span is None:
            raise ReportError(f"claim {spec.get('id', spec.get('paper'))}: a range (low, high) needs a kind that "
                              "gives one (gain, or test with a measured low and high)")
        return _close(mag, float(mag["low"]), outcome.span[0]) and _close(mag, float(mag["high"]), outcome.span[1])
    return _close(mag, float(mag["value"]), outcome.value)


def verdict(spec: dict[str, Any], outcome: ClaimOutcome) -> str:
    """One of :data:`VERDICTS` (module docstring)."""
    if spec.get("attempted", True) is False:
        return "not attempted"
    ordering = expectation_holds(spec, outcome.value)
    magnitude = within_tolerance(spec, outcome)
    if ordering is False:
        return "partly" if outcome.hold > 0 else "not reproduced"
    if magnitude is False:
        return "partly" if ordering else "not reproduced"
    return "reproduced"


def _number(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def check_text(spec: dict[str, Any]) -> str:
    """What our number must meet for the paper's ordering or threshold (``expect``): for
    claims over cases, the share of cases where the ordering must hold."""
    exp = spec.get("expect")
    if not exp:
        return "-"
    if spec.get("kind") in ("count", "best", "across", "trend"):
        return f"holds in {exp['op']} {100 * float(exp['value']):.0f} % of cases"
    return f"ours {exp['op']} {_number(float(exp['value']))}"


def paper_number_text(spec: dict[str, Any]) -> str:
    """The paper's number on the scale of ours (``magnitude``), or "-" when it gives none."""
    mag = spec.get("magnitude")
    if not mag:
        return "-"
    if "low" in mag:
        return f"{_number(float(mag['low']))} to {_number(float(mag['high']))}"
    return _number(float(mag["value"]))


def tolerance_text(spec: dict[str, Any]) -> str:
    mag = spec.get("magnitude")
    if not mag:
        return "-"
    if "rel_tol" in mag:
        return f"± {100 * float(mag['rel_tol']):.0f} %"
    return f"± {_number(float(mag['abs_tol']))}"


def scoreboard(verdicts: list[str]) -> dict[str, int]:
    """Claims per verdict, every verdict listed."""
    return {v: verdicts.count(v) for v in VERDICTS}
