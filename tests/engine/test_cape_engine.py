"""capePCA, capepca-gossip and the floor-free D-DP-PM on the engine equal their matrix-backend runs
(independent oracle: :func:`run_cape`, :func:`run_cape_gossip`, :func:`run_floorfree`)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from dpgossip.errors import ConfigError
from dpgossip.protocols.cape.gossip import CapeGossipParams, run_cape_gossip
from dpgossip.protocols.cape.nodes import cape_star_network, run_cape_engine
from dpgossip.protocols.cape.star import CapeParams, run_cape
from dpgossip.protocols.ddppm.floorfree import FloorFreeParams, run_floorfree
from dpgossip.protocols.ddppm.floorfree_nodes import run_floorfree_engine
from tests.conftest import net_from_graph
from tests.engine.conftest import data_for, grid3

NETS = {"ring5": lambda: net_from_graph(nx.cycle_graph(5), "ring5"), "grid3": grid3,
        "path4": lambda: net_from_graph(nx.path_graph(4), "path4")}
LOSSY = {"latency": {"kind": "exponential", "mean": 0.01}, "loss": 0.3, "retransmit_timeout": 0.05}
CONDITIONS = {"ideal": None, "lossy": LOSSY}


def close(a: np.ndarray, b: np.ndarray, rel: float = 1e-10) -> None:
    scale = max(1.0, float(np.max(np.abs(a))))
    np.testing.assert_allclose(b, a, rtol=0, atol=rel * scale)


@pytest.mark.parametrize("sites", [3, 5])
@pytest.mark.parametrize("cond", list(CONDITIONS))
def test_capepca_on_the_engine_equals_run_cape(sites, cond):
    data = data_for(sites, d=4, rows_per_agent=3, seed=2)
    params = CapeParams(k=2, noise_multiplier=1.3)
    eng = run_cape_engine("capepca", data, None, params, 7, conditions=CONDITIONS[cond])
    ref = run_cape(data, params, 7)
    assert eng.status == "completed"
    for name in ("released", "aggregate", "target", "eigenvalues", "eigenvectors"):
        close(getattr(ref, name), getattr(eng.result, name))
    for name in "EFG":
        close(getattr(ref.noise, name), getattr(eng.result.noise, name))
    for s in range(sites):  # every site received the released components
        close(ref.components, eng.values[s]["components"])
    if cond == "lossy":
        assert eng.summary.retransmissions > 0


def test_capepca_message_counts_and_tags():
    data = data_for(4, d=3, rows_per_agent=2, seed=2)
    eng = run_cape_engine("capepca", data, None, CapeParams(k=1, noise_multiplier=1.0), 1)
    tags = sorted((r.tag, r.src, r.dst) for r in eng.transcript)
    assert len(tags) == 4 * 4  # E_s, F_s, upload, release per site
    assert {t for t, _, _ in tags} == {(0, 0, 1), (0, 0, 2), (0, 1, 1), (0, 1, 2)}
    assert cape_star_network(4).graph.number_of_edges() == 8


@pytest.mark.parametrize("name", ["ring5", "grid3", "path4"])
@pytest.mark.parametrize("cond", list(CONDITIONS))
def test_capepca_gossip_on_the_engine_equals_run_cape_gossip(name, cond):
    net = NETS[name]()
    data = data_for(net.m, d=3, rows_per_agent=2, seed=4)
    params = CapeGossipParams(k=2, consensus_steps=4, edge_multiplier=3.0, own_multiplier=0.8)
    eng = run_cape_engine("capepca-gossip", data, net, params, 11, conditions=CONDITIONS[cond])
    ref = run_cape_gossip(data, net, params, 11, record_states=True)
    assert eng.status == "completed"
    for name_ in ("initial", "states", "estimates", "eigenvalues", "eigenvectors", "limit"):
        close(getattr(ref, name_), getattr(eng.result, name_))
    close(ref.noise.D, eng.result.noise.D)
    close(ref.noise.G, eng.result.noise.G)


@pytest.mark.parametrize("name", ["ring5", "grid3", "path4"])
@pytest.mark.parametrize("cond", list(CONDITIONS))
@pytest.mark.parametrize("disseminate", [True, False])
def test_floorfree_on_the_engine_equals_run_floorfree(name, cond, disseminate):
    net = NETS[name]()
    data = data_for(net.m, d=4, rows_per_agent=3, seed=2)
    params = FloorFreeParams(iterations=3, consensus_steps=3, noise_multiplier=0.5, disseminate=disseminate)
    eng = run_floorfree_engine(data, net, params, 7, conditions=CONDITIONS[cond])
    ref = run_floorfree(data, net, params, 7, record_states=True)
    assert eng.status == "completed"
    for f in ("directions", "z", "q_local", "states"):
        close(getattr(ref, f), getattr(eng.result, f))
    if disseminate:
        close(ref.q_released, eng.result.q_released)
        for v in eng.values:  # every agent rebuilt q^(T) from the flood
            close(ref.q_released, v["assembled"])
    else:
        assert eng.result.q_released is None
        assert not any(r.tag[0] == 1 for r in eng.transcript)


def test_a_crash_stops_the_run_and_gives_no_result():
    net = NETS["ring5"]()
    data = data_for(5, d=3, rows_per_agent=2, seed=2)
    params = FloorFreeParams(iterations=2, consensus_steps=2, noise_multiplier=0.5)
    eng = run_floorfree_engine(data, net, params, 1,
                               conditions={"latency": {"kind": "constant", "value": 0.01},
                                           "crashes": {2: 0.005}})
    assert eng.status == "stopped" and eng.result is None
    cape = run_cape_engine("capepca", data, None, CapeParams(k=1, noise_multiplier=1.0), 1,
                           conditions={"latency": {"kind": "constant", "value": 0.01},
                                       "crashes": {5: 0.001}})  # the aggregator
    assert cape.status == "stopped" and cape.result is None
    assert "capepca needs every party's message" in cape.outcome.reason and "[5]" in cape.outcome.reason
    assert "floor-free D-DP-PM" in eng.outcome.reason


def test_a_crash_after_the_last_message_keeps_the_release():
    data = data_for(4, d=3, rows_per_agent=2, seed=2)
    params = CapeParams(k=1, noise_multiplier=1.0)
    eng = run_cape_engine("capepca", data, None, params, 3,
                          conditions={"latency": {"kind": "constant", "value": 0.01}, "crashes": {0: 0.015}})
    assert eng.status == "completed_with_crash"  # site 0 after its upload, before the release came back
    np.testing.assert_allclose(eng.result.aggregate, run_cape(data, params, 3).aggregate, rtol=0, atol=1e-12)


def test_bad_inputs_name_the_field():
    data = data_for(4, d=3, rows_per_agent=2, seed=2)
    with pytest.raises(ConfigError, match="kind"):
        run_cape_engine("cape", data, None, CapeParams(k=1, noise_multiplier=1.0), 1)
    with pytest.raises(ConfigError, match="params"):
        run_cape_engine("capepca-gossip", data, NETS["path4"](), CapeParams(k=1, noise_multiplier=1.0), 1)
    with pytest.raises(ConfigError, match="params.k"):
        run_cape_engine("capepca", data, None, CapeParams(k=4, noise_multiplier=1.0), 1)
    with pytest.raises(ConfigError, match="network"):
        run_floorfree_engine(data, NETS["ring5"](), FloorFreeParams(iterations=1, consensus_steps=1,
                                                                    noise_multiplier=1.0), 1)
