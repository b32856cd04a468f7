"""The learned schedulers' benchmark protocol: the split's validation part, several
training seeds with their learning curve, tiers, and scores per held-out family with
confidence intervals over the seeds (mpsched.experiments.agent_protocol, mpsched train/evaluate)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("sb3_contrib")

import yaml  # noqa: E402
from mpsched.agents.model import read_meta  # noqa: E402
from mpsched.envs import MpschedError, simulate  # noqa: E402
from mpsched.experiments.agent_protocol import HEURISTICS, family_table, learning_curves, tier_budget  # noqa: E402
from mpsched.experiments.cli import main  # noqa: E402
from mpsched.experiments.suite import SuiteError, load_suite  # noqa: E402

FAST = ["n_envs=4", "n_steps=64", "batch_size=64", "n_epochs=1", "expert_steps=200", "bc_epochs=1", "eval_episodes=1",
        "eval_freq=128", "checkpoint_freq=100000"]


def protocol_suite(folder: Path) -> Path:
    """Train on two seconds of dams-rtt-40; validate on other seeds of it; test on a
    family of two paths and one of three."""
    def group(name: str, base: str, seeds: list[int], policies: list[str], **extra: object) -> dict:
        scenario = {"name": f"{name}-short", "base": base, "set": {"duration_s": 2.0, **extra}}
        return {"name": name, "seeds": seeds, "scenarios": [scenario], "policies": policies}

    three = {"paths": [{"name": f"p{i}", "bandwidth": {"type": "constant", "mbps": m}, "rtt_ms": r}
                       for i, (m, r) in enumerate(((1.5, 10), (2.0, 40), (1.0, 80)))]}
    groups = [group("train", "dams-rtt-40", [0, 1], ["minrtt"]),
              group("validation", "dams-rtt-40", [5], ["minrtt"]),
              group("test-two", "dams-dynamic-1-rtt-40", [7], ["dams", "edf"]),
              group("test-three", "dams-rtt-40", [7], ["dams", "edf"], **three)]
    path = folder / "protocol.yaml"
    path.write_text(yaml.safe_dump({"name": "protocol", "groups": groups,
                                    "split": {"train": ["train"], "validation": ["validation"],
                                              "test": ["test-two", "test-three"]}}))
    return path


def test_the_validation_part_is_optional_and_disjoint_from_the_others(tmp_path: Path) -> None:
    suite = load_suite(str(protocol_suite(tmp_path)))
    assert suite.evaluation_part() == "validation"
    assert [g.name for g in suite.split_groups("validation")] == ["validation"]
    raw = yaml.safe_load((tmp_path / "protocol.yaml").read_text())
    raw["groups"][1]["seeds"] = [1]  # the validation group on a training episode
    raw["groups"][1]["scenarios"][0]["name"] = "train-short"
    (tmp_path / "clash.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(SuiteError, match=r"split\.validation: got \[\['train-short', 1\]\].*no train group has"):
        load_suite(str(tmp_path / "clash.yaml"))
    del raw["split"]["validation"]
    raw["groups"][1]["seeds"] = [5]
    (tmp_path / "plain.yaml").write_text(yaml.safe_dump(raw))
    plain = load_suite(str(tmp_path / "plain.yaml"))
    assert plain.evaluation_part() == "test"
    with pytest.raises(SuiteError, match=r"split\.validation: got None; expected a list of group names"):
        plain.split_groups("validation")


def test_the_agents_suite_holds_a_family_out_in_each_dimension() -> None:
    suite = load_suite("agents")
    train = [c.scenario for g in suite.split_groups("train") for c in g.cases]
    test = {g.name: [c.scenario for c in g.cases] for g in suite.split_groups("test")}
    assert {s.workload["type"] for s in train} == {"avc"}
    assert {s.workload["type"] for s in test["test-workload"]} == {"web", "bulk"}
    assert max(len(s.paths) for s in train) == 2 and {len(s.paths) for s in test["test-paths"]} == {3}
    train_rtts = {p.rtt_s for s in train for p in s.paths}
    assert min(p.rtt_s for s in test["test-rtt"] for p in s.paths[1:]) > max(train_rtts)
    train_files = {str(p.bandwidth.get("file", "")) for s in train for p in s.paths if p.bandwidth}
    assert all("hsdpa" in str(p.bandwidth["file"]) for s in test["test-hsdpa"] for p in s.paths)
    assert not any("hsdpa" in f for f in train_files)
    assert suite.evaluation_part() == "validation"
    for g in suite.split_groups("test"):
        assert set(HEURISTICS) <= {p.label for p in g.policies}, g.name


def test_tiers_split_their_budget_between_cloning_and_learning() -> None:
    assert tier_budget("100k", from_expert=True) == (50_000, 50_000)
    assert tier_budget("1m", from_expert=False) == (0, 1_000_000)
    with pytest.raises(MpschedError, match="tier: got '10k'; expected one of 100k, 1m"):
        tier_budget("10k", True)


def test_the_family_table_gives_the_model_a_ci_over_seeds_and_none_where_it_cannot_act() -> None:
    results = {p: simulate({"name": "fam", "duration_s": 2.0, "paths": [
        {"name": "p1", "bandwidth": {"type": "constant", "mbps": 2.0}, "rtt_ms": 10}],
        "workload": {"type": "avc", "fps": 30, "bitrate_mbps": 2.0, "deadline_ms": 200}}, p, seed=0)
        for p in ("dams", "edf", "minrtt")}
    seeds = [[results["minrtt"]], [results["edf"]], [results["dams"]]]
    rows = family_table(seeds, [results["dams"], results["edf"]], {"one": ["fam"], "none": ["other"]}, 2)
    scores = [results[p].summary["weighted_on_time_rate"] for p in ("minrtt", "edf", "dams")]
    one = rows[0]
    assert one["model_seeds"] == scores and math.isclose(one["model_mean"], sum(scores) / 3)
    assert one["model_ci95"] > 0 or len(set(scores)) == 1
    assert one["best_heuristic"] in ("dams", "edf") and one["margin"] == one["model_mean"] - one[one["best_heuristic"]]
    assert rows[1]["model_note"] == "the model observes 2 paths" and math.isnan(rows[1]["model_mean"])


def test_three_seeds_train_and_evaluate_into_a_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = protocol_suite(tmp_path)
    out = tmp_path / "runs"
    assert main(["train", "--algo", "maskable_ppo", "--suite", str(suite), "--from-expert", "dams",
                 "--timesteps", "256", "--seeds", "0", "1", "2", "--out", str(out), "--no-progress"]
                + [f"--hp={h}" for h in FAST]) == 0
    printed = capsys.readouterr().out
    assert "evaluations during training on the validation split" in printed
    dirs = [out / f"seed-{s}" for s in (0, 1, 2)]
    metas = [read_meta(d) for d in dirs]
    assert [m["seed"] for m in metas] == [0, 1, 2] and {m["max_paths"] for m in metas} == {3}
    curves = learning_curves(dirs)
    # the clone (before any step), then every 128 steps, on top of the 200 cloned decisions
    assert [c["decisions"] for c in curves] == [200, 328, 456] and {c["split"] for c in curves} == {"validation"}
    assert all(len(c["values"]) == 3 for c in curves)
    lines = (out / "curves.csv").read_text().splitlines()
    assert lines[0] == "decisions,seed,weighted_on_time_rate" and len(lines) == 1 + 3 * 3
    report = tmp_path / "report"
    assert main(["evaluate", "--model", str(out), "--suite", str(suite), "--baselines", "dams,edf",
                 "--report", str(report), "--no-progress"]) == 0
    text = (report / "README.md").read_text()
    assert "## Learning curve (evaluations during training: validation split)" in text and "| 456 |" in text
    assert "| test-two |" in text and "| test-three |" in text and "n/a" not in text
    assert (report / "figures" / "learning-curve.png").stat().st_size > 0
    printed = capsys.readouterr().out
    assert "over 3 training seed(s)" in printed
    for family in ("test-two", "test-three"):  # each family's score carries its interval over the seeds
        assert re.search(rf"\| {family} \| \d\.\d{{4}} ± \d\.\d{{4}} \|", text), family
    assert main(["evaluate", "--model", str(out), "--suite", str(suite), "--baselines", "dams", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert [m["model"] for m in printed["models"]] == [str(d) for d in dirs]
    assert all(m["scenarios"] for m in printed["models"])
    assert {f["family"] for f in printed["families"]} == {"test-two", "test-three"}
    assert all(f["model_ci95"] is not None and "dams" in f for f in printed["families"])


def test_a_two_path_model_has_no_score_on_three_paths(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = protocol_suite(tmp_path)
    raw = yaml.safe_load(suite.read_text())
    raw["groups"] = raw["groups"][:3]
    raw["split"]["test"] = ["test-two"]
    two_paths = tmp_path / "two-paths.yaml"
    two_paths.write_text(yaml.safe_dump(raw))
    model = tmp_path / "two-path-model"
    assert main(["train", "--algo", "bc", "--suite", str(two_paths), "--timesteps", "200", "--out", str(model),
                 "--no-progress"] + [f"--hp={h}" for h in ("bc_epochs=1", "eval_episodes=1")]) == 0
    assert read_meta(model)["max_paths"] == 2
    capsys.readouterr()
    assert main(["evaluate", "--model", str(model), "--suite", str(suite), "--baselines", "dams",
                 "--report", str(tmp_path / "r"), "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert "no episodes of the model on test-three-short: more paths than the 2 it observes" in captured.err
    text = (tmp_path / "r" / "README.md").read_text()
    assert "| test-three | n/a (the model observes 2 paths) |" in text
