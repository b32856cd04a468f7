"""The fluid model of [jonglez20] (solvers/orderings.py): Figs. 3 and 5 exactly, the offline
enumeration of priority orderings (Sec. IV-B) against an exhaustive packet-slot optimum,
online SRPT-ECF against the packet simulator, and the online example of Figs. 7-8."""

from __future__ import annotations

import itertools
import statistics
from fractions import Fraction

import pytest
from mpsched.envs import simulate
from mpsched.experiments.suite import load_suite
from mpsched.solvers.orderings import (
    MAX_ENUMERATED_STREAMS,
    FluidPaths,
    FluidSchedule,
    best_ordering,
    online_srpt_ecf,
    priority_schedule,
)
from test_baselines_srpt import block, completions, jonglez20_paths

PAPER_PATHS = FluidPaths([200, 500], [5, 10])
"""Figs. 3, 5 and 7: path 0 at 200 B/ms with a latency of 5 ms, path 1 at 500 B/ms with 10 ms."""


# --- one stream, and streams released together -----------------------------------------


def test_ecf_single_stream_fig3() -> None:
    """[jonglez20] Fig. 3: one 10,000 B stream completes at D_1 + (S - S_lim) / (R_0 + R_1)
    = 10 + 9000 / 700 = 160/7 = 22.857 ms (eqs. (2)-(3), S_lim = 200 * 5 = 1000 B); path 1
    sends until 160/7 - 10 = 90/7 = 12.857 ms ("starting from time t = 12.86 [...] only the
    path with lowest latency is used") and carries 500 * 90/7 = 45000/7 B."""
    schedule = priority_schedule(PAPER_PATHS, [10_000], [0], [0])
    assert schedule.completion == (Fraction(160, 7),)
    assert schedule.sending(0, 1) == [(0, Fraction(90, 7))]
    assert schedule.sending(0, 0) == [(0, Fraction(125, 7))]  # arrives at 125/7 + 5 = 160/7 too
    assert schedule.path_bytes == ((Fraction(25_000, 7), Fraction(45_000, 7)),)
    assert online_srpt_ecf(PAPER_PATHS, [10_000], [0]) == schedule
    assert PAPER_PATHS.ecf_completion(10_000) == Fraction(160, 7)


@pytest.mark.parametrize("size", [1, 600, 1000, 1001, 3000, 8000, 12_000, 30_000])
def test_isolated_completion_is_eqs_1_to_3_with_n_paths(size: int) -> None:
    """C*(S) on idle paths against the closed forms (Fig. 4's three paths: 5 ms at 200 B/ms,
    10 ms at 500 B/ms, 20 ms at 250 B/ms; thresholds 1000 B and 8000 B)."""
    two = 5 + Fraction(size, 200) if size <= 1000 else 10 + Fraction(size - 1000, 700)
    assert PAPER_PATHS.ecf_completion(size) == two
    three = FluidPaths([200, 500, 250], [5, 10, 20])
    closed = (5 + Fraction(size, 200) if size <= 1000 else Fraction(size + 6000, 700) if size <= 8000
              else Fraction(size + 11_000, 950))
    assert three.ecf_completion(size) == closed


def test_srpt_ecf_two_streams_fig5() -> None:
    """[jonglez20] Fig. 5: streams of 900 B and 800 B released together; SRPT-ECF's completion
    times are (9, 11) ms, "optimal". The 800 B stream goes first on path 0 alone (0 to 4 ms);
    the 900 B one uses path 1 for 1 ms (500 B) and path 0 from 4 to 6 ms (400 B). The offline
    enumeration finds the same ordering for the mean; for the maximum every ordering ties
    at C*(1700) = 11 ms and the lexicographically smallest is kept."""
    online = online_srpt_ecf(PAPER_PATHS, [900, 800], [0, 0])
    assert online.completion == (11, 9) and online.orderings == ((0, (1, 0)),)
    assert online.sending(0, 1) == [(0, 1)] and online.sending(0, 0) == [(4, 6)]
    assert online.path_bytes == ((400, 500), (800, 0))
    best = best_ordering(PAPER_PATHS, [900, 800], [0, 0])
    assert best.order == (1, 0) and best.completion == online.completion and best.value("mean") == 10
    by_max = best_ordering(PAPER_PATHS, [900, 800], [0, 0], metric="max")
    assert by_max.order == (0, 1) and by_max.value("max") == 11 and by_max.completion == (Fraction(19, 2), 11)


