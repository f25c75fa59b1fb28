"""Reading and writing topology files; the shipped files."""

from __future__ import annotations

import filecmp
import json
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from dpgossip.errors import ConfigError
from dpgossip.topology import (
    SHIPPED_DIR,
    SHIPPED_TOPOLOGIES,
    build_graph,
    load_graph,
    mixing_matrix,
    save_graph_json,
    shipped_path,
)

REPO_TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"
PAPER_W = [[.5, .25, 0, .25], [.25, .5, .25, 0], [0, .25, .5, .25], [.25, 0, .25, .5]]


def edge_set(g: nx.Graph) -> set[tuple[int, int]]:
    return {(min(u, v), max(u, v)) for u, v in g.edges()}


# --- shipped files --------------------------------------------------------------------------


def test_shipped_files_are_identical_in_package_and_repository():
    shipped = sorted(p.name for p in SHIPPED_DIR.iterdir() if p.is_file())
    browsable = sorted(p.name for p in REPO_TOPOLOGIES.iterdir() if p.is_file())
    assert shipped == browsable
    assert {"paper-ring4.json", "karate-club.json", "florentine-families.json"} <= set(shipped)
    for name in shipped:
        assert filecmp.cmp(SHIPPED_DIR / name, REPO_TOPOLOGIES / name, shallow=False), name


def test_paper_ring4_has_exactly_the_paper_matrix():
    loaded = load_graph(shipped_path("paper-ring4"))
    assert loaded.name == "paper-ring4"
    assert edge_set(loaded.graph) == {(0, 1), (1, 2), (2, 3), (0, 3)}
    assert loaded.W is not None
    np.testing.assert_array_equal(loaded.W.toarray(), np.array(PAPER_W))
    # and literally so in the JSON text
    assert json.loads(shipped_path("paper-ring4").read_text())["W"] == PAPER_W


def test_karate_club_is_zachary_graph_without_weights():
    loaded = load_graph(shipped_path("karate-club"))
    ref = nx.karate_club_graph()
    assert loaded.W is None
    assert loaded.graph.number_of_nodes() == 34 and loaded.graph.number_of_edges() == 78
    assert edge_set(loaded.graph) == edge_set(ref)
    assert all(loaded.graph.nodes[i]["club"] == ref.nodes[i]["club"] for i in range(34))
    assert "Zachary" in loaded.source and "1977" in loaded.source
    assert loaded.description


def test_florentine_families_in_alphabetical_order():
    loaded = load_graph(shipped_path("florentine-families"))
    ref = nx.florentine_families_graph()
    names = sorted(ref.nodes)
    relabelled = nx.relabel_nodes(ref, {n: i for i, n in enumerate(names)})
    assert loaded.W is None
    assert edge_set(loaded.graph) == edge_set(relabelled)
    assert [loaded.graph.nodes[i]["family"] for i in range(15)] == names
    assert "Padgett" in loaded.source and "Breiger" in loaded.source


def test_shipped_names():
    assert set(SHIPPED_TOPOLOGIES) == {"paper-ring4", "karate-club", "florentine-families"}
    with pytest.raises(ConfigError, match=r"no shipped topology file 'nope'; shipped: "):
        shipped_path("nope")


# --- JSON -------------------------------------------------------------------------------------


def test_json_round_trip_with_weights_is_exact(tmp_path):
    g = build_graph("random_geometric", 15, seed=2)  # carries node attribute "pos"
    W = mixing_matrix(g, "metropolis")
    path = save_graph_json(g, W, tmp_path / "rgg.json", description="test", source="here")
    loaded = load_graph(path)
    assert loaded.name == "rgg" and loaded.description == "test" and loaded.source == "here"
    assert edge_set(loaded.graph) == edge_set(g)
    np.testing.assert_array_equal(loaded.W.toarray(), W.toarray())  # bit-for-bit
    assert loaded.graph.nodes[3]["pos"] == list(g.nodes[3]["pos"])
    assert loaded.to_row() == {"name": "rgg", "path": str(path), "agents": 15,
                               "edges": g.number_of_edges(), "has_weights": True}


def test_json_round_trip_without_weights(tmp_path):
    g = nx.petersen_graph()
    loaded = load_graph(save_graph_json(g, None, tmp_path / "p.json"))
    assert loaded.W is None and edge_set(loaded.graph) == edge_set(g)


