"""Tests of mpsched.envs.bandwidth: bandwidth schedules, configurations and trace loaders."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mpsched.envs.bandwidth import (
    MAX_RATE_BPS,
    BandwidthSchedule,
    build_bandwidth,
    load_trace_file,
    normalize_bandwidth,
)
from mpsched.envs.errors import ScenarioError, TraceError

MS = 1_000_000
S = 1_000_000_000


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text)
    return path


def schedule(
    config: Any, base_dir: Path | None = None, rng: np.random.Generator | None = None
) -> BandwidthSchedule:
    return build_bandwidth(normalize_bandwidth(config, "bw"), base_dir, rng)


def assert_schedule(s: BandwidthSchedule, starts: list[int], rates: list[int], cycle: int) -> None:
    assert s.start_ns.tolist() == list(starts)
    assert s.rate_bps.tolist() == list(rates)
    assert s.cycle_ns == cycle
    assert s.start_ns.dtype == np.int64
    assert s.rate_bps.dtype == np.int64


# ---------------------------------------------------------------------------------------
# Round trips
# ---------------------------------------------------------------------------------------


@pytest.fixture
def trace_dir(tmp_path: Path) -> Path:
    write(tmp_path, "link.mahi", "0\n0\n2\n3\n3\n3\n5\n")
    write(tmp_path, "link.cooked", "10.0 1.5\n11.0 2.5\n13.0 0.5\n")
    write(tmp_path, "link.csv", "ts,Bps\n0,1000\n1,2000\n2,1000\n")
    return tmp_path


ROUND_TRIP_CONFIGS = [
    12,
    2.5,
    {"type": "constant", "mbps": 0},
    {"type": "square", "high_mbps": 10, "low_mbps": 2, "period_s": 1},
    {"type": "square", "high_mbps": 10, "low_mbps": 2, "period_s": 1, "phase_s": -0.3, "duty": 0.1},
    {"type": "piecewise", "points": [[0, 5], [1.5, 3]]},
    {"type": "piecewise", "points": [(0, 5), (1, 0)], "mode": "loop", "cycle_s": 4},
    {"type": "trace", "format": "mahimahi", "file": "link.mahi"},
    {"type": "trace", "format": "mahimahi", "file": "link.mahi", "bin_ms": 2, "mode": "hold"},
    {"type": "trace", "format": "cooked", "file": "link.cooked", "scale": 2, "offset_s": 1},
    {"type": "trace", "format": "cooked", "file": "link.cooked", "random_offset": True},
    {
        "type": "trace",
        "format": "csv",
        "file": "link.csv",
        "time_column": "ts",
        "rate_column": 1,
        "time_unit": "s",
        "rate_unit": "Bps",
    },
]


@pytest.mark.parametrize("config", ROUND_TRIP_CONFIGS, ids=lambda c: str(c)[:60])
def test_normalize_round_trip_and_idempotent(config: Any, trace_dir: Path) -> None:
    normal = normalize_bandwidth(config, "paths[0].bandwidth")
    assert json.loads(json.dumps(normal)) == normal
    assert normalize_bandwidth(normal, "paths[0].bandwidth") == normal
    built = build_bandwidth(normal, trace_dir, np.random.default_rng(3))
    assert isinstance(built, BandwidthSchedule)
    assert built == build_bandwidth(normal, trace_dir, np.random.default_rng(3))


def test_bare_number_is_constant() -> None:
    assert normalize_bandwidth(12, "bw") == {"type": "constant", "mbps": 12.0}
    assert_schedule(schedule(4.3), [0], [4_300_000], 0)


def test_defaults_are_filled() -> None:
    normal = normalize_bandwidth({"type": "trace", "format": "mahimahi", "file": "x"}, "bw")
    assert normal == {
        "type": "trace",
        "format": "mahimahi",
        "file": "x",
        "mode": "loop",
        "scale": 1.0,
        "offset_s": 0.0,
        "random_offset": False,
        "packet_bytes": 1500,
        "bin_ms": 1,
    }
    csv = normalize_bandwidth(
        {"type": "trace", "format": "csv", "file": "x", "time_unit": "ms", "rate_unit": "kbps"},
        "bw",
    )
    assert (csv["time_column"], csv["rate_column"], csv["delimiter"], csv["header"]) == (
        0,
        1,
        ",",
        False,
    )
    named = normalize_bandwidth(
        {
            "type": "trace",
            "format": "csv",
            "file": "x",
            "time_unit": "s",
            "rate_unit": "bps",
            "rate_column": "rate",
        },
        "bw",
    )
    assert named["header"] is True


# ---------------------------------------------------------------------------------------
# Exact schedules
# ---------------------------------------------------------------------------------------


def test_square_wave_without_phase() -> None:
    s = schedule({"type": "square", "high_mbps": 10, "low_mbps": 2, "period_s": 1, "duty": 0.25})
    assert_schedule(s, [0, 250 * MS], [10_000_000, 2_000_000], S)
    assert s.rate_at(249_999_999) == 10_000_000
    assert s.rate_at(250_000_000) == 2_000_000
    assert s.rate_at(S + 100 * MS) == 10_000_000
    assert s.mean_bps(S) == 4_000_000
    assert s.peak_bps() == 10_000_000
    assert s.min_bps() == 2_000_000


def test_square_wave_with_phase() -> None:
    config = {"type": "square", "high_mbps": 10, "low_mbps": 2, "period_s": 1, "duty": 0.25}
    # schedule(t) = wave(t + 0.1 s): high for t in [0, 0.15) and [0.9, 1)
    s = schedule({**config, "phase_s": 0.1})
    assert_schedule(s, [0, 150 * MS, 900 * MS], [10_000_000, 2_000_000, 10_000_000], S)
    # a phase of -0.1 s is a phase of 0.9 s: high for t in [0.1, 0.35)
    s = schedule({**config, "phase_s": -0.1})
    assert_schedule(s, [0, 100 * MS, 350 * MS], [2_000_000, 10_000_000, 2_000_000], S)
    assert s.mean_bps(3 * S) == 4_000_000


def test_square_equal_rates_merge() -> None:
    s = schedule({"type": "square", "high_mbps": 3, "low_mbps": 3, "period_s": 2})
    assert_schedule(s, [0], [3_000_000], 2 * S)


def test_piecewise_hold_and_loop() -> None:
    hold = schedule({"type": "piecewise", "points": [[0, 5], [1, 5], [2, 3]]})
    assert_schedule(hold, [0, 2 * S], [5_000_000, 3_000_000], 0)
    assert hold.rate_at(10**15) == 3_000_000
    assert hold.mean_bps(4 * S) == 4_000_000
    loop = schedule({"type": "piecewise", "points": [[0, 5], [2, 3]], "mode": "loop", "cycle_s": 3})
    assert_schedule(loop, [0, 2 * S], [5_000_000, 3_000_000], 3 * S)
    assert loop.rate_at(3 * S + S // 2) == 5_000_000
    assert loop.rate_at(5 * S + S // 2) == 3_000_000
    assert loop.mean_bps(4 * S) == pytest.approx((10 + 3 + 5) * 1e6 / 4)


def test_bits_and_rate_changes_until() -> None:
    """What the work budget's estimate reads (docs/model.md section 12): whole bits over
    [0, t) and a bound on the rate changes in (0, t]."""
    hold = schedule({"type": "piecewise", "points": [[0, 5], [1, 5], [2, 3]]})
    assert hold.bits_until(4 * S + 1) == 10_000_000 + 6_000_000  # + 3 bit/s x 1 ns: less than a bit
    assert hold.rate_changes_until(2 * S - 1) == 0 and hold.rate_changes_until(2 * S) == 1
    loop = schedule({"type": "piecewise", "points": [[0, 5], [2, 3]], "mode": "loop", "cycle_s": 3})
    assert loop.bits_until(4 * S) == (10 + 3 + 5) * 10**6
    # changes at 2, 3, 5, 6, 8, ... s: 4 up to 7 s, bounded by 2 per started cycle
    assert 4 <= loop.rate_changes_until(7 * S) <= 2 * (7 // 3 + 1)
    assert schedule({"type": "constant", "mbps": 4}).rate_changes_until(10**18) == 0


def test_mahimahi_single_line_is_12_mbps(tmp_path: Path) -> None:
    s = load_trace_file(write(tmp_path, "one", "1\n"), "mahimahi")
    assert_schedule(s, [0], [12_000_000], MS)
    assert s.rate_at(123_456_789) == 12_000_000
    assert s.mean_bps(S) == 12_000_000
    bigger = load_trace_file(tmp_path / "one", "mahimahi", packet_bytes=1000)
    assert_schedule(bigger, [0], [8_000_000], MS)


def test_mahimahi_bins_and_folding(tmp_path: Path) -> None:
    # L = 5 ms; the timestamp 5 folds onto 0, so bin 0 holds three packets.
    path = write(tmp_path, "small", "0\n0\n\n2\n3\n3\n3\n5\n")
    s = load_trace_file(path, "mahimahi")
    assert_schedule(
        s,
        [0, 1 * MS, 2 * MS, 3 * MS, 4 * MS],
        [36_000_000, 0, 12_000_000, 36_000_000, 0],
        5 * MS,
    )
    assert s.mean_bps(5 * MS) == 7 * 1500 * 8 / 0.005
    two = load_trace_file(path, "mahimahi", bin_ms=2)
    assert_schedule(two, [0, 2 * MS, 4 * MS], [18_000_000, 24_000_000, 0], 5 * MS)
    # bin_ms = 3 does not divide L = 5: the last bin is 2 ms long, and bytes are kept
    three = load_trace_file(path, "mahimahi", bin_ms=3)
    assert_schedule(three, [0, 3 * MS], [16_000_000, 18_000_000], 5 * MS)
    assert three.mean_bps(5 * MS) == s.mean_bps(5 * MS)


def test_mahimahi_hold_mode(tmp_path: Path) -> None:
    path = write(tmp_path, "small", "0\n2\n3\n4\n")
    s = load_trace_file(path, "mahimahi", mode="hold")
    assert_schedule(s, [0, 1 * MS, 2 * MS], [24_000_000, 0, 12_000_000], 0)
    assert s.rate_at(S) == 12_000_000


def test_cooked_shifts_first_time(tmp_path: Path) -> None:
    path = write(tmp_path, "c.log", "10.0\t1.5\n11.0 2.5\n\n13.0   0.5\n")
    s = load_trace_file(path, "cooked")
    # intervals 1 s and 2 s: the last sample lasts the median, 1.5 s
    assert_schedule(s, [0, S, 3 * S], [1_500_000, 2_500_000, 500_000], 4_500_000_000)
    hold = load_trace_file(path, "cooked", mode="hold")
    assert_schedule(hold, [0, S, 3 * S], [1_500_000, 2_500_000, 500_000], 0)
    assert hold.rate_at(100 * S) == 500_000


def test_cooked_fractional_mbps_rounds(tmp_path: Path) -> None:
    s = load_trace_file(write(tmp_path, "c", "0 0.0000004\n1 1.2345675\n"), "cooked")
    assert s.rate_bps.tolist() == [0, 1_234_568]


def test_csv_with_names_and_byte_units(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "wifi.csv",
        "# paired link\nts,bytes_per_second,note\n5,1000,a\n6,2000,b\n# gap\n7,1000,c\n",
    )
    s = load_trace_file(
        path,
        "csv",
        time_column="ts",
        rate_column="bytes_per_second",
        time_unit="s",
        rate_unit="Bps",
    )
    assert_schedule(s, [0, S, 2 * S], [8000, 16000, 8000], 3 * S)


def test_csv_with_indices_and_whitespace(tmp_path: Path) -> None:
    path = write(tmp_path, "t.txt", "x 0 500\ny 250 1500\nz 500 500\n")
    s = load_trace_file(
        path,
        "csv",
        time_column=1,
        rate_column=2,
        time_unit="ms",
        rate_unit="kbps",
        delimiter="whitespace",
    )
    assert_schedule(s, [0, 250 * MS, 500 * MS], [500_000, 1_500_000, 500_000], 750 * MS)


def test_csv_header_with_indices(tmp_path: Path) -> None:
    path = write(tmp_path, "t.csv", "time;rate\n0;1\n1000;2\n")
    s = load_trace_file(path, "csv", time_unit="us", rate_unit="Gbps", delimiter=";", header=True)
    assert_schedule(s, [0, 1000 * 1000], [10**9, 2 * 10**9], 2000 * 1000)


@pytest.mark.parametrize(
    ("unit", "bps"),
    [
        ("bps", 1),
        ("kbps", 10**3),
        ("Mbps", 10**6),
        ("Gbps", 10**9),
        ("Bps", 8),
        ("kBps", 8000),
        ("MBps", 8 * 10**6),
    ],
)
def test_csv_rate_units(tmp_path: Path, unit: str, bps: int) -> None:
    path = write(tmp_path, "u.csv", "0,3\n1,1\n")
    s = load_trace_file(path, "csv", time_unit="ns", rate_unit=unit)
    assert_schedule(s, [0, 1], [3 * bps, bps], 2)


def test_offset_wraps_in_loop_mode(tmp_path: Path) -> None:
    path = write(tmp_path, "c", "0 1\n1 2\n2 3\n")
    # cycle 3 s; an offset of 4.5 s is an offset of 1.5 s
    s = load_trace_file(path, "cooked", offset_s=4.5)
    assert_schedule(
        s, [0, S // 2, 3 * S // 2, 5 * S // 2], [2_000_000, 3_000_000, 1_000_000, 2_000_000], 3 * S
    )
    assert s == load_trace_file(path, "cooked", offset_s=1.5)
    aligned = load_trace_file(path, "cooked", offset_s=1.0)
    assert_schedule(aligned, [0, S, 2 * S], [2_000_000, 3_000_000, 1_000_000], 3 * S)


def test_offset_in_hold_mode(tmp_path: Path) -> None:
    path = write(tmp_path, "c", "0 1\n1 2\n2 3\n")
    s = load_trace_file(path, "cooked", mode="hold", offset_s=1.5)
    assert_schedule(s, [0, S // 2], [2_000_000, 3_000_000], 0)
    beyond = load_trace_file(path, "cooked", mode="hold", offset_s=10)
    assert_schedule(beyond, [0], [3_000_000], 0)


@settings(max_examples=60, deadline=None)
@given(
    gaps=st.lists(st.integers(1, 5), min_size=1, max_size=5),
    rates=st.lists(st.integers(0, 3), min_size=6, max_size=6),
    offset_ms=st.integers(0, 60),
    queries=st.lists(st.integers(0, 100), min_size=1, max_size=10),
    mode=st.sampled_from(["loop", "hold"]),
)
def test_offset_reads_the_trace_later(
    tmp_path_factory: pytest.TempPathFactory,
    gaps: list[int],
    rates: list[int],
    offset_ms: int,
    queries: list[int],
    mode: str,
) -> None:
    times = np.concatenate(([7], 7 + np.cumsum(gaps)))
    text = "".join(f"{t},{r}\n" for t, r in zip(times, rates, strict=False))
    path = tmp_path_factory.mktemp("offset") / "trace.csv"
    path.write_text(text)
    options = {"time_unit": "ms", "rate_unit": "bps", "mode": mode}
    plain = load_trace_file(path, "csv", **options)
    shifted = load_trace_file(path, "csv", offset_s=offset_ms / 1000, **options)
    for q in queries:
        assert shifted.rate_at(q * MS) == plain.rate_at((q + offset_ms) * MS)
    if mode == "loop":
        assert shifted.cycle_ns == plain.cycle_ns
        assert shifted.mean_bps(shifted.cycle_ns) == plain.mean_bps(plain.cycle_ns)


def test_scale_multiplies(tmp_path: Path) -> None:
    path = write(tmp_path, "c", "0 1\n1 2\n")
    s = load_trace_file(path, "cooked", scale=2.5)
    assert_schedule(s, [0, S], [2_500_000, 5_000_000], 2 * S)


def test_random_offset_uses_rng(tmp_path: Path) -> None:
    path = write(tmp_path, "c", "0 1\n1 2\n2 3\n3 4\n")
    config = {"type": "trace", "format": "cooked", "file": str(path), "random_offset": True}
    plain = schedule({**config, "random_offset": False})
    first = schedule(config, rng=np.random.default_rng(5))
    assert first == schedule(config, rng=np.random.default_rng(5))
    offsets = {schedule(config, rng=np.random.default_rng(seed)).start_ns[1] for seed in range(6)}
    assert len(offsets) > 1
    assert first.cycle_ns == plain.cycle_ns
    assert first.mean_bps(first.cycle_ns) == plain.mean_bps(plain.cycle_ns)
    with pytest.raises(ScenarioError, match="random_offset"):
        schedule(config)


def test_relative_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "one", "1\n")
    config = {"type": "trace", "format": "mahimahi", "file": "one"}
    assert schedule(config, base_dir=tmp_path).rate_bps.tolist() == [12_000_000]
    monkeypatch.chdir(tmp_path)
    assert schedule(config).rate_bps.tolist() == [12_000_000]
    assert load_trace_file("one", "mahimahi").rate_bps.tolist() == [12_000_000]


def test_parsed_files_are_cached(tmp_path: Path) -> None:
    path = write(tmp_path, "c", "0 1\n1 2\n")
    stamp = path.stat().st_mtime_ns
    assert load_trace_file(path, "cooked").rate_bps.tolist() == [1_000_000, 2_000_000]
    # same size and modification time: the cached parse is used, the file is not re-read
    path.write_text("0 1\n1 3\n")
    os.utime(path, ns=(stamp, stamp))
    assert load_trace_file(path, "cooked").rate_bps.tolist() == [1_000_000, 2_000_000]
    # a new modification time makes it read again
    os.utime(path, ns=(stamp + 10**9, stamp + 10**9))
    assert load_trace_file(path, "cooked").rate_bps.tolist() == [1_000_000, 3_000_000]


# ---------------------------------------------------------------------------------------
# The schedule class
# ---------------------------------------------------------------------------------------


def test_schedule_arrays_are_read_only_int64() -> None:
    s = BandwidthSchedule(np.array([0, 5], dtype=np.int32), np.array([1, 2]), 9)
    assert s.start_ns.dtype == np.int64
    with pytest.raises(ValueError, match="read-only"):
        s.rate_bps[0] = 7


@pytest.mark.parametrize(
    ("start", "rate", "cycle", "message"),
    [
        ([], [], 0, "at least one segment"),
        ([1], [5], 0, r"start_ns\[0\] must be 0"),
        ([0, 5, 5], [1, 2, 3], 0, "strictly increasing"),
        ([0], [-1], 0, r"rate_bps\[0\]"),
        ([0], [MAX_RATE_BPS + 1], 0, "rate_bps"),
        ([0, 5], [1, 2], 5, "cycle_ns"),
        ([0], [1], True, "cycle_ns"),
        ([0, 1], [1], 0, "same length"),
        (np.array([0.0]), [1], 0, "integers"),
    ],
)
def test_schedule_invariants(start: Any, rate: Any, cycle: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        BandwidthSchedule(np.asarray(start), np.asarray(rate), cycle)


def test_schedule_method_arguments() -> None:
    s = BandwidthSchedule(np.array([0]), np.array([1]), 0)
    with pytest.raises(ValueError, match="t_ns"):
        s.rate_at(-1)
    with pytest.raises(ValueError, match="horizon_ns"):
        s.mean_bps(0)
    with pytest.raises(ValueError, match="t_ns"):
        s.rate_at(1.5)


def test_mean_is_exact_for_large_values() -> None:
    s = BandwidthSchedule(np.array([0, 1]), np.array([MAX_RATE_BPS, 0]), 2)
    assert s.mean_bps(10**18) == MAX_RATE_BPS / 2


# ---------------------------------------------------------------------------------------
# Bad configurations
# ---------------------------------------------------------------------------------------

FIELD = "paths[0].bandwidth"

BAD_CONFIGS = [
    ({"type": "constant", "mbps": -1}, "paths[0].bandwidth.mbps"),
    (float("nan"), "paths[0].bandwidth: got nan"),
    (math.inf, "paths[0].bandwidth: got inf"),
    ({"type": "constant", "mbps": True}, "paths[0].bandwidth.mbps: got True"),
    ({"type": "constant", "mbps": 1, "burst": 2}, "paths[0].bandwidth.burst"),
    ({"type": "sine", "mbps": 1}, "paths[0].bandwidth.type: got 'sine'"),
    ({"mbps": 1}, "paths[0].bandwidth.type: got nothing"),
    ([1, 2], "paths[0].bandwidth: got [1, 2]"),
    ("12", "paths[0].bandwidth: got '12'"),
    ({"type": "square", "high_mbps": 1, "low_mbps": 0}, "paths[0].bandwidth.period_s: got nothing"),
    ({"type": "square", "high_mbps": 1, "low_mbps": 0, "period_s": 1, "duty": 1.0}, ".duty"),
    ({"type": "square", "high_mbps": 1, "low_mbps": 0, "period_s": 1, "duty": 1e-12}, ".duty"),
    ({"type": "square", "high_mbps": 1, "low_mbps": 0, "period_s": 0}, ".period_s"),
    ({"type": "square", "high_mbps": "1", "low_mbps": 0, "period_s": 1}, ".high_mbps"),
    ({"type": "piecewise", "points": [[1, 5]]}, "paths[0].bandwidth.points[0][0]"),
    ({"type": "piecewise", "points": [[0, 5], [0, 3]]}, "paths[0].bandwidth.points[1][0]"),
    ({"type": "piecewise", "points": [[0, 5], [1, -3]]}, "paths[0].bandwidth.points[1][1]"),
    ({"type": "piecewise", "points": [[0, 5], [1]]}, "paths[0].bandwidth.points[1]"),
    ({"type": "piecewise", "points": []}, "paths[0].bandwidth.points"),
    ({"type": "piecewise", "points": [[0, 5]], "mode": "loop"}, ".cycle_s: got nothing"),
    ({"type": "piecewise", "points": [[0, 5], [2, 1]], "mode": "loop", "cycle_s": 2}, ".cycle_s"),
    ({"type": "piecewise", "points": [[0, 5]], "cycle_s": 2}, ".cycle_s"),
    ({"type": "piecewise", "points": [[0, 5]], "mode": "repeat"}, ".mode"),
    ({"type": "trace", "format": "pcap", "file": "x"}, ".format: got 'pcap'"),
    ({"type": "trace", "format": "cooked"}, ".file: got nothing"),
    ({"type": "trace", "format": "cooked", "file": "x", "bin_ms": 2}, ".bin_ms"),
    ({"type": "trace", "format": "mahimahi", "file": "x", "bin_ms": 0}, ".bin_ms"),
    ({"type": "trace", "format": "mahimahi", "file": "x", "packet_bytes": 1.5}, ".packet_bytes"),
    ({"type": "trace", "format": "cooked", "file": "x", "scale": 0}, ".scale"),
    ({"type": "trace", "format": "cooked", "file": "x", "offset_s": -1}, ".offset_s"),
    ({"type": "trace", "format": "cooked", "file": "x", "random_offset": 1}, ".random_offset"),
    (
        {"type": "trace", "format": "cooked", "file": "x", "random_offset": True, "offset_s": 2},
        ".offset_s",
    ),
    (
        {"type": "trace", "format": "csv", "file": "x", "rate_unit": "bps"},
        ".time_unit: got nothing",
    ),
    (
        {"type": "trace", "format": "csv", "file": "x", "time_unit": "s", "rate_unit": "mbps"},
        ".rate_unit: got 'mbps'",
    ),
    (
        {"type": "trace", "format": "csv", "file": "x", "time_unit": "min", "rate_unit": "bps"},
        ".time_unit: got 'min'",
    ),
    (
        {
            "type": "trace",
            "format": "csv",
            "file": "x",
            "time_unit": "s",
            "rate_unit": "bps",
            "time_column": "t",
            "header": False,
        },
        ".header",
    ),
    (
        {
            "type": "trace",
            "format": "csv",
            "file": "x",
            "time_unit": "s",
            "rate_unit": "bps",
            "rate_column": -1,
        },
        ".rate_column",
    ),
    (
        {
            "type": "trace",
            "format": "csv",
            "file": "x",
            "time_unit": "s",
            "rate_unit": "bps",
            "delimiter": ",,",
        },
        ".delimiter",
    ),
]


@pytest.mark.parametrize(("config", "where"), BAD_CONFIGS, ids=lambda v: str(v)[:50])
def test_bad_configs_raise_scenario_error(config: Any, where: str) -> None:
    with pytest.raises(ScenarioError) as info:
        normalize_bandwidth(config, FIELD)
    assert where in str(info.value)
    assert str(info.value).startswith(FIELD)
    assert "expected" in str(info.value)


def test_unknown_key_lists_allowed_keys() -> None:
    with pytest.raises(ScenarioError) as info:
        normalize_bandwidth({"type": "square", "high": 1}, FIELD)
    assert info.value.field == "paths[0].bandwidth.high"
    assert "high_mbps, low_mbps, period_s, phase_s, duty" in str(info.value)


# ---------------------------------------------------------------------------------------
# Bad files
# ---------------------------------------------------------------------------------------

BAD_FILES = [
    ("mahimahi", {}, "0\nabc\n", 2, "'abc'"),
    ("mahimahi", {}, "0\n-3\n", 2, "'-3'"),
    ("mahimahi", {}, "0\n1.5\n", 2, "'1.5'"),
    ("mahimahi", {}, "5\n7\n3\n", 3, "non-decreasing"),
    ("mahimahi", {}, "\n\n", None, "empty"),
    ("mahimahi", {}, "0\n0\n", 2, "must be > 0"),
    ("mahimahi", {}, "1\n" * 3 + "99999999999999\n", 4, "too large"),
    ("cooked", {}, "0 1\n1 nan\n", 2, "'nan'"),
    ("cooked", {}, "0 1\n1 -2\n", 2, "negative rate"),
    ("cooked", {}, "0 1\n2 1\n1 1\n", 3, "strictly increasing"),
    ("cooked", {}, "0 1\n1 1\n1 1\n", 3, "strictly increasing"),
    ("cooked", {}, "0 1 7\n1 1\n", 1, "expected 2 fields"),
    ("cooked", {}, "0 1\n1 fast\n", 2, "'fast' is not a number"),
    ("cooked", {}, "0 2000000\n1 1\n", 1, "exceeds"),
    ("cooked", {}, "0 1\n", 1, "only one sample"),
    ("cooked", {}, "", None, "empty"),
    ("cooked", {}, "1e300 1\n2e300 1\n", 1, "out of range"),
    (
        "csv",
        {"time_column": "t", "rate_column": "speed"},
        "t,rate\n0,1\n",
        1,
        "unknown column name 'speed'",
    ),
    ("csv", {}, "0,1\n1\n", 2, "missing column"),
    ("csv", {"header": True, "rate_column": 4}, "t,rate\n0,1\n", 1, "out of range"),
    ("csv", {"time_column": "t"}, "t,rate\n", None, "empty"),
    ("csv", {}, "0,1\n1,inf\n", 2, "'inf'"),
]


@pytest.mark.parametrize(
    ("fmt", "options", "text", "line", "problem"), BAD_FILES, ids=lambda v: str(v)[:30]
)
def test_bad_files_raise_trace_error(
    tmp_path: Path, fmt: str, options: dict[str, Any], text: str, line: int | None, problem: str
) -> None:
    path = write(tmp_path, "bad.trace", text)
    if fmt == "csv":
        options = {"time_unit": "s", "rate_unit": "Mbps", **options}
    with pytest.raises(TraceError) as info:
        load_trace_file(path, fmt, **options)
    assert info.value.line == line
    where = f"bad.trace:{line}:" if line is not None else "bad.trace:"
    assert where in str(info.value)
    assert problem in str(info.value)


def test_unknown_column_message_lists_header(tmp_path: Path) -> None:
    path = write(tmp_path, "h.csv", "# c\ntime,down\n0,1\n")
    with pytest.raises(TraceError, match=r"h.csv:2: .*\['time', 'down'\]"):
        load_trace_file(
            path, "csv", time_column="time", rate_column="up", time_unit="s", rate_unit="bps"
        )


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TraceError) as info:
        schedule({"type": "trace", "format": "cooked", "file": "nope.log"}, base_dir=tmp_path)
    assert info.value.line is None
    assert info.value.file == str(tmp_path / "nope.log")
    assert "file not found" in str(info.value)


def test_directory_is_not_a_trace(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="not a regular file"):
        load_trace_file(tmp_path, "cooked")


def test_scale_beyond_limit(tmp_path: Path) -> None:
    path = write(tmp_path, "c", "0 900000\n1 1\n")
    with pytest.raises(ScenarioError, match="scale"):
        load_trace_file(path, "cooked", scale=2)


def test_load_trace_file_option_errors_name_the_field(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match=r"^trace\.bin_ms"):
        load_trace_file(write(tmp_path, "one", "1\n"), "mahimahi", bin_ms=True)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_service_end_matches_the_reference_simulator(data: st.DataObject) -> None:
    """BandwidthSchedule.service_end_ns against tests/refsim.py's Bandwidth.service_end
    (docs/model.md section 3), on schedules with zero-rate segments and cycles."""
    from refsim import NEVER, Bandwidth
    from specs import bandwidths

    starts, rates, cycle = data.draw(bandwidths())
    if data.draw(st.booleans()):
        rates = [0] + rates[1:]  # a zero-rate first segment as well
    schedule = BandwidthSchedule(np.array(starts, np.int64), np.array(rates, np.int64), cycle)
    reference = Bandwidth(starts, rates, cycle)
    t0 = data.draw(st.integers(0, 200 * 10**6))
    wire = data.draw(st.integers(1, 3000))
    expected = reference.service_end(t0, wire)
    assert schedule.service_end_ns(t0, wire) == (None if expected == NEVER else expected)
    by = data.draw(st.integers(t0, t0 + 100 * 10**6))
    assert schedule.service_end_ns(t0, wire, by) == (expected if expected <= by else None)


def time_mean_mbps(schedule: Any) -> float:
    """Time-weighted mean rate of a cyclic schedule over its cycle."""
    lengths = np.diff(np.append(schedule.start_ns, schedule.cycle_ns))
    return float((schedule.rate_bps * lengths).sum() / schedule.cycle_ns / 1e6)


def test_shipped_hsdpa_logs_are_what_their_readme_says() -> None:
    """The real HSDPA logs shipped with the suites: each file's mean, as the cooked loader
    reads it, is the one the folder's README states (so that a changed file or loader
    shows), and the dams-paper's scaled paths average the paper's 1.50 and 2.36 Mbit/s."""
    from mpsched.experiments.suite import SUITES_DIR, load_suite

    folder = SUITES_DIR / "traces" / "hsdpa"
    table = {}
    for line in (folder / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 4 and cells[0].endswith(".txt"):
            table[cells[0]] = float(cells[2])
    assert sorted(table) == sorted(p.name for p in folder.glob("*.txt")) and len(table) == 4
    for name, mean in table.items():
        schedule = build_bandwidth({"type": "trace", "format": "cooked", "file": str(folder / name)}, None, None)
        assert time_mean_mbps(schedule) == pytest.approx(mean, abs=5e-5), name
    assert "MIT License" in (folder / "LICENSE").read_text()
    group = load_suite("dams-paper").group("trace@hsdpa")
    for case in group.cases:
        rates = [time_mean_mbps(build_bandwidth({**p.bandwidth, "random_offset": False}, case.scenario.base_dir, None))
                 for p in case.scenario.paths]
        assert rates == [pytest.approx(1.50, rel=1e-3), pytest.approx(2.36, rel=1e-3)]
