"""Exceptions raised at the boundary of :mod:`mpsched`.

Every error a user can cause with bad input is one of these. They subclass
:class:`ValueError` so that generic callers can catch them as such, and each message
names the offending field, file or action together with the value and what was expected.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = [
    "MpschedError",
    "ScenarioError",
    "TraceError",
    "PolicyError",
    "ActionError",
    "SuiteError",
]


class MpschedError(ValueError):
    """Base class of every input error raised by mpsched."""


MAX_SHOWN_CHARS = 200
"""Longest rendering of an offending value in a message (a huge value is cut, not dumped)."""


def shown(value: Any) -> str:
    """``repr(value)``, cut to :data:`MAX_SHOWN_CHARS` characters with its full length said."""
    text = repr(value)
    if len(text) <= MAX_SHOWN_CHARS:
        return text
    return f"{text[:MAX_SHOWN_CHARS - 3]}... ({len(text)} characters)"


class ScenarioError(MpschedError):
    """A scenario field is missing, of the wrong type or out of range.

    Parameters
    ----------
    field : str
        Dotted path of the field, e.g. ``"paths[1].bandwidth.mbps"``.
    value : Any
        The value that was given.
    expected : str
        What the field accepts, in words.
    """

    def __init__(self, field: str, value: Any, expected: str) -> None:
        self.field = field
        self.value = value
        self.expected = expected
        super().__init__(f"{field}: got {shown(value)}; expected {expected}")


class TraceError(MpschedError):
    """A trace or frame file cannot be read or holds a malformed line.

    Parameters
    ----------
    file : str or Path
        The file being read.
    line : int or None
        1-based line number of the offending line, or ``None`` for whole-file problems.
    problem : str
        What is wrong.
    """

    def __init__(self, file: str | Path, line: int | None, problem: str) -> None:
        self.file = str(file)
        self.line = line
        self.problem = problem
        where = f"{self.file}:{line}" if line is not None else self.file
        told = problem if len(problem) <= 2 * MAX_SHOWN_CHARS else \
            f"{problem[:2 * MAX_SHOWN_CHARS - 3]}... ({len(problem)} characters)"
        super().__init__(f"{where}: {told}")


class PolicyError(MpschedError):
    """An unknown policy name, a bad policy parameter, or a policy that misbehaves."""


class ActionError(MpschedError):
    """An action that is not valid at the current decision point."""


class SuiteError(MpschedError):
    """A suite file or mapping is invalid: names the suite, the field and the value."""

    def __init__(self, suite: str, field: str, value: Any, expected: str) -> None:
        self.suite = suite
        self.field = field
        self.value = value
        self.expected = expected
        super().__init__(f"suite {suite}: {field}: got {shown(value)}; expected {expected}")
