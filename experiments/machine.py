"""What a speed figure was measured on: the processor, and how much of its time the
machine's hypervisor took while the figure was being measured.

A speed ratio against another simulator depends on the processor (the two programs do
different work, whose times need not scale alike from one processor to another), and on
a virtual machine a share of every CPU's time can go to other guests (Linux counts it as
*steal* in ``/proc/stat``). Reports that give a speed say where it was measured with
:func:`describe`, and the share stolen during the measurement with :class:`StealMeter`.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")
STAT = Path("/proc/stat")


def processor(cpuinfo: Path = CPUINFO) -> str:
    """The processor's name: the first ``model name`` of ``cpuinfo`` (Linux), else what
    :func:`platform.processor` says, else the architecture."""
    try:
        for line in cpuinfo.read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown processor"


def describe(cpuinfo: Path = CPUINFO) -> str:
    """One line: processor, architecture, logical CPUs and Python version, e.g.
    ``AMD EPYC (x86_64), 2 CPUs, Python 3.11.7``."""
    return (f"{processor(cpuinfo)} ({platform.machine()}), {os.cpu_count()} CPUs, "
            f"Python {platform.python_version()}")


def cpu_ticks(stat: Path = STAT) -> tuple[int, int] | None:
    """(all, steal): the ticks of every CPU since boot from the ``cpu`` line of ``stat``
    and those of them stolen by the hypervisor (its eighth field); None where the file is
    absent or has no steal field (not Linux, or a kernel before 2.6.11)."""
    try:
        first = stat.read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    if len(first) < 9 or first[0] != "cpu":
        return None
    try:
        # user nice system idle iowait irq softirq steal [guest guest_nice]: guest time is
        # already counted in user and nice, so the total is the first eight fields
        fields = [int(x) for x in first[1:9]]
    except ValueError:
        return None
    return sum(fields), fields[7]


class StealMeter:
    """The share of all CPU time stolen by the hypervisor between :meth:`start` and
    :meth:`share` (None where ``/proc/stat`` cannot tell)."""

    def __init__(self, stat: Path = STAT) -> None:
        self.stat = stat
        self.begin: tuple[int, int] | None = None

    def start(self) -> StealMeter:
        self.begin = cpu_ticks(self.stat)
        return self

    def share(self) -> float | None:
        end = cpu_ticks(self.stat)
        if self.begin is None or end is None or end[0] <= self.begin[0]:
            return None
        return (end[1] - self.begin[1]) / (end[0] - self.begin[0])
