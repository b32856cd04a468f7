"""Tests of mpsched.envs.playout: picture discards and buffer underflows."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mpsched.envs.playout import PlayoutStats, catchup_playout_stats, play_times_ns, playout_stats
from mpsched.envs.workloads import generate_workload, normalize_workload

MS = 1_000_000


def stats(
    completion_ms: list[float],
    *,
    frame: list[int] | None = None,
    priority: list[int] | None = None,
    fps: float = 10.0,
    startup_s: float = 0.1,
    first_ms: float = 0.0,
) -> PlayoutStats:
    """Playout of blocks given by completion times in ms (-1: never), one block per frame
    unless ``frame`` says otherwise."""
    frames = list(range(len(completion_ms))) if frame is None else frame
    return playout_stats(
        np.array(frames),
        np.zeros(len(frames), dtype=np.int64) if priority is None else np.array(priority),
        np.array([-1 if c == -1 else round(c * MS) for c in completion_ms], dtype=np.int64),
        round(first_ms * MS),
        fps,
        startup_s,
    )


# ---------------------------------------------------------------------------------------
# Hand-computed cases
# ---------------------------------------------------------------------------------------


def test_one_late_frame() -> None:
    # 5 frames at 10 fps, startup 100 ms, first arrival 0: frame k arrives at 100k ms and
    # plays at 100 + 100k ms = 100, 200, 300, 400, 500; playback interval [100, 500).
    # Frames 0, 1, 3, 4 are ready at their arrival; frame 2 (play 300) only at 350 -> 1 discard.
    # In the buffer (ready <= t < play): f0 [0, 100), f1 [100, 200), f3 [300, 400),
    # f4 [400, 500); f2 never (it is late).
    # Within [100, 500) the buffer is empty on [200, 300): 1 underflow of 100 ms.
    s = stats([0, 100, 350, 300, 400])
    assert s == PlayoutStats(
        picture_discards=1,
        buffer_underflows=1,
        underflow_recovery_s=0.1,
        total_underflow_s=0.1,
        startup_s=0.1,
        frames=5,
    )


def test_only_empty_periods_with_a_frame_due_are_underflows() -> None:
    # 6 frames at 10 fps, startup 200 ms: play at 200, 300, ..., 700; playback [200, 700).
    # Ready: f0 0, f1 100, f2 350 (play 400, on time), f3 360 (play 500, on time),
    # f4 650 (play 600: late -> discard), f5 680 (play 700, on time).
    # Buffer intervals: f0 [0, 200), f1 [100, 300), f2 [350, 400), f3 [360, 500),
    # f5 [680, 700). Within [200, 700) covered: [200, 300), [350, 500), [680, 700).
    # Empty: [300, 350): no frame is due in (300, 350] (f2 arrives before its play at 400):
    # not an underflow. [500, 680): f4 is due at 600 in (500, 680] and missing: an
    # underflow of 180 ms.
    s = stats([0, 100, 350, 360, 650, 680], startup_s=0.2)
    assert s.picture_discards == 1
    assert s.buffer_underflows == 1
    assert s.total_underflow_s == pytest.approx(0.180, abs=1e-12)
    assert s.underflow_recovery_s == pytest.approx(0.180, abs=1e-12)
    assert s.frames == 6


def test_buffer_underflows_twice() -> None:
    # 5 frames at 10 fps, startup 100 ms: play at 100, 200, 300, 400, 500; playback [100, 500).
    # Ready: f0 0, f1 250 (late), f2 220, f3 480 (late), f4 490.
    # Buffer intervals: f0 [0, 100), f2 [220, 300), f4 [490, 500).
    # Empty within [100, 500): [100, 220) with f1 due at 200: underflow of 120 ms;
    # [300, 490) with f3 due at 400: underflow of 190 ms. Total 310 ms, mean 155 ms.
    s = stats([0, 250, 220, 480, 490])
    assert (s.picture_discards, s.buffer_underflows) == (2, 2)
    assert s.total_underflow_s == pytest.approx(0.310, abs=1e-12)
    assert s.underflow_recovery_s == pytest.approx(0.155, abs=1e-12)


def test_svc_late_enhancement_is_no_discard() -> None:
    # 3 frames at 10 fps, startup 100 ms, a base (priority 1) and an enhancement
    # (priority 0) block per frame; play at 100, 200, 300; playback [100, 300).
    # Bases are ready at arrival (0, 100, 200); the enhancement of frame 1 completes only at
    # 900 ms and that of frame 2 never: readiness follows the base layer alone.
    # Buffer intervals f0 [0, 100), f1 [100, 200), f2 [200, 300) cover [100, 300).
    frame = [0, 0, 1, 1, 2, 2]
    priority = [1, 0, 1, 0, 1, 0]
    s = stats([0, 0, 100, 900, 200, -1], frame=frame, priority=priority)
    assert (s.picture_discards, s.buffer_underflows, s.total_underflow_s) == (0, 0, 0.0)
    assert s.underflow_recovery_s == 0.0
    assert s.frames == 3
    # A late base layer does discard its frame: base of frame 1 ready at 250 > 200; frame 1
    # leaves the buffer empty on [100, 200) (frame 2 arrives at 200) -> 1 underflow, 100 ms.
    late = stats([0, 0, 250, 100, 200, 200], frame=frame, priority=priority)
    assert (late.picture_discards, late.buffer_underflows) == (1, 1)
    assert late.total_underflow_s == pytest.approx(0.1, abs=1e-12)


def test_all_blocks_of_the_top_priority_count() -> None:
    # Two blocks of equal top priority in frame 0: the frame is ready when the later one
    # completes. 2 frames at 10 fps, startup 100 ms: play at 100, 200; playback [100, 200).
    # f0 ready at max(50, 150) = 150 > 100: discard. f1 ready at 100: buffer [100, 200),
    # no underflow.
    s = stats([50, 150, 100], frame=[0, 0, 1], priority=[3, 3, 1])
    assert (s.picture_discards, s.buffer_underflows) == (1, 0)


def test_ready_at_play_time_is_on_time_and_no_frame_due_means_no_underflow() -> None:
    # 3 frames at 10 fps, startup 100 ms: play at 100, 200, 300; playback [100, 300).
    # f0 ready at 100 = its play time: on time (an empty buffer interval).
    # f1 ready at 150: buffer [150, 200). f2 ready at 200: buffer [200, 300).
    # Empty: [100, 150), but no frame is due in (100, 150]: no underflow.
    s = stats([100, 150, 200])
    assert s.picture_discards == 0
    assert s.buffer_underflows == 0
    assert s.total_underflow_s == 0.0


def test_gaps_between_just_in_time_frames_are_not_underflows() -> None:
    # Every frame ready at its arrival but startup (50 ms) below the frame interval (100 ms):
    # play at 50, 150, 250, 350; buffer f_k [100k, 100k + 50); playback [50, 350).
    # Empty: [50, 100), [150, 200), [250, 300), each followed by a frame that arrives in
    # time: no frame is due and missing, so no underflow and no discard.
    s = stats([0, 100, 200, 300], startup_s=0.05)
    assert (s.picture_discards, s.buffer_underflows, s.total_underflow_s) == (0, 0, 0.0)


def test_first_arrival_and_fractional_frame_rate() -> None:
    # 3 frames at 30 fps from 1 s, startup 0: play at 1e9 + rint(k * 1e9 / 30) ns =
    # 1_000_000_000, 1_033_333_333, 1_066_666_667. Ready exactly then: no discard, and the
    # buffer is empty on all of [play_0, play_2) but never when a frame is due.
    play = play_times_ns(10**9, 0.0, 30.0, np.arange(3))
    assert play.tolist() == [1_000_000_000, 1_033_333_333, 1_066_666_667]
    s = playout_stats(np.arange(3), np.zeros(3, dtype=np.int64), play, 10**9, 30.0, 0.0)
    assert (s.picture_discards, s.buffer_underflows) == (0, 0)
    # one nanosecond late is a discard of every frame, and [play_0, play_2) is one
    # underflow (f1 and f2 are due inside it) of 66_666_667 ns
    late = playout_stats(np.arange(3), np.zeros(3, dtype=np.int64), play + 1, 10**9, 30.0, 0.0)
    assert (late.picture_discards, late.buffer_underflows) == (3, 1)
    assert late.total_underflow_s == 66_666_667 / 1e9


# ---------------------------------------------------------------------------------------
# Frame selection and edge cases
# ---------------------------------------------------------------------------------------


def test_blocks_without_frame_are_ignored() -> None:
    # The same as test_one_late_frame plus blocks of frame -1 that never complete and carry
    # the highest priority: they change nothing.
    base = stats([0, 100, 350, 300, 400])
    mixed = stats(
        [-1, 0, 100, -1, 350, 300, 400, -1],
        frame=[-1, 0, 1, -1, 2, 3, 4, -1],
        priority=[9, 0, 0, 9, 0, 0, 0, 9],
    )
    assert mixed == base


def test_never_completed_frames_are_discards() -> None:
    # 4 frames at 10 fps, startup 100 ms: play at 100, 200, 300, 400; playback [100, 400).
    # f1 and f3 never complete: 2 discards. f0 [0, 100), f2 [200, 300) -> empty
    # [100, 200) and [300, 400): 2 underflows, 200 ms in all.
    s = stats([0, -1, 200, -1])
    assert s.picture_discards == 2
    assert s.buffer_underflows == 2
    assert s.total_underflow_s == pytest.approx(0.2, abs=1e-12)
    # a frame with one never-completed top-priority block is never ready
    t = stats([0, -1, 100], frame=[0, 0, 1], priority=[1, 1, 1])
    assert t.picture_discards == 1


def test_no_frames_gives_zeros() -> None:
    empty = np.array([], dtype=np.int64)
    zeros = PlayoutStats(0, 0, 0.0, 0.0, 0.5, 0)
    assert playout_stats(empty, empty, empty, 0, 30.0, 0.5) == zeros
    only_other = playout_stats(
        np.array([-1, -1]), np.array([0, 0]), np.array([5, -1]), 0, 30.0, 0.5
    )
    assert only_other == PlayoutStats(0, 0, 0.0, 0.0, 0.5, 0)


def test_single_frame_has_no_playback_interval() -> None:
    assert stats([500]) == PlayoutStats(1, 0, 0.0, 0.0, 0.1, 1)
    assert stats([0]) == PlayoutStats(0, 0, 0.0, 0.0, 0.1, 1)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"frame": np.array([0, 2])}, "without gaps; frame 1"),
        ({"frame": np.array([0, -2])}, "frame holds -2"),
        ({"frame": np.array([0.0, 1.0])}, "frame must hold integers"),
        ({"completion_ns": np.array([0, -5])}, "completion_ns holds -5"),
        ({"priority": np.array([0])}, "differ in length"),
        ({"priority": np.zeros((2, 1), dtype=np.int64)}, "1-D"),
        ({"first_arrival_ns": 0.5}, "first_arrival_ns"),
        ({"frame_rate": 0.0}, "frame_rate must be > 0"),
        ({"frame_rate": float("nan")}, "frame_rate must be finite"),
        ({"frame_rate": True}, "frame_rate must be a number"),
        ({"startup_s": -0.1}, "startup_s must be >= 0"),
        ({"startup_s": float("inf")}, "startup_s must be finite"),
    ],
)
def test_bad_input(kwargs: dict[str, Any], message: str) -> None:
    args: dict[str, Any] = {
        "frame": np.array([0, 1]),
        "priority": np.array([0, 0]),
        "completion_ns": np.array([0, 0]),
        "first_arrival_ns": 0,
        "frame_rate": 10.0,
        "startup_s": 0.1,
    }
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        playout_stats(**args)


@pytest.mark.parametrize(
    "config",
    [
        {"type": "avc", "fps": 29.97, "start_s": 0.3, "playout_startup_ms": 123.4567},
        {"type": "svc", "fps": 24, "playout_startup_ms": 41.7},
    ],
)
def test_workload_deadlines_are_play_times(config: dict[str, Any]) -> None:
    # A frame's most important blocks meet their workload deadline exactly when playout
    # does not discard the frame: completions 1 ns before, at and 1 ns after the deadline.
    config = normalize_workload(config, "workload")
    t = generate_workload(config, 2.0, np.random.default_rng(0), None)
    shift = np.random.default_rng(1).integers(-1, 2, len(t))
    completion = t.deadline_ns + shift
    top = pd.Series(t.priority).groupby(t.frame).transform("max").to_numpy()
    essential = t.priority == top
    missed = np.unique(t.frame[essential & (completion > t.deadline_ns)])
    s = playout_stats(
        t.frame,
        t.priority,
        completion,
        int(t.arrival_ns[0]),
        t.frame_rate,
        config["playout_startup_ms"] / 1e3,
    )
    assert 0 < missed.size < s.frames
    assert s.picture_discards == missed.size


# ---------------------------------------------------------------------------------------
# The catch-up client (seed 002: the video freezes, then resumes faster)
# ---------------------------------------------------------------------------------------


def catchup(completion_ms: list[float], *, speed: float = 2.0, max_late_s: float = 1.0,
            fps: float = 10.0, startup_s: float = 0.1) -> PlayoutStats:
    """The catch-up client on one block per frame, completions in ms (-1: never)."""
    n = len(completion_ms)
    return catchup_playout_stats(
        np.arange(n), np.zeros(n, dtype=np.int64),
        np.array([-1 if c == -1 else round(c * MS) for c in completion_ms], dtype=np.int64),
        0, fps, startup_s, speed, max_late_s,
    )


def test_catchup_freezes_then_plays_faster_until_back_on_schedule() -> None:
    # 6 frames at 10 fps, startup 100 ms: play at 100, 200, ..., 600; speed 2: 50 ms a
    # frame while late. Ready: f0 0, f1 100, f2 450 (150 ms late), f3 300, f4 400, f5 500.
    # f0 at 100, f1 at 200; f2's slot is 300 and it is not ready: the picture freezes
    # until 450, where f2 is shown; then f3 at 500 (100 ms late), f4 at 550 (50 ms late),
    # f5 at max(600, 600) = 600, on schedule again. No discard, one underflow of 150 ms.
    # The fixed client discards f2 and counts the empty buffer [200, 300) + ... as above.
    s = catchup([0, 100, 450, 300, 400, 500])
    assert s == PlayoutStats(picture_discards=0, buffer_underflows=1, underflow_recovery_s=0.15,
                             total_underflow_s=0.15, startup_s=0.1, frames=6)
    assert stats([0, 100, 450, 300, 400, 500]).picture_discards == 1


def test_catchup_lag_carries_over_to_the_next_late_frame() -> None:
    # Speed 1.25 (80 ms a frame while late). f2 ready at 450 (play 300) -> shown at 450;
    # f3 slot max(400, 530) = 530; f4 max(500, 610) = 610 but ready only at 640: a second
    # freeze [610, 640); f5 max(600, 720) = 720; f6 max(700, 800) = 800; f7 max(800, 880)
    # = 880; f8 max(900, 960) = 960; f9 max(1000, 1040) = 1040.
    s = catchup([0, 100, 450, 300, 640, 500, 600, 700, 800, 900], speed=1.25)
    assert (s.picture_discards, s.buffer_underflows) == (0, 2)
    assert s.total_underflow_s == pytest.approx(0.150 + 0.030, abs=1e-12)
    # At speed 1 the client never catches up: f3 at 550, f4 at 650, f5 750 ... all later
    # frames ready in time, one freeze.
    s1 = catchup([0, 100, 450, 300, 640, 500, 600, 700, 800, 900], speed=1.0)
    assert (s1.picture_discards, s1.buffer_underflows, s1.total_underflow_s) == (0, 1, pytest.approx(0.15))


def test_catchup_skips_a_frame_it_waited_for_too_long() -> None:
    # max_late 120 ms. f2 (play 300) is ready only at 450 > 420: the client waits until
    # 420, discards f2 and shows f3 (ready at 300) at once: one freeze [300, 420).
    # f4 at max(500, 470) = 500: on schedule. A frame that never completes is skipped the
    # same way: f2 never -> the same figures.
    s = catchup([0, 100, 450, 300, 400, 500], max_late_s=0.12)
    assert (s.picture_discards, s.buffer_underflows) == (1, 1)
    assert s.total_underflow_s == pytest.approx(0.12, abs=1e-12)
    assert catchup([0, 100, -1, 300, 400, 500], max_late_s=0.12) == s


def test_catchup_freeze_at_the_end_lasts_until_the_last_frame_is_skipped() -> None:
    # f2 never, f3 never (the last frame): freeze from f2's slot 300; f2 skipped at
    # 300 + 100 = 400, f3's slot is 400, skipped at 400 + 100 = 500: one freeze of 200 ms.
    s = catchup([0, 100, -1, -1], max_late_s=0.1)
    assert (s.picture_discards, s.buffer_underflows) == (2, 1)
    assert s.total_underflow_s == pytest.approx(0.2, abs=1e-12)


@pytest.mark.parametrize(("field", "value"), [("speed", 0.99), ("speed", float("nan")), ("max_late_s", 0.0),
                                              ("max_late_s", float("inf")), ("speed", True)])
def test_catchup_parameters_out_of_range(field: str, value: float) -> None:
    args = {"speed": 1.5, "max_late_s": 1.0, field: value}
    with pytest.raises(ValueError, match=field):
        catchup_playout_stats(np.arange(2), np.zeros(2, dtype=np.int64), np.zeros(2, dtype=np.int64),
                              0, 10.0, 0.1, **args)


def test_an_episode_is_scored_by_the_player_its_workload_names() -> None:
    # A 5.24 Mbit/s video over 4.5 Mbit/s: frames fall behind. The player changes the
    # playout scores and nothing else (same blocks); its discards are those of the
    # catch-up client on the episode's blocks.
    from mpsched.envs import simulate

    video = {"type": "avc", "fps": 30, "bitrate_mbps": 5.24, "playout_startup_ms": 1000}
    base = {"duration_s": 20, "paths": [{"bandwidth": 3, "rtt_ms": 100}, {"bandwidth": 1.5, "rtt_ms": 50}]}
    fixed = simulate({**base, "workload": video}, "minrtt", seed=3)
    player = {"type": "catchup", "speed": 1.5, "max_late_ms": 500}
    caught = simulate({**base, "workload": {**video, "player": player}}, "minrtt", seed=3)
    assert caught.blocks.equals(fixed.blocks)
    b = caught.blocks
    first = int(b.loc[b["frame"] == 0, "arrival_ns"].min())
    completion = b["completion_ns"].fillna(-1).to_numpy(dtype=np.int64)
    expected = catchup_playout_stats(b["frame"].to_numpy(np.int64), b["priority"].to_numpy(np.int64), completion,
                                     first, 30.0, 1.0, 1.5, 0.5)
    assert caught.summary["picture_discards"] == expected.picture_discards
    assert caught.summary["buffer_underflows"] == expected.buffer_underflows
    assert 0 < caught.summary["picture_discards"] < fixed.summary["picture_discards"]


# ---------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------


@st.composite
def episodes(draw: st.DrawFn) -> dict[str, Any]:
    """Random video blocks: 1-4 layers per frame, completions from never to 2 s late."""
    n = draw(st.integers(1, 40))
    layers = draw(st.integers(1, 4))
    fps = draw(st.sampled_from([10.0, 24.0, 25.0, 29.97, 30.0, 60.0]))
    first = draw(st.integers(0, 10**9))
    startup_s = draw(st.floats(0.0, 1.0, allow_nan=False))
    frame = np.repeat(np.arange(n), layers)
    arrival = first + np.rint(frame * (1e9 / fps)).astype(np.int64)
    size = frame.size
    delay = np.array(draw(st.lists(st.integers(-1, 2 * 10**9), min_size=size, max_size=size)))
    completion = np.where(delay < 0, -1, arrival + delay)
    priority = np.array(draw(st.lists(st.integers(0, 3), min_size=size, max_size=size)))
    return {
        "frame": frame,
        "priority": priority,
        "completion_ns": completion,
        "first_arrival_ns": first,
        "frame_rate": fps,
        "startup_s": startup_s,
    }


def episode_play_times(episode: dict[str, Any], frames: int) -> np.ndarray:
    return play_times_ns(episode["first_arrival_ns"], episode["startup_s"], episode["frame_rate"], np.arange(frames))


@settings(max_examples=200, deadline=None)
@given(episodes())
def test_bounds(episode: dict[str, Any]) -> None:
    s = playout_stats(**episode)
    play = episode_play_times(episode, s.frames)
    assert s.frames == int(episode["frame"].max()) + 1
    assert 0 <= s.picture_discards <= s.frames
    assert 0.0 <= s.total_underflow_s <= (play[-1] - play[0]) / 1e9
    assert s.buffer_underflows <= s.frames
    if s.buffer_underflows:
        assert s.underflow_recovery_s == pytest.approx(s.total_underflow_s / s.buffer_underflows)
    else:
        assert s.underflow_recovery_s == s.total_underflow_s == 0.0


@settings(max_examples=200, deadline=None)
@given(episodes(), st.integers(1, 10**9))
def test_frames_ready_at_arrival_play_without_discard_or_underflow(
    episode: dict[str, Any], extra_ns: int
) -> None:
    # Every block completes at its arrival. With a start-up delay of at least one frame
    # interval (plus 1 ns of rounding slack), frame k is buffered on [arrival_k, play_k),
    # which reaches arrival_{k+1}: the buffer never empties.
    fps = episode["frame_rate"]
    startup_s = (1e9 / fps + extra_ns) / 1e9
    arrival = episode["first_arrival_ns"] + np.rint(episode["frame"] * (1e9 / fps)).astype(np.int64)
    s = playout_stats(**{**episode, "completion_ns": arrival, "startup_s": startup_s})
    assert s.picture_discards == 0
    assert s.buffer_underflows == 0
    assert s.total_underflow_s == 0.0


@settings(max_examples=200, deadline=None)
@given(episodes(), st.integers(1, 10**9))
def test_frames_ready_at_arrival_are_never_discarded(
    episode: dict[str, Any], extra_ns: int
) -> None:
    # Any start-up delay > 0: every frame is ready before its play time.
    fps = episode["frame_rate"]
    arrival = episode["first_arrival_ns"] + np.rint(episode["frame"] * (1e9 / fps)).astype(np.int64)
    s = playout_stats(**{**episode, "completion_ns": arrival, "startup_s": extra_ns / 1e9})
    assert s.picture_discards == 0


def reference_underflows(ready: list[int | None], play: list[int], due: list[int]) -> list[int]:
    """Lengths of the empty-buffer periods [a, b) in [play_0, play_{N-1}) with a missing
    frame due in (a, b], by direct evaluation of B(t) = #{k : ready_k <= t < play_k}
    between consecutive event times (None: never)."""
    lo, hi = play[0], play[-1]
    times = sorted({lo, hi} | {t for t in [*ready, *play] if t is not None and lo < t < hi})
    periods: list[tuple[int, int]] = []
    start = None
    for a, _ in pairwise(times):
        empty = sum(r is not None and r <= a < p for r, p in zip(ready, play)) == 0
        if empty and start is None:
            start = a
        if not empty and start is not None:
            periods.append((start, a))
            start = None
    if start is not None:
        periods.append((start, hi))
    return [b - a for a, b in periods if any(a < d <= b for d in due)]


@settings(max_examples=300, deadline=None)
@given(episodes())
def test_matches_direct_evaluation(episode: dict[str, Any]) -> None:
    s = playout_stats(**episode)
    play = episode_play_times(episode, s.frames).tolist()
    ready: list[int | None] = []
    for k in range(s.frames):
        mine = episode["frame"] == k
        top = episode["priority"][mine].max()
        done = episode["completion_ns"][mine & (episode["priority"] == top)]
        ready.append(None if (done < 0).any() else int(done.max()))
    discards = sum(r is None or r > p for r, p in zip(ready, play))
    due = [p for r, p in zip(ready, play) if r is None or r > p]
    gaps = reference_underflows(
        [r if r is not None and r <= p else None for r, p in zip(ready, play)], play, due
    )
    assert s.picture_discards == discards
    assert s.buffer_underflows == len(gaps)
    assert s.total_underflow_s == sum(gaps) / 1e9


@settings(max_examples=300, deadline=None)
@given(episodes(), st.floats(1.0, 4.0), st.floats(0.001, 3.0))
def test_catchup_discards_exactly_the_frames_later_than_its_patience(
    episode: dict[str, Any], speed: float, max_late_s: float
) -> None:
    # The slot of a frame is never past play + max_late (module docstring), so a frame is
    # skipped exactly when it is ready later than that, or never: a subset of the fixed
    # client's discards.
    s = catchup_playout_stats(**episode, speed=speed, max_late_s=max_late_s)
    fixed = playout_stats(**episode)
    play = episode_play_times(episode, s.frames)
    late_ns = round(max_late_s * 1e9)
    skipped = 0
    for k in range(s.frames):
        mine = episode["frame"] == k
        top = episode["priority"][mine].max()
        done = episode["completion_ns"][mine & (episode["priority"] == top)]
        skipped += bool((done < 0).any() or done.max() > play[k] + late_ns)
    assert s.picture_discards == skipped <= fixed.picture_discards
    assert s.frames == fixed.frames
    assert s.buffer_underflows <= s.frames
    if s.buffer_underflows:
        assert s.underflow_recovery_s == pytest.approx(s.total_underflow_s / s.buffer_underflows)
    else:
        assert s.total_underflow_s == 0.0