def test_json_edge_weights_and_self_weights(tmp_path):
    data = {"nodes": [{"id": 0, "self_weight": 0.5}, {"id": 1}, {"id": 2}],
            "edges": [{"source": 0, "target": 1, "weight": 0.5},
                      {"source": 1, "target": 2, "weight": 0.25}]}
    (tmp_path / "w.json").write_text(json.dumps(data))
    W = load_graph(tmp_path / "w.json").W.toarray()
    # node 0 given 1/2; node 1 fills 1 - 1/2 - 1/4 = 1/4; node 2 fills 1 - 1/4 = 3/4
    np.testing.assert_array_equal(W, [[.5, .5, 0], [.5, .25, .25], [0, .25, .75]])


def test_json_string_ids_are_sorted_and_w_permuted(tmp_path):
    # file order n10, n2, n1; natural order n1 < n2 < n10 -> new labels n1:0, n2:1, n10:2
    data = {"nodes": [{"id": "n10"}, {"id": "n2"}, {"id": "n1"}],
            "links": [{"source": "n10", "target": "n2"}, {"source": "n2", "target": "n1"}],
            "W": [[0.7, 0.3, 0.0], [0.3, 0.4, 0.3], [0.0, 0.3, 0.7]]}
    (tmp_path / "s.json").write_text(json.dumps(data))
    loaded = load_graph(tmp_path / "s.json")
    assert loaded.labels == ("n1", "n2", "n10")
    assert [loaded.graph.nodes[i]["label"] for i in range(3)] == ["n1", "n2", "n10"]
    assert edge_set(loaded.graph) == {(0, 1), (1, 2)}
    np.testing.assert_array_equal(loaded.W.toarray(), [[0.7, 0.3, 0.0], [0.3, 0.4, 0.3], [0.0, 0.3, 0.7]])
    data["W"][0][0] = 0.6  # W_file[n10, n10] -> new W[2, 2]
    (tmp_path / "s.json").write_text(json.dumps(data))
    assert load_graph(tmp_path / "s.json").W[2, 2] == 0.6


def test_networkx_node_link_output_is_readable(tmp_path):
    g = nx.cycle_graph(5)
    (tmp_path / "nx.json").write_text(json.dumps(nx.node_link_data(g, edges="links")))
    assert edge_set(load_graph(tmp_path / "nx.json").graph) == edge_set(g)


@pytest.mark.parametrize(("data", "message"), [
    ({"nodes": [{"id": 0}, {"id": 1}], "edges": [{"source": 0, "target": 1, "weight": 0.5}],
      "W": [[0.5, 0.5], [0.5, 0.5]]}, r"both a top-level 'W' and 'weight'"),
    ({"nodes": [{"id": 0}, {"id": 1}, {"id": 2}],
      "edges": [{"source": 0, "target": 1, "weight": 0.5}, {"source": 1, "target": 2}]},
     r"edges\[1\] \(1, 2\) has no 'weight' but other edges do"),
    ({"nodes": [{"id": 0}, {"id": 1}], "edges": [{"source": 0, "target": 7}]},
     r"edges\[0\] refers to unknown node 7"),
    ({"nodes": [{"id": 0}, {"id": 1}], "edges": [], "W": [[1.0]]},
     r"'W' has shape \(1, 1\) but the file has 2 nodes"),
    ({"directed": True, "nodes": [{"id": 0}], "edges": []}, r"directed"),
    ({"nodes": [{"id": 0}, {"id": 0}], "edges": []}, r"duplicate node id 0"),
    ({"edges": []}, r"'nodes' list"),
])
def test_bad_json_content(tmp_path, data, message):
    (tmp_path / "bad.json").write_text(json.dumps(data))
    pattern = r"^path: cannot read '.*bad\.json': .*" + message
    with pytest.raises(ConfigError, match=pattern):
        load_graph(tmp_path / "bad.json")


def test_unparseable_json(tmp_path):
    (tmp_path / "broken.json").write_text("{nodes: ")
    with pytest.raises(ConfigError, match=r"broken\.json.*not valid JSON.*allowed formats: \.json"):
        load_graph(tmp_path / "broken.json")


# --- edge lists -------------------------------------------------------------------------------


def test_edgelist_with_comments_weights_and_self_weight(tmp_path):
    text = """# a weighted path on 1-based labels
    1 2 0.5   # trailing comment
    2 3 0.25

    1 1 0.5
    """
    (tmp_path / "p.edgelist").write_text(text)
    loaded = load_graph(tmp_path / "p.edgelist")
    assert loaded.labels == (1, 2, 3)
    assert edge_set(loaded.graph) == {(0, 1), (1, 2)}
    np.testing.assert_array_equal(loaded.W.toarray(), [[.5, .5, 0], [.5, .25, .25], [0, .25, .75]])


