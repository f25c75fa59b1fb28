"""Dissemination of q^(T) along the BFS spanning tree: the tree, the exact traffic, the estimate."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from dpgossip.engine import HEADER_BYTES, NetworkConditions
from dpgossip.engine.messages import BlockIndex, block_squares
from dpgossip.engine.tree import TreeCast, bfs_tree
from dpgossip.errors import ConfigError
from dpgossip.protocols.ddppm.matrix import run_matrix
from dpgossip.protocols.ddppm.nodes import run_engine
from tests.conftest import net_from_graph
from tests.engine.conftest import assert_same_run, data_for, grid3, params_for, ws12

RESULT_FIELDS = ("iterates", "z", "z_half", "noise", "Q", "deflation")


def _net(which: str):
    if which == "star":
        return net_from_graph(nx.star_graph(4))
    if which == "ring30":
        return net_from_graph(nx.cycle_graph(30))
    if which == "rgg":
        g = nx.random_geometric_graph(40, 0.3, seed=3)
        g = g.subgraph(max(nx.connected_components(g), key=len)).copy()
        return net_from_graph(nx.convert_node_labels_to_integers(g, ordering="sorted"))
    return grid3() if which == "grid" else ws12()


def _oracle_tree(graph: nx.Graph) -> tuple[dict[int, int], dict[int, set[int]]]:
    """networkx's BFS from 0 with sorted neighbours: parent of each agent, and its subtree."""
    parent = dict(nx.bfs_predecessors(graph, 0, sort_neighbors=sorted))
    tree = nx.DiGraph([(p, v) for v, p in parent.items()])
    tree.add_nodes_from(graph.nodes)
    return parent, {v: nx.descendants(tree, v) | {v} for v in graph.nodes}


GRAPHS = ["grid", "ws12", "star", "ring30", "rgg"]


@pytest.mark.parametrize("which", GRAPHS)
def test_bfs_tree_equals_networkx(which):
    net = _net(which)
    tree = bfs_tree(net.neighbours)
    parent, sub = _oracle_tree(net.graph)
    assert tree.parent[0] == -1 and all(tree.parent[v] == p for v, p in parent.items())
    dist = nx.single_source_shortest_path_length(net.graph, 0)
    assert tree.depth == tuple(dist[v] for v in range(net.m))
    assert tree.subtree_sizes() == tuple(len(sub[v]) for v in range(net.m))
    for v, kids in enumerate(tree.children):
        assert list(kids) == sorted(c for c, p in parent.items() if p == v)


def test_bfs_tree_rejects_a_disconnected_graph():
    with pytest.raises(ConfigError, match="not reachable") as e:
        bfs_tree(((1,), (0,), ()))
    assert e.value.field == "dissemination"


def test_block_squares_depend_only_on_the_block():
    """Each block's sum of squares is the same alone or inside any batch (empty blocks give 0)."""
    rng = np.random.default_rng(0)
    blocks = [rng.standard_normal(k) * 10.0 ** rng.integers(-3, 3) for k in
              [0, 1, 5, 7, 8, 9, 15, 16, 17, 130, 0, 3, 0]]
    alone = [block_squares(b, np.array([0, b.size]))[0] for b in blocks]
    assert alone[0] == 0.0
    for _ in range(5):
        order = rng.permutation(len(blocks))
        pay = np.concatenate([np.zeros(int(rng.integers(0, 3)))] + [blocks[k] for k in order])
        starts = np.cumsum([0] + [blocks[k].size for k in order]) + (pay.size - sum(
            b.size for b in blocks))
        got = block_squares(pay, np.concatenate([[0], starts])[1:])
        assert [alone[k] for k in order] == got.tolist()


def test_treecast_builds_the_subtree_batch_once():
    tc = TreeCast(parent=0, children=(4, 7))
    q = np.arange(3.0)
    tc.add_own(0, 2, q)
    assert tc.take_batch(0) is None and tc.missing_children(0) == (4, 7)
    tc.add_child(0, 7, np.array([9.0]), BlockIndex.of([7], [0, 1]))
    tc.add_child(0, 4, np.array([5.0, 6.0, 8.0]), BlockIndex.of([4, 5], [0, 2, 3]))
    payload, idx = tc.take_batch(0)
    assert payload.tolist() == [0, 1, 2, 5, 6, 8, 9]
    assert idx.origins.tolist() == [2, 4, 5, 7] and idx.starts.tolist() == [0, 3, 5, 6, 7]
    assert tc.take_batch(0) is None


def check_tree_traffic(res, data, net, r: int) -> None:
    """Per component exactly one message up each tree edge (child -> parent) carrying the child's
    subtree, one down (parent -> child) carrying all m blocks; every block equals q_o^(T); sizes
    are payload + header + 8 bytes per block; each block crosses each directed edge at most once."""
    parent, sub = _oracle_tree(net.graph)
    expect = {(l, v, p, frozenset(sub[v])) for l in range(r) for v, p in parent.items()}
    expect |= {(l, p, v, frozenset(range(net.m))) for l in range(r) for v, p in parent.items()}
    got, crossings = [], set()
    for rec in res.transcript:
        if rec.kind != "final":
            continue
        l = rec.tag[1]
        got.append((l, rec.src, rec.dst, frozenset(rec.origins)))
        assert len(set(rec.origins)) == len(rec.origins)
        assert rec.size_bytes == rec.payload.nbytes + HEADER_BYTES + 8 * len(rec.origins)
        for o, block in rec.final_blocks().items():
            assert (l, o, rec.src, rec.dst) not in crossings
            crossings.add((l, o, rec.src, rec.dst))
            np.testing.assert_array_equal(
                block, res.iterates[l, -1, data.offsets[o]:data.offsets[o + 1]])
    assert len(got) == len(set(got)) == 2 * r * (net.m - 1)
    assert set(got) == expect
    assert res.summary.flood_messages == 2 * r * (net.m - 1)


