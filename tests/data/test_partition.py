"""Tests of dpgossip.data.partition and of dpgossip.data.load_dataset (the whole pipeline)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dpgossip.data import PartitionedData, load_dataset, partition_sizes
from dpgossip.errors import ConfigError


@pytest.mark.parametrize(("n", "m"), [(178, 10), (178, 178), (569, 16), (442, 1), (7, 3)])
def test_equal_sizes(n: int, m: int) -> None:
    sizes = partition_sizes(n, m, "equal")
    assert len(sizes) == m and sum(sizes) == n
    assert max(sizes) - min(sizes) <= 1
    assert list(sizes) == sorted(sizes, reverse=True)


def test_explicit_sizes() -> None:
    assert partition_sizes(10, 3, "explicit", sizes=[5, 3, 2]) == (5, 3, 2)
    data = load_dataset("wine", agents=3, partition="explicit", sizes=[100, 70, 8])
    assert data.sizes == (100, 70, 8)
    np.testing.assert_array_equal(data.block(2), data.X[170:178])


def test_random_sizes_reproducible_and_respect_min_rows() -> None:
    a = partition_sizes(178, 12, "random", min_rows=5, rng=np.random.default_rng(3))
    b = partition_sizes(178, 12, "random", min_rows=5, rng=np.random.default_rng(3))
    c = partition_sizes(178, 12, "random", min_rows=5, rng=np.random.default_rng(4))
    assert a == b and a != c
    for sizes in (a, c):
        assert sum(sizes) == 178 and min(sizes) >= 5 and len(sizes) == 12
    data = load_dataset("wine", agents=12, partition="random", min_rows=5,
                        rng=np.random.default_rng(3))
    assert data.sizes == a
    assert min(partition_sizes(20, 4, "random", min_rows=5, rng=np.random.default_rng(0))) == 5


def test_fewer_rows_than_agents() -> None:
    with pytest.raises(ConfigError, match=r"178 rows but there are 200 agents"):
        load_dataset("wine", agents=200)
    with pytest.raises(ConfigError, match=r"5 rows but there are 6 agents"):
        partition_sizes(5, 6, "random", rng=np.random.default_rng(0))


def test_agent_with_no_rows() -> None:
    with pytest.raises(ConfigError, match=r"agent 2 has no rows \(sizes \[100, 78, 0\]\)"):
        load_dataset("wine", agents=3, partition="explicit", sizes=[100, 78, 0])


def test_sizes_not_summing_to_n() -> None:
    with pytest.raises(ConfigError, match=r"sizes \[100, 70\] sum to 170, but the data has 178"):
        load_dataset("wine", agents=2, partition="explicit", sizes=[100, 70])


def test_min_rows_too_large() -> None:
    with pytest.raises(ConfigError, match=r"^min_rows = 20 is too large.*allowed: 1 to 17"):
        load_dataset("wine", agents=10, partition="random", min_rows=20,
                     rng=np.random.default_rng(0))
    with pytest.raises(ConfigError, match=r"^min_rows = 18 is too large.*agent 8 gets 17"):
        load_dataset("wine", agents=10, min_rows=18)
    with pytest.raises(ConfigError, match=r"^min_rows = 10 is too large.*agent 2 gets 8"):
        load_dataset("wine", agents=3, partition="explicit", sizes=[100, 70, 8], min_rows=10)
    with pytest.raises(ConfigError, match=r"^min_rows must be in \[1, 17\].*got 20"):
        partition_sizes(178, 10, "random", min_rows=20, rng=np.random.default_rng(0))


def test_partitioned_data_rejects_row_outside_unit_ball() -> None:
    X = np.array([[0.6, 0.8], [0.0, 1.5], [0.1, 0.1]])
    with pytest.raises(ConfigError, match=r"row 1 has norm 1\.5 > 1"):
        PartitionedData(X=X, sizes=(2, 1))


def test_partition_option_errors() -> None:
    with pytest.raises(ConfigError, match=r"^partition.*'equl'.*did you mean 'equal'"):
        load_dataset("wine", agents=4, partition="equl")
    with pytest.raises(ConfigError, match=r"^partition = 'random' needs rng.*None"):
        load_dataset("wine", agents=4, partition="random")
    with pytest.raises(ConfigError, match=r"^sizes = \[1, 2\] is only used.*'equal'"):
        load_dataset("wine", agents=2, sizes=[1, 2])
    with pytest.raises(ConfigError, match=r"^sizes must list one size per agent \(3\).*2"):
        load_dataset("wine", agents=3, partition="explicit", sizes=[100, 78])
    with pytest.raises(ConfigError, match=r"^sizes\[1\] = 77\.5 must be an integer"):
        load_dataset("wine", agents=2, partition="explicit", sizes=[100, 77.5])
    with pytest.raises(ConfigError, match=r"^sizes must list the rows.*None"):
        load_dataset("wine", agents=2, partition="explicit")
    with pytest.raises(ConfigError, match=r"^min_rows must be an integer >= 1, got 0"):
        load_dataset("wine", agents=2, min_rows=0)
    with pytest.raises(ConfigError, match=r"^agents must be a positive integer, got 0"):
        load_dataset("wine", agents=0)


def test_load_dataset_bundled_default() -> None:
    data = load_dataset("diabetes", agents=16)
    assert (data.n, data.d, data.m, data.name) == (442, 10, 16, "diabetes")
    norms = np.linalg.norm(data.X, axis=1)
    assert abs(norms.max() - 1.0) <= 1e-12
    assert data.to_row() == {"dataset": "diabetes", "n": 442, "d": 10, "agents": 16}


def test_load_dataset_synthetic_keeps_spectrum_ratios() -> None:
    spec = {"n": 60, "d": 8, "spectrum": [4.0, 2.0, 1.0]}
    data = load_dataset("synthetic", agents=5, synthetic=spec, standardize=False,
                        rng=np.random.default_rng(0))
    s = np.linalg.svd(data.X, compute_uv=False)
    np.testing.assert_allclose(s[:3] / s[0], [1.0, 0.5, 0.25], rtol=1e-10)
    assert data.name == "synthetic"


def test_load_dataset_synthetic_errors() -> None:
    with pytest.raises(ConfigError, match=r"^source = 'synthetic' needs synthetic = .*got None"):
        load_dataset("synthetic", agents=2, rng=np.random.default_rng(0))
    with pytest.raises(ConfigError, match=r"^synthetic is missing \['spectrum'\]"):
        load_dataset("synthetic", agents=2, synthetic={"n": 5, "d": 2},
                     rng=np.random.default_rng(0))
    with pytest.raises(ConfigError, match=r"unknown key 'spectra'.*did you mean 'spectrum'"):
        load_dataset("synthetic", agents=2, synthetic={"n": 5, "d": 2, "spectra": [1.0]},
                     rng=np.random.default_rng(0))
    with pytest.raises(ConfigError, match=r"^rng: synthetic data needs rng, a numpy\.random\.Generator, "
                                          r"got None"):
        load_dataset("synthetic", agents=2, synthetic={"n": 5, "d": 2, "spectrum": [1.0]})
    with pytest.raises(ConfigError, match=r"^synthetic is only used with.*'wine'"):
        load_dataset("wine", agents=2, synthetic={"n": 5})


def test_load_dataset_source_errors_and_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^source.*'wnie'.*did you mean 'wine'.*synthetic"):
        load_dataset("wnie", agents=2)
    with pytest.raises(ConfigError, match=r"^source: '.*m\.txt' has extension '\.txt'"):
        load_dataset(str(tmp_path / "m.txt"), agents=2)
    p = tmp_path / "m.csv"
    p.write_text("x,y\n3,4\n1,0\n0,2\n", encoding="utf-8")
    data = load_dataset(p, agents=2, standardize=False)
    np.testing.assert_allclose(data.X, [[0.6, 0.8], [0.2, 0.0], [0.0, 0.4]], rtol=1e-15)
    assert data.sizes == (2, 1) and data.name == "m.csv"
    data = load_dataset(str(p), agents=3, standardize=False, scale="unit_rows")
    np.testing.assert_allclose(np.linalg.norm(data.X, axis=1), 1.0, rtol=1e-15)
