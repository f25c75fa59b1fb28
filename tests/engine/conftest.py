"""Shared helpers of the engine tests: small networks, parameters and a comparison with the matrix
backend."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from dpgossip.engine import HEADER_BYTES
from dpgossip.protocols.ddppm.params import NoiseSchedule, resolve_params
from dpgossip.protocols.ddppm.result import RunResult
from tests.conftest import net_from_graph, spiked_data

NOISY = NoiseSchedule(kind="constant", scale=0.1)
FIELDS = ("iterates", "z", "z_half", "noise", "Q", "deflation")


def relabelled(graph: nx.Graph) -> nx.Graph:
    """Graph on 0..m-1 in sorted order of the original labels."""
    return nx.convert_node_labels_to_integers(graph, ordering="sorted")


def grid3():
    return net_from_graph(relabelled(nx.grid_2d_graph(3, 3)), "grid3x3")


def ws12():
    return net_from_graph(relabelled(nx.connected_watts_strogatz_graph(12, 4, 0.3, seed=5)),
                          "ws12")


def data_for(m: int, d: int = 6, rows_per_agent: int = 4, seed: int = 1):
    return spiked_data(m * rows_per_agent, d, [5, 3, 2, 1, 0.5, 0.2][:d], m, seed=seed)


def params_for(data, net, T=3, c=2, r=1, noise=NOISY, **kw):
    return resolve_params(data, net, iterations=T, consensus_steps=c, rank=r, noise=noise, **kw)


def assert_same_run(a: RunResult, b: RunResult, rel: float = 1e-10) -> None:
    """Every iterate of ``b`` equals ``a``'s to ``rel`` relative to each component's scale."""
    for name in FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.shape == y.shape, name
        for l in range(x.shape[0] if name != "Q" else 1):
            xs, ys = (x, y) if name == "Q" else (x[l], y[l])
            scale = max(1.0, float(np.max(np.abs(xs))))
            np.testing.assert_allclose(ys, xs, rtol=0, atol=rel * scale, err_msg=name)


def flood_oracle(graph: nx.Graph) -> tuple[int, int]:
    """Messages and block copies of one component's batched flood when every hop takes the same
    time (docs/engine.md): at hop ``h + 1`` agent ``i`` sends to neighbour ``v`` the origins ``o``
    with ``dist(o, i) = h`` that ``v`` did not send it at hop ``h`` (``dist(o, v) >= h``), one
    message if there is any. Computed from BFS distances alone."""
    dist = dict(nx.all_pairs_shortest_path_length(graph))
    messages = blocks = 0
    for i, v in list(graph.edges()) + [(b, a) for a, b in graph.edges()]:
        per_hop: dict[int, int] = {}
        for o, h in dist[i].items():
            if dist[v][o] >= h:
                per_hop[h] = per_hop.get(h, 0) + 1
        messages += len(per_hop)
        blocks += sum(per_hop.values())
    return messages, blocks


def check_flood(res, data, net, r: int) -> None:
    """Every agent received every origin's block, equal to ``q_o^(T)``; each block crossed each
    directed edge at most once; sizes count the payload, the header and 8 bytes per block."""
    seen = set()
    for rec in res.transcript:
        if rec.kind != "final":
            continue
        assert rec.size_bytes == rec.payload.nbytes + HEADER_BYTES + 8 * len(rec.origins)
        for o, block in rec.final_blocks().items():
            l = rec.tag[1]
            key = (l, o, rec.src, rec.dst)
            assert key not in seen, f"block {o} crossed {rec.src} -> {rec.dst} twice"
            seen.add(key)
            np.testing.assert_array_equal(
                block, res.iterates[l, -1, data.offsets[o]:data.offsets[o + 1]])
    for l in range(r):
        for o in range(net.m):
            got = {dst for (ll, oo, _, dst) in seen if ll == l and oo == o} | {o}
            assert got == set(range(net.m)), (l, o)


@pytest.fixture
def ring_data(small_data):
    return small_data
