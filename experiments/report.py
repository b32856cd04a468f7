"""Reports: Markdown and self-contained HTML leaderboards with figures, from sweep results.

:func:`build_report` turns the results of one or more suites (:mod:`.sweep`) into
``README.md`` (Markdown tables; figures as ``figures/*.png`` beside it) and ``index.html``
(the same content with the figures embedded, so the one file opens anywhere). Per suite:

- a table of policies x metrics per group of the suite (and overall when every policy
  ran in every group): the mean over seeds of the per-seed mean over the group's
  scenarios, with a 95 % confidence interval (Student's t over the per-seed means), ranked
  by the suite's ranking metric (weighted on-time rate by default);
- the gap interval, where an optimum's row is stored for the (scenario, seed): from
  ``1 - score / best_achieved`` (the optimum row's score) to ``1 - score / upper_bound``
  (the bound it stores), and the scenarios where the two ends are far apart;
- the ranking metric per scenario;
- the suite's figures (paper-figure reproductions: metric vs a grid variable, bars,
  CDFs of per-block times, time series of per-episode series) and its claims: the
  paper's stated numbers beside ours, with whether ours agree.

The same results give byte-identical Markdown: everything is sorted, numbers have fixed
formats and nothing depends on the clock. :func:`validate` checks that every ``optimum`` row is
at least every policy's score and re-runs a random sample of stored rows, listing those
that differ (CompilerGym's replay validation).
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..envs.errors import MpschedError
from .suite import DEFAULT_METRICS
from .sweep import (
    KEY_COLUMNS,
    PROVENANCE_COLUMNS,
    TIMING_COLUMNS,
    Provenance,
    SuiteResults,
    Task,
    load_results,
    run_task,
)

__all__ = [
    "METRICS",
    "MetricFormat",
    "ReportError",
    "block_statistics",
    "build_report",
    "ci95",
    "gap_to_best_achieved",
    "gap_to_bound",
    "optimum_problems",
    "policy_table",
    "render_markdown",
    "validate",
]

_NS = 1e9


class ReportError(MpschedError):
    """A figure or claim of a suite refers to something the results do not hold."""


# ---------------------------------------------------------------------------------------
# Metrics and statistics
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetricFormat:
    """How a metric is shown: label, unit, scale applied to the stored value, format."""

    label: str
    unit: str = ""
    scale: float = 1.0
    fmt: str = "{:.3f}"
    higher_is_better: bool = True

    def heading(self) -> str:
        return f"{self.label} [{self.unit}]" if self.unit else self.label


METRICS: dict[str, MetricFormat] = {
    "on_time_rate": MetricFormat("on-time rate"),
    "weighted_on_time_rate": MetricFormat("weighted on-time"),
    "high_priority_on_time_rate": MetricFormat("high-priority on-time"),
    "completion_rate": MetricFormat("completed"),
    "goodput_bps": MetricFormat("goodput", "Mbit/s", 1e-6, "{:.2f}"),
    "rebuffer_s": MetricFormat("rebuffering", "s", 1.0, "{:.2f}", False),
    "efficiency": MetricFormat("efficiency"),
    "bytes_wasted": MetricFormat("wasted", "MB", 1e-6, "{:.2f}", False),
    "cancelled": MetricFormat("cancelled", "blocks", 1.0, "{:.1f}", False),
    "cancelled_after_send": MetricFormat("cancelled after send", "blocks", 1.0, "{:.1f}", False),
    "mean_queuing_delay_s": MetricFormat("sender queuing delay", "ms", 1e3, "{:.1f}", False),
    "mean_completion_time_s": MetricFormat("mean completion time", "s", 1.0, "{:.3f}", False),
    "p95_completion_time_s": MetricFormat("p95 completion time", "s", 1.0, "{:.3f}", False),
    "median_completion_time_s": MetricFormat("median completion time", "s", 1.0, "{:.3f}", False),
    "p25_completion_time_s": MetricFormat("p25 completion time", "s", 1.0, "{:.3f}", False),
    "small_mean_completion_time_s": MetricFormat("small objects' mean completion", "s", 1.0, "{:.3f}", False),
    "mean_active_streams": MetricFormat("active streams (time mean)", "", 1.0, "{:.2f}", False),
    "bytes_sent": MetricFormat("sent", "MB", 1e-6, "{:.2f}"),
    "retransmissions": MetricFormat("retransmissions", "", 1.0, "{:.0f}", False),
    "slow_path_share": MetricFormat("slow-path share"),
    "picture_discards": MetricFormat("picture discards", "", 1.0, "{:.1f}", False),
    "buffer_underflows": MetricFormat("buffer underflows", "", 1.0, "{:.1f}", False),
    "underflow_recovery_s": MetricFormat("underflow recovery", "s", 1.0, "{:.2f}", False),
    "max_blocking_s": MetricFormat("max blocking", "ms", 1e3, "{:.1f}", False),
    "mean_blocking_s": MetricFormat("mean blocking", "ms", 1e3, "{:.1f}", False),
    "mean_app_delay_s": MetricFormat("application delay", "ms", 1e3, "{:.1f}", False),
    "mean_rbuf_bytes": MetricFormat("receive buffer (mean)", "packets of 1500 B", 1 / 1500, "{:.2f}", False),
    "max_rbuf_bytes": MetricFormat("receive buffer (max)", "packets of 1500 B", 1 / 1500, "{:.1f}", False),
    "total_throughput_bps": MetricFormat("throughput, all paths", "Mbit/s", 1e-6, "{:.3f}"),
    "gap_low": MetricFormat("gap to best achieved", "", 1.0, "{:.3f}", False),
    "gap": MetricFormat("gap to upper bound", "", 1.0, "{:.3f}", False),
}

OPTIMUM_INTERVAL_FLAG = 0.05
"""A report flags a scenario when, in some seed, its achievable optimum (the ``optimum``
row) is more than this fraction below the upper bound: there, every policy's gap to the
true optimum is known only within an interval at least this wide."""


def metric_format(key: str) -> MetricFormat:
    """The display of a metric (paths' throughputs and unknown keys included)."""
    if key in METRICS:
        return METRICS[key]
    m = re.fullmatch(r"path(\d+)_throughput_bps", key)
    if m:
        return MetricFormat(f"path {m.group(1)} throughput", "Mbit/s", 1e-6, "{:.3f}")
    return MetricFormat(key.replace("_", " "), "", 1.0, "{:.4g}")


# Student's t quantile t(0.975, df) for df = 1..30 (two-sided 95 %).
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
         2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
         2.045, 2.042)


