"""Centralized references: the power method with deflation (Eqs. (7)-(10) of 001) and the exact SVD."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpgossip.data.tall import tall_r, use_tall
from dpgossip.errors import ConfigError

__all__ = ["centralized_power_method", "top_singular", "Spectrum"]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Spectrum:
    """Leading left singular vectors ``U`` (``n x r``) and singular values of ``X`` (exact SVD)."""

    U: np.ndarray
    singular_values: np.ndarray

    @property
    def eigenvalues(self) -> np.ndarray:
        """Eigenvalues ``lambda_i = sigma_i^2`` of ``X X^T``."""
        return self.singular_values**2


TALL_GAP = 1e-8
"""Smallest ``s_r / s_1`` for which a tall ``X`` gets ``u_j = X v_j / s_j`` (error about
``eps s_1 / s_j``)."""


def top_singular(X: np.ndarray, r: int) -> Spectrum:
    """The ``r`` leading left singular vectors of ``X`` (eigenvectors of ``X X^T``), signs fixed so that
    the largest-modulus entry of each is positive.

    Exact SVD (LAPACK); for a tall ``X`` (:func:`~dpgossip.data.tall.use_tall`: 131,072 rows or more) the
    singular values and right vectors ``v_j`` come from the SVD of its blocked R factor and
    ``u_j = X v_j / s_j``, unless ``s_r < TALL_GAP s_1`` (docs/scale.md).
    """
    X = np.asarray(X, dtype=float)
    U = None
    if use_tall(X):
        _, s, Vt = np.linalg.svd(tall_r(X))
        if s[r - 1] > TALL_GAP * s[0]:
            U = (X @ Vt[:r].T) / s[:r]
    if U is None:
        U, s, _ = np.linalg.svd(X, full_matrices=False)
        U = U[:, :r].copy()
    idx = np.argmax(np.abs(U), axis=0)
    U *= np.sign(U[idx, np.arange(U.shape[1])])
    return Spectrum(U=U, singular_values=s.copy())


def centralized_power_method(X: np.ndarray, q0: np.ndarray, iterations: int) -> np.ndarray:
    """Power method on ``X X^T`` with Hotelling deflation.

    ``q^(t+1) = X X^T q^(t) / ||X X^T q^(t)||`` (Eq. (7)); after ``T`` iterations component ``l`` is kept and
    ``A <- A - lambda_l q q^T`` with ``lambda_l = q^T A q`` (Eq. (10)).

    Parameters
    ----------
    X
        Data, ``n x d``.
    q0
        Initial vectors, ``(n,)`` or ``(n, r)`` (one column per component).
    iterations
        ``T >= 1``.

    Returns
    -------
    numpy.ndarray
        ``(n, r)`` unit vectors.
    """
    if iterations < 1:
        raise ConfigError(f"iterations must be >= 1, got {iterations!r}")
    X = np.asarray(X, dtype=float)
    q0 = np.asarray(q0, dtype=float).reshape(X.shape[0], -1)
    A = X @ X.T
    out = np.empty_like(q0)
    for l in range(q0.shape[1]):
        q = q0[:, l] / np.linalg.norm(q0[:, l])
        for _ in range(iterations):
            y = A @ q
            q = y / np.linalg.norm(y)
        out[:, l] = q
        A = A - float(q @ A @ q) * np.outer(q, q)
    return out
