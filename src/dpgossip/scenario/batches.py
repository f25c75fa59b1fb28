"""Finished points saved in batches: one atomic file (one ``fsync``) for many points.

A sweep of small points spends more time making each point durable (write a file, ``fsync`` it,
rename it: a few milliseconds) than computing it. :class:`BatchWriter` collects finished points and
writes them together as ``DIR/points/batch-<id>.json``:

.. code-block:: text

    {"format": "dpgossip-batch/1", "points": [<point file content>, ...]}

where each entry is exactly what a single point file holds
(:meth:`~dpgossip.scenario.results.PointResult.to_json`: its own format and hash). The file is written
to a temporary name, ``fsync``-ed and renamed (:func:`~dpgossip.scenario.store.atomic_write_text`), so a
batch is on disk entirely or not at all: a run killed while writing it leaves the previous batches
intact and only a stray ``.tmp`` file, and the points of the lost batch are computed again by the next
run. Points are reported as finished (progress lines) only once their batch is written.

When to write (:meth:`BatchWriter.due`): as soon as the oldest unsaved point has waited
:data:`FLUSH_SECONDS`, *counting the wait until the next point arrives* (estimated by the last gap
between arrivals), or when :data:`MAX_BATCH` points wait. So points that take a second or more are
saved one by one, as before, and fast points are saved about once a second: a ``kill -9`` loses at
most about :data:`FLUSH_SECONDS` of computation. SIGINT and SIGTERM lose nothing: the caller writes the
pending batch on the way out (:meth:`BatchWriter.flush` in a ``finally``).

Reading (:func:`saved_points`) accepts both layouts: batch files and the single point files written
by earlier versions (``DIR/points/<hash>.json``), so an older results folder resumes. An entry whose
format or hash does not match, or a batch file that does not parse, is ignored: those points are
recomputed. The batch's id hashes the keys it holds, so a batch rewritten with the same points
replaces its file with the same content.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpgossip.scenario.results import (
    POINT_FORMAT,
    PointResult,
    point_from_json,
    read_point,
    write_point_json,
)
from dpgossip.scenario.store import atomic_write_text

__all__ = ["BATCH_FORMAT", "FLUSH_SECONDS", "MAX_BATCH", "BatchWriter", "SavedBatch", "batch_file",
           "write_batch", "saved_points", "stored_point", "saved_keys"]

BATCH_FORMAT = "dpgossip-batch/1"
"""Value of the ``format`` key of a batch file."""

FLUSH_SECONDS = 1.0
"""Longest a finished point waits (as estimated when it arrives) before its batch is written."""

MAX_BATCH = 2000
"""Most points in one batch file."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SavedBatch:
    """One batch written to disk: its file and the points in it (in arrival order)."""

    path: Path
    points: tuple[PointResult, ...]

    def to_row(self) -> dict[str, Any]:
        """``file``, ``points`` (count) and ``keys`` (comma-separated)."""
        return {"file": self.path.name, "points": len(self.points),
                "keys": ",".join(p.key for p in self.points)}


def batch_file(out_dir: Path, keys: Iterable[str]) -> Path:
    """``out_dir/points/batch-<id>.json``, ``id`` the first 16 hex digits of the SHA-256 of the sorted
    keys (one per line)."""
    digest = hashlib.sha256("\n".join(sorted(keys)).encode()).hexdigest()[:16]
    return Path(out_dir) / "points" / f"batch-{digest}.json"


def write_batch(out_dir: Path, results: Iterable[PointResult]) -> SavedBatch:
    """Write ``results`` as one batch file, atomically (one ``fsync``). A single point is written as
    a plain point file (the layout of earlier versions, which they can read)."""
    points = tuple(results)
    if len(points) == 1:
        only = points[0]
        return SavedBatch(path=write_point_json(out_dir, only.key, only.to_json()), points=points)
    path = batch_file(out_dir, (p.key for p in points))
    content = {"format": BATCH_FORMAT, "points": [p.to_json() for p in points]}
    atomic_write_text(path, json.dumps(content, separators=(",", ":"), default=_default) + "\n")
    return SavedBatch(path=path, points=points)


