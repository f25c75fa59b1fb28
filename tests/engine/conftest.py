"""Shared helpers of the engine tests: small networks, parameters and a comparison with the matrix
backend."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from dpgossip.protocol import NoiseSchedule, resolve_params
from dpgossip.protocol.result import RunResult
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


@pytest.fixture
def ring_data(small_data):
    return small_data
