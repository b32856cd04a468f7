"""mpsched: a benchmark harness for deadline-aware multipath block scheduling.

Subpackages
-----------
envs
    The problem: scenarios, traces, workloads, the C simulator core, the Gymnasium
    environment and its native vector environment, episode metrics.
baselines
    Hand-written schedulers from the literature, each a readable Python specification
    with a native twin in the core.
solvers
    Offline optima and bounds (OR-Tools).
agents
    Learned schedulers (stable-baselines3 on PyTorch).
experiments
    Suites, sweeps, result tables, reports and the ``mpsched`` command line.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("mpsched")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
