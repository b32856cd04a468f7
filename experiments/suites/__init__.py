"""Suites: grids of scenarios x policies x seeds, described in YAML.

A suite file (the built-ins live beside this module, ``experiments/suites/*.yaml``) names
one or more *groups*; each group is the product of its scenarios, its policies and the
suite's seeds, and the metrics to report. Figures and the paper's claims that the
report reproduces are declared in the same file (:mod:`mpsched.experiments.report`).

.. code-block:: yaml

    name: my-suite
    title: Two schedulers on two RTTs
    seeds: 5                      # seeds 0..4, or a list
    metrics: [on_time_rate, weighted_on_time_rate, goodput_bps]
    groups:
      - name: rtt
        scenarios:
          - dams-rtt-40                         # a built-in name
          - scenarios/wifi-lte.yaml             # a file, relative to this suite file
          - base: "dams-rtt-{rtt2}"             # a parameter grid over built-ins
            grid: {rtt2: [80, 120]}
          - name: "lossy-{cc}"                  # a grid over a scenario mapping
            base: {duration_s: 10, paths: [...], workload: {...}}
            grid: {cc: [newreno, cubic]}
            set: {"paths[*].cc": "{cc}"}
        policies:
          - minrtt                              # a registered baseline
          - {name: dams-robust, params: {alpha: 0.5}}
          - mymodule:MyScheduler                # a class importable from . or PYTHONPATH
          - optimum                             # mpsched.solvers, when installed
          - agent:NAME                          # mpsched.agents, when installed
    quick: {seeds: 2, duration_s: 20}           # what --quick runs
    split: {train: [GROUP, ...], test: [GROUP, ...]}   # for learned schedulers

Scenario entries
----------------
A string is a built-in scenario name or a YAML file (relative to the suite's folder). A
mapping has ``base`` (a name, a file or a scenario mapping; strings may hold ``{var}``
fields of the grid), ``grid`` (a mapping of variable -> list of values, expanded as a
product, or a list of mappings, one per point), ``set`` (dotted paths such as
``paths[1].rtt_ms``, ``paths[*].cc`` or ``workload.deadline_ms`` -> values; a value that
is exactly ``"{var}"`` takes the variable's value, other strings are formatted) and
``name`` (a format string; by default the base's name followed by the grid values).
Setting one of a path's delay keys (``rtt_ms``, ``one_way_delay_ms``, ``fwd_delay_ms`` /
``rev_delay_ms``) or queue keys replaces the others. A built-in base is edited in its
canonical form (:meth:`mpsched.envs.Scenario.to_dict`), where queues are already sized
in bytes.

Policy entries
--------------
A string or a mapping with ``name`` and optional ``params``, ``label`` (the name in
result tables; by default the name with its parameters), ``drop_expired`` (overrides the
suite's) and ``resources`` (Ray task options ``num_cpus``, ``num_gpus``, ``memory_gb``).
Names are resolved when the suite is planned:

- a registered baseline (:func:`mpsched.baselines.names`), or ``"*"`` for all of them;
- ``optimum``: the achievable optimum, ``mpsched.solvers.OfflineOptimum(**params)``: the
  best of the offline optimum's replay, every registered baseline and the group's other
  policies, so that its row is at least each of theirs;
- ``agent:NAME``: a learned scheduler, ``mpsched.agents.load(NAME, **params)``;
- ``module:Class``: a class importable from the current directory or ``PYTHONPATH``,
  built as ``Class(**params)``, any object with ``decide(obs)``.

The optimum and agents run one episode per task with their own resources (by default
one CPU); baselines and user classes are batched, many episodes per task.

Train/test split
----------------
``split`` names the groups whose scenarios and seeds a learned scheduler trains on
(``train``) and the groups it is scored on (``test``, :mod:`mpsched.agents`). The two
lists are disjoint and no (scenario, seed) pair is in both; a sweep runs every group as
usual.
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import itertools
import json
import os
import re
import string
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from ...envs.errors import MpschedError, PolicyError
from ...envs.results import EpisodeResult
from ...envs.scenario import Scenario

__all__ = [
    "DEFAULT_METRICS",
    "SERIES_KINDS",
    "SUITES_DIR",
    "EpisodeSpec",
    "Group",
    "PolicySpec",
    "ScenarioCase",
    "Suite",
    "SuiteError",
    "load_suite",
    "names",
    "scenario_hash",
]

SUITES_DIR = Path(__file__).resolve().parent
"""Folder of the built-in suites."""

SERIES_KINDS: tuple[str, ...] = ("blocks", "rbuf", "delivery")
"""Per-episode time series a group may ask the sweep to store: ``blocks`` (one row per
block: arrival, deadline, completion, size, priority, on time), ``rbuf`` (occupancy of
the in-order receive buffer, :meth:`EpisodeResult.receive_buffer`) and ``delivery``
(bytes handed to the application, :meth:`EpisodeResult.cumulative_delivery`)."""

_SUITE_KEYS = ("name", "title", "paper", "description", "seeds", "metrics", "rank_by", "derived", "drop_expired",
               "groups", "figures", "claims", "quick", "split")
_GROUP_KEYS = ("name", "title", "description", "scenarios", "policies", "seeds", "series")
_CASE_KEYS = ("base", "name", "grid", "set")
_POLICY_KEYS = ("name", "params", "label", "drop_expired", "resources")
_RESOURCE_KEYS = ("num_cpus", "num_gpus", "memory_gb")
_QUICK_KEYS = ("seeds", "duration_s", "groups", "policies")
_SERIES_KEYS = ("kinds", "seeds", "policies")
SPLIT_PARTS: tuple[str, ...] = ("train", "test")
_DELAY_KEYS = ("rtt_ms", "one_way_delay_ms", "fwd_delay_ms", "rev_delay_ms")
_QUEUE_KEYS = ("queue_bytes", "queue_packets", "queue_ms")
DEFAULT_METRICS = ("on_time_rate", "weighted_on_time_rate", "high_priority_on_time_rate", "goodput_bps",
                    "efficiency", "bytes_wasted")
_FIELD = re.compile(r"^\{([^{}]+)\}$")
_STEP = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[(\*|-?\d+)\])?$")


class SuiteError(MpschedError):
    """A suite file or mapping is invalid: names the suite, the field and the value."""

    def __init__(self, suite: str, field: str, value: Any, expected: str) -> None:
        self.suite = suite
        self.field = field
        self.value = value
        self.expected = expected
        text = repr(value)
        if len(text) > 200:
            text = text[:197] + "..."
        super().__init__(f"suite {suite}: {field}: got {text}; expected {expected}")


def _reject_unknown_keys(mapping: Mapping[Any, Any], allowed: Sequence[str], suite: str, where: str,
                         expected: str = "a known key; allowed keys: ") -> None:
    """Raises on the first key of ``mapping`` not in ``allowed``, naming it under ``where``."""
    for key in mapping:
        if key not in allowed:
            field = f"{where}.{key}" if where else str(key)
            raise SuiteError(suite, field, mapping[key], expected + ", ".join(allowed))


# ---------------------------------------------------------------------------------------
# Policies
# ---------------------------------------------------------------------------------------


def _format_value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


@dataclass(frozen=True)
class PolicySpec:
    """One policy entry of a suite, resolved lazily (on the machine that runs it).

    Attributes
    ----------
    name : str
        Registry name, ``"optimum"``, ``"agent:NAME"`` or ``"module:Class"``.
    params : dict
        Constructor keyword arguments.
    label : str
        Name of the policy in result tables (unique within a group).
    drop_expired : bool or None
        Cancel every block past its deadline whatever the policy does; None: the suite's.
    resources : dict
        Ray options of the tasks that run it (``num_cpus``, ``num_gpus``, ``memory_gb``).
    """

    name: str
    params: dict[str, Any] = field(default_factory=dict)
    label: str = ""
    drop_expired: bool | None = None
    resources: dict[str, float] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        """``baseline``, ``optimum``, ``agent`` or ``user`` (a ``module:Class``)."""
        if self.name == "optimum":
            return "optimum"
        if self.name.startswith("agent:"):
            return "agent"
        if ":" in self.name:
            return "user"
        return "baseline"

    @property
    def batched(self) -> bool:
        """Whether episodes of this policy share tasks (baselines and user classes); the
        optimum and agents run one episode per task with their own resources."""
        return self.kind in ("baseline", "user")

    @property
    def native(self) -> bool:
        """Whether it runs in the C core (a baseline with a twin): cheap episodes."""
        if self.kind != "baseline":
            return False
        from ... import baselines

        cls = baselines.REGISTRY.get(self.name)
        return bool(cls is not None and cls.native)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "params": dict(self.params), "label": self.label}
        if self.drop_expired is not None:
            d["drop_expired"] = self.drop_expired
        if self.resources:
            d["resources"] = dict(self.resources)
        return d

    def build(self) -> Any:
        """A fresh policy object (or the optimum's runner).

        Raises
        ------
        PolicyError
            For an unknown name or parameter, a missing module or class, or an optimum or
            agent that this installation does not provide (naming the missing piece).
        """
        kind = self.kind
        if kind == "baseline":
            from ... import baselines

            return baselines.get(self.name, **self.params)
        if kind == "optimum":
            return _optional(
                "mpsched.solvers", "OfflineOptimum",
                "policy 'optimum' needs the offline optimum (mpsched.solvers.OfflineOptimum and the "
                "'solve' extra: pip install 'mpsched[solve]')")(**self.params)
        if kind == "agent":
            load = _optional(
                "mpsched.agents", "load",
                f"policy {self.name!r} needs the learned agents (mpsched.agents.load and the "
                "'rl' extra: pip install 'mpsched[rl]')")
            return load(self.name.split(":", 1)[1], **self.params)
        return _user_policy(self.name, self.params)

    def run(self, scenario: Scenario, seed: int, drop_expired: bool, episode: Any = None,
            rivals: Sequence[tuple[PolicySpec, bool]] = (),
            rival_results: dict[tuple[Any, ...], EpisodeResult] | None = None) -> EpisodeResult:
        """Simulate one episode with a fresh instance of this policy.

        An object with a ``simulate(scenario, seed=, drop_expired=)`` method (the
        optimum, which adds ``extra['upper_bound']``) runs itself; any other is driven
        through the simulator, on ``episode`` when given (an already built
        :class:`mpsched.envs.Episode` of this scenario and seed). The optimum also gets
        ``rivals`` (policies with their ``drop_expired``) as candidate schedules, so that
        its row is at least each of theirs; each rival's result is kept in
        ``rival_results`` under ``(scenario hash, seed, label, drop_expired)`` when given.
        """
        policy = self.build()
        own = getattr(policy, "simulate", None)
        if self.kind == "optimum":
            keep = {} if rival_results is None else rival_results
            candidates = {f"{p.label}{'+drop' if drop else ''} (suite)": partial(_run_rival, p, scenario, seed, drop, keep)
                          for p, drop in rivals}
            return own(scenario, seed=seed, drop_expired=drop_expired, candidates=candidates)
        if callable(own) and not callable(getattr(policy, "decide", None)):
            return own(scenario, seed=seed, drop_expired=drop_expired)
        return _simulate(scenario, policy, seed, drop_expired, episode)

    @property
    def covered_by_optimum(self) -> bool:
        """Whether the optimum tries this policy on its own: a registered baseline with
        its default parameters (:func:`mpsched.solvers.baseline_candidates`)."""
        return self.kind == "baseline" and not self.params


def _run_rival(spec: PolicySpec, scenario: Scenario, seed: int, drop_expired: bool,
               keep: dict[tuple[Any, ...], EpisodeResult]) -> EpisodeResult:
    """One rival of the optimum, its result kept under its episode's identity."""
    result = spec.run(scenario, seed, drop_expired)
    keep[(scenario_hash(scenario), seed, spec.label, drop_expired)] = result
    return result


def _simulate(scenario: Scenario, policy: Any, seed: int, drop_expired: bool, episode: Any) -> EpisodeResult:
    """:func:`mpsched.envs.simulate` on a prebuilt episode when given."""
    from ...envs.episode import build_episode
    from ...envs.simulate import simulate_episode

    return simulate_episode(build_episode(scenario, seed) if episode is None else episode, policy, drop_expired)


def _optional(module: str, attr: str, missing: str) -> Any:
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        raise PolicyError(f"{missing}; importing {module} failed: {exc}") from None
    obj = getattr(mod, attr, None)
    if obj is None:
        raise PolicyError(f"{missing}; {module} has no {attr} in this installation")
    return obj


def _import_user_module(module: str) -> Any:
    """Import a module from the current directory or PYTHONPATH (the console script's
    sys.path lacks the current directory)."""
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.append(cwd)
    return importlib.import_module(module)


def _user_policy(spec: str, params: Mapping[str, Any]) -> Any:
    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise PolicyError(f"policy {spec!r}: expected module:Class")
    try:
        mod = _import_user_module(module)
    except ImportError as exc:
        raise PolicyError(f"policy {spec!r}: cannot import module {module!r} from the current directory "
                          f"or PYTHONPATH ({exc})") from None
    target: Any = mod
    for part in attr.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise PolicyError(f"policy {spec!r}: module {module!r} has no attribute {attr!r}")
    if not callable(target):
        raise PolicyError(f"policy {spec!r}: {attr!r} is not a class or factory")
    try:
        policy = target(**params)
    except TypeError as exc:
        raise PolicyError(f"policy {spec!r}: {exc}") from None
    if not callable(getattr(policy, "decide", None)) and not callable(getattr(policy, "simulate", None)):
        raise PolicyError(f"policy {spec!r}: the object it builds has no decide(obs) method")
    return policy


def _default_label(name: str, params: Mapping[str, Any]) -> str:
    if not params:
        return name
    return f"{name}(" + ",".join(f"{k}={_format_value(v)}" for k, v in sorted(params.items())) + ")"


def _parse_policy(entry: Any, where: str, suite: str) -> list[PolicySpec]:
    if isinstance(entry, str):
        entry = {"name": entry}
    if not isinstance(entry, Mapping):
        raise SuiteError(suite, where, entry, "a policy name or a mapping with a name")
    _reject_unknown_keys(entry, _POLICY_KEYS, suite, where)
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise SuiteError(suite, f"{where}.name", name, "a policy name")
    params = entry.get("params", {}) or {}
    if not isinstance(params, Mapping) or not all(isinstance(k, str) for k in params):
        raise SuiteError(suite, f"{where}.params", params, "a mapping of parameter names to values")
    drop = entry.get("drop_expired")
    if drop is not None and not isinstance(drop, bool):
        raise SuiteError(suite, f"{where}.drop_expired", drop, "true or false")
    resources = entry.get("resources", {}) or {}
    if not isinstance(resources, Mapping):
        raise SuiteError(suite, f"{where}.resources", resources, "a mapping (" + ", ".join(_RESOURCE_KEYS) + ")")
    for key, value in resources.items():
        if key not in _RESOURCE_KEYS:
            raise SuiteError(suite, f"{where}.resources.{key}", value, "one of " + ", ".join(_RESOURCE_KEYS))
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise SuiteError(suite, f"{where}.resources.{key}", value, "a number >= 0")
    if name == "*":
        from ... import baselines

        if params or entry.get("label"):
            raise SuiteError(suite, where, entry, "'*' (every baseline) without params or label")
        return [PolicySpec(n, {}, n, drop, dict(resources)) for n in baselines.names()]
    label = entry.get("label") or _default_label(name, params)
    if not isinstance(label, str):
        raise SuiteError(suite, f"{where}.label", label, "a string")
    spec = PolicySpec(name, dict(params), label, drop, {k: float(v) for k, v in resources.items()})
    if spec.kind == "baseline":
        from ... import baselines

        if name not in baselines.REGISTRY:
            raise SuiteError(suite, f"{where}.name", name,
                             "a registered baseline (" + ", ".join(baselines.names()) +
                             "), '*', 'optimum', 'agent:NAME' or 'module:Class'")
        try:
            baselines.get(name, **params)
        except PolicyError as exc:
            raise SuiteError(suite, f"{where}.params", dict(params), str(exc)) from None
    return [spec]


# ---------------------------------------------------------------------------------------
# Scenarios
# ---------------------------------------------------------------------------------------


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
    """Set a key, dropping the keys it excludes (one way of giving delays or queues)."""
    for family in (_DELAY_KEYS, _QUEUE_KEYS):
        if key in family:
            pair = ("fwd_delay_ms", "rev_delay_ms")
            for other in family:
                if other != key and not (key in pair and other in pair):
                    node.pop(other, None)
    node[key] = value


def _grid_points(grid: Any, where: str, suite: str) -> list[dict[str, Any]]:
    if grid is None:
        return [{}]
    if isinstance(grid, Mapping):
        names = list(grid)
        for k in names:
            if not isinstance(grid[k], list) or not grid[k]:
                raise SuiteError(suite, f"{where}.grid.{k}", grid[k], "a non-empty list of values")
        return [dict(zip(names, values)) for values in itertools.product(*(grid[k] for k in names))]
    if isinstance(grid, list) and grid and all(isinstance(p, Mapping) for p in grid):
        return [dict(p) for p in grid]
    raise SuiteError(suite, f"{where}.grid", grid, "a mapping of variable -> values, or a list of mappings")


def _load_base(base: Any, base_dir: Path, where: str, suite: str) -> tuple[dict[str, Any], Path | None]:
    """A scenario mapping and the folder its relative files resolve against."""
    from ...envs import scenarios

    if isinstance(base, Mapping):
        return copy.deepcopy(dict(base)), base_dir
    if not isinstance(base, str) or not base:
        raise SuiteError(suite, where, base, "a built-in scenario name, a YAML file or a scenario mapping")
    if base in scenarios.names():
        return scenarios.get(base).to_dict(), None
    path = Path(base)
    if not path.is_absolute():
        path = base_dir / path
    if not path.exists():
        raise SuiteError(suite, where, base, "a built-in scenario name (" + ", ".join(scenarios.names()) +
                         f") or an existing YAML file (looked for {path})")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise SuiteError(suite, where, base, f"a valid YAML scenario file ({exc})") from None
    if not isinstance(data, dict):
        raise SuiteError(suite, where, base, "a YAML file holding a scenario mapping")
    return data, path.parent


def _expand_case(entry: Any, base_dir: Path, where: str, suite: str) -> list[ScenarioCase]:
    if isinstance(entry, str):
        entry = {"base": entry}
    if not isinstance(entry, Mapping):
        raise SuiteError(suite, where, entry, "a scenario name, a file or a mapping with a base")
    _reject_unknown_keys(entry, _CASE_KEYS, suite, where)
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
            base["name"] = "-".join([str(base.get("name", "custom"))] + [_format_value(v) for v in point.values()])
        try:
            sc = Scenario.from_dict(base, base_dir=folder)
        except MpschedError as exc:
            raise SuiteError(suite, where, point or entry["base"], f"a valid scenario ({exc})") from None
        cases.append(ScenarioCase(sc.name, sc, dict(point), scenario_hash(sc)))
    return cases


# ---------------------------------------------------------------------------------------
# Groups, episodes and the suite
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SeriesSpec:
    """Which episodes of a group store per-episode series (all when a field is None)."""

    kinds: tuple[str, ...]
    seeds: tuple[int, ...] | None = None
    policies: tuple[str, ...] | None = None

    def wants(self, policy: str, seed: int) -> tuple[str, ...]:
        if self.seeds is not None and seed not in self.seeds:
            return ()
        if self.policies is not None and policy not in self.policies:
            return ()
        return self.kinds


@dataclass(frozen=True)
class Group:
    """Scenarios x policies x seeds of one part of a suite."""

    name: str
    title: str
    description: str
    cases: tuple[ScenarioCase, ...]
    policies: tuple[PolicySpec, ...]
    seeds: tuple[int, ...]
    series: SeriesSpec | None = None


@dataclass(frozen=True)
class EpisodeSpec:
    """One episode of a sweep: what runs it and the key that stores it."""

    suite: str
    group: str
    case: ScenarioCase
    policy: PolicySpec
    seed: int
    drop_expired: bool
    series: tuple[str, ...] = ()
    rivals: tuple[tuple[PolicySpec, bool], ...] = ()
    """For the optimum: the group's other policies it does not try on its own, each with
    its ``drop_expired`` (:meth:`PolicySpec.run`)."""

    @property
    def key(self) -> tuple[str, str, str, int]:
        """(suite, scenario, policy, seed): the identity of a stored row."""
        return (self.suite, self.case.name, self.policy.label, self.seed)


def _seeds(value: Any, where: str, suite: str) -> tuple[int, ...]:
    if isinstance(value, bool):
        raise SuiteError(suite, where, value, "a number of seeds or a list of seeds")
    if isinstance(value, int):
        if value < 1:
            raise SuiteError(suite, where, value, "at least one seed")
        return tuple(range(value))
    if isinstance(value, list) and value and all(isinstance(s, int) and not isinstance(s, bool) and s >= 0
                                                  for s in value):
        if len(set(value)) != len(value):
            raise SuiteError(suite, where, value, "distinct seeds")
        return tuple(value)
    raise SuiteError(suite, where, value, "a number of seeds or a non-empty list of seeds >= 0")


def _strings(value: Any, where: str, suite: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SuiteError(suite, where, value, "a list of strings")
    return tuple(value)


def _series(value: Any, where: str, suite: str) -> SeriesSpec | None:
    if value is None:
        return None
    if isinstance(value, list):
        value = {"kinds": value}
    if not isinstance(value, Mapping):
        raise SuiteError(suite, where, value, "a list of series kinds or a mapping with kinds")
    _reject_unknown_keys(value, _SERIES_KEYS, suite, where, "one of ")
    kinds = _strings(value.get("kinds"), f"{where}.kinds", suite)
    for k in kinds:
        if k not in SERIES_KINDS:
            raise SuiteError(suite, f"{where}.kinds", k, "one of " + ", ".join(SERIES_KINDS))
    seeds = _seeds(value["seeds"], f"{where}.seeds", suite) if "seeds" in value else None
    policies = _strings(value["policies"], f"{where}.policies", suite) if "policies" in value else None
    return SeriesSpec(kinds, seeds, policies)


@dataclass(frozen=True)
class Suite:
    """A validated, expanded suite.

    Attributes
    ----------
    name, title, paper, description : str
    metrics : tuple of str
        Summary metrics shown in the report's tables.
    rank_by : str
        The metric that ranks policies (default ``weighted_on_time_rate``).
    groups : tuple of Group
    figures, claims : tuple of dict
        Report declarations (:mod:`mpsched.experiments.report`).
    quick : bool
        Whether this is the ``--quick`` variant.
    spec : dict
        The mapping it was built from (stored with the results, to re-run rows).
    source : str
        ``builtin:NAME`` or the suite file's absolute path, or ``mapping``.
    split : dict
        ``train`` and ``test`` -> group names, when the suite defines a split (empty
        otherwise; in the quick variant, the groups it keeps).
    """

    name: str
    title: str
    paper: str
    description: str
    metrics: tuple[str, ...]
    rank_by: str
    groups: tuple[Group, ...]
    figures: tuple[dict[str, Any], ...]
    claims: tuple[dict[str, Any], ...]
    quick: bool
    spec: dict[str, Any]
    source: str
    split: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any], base_dir: str | Path | None = None, quick: bool = False,
                  source: str = "mapping") -> Suite:
        """Validate and expand a suite mapping; relative files resolve against
        ``base_dir`` (default: the current directory).

        Raises
        ------
        SuiteError
            Naming the first invalid field.
        """
        raw = copy.deepcopy(dict(spec)) if isinstance(spec, Mapping) else spec
        label = raw.get("name", source) if isinstance(raw, dict) else source
        if not isinstance(raw, dict):
            raise SuiteError(str(label), "suite", spec, "a mapping")
        _reject_unknown_keys({k: v for k, v in raw.items() if not str(k).startswith("x-")}, _SUITE_KEYS,
                             str(label), "", "a known key (or an x- key holding YAML anchors); allowed keys: ")
        name = raw.get("name")
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
            raise SuiteError(str(label), "name", name, "a name of letters, digits, '-', '_' and '.'")
        folder = Path(base_dir).resolve() if base_dir is not None else Path.cwd()
        quick_spec = raw.get("quick", {}) or {}
        if not isinstance(quick_spec, Mapping) or any(k not in _QUICK_KEYS for k in quick_spec):
            raise SuiteError(name, "quick", quick_spec, "a mapping with " + ", ".join(_QUICK_KEYS))
        seeds = _seeds(raw.get("seeds", 1), "seeds", name)
        metrics = _strings(raw.get("metrics", list(DEFAULT_METRICS)), "metrics", name)
        rank_by = raw.get("rank_by", "weighted_on_time_rate")
        if not isinstance(rank_by, str):
            raise SuiteError(name, "rank_by", rank_by, "a metric name")
        drop_default = raw.get("drop_expired", False)
        if not isinstance(drop_default, bool):
            raise SuiteError(name, "drop_expired", drop_default, "true or false")
        groups_raw = raw.get("groups")
        if not isinstance(groups_raw, list) or not groups_raw:
            raise SuiteError(name, "groups", groups_raw, "a non-empty list of groups")
        groups = [_group(g, f"groups[{i}]", name, folder, seeds, drop_default) for i, g in enumerate(groups_raw)]
        names = [g.name for g in groups]
        if len(set(names)) != len(names):
            raise SuiteError(name, "groups", names, "distinct group names")
        split = _split(raw.get("split"), groups, name)
        # The quick variant is checked whether or not it is asked for.
        quick_seeds = _seeds(quick_spec["seeds"], "quick.seeds", name) if "seeds" in quick_spec else None
        keep_groups = _strings(quick_spec["groups"], "quick.groups", name) if "groups" in quick_spec else None
        keep_policies = _strings(quick_spec["policies"], "quick.policies", name) if "policies" in quick_spec else None
        missing = [g for g in keep_groups or () if g not in names]
        if missing:
            raise SuiteError(name, "quick.groups", missing, "names of groups (" + ", ".join(names) + ")")
        quick_duration = quick_spec.get("duration_s")
        if quick_duration is not None and (isinstance(quick_duration, bool) or
                                           not isinstance(quick_duration, (int, float)) or quick_duration <= 0):
            raise SuiteError(name, "quick.duration_s", quick_duration, "a duration in seconds > 0")
        if quick:
            if keep_groups is not None:
                groups = [g for g in groups if g.name in keep_groups]
            if keep_policies is not None:
                groups = [replace(g, policies=tuple(p for p in g.policies if p.label in keep_policies))
                          for g in groups]
            if quick_seeds is not None:
                groups = [replace(g, seeds=quick_seeds) for g in groups]
            if quick_duration is not None:
                groups = [replace(g, cases=tuple(_shortened(c, float(quick_duration)) for c in g.cases))
                          for g in groups]
            kept = {g.name for g in groups}
            split = {part: tuple(g for g in split[part] if g in kept) for part in split}
        figures = raw.get("figures", []) or []
        claims = raw.get("claims", []) or []
        for key, items in (("figures", figures), ("claims", claims)):
            if not isinstance(items, list) or not all(isinstance(x, Mapping) for x in items):
                raise SuiteError(name, key, items, "a list of mappings")
        suite = cls(
            name=name,
            title=str(raw.get("title", name)),
            paper=str(raw.get("paper", "")),
            description=str(raw.get("description", "")).strip(),
            metrics=metrics,
            rank_by=rank_by,
            groups=tuple(groups),
            figures=tuple(dict(f) for f in figures),
            claims=tuple(dict(c) for c in claims),
            quick=quick,
            spec=raw,
            source=source,
            split=split,
        )
        suite._check_keys()
        return suite

    def _check_keys(self) -> None:
        seen: dict[tuple[str, str, int], str] = {}
        hashes: dict[str, str] = {}
        for g in self.groups:
            labels = [p.label for p in g.policies]
            dup = sorted({x for x in labels if labels.count(x) > 1})
            if dup:
                raise SuiteError(self.name, f"groups[{g.name}].policies", dup, "distinct labels (set label:)")
            for c in g.cases:
                if hashes.setdefault(c.name, c.hash) != c.hash:
                    raise SuiteError(self.name, f"groups[{g.name}].scenarios", c.name,
                                     "one scenario per name (two different scenarios share this name)")
                for p in g.policies:
                    for s in g.seeds:
                        k = (c.name, p.label, s)
                        if k in seen:
                            raise SuiteError(self.name, f"groups[{g.name}]", list(k),
                                             f"each (scenario, policy, seed) once (also in group {seen[k]})")
                        seen[k] = g.name

    def episodes(self) -> list[EpisodeSpec]:
        """Every episode, group by group, in (scenario, policy, seed) order."""
        out = []
        default_drop = bool(self.spec.get("drop_expired", False))
        for g in self.groups:
            drops = {p.label: p.drop_expired if p.drop_expired is not None else default_drop for p in g.policies}
            rivals = tuple((p, drops[p.label]) for p in g.policies
                           if p.kind != "optimum" and not p.covered_by_optimum)
            for c in g.cases:
                for p in g.policies:
                    for s in g.seeds:
                        series = g.series.wants(p.label, s) if g.series else ()
                        out.append(EpisodeSpec(self.name, g.name, c, p, s, drops[p.label], series,
                                               rivals if p.kind == "optimum" else ()))
        return out

    def group(self, name: str) -> Group:
        for g in self.groups:
            if g.name == name:
                return g
        raise KeyError(name)

    def split_groups(self, part: str) -> tuple[Group, ...]:
        """The groups of one part of the train/test split (``"train"`` or ``"test"``).

        Raises
        ------
        SuiteError
            When the suite defines no split, or for another part.
        """
        if part not in SPLIT_PARTS:
            raise SuiteError(self.name, "split", part, "one of " + ", ".join(SPLIT_PARTS))
        if not self.split:
            raise SuiteError(self.name, "split", None, "a suite with a split: {train: [...], test: [...]} "
                             "(the groups a learned scheduler trains and is tested on)")
        return tuple(self.group(g) for g in self.split[part])

    def digest(self) -> str:
        """Digest of the expanded suite: every episode key with its scenario hash, policy
        and options (what a resumed sweep must agree with)."""
        items = [(e.group, e.case.hash, json.dumps(e.policy.to_dict(), sort_keys=True, default=str), e.drop_expired,
                  e.series) + e.key for e in self.episodes()]
        return hashlib.sha256(json.dumps(items, default=str).encode()).hexdigest()[:16]


