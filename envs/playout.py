"""The video playout client: picture discards and buffer underflows of one episode.

The measures follow [matsufuji18] §VI "Performance measures" (picture discards, buffer
underflow, recovery time from underflow), on this model:

- Frames are numbered ``0..N-1`` (the ``frame`` column); blocks with frame ``-1`` are
  ignored.
- Frame ``k`` is *ready* at the completion time of its most important blocks: all blocks
  whose priority equals the frame's maximum priority (the whole frame for AVC, the base
  layer for SVC). A completion time of ``-1`` means never.
- Frame ``k`` *plays* at ``play_k = first_arrival_ns + startup_s + k / frame_rate``: a fixed
  schedule, with no stalls and no catch-up.
- A frame not ready by its play time (``ready_k > play_k``, or never) is a *picture
  discard*.
- The playout buffer holds the frames that are ready and not yet played:
  ``B(t) = #{k : ready_k <= t < play_k}``.
- Over the playback interval ``[play_0, play_{N-1})``, a *buffer underflow* is a maximal
  sub-interval ``[a, b)`` of positive length on which ``B(t) == 0`` and at whose end or
  inside a frame was due and missing: ``a < play_k <= b`` for a discarded frame ``k``.
  The player found its buffer empty when it needed a frame, so the picture froze (seed
  002: the video freezes, then catches up). Its length, from the moment the buffer
  emptied until a frame arrives again (or playback ends), is the *recovery time*. Empty
  periods during which no frame is due (the buffer drained, and the next frame arrived in
  time) are not underflows.

Times are exact integer nanoseconds; each play time is rounded to the nearest ns once.

The catch-up client
-------------------
Seed 002 counts an underflow as a "catch up" event, "where the video freezes and then
resumes at a faster rate until all late frames have been played out" (VLC in its
testbed). :func:`catchup_playout_stats` models that client with two named parameters,
``speed`` (how much faster it plays while late) and ``max_late_s`` (how long it waits for
a missing picture before the decoder skips it). Frames are taken in order, frame ``k`` at
its *slot* ``slot_k = max(play_k, shown_{k-1} + step)`` with ``step = 1 / (speed *
frame_rate)`` rounded down to whole ns: on schedule the slot is the play time; after a
freeze the frames follow each other ``speed`` times faster until the schedule is reached
again. Then:

- ``ready_k <= slot_k``: frame ``k`` is shown at ``slot_k``;
- otherwise the picture freezes at ``slot_k`` (a buffer underflow begins, unless one is
  already under way) and the client waits for frame ``k`` until ``play_k + max_late_s``:
  shown at ``ready_k`` if it is ready by then, else discarded at ``play_k + max_late_s``
  and the wait goes on with frame ``k + 1`` from that time.

Every frame shown is shown between its play time and ``max_late_s`` after it (the slot
never passes that bound, since ``step`` is at most one frame interval).
An underflow ends when a frame is shown again (or with the last frame); its length is
the recovery time. A *picture discard* is a frame never shown. With ``speed = 1`` the
client never catches up: after a freeze it plays the rest of the video that much later.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["PlayoutStats", "catchup_playout_stats", "play_times_ns", "playout_stats"]

_NS = 1e9


@dataclass(frozen=True)
class PlayoutStats:
    """Playout measures of one episode (see the module docstring).

    Attributes
    ----------
    picture_discards : int
        Frames not ready at their play time.
    buffer_underflows : int
        Freezes: periods of an empty playout buffer during which a frame was due.
    underflow_recovery_s : float
        Mean length of those empty periods (0.0 when there are none).
    total_underflow_s : float
        Their total length.
    startup_s : float
        The start-up delay used.
    frames : int
        Number of frames ``N``.
    """

    picture_discards: int
    buffer_underflows: int
    underflow_recovery_s: float
    total_underflow_s: float
    startup_s: float
    frames: int


def play_times_ns(
    first_arrival_ns: int, startup_s: float, frame_rate: float, frame: np.ndarray
) -> np.ndarray:
    """Play times ``first_arrival_ns + round((startup_s + k / frame_rate) * 1e9)`` in ns.

    Parameters
    ----------
    first_arrival_ns : int
        Arrival of frame 0, in ns.
    startup_s : float
        Start-up delay in seconds.
    frame_rate : float
        Frames per second.
    frame : numpy.ndarray
        Frame indices ``k``.

    Returns
    -------
    numpy.ndarray
        ``int64`` play times, one per entry of ``frame``.
    """
    offset = startup_s * _NS + np.asarray(frame, dtype=np.float64) * (_NS / frame_rate)
    return int(first_arrival_ns) + np.rint(offset).astype(np.int64)


def playout_stats(
    frame: np.ndarray,
    priority: np.ndarray,
    completion_ns: np.ndarray,
    first_arrival_ns: int,
    frame_rate: float,
    startup_s: float,
) -> PlayoutStats:
    """Picture discards and buffer underflows of a fixed-schedule playout client.

    Parameters
    ----------
    frame : numpy.ndarray
        Integer frame index of each block, ``-1`` for blocks that are not video.
    priority : numpy.ndarray
        Integer priority of each block; larger is more important.
    completion_ns : numpy.ndarray
        Integer completion time of each block in ns, ``-1`` when it never completed.
    first_arrival_ns : int
        Arrival of frame 0 in ns.
    frame_rate : float
        Frames per second, finite and > 0.
    startup_s : float
        Start-up delay in seconds, finite and >= 0.

    Returns
    -------
    PlayoutStats
        The measures of the module docstring; zeros (with ``startup_s`` as given) when no
        block belongs to a frame.

    Raises
    ------
    ValueError
        If the arrays are not 1-D integer arrays of one length, a frame index is below -1,
        the frame indices leave a gap, a completion time is below -1, or a scalar is out of
        range.
    """
    frames = _frames(frame, priority, completion_ns, first_arrival_ns, frame_rate, startup_s)
    if frames.count == 0:
        return PlayoutStats(0, 0, 0.0, 0.0, frames.startup_s, 0)
    ready, never, play = frames.ready, frames.never, frames.play
    on_time = ~never & (ready <= play)
    starts, ends = _empty_periods(ready[on_time], play[on_time], int(play[0]), int(play[-1]))
    due = np.sort(play[~on_time])
    # an empty period [a, b) is an underflow when a discarded frame is due in (a, b]
    freezes = np.searchsorted(due, ends, side="right") > np.searchsorted(due, starts, side="right")
    gaps = (ends - starts)[freezes]
    return _stats(frames, int(frames.count - on_time.sum()), gaps.tolist())


def catchup_playout_stats(
    frame: np.ndarray,
    priority: np.ndarray,
    completion_ns: np.ndarray,
    first_arrival_ns: int,
    frame_rate: float,
    startup_s: float,
    speed: float,
    max_late_s: float,
) -> PlayoutStats:
    """Picture discards and buffer underflows of the catch-up client (module docstring).

    Parameters
    ----------
    frame, priority, completion_ns, first_arrival_ns, frame_rate, startup_s
        As in :func:`playout_stats`.
    speed : float
        How many times faster than ``frame_rate`` the client plays while behind its
        schedule; finite and >= 1.
    max_late_s : float
        How long after its play time the client waits for a missing picture before it
        skips it, in seconds; finite and > 0.

    Returns
    -------
    PlayoutStats
        ``picture_discards``: frames never shown; ``buffer_underflows``: freezes;
        ``underflow_recovery_s``: their mean length.

    Raises
    ------
    ValueError
        As :func:`playout_stats`, and for ``speed`` or ``max_late_s`` out of range.
    """
    frames = _frames(frame, priority, completion_ns, first_arrival_ns, frame_rate, startup_s)
    faster = _finite(speed, "speed")
    if faster < 1:
        raise ValueError(f"speed must be >= 1; got {speed!r}")
    late = _finite(max_late_s, "max_late_s")
    if not late > 0:
        raise ValueError(f"max_late_s must be > 0; got {max_late_s!r}")
    if frames.count == 0:
        return PlayoutStats(0, 0, 0.0, 0.0, frames.startup_s, 0)
    step_ns = math.floor(_NS / (frames.frame_rate * faster))
    late_ns = round(late * _NS)
    never = frames.never.tolist()
    ready = frames.ready.tolist()
    play = frames.play.tolist()
    discards = 0
    freezes: list[int] = []
    frozen_at: int | None = None
    earliest = play[0]  # the earliest slot of the next frame
    for k in range(frames.count):
        slot = max(play[k], earliest)
        last_chance = play[k] + late_ns
        if not never[k] and ready[k] <= slot:
            shown = slot
        else:
            if frozen_at is None:
                frozen_at = slot
            if never[k] or ready[k] > last_chance:
                discards += 1
                earliest = last_chance
                continue
            shown = ready[k]
        if frozen_at is not None:
            freezes.append(shown - frozen_at)
            frozen_at = None
        earliest = shown + step_ns
    if frozen_at is not None:
        freezes.append(earliest - frozen_at)  # the last frame was skipped when its wait ended
    return _stats(frames, discards, freezes)


@dataclass(frozen=True)
class _Frames:
    """Validated inputs of a playout client: per frame, ready time and play time."""

    count: int
    ready: np.ndarray
    never: np.ndarray
    play: np.ndarray
    frame_rate: float
    startup_s: float


def _frames(
    frame: np.ndarray,
    priority: np.ndarray,
    completion_ns: np.ndarray,
    first_arrival_ns: int,
    frame_rate: float,
    startup_s: float,
) -> _Frames:
    """Check a client's inputs and compute each frame's ready and play times."""
    frames_of = _integers(frame, "frame")
    priorities = _integers(priority, "priority")
    completion = _integers(completion_ns, "completion_ns")
    if not frames_of.size == priorities.size == completion.size:
        raise ValueError(
            f"frame, priority and completion_ns differ in length: "
            f"{frames_of.size}, {priorities.size}, {completion.size}"
        )
    if frames_of.size and frames_of.min() < -1:
        raise ValueError(f"frame holds {int(frames_of.min())}; expected >= -1")
    if completion.size and completion.min() < -1:
        raise ValueError(f"completion_ns holds {int(completion.min())}; expected >= -1")
    if isinstance(first_arrival_ns, (bool, np.bool_)) or not isinstance(
        first_arrival_ns, (int, np.integer)
    ):
        raise ValueError(f"first_arrival_ns must be an integer; got {first_arrival_ns!r}")
    rate = _finite(frame_rate, "frame_rate")
    if rate <= 0:
        raise ValueError(f"frame_rate must be > 0; got {frame_rate!r}")
    startup = _finite(startup_s, "startup_s")
    if startup < 0:
        raise ValueError(f"startup_s must be >= 0; got {startup_s!r}")

    video = frames_of >= 0
    k = frames_of[video]
    empty = np.empty(0, dtype=np.int64)
    if k.size == 0:
        return _Frames(0, empty, empty.astype(bool), empty, rate, startup)
    n = int(k.max()) + 1
    present = np.bincount(k, minlength=n) > 0
    if not present.all():
        missing = int(np.flatnonzero(~present)[0])
        raise ValueError(
            f"frames must be numbered 0..{n - 1} without gaps; frame {missing} has no block"
        )

    p = priorities[video]
    done = completion[video]
    top = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(top, k, p)
    essential = p == top[k]
    never = np.zeros(n, dtype=bool)
    never[k[essential & (done < 0)]] = True
    ready = np.full(n, -1, dtype=np.int64)
    np.maximum.at(ready, k[essential], done[essential])
    play = play_times_ns(int(first_arrival_ns), startup, rate, np.arange(n))
    return _Frames(n, ready, never, play, rate, startup)


def _stats(frames: _Frames, discards: int, freezes: list[int]) -> PlayoutStats:
    """The measures from the discards and the freezes' lengths in ns."""
    total = int(sum(freezes))
    return PlayoutStats(
        picture_discards=discards,
        buffer_underflows=len(freezes),
        underflow_recovery_s=total / len(freezes) / _NS if freezes else 0.0,
        total_underflow_s=total / _NS,
        startup_s=frames.startup_s,
        frames=frames.count,
    )


