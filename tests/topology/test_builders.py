"""Generated graphs: structure against independent constructions, seeding, and input errors."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest

from dpgossip.errors import ConfigError
from dpgossip.topology import TOPOLOGIES, build_graph
from dpgossip.topology.builders import canonical_graph, grid_shape, node_sort_key


def edge_set(g: nx.Graph) -> set[tuple[int, int]]:
    return {(min(u, v), max(u, v)) for u, v in g.edges()}


def assert_canonical(g: nx.Graph, m: int) -> None:
    assert list(g.nodes) == list(range(m))
    assert nx.is_connected(g)
    assert nx.number_of_selfloops(g) == 0
    assert type(g) is nx.Graph


DEFAULTS = {
    "ring": 8, "path": 8, "star": 8, "complete": 8, "grid": 12, "torus": 12, "hypercube": 16,
    "erdos_renyi": 20, "random_geometric": 20, "random_regular": 20, "watts_strogatz": 20,
    "barabasi_albert": 20,
}


@pytest.mark.parametrize("name", TOPOLOGIES)
def test_every_topology_is_canonical_and_connected(name):
    m = DEFAULTS[name]
    assert_canonical(build_graph(name, m, seed=3), m)


def test_edge_sets_match_definitions():
    m = 7
    assert edge_set(build_graph("ring", m)) == {(i, i + 1) for i in range(m - 1)} | {(0, m - 1)}
    assert edge_set(build_graph("path", m)) == {(i, i + 1) for i in range(m - 1)}
    assert edge_set(build_graph("star", m)) == {(0, i) for i in range(1, m)}
    assert edge_set(build_graph("complete", m)) == set(itertools.combinations(range(m), 2))


@pytest.mark.parametrize(("m", "rows", "cols"), [(12, 3, 4), (36, 6, 6), (8, 2, 4), (4, 2, 2),
                                                 (30, 5, 6)])
def test_grid_is_most_square_and_row_major(m, rows, cols):
    g = build_graph("grid", m)
    # row-major: node i sits at (i // cols, i % cols); neighbours right (i+1) and below (i+cols)
    expected = {(i, i + 1) for i in range(m) if i % cols != cols - 1}
    expected |= {(i, i + cols) for i in range(m - cols)}
    assert edge_set(g) == expected
    assert g.number_of_edges() == rows * (cols - 1) + cols * (rows - 1)


def test_grid_params_and_errors():
    assert grid_shape(12, rows=2) == (2, 6)
    assert grid_shape(12, cols=2) == (6, 2)
    assert grid_shape(None, rows=3, cols=5) == (3, 5)
    assert build_graph("grid", None, params={"rows": 3, "cols": 5}).number_of_nodes() == 15
    with pytest.raises(ConfigError, match=r"^agents: grid .* 7 is prime.*path"):
        build_graph("grid", 7)
    with pytest.raises(ConfigError, match=r"^params\.rows: .*3 x 5 = 15.*16"):
        build_graph("grid", 16, params={"rows": 3, "cols": 5})
    with pytest.raises(ConfigError, match=r"^params\.rows: 5 does not divide .* 12"):
        build_graph("grid", 12, params={"rows": 5})
    with pytest.raises(ConfigError, match=r"params\.rows: 1 .*rows must be an integer >= 2"):
        build_graph("grid", 12, params={"rows": 1})


def test_torus_is_4_regular_with_wraparound():
    g = build_graph("torus", 12)  # 3 x 4
    assert all(d == 4 for _, d in g.degree())
    expected = {(min(i, j), max(i, j)) for i in range(12)
                for j in ((i // 4) * 4 + (i % 4 + 1) % 4, (i + 4) % 12)}
    assert edge_set(g) == expected
    with pytest.raises(ConfigError, match=r"^agents: torus .* >= 3; 8 has no such"):
        build_graph("torus", 8)


def test_hypercube_adjacency_is_one_bit_flip():
    g = build_graph("hypercube", 16)
    expected = {(i, j) for i in range(16) for j in range(i + 1, 16) if bin(i ^ j).count("1") == 1}
    assert edge_set(g) == expected
    with pytest.raises(ConfigError, match=r"^agents: hypercube .*power of two.*got 6"):
        build_graph("hypercube", 6)


def test_random_family_edge_counts():
    assert build_graph("random_regular", 20, seed=1, params={"degree": 4}).number_of_edges() == 40
    assert build_graph("watts_strogatz", 20, seed=1, params={"k": 6}).number_of_edges() == 60
    # Barabasi-Albert: star on attach+1 nodes, then attach edges per new node: attach (m - attach)
    assert build_graph("barabasi_albert", 20, seed=1, params={"attach": 3}).number_of_edges() == 51
    assert edge_set(build_graph("erdos_renyi", 9, seed=1, params={"p": 1.0})) == set(
        itertools.combinations(range(9), 2))
    assert edge_set(build_graph("random_geometric", 9, seed=1, params={"radius": 2**0.5})) == set(
        itertools.combinations(range(9), 2))


@pytest.mark.parametrize("name", ["erdos_renyi", "random_geometric", "random_regular",
                                  "watts_strogatz", "barabasi_albert"])
def test_same_seed_same_graph_different_seed_different_graph(name):
    a = build_graph(name, 30, seed=11)
    b = build_graph(name, 30, seed=11)
    c = build_graph(name, 30, seed=12)
    assert edge_set(a) == edge_set(b)
    assert edge_set(a) != edge_set(c)
    g1 = build_graph(name, 30, seed=np.random.default_rng(5))
    g2 = build_graph(name, 30, seed=np.random.default_rng(5))
    assert edge_set(g1) == edge_set(g2)


def test_resampling_failure_names_p_and_m():
    with pytest.raises(ConfigError, match=r"^params\.p: erdos_renyi with m = 40 agents "
                                          r"and p = 0\.01 .*all 5 samples"):
        build_graph("erdos_renyi", 40, seed=0, params={"p": 0.01, "max_tries": 5})
    with pytest.raises(ConfigError, match=r"^params\.radius: .*radius = 0\.01"):
        build_graph("random_geometric", 40, seed=0, params={"radius": 0.01, "max_tries": 3})


def test_bad_names_sizes_and_params():
    with pytest.raises(ConfigError, match=r"^topology: unknown topology 'rign' "
                                          r"\(did you mean 'ring'\?\); known: ring, path"):
        build_graph("rign", 5)
    with pytest.raises(ConfigError, match=r"^agents: 1 is too small.*at least 2"):
        build_graph("path", 1)
    with pytest.raises(ConfigError, match=r"^agents: must be an integer.*'5'"):
        build_graph("path", "5")
    with pytest.raises(ConfigError, match=r"^agents: a ring needs at least 3 agents, "
                                          r"got 2"):
        build_graph("ring", 2)
    with pytest.raises(ConfigError, match=r"^params\.degree: unknown parameter 'degree' "
                                          r"for topology 'ring'.*allowed: none"):
        build_graph("ring", 5, params={"degree": 2})
    with pytest.raises(ConfigError, match=r"^params\.pp: .*did you mean 'p'.*allowed: p, "
                                          r"max_tries"):
        build_graph("erdos_renyi", 5, params={"pp": 0.5})
    with pytest.raises(ConfigError, match=r"^params\.p: 1\.5 .*\(0, 1\]"):
        build_graph("erdos_renyi", 5, params={"p": 1.5})
    with pytest.raises(ConfigError, match=r"^params\.degree: 3 .*5 agents.*even"):
        build_graph("random_regular", 5)
    with pytest.raises(ConfigError, match=r"^params\.degree: 6 .*must be < agents"):
        build_graph("random_regular", 6, params={"degree": 6})
    with pytest.raises(ConfigError, match=r"^params\.k: 3 .*even"):
        build_graph("watts_strogatz", 10, params={"k": 3})
    with pytest.raises(ConfigError, match=r"^params\.attach: 5 .*< agents"):
        build_graph("barabasi_albert", 5, params={"attach": 5})
    with pytest.raises(ConfigError, match=r"^params\.max_tries: 0 "):
        build_graph("erdos_renyi", 5, params={"max_tries": 0})
    with pytest.raises(ConfigError, match=r"^agents: required for topology 'ring'"):
        build_graph("ring", None)


def test_canonical_relabelling_uses_natural_sorted_labels():
    assert sorted(["n10", "n2", "n1"], key=node_sort_key) == ["n1", "n2", "n10"]
    assert sorted(["10", "9", 3], key=node_sort_key) == [3, "9", "10"]
    raw = nx.Graph([("n10", "n2"), ("n2", "n1"), ("n1", "n1")])
    g, labels = canonical_graph(raw)
    assert labels == ["n1", "n2", "n10"]
    assert list(g.nodes) == [0, 1, 2]
    assert edge_set(g) == {(0, 1), (1, 2)}