def test_edgelist_unweighted_numeric_labels_sort_numerically(tmp_path):
    (tmp_path / "r.txt").write_text("10 2\n2 9\n9 10\n")
    loaded = load_graph(tmp_path / "r.txt")
    assert loaded.W is None and loaded.labels == (2, 9, 10)
    assert edge_set(loaded.graph) == {(0, 1), (1, 2), (0, 2)}


@pytest.mark.parametrize(("text", "message"), [
    ("0 1 0.5\n1 2\n", r"line 2: some lines have a weight and some do not"),
    ("0 1 2 3\n", r"line 1: expected 'u v' or 'u v weight', got '0 1 2 3'"),
    ("0 1 abc\n", r"line 1: weight 'abc' is not a number"),
    ("0 1 0.5\n1 0 0.25\n", r"line 2: edge \(1, 0\) has two weights, 0\.5 and 0\.25"),
    ("# nothing\n", r"no edges"),
])
def test_bad_edgelist(tmp_path, text, message):
    (tmp_path / "bad.edgelist").write_text(text)
    pattern = r"^path: cannot read .*bad\.edgelist.*" + message
    with pytest.raises(ConfigError, match=pattern):
        load_graph(tmp_path / "bad.edgelist")


# --- GraphML ----------------------------------------------------------------------------------


def test_graphml_with_and_without_weights(tmp_path):
    g = nx.cycle_graph(4)
    nx.write_graphml(g, tmp_path / "plain.graphml")
    plain = load_graph(tmp_path / "plain.graphml")
    assert plain.W is None and edge_set(plain.graph) == edge_set(g)
    for u, v in g.edges():
        g.edges[u, v]["weight"] = 0.25
    nx.write_graphml(g, tmp_path / "w.graphml")
    np.testing.assert_array_equal(load_graph(tmp_path / "w.graphml").W.toarray(), PAPER_W)


def test_bad_graphml(tmp_path):
    nx.write_graphml(nx.DiGraph([(0, 1)]), tmp_path / "d.graphml")
    with pytest.raises(ConfigError, match=r"d\.graphml.*directed"):
        load_graph(tmp_path / "d.graphml")
    (tmp_path / "x.graphml").write_text("<graphml><graph")
    with pytest.raises(ConfigError, match=r"x\.graphml.*not valid GraphML"):
        load_graph(tmp_path / "x.graphml")


# --- paths and extensions ---------------------------------------------------------------------


def test_unknown_extension_and_missing_file(tmp_path):
    (tmp_path / "g.csv").write_text("0,1\n")
    with pytest.raises(ConfigError, match=r"^path: '.*g\.csv' has unknown extension "
                                          r"'\.csv'; allowed formats: \.json .*\.graphml.*"
                                          r"\.edgelist"):
        load_graph(tmp_path / "g.csv")
    with pytest.raises(ConfigError, match=r"^path: no such file '.*missing\.json'; "
                                          r"allowed formats"):
        load_graph(tmp_path / "missing.json")


def test_fast_edge_lines_are_what_json_writes(tmp_path):
    """Edges written by the direct formatter are, line for line, ``json.dumps`` of the same dicts."""
    import json

    import numpy as np

    from dpgossip.topology import make_network, save_graph_json

    net = make_network("random_geometric", agents=40, seed=3)
    path = save_graph_json(net.graph, net.W, tmp_path / "g.json")
    text = path.read_text(encoding="utf-8")
    block = text[text.index('"edges": [') + len('"edges": ['):text.index("\n  ]", text.index('"edges"'))]
    lines = [ln.strip().rstrip(",") for ln in block.strip().splitlines()]
    assert len(lines) == net.graph.number_of_edges()
    for ln in lines:
        assert json.dumps(json.loads(ln), allow_nan=False, ensure_ascii=False) == ln
    W = net.W.toarray()
    for ln in lines:
        d = json.loads(ln)
        assert d["weight"] == W[d["source"], d["target"]]  # repr round-trips exactly
    assert np.array_equal(load_graph(path).W.toarray(), W)


def test_weight_off_the_edges_keeps_the_dense_form(tmp_path):
    """The vectorised pattern check still sends a W with weight off the edges to the dense form."""
    import json

    import networkx as nx
    import numpy as np

    from dpgossip.topology import save_graph_json

    g = nx.path_graph(5)
    W = np.full((5, 5), 0.2)  # weight between every pair, the path has 4 edges
    path = save_graph_json(g, W, tmp_path / "dense.json")
    assert "W" in json.loads(path.read_text(encoding="utf-8"))
