"""The README's examples run as written.

Its scenarios are saved under the names the text gives them (with the Mahimahi trace it
mentions), its scheduler class as ``my_scheduler.py``, its suite as ``mine.yaml``; the
Python blocks run in order in one namespace and the suite's commands run as printed.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from mpsched.envs import simulate
from mpsched.experiments import cli
from mpsched.experiments.suite import load_suite

README = Path(__file__).resolve().parent.parent / "README.md"


def blocks(lang: str) -> list[str]:
    """The README's fenced blocks of one language, in order (``""`` for unlabelled ones)."""
    return [m.group(2) for m in re.finditer(r"^```(\w*)\n(.*?)^```$", README.read_text(), re.S | re.M)
            if m.group(1) == lang]


def scenario_blocks() -> list[str]:
    return [b for b in blocks("yaml") if "groups:" not in b]


def write_examples(folder: Path) -> None:
    """The files the README's examples name, written where it says they are."""
    (folder / "traces").mkdir()
    # a Mahimahi trace: one 1500-byte delivery opportunity per line, 4 per ms (48 Mbit/s)
    (folder / "traces" / "wifi.down").write_text("".join(f"{ms}\n" * 4 for ms in range(1, 101)))
    (folder / "wifi-lte.yaml").write_text(scenario_blocks()[0])
    (folder / "mine.yaml").write_text(next(b for b in blocks("yaml") if "groups:" in b))
    scheduler = next(b for b in blocks("python") if "class EarliestDeadline" in b)
    (folder / "my_scheduler.py").write_text(scheduler.split("\nsimulate(")[0])


def test_every_scenario_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    write_examples(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert len(scenario_blocks()) == 2
    assert cli.main(["run", "--scenario", "wifi-lte.yaml", "--policy", "dams"]) == 0  # as the README says
    assert "scenario: wifi-lte  policy: dams  blocks: 900" in capsys.readouterr().out
    (tmp_path / "shared.yaml").write_text(scenario_blocks()[1])
    result = simulate("shared.yaml", "minrtt", seed=0)
    assert result.summary["n_blocks"] > 0 and len(result.paths) == 2


def test_the_suite_example_loads_with_its_scenario_and_class(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_examples(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    suite = load_suite("mine.yaml")
    episodes = suite.episodes()
    assert len(episodes) == 5 * (5 + 2) * 3
    assert {e.case.name for e in episodes} >= {"wifi-lte-newreno", "wifi-lte-cubic", "dams-rtt-200"}
    first = next(e for e in episodes if e.policy.name == "my_scheduler:EarliestDeadline"
                 and e.case.name == "wifi-lte-cubic")
    result = simulate(first.case.scenario, first.policy.build(), seed=first.seed)
    assert result.summary["n_blocks"] > 0


@pytest.mark.slow
def test_every_python_example_runs_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    for code in blocks("python"):
        exec(compile(code, str(README), "exec"), namespace)
    assert "EarliestDeadline" in namespace and "vec" in namespace


@pytest.mark.slow
def test_the_suite_commands_run_as_printed(tmp_path: Path) -> None:
    write_examples(tmp_path)
    commands = [line.split("#")[0].strip() for b in blocks("") for line in b.splitlines()
                if line.startswith("mpsched sweep mine.yaml") or line.startswith("mpsched report results/mine")]
    assert len(commands) == 3
    for command in commands:
        argv = shlex.split(command)
        done = subprocess.run([sys.executable, "-m", "mpsched.experiments.cli", *argv[1:], *(
            ["--no-progress"] if argv[1] == "sweep" else [])], cwd=tmp_path, capture_output=True, text=True,
            env={**os.environ, "PYTHONPATH": str(tmp_path), "RAY_AUTH_MODE": "disabled"})
        assert done.returncode == 0, (command, done.stderr[-2000:])
    assert (tmp_path / "reports" / "mine" / "README.md").exists()
