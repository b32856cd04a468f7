"""Sweeps: run a suite's episodes as batched tasks, locally or on Ray, into parquet.

:func:`run_sweep` expands a suite (:mod:`mpsched.experiments.suite`) into episodes,
skips those already stored (``resume``), batches the rest into tasks and runs them:

- baselines and user classes share tasks, many episodes each, sorted so that a task
  builds each (scenario, seed) episode once and runs every policy on it; the number of
  tasks is a few per worker, so that scheduling costs little and the workers finish
  together;
- the optimum and learned agents run one episode per task with their own resources;
- on Ray (``executor="ray"``) ``ray.init()`` without an address starts a local Ray
  (``address`` or ``RAY_ADDRESS`` joins a cluster); a task whose worker dies is retried;
  ``executor="local"`` runs the tasks in this process, one after the other.

Results stream to ``OUT/rows/`` as tasks finish: one parquet file per task, written to a
temporary name and renamed into place, so a file is either whole or absent. A row is one
(suite, scenario, policy, seed) with every summary metric, per-path throughputs, the
upper bound of an optimum's row, the package version, git revision and scenario hash.
Per-episode series (block tables, receive-buffer occupancy, delivery) that a suite asks
for go to ``OUT/series/KIND/``, written before the row that commits them. Killing the
driver or a worker loses only the tasks in flight; ``resume`` re-runs exactly the
missing keys, so no finished row is lost and none is duplicated. When every episode is
stored the task files are merged into one (:meth:`ResultStore.compact`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import __version__
from ..envs.errors import MpschedError
from ..envs.results import RECEIVE_BUFFER_KEYS, SUMMARY_KEYS, EpisodeResult
from .suite import EpisodeSpec, Suite, from_source

__all__ = [
    "KEY_COLUMNS",
    "Provenance",
    "ResultStore",
    "SuiteResults",
    "SweepError",
    "SweepStats",
    "Task",
    "TaskResult",
    "git_revision",
    "load_results",
    "plan_tasks",
    "run_sweep",
    "run_task",
]

KEY_COLUMNS: tuple[str, ...] = ("suite", "scenario", "policy", "seed")
"""The identity of a stored row."""

PROVENANCE_COLUMNS: tuple[str, ...] = ("scenario_hash", "scenario_params", "policy_name", "policy_spec",
                                       "drop_expired", "mpsched_version", "git_rev")
TIMING_COLUMNS: tuple[str, ...] = ("wall_s",)
"""Columns that differ between runs of the same episode (left out of comparisons)."""

TASK_RETRIES = 3
"""How many times Ray re-runs a task whose worker died."""

_PYTHON_COST = 25.0  # a Python policy's episode, in native episodes (decisions cross into Python)
# Episodes of the optimum and of agents in native episodes, as measured on the quick
# leaderboard's episodes of one seed (median wall time: native baselines 0.023 s, the
# optimum with its rivals 15.7 s, the shipped agent 18.1 s): they weight the progress bar,
# so that its ETA counts the work left rather than the episodes left.
_KIND_COST = {"optimum": 700.0, "agent": 800.0}
_TASKS_PER_WORKER = 12
_MAX_EPISODES_PER_TASK = 200
_MANIFEST = "manifest.json"
_FORMAT = 1


class SweepError(MpschedError):
    """A sweep cannot start or store its results (existing results, a different suite)."""


# ---------------------------------------------------------------------------------------
# Provenance
# ---------------------------------------------------------------------------------------


def git_revision(path: str | Path | None = None) -> str:
    """The git revision of the source tree the package runs from (with ``-dirty`` when
    tracked files outside ``reports/`` are modified: a sweep writing its results there
    does not make its own source dirty), or ``unknown`` outside a git checkout."""
    here = Path(path) if path is not None else Path(__file__).resolve().parent.parent
    try:
        rev = subprocess.run(["git", "-C", str(here), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                             text=True, timeout=10)
        if rev.returncode != 0:
            return "unknown"
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no", "--",
                                ":/", ":(exclude,top)reports"],
                               capture_output=True, text=True, timeout=10)
        return rev.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


@dataclass(frozen=True)
class Provenance:
    """What every row records about the code that produced it."""

    version: str
    git_rev: str

    @classmethod
    def current(cls) -> Provenance:
        return cls(__version__, git_revision())


# ---------------------------------------------------------------------------------------
# Tasks
# ---------------------------------------------------------------------------------------


def _key_digest(keys: Iterable[tuple[Any, ...]]) -> str:
    text = json.dumps(sorted(list(k) for k in keys), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def key_file_name(key: tuple[Any, ...]) -> str:
    """File name (without suffix) of an episode's series."""
    return hashlib.sha256(json.dumps(list(key), default=str).encode()).hexdigest()[:24]


