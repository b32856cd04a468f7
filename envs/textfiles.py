"""Reading delimited text files (traces and frame logs): cached parsing, rows, cells.

Errors name the file and the 1-based line (:class:`~mpsched.envs.errors.TraceError`).
"""

from __future__ import annotations

import math
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from .errors import ScenarioError, TraceError
from .validate import check_bool, field_path

__all__ = [
    "TIME_UNITS",
    "check_column",
    "check_delimiter",
    "check_header",
    "resolve_file",
    "cached_parse",
    "read_lines",
    "split_cells",
    "table_rows",
    "cell_number",
    "cell_time_ns",
    "sample_timeline",
]

_MAX_ABS_NS = 10**18


TIME_UNITS: dict[str, float] = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}


_CACHE_ENTRIES = 64


_T = TypeVar("_T")


def check_column(value: Any, field: str) -> str | int:
    """A column given by header name (non-empty string) or by 0-based index."""
    if isinstance(value, str) and value:
        return value
    if (
        not isinstance(value, (bool, np.bool_))
        and isinstance(value, (int, np.integer))
        and value >= 0
    ):
        return int(value)
    raise ScenarioError(field, value, "a column name (string) or a 0-based column index (int >= 0)")


def check_delimiter(value: Any, field: str) -> str:
    """``"whitespace"`` or a single delimiter character."""
    if isinstance(value, str) and (
        value == "whitespace" or (len(value) == 1 and value not in "\r\n")
    ):
        return value
    raise ScenarioError(
        field, value, "'whitespace' or a single character such as ',', ';' or '\\t'"
    )


def check_header(config: Mapping[str, Any], field: str, columns: Iterable[str | int | None]) -> bool:
    """The ``header`` option: defaults to whether any column is named; named ones need it."""
    named = any(isinstance(column, str) for column in columns)
    header = check_bool(config.get("header", named), field_path(field, "header"))
    if named and not header:
        raise ScenarioError(
            field_path(field, "header"), header, "true, because a column is given by name"
        )
    return header


_cache: dict[tuple[Any, ...], Any] = {}


def resolve_file(file: str, base_dir: Path | None) -> Path:
    """``file`` as a path, relative ones taken against ``base_dir`` (or the CWD)."""
    path = Path(file).expanduser()
    if path.is_absolute():
        return path
    return (Path(base_dir) if base_dir is not None else Path.cwd()) / path


def cached_parse(path: Path, parser: Callable[..., _T], *options: Any) -> _T:
    """``parser(path, lines, *options)``, remembered per file identity and options.

    The key is the resolved path, the file's modification time and size, the parser and its
    options, so an edited file is read again. At most ``_CACHE_ENTRIES`` results are kept;
    the oldest goes first. Parsers must return immutable values.
    """
    try:
        info = path.stat()
    except FileNotFoundError:
        raise TraceError(path, None, "file not found") from None
    except OSError as error:
        raise TraceError(path, None, f"cannot be read: {error.strerror}") from None
    except ValueError as error:  # a NUL byte in the name
        raise TraceError(path, None, f"not a usable file name: {error}") from None
    if not stat.S_ISREG(info.st_mode):
        raise TraceError(path, None, "not a regular file")
    key = (str(path.resolve()), info.st_mtime_ns, info.st_size, parser.__qualname__, options)
    if key not in _cache:
        result = parser(path, read_lines(path), *options)
        if len(_cache) >= _CACHE_ENTRIES:
            del _cache[next(iter(_cache))]
        _cache[key] = result
    return _cache[key]


def exists(path: Path, kind: str = "any") -> bool:
    """Whether ``path`` names an existing entry (``kind``: ``"any"``, ``"dir"``); a name the
    system cannot even look up (too long, a NUL byte) does not exist rather than raise."""
    try:
        return path.is_dir() if kind == "dir" else path.exists()
    except (OSError, ValueError):
        return False


def read_text(path: Path) -> str:
    """The text of a UTF-8 file (a leading byte-order mark is dropped)."""
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        raise TraceError(
            path, None, f"not UTF-8 text ({error.reason} at byte {error.start})"
        ) from None
    except OSError as error:
        raise TraceError(path, None, f"cannot be read: {error.strerror}") from None
    except ValueError as error:  # a NUL byte in the name
        raise TraceError(path, None, f"not a usable file name: {error}") from None


def read_lines(path: Path) -> list[str]:
    """The lines of a UTF-8 text file (a leading byte-order mark is dropped)."""
    return [line.rstrip("\r") for line in read_text(path).split("\n")]


