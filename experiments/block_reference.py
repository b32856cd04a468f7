"""A block-level multipath simulator in pure Python (the standard library only): the
reference ``mpsched bench`` measures a whole ``simulate()`` process against.

Researchers who only need block completion times often write a simulator like this one
instead of a packet-level one: blocks, not packets, are what it schedules; paths are
pipes with a rate and a one-way delay, without congestion control, acknowledgements or
loss. It is the competitor that tells whether the packet-level core, with everything
around it in Python, still costs a user less time than writing the coarse model in
Python. It runs as a script in a fresh interpreter (so its process cost is that of a
small pure-Python program) or, imported, through :func:`run`.

Model
-----
- Blocks (one line each in the blocks file: ``arrival_ns size_bytes deadline_ns priority
  weight``) wait in the sender's buffer from their arrival.
- A path is a pipe: it sends packets of at most ``mss`` bytes back to back at its rate,
  read from a ``cooked`` trace (time in s, rate in Mbit/s per line; the rate holds until
  the next line, the last for the median interval; the trace repeats), and each packet
  arrives one one-way delay after it is sent. A block is complete when its last byte
  arrives; on time when that is no later than its deadline.
- The scheduler is DAMS ([dams] Sec. III) at block level. Whenever a block arrives the
  buffer is replanned: blocks in deadline order (higher priority first at equal
  deadlines); the capacity before block ``i``'s deadline is ``C_i = sum_j max(0, D_i -
  now - owd_j) * BW_j`` (eq. 1, the current time for ``A_i``); walking the order, a
  block is preserved while the preserved bytes fit its capacity, otherwise the preserved
  block with the smallest credit per byte still to send is delayed until they fit
  (selective preservation). Each preserved block is split over the paths so that its
  parts finish sending together (Fig. 4). A path that has sent its share of the plan
  sends delayed blocks in deadline order. A block whose deadline has passed is
  cancelled.

Run as ``python block_reference.py BLOCKS --path TRACE:ONE_WAY_DELAY_MS [--path ...]``;
prints one JSON line with the scores and the simulation's wall time.
"""

from __future__ import annotations

import argparse
import bisect
import heapq
import json
import math
import time
from dataclasses import dataclass, field

__all__ = ["Pipe", "read_blocks", "read_cooked_trace", "run"]

MSS_BYTES = 1448


@dataclass
class Pipe:
    """A path: rates [bit/s] from ``starts_ns[k]`` until the next start, repeating every
    ``cycle_ns``, and a one-way delay."""

    starts_ns: list[int]
    rates_bps: list[float]
    cycle_ns: int
    one_way_delay_ns: int
    busy_until_ns: int = 0
    plan: list[list[int]] = field(default_factory=list)  # [block, bytes] still to send here

    def rate_at(self, t_ns: int) -> float:
        k = bisect.bisect_right(self.starts_ns, t_ns % self.cycle_ns) - 1
        return self.rates_bps[k]

    def send_end(self, start_ns: int, n_bytes: int) -> int:
        """When ``n_bytes`` started at ``start_ns`` have left the sender."""
        bits = 8.0 * n_bytes
        t = start_ns
        while True:
            phase = t % self.cycle_ns
            k = bisect.bisect_right(self.starts_ns, phase) - 1
            end = self.starts_ns[k + 1] if k + 1 < len(self.starts_ns) else self.cycle_ns
            rate = self.rates_bps[k]
            room = rate * (end - phase) / 1e9
            if rate > 0.0 and room >= bits:
                return t + math.ceil(bits * 1e9 / rate)
            bits -= room
            t += end - phase


