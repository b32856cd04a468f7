"""One registry of policy ids (mpsched.envs.registry), accepted alike everywhere.

Every kind of id (a hand-written scheduler with parameters, the optimum, a learned agent,
a user's module:Class) goes through ``simulate``, ``mpsched run --policy`` and a suite to
the same episode; an unknown id is rejected by all three with the same suggestion. The
layering the registry makes possible (no module of ``envs`` imports a layer above it) is
read from the source.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import textwrap
from pathlib import Path

import pytest
from mpsched.envs import PolicyError, registry, scenarios, simulate
from mpsched.experiments.cli import main
from mpsched.experiments.suite import SuiteError, load_suite

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = scenarios.get("dams-rtt-40").replace(duration_s=2.0)

USER_MODULE = textwrap.dedent('''
    class FirstSendable:
        """The oldest sendable block, on whichever path asks."""

        name = "first-sendable"

        def __init__(self, skip_high_priority=False):
            self.skip_high_priority = skip_high_priority

        def decide(self, obs):
            sendable = obs.sendable()
            return int(sendable[0]) if len(sendable) else -1
''')


def scores(result: object) -> dict:
    """A result's summary less its wall-clock time."""
    return {k: v for k, v in result.summary.items() if k != "wall_s"}  # type: ignore[attr-defined]


def _needs(module: str) -> list[pytest.MarkDecorator]:
    try:
        importlib.import_module(module)
    except ImportError:
        return [pytest.mark.skip(reason=f"{module} is not installed")]
    return []


KINDS = [
    pytest.param("dams-robust", {"alpha": 0.5}, "baseline", "dams-robust", id="baseline"),
    pytest.param("optimum", {"time_limit_s": 30.0}, "optimum", "optimum", id="optimum",
                 marks=_needs("ortools")),
    pytest.param("agent:default", {}, "agent", "agent:default", id="agent", marks=_needs("torch")),
    pytest.param("registry_user_policy:FirstSendable", {"skip_high_priority": True}, "user", "first-sendable",
                 id="user"),
]