def _split(value: Any, groups: list[Group], suite: str) -> dict[str, tuple[str, ...]]:
    """The validated train/test split: group names per part, disjoint in groups and in
    (scenario, seed) pairs."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise SuiteError(suite, "split", value, "a mapping with train and test (lists of group names)")
    _reject_unknown_keys(value, SPLIT_PARTS, suite, "split", "one of ")
    by_name = {g.name: g for g in groups}
    split: dict[str, tuple[str, ...]] = {}
    for part in SPLIT_PARTS:
        if part not in value:
            raise SuiteError(suite, f"split.{part}", None, "a non-empty list of group names")
        chosen = value[part]
        if not isinstance(chosen, list) or not chosen or not all(isinstance(g, str) for g in chosen):
            raise SuiteError(suite, f"split.{part}", chosen, "a non-empty list of group names")
        missing = [g for g in chosen if g not in by_name]
        if missing:
            raise SuiteError(suite, f"split.{part}", missing, "names of groups (" + ", ".join(by_name) + ")")
        if len(set(chosen)) != len(chosen):
            raise SuiteError(suite, f"split.{part}", chosen, "distinct group names")
        split[part] = tuple(chosen)
    both = sorted(set(split["train"]) & set(split["test"]))
    if both:
        raise SuiteError(suite, "split", both, "groups in train or in test, not in both")
    trained = {(c.name, s) for g in split["train"] for c in by_name[g].cases for s in by_name[g].seeds}
    shared = sorted({(c.name, s) for g in split["test"] for c in by_name[g].cases for s in by_name[g].seeds} & trained)
    if shared:
        raise SuiteError(suite, "split.test", [list(k) for k in shared[:5]],
                         "(scenario, seed) pairs that no train group has (test on other seeds)")
    return split


def _shortened(case: ScenarioCase, duration_s: float) -> ScenarioCase:
    sc = case.scenario
    if sc.duration_s <= duration_s:
        return case
    horizon = None if sc.horizon_s is None else min(sc.horizon_s, duration_s)
    short = sc.replace(duration_s=duration_s, horizon_s=horizon)
    return ScenarioCase(case.name, short, case.params, scenario_hash(short))


def _group(g: Any, where: str, suite: str, folder: Path, seeds: tuple[int, ...], drop: bool) -> Group:
    if not isinstance(g, Mapping):
        raise SuiteError(suite, where, g, "a group mapping with name, scenarios and policies")
    _reject_unknown_keys(g, _GROUP_KEYS, suite, where)
    name = g.get("name")
    if not isinstance(name, str) or not name:
        raise SuiteError(suite, f"{where}.name", name, "a group name")
    scen = g.get("scenarios")
    if not isinstance(scen, list) or not scen:
        raise SuiteError(suite, f"{where}.scenarios", scen, "a non-empty list of scenario entries")
    pols = g.get("policies")
    if not isinstance(pols, list) or not pols:
        raise SuiteError(suite, f"{where}.policies", pols, "a non-empty list of policy entries")
    cases: list[ScenarioCase] = []
    for i, entry in enumerate(scen):
        cases.extend(_expand_case(entry, folder, f"{where}.scenarios[{i}]", suite))
    policies: list[PolicySpec] = []
    for i, entry in enumerate(pols):
        policies.extend(_parse_policy(entry, f"{where}.policies[{i}]", suite))
    group_seeds = _seeds(g["seeds"], f"{where}.seeds", suite) if "seeds" in g else seeds
    return Group(name, str(g.get("title", name)), str(g.get("description", "")).strip(), tuple(cases),
                 tuple(policies), group_seeds, _series(g.get("series"), f"{where}.series", suite))


# ---------------------------------------------------------------------------------------
# Finding suites
# ---------------------------------------------------------------------------------------


def names() -> list[str]:
    """Names of the built-in suites, sorted."""
    return sorted(p.stem for p in SUITES_DIR.glob("*.yaml"))


def _read(path: Path, label: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise SuiteError(label, "file", str(path), f"a readable YAML file ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise SuiteError(label, "file", str(path), f"valid YAML ({exc})") from None
    if not isinstance(data, dict):
        raise SuiteError(label, "file", str(path), "a YAML mapping")
    return data


def load_suite(spec: str | Path | Mapping[str, Any], quick: bool = False) -> Suite:
    """A suite from a built-in name (:func:`names`), a YAML file or a mapping.

    Raises
    ------
    SuiteError
        For an unknown name, an unreadable file or an invalid field.
    """
    if isinstance(spec, Mapping):
        return Suite.from_dict(spec, quick=quick)
    text = str(spec)
    if text in names():
        path = SUITES_DIR / f"{text}.yaml"
        return Suite.from_dict(_read(path, text), SUITES_DIR, quick=quick, source=f"builtin:{text}")
    path = Path(text)
    if path.suffix in (".yaml", ".yml") or path.exists():
        path = path.resolve()
        return Suite.from_dict(_read(path, text), path.parent, quick=quick, source=str(path))
    raise SuiteError(text, "suite", text, "a built-in suite (" + ", ".join(names()) + ") or a YAML file")


def from_source(source: str, spec: Mapping[str, Any], quick: bool) -> Suite:
    """Rebuild a suite stored with results: the stored mapping, its relative files
    resolved as when it was run (built-ins against this installation's suites)."""
    if source.startswith("builtin:"):
        return Suite.from_dict(spec, SUITES_DIR, quick=quick, source=source)
    if source == "mapping":
        return Suite.from_dict(spec, quick=quick, source=source)
    return Suite.from_dict(spec, Path(source).parent, quick=quick, source=source)