def t975(df: int) -> float:
    """Student's t quantile at 0.975; beyond 30 degrees of freedom, the Cornish-Fisher
    expansion around the normal quantile (error below 1e-4)."""
    if df < 1:
        return float("nan")
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959963984540054
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def ci95(values: Sequence[float]) -> tuple[float, float, int]:
    """Mean, half-width of its 95 % confidence interval (NaN with fewer than two
    values) and the number of values, NaNs left out."""
    x = np.asarray([v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))],
                   dtype=float)
    n = len(x)
    if n == 0:
        return float("nan"), float("nan"), 0
    mean = float(x.mean())
    if n < 2:
        return mean, float("nan"), n
    return mean, t975(n - 1) * float(x.std(ddof=1)) / math.sqrt(n), n


def gap_to_bound(rows: pd.DataFrame, score: str) -> pd.Series:
    """``1 - score / upper_bound`` per row, where an upper bound is stored for the row's
    (suite, scenario, seed): the largest ``upper_bound`` of the rows sharing it (an
    optimum's row stores the bound of its episode). NaN elsewhere and for a bound of 0."""
    if "upper_bound" not in rows or rows["upper_bound"].isna().all():
        return pd.Series(np.nan, index=rows.index, name="gap")
    keys = ["suite", "scenario", "seed"]
    bounds = rows.dropna(subset=["upper_bound"]).groupby(keys)["upper_bound"].max().rename("bound")
    bound = rows[keys].join(bounds, on=keys)["bound"]
    gap = 1.0 - rows[score] / bound.where(bound > 0)
    return gap.rename("gap")


def _optimum_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows of the optimum: those that store an upper bound."""
    if "upper_bound" not in rows:
        return rows.iloc[:0]
    return rows[rows["upper_bound"].notna()]


def gap_to_best_achieved(rows: pd.DataFrame, score: str) -> pd.Series:
    """``1 - score / best_achieved`` per row, where the optimum's row of the row's (suite,
    scenario, seed) is stored: the lower end of the gap interval, whose upper end is
    :func:`gap_to_bound` (:mod:`mpsched.solvers.gaps`). NaN elsewhere and for 0."""
    optimum = _optimum_rows(rows)
    if optimum.empty:
        return pd.Series(np.nan, index=rows.index, name="gap_low")
    keys = ["suite", "scenario", "seed"]
    best = optimum.groupby(keys)[score].max().rename("best")
    value = rows[keys].join(best, on=keys)["best"]
    return (1.0 - rows[score] / value.where(value > 0)).rename("gap_low")


def optimum_problems(rows: pd.DataFrame, score: str = "weighted_on_time_rate") -> list[str]:
    """Where an ``optimum`` row is below another policy's score or above its own upper
    bound, one line per (suite, scenario, seed) and optimum row; empty when none is."""
    problems: list[str] = []
    if "upper_bound" not in rows:
        return problems
    for key, episode in rows.groupby(["suite", "scenario", "seed"], sort=True):
        mine = _optimum_rows(episode)
        others = episode[episode["upper_bound"].isna()]
        for _, opt in mine.iterrows():
            where = f"{key[0]}/{key[1]}/seed {key[2]}: {opt['policy']} ({opt[score]:.6f})"
            above = others[others[score] > opt[score]]
            if not above.empty:
                top = above.loc[above[score].idxmax()]
                problems.append(f"{where} is below {len(above)} policies, e.g. {top['policy']} ({top[score]:.6f})")
            if opt[score] > opt["upper_bound"] + 1e-12:
                problems.append(f"{where} is above its upper bound ({opt['upper_bound']:.6f})")
    return problems


@dataclass
class TableRow:
    """One policy's line in a table: per metric (mean, CI half-width, seeds)."""

    policy: str
    cells: dict[str, tuple[float, float, int]]
    scenarios: int


def policy_table(rows: pd.DataFrame, metrics: Sequence[str], rank_by: str,
                 policies: Sequence[str] | None = None) -> list[TableRow]:
    """Policies x metrics: for each metric the per-seed mean over the rows' scenarios,
    then the mean and 95 % CI over seeds. Sorted by ``rank_by`` (best first; ties and
    missing values by name)."""
    names = sorted(rows["policy"].unique()) if policies is None else list(policies)
    wanted = list(dict.fromkeys(list(metrics) + [rank_by]))
    out = []
    for p in names:
        mine = rows[rows["policy"] == p]
        if mine.empty:
            continue
        cells = {}
        for m in wanted:
            if m not in mine:
                cells[m] = (float("nan"), float("nan"), 0)
                continue
            per_seed = mine.groupby("seed")[m].mean()
            cells[m] = ci95(per_seed.tolist())
        out.append(TableRow(p, cells, int(mine["scenario"].nunique())))
    better = metric_format(rank_by).higher_is_better

    def order(r: TableRow) -> tuple[Any, ...]:
        v = r.cells[rank_by][0]
        missing = math.isnan(v)
        return (missing, 0.0 if missing else (-v if better else v), r.policy)

    return sorted(out, key=order)


def _cell(key: str, mean: float, half: float) -> str:
    f = metric_format(key)
    if math.isnan(mean):
        return "-"
    text = f.fmt.format(mean * f.scale)
    if not math.isnan(half):
        text += " ± " + f.fmt.format(half * f.scale)
    return text


# ---------------------------------------------------------------------------------------
# Series-derived statistics
# ---------------------------------------------------------------------------------------


