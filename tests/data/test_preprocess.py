"""Tests of dpgossip.data.preprocess: column transforms and unit-ball scaling."""

from __future__ import annotations

import numpy as np
import pytest

from dpgossip.data import load_bundled, preprocess
from dpgossip.errors import ConfigError


def _norms(X: np.ndarray) -> np.ndarray:
    return np.linalg.norm(X, axis=1)


def test_max_norm_puts_longest_row_on_sphere_and_keeps_ratios() -> None:
    X = np.random.default_rng(0).normal(size=(30, 5)) * 7.0
    Y = preprocess(X)
    assert abs(_norms(Y).max() - 1.0) <= 1e-12
    assert np.all(_norms(Y) <= 1.0 + 1e-12)
    ratio = X / Y
    np.testing.assert_allclose(ratio, ratio[0, 0], rtol=1e-12)  # one common factor
    assert np.argmax(_norms(Y)) == np.argmax(_norms(X))


@pytest.mark.parametrize("name", ["wine", "breast_cancer", "diabetes"])
def test_bundled_default_pipeline_in_unit_ball(name: str) -> None:
    Y = preprocess(load_bundled(name).X, standardize=True)
    assert abs(_norms(Y).max() - 1.0) <= 1e-12


def test_unit_rows() -> None:
    X = np.array([[3.0, 4.0], [0.0, 0.0], [1e-3, 0.0], [-2.0, 2.0]])
    Y = preprocess(X, scale="unit_rows")
    np.testing.assert_allclose(_norms(Y), [1.0, 0.0, 1.0, 1.0], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(Y[0], [0.6, 0.8])
    np.testing.assert_array_equal(Y[1], [0.0, 0.0])


def test_standardize_zero_mean_unit_std_and_constant_column() -> None:
    rng = np.random.default_rng(1)
    X = np.column_stack([rng.normal(5.0, 3.0, 50), rng.uniform(-1, 9, 50), np.full(50, 0.1)])
    Z = preprocess(X, standardize=True, scale="max_norm")
    Z = Z / Z[:, 0].std()  # undo the common max_norm factor
    np.testing.assert_allclose(Z[:, :2].mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(Z[:, :2].std(axis=0), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(Z[:, 2], 0.0)  # constant column: exactly zero, not nan


def test_standardize_closed_form() -> None:
    # Column 0 has mean 1 and population std 1; column 1 is constant (divided by 1, not 0).
    X = np.array([[0.0, 5.0], [2.0, 5.0]])
    np.testing.assert_array_equal(preprocess(X, standardize=True, scale="none"),
                                  [[-1.0, 0.0], [1.0, 0.0]])
    # Here the standardised rows have norm up to 3 / sqrt(5), so "none" must refuse them.
    X = np.array([[0.1, 1.0], [0.2, 1.0], [0.3, 1.0], [0.4, 1.0]])
    with pytest.raises(ConfigError, match=r"row 0 has norm 1\.34164 > 1"):
        preprocess(X, standardize=True, scale="none")


def test_center_only() -> None:
    X = np.array([[0.1, 0.2], [0.3, 0.6]])
    np.testing.assert_allclose(preprocess(X, center=True, scale="none"),
                               [[-0.1, -0.2], [0.1, 0.2]], rtol=1e-12)


def test_none_accepts_unit_ball_and_rejects_outside() -> None:
    ok = np.array([[0.6, 0.8], [0.1, 0.0]])
    np.testing.assert_array_equal(preprocess(ok, scale="none"), ok)
    bad = np.array([[0.1, 0.0], [0.9, 1.2], [3.0, 0.0]])
    with pytest.raises(ConfigError, match=r"^scale = 'none': row 1 has norm 1\.5 > 1 "
                                          r"\(2 row\(s\)"):
        preprocess(bad, scale="none")


def test_input_not_modified() -> None:
    X = np.array([[3.0, 4.0], [1.0, 1.0]])
    before = X.copy()
    preprocess(X, standardize=True)
    np.testing.assert_array_equal(X, before)


def test_errors() -> None:
    X = np.eye(2)
    with pytest.raises(ConfigError, match=r"^scale.*'max_nrom'.*did you mean 'max_norm'"):
        preprocess(X, scale="max_nrom")
    with pytest.raises(ConfigError, match=r"^standardize must be true or false, got 'yes'"):
        preprocess(X, standardize="yes")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"^center must be true or false, got 1"):
        preprocess(X, center=1)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"every column is constant over the 3 rows.*\(center "
                                          r"= true.*'max_norm' cannot scale"):
        preprocess(np.ones((3, 2)), center=True)
    with pytest.raises(ConfigError, match=r"^scale = 'max_norm' cannot scale.*all zero; the "
                                          r"data has no non-zero entry"):
        preprocess(np.zeros((3, 2)))
    with pytest.raises(ConfigError, match=r"row 1, column 0 is inf"):
        preprocess(np.array([[1.0, 0.0], [np.inf, 0.0]]))
    with pytest.raises(ConfigError, match=r"2-D matrix, got shape \(3,\)"):
        preprocess(np.ones(3))
