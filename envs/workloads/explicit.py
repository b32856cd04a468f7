"""The ``explicit`` workload: blocks listed one by one, inline or in a file.

Keys and defaults: either ``blocks`` (a non-empty list of mappings with ``arrival_ms``,
``size_bytes``, the absolute ``deadline_ms``, ``priority`` 0, ``weight`` 1 and ``kind``
"block") or ``file`` with its ``format``; and ``start_s`` 0.

``arrival_ms`` and absolute ``deadline_ms`` of each block are shifted by ``start_s``;
a block arriving at or after the end is an error rather than dropped.

Files (``format`` defaults from the file's suffix, ``.csv``, ``.json`` or ``.har``):

``csv``
    A header naming ``arrival_ms``, ``size_bytes``, ``deadline_ms`` and optionally
    ``priority``, ``weight``, ``kind``, then one block a line (comma-separated; blank,
    ``#`` and ``%`` lines skipped), with the meaning of inline blocks.
``json``
    A list of block mappings as inline (or a mapping with that list under ``blocks``).
``har``
    An HTTP Archive (a browser's page-load capture): one block per entry of
    ``log.entries``, arriving at its ``startedDateTime`` counted from the earliest entry,
    of ``response.bodySize`` bytes (``response.content.size`` when the body size is not
    recorded, i.e. negative), due ``deadline_ms`` (required for this format) after it
    arrives, ``kind`` the main part of its MIME type. Entries of zero or unknown size
    (redirects, cached or aborted responses) carry no data and are left out. Entries that
    start together keep the file's order.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ScenarioError, TraceError
from ..textfiles import cached_parse, cell_number, resolve_file, split_cells, table_rows
from ..validate import (
    MISSING,
    check_choice,
    check_file_name,
    check_integer,
    check_keys,
    check_mapping,
    check_number,
    check_seconds,
    check_text,
    field_path,
    to_ns,
)
from .common import MAX_MS, WorkloadKind, check_ms, check_priority, check_weight
from .table import MAX_BLOCK_BYTES, BlockTable

FORMATS: tuple[str, ...] = ("csv", "json", "har")
"""The block file formats."""

_BLOCK_KEYS = ("arrival_ms", "size_bytes", "deadline_ms", "priority", "weight", "kind")
_REQUIRED = ("arrival_ms", "size_bytes", "deadline_ms")


def _check_block(item: Any, where: str) -> dict[str, Any]:
    """One block mapping, validated and completed with defaults."""
    block = check_mapping(item, where, "a mapping with arrival_ms, size_bytes and deadline_ms")
    check_keys(block, where, _BLOCK_KEYS)
    arrival = check_ms(block.get("arrival_ms", MISSING), field_path(where, "arrival_ms"))
    return {
        "arrival_ms": arrival,
        "size_bytes": check_integer(block.get("size_bytes", MISSING), field_path(where, "size_bytes"), lo=1,
                                    hi=MAX_BLOCK_BYTES),
        "deadline_ms": check_number(block.get("deadline_ms", MISSING), field_path(where, "deadline_ms"), lo=arrival,
                                    hi=MAX_MS, what="an absolute deadline in ms, not before arrival_ms,"),
        "priority": check_priority(block.get("priority", 0), field_path(where, "priority")),
        "weight": check_weight(block.get("weight", 1.0), field_path(where, "weight")),
        "kind": check_text(block.get("kind", "block"), field_path(where, "kind")),
    }


def normalize(cfg: dict[Any, Any], field: str) -> dict[str, Any]:
    """Validate an ``explicit`` configuration and complete it with defaults (:class:`.WorkloadKind`)."""
    check_keys(cfg, field, ("type", "blocks", "file", "format", "deadline_ms", "start_s"))
    start = {"start_s": check_seconds(cfg.get("start_s", 0.0), field_path(field, "start_s"))}
    if ("blocks" in cfg) == ("file" in cfg):
        raise ScenarioError(field, sorted(k for k in ("blocks", "file") if k in cfg),
                            "either blocks (a list) or file (a csv, json or har file of blocks)")
    if "file" in cfg:
        file = check_file_name(cfg["file"], field_path(field, "file"))
        suffix = Path(file).suffix.lower().lstrip(".")
        fmt = check_choice(cfg.get("format", suffix if suffix in FORMATS else MISSING),
                           field_path(field, "format"), FORMATS)
        out: dict[str, Any] = {"type": "explicit", "file": file, "format": fmt}
        if fmt == "har":
            out["deadline_ms"] = check_ms(cfg.get("deadline_ms", MISSING), field_path(field, "deadline_ms"))
        elif "deadline_ms" in cfg:
            raise ScenarioError(field_path(field, "deadline_ms"), cfg["deadline_ms"],
                                "no value: csv and json files give each block's absolute deadline_ms")
        return {**out, **start}
    for key in ("format", "deadline_ms"):
        if key in cfg:
            raise ScenarioError(field_path(field, key), cfg[key], "no value with inline blocks (it goes with file)")
    blocks_field = field_path(field, "blocks")
    raw = cfg["blocks"]
    if not isinstance(raw, (list, tuple)) or not raw:
        raise ScenarioError(blocks_field, raw, "a non-empty list of block mappings")
    blocks = [_check_block(item, f"{blocks_field}[{i}]") for i, item in enumerate(raw)]
    return {"type": "explicit", "blocks": blocks, **start}


def _in_file(path: Path, line: int | None, block: Mapping[str, Any], where: str) -> dict[str, Any]:
    """:func:`_check_block` with its problem reported against the file (and line)."""
    try:
        return _check_block(block, where)
    except ScenarioError as exc:
        raise TraceError(path, line, str(exc)) from None


def _parse_csv(path: Path, lines: list[str]) -> tuple[dict[str, Any], ...]:
    header = next((split_cells(x.strip(), ",") for x in lines if x.strip() and not x.strip().startswith(("#", "%"))),
                  None)
    if header is None:
        raise TraceError(path, None, "no header and no blocks (empty file)")
    missing = [c for c in _REQUIRED if c not in header]
    if missing:
        raise TraceError(path, None, f"the header {header!r} lacks {', '.join(missing)} "
                                     f"(columns: {', '.join(_BLOCK_KEYS)})")
    columns = {c: c for c in _BLOCK_KEYS if c in header}
    blocks = []
    for number, cells in table_rows(path, lines, ",", True, columns):
        item: dict[str, Any] = {}
        for key, cell in cells.items():
            if key == "kind":
                item[key] = cell
            else:
                value = cell_number(path, number, cell, key)
                item[key] = int(value) if key in ("size_bytes", "priority") and value.is_integer() else value
        blocks.append(_in_file(path, number, item, f"line {number}"))
    return tuple(blocks)


def _parse_json(path: Path, lines: list[str]) -> tuple[dict[str, Any], ...]:
    try:
        data = json.loads("\n".join(lines))
    except json.JSONDecodeError as exc:
        raise TraceError(path, exc.lineno, f"not JSON: {exc.msg}") from None
    items = data.get("blocks") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise TraceError(path, None, "expected a list of block mappings (or a mapping with one under 'blocks')")
    return tuple(_in_file(path, None, item, f"blocks[{i}]") for i, item in enumerate(items))


def _mapping(value: Any) -> dict[str, Any]:
    """A HAR object, or an empty one where the capture left it out."""
    return value if isinstance(value, dict) else {}


def _har_time_ms(path: Path, value: Any, where: str) -> float:
    try:
        stamp = datetime.datetime.fromisoformat(str(value))
    except ValueError:
        raise TraceError(path, None, f"{where}.startedDateTime: {value!r} is not an ISO 8601 time") from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=datetime.timezone.utc)
    return stamp.timestamp() * 1e3


def _parse_har(path: Path, lines: list[str], deadline_ms: float) -> tuple[dict[str, Any], ...]:
    try:
        data = json.loads("\n".join(lines))
    except json.JSONDecodeError as exc:
        raise TraceError(path, exc.lineno, f"not JSON: {exc.msg}") from None
    entries = _mapping(data.get("log")).get("entries") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise TraceError(path, None, "not an HTTP Archive: no log.entries list")
    objects = []
    for i, entry in enumerate(entries):
        where = f"log.entries[{i}]"
        if not isinstance(entry, dict):
            raise TraceError(path, None, f"{where}: not a mapping")
        response = _mapping(entry.get("response"))
        content = _mapping(response.get("content"))
        size = next((v for v in (response.get("bodySize"), content.get("size"))
                     if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0), 0)
        if size <= 0:
            continue  # no data to send: a redirect, a cached or an aborted response
        mime = str(content.get("mimeType") or "object").split("/")[0].split(";")[0].strip() or "object"
        objects.append((_har_time_ms(path, entry.get("startedDateTime"), where), int(size), mime, where))
    if not objects:
        raise TraceError(path, None, "no entry carries data (every response size is 0 or unknown)")
    first = min(t for t, _, _, _ in objects)
    objects.sort(key=lambda o: o[0])  # stable: entries that start together keep the file's order
    return tuple(_in_file(path, None, {"arrival_ms": t - first, "size_bytes": size,
                                        "deadline_ms": t - first + deadline_ms, "kind": mime}, where)
                 for t, size, mime, where in objects)


def generate(cfg: dict[str, Any], end_ns: int, rng: np.random.Generator, base_dir: Path | None) -> BlockTable:
    """The blocks of an ``explicit`` configuration (:class:`.WorkloadKind`)."""
    start = to_ns(cfg["start_s"])
    if "file" in cfg:
        path = resolve_file(cfg["file"], base_dir)
        fmt = cfg["format"]
        blocks = (cached_parse(path, _parse_har, cfg["deadline_ms"]) if fmt == "har" else
                  cached_parse(path, _parse_csv if fmt == "csv" else _parse_json))
        if not blocks:
            raise TraceError(path, None, "no blocks")
    else:
        blocks = cfg["blocks"]
    arrival = np.array([start + round(b["arrival_ms"] * 1e6) for b in blocks], dtype=np.int64)
    late = np.flatnonzero(arrival >= end_ns)
    if late.size and "file" in cfg:
        i = int(late[0])
        raise TraceError(resolve_file(cfg["file"], base_dir), None,
                         f"block {i} arrives at {blocks[i]['arrival_ms']!r} ms, not before the end of the episode "
                         f"({(end_ns - start) / 1e6!r} ms: duration_s minus start_s); explicit blocks are not dropped")
    if late.size:
        i = int(late[0])
        raise ScenarioError(
            f"workload.blocks[{i}].arrival_ms",
            blocks[i]["arrival_ms"],
            f"an arrival before the end of the episode, i.e. < {(end_ns - start) / 1e6!r} ms "
            f"(duration_s minus start_s); explicit blocks are not dropped",
        )
    return BlockTable(
        arrival,
        np.array([b["size_bytes"] for b in blocks], dtype=np.int64),
        np.array([start + round(b["deadline_ms"] * 1e6) for b in blocks], dtype=np.int64),
        np.array([b["priority"] for b in blocks], dtype=np.int64),
        np.array([b["weight"] for b in blocks], dtype=np.float64),
        np.array([b["kind"] for b in blocks], dtype=object),
        np.full(len(blocks), -1, dtype=np.int64),
        None,
    )


KIND = WorkloadKind(name="explicit", normalize=normalize, generate=generate)
"""The ``explicit`` workload type."""
