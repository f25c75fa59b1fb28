"""The three public datasets of the paper (Campbell et al., Section IV), shipped as package data.

The raw files are copied verbatim from the scikit-learn 1.9.1 wheel (see ``files/PROVENANCE.md``).
As in the paper, class labels and regression targets are dropped: only the feature matrix is
returned, unscaled. Preprocessing (standardising, scaling rows into the unit ball) is done by
:func:`dpgossip.data.preprocess`.
"""

from __future__ import annotations

import gzip
import io
from functools import cache
from importlib.resources import files
from typing import NamedTuple

import numpy as np

from dpgossip.data.raw import RawData
from dpgossip.errors import ConfigError, did_you_mean

__all__ = ["DATASETS", "load_bundled", "bundled_shape"]


class _Bundle(NamedTuple):
    file: str
    shape: tuple[int, int]
    """Shape of the feature matrix."""
    extra: int
    """Trailing label/target columns in the file, dropped."""
    provenance: str


_BUNDLES: dict[str, _Bundle] = {
    "wine": _Bundle(
        "wine_data.csv", (178, 13), 1,
        "UCI Machine Learning Repository, Wine (Aeberhard & Forina, 1992), doi:10.24432/C5PC7J; "
        "licence CC BY 4.0; file wine_data.csv from scikit-learn 1.9.1, class label dropped"),
    "breast_cancer": _Bundle(
        "breast_cancer.csv", (569, 30), 1,
        "UCI Machine Learning Repository, Breast Cancer Wisconsin (Diagnostic) (Wolberg, "
        "Mangasarian, Street & Street, 1993), doi:10.24432/C5DW2B; licence CC BY 4.0; file "
        "breast_cancer.csv from scikit-learn 1.9.1, label dropped"),
    "diabetes": _Bundle(
        "diabetes_data_raw.csv.gz", (442, 10), 0,
        "Efron, Hastie, Johnstone & Tibshirani, 'Least Angle Regression', Annals of Statistics "
        "2004; redistributed in scikit-learn 1.9.1 (BSD-3-Clause), file diabetes_data_raw.csv.gz "
        "(features only; the target is not used)"),
}

DATASETS: tuple[str, ...] = tuple(_BUNDLES)
"""Names accepted by :func:`load_bundled`."""


def bundled_shape(name: str) -> tuple[int, int]:
    """``(rows, columns)`` of a bundled dataset's feature matrix, without reading it."""
    return _BUNDLES[name].shape


def load_bundled(name: str) -> RawData:
    """Load a bundled dataset's feature matrix (labels and targets dropped).

    Parameters
    ----------
    name : str
        One of :data:`DATASETS`: ``"wine"`` (178 x 13), ``"breast_cancer"`` (569 x 30) or
        ``"diabetes"`` (442 x 10, the raw, unstandardised features age, sex, bmi, bp, s1..s6).

    Returns
    -------
    RawData
        ``X`` as ``float64`` exactly as stored in the file, ``name`` and a one-line
        ``provenance`` (origin and licence).

    Raises
    ------
    ConfigError
        If ``name`` is not a bundled dataset (the message lists them).
    """
    if not isinstance(name, str) or name not in _BUNDLES:
        hint = did_you_mean(name, DATASETS) if isinstance(name, str) else ""
        raise ConfigError(f"name: unknown bundled dataset {name!r}{hint}; "
                          f"known: {', '.join(DATASETS)}", field="name")
    bundle = _BUNDLES[name]
    return RawData(X=_read(name), name=name, provenance=bundle.provenance)


@cache
def _read(name: str) -> np.ndarray:
    """Parse a bundled file once; the result is read-only so it can be shared."""
    bundle = _BUNDLES[name]
    raw = (files("dpgossip.data") / "files" / bundle.file).read_bytes()
    n, d = bundle.shape
    if bundle.file.endswith(".gz"):
        # Space separated, no header, the d features only: the file holds no target column
        # (scikit-learn ships the target in a separate file, which is not bundled).
        table = np.loadtxt(io.StringIO(gzip.decompress(raw).decode("ascii")), ndmin=2)
    else:
        # Header "n,d,label names...", then d features and the label on every line.
        text = raw.decode("ascii")
        header = text.split("\n", 1)[0].split(",")
        if (int(header[0]), int(header[1])) != (n, d):
            raise RuntimeError(f"bundled file {bundle.file} has header {header[:2]}, "
                               f"expected {n},{d}")
        table = np.loadtxt(io.StringIO(text), delimiter=",", skiprows=1, ndmin=2)
    if table.shape != (n, d + bundle.extra):
        raise RuntimeError(f"bundled file {bundle.file} has shape {table.shape}, "
                           f"expected {(n, d + bundle.extra)}")
    X = np.ascontiguousarray(table[:, :d], dtype=float)
    X.setflags(write=False)
    return X