@dataclass(frozen=True)
class Task:
    """Episodes that one worker runs in a row, with the Ray resources they need."""

    episodes: tuple[EpisodeSpec, ...]
    resources: dict[str, float] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        return _key_digest(e.key for e in self.episodes)

    def ray_options(self) -> dict[str, Any]:
        opts: dict[str, Any] = {"num_cpus": self.resources.get("num_cpus", 1.0)}
        if self.resources.get("num_gpus"):
            opts["num_gpus"] = self.resources["num_gpus"]
        if self.resources.get("memory_gb"):
            opts["memory"] = int(self.resources["memory_gb"] * 2**30)
        return opts


def episode_cost(e: EpisodeSpec) -> float:
    """Relative cost of an episode: its simulated time and paths, times what a decision
    costs the policy (:data:`_KIND_COST`; a native baseline 1)."""
    sc = e.case.scenario
    base = 0.5 + sc.duration_s / 60.0 * len(sc.paths) / 2.0
    if e.policy.native:
        return base
    return base * _KIND_COST.get(e.policy.kind, _PYTHON_COST)


def plan_tasks(episodes: Sequence[EpisodeSpec], workers: int, max_episodes: int | None = None) -> list[Task]:
    """Batch episodes into tasks.

    Batched episodes (baselines, user classes) are sorted by (scenario, seed, policy)
    and cut into about ``12 * workers`` runs of equal cost (more when a task would hold
    over ``max_episodes``, 200 by default); the optimum and agents get one task per
    episode with their resources (one CPU by default).
    """
    cap = max(1, max_episodes or _MAX_EPISODES_PER_TASK)
    batched = sorted((e for e in episodes if e.policy.batched),
                     key=lambda e: (e.group, e.case.name, e.seed, e.policy.label))
    tasks: list[Task] = []
    if batched:
        costs = [episode_cost(e) for e in batched]
        n_tasks = min(len(batched), max(_TASKS_PER_WORKER * max(1, workers), math.ceil(len(batched) / cap)))
        share = sum(costs) / n_tasks
        run: list[EpisodeSpec] = []
        acc = 0.0
        for e, c in zip(batched, costs):
            run.append(e)
            acc += c
            if acc >= share or len(run) >= cap:
                tasks.append(Task(tuple(run)))
                run, acc = [], 0.0
        if run:
            tasks.append(Task(tuple(run)))
    # The optimum runs its rivals itself (PolicySpec.run); an unbatched rival (an agent)
    # of the same episode rides in the optimum's task, which hands its result on, so that
    # the costly episode runs once.
    solo = [e for e in episodes if not e.policy.batched]
    optima = {(e.group, e.case.name, e.seed): e for e in solo if e.policy.kind == "optimum"}
    riders: dict[tuple[Any, ...], list[EpisodeSpec]] = {}
    for e in solo:
        owner = optima.get((e.group, e.case.name, e.seed))
        if e.policy.kind != "optimum" and owner is not None and any(
                r.label == e.policy.label and drop == e.drop_expired for r, drop in owner.rivals):
            riders.setdefault(owner.key, []).append(e)
    riding = {e.key for group in riders.values() for e in group}
    for e in solo:
        if e.key in riding:
            continue
        together = (e, *riders.get(e.key, ()))
        resources: dict[str, float] = {}
        for x in together:
            for name, value in x.policy.resources.items():
                resources[name] = max(resources.get(name, 0.0), value)
        tasks.append(Task(together, resources))
    return tasks


@dataclass
class TaskResult:
    """What a task hands back: rows, series tables and the episodes that failed."""

    rows: list[dict[str, Any]]
    series: list[tuple[str, tuple[Any, ...], pd.DataFrame]]
    failures: list[tuple[tuple[Any, ...], str]]


def episode_row(e: EpisodeSpec, result: EpisodeResult, prov: Provenance) -> dict[str, Any]:
    """The stored row of one episode."""
    row: dict[str, Any] = dict(zip(KEY_COLUMNS, e.key))
    row["group"] = e.group
    row.update(result.summary)
    for j, thr in enumerate(result.paths["throughput_bps"].to_numpy()):
        row[f"path{j}_throughput_bps"] = float(thr)
    bound = result.extra.get("upper_bound") if result.extra else None
    row["upper_bound"] = float(bound) if bound is not None else float("nan")
    if result.extra and "source" in result.extra:  # the optimum: which candidate schedule it is
        row["optimum_source"] = str(result.extra["source"])
    row["scenario_hash"] = e.case.hash
    row["scenario_params"] = json.dumps(e.case.params, sort_keys=True, default=str)
    row["policy_name"] = result.policy
    row["policy_spec"] = json.dumps(e.policy.to_dict(), sort_keys=True, default=str)
    row["drop_expired"] = bool(e.drop_expired)
    row["mpsched_version"] = prov.version
    row["git_rev"] = prov.git_rev
    return row


