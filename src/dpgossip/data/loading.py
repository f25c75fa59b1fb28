"""Load a user's data matrix from a ``.csv`` or ``.npy`` file.

Every column of the file is taken as a feature: a label or target column must be removed
beforehand (the bundled datasets drop theirs, see :mod:`dpgossip.data.bundled`).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from dpgossip.data.raw import RawData
from dpgossip.errors import ConfigError

__all__ = ["MATRIX_SUFFIXES", "load_matrix"]

MATRIX_SUFFIXES: tuple[str, ...] = (".csv", ".npy")
"""File extensions accepted by :func:`load_matrix` (case-insensitive)."""


def load_matrix(path: str | os.PathLike[str]) -> RawData:
    """Read a numeric matrix (one sample per row) from a file.

    Parameters
    ----------
    path : str or os.PathLike
        A ``.csv`` file: comma separated numbers, one row per line; blank lines are ignored and
        an optional header line is detected automatically (the first non-blank line is skipped
        if any of its non-empty cells is not a number). Or a ``.npy`` file holding a 2-D real array
        (saved with ``numpy.save``; pickled objects are refused).

    Returns
    -------
    RawData
        ``X`` as ``float64``, ``name`` the file name and ``provenance`` the resolved path.

    Raises
    ------
    ConfigError
        Naming ``data.source`` when the file is missing, has another extension, has a
        non-numeric cell (with its line and column, both counted from 1), ragged rows, a NaN
        or infinite entry, no data rows, or (``.npy``) is not a 2-D real array.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise ConfigError(f"path must be a file path, got {path!r}", field="path")
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in MATRIX_SUFFIXES:
        raise ConfigError(f"path: {str(p)!r} has extension {p.suffix!r}; allowed: "
                          f"{', '.join(MATRIX_SUFFIXES)}", field="path")
    if not p.exists():
        raise ConfigError(f"path: file {str(p)!r} does not exist", field="path")
    if not p.is_file():
        raise ConfigError(f"path: {str(p)!r} is not a file", field="path")
    X = _read_csv(p) if suffix == ".csv" else _read_npy(p)
    return RawData(X=X, name=p.name, provenance=f"user file {p.resolve()}")


def _read_csv(p: Path) -> np.ndarray:
    try:
        text = p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"path: {str(p)!r} is not a UTF-8 text file ({exc.reason} at "
                          f"byte {exc.start}); expected comma separated numbers",
                          field="path") from None
    lines = [(no, line) for no, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if lines and any(c.strip() and not _is_number(c) for c in lines[0][1].split(",")):
        lines = lines[1:]  # header line: a non-empty, non-numeric cell
    if not lines:
        raise ConfigError(f"path: {str(p)!r} has no data rows; expected comma separated "
                          "numbers, one row per line", field="path")
    width = len(lines[0][1].split(","))
    rows: list[list[float]] = []
    for no, line in lines:
        cells = line.split(",")
        if len(cells) != width:
            raise ConfigError(f"path: {str(p)!r} line {no} has {len(cells)} columns, "
                              f"expected {width} (as on line {lines[0][0]})", field="path")
        row = []
        for col, cell in enumerate(cells, start=1):
            try:
                value = float(cell)
            except ValueError:
                hint = (" (cells must be separated by commas)"
                        if any(sep in cell.strip() for sep in ";\t ") else "")
                raise ConfigError(f"path: {str(p)!r} line {no}, column {col}: cell "
                                  f"{cell.strip()!r} is not a number{hint}", field="path") from None
            if not np.isfinite(value):
                raise ConfigError(f"path: {str(p)!r} line {no}, column {col}: value "
                                  f"{cell.strip()!r} is not finite; NaN and infinite entries "
                                  "are not allowed", field="path")
            row.append(value)
        rows.append(row)
    return np.array(rows, dtype=float)


def _read_npy(p: Path) -> np.ndarray:
    try:
        A = np.load(p, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:  # EOFError: an empty file
        raise ConfigError(f"path: {str(p)!r} is not a readable .npy array of numbers "
                          f"({exc})", field="path") from None
    if not isinstance(A, np.ndarray) or A.ndim != 2:
        shape = getattr(A, "shape", None)
        raise ConfigError(f"path: {str(p)!r} holds an array of shape {shape}; expected a "
                          "2-D array (rows x columns)", field="path")
    if not (np.issubdtype(A.dtype, np.integer) or np.issubdtype(A.dtype, np.floating)
            or A.dtype == np.bool_):
        raise ConfigError(f"path: {str(p)!r} holds an array of dtype {A.dtype}; expected "
                          "real numbers (integer or floating point)", field="path")
    X = np.asarray(A, dtype=float)
    bad = np.argwhere(~np.isfinite(X))
    if bad.size:
        i, j = (int(v) for v in bad[0])
        raise ConfigError(f"path: {str(p)!r} row {i}, column {j} (counted from 0) is "
                          f"{X[i, j]}; NaN and infinite entries are not allowed", field="path")
    return X


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True