def test_simultaneous_releases_finish_at_the_isolated_completion_of_the_prefixes() -> None:
    """Sec. III-A b): with the streams released together, the k-th of an ordering finishes at
    C*(S_1 + ... + S_k), ECF on the effective size, for every ordering."""
    paths = FluidPaths([200, 500, 250], [5, 10, 20])
    sizes = [700, 4000, 150, 2600]
    for order in itertools.permutations(range(len(sizes))):
        schedule = priority_schedule(paths, sizes, [3] * len(sizes), order)
        for k in range(len(sizes)):
            prefix = sum(sizes[m] for m in order[:k + 1])
            assert schedule.finish[order[k]] == 3 + paths.ecf_completion(prefix)


def test_a_lower_priority_stream_uses_the_paths_before_a_higher_one_is_released() -> None:
    """Sec. IV-B: "giving resources to a lower-priority stream if a higher-priority stream has
    not yet been released". One path (200 B/ms, 5 ms); stream 1 (400 B at 2 ms) has priority:
    it takes [2, 4); stream 0 (1000 B at 0) takes [0, 2) and [4, 7) and finishes at 12 ms."""
    one = FluidPaths([200], [5])
    schedule = priority_schedule(one, [1000, 400], [0, 2], [1, 0])
    assert schedule.sending(1, 0) == [(2, 4)] and schedule.sending(0, 0) == [(0, 2), (4, 7)]
    assert schedule.finish == (12, 9) and schedule.completion == (12, 7)


# --- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(("rates", "latencies", "match"), [
    ([], [], "at least one path"),
    ([200, 500], [5], "one entry per path"),
    ([200, 0], [5, 10], r"rates\[1\] must be positive"),
    ([-1], [5], r"rates\[0\] must be positive"),
    ([200], [-0.5], r"latencies\[0\] must be non-negative"),
    ([float("inf")], [5], r"rates\[0\] must be finite"),
    ([200], [float("nan")], r"latencies\[0\] must be finite"),
])
def test_bad_paths_are_refused(rates: list[float], latencies: list[float], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        FluidPaths(rates, latencies)


@pytest.mark.parametrize(("sizes", "releases", "match"), [
    ([], [], "at least one stream"),
    ([100, 200], [0], "one entry per stream"),
    ([100, 0], [0, 0], r"sizes\[1\] must be positive"),
    ([100], [-1], r"releases\[0\] must be non-negative"),
])
def test_bad_streams_are_refused(sizes: list[int], releases: list[int], match: str) -> None:
    for compute in (lambda: priority_schedule(PAPER_PATHS, sizes, releases, list(range(len(sizes)))),
                    lambda: best_ordering(PAPER_PATHS, sizes, releases),
                    lambda: online_srpt_ecf(PAPER_PATHS, sizes, releases)):
        with pytest.raises(ValueError, match=match):
            compute()


def test_bad_types_orderings_and_metrics_are_refused() -> None:
    with pytest.raises(TypeError, match=r"rates\[0\] must be a number"):
        FluidPaths([True], [5])
    with pytest.raises(TypeError, match=r"sizes\[0\] must be a number"):
        online_srpt_ecf(PAPER_PATHS, ["100"], [0])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="sizes must be a sequence"):
        online_srpt_ecf(PAPER_PATHS, 100, [0])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="permutation"):
        priority_schedule(PAPER_PATHS, [100, 200], [0, 0], [0, 0])
    with pytest.raises(ValueError, match="metric must be one of mean, max"):
        best_ordering(PAPER_PATHS, [100], [0], metric="median")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=f"at most {MAX_ENUMERATED_STREAMS} streams"):
        best_ordering(PAPER_PATHS, [100] * (MAX_ENUMERATED_STREAMS + 1), [0] * (MAX_ENUMERATED_STREAMS + 1))