def episode_series(e: EpisodeSpec, result: EpisodeResult) -> list[tuple[str, pd.DataFrame]]:
    """The series the episode's group asks for (a receive buffer only with the in-order
    receiver)."""
    out = []
    for kind in e.series:
        if kind == "blocks":
            b = result.blocks
            table = pd.DataFrame({
                "block": b.index.to_numpy(dtype=np.int64),
                "arrival_ns": b["arrival_ns"].to_numpy(dtype=np.int64),
                "deadline_ns": b["deadline_ns"].to_numpy(dtype=np.int64),
                "completion_ns": b["completion_ns"].fillna(-1).to_numpy(dtype=np.int64),
                "size_bytes": b["size_bytes"].to_numpy(dtype=np.int64),
                "priority": b["priority"].to_numpy(dtype=np.int64),
                "on_time": b["on_time"].to_numpy(dtype=bool),
            })
        elif kind == "rbuf":
            if result.pieces is None:
                continue
            table = result.receive_buffer()
        else:
            table = result.cumulative_delivery()
        for name, value in zip(KEY_COLUMNS, e.key):
            table.insert(len(table.columns), name, value)
        out.append((kind, table))
    return out


def run_task(task: Task, prov: Provenance) -> TaskResult:
    """Run a task's episodes in this process, building each (scenario, seed) episode
    once. An episode that raises is reported as a failure; the others still run."""
    from ..envs.episode import build_episode

    rows: list[dict[str, Any]] = []
    series: list[tuple[str, tuple[Any, ...], pd.DataFrame]] = []
    failures: list[tuple[tuple[Any, ...], str]] = []
    built: tuple[str, int, Any] | None = None
    rival_results: dict[tuple[Any, ...], EpisodeResult] = {}  # what an optimum ran, by episode
    for e in task.episodes:
        try:
            done = rival_results.get((e.case.hash, e.seed, e.policy.label, e.drop_expired))
            episode = None
            if e.policy.kind != "optimum" and done is None:
                if built is None or built[0] != e.case.hash or built[1] != e.seed:
                    built = (e.case.hash, e.seed, build_episode(e.case.scenario, e.seed))
                episode = built[2]
            result = done if done is not None else e.policy.run(e.case.scenario, e.seed, e.drop_expired, episode,
                                                                e.rivals, rival_results)
            rows.append(episode_row(e, result, prov))
            series.extend((kind, e.key, table) for kind, table in episode_series(e, result))
        except Exception as exc:  # one bad episode must not take its task's others down
            detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            failures.append((e.key, detail))
    return TaskResult(rows, series, failures)


def _warm_up() -> int:
    """Import what tasks need, so that the first tasks do not pay for it."""
    import mpsched.baselines  # noqa: F401
    import mpsched.envs  # noqa: F401

    time.sleep(0.05)  # keep this worker busy so that the others take their own warm-up
    return os.getpid()


# ---------------------------------------------------------------------------------------
# Storage
# ---------------------------------------------------------------------------------------


def _require_pyarrow() -> Any:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise SweepError("storing results needs pyarrow: pip install 'mpsched[sweep]'") from None
    return pyarrow


ROW_GROUP_ROWS = 10_000
"""Most rows in one parquet row group: a reader of a large merged file holds one group at a time."""


def _atomic_parquet(df: pd.DataFrame, path: Path, metadata: dict[str, str] | None = None) -> None:
    pa = _require_pyarrow()
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(df, preserve_index=False)
    if metadata:
        table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                               **{k.encode(): v.encode() for k, v in metadata.items()}})
    with _written_atomically(path) as tmp:
        pq.write_table(table, tmp, compression="zstd", row_group_size=ROW_GROUP_ROWS)


