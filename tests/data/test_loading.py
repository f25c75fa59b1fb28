"""Tests of dpgossip.data.loading: user matrices from .csv and .npy files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dpgossip.data import load_matrix
from dpgossip.errors import ConfigError

EXPECTED = np.array([[1.0, 2.5, -3.0], [0.0, 1e-3, 4.0]])


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_csv_with_header(tmp_path: Path) -> None:
    p = _write(tmp_path, "m.csv", "a,b,c\n1,2.5,-3\n0,1e-3,4\n")
    raw = load_matrix(p)
    np.testing.assert_array_equal(raw.X, EXPECTED)
    assert raw.name == "m.csv"
    assert str(p.resolve()) in raw.provenance


def test_csv_without_header_blank_lines_and_spaces(tmp_path: Path) -> None:
    p = _write(tmp_path, "m.csv", "1, 2.5 ,-3\n\n0,1e-3,4\n\n")
    np.testing.assert_array_equal(load_matrix(str(p)).X, EXPECTED)


def test_csv_numeric_header_like_bundled_files_is_data(tmp_path: Path) -> None:
    # A header with a non-numeric cell is skipped even when some cells are numbers.
    p = _write(tmp_path, "m.csv", "2,3,label\n1,2.5,-3\n0,1e-3,4\n")
    np.testing.assert_array_equal(load_matrix(p).X, EXPECTED)


def test_npy(tmp_path: Path) -> None:
    p = tmp_path / "m.npy"
    np.save(p, EXPECTED)
    np.testing.assert_array_equal(load_matrix(p).X, EXPECTED)
    np.save(p, np.arange(6, dtype=np.int32).reshape(3, 2))
    assert load_matrix(p).X.dtype == np.float64


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^path: file '.*nope\.csv' does not exist"):
        load_matrix(tmp_path / "nope.csv")


def test_bad_extension(tmp_path: Path) -> None:
    p = _write(tmp_path, "m.txt", "1,2\n")
    with pytest.raises(ConfigError, match=r"^path: '.*m\.txt' has extension '\.txt'; "
                                          r"allowed: \.csv, \.npy"):
        load_matrix(p)


def test_non_numeric_cell(tmp_path: Path) -> None:
    p = _write(tmp_path, "m.csv", "a,b\n1,2\n3,x7\n")
    with pytest.raises(ConfigError, match=r"line 3, column 2: cell 'x7' is not a number"):
        load_matrix(p)


def test_empty_cell_in_first_line_is_not_a_header(tmp_path: Path) -> None:
    p = _write(tmp_path, "m.csv", "1,,3\n4,5,6\n")
    with pytest.raises(ConfigError, match=r"line 1, column 2: cell '' is not a number"):
        load_matrix(p)


def test_wrong_separator_hint(tmp_path: Path) -> None:
    p = _write(tmp_path, "m.csv", "1;2\n3;4\n")
    with pytest.raises(ConfigError, match=r"line 2, column 1: cell '3;4'.*separated by commas"):
        load_matrix(p)


def test_ragged_rows(tmp_path: Path) -> None:
    p = _write(tmp_path, "m.csv", "1,2,3\n4,5\n")
    with pytest.raises(ConfigError, match=r"line 2 has 2 columns, expected 3"):
        load_matrix(p)


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf", "NaN"])
def test_csv_non_finite(tmp_path: Path, bad: str) -> None:
    p = _write(tmp_path, "m.csv", f"1,2\n3,{bad}\n")
    with pytest.raises(ConfigError, match=rf"line 2, column 2: value '{bad}' is not finite"):
        load_matrix(p)


def test_npy_nan(tmp_path: Path) -> None:
    p = tmp_path / "m.npy"
    np.save(p, np.array([[1.0, 2.0], [np.nan, 0.0]]))
    with pytest.raises(ConfigError, match=r"row 1, column 0 \(counted from 0\) is nan"):
        load_matrix(p)


def test_npy_not_2d(tmp_path: Path) -> None:
    p = tmp_path / "m.npy"
    np.save(p, np.ones(4))
    with pytest.raises(ConfigError, match=r"shape \(4,\); expected a 2-D array"):
        load_matrix(p)


def test_npy_not_numeric(tmp_path: Path) -> None:
    p = tmp_path / "m.npy"
    np.save(p, np.array([["a", "b"]]))
    with pytest.raises(ConfigError, match=r"dtype <U1; expected real numbers"):
        load_matrix(p)
    np.save(p, np.array([[{}]], dtype=object), allow_pickle=True)
    with pytest.raises(ConfigError, match=r"not a readable \.npy array"):
        load_matrix(p)


def test_header_only_and_empty(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"'.*h\.csv' has no data rows"):
        load_matrix(_write(tmp_path, "h.csv", "a,b,c\n"))
    with pytest.raises(ConfigError, match=r"'.*e\.csv' has no data rows"):
        load_matrix(_write(tmp_path, "e.csv", ""))


def test_directory_and_bad_type(tmp_path: Path) -> None:
    (tmp_path / "d.csv").mkdir()
    with pytest.raises(ConfigError, match=r"'.*d\.csv' is not a file"):
        load_matrix(tmp_path / "d.csv")
    with pytest.raises(ConfigError, match=r"^path must be a file path, got 42"):
        load_matrix(42)  # type: ignore[arg-type]