# --- the offline enumeration against an exhaustive packet-slot optimum ---------------------


def slotted_optimum(rates: tuple[int, ...], latencies: tuple[int, ...], sizes: tuple[int, ...],
                    releases: tuple[int, ...]) -> Fraction:
    """The least mean completion time of a time-slotted schedule of unit packets.

    Path ``p`` sends ``rates[p]`` packets per slot, back to back: the ``i``-th packet of slot
    ``t`` (``i = 1..rates[p]``) occupies ``[t + (i - 1) / R_p, t + i / R_p)`` and arrives
    ``latencies[p]`` later; stream ``k`` may use the slots from ``releases[k]`` on. These
    schedules are fluid schedules whose transmissions fall on the packet grid.

    Exhaustive over the finish dates: every vector of candidate finish dates (the arrival
    dates of the packet positions) is tried, and a vector is feasible iff some assignment
    of packets to positions meets it, which Hall's theorem decides over the subsets of
    streams (the positions a subset may use outnumber its packets). Slots up to the last
    release plus the number of packets suffice: past them a packet could move to a free
    earlier position of its path and arrive sooner.
    """
    horizon = max(releases) + sum(sizes)
    positions = [(t, Fraction(t * rate + i, rate) + latency) for rate, latency in zip(rates, latencies)
                 for t in range(horizon) for i in range(1, rate + 1)]
    candidates = []
    for release in releases:
        dates = sorted({arrival for t, arrival in positions if t >= release})
        candidates.append([(date, sum(1 << j for j, (t, arrival) in enumerate(positions)
                                      if t >= release and arrival <= date)) for date in dates])
    subsets = [q for r in range(1, len(sizes) + 1) for q in itertools.combinations(range(len(sizes)), r)]
    best: Fraction | None = None
    for choice in itertools.product(*candidates):
        total = sum((date for date, _ in choice), Fraction(0)) - sum(releases)
        if best is not None and total >= best:
            continue
        usable = [0] * len(subsets)
        for i, q in enumerate(subsets):
            for k in q:
                usable[i] |= choice[k][1]
        if all(usable[i].bit_count() >= sum(sizes[k] for k in q) for i, q in enumerate(subsets)):
            best = total
    assert best is not None
    return best / len(sizes)


def on_the_packet_grid(schedule: FluidSchedule, rates: tuple[int, ...]) -> bool:
    """Whether every transmission starts and ends on its path's packet grid (multiples of
    ``1 / R_p``): the schedule is then one of the slotted schedules."""
    return all((t.start * rates[t.path]).denominator == 1 and (t.end * rates[t.path]).denominator == 1
               for t in schedule.transmissions)


SLOTTED_PATHS = [((1, 1), (0, 1)), ((1, 2), (0, 1)), ((2, 1), (0, 2)), ((1, 2), (1, 3)), ((2, 2), (0, 1)),
                 ((1, 1), (0, 2))]
"""(rates in packets per slot, latencies in slots) of the two paths."""