@contextlib.contextmanager
def _written_atomically(path: Path) -> Iterator[Path]:
    """A temporary name to write ``path``'s content to; once written it is synced and
    renamed over ``path``, so that a reader never sees a partial file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    yield tmp
    with open(tmp, "rb+") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _column_order(columns: Iterable[str]) -> list[str]:
    cols = list(columns)
    first = list(KEY_COLUMNS) + ["group"] + list(SUMMARY_KEYS) + list(RECEIVE_BUFFER_KEYS)
    paths = sorted((c for c in cols if c.startswith("path") and c.endswith("_throughput_bps")),
                   key=lambda c: int(c[4:].split("_")[0]))
    last = ["upper_bound", "optimum_source", "wall_s"] + list(PROVENANCE_COLUMNS)
    known = [c for c in first if c in cols] + paths + [c for c in last if c in cols]
    rest = sorted(c for c in cols if c not in known)
    return known + rest


def suite_layout(suite: Suite) -> list[dict[str, Any]]:
    """Per group, in the suite's order: name, title, description, scenarios, policies,
    each scenario's grid values and, for a sensitivity variant, the group it varies and the
    variant's name (what a report needs besides the rows)."""
    return [{"name": g.name, "title": g.title, "description": g.description,
             "scenarios": [c.name for c in g.cases], "policies": [p.label for p in g.policies],
             "params": {c.name: c.params for c in g.cases},
             **({"variant_of": g.variant_of, "variant": g.variant} if g.variant_of else {})} for g in suite.groups]


