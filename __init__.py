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

from typing import Any

__all__ = ["__version__"]


def __getattr__(name: str) -> Any:
    # The version is read from the installed metadata on first use only: importlib.metadata
    # costs a one-episode process about 25 ms.
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("mpsched")
    except PackageNotFoundError:  # running from a source tree that is not installed
        found = "0.0.0+unknown"
    globals()["__version__"] = found
    return found