@pytest.mark.parametrize(("releases", "expected"), [
    ((0, 0), {"equal": 21, "below": 33, "above": 0, "on_grid": 21}),
    ((0, 1), {"equal": 24, "below": 30, "above": 0, "on_grid": 23}),
    ((0, 2), {"equal": 28, "below": 26, "above": 0, "on_grid": 27}),
    ((1, 0), {"equal": 24, "below": 30, "above": 0, "on_grid": 24}),
    ((0, 0, 0), {"equal": 30, "below": 132, "above": 0, "on_grid": 30}),
    pytest.param((0, 1, 2), {"equal": 60, "below": 102, "above": 0, "on_grid": 52}, marks=pytest.mark.slow),
    pytest.param((2, 0, 1), {"equal": 60, "below": 102, "above": 0, "on_grid": 56}, marks=pytest.mark.slow),
])
def test_enumeration_against_the_exhaustive_slotted_optimum(releases: tuple[int, ...],
                                                             expected: dict[str, int]) -> None:
    """The best ordering (mean) on every case of :data:`SLOTTED_PATHS` x sizes of 1 to 3
    packets, against :func:`slotted_optimum`.

    Slotted schedules are fluid schedules, so the fluid optimum is at most the slotted one;
    the fluid model may also split a packet between two paths (one packet, two paths at one
    packet per slot and no latency: 1/2 in the fluid model, 1 slotted), so the enumeration
    may be below the slotted optimum. Where its schedule falls on the packet grid it is a
    slotted schedule, never below the optimum. With simultaneous releases the enumeration
    contains SRPT-ECF, optimal in the fluid model (Sec. III-B), so it is never above the
    slotted optimum, and equal to it whenever its schedule is on the grid. Staggered releases
    have no such guarantee; on this list the enumeration is never above either. The counts
    are those of this fixed list."""
    counts = {"equal": 0, "below": 0, "above": 0, "on_grid": 0}
    for rates, latencies in SLOTTED_PATHS:
        for sizes in itertools.product((1, 2, 3), repeat=len(releases)):
            optimum = slotted_optimum(rates, latencies, sizes, releases)
            best = best_ordering(FluidPaths(rates, latencies), sizes, releases)
            value = best.value("mean")
            counts["equal" if value == optimum else "below" if value < optimum else "above"] += 1
            if on_the_packet_grid(best, rates):
                counts["on_grid"] += 1
                assert value >= optimum, (rates, latencies, sizes)  # a slotted schedule
                if len(set(releases)) == 1:
                    assert value == optimum, (rates, latencies, sizes)
            if len(set(releases)) == 1:
                assert value <= optimum, (rates, latencies, sizes)  # Sec. III-B: SRPT-ECF is optimal
    assert counts == expected


def test_a_packet_split_between_paths_is_below_the_slotted_optimum() -> None:
    assert best_ordering(FluidPaths([1, 1], [0, 0]), [1], [0]).value("mean") == Fraction(1, 2)
    assert slotted_optimum((1, 1), (0, 0), (1,), (0,)) == 1


# --- online SRPT-ECF against the packet simulator -------------------------------------------


@pytest.mark.parametrize(("sizes", "releases_ms"), [
    ((900, 800), (0, 0)),  # Fig. 5
    ((3500, 700, 100), (0, 4, 9)),  # Figs. 7-8, the representative sizes below
    ((10_000, 2000, 500), (0, 4, 9)),
    ((3000, 2500, 400, 1200), (0, 1.5, 3, 7)),
    ((5000, 300, 3000), (0, 2, 2.5)),
])
def test_online_fluid_srpt_ecf_matches_the_packet_simulator(sizes: tuple[int, ...],
                                                            releases_ms: tuple[float, ...]) -> None:
    """The packet simulator's ``srpt-ecf`` with ideal congestion control and 10 B packets
    (tests/test_baselines_srpt.py) finishes every stream within 1 % of the fluid model and
    puts the same bytes on path 1 within 1 % of a stream's size. Its latency estimate (half
    the smoothed RTT) includes a packet's service time, hence the small differences."""
    simulated = simulate(jonglez20_paths([block(s, r) for s, r in zip(sizes, releases_ms)]), "srpt-ecf")
    fluid = online_srpt_ecf(PAPER_PATHS, sizes, [Fraction(r) for r in releases_ms])
    for m, finish_ns in enumerate(completions(simulated)):
        assert finish_ns == pytest.approx(float(fluid.finish[m]) * 1e6, rel=0.01), m
        path1 = int(simulated.blocks.loc[m, "bytes_sent_p1"])
        assert path1 == pytest.approx(float(fluid.path_bytes[m][1]), abs=0.01 * sizes[m]), m


