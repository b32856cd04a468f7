"""Episodes to train and evaluate learned schedulers on: :class:`EpisodePool`.

A pool is a set of (scenario, seed) pairs, typically one part of a suite's train/test
split (:meth:`mpsched.experiments.suite.Suite.pool`); training and evaluation take pools,
so that they need nothing from the layer that reads suites.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from .scenario import Scenario

__all__ = ["EpisodePool"]


@dataclass(frozen=True)
class EpisodePool:
    """Episodes to draw from: scenarios and, per scenario, its seeds.

    Attributes
    ----------
    scenarios : tuple of Scenario
    seeds : tuple of tuple of int
        The seeds of each scenario (at least one each).
    suite : str
        The suite the pool comes from (selects hyperparameters); empty when none.
    part : str
        ``train``, ``validation`` or ``test`` for a part of a suite's split; empty when none.
    drop_expired : bool
        Whether the suite scores its episodes with ``drop_expired``.
    """

    scenarios: tuple[Scenario, ...]
    seeds: tuple[tuple[int, ...], ...]
    suite: str = ""
    part: str = ""
    drop_expired: bool = False

    def __post_init__(self) -> None:
        if not self.scenarios or len(self.scenarios) != len(self.seeds) or not all(self.seeds):
            raise ValueError("an episode pool needs at least one scenario, each with at least one seed")

    @property
    def episodes(self) -> list[tuple[Scenario, int]]:
        """Every (scenario, seed) pair, scenario by scenario."""
        return [(sc, s) for sc, seeds in zip(self.scenarios, self.seeds) for s in seeds]

    @property
    def max_paths(self) -> int:
        return max(len(sc.paths) for sc in self.scenarios)

    def draw(self, rng: np.random.Generator) -> tuple[Scenario, int]:
        """A scenario uniformly, then one of its seeds uniformly."""
        i = int(rng.integers(len(self.scenarios)))
        return self.scenarios[i], int(self.seeds[i][int(rng.integers(len(self.seeds[i])))])

    def with_seeds(self, seeds: Sequence[int]) -> EpisodePool:
        """The same scenarios, each with ``seeds`` instead of its own."""
        return replace(self, seeds=tuple(tuple(int(s) for s in seeds) for _ in self.scenarios))