class ResultStore:
    """The results of one suite in a folder: ``manifest.json``, ``rows/*.parquet`` and
    ``series/KIND/*.parquet``."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.rows_dir = self.path / "rows"
        self.series_dir = self.path / "series"
        self.damaged_dir = self.path / "damaged"
        self.quarantined: list[tuple[Path, str]] = []
        """Row files a resumed :meth:`open` moved to :attr:`damaged_dir`, with why."""

    # -- manifest -------------------------------------------------------------------------
    @property
    def manifest_path(self) -> Path:
        return self.path / _MANIFEST

    def manifest(self) -> dict[str, Any]:
        try:
            return json.loads(self.manifest_path.read_text())
        except FileNotFoundError:
            raise SweepError(f"{self.path} holds no sweep results ({_MANIFEST} is missing)") from None

    def open(self, suite: Suite, resume: bool) -> None:
        """Prepare the folder for a sweep of ``suite``.

        Raises
        ------
        SweepError
            If it holds rows and ``resume`` is false, or rows of another suite.
        """
        self.rows_dir.mkdir(parents=True, exist_ok=True)
        for leftover in list(self.rows_dir.glob(".*.tmp")) + list(self.series_dir.glob("*/.*.tmp")):
            leftover.unlink(missing_ok=True)
        if resume:
            self.quarantined = self.quarantine()
        has_rows = bool(self.files())
        if self.manifest_path.exists() and has_rows:
            if not resume:
                raise SweepError(f"{self.path} already holds results; resume them with --resume or choose "
                                 "another --out")
            old = self.manifest()
            if old.get("digest") != suite.digest() or old.get("suite") != suite.name or \
                    bool(old.get("quick")) != suite.quick:
                raise SweepError(f"{self.path} holds results of a different suite definition "
                                 f"({old.get('suite')}{' --quick' if old.get('quick') else ''}); "
                                 "choose another --out")
            return
        manifest = {
            "format": _FORMAT,
            "suite": suite.name,
            "quick": suite.quick,
            "source": suite.source,
            "digest": suite.digest(),
            "spec": suite.spec,
            "layout": suite_layout(suite),
        }
        tmp = self.manifest_path.with_name(f".{_MANIFEST}.tmp")
        tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True, default=str) + "\n")
        os.replace(tmp, self.manifest_path)

    def clear(self) -> None:
        """Remove stored results (the manifest, row and series files; nothing else)."""
        self.manifest_path.unlink(missing_ok=True)
        for f in list(self.rows_dir.glob("*.parquet")) + list(self.series_dir.glob("*/*.parquet")):
            f.unlink()

    def suite(self) -> Suite:
        """The suite the stored rows come from, rebuilt from the manifest."""
        m = self.manifest()
        return from_source(m["source"], m["spec"], bool(m.get("quick")))

    # -- files ----------------------------------------------------------------------------
    def quarantine(self) -> list[tuple[Path, str]]:
        """Move every row file that cannot be read whole (a write cut short by a crash or a
        full disk, a damaged copy) to ``damaged/``: its episodes are then missing, and a
        resumed sweep runs them again. Returns the moved files (new paths) with why."""
        import pyarrow.parquet as pq

        moved: list[tuple[Path, str]] = []
        for f in sorted(self.rows_dir.glob("*.parquet")):
            try:
                pq.read_table(f)
            except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
                self.damaged_dir.mkdir(parents=True, exist_ok=True)
                dest = self.damaged_dir / f.name
                os.replace(f, dest)
                moved.append((dest, f"{type(exc).__name__}: {exc}"))
        return moved

    def _read(self, f: Path, columns: list[str] | None = None) -> Any:
        """A row file as an Arrow table, or SweepError naming the file and the way out."""
        import pyarrow.parquet as pq

        try:
            return pq.read_table(f, columns=columns)
        except (OSError, ValueError) as exc:
            raise SweepError(self._damaged_message(f, exc)) from None

    def _damaged_message(self, f: Path, exc: Exception) -> str:
        return (f"{f}: not a readable row file ({type(exc).__name__}: {exc}); resuming the sweep "
                f"(mpsched sweep SUITE --out {self.path} --resume) moves it to {self.damaged_dir} and runs "
                "its episodes again")

    def _metadata(self, f: Path) -> Any:
        """A row file's parquet metadata (its schema and row count), or SweepError naming it."""
        import pyarrow.parquet as pq

        try:
            return pq.read_metadata(f)
        except (OSError, ValueError) as exc:
            raise SweepError(self._damaged_message(f, exc)) from None

    def _merged(self) -> tuple[list[Path], set[str]]:
        merged = sorted(self.rows_dir.glob("merged-*.parquet"))
        covered: set[str] = set()
        for f in merged:
            meta = self._metadata(f).schema.to_arrow_schema().metadata or {}
            covered.update(json.loads(meta.get(b"mpsched.merged", b"[]")))
        return merged, covered

    def files(self) -> list[Path]:
        """The row files that count: merged files, and task files not merged into one."""
        if not self.rows_dir.exists():
            return []
        _require_pyarrow()
        merged, covered = self._merged()
        parts = [f for f in sorted(self.rows_dir.glob("part-*.parquet")) if f.name not in covered]
        return merged + parts

    def keys(self) -> set[tuple[Any, ...]]:
        """Keys of the stored rows."""
        out: set[tuple[Any, ...]] = set()
        for f in self.files():
            t = self._read(f, list(KEY_COLUMNS)).to_pydict()
            out.update(zip(*(t[c] for c in KEY_COLUMNS)))
        return out

    def write(self, task: Task, result: TaskResult) -> None:
        """Store a finished task: its series first, then its rows (the commit)."""
        for kind, key, table in result.series:
            folder = self.series_dir / kind
            folder.mkdir(parents=True, exist_ok=True)
            _atomic_parquet(table, folder / f"{key_file_name(key)}.parquet")
        if result.rows:
            df = pd.DataFrame(result.rows)
            _atomic_parquet(df[_column_order(df.columns)], self.rows_dir / f"part-{task.digest}.parquet")

    def compact(self) -> None:
        """Merge the row files into one. The merged file lists what it holds, so the
        task files it replaces never count twice, even if removing them is cut short."""
        files = self.files()
        if len(files) > 1 and any(f.name.startswith("part-") for f in files):
            _, covered = self._merged()
            names = sorted(covered | {f.name for f in files})
            digest = hashlib.sha256(json.dumps(names).encode()).hexdigest()[:20]
            merged = self.rows_dir / f"merged-{digest}.parquet"
            self._concatenate(files, merged, {"mpsched.merged": json.dumps(names)})
            for f in files:
                if f != merged:
                    f.unlink(missing_ok=True)
        _, covered = self._merged()
        for f in self.rows_dir.glob("part-*.parquet"):  # left by a compaction cut short
            if f.name in covered:
                f.unlink(missing_ok=True)

    def _concatenate(self, files: list[Path], path: Path, metadata: dict[str, str]) -> None:
        """Write the rows of ``files`` into one file, one file at a time (memory bounded by
        a row group and the largest file, not the store), in row groups of
        :data:`ROW_GROUP_ROWS` rows (the last one shorter).
        A column missing from a file is null there; types are widened to fit all files."""
        pa = _require_pyarrow()
        import pyarrow.parquet as pq

        unified = _union_schema([self._metadata(f).schema.to_arrow_schema() for f in files])
        schema = pa.schema([unified.field(c) for c in _column_order(unified.names)],
                           metadata={k.encode(): v.encode() for k, v in metadata.items()})
        plain = schema.remove_metadata()
        with _written_atomically(path) as tmp, pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
            held = pa.Table.from_pylist([], schema=plain)  # rows not yet written: fewer than ROW_GROUP_ROWS
            for f in files:
                table = self._read(f)
                columns = [table.column(c) if c in table.column_names
                           else pa.nulls(table.num_rows, schema.field(c).type)
                           for c in schema.names]
                held = pa.concat_tables([held, pa.Table.from_arrays(columns, schema=plain).cast(plain)])
                while held.num_rows >= ROW_GROUP_ROWS:  # full row groups as soon as they fill
                    writer.write_table(held.slice(0, ROW_GROUP_ROWS), row_group_size=ROW_GROUP_ROWS)
                    held = held.slice(ROW_GROUP_ROWS)
            if held.num_rows:
                writer.write_table(held, row_group_size=ROW_GROUP_ROWS)

    # -- reading --------------------------------------------------------------------------
    def load(self, skip: Collection[str] = ()) -> pd.DataFrame:
        """Every stored row, sorted by key, columns in a fixed order.

        The key columns are read and sorted first; then one column at a time is read
        from every file, put in key order and converted, so that the peak is the
        DataFrame and about one column beside it (a concatenation and a sort of whole
        tables would hold several copies of the rows).

        Parameters
        ----------
        skip : collection of str
            Columns not to read (a report needs neither the scenario's JSON nor the
            policy's), except the key columns.

        Raises
        ------
        SweepError
            If a key is stored twice (the store was written by something else).
        """
        files = self.files()
        if not files:
            return pd.DataFrame(columns=list(KEY_COLUMNS))
        pa = _require_pyarrow()
        import pyarrow.compute as pc

        metadata = [self._metadata(f) for f in files]
        schemas = [m.schema.to_arrow_schema() for m in metadata]
        unified = _union_schema(schemas)
        file_rows = [m.num_rows for m in metadata]

        def column(name: str) -> Any:
            kind = unified.field(name).type
            parts = [self._read(f, [name]).column(0).cast(kind) if name in schema.names
                     else pa.chunked_array([pa.nulls(n, kind)]) for f, schema, n in zip(files, schemas, file_rows)]
            return pa.chunked_array([chunk for part in parts for chunk in part.chunks], kind)

        keys = pa.table({c: column(c) for c in KEY_COLUMNS})
        order = pc.sort_indices(keys, sort_keys=[(c, "ascending") for c in KEY_COLUMNS])
        repeated = _repeated_keys(keys.take(order))
        if repeated is not None:
            count, example = repeated
            raise SweepError(f"{self.path}: {count} keys are stored twice, e.g. {example}")
        names = [c for c in _column_order(unified.names) if c in KEY_COLUMNS or c not in skip]
        df = pd.DataFrame({c: column(c).take(order).to_pandas() for c in names}, copy=False)
        pa.default_memory_pool().release_unused()  # the files' buffers, freed, back to the system
        return df

    def series(self, kind: str) -> pd.DataFrame:
        """A stored series kind for every episode that has it (empty when none)."""
        import pyarrow.parquet as pq

        folder = self.series_dir / kind
        files = sorted(folder.glob("*.parquet")) if folder.exists() else []
        if not files:
            return pd.DataFrame()
        frames = []
        for f in files:
            try:
                frames.append(pq.read_table(f).to_pandas())
            except (OSError, ValueError) as exc:
                raise SweepError(f"{f}: not a readable series file ({type(exc).__name__}: {exc}); it holds one "
                                 f"episode's {kind} series: delete it to report without it") from None
        df = pd.concat(frames, ignore_index=True)
        stored = self.keys()
        keep = [tuple(k) in stored for k in df[list(KEY_COLUMNS)].itertuples(index=False)]
        return df[keep].sort_values(list(KEY_COLUMNS), kind="stable").reset_index(drop=True)