# --- Figs. 7 and 8 ------------------------------------------------------------------------

FIG7_RELEASES = (0, 4, 9)
"""Fig. 7: stream 0 released at 0, streams 1 and 2 at t = 4 and t = 9 ms."""

FIG7_REPRESENTATIVE = (3500, 700, 100)
"""Sizes in bytes of streams 0, 1 and 2: the component-wise median of the sizes on the grid
for which the Fig. 7 caption holds (:func:`test_fig8_offline_gain_over_the_sizes_consistent_with_fig7`);
its neighbours 100 B away in the sizes of streams 0 and 1 satisfy the caption too."""


def _sends(schedule: FluidSchedule, stream: int, path: int, date: Fraction, after: bool) -> bool:
    """Whether ``stream`` sends on ``path`` right after ``date`` (or right before it)."""
    return any((start <= date < end) if after else (start < date <= end)
               for start, end in schedule.sending(stream, path))


def fig7_caption(schedule: FluidSchedule) -> dict[str, bool]:
    """The statements of the Fig. 7 caption on an online schedule of streams 0, 1 and 2
    released at 0, 4 and 9 ms on the Fig. 3 paths. Each entry, with what it reads:

    - ``alone_uses_ecf``: "Stream 0 is initially alone and uses ECF as in Fig. 3": it sends
      on both paths from 0 (its size is above S_lim = 1000 B);
    - ``preempted_at_4``: "When Stream 1 arrives (t = 4), Stream 0 gets preempted
      immediately": stream 1 comes first in the ordering chosen at 4, and stream 0 sends on
      path 0 right before 4 and not right after;
    - ``path1_again``: "as a result, it starts using Path 1 again": stream 0 sent on path 1
      before 4, and a new transmission of it on path 1 (after a pause) starts between 4 and
      9 (that its data then arrives on both paths together, "accounting for Stream 1", is
      ECF's allocation, so it holds by construction);
    - ``preempted_in_succession``: "a big stream is pre-empted by two small streams in
      succession" (Sec. IV-A): stream 1 has no byte left to send at 9;
    - ``preempted_at_9``: "When Stream 2 arrives (t = 9), Stream 0 is preempted again": stream
      2 comes before stream 0 in the ordering chosen at 9, and stream 0 sends on some path
      right before 9 and on none right after;
    - ``too_late_for_path1``: "but this time it is too late to use Path 1": stream 0 sends
      nothing on path 1 from 9 on;
    - ``waits_for_stream2``: "so it just waits for Stream 2 to finish": stream 0 sends nothing
      from 9 until stream 2's last byte has left.
    """
    t4, t9 = Fraction(FIG7_RELEASES[1]), Fraction(FIG7_RELEASES[2])
    at = dict(schedule.orderings)
    path1 = schedule.sending(0, 1)
    stream2_sent = max(end for p in (0, 1) for _, end in schedule.sending(2, p))
    return {
        "alone_uses_ecf": _sends(schedule, 0, 0, Fraction(0), True) and _sends(schedule, 0, 1, Fraction(0), True),
        "preempted_at_4": (0 in at[t4] and at[t4].index(1) < at[t4].index(0)
                           and _sends(schedule, 0, 0, t4, False) and not _sends(schedule, 0, 0, t4, True)),
        "path1_again": bool(path1) and path1[0][0] < t4 and any(t4 <= start < t9 for start, _ in path1),
        "preempted_in_succession": all(end <= t9 for p in (0, 1) for _, end in schedule.sending(1, p)),
        "preempted_at_9": (0 in at[t9] and at[t9].index(2) < at[t9].index(0)
                           and any(_sends(schedule, 0, p, t9, False) for p in (0, 1))
                           and not any(_sends(schedule, 0, p, t9, True) for p in (0, 1))),
        "too_late_for_path1": all(end <= t9 for _, end in path1),
        "waits_for_stream2": all(end <= t9 or start >= stream2_sent
                                 for p in (0, 1) for start, end in schedule.sending(0, p)),
    }


