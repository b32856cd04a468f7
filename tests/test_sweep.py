"""Sweeps: task planning, rows equal to simulate(), parquet storage, resume, compaction,
failures, and the same rows on Ray as in process."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mpsched.envs import simulate
from mpsched.experiments import sweep
from mpsched.experiments.suite import Suite, load_suite
from mpsched.experiments.sweep import (
    KEY_COLUMNS,
    TIMING_COLUMNS,
    Provenance,
    ResultStore,
    SweepError,
    Task,
    load_results,
    plan_tasks,
    run_sweep,
    run_task,
)

pytest.importorskip("pyarrow", reason="storing results needs pyarrow (the sweep extra)")

SUITE = {
    "name": "unit",
    "seeds": 2,
    "groups": [
        {"name": "video", "scenarios": [{"base": "dams-rtt-{r}", "grid": {"r": [40, 120]}}],
         "policies": ["minrtt", "dams", {"name": "edf", "label": "edf-drop", "drop_expired": True}],
         "series": {"kinds": ["blocks"], "seeds": [0]}},
        {"name": "inorder", "scenarios": [{"name": "inorder", "base": {
            "duration_s": 3, "transport": {"mss_bytes": 1500},
            "receiver": {"type": "in_order", "rbuf_bytes": 35000, "sequence": "stream"},
            "paths": [{"bandwidth": 1, "rtt_ms": 20}, {"bandwidth": 2, "rtt_ms": 100}],
            "workload": {"type": "bulk", "rate_mbps": 12, "chunk_bytes": 1500}}}],
         "policies": ["blind-rr", "daps"], "series": ["rbuf", "delivery"]},
    ],
}


def unit_suite(**changes: object) -> Suite:
    return load_suite({**SUITE, **changes})


def comparable(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows without the columns that differ between runs of the same episode."""
    return rows.drop(columns=[c for c in TIMING_COLUMNS if c in rows]).reset_index(drop=True)


def test_plan_batches_by_scenario_and_seed_and_isolates_the_optimum() -> None:
    suite = load_suite({"name": "p", "seeds": 3, "groups": [{
        "name": "g", "scenarios": ["dams-rtt-40", "dams-rtt-80"],
        "policies": ["minrtt", "dams", "rr", {"name": "optimum", "resources": {"num_cpus": 2}}]}]})
    episodes = suite.episodes()
    tasks = plan_tasks(episodes, workers=2)
    assert sorted(k for t in tasks for k in (e.key for e in t.episodes)) == sorted(e.key for e in episodes)
    solo = [t for t in tasks if t.episodes[0].policy.kind == "optimum"]
    assert len(solo) == 6 and all(len(t.episodes) == 1 and t.ray_options()["num_cpus"] == 2 for t in solo)
    batched = [t for t in tasks if t not in solo]
    assert all(e.policy.batched for t in batched for e in t.episodes)
    # sorted by (scenario, seed): a task runs every policy of a built episode in a row
    order = [(e.case.name, e.seed) for t in batched for e in t.episodes]
    assert order == sorted(order)
    capped = plan_tasks(episodes, workers=1, max_episodes=2)
    assert max(len(t.episodes) for t in capped) <= 2


