"""A library call names the parameter it was given; the same mistake in a scenario names the TOML path."""

from __future__ import annotations

import re

import pytest

from dpgossip.data import load_dataset
from dpgossip.engine import NetworkConditions
from dpgossip.errors import ConfigError
from dpgossip.protocols.ddppm.nodes import run_engine
from dpgossip.protocols.ddppm.params import resolve_params
from dpgossip.scenario import load_scenario, run_scenario
from dpgossip.topology import make_network
from tests.scenario.helpers import scenario_error, toml_scenario

FILE = r"(?:^|\.toml: )"  # a load-time message starts with the scenario file


@pytest.mark.parametrize("mapping, table, message", [
    ({"loss": 1.5}, "loss = 1.5", "loss must be a probability in [0, 1), got 1.5"),
    ({"latency": {"kind": "exponentail"}}, 'latency = { kind = "exponentail" }',
     "latency.kind must be one of constant, uniform, exponential, lognormal, got 'exponentail' "
     "(did you mean 'exponential'?)"),
    ({"links": [{"edge": [0, 1], "latency": -1}]}, "links = [{ edge = [0, 1], latency = -1 }]",
     "links[0].latency must be a number >= 0, got -1"),
    ({"los": 0.5}, "los = 0.5", "los"),
])
def test_conditions(tmp_path, mapping, table, message):
    with pytest.raises(ConfigError) as caught:
        NetworkConditions.from_mapping(mapping)
    if message == "los":  # the mapping itself has no key 'los'
        assert str(caught.value).startswith("mapping: unknown key 'los' (did you mean 'loss'?)")
        message = "engine: unknown key 'los' (did you mean 'loss'?)"
    else:
        assert str(caught.value) == message
        message = "engine." + message
    err = scenario_error(tmp_path, toml_scenario(f"[engine]\n{table}"))
    assert re.search(FILE + re.escape(message), str(err)), str(err)


def test_loss_in_direct_construction():
    with pytest.raises(ConfigError, match=r"^loss must be a probability in \[0, 1\), got 1\.5$") as c:
        NetworkConditions(loss=1.5)
    assert c.value.field == "loss"


def test_agents_that_do_not_exist(tmp_path):
    data = load_dataset("wine", agents=4)
    network = make_network("ring", agents=4)
    params = resolve_params(data, network, iterations=2, consensus_steps=1)
    with pytest.raises(ConfigError, match=r"^conditions\.crashes: agent 7 does not exist; the "
                                          r"network has agents 0\.\.3$"):
        run_engine(data, network, params, 0, conditions={"crashes": {7: 0.1}})
    path = tmp_path / "s.toml"
    path.write_text(toml_scenario('backend = "engine"', "[engine]\ncrashes = { 7 = 0.1 }",
                                  "[output]\nplots = false"), encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        run_scenario(load_scenario(path), tmp_path / "out", quiet=True)
    assert str(caught.value) == "engine.crashes: agent 7 does not exist; the network has agents 0..3"
