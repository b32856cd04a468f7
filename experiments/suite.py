"""Suites: grids of scenarios x policies x seeds, described in YAML.

A suite file (the built-ins live in ``experiments/suites/*.yaml``) names
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
    split: {train: [GROUP, ...], validation: [GROUP, ...], test: [GROUP, ...]}   # validation optional

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
Names are policy ids (:mod:`mpsched.envs.registry`, the same everywhere a policy is
named), resolved when the suite is planned:

- a hand-written scheduler (``mpsched list --policies``), or ``"*"`` for all of them;
- ``optimum``: the achievable optimum, ``mpsched.solvers.OfflineOptimum(**params)``: the
  best of the offline optimum's replay, every registered baseline and the group's other
  policies, so that its row is at least each of theirs;
- ``agent:NAME``: a learned scheduler, ``mpsched.agents.load(NAME, **params)``;
- ``module:Class``: a class importable from the current directory or ``PYTHONPATH``,
  built as ``Class(**params)``, whose instances have ``decide(obs)``. Importing it runs the
  module's code: a suite that names one is code, to be loaded only from sources you trust.

The optimum and agents run one episode per task with their own resources (by default
one CPU); baselines and user classes are batched, many episodes per task.

Limits
------
A suite plans at most 1,000,000 episodes (:data:`MAX_EPISODES`); ``seeds`` lists at most
100,000 seeds, each in ``[0, 2^63 - 1]`` (:data:`MAX_SEEDS`, :data:`MAX_SEED`); a scenario
entry's grid expands to at most 10,000 scenarios
(:data:`mpsched.experiments.grid.MAX_GRID_POINTS`). Larger studies are several suites.

Sensitivity
-----------
``sensitivity`` lists variants of the suite's groups, each the same claim re-evaluated
with one model choice changed (a report shows them beside the paper's claims):

.. code-block:: yaml

    sensitivity:
      - name: ideal-cc                 # letters, digits, '-', '_', '.'
        title: ideal congestion control
        groups: [trace]                # default: every group
        set: {"paths[*].cc": ideal}    # applied to every scenario entry, after its own set
        seeds: 3                       # default: the group's seeds
        policies: [dams, srpt-ecf]     # labels; default: the group's policies

A variant of group ``G`` is the group ``G@NAME`` whose scenarios are ``G``'s with the
variant's ``set`` applied, named ``SCENARIO@NAME``, with the same policies (or those
listed). Reports keep variants out of the suite's tables and evaluate each claim on them
as on ``G``.

Train/test split
----------------
``split`` names the groups whose scenarios and seeds a learned scheduler trains on
(``train``), optionally those it is evaluated on while it trains (``validation``: what
checkpoints and hyperparameters are chosen by, so that the test split is looked at
once), and the groups it is scored on (``test``, :mod:`mpsched.agents`). The lists are
disjoint and no (scenario, seed) pair is in two of them; a sweep runs every group as
usual.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from ..envs import registry
from ..envs.errors import PolicyError, SuiteError
from ..envs.pool import EpisodePool
from ..envs.results import EpisodeResult
from ..envs.scenario import Scenario
from ..envs.textfiles import exists, read_yaml
from .grid import ScenarioCase, expand_case, format_value, reject_unknown_keys, scenario_hash

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
    "shortened",
]

SUITES_DIR = Path(__file__).resolve().parent / "suites"
"""Folder of the built-in suites."""

SERIES_KINDS: tuple[str, ...] = ("blocks", "rbuf", "delivery")
"""Per-episode time series a group may ask the sweep to store: ``blocks`` (one row per
block: arrival, deadline, completion, size, priority, on time), ``rbuf`` (occupancy of
the in-order receive buffer, :meth:`EpisodeResult.receive_buffer`) and ``delivery``
(bytes handed to the application, :meth:`EpisodeResult.cumulative_delivery`)."""

_SUITE_KEYS = ("name", "title", "paper", "description", "seeds", "metrics", "rank_by", "derived", "drop_expired",
               "groups", "sensitivity", "figures", "claims", "quick", "split")
_GROUP_KEYS = ("name", "title", "description", "scenarios", "policies", "seeds", "series")
_POLICY_KEYS = ("name", "params", "label", "drop_expired", "resources")
_RESOURCE_KEYS = ("num_cpus", "num_gpus", "memory_gb")
_QUICK_KEYS = ("seeds", "duration_s", "groups", "policies")
_SENSITIVITY_KEYS = ("name", "title", "description", "groups", "set", "seeds", "policies")
VARIANT_MARK = "@"
"""Joins a group's or scenario's name and a sensitivity variant's: ``trace@ideal-cc``."""
_SERIES_KEYS = ("kinds", "seeds", "policies")
SPLIT_PARTS: tuple[str, ...] = ("train", "validation", "test")
REQUIRED_SPLIT_PARTS: tuple[str, ...] = ("train", "test")
DEFAULT_METRICS = ("on_time_rate", "weighted_on_time_rate", "high_priority_on_time_rate", "goodput_bps",
                    "efficiency", "bytes_wasted")


