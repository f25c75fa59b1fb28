"""Reading a results folder's files with checks: a file that is cut, edited or from another folder is
an error naming the file, the line and what is wrong, never a traceback or a silently wrong plot.

Every file dpgossip writes is written whole (atomically) and ends with a newline; a CSV row has as many
fields as its header. :func:`read_table` refuses a CSV that breaks either rule (a file cut mid-row), and
:func:`read_record` a JSON file that does not parse or is not a table. :func:`check_complete` checks
that a run folder holds every repeat of every point: ``runs.csv`` has ``repeats`` rows per point and
``iterations.csv`` the same iterations for every repeat of a point and component (a file cut at a row
boundary would otherwise average fewer repeats under a "mean over R repeats" title).

Errors are :class:`~dpgossip.errors.ConfigError` (the command exits 2); a file that cannot be read at
all is an ``OSError`` (exit 1).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from dpgossip.errors import ConfigError
from dpgossip.scenario.store import NON_FINITE

__all__ = ["read_table", "read_record", "check_complete", "RERUN"]

RERUN = ("run the command that wrote the folder again (dpgossip run or dpgossip audit, same scenario "
         "and --out): it keeps the finished points and rewrites the tables")
"""What to do about a damaged file of a results folder."""


def _damaged(path: Path, what: str) -> ConfigError:
    return ConfigError(f"{path}: {what}; the file is cut or was edited; {RERUN}", field=str(path))


def read_table(path: Path) -> list[dict[str, str]]:
    """Rows of a CSV written by :func:`~dpgossip.scenario.store.write_csv` (values as strings), checked.

    Raises
    ------
    ConfigError
        The file is empty, does not end with a newline (cut), or a row has more or fewer fields than
        the header (naming the line).
    """
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        raise _damaged(path, "the file is empty (not even a header)")
    if not text.endswith("\n"):
        raise _damaged(path, "the last line has no end (the file stops in the middle of a row)")
    reader = csv.reader(text.splitlines())
    header = next(reader)
    rows = []
    for line, fields in enumerate(reader, start=2):
        if len(fields) != len(header):
            raise _damaged(path, f"line {line} has {len(fields)} fields, the header has "
                           f"{len(header)}")
        rows.append(dict(zip(header, fields, strict=True)))
    return rows


def read_record(path: Path, keys: Iterable[str] = ()) -> dict[str, Any]:
    """A JSON table (``"inf"``/``"nan"`` strings as floats at the top level), checked.

    Raises
    ------
    ConfigError
        The file is not valid JSON (naming the line and column), not a table, or lacks one of ``keys``.
    """
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise _damaged(path, f"not valid JSON ({exc.msg} at line {exc.lineno}, column "
                       f"{exc.colno})") from None
    except UnicodeDecodeError:
        raise _damaged(path, "not UTF-8 text") from None
    if not isinstance(record, dict):
        raise _damaged(path, f"expected a JSON table, got {type(record).__name__}")
    missing = [k for k in keys if k not in record]
    if missing:
        raise _damaged(path, f"the key {missing[0]!r} is missing")
    return {k: NON_FINITE.get(v, v) if isinstance(v, str) else v for k, v in record.items()}


def _int(value: Any, path: Path, column: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise _damaged(path, f"column {column!r} holds {value!r}, not an integer") from None


def check_complete(folder: Path, points: Sequence[Mapping[str, Any]],
                   runs: Sequence[Mapping[str, Any]], iterations: Sequence[Mapping[str, Any]],
                   repeats: int) -> None:
    """Check that ``runs.csv`` and ``iterations.csv`` hold every repeat of every point of
    ``points.csv`` (module docstring).

    Raises
    ------
    ConfigError
        Naming the file, the point and what is missing.
    """
    indices = {_int(p.get("point"), folder / "points.csv", "point") for p in points}
    per_point: dict[int, set[int]] = {}
    for r in runs:
        per_point.setdefault(_int(r.get("point"), folder / "runs.csv", "point"), set()).add(
            _int(r.get("repeat"), folder / "runs.csv", "repeat"))
    want = set(range(repeats))
    for p in sorted(indices):
        if per_point.get(p, set()) != want:
            raise _damaged(folder / "runs.csv", f"point {p} has the repeats "
                           f"{sorted(per_point.get(p, set()))}, expected 0..{repeats - 1}")
    counts: dict[tuple[int, Any], dict[int, int]] = {}
    path = folder / "iterations.csv"
    for r in iterations:
        key = (_int(r.get("point"), path, "point"), r.get("component"))
        by_repeat = counts.setdefault(key, {})
        rep = _int(r.get("repeat"), path, "repeat")
        by_repeat[rep] = by_repeat.get(rep, 0) + 1
    for (p, comp), by_repeat in counts.items():
        if set(by_repeat) != want or len(set(by_repeat.values())) != 1:
            have = ", ".join(f"repeat {k}: {v}" for k, v in sorted(by_repeat.items()))
            raise _damaged(path, f"point {p}, component {comp} has unequal or missing repeats "
                           f"({have}; expected {repeats} repeats with the same iterations)")
    missing = sorted(indices - {p for p, _ in counts})
    if missing:
        raise _damaged(path, f"point {missing[0]} has no rows")