# ---------------------------------------------------------------------------------------
# Executors
# ---------------------------------------------------------------------------------------


OnResult = Callable[[Task, TaskResult], None]
OnFailure = Callable[[Task, str], None]


def _run_local(tasks: Sequence[Task], prov: Provenance, on_result: OnResult, on_failure: OnFailure) -> None:
    for task in tasks:
        on_result(task, run_task(task, prov))


@dataclass
class _Ray:
    """A Ray session for one sweep: joined or started, and shut down if started."""

    address: str | None
    workers: int | None
    modules: tuple[Any, ...] = ()
    started: bool = False
    startup_s: float = 0.0
    cpus: int = 1

    def __enter__(self) -> _Ray:
        try:
            import ray
        except ImportError:
            raise SweepError("running on Ray needs ray: pip install 'mpsched[sweep]' (or run with --local)") from None
        begin = time.perf_counter()
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "logging_level": "WARNING",
                                      "configure_logging": True}
            address = self.address or os.environ.get("RAY_ADDRESS")
            if address:
                # a cluster's workers do not see this machine's files: ship the user's modules
                if self.modules:
                    kwargs["runtime_env"] = {"py_modules": list(self.modules)}
                ray.init(address=address, **kwargs)
            else:  # local workers share this machine's current directory and PYTHONPATH
                ray.init(address="local", num_cpus=self.workers or os.cpu_count() or 1, **kwargs)
            self.started = True
        self.cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        warm = ray.remote(num_cpus=1)(_warm_up)
        ray.get([warm.remote() for _ in range(min(self.cpus, 256))])
        self.startup_s = time.perf_counter() - begin
        return self

    def __exit__(self, *exc: Any) -> None:
        import ray

        if self.started:
            ray.shutdown()

    def run(self, tasks: Sequence[Task], prov: Provenance, on_result: OnResult, on_failure: OnFailure) -> None:
        import ray

        remote = ray.remote(max_retries=TASK_RETRIES, retry_exceptions=False)(run_task)
        prov_ref = ray.put(prov)
        pending = {remote.options(**t.ray_options()).remote(t, prov_ref): t for t in tasks}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=5.0)
            for ref in ready:
                task = pending.pop(ref)
                try:
                    result = ray.get(ref)
                except Exception as exc:  # the task's worker died more than TASK_RETRIES times, or Ray failed
                    on_failure(task, f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc) else ''}")
                else:
                    on_result(task, result)