# ---------------------------------------------------------------------------------------
# Policies
# ---------------------------------------------------------------------------------------


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
        """What the name is (:data:`mpsched.envs.registry.KINDS`): ``baseline``,
        ``optimum``, ``agent``, ``lookahead`` or ``user`` (a ``module:Class``)."""
        return registry.kind(self.name)

    @property
    def batched(self) -> bool:
        """Whether episodes of this policy share tasks (baselines and user classes); the
        optimum and agents run one episode per task with their own resources."""
        return self.kind in ("baseline", "user")

    @property
    def native(self) -> bool:
        """Whether it runs in the C core (a baseline with a twin): cheap episodes."""
        found = registry.entry(self.name)
        return bool(found is not None and found.kind == "baseline" and getattr(found.load(), "native", None))

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "params": dict(self.params), "label": self.label}
        if self.drop_expired is not None:
            d["drop_expired"] = self.drop_expired
        if self.resources:
            d["resources"] = dict(self.resources)
        return d

    def build(self) -> Any:
        """A fresh policy object (or the optimum's runner): :func:`mpsched.envs.registry.make`.

        Raises
        ------
        PolicyError
            For an unknown name or parameter, a missing module or class, or an optimum or
            agent that this installation does not provide (naming the missing piece).
        """
        return registry.make(self.name, **self.params)

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
        if self.kind == "optimum":
            keep = {} if rival_results is None else rival_results
            candidates = {f"{p.label}{'+drop' if drop else ''} (suite)":
                          partial(_run_rival, p, scenario, seed, drop, keep) for p, drop in rivals}
            return policy.simulate(scenario, seed=seed, drop_expired=drop_expired, candidates=candidates)
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
    from ..envs.episode import build_episode
    from ..envs.simulate import simulate_episode

    return simulate_episode(build_episode(scenario, seed) if episode is None else episode, policy, drop_expired)


FIGURE_ID_RULE = "a name of letters, digits, '.', '_' and '-' starting with a letter or digit (it names a PNG file)"
_FIGURE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def figure_id_ok(value: Any) -> bool:
    """Whether a figure id is a plain file name: no folder, no way out of the report."""
    return isinstance(value, str) and _FIGURE_ID.fullmatch(value) is not None and ".." not in value


def _default_label(name: str, params: Mapping[str, Any]) -> str:
    if not params:
        return name
    return f"{name}(" + ",".join(f"{k}={format_value(v)}" for k, v in sorted(params.items())) + ")"


