"""Tests of dpgossip.data.synthetic: X = U diag(s) V^T with a prescribed spectrum."""

from __future__ import annotations

import numpy as np
import pytest

from dpgossip.data import spectrum_values, synthetic_data
from dpgossip.errors import ConfigError


def _svals(X: np.ndarray) -> np.ndarray:
    return np.linalg.svd(X, compute_uv=False)


def test_explicit_spectrum_recovered() -> None:
    s = [5.0, 3.0, 3.0, 0.5]
    raw = synthetic_data(40, 7, s, rng=np.random.default_rng(1))
    assert raw.X.shape == (40, 7)
    sv = _svals(raw.X)
    np.testing.assert_allclose(sv[:4], s, rtol=0, atol=1e-10)
    np.testing.assert_allclose(sv[4:], 0.0, atol=1e-10)
    assert raw.name == "synthetic" and "\n" not in raw.provenance


def test_geometric_family() -> None:
    spec = {"kind": "geometric", "top": 2.0, "ratio": 0.5}
    expected = 2.0 * 0.5 ** np.arange(6)
    np.testing.assert_array_equal(spectrum_values(spec, 30, 6), expected)
    raw = synthetic_data(30, 6, spec, rng=np.random.default_rng(2))
    np.testing.assert_allclose(_svals(raw.X), expected, rtol=0, atol=1e-10)


def test_gap_family() -> None:
    spec = {"kind": "gap", "gap": 4.0, "ratio": 0.5, "k": 4}
    expected = [1.0, 0.25, 0.125, 0.0625]
    np.testing.assert_array_equal(spectrum_values(spec, 10, 20), expected)
    raw = synthetic_data(10, 20, spec, rng=np.random.default_rng(3))
    np.testing.assert_allclose(_svals(raw.X)[:4], expected, rtol=0, atol=1e-10)


def test_seed_reproducible() -> None:
    a = synthetic_data(20, 5, [3.0, 2.0, 1.0], rng=np.random.default_rng(7)).X
    b = synthetic_data(20, 5, [3.0, 2.0, 1.0], rng=np.random.default_rng(7)).X
    c = synthetic_data(20, 5, [3.0, 2.0, 1.0], rng=np.random.default_rng(8)).X
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_haar_sign_convention_unbiased() -> None:
    # Without absorbing sign(diag(R)), LAPACK's QR makes Q[0, 0] < 0 for a single column, so
    # X[0, 0] = u_0 s v_0 would always be positive; Haar vectors make its sign a fair coin.
    firsts = []
    for seed in range(200):
        X = synthetic_data(3, 3, [1.0], rng=np.random.default_rng(seed)).X
        firsts.append(np.sign(X[0, 0]))
    assert 60 < sum(f > 0 for f in firsts) < 140


@pytest.mark.parametrize(("spec", "match"), [
    ([1.0, 2.0], r"^spectrum must be non-increasing.*s\[0\] = 1\.0 < s\[1\] = 2\.0"),
    ([1.0, -0.5], r"^spectrum\[1\] = -0\.5.*positive"),
    ([1.0, 0.0], r"^spectrum\[1\] = 0\.0"),
    ([1.0, float("nan")], r"^spectrum\[1\] = nan"),
    (np.array([3.0, np.float32(-1.0)]), r"^spectrum\[1\] = -1\.0:"),
    ([np.float64(3.0), np.float64(-2.0)], r"^spectrum\[1\] = -2\.0:"),
    (np.ones((2, 2)), r"flat list.*shape \(2, 2\)"),
    ([], r"between 1 and min\(n, d\) = 4.*got 0"),
    ([1.0] * 5, r"between 1 and min\(n, d\) = 4.*got 5"),
    ("flat", r"^spectrum must be a list.*'flat'"),
    ({"kind": "geometrc", "ratio": 0.5},
     r"^spectrum\.kind.*'geometrc'.*did you mean 'geometric'"),
    ({"kind": "geometric"}, r"kind 'geometric' needs 'ratio'"),
    ({"kind": "geometric", "ratio": 1.5}, r"^spectrum\.ratio.*0 < ratio <= 1.*1\.5"),
    ({"kind": "geometric", "ratio": 0.5, "top": 0}, r"^spectrum\.top.*got 0"),
    ({"kind": "geometric", "ratio": 0.5, "k": 9}, r"^spectrum\.k.*\[1, min\(n, d\) = 4\].*9"),
    ({"kind": "gap", "gap": 0.5, "ratio": 0.5}, r"^spectrum\.gap.*gap >= 1.*0\.5"),
    ({"kind": "gap", "gap": 2, "ratio": 0.5, "rato": 1}, r"unknown key 'rato'.*did you mean"),
])
def test_bad_spectrum(spec: object, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        synthetic_data(10, 4, spec, rng=np.random.default_rng(0))


def test_underflow_rejected() -> None:
    with pytest.raises(ConfigError, match=r"underflows to s\[\d+\] = 0"):
        spectrum_values({"kind": "geometric", "ratio": 1e-10, "k": 40}, 50, 50)


def test_bad_shape_and_rng() -> None:
    with pytest.raises(ConfigError, match=r"^n must be a positive integer, got 0"):
        synthetic_data(0, 4, [1.0], rng=np.random.default_rng(0))
    with pytest.raises(ConfigError, match=r"^d must be a positive integer, got 2\.5"):
        synthetic_data(4, 2.5, [1.0], rng=np.random.default_rng(0))
    with pytest.raises(ConfigError, match=r"^rng must be a numpy\.random\.Generator, a non-negative "
                                          r"integer seed or a numpy\.random\.SeedSequence, got 'x'"):
        synthetic_data(4, 4, [1.0], rng="x")
    # an integer is a seed of default_rng: the same matrix as that generator draws
    np.testing.assert_array_equal(synthetic_data(4, 4, [1.0], rng=3).X,
                                  synthetic_data(4, 4, [1.0], rng=np.random.default_rng(3)).X)
