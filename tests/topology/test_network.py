"""make_network: generated and file topologies, mixing defaults, validation, summary text."""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest

from dpgossip.errors import ConfigError
from dpgossip.topology import Network, make_network, save_graph_json, shipped_path, summary_text

PAPER_W = np.array([[.5, .25, 0, .25], [.25, .5, .25, 0], [0, .25, .5, .25], [.25, 0, .25, .5]])


def test_generated_network():
    net = make_network("ring", agents=6)
    assert isinstance(net, Network)
    assert (net.name, net.mixing, net.m) == ("ring", "metropolis", 6)
    assert net.neighbours[0] == (1, 5)
    np.testing.assert_allclose(net.W.toarray(), (np.eye(6) + nx.to_numpy_array(nx.cycle_graph(6))) / 3)
    assert nx.is_frozen(net.graph)
    assert make_network("grid", params={"rows": 2, "cols": 3}).m == 6


def test_random_network_is_reproducible():
    a = make_network("erdos_renyi", agents=12, seed=7, mixing="max_degree")
    b = make_network("erdos_renyi", agents=12, seed=7, mixing="max_degree")
    assert set(a.graph.edges) == set(b.graph.edges)
    np.testing.assert_array_equal(a.W.toarray(), b.W.toarray())


def test_shipped_paper_ring_uses_its_own_matrix():
    net = make_network("paper-ring4")
    assert (net.name, net.mixing, net.m) == ("paper-ring4", "explicit", 4)
    np.testing.assert_array_equal(net.W.toarray(), PAPER_W)
    assert make_network("paper-ring4", mixing="file", agents=4).mixing == "explicit"
    # naming a rule recomputes W from the file's graph: Metropolis on C_4 is (I + A)/3
    net = make_network("paper-ring4", mixing="metropolis")
    np.testing.assert_allclose(net.W.toarray(), (np.eye(4) + nx.to_numpy_array(nx.cycle_graph(4))) / 3)
    # a path works too
    np.testing.assert_array_equal(make_network(shipped_path("paper-ring4")).W.toarray(), PAPER_W)
    np.testing.assert_array_equal(make_network(str(shipped_path("paper-ring4"))).W.toarray(), PAPER_W)


def test_bare_shipped_file_name_falls_back_to_the_package(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    np.testing.assert_array_equal(make_network("paper-ring4.json").W.toarray(), PAPER_W)
    # a local file of the same name wins
    save_graph_json(nx.cycle_graph(4), None, tmp_path / "paper-ring4.json")
    assert make_network("paper-ring4.json").mixing == "metropolis"


def test_file_without_weights_defaults_to_metropolis():
    net = make_network("karate-club")
    assert (net.mixing, net.m) == ("metropolis", 34)
    with pytest.raises(ConfigError, match=r"^mixing: 'explicit' needs a file with mixing "
                                          r"weights, but '.*karate-club\.json' has none"):
        make_network("karate-club", mixing="explicit")


def test_invalid_file_matrix_is_reported_against_network_file(tmp_path):
    W = PAPER_W.copy()
    W[0, 2] = W[2, 0] = 0.125
    W[0, 0] = W[2, 2] = 0.375
    path = save_graph_json(nx.cycle_graph(4), W, tmp_path / "leaky.json")
    with pytest.raises(ConfigError, match=r"^topology: W\[0, 2\] = 0\.125 but \(0, 2\) is not"):
        make_network(path)
    data = json.loads(path.read_text())
    data["edges"] = data["edges"][:2]  # 0-1, 0-3 only: node 2 is cut off
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=r"^topology: the graph is disconnected: 2 "):
        make_network(path, mixing="metropolis")


def test_bad_inputs():
    with pytest.raises(ConfigError, match=r"^topology: unknown topology 'rign' \(did you "
                                          r"mean 'ring'\?\); known: .*karate-club.*paper-ring4"):
        make_network("rign", agents=4)
    with pytest.raises(ConfigError, match=r"did you mean 'paper-ring4'"):
        make_network("paper-ring", agents=4)
    with pytest.raises(ConfigError, match=r"^mixing: unknown mixing rule 'metropolsi' "
                                          r"\(did you mean 'metropolis'\?\); known: metropolis"):
        make_network("ring", agents=4, mixing="metropolsi")
    with pytest.raises(ConfigError, match=r"^agents: 5 does not match the 4 nodes"):
        make_network("paper-ring4", agents=5)
    with pytest.raises(ConfigError, match=r"^params: .*not allowed with a topology file"):
        make_network("paper-ring4", params={"p": 0.5})
    with pytest.raises(ConfigError, match=r"^mixing: 'explicit' means the mixing matrix "
                                          r"given in a topology file, but 'ring' is generated"):
        make_network("ring", agents=4, mixing="explicit")
    with pytest.raises(ConfigError, match=r"^agents: must be an integer >= 2, got 4\.0"):
        make_network("ring", agents=4.0)
    with pytest.raises(ConfigError, match=r"^agents: 1 is too small"):
        make_network("complete", agents=1)
    with pytest.raises(ConfigError, match=r"^agents: hypercube .* got 6"):
        make_network("hypercube", agents=6)
    with pytest.raises(ConfigError, match=r"^topology: '.*graph\.csv' has unknown extension"):
        make_network("graph.csv")
    with pytest.raises(ConfigError, match=r"^topology: no such file '.*nowhere\.json'"):
        make_network("nowhere.json")


def test_best_constant_with_negative_diagonal_is_rejected_with_advice():
    # star K_{1,3}: a = 2/5, hub diagonal 1 - 3 a = -1/5
    with pytest.raises(ConfigError, match=r"negative entry W\[0, 0\] = -0\.2.*best_constant.*"
                                          r"agent 0 of degree 3"):
        make_network("star", agents=4, mixing="best_constant")
    assert make_network("ring", agents=6, mixing="best_constant").mixing == "best_constant"


def test_summary_text():
    lines = summary_text(make_network("paper-ring4")).splitlines()
    fields = {line[:26].strip(): line[26:].strip() for line in lines}
    assert fields == {
        "name": "paper-ring4",
        "nodes": "4",
        "edges": "4",
        "degree": "min 2, mean 2, max 2",
        "diameter": "2",
        "mixing": "explicit",
        "SLEM": "0.5",
        "spectral gap": "0.5",
        "rounds to 1e-3, 1e-6, 1e-9": "10 / 20 / 30",  # 0.5^c <= 1e-3, 1e-6, 1e-9
    }
