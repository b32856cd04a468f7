"""Optimality gaps: how far each policy's score is from the offline optimum.

``gap_to_upper_bound = 1 - score / upper_bound`` with the relaxed model's upper bound
(no policy can have a negative gap, see :mod:`mpsched.solvers.problem`), and
``gap_to_conservative = 1 - score / conservative_value``, the distance to a schedule a
sender can actually follow (negative when a policy beats it).
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
from .solve import solve

__all__ = ["gap_columns", "optimality_gaps"]

SCORE = "weighted_on_time_rate"


def _gap(score: np.ndarray, reference: float) -> np.ndarray:
    if not reference > 0:
        return np.where(score > 0, -np.inf, 0.0)
    return 1.0 - score / reference


def gap_columns(results: Iterable[EpisodeResult] | pd.DataFrame, upper_bound: float,
                conservative: float | None = None, score: str = SCORE) -> pd.DataFrame:
    """A result table with the gap columns added.

    Parameters
    ----------
    results : iterable of EpisodeResult, or DataFrame
        Episode results (their :meth:`~mpsched.envs.EpisodeResult.row`), or a table with
        a ``score`` column.
    upper_bound : float
        The relaxed model's upper bound of the same episode.
    conservative : float, optional
        The conservative model's value of the same episode.
    score : str
        The column scored (default ``weighted_on_time_rate``).

    Returns
    -------
    pandas.DataFrame
        The rows with ``upper_bound``, ``gap_to_upper_bound`` and, when given,
        ``conservative_value`` and ``gap_to_conservative``.
    """
    table = results.copy() if isinstance(results, pd.DataFrame) else pd.DataFrame([r.row() for r in results])
    values = table[score].to_numpy(dtype=float)
    table["upper_bound"] = upper_bound
    table["gap_to_upper_bound"] = _gap(values, upper_bound)
    if conservative is not None:
        table["conservative_value"] = conservative
        table["gap_to_conservative"] = _gap(values, conservative)
    return table


def optimality_gaps(scenario: Scenario | str | Path | Mapping[str, Any], policies: Sequence[str],
                    seed: int | None = None, *, slot_ms: float = 10.0, time_limit_s: float = 60.0,
                    drop_expired: bool = False) -> pd.DataFrame:
    """Simulate each policy on one episode and tabulate its gap to the optimum.

    Returns
    -------
    pandas.DataFrame
        One row per policy (best score first) with the summary scores and the gap
        columns of :func:`gap_columns`.
    """
    sc = resolve(scenario)
    seed = sc.seed if seed is None else seed
    relaxed = solve(sc, model="relaxed", slot_ms=slot_ms, time_limit_s=time_limit_s, seed=seed)
    conservative = solve(sc, model="conservative", slot_ms=slot_ms, time_limit_s=time_limit_s, seed=seed)
    results = [simulate(sc, name, seed=seed, drop_expired=drop_expired) for name in policies]
    table = gap_columns(results, relaxed.upper_bound, conservative.value)
    return table.sort_values(SCORE, ascending=False, ignore_index=True)
