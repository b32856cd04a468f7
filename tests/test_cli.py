"""The mpsched command line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from mpsched.experiments.bench import format_length_scaling, length_scaling
from mpsched.experiments.cli import main
from mpsched.experiments.training_bench import SHARE_PARTS


def test_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "dams-rtt-40" in out and "minrtt" in out and "native: rr" in out


def test_list_show_prints_yaml(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--show", "dams-bw-1-1.5"]) == 0
    assert "loss: 0.0001" in capsys.readouterr().out


def test_run_json(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    blocks = tmp_path / "blocks.csv"
    assert main(["run", "--scenario", "dams-rtt-40", "--policy", "rr", "--seed", "2", "--json",
                 "--blocks", str(blocks)]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["scenario"] == "dams-rtt-40" and row["policy"] == "rr" and row["seed"] == 2
    assert 0.0 <= row["on_time_rate"] <= 1.0
    assert len(blocks.read_text().splitlines()) == 1801


def test_run_prints_the_seed_first(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--scenario", "dams-rtt-80", "--policy", "minrtt"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "seed: 0"


def test_errors_are_reported_not_raised(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--scenario", "dams-rtt-40", "--policy", "oracle"]) == 2
    assert "unknown policy 'oracle'" in capsys.readouterr().err
    assert main(["run", "--scenario", "nowhere.yaml", "--policy", "rr"]) == 2


def test_demo(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--scenario", "dams-rtt-40", "--seeds", "1"]) == 0
    out = capsys.readouterr().out
    assert "minrtt" in out and "rr" in out and "random" in out


def test_bench_json_keys() -> None:
    out = subprocess.run([sys.executable, "-m", "mpsched.experiments.cli", "bench", "--json", "--seconds", "0.05"],
                         capture_output=True, text=True, check=True).stdout
    report = json.loads(out)
    for key in ("episode_packets_per_s", "episode_packets_per_s_newreno", "env_steps_per_s",
                "cartpole_steps_per_s", "vector_env_steps_per_s", "bulk_packets_per_s_newreno",
                "bulk_packets_per_s_cubic", "cubic_to_newreno_time_ratio", "olia_to_newreno_time_ratio"):
        assert report[key] > 0
    assert set(report["baseline_packets_per_s"]) >= {"minrtt", "rr", "edf", "dtp"}
    assert report["baseline_time_ratio_to_minrtt"]["minrtt"] == 1.0
    assert set(report["baseline_packets_per_s_deep_backlog"]) == set(report["baseline_packets_per_s"])
    assert report["baseline_deep_backlog_time_ratio_to_minrtt"]["minrtt"] == 1.0
    assert set(report["path_dynamics_packets_per_s"]) == {"none", "jitter", "delay_steps", "outages"}
    assert report["path_dynamics_time_ratio_to_none"]["none"] == 1.0
    for key in ("simulate_s_1x", "core_s_1x", "simulate_s_8x", "core_s_8x", "import_envs_s", "import_envs_rss_mib",
                "import_numpy_s", "process_one_episode_s", "process_numpy_only_s", "sim_clones_per_s",
                "vector_env_reset_s", "cartpole_vector_steps_per_s_vector_entry_point",
                "cartpole_vector_steps_per_s_sync", "vector_to_cartpole_vector_ratio_sync",
                "reference_simulate_speedup_1x", "reference_simulate_speedup_8x", "reference_process_ratio_1x",
                "reference_process_ratio_8x"):
        assert report[key] > 0, key
    for key in ("training_steps_per_s", "training_cartpole_steps_per_s", "training_to_cartpole_ratio",
                "training_median_paired_ratio"):
        assert report[key] > 0, key
    for shares in (report["training_us_per_step"], report["training_cartpole_us_per_step"]):
        assert set(shares) == set(SHARE_PARTS)
        assert shares["total"] == pytest.approx(sum(v for part, v in shares.items() if part != "total"))
        assert shares["environment"] > 0 and shares["update: backward"] > 0


def test_every_subcommand_has_help_with_an_example() -> None:
    for cmd in ("list", "run", "demo", "bench"):
        out = subprocess.run([sys.executable, "-m", "mpsched.experiments.cli", cmd, "--help"],
                             capture_output=True, text=True, check=True).stdout
        assert "example: mpsched" in out


def test_bench_length_scaling_reports_both_lengths_and_their_ratio() -> None:
    r = length_scaling(0.0, policies=("minrtt", "srpt-ecf"), kinds=("bench",))
    assert r["factor"] == 8
    for name in ("minrtt", "srpt-ecf"):
        row = r["bench"][name]
        assert row["ns_per_packet_1x"] > 0 and row["ns_per_packet_8x"] > 0
        assert row["ratio"] == row["ns_per_packet_8x"] / row["ns_per_packet_1x"]
    table = format_length_scaling(r)
    assert "srpt-ecf" in table and "bench 1x / 8x / ratio" in table