def _parse_policy(entry: Any, where: str, suite: str) -> list[PolicySpec]:
    if isinstance(entry, str):
        entry = {"name": entry}
    if not isinstance(entry, Mapping):
        raise SuiteError(suite, where, entry, "a policy name or a mapping with a name")
    reject_unknown_keys(entry, _POLICY_KEYS, suite, where)
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
        if params or entry.get("label"):
            raise SuiteError(suite, where, entry, "'*' (every baseline) without params or label")
        return [PolicySpec(n, {}, n, drop, dict(resources)) for n in registry.ids("baseline")]
    label = entry.get("label") or _default_label(name, params)
    if not isinstance(label, str):
        raise SuiteError(suite, f"{where}.label", label, "a string")
    spec = PolicySpec(name, dict(params), label, drop, {k: float(v) for k, v in resources.items()})
    try:
        kind = spec.kind
    except PolicyError as exc:
        raise SuiteError(suite, f"{where}.name", name, f"a policy id, or '*' for every baseline ({exc})") from None
    if kind in ("baseline", "lookahead"):
        try:
            spec.build()
        except PolicyError as exc:
            raise SuiteError(suite, f"{where}.params", dict(params), str(exc)) from None
    return [spec]


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
    variant_of: str = ""
    """For a sensitivity variant: the group it varies (empty for the suite's own groups)."""
    variant: str = ""
    """For a sensitivity variant: the variant's name."""


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


MAX_EPISODES = 1_000_000
"""Most episodes a suite may plan (groups x scenarios x policies x seeds)."""
MAX_SEEDS = 100_000
"""Most seeds a suite or group may list (a bound on the episodes it plans)."""
MAX_SEED = 2**63 - 1
"""Largest seed (the episode seed is a 64-bit signed integer downstream)."""


