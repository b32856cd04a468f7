"""The core releases the GIL while it runs; a second thread touching the same episode
gets an error, never a crash."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from mpsched.envs import build_episode, scenarios
from mpsched.envs.vector import MultipathDeadlineVectorEnv


def test_a_running_sim_refuses_other_threads() -> None:
    sim = build_episode(scenarios.get("dams-rtt-40"), 0).make_sim()
    errors: list[str] = []
    started = threading.Event()

    def poke() -> None:
        started.wait()
        for _ in range(20000):
            try:
                sim.view("srtt_ns")
            except RuntimeError as exc:
                errors.append(str(exc))
                return

    t = threading.Thread(target=poke)
    t.start()
    started.set()
    for seed in range(30):
        sim.reset(seed)
        sim.run("minrtt")
    t.join()
    # the poking thread either saw the guard or only ran between episodes
    assert all("another thread" in e for e in errors)


def test_sims_run_in_parallel_threads_give_the_same_results() -> None:
    episode = build_episode(scenarios.get("dams-bw-2-2.5"), 3)
    sims = [episode.make_sim() for _ in range(4)]
    threads = [threading.Thread(target=s.run, args=("rr",)) for s in sims]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    first = np.asarray(sims[0].view("completion_ns"))
    for s in sims[1:]:
        np.testing.assert_array_equal(first, np.asarray(s.view("completion_ns")))


def test_vector_batch_is_guarded() -> None:
    venv = MultipathDeadlineVectorEnv(num_envs=64, scenario="dams-rtt-40")
    venv.reset(seed=0)
    batch = venv._batch
    stop = threading.Event()
    errors: list[str] = []

    def step() -> None:
        a = np.full(64, venv.num_slots, np.int64)
        while not stop.is_set():
            batch.step(a, True)

    t = threading.Thread(target=step)
    t.start()
    try:
        for _ in range(2000):
            try:
                batch.sim(0)
            except RuntimeError as exc:
                errors.append(str(exc))
    finally:
        stop.set()
        t.join()
    assert all("another thread" in e for e in errors)
    with pytest.raises(IndexError):
        batch.sim(64)