@dataclass
class SweepStats:
    """What a sweep did: episode counts, timings (Ray start-up apart) and failures."""

    suite: str
    out: str
    episodes: int
    skipped: int
    ran: int
    failed: list[tuple[tuple[Any, ...], str]]
    tasks: int
    executor: str
    workers: int
    startup_s: float
    run_s: float

    @property
    def ok(self) -> bool:
        return not self.failed


def run_sweep(suite: Suite, out: str | Path, *, resume: bool = False, executor: str = "ray",
              address: str | None = None, workers: int | None = None, max_episodes_per_task: int | None = None,
              progress: bool = True, compact: bool = True) -> SweepStats:
    """Run a suite's episodes and store one row each in ``out``.

    Parameters
    ----------
    suite : Suite
    out : path
        The suite's results folder (created).
    resume : bool
        Keep the rows already in ``out`` and run only the missing keys; without it, a
        folder that holds rows is an error.
    executor : {"ray", "local"}
        Ray tasks (a local Ray unless ``address`` or ``RAY_ADDRESS`` names a cluster), or
        this process alone.
    address : str, optional
        A Ray cluster to join.
    workers : int, optional
        CPUs of a local Ray (default: all) and the number of workers tasks are planned for.
    max_episodes_per_task : int, optional
        Upper bound on the episodes of one task (default 200).
    progress : bool
        Show a progress bar (episodes done, rate, ETA) on stderr.
    compact : bool
        Merge the task files into one once every episode is stored.

    Returns
    -------
    SweepStats

    Raises
    ------
    SweepError
        For results already in ``out`` without ``resume``, or of another suite.
    """
    from tqdm import tqdm

    if executor not in ("ray", "local"):
        raise SweepError(f"executor {executor!r}: expected 'ray' or 'local'")
    _require_pyarrow()
    store = ResultStore(out)
    store.open(suite, resume)
    for moved, why in store.quarantined:
        print(f"mpsched sweep: {moved.name} could not be read ({why}); moved to {moved.parent}: its episodes "
              "run again", file=sys.stderr)
    episodes = suite.episodes()
    stored = store.keys() if resume else set()
    pending = [e for e in episodes if e.key not in stored]
    user_modules: dict[str, Any] = {}
    for e in pending:
        if e.policy.kind == "user":
            e.policy.build()  # fail now, on the driver, for a class that cannot be imported or built
            top = e.policy.name.split(":", 1)[0].split(".")[0]
            module = sys.modules.get(top)
            if module is not None and "site-packages" not in str(getattr(module, "__file__", "")):
                user_modules[top] = module
    prov = Provenance.current()
    failed: list[tuple[tuple[Any, ...], str]] = []
    bars: list[Any] = []

    # The bar advances by expected work (episode_cost), not by episodes: an agent's or the
    # optimum's episode costs hundreds of a native baseline's, and an ETA by episode count
    # reads "seconds left" while they run. The episodes done are its postfix.
    done = [0]

    def start_bar() -> None:  # once Ray is up, so that its rate and ETA count episodes only
        bars.append(tqdm(total=round(sum(episode_cost(e) for e in pending), 3),
                         desc=suite.name + (" --quick" if suite.quick else ""), disable=not progress,
                         file=sys.stderr, smoothing=0.05, dynamic_ncols=True,
                         bar_format="{desc}: {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}{postfix}]"))
        bars[0].set_postfix_str(f"0/{len(pending)} episodes")

    def advance(task: Task) -> None:
        done[0] += len(task.episodes)
        bars[0].update(round(sum(episode_cost(e) for e in task.episodes), 3))
        bars[0].set_postfix_str(f"{done[0]}/{len(pending)} episodes" + (f", {len(failed)} failed" if failed else ""))

    def on_result(task: Task, result: TaskResult) -> None:
        store.write(task, result)
        failed.extend(result.failures)
        advance(task)

    def on_failure(task: Task, why: str) -> None:
        failed.extend((e.key, why) for e in task.episodes)
        advance(task)

    startup = 0.0
    tasks: list[Task] = []
    try:
        if executor == "ray" and pending:
            with _Ray(address, workers, tuple(user_modules[k] for k in sorted(user_modules))) as session:
                startup = session.startup_s
                n_workers = session.cpus
                tasks = plan_tasks(pending, n_workers, max_episodes_per_task)
                start_bar()
                begin = time.perf_counter()
                session.run(tasks, prov, on_result, on_failure)
                run_s = time.perf_counter() - begin
        else:
            n_workers = 1
            tasks = plan_tasks(pending, 1, max_episodes_per_task)
            start_bar()
            begin = time.perf_counter()
            _run_local(tasks, prov, on_result, on_failure)
            run_s = time.perf_counter() - begin
    finally:
        for bar in bars:
            bar.close()
    if compact and not failed:
        store.compact()
    return SweepStats(suite.name, str(out), len(episodes), len(episodes) - len(pending), len(pending) - len(failed),
                      failed, len(tasks), executor, n_workers, startup, run_s)