@pytest.fixture
def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "registry_user_policy.py").write_text(USER_MODULE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("policy_id, params, kind, name", KINDS)
def test_every_kind_of_id_is_accepted_alike_everywhere(policy_id: str, params: dict, kind: str, name: str,
                                                       user_module: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert registry.kind(policy_id) == kind
    made = registry.make(policy_id, **params)
    for key, value in params.items():
        assert getattr(made, key) == value

    by_id = simulate(SCENARIO, policy_id, seed=3)
    assert by_id.policy == name
    assert scores(by_id) == scores(simulate(SCENARIO, registry.make(policy_id), seed=3))
    by_object = simulate(SCENARIO, made, seed=3)
    assert by_object.policy == name

    scenario_file = user_module / "scenario.yaml"
    scenario_file.write_text(SCENARIO.to_yaml())
    argv = ["run", "--scenario", str(scenario_file), "--policy", policy_id, "--seed", "3", "--json"]
    for key, value in params.items():
        argv += ["--param", f"{key}={value}"]
    assert main(argv) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["policy"] == name
    assert row["weighted_on_time_rate"] == pytest.approx(by_object.summary["weighted_on_time_rate"], abs=0)

    suite = load_suite({"name": "ids", "seeds": [3], "groups": [{
        "name": "g", "scenarios": [{"base": SCENARIO.to_dict()}],
        "policies": [{"name": policy_id, "params": params}]}]})
    spec = suite.groups[0].policies[0]
    assert spec.kind == kind
    in_suite = spec.run(suite.groups[0].cases[0].scenario, 3, False)
    assert scores(in_suite) == scores(by_object)


@pytest.mark.parametrize("bad, close", [("damz", "'dams'"), ("srpt_ecf", "'srpt-ecf'"), ("optimun", "'optimum'")])
def test_an_unknown_id_is_rejected_alike_everywhere_with_the_closest_names(
        bad: str, close: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(PolicyError, match=f"unknown policy '{bad}'; did you mean {close}"):
        registry.make(bad)
    with pytest.raises(PolicyError, match=f"did you mean {close}"):
        simulate(SCENARIO, bad)
    assert main(["run", "--scenario", "dams-rtt-40", "--policy", bad]) != 0
    assert f"unknown policy '{bad}'; did you mean {close}" in capsys.readouterr().err
    with pytest.raises(SuiteError, match=f"policies\\[0\\].name: got '{bad}'.*did you mean {close}"):
        load_suite({"name": "ids", "seeds": 1, "groups": [{"name": "g", "scenarios": ["dams-rtt-40"],
                                                             "policies": [bad]}]})


def test_parameters_are_checked_by_name_for_every_kind(user_module: Path) -> None:
    with pytest.raises(PolicyError, match="policy 'dams' takes no parameter 'alpha'; its parameters: change_threshold"):
        registry.make("dams", alpha=1.0)
    with pytest.raises(PolicyError, match="policy 'minrtt' takes no parameter 'x'; it has no parameters"):
        registry.make("minrtt", x=1)
    with pytest.raises(PolicyError, match="takes no parameter 'alpha'; its parameters: skip_high_priority"):
        registry.make("registry_user_policy:FirstSendable", alpha=1)
    with pytest.raises(PolicyError, match="policy 'dtp': priority_weight must be in \\[0, 1\\]"):
        registry.make("dtp", priority_weight=2.0)
    assert registry.parse_param("registry_user_policy:FirstSendable", "skip_high_priority=yes") == \
        ("skip_high_priority", True)
    with pytest.raises(PolicyError, match="module 'registry_user_policy' has no attribute 'Nope'"):
        registry.make("registry_user_policy:Nope")
    with pytest.raises(PolicyError, match="'getoutput' is not a class"):
        registry.make("subprocess:getoutput", cmd="echo ran")
    with pytest.raises(PolicyError, match="cannot import module 'no_such_module_here'"):
        registry.make("no_such_module_here:X")
    with pytest.raises(PolicyError, match="policy 'agent:': expected agent:NAME"):
        registry.make("agent:")


def test_ids_list_every_kind() -> None:
    listed = registry.ids()
    assert {"minrtt", "dams", "optimum", "agent:NAME"} <= set(listed)
    assert set(registry.ids("baseline")) >= {"minrtt", "dams", "srpt-ecf"}
    assert "optimum" not in registry.ids("baseline")
    assert registry.ids("optimum") == ["optimum"]


def test_a_missing_extra_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry._ENTRIES, "needs-extra",
                        registry.PolicyEntry("needs-extra", "mpsched_no_such_package.mod:Policy", "optimum", "solve"))
    with pytest.raises(PolicyError, match=r"policy 'needs-extra' needs mpsched_no_such_package.mod "
                                          r"\(pip install 'mpsched\[solve\]'\)"):
        registry.make("needs-extra")


def test_installed_packages_register_through_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    """A package declaring ``[project.entry-points."mpsched.policies"]`` adds its ids."""
    calls = []

    def register_plugin() -> None:
        calls.append(1)
        registry.register("plugin-minrtt", "mpsched.baselines.classic:MinRTT")

    class FakeEntryPoint:
        name, value = "plugin", "plugin_package:register_plugin"

        def load(self) -> object:
            return register_plugin

    def fake_entry_points(group: str) -> list[FakeEntryPoint]:
        return [FakeEntryPoint()] if group == registry.ENTRY_POINT_GROUP else []

    monkeypatch.setattr(importlib.metadata, "entry_points", fake_entry_points)
    monkeypatch.setattr(registry, "_LOADED", set())
    monkeypatch.setattr(registry, "_ENTRIES", dict(registry._ENTRIES))
    assert registry.make("plugin-minrtt").name == "minrtt"
    assert scores(simulate(SCENARIO, "plugin-minrtt", seed=1)) == scores(simulate(SCENARIO, "minrtt", seed=1))
    registry.ids()
    assert calls == [1]


# ---------------------------------------------------------------------------------------
# Layering: read from the imports
# ---------------------------------------------------------------------------------------

LAYERS = ("envs", "baselines", "solvers", "agents", "experiments")
"""From the bottom up: a module may import its own layer and those below it."""


def _imported_packages(path: Path, package: str) -> set[str]:
    """The mpsched subpackages a module imports (absolute and relative, anywhere in it)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    parts = package.split(".")
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = parts[: len(parts) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            names = [module] + [f"{module}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            bits = name.split(".")
            if bits[0] == "mpsched" and len(bits) > 1 and bits[1] in LAYERS:
                found.add(bits[1])
    return found


def _modules(layer: str) -> list[tuple[Path, str]]:
    out = []
    for path in sorted((ROOT / layer).rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        out.append((path, ".".join(["mpsched", *rel.parts[:-1]])))
    return out


@pytest.mark.parametrize("layer", LAYERS)
def test_no_module_imports_a_layer_above_its_own(layer: str) -> None:
    allowed = set(LAYERS[: LAYERS.index(layer) + 1])
    offending = {}
    for path, package in _modules(layer):
        above = _imported_packages(path, package) - allowed
        if above:
            offending[str(path.relative_to(ROOT))] = sorted(above)
    assert not offending


def test_the_import_reader_sees_upward_imports(tmp_path: Path) -> None:
    """The check above can fail: each form of an upward import is seen."""
    for source in ("from ..baselines import get", "from .. import agents", "import mpsched.experiments.cli",
                   "from mpsched.solvers.replay import optimum", "def f():\n    from ..experiments import suite"):
        module = tmp_path / "m.py"
        module.write_text(source + "\n")
        assert _imported_packages(module, "mpsched.envs") & {"baselines", "agents", "experiments", "solvers"}, source
    module.write_text("from .errors import PolicyError\nfrom . import registry\n")
    assert _imported_packages(module, "mpsched.envs") == {"envs"}
