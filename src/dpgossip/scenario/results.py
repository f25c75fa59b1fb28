"""Results of one sweep point and their file, ``DIR/points/<hash>.json``.

A point file is written atomically when the point finishes, so a results folder always holds whole
points only; a rerun skips every point whose file exists and carries the point's hash. The rows are
stored after a JSON round trip (:func:`jsonable`), so rows read back from a file are equal to the rows of
a fresh run and the final CSV files do not depend on whether a point was resumed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpgossip.scenario.store import atomic_write_text

__all__ = ["PointResult", "POINT_FORMAT", "point_file", "read_point", "write_point", "read_point_json",
           "write_point_json", "jsonable", "point_from_json"]

POINT_FORMAT = "dpgossip-point/1"
"""Value of the ``format`` key of a point file."""


def _default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, tuple):
        return list(o)
    raise TypeError(f"value {o!r} of type {type(o).__name__} cannot be stored in a results table")


def jsonable(obj: Any) -> Any:
    """``obj`` after a JSON round trip: numpy scalars become Python numbers, tuples become lists.

    Floats round-trip exactly (``json`` writes ``repr``); NaN and infinities are kept.
    """
    return json.loads(json.dumps(obj, default=_default))


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class PointResult:
    """Every repeat of one sweep point: its tidy tables and how long it took.

    Attributes
    ----------
    index
        Position of the point in the sweep.
    key
        Hash of the point's resolved configuration (:func:`~dpgossip.scenario.expand.point_hash`).
    axes
        Axis values of the point (dotted paths).
    tables
        ``{"runs": rows, "iterations": rows, ...}``; rows are JSON-native dicts without the ``point``
        column (it is added when the folder's CSV files are assembled).
    seconds
        Wall-clock time of the point (timing only; not part of the results).
    resumed
        True when read back from a point file rather than computed in this run.
    """

    index: int
    key: str
    axes: dict[str, Any]
    tables: dict[str, list[dict[str, Any]]]
    seconds: float = 0.0
    resumed: bool = False

    @property
    def runs(self) -> list[dict[str, Any]]:
        """One row per repeat."""
        return self.tables.get("runs", [])

    def mean_error(self) -> float:
        """Mean final error over the repeats (for progress lines)."""
        errs = [float(r["error"]) for r in self.runs if r.get("error") is not None]
        return sum(errs) / len(errs) if errs else float("nan")

    def to_row(self) -> dict[str, Any]:
        """Timing row: point, hash, seconds, resumed."""
        return {
            "point": self.index,
            "hash": self.key,
            "seconds": round(self.seconds, 4),
            "resumed": self.resumed,
        }

    def to_json(self) -> dict[str, Any]:
        """Content of the point file."""
        return {
            "format": POINT_FORMAT,
            "hash": self.key,
            "index": self.index,
            "axes": self.axes,
            "seconds": self.seconds,
            "tables": self.tables,
        }


def point_file(out_dir: Path, key: str) -> Path:
    """``out_dir/points/<key>.json``."""
    return Path(out_dir) / "points" / f"{key}.json"


def write_point_json(out_dir: Path, key: str, content: Mapping[str, Any]) -> Path:
    """Write ``content`` as the point file of ``key`` (compact JSON), atomically; returns its path."""
    path = point_file(out_dir, key)
    atomic_write_text(path, json.dumps(content, default=_default, separators=(",", ":")) + "\n")
    return path


def read_point_json(out_dir: Path, key: str, fmt: str) -> Mapping[str, Any] | None:
    """The content of the point file of ``key`` when it parses, has format ``fmt`` and carries ``key``
    as its hash; else ``None`` (the point is computed again and the file replaced)."""
    try:
        data = json.loads(point_file(out_dir, key).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, Mapping) or data.get("format") != fmt or data.get("hash") != key:
        return None
    return data


def write_point(out_dir: Path, result: PointResult) -> Path:
    """Write a point file atomically; returns its path."""
    return write_point_json(out_dir, result.key, result.to_json())


def read_point(out_dir: Path, key: str, index: int) -> PointResult | None:
    """The stored result of the point with hash ``key``, or ``None`` if there is no valid file.

    A file that cannot be parsed, has another format or carries another hash is treated as absent (the
    point is recomputed and the file replaced).
    """
    return point_from_json(read_point_json(out_dir, key, POINT_FORMAT), key, index)


def point_from_json(data: Mapping[str, Any] | None, key: str, index: int) -> PointResult | None:
    """The :class:`PointResult` stored as ``data`` (the content of a point file, already checked for
    its format and hash), or ``None`` when it holds no ``runs`` table."""
    tables = None if data is None else data.get("tables")
    if data is None or not isinstance(tables, Mapping) or "runs" not in tables:
        return None
    return PointResult(
        index=index,
        key=key,
        axes=dict(data.get("axes") or {}),
        tables={str(k): list(v) for k, v in tables.items()},
        seconds=float(data.get("seconds") or 0.0),
        resumed=True,
    )
