"""The fuzz harness: generated inputs run in crash-isolated workers with a time bound.

Inputs come from the Hypothesis strategies of :mod:`inputs`, one kind per target of
:mod:`targets`. Each input runs in a worker process (:mod:`worker`); a worker that dies
is a crash (counted, the input kept, a new worker started) and one that has not answered
within the time bound is killed and counted as a timeout. Workers run with a lowered work
budget (``MPSCHED_MAX_EVENTS``), so every accepted episode is short, and with a bounded
address space. An input passes when it runs or is refused with one of the project's
errors (:class:`mpsched.envs.errors.MpschedError`, message under 2,000 characters);
anything else is a failure, grouped by target, exception type and place.

    python tests/fuzz/harness.py [--inputs N] [--long] [--targets a,b] [--workers W]
                                 [--bound-s S] [--seed S] [--corpus DIR] [--corpus-size N] [--json FILE]

``--long`` runs 100,000 inputs spread over the targets. ``--corpus DIR`` writes accepted
scenario inputs that use no file as JSON files, one per kind of exercise (the corpus the
memory checks run under AddressSanitizer: ``tests/fuzz/corpus``).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import pickle
import queue
import selectors
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from inputs import FILES, STRATEGIES
from worker import read_frame, write_frame

HERE = Path(__file__).resolve().parent
FUZZ_MAX_EVENTS = 2**22
"""Work budget of the workers: about 0.35 s of the core per episode."""
DEFAULT_BOUND_S = 20.0
"""Time bound of one input: far above what the work budget allows an episode."""
LONG_INPUTS = 100_000
BATCH = 500


def generate(target: str, count: int, seed: int) -> list[Any]:
    """``count`` inputs for ``target``, the same for the same seed."""
    drawn: list[Any] = []

    @hypothesis_seed(seed)
    @settings(max_examples=count, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(STRATEGIES[target])
    def collect(x: Any) -> None:
        drawn.append(x)

    collect()
    return drawn


class Worker:
    """One worker process and the pipes to it."""

    def __init__(self, env: dict[str, str]) -> None:
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        self.proc = subprocess.Popen([sys.executable, str(HERE / "worker.py"), str(to_r), str(from_w)],
                                     pass_fds=(to_r, from_w), env=env, cwd=HERE, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_r)
        os.close(from_w)
        self.send_fd, self.recv_fd = to_w, from_r
        self.job: tuple[str, Any] | None = None
        self.started = 0.0
        if read_frame(self.recv_fd) != pickle.dumps(("ready",)):
            raise RuntimeError(f"fuzz worker did not start (exit {self.proc.wait()})")

    def send(self, job: tuple[str, Any]) -> None:
        self.job = job
        self.started = time.monotonic()
        write_frame(self.send_fd, job)

    def close(self, kill: bool = False) -> int:
        if kill:
            self.proc.kill()
        os.close(self.send_fd)
        code = self.proc.wait()
        os.close(self.recv_fd)
        return code


@dataclass
class Tally:
    """Outcomes of a campaign."""

    counts: collections.Counter[tuple[str, str]] = field(default_factory=collections.Counter)
    failures: dict[tuple[str, ...], list[Any]] = field(default_factory=dict)
    accepted_scenarios: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    verbose: bool = False

    def add(self, target: str, data: Any, result: tuple[Any, ...]) -> None:
        kind = result[0]
        self.counts[(target, kind)] += 1
        if kind in ("failed", "crash", "timeout"):
            key = (target, kind) + tuple(str(x) for x in result[1:2]) + tuple(str(x) for x in result[3:4])
            if key not in self.failures and self.verbose:
                print(f"new failure {key}: {result}\n    input: {data!r:.2000}", file=sys.stderr, flush=True)
            self.failures.setdefault(key, [result, data, 0])[2] += 1
        elif kind == "ran" and target == "scenario" and FILES not in data[0]:
            self.accepted_scenarios.append(data[0])

    @property
    def inputs(self) -> int:
        return sum(self.counts.values())

    def bad(self) -> int:
        return sum(n for (_, kind), n in self.counts.items() if kind in ("failed", "crash", "timeout"))

    def summary(self) -> dict[str, Any]:
        per_target: dict[str, dict[str, int]] = collections.defaultdict(dict)
        for (target, kind), n in sorted(self.counts.items()):
            per_target[target][kind] = n
        return {
            "inputs": self.inputs,
            "seconds": round(self.seconds, 1),
            "crashes": sum(n for (_, k), n in self.counts.items() if k == "crash"),
            "timeouts": sum(n for (_, k), n in self.counts.items() if k == "timeout"),
            "builtin_errors": sum(n for (_, k), n in self.counts.items() if k == "failed"),
            "per_target": dict(per_target),
            "distinct_failures": [
                {"key": list(key), "count": n, "result": [str(x) for x in result], "input": repr(data)[:2000]}
                for key, (result, data, n) in sorted(self.failures.items(), key=lambda kv: -kv[1][2])
            ],
        }


class Pool:
    """Worker processes that run jobs within a time bound, replaced when they die or hang."""

    def __init__(self, workers: int = 2, bound_s: float = DEFAULT_BOUND_S, max_events: int = FUZZ_MAX_EVENTS) -> None:
        self.bound_s = bound_s
        self.env = {**os.environ, "MPSCHED_MAX_EVENTS": str(max_events), "OMP_NUM_THREADS": "1",
                    "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
        self.sel = selectors.DefaultSelector()
        self.workers: list[Worker] = []
        for _ in range(max(1, workers)):
            self._start()

    def _start(self) -> Worker:
        w = Worker(self.env)
        self.sel.register(w.recv_fd, selectors.EVENT_READ, w)
        self.workers.append(w)
        return w

    def _replace(self, w: Worker, kill: bool) -> tuple[int, Worker]:
        self.sel.unregister(w.recv_fd)
        self.workers.remove(w)
        return w.close(kill), self._start()

    def close(self) -> None:
        for w in self.workers:
            self.sel.unregister(w.recv_fd)
            w.close()
        self.workers = []

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def run(self, jobs: list[tuple[str, Any]], tally: Tally) -> None:
        """Run ``jobs``, each within the time bound, and count how each ended."""
        queue = collections.deque(jobs)
        for w in self.workers:
            if queue:
                w.send(queue.popleft())
        while any(w.job is not None for w in self.workers):
            busy = [w for w in self.workers if w.job is not None]
            wait = max(0.0, min(w.started + self.bound_s for w in busy) - time.monotonic())
            for key, _ in self.sel.select(timeout=wait):
                w = key.data
                if w.job is None:
                    continue
                frame = read_frame(w.recv_fd)
                job = w.job
                if frame is None:
                    code, w = self._replace(w, kill=False)
                    tally.add(job[0], job[1], ("crash", f"exit {code}", "", "worker died"))
                else:
                    tally.add(job[0], job[1], pickle.loads(frame))
                    w.job = None
                if queue:
                    w.send(queue.popleft())
            now = time.monotonic()
            for w in list(self.workers):
                if w.job is not None and now - w.started > self.bound_s:
                    job = w.job
                    _, w = self._replace(w, kill=True)
                    tally.add(job[0], job[1], ("timeout", f"over {self.bound_s} s", "", "killed"))
                    if queue:
                        w.send(queue.popleft())


def campaign(targets: list[str], inputs: int, seed: int = 0, workers: int = 2, bound_s: float = DEFAULT_BOUND_S,
             progress: bool = False) -> Tally:
    """``inputs`` generated inputs spread evenly over ``targets``, run in batches."""
    tally = Tally(verbose=progress)
    begin = time.perf_counter()
    share = {t: inputs // len(targets) + (i < inputs % len(targets)) for i, t in enumerate(targets)}
    batches: queue.Queue[tuple[str, list[Any]] | None] = queue.Queue(maxsize=2)

    def produce() -> None:  # generation overlaps the workers' runs
        for t in targets:
            done = batch_no = 0
            while done < share[t]:
                batch = generate(t, min(BATCH, share[t] - done), seed * 1_000_003 + batch_no * 7919 + sum(map(ord, t)))
                if not batch:
                    break
                batches.put((t, batch))
                done += len(batch)
                batch_no += 1
        batches.put(None)

    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    with Pool(workers, bound_s) as pool:
        while (item := batches.get()) is not None:
            t, batch = item
            pool.run([(t, x) for x in batch], tally)
            if progress:
                print(f"{t}: total {tally.inputs}  bad {tally.bad()}  {time.perf_counter() - begin:.0f} s",
                      file=sys.stderr, flush=True)
    producer.join()
    tally.seconds = time.perf_counter() - begin
    return tally


def signature(scenario: dict[str, Any]) -> tuple[Any, ...]:
    """What makes a scenario a different exercise of the core: congestion controls, loss
    models, bandwidth types, workload, receiver, shared links and cross traffic."""
    def kind(value: Any) -> str:
        return str(value.get("type", value.get("model", "?"))) if isinstance(value, dict) else type(value).__name__

    paths = [p for p in scenario.get("paths", []) if isinstance(p, dict)]
    return (
        tuple(sorted({str(p.get("cc", "default")) for p in paths})),
        tuple(sorted({kind(p.get("loss", 0.0)) for p in paths})),
        tuple(sorted({kind(p.get("bandwidth")) for p in paths if "bandwidth" in p})),
        kind(scenario.get("workload")),
        kind(scenario.get("receiver", {})),
        "links" in scenario,
        "cross_traffic" in scenario,
        "transport" in scenario,
    )


def corpus_selection(scenarios: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """The first scenario of each :func:`signature`, at most ``limit``."""
    chosen: dict[tuple[Any, ...], dict[str, Any]] = {}
    for sc in scenarios:
        chosen.setdefault(signature(sc), sc)
    return list(chosen.values())[:limit]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inputs", type=int, default=2_000)
    ap.add_argument("--long", action="store_true", help=f"{LONG_INPUTS} inputs")
    ap.add_argument("--targets", default=",".join(STRATEGIES))
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--bound-s", type=float, default=DEFAULT_BOUND_S)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--corpus", type=Path, help="write accepted file-less scenarios here as JSON")
    ap.add_argument("--corpus-size", type=int, default=60, help="most scenarios in the corpus (one per kind)")
    ap.add_argument("--json", type=Path, help="write the summary here")
    args = ap.parse_args()
    targets = [t for t in args.targets.split(",") if t]
    unknown = [t for t in targets if t not in STRATEGIES]
    if unknown:
        ap.error(f"unknown targets {unknown}; known: {', '.join(STRATEGIES)}")
    tally = campaign(targets, LONG_INPUTS if args.long else args.inputs, args.seed, args.workers, args.bound_s,
                     progress=True)
    summary = tally.summary()
    text = json.dumps(summary, indent=2, default=str)
    if args.json:
        args.json.write_text(text)
    print(text if len(text) < 20_000 else text[:20_000] + "\n...")
    if args.corpus:
        args.corpus.mkdir(parents=True, exist_ok=True)
        for i, sc in enumerate(corpus_selection(tally.accepted_scenarios, args.corpus_size)):
            (args.corpus / f"scenario-{i:03d}.json").write_text(json.dumps(sc, indent=1, allow_nan=False) + "\n")
    sys.exit(1 if tally.bad() else 0)


if __name__ == "__main__":
    main()
