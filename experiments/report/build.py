"""Building a report: :func:`build_report` assembles the document of one or more suites'
results and writes ``README.md``, ``figures/*.png`` and ``index.html``."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...envs.errors import MpschedError
from ..suite import DEFAULT_METRICS, FIGURE_ID_RULE, VARIANT_MARK, figure_id_ok
from ..sweep import (
    KEY_COLUMNS,
    PROVENANCE_COLUMNS,
    TIMING_COLUMNS,
    SuiteResults,
    load_results,
)
from .claims import (
    ClaimOutcome,
    check_text,
    evaluate_claim,
    paper_number_text,
    scoreboard,
    tolerance_text,
    verdict,
)
from .document import Block, Figure, Heading, Para, Table, render_html, render_markdown
from .figures import FIGURES
from .stats import (
    OPTIMUM_INTERVAL_FLAG,
    ReportContext,
    ReportError,
    TableRow,
    ci95,
    enriched_rows,
    format_cell,
    metric_format,
    optimum_rows,
    policy_table,
)

UNREPORTED_COLUMNS = ("scenario_hash", "policy_name", "policy_spec")
"""Stored columns a report does not read (each row's scenario hash and policy JSON)."""


def suite_layout(res: SuiteResults) -> dict[str, Any]:
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
    cols = [c for c in dict.fromkeys([rank_by, *metrics]) if c == rank_by or (c in rows and rows[c].notna().any())]
    if show_gap:
        gaps = [g for g in ("gap_low", "gap") if g in rows and rows[g].notna().any()]
        table = [TableRow(r.policy, {**r.cells, **{g: ci95(rows[rows["policy"] == r.policy].groupby("seed")[g]
                                                           .mean().tolist()) for g in gaps}}, r.scenarios)
                 for r in table]
        cols += gaps
    header = ["#", "policy"] + [metric_format(c).heading() for c in cols]
    body = [[str(i + 1), r.policy] + [format_cell(c, *r.cells[c][:2]) for c in cols] for i, r in enumerate(table)]
    return Table(header, body, "rl" + "r" * len(cols))


def _breakdown_block(ctx: ReportContext, group: str, rows: pd.DataFrame) -> Table:
    scen = ctx.scenarios(group, rows)
    order = [r.policy for r in policy_table(rows, [ctx.rank_by], ctx.rank_by)]
    grid = rows.groupby(["policy", "scenario"])[ctx.rank_by].mean()
    body = [[p] + [format_cell(ctx.rank_by, grid.get((p, s), float("nan")), float("nan")) for s in scen] for p in order]
    return Table(["policy"] + scen, body, "l" + "r" * len(scen))


def _suite_blocks(res: SuiteResults, level: int, figures_dir: Path, prefix: str) -> list[Block]:
    spec = res.manifest.get("spec", {})
    rank_by = spec.get("rank_by", "weighted_on_time_rate")
    metrics = spec.get("metrics") or list(DEFAULT_METRICS)
    all_rows = enriched_rows(res, spec)
    layout = suite_layout(res)
    own = [g for g, info in layout.items() if not info.get("variant_of")]
    rows = all_rows[all_rows["group"].isin(own)] if len(own) < len(layout) else all_rows
    ctx = ReportContext(res, rows, {g: layout[g] for g in own}, rank_by)
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
        f"ranked by {metric_format(rank_by).label} (`{rank_by}`)." +
        (f" Besides them, {len(all_rows) - len(rows)} episodes of sensitivity variants (last section)."
         if len(all_rows) > len(rows) else "")))
    claims = [dict(c) for c in spec.get("claims") or []]
    outcomes = [evaluate_claim(ctx, c) for c in claims]
    verdicts = [verdict(c, o) for c, o in zip(claims, outcomes)]
    if claims:
        counts = scoreboard(verdicts)
        blocks.append(Para(f"**The paper's claims** ({len(claims)}, table at the end): " +
                           ", ".join(f"{n} {v}" for v, n in counts.items()) + "."))
    blocks += missing_episode_blocks(res)
    figure_specs = [dict(f) for f in spec.get("figures", [])]
    groups = list(ctx.layout)
    common = set.intersection(*(set(ctx.group_rows(g)["policy"].unique()) for g in groups)) if groups else set()
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
    if claims:
        blocks.append(Heading(level + 1, "The paper's claims against ours"))
        blocks.append(Para(
            "Each claim as the paper states it; the check its ordering or threshold puts on our number; the "
            "paper's number where it gives one, on the scale of ours, and the tolerance around it; ours; and the "
            "verdict: *reproduced* (the ordering holds in every case it must and the number is within "
            "tolerance), *partly* (the ordering holds but the number is outside tolerance, or it holds in only "
            "some cases), *not reproduced*, *not attempted*. Orderings are strict: a tie is no difference."))
        body = [[c.get("figure", ""), c["paper"], check_text(c), paper_number_text(c), tolerance_text(c), o.text, v]
                for c, o, v in zip(claims, outcomes, verdicts)]
        blocks.append(Table(["where", "paper", "check", "paper's number", "tolerance", "ours", "verdict"], body,
                            "lllrrll"))
        notes = [c for c in claims if c.get("note")]
        for c in notes:
            blocks.append(Para(f"{c.get('figure', '')}: {' '.join(str(c['note']).split())}"))
        blocks += _sensitivity_blocks(res, all_rows, layout, rank_by, claims, outcomes, verdicts, metrics, level + 1)
    return blocks


