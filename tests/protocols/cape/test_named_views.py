"""``[cape] views``: named capepca-gossip views audited at every point (dpgossip.protocols.cape.named_views).

Each column must be the worst site of :func:`audit_cape_gossip` for that view, computed here directly;
malformed tables are refused naming the path; a scenario that gives the key without a capepca-gossip point
is refused.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from dpgossip.errors import ConfigError
from dpgossip.protocols.cape.gossip import CapeGossipParams
from dpgossip.protocols.cape.gossip_audit import audit_cape_gossip
from dpgossip.protocols.cape.named_views import check_views_table, named_view_epsilons
from dpgossip.scenario import run_scenario
from dpgossip.scenario.expand import expand
from dpgossip.scenario.problem import build_structure
from dpgossip.topology import make_network
from tests.scenario.helpers import small

VIEWS = {"pair": {"view": "coalition", "agents": [0, 2]}, "one": {"view": "neighbour", "agents": [1]},
         "tap": {"view": "eavesdropper", "edges": [[0, 1]]}, "all": {"view": "eavesdropper", "edges": "all"}}
PARAMS = CapeGossipParams(k=1, consensus_steps=3, edge_multiplier=2.0, own_multiplier=1.5)


def _worst(network, sizes, **view) -> float:
    return max(p.epsilon for p in audit_cape_gossip(network, PARAMS, sizes, delta=1e-5, **view))


def test_each_column_is_the_worst_site_of_its_view():
    net, sizes = make_network("ring", agents=6), (50, 60, 70, 80, 90, 100)
    got = named_view_epsilons(net, PARAMS, sizes, check_views_table("cape.views", VIEWS), delta=1e-5,
                              adjacency="row-replacement")
    assert list(got) == ["audited_epsilon_pair", "audited_epsilon_one", "audited_epsilon_tap",
                         "audited_epsilon_all"]
    assert got["audited_epsilon_pair"] == _worst(net, sizes, view="coalition", agents=[0, 2])
    assert got["audited_epsilon_one"] == _worst(net, sizes, view="neighbour", agents=[1])
    assert got["audited_epsilon_tap"] == _worst(net, sizes, view="eavesdropper", edges=[(0, 1)])
    every = _worst(net, sizes, view="eavesdropper", edges=list(net.graph.edges))
    assert got["audited_epsilon_all"] == every
    # more edges watched, more seen; a coalition knows draws an eavesdropper does not
    assert 0 < got["audited_epsilon_tap"] <= every <= got["audited_epsilon_pair"]


@pytest.mark.parametrize(("table", "path"), [
    ({}, "cape.views"),
    ({"Bad-Label": {"view": "neighbour", "agents": [0]}}, "cape.views.Bad-Label"),
    ({"x": {"view": "aggregator", "agents": [0]}}, "cape.views.x"),
    ({"x": {"view": "coalition", "edges": [[0, 1]]}}, "cape.views.x"),
    ({"x": {"view": "eavesdropper", "edges": [[0, 1]], "agents": [0]}}, "cape.views.x"),
    ({"x": {"view": "coalition", "agents": []}}, "cape.views.x.agents"),
    ({"x": {"view": "coalition", "agents": [0, -1]}}, "cape.views.x.agents"),
    ({"x": {"view": "eavesdropper", "edges": [[0, 1, 2]]}}, "cape.views.x.edges"),
    ({"x": {"view": "eavesdropper", "edges": "some"}}, "cape.views.x.edges"),
])
def test_a_malformed_views_table_is_refused_naming_its_path(table, path):
    with pytest.raises(ConfigError) as info:
        check_views_table("cape.views", table)
    assert str(info.value).startswith(path)


def test_the_key_is_refused_without_a_capepca_gossip_point():
    with pytest.raises(ConfigError) as info:
        small(protocol={"kind": "capepca", "rank": 1},
              cape={"epsilon": 1.0, "views": {"x": {"view": "coalition", "agents": [0, 2]}}})
    assert "views" in str(info.value)


def test_a_run_writes_one_column_per_view(tmp_path: Path):
    sc = small(protocol={"kind": "capepca-gossip", "consensus_steps": 2, "rank": 1},
               cape={"epsilon": 2.0, "views": {"pair": VIEWS["pair"], "all": VIEWS["all"]}})
    out = run_scenario(sc, tmp_path / "out", quiet=True)
    with open(out / "runs.csv", newline="") as fh:
        (row,) = [r for r in csv.DictReader(fh) if r["repeat"] == "0"]
    structure = build_structure(expand(sc.config)[0].config)
    params = CapeGossipParams(k=1, consensus_steps=2, edge_multiplier=float(row["edge_multiplier"]),
                              own_multiplier=float(row["own_multiplier"]))
    want = named_view_epsilons(structure.network, params, structure.data.sizes,
                               check_views_table("cape.views", VIEWS), delta=1e-5,
                               adjacency="row-replacement")
    assert float(row["audited_epsilon_pair"]) == pytest.approx(want["audited_epsilon_pair"], rel=1e-12)
    assert float(row["audited_epsilon_all"]) == pytest.approx(want["audited_epsilon_all"], rel=1e-12)
    assert "audited_epsilon_one" not in row
