"""Blocked (TSQR) factors of tall matrices against LAPACK's, and the callers' switch to them."""

from __future__ import annotations

import numpy as np
import pytest

import dpgossip.data.tall as tall
from dpgossip.data.synthetic import synthetic_data
from dpgossip.protocols.metrics import captured_energy
from dpgossip.protocols.power import top_singular


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 64 rows from 256 rows on, so that the blocked path runs at test sizes."""
    monkeypatch.setattr(tall, "CHUNK_ROWS", 64)
    monkeypatch.setattr(tall, "TALL_FROM", 256)


@pytest.mark.parametrize("n", [256, 1000, 1003])
def test_tall_qr_and_r_equal_lapack_to_rounding(small_blocks, n):
    A = np.random.default_rng(n).standard_normal((n, 7))
    assert tall.use_tall(A)
    Q0, R0 = np.linalg.qr(A)
    Q, R = tall.tall_qr(A)
    signs = np.sign(np.diag(R)) * np.sign(np.diag(R0))   # the factors are unique up to these signs
    np.testing.assert_allclose(Q * signs, Q0, atol=1e-14)
    np.testing.assert_allclose(R * signs[:, None], R0, atol=1e-13)
    np.testing.assert_allclose(np.abs(tall.tall_r(A)), np.abs(R0), atol=1e-13)
    np.testing.assert_allclose(tall.singular_values(A), np.linalg.svd(A, compute_uv=False),
                               rtol=1e-13)


def test_small_matrices_keep_lapack_bit_for_bit():
    """Below TALL_FROM rows the callers make the plain LAPACK calls."""
    A = np.random.default_rng(0).standard_normal((500, 6))
    assert not tall.use_tall(A)
    assert tall.singular_values(A).tobytes() == np.linalg.svd(A, compute_uv=False).tobytes()
    U = np.linalg.svd(A, full_matrices=False)[0][:, :2]
    U = U * np.sign(U[np.argmax(np.abs(U), axis=0), [0, 1]])
    assert top_singular(A, 2).U.tobytes() == U.tobytes()


def test_callers_on_the_blocked_path_agree_with_lapack(small_blocks, monkeypatch):
    rng = np.random.default_rng(1)
    raw = synthetic_data(2000, 6, {"kind": "geometric", "ratio": 0.7}, rng=rng).X
    np.testing.assert_allclose(np.linalg.svd(raw, compute_uv=False), 0.7 ** np.arange(6),
                               rtol=1e-13)                       # Haar factors: exact spectrum
    spec = top_singular(raw, 2)
    monkeypatch.setattr(tall, "TALL_FROM", 10**9)               # the LAPACK path, as the oracle
    dense = top_singular(raw, 2)
    np.testing.assert_allclose(spec.U, dense.U, atol=1e-13)
    np.testing.assert_allclose(spec.singular_values, dense.singular_values, rtol=1e-13)
    Q = np.linalg.qr(rng.standard_normal((2000, 2)))[0]
    monkeypatch.setattr(tall, "TALL_FROM", 256)
    blocked = captured_energy(raw, Q)
    monkeypatch.setattr(tall, "TALL_FROM", 10**9)
    assert blocked == pytest.approx(captured_energy(raw, Q), rel=1e-13)