def _variant_contexts(res: SuiteResults, rows: pd.DataFrame, layout: dict[str, Any],
                      rank_by: str) -> dict[str, tuple[str, ReportContext]]:
    """Per sensitivity variant: its title and a context whose rows are the variant's,
    named as the groups and scenarios they vary, so that a claim evaluates on them as is."""
    out: dict[str, tuple[str, ReportContext]] = {}
    for variant in dict.fromkeys(info["variant"] for info in layout.values() if info.get("variant_of")):
        varied = {g: info["variant_of"] for g, info in layout.items() if info.get("variant") == variant}
        mine = rows[rows["group"].isin(varied)].copy()
        suffix = f"{VARIANT_MARK}{variant}"
        mine["group"] = mine["group"].map(varied)
        mine["scenario"] = mine["scenario"].str.removesuffix(suffix)
        base_layout = {base: layout[base] for base in varied.values()}
        title = str(_variant_entry(res, variant).get("title", variant))
        out[variant] = (title, ReportContext(res, mine, base_layout, rank_by))
    return out


def _sensitivity_blocks(res: SuiteResults, rows: pd.DataFrame, layout: dict[str, Any], rank_by: str,
                        claims: list[dict[str, Any]], outcomes: list[ClaimOutcome], verdicts: list[str],
                        metrics: Sequence[str], level: int) -> list[Block]:
    """Each claim re-evaluated on every sensitivity variant that covers its group, what
    drives each difference (the claims' ``explanation``), then each variant's policy table."""
    contexts = _variant_contexts(res, rows, layout, rank_by)
    explained = [c for c in claims if c.get("explanation")]
    if not contexts and not explained:
        return []
    blocks: list[Block] = [Heading(level, "What drives the differences")]
    if contexts:
        own = [g for g, info in layout.items() if not info.get("variant_of")]
        lines = []
        for variant, (title, vctx) in contexts.items():
            sets = _variant_entry(res, variant).get("set") or {}
            changes = "; ".join(f"`{k}` = `{json.dumps(v)}`" for k, v in sets.items())
            lines.append(f"*{title}* (`{variant}`): {changes}, in {', '.join(vctx.layout)}")
        blocks.append(Para("The claims evaluated again with one model choice changed (sensitivity variants, "
                           "same policies, " + "; ".join(lines) + "). A cell is ours and the verdict there; "
                           "'-' where the variant does not cover the claim's group."))
        header = ["where", "paper", "as reported"] + [title for title, _ in contexts.values()]
        body = []
        for c, o, v in zip(claims, outcomes, verdicts):
            if c.get("attempted", True) is False or c.get("kind") == "test":
                continue
            cells = [c.get("figure", ""), c["paper"], f"{_short(o)} ({v})"]
            for _, vctx in contexts.values():
                group = c.get("group")
                if (group is None and set(vctx.layout) != set(own)) or (group is not None and group not in vctx.layout):
                    cells.append("-")
                    continue
                try:
                    vo = evaluate_claim(vctx, c)
                except ReportError as exc:
                    cells.append(f"- ({exc})")
                    continue
                cells.append(f"{_short(vo)} ({verdict(c, vo)})")
            body.append(cells)
        blocks.append(Table(header, body, "ll" + "l" * (len(header) - 2)))
    for c in explained:
        blocks.append(Para(f"**{c.get('figure', '')}**, {c['paper']}: {' '.join(str(c['explanation']).split())}"))
    for variant, (title, vctx) in contexts.items():
        description = _variant_entry(res, variant).get("description")
        blocks.append(Heading(level + 1, f"Variant: {title}"))
        blocks.append(Para((" ".join(str(description).split()) + " " if description else "") +
                           f"Groups {', '.join(vctx.layout)}, pooled as in the tables above."))
        blocks.append(_policy_table_block(vctx.rows, metrics, rank_by))
    return blocks


def _short(outcome: ClaimOutcome) -> str:
    """Our side of a claim without the per-case detail (the claims table has it)."""
    if outcome.total:
        ties = f", {outcome.ties} tie{'s' if outcome.ties != 1 else ''}" if outcome.ties else ""
        return f"{outcome.hold} of {outcome.total}{ties}"
    return outcome.text