def _default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    raise TypeError(f"value {o!r} of type {type(o).__name__} cannot be stored in a results table")


def saved_points(out_dir: Path) -> dict[str, Mapping[str, Any]]:
    """Every valid point entry of the batch files in ``out_dir/points``, by key (the point file
    content; entries with another format or without a hash are skipped, unreadable files too)."""
    found: dict[str, Mapping[str, Any]] = {}
    folder = Path(out_dir) / "points"
    if not folder.is_dir():
        return found
    for path in sorted(folder.glob("batch-*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(data, Mapping) or data.get("format") != BATCH_FORMAT:
            continue
        for entry in data.get("points") or ():
            if isinstance(entry, Mapping) and entry.get("format") == POINT_FORMAT \
                    and isinstance(entry.get("hash"), str):
                found[entry["hash"]] = entry
    return found


def stored_point(out_dir: Path, key: str, index: int,
                 batches: Mapping[str, Mapping[str, Any]]) -> PointResult | None:
    """The saved result of the point ``key``: its single point file, else its entry in ``batches``
    (from :func:`saved_points`); ``None`` when neither holds a valid one."""
    found = read_point(out_dir, key, index)
    if found is None and key in batches:
        found = point_from_json(batches[key], key, index)
    return found


def saved_keys(out_dir: Path) -> set[str]:
    """Keys of every point saved in ``out_dir/points`` (single point files and batch entries whose
    format and hash are valid)."""
    keys = set(saved_points(out_dir))
    folder = Path(out_dir) / "points"
    for path in folder.glob("*.json") if folder.is_dir() else ():
        if not path.name.startswith("batch-") and read_point(out_dir, path.stem, 0) is not None:
            keys.add(path.stem)
    return keys


class BatchWriter:
    """Collects finished points and writes them in batches (see the module docstring).

    Parameters
    ----------
    out_dir
        The results folder.
    flush_seconds, max_batch
        When a batch is due (default :data:`FLUSH_SECONDS`, :data:`MAX_BATCH`).
    clock
        Seconds, monotonic (tests pass a fake clock).
    """

    def __init__(self, out_dir: Path, *, flush_seconds: float | None = None,
                 max_batch: int | None = None, clock: Any = time.monotonic) -> None:
        self.out_dir = Path(out_dir)
        self.flush_seconds = FLUSH_SECONDS if flush_seconds is None else float(flush_seconds)
        self.max_batch = MAX_BATCH if max_batch is None else int(max_batch)
        self._clock = clock
        self._pending: list[PointResult] = []
        self._oldest = 0.0
        self._last = clock()
        self._gap = 0.0
        self.batches: list[SavedBatch] = []

    @property
    def pending(self) -> int:
        """Points finished but not yet written."""
        return len(self._pending)

    def add(self, result: PointResult) -> list[PointResult]:
        """Take one finished point; returns the points written now (empty when the batch is not due)."""
        now = self._clock()
        self._gap, self._last = now - self._last, now
        if not self._pending:
            self._oldest = now
        self._pending.append(result)
        return self.flush() if self.due(now) else []

    def due(self, now: float) -> bool:
        """Whether the pending points must be written now: the oldest would wait ``flush_seconds``
        or more by the time the next point arrives (``now - oldest + last gap``), or the batch is
        full."""
        if not self._pending:
            return False
        waited = now - self._oldest + self._gap
        return waited >= self.flush_seconds or len(self._pending) >= self.max_batch

    def flush(self) -> list[PointResult]:
        """Write the pending points (one atomic file); returns them."""
        if not self._pending:
            return []
        points = list(self._pending)
        self.batches.append(write_batch(self.out_dir, points))  # on an error they stay pending
        self._pending.clear()
        return points
