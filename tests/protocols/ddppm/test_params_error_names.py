"""A library call names the parameter it was given; the same mistake in a scenario names the TOML path.

The noise table is checked in one place, :class:`NoiseSchedule`; the scenario only renames its fields
(``kind`` is the table's ``schedule``)."""

from __future__ import annotations

import re

import pytest

from dpgossip.data import load_dataset
from dpgossip.errors import ConfigError
from dpgossip.protocols.ddppm.params import NoiseSchedule, resolve_params
from dpgossip.topology import make_network
from tests.scenario.helpers import scenario_error, toml_scenario

FILE = r"(?:^|\.toml: )"  # a load-time message starts with the scenario file


@pytest.mark.parametrize("kwargs, table, message", [
    ({"scale": -1.0}, "{ scale = -1.0 }", "scale must be a finite number >= 0, got -1.0"),
    ({"scale": "x"}, '{ scale = "x" }', "scale must be a finite number >= 0, got 'x' (str)"),
    ({"kind": "gauss"}, '{ schedule = "gauss" }',
     "schedule must be one of none, constant, geometric, explicit, got 'gauss'"),
    ({"kind": "constant", "values": (0.1, -1)}, '{ schedule = "constant", values = [0.1, -1] }',
     "values[1] must be a finite number >= 0, got -1"),
    ({"kind": "explicit"}, '{ schedule = "explicit" }',
     "values: schedule 'explicit' needs values = [one per iteration]"),
])
def test_noise_schedule(tmp_path, kwargs, table, message):
    library = message.replace("schedule must", "kind must")
    with pytest.raises(ConfigError) as caught:
        NoiseSchedule(**kwargs)
    assert str(caught.value) == library
    assert caught.value.field == library.split(" ")[0].rstrip(":")
    err = scenario_error(tmp_path, toml_scenario(
        f"[protocol]\niterations = 3\nconsensus_steps = 1\nnoise = {table}"))
    assert re.search(FILE + re.escape("protocol.noise." + message) + "$", str(err)), str(err)


def test_noise_values_per_iteration(tmp_path):
    data = load_dataset("wine", agents=4)
    network = make_network("ring", agents=4)
    with pytest.raises(ConfigError, match=r"^noise\.values must have one value per iteration "
                                          r"\(3\), got 2$") as caught:
        resolve_params(data, network, iterations=3, consensus_steps=1,
                       noise=NoiseSchedule(kind="explicit", values=(0.1, 0.1)))
    assert caught.value.field == "noise.values"
    err = scenario_error(tmp_path, toml_scenario(
        "[protocol]\niterations = 3\nconsensus_steps = 1\n"
        'noise = { schedule = "explicit", values = [0.1, 0.1] }'))
    assert str(err) == "protocol.noise.values must have one value per iteration (3), got 2"


def test_rank(tmp_path):
    data = load_dataset("wine", agents=4)
    network = make_network("ring", agents=4)
    with pytest.raises(ConfigError, match=r"^rank must be <= min\(n, d\) = 13, got 20$"):
        resolve_params(data, network, iterations=3, consensus_steps=1, rank=20)
    err = scenario_error(tmp_path, toml_scenario(
        "[protocol]\niterations = 3\nconsensus_steps = 1\nrank = 20"))
    assert str(err) == "protocol.rank must be <= min(n, d) = 13, got 20"
