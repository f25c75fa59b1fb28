"""A library call names the parameter it was given; the same mistake in a scenario names the TOML path."""

from __future__ import annotations

import re

import pytest

from dpgossip.data import load_dataset
from dpgossip.errors import ConfigError
from dpgossip.protocols.ddppm.audit import AuditOptions, audit_pairs
from dpgossip.protocols.ddppm.params import resolve_params
from dpgossip.protocols.ddppm.search import SearchSettings
from dpgossip.topology import make_network
from tests.scenario.helpers import scenario_error, toml_scenario

FILE = r"(?:^|\.toml: )"  # a load-time message starts with the scenario file
SEARCH = (r"search must be one of quick, standard, thorough or an integer number of levels in 1\.\.8, "
          r"got 'thoruogh' \(did you mean 'thorough'\?\)")


def test_search_preset(tmp_path):
    with pytest.raises(ConfigError, match="^" + SEARCH + "$") as caught:
        SearchSettings.of("thoruogh")
    assert caught.value.field == "search"
    err = scenario_error(tmp_path, toml_scenario('[privacy]\nsearch = "thoruogh"'))
    assert re.search(FILE + r"privacy\." + SEARCH + "$", str(err)), str(err)


def test_audit_parameters():
    data = load_dataset("wine", agents=4)
    network = make_network("ring", agents=4)
    params = resolve_params(data, network, iterations=2, consensus_steps=1)
    with pytest.raises(ConfigError, match=r"^delta must be in \(0, 1\), got 2$"):
        audit_pairs(data, network, params, delta=2)
    with pytest.raises(ConfigError, match=r"^neighbours: unknown kind 'bounde'"):
        audit_pairs(data, network, params, neighbours="bounde", search="quick",
                    options=AuditOptions(targets=[0], observers=[1]))
    with pytest.raises(ConfigError, match=r"^options\.workers must be an integer >= 1, got 0$"):
        AuditOptions(workers=0, targets=[0], observers=[1])  # refused when built


@pytest.mark.parametrize("name", ["candidates", "shared", "fast", "network"])
def test_a_removed_search_is_refused_saying_so(tmp_path, name):
    with pytest.raises(ConfigError, match=rf"^search = '{name}' was removed: there is one search, "
                       r"whose effort is one of quick, standard, thorough") as caught:
        SearchSettings.of(name)
    assert caught.value.field == "search"
    err = scenario_error(tmp_path, toml_scenario(f'[privacy]\nsearch = "{name}"'))
    assert re.search(FILE + rf"privacy\.search = '{name}' was removed", str(err)), str(err)
