"""QR factors and singular values of tall matrices (``n >> d``) by blocks of rows (TSQR).

LAPACK's Householder QR of an ``n x d`` matrix with ``d`` below its block size (32) is unblocked: each
of the ``d`` columns makes about three passes over the rest of the matrix, so with ``n = 5 * 10^6``,
``d = 20`` it streams some 25 GB through memory (15 to 30 s here; the SVD of such a matrix starts with
the same QR). The tall-skinny QR does the same work in blocks of :data:`CHUNK_ROWS` rows that fit in
the cache:

    A = [A_1; ...; A_k],   A_j = Q_j R_j,   [R_1; ...; R_k] = Q' R,   A = diag(Q_1, ..., Q_k) Q' R,

so ``R`` is the R factor of ``A`` and ``Q_j Q'_j`` (``Q'_j`` the ``j``-th ``d x d`` block of ``Q'``) its Q
factor's rows of block ``j``. Each step is a backward-stable Householder QR, so the factors are those of
``A`` to rounding (not bit for bit: the products are summed in another order). The singular values of
``A`` are those of ``R``, and its right singular vectors too.

Below :data:`TALL_FROM` rows callers keep the plain LAPACK call, so every result at the sizes of the
tests, the shipped scenarios and the documentation is unchanged bit for bit (docs/scale.md).
"""

from __future__ import annotations

import numpy as np

__all__ = ["TALL_FROM", "CHUNK_ROWS", "tall_r", "tall_qr", "use_tall", "singular_values"]

TALL_FROM = 1 << 17
"""Rows from which :func:`use_tall` says to use the blocked factorisations (131,072)."""
CHUNK_ROWS = 1 << 14
"""Rows per block."""


def use_tall(A: np.ndarray) -> bool:
    """Whether ``A`` (2-D) is tall enough for the blocked factorisations: ``n >= TALL_FROM`` and
    ``n >= 4 d`` (so that each block is tall too)."""
    n, d = A.shape
    return n >= TALL_FROM and n >= 4 * d and CHUNK_ROWS >= 4 * d


def _blocks(n: int) -> list[tuple[int, int]]:
    return [(a, min(a + CHUNK_ROWS, n)) for a in range(0, n, CHUNK_ROWS)]


def tall_r(A: np.ndarray) -> np.ndarray:
    """The ``d x d`` R factor of ``A = Q R`` (``n x d``, ``n >= d``), by blocks (module docstring)."""
    A = np.asarray(A, dtype=float)
    stack = np.vstack([np.linalg.qr(A[a:b], mode="r") for a, b in _blocks(A.shape[0])])
    return np.linalg.qr(stack, mode="r")


def tall_qr(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Reduced ``Q`` (``n x d``, orthonormal columns) and ``R`` (``d x d``) of ``A = Q R``, by blocks.

    Two passes over ``A``: the blocks' factors ``Q_j`` are recomputed in the second pass rather than
    kept, so the memory is ``Q`` itself plus one block.
    """
    A = np.asarray(A, dtype=float)
    n, d = A.shape
    blocks = _blocks(n)
    rs = [np.linalg.qr(A[a:b], mode="r") for a, b in blocks]
    Qs, R = np.linalg.qr(np.vstack(rs))               # [R_1; ...; R_k] = Q' R
    Q = np.empty((n, d))
    top = 0
    for (a, b), r in zip(blocks, rs, strict=True):    # the same LAPACK call: the same R_j as above
        rows = r.shape[0]
        np.matmul(np.linalg.qr(A[a:b])[0], Qs[top:top + rows], out=Q[a:b])
        top += rows
    return Q, R


def singular_values(A: np.ndarray) -> np.ndarray:
    """All ``min(n, d)`` singular values of ``A``, descending: those of :func:`tall_r` when
    :func:`use_tall`, else ``np.linalg.svd(A, compute_uv=False)``."""
    A = np.asarray(A, dtype=float)
    return np.linalg.svd(tall_r(A) if use_tall(A) else A, compute_uv=False)