def read_yaml(path: Path) -> Any:
    """The document of a YAML file, read safely (no tags that build objects).

    Raises
    ------
    TraceError
        For a file that cannot be read, is not UTF-8 or is not valid YAML; a syntax error
        names its line and column.
    """
    import yaml

    text = read_text(path)
    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"column {mark.column + 1}: " if mark is not None else ""
        what = "; ".join(x for x in (error.context, error.problem) if x)
        raise TraceError(path, mark.line + 1 if mark is not None else None,
                         f"{where}not valid YAML: {what}") from None
    except yaml.YAMLError as error:
        raise TraceError(path, None, f"not valid YAML: {error}") from None


def split_cells(line: str, delimiter: str) -> list[str]:
    """Cells of a line; surrounding spaces and double quotes are removed from each cell."""
    if delimiter == "whitespace":
        return line.split()
    return [cell.strip().strip('"') for cell in line.split(delimiter)]


def table_rows(
    path: Path,
    lines: list[str],
    delimiter: str,
    header: bool,
    columns: Mapping[str, str | int],
    exact_fields: int | None = None,
) -> Iterator[tuple[int, dict[str, str]]]:
    """Data rows of a delimited text file as ``(line number, {option: cell})``.

    Blank lines and comment lines, whose first non-blank character is ``#`` or ``%`` (the
    comments of MATLAB-written logs such as the cisco syncodecs traces), are skipped. With
    ``header`` the first other line names the columns; ``columns`` maps each option name
    (e.g. ``"time_column"``) to a column name or 0-based index (only indices without header).
    """
    index = None if header else {option: int(column) for option, column in columns.items()}
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "%")):
            continue
        cells = split_cells(stripped, delimiter)
        if index is None:
            index = _header_index(path, number, cells, columns)
            continue
        if exact_fields is not None and len(cells) != exact_fields:
            raise TraceError(
                path, number, f"expected {exact_fields} fields, got {len(cells)}: {stripped!r}"
            )
        for option, position in index.items():
            if position >= len(cells):
                raise TraceError(
                    path,
                    number,
                    f"missing column: {option} is column {position} (0-based) but the line "
                    f"has {len(cells)} fields: {stripped!r}",
                )
        yield number, {option: cells[position] for option, position in index.items()}


def _header_index(
    path: Path, number: int, cells: list[str], columns: Mapping[str, str | int]
) -> dict[str, int]:
    """Column positions of ``columns`` in the header line ``cells``."""
    index: dict[str, int] = {}
    for option, column in columns.items():
        if isinstance(column, str):
            if column not in cells:
                raise TraceError(
                    path,
                    number,
                    f"unknown column name {column!r} ({option}); the header has {cells!r}",
                )
            index[option] = cells.index(column)
        elif column >= len(cells):
            raise TraceError(
                path,
                number,
                f"{option} {column} is out of range; the header has {len(cells)} columns {cells!r}",
            )
        else:
            index[option] = column
    return index


def cell_number(path: Path, number: int, cell: str, what: str) -> float:
    """A finite float parsed from a cell; ``TraceError`` otherwise."""
    try:
        value = float(cell)
    except ValueError:
        raise TraceError(path, number, f"{what} {cell!r} is not a number") from None
    if not math.isfinite(value):
        raise TraceError(path, number, f"{what} {cell!r} is not a finite number")
    return value


def cell_time_ns(path: Path, number: int, cell: str, unit: str) -> int:
    """A time cell in ``unit`` as integer ns, rounded to nearest."""
    ns = cell_number(path, number, cell, "time") * TIME_UNITS[unit]
    if abs(ns) > _MAX_ABS_NS:
        raise TraceError(path, number, f"time {cell!r} {unit} is out of range (more than 1e9 s)")
    return round(ns)


def sample_timeline(
    path: Path, times_ns: list[int], lines: list[int], cells: list[str], noun: str
) -> tuple[np.ndarray, int]:
    """Offsets of strictly increasing sample times from the first one, and the median interval.

    Raises ``TraceError`` when there is no sample, only one (the interval is then unknown) or
    a time that is not later than the one before.
    """
    if not times_ns:
        raise TraceError(path, None, f"no {noun}s (empty trace)")
    if len(times_ns) == 1:
        raise TraceError(
            path,
            lines[0],
            f"only one {noun}; at least two are needed to infer the {noun} interval",
        )
    times = np.asarray(times_ns, dtype=np.int64)
    intervals = np.diff(times)
    backwards = np.flatnonzero(intervals <= 0)
    if backwards.size:
        k = int(backwards[0]) + 1
        raise TraceError(
            path,
            lines[k],
            f"time {cells[k]!r} is not later than the previous {noun}'s time {cells[k - 1]!r} "
            f"(line {lines[k - 1]}); times must be strictly increasing",
        )
    return times - times[0], round(float(np.median(intervals)))