def _variant_entry(res: SuiteResults, variant: str) -> dict[str, Any]:
    """A sensitivity variant's entry as the suite declared it (empty if not found)."""
    for entry in res.manifest.get("spec", {}).get("sensitivity") or []:
        if entry.get("name") == variant:
            return dict(entry)
    return {}


def _optimum_interval_blocks(rows: pd.DataFrame, score: str, level: int) -> list[Block]:
    """How well the optimum is known: the interval from the best achieved schedule to the
    upper bound per scenario, flagging those wider than :data:`OPTIMUM_INTERVAL_FLAG`."""
    optimum = optimum_rows(rows)
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
    scenario_codes = rows["scenario"].factorize(sort=True)[0]
    seeds = rows["seed"].to_numpy()
    for p, index in rows.groupby("policy", sort=True).indices.items():
        mine = index[np.lexsort((seeds[index], scenario_codes[index]))]
        digest = hashlib.sha256()
        for c in ["scenario", "seed", *metrics]:  # one column at a time: no copy of the policy's rows
            column = rows[c].take(mine)
            if c in metrics:
                column = column.round(12).fillna(-1.0)
            digest.update(pd.util.hash_pandas_object(column, index=False).to_numpy().tobytes())
        signature.setdefault(digest.hexdigest(), []).append(str(p))
    return sorted(sorted(g) for g in signature.values() if len(g) > 1)


def _seed_text(seeds: Sequence[int]) -> str:
    if not seeds:
        return "none"
    if seeds == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 2:
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(str(s) for s in seeds)


def _seeds_by_scenario_and_policy(rows: pd.DataFrame) -> dict[tuple[str, str], np.ndarray]:
    """The stored seeds of each (scenario, policy), from integer codes of the two columns
    (a group-by on the strings holds several times the memory)."""
    scenario, scenarios = rows["scenario"].factorize()
    policy, policies = rows["policy"].factorize()
    width = max(1, len(policies))
    pair = scenario.astype(np.int64) * width + policy
    order = np.argsort(pair, kind="stable")
    pair, seeds = pair[order], rows["seed"].to_numpy()[order]
    starts = np.flatnonzero(np.r_[True, pair[1:] != pair[:-1]]) if len(pair) else np.zeros(0, dtype=np.int64)
    return {(str(scenarios[pair[a] // width]), str(policies[pair[a] % width])): seeds[a:b]
            for a, b in zip(starts, [*starts[1:], len(pair)])}


def missing_episode_blocks(res: SuiteResults) -> list[Block]:
    """What an interrupted sweep left out: the suite's episodes with no stored row, counted
    per scenario and policy (nothing when every episode is stored)."""
    try:
        suite = res.suite()
    except MpschedError:
        return [Para("**The suite cannot be rebuilt from the stored manifest**, so whether episodes are "
                     "missing is not known.")]
    stored = _seeds_by_scenario_and_policy(res.rows)
    missing: dict[tuple[str, str], list[int]] = {}
    planned = 0
    for g in suite.groups:  # the episodes of Suite.episodes(), without building them
        planned += len(g.cases) * len(g.policies) * len(g.seeds)
        seeds = np.asarray(g.seeds, dtype=np.int64)
        for c in g.cases:
            for p in g.policies:
                have = stored.get((c.name, p.label))
                lost = seeds if have is None else seeds[~np.isin(seeds, have)]
                if len(lost):
                    missing.setdefault((c.name, p.label), []).extend(lost.tolist())
    if not missing:
        return []
    count = sum(len(v) for v in missing.values())
    table = Table(["scenario", "policy", "missing seeds"],
                  [[sc, pol, _seed_text(sorted(seeds))] for (sc, pol), seeds in sorted(missing.items())], "llr")
    return [Para(f"**Incomplete results: {count} of {planned} episodes of the suite are not stored** (an "
                 "interrupted or failed sweep); every table, figure and claim below is computed without them. "
                 "Resuming the sweep (`mpsched sweep SUITE --out RESULTS --resume`) runs only these."), table]


def _figures(ctx: ReportContext, specs: Sequence[dict[str, Any]], figures_dir: Path, prefix: str) -> list[Block]:
    out: list[Block] = []
    for spec in specs:
        kind = spec.get("kind")
        if kind not in FIGURES:
            raise ReportError(f"suite {ctx.res.name}: figure {spec.get('id')}: kind {kind!r} is not one of "
                              + ", ".join(FIGURES))
        fid = spec.get("id") or f"figure-{len(out)}"
        if not figure_id_ok(fid):
            raise ReportError(f"suite {ctx.res.name}: figure id {str(fid)[:100]!r}: expected {FIGURE_ID_RULE}")
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
    loaded = load_results(results, skip=UNREPORTED_COLUMNS) if isinstance(results, (str, Path)) else list(results)
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
