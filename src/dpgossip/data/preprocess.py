r"""Public preprocessing: centre or standardise columns, then bring every row into the unit ball.

The privacy analysis of Campbell et al. (Section IV-B) needs every row ``x_j`` of ``X`` to satisfy
``||x_j||_2 <= 1``; the paper preprocessed each dataset "so that every point sat within, or on the
surface of, the unit ball".

All statistics used here (column means and standard deviations, the largest row norm) are
*global* statistics of ``X``. As in the paper, preprocessing is treated as public and is **not**
part of the private mechanism: its privacy cost is not accounted for.
"""

from __future__ import annotations

import numpy as np

from dpgossip.arrays import describe
from dpgossip.errors import ConfigError, did_you_mean

__all__ = ["SCALES", "NORM_TOLERANCE", "preprocess"]

SCALES: tuple[str, ...] = ("max_norm", "unit_rows", "none")
"""Accepted values of ``scale``."""

NORM_TOLERANCE: float = 1e-12
"""A row norm up to ``1 + NORM_TOLERANCE`` counts as inside the unit ball."""


def _checked_matrix(X: np.ndarray, *, center: bool, standardize: bool, scale: str) -> np.ndarray:
    """The options checked, and ``X`` as a new finite 2-D ``float64`` array."""
    if not isinstance(scale, str) or scale not in SCALES:
        hint = did_you_mean(scale, SCALES) if isinstance(scale, str) else ""
        raise ConfigError(f"scale must be one of {list(SCALES)}, got {scale!r}{hint}",
                          field="scale")
    for field, flag in (("center", center), ("standardize", standardize)):
        if not isinstance(flag, (bool, np.bool_)):
            raise ConfigError(f"{field} must be true or false, got {flag!r}", field=field)
    Y = np.asarray(X)
    if Y.dtype.kind not in "biuf":
        raise ConfigError(f"data must be a matrix of real numbers, got {describe(X)}", field="data")
    Y = np.array(Y, dtype=float)
    if Y.ndim != 2 or Y.size == 0:
        raise ConfigError(f"data: expected a non-empty 2-D matrix, got shape {Y.shape}")
    if not np.all(np.isfinite(Y)):
        i, j = (int(v) for v in np.argwhere(~np.isfinite(Y))[0])
        raise ConfigError(f"data: entry at row {i}, column {j} is {Y[i, j]}; "
                          "all entries must be finite")
    return Y


def _scale_rows(Y: np.ndarray, scale: str, *, zeroed: bool, flags: dict[str, bool]) -> np.ndarray:
    """Step 3 of :func:`preprocess`, in place; ``zeroed`` says centring made every row zero."""
    norms = np.linalg.norm(Y, axis=1)
    if scale == "max_norm":
        top = float(norms.max())
        if top == 0.0:
            if zeroed:
                n = Y.shape[0]
                on = [k for k, v in flags.items() if v]
                raise ConfigError(
                    f"data: every column is constant over the {n} row{'s' if n != 1 else ''} of "
                    f"the data, so centring ({' and '.join(f'{k} = true' for k in on)}) makes "
                    "every row zero and scale = 'max_norm' cannot scale it; give more "
                    f"(varied) rows, or set {' and '.join(f'{k} = false' for k in on)}",
                    field="scale")
            raise ConfigError("scale = 'max_norm' cannot scale a matrix whose rows are all "
                              "zero; the data has no non-zero entry", field="scale")
        Y /= top
    elif scale == "unit_rows":
        nonzero = norms > 0
        Y[nonzero] /= norms[nonzero, None]
    else:
        over = np.flatnonzero(norms > 1.0 + NORM_TOLERANCE)
        if over.size:
            i = int(over[0])
            raise ConfigError(f"scale = 'none': row {i} has norm {norms[i]:.6g} > 1 "
                              f"({over.size} row(s) outside the unit ball); use scale "
                              "'max_norm' or 'unit_rows', or rescale the data", field="scale")
    return Y


def preprocess(X: np.ndarray, *, center: bool = False, standardize: bool = False,
               scale: str = "max_norm") -> np.ndarray:
    r"""Transform ``X`` column-wise, then scale its rows into the unit ball.

    Steps, in order (``mu_c`` and ``sd_c`` are the mean and population standard deviation,
    ``ddof = 0``, of column ``c``):

    1. ``center``: :math:`x_{jc} \leftarrow x_{jc} - \mu_c`.
    2. ``standardize`` (implies centring): :math:`x_{jc} \leftarrow (x_{jc} - \mu_c)/\sigma_c`
       with :math:`\sigma_c = \mathrm{sd}_c`, or :math:`\sigma_c = 1` for a constant column
       (which becomes exactly zero).
    3. ``scale``:

       * ``"max_norm"``: :math:`X \leftarrow X / \max_j \|x_j\|_2`; every row is in the unit
         ball, the longest on the sphere, and ratios between entries are preserved (the
         singular values are all divided by the same factor).
       * ``"unit_rows"``: :math:`x_j \leftarrow x_j / \|x_j\|_2` (zero rows stay zero).
       * ``"none"``: no scaling; every row must already satisfy
         :math:`\|x_j\|_2 \le 1 + 10^{-12}`.

    Parameters
    ----------
    X : array_like
        Finite real matrix, ``n x d``. It is not modified.
    center, standardize : bool
        Column transformations.
    scale : {"max_norm", "unit_rows", "none"}
        Row scaling.

    Returns
    -------
    numpy.ndarray
        A new ``float64`` array of the same shape.

    Raises
    ------
    ConfigError
        For a bad option, a matrix that is not 2-D and finite, an all-zero matrix with
        ``"max_norm"``, or (``"none"``) the first row whose norm exceeds one, with its index
        (from 0) and norm.
    """
    Y = _checked_matrix(X, center=center, standardize=standardize, scale=scale)
    constant = Y.max(axis=0) == Y.min(axis=0)
    if center or standardize:
        mean = Y.mean(axis=0)
        mean[constant] = Y[0, constant]  # constant columns become exactly zero
        Y -= mean
        if standardize:
            sd = Y.std(axis=0)
            sd[constant] = 1.0
            Y /= sd

    return _scale_rows(Y, scale, zeroed=(center or standardize) and bool(constant.all()),
                       flags={"center": center, "standardize": standardize})
