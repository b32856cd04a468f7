"""simulate(): determinism, seeds, policy specifications against native twins, scores."""

from __future__ import annotations

import dataclasses
import hashlib
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from mpsched.envs import EpisodeResult, Scenario, registry, simulate

LOSSY = {
    "name": "lossy",
    "duration_s": 3.0,
    "paths": [
        {"bandwidth": 3.0, "rtt_ms": 20, "loss": 0.01},
        {"bandwidth": 2.0, "rtt_ms": 60, "loss": 0.02, "cc": "ideal"},
    ],
    "workload": {"type": "avc", "bitrate_mbps": 4.0},
}


def blocks_digest(result: EpisodeResult) -> str:
    return hashlib.sha256(pd.util.hash_pandas_object(result.blocks, index=True).values.tobytes()).hexdigest()


def test_same_seed_gives_identical_results() -> None:
    a = simulate(LOSSY, "minrtt", seed=3)
    b = simulate(LOSSY, "minrtt", seed=3)
    pd.testing.assert_frame_equal(a.blocks, b.blocks)
    pd.testing.assert_frame_equal(a.paths, b.paths)
    def scores(r: object) -> dict:
        return {k: v for k, v in r.summary.items() if k != "wall_s"}  # type: ignore[attr-defined]

    assert scores(a) == scores(b)


def test_different_seeds_differ_when_there_is_loss() -> None:
    a = simulate(LOSSY, "rr", seed=1)
    b = simulate(LOSSY, "rr", seed=2)
    assert not a.blocks["completion_ns"].equals(b.blocks["completion_ns"])


def test_identical_in_another_process() -> None:
    code = (
        "import hashlib, pandas as pd; from mpsched.envs import simulate; "
        f"r = simulate({LOSSY!r}, 'minrtt', seed=5); "
        "print(hashlib.sha256(pd.util.hash_pandas_object(r.blocks, index=True).values.tobytes()).hexdigest())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == blocks_digest(simulate(LOSSY, "minrtt", seed=5))


def test_python_and_native_runs_agree_on_a_builtin_scenario() -> None:
    sc = Scenario.from_dict({**LOSSY, "duration_s": 10.0})
    for name in ("minrtt", "rr"):
        a = simulate(sc, name, seed=0)
        b = simulate(sc, registry.make(name).python(), seed=0)
        pd.testing.assert_frame_equal(a.blocks, b.blocks)


def test_scores_on_a_hand_computed_episode() -> None:
    """Three blocks on one 8 Mbit/s ideal path, one-way delay 10 ms, MSS 1000 B.

    Block 0 (1000 B, t=0, deadline 12 ms): sent 0-1 ms, received 11 ms: on time.
    Block 1 (2000 B, t=0, deadline 12 ms): sent 1-3 ms, received 13 ms: late.
    Block 2 (1000 B, t=20 ms, deadline 40 ms, weight 3): sent 20-21 ms, received 31 ms.
    """
    sc = Scenario.from_dict({
        "duration_s": 0.05,
        "transport": {"mss_bytes": 1000},
        "paths": [{"bandwidth": 8.0, "one_way_delay_ms": 10, "cc": "ideal"}],
        "workload": {"type": "explicit", "blocks": [
            {"arrival_ms": 0, "size_bytes": 1000, "deadline_ms": 12, "priority": 1},
            {"arrival_ms": 0, "size_bytes": 2000, "deadline_ms": 12},
            {"arrival_ms": 20, "size_bytes": 1000, "deadline_ms": 40, "weight": 3.0, "priority": 1},
        ]},
    })
    r = simulate(sc, "minrtt")
    ms = 1_000_000
    assert list(r.blocks["completion_ns"]) == [11 * ms, 13 * ms, 31 * ms]
    assert list(r.blocks["first_send_ns"]) == [0, 1 * ms, 20 * ms]
    assert list(r.blocks["on_time"]) == [True, False, True]
    s = r.summary
    assert s["on_time_rate"] == pytest.approx(2 / 3)
    assert s["weighted_on_time_rate"] == pytest.approx(4 / 5)
    assert s["high_priority_on_time_rate"] == 1.0
    assert s["efficiency"] == pytest.approx(2 / 3)
    assert s["goodput_bps"] == pytest.approx(2000 * 8 / 0.05)
    assert s["bytes_wasted"] == 2000
    assert s["mean_queuing_delay_s"] == pytest.approx(1e-3 / 3)
    assert np.isnan(s["rebuffer_s"])  # not a video workload
    assert r.paths.loc[0, "packets_sent"] == 4


def test_rebuffering_counts_missed_frames() -> None:
    """AVC over a path too slow for it: every missed frame costs 1/fps seconds."""
    sc = Scenario.from_dict({
        "duration_s": 2.0,
        "paths": [{"bandwidth": 1.0, "rtt_ms": 20, "cc": "ideal"}],
        "workload": {"type": "avc", "fps": 25, "bitrate_mbps": 3.0, "size_cv": 0.0},
    })
    r = simulate(sc, "minrtt")
    missed = int((~r.blocks["on_time"]).sum())
    assert missed > 0
    assert r.summary["rebuffer_s"] == pytest.approx(missed / 25)


def test_user_policy_object() -> None:
    class LastBlockFirst:
        name = "lifo"

        def decide(self, obs) -> int:
            return int(obs.sendable()[-1])

    r = simulate(LOSSY, LastBlockFirst(), seed=0)
    assert r.policy == "lifo"
    assert r.summary["n_blocks"] == len(r.blocks)


def test_scores_need_neither_pandas_nor_the_tables() -> None:
    """``import mpsched``, ``mpsched.envs`` and a whole ``simulate()`` with its scores run
    without pandas, without reading the installed packages' metadata (the version, the
    plugins) and without numpy.ma; the block table (a DataFrame) brings pandas in when
    first asked for, ``mpsched.__version__`` the metadata."""
    code = ("import sys\n"
            "import mpsched, mpsched.envs, mpsched.baselines\n"
            "r = mpsched.envs.simulate('dams-rtt-40', 'dams', seed=0)\n"
            "light = not {'pandas', 'importlib.metadata', 'numpy.ma'} & set(sys.modules)\n"
            "assert r.summary['n_blocks'] == 1800 and light, sorted(sys.modules)\n"
            "assert len(r.blocks) == 1800 and 'pandas' in sys.modules\n"
            "assert mpsched.__version__ and 'importlib.metadata' in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)


def test_an_optimum_result_replaced_keeps_its_tables() -> None:
    r = simulate("dams-rtt-40", "minrtt", seed=0)
    renamed = dataclasses.replace(r, policy="renamed", extra={"note": 1})
    assert renamed.policy == "renamed" and renamed.extra == {"note": 1} and renamed.summary is r.summary
    pd.testing.assert_frame_equal(renamed.blocks, r.blocks)
