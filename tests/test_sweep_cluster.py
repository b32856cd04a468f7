"""A sweep on a real two-node Ray cluster (two raylets on this machine, joined over the
loopback with ``ray start``): tasks run on both nodes, a user's ``module:Class`` reaches
the worker node, and killing that node's raylet mid-sweep loses and duplicates nothing.

Slow: it starts and stops a cluster. Only the cluster's own processes are stopped at the
end (those whose environment carries the test's marker), never another Ray on the machine.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("pyarrow", reason="storing results needs pyarrow (the sweep extra)")
pytest.importorskip("ray", reason="running on Ray needs ray (the sweep extra)")

from mpsched.experiments.sweep import KEY_COLUMNS, load_results
from test_sweep_faults import EPISODES, SUITE, clean_rows, comparable, wait_for

pytestmark = pytest.mark.slow

NODE_TAGGING_POLICY = textwrap.dedent('''
    import os
    import time

    import ray

    from mpsched.envs import WAIT


    class Pausing:
        """First sendable block (the decisions of test_sweep_faults' class); each episode
        starts with a pause of PAUSE_S seconds and leaves NODE-PID in PIDS_DIR."""

        name = "pausing"

        def reset(self, obs):
            node = ray.get_runtime_context().get_node_id() if ray.is_initialized() else "driver"
            open(os.path.join(os.environ["PIDS_DIR"], f"{node}-{os.getpid()}"), "w").close()
            time.sleep(float(os.environ.get("PAUSE_S", "0")))

        def decide(self, obs):
            s = obs.sendable()
            return int(s[0]) if len(s) else WAIT
''')


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def raylets() -> set[int]:
    """Pids of this machine's raylet processes, from /proc."""
    out = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() == "raylet":
                    out.add(int(entry.name))
            except OSError:
                continue
    return out


def processes_with(marker: str) -> set[int]:
    """Pids of the processes (other than this one) whose environment holds ``marker``
    (``NAME=value``): what ``ray start`` launched with it, and their children."""
    out = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if marker.encode() in (entry / "environ").read_bytes().split(b"\0"):
                    out.add(int(entry.name))
            except OSError:
                continue
    return out


def stop_processes_with(marker: str) -> None:
    """SIGKILL every process of the cluster, until none is left (a dying raylet's workers
    may outlive it for a moment)."""
    for _ in range(50):
        left = processes_with(marker)
        if not left:
            return
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
        time.sleep(0.2)
    raise AssertionError(f"cluster processes left running: {sorted(processes_with(marker))}")


def ray_cli(*args: str, env: dict[str, str]) -> None:
    ray = str(Path(sys.executable).with_name("ray"))
    done = subprocess.run([ray, *args], env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, int, dict[str, str]]:
    """A head node and a worker node (one CPU each); yields the address, the worker node's
    raylet pid and the environment to reach it."""
    (tmp_path / "pausing_policy.py").write_text(NODE_TAGGING_POLICY)
    (tmp_path / "faults.yaml").write_text(SUITE)
    monkeypatch.chdir(tmp_path)
    pids = tmp_path / "pids"
    pids.mkdir()
    # the nodes' workers inherit the nodes' environment, not the driver's
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0", "PAUSE_S": "0.5",
           "PIDS_DIR": str(pids)}
    monkeypatch.setenv("PIDS_DIR", str(pids))  # for the reference run in this process
    address = f"127.0.0.1:{free_port()}"
    common = ("--num-cpus=1", "--node-ip-address=127.0.0.1", "--disable-usage-stats")
    try:
        ray_cli("start", "--head", f"--port={address.split(':')[1]}", "--include-dashboard=false", *common, env=env)
        before = raylets()
        ray_cli("start", f"--address={address}", *common, env=env)
        (worker_raylet,) = raylets() - before
        yield address, worker_raylet, env
    finally:
        stop_processes_with(f"PIDS_DIR={pids}")


def test_a_sweep_on_two_nodes_survives_losing_one(cluster: tuple[str, int, dict[str, str]]) -> None:
    address, worker_raylet, env = cluster
    workdir = Path.cwd()
    pids = Path(env["PIDS_DIR"])
    cmd = [sys.executable, "-m", "mpsched.experiments.cli", "sweep", "faults.yaml", "--out", "r", "--address", address,
           "--max-episodes-per-task", "2", "--no-progress"]
    driver = subprocess.Popen(cmd, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def nodes_seen() -> set[str]:
        return {p.name.rsplit("-", 1)[0] for p in pids.iterdir()}

    try:
        def both_nodes() -> bool:
            assert driver.poll() is None, "the sweep ended before both nodes ran an episode"
            return len(nodes_seen()) >= 2

        wait_for(both_nodes, 300, "episodes of the user's class on both nodes")
        os.kill(worker_raylet, signal.SIGKILL)
        out, err = driver.communicate(timeout=600)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert driver.returncode == 0, err
    assert f"{EPISODES} run, 0 failed" in out
    assert len(nodes_seen()) == 2
    rows = load_results(workdir / "r")[0].rows
    assert len(rows) == EPISODES and not rows.duplicated(list(KEY_COLUMNS)).any()
    pd.testing.assert_frame_equal(comparable(rows), clean_rows(workdir))
