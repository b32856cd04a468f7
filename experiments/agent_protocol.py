"""The benchmark protocol of learned schedulers: budgets per tier, several training seeds,
learning curves and scores per held-out family with 95 % confidence intervals over the
training seeds.

A suite with a split (the ``agents`` suite, :mod:`mpsched.experiments.suite`) gives the
episodes: ``train`` to learn from, ``validation`` for the evaluations during training
(the learning curve), ``test`` to score once. Each test group is a *family*: the
``agents`` suite holds one family held out in each dimension (workload, path count,
bandwidth source, RTT range) beside the DAMS paper's test scenarios.

- A *tier* is a budget of decisions taken in the environment (:data:`TIERS`): the
  expert decisions recorded for cloning plus the environment steps of reinforcement
  learning; with an expert, half of each (:func:`tier_budget`).
- ``mpsched train --seeds 0 1 2`` trains one model per seed (``OUT/seed-S``) and
  :func:`learning_curves` gathers their validation scores by decisions taken.
- ``mpsched evaluate --model OUT`` scores each seed's model on the test split beside the
  heuristics; :func:`family_table` gives per family the model's mean and 95 % CI over
  the training seeds (each seed's score is its mean over the family's episodes) against
  each heuristic's mean over the same episodes; :func:`write_report` writes both as a
  report (README.md and a figure).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..agents.model import META_FILE, read_meta
from ..envs.errors import MpschedError
from ..envs.results import EpisodeResult
from .report.stats import ci95

__all__ = ["TIERS", "HEURISTICS", "tier_budget", "seed_dirs", "learning_curves", "write_curves", "family_table",
           "format_mean_ci", "write_report"]

TIERS: dict[str, int] = {"100k": 100_000, "1m": 1_000_000}
"""Decisions taken in the environment per tier."""

HEURISTICS: tuple[str, ...] = ("dams", "dams-c", "dams-robust", "srpt-ecf", "edf", "dtp")
"""The heuristics a learned scheduler is judged against on every family."""

SCORE = "weighted_on_time_rate"

def _ci95(values: Sequence[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95 % confidence interval (Student's t; NaN with one value)."""
    mean, half, _ = ci95(list(values))
    return mean, half


