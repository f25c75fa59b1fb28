"""Accuracy metrics for eigenvector estimates."""

from __future__ import annotations

import numpy as np

from dpgossip.data.tall import singular_values

__all__ = ["sin_angle", "subspace_distance", "captured_energy", "error_per_iteration"]


def sin_angle(v: np.ndarray, q: np.ndarray) -> float:
    """``sin(v, q) = ||(I - v v^T) q|| / ||q||`` for a unit vector ``v`` (Eq. (37) of 001)."""
    v = np.asarray(v, dtype=float)
    q = np.asarray(q, dtype=float)
    nq = np.linalg.norm(q)
    if nq == 0:
        return 1.0
    resid = q - v * (v @ q)
    return float(min(np.linalg.norm(resid) / nq, 1.0))


def _orth(A: np.ndarray) -> np.ndarray:
    Qm, _ = np.linalg.qr(np.asarray(A, dtype=float).reshape(A.shape[0], -1))
    return Qm


def subspace_distance(U: np.ndarray, U_hat: np.ndarray) -> float:
    """``||(I - U U^T) orth(U_hat)||_2``: sine of the largest principal angle between the subspaces.

    ``U`` must have orthonormal columns; ``U_hat`` is orthonormalised first (QR).
    """
    U = np.asarray(U, dtype=float).reshape(U.shape[0], -1)
    Qh = _orth(U_hat)
    resid = Qh - U @ (U.T @ Qh)
    return float(min(np.linalg.norm(resid, 2), 1.0))


def captured_energy(X: np.ndarray, U_hat: np.ndarray, r: int | None = None) -> float:
    """Share of the best rank-r energy captured (<= 1).

    ``||X^T orth(U_hat)||_F^2 / sum_{i<=r} sigma_i(X)^2``.
    """
    Qh = _orth(U_hat)
    r = Qh.shape[1] if r is None else r
    s = singular_values(X)  # LAPACK, or blocked for a tall X (dpgossip.data.tall)
    best = float(np.sum(s[:r] ** 2))
    return float(np.linalg.norm(X.T @ Qh) ** 2 / best) if best > 0 else 0.0


def error_per_iteration(iterates: np.ndarray, U: np.ndarray) -> np.ndarray:
    """``sin(u_l, q_l^(t))`` for every component ``l`` and iteration ``t``: ``(r, T + 1)``.

    ``iterates`` has shape ``(r, T + 1, n)``; ``U`` holds the true eigenvectors as columns.
    """
    r, T1, _ = iterates.shape
    out = np.empty((r, T1))
    for l in range(r):
        for t in range(T1):
            out[l, t] = sin_angle(U[:, l], iterates[l, t])
    return out
