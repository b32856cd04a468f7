"""A suite's scenario entries: grids over built-in scenarios, files and mappings.

Each scenario entry of a suite group (:mod:`mpsched.experiments.suite`) expands here into
one :class:`ScenarioCase` per grid point: ``base`` (a name, a file or a scenario
mapping), ``grid`` (variables and their values, or a list of points), ``set`` (dotted
paths such as ``paths[1].rtt_ms`` or ``paths[*].cc``) and ``name``. Every case carries
:func:`scenario_hash`, the identity of its scenario that result stores key rows by.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
import os
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..envs.errors import MpschedError, SuiteError
from ..envs.scenario import DELAY_KEYS, QUEUE_KEYS, Scenario, set_path_cc
from ..envs.textfiles import exists, read_yaml

__all__ = ["ScenarioCase", "expand_case", "format_value", "reject_unknown_keys", "scenario_hash"]

_CASE_KEYS = ("base", "name", "grid", "set")
_FIELD = re.compile(r"^\{([^{}]+)\}$")
_STEP = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[(\*|-?\d+)\])?$")


def format_value(value: Any) -> str:
    """A grid value as it appears in names and labels (floats in ``%g``)."""
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def reject_unknown_keys(mapping: Mapping[Any, Any], allowed: Sequence[str], suite: str, where: str,
                         expected: str = "a known key; allowed keys: ") -> None:
    """Raises on the first key of ``mapping`` not in ``allowed``, naming it under ``where``."""
    for key in mapping:
        if key not in allowed:
            field = f"{where}.{key}" if where else str(key)
            raise SuiteError(suite, field, mapping[key], expected + ", ".join(allowed))




def _file_digest(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _portable(config: Any) -> Any:
    """A scenario dict with every file replaced by the digest of its contents."""
    if isinstance(config, dict):
        out = {}
        for key, value in config.items():
            if key == "file" and isinstance(value, str):
                out[key] = {"sha256": _file_digest(value) if os.path.exists(value) else None,
                            "name": os.path.basename(value)}
            else:
                out[key] = _portable(value)
        return out
    if isinstance(config, (list, tuple)):
        return [_portable(v) for v in config]
    return config


def scenario_hash(scenario: Scenario) -> str:
    """Digest of a scenario's canonical form, with files by content (not by path), so
    that the same scenario hashes the same on any machine."""
    text = json.dumps(_portable(scenario.to_dict()), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class ScenarioCase:
    """One scenario of a group, with the grid values that produced it."""

    name: str
    scenario: Scenario
    params: dict[str, Any]
    hash: str


class _Vars(dict):
    """Grid variables for str.format, with a clear error for an unknown one."""

    def __missing__(self, key: str) -> Any:
        raise KeyError(key)


def _fill(value: Any, variables: Mapping[str, Any], where: str, suite: str) -> Any:
    """Substitute grid variables in a value (strings, lists and mappings, recursively)."""
    if isinstance(value, str):
        try:
            whole = _FIELD.match(value)
            if whole:
                obj, _ = string.Formatter().get_field(whole.group(1), (), _Vars(variables))
                return obj
            return value.format_map(_Vars(variables))
        except (KeyError, IndexError, AttributeError, ValueError) as exc:
            raise SuiteError(suite, where, value, f"a value whose {{fields}} name grid variables "
                             f"({', '.join(variables) or 'none defined'}): {exc}") from None
    if isinstance(value, Mapping):
        return {k: _fill(v, variables, f"{where}.{k}", suite) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, variables, f"{where}[{i}]", suite) for i, v in enumerate(value)]
    return value


def _set_path(target: dict[str, Any], path: str, value: Any, where: str, suite: str) -> None:
    """Set ``paths[1].rtt_ms``-style dotted paths; ``[*]`` sets every element."""
    steps = path.split(".")
    nodes: list[Any] = [target]
    for i, step in enumerate(steps):
        m = _STEP.match(step)
        if not m:
            raise SuiteError(suite, where, path, "a dotted path such as paths[1].rtt_ms or paths[*].cc")
        key, index = m.group(1), m.group(2)
        last = i == len(steps) - 1
        next_nodes: list[Any] = []
        for node in nodes:
            if not isinstance(node, dict):
                raise SuiteError(suite, where, path, f"a path through mappings ({'.'.join(steps[:i]) or 'top'} "
                                 "is not a mapping)")
            if index is None:
                if last:
                    _assign(node, key, copy.deepcopy(value))
                else:
                    node.setdefault(key, {})
                    next_nodes.append(node[key])
                continue
            seq = node.get(key)
            if not isinstance(seq, list):
                raise SuiteError(suite, where, path, f"{key} to be a list in the base scenario")
            picks = range(len(seq)) if index == "*" else [int(index)]
            for k in picks:
                if not -len(seq) <= k < len(seq):
                    raise SuiteError(suite, where, path, f"an index within {key} (it has {len(seq)} entries)")
                if last:
                    seq[k] = copy.deepcopy(value)
                else:
                    next_nodes.append(seq[k])
        nodes = next_nodes


def _assign(node: dict[str, Any], key: str, value: Any) -> None:
    """Set a key, dropping the keys it excludes (one way of giving delays or queues, the
    parameters of another congestion controller)."""
    if key == "cc" and isinstance(value, str):
        set_path_cc(node, value)
        return
    for family in (DELAY_KEYS, QUEUE_KEYS):
        if key in family:
            pair = ("fwd_delay_ms", "rev_delay_ms")
            for other in family:
                if other != key and not (key in pair and other in pair):
                    node.pop(other, None)
    node[key] = value


MAX_GRID_POINTS = 10_000
"""Most scenarios one scenario entry's grid may expand to (each is built and validated
when the suite loads)."""


def _grid_points(grid: Any, where: str, suite: str) -> list[dict[str, Any]]:
    if grid is None:
        return [{}]
    if isinstance(grid, Mapping):
        names = list(grid)
        for k in names:
            if not isinstance(grid[k], list) or not grid[k]:
                raise SuiteError(suite, f"{where}.grid.{k}", grid[k], "a non-empty list of values")
        size = math.prod(len(grid[k]) for k in names)
        if size > MAX_GRID_POINTS:
            raise SuiteError(suite, f"{where}.grid", f"{' x '.join(str(len(grid[k])) for k in names)} = {size} "
                             "points", f"at most {MAX_GRID_POINTS} points per scenario entry")
        return [dict(zip(names, values)) for values in itertools.product(*(grid[k] for k in names))]
    if isinstance(grid, list) and len(grid) > MAX_GRID_POINTS:
        raise SuiteError(suite, f"{where}.grid", f"a list of {len(grid)} points",
                         f"at most {MAX_GRID_POINTS} points per scenario entry")
    if isinstance(grid, list) and grid and all(isinstance(p, Mapping) for p in grid):
        return [dict(p) for p in grid]
    raise SuiteError(suite, f"{where}.grid", grid, "a mapping of variable -> values, or a list of mappings")


def _load_base(base: Any, base_dir: Path, where: str, suite: str) -> tuple[dict[str, Any], Path | None]:
    """A scenario mapping and the folder its relative files resolve against."""
    from ..envs import scenarios

    if isinstance(base, Mapping):
        return copy.deepcopy(dict(base)), base_dir
    if not isinstance(base, str) or not base:
        raise SuiteError(suite, where, base, "a built-in scenario name, a YAML file or a scenario mapping")
    if base in scenarios.names():
        return scenarios.get(base).to_dict(), None
    path = Path(base)
    if not path.is_absolute():
        path = base_dir / path
    if not exists(path):
        raise SuiteError(suite, where, base, "a built-in scenario name (" + ", ".join(scenarios.names()) +
                         f") or an existing YAML file (looked for {path})")
    data = read_yaml(path)
    if not isinstance(data, dict):
        raise SuiteError(suite, where, base, "a YAML file holding a scenario mapping")
    return data, path.parent


def expand_case(entry: Any, base_dir: Path, where: str, suite: str) -> list[ScenarioCase]:
    if isinstance(entry, str):
        entry = {"base": entry}
    if not isinstance(entry, Mapping):
        raise SuiteError(suite, where, entry, "a scenario name, a file or a mapping with a base")
    reject_unknown_keys(entry, _CASE_KEYS, suite, where)
    if "base" not in entry:
        raise SuiteError(suite, f"{where}.base", None, "a built-in scenario name, a YAML file or a scenario mapping")
    sets = entry.get("set", {}) or {}
    if not isinstance(sets, Mapping):
        raise SuiteError(suite, f"{where}.set", sets, "a mapping of dotted paths to values")
    cases = []
    for point in _grid_points(entry.get("grid"), where, suite):
        base, folder = _load_base(_fill(entry["base"], point, f"{where}.base", suite), base_dir,
                                  f"{where}.base", suite)
        for path, value in sets.items():
            _set_path(base, str(path), _fill(value, point, f"{where}.set.{path}", suite), f"{where}.set.{path}",
                      suite)
        if "name" in entry:
            name = _fill(entry["name"], point, f"{where}.name", suite)
            if not isinstance(name, str):
                raise SuiteError(suite, f"{where}.name", name, "a string")
            base["name"] = name
        elif point and not isinstance(entry["base"], str):
            base["name"] = "-".join([str(base.get("name", "custom"))] + [format_value(v) for v in point.values()])
        try:
            sc = Scenario.from_dict(base, base_dir=folder)
        except MpschedError as exc:
            raise SuiteError(suite, where, point or entry["base"], f"a valid scenario ({exc})") from None
        cases.append(ScenarioCase(sc.name, sc, dict(point), scenario_hash(sc)))
    return cases
