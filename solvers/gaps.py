"""Optimality gaps: how far each policy's score is from the offline optimum, as an interval.

The true optimum ``OPT`` of an episode is not known exactly; it lies between the best
schedule achieved in the simulator (:func:`mpsched.solvers.optimum`, at least every
policy by construction) and the relaxed model's upper bound (no policy exceeds it, see
:mod:`mpsched.solvers.problem`). A policy's gap to it, ``1 - score / OPT``, therefore
lies in ``[gap_to_best_achieved, gap_to_upper_bound]`` with

- ``gap_to_best_achieved = 1 - score / best_achieved`` (never negative), and
- ``gap_to_upper_bound = 1 - score / upper_bound``.

The interval is as wide as the optimum's own uncertainty, ``1 - best_achieved /
upper_bound`` (``optimum_interval``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..envs.results import EpisodeResult
from ..envs.scenario import Scenario
from ..envs.scenarios import resolve
from ..envs.simulate import simulate
from .replay import SCORE, optimum

__all__ = ["gap_columns", "optimality_gaps"]


def _gap(score: np.ndarray, reference: float) -> np.ndarray:
    if not reference > 0:
        return np.where(score > 0, -np.inf, 0.0)
    return 1.0 - score / reference


def gap_columns(results: Iterable[EpisodeResult] | pd.DataFrame, upper_bound: float,
                best_achieved: float | None = None, score: str = SCORE) -> pd.DataFrame:
    """A result table with the gap interval's columns added.

    Parameters
    ----------
    results : iterable of EpisodeResult, or DataFrame
        Episode results (their :meth:`~mpsched.envs.EpisodeResult.row`), or a table with
        a ``score`` column.
    upper_bound : float
        The relaxed model's upper bound of the same episode.
    best_achieved : float, optional
        The achievable optimum of the same episode (:func:`mpsched.solvers.optimum`).
    score : str
        The column scored (default ``weighted_on_time_rate``).

    Returns
    -------
    pandas.DataFrame
        The rows with ``upper_bound`` and ``gap_to_upper_bound`` and, when
        ``best_achieved`` is given, ``best_achieved``, ``gap_to_best_achieved`` and
        ``optimum_interval``.
    """
    table = results.copy() if isinstance(results, pd.DataFrame) else pd.DataFrame([r.row() for r in results])
    values = table[score].to_numpy(dtype=float)
    table["upper_bound"] = upper_bound
    table["gap_to_upper_bound"] = _gap(values, upper_bound)
    if best_achieved is not None:
        table["best_achieved"] = best_achieved
        table["gap_to_best_achieved"] = _gap(values, best_achieved)
        table["optimum_interval"] = float(_gap(np.array([best_achieved]), upper_bound)[0])
    return table


def optimality_gaps(scenario: Scenario | str | Path | Mapping[str, Any], policies: Sequence[str],
                    seed: int | None = None, *, slot_ms: float = 10.0, time_limit_s: float = 60.0,
                    drop_expired: bool = False) -> pd.DataFrame:
    """Simulate each policy on one episode and tabulate its gap interval to the optimum.

    Returns
    -------
    pandas.DataFrame
        One row per policy (best score first) with the summary scores and the columns of
        :func:`gap_columns`; the achievable optimum is at least every listed policy (the
        registered baselines are among its candidates).
    """
    sc = resolve(scenario)
    seed = sc.seed if seed is None else seed
    best = optimum(sc, seed, slot_ms=slot_ms, time_limit_s=time_limit_s)
    results = [simulate(sc, name, seed=seed, drop_expired=drop_expired) for name in policies]
    table = gap_columns(results, best.extra["upper_bound"], best.summary[SCORE])
    return table.sort_values(SCORE, ascending=False, ignore_index=True)
