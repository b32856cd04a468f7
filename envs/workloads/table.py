"""The block table: the arrays of blocks a workload hands to the multipath sender.

:class:`BlockTable` lists blocks (arrival, size, absolute deadline, priority, weight) as
integer nanosecond and byte arrays, ready for the simulator core (``docs/model.md``,
section 1), and checks their invariants; the bounds it checks are the constants here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..validate import readonly_int64

if TYPE_CHECKING:
    import pandas as pd

INT32_MIN = int(np.iinfo(np.int32).min)
"""Smallest block priority (priorities are ``int32`` in the simulator core)."""

INT32_MAX = int(np.iinfo(np.int32).max)
"""Largest block priority."""

MAX_BLOCK_BYTES = 2**31 - 1
"""The simulator core's largest block, in bytes (``docs/model.md`` section 1)."""


@dataclass(frozen=True, eq=False)
class BlockTable:
    """Blocks of a workload, one row per block.

    All arrays are stored as read-only copies of the dtype given below.

    Parameters
    ----------
    arrival_ns : numpy.ndarray
        ``int64`` arrival times in ns, ``>= 0``.
    size_bytes : numpy.ndarray
        ``int64`` sizes in bytes, ``>= 1``.
    deadline_ns : numpy.ndarray
        ``int64`` absolute deadlines in ns, ``>= arrival_ns``.
    priority : numpy.ndarray
        ``int32`` priorities; larger is more important.
    weight : numpy.ndarray
        ``float64`` credit of an on-time block, finite and ``>= 0``.
    kind : numpy.ndarray
        Object array of ``str`` labels (``"I"``, ``"base"``, ``"object"``, ``"chunk"``, ...).
    frame : numpy.ndarray
        ``int64`` index of the video frame the block belongs to, ``-1`` when none.
    frame_rate : float or None
        Frames per second of a video workload, else None.

    Raises
    ------
    ValueError
        If the arrays differ in length or an invariant above does not hold.
    """

    arrival_ns: np.ndarray
    size_bytes: np.ndarray
    deadline_ns: np.ndarray
    priority: np.ndarray
    weight: np.ndarray
    kind: np.ndarray
    frame: np.ndarray
    frame_rate: float | None

    def __post_init__(self) -> None:
        arrival = readonly_int64(self.arrival_ns, "arrival_ns")
        size = readonly_int64(self.size_bytes, "size_bytes")
        deadline = readonly_int64(self.deadline_ns, "deadline_ns")
        priority = readonly_int64(self.priority, "priority")
        frame = readonly_int64(self.frame, "frame")
        weight = _readonly_weights(self.weight)
        kind = _readonly_kinds(self.kind)
        columns = {
            "size_bytes": size,
            "deadline_ns": deadline,
            "priority": priority,
            "weight": weight,
            "kind": kind,
            "frame": frame,
        }
        for name, column in columns.items():
            if column.size != arrival.size:
                raise ValueError(f"{name} has {column.size} rows but arrival_ns has {arrival.size}")
        _require(arrival >= 0, "arrival_ns", arrival, ">= 0")
        _require((size >= 1) & (size <= MAX_BLOCK_BYTES), "size_bytes", size, "in [1, 2^31 - 1]")
        _require(deadline >= arrival, "deadline_ns", deadline, ">= arrival_ns of the same row")
        _require(
            (priority >= INT32_MIN) & (priority <= INT32_MAX),
            "priority",
            priority,
            "a value that fits in int32",
        )
        _require(np.isfinite(weight) & (weight >= 0), "weight", weight, "finite and >= 0")
        _require(frame >= -1, "frame", frame, ">= -1")
        rate = self.frame_rate
        if rate is not None:
            if isinstance(rate, (bool, np.bool_)) or not isinstance(
                rate, (int, float, np.integer, np.floating)
            ):
                raise ValueError(f"frame_rate must be None or a number; got {rate!r}")
            if not (math.isfinite(rate) and rate > 0):
                raise ValueError(f"frame_rate must be finite and > 0; got {rate!r}")
            rate = float(rate)
        priority32 = priority.astype(np.int32)
        priority32.setflags(write=False)
        object.__setattr__(self, "arrival_ns", arrival)
        object.__setattr__(self, "size_bytes", size)
        object.__setattr__(self, "deadline_ns", deadline)
        object.__setattr__(self, "priority", priority32)
        object.__setattr__(self, "weight", weight)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "frame", frame)
        object.__setattr__(self, "frame_rate", rate)

    def __len__(self) -> int:
        return int(self.arrival_ns.size)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BlockTable):
            return NotImplemented
        return self.frame_rate == other.frame_rate and all(
            np.array_equal(getattr(self, name), getattr(other, name)) for name in _COLUMNS
        )

    def sorted_by_arrival(self) -> BlockTable:
        """The same blocks ordered by arrival; blocks arriving together keep their order."""
        order = np.argsort(self.arrival_ns, kind="stable")
        return BlockTable(
            self.arrival_ns[order],
            self.size_bytes[order],
            self.deadline_ns[order],
            self.priority[order],
            self.weight[order],
            self.kind[order],
            self.frame[order],
            self.frame_rate,
        )

    def to_frame(self) -> pd.DataFrame:
        """The table as a DataFrame with one column per array and ``attrs["frame_rate"]``."""
        import pandas as pd

        frame = pd.DataFrame({name: getattr(self, name) for name in _COLUMNS})
        frame.attrs["frame_rate"] = self.frame_rate
        return frame


_COLUMNS = ("arrival_ns", "size_bytes", "deadline_ns", "priority", "weight", "kind", "frame")


def _readonly_weights(values: Any) -> np.ndarray:
    """A read-only 1-D ``float64`` copy of a numeric array."""
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"weight must be a 1-D array; got shape {array.shape}")
    if array.size and array.dtype.kind not in "iuf":
        raise ValueError(f"weight must hold numbers; got dtype {array.dtype}")
    result = array.astype(np.float64, copy=True)
    result.setflags(write=False)
    return result


def _readonly_kinds(values: Any) -> np.ndarray:
    """A read-only 1-D object array of ``str``."""
    array = np.asarray(values, dtype=object)
    if array.ndim != 1:
        raise ValueError(f"kind must be a 1-D array; got shape {array.shape}")
    # the element types first (a C-level pass; a table holds a few distinct kinds), the
    # offending row only when some type is not a string
    if not all(issubclass(t, str) for t in set(map(type, array))):
        i, item = next((i, x) for i, x in enumerate(array) if not isinstance(x, str))
        raise ValueError(f"kind must hold strings; kind[{i}] = {item!r}")
    result = array.copy()
    result.setflags(write=False)
    return result


def _require(ok: np.ndarray, name: str, values: np.ndarray, expected: str) -> None:
    """Raise ``ValueError`` naming the first row where ``ok`` is false."""
    bad = np.flatnonzero(~ok)
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"{name}[{i}] = {values[i]!r}; expected {expected}")