def read_cooked_trace(path: str, one_way_delay_ns: int) -> Pipe:
    """A :class:`Pipe` from a ``cooked`` trace file (time [s] and rate [Mbit/s] per line)."""
    times: list[float] = []
    rates: list[float] = []
    with open(path) as f:
        for line_no, line in enumerate(f, 1):
            text = line.strip()
            if not text or text[0] in "#%":
                continue
            cells = text.split()
            try:
                t, r = float(cells[0]), float(cells[1])
            except (IndexError, ValueError):
                raise ValueError(f"{path}:{line_no}: expected 'time_s rate_mbps', got {text!r}") from None
            if times and t <= times[-1]:
                raise ValueError(f"{path}:{line_no}: times must increase")
            times.append(t)
            rates.append(r * 1e6)
    if len(times) < 2:
        raise ValueError(f"{path}: at least two samples are needed")
    if max(rates) <= 0.0:
        raise ValueError(f"{path}: every rate is zero; nothing could ever be sent")
    gaps = sorted(b - a for a, b in zip(times, times[1:]))
    cycle_s = times[-1] - times[0] + gaps[len(gaps) // 2]
    starts = [round((t - times[0]) * 1e9) for t in times]
    return Pipe(starts, rates, round(cycle_s * 1e9), one_way_delay_ns)


def read_blocks(path: str) -> list[tuple[int, int, int, int, float]]:
    """Blocks ``(arrival_ns, size_bytes, deadline_ns, priority, weight)``, one per line."""
    blocks = []
    with open(path) as f:
        for line_no, line in enumerate(f, 1):
            cells = line.split()
            if not cells or cells[0].startswith("#"):
                continue
            try:
                blocks.append((int(cells[0]), int(cells[1]), int(cells[2]), int(cells[3]), float(cells[4])))
            except (IndexError, ValueError):
                raise ValueError(f"{path}:{line_no}: expected 'arrival_ns size_bytes deadline_ns priority weight'") \
                    from None
    return blocks


def _equal_finish_shares(rem: int, free_ns: list[float], bytes_per_ns: list[float]) -> list[int]:
    """Bytes per path so that every path used finishes sending at the same time, paths
    joining from the earliest free; advances ``free_ns`` (Fig. 4 of [dams])."""
    order = sorted((j for j, q in enumerate(bytes_per_ns) if q > 0.0), key=lambda j: free_ns[j])
    shares = [0] * len(free_ns)
    if not order:
        return shares
    rate_sum = base_sum = level = 0.0
    used = 0
    for used, j in enumerate(order, 1):
        rate_sum += bytes_per_ns[j]
        base_sum += free_ns[j] * bytes_per_ns[j]
        level = (rem + base_sum) / rate_sum
        if used == len(order) or level <= free_ns[order[used]]:
            break
    given = 0
    for j in order[:used]:
        shares[j] = min(rem - given, int((level - free_ns[j]) * bytes_per_ns[j]))
        given += shares[j]
        free_ns[j] = level
    shares[order[0]] += rem - given
    return shares


def run(blocks: list[tuple[int, int, int, int, float]], pipes: list[Pipe], mss: int = MSS_BYTES) -> dict[str, float]:
    """Simulate the blocks over the pipes under DAMS (the pipes start idle); the scores
    and ``simulate_s``, the wall time of the simulation."""
    for p in pipes:
        p.busy_until_ns, p.plan = 0, []
    n = len(blocks)
    sent = [0] * n
    last_arrival = [0] * n
    cancelled = [False] * n
    on_time = [False] * n
    waiting: list[int] = []
    delayed: list[int] = []
    idle = set(range(len(pipes)))
    # (time, -1, block) for an arrival, (time, path, 0) for a path done sending
    events: list[tuple[int, int, int]] = [(b[0], -1, i) for i, b in enumerate(blocks)]
    heapq.heapify(events)

    def live(b: int, now: int) -> bool:
        if cancelled[b] or sent[b] >= blocks[b][1]:
            return False
        if blocks[b][2] <= now:
            cancelled[b] = True
            return False
        return True

    def replan(now: int) -> None:
        waiting[:] = [b for b in waiting if live(b, now)]
        order = sorted(waiting, key=lambda b: (blocks[b][2], -blocks[b][3], b))
        rates = [p.rate_at(now) / 8e9 for p in pipes]
        preserved: list[int] = []
        delayed.clear()
        committed = 0
        for b in order:
            deadline = blocks[b][2]
            capacity = sum(max(0.0, deadline - now - p.one_way_delay_ns) * q for p, q in zip(pipes, rates))
            preserved.append(b)
            committed += blocks[b][1] - sent[b]
            while committed > capacity:
                worst = min(preserved, key=lambda x: blocks[x][4] / (blocks[x][1] - sent[x]))
                preserved.remove(worst)
                delayed.append(worst)
                committed -= blocks[worst][1] - sent[worst]
        delayed.sort(key=lambda b: (blocks[b][2], -blocks[b][3], b))
        free = [float(max(0, p.busy_until_ns - now)) for p in pipes]
        for p in pipes:
            p.plan = []
        for b in preserved:
            for p, share in zip(pipes, _equal_finish_shares(blocks[b][1] - sent[b], free, rates)):
                if share > 0:
                    p.plan.append([b, share])

    def next_packet(p: Pipe, now: int) -> tuple[int, int] | None:
        while p.plan:
            b, share = p.plan[0]
            if live(b, now):
                size = min(mss, share, blocks[b][1] - sent[b])
                if share - size > 0:
                    p.plan[0][1] = share - size
                else:
                    p.plan.pop(0)
                return b, size
            p.plan.pop(0)
        for b in delayed:
            if live(b, now):
                return b, min(mss, blocks[b][1] - sent[b])
        return None

    def send(j: int, now: int) -> None:
        p = pipes[j]
        packet = next_packet(p, now)
        if packet is None:
            idle.add(j)
            return
        b, size = packet
        end = p.send_end(now, size)
        p.busy_until_ns = end
        sent[b] += size
        last_arrival[b] = max(last_arrival[b], end + p.one_way_delay_ns)
        if sent[b] == blocks[b][1]:
            on_time[b] = last_arrival[b] <= blocks[b][2]
        heapq.heappush(events, (end, j, 0))

    start = time.perf_counter()
    while events:
        now, j, b = heapq.heappop(events)
        if j < 0:
            waiting.append(b)
            replan(now)
            for k in sorted(idle):
                idle.discard(k)
                send(k, max(now, pipes[k].busy_until_ns))
        else:
            send(j, now)
    wall_s = time.perf_counter() - start
    total_weight = sum(b[4] for b in blocks)
    return {
        "blocks": n,
        "on_time_rate": sum(on_time) / n if n else math.nan,
        "weighted_on_time_rate": sum(b[4] for b, ok in zip(blocks, on_time) if ok) / total_weight
        if total_weight > 0 else math.nan,
        "cancelled": sum(cancelled),
        "simulate_s": wall_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("blocks", help="blocks file: arrival_ns size_bytes deadline_ns priority weight per line")
    parser.add_argument("--path", action="append", required=True, metavar="TRACE:ONE_WAY_DELAY_MS",
                        help="a path: a cooked trace file and its one-way delay in ms (repeat per path)")
    parser.add_argument("--mss", type=int, default=MSS_BYTES)
    args = parser.parse_args()
    pipes = []
    for spec in args.path:
        trace, _, delay_ms = spec.rpartition(":")
        if not trace:
            parser.error(f"--path {spec!r}: expected TRACE:ONE_WAY_DELAY_MS")
        pipes.append(read_cooked_trace(trace, round(float(delay_ms) * 1e6)))
    print(json.dumps(run(read_blocks(args.blocks), pipes, args.mss)))


if __name__ == "__main__":
    main()
