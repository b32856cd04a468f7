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
formats and nothing depends on the clock. The replay validation of stored rows is
:func:`mpsched.experiments.replay.validate`.

Modules: :mod:`.stats` (metrics, intervals, gaps, tables), :mod:`.document` (the block
model and its Markdown and HTML renderers), :mod:`.figures`, :mod:`.claims` and
:mod:`.build`.
"""

from .build import build_report
from .document import render_markdown
from .stats import (
    METRICS,
    OPTIMUM_INTERVAL_FLAG,
    MetricFormat,
    ReportError,
    block_statistics,
    ci95,
    gap_to_best_achieved,
    gap_to_bound,
    optimum_problems,
    policy_table,
)

__all__ = [
    "METRICS",
    "OPTIMUM_INTERVAL_FLAG",
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
]