def stream0_gain(sizes: tuple[int, ...]) -> Fraction:
    """Fig. 8: how much better the offline enumeration (mean completion) does for stream 0
    than online SRPT-ECF, ``1 - C_0(offline) / C_0(online)``."""
    online = online_srpt_ecf(PAPER_PATHS, sizes, FIG7_RELEASES)
    offline = best_ordering(PAPER_PATHS, sizes, FIG7_RELEASES)
    return 1 - offline.completion[0] / online.completion[0]


def test_fig7_caption_on_the_representative_sizes() -> None:
    """[jonglez20] Fig. 7 on streams of 3500, 700 and 100 B (:data:`FIG7_REPRESENTATIVE`).

    Stream 0 alone sends on both paths until its remaining size reaches S_lim = 1000 B at
    2500 / 700 = 25/7 ms, then on path 0. At 4 ms it has 6400/7 B left and an isolated
    completion time (eq. (5)) of max(C*(6400/7), 25/7 + 10 - 4) = 67/7 ms, more than stream
    1's C*(700) = 8.5 ms: stream 1 takes path 0 from 4 to 7.5 ms, and as the two together
    (11300/7 B) exceed S_lim, stream 0 sends on path 1 again from 4 to 239/49 ms. At 9 ms
    stream 1 is sent and stream 0 has 8600/49 B left, isolated 288/49 = 5.88 ms, behind
    stream 2's C*(100) = 5.5 ms; with 13500/49 B left in all, below S_lim, path 1 stays
    idle: stream 2 goes on path 0 from 9 to 9.5 ms and stream 0 after it, arriving at
    1507/98 = 15.378 ms."""
    online = online_srpt_ecf(PAPER_PATHS, FIG7_REPRESENTATIVE, FIG7_RELEASES)
    assert all(fig7_caption(online).values()), fig7_caption(online)
    assert online.orderings == ((0, (0,)), (4, (1, 0)), (9, (2, 0)))
    assert online.sending(0, 1) == [(0, Fraction(25, 7)), (4, Fraction(239, 49))]
    assert online.sending(0, 0) == [(0, 4), (Fraction(15, 2), 9), (Fraction(19, 2), Fraction(1017, 98))]
    assert online.finish == (Fraction(1507, 98), Fraction(25, 2), Fraction(29, 2))


def test_fig7_caption_cannot_hold_for_a_10kb_stream_0() -> None:
    """With Fig. 3's 10,000 B stream as stream 0, no sizes of streams 1 and 2 (100 to 5000 B)
    satisfy the caption: at 9 ms stream 0 still has at least 10,000 - 9 * 700 = 3700 B to
    send, more than S_lim = 1000 B, so ECF keeps path 1 busy with it whatever streams 1 and 2
    are: "too late to use Path 1" never holds."""
    for s1 in range(100, 5001, 100):
        for s2 in range(100, 5001, 100):
            caption = fig7_caption(online_srpt_ecf(PAPER_PATHS, (10_000, s1, s2), FIG7_RELEASES))
            assert not caption["too_late_for_path1"], (s1, s2)