def active_streams(blocks: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Blocks that have arrived and are not complete, over time ([jonglez20] Fig. 10):
    instants (ns) and the count from each instant to the next."""
    arrival = blocks["arrival_ns"].to_numpy(dtype=np.int64)
    done = blocks["completion_ns"].to_numpy(dtype=np.int64)
    end = int(max(done.max(), arrival.max())) if len(done) else 0
    done = np.where(done >= 0, done, end)
    times = np.concatenate([arrival, done])
    change = np.concatenate([np.ones(len(arrival), dtype=np.int64), -np.ones(len(done), dtype=np.int64)])
    instants, slot = np.unique(times, return_inverse=True)
    level = np.cumsum(np.bincount(slot, weights=change, minlength=len(instants))).astype(np.int64)
    return instants, level


def block_statistics(blocks: pd.DataFrame) -> pd.DataFrame:
    """Per-episode statistics of stored block tables (one row per key): completion-time
    quantiles, the mean completion time of the smaller half of the blocks (size at most
    the episode's median) and the time-mean number of active streams from the first
    arrival to the last completion (blocks never completed count until then)."""
    out = []
    for key, b in blocks.groupby(list(KEY_COLUMNS), sort=True):
        done = b[b["completion_ns"] >= 0]
        ct = (done["completion_ns"] - done["arrival_ns"]).to_numpy() / _NS
        small = done[done["size_bytes"] <= b["size_bytes"].median()]
        small_ct = (small["completion_ns"] - small["arrival_ns"]).to_numpy() / _NS
        instants, level = active_streams(b)
        span = instants[-1] - instants[0] if len(instants) else 0
        mean_active = float(np.sum(level[:-1] * np.diff(instants)) / span) if span > 0 else float("nan")
        out.append(dict(zip(KEY_COLUMNS, key)) | {
            "p25_completion_time_s": float(np.percentile(ct, 25)) if len(ct) else float("nan"),
            "median_completion_time_s": float(np.median(ct)) if len(ct) else float("nan"),
            "small_mean_completion_time_s": float(small_ct.mean()) if len(small_ct) else float("nan"),
            "mean_active_streams": mean_active,
        })
    return pd.DataFrame(out)


def _enriched(res: SuiteResults, spec: dict[str, Any]) -> pd.DataFrame:
    """Rows with the gap, block statistics (where block tables are stored), the total
    throughput and the suite's derived metrics."""
    rows = res.rows.copy()
    rank_by = spec.get("rank_by", "weighted_on_time_rate")
    rows["gap_low"] = gap_to_best_achieved(rows, rank_by) if rank_by in rows else np.nan
    rows["gap"] = gap_to_bound(rows, rank_by) if rank_by in rows else np.nan
    paths = [c for c in rows.columns if re.fullmatch(r"path\d+_throughput_bps", c)]
    if paths:
        rows["total_throughput_bps"] = rows[paths].fillna(0.0).sum(axis=1)
    blocks = res.series("blocks")
    if not blocks.empty:
        stats = block_statistics(blocks)
        rows = rows.merge(stats, on=list(KEY_COLUMNS), how="left")
    for name, expr in (spec.get("derived") or {}).items():
        try:
            rows[name] = rows.eval(expr)
        except Exception as exc:
            raise ReportError(f"suite {res.name}: derived metric {name} = {expr!r}: {exc}") from None
    return rows


# ---------------------------------------------------------------------------------------
# The document: one model rendered to Markdown and to HTML
# ---------------------------------------------------------------------------------------


@dataclass
class Heading:
    level: int
    text: str


@dataclass
class Para:
    text: str


@dataclass
class Table:
    header: list[str]
    rows: list[list[str]]
    align: str  # one of "l", "r" per column


@dataclass
class Figure:
    file: str  # relative to the report folder
    title: str
    caption: str
    png: bytes


Block = Heading | Para | Table | Figure


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown(blocks: Sequence[Block]) -> str:
    """Markdown of a document."""
    out: list[str] = []
    for b in blocks:
        if isinstance(b, Heading):
            out += ["#" * b.level + " " + b.text, ""]
        elif isinstance(b, Para):
            out += [b.text, ""]
        elif isinstance(b, Table):
            out.append("| " + " | ".join(_md_escape(h) for h in b.header) + " |")
            out.append("|" + "|".join(":---" if a == "l" else "---:" for a in b.align) + "|")
            for r in b.rows:
                out.append("| " + " | ".join(_md_escape(c) for c in r) + " |")
            out.append("")
        elif isinstance(b, Figure):
            out += [f"![{b.title}]({b.file})", "", f"*{b.title}.* {b.caption}".rstrip(), ""]
    return "\n".join(out).rstrip() + "\n"


def _inline_html(text: str) -> str:
    """Escape, then render `code`, **bold** and [links](url) as Markdown does."""
    s = html.escape(text, quote=False)
    s = re.sub(r"`([^`]+)`", r"<code>\1</code>", s)
    s = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", s)
    s = re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", r'<a href="\2">\1</a>', s)
    return s


_CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 1200px;
       padding: 0 1em; color: #1b1f23; line-height: 1.45; }
h1, h2, h3 { border-bottom: 1px solid #e1e4e8; padding-bottom: .2em; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #d0d7de; padding: 4px 8px; }
th { background: #f6f8fa; }
td.r, th.r { text-align: right; font-variant-numeric: tabular-nums; }
td.r { white-space: nowrap; }
tr:nth-child(even) td { background: #fbfcfd; }
figure { margin: 1.5em 0; }
figure img { max-width: 100%; border: 1px solid #e1e4e8; }
figcaption { font-size: 0.9em; color: #57606a; }
code { background: #f6f8fa; padding: 0 .2em; }
""".strip()


def render_html(blocks: Sequence[Block], title: str) -> str:
    """A self-contained HTML page of a document: inline style, figures embedded as
    base64 PNG data."""
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           f"<title>{html.escape(title)}</title>", f"<style>\n{_CSS}\n</style>", "</head>", "<body>"]
    for b in blocks:
        if isinstance(b, Heading):
            out.append(f"<h{b.level}>{_inline_html(b.text)}</h{b.level}>")
        elif isinstance(b, Para):
            out.append(f"<p>{_inline_html(b.text)}</p>")
        elif isinstance(b, Table):
            out.append("<table>")
            out.append("<tr>" + "".join(f'<th class="{a}">{_inline_html(h)}</th>'
                                        for h, a in zip(b.header, b.align)) + "</tr>")
            for r in b.rows:
                out.append("<tr>" + "".join(f'<td class="{a}">{_inline_html(c)}</td>' for c, a in zip(r, b.align))
                           + "</tr>")
            out.append("</table>")
        elif isinstance(b, Figure):
            data = base64.b64encode(b.png).decode()
            out.append(f'<figure><img alt="{html.escape(b.title)}" src="data:image/png;base64,{data}">'
                       f"<figcaption><strong>{_inline_html(b.title)}.</strong> {_inline_html(b.caption)}"
                       "</figcaption></figure>")
    out += ["</body>", "</html>"]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------------


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise ReportError("figures need matplotlib: pip install 'mpsched[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({
        "figure.dpi": 100, "savefig.dpi": 100, "font.size": 9, "axes.titlesize": 10, "axes.grid": True,
        "grid.alpha": 0.3, "legend.fontsize": 8, "axes.prop_cycle": matplotlib.cycler(color=_COLORS),
    })
    return plt


_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d", "#31a354",
           "#756bb1", "#636363", "#9c9ede", "#cedb9c", "#e7ba52"]


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight", metadata={"Software": None})
    import matplotlib.pyplot as plt

    plt.close(fig)
    return buf.getvalue()


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


@dataclass
class _Context:
    """What figures and claims read: the enriched rows of a suite and its layout."""

    res: SuiteResults
    rows: pd.DataFrame
    layout: dict[str, Any]  # group -> {"scenarios": [...], "policies": [...], "params": {...}}
    rank_by: str

    def group_rows(self, group: str | None) -> pd.DataFrame:
        if group is None:
            return self.rows
        if group not in self.layout:
            raise ReportError(f"suite {self.res.name}: no group {group!r} (groups: {', '.join(self.layout)})")
        return self.rows[self.rows["group"] == group]

    def scenarios(self, group: str | None, rows: pd.DataFrame) -> list[str]:
        present = set(rows["scenario"])
        order = self.layout.get(group, {}).get("scenarios") if group else None
        if order is None:
            order = [s for g in self.layout.values() for s in g.get("scenarios", [])]
        ordered = [s for s in dict.fromkeys(order) if s in present]
        return ordered + sorted(present - set(ordered))

    def policies(self, group: str | None, rows: pd.DataFrame, wanted: Sequence[str] | None = None) -> list[str]:
        present = set(rows["policy"])
        if wanted:
            missing = [p for p in wanted if p not in present]
            if missing:
                raise ReportError(f"suite {self.res.name}: no rows of {', '.join(missing)} in group {group}")
            return list(wanted)
        order = self.layout.get(group, {}).get("policies") if group else None
        if order is None:
            order = [p for g in self.layout.values() for p in g.get("policies", [])]
        ordered = [p for p in dict.fromkeys(order) if p in present]
        return ordered + sorted(present - set(ordered))

    def param(self, scenario: str, var: str) -> Any:
        for g in self.layout.values():
            if scenario in g.get("params", {}):
                return g["params"][scenario].get(var)
        return None


def _stat(rows: pd.DataFrame, metric: str) -> tuple[float, float]:
    """Mean and CI over seeds of per-seed means."""
    if metric not in rows:
        raise ReportError(f"no metric {metric!r} in the results")
    m, h, _ = ci95(rows.groupby("seed")[metric].mean().tolist())
    return m, h


def _category_values(ctx: _Context, group: str | None, rows: pd.DataFrame, axis: str,
                     spec: dict[str, Any]) -> list[Any]:
    if axis == "policy":
        return ctx.policies(group, rows, spec.get("policies"))
    scen = ctx.scenarios(group, rows)
    if spec.get("scenarios"):
        scen = [s for s in spec["scenarios"] if s in set(scen)]
    if axis == "scenario":
        return scen
    return list(dict.fromkeys(ctx.param(s, axis) for s in scen))


def _subset(rows: pd.DataFrame, ctx: _Context, axis: str, value: Any) -> pd.DataFrame:
    if axis in ("policy", "scenario"):
        return rows[rows[axis] == value]
    keep = [ctx.param(s, axis) == value for s in rows["scenario"]]
    return rows[keep]


def _label(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def fig_line(ctx: _Context, spec: dict[str, Any]) -> bytes:
    """A metric (or several, side by side) against a grid variable, one line per policy,
    with 95 % CI bars over seeds."""
    plt = _pyplot()
    group = spec.get("group")
    rows = ctx.group_rows(group)
    x = spec["x"]
    xs = _category_values(ctx, group, rows, x, spec)
    policies = ctx.policies(group, rows, spec.get("policies"))
    ys = _as_list(spec["y"])
    numeric = all(isinstance(v, (int, float)) for v in xs)
    fig, axes = plt.subplots(1, len(ys), figsize=(5.2 * len(ys), 3.6), squeeze=False)
    for ax, metric in zip(axes[0], ys):
        f = metric_format(metric)
        for i, p in enumerate(policies):
            mine = rows[rows["policy"] == p]
            stats = [_stat(_subset(mine, ctx, x, v), metric) if not _subset(mine, ctx, x, v).empty
                     else (np.nan, np.nan) for v in xs]
            pos = xs if numeric else list(range(len(xs)))
            mean = np.array([s[0] for s in stats]) * f.scale
            half = np.nan_to_num(np.array([s[1] for s in stats]) * f.scale)
            ax.errorbar(pos, mean, yerr=half, marker="os^vD<>ph*"[i % 10], capsize=3, label=p, linewidth=1.4)
        if not numeric:
            ax.set_xticks(range(len(xs)), [_label(v) for v in xs])
        ax.set_xlabel(spec.get("xlabel", x))
        ax.set_ylabel(f.heading())
        if spec.get("ylim"):
            ax.set_ylim(*spec["ylim"])
    axes[0][-1].legend(loc="best")
    fig.tight_layout()
    return _png(fig)


def fig_bars(ctx: _Context, spec: dict[str, Any]) -> bytes:
    """Grouped bars with 95 % CI: categories on ``x`` (scenario, policy or a grid
    variable), one bar per ``hue`` value, a panel per metric and per ``facet`` value."""
    plt = _pyplot()
    group = spec.get("group")
    rows = ctx.group_rows(group)
    if spec.get("scenarios"):
        rows = rows[rows["scenario"].isin(spec["scenarios"])]
    if spec.get("policies"):
        rows = rows[rows["policy"].isin(spec["policies"])]
    x, hue, facet = spec.get("x", "scenario"), spec.get("hue", "policy"), spec.get("facet")
    ys = _as_list(spec["y"])
    facets = _category_values(ctx, group, rows, facet, spec) if facet else [None]
    panels = [(m, fv) for m in ys for fv in facets]
    cols = min(len(panels), int(spec.get("columns", 2 if len(panels) > 1 else 1)))
    nrows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(spec.get("width", 6.0) * cols, 3.4 * nrows), squeeze=False)
    for k, (metric, fv) in enumerate(panels):
        ax = axes[k // cols][k % cols]
        f = metric_format(metric)
        sub = _subset(rows, ctx, facet, fv) if facet else rows
        cats = _category_values(ctx, group, sub, x, spec)
        hues = _category_values(ctx, group, sub, hue, spec)
        width = 0.8 / max(1, len(hues))
        lowest = math.inf
        for j, h in enumerate(hues):
            mine = _subset(sub, ctx, hue, h)
            means, halves = [], []
            for c in cats:
                cell = _subset(mine, ctx, x, c)
                m, hw = _stat(cell, metric) if not cell.empty else (np.nan, np.nan)
                means.append(m * f.scale)
                halves.append(0.0 if math.isnan(hw) else hw * f.scale)
            pos = np.arange(len(cats)) - 0.4 + width * (j + 0.5)
            m = np.array(means, dtype=float)
            upper = np.array(halves, dtype=float)
            # a non-negative metric's interval is drawn no lower than 0
            lower = np.where(m >= 0, np.minimum(upper, np.nan_to_num(m)), upper)
            ax.bar(pos, m, width, yerr=[lower, upper], capsize=2, label=_label(h), color=_COLORS[j % len(_COLORS)])
            lowest = min(lowest, float(np.nanmin(m))) if np.isfinite(m).any() else lowest
        ax.set_xticks(range(len(cats)), [_label(c) for c in cats], rotation=spec.get("rotate", 0),
                      ha="right" if spec.get("rotate") else "center")
        ax.set_ylabel(f.heading())
        if fv is not None:
            ax.set_title(f"{facet} = {_label(fv)}")
        if spec.get("log"):
            ax.set_yscale("symlog")
        if lowest >= 0:
            ax.set_ylim(bottom=0)
    for k in range(len(panels), nrows * cols):
        axes[k // cols][k % cols].set_visible(False)
    axes[0][0].legend(loc=spec.get("legend", "best"), ncol=spec.get("legend_columns", 1))
    fig.tight_layout()
    return _png(fig)


def fig_cdf(ctx: _Context, spec: dict[str, Any]) -> bytes:
    """Empirical CDF of per-block completion times (stored ``blocks`` series), one line
    per policy, pooled over the chosen scenarios and seeds."""
    plt = _pyplot()
    blocks = ctx.res.series("blocks")
    if blocks.empty:
        raise ReportError(f"suite {ctx.res.name}: figure {spec.get('id')} needs stored block tables "
                          "(series: [blocks] in its group)")
    group = spec.get("group")
    rows = ctx.group_rows(group)
    blocks = blocks.merge(rows[list(KEY_COLUMNS)], on=list(KEY_COLUMNS))
    if spec.get("scenarios"):
        blocks = blocks[blocks["scenario"].isin(spec["scenarios"])]
    if spec.get("seeds") is not None:
        blocks = blocks[blocks["seed"].isin(_as_list(spec["seeds"]))]
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    for p in ctx.policies(group, rows, spec.get("policies")):
        b = blocks[(blocks["policy"] == p) & (blocks["completion_ns"] >= 0)]
        t = np.sort((b["completion_ns"] - b["arrival_ns"]).to_numpy() / _NS)
        if len(t):
            ax.step(t, np.arange(1, len(t) + 1) / len(t), where="post", label=p)
    for v in _as_list(spec.get("vlines")):
        ax.axvline(v, color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel(spec.get("xlabel", "completion time [s]"))
    ax.set_ylabel("CDF")
    if spec.get("log"):
        ax.set_xscale("log")
    ax.legend(loc="lower right")
    fig.tight_layout()
    return _png(fig)


def fig_timeseries(ctx: _Context, spec: dict[str, Any]) -> bytes:
    """One episode's series over time per policy: ``rbuf`` (receive buffer), ``delivery``
    (bytes delivered) or ``active`` (active streams, from the block table)."""
    plt = _pyplot()
    kind = spec["series"]
    source = "blocks" if kind == "active" else kind
    data = ctx.res.series(source)
    if data.empty:
        raise ReportError(f"suite {ctx.res.name}: figure {spec.get('id')} needs stored {source} series")
    group = spec.get("group")
    rows = ctx.group_rows(group)
    data = data[(data["scenario"] == spec["scenario"]) & (data["seed"] == spec.get("seed", 0))]
    scale = float(spec.get("scale", 1.0))
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for p in ctx.policies(group, rows, spec.get("policies")):
        d = data[data["policy"] == p]
        if d.empty:
            continue
        if kind == "active":
            t, y = active_streams(d)
        elif kind == "rbuf":
            t, y = d["time_ns"].to_numpy(), d["rbuf_bytes"].to_numpy()
        else:
            t, y = d["time_ns"].to_numpy(), d["delivered_bytes"].to_numpy()
        ax.step(t / _NS, y * scale, where="post", label=p, linewidth=1.0)
    if spec.get("xlim"):
        ax.set_xlim(*spec["xlim"])
    ax.set_xlabel("time [s]")
    ax.set_ylabel(spec.get("ylabel", kind))
    ax.legend(loc="best")
    fig.tight_layout()
    return _png(fig)


def fig_rank(ctx: _Context, spec: dict[str, Any]) -> bytes:
    """The ranking metric per policy (mean and 95 % CI over seeds), best on top."""
    plt = _pyplot()
    group = spec.get("group")
    rows = ctx.group_rows(group)
    metric = spec.get("y", ctx.rank_by)
    table = policy_table(rows, [metric], metric)
    f = metric_format(metric)
    fig, ax = plt.subplots(figsize=(6.4, 0.28 * len(table) + 1.0))
    means = [r.cells[metric][0] * f.scale for r in table]
    halves = [0.0 if math.isnan(r.cells[metric][1]) else r.cells[metric][1] * f.scale for r in table]
    pos = np.arange(len(table))[::-1]
    ax.barh(pos, means, xerr=halves, capsize=2, color=_COLORS[0])
    ax.set_yticks(pos, [r.policy for r in table])
    ax.set_xlabel(f.heading())
    fig.tight_layout()
    return _png(fig)


def fig_heatmap(ctx: _Context, spec: dict[str, Any]) -> bytes:
    """The ranking metric (mean over seeds) per policy and scenario."""
    plt = _pyplot()
    group = spec.get("group")
    rows = ctx.group_rows(group)
    metric = spec.get("y", ctx.rank_by)
    order = [r.policy for r in policy_table(rows, [metric], metric)]
    scen = ctx.scenarios(group, rows)
    grid = rows.groupby(["policy", "scenario"])[metric].mean().unstack().reindex(index=order, columns=scen)
    fig, ax = plt.subplots(figsize=(1.0 * len(scen) + 3.0, 0.3 * len(order) + 1.6))
    im = ax.imshow(grid.to_numpy(dtype=float), aspect="auto", cmap="viridis", vmin=spec.get("vmin", 0.0),
                   vmax=spec.get("vmax", 1.0))
    ax.set_xticks(range(len(scen)), scen, rotation=35, ha="right")
    ax.set_yticks(range(len(order)), order)
    ax.grid(False)
    for i in range(len(order)):
        for j in range(len(scen)):
            v = grid.iat[i, j]
            if not math.isnan(v):
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7,
                        color="white" if v < 0.6 * spec.get("vmax", 1.0) else "black")
    fig.colorbar(im, ax=ax, label=metric_format(metric).heading())
    fig.tight_layout()
    return _png(fig)


FIGURES: dict[str, Callable[[_Context, dict[str, Any]], bytes]] = {
    "line": fig_line, "bars": fig_bars, "cdf": fig_cdf, "timeseries": fig_timeseries, "rank": fig_rank,
    "heatmap": fig_heatmap,
}


# ---------------------------------------------------------------------------------------
# Claims
# ---------------------------------------------------------------------------------------


def _scenario_means(ctx: _Context, spec: dict[str, Any], policy: str, metric: str) -> dict[str, float]:
    rows = ctx.group_rows(spec.get("group"))
    if spec.get("scenarios"):
        rows = rows[rows["scenario"].isin(spec["scenarios"])]
    mine = rows[rows["policy"] == policy]
    if mine.empty:
        raise ReportError(f"suite {ctx.res.name}: claim {spec.get('id')}: no rows of {policy!r}")
    if metric not in mine:
        raise ReportError(f"suite {ctx.res.name}: claim {spec.get('id')}: no metric {metric!r}")
    return mine.groupby("scenario")[metric].mean().to_dict()


def _pooled(ctx: _Context, spec: dict[str, Any], policy: str, metric: str) -> float:
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


def evaluate_claim(ctx: _Context, spec: dict[str, Any]) -> tuple[str, float]:
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
        a = _scenario_means(ctx, spec, spec["a"], metric)
        b = _scenario_means(ctx, spec, spec["b"], metric)
        common = [s for s in a if s in b]
        if spec.get("relative"):
            diffs = {s: (a[s] - b[s]) / b[s] if b[s] else float("nan") for s in common}
            s = max(common, key=lambda k: -math.inf if math.isnan(diffs[k]) else diffs[k])
            return f"up to {100 * diffs[s]:+.1f} % ({s}: {_fmt_value(metric, a[s])} vs {_fmt_value(metric, b[s])})", \
                diffs[s]
        diffs = {s: a[s] - b[s] for s in common}
        s = max(common, key=lambda k: diffs[k])
        f = metric_format(metric)
        points = " points" if f.unit == "" and f.scale == 1.0 and "rate" in metric else ""
        return (f"up to {100 * diffs[s] if points else diffs[s] * f.scale:+.1f}{points or ' ' + f.unit} "
                f"({s}: {_fmt_value(metric, a[s])} vs {_fmt_value(metric, b[s])})"), diffs[s]
    if kind == "count":
        op = spec.get("op", ">")
        tests = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal}
        if op not in tests:
            raise ReportError(f"claim {spec.get('id')}: op {op!r} is not one of {', '.join(tests)}")
        hold, total = 0, 0
        cases = []
        for a_name, b_name in _pairs(spec):
            a = _scenario_means(ctx, spec, a_name, metric)
            b = _scenario_means(ctx, spec, b_name, metric)
            for s in a:
                if s in b:
                    total += 1
                    ok = bool(tests[op](a[s] + spec.get("margin", 0.0), b[s]))
                    hold += ok
                    cases.append(f"{s}: {a_name} {_fmt_value(metric, a[s], unit=False)} vs {b_name} "
                                 f"{_fmt_value(metric, b[s], unit=False)}")
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


def _expectation(spec: dict[str, Any], value: float) -> str:
    exp = spec.get("expect")
    if not exp or math.isnan(value):
        return "-"
    ops = {"<": value < exp["value"], "<=": value <= exp["value"], ">": value > exp["value"],
           ">=": value >= exp["value"], "==": value == exp["value"]}
    if exp["op"] not in ops:
        raise ReportError(f"claim {spec.get('id')}: expect.op {exp['op']!r} is not one of {', '.join(ops)}")
    return "yes" if ops[exp["op"]] else "no"


# ---------------------------------------------------------------------------------------
# Building the report
# ---------------------------------------------------------------------------------------


def _layout(res: SuiteResults) -> dict[str, Any]:
    layout = res.manifest.get("layout")
    if layout:
        return {g["name"]: g for g in layout}
    out: dict[str, Any] = {}
    for g, rows in res.rows.groupby("group", sort=True):
        out[g] = {"scenarios": sorted(rows["scenario"].unique()), "policies": sorted(rows["policy"].unique()),
                  "params": {s: json.loads(p) for s, p in rows.groupby("scenario")["scenario_params"].first().items()},
                  "title": g}
    return out


def _provenance(rows: pd.DataFrame) -> str:
    versions = ", ".join(sorted(rows["mpsched_version"].astype(str).unique())) if "mpsched_version" in rows else "?"
    revs = ", ".join(sorted(rows["git_rev"].astype(str).unique())) if "git_rev" in rows else "?"
    return f"mpsched {versions}, git {revs}"


def _policy_table_block(rows: pd.DataFrame, metrics: Sequence[str], rank_by: str) -> Table:
    table = policy_table(rows, metrics, rank_by)
    show_gap = "gap" in rows and rows["gap"].notna().any()
    cols = [c for c in dict.fromkeys([rank_by] + list(metrics)) if c == rank_by or (c in rows and rows[c].notna().any())]
    if show_gap:
        gaps = [g for g in ("gap_low", "gap") if g in rows and rows[g].notna().any()]
        table = [TableRow(r.policy, {**r.cells, **{g: ci95(rows[rows["policy"] == r.policy].groupby("seed")[g]
                                                           .mean().tolist()) for g in gaps}}, r.scenarios)
                 for r in table]
        cols += gaps
    header = ["#", "policy"] + [metric_format(c).heading() for c in cols]
    body = [[str(i + 1), r.policy] + [_cell(c, *r.cells[c][:2]) for c in cols] for i, r in enumerate(table)]
    return Table(header, body, "rl" + "r" * len(cols))


def _breakdown_block(ctx: _Context, group: str, rows: pd.DataFrame) -> Table:
    scen = ctx.scenarios(group, rows)
    order = [r.policy for r in policy_table(rows, [ctx.rank_by], ctx.rank_by)]
    grid = rows.groupby(["policy", "scenario"])[ctx.rank_by].mean()
    body = [[p] + [_cell(ctx.rank_by, grid.get((p, s), float("nan")), float("nan")) for s in scen] for p in order]
    return Table(["policy"] + scen, body, "l" + "r" * len(scen))


def _suite_blocks(res: SuiteResults, level: int, figures_dir: Path, prefix: str) -> list[Block]:
    spec = res.manifest.get("spec", {})
    rank_by = spec.get("rank_by", "weighted_on_time_rate")
    metrics = spec.get("metrics") or list(DEFAULT_METRICS)
    rows = _enriched(res, spec)
    ctx = _Context(res, rows, _layout(res), rank_by)
    title = spec.get("title", res.name) + (" (quick)" if res.manifest.get("quick") else "")
    seeds = sorted(rows["seed"].unique().tolist()) if not rows.empty else []
    blocks: list[Block] = [Heading(level, title)]
    if spec.get("description"):
        blocks.append(Para(" ".join(str(spec["description"]).split())))
    if spec.get("paper"):
        blocks.append(Para(f"Paper: {spec['paper']}"))
    blocks.append(Para(
        f"Suite `{res.name}`{' --quick' if res.manifest.get('quick') else ''}: {len(rows)} episodes, "
        f"{rows['scenario'].nunique() if len(rows) else 0} scenarios, {rows['policy'].nunique() if len(rows) else 0} "
        f"policies, seeds {_seed_text(seeds)}; {_provenance(rows)}. Tables give the mean over seeds of each "
        f"seed's mean over the group's scenarios, ± the half-width of its 95 % confidence interval (Student's t), "
        f"ranked by {metric_format(rank_by).label} (`{rank_by}`)."))
    figure_specs = [dict(f) for f in spec.get("figures", [])]
    groups = list(ctx.layout)
    common = set.intersection(*(set(ctx.group_rows(g)["policy"]) for g in groups)) if groups else set()
    same = _identical_policies(rows)
    if same:
        blocks.append(Para("Identical results in every scenario and seed: " +
                           "; ".join(" = ".join(g) for g in same) + "."))
    if len(groups) > 1 and len(common) > 1:
        blocks.append(Heading(level + 1, "All groups"))
        blocks.append(Para(f"Every scenario of the suite, for the {len(common)} policies that ran in all groups."))
        blocks.append(_policy_table_block(rows[rows["policy"].isin(common)], metrics, rank_by))
        blocks += _figures(ctx, [f for f in figure_specs if f.get("group") is None], figures_dir, prefix)
    for g in groups:
        grows = ctx.group_rows(g)
        if grows.empty:
            continue
        info = ctx.layout[g]
        blocks.append(Heading(level + 1, info.get("title", g)))
        if info.get("description"):
            blocks.append(Para(" ".join(info["description"].split())))
        blocks.append(Para("Scenarios: " + ", ".join(f"`{s}`" for s in ctx.scenarios(g, grows)) + "."))
        blocks.append(_policy_table_block(grows, metrics, rank_by))
        if grows["scenario"].nunique() > 1:
            blocks.append(Para(f"{metric_format(rank_by).label} per scenario (mean over seeds):"))
            blocks.append(_breakdown_block(ctx, g, grows))
        blocks += _figures(ctx, [f for f in figure_specs if f.get("group") == g], figures_dir, prefix)
    if len(groups) <= 1 or len(common) <= 1:
        blocks += _figures(ctx, [f for f in figure_specs if f.get("group") is None], figures_dir, prefix)
    blocks += _optimum_interval_blocks(rows, rank_by, level + 1)
    claims = spec.get("claims") or []
    if claims:
        blocks.append(Heading(level + 1, "The paper's claims against ours"))
        body = []
        for c in claims:
            text, value = evaluate_claim(ctx, c)
            body.append([c.get("figure", ""), c["paper"], text, _expectation(c, value)])
        blocks.append(Table(["where", "paper", "ours", "agrees"], body, "llll"))
        notes = [c for c in claims if c.get("note")]
        for c in notes:
            blocks.append(Para(f"{c.get('figure', '')}: {' '.join(str(c['note']).split())}"))
    return blocks


def _optimum_interval_blocks(rows: pd.DataFrame, score: str, level: int) -> list[Block]:
    """How well the optimum is known: the interval from the best achieved schedule to the
    upper bound per scenario, flagging those wider than :data:`OPTIMUM_INTERVAL_FLAG`."""
    optimum = _optimum_rows(rows)
    if optimum.empty:
        return []
    optimum = optimum.assign(interval=1.0 - optimum[score] / optimum["upper_bound"].where(optimum["upper_bound"] > 0))
    blocks: list[Block] = [Heading(level, "How well the optimum is known"), Para(
        "The `optimum` row is the best schedule achieved in the simulator (the conservative slot model's "
        "schedule replayed, every registered baseline and the suite's other policies), so it is at least every "
        "policy; the relaxed model's upper bound is above every policy. The true optimum lies between the two, "
        "so each gap is an interval: *gap to best achieved* to *gap to upper bound*.")]
    flagged = []
    for scenario, mine in optimum.groupby("scenario", sort=True):
        widest = mine.loc[mine["interval"].idxmax()] if mine["interval"].notna().any() else None
        if widest is not None and widest["interval"] > OPTIMUM_INTERVAL_FLAG:
            sources = mine["optimum_source"].value_counts() if "optimum_source" in mine else pd.Series(dtype=int)
            flagged.append([f"`{scenario}`", f"{mine[score].mean():.3f}", f"{mine['upper_bound'].mean():.3f}",
                            f"{widest['interval']:.3f} (seed {int(widest['seed'])})",
                            ", ".join(f"{k} ({v})" for k, v in sources.items()) or "-"])
    widest_all = optimum.loc[optimum["interval"].idxmax()] if optimum["interval"].notna().any() else None
    if not flagged:
        detail = (f" (widest {widest_all['interval']:.3f}: `{widest_all['scenario']}`, seed {int(widest_all['seed'])})"
                  if widest_all is not None else "")
        blocks.append(Para(f"In every scenario and seed the best achieved schedule is within "
                           f"{OPTIMUM_INTERVAL_FLAG:.0%} of the upper bound{detail}."))
        return blocks
    blocks.append(Para(f"**Flagged**: {len(flagged)} scenarios where, in some seed, the best achieved schedule is "
                       f"more than {OPTIMUM_INTERVAL_FLAG:.0%} below the upper bound; there the optimum (and every "
                       "gap) is known only within the interval. Means over seeds; *source*: which schedule the "
                       "`optimum` row is, in how many seeds."))
    blocks.append(Table(["scenario", "best achieved", "upper bound", "widest interval", "source"], flagged, "lrrrl"))
    return blocks


def _identical_policies(rows: pd.DataFrame) -> list[list[str]]:
    """Policies whose rows agree in every metric on every (scenario, seed): aliases and
    schedulers that make the same decisions in these scenarios."""
    skip = set(KEY_COLUMNS) | set(PROVENANCE_COLUMNS) | set(TIMING_COLUMNS) | {"group"}
    metrics = [c for c in rows.columns if c not in skip and pd.api.types.is_numeric_dtype(rows[c])]
    signature: dict[str, list[str]] = {}
    for p, mine in rows.groupby("policy", sort=True):
        table = mine.sort_values(["scenario", "seed"])[["scenario", "seed"] + metrics]
        key = pd.util.hash_pandas_object(table.round(12).fillna(-1.0), index=False).values.tobytes()
        signature.setdefault(key.hex(), []).append(str(p))
    return sorted(sorted(g) for g in signature.values() if len(g) > 1)


def _seed_text(seeds: Sequence[int]) -> str:
    if not seeds:
        return "none"
    if seeds == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 2:
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(str(s) for s in seeds)


def _figures(ctx: _Context, specs: Sequence[dict[str, Any]], figures_dir: Path, prefix: str) -> list[Block]:
    out: list[Block] = []
    for spec in specs:
        kind = spec.get("kind")
        if kind not in FIGURES:
            raise ReportError(f"suite {ctx.res.name}: figure {spec.get('id')}: kind {kind!r} is not one of "
                              + ", ".join(FIGURES))
        fid = spec.get("id") or f"figure-{len(out)}"
        png = FIGURES[kind](ctx, spec)
        name = f"{prefix}{fid}.png"
        (figures_dir / name).write_bytes(png)
        caption = " ".join(str(spec.get("caption", "")).split())
        if spec.get("paper"):
            caption = (caption + " " if caption else "") + "Paper: " + " ".join(str(spec["paper"]).split())
        out.append(Figure(f"figures/{name}", spec.get("title", fid), caption, png))
    return out


def build_report(results: str | Path | Sequence[SuiteResults], out: str | Path, title: str | None = None) -> Path:
    """Write ``README.md``, ``index.html`` and ``figures/`` for stored results.

    Parameters
    ----------
    results : path or list of SuiteResults
        A suite's results folder, a folder of several, or loaded results.
    out : path
        The report folder (created; its ``figures/`` is rewritten).
    title : str, optional
        The page title (default: the suite's title, or "mpsched results").

    Returns
    -------
    Path
        The Markdown file.
    """
    loaded = load_results(results) if isinstance(results, (str, Path)) else list(results)
    if not loaded:
        raise ReportError("no results to report")
    out_dir = Path(out)
    figures_dir = out_dir / "figures"
    figures_dir.mkdir(parents=True, exist_ok=True)
    for old in figures_dir.glob("*.png"):
        old.unlink()
    blocks: list[Block] = []
    if len(loaded) == 1:
        blocks += _suite_blocks(loaded[0], 1, figures_dir, "")
        if title:
            blocks[0] = Heading(1, title)
    else:
        blocks.append(Heading(1, title or "mpsched results"))
        for res in loaded:
            blocks += _suite_blocks(res, 2, figures_dir, f"{res.name}-")
    page_title = blocks[0].text if isinstance(blocks[0], Heading) else "mpsched results"
    md = out_dir / "README.md"
    md.write_text(render_markdown(blocks))
    (out_dir / "index.html").write_text(render_html(blocks, page_title))
    return md


# ---------------------------------------------------------------------------------------
# Replay validation
# ---------------------------------------------------------------------------------------


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, (float, np.floating)) and math.isnan(v))


def _same(a: Any, b: Any) -> bool:
    """Equal values, NaN equal to NaN (a stored row against a re-run)."""
    if _missing(a) or _missing(b):
        return _missing(a) and _missing(b)
    return bool(a == b)


def validate(results: str | Path | Sequence[SuiteResults], sample: int = 20, seed: int = 0) -> list[str]:
    """Check every ``optimum`` row against the other policies (:func:`optimum_problems`),
    then re-run a random sample of stored rows and compare every metric.

    Parameters
    ----------
    results : path or list of SuiteResults
    sample : int
        Rows per suite (all of them when fewer are stored).
    seed : int
        Seed of the sample's draw.

    Returns
    -------
    list of str
        One line per optimum row below a policy or above its bound and per row that
        differs (or cannot be re-run); empty when all agree.
    """
    loaded = load_results(results) if isinstance(results, (str, Path)) else list(results)
    problems: list[str] = []
    skip = set(TIMING_COLUMNS) | set(PROVENANCE_COLUMNS) | set(KEY_COLUMNS) | {"group"}
    for res in loaded:
        rows = res.rows
        if rows.empty:
            continue
        problems += optimum_problems(rows)
        try:
            suite = res.suite()
        except MpschedError as exc:
            problems.append(f"{res.name}: the suite cannot be rebuilt: {exc}")
            continue
        by_key = {e.key: e for e in suite.episodes()}
        rng = np.random.default_rng(seed)
        picks = sorted(rng.choice(len(rows), size=min(sample, len(rows)), replace=False).tolist())
        episodes = []
        for i in picks:
            key = tuple(rows.loc[i, list(KEY_COLUMNS)].tolist())
            key = (key[0], key[1], key[2], int(key[3]))
            e = by_key.get(key)
            if e is None:
                problems.append(f"{key}: no longer in the suite")
            elif e.case.hash != rows.loc[i, "scenario_hash"]:
                problems.append(f"{key}: the scenario changed (hash {rows.loc[i, 'scenario_hash']} stored, "
                                f"{e.case.hash} now)")
            else:
                episodes.append((i, e))
        result = run_task(Task(tuple(e for _, e in episodes)), Provenance.current())
        fresh = {tuple(r[c] for c in KEY_COLUMNS): r for r in result.rows}
        for key, why in result.failures:
            problems.append(f"{key}: re-running failed: {why}")
        for i, e in episodes:
            again = fresh.get(e.key)
            if again is None:
                continue
            stored = rows.loc[i]
            diff = [c for c in again if c not in skip and c in stored.index and not _same(stored[c], again[c])]
            if diff:
                c = diff[0]
                problems.append(f"{e.key}: {len(diff)} metrics differ, e.g. {c}: stored {stored[c]!r}, "
                                f"re-run {again[c]!r}")
    return problems