def test_an_agent_rides_in_its_optimums_task_and_runs_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The optimum runs the group's agent as a candidate; the agent's own episode of the
    same scenario and seed joins the optimum's task and takes that result instead of
    running again. Its row is the agent's, at most the optimum's."""
    pytest.importorskip("ortools", reason="the optimum needs OR-Tools (the solve extra)")
    pytest.importorskip("torch", reason="the agent needs the rl extra")
    from mpsched.experiments.suite import PolicySpec

    suite = load_suite({"name": "ride", "seeds": 2, "groups": [{
        "name": "g", "scenarios": [{"name": "short", "base": "dams-dynamic-1-rtt-40", "set": {"duration_s": 2}}],
        "policies": ["minrtt", "optimum", "agent:default"]}]})
    tasks = plan_tasks(suite.episodes(), workers=2)
    riding = [t for t in tasks if t.episodes[0].policy.kind == "optimum"]
    assert [[e.policy.label for e in t.episodes] for t in riding] == [["optimum", "agent:default"]] * 2
    assert all(e.seed == t.episodes[0].seed for t in riding for e in t.episodes)
    assert not any(e.policy.kind == "agent" for t in tasks if t not in riding for e in t.episodes)
    built = []
    build = PolicySpec.build

    def counting(self: PolicySpec) -> object:
        built.append(self.label)
        return build(self)

    monkeypatch.setattr(PolicySpec, "build", counting)
    result = run_task(riding[0], Provenance("test", "abc"))
    assert not result.failures and built == ["optimum", "agent:default"]
    optimum, agent = result.rows
    alone = next(e for e in suite.episodes() if e.policy.kind == "agent" and e.seed == riding[0].episodes[0].seed)
    again = alone.policy.run(alone.case.scenario, alone.seed, alone.drop_expired)
    assert agent["weighted_on_time_rate"] == again.summary["weighted_on_time_rate"]
    assert agent["policy_name"] == again.policy != "optimum"
    assert agent["weighted_on_time_rate"] <= optimum["weighted_on_time_rate"] <= optimum["upper_bound"]


def test_task_rows_equal_simulate() -> None:
    """A task builds each (scenario, seed) once and runs every policy on it; its rows
    hold what simulate() gives, plus the key, provenance and path throughputs."""
    suite = unit_suite()
    episodes = [e for e in suite.episodes() if e.group == "video"]
    result = run_task(Task(tuple(episodes)), Provenance("9.9", "abc"))
    assert not result.failures and len(result.rows) == len(episodes)
    for e, row in zip(episodes, result.rows):
        ref = simulate(e.case.scenario, e.policy.build(), seed=e.seed, drop_expired=e.drop_expired)
        for k, v in ref.row().items():
            if k in ("wall_s", "policy"):
                continue
            assert row[k] == v or (isinstance(v, float) and math.isnan(v) and math.isnan(row[k])), (e.key, k)
        assert (row["suite"], row["scenario"], row["policy"], row["seed"]) == e.key
        assert row["path1_throughput_bps"] == pytest.approx(float(ref.paths.loc[1, "throughput_bps"]))
        assert row["mpsched_version"] == "9.9" and row["git_rev"] == "abc" and row["scenario_hash"] == e.case.hash
        assert json.loads(row["policy_spec"])["name"] == e.policy.name
        assert math.isnan(row["upper_bound"])
    assert {k for k, _, _ in result.series} == {"blocks"}
    assert {key for _, key, _ in result.series} == {e.key for e in episodes if e.seed == 0}


def test_local_sweep_stores_rows_and_series(tmp_path: Path) -> None:
    suite = unit_suite()
    stats = run_sweep(suite, tmp_path / "r", executor="local", progress=False)
    assert stats.ok and stats.ran == len(suite.episodes()) == 16
    (res,) = load_results(tmp_path / "r")
    rows = res.rows
    assert list(rows.columns[:5]) == list(KEY_COLUMNS) + ["group"]
    assert len(rows) == 16 and not rows.duplicated(list(KEY_COLUMNS)).any()
    assert rows[list(KEY_COLUMNS)].equals(rows[list(KEY_COLUMNS)].sort_values(list(KEY_COLUMNS)))
    assert rows.loc[rows["policy"] == "daps", "mean_rbuf_bytes"].notna().all()
    # once complete, the task files are merged into one
    assert [f.name.split("-")[0] for f in (tmp_path / "r" / "rows").glob("*.parquet")] == ["merged"]
    blocks = res.series("blocks")
    assert set(map(tuple, blocks[list(KEY_COLUMNS)].drop_duplicates().itertuples(index=False))) == \
        {e.key for e in suite.episodes() if e.group == "video" and e.seed == 0}
    rbuf = res.series("rbuf")
    assert set(rbuf["policy"]) == {"blind-rr", "daps"} and (rbuf["rbuf_bytes"] <= 35000).all()
    manifest = res.manifest
    assert manifest["suite"] == "unit" and [g["name"] for g in manifest["layout"]] == ["video", "inorder"]


def test_existing_results_need_resume(tmp_path: Path) -> None:
    suite = unit_suite()
    run_sweep(suite, tmp_path, executor="local", progress=False)
    with pytest.raises(SweepError, match="--resume"):
        run_sweep(suite, tmp_path, executor="local", progress=False)
    again = run_sweep(suite, tmp_path, executor="local", progress=False, resume=True)
    assert again.skipped == 16 and again.ran == 0
    other = unit_suite(seeds=3)
    with pytest.raises(SweepError, match="different suite"):
        run_sweep(other, tmp_path, executor="local", progress=False, resume=True)


def test_resume_runs_only_the_missing_keys(tmp_path: Path) -> None:
    """Remove some task files of an uncompacted sweep: a resumed sweep re-runs exactly
    those keys and the result equals a clean run."""
    suite = unit_suite()
    clean = tmp_path / "clean"
    run_sweep(suite, clean, executor="local", progress=False)
    partial = tmp_path / "partial"
    run_sweep(suite, partial, executor="local", progress=False, compact=False, max_episodes_per_task=3)
    parts = sorted((partial / "rows").glob("part-*.parquet"))
    assert len(parts) >= 4
    for f in parts[::2]:
        f.unlink()
    kept = ResultStore(partial).keys()
    stats = run_sweep(suite, partial, executor="local", progress=False, resume=True)
    assert stats.skipped == len(kept) and stats.ran == 16 - len(kept)
    pd.testing.assert_frame_equal(comparable(load_results(partial)[0].rows), comparable(load_results(clean)[0].rows))


def test_a_truncated_row_file_is_named_then_moved_aside_and_rerun_by_resume(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A task file cut short (as by a crash mid-write): reading the results names it and
    says how to recover; a resumed sweep moves it to damaged/ and runs its episodes again,
    giving the rows of a clean run with none lost or duplicated."""
    suite = unit_suite()
    clean = tmp_path / "clean"
    run_sweep(suite, clean, executor="local", progress=False)
    partial = tmp_path / "partial"
    run_sweep(suite, partial, executor="local", progress=False, compact=False, max_episodes_per_task=3)
    victim = sorted((partial / "rows").glob("part-*.parquet"))[1]
    lost = len(pd.read_parquet(victim))
    victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])
    with pytest.raises(SweepError, match=f"{victim.name}: not a readable row file .*--resume\\) moves it to"):
        load_results(partial)
    from mpsched.experiments.cli import main

    assert main(["report", str(partial), "--out", str(tmp_path / "report")]) != 0
    assert victim.name in capsys.readouterr().err
    stats = run_sweep(suite, partial, executor="local", progress=False, resume=True)
    assert f"{victim.name} could not be read" in capsys.readouterr().err
    assert (partial / "damaged" / victim.name).exists() and not victim.exists()
    assert stats.ran == lost and stats.skipped == 16 - lost
    pd.testing.assert_frame_equal(comparable(load_results(partial)[0].rows), comparable(load_results(clean)[0].rows))