def test_fig8_offline_uses_path1_longer_on_the_representative_sizes() -> None:
    """[jonglez20] Fig. 8: "Stream 0 can anticipate the arrivals of Streams 1 and 2, so it uses
    Path 1 for a longer time to ensure both paths finish at the same time." The best ordering
    for the mean is (1, 2, 0) (tied with (2, 1, 0)): streams 1 and 2 reserve path 0 over
    [4, 7.5) and [9, 9.5), and stream 0 sends on path 1 from 0 to 33/7 = 4.71 ms, 33/7 ms in
    all against 218/49 = 4.45 ms online, finishing at 103/7 = 14.714 ms instead of 15.378 ms:
    65/1507 = 4.3 % better, not the paper's 18 %. Streams 1 and 2 complete as online, so the
    mean is better too."""
    online = online_srpt_ecf(PAPER_PATHS, FIG7_REPRESENTATIVE, FIG7_RELEASES)
    offline = best_ordering(PAPER_PATHS, FIG7_REPRESENTATIVE, FIG7_RELEASES)
    assert offline.order == (1, 2, 0)
    assert offline.sending(0, 1) == [(0, Fraction(33, 7))]
    assert offline.sending_time(0, 1) == Fraction(33, 7) > online.sending_time(0, 1) == Fraction(218, 49)
    assert offline.path_bytes[0][1] > online.path_bytes[0][1]
    assert offline.finish[0] == Fraction(103, 7) and offline.completion[1:] == online.completion[1:]
    assert stream0_gain(FIG7_REPRESENTATIVE) == Fraction(65, 1507)
    assert offline.value("mean") < online.value("mean")


FIG7_STREAM0_GRID = range(100, 10_001, 100)
FIG7_GRID = range(100, 5001, 100)
"""Sizes in bytes tried for stream 0, and for streams 1 and 2."""


@pytest.mark.slow
def test_fig8_offline_gain_over_the_sizes_consistent_with_fig7() -> None:
    """[jonglez20] Fig. 8's "For Stream 0, the offline algorithm does 18 % better than
    SRPT-ECF", over every size of stream 0 (100 to 10,000 B) and of streams 1 and 2 (100 to
    5000 B), in 100 B steps, for which online SRPT-ECF satisfies the whole Fig. 7 caption
    (:func:`fig7_caption`): 39 triples, stream 0 of 2800 to 3700 B, stream 1 of 400 to 900 B,
    stream 2 of 100 or 200 B. On each the offline enumeration (mean) does better for stream 0
    and its mean, and stream 0 sends on path 1 for longer; the gain for stream 0 ranges from
    2.9 % to 10.1 % (median 5.1 %): 18 % is out of the range. These are the numbers the
    suite's Fig. 8 claim states."""
    consistent = [(s0, s1, s2) for s0 in FIG7_STREAM0_GRID for s1 in FIG7_GRID for s2 in FIG7_GRID
                  if all(fig7_caption(online_srpt_ecf(PAPER_PATHS, (s0, s1, s2), FIG7_RELEASES)).values())]
    assert len(consistent) == 39
    assert [min(c[i] for c in consistent) for i in range(3)] == [2800, 400, 100]
    assert [max(c[i] for c in consistent) for i in range(3)] == [3700, 900, 200]
    assert tuple(int(statistics.median_low(c[i] for c in consistent)) for i in range(3)) == FIG7_REPRESENTATIVE
    s0, s1, s2 = FIG7_REPRESENTATIVE
    assert {(s0 - 100, s1, s2), (s0 + 100, s1, s2), (s0, s1 - 100, s2), (s0, s1 + 100, s2)} <= set(consistent)
    gains = []
    for sizes in consistent:
        online = online_srpt_ecf(PAPER_PATHS, sizes, FIG7_RELEASES)
        offline = best_ordering(PAPER_PATHS, sizes, FIG7_RELEASES)
        assert offline.sending_time(0, 1) > online.sending_time(0, 1), sizes
        assert offline.value("mean") < online.value("mean"), sizes
        gains.append(stream0_gain(sizes))
    low, median, high = min(gains), statistics.median(gains), max(gains)
    assert 0 < low and high < Fraction(18, 100)
    assert (round(float(low), 4), round(float(median), 4), round(float(high), 4)) == (0.0292, 0.0507, 0.1007)
    claim = next(c for c in load_suite("srpt-ecf-paper").claims
                 if c.get("test", "").endswith("::test_fig8_offline_gain_over_the_sizes_consistent_with_fig7"))
    measured = claim["measured"]
    assert (measured["low"], measured["value"], measured["high"]) == (0.0292, 0.0507, 0.1007)
