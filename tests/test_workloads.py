"""Tests of mpsched.envs.workloads: block tables and workload generators."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from mpsched.envs.errors import ScenarioError, TraceError
from mpsched.envs.workloads import BlockTable, generate_workload, normalize_workload

MS = 1_000_000
S = 1_000_000_000


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text)
    return path


def generate(
    config: Any, duration_s: Any = 10.0, seed: int = 0, base_dir: Path | None = None
) -> BlockTable:
    normal = normalize_workload(config, "workload")
    return generate_workload(normal, duration_s, np.random.default_rng(seed), base_dir)


def table(**overrides: Any) -> BlockTable:
    columns = {
        "arrival_ns": np.array([5, 0, 5]),
        "size_bytes": np.array([10, 20, 30]),
        "deadline_ns": np.array([9, 1, 6]),
        "priority": np.array([0, 1, 2]),
        "weight": np.array([1.0, 2.0, 0.0]),
        "kind": np.array(["a", "b", "c"], dtype=object),
        "frame": np.array([-1, 0, 1]),
        "frame_rate": None,
    }
    columns.update(overrides)
    return BlockTable(**columns)


FRAMES_TEXT = "-0.1\t8000\t1\n-0.06\t801\t0\n\n-0.02\t16\t0\n"


# ---------------------------------------------------------------------------------------
# Round trips
# ---------------------------------------------------------------------------------------

ROUND_TRIP_CONFIGS = [
    {"type": "avc"},
    {"type": "avc", "gop": "IPPP", "size_ratio": {"I": 5}, "size_cv": 0, "start_s": 0.5},
    {"type": "svc"},
    {"type": "svc", "layer_share": [0.5, 0.5], "priority": [7, 3]},
    {"type": "svc", "layer_share": [0.5, 0.5], "playout_startup_ms": 250},
    {"type": "web"},
    {"type": "web", "bursts": [2, 3], "priority": {"low": -1}},
    {"type": "bulk", "rate_mbps": 2},
    {"type": "frames", "file": "video.txt", "type_column": 2, "size_unit": "bits"},
    {"type": "frames", "file": "video.txt", "playout_startup_ms": 500.5},
    {
        "type": "frames",
        "file": "video.txt",
        "loop": False,
        "type_map": {1: "I", 0: "B"},
        "type_column": 2,
    },
    {"type": "explicit", "blocks": [{"arrival_ms": 1, "size_bytes": 5, "deadline_ms": 3}]},
]


@pytest.mark.parametrize("config", ROUND_TRIP_CONFIGS, ids=lambda c: str(c)[:60])
def test_normalize_round_trip_and_idempotent(config: Any, tmp_path: Path) -> None:
    write(tmp_path, "video.txt", FRAMES_TEXT)
    normal = normalize_workload(config, "workload")
    assert json.loads(json.dumps(normal)) == normal
    assert normalize_workload(normal, "workload") == normal
    built = generate_workload(normal, 10.0, np.random.default_rng(1), tmp_path)
    assert isinstance(built, BlockTable)
    assert len(built) > 0
    assert np.all(np.diff(built.arrival_ns) >= 0)
    assert built.arrival_ns.max() < 10 * S
    assert built == generate_workload(normal, 10.0, np.random.default_rng(1), tmp_path)


def test_avc_defaults() -> None:
    normal = normalize_workload({"type": "avc"}, "workload")
    assert normal == {
        "type": "avc",
        "fps": 30.0,
        "bitrate_mbps": 4.3,
        "gop": "IBBPBBPBBPBB",
        "size_ratio": {"I": 10.0, "P": 4.0, "B": 2.0},
        "priority": {"I": 2, "P": 1, "B": 0},
        "weight": {"I": 3.0, "P": 2.0, "B": 1.0},
        "size_cv": 0.1,
        "deadline_ms": 200.0,
        "start_s": 0.0,
    }


# ---------------------------------------------------------------------------------------
# Video
# ---------------------------------------------------------------------------------------


def test_avc_exact_gop_arithmetic() -> None:
    t = generate({"type": "avc", "size_cv": 0}, duration_s=10.0)
    assert len(t) == 300
    k = np.arange(300)
    assert t.arrival_ns.tolist() == np.rint(k * 1e9 / 30).astype(np.int64).tolist()
    assert t.deadline_ns.tolist() == (t.arrival_ns + 200 * MS).tolist()
    assert t.frame.tolist() == k.tolist()
    assert t.frame_rate == 30.0
    gop = "IBBPBBPBBPBB"
    assert "".join(t.kind[:12]) == gop
    assert "".join(t.kind[12:24]) == gop
    # one GOP carries 4.3e6 / 8 * 12 / 30 = 215000 bytes over 1*10 + 3*4 + 8*2 = 38 units
    unit = 215_000 / 38
    expected = {"I": round(10 * unit), "P": round(4 * unit), "B": round(2 * unit)}
    assert expected == {"I": 56579, "P": 22632, "B": 11316}
    assert t.size_bytes.tolist() == [expected[kind] for kind in t.kind]
    assert t.priority.tolist() == [{"I": 2, "P": 1, "B": 0}[kind] for kind in t.kind]
    assert t.weight.tolist() == [{"I": 3.0, "P": 2.0, "B": 1.0}[kind] for kind in t.kind]
    bitrate = t.size_bytes.sum() * 8 / 10.0
    assert abs(bitrate / 4.3e6 - 1) < 0.01


def test_avc_random_sizes_keep_the_bitrate() -> None:
    t = generate({"type": "avc", "size_cv": 0.1}, duration_s=10.0, seed=11)
    bitrate = t.size_bytes.sum() * 8 / 10.0
    assert abs(bitrate / 4.3e6 - 1) < 0.03
    sizes_i = t.size_bytes[t.kind == "I"]
    assert 0.05 < sizes_i.std() / sizes_i.mean() < 0.15


def test_avc_same_seed_same_table_different_seed_differs() -> None:
    config = {"type": "avc", "size_cv": 0.2}
    assert generate(config, seed=4) == generate(config, seed=4)
    assert generate(config, seed=4) != generate(config, seed=5)
    assert generate({"type": "avc", "size_cv": 0}, seed=4) == generate(
        {"type": "avc", "size_cv": 0}, seed=5
    )


def test_avc_start_and_custom_maps() -> None:
    t = generate(
        {
            "type": "avc",
            "fps": 10,
            "gop": "IPP",
            "size_cv": 0,
            "start_s": 0.25,
            "priority": {"P": 5},
            "deadline_ms": 50,
        },
        duration_s=1.0,
    )
    assert t.arrival_ns.tolist() == [250 * MS + i * 100 * MS for i in range(8)]
    assert t.priority.tolist() == [2, 5, 5, 2, 5, 5, 2, 5]
    assert t.deadline_ns.tolist() == (t.arrival_ns + 50 * MS).tolist()


def test_svc_layers() -> None:
    t = generate({"type": "svc", "size_cv": 0}, duration_s=1.0)
    assert len(t) == 90
    assert t.kind[:6].tolist() == ["base", "enh1", "enh2"] * 2
    # 4.3e6 / 8 / 30 = 17916.67 bytes per frame, split 0.2 / 0.3 / 0.5
    assert t.size_bytes[:3].tolist() == [3583, 5375, 8958]
    assert t.priority[:3].tolist() == [2, 1, 0]
    assert t.weight[:3].tolist() == [3.0, 2.0, 1.0]
    assert t.frame.tolist() == np.repeat(np.arange(30), 3).tolist()
    assert np.all(t.arrival_ns.reshape(30, 3) == t.arrival_ns[::3, None])
    assert t.deadline_ns.tolist() == (t.arrival_ns + 200 * MS).tolist()
    assert t.frame_rate == 30.0
    for k, share in enumerate([0.2, 0.3, 0.5]):
        assert t.size_bytes[k::3].sum() / t.size_bytes.sum() == pytest.approx(share, abs=1e-4)


def test_svc_layer_count_sets_defaults() -> None:
    normal = normalize_workload({"type": "svc", "layer_share": [0.25, 0.75]}, "w")
    assert normal["priority"] == [1, 0]
    assert normal["weight"] == [2.0, 1.0]
    t = generate(normal, duration_s=0.1, seed=2)
    sizes = t.size_bytes.reshape(-1, 2)
    assert np.allclose(sizes[:, 1] / sizes[:, 0], 3, rtol=1e-3)


# ---------------------------------------------------------------------------------------
# Playout start-up deadlines
# ---------------------------------------------------------------------------------------


def test_playout_startup_is_absent_by_default_and_idempotent() -> None:
    for kind in ("avc", "svc"):
        assert "playout_startup_ms" not in normalize_workload({"type": kind}, "w")
        assert normalize_workload({"type": kind, "playout_startup_ms": None}, "w") == (
            normalize_workload({"type": kind}, "w")
        )
        normal = normalize_workload({"type": kind, "playout_startup_ms": 150}, "w")
        assert normal["playout_startup_ms"] == 150.0
        assert normalize_workload(normal, "w") == normal
        assert json.loads(json.dumps(normal)) == normal


def test_avc_playout_deadlines_are_play_times() -> None:
    t = generate(
        {"type": "avc", "fps": 10, "size_cv": 0, "start_s": 0.25, "playout_startup_ms": 300},
        duration_s=1.0,
    )
    # frame k arrives at 250 + 100k ms and plays at 250 + 300 + 100k ms
    assert t.arrival_ns.tolist() == [250 * MS + k * 100 * MS for k in range(8)]
    assert t.deadline_ns.tolist() == [550 * MS + k * 100 * MS for k in range(8)]
    # deadline_ms is not used
    again = generate(
        {
            "type": "avc",
            "fps": 10,
            "size_cv": 0,
            "start_s": 0.25,
            "playout_startup_ms": 300,
            "deadline_ms": 5,
        },
        duration_s=1.0,
    )
    assert again == t


def test_avc_playout_deadlines_at_a_fractional_rate() -> None:
    t = generate({"type": "avc", "playout_startup_ms": 100}, duration_s=1.0)
    # 30 fps: play time 1e8 + rint(k * 1e9 / 30) ns, the arrival plus 100 ms
    k = np.arange(30)
    assert t.deadline_ns.tolist() == (100 * MS + np.rint(k * 1e9 / 30)).astype(np.int64).tolist()
    assert t.deadline_ns.tolist() == (t.arrival_ns + 100 * MS).tolist()


def test_svc_playout_deadlines_are_shared_by_the_layers() -> None:
    t = generate({"type": "svc", "fps": 25, "playout_startup_ms": 80}, duration_s=0.2)
    # 5 frames at 40 ms, 3 layers each: every layer of frame k is due at 80 + 40k ms
    play = [80 * MS + k * 40 * MS for k in range(5)]
    assert t.deadline_ns.tolist() == np.repeat(play, 3).tolist()


def test_frames_playout_deadlines_follow_the_frame_rate(tmp_path: Path) -> None:
    # frames at 0, 40, 80, 140 ms, looped: median interval 40 ms (25 fps), period
    # 140 + 40 = 180 ms, so arrivals below 300 ms are 0, 40, 80, 140, 180, 220, 260. With a
    # 50 ms start-up frame k plays at 50 + 40k ms = 50, 90, ..., 290, after each arrival.
    write(tmp_path, "v.txt", "0 10\n0.04 10\n0.08 10\n0.14 10\n")
    config = {"type": "frames", "file": "v.txt", "playout_startup_ms": 50}
    t = generate(config, duration_s=0.3, base_dir=tmp_path)
    assert t.arrival_ns.tolist() == [k * MS for k in (0, 40, 80, 140, 180, 220, 260)]
    assert t.frame_rate == 25.0
    assert t.deadline_ns.tolist() == [50 * MS + k * 40 * MS for k in range(7)]
    # With a 10 ms start-up, play at 10, 50, 90, 130, 170, 210, 250 ms: frames 3 to 6
    # arrive 10 ms after their play time (the 60 ms gap of the file); they cannot be played
    # and their deadline is their arrival.
    short = generate({**config, "playout_startup_ms": 10}, duration_s=0.3, base_dir=tmp_path)
    assert short.deadline_ns.tolist() == [k * MS for k in (10, 50, 90, 140, 180, 220, 260)]


@pytest.mark.parametrize("value", [0, -5, float("nan"), float("inf"), True, "100", [100]])
@pytest.mark.parametrize("kind", ["avc", "svc", "frames"])
def test_bad_playout_startup(kind: str, value: Any) -> None:
    config = {"type": kind, "playout_startup_ms": value}
    if kind == "frames":
        config["file"] = "video.txt"
    with pytest.raises(ScenarioError) as info:
        normalize_workload(config, "w")
    assert info.value.field == "w.playout_startup_ms"
    assert "expected a start-up delay in ms in (0, " in str(info.value)


@pytest.mark.parametrize(
    ("player", "field"),
    [
        ("catchup", "w.player"),
        ({"type": "vlc"}, "w.player.type"),
        ({"type": "catchup", "speed": 0.5}, "w.player.speed"),
        ({"type": "catchup", "speed": float("nan")}, "w.player.speed"),
        ({"type": "catchup", "max_late_ms": 0}, "w.player.max_late_ms"),
        ({"type": "catchup", "max_late_ms": True}, "w.player.max_late_ms"),
        ({"type": "catchup", "sped": 2}, "w.player.sped"),
        ({"type": "fixed", "speed": 2}, "w.player.speed"),
    ],
)
def test_bad_player(player: Any, field: str) -> None:
    with pytest.raises(ScenarioError) as info:
        normalize_workload({"type": "avc", "player": player}, "w")
    assert info.value.field == field


def test_player_is_absent_by_default_and_completed_with_its_defaults() -> None:
    assert "player" not in normalize_workload({"type": "avc"}, "w")
    assert normalize_workload({"type": "svc", "player": {"type": "catchup"}}, "w")["player"] == {
        "type": "catchup", "speed": 1.25, "max_late_ms": 1000.0}
    once = normalize_workload({"type": "avc", "player": {"type": "catchup", "speed": 2}}, "w")
    assert normalize_workload(once, "w") == once
    assert normalize_workload({"type": "avc", "player": {"type": "fixed"}}, "w")["player"] == {"type": "fixed"}
    with pytest.raises(ScenarioError) as info:
        normalize_workload({"type": "web", "player": {"type": "catchup"}}, "w")
    assert info.value.field == "w.player"


@pytest.mark.parametrize("kind", ["web", "bulk", "explicit"])
def test_playout_startup_is_for_video_only(kind: str) -> None:
    with pytest.raises(ScenarioError) as info:
        normalize_workload({"type": kind, "playout_startup_ms": 100}, "w")
    assert info.value.field == "w.playout_startup_ms"


# ---------------------------------------------------------------------------------------
# Web and bulk
# ---------------------------------------------------------------------------------------


def test_web_bursts() -> None:
    config = {
        "type": "web",
        "page_interval_s": 1,
        "bursts": [1, 3, 2],
        "burst_gap_ms": 100,
        "object_kb_sigma": 0,
        "high_priority_fraction": 0,
    }
    t = generate(config, duration_s=2.05)
    # pages at 0 s, 1 s, 2 s; the last page's later bursts fall after the end
    expected = []
    for page in (0, 1):
        expected += [page * S] + [page * S + 100 * MS] * 3 + [page * S + 200 * MS] * 2
    expected += [2 * S]
    assert t.arrival_ns.tolist() == expected
    assert t.size_bytes.tolist() == [8000] * 13
    first = np.isin(np.arange(13), [0, 6, 12])
    assert t.priority[first].tolist() == [1, 1, 1]
    assert set(t.priority[~first]) == {0}
    assert t.weight[first].tolist() == [2.0] * 3
    assert set(t.weight[~first]) == {1.0}
    assert t.deadline_ns.tolist() == (t.arrival_ns + 1000 * MS).tolist()
    assert set(t.kind) == {"object"}
    assert set(t.frame) == {-1}
    assert t.frame_rate is None
    everything_high = generate({**config, "high_priority_fraction": 1}, duration_s=2.05)
    assert set(everything_high.priority) == {1}


def test_web_sizes_are_lognormal_and_capped() -> None:
    t = generate({"type": "web", "object_kb_max": 30}, duration_s=60, seed=3)
    assert len(t) == 12 * 36
    assert t.size_bytes.max() == 30_000
    assert t.size_bytes.min() >= 1
    assert 6_000 < np.median(t.size_bytes) < 10_000
    share = np.mean(t.priority[t.arrival_ns % (5 * S) != 0] == 1)
    assert 0.15 < share < 0.35


def test_bulk_chunk_timing() -> None:
    t = generate({"type": "bulk", "rate_mbps": 8, "chunk_bytes": 1000}, duration_s=0.01)
    assert t.arrival_ns.tolist() == [k * MS for k in range(1, 10)]
    assert t.size_bytes.tolist() == [1000] * 9
    assert t.deadline_ns.tolist() == [k * MS + 1000 * MS for k in range(1, 10)]
    assert set(t.kind) == {"chunk"}
    assert set(t.priority) == {0}
    assert set(t.weight) == {1.0}
    uneven = generate(
        {"type": "bulk", "rate_mbps": 3, "chunk_bytes": 1000, "start_s": 0.001, "priority": 4},
        duration_s=0.01,
    )
    # one chunk every 8000 / 3e6 s = 2666666.67 ns, after the start at 1 ms
    assert uneven.arrival_ns.tolist() == [3_666_667, 6_333_333, 9_000_000]
    assert set(uneven.priority) == {4}


# ---------------------------------------------------------------------------------------
# Frame files
# ---------------------------------------------------------------------------------------


def test_frames_bits_types_and_looping(tmp_path: Path) -> None:
    write(tmp_path, "video.txt", FRAMES_TEXT)
    config = {"type": "frames", "file": "video.txt", "type_column": 2, "size_unit": "bits"}
    t = generate(config, duration_s=0.3, base_dir=tmp_path)
    # frames 40 ms apart; the file repeats every 3 * 40 ms
    assert t.arrival_ns.tolist() == [k * 40 * MS for k in range(8)]
    assert t.size_bytes.tolist() == [1000, 101, 2] * 2 + [1000, 101]
    assert "".join(t.kind) == "IPPIPPIP"
    assert t.priority.tolist() == [2, 1, 1] * 2 + [2, 1]
    assert t.weight.tolist() == [3.0, 2.0, 2.0] * 2 + [3.0, 2.0]
    assert t.frame.tolist() == list(range(8))
    assert t.frame_rate == 25.0
    assert t.deadline_ns.tolist() == (t.arrival_ns + 200 * MS).tolist()
    once = generate({**config, "loop": False, "start_s": 0.01}, duration_s=0.3, base_dir=tmp_path)
    assert once.arrival_ns.tolist() == [10 * MS, 50 * MS, 90 * MS]


def test_frames_csv_with_header_and_type_map(tmp_path: Path) -> None:
    write(tmp_path, "log.csv", "# frame log\nts_ms,type,bytes\n0,I,900\n33,B,100\n66,P,300.5\n")
    config = {
        "type": "frames",
        "file": str(tmp_path / "log.csv"),
        "time_column": "ts_ms",
        "size_column": "bytes",
        "type_column": "type",
        "type_map": {"I": "I", "P": "P", "B": "B"},
        "time_unit": "ms",
        "delimiter": ",",
        "loop": False,
    }
    assert normalize_workload(config, "w")["header"] is True
    t = generate(config, duration_s=1)
    assert t.arrival_ns.tolist() == [0, 33 * MS, 66 * MS]
    assert t.kind.tolist() == ["I", "B", "P"]
    assert t.size_bytes.tolist() == [900, 100, 301]
    assert t.priority.tolist() == [2, 0, 1]
    assert t.frame_rate == pytest.approx(1000 / 33)


def test_frames_skip_percent_comment_lines(tmp_path: Path) -> None:
    """MATLAB-written frame logs (cisco syncodecs) comment with ``%``: such lines are
    skipped, before the header and between data lines, instead of failing as a time."""
    write(tmp_path, "log.txt", "% syncodecs trace\n% type time size\n0 900\n% mid\n0.04 300\n0.08 200\n")
    t = generate({"type": "frames", "file": str(tmp_path / "log.txt"), "loop": False}, duration_s=1)
    assert t.arrival_ns.tolist() == [0, 40 * MS, 80 * MS]
    assert t.size_bytes.tolist() == [900, 300, 200]


def test_frames_numbered_by_fps_and_frame_numbers_refused_as_seconds(tmp_path: Path) -> None:
    """A log of frame numbers and sizes is a 1 fps video when the numbers are taken as
    seconds: refused, naming the file and the way out; with ``fps`` and no time column the
    frames are spaced 1 / fps apart."""
    write(tmp_path, "numbered.txt", "0 900\n1 300\n2 200\n3 250\n")
    write(tmp_path, "sizes.txt", "900\n300\n200\n250\n")
    numbered = {"type": "frames", "file": str(tmp_path / "numbered.txt"), "loop": False}
    with pytest.raises(TraceError, match=r"numbered\.txt:1: the time column holds frame numbers \(0, 1, 2, \.\.\."):
        generate(numbered, duration_s=10)
    by_fps = {"type": "frames", "file": str(tmp_path / "sizes.txt"), "time_column": None, "fps": 25,
              "size_column": 0, "loop": False}
    t = generate(by_fps, duration_s=1)
    assert t.arrival_ns.tolist() == [0, 40 * MS, 80 * MS, 120 * MS]
    assert t.size_bytes.tolist() == [900, 300, 200, 250] and t.frame_rate == pytest.approx(25)
    assert "fps" not in normalize_workload(numbered, "w")
    with pytest.raises(ScenarioError, match=r"w\.time_column: got None; expected null exactly when fps"):
        normalize_workload({**numbered, "time_column": None}, "w")
    with pytest.raises(ScenarioError, match=r"w\.time_column: got 0; expected null exactly when fps"):
        normalize_workload({**numbered, "fps": 25, "time_column": 0}, "w")
    real_seconds = write(tmp_path, "seconds.txt", "0.0 900\n1.0 300\n2.0 200\n")
    assert generate({"type": "frames", "file": str(real_seconds), "loop": False}, duration_s=5).frame_rate == 1.0


def test_frames_without_type_column_use_default_type(tmp_path: Path) -> None:
    write(tmp_path, "v", "0 10\n0.5 20\n")
    t = generate(
        {"type": "frames", "file": "v", "default_type": "B"}, duration_s=1.5, base_dir=tmp_path
    )
    assert t.kind.tolist() == ["B", "B", "B"]
    assert t.size_bytes.tolist() == [10, 20, 10]


BAD_FRAME_FILES = [
    ("0 10 1\n0.04 abc 0\n", 2, "'abc' is not a number"),
    ("0 10 1\n0.04 0 0\n", 2, "out of range"),
    ("0 10 1\n0.04 10 7\n", 2, "'7' is not a key of type_map"),
    ("0 10 1\n0.04 10\n", 2, "missing column"),
    ("0 10 1\n0.04 10 0\n0.04 10 0\n", 3, "strictly increasing"),
    ("0 10 1\n", 1, "only one frame"),
    ("\n", None, "no frames"),
]


@pytest.mark.parametrize(("text", "line", "problem"), BAD_FRAME_FILES)
def test_bad_frame_files(tmp_path: Path, text: str, line: int | None, problem: str) -> None:
    write(tmp_path, "bad.frames", text)
    with pytest.raises(TraceError) as info:
        generate({"type": "frames", "file": "bad.frames", "type_column": 2}, base_dir=tmp_path)
    assert info.value.line == line
    assert (f"bad.frames:{line}:" if line else "bad.frames:") in str(info.value)
    assert problem in str(info.value)


def test_missing_frames_file(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="file not found"):
        generate({"type": "frames", "file": "absent"}, base_dir=tmp_path)


# ---------------------------------------------------------------------------------------
# Explicit blocks
# ---------------------------------------------------------------------------------------


def test_explicit_blocks_sorted_stably() -> None:
    blocks = [
        {"arrival_ms": 5, "size_bytes": 100, "deadline_ms": 9, "kind": "late"},
        {"arrival_ms": 0.5, "size_bytes": 7, "deadline_ms": 0.5, "priority": 3, "weight": 0},
        {"arrival_ms": 5, "size_bytes": 200, "deadline_ms": 6},
    ]
    t = generate({"type": "explicit", "blocks": blocks}, duration_s=1)
    assert t.arrival_ns.tolist() == [500_000, 5 * MS, 5 * MS]
    assert t.size_bytes.tolist() == [7, 100, 200]
    assert t.deadline_ns.tolist() == [500_000, 9 * MS, 6 * MS]
    assert t.priority.tolist() == [3, 0, 0]
    assert t.weight.tolist() == [0.0, 1.0, 1.0]
    assert t.kind.tolist() == ["block", "late", "block"]
    assert t.frame.tolist() == [-1, -1, -1]
    assert t.frame_rate is None
    shifted = generate({"type": "explicit", "blocks": blocks, "start_s": 0.001}, duration_s=1)
    assert shifted.arrival_ns.tolist() == [1_500_000, 6 * MS, 6 * MS]
    assert shifted.deadline_ns.tolist() == [1_500_000, 10 * MS, 7 * MS]


def test_explicit_block_after_the_end() -> None:
    blocks = [
        {"arrival_ms": 0, "size_bytes": 1, "deadline_ms": 1},
        {"arrival_ms": 1000, "size_bytes": 1, "deadline_ms": 2000},
    ]
    with pytest.raises(ScenarioError, match=r"workload\.blocks\[1\]\.arrival_ms"):
        generate({"type": "explicit", "blocks": blocks}, duration_s=1)


# ---------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------


def test_no_block_within_duration() -> None:
    with pytest.raises(ScenarioError) as info:
        generate({"type": "avc", "start_s": 5}, duration_s=1)
    assert "'avc'" in str(info.value)
    assert "duration_s = 1.0" in str(info.value)


@pytest.mark.parametrize("duration", [0, -1, float("nan"), True, "10"])
def test_bad_duration(duration: Any) -> None:
    with pytest.raises(ScenarioError, match=r"^duration_s"):
        generate({"type": "bulk", "rate_mbps": 1}, duration_s=duration)


def test_too_many_blocks() -> None:
    with pytest.raises(ScenarioError, match="at most"):
        generate({"type": "bulk", "rate_mbps": 10**6, "chunk_bytes": 1}, duration_s=100)


BAD_CONFIGS = [
    ({"type": "avc", "fps": True}, "workloads[0].fps: got True"),
    ({"type": "avc", "bitrate_mbps": float("nan")}, "workloads[0].bitrate_mbps"),
    ({"type": "avc", "gop": "PBB"}, "workloads[0].gop"),
    ({"type": "avc", "gop": "IXP"}, "workloads[0].gop"),
    ({"type": "avc", "size_ratio": {"X": 1}}, "workloads[0].size_ratio.X"),
    ({"type": "avc", "size_ratio": {"I": 0}}, "workloads[0].size_ratio.I"),
    ({"type": "avc", "priority": {"I": 1.5}}, "workloads[0].priority.I"),
    ({"type": "avc", "size_cv": -0.1}, "workloads[0].size_cv"),
    ({"type": "avc", "deadline_ms": float("inf")}, "workloads[0].deadline_ms"),
    ({"type": "avc", "playout_startup_ms": 0}, "workloads[0].playout_startup_ms"),
    ({"type": "avc", "fsp": 30}, "workloads[0].fsp"),
    ({"type": "hevc"}, "workloads[0].type: got 'hevc'"),
    ({"fps": 30}, "workloads[0].type: got nothing"),
    ("avc", "workloads[0]: got 'avc'"),
    ({"type": "svc", "layer_share": [0.5, 0.4]}, "workloads[0].layer_share"),
    ({"type": "svc", "priority": [1, 0]}, "workloads[0].priority"),
    ({"type": "svc", "weight": [1, 1, -1]}, "workloads[0].weight[2]"),
    ({"type": "web", "bursts": [1, 0]}, "workloads[0].bursts[1]"),
    ({"type": "web", "high_priority_fraction": 1.5}, "workloads[0].high_priority_fraction"),
    ({"type": "web", "weight": {"medium": 1}}, "workloads[0].weight.medium"),
    ({"type": "bulk"}, "workloads[0].rate_mbps: got nothing"),
    ({"type": "bulk", "rate_mbps": 1, "chunk_bytes": 0}, "workloads[0].chunk_bytes"),
    ({"type": "bulk", "rate_mbps": 1, "start_s": -1}, "workloads[0].start_s"),
    ({"type": "frames"}, "workloads[0].file: got nothing"),
    ({"type": "frames", "file": "f", "size_unit": "kB"}, "workloads[0].size_unit"),
    ({"type": "frames", "file": "f", "time_column": "t", "header": False}, "workloads[0].header"),
    ({"type": "frames", "file": "f", "type_map": {"1": "X"}}, "workloads[0].type_map.1"),
    ({"type": "frames", "file": "f", "default_type": "Q"}, "workloads[0].default_type"),
    ({"type": "explicit", "blocks": []}, "workloads[0].blocks"),
    (
        {"type": "explicit", "blocks": [{"arrival_ms": 5, "size_bytes": 1, "deadline_ms": 4}]},
        "workloads[0].blocks[0].deadline_ms",
    ),
    (
        {"type": "explicit", "blocks": [{"arrival_ms": 5, "size_bytes": 1.0, "deadline_ms": 6}]},
        "workloads[0].blocks[0].size_bytes",
    ),
    (
        {"type": "explicit", "blocks": [{"arrival_ms": 5, "deadline_ms": 6}]},
        "workloads[0].blocks[0].size_bytes: got nothing",
    ),
    (
        {
            "type": "explicit",
            "blocks": [{"arrival_ms": 0, "size_bytes": 1, "deadline_ms": 1, "colour": "red"}],
        },
        "workloads[0].blocks[0].colour",
    ),
]


@pytest.mark.parametrize(("config", "where"), BAD_CONFIGS, ids=lambda v: str(v)[:50])
def test_bad_configs_raise_scenario_error(config: Any, where: str) -> None:
    with pytest.raises(ScenarioError) as info:
        normalize_workload(config, "workloads[0]")
    assert where in str(info.value)
    assert "expected" in str(info.value)


def test_unknown_key_lists_allowed_keys() -> None:
    with pytest.raises(ScenarioError) as info:
        normalize_workload({"type": "bulk", "rate_mbps": 1, "rate": 2}, "w")
    assert info.value.field == "w.rate"
    assert "rate_mbps, chunk_bytes" in str(info.value)


# ---------------------------------------------------------------------------------------
# BlockTable
# ---------------------------------------------------------------------------------------


def test_block_table_sort_and_frame() -> None:
    t = table()
    assert len(t) == 3
    ordered = t.sorted_by_arrival()
    assert ordered.arrival_ns.tolist() == [0, 5, 5]
    assert ordered.size_bytes.tolist() == [20, 10, 30]
    assert ordered.kind.tolist() == ["b", "a", "c"]
    assert ordered.priority.dtype == np.int32
    frame = ordered.to_frame()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == [
        "arrival_ns",
        "size_bytes",
        "deadline_ns",
        "priority",
        "weight",
        "kind",
        "frame",
    ]
    assert frame["arrival_ns"].dtype == np.int64
    assert frame["weight"].dtype == np.float64
    assert frame.attrs["frame_rate"] is None
    assert frame["kind"].tolist() == ["b", "a", "c"]


def test_block_table_arrays_are_read_only() -> None:
    t = table()
    with pytest.raises(ValueError, match="read-only"):
        t.size_bytes[0] = 1


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"arrival_ns": np.array([-1, 0, 0])}, r"arrival_ns\[0\]"),
        ({"size_bytes": np.array([1, 0, 1])}, r"size_bytes\[1\]"),
        ({"deadline_ns": np.array([9, 1, 4])}, r"deadline_ns\[2\]"),
        ({"priority": np.array([0, 2**31, 0])}, r"priority\[1\]"),
        ({"weight": np.array([1.0, np.nan, 1.0])}, r"weight\[1\]"),
        ({"weight": np.array([1.0, -1.0, 1.0])}, r"weight\[1\]"),
        ({"kind": np.array(["a", 3, "c"], dtype=object)}, r"kind\[1\]"),
        ({"frame": np.array([-2, 0, 0])}, r"frame\[0\]"),
        ({"frame": np.array([0, 0])}, "rows"),
        ({"size_bytes": np.array([1.0, 2.0, 3.0])}, "integers"),
        ({"frame_rate": 0.0}, "frame_rate"),
        ({"frame_rate": True}, "frame_rate"),
    ],
)
def test_block_table_invariants(override: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        table(**override)


def test_explicit_blocks_from_csv_and_json_files(tmp_path: Path) -> None:
    """A file of blocks means what the same blocks inline mean; its problems name file and line."""
    inline = [{"arrival_ms": 0, "size_bytes": 1200, "deadline_ms": 50, "priority": 2},
              {"arrival_ms": 10, "size_bytes": 300, "deadline_ms": 90, "kind": "audio"}]
    expected = generate({"type": "explicit", "blocks": inline}, duration_s=1)
    write(tmp_path, "b.csv", "# two blocks\narrival_ms,size_bytes,deadline_ms,priority,kind\n0,1200,50,2,block\n"
                             "10,300,90,0,audio\n")
    write(tmp_path, "b.json", json.dumps({"blocks": inline}))
    for name in ("b.csv", "b.json"):
        table = generate({"type": "explicit", "file": str(tmp_path / name)}, duration_s=1)
        for column in ("arrival_ns", "size_bytes", "deadline_ns", "priority", "weight", "kind"):
            assert getattr(table, column).tolist() == getattr(expected, column).tolist(), (name, column)
    write(tmp_path, "bad.csv", "arrival_ms,size_bytes,deadline_ms\n0,100,50\n20,0,60\n")
    with pytest.raises(TraceError, match=r"bad\.csv:3: line 3\.size_bytes: got 0; expected"):
        generate({"type": "explicit", "file": str(tmp_path / "bad.csv")}, duration_s=1)
    write(tmp_path, "short.csv", "arrival_ms,size_bytes\n0,100\n")
    with pytest.raises(TraceError, match=r"short\.csv: the header .* lacks deadline_ms"):
        generate({"type": "explicit", "file": str(tmp_path / "short.csv")}, duration_s=1)
    with pytest.raises(ScenarioError, match=r"w: got \['blocks', 'file'\]; expected either blocks"):
        normalize_workload({"type": "explicit", "blocks": inline, "file": "b.csv"}, "w")
    with pytest.raises(ScenarioError, match=r"w\.format: got <missing>|w\.format"):
        normalize_workload({"type": "explicit", "file": "blocks.txt"}, "w")


def test_explicit_blocks_from_a_har_capture(tmp_path: Path) -> None:
    """A page load's HTTP Archive: one block per response that carries data, arriving when
    its request started (from the earliest), due deadline_ms later; zero-size and unknown
    responses are left out; responses that start together keep the file's order."""
    def entry(start: str, body: int, content: int, mime: str) -> dict[str, Any]:
        return {"startedDateTime": start,
                "response": {"bodySize": body, "content": {"size": content, "mimeType": mime}}}

    har = {"log": {"entries": [
        entry("2024-05-01T10:00:00.250Z", 5000, 5000, "image/png"),
        entry("2024-05-01T10:00:00.000Z", 12000, 40000, "text/html; charset=utf-8"),
        entry("2024-05-01T10:00:00.100Z", 0, 0, "text/html"),            # a redirect: no data
        entry("2024-05-01T10:00:00.250Z", -1, 800, "application/javascript"),  # body size unknown: content size
        entry("2024-05-01T10:00:00.300Z", -1, -1, "image/gif"),          # nothing known: left out
    ]}}
    write(tmp_path, "page.har", json.dumps(har))
    table = generate({"type": "explicit", "file": str(tmp_path / "page.har"), "deadline_ms": 100}, duration_s=1)
    assert table.arrival_ns.tolist() == [0, 250 * MS, 250 * MS]
    assert table.size_bytes.tolist() == [12000, 5000, 800]
    assert table.deadline_ns.tolist() == [100 * MS, 350 * MS, 350 * MS]
    assert table.kind.tolist() == ["text", "image", "application"]
    with pytest.raises(ScenarioError, match=r"w\.deadline_ms: got <missing>|w\.deadline_ms"):
        normalize_workload({"type": "explicit", "file": "page.har"}, "w")
    write(tmp_path, "broken.har", json.dumps({"log": {"entries": [{"startedDateTime": "yesterday",
                                                                    "response": {"bodySize": 10}}]}}))
    with pytest.raises(TraceError, match=r"broken\.har: log\.entries\[0\]\.startedDateTime: 'yesterday' is not"):
        generate({"type": "explicit", "file": str(tmp_path / "broken.har"), "deadline_ms": 100}, duration_s=1)
