"""Replay validation of stored results: every ``optimum`` row against the other policies,
and a random sample of rows re-run and compared metric by metric (CompilerGym's replay
validation), so that a result store can be trusted to be what the code produces."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..envs.errors import MpschedError
from .report.stats import optimum_problems
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
