"""The results folder: atomic writes of tidy CSV and JSON files."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["atomic_write_text", "write_csv", "write_json", "read_csv", "file_mode", "json_safe",
           "read_json", "read_keyed", "NON_FINITE"]

NON_FINITE: dict[str, float] = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}
"""How :func:`json_safe` writes non-finite numbers (JSON has none): as these strings."""


def file_mode() -> int:
    """Permissions of a newly created file under this process's umask (``0o666 & ~umask``, usually
    ``0o644``). :func:`tempfile.mkstemp` creates ``0o600`` files, which others on a shared machine could
    not read; every atomic write sets this mode before the rename."""
    return 0o666 & ~_umask()


def _umask() -> int:
    try:  # Linux: read it without changing it (os.umask would set it briefly for every thread)
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file in the same folder and ``os.replace``: a reader (or
    an interrupted run) never sees a half-written file. The file gets the usual mode of a new file
    (:func:`file_mode`), like the plots."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, file_mode())
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_csv(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    """Tidy CSV: the union of the rows' keys as columns, in first-seen order."""
    rows = list(rows)
    cols: list[str] = []
    for r in rows:
        cols.extend(k for k in r if k not in cols)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: _fmt(v) for k, v in r.items()})
    atomic_write_text(path, buf.getvalue())


def _fmt(v: Any) -> Any:
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (list, tuple, dict)):
        return json.dumps(v, default=str)
    return v


def write_json(path: Path, obj: Any) -> None:
    """Pretty JSON, atomically."""
    atomic_write_text(
        path, json.dumps(obj, indent=2, sort_keys=False, default=_json_default) + "\n"
    )


def json_safe(obj: Any) -> Any:
    """``obj`` with every non-finite float replaced by ``"inf"``, ``"-inf"`` or ``"nan"``, so that
    :func:`write_json` writes strict JSON (Python's ``json`` would write the non-standard ``Infinity``);
    :func:`read_json` turns them back into floats."""
    import numpy as np

    if isinstance(obj, (float, np.floating)):
        v = float(obj)
        if math.isfinite(v):
            return v
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(obj, Mapping):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return json_safe(obj.tolist())
    return obj


def read_json(path: Path) -> Any:
    """Read a JSON file written with :func:`json_safe` values: ``"inf"``, ``"-inf"`` and ``"nan"`` become
    floats again (and a bare ``Infinity``/``NaN`` of older files is accepted)."""

    def restore(value: Any) -> Any:
        if isinstance(value, str) and value in NON_FINITE:
            return NON_FINITE[value]
        if isinstance(value, list):
            return [restore(v) for v in value]
        if isinstance(value, dict):
            return {k: restore(v) for k, v in value.items()}
        return value

    with open(path, encoding="utf-8") as fh:
        return restore(json.load(fh))


def read_keyed(path: Path, key: str) -> dict[str, Any] | None:
    """The JSON record at ``path`` if it can be read and its ``key`` is ``key`` (a stored part of a run
    to resume from), else ``None`` (absent, damaged or of another configuration: computed again)."""
    try:
        record = read_json(path)
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("key") == key else None


def _json_default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)


def read_csv(path: Path) -> list[dict[str, str]]:
    """Rows of a CSV written by :func:`write_csv` (values as strings)."""
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))
