"""Checks of configuration values, shared by scenarios, bandwidths and workloads.

Each ``check_*`` returns the value in canonical form or raises
:class:`~mpsched.envs.errors.ScenarioError` naming the field path, the value and what was
expected. Booleans are never numbers; NaN and infinities are never finite numbers.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from .errors import ScenarioError

__all__ = [
    "MISSING",
    "MAX_SECONDS",
    "field_path",
    "is_number",
    "check_number",
    "check_integer",
    "check_bool",
    "check_choice",
    "check_text",
    "check_file_name",
    "check_mapping",
    "check_keys",
    "check_seconds",
    "to_ns",
    "readonly_int64",
    "INT64_MAX",
]

MAX_SECONDS = 1e9


INT64_MAX = int(np.iinfo(np.int64).max)


def readonly_int64(values: Any, name: str) -> np.ndarray:
    """A read-only 1-D ``int64`` copy of an integer array; ``ValueError`` otherwise."""
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array; got shape {array.shape}")
    if array.size == 0:
        array = array.astype(np.int64)
    if array.dtype.kind not in "iu":
        raise ValueError(f"{name} must hold integers; got dtype {array.dtype}")
    if array.dtype.kind == "u" and array.size and int(array.max()) > INT64_MAX:
        raise ValueError(f"{name} holds a value beyond int64: {int(array.max())}")
    result = array.astype(np.int64, copy=True)
    result.setflags(write=False)
    return result


class _Missing:
    """Stands for the value of a key that is absent from a configuration."""

    def __repr__(self) -> str:
        return "nothing (the key is missing)"


MISSING = _Missing()


def field_path(field: str, key: str) -> str:
    """The dotted path of ``key`` inside ``field``."""
    return f"{field}.{key}" if field else key


def is_number(value: Any) -> bool:
    """Whether ``value`` is an int or float (numpy ones included) and not a bool."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    )


def _format_bound(value: float) -> str:
    """A bound as text, without a trailing ``.0``."""
    return str(int(value)) if float(value).is_integer() else repr(value)


def check_number(
    value: Any,
    field: str,
    *,
    lo: float | None = None,
    hi: float | None = None,
    lo_open: bool = False,
    hi_open: bool = False,
    what: str = "a finite number",
) -> float:
    """A finite number within the given bounds, as a float; ``ScenarioError`` otherwise."""
    expected = what
    if lo is not None and hi is not None:
        expected += (
            f" in {'(' if lo_open else '['}{_format_bound(lo)}, "
            f"{_format_bound(hi)}{')' if hi_open else ']'}"
        )
    elif lo is not None:
        expected += f" {'>' if lo_open else '>='} {_format_bound(lo)}"
    elif hi is not None:
        expected += f" {'<' if hi_open else '<='} {_format_bound(hi)}"
    if not is_number(value):
        raise ScenarioError(field, value, expected)
    try:
        number = float(value)
    except OverflowError:
        raise ScenarioError(field, value, expected) from None
    if not math.isfinite(number):
        raise ScenarioError(field, value, expected)
    if lo is not None and (number < lo or (lo_open and number == lo)):
        raise ScenarioError(field, value, expected)
    if hi is not None and (number > hi or (hi_open and number == hi)):
        raise ScenarioError(field, value, expected)
    return number


def check_integer(value: Any, field: str, *, lo: int | None = None, hi: int | None = None) -> int:
    """An integer (not a bool, not a float) within the given bounds; ``ScenarioError`` otherwise."""
    expected = "an integer"
    if lo is not None and hi is not None:
        expected += f" in [{lo}, {hi}]"
    elif lo is not None:
        expected += f" >= {lo}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ScenarioError(field, value, expected)
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise ScenarioError(field, value, expected)
    return int(value)


def check_bool(value: Any, field: str) -> bool:
    """A bool; ``ScenarioError`` otherwise."""
    if not isinstance(value, (bool, np.bool_)):
        raise ScenarioError(field, value, "true or false")
    return bool(value)


def check_choice(value: Any, field: str, choices: Iterable[str]) -> str:
    """One of ``choices`` (a string); ``ScenarioError`` otherwise."""
    options = tuple(choices)
    if not isinstance(value, str) or value not in options:
        raise ScenarioError(field, value, "one of " + ", ".join(repr(c) for c in options))
    return value


def check_text(value: Any, field: str, what: str = "a non-empty string") -> str:
    """A non-empty string; ``ScenarioError`` otherwise."""
    if not isinstance(value, str) or not value:
        raise ScenarioError(field, value, what)
    return value


def check_file_name(value: Any, field: str) -> str:
    """A file path given as a non-empty string or path object, as a string."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    return check_text(value, field, "a file path (a non-empty string)")


def check_mapping(value: Any, field: str, expected: str) -> dict[Any, Any]:
    """A shallow copy of a mapping; ``ScenarioError`` otherwise."""
    if not isinstance(value, Mapping):
        raise ScenarioError(field, value, expected)
    return dict(value)


def check_keys(config: Mapping[Any, Any], field: str, allowed: Iterable[str]) -> None:
    """Raise ``ScenarioError`` for the first key of ``config`` that is not in ``allowed``."""
    names = tuple(allowed)
    for key, value in config.items():
        if key not in names:
            raise ScenarioError(
                field_path(field, str(key)),
                value,
                f"a known key ({str(key)!r} is unknown); allowed keys: " + ", ".join(names),
            )


def check_seconds(value: Any, field: str, *, positive: bool = False) -> float:
    """A time in seconds: ``>= 0`` (``> 0`` when ``positive``) and at most 1e9 s."""
    return check_number(
        value, field, lo=0.0, lo_open=positive, hi=MAX_SECONDS, what="a time in seconds"
    )


def to_ns(seconds: float) -> int:
    """Seconds to integer nanoseconds, rounded to nearest."""
    return round(seconds * 1e9)

