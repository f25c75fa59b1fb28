"""Tests of dpgossip.data.bundled: the three datasets of the paper, labels dropped."""

from __future__ import annotations

import numpy as np
import pytest

from dpgossip.data import DATASETS, RawData, load_bundled
from dpgossip.errors import ConfigError


@pytest.mark.parametrize(("name", "shape"), [("wine", (178, 13)), ("breast_cancer", (569, 30)),
                                             ("diabetes", (442, 10))])
def test_shapes_exact(name: str, shape: tuple[int, int]) -> None:
    raw = load_bundled(name)
    assert isinstance(raw, RawData)
    assert raw.X.shape == shape
    assert raw.X.dtype == np.float64
    assert raw.name == name
    assert np.all(np.isfinite(raw.X))


def test_datasets_constant() -> None:
    assert DATASETS == ("wine", "breast_cancer", "diabetes")


def test_known_values_and_labels_dropped() -> None:
    wine = load_bundled("wine").X
    np.testing.assert_array_equal(wine[0, :2], [14.23, 1.71])
    # last feature of row 0 is proline 1065; the class label (0) that follows it is dropped
    assert wine[0, -1] == 1065.0
    assert wine[-1, -1] == 560.0  # last row: ...,1.74,560,2 -> label 2 dropped

    cancer = load_bundled("breast_cancer").X
    np.testing.assert_array_equal(cancer[0, :3], [17.99, 10.38, 122.8])
    assert cancer[0, -1] == 0.1189  # worst fractal dimension; label 0 dropped

    diabetes = load_bundled("diabetes").X
    np.testing.assert_array_equal(diabetes[0, :3], [59.0, 2.0, 32.1])
    assert diabetes[0, -1] == 87.0  # s6 (glucose), the tenth feature
    assert set(np.unique(diabetes[:, 1])) == {1.0, 2.0}  # sex column


def test_provenance_one_line() -> None:
    for name in DATASETS:
        text = load_bundled(name).provenance
        assert "\n" not in text and text
    assert "CC BY 4.0" in load_bundled("wine").provenance
    assert "BSD-3-Clause" in load_bundled("diabetes").provenance


def test_result_is_read_only_and_row() -> None:
    raw = load_bundled("wine")
    with pytest.raises(ValueError):
        raw.X[0, 0] = 0.0
    assert raw.to_row()["n"] == 178 and raw.to_row()["d"] == 13
    assert load_bundled("wine").X[0, 0] == 14.23


def test_unknown_name() -> None:
    with pytest.raises(ConfigError,
                       match=r"^name: unknown bundled dataset.*'wien'.*did you mean 'wine'.*breast_cancer"):
        load_bundled("wien")
    with pytest.raises(ConfigError, match=r"'iris'.*known: wine, breast_cancer, diabetes"):
        load_bundled("iris")
