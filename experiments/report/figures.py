"""The figures a suite can ask for (``line``, ``bars``, ``cdf``, ``timeseries``,
``rank``, ``heatmap``), each rendered to PNG bytes with matplotlib."""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..sweep import (
    KEY_COLUMNS,
)
from .stats import (
    NS_PER_S,
    ReportContext,
    ReportError,
    active_streams,
    as_list,
    category_values,
    metric_format,
    policy_table,
    seed_stat,
    subset_rows,
    value_label,
)


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise ReportError("figures need matplotlib: pip install 'mpsched[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from cycler import cycler

    plt.rcParams.update({
        "figure.dpi": 100, "savefig.dpi": 100, "font.size": 9, "axes.titlesize": 10, "axes.grid": True,
        "grid.alpha": 0.3, "legend.fontsize": 8, "axes.prop_cycle": cycler(color=_COLORS),
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



def fig_line(ctx: ReportContext, spec: dict[str, Any]) -> bytes:
    """A metric (or several, side by side) against a grid variable, one line per policy,
    with 95 % CI bars over seeds."""
    plt = _pyplot()
    group = spec.get("group")
    rows = ctx.group_rows(group)
    x = spec["x"]
    xs = category_values(ctx, group, rows, x, spec)
    policies = ctx.policies(group, rows, spec.get("policies"))
    ys = as_list(spec["y"])
    numeric = all(isinstance(v, (int, float)) for v in xs)
    fig, axes = plt.subplots(1, len(ys), figsize=(5.2 * len(ys), 3.6), squeeze=False)
    for ax, metric in zip(axes[0], ys):
        f = metric_format(metric)
        for i, p in enumerate(policies):
            mine = rows[rows["policy"] == p]
            stats = [seed_stat(subset_rows(mine, ctx, x, v), metric) if not subset_rows(mine, ctx, x, v).empty
                     else (np.nan, np.nan) for v in xs]
            pos = xs if numeric else list(range(len(xs)))
            mean = np.array([s[0] for s in stats]) * f.scale
            half = np.nan_to_num(np.array([s[1] for s in stats]) * f.scale)
            ax.errorbar(pos, mean, yerr=half, marker="os^vD<>ph*"[i % 10], capsize=3, label=p, linewidth=1.4)
        if not numeric:
            ax.set_xticks(range(len(xs)), [value_label(v) for v in xs])
        ax.set_xlabel(spec.get("xlabel", x))
        ax.set_ylabel(f.heading())
        if spec.get("ylim"):
            ax.set_ylim(*spec["ylim"])
    axes[0][-1].legend(loc="best")
    fig.tight_layout()
    return _png(fig)


def fig_bars(ctx: ReportContext, spec: dict[str, Any]) -> bytes:
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
    ys = as_list(spec["y"])
    facets = category_values(ctx, group, rows, facet, spec) if facet else [None]
    panels = [(m, fv) for m in ys for fv in facets]
    cols = min(len(panels), int(spec.get("columns", 2 if len(panels) > 1 else 1)))
    nrows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(spec.get("width", 6.0) * cols, 3.4 * nrows), squeeze=False)
    for k, (metric, fv) in enumerate(panels):
        ax = axes[k // cols][k % cols]
        f = metric_format(metric)
        sub = subset_rows(rows, ctx, facet, fv) if facet else rows
        cats = category_values(ctx, group, sub, x, spec)
        hues = category_values(ctx, group, sub, hue, spec)
        width = 0.8 / max(1, len(hues))
        lowest = math.inf
        for j, h in enumerate(hues):
            mine = subset_rows(sub, ctx, hue, h)
            means, halves = [], []
            for c in cats:
                cell = subset_rows(mine, ctx, x, c)
                m, hw = seed_stat(cell, metric) if not cell.empty else (np.nan, np.nan)
                means.append(m * f.scale)
                halves.append(0.0 if math.isnan(hw) else hw * f.scale)
            pos = np.arange(len(cats)) - 0.4 + width * (j + 0.5)
            heights = np.array(means, dtype=float)
            upper = np.array(halves, dtype=float)
            # a non-negative metric's interval is drawn no lower than 0
            lower = np.where(heights >= 0, np.minimum(upper, np.nan_to_num(heights)), upper)
            ax.bar(pos, heights, width, yerr=[lower, upper], capsize=2, label=value_label(h),
                   color=_COLORS[j % len(_COLORS)])
            lowest = min(lowest, float(np.nanmin(heights))) if np.isfinite(heights).any() else lowest
        ax.set_xticks(range(len(cats)), [value_label(c) for c in cats], rotation=spec.get("rotate", 0),
                      ha="right" if spec.get("rotate") else "center")
        ax.set_ylabel(f.heading())
        if fv is not None:
            ax.set_title(f"{facet} = {value_label(fv)}")
        if spec.get("log"):
            ax.set_yscale("symlog")
        if lowest >= 0:
            ax.set_ylim(bottom=0)
    for k in range(len(panels), nrows * cols):
        axes[k // cols][k % cols].set_visible(False)
    axes[0][0].legend(loc=spec.get("legend", "best"), ncol=spec.get("legend_columns", 1))
    fig.tight_layout()
    return _png(fig)


def fig_cdf(ctx: ReportContext, spec: dict[str, Any]) -> bytes:
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
        blocks = blocks[blocks["seed"].isin(as_list(spec["seeds"]))]
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    for p in ctx.policies(group, rows, spec.get("policies")):
        b = blocks[(blocks["policy"] == p) & (blocks["completion_ns"] >= 0)]
        t = np.sort((b["completion_ns"] - b["arrival_ns"]).to_numpy() / NS_PER_S)
        if len(t):
            ax.step(t, np.arange(1, len(t) + 1) / len(t), where="post", label=p)
    for v in as_list(spec.get("vlines")):
        ax.axvline(v, color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel(spec.get("xlabel", "completion time [s]"))
    ax.set_ylabel("CDF")
    if spec.get("log"):
        ax.set_xscale("log")
    ax.legend(loc="lower right")
    fig.tight_layout()
    return _png(fig)


def fig_timeseries(ctx: ReportContext, spec: dict[str, Any]) -> bytes:
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
        ax.step(t / NS_PER_S, y * scale, where="post", label=p, linewidth=1.0)
    if spec.get("xlim"):
        ax.set_xlim(*spec["xlim"])
    ax.set_xlabel("time [s]")
    ax.set_ylabel(spec.get("ylabel", kind))
    ax.legend(loc="best")
    fig.tight_layout()
    return _png(fig)


def fig_rank(ctx: ReportContext, spec: dict[str, Any]) -> bytes:
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


def fig_heatmap(ctx: ReportContext, spec: dict[str, Any]) -> bytes:
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


FIGURES: dict[str, Callable[[ReportContext, dict[str, Any]], bytes]] = {
    "line": fig_line, "bars": fig_bars, "cdf": fig_cdf, "timeseries": fig_timeseries, "rank": fig_rank,
    "heatmap": fig_heatmap,
}
