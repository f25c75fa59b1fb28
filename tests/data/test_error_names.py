"""A library call names the parameter it was given; the same mistake in a scenario names the TOML path."""

from __future__ import annotations

import re

import numpy as np
import pytest

from dpgossip.data import load_dataset, synthetic_data
from dpgossip.errors import ConfigError
from tests.scenario.helpers import scenario_error, toml_scenario

FILE = r"(?:^|\.toml: )"  # a load-time message starts with the scenario file


def test_agents():
    with pytest.raises(ConfigError, match=r"^agents must be a positive integer, got 0$") as caught:
        load_dataset("wine", agents=0)
    assert caught.value.field == "agents"


def test_min_rows(tmp_path):
    with pytest.raises(ConfigError, match=r"^min_rows = 20 is too large: 10 agents x 20 rows > 178 "
                                          r"rows; allowed: 1 to 17$") as caught:
        load_dataset("wine", agents=10, partition="random", min_rows=20,
                     rng=np.random.default_rng(0))
    assert caught.value.field == "min_rows"
    err = scenario_error(tmp_path, toml_scenario(
        '[data]\nsource = "wine"\npartition = "random"\nmin_rows = 20',
        '[network]\ntopology = "ring"\nagents = 10'))
    assert str(err) == ("data.min_rows = 20 is too large: 10 agents x 20 rows > 178 rows; allowed: "
                        "1 to 17")
    assert err.field == "data.min_rows"


def test_synthetic_spectrum(tmp_path):
    spec = {"n": 20, "d": 3, "spectrum": [1.0, 2.0]}
    expected = r"must be non-increasing, but s\[0\] = 1\.0 < s\[1\] = 2\.0$"
    with pytest.raises(ConfigError, match=r"^spectrum " + expected):
        synthetic_data(20, 3, spec["spectrum"], rng=np.random.default_rng(0))
    with pytest.raises(ConfigError, match=r"^synthetic\.spectrum " + expected) as caught:
        load_dataset("synthetic", agents=2, synthetic=spec, rng=np.random.default_rng(0))
    assert caught.value.field == "synthetic.spectrum"
    err = scenario_error(tmp_path, toml_scenario(
        '[data]\nsource = "synthetic"\nsynthetic = { n = 20, d = 3, spectrum = [1.0, 2.0] }'))
    assert re.search(r"^data\.synthetic\.spectrum " + expected, str(err))


def test_sizes_and_partition(tmp_path):
    with pytest.raises(ConfigError, match=r"^sizes = \[1, 2\] is only used with partition = "
                                          r"'explicit', got partition 'equal'$"):
        load_dataset("wine", agents=2, sizes=[1, 2])
    message = r"sizes: sizes \[10, 100, 50, 28\] sum to 188, but the data has 178 rows$"
    with pytest.raises(ConfigError, match="^" + message) as caught:
        load_dataset("wine", agents=4, partition="explicit", sizes=[10, 100, 50, 28])
    assert caught.value.field == "sizes"
    err = scenario_error(tmp_path, toml_scenario(
        '[data]\nsource = "wine"\npartition = "explicit"\nsizes = [10, 100, 50, 28]'))
    assert re.search(r"^data\." + message, str(err)), str(err)


def test_source(tmp_path):
    with pytest.raises(ConfigError, match=r"^source: unknown source 'wnie' \(did you mean "
                                          r"'wine'\?\)"):
        load_dataset("wnie", agents=2)
    with pytest.raises(ConfigError, match=r"^source: file '.*nope\.csv' does not exist$"):
        load_dataset(tmp_path / "nope.csv", agents=2)
    err = scenario_error(tmp_path, toml_scenario('[data]\nsource = "nope.csv"'))
    assert re.search(r"^data\.source: file '.*nope\.csv' does not exist$", str(err))