def test_compaction_never_counts_a_row_twice(tmp_path: Path) -> None:
    """A merged file lists the task files it holds: if removing them is cut short, they
    are ignored, and a later compaction folds new files in."""
    suite = unit_suite()
    run_sweep(suite, tmp_path, executor="local", progress=False, compact=False)
    store = ResultStore(tmp_path)
    parts = {f.name: f.read_bytes() for f in (tmp_path / "rows").glob("part-*.parquet")}
    store.compact()
    for name, data in parts.items():  # as if the driver died before removing them
        (tmp_path / "rows" / name).write_bytes(data)
    assert len(store.load()) == 16
    assert len(store.files()) == 1
    store.compact()
    assert len(store.load()) == 16 and len(list((tmp_path / "rows").glob("*.parquet"))) == 1


def test_compaction_streams_files_of_different_columns_into_bounded_row_groups(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Compaction reads one task file at a time: files whose columns differ (a playout
    video has playout columns, a bulk transfer none) become one file in row groups of at
    ROW_GROUP_ROWS rows (the last one shorter; task files smaller than a group are not
    groups of their own), and the store loads the same rows as before."""
    import pyarrow.parquet as pq
    suite = load_suite({"name": "mixed", "seeds": 3, "groups": [
        {"name": "video", "scenarios": [{"name": "v", "base": {
            "duration_s": 0.5, "paths": [{"bandwidth": 2, "rtt_ms": 20}, {"bandwidth": 3, "rtt_ms": 60}],
            "workload": {"type": "avc", "playout_startup_ms": 300}}}], "policies": ["minrtt", "rr"]},
        {"name": "bulk", "scenarios": [{"name": "b", "base": {
            "duration_s": 0.5, "paths": [{"bandwidth": 2, "rtt_ms": 20}],
            "workload": {"type": "bulk", "rate_mbps": 1, "chunk_bytes": 20_000}}}], "policies": ["minrtt"]},
    ]})
    run_sweep(suite, tmp_path, executor="local", progress=False, compact=False, max_episodes_per_task=3)
    store = ResultStore(tmp_path)
    parts = store.files()
    assert len({frozenset(pq.read_schema(f).names) for f in parts}) == 2
    before = store.load()
    assert max(pq.ParquetFile(f).metadata.num_rows for f in parts) < 4
    monkeypatch.setattr(sweep, "ROW_GROUP_ROWS", 4)
    store.compact()
    (merged,) = store.files()
    meta = pq.ParquetFile(merged).metadata
    assert [meta.row_group(k).num_rows for k in range(meta.num_row_groups)] == [4, 4, 1]
    pd.testing.assert_frame_equal(store.load(), before)


def test_load_reads_one_column_at_a_time_and_equals_whole_file_reads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The store is loaded column by column (never a whole file: the peak is the table and
    about one column), sorted by key, with the rows whole-file reads give; ``skip`` leaves
    columns out but never a key; a key stored twice is refused."""
    import pyarrow.parquet as pq

    run_sweep(unit_suite(), tmp_path, executor="local", progress=False, compact=False, max_episodes_per_task=3)
    store = ResultStore(tmp_path)
    files = store.files()
    assert len(files) > 1 and len({frozenset(pq.read_schema(f).names) for f in files}) == 2
    whole = pd.concat([pq.read_table(f).to_pandas() for f in files], ignore_index=True)
    whole = whole.sort_values(list(KEY_COLUMNS)).reset_index(drop=True)
    reads: list[object] = []
    real_read = ResultStore._read

    def read(self: ResultStore, f: Path, columns: list[str] | None = None) -> object:
        reads.append(columns)
        return real_read(self, f, columns)

    monkeypatch.setattr(ResultStore, "_read", read)
    loaded = store.load()
    assert reads and all(c is not None and len(c) == 1 for c in reads)
    assert list(loaded.columns) == sweep._column_order(whole.columns)
    pd.testing.assert_frame_equal(loaded, whole[list(loaded.columns)], check_dtype=False)
    light = store.load(skip=("policy_spec", "scenario_params", "seed"))
    assert "policy_spec" not in light and "scenario_params" not in light and "seed" in light
    pd.testing.assert_frame_equal(light, loaded[list(light.columns)])
    (tmp_path / "rows" / "part-copy.parquet").write_bytes(files[0].read_bytes())
    with pytest.raises(SweepError, match=r"keys are stored twice, e\.g\. \('unit', "):
        store.load()


def test_progress_counts_expected_work_not_episodes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An agent's or the optimum's episode weighs hundreds of native ones in the progress
    bar (its ETA would otherwise read seconds while they run); the episodes done are shown
    beside it."""
    suite = load_suite({"name": "w", "seeds": 1, "groups": [{"name": "g", "scenarios": ["dams-rtt-40"],
                                                             "policies": ["minrtt", "optimum", "agent:default"]}]})
    cost = {e.policy.name: sweep.episode_cost(e) for e in suite.episodes()}
    assert cost["optimum"] == 700 * cost["minrtt"] and cost["agent:default"] == 800 * cost["minrtt"]
    native = load_suite({**SUITE, "groups": [SUITE["groups"][1]]})
    run_sweep(native, tmp_path, executor="local", progress=True)
    err = capsys.readouterr().err
    assert "100%" in err and f"{len(native.episodes())}/{len(native.episodes())} episodes" in err


def test_a_failing_episode_is_reported_and_not_stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "flaky.py").write_text(textwrap.dedent("""
        from mpsched.envs import WAIT

        class FailsOnSeed1:
            def reset(self, obs):
                self.first = True

            def decide(self, obs):
                if obs.n_arrived > 10 and self.seed_one(obs):
                    raise RuntimeError("boom")
                s = obs.sendable()
                return int(s[0]) if len(s) else WAIT

            def seed_one(self, obs):
                return int(obs.size_bytes[0]) % 2 == 1
    """))
    monkeypatch.chdir(tmp_path)
    suite = load_suite({"name": "f", "seeds": 4, "groups": [{"name": "g", "scenarios": ["dams-rtt-40"],
                                                             "policies": ["minrtt", "flaky:FailsOnSeed1"]}]})
    stats = run_sweep(suite, tmp_path / "r", executor="local", progress=False)
    failed = {k for k, _ in stats.failed}
    assert failed and all(k[2] == "flaky:FailsOnSeed1" for k in failed)
    assert all("boom" in why for _, why in stats.failed)
    stored = ResultStore(tmp_path / "r").keys()
    assert stored.isdisjoint(failed) and len(stored) == 8 - len(failed)
    # not compacted while rows are missing
    assert list((tmp_path / "r" / "rows").glob("merged-*")) == []


@pytest.fixture(scope="module")
def ray_available() -> None:
    pytest.importorskip("ray", reason="running on Ray needs ray (the sweep extra)")


def test_ray_rows_equal_in_process_rows(tmp_path: Path, ray_available: None) -> None:
    suite = unit_suite()
    run_sweep(suite, tmp_path / "local", executor="local", progress=False)
    stats = run_sweep(suite, tmp_path / "ray", executor="ray", workers=2, progress=False)
    assert stats.ok and stats.executor == "ray" and stats.startup_s > 0
    a, b = load_results(tmp_path / "local")[0], load_results(tmp_path / "ray")[0]
    pd.testing.assert_frame_equal(comparable(a.rows), comparable(b.rows))
    pd.testing.assert_frame_equal(a.series("rbuf"), b.series("rbuf"))


USER_POLICY = textwrap.dedent('''
    """A scheduler of the user's own, outside the project."""
    from mpsched.envs import WAIT


    class LargestFirst:
        name = "largest-first"

        def decide(self, obs):
            s = obs.sendable()
            if len(s) == 0:
                return WAIT
            return int(s[obs.remaining_bytes[s].argmax()])
''')

USER_SUITE = textwrap.dedent("""
    name: user
    seeds: 2
    groups:
      - name: g
        scenarios: [dams-rtt-40]
        policies: [minrtt, "largest_first:LargestFirst"]
""")


@pytest.mark.parametrize("executor", ["--local", "ray"])
def test_user_class_runs_in_a_sweep_from_the_current_directory(tmp_path: Path, executor: str) -> None:
    """Acceptance 4: ``module:Class`` from the current directory, through the command
    line, without touching the project."""
    if executor == "ray":
        pytest.importorskip("ray", reason="running on Ray needs ray (the sweep extra)")
    (tmp_path / "largest_first.py").write_text(USER_POLICY)
    (tmp_path / "user.yaml").write_text(USER_SUITE)
    cmd = [sys.executable, "-m", "mpsched.experiments.cli", "sweep", "user.yaml", "--out", "r", "--no-progress",
           "--workers", "2"] + ([executor] if executor == "--local" else [])
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = load_results(tmp_path / "r")[0].rows
    mine = rows[rows["policy"] == "largest_first:LargestFirst"]
    assert len(mine) == 2 and set(mine["policy_name"]) == {"largest-first"}
    ref = simulate("dams-rtt-40", "minrtt", seed=1).summary["on_time_rate"]
    assert rows.loc[(rows["policy"] == "minrtt") & (rows["seed"] == 1), "on_time_rate"].item() == ref
    assert np.isfinite(mine["on_time_rate"]).all()
