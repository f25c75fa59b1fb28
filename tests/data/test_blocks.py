"""The chunked block products equal the plain numpy expressions bit for bit (the oracle)."""

from __future__ import annotations

import numpy as np
import pytest

import dpgossip.data.blocks as blocks
from dpgossip.data.blocks import block_products, block_projections


def _case(sizes: list[int], d: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Data with signed zeros in ``X`` and ``q`` (the sums must keep the sign of zero too)."""
    rng = np.random.default_rng(seed)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    n = int(offsets[-1])
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) < 0.1] = -0.0
    q = rng.standard_normal(n)
    q[rng.random(n) < 0.05] = 0.0
    q[rng.random(n) < 0.05] = -0.0
    Z = rng.standard_normal((len(sizes), d))
    return X, q, offsets, Z


def _assert_bits(a: np.ndarray, b: np.ndarray) -> None:
    assert a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("rows", list(range(1, 11)))
@pytest.mark.parametrize("chunk", [7, 64, 1 << 14])
def test_equal_blocks_match_reduceat_and_einsum_bit_for_bit(monkeypatch, rows, chunk):
    monkeypatch.setattr(blocks, "CHUNK_ROWS", chunk)
    X, q, offsets, Z = _case([rows] * 23, 5, rows)
    _assert_bits(block_projections(X, q, offsets),
                 np.add.reduceat(X * q[:, None], offsets[:-1], axis=0))
    owner = np.repeat(np.arange(23), rows)
    _assert_bits(block_products(X, Z, offsets), np.einsum("nd,nd->n", X, Z[owner]))


@pytest.mark.parametrize("chunk", [5, 1 << 14])
def test_unequal_blocks_match_reduceat_and_einsum_bit_for_bit(monkeypatch, chunk):
    monkeypatch.setattr(blocks, "CHUNK_ROWS", chunk)
    sizes = [int(s) for s in np.random.default_rng(3).integers(1, 12, 200)]
    X, q, offsets, Z = _case(sizes, 20, 4)
    _assert_bits(block_projections(X, q, offsets),
                 np.add.reduceat(X * q[:, None], offsets[:-1], axis=0))
    owner = np.repeat(np.arange(len(sizes)), sizes)
    _assert_bits(block_products(X, Z, offsets), np.einsum("nd,nd->n", X, Z[owner]))


def test_block_products_are_the_block_diagonal_matrix():
    """Against the dense block-diagonal ``D``: ``D^T q`` and ``D Z`` (to rounding)."""
    sizes = [3, 1, 4, 2]
    X, q, offsets, Z = _case(sizes, 3, 5)
    D = np.zeros((X.shape[0], 3 * len(sizes)))
    for i in range(len(sizes)):
        D[offsets[i]:offsets[i + 1], 3 * i:3 * i + 3] = X[offsets[i]:offsets[i + 1]]
    np.testing.assert_allclose(block_projections(X, q, offsets).ravel(), D.T @ q, atol=1e-14)
    np.testing.assert_allclose(block_products(X, Z, offsets), D @ Z.ravel(), atol=1e-14)