# ---------------------------------------------------------------------------------------
# Reading results
# ---------------------------------------------------------------------------------------


def _union_schema(schemas: list[Any]) -> Any:
    """The union of row files' schemas, without metadata: a column missing from a file is
    null there; types are widened to fit all files."""
    return _require_pyarrow().unify_schemas([x.remove_metadata() for x in schemas], promote_options="permissive")


def _repeated_keys(table: Any) -> tuple[int, tuple[Any, ...]] | None:
    """In a table sorted by key: how many rows repeat the key of the row before them,
    and the first such key; None when every key is distinct."""
    import numpy as np
    import pyarrow.compute as pc

    if table.num_rows < 2:
        return None
    same = np.ones(table.num_rows - 1, dtype=bool)
    for c in KEY_COLUMNS:
        column = table.column(c)
        same &= pc.equal(column.slice(1), column.slice(0, table.num_rows - 1)).to_numpy(zero_copy_only=False)
    if not same.any():
        return None
    first = int(np.argmax(same)) + 1
    return int(same.sum()), tuple(table.column(c)[first].as_py() for c in KEY_COLUMNS)


@dataclass
class SuiteResults:
    """The stored results of one suite: its rows, its series and the suite itself."""

    store: ResultStore | None
    manifest: dict[str, Any]
    rows: pd.DataFrame
    _series: dict[str, pd.DataFrame] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return str(self.manifest["suite"])

    def series(self, kind: str) -> pd.DataFrame:
        """A stored series kind (empty when none is stored, or for results held in memory
        without their folder)."""
        if kind not in self._series:
            self._series[kind] = self.store.series(kind) if self.store is not None else pd.DataFrame()
        return self._series[kind]

    def suite(self) -> Suite:
        """The suite the rows come from, rebuilt from the manifest."""
        m = self.manifest
        return from_source(m["source"], m["spec"], bool(m.get("quick")))


def load_results(path: str | Path, skip: Collection[str] = ()) -> list[SuiteResults]:
    """Results of a suite folder, or of every suite folder directly inside ``path``
    (``skip``: columns not to read, as in :meth:`ResultStore.load`).

    Raises
    ------
    SweepError
        If no results are found.
    """
    root = Path(path)
    folders = [root] if (root / _MANIFEST).exists() else sorted(p for p in root.glob("*") if (p / _MANIFEST).exists())
    if not folders:
        raise SweepError(f"{root}: no sweep results here ({_MANIFEST} in it or in its subfolders)")
    out = []
    for folder in folders:
        store = ResultStore(folder)
        out.append(SuiteResults(store, store.manifest(), store.load(skip)))
    return sorted(out, key=lambda r: r.name)
