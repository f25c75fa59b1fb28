"""A library call names the parameter it was given; the same mistake in a scenario names the TOML path."""

from __future__ import annotations

import re

import pytest

from dpgossip.errors import ConfigError
from dpgossip.topology import make_network
from tests.scenario.helpers import scenario_error, toml_scenario

FILE = r"(?:^|\.toml: )"  # a load-time message starts with the scenario file


def test_agents(tmp_path):
    with pytest.raises(ConfigError, match=r"^agents: 1 is too small; a graph needs at least 2 "
                                          r"agents$") as caught:
        make_network("ring", agents=1)
    assert caught.value.field == "agents"
    err = scenario_error(tmp_path, toml_scenario('[network]\ntopology = "ring"\nagents = 1'))
    assert re.search(FILE + r"network\.agents must be >= 2, got 1$", str(err))  # the schema's check
    err = scenario_error(tmp_path, toml_scenario('[network]\ntopology = "ring"\nagents = 2'))
    assert str(err) == ("network.agents: a ring needs at least 3 agents, got 2 (with 2 agents use "
                        "'path' or 'complete')")


def test_params_rows(tmp_path):
    with pytest.raises(ConfigError, match=r"^params\.rows: 5 does not divide agents = 12$") as caught:
        make_network("grid", agents=12, params={"rows": 5})
    assert caught.value.field == "params.rows"
    err = scenario_error(tmp_path, toml_scenario(
        '[network]\ntopology = "grid"\nagents = 12\nparams = { rows = 5 }'))
    assert str(err) == "network.params.rows: 5 does not divide network.agents = 12"
    assert err.field == "network.params.rows"


def test_unknown_param_and_mixing(tmp_path):
    with pytest.raises(ConfigError, match=r"^params\.pp: unknown parameter 'pp' for topology "
                                          r"'erdos_renyi' \(did you mean 'p'\?\)"):
        make_network("erdos_renyi", agents=6, params={"pp": 0.5})
    with pytest.raises(ConfigError, match=r"^mixing: unknown mixing rule 'metropolsi'"):
        make_network("ring", agents=4, mixing="metropolsi")
    err = scenario_error(tmp_path, toml_scenario(
        '[network]\ntopology = "ring"\nagents = 4\nmixing = "metropolsi"'))
    assert re.search(r"^network\.mixing: unknown mixing rule 'metropolsi'", str(err))


def test_topology_file(tmp_path):
    with pytest.raises(ConfigError, match=r"^topology: no such file '.*nowhere\.json'"):
        make_network(str(tmp_path / "nowhere.json"))
    err = scenario_error(tmp_path, toml_scenario('[network]\ntopology = "nowhere.json"'))
    assert re.search(r"^network\.topology: no such file '.*nowhere\.json'", str(err))
