"""The block-level pure-Python reference that ``mpsched bench`` compares whole processes
against (experiments/block_reference.py): its pipes, its DAMS and its inputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mpsched.experiments import block_reference as br
from mpsched.experiments.bench import PEER_FRAMES, block_reference_comparison

MS = 1_000_000


def constant_pipe(rate_bps: float, one_way_delay_ns: int) -> br.Pipe:
    return br.Pipe([0, 500 * MS], [rate_bps, rate_bps], 1000 * MS, one_way_delay_ns)


def test_one_block_arrives_after_its_packets_are_sent_and_one_delay() -> None:
    # 8 Mbit/s is one byte per microsecond: 3000 B leave in 3 ms, arrive 5 ms later
    for deadline, on_time in ((8 * MS, 1.0), (8 * MS - 1, 0.0)):
        r = br.run([(0, 3000, deadline, 1, 1.0)], [constant_pipe(8e6, 5 * MS)])
        assert r["blocks"] == 1 and r["on_time_rate"] == on_time


def test_a_block_is_split_so_that_its_parts_finish_together() -> None:
    pipes = [constant_pipe(8e6, 0), constant_pipe(8e6, 0)]
    # 2 x 1448 B over two equal pipes: both parts done at 1.448 ms; one pipe alone needs 2.896 ms
    assert br.run([(0, 2896, 1448_000, 1, 1.0)], pipes)["on_time_rate"] == 1.0
    assert br.run([(0, 2896, 1448_000, 1, 1.0)], pipes[:1])["on_time_rate"] == 0.0


@pytest.mark.parametrize("first_weight, second_weight", [(1.0, 10.0), (10.0, 1.0)])
def test_selective_preservation_keeps_the_block_with_more_credit_per_byte(first_weight: float,
                                                                          second_weight: float) -> None:
    # The pipe sends 1000 B per ms and is busy until 1 ms; two 1000 B blocks arrive at 0.1 ms,
    # due at 2 ms: only one fits (eq. 1: 1900 B), and in deadline order alone the first
    # would be sent first whatever its credit.
    blocks = [(0, 1000, MS, 1, 0.0), (100_000, 1000, 2 * MS, 1, first_weight),
              (100_000, 1000, 2 * MS, 1, second_weight)]
    r = br.run(blocks, [constant_pipe(8e6, 0)])
    assert r["on_time_rate"] == 2 / 3
    assert r["weighted_on_time_rate"] == 10.0 / 11.0


def test_a_pipe_follows_its_trace_and_repeats_it(tmp_path: Path) -> None:
    trace = tmp_path / "trace.txt"
    trace.write_text("# s Mbit/s\n0 8\n1 0\n2 16\n")
    pipe = br.read_cooked_trace(str(trace), 0)
    assert pipe.cycle_ns == 3000 * MS  # the last rate holds for the median interval
    assert pipe.send_end(999 * MS, 2000) == 2000 * MS + 500_000  # 1000 B at 8, a second of nothing, 1000 B at 16
    assert pipe.send_end(3000 * MS, 1000) == 3001 * MS  # the second cycle starts at 8 Mbit/s again


@pytest.mark.parametrize("text, message", [("0 8\n1 x\n", ":2: expected"), ("0 8\n", "at least two"),
                                           ("0 8\n0 9\n", ":2: times must increase"), ("0 0\n1 0\n", "every rate")])
def test_bad_traces_are_refused_with_the_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    trace = tmp_path / "bad.txt"
    trace.write_text(text)
    with pytest.raises(ValueError, match=message):
        br.read_cooked_trace(str(trace), 0)


def test_bad_block_lines_are_refused_with_the_file_and_line(tmp_path: Path) -> None:
    blocks = tmp_path / "blocks.txt"
    blocks.write_text("# arrival size deadline priority weight\n0 1000 200000000 1 1.0\n0 1000\n")
    with pytest.raises(ValueError, match=r"blocks.txt:3: expected"):
        br.read_blocks(str(blocks))


def test_the_script_prints_what_run_returns(tmp_path: Path) -> None:
    trace, blocks = tmp_path / "trace.txt", tmp_path / "blocks.txt"
    trace.write_text("0 8\n1 8\n")
    blocks.write_text("0 3000 8000000 1 1.0\n0 3000 7000000 2 2.0\n")
    out = subprocess.run([sys.executable, br.__file__, str(blocks), "--path", f"{trace}:5"],
                         capture_output=True, text=True, check=True).stdout
    got = json.loads(out)
    expected = br.run(br.read_blocks(str(blocks)), [br.read_cooked_trace(str(trace), 5 * MS)])
    assert {k: got[k] for k in ("blocks", "on_time_rate", "weighted_on_time_rate", "cancelled")} == \
           {k: expected[k] for k in ("blocks", "on_time_rate", "weighted_on_time_rate", "cancelled")}


def test_the_bench_comparison_runs_both_on_the_same_814_frames() -> None:
    r = block_reference_comparison(0.0, factors=(1,), runs=1)
    assert r["reference_blocks_1x"] == PEER_FRAMES
    assert r["reference_simulate_speedup_1x"] == r["reference_simulate_s_1x"] / r["reference_simulate_ours_s_1x"]
    assert r["reference_process_ratio_1x"] == r["reference_process_ours_s_1x"] / r["reference_process_s_1x"]
    assert 0.0 < r["reference_on_time_rate_1x"] <= 1.0 and 0.0 < r["reference_on_time_rate_ours_1x"] <= 1.0
