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
    "BudgetError",
    "ArgumentError",
    "FieldError",
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


class FieldError(MpschedError):
    """A named field or argument that is missing, of the wrong type or out of range.

    Parameters
    ----------
    field : str
        Dotted path of the field, e.g. ``"paths[1].bandwidth.mbps"``, or an argument's name.
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

    def __reduce__(self) -> tuple[Any, ...]:
        # rebuilt from the constructor's arguments, so that it crosses processes (Ray, subprocesses)
        return type(self), (self.field, self.value, self.expected)


class ScenarioError(FieldError):
    """A scenario field is missing, of the wrong type or out of range."""


class ArgumentError(FieldError):
    """An argument of an environment or function (``num_slots``, a seed, ...) that is of the
    wrong type or out of range."""


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

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.file, self.line, self.problem)


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

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.suite, self.field, self.value, self.expected)


class BudgetError(ScenarioError):
    """An episode that needs more work than the work budget allows (docs/model.md, "Limits").

    Raised before an episode runs when its estimated events exceed the budget, and by the
    core when a running episode passes it (then ``reached_ns`` is the simulated time it got
    to; no event past the budget is processed).

    Parameters
    ----------
    budget : int
        The most events an episode may process (``MPSCHED_MAX_EVENTS``).
    reached_ns : int or None
        Simulated time at which a running episode passed the budget; ``None`` for an
        estimate made before it ran.
    end_ns : int
        The episode's horizon.
    estimate : str
        What the estimate is made of (only when ``reached_ns`` is None).
    """

    def __init__(self, budget: int, reached_ns: int | None, end_ns: int, estimate: str = "") -> None:
        self.budget = budget
        self.reached_ns = reached_ns
        self.end_ns = end_ns
        self.estimate = estimate
        self.field = "scenario"
        self.value = estimate
        advice = ("shorten the horizon or the cross traffic, lower the rates or the block count, or raise the "
                  "budget with the environment variable MPSCHED_MAX_EVENTS")
        self.expected = f"an episode within the work budget of {budget} events; {advice}"
        if reached_ns is None:
            MpschedError.__init__(self, f"scenario: the episode needs {estimate}, more than the work budget of "
                                        f"{budget} events; {advice}")
        else:
            MpschedError.__init__(self, f"scenario: the episode passed the work budget of {budget} events at "
                                        f"simulated time {reached_ns / 1e9:.6g} s of its {end_ns / 1e9:.6g} s "
                                        f"horizon and was stopped; {advice}")

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.budget, self.reached_ns, self.end_ns, self.estimate)
