"""Small graphs, data and runs shared by the ppm-gossip tests (protocol and privacy)."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np

from dpgossip.data.partition import PartitionedData
from dpgossip.topology.network import Network


def metropolis_network(graph: nx.Graph, name: str = "test") -> Network:
    """A :class:`Network` with Metropolis-Hastings weights ``1 / (1 + max(deg i, deg j))``, built here
    (not by :func:`dpgossip.topology.make_network`) so that the tests do not depend on the builders."""
    m = graph.number_of_nodes()
    W = np.zeros((m, m))
    for i, j in graph.edges:
        W[i, j] = W[j, i] = 1.0 / (1 + max(graph.degree(i), graph.degree(j)))
    W[np.diag_indices(m)] = 1.0 - W.sum(axis=1)
    return Network(graph=nx.freeze(graph), W=W, name=name, mixing="metropolis")


def dense_W(network: Network) -> np.ndarray:
    """``network.W`` as a dense array, whether it is stored dense or sparse."""
    W = network.W
    return W.toarray() if hasattr(W, "toarray") else np.asarray(W, dtype=float)


def slem(network: Network) -> float:
    """Second largest eigenvalue modulus of ``W`` (dense eigendecomposition)."""
    return float(np.sort(np.abs(np.linalg.eigvalsh(dense_W(network))))[-2])


def rounds_for(network: Network, scale: float, tol: float = 1e-13) -> int:
    """Smallest ``c`` with ``slem^c * scale < tol``."""
    return max(1, math.ceil(math.log(tol / scale) / math.log(slem(network))))


def random_graph(m: int, seed: int) -> nx.Graph:
    """A connected Erdos-Renyi graph ``G(m, 0.3)``, the first connected draw from ``seed``."""
    rng = np.random.default_rng(seed)
    while True:
        G = nx.erdos_renyi_graph(m, 0.3, seed=int(rng.integers(2**31)))
        if nx.is_connected(G):
            return G


def partitioned(m: int, rows: int = 6, d: int = 6, seed: int = 0) -> PartitionedData:
    """``m`` agents with ``rows`` rows each in the unit ball, with a spectral gap."""
    rng = np.random.default_rng(seed)
    n = m * rows
    U = np.linalg.qr(rng.standard_normal((n, d)))[0]
    V = np.linalg.qr(rng.standard_normal((d, d)))[0]
    X = U @ np.diag(np.geomspace(10.0, 0.5, d)) @ V.T
    return PartitionedData(X=X / np.linalg.norm(X, axis=1).max(), sizes=(rows,) * m)
