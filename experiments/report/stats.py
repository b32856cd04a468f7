"""The numbers of a report: metric formats, confidence intervals, gaps to the optimum,
policy tables and the statistics derived from stored series; :class:`ReportContext`, the
enriched rows of one suite that figures and claims read."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...envs.errors import MpschedError
from ..sweep import (
    KEY_COLUMNS,
    SuiteResults,
)

NS_PER_S = 1e9


class ReportError(MpschedError):
    """A figure or claim of a suite refers to something the results do not hold."""


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


def optimum_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows of the optimum: those that store an upper bound."""
    if "upper_bound" not in rows:
        return rows.iloc[:0]
    return rows[rows["upper_bound"].notna()]


def gap_to_best_achieved(rows: pd.DataFrame, score: str) -> pd.Series:
    """``1 - score / best_achieved`` per row, where the optimum's row of the row's (suite,
    scenario, seed) is stored: the lower end of the gap interval, whose upper end is
    :func:`gap_to_bound` (:mod:`mpsched.solvers.gaps`). NaN elsewhere and for 0."""
    optimum = optimum_rows(rows)
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
        mine = optimum_rows(episode)
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
    present = [m for m in wanted if m in rows]
    out = []
    for p in names:
        mine = rows.loc[rows["policy"] == p, ["seed", "scenario", *present]]  # only the columns it reads
        if mine.empty:
            continue
        per_seed = mine.groupby("seed")[present].mean()
        cells = {m: ci95(per_seed[m].tolist()) if m in present else (float("nan"), float("nan"), 0)
                 for m in wanted}
        out.append(TableRow(p, cells, int(mine["scenario"].nunique())))
    better = metric_format(rank_by).higher_is_better

    def order(r: TableRow) -> tuple[Any, ...]:
        v = r.cells[rank_by][0]
        missing = math.isnan(v)
        return (missing, 0.0 if missing else (-v if better else v), r.policy)

    return sorted(out, key=order)


def format_cell(key: str, mean: float, half: float) -> str:
    f = metric_format(key)
    if math.isnan(mean):
        return "-"
    text = f.fmt.format(mean * f.scale)
    if not math.isnan(half):
        text += " ± " + f.fmt.format(half * f.scale)
    return text




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
        ct = (done["completion_ns"] - done["arrival_ns"]).to_numpy() / NS_PER_S
        small = done[done["size_bytes"] <= b["size_bytes"].median()]
        small_ct = (small["completion_ns"] - small["arrival_ns"]).to_numpy() / NS_PER_S
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


def enriched_rows(res: SuiteResults, spec: dict[str, Any]) -> pd.DataFrame:
    """Rows with the gap, block statistics (where block tables are stored), the total
    throughput and the suite's derived metrics."""
    rows = res.rows.copy(deep=False)  # new columns only: the stored rows stay as they are
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



def as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


@dataclass
class ReportContext:
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
        present = set(rows["scenario"].unique())
        order = self.layout.get(group, {}).get("scenarios") if group else None
        if order is None:
            order = [s for g in self.layout.values() for s in g.get("scenarios", [])]
        ordered = [s for s in dict.fromkeys(order) if s in present]
        return ordered + sorted(present - set(ordered))

    def policies(self, group: str | None, rows: pd.DataFrame, wanted: Sequence[str] | None = None) -> list[str]:
        present = set(rows["policy"].unique())
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


def seed_stat(rows: pd.DataFrame, metric: str) -> tuple[float, float]:
    """Mean and CI over seeds of per-seed means."""
    if metric not in rows:
        raise ReportError(f"no metric {metric!r} in the results")
    m, h, _ = ci95(rows.groupby("seed")[metric].mean().tolist())
    return m, h


def category_values(ctx: ReportContext, group: str | None, rows: pd.DataFrame, axis: str,
                     spec: dict[str, Any]) -> list[Any]:
    if axis == "policy":
        return ctx.policies(group, rows, spec.get("policies"))
    scen = ctx.scenarios(group, rows)
    if spec.get("scenarios"):
        scen = [s for s in spec["scenarios"] if s in set(scen)]
    if axis == "scenario":
        return scen
    return list(dict.fromkeys(ctx.param(s, axis) for s in scen))


def subset_rows(rows: pd.DataFrame, ctx: ReportContext, axis: str, value: Any) -> pd.DataFrame:
    if axis in ("policy", "scenario"):
        return rows[rows[axis] == value]
    return rows[rows["scenario"].isin([s for s in rows["scenario"].unique() if ctx.param(s, axis) == value])]


def value_label(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)