def _seeds(value: Any, where: str, suite: str) -> tuple[int, ...]:
    if isinstance(value, bool):
        raise SuiteError(suite, where, value, "a number of seeds or a list of seeds")
    if isinstance(value, int):
        if not 1 <= value <= MAX_SEEDS:
            raise SuiteError(suite, where, value, f"between 1 and {MAX_SEEDS} seeds")
        return tuple(range(value))
    if isinstance(value, list) and len(value) > MAX_SEEDS:
        raise SuiteError(suite, where, f"a list of {len(value)} seeds", f"at most {MAX_SEEDS} seeds")
    if isinstance(value, list) and value and all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= MAX_SEED
                                                  for s in value):
        if len(set(value)) != len(value):
            raise SuiteError(suite, where, value, "distinct seeds")
        return tuple(value)
    raise SuiteError(suite, where, value, "a number of seeds or a non-empty list of seeds in [0, 2^63 - 1]")


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
    reject_unknown_keys(value, _SERIES_KEYS, suite, where, "one of ")
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
        reject_unknown_keys({k: v for k, v in raw.items() if not str(k).startswith("x-")}, _SUITE_KEYS,
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
        groups += _sensitivity(raw.get("sensitivity"), groups, groups_raw, name, folder, seeds, drop_default)
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
                groups = [g for g in groups if (g.variant_of or g.name) in keep_groups]
            if keep_policies is not None:
                groups = [replace(g, policies=tuple(p for p in g.policies if p.label in keep_policies))
                          for g in groups]
            if quick_seeds is not None:
                groups = [replace(g, seeds=quick_seeds) for g in groups]
            if quick_duration is not None:
                groups = [replace(g, cases=tuple(shortened(c, float(quick_duration)) for c in g.cases))
                          for g in groups]
            kept = {g.name for g in groups}
            split = {part: tuple(g for g in split[part] if g in kept) for part in split}
        planned = sum(len(g.cases) * len(g.policies) * len(g.seeds) for g in groups)
        if planned > MAX_EPISODES:
            raise SuiteError(name, "groups", f"{planned} episodes (scenarios x policies x seeds)",
                             f"at most {MAX_EPISODES} episodes per suite; split it into several suites")
        figures = raw.get("figures", []) or []
        claims = raw.get("claims", []) or []
        for key, items in (("figures", figures), ("claims", claims)):
            if not isinstance(items, list) or not all(isinstance(x, Mapping) for x in items):
                raise SuiteError(name, key, items, "a list of mappings")
        for i, fig in enumerate(figures):
            if "id" in fig and not figure_id_ok(fig["id"]):
                raise SuiteError(name, f"figures[{i}].id", fig["id"], FIGURE_ID_RULE)
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
        """The groups of one part of the split (``"train"``, ``"validation"`` or ``"test"``).

        Raises
        ------
        SuiteError
            When the suite defines no split or not this part, or for another part.
        """
        if part not in SPLIT_PARTS:
            raise SuiteError(self.name, "split", part, "one of " + ", ".join(SPLIT_PARTS))
        if not self.split:
            raise SuiteError(self.name, "split", None, "a suite with a split: {train: [...], test: [...]} "
                             "(the groups a learned scheduler trains and is tested on)")
        if part not in self.split:
            raise SuiteError(self.name, f"split.{part}", None, "a list of group names (this suite has none)")
        return tuple(self.group(g) for g in self.split[part])

    def evaluation_part(self) -> str:
        """The part a learned scheduler is evaluated on while it trains: ``validation``
        when the suite has one, else ``test``."""
        return "validation" if "validation" in self.split else "test"

    def pool(self, part: str) -> EpisodePool:
        """The episodes of one part of the train/test split, each scenario with its
        group's seeds: what :func:`mpsched.agents.train.train` and
        :func:`mpsched.agents.evaluate.evaluate` take.

        Raises
        ------
        SuiteError
            As :meth:`split_groups`.
        """
        scenarios: list[Scenario] = []
        seeds: list[tuple[int, ...]] = []
        for group in self.split_groups(part):
            for case in group.cases:
                scenarios.append(case.scenario)
                seeds.append(tuple(group.seeds))
        return EpisodePool(tuple(scenarios), tuple(seeds), suite=self.name, part=part,
                           drop_expired=bool(self.spec.get("drop_expired", False)))

    def digest(self) -> str:
        """Digest of the expanded suite: every episode key with its scenario hash, policy
        and options (what a resumed sweep must agree with)."""
        items = [(e.group, e.case.hash, json.dumps(e.policy.to_dict(), sort_keys=True, default=str), e.drop_expired,
                  e.series) + e.key for e in self.episodes()]
        return hashlib.sha256(json.dumps(items, default=str).encode()).hexdigest()[:16]


def _split(value: Any, groups: list[Group], suite: str) -> dict[str, tuple[str, ...]]:
    """The validated split: group names per part, disjoint in groups and in (scenario,
    seed) pairs."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise SuiteError(suite, "split", value, "a mapping with train and test (lists of group names)")
    reject_unknown_keys(value, SPLIT_PARTS, suite, "split", "one of ")
    by_name = {g.name: g for g in groups}
    split: dict[str, tuple[str, ...]] = {}
    for part in SPLIT_PARTS:
        if part not in value:
            if part not in REQUIRED_SPLIT_PARTS:
                continue
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
    parts = list(split)
    for i, part in enumerate(parts):
        for other in parts[:i]:
            both = sorted(set(split[other]) & set(split[part]))
            if both:
                raise SuiteError(suite, "split", both, f"groups in {other} or in {part}, not in both")
            earlier = {(c.name, s) for g in split[other] for c in by_name[g].cases for s in by_name[g].seeds}
            shared = sorted({(c.name, s) for g in split[part] for c in by_name[g].cases for s in by_name[g].seeds}
                            & earlier)
            if shared:
                raise SuiteError(suite, f"split.{part}", [list(k) for k in shared[:5]],
                                 f"(scenario, seed) pairs that no {other} group has (use other seeds)")
    return split


def shortened(case: ScenarioCase, duration_s: float) -> ScenarioCase:
    """``case`` with its scenario cut to ``duration_s`` (and its horizon with it); the case
    itself when it is no longer."""
    sc = case.scenario
    if sc.duration_s <= duration_s:
        return case
    horizon = None if sc.horizon_s is None else min(sc.horizon_s, duration_s)
    short = sc.replace(duration_s=duration_s, horizon_s=horizon)
    return ScenarioCase(case.name, short, case.params, scenario_hash(short))


def _group(g: Any, where: str, suite: str, folder: Path, seeds: tuple[int, ...], drop: bool) -> Group:
    if not isinstance(g, Mapping):
        raise SuiteError(suite, where, g, "a group mapping with name, scenarios and policies")
    reject_unknown_keys(g, _GROUP_KEYS, suite, where)
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
        cases.extend(expand_case(entry, folder, f"{where}.scenarios[{i}]", suite))
    policies: list[PolicySpec] = []
    for i, entry in enumerate(pols):
        policies.extend(_parse_policy(entry, f"{where}.policies[{i}]", suite))
    group_seeds = _seeds(g["seeds"], f"{where}.seeds", suite) if "seeds" in g else seeds
    return Group(name, str(g.get("title", name)), str(g.get("description", "")).strip(), tuple(cases),
                 tuple(policies), group_seeds, _series(g.get("series"), f"{where}.series", suite))


def _sensitivity(value: Any, groups: list[Group], groups_raw: list[Any], suite: str, folder: Path,
                 seeds: tuple[int, ...], drop: bool) -> list[Group]:
    """The variant groups of a suite's ``sensitivity`` list (module docstring)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise SuiteError(suite, "sensitivity", value, "a list of variants (name, set, groups)")
    by_name = {g.name: (g, raw) for g, raw in zip(groups, groups_raw)}
    variants: list[Group] = []
    seen: set[str] = set()
    for i, entry in enumerate(value):
        where = f"sensitivity[{i}]"
        if not isinstance(entry, Mapping):
            raise SuiteError(suite, where, entry, "a mapping with name and set")
        reject_unknown_keys(entry, _SENSITIVITY_KEYS, suite, where)
        name = entry.get("name")
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name) or name in seen:
            raise SuiteError(suite, f"{where}.name", name, "a new name of letters, digits, '-', '_' and '.'")
        seen.add(name)
        sets = entry.get("set")
        if not isinstance(sets, Mapping) or not sets:
            raise SuiteError(suite, f"{where}.set", sets, "a non-empty mapping of dotted paths to values")
        varied = _strings(entry.get("groups", list(by_name)), f"{where}.groups", suite)
        unknown = [g for g in varied if g not in by_name]
        if unknown:
            raise SuiteError(suite, f"{where}.groups", unknown, "names of groups (" + ", ".join(by_name) + ")")
        title = str(entry.get("title", name))
        for group_name in varied:
            base, raw = by_name[group_name]
            scenarios: list[dict[str, Any]] = []
            for e in raw["scenarios"]:
                entry_spec: dict[str, Any] = {"base": e} if isinstance(e, str) else dict(e)
                entry_spec["set"] = {**(entry_spec.get("set") or {}), **sets}
                scenarios.append(entry_spec)
            spec = {**raw, "name": f"{group_name}{VARIANT_MARK}{name}", "scenarios": scenarios,
                    "title": f"{base.title} [{title}]", "description": str(entry.get("description", title))}
            if "seeds" in entry:
                spec["seeds"] = entry["seeds"]
            group = _group(spec, f"{where} ({group_name})", suite, folder, seeds, drop)
            cases = tuple(_renamed(c, f"{c.name}{VARIANT_MARK}{name}") for c in group.cases)
            policies = group.policies
            if "policies" in entry:
                wanted = _strings(entry["policies"], f"{where}.policies", suite)
                labels = [p.label for p in policies]
                missing = [p for p in wanted if p not in labels]
                if missing:
                    raise SuiteError(suite, f"{where}.policies", missing,
                                     f"labels of group {group_name}'s policies (" + ", ".join(labels) + ")")
                policies = tuple(p for p in policies if p.label in wanted)
            variants.append(replace(group, cases=cases, policies=policies, variant_of=group_name, variant=name))
    return variants


def _renamed(case: ScenarioCase, name: str) -> ScenarioCase:
    scenario = case.scenario.replace(name=name)
    return ScenarioCase(name, scenario, case.params, scenario_hash(scenario))


# ---------------------------------------------------------------------------------------
# Finding suites
# ---------------------------------------------------------------------------------------


def names() -> list[str]:
    """Names of the built-in suites, sorted."""
    return sorted(p.stem for p in SUITES_DIR.glob("*.yaml"))


def _read(path: Path, label: str) -> dict[str, Any]:
    data = read_yaml(path)
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
    if path.suffix in (".yaml", ".yml") or exists(path):
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
