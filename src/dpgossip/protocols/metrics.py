"""Accuracy metrics for eigenvector estimates."""

from __future__ import annotations

import numpy as np

from dpgossip.data.tall import singular_values
from dpgossip.errors import ConfigError
from dpgossip.protocols.checks import check_matrix, check_rank

__all__ = ["sin_angle", "subspace_distance", "captured_energy", "error_per_iteration"]


UNIT_TOL = 1e-6
"""How far from one the norm of a vector documented as a unit vector may be (``| ||v|| - 1 |``)."""


def _unit_columns(U: np.ndarray, field: str) -> None:
    """Raise unless every column of ``U`` (or ``U`` itself, a vector) has norm one."""
    norms = np.linalg.norm(U.reshape(U.shape[0], -1), axis=0)
    bad = np.abs(norms - 1.0) > UNIT_TOL
    if bad.any():
        k = int(np.argmax(bad))
        which = f"column {k} of {field}" if U.ndim == 2 else field
        raise ConfigError(f"{field}: {which} has norm {norms[k]:.6g}; it must be a unit vector "
                          f"(|norm - 1| <= {UNIT_TOL:g})", field=field)


def _same_length(n: int, q: np.ndarray, field: str, what: str) -> None:
    if q.shape[-1] != n:
        raise ConfigError(f"{field} must have {n} entries per vector ({what}), got shape {q.shape}",
                          field=field)


def sin_angle(v: np.ndarray, q: np.ndarray) -> float:
    """``sin(v, q) = ||(I - v v^T) q|| / ||q||`` for a unit vector ``v`` (Eq. (37) of Campbell et al.).

    ``1`` when ``q = 0`` (no direction). Raises :class:`ConfigError` when ``v`` or ``q`` is not a
    finite vector, their lengths differ or ``v`` is not a unit vector.
    """
    v = check_matrix(v, "v", ndim=1)
    q = check_matrix(q, "q", ndim=1)
    _same_length(v.size, q, "q", "the length of v")
    _unit_columns(v, "v")
    return _sin_angle(v, q)


def _sin_angle(v: np.ndarray, q: np.ndarray) -> float:
    """:func:`sin_angle` on checked input."""
    nq = np.linalg.norm(q)
    if nq == 0:
        return 1.0
    resid = q - v * (v @ q)
    return float(min(np.linalg.norm(resid) / nq, 1.0))


def _nonzero_columns(U_hat: np.ndarray) -> np.ndarray:
    """``U_hat`` after checking that no column is zero (orthonormalising a zero column would invent
    a direction: the estimate of a run whose iterates underflowed)."""
    norms = np.linalg.norm(U_hat.reshape(U_hat.shape[0], -1), axis=0)
    if np.any(norms == 0):
        k = int(np.argmin(norms))
        raise ConfigError(f"U_hat: column {k} is zero, so it estimates no direction (a run whose "
                          "iterates underflowed? see its status)", field="U_hat")
    return U_hat


def _orth(A: np.ndarray) -> np.ndarray:
    Qm, _ = np.linalg.qr(np.asarray(A, dtype=float).reshape(A.shape[0], -1))
    return Qm


def subspace_distance(U: np.ndarray, U_hat: np.ndarray) -> float:
    """``||(I - U U^T) orth(U_hat)||_2``: sine of the largest principal angle between the subspaces.

    ``U`` must have orthonormal columns; ``U_hat`` is orthonormalised first (QR).
    """
    U = check_matrix(U, "U", ndim=np.ndim(U) if np.ndim(U) in (1, 2) else 2)
    U = U.reshape(U.shape[0], -1)
    U_hat = check_matrix(U_hat, "U_hat", ndim=np.ndim(U_hat) if np.ndim(U_hat) in (1, 2) else 2)
    if U_hat.shape[0] != U.shape[0]:
        raise ConfigError(f"U_hat must have {U.shape[0]} rows (as U), got shape {U_hat.shape}",
                          field="U_hat")
    gram = U.T @ U
    if np.max(np.abs(gram - np.eye(gram.shape[0]))) > UNIT_TOL:
        raise ConfigError("U must have orthonormal columns (U^T U = I to 1e-6)", field="U")
    Qh = _orth(_nonzero_columns(U_hat))
    resid = Qh - U @ (U.T @ Qh)
    return float(min(np.linalg.norm(resid, 2), 1.0))


def captured_energy(X: np.ndarray, U_hat: np.ndarray, r: int | None = None) -> float:
    """Share of the best rank-r energy captured (<= 1).

    ``||X^T orth(U_hat)||_F^2 / sum_{i<=r} sigma_i(X)^2``.
    """
    X = check_matrix(X, "X")
    U_hat = check_matrix(U_hat, "U_hat", ndim=np.ndim(U_hat) if np.ndim(U_hat) in (1, 2) else 2)
    if U_hat.shape[0] != X.shape[0]:
        raise ConfigError(f"U_hat must have n = {X.shape[0]} rows (as X), got shape {U_hat.shape}",
                          field="U_hat")
    Qh = _orth(_nonzero_columns(U_hat))
    r = Qh.shape[1] if r is None else check_rank(r, min(X.shape), "r")
    s = singular_values(X)  # LAPACK, or blocked for a tall X (dpgossip.data.tall)
    best = float(np.sum(s[:r] ** 2))
    return float(np.linalg.norm(X.T @ Qh) ** 2 / best) if best > 0 else 0.0


def error_per_iteration(iterates: np.ndarray, U: np.ndarray) -> np.ndarray:
    """``sin(u_l, q_l^(t))`` for every component ``l`` and iteration ``t``: ``(r, T + 1)``.

    ``iterates`` has shape ``(r, T + 1, n)``; ``U`` holds the true eigenvectors as columns.
    Raises :class:`ConfigError` on other shapes, non-finite entries (check the run's ``status``
    first) or columns of ``U`` that are not unit vectors.
    """
    iterates = check_matrix(iterates, "iterates", ndim=3)
    U = check_matrix(U, "U", ndim=2)
    r, T1, n = iterates.shape
    if U.shape[0] != n or U.shape[1] < r:
        raise ConfigError(f"U must be n x r' with n = {n} rows (the length of the iterates) and "
                          f"r' >= r = {r} columns, got shape {U.shape}", field="U")
    _unit_columns(U[:, :r], "U")
    out = np.empty((r, T1))
    for l in range(r):
        for t in range(T1):
            out[l, t] = _sin_angle(U[:, l], iterates[l, t])
    return out
