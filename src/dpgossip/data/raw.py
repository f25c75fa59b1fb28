"""A raw feature matrix before preprocessing and partitioning, with where it came from."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpgossip.errors import ConfigError

__all__ = ["RawData"]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class RawData:
    """A finite real matrix ``X`` (``n x d``, one sample per row) and its provenance.

    ``X`` is stored as a read-only ``float64`` copy. No norm constraint is imposed here; rows are
    brought into the unit ball by :func:`dpgossip.data.preprocess`.

    Raises
    ------
    ConfigError
        If ``X`` is not a non-empty 2-D array or has a NaN or infinite entry.
    """

    X: np.ndarray
    """Feature matrix, ``n x d`` (labels and targets already removed)."""
    name: str
    """Short name of the dataset (bundled name, ``"synthetic"`` or the file name)."""
    provenance: str
    """One line: origin and licence, or how the matrix was generated."""

    def __post_init__(self) -> None:
        X = np.array(self.X, dtype=float)
        if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
            raise ConfigError(f"data: {self.name!r} must be a non-empty 2-D matrix "
                              f"(rows x columns), got shape {X.shape}")
        bad = np.argwhere(~np.isfinite(X))
        if bad.size:
            i, j = (int(v) for v in bad[0])
            raise ConfigError(f"data: {self.name!r} has a non-finite entry {X[i, j]} at row {i}, "
                              f"column {j}; all entries must be finite numbers")
        X.setflags(write=False)
        object.__setattr__(self, "X", X)

    @property
    def n(self) -> int:
        """Number of rows (samples)."""
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        """Number of columns (features)."""
        return int(self.X.shape[1])

    def to_row(self) -> dict[str, object]:
        """Tidy summary row: dataset name, shape and provenance."""
        return {"dataset": self.name, "n": self.n, "d": self.d, "provenance": self.provenance}
