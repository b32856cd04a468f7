"""Fault tests: kill the driver of a Ray sweep with SIGKILL part way and resume, or kill a
Ray worker mid-task; the stored rows equal a clean run's, with no key lost or stored twice.

The suite is small, with a scheduler of the test's own (``module:Class`` from the current
directory) that pauses at the start of each episode so that the sweep lasts long enough
to be interrupted; the pause does not change any decision.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("pyarrow", reason="storing results needs pyarrow (the sweep extra)")
pytest.importorskip("ray", reason="running on Ray needs ray (the sweep extra)")

from mpsched.experiments.suite import load_suite
from mpsched.experiments.sweep import (
    KEY_COLUMNS,
    TIMING_COLUMNS,
    ResultStore,
    load_results,
    run_sweep,
)

PAUSING_POLICY = textwrap.dedent('''
    import os
    import time

    from mpsched.envs import WAIT


    class Pausing:
        """First sendable block; each episode starts with a pause of PAUSE_S seconds and
        leaves the worker's pid in PIDS_DIR when that is set."""

        name = "pausing"

        def reset(self, obs):
            folder = os.environ.get("PIDS_DIR")
            if folder:
                open(os.path.join(folder, str(os.getpid())), "w").close()
            time.sleep(float(os.environ.get("PAUSE_S", "0")))

        def decide(self, obs):
            s = obs.sendable()
            return int(s[0]) if len(s) else WAIT
''')

SUITE = textwrap.dedent("""
    name: faults
    seeds: 6
    groups:
      - name: g
        scenarios:
          - name: "short-{rtt}"
            base:
              duration_s: 2
              paths: [{bandwidth: 3, rtt_ms: 20}, {bandwidth: 2, rtt_ms: 60, loss: 0.01}]
              workload: {type: avc}
            grid: {rtt: [60, 120]}
            set: {"paths[1].rtt_ms": "{rtt}"}
        policies: [minrtt, edf, "pausing_policy:Pausing"]
""")
EPISODES = 2 * 3 * 6


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pausing_policy.py").write_text(PAUSING_POLICY)
    (tmp_path / "faults.yaml").write_text(SUITE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def clean_rows(workdir: Path) -> pd.DataFrame:
    """The reference: the same suite run in this process, without pauses."""
    run_sweep(load_suite(workdir / "faults.yaml"), workdir / "clean", executor="local", progress=False)
    return comparable(load_results(workdir / "clean")[0].rows)


def comparable(rows: pd.DataFrame) -> pd.DataFrame:
    return rows.drop(columns=list(TIMING_COLUMNS)).reset_index(drop=True)


def sweep_cmd(out: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "mpsched.experiments.cli", "sweep", "faults.yaml", "--out", out, "--workers", "2",
            "--max-episodes-per-task", "2", "--no-progress", *extra]


def descendants(pid: int) -> set[int]:
    """Processes below ``pid`` (the local Ray it started), from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out: set[int] = set()
    todo = [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def stop(pids: set[int]) -> None:
    """End the processes this test started (by pid), e.g. a killed driver's Ray."""
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


def wait_for(condition, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def test_killing_the_driver_and_resuming_loses_and_duplicates_nothing(workdir: Path) -> None:
    env = {**os.environ, "PAUSE_S": "0.4"}
    driver = subprocess.Popen(sweep_cmd("r"), cwd=workdir, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    ray_processes: set[int] = set()
    try:
        def some_rows() -> bool:
            ray_processes.update(descendants(driver.pid))
            assert driver.poll() is None, "the sweep finished before it could be interrupted"
            return len(list((workdir / "r" / "rows").glob("part-*.parquet"))) >= 2

        wait_for(some_rows, 240, "the first stored tasks")
        ray_processes.update(descendants(driver.pid))
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=30)
    finally:
        stop(ray_processes | {driver.pid})
    stored = ResultStore(workdir / "r").keys()
    assert 0 < len(stored) < EPISODES
    resumed = subprocess.run(sweep_cmd("r", "--resume"), cwd=workdir, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{len(stored)} already stored, {EPISODES - len(stored)} run, 0 failed" in resumed.stdout
    rows = load_results(workdir / "r")[0].rows
    assert not rows.duplicated(list(KEY_COLUMNS)).any()
    pd.testing.assert_frame_equal(comparable(rows), clean_rows(workdir))


def test_killing_a_worker_mid_task_is_retried(workdir: Path) -> None:
    pids = workdir / "pids"
    pids.mkdir()
    env = {**os.environ, "PAUSE_S": "0.3", "PIDS_DIR": str(pids)}
    driver = subprocess.Popen(sweep_cmd("r"), cwd=workdir, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        wait_for(lambda: any(pids.iterdir()), 240, "a worker to start an episode")
        victim = int(next(pids.iterdir()).name)
        assert victim != driver.pid and victim in descendants(driver.pid)
        os.kill(victim, signal.SIGKILL)
        out, err = driver.communicate(timeout=300)
    finally:
        stop(descendants(driver.pid) | {driver.pid} if driver.poll() is None else set())
    assert driver.returncode == 0, err
    assert f"{EPISODES} run, 0 failed" in out
    assert not Path(f"/proc/{victim}").exists()
    assert len(list(pids.iterdir())) >= 2  # another worker took the task over
    rows = load_results(workdir / "r")[0].rows
    assert not rows.duplicated(list(KEY_COLUMNS)).any()
    pd.testing.assert_frame_equal(comparable(rows), clean_rows(workdir))
