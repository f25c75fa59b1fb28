"""Centralized references: the power method with deflation (Eqs. (7)-(10) of Campbell et al.) and
the exact SVD."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpgossip.data.tall import tall_r, use_tall
from dpgossip.errors import ConfigError, check_int
from dpgossip.protocols.checks import check_matrix, check_rank

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

    Raises
    ------
    ConfigError
        When ``X`` is not a finite non-empty 2-D real array or ``r`` not an integer in
        ``[1, min(n, d)]``.
    """
    X = check_matrix(X, "X")
    r = check_rank(r, min(X.shape), "r")
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
    iterations = check_int(iterations, "iterations", 1)
    X = check_matrix(X, "X")
    q0 = check_matrix(q0, "q0", ndim=np.ndim(q0) if np.ndim(q0) in (1, 2) else 2)
    if q0.shape[0] != X.shape[0]:
        raise ConfigError(f"q0 must have n = {X.shape[0]} rows (one per row of X), got shape "
                          f"{q0.shape}", field="q0")
    q0 = q0.reshape(X.shape[0], -1)
    if np.any(np.linalg.norm(q0, axis=0) == 0):
        raise ConfigError("q0: a starting vector is zero; the power method needs a nonzero start",
                          field="q0")
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