CONDITIONS = [None, {"latency": 0.01}, {"latency": {"kind": "exponential", "mean": 0.01}},
              {"latency": {"kind": "uniform", "low": 0.0, "high": 0.02}, "loss": 0.3,
               "retransmit_timeout": 0.05, "failure_timeout": 50.0}]


@pytest.mark.parametrize("cond", range(len(CONDITIONS)))
@pytest.mark.parametrize("which", GRAPHS)
def test_tree_traffic_and_estimate_equal_matrix(which, cond):
    net = _net(which)
    data = data_for(net.m, rows_per_agent=3)
    r = 2
    params = params_for(data, net, T=2, c=2, r=r)
    res = run_engine(data, net, params, seed=5, conditions=CONDITIONS[cond])
    assert res.status == "completed" and res.dissemination == "tree"
    check_tree_traffic(res, data, net, r)
    assert_same_run(run_matrix(data, net, params, 5), res)


@pytest.mark.parametrize("cond", [None, {"latency": {"kind": "exponential", "mean": 0.01}},
                                  {"loss": 0.2, "latency": 0.001, "retransmit_timeout": 0.05,
                                   "failure_timeout": 50.0}])
@pytest.mark.parametrize("which", ["grid", "ws12", "rgg"])
def test_estimate_is_bit_identical_whichever_dissemination(which, cond):
    """The flood and the tree give the same numbers bit for bit (rank 2: the deflation uses every
    agent's own ||q^(T)||, so this also checks that the norms agree exactly)."""
    net = _net(which)
    data = data_for(net.m, rows_per_agent=3)
    params = params_for(data, net, T=3, c=1, r=2)
    runs = {how: run_engine(data, net, params, seed=11,
                            conditions={**(cond or {}), "dissemination": how})
            for how in ("tree", "flood")}
    assert runs["tree"].dissemination == "tree" and runs["flood"].dissemination == "flood"
    for name in RESULT_FIELDS:
        np.testing.assert_array_equal(getattr(runs["tree"], name), getattr(runs["flood"], name),
                                      err_msg=name)


@pytest.mark.parametrize("which", ["ring4", "grid", "ring30"])
def test_completion_time_closed_form(which, paper_ring, small_data):
    """Constant latency L: T c gossip hops, then the convergecast and the broadcast, each as many
    hops as the tree's height h: completion at (T c + 2 h) L."""
    if which == "ring4":
        net, data = paper_ring, small_data
    else:
        net = _net(which)
        data = data_for(net.m, rows_per_agent=2)
    T, c, L = 2, 2, 0.01
    res = run_engine(data, net, params_for(data, net, T=T, c=c), seed=0,
                     conditions={"latency": L})
    h = max(nx.single_source_shortest_path_length(net.graph, 0).values())
    assert res.summary.completion_time == pytest.approx((T * c + 2 * h) * L, rel=1e-12)


def test_dissemination_setting():
    assert NetworkConditions().resolved_dissemination == "tree"
    assert NetworkConditions(crashes={1: 0.5}).resolved_dissemination == "flood"
    assert NetworkConditions(dissemination="flood").resolved_dissemination == "flood"
    assert NetworkConditions(crashes={1: 0.5}, dissemination="tree").resolved_dissemination == "tree"
    with pytest.raises(ConfigError, match="did you mean") as e:
        NetworkConditions.from_mapping({"dissemination": "tre"})
    assert e.value.field == "dissemination" and "auto, tree, flood" in str(e.value)
    with pytest.raises(ConfigError, match="no redundancy") as e:
        NetworkConditions(crashes={1: 0.5}, on_crash="reweight", dissemination="tree")
    assert e.value.field == "dissemination"
    with pytest.raises(ConfigError) as e:
        run_engine(data_for(4), net_from_graph(nx.cycle_graph(4)),
                   params_for(data_for(4), net_from_graph(nx.cycle_graph(4))), 0,
                   conditions={"dissemination": 3})
    assert e.value.field == "conditions.dissemination"


def test_auto_uses_the_flood_when_crashes_are_scheduled():
    net = grid3()
    data = data_for(net.m)
    params = params_for(data, net)
    res = run_engine(data, net, params, 1, conditions={"crashes": {8: 0.0},
                                                       "on_crash": "reweight"})
    assert res.dissemination == "flood" and res.status == "completed_with_crash"


def test_tree_with_a_crash_stops_cleanly():
    """The tree cannot route around a crash: with on_crash = 'stop' the run stops at detection."""
    net = grid3()
    data = data_for(net.m)
    params = params_for(data, net, T=2, c=1)
    res = run_engine(data, net, params, 1, conditions={
        "crashes": {4: 0.045}, "latency": 0.01, "failure_timeout": 0.2, "dissemination": "tree"})
    assert res.status == "stopped" and "crash detected" in res.outcome.reason