def _empty_periods(start: np.ndarray, end: np.ndarray, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """Starts and ends of the maximal gaps of positive length in ``[lo, hi)`` not covered
    by the union of the half-open intervals ``[start_i, end_i)``."""
    s = np.maximum(start, lo)
    e = np.minimum(end, hi)
    keep = s < e
    s, e = s[keep], e[keep]
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    covered_to = np.maximum.accumulate(np.concatenate(([lo], e)))
    inner = s > covered_to[:-1]
    gap_starts, gap_ends = covered_to[:-1][inner], s[inner]
    if hi > covered_to[-1]:
        gap_starts = np.append(gap_starts, covered_to[-1])
        gap_ends = np.append(gap_ends, hi)
    return gap_starts.astype(np.int64), gap_ends.astype(np.int64)


def _integers(values: np.ndarray, name: str) -> np.ndarray:
    """A 1-D ``int64`` copy of an integer array; ``ValueError`` otherwise."""
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array; got shape {array.shape}")
    if array.size and array.dtype.kind not in "iu":
        raise ValueError(f"{name} must hold integers; got dtype {array.dtype}")
    return array.astype(np.int64)


def _finite(value: float, name: str) -> float:
    """A finite real number (not a bool) as a float; ``ValueError`` otherwise."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise ValueError(f"{name} must be a number; got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{name} must be finite; got {value!r}")
    return number