def tier_budget(tier: str, from_expert: bool) -> tuple[int, int]:
    """(expert decisions, environment steps) of a tier: with an expert half of each
    (the cloning gets the odd decision), else all steps. Like ``--timesteps``, the steps
    are a lower bound: SB3's on-policy learners stop at the end of the rollout that
    reaches them (the agents preset's rollouts are 16 x 256 = 4,096 steps, so 50,000
    steps run to 53,248).

    Raises
    ------
    MpschedError
        For an unknown tier.
    """
    if tier not in TIERS:
        raise MpschedError(f"tier: got {tier!r}; expected one of {', '.join(TIERS)}")
    total = TIERS[tier]
    return ((total + 1) // 2, total // 2) if from_expert else (0, total)


def seed_dirs(folder: str | Path) -> list[Path]:
    """The model directories of a multi-seed run (``seed-S`` with a model, by seed), or
    ``[folder]`` when it is a model directory itself.

    Raises
    ------
    MpschedError
        When it is neither.
    """
    root = Path(folder)
    if (root / META_FILE).exists():
        return [root]
    found = [p for p in root.glob("seed-*") if (p / META_FILE).exists()]
    if not found:
        raise MpschedError(f"{root}: neither a model directory ({META_FILE}) nor one of seed-*/ model directories")
    return sorted(found, key=lambda p: int(p.name.split("-", 1)[1]) if p.name.split("-", 1)[1].isdigit() else 0)


def _curve(meta: Mapping[str, Any]) -> list[tuple[int, float]]:
    """(decisions taken, validation score) of one model: expert decisions recorded before
    learning plus the environment steps at each evaluation; for DAgger, the labelled
    decisions aggregated by the end of each round (the first round's network is the clone
    of the teacher, the start the later rounds improve on)."""
    imitation = meta.get("imitation") or {}
    expert = int(imitation.get("decisions", 0) or 0)
    if meta.get("algo") == "dagger" and imitation.get("rounds"):
        return [(int(r["aggregate"]), float(r["test_weighted_on_time_rate"])) for r in imitation["rounds"]]
    if meta.get("algo") in ("bc", "dagger"):
        return [(expert, float(e[SCORE])) for e in meta.get("evaluations", [])[-1:]]
    return [(expert + int(e["timesteps"]), float(e[SCORE])) for e in meta.get("evaluations", [])]


def learning_curves(models: Sequence[str | Path]) -> list[dict[str, Any]]:
    """The validation score by decisions taken, over the models (one per training seed):
    one row per evaluation point that every model has, with the mean, its 95 % CI, each
    seed's value and the split part the evaluations ran on (``split``: empty when the
    models do not record it or differ).

    Raises
    ------
    MpschedError
        When the models were not evaluated at the same points (different budgets or
        evaluation frequencies).
    """
    metas = [read_meta(m) for m in models]
    curves = [_curve(meta) for meta in metas]
    points = [x for x, _ in curves[0]] if curves else []
    for meta, curve in zip(metas, curves):
        if [x for x, _ in curve] != points:
            raise MpschedError(f"model of seed {meta.get('seed')}: evaluated at {[x for x, _ in curve]} decisions, "
                               f"the first model at {points}; train every seed with the same budget")
    parts = {str(m.get("evaluated_on") or "") for m in metas}
    split = parts.pop() if len(parts) == 1 else ""
    rows = []
    for k, decisions in enumerate(points):
        values = [curve[k][1] for curve in curves]
        mean, half = _ci95(values)
        rows.append({"decisions": decisions, "mean": mean, "ci95": half, "seeds": [int(m["seed"]) for m in metas],
                     "values": values, "split": split})
    return rows


def write_curves(path: str | Path, curves: Sequence[Mapping[str, Any]]) -> None:
    """:func:`learning_curves` as CSV, one row per (evaluation point, seed): decisions,
    seed, weighted on-time rate."""
    rows = ["decisions,seed,weighted_on_time_rate"]
    for c in curves:
        rows += [f"{c['decisions']},{s},{v!r}" for s, v in zip(c["seeds"], c["values"])]
    Path(path).write_text("\n".join(rows) + "\n")


def family_table(models: Sequence[Sequence[EpisodeResult]], baselines: Sequence[EpisodeResult],
                 families: Mapping[str, Sequence[str]], max_paths: int) -> list[dict[str, Any]]:
    """Per family: the model's mean score over training seeds with its 95 % CI, every
    baseline's mean over the same episodes, and the margin over the best heuristic.

    Parameters
    ----------
    models : sequence of sequences of EpisodeResult
        Each training seed's model's episodes on the test split.
    baselines : sequence of EpisodeResult
        The baselines' episodes on the test split.
    families : mapping
        Family (test group) name -> its scenarios' names.
    max_paths : int
        Paths the models observe, named where a family has no model score.
    """
    rows = []
    names = list(dict.fromkeys(r.policy for r in baselines))
    for family, scenarios in families.items():
        members = set(scenarios)
        row: dict[str, Any] = {"family": family, "scenarios": list(scenarios)}
        per_seed = [float(np.mean([r.summary[SCORE] for r in results if r.scenario in members]))
                    for results in models if any(r.scenario in members for r in results)]
        row["model_mean"], row["model_ci95"] = _ci95(per_seed) if per_seed else (math.nan, math.nan)
        row["model_seeds"] = per_seed
        row["model_note"] = "" if per_seed else f"the model observes {max_paths} paths"
        for name in names:
            values = [r.summary[SCORE] for r in baselines if r.policy == name and r.scenario in members]
            row[name] = float(np.mean(values)) if values else math.nan
        heuristics = [h for h in HEURISTICS if h in names]
        if heuristics:
            best = max(heuristics, key=lambda h: row[h])
            row["best_heuristic"], row["margin"] = best, row["model_mean"] - row[best]
        rows.append(row)
    return rows


def format_mean_ci(mean: float, half: float) -> str:
    """``mean ± half`` to four places; the mean alone without an interval, ``n/a`` without a mean."""
    if math.isnan(mean):
        return "n/a"
    return f"{mean:.4f}" if math.isnan(half) else f"{mean:.4f} ± {half:.4f}"


def write_report(folder: str | Path, curves: Sequence[Mapping[str, Any]], families: Sequence[Mapping[str, Any]],
                 title: str, commands: Sequence[str], notes: Sequence[str] = ()) -> Path:
    """A report of one protocol run: ``README.md`` with the learning curve and the family
    table, and ``figures/learning-curve.png`` (when matplotlib is installed)."""
    out = Path(folder)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    lines = [f"# {title}", "", "Made by", ""] + [f"    {c}" for c in commands] + [""]
    lines += list(notes) + ([""] if notes else [])
    if curves:
        seeds = curves[0]["seeds"]
        split = curves[0]["split"] or "not recorded"
        lines += [f"## Learning curve (evaluations during training: {split} split)", "",
                  f"Weighted on-time rate of the evaluation episodes by decisions taken (expert decisions recorded "
                  f"plus environment steps), mean ± 95 % CI over training seeds {', '.join(map(str, seeds))}.", ""]
        if _plot_curve(curves, out / "figures" / "learning-curve.png"):
            lines += ["![learning curve](figures/learning-curve.png)", ""]
        lines += ["| decisions | mean ± 95 % CI | " + " | ".join(f"seed {s}" for s in seeds) + " |",
                  "|---:|---:|" + "---:|" * len(seeds)]
        for c in curves:
            lines.append(f"| {c['decisions']:,} | {format_mean_ci(c['mean'], c['ci95'])} | "
                         + " | ".join(f"{v:.4f}" for v in c["values"]) + " |")
        lines.append("")
    if families:
        names = [k for k in families[0] if k not in ("family", "scenarios", "model_mean", "model_ci95",
                                                      "model_seeds", "model_note", "best_heuristic", "margin")]
        lines += ["## Test split, per family", "",
                  "Weighted on-time rate; the model: mean ± 95 % CI over training seeds (each seed's mean over the "
                  "family's episodes); the others: mean over the same episodes. `margin`: the model's mean minus "
                  "the best heuristic's (" + ", ".join(HEURISTICS) + ").", "",
                  "| family | model | " + " | ".join(names) + " | best heuristic | margin |",
                  "|---|---:|" + "---:|" * len(names) + "---|---:|"]
        for f in families:
            model = f"n/a ({f['model_note']})" if f["model_note"] else format_mean_ci(f["model_mean"], f["model_ci95"])
            margin = "" if math.isnan(f.get("margin", math.nan)) else f"{f['margin']:+.4f}"
            lines.append(f"| {f['family']} | {model} | " + " | ".join(f"{f[n]:.4f}" for n in names)
                         + f" | {f.get('best_heuristic', '')} | {margin} |")
        lines.append("")
    (out / "README.md").write_text("\n".join(lines))
    return out / "README.md"


def _plot_curve(curves: Sequence[Mapping[str, Any]], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    x = np.array([c["decisions"] for c in curves], dtype=float)
    mean = np.array([c["mean"] for c in curves])
    half = np.nan_to_num(np.array([c["ci95"] for c in curves]))
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.fill_between(x, mean - half, mean + half, alpha=0.25, label="95 % CI over seeds")
    ax.plot(x, mean, marker="o", label="mean")
    for k in range(len(curves[0]["values"])):
        ax.plot(x, [c["values"][k] for c in curves], lw=0.6, alpha=0.6, color="grey")
    ax.set_xlabel("decisions taken")
    ax.set_ylabel(f"weighted on-time rate ({curves[0]['split'] or 'evaluations'})")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True
