"""The two block products of a row-partitioned matrix, in bounded memory and bit for bit as the plain
numpy expressions compute them.

With ``X`` split into blocks ``X_1..X_m`` (agent ``i`` holds rows ``offsets[i]:offsets[i+1]``) and ``D``
the block-diagonal matrix ``diag(X_1, ..., X_m)`` (``n x m d``):

* :func:`block_projections`: ``D^T q``, that is ``z_i = X_i^T q_i`` for every agent (``m x d``);
* :func:`block_products`: ``D Z``, that is ``(D Z)_r = x_r . Z_{owner(r)}`` for every row (``n``).

The plain expressions, ``np.add.reduceat(X * q[:, None], offsets[:-1], axis=0)`` and
``np.einsum("nd,nd->n", X, Z[owner])``, each make an ``n x d`` temporary (800 MB at ``n = 5 * 10^6``,
``d = 20``), and ``reduceat`` calls its inner loop once per agent and column, which is slow when agents
hold a few rows. Here rows are processed in chunks of about :data:`CHUNK_ROWS` rows (whole agents), so
temporaries stay small, and when every agent holds the same number ``s <= 8`` of rows the segment sums
are done column-slot by column-slot with the same additions in the same order as ``reduceat``:
``reduceat`` copies the segment's first row and adds numpy's ``pairwise_sum`` of the others, which
below 8 terms is a running sum started from ``-0.0``, so ``z_i = a_0 + (((a_1 + a_2) + a_3) + ...)``.
The tests compare both functions with the plain expressions bit for bit (docs/scale.md).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

__all__ = ["CHUNK_ROWS", "block_projections", "block_products"]

CHUNK_ROWS = 1 << 14
"""Rows per chunk (whole agents; an agent with more rows is one chunk)."""
_SEQUENTIAL_MAX = 8
"""Largest rows per agent for the vectorised segment sum (numpy's pairwise sum is a plain running sum
below 8 terms)."""


def _chunks(offsets: np.ndarray) -> Iterator[tuple[int, int]]:
    """Agent ranges ``[i0, i1)`` holding about :data:`CHUNK_ROWS` rows each."""
    m = offsets.size - 1
    i0 = 0
    while i0 < m:
        i1 = int(np.searchsorted(offsets, offsets[i0] + CHUNK_ROWS, side="right")) - 1
        i1 = min(max(i1, i0 + 1), m)
        yield i0, i1
        i0 = i1


def _uniform(offsets: np.ndarray) -> int:
    """The common number of rows per agent, or 0 when agents hold different numbers."""
    sizes = np.diff(offsets)
    return int(sizes[0]) if sizes.size and (sizes == sizes[0]).all() else 0


def block_projections(X: np.ndarray, q: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``D^T q``: ``z_i = X_i^T q_i = sum_{r in block i} q_r x_r`` for every agent, ``(m, d)``.

    Equal bit for bit to ``np.add.reduceat(X * q[:, None], offsets[:-1], axis=0)``.
    """
    offsets = np.asarray(offsets)
    m, d = offsets.size - 1, X.shape[1]
    out = np.empty((m, d))
    s = _uniform(offsets)
    for i0, i1 in _chunks(offsets):
        a, b = int(offsets[i0]), int(offsets[i1])
        A = X[a:b] * q[a:b, None]
        if 2 <= s <= _SEQUENTIAL_MAX:
            A = A.reshape(i1 - i0, s, d)
            acc = A[:, 1].copy()                      # -0.0 + a_1 == a_1, signed zeros included
            for k in range(2, s):
                acc += A[:, k]
            np.add(A[:, 0], acc, out=out[i0:i1])
        else:
            out[i0:i1] = np.add.reduceat(A, offsets[i0:i1] - a, axis=0)
    return out


def block_products(X: np.ndarray, Z: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``D Z``: ``x_r . Z_i`` for every row ``r`` of every agent ``i``, ``(n,)``.

    Equal bit for bit to ``np.einsum("nd,nd->n", X, Z[owner])`` with ``owner`` the agent of each row.
    """
    offsets = np.asarray(offsets)
    out = np.empty(X.shape[0])
    sizes = np.diff(offsets)
    for i0, i1 in _chunks(offsets):
        a, b = int(offsets[i0]), int(offsets[i1])
        G = np.repeat(Z[i0:i1], sizes[i0:i1], axis=0)
        np.einsum("nd,nd->n", X[a:b], G, out=out[a:b])
    return out
