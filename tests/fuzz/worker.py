"""A fuzz worker: runs inputs one at a time and says how each ended.

Reads frames (a 4-byte big-endian length, then a pickled ``(target, input)``) from the
descriptor given as its first argument and writes one frame per input back to the
second: ``("ran",)``, ``("refused", type, message)`` for an error of the project's classes,
or ``("failed", type, message, where)`` for anything else. A crash of the interpreter
ends the process; the harness sees the pipe close and counts it. Standard output and
error are sent to ``/dev/null`` so that nothing an input prints can break the framing.
"""

from __future__ import annotations

import os
import pickle
import resource
import shutil
import struct
import sys
import tempfile
import traceback
import warnings
from pathlib import Path
from typing import Any

MEMORY_LIMIT_BYTES = 6 * 2**30
"""Address space of a worker: an input that tries to allocate beyond it fails with MemoryError."""

MAX_MESSAGE_CHARS = 2000
"""Longest error message counted as a clear refusal."""

INTERNAL_WORDS = ("bw_start_ns", "bw_rate_bps", "bw_cycle_ns", "ring_capacity", "loss_threshold", "ge_p_threshold",
                  "fwd_delay_ns", "rev_delay_ns", "initial_cwnd_bytes", "min_rto_ns", "max_rto_ns", "end_ns",
                  "Traceback", " object at 0x")
"""Words of the core's inputs or of Python internals: a refusal must name what the user wrote."""


def read_frame(fd: int) -> bytes | None:
    head = _read_exactly(fd, 4)
    if head is None:
        return None
    body = _read_exactly(fd, struct.unpack(">I", head)[0])
    return body


def _read_exactly(fd: int, n: int) -> bytes | None:
    chunks = []
    while n:
        chunk = os.read(fd, n)
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def write_frame(fd: int, payload: Any) -> None:
    body = pickle.dumps(payload)
    os.write(fd, struct.pack(">I", len(body)) + body)


def where(exc: BaseException) -> str:
    """The innermost frame of the traceback inside mpsched (else the innermost), as file:line."""
    import mpsched

    root = str(Path(mpsched.__file__).resolve().parent)
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if f.filename.startswith(root) and "/tests/" not in f.filename]
    f = (ours or frames or [None])[-1]
    return f"{Path(f.filename).name}:{f.lineno}" if f is not None else "?"


def outcome(run: Any, target: str, data: Any, folder: Path) -> tuple[Any, ...]:
    from mpsched.envs.errors import MpschedError
    from targets import Refused

    try:
        run(data, folder)
    except (MpschedError, Refused) as exc:
        message = str(exc)
        if not message or len(message) > MAX_MESSAGE_CHARS:
            return ("failed", type(exc).__name__, f"message of {len(message)} characters: {message[:300]}",
                    where(exc))
        internal = [w for w in INTERNAL_WORDS if w in message and w not in repr(data)]  # not quoting the input
        if internal:
            return ("failed", type(exc).__name__, f"message names {internal}: {message[:300]}", where(exc))
        return ("refused", type(exc).__name__, message[:300])
    except Exception as exc:  # anything else is what the harness looks for
        return ("failed", type(exc).__name__, str(exc)[:300], where(exc))
    return ("ran",)


def main() -> None:
    proto_in, proto_out = int(sys.argv[1]), int(sys.argv[2])
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
    warnings.simplefilter("ignore")
    from targets import TARGETS

    home = Path(tempfile.mkdtemp(prefix="mpsched-fuzz-"))
    os.chdir(home)
    write_frame(proto_out, ("ready",))
    try:
        while (frame := read_frame(proto_in)) is not None:
            target, data = pickle.loads(frame)
            folder = home / "input"
            folder.mkdir()
            try:
                result = outcome(TARGETS[target], target, data, folder)
            finally:
                shutil.rmtree(folder, ignore_errors=True)
            write_frame(proto_out, result)
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
