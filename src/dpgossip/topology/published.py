"""Networks built exactly as a published code base builds them, to reproduce its numbers.

MFDL (Bellet et al. 2025, the code of "matrix factorization for decentralized learning") samples its
Erdos-Renyi graph with ``networkx.erdos_renyi_graph(n, ln(n) / n, seed=1000 * seed + k)`` for
``k = 0, 1, ...`` until the sample is connected (``utils.get_erdos_renyi_graph``), adds a self-loop
to every node and mixes with the row-normalised adjacency ``W = (A + I) / rowsum``
(``utils.get_communication_matrix``): ``W_ij = 1 / (deg_i + 1)`` on the edges and the diagonal.

That ``W`` is row-stochastic but not symmetric (nor column-stochastic) when the degrees differ, so it
fails the project's validation of a mixing matrix (:func:`~dpgossip.topology.make_network`).  The
linear gossip models and their exact audit never use symmetry (messages are rows ``e_w^T W^k``,
propagated with ``W^T``), so :func:`mfdl_erdos_renyi` builds the :class:`Network` directly, without
that validation; such a network is for the linear audit only (the D-DP-PM runs need a validated
``W``).
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np

from dpgossip.errors import ConfigError, check_int
from dpgossip.topology.network import Network

__all__ = ["MFDL_MAX_TRIES", "mfdl_erdos_renyi", "row_normalised_weights"]

MFDL_MAX_TRIES = 1000
"""Samples MFDL's code draws before giving up (its ``total_nb_tries``; also the seed stride)."""


def row_normalised_weights(graph: nx.Graph) -> np.ndarray:
    """``W = (A + I) / rowsum``: ``W_ij = 1 / (deg_i + 1)`` for ``j = i`` or ``j ~ i``; dense ``m x m``."""
    m = graph.number_of_nodes()
    A = nx.to_numpy_array(graph, nodelist=range(m), weight=None)
    np.fill_diagonal(A, 1.0)
    return A / A.sum(axis=1, keepdims=True)


def mfdl_erdos_renyi(agents: int, seed: int) -> Network:
    """MFDL's Erdos-Renyi network: ``G(n, ln n / n)`` with seeds ``1000 seed + k`` until connected,
    ``W = (A + I) / rowsum`` (module docstring).

    Parameters
    ----------
    agents : int
        ``n >= 2``.
    seed : int
        MFDL's ``seed`` (their setting: ``n = 100``, ``seed = 42``).

    Returns
    -------
    Network
        ``name = "erdos_renyi-mfdl"``, ``mixing = "row-normalised"``; ``W`` not validated.

    Raises
    ------
    ConfigError
        For bad ``agents`` or ``seed``, or no connected sample in :data:`MFDL_MAX_TRIES` draws.
    """
    n = check_int(agents, "agents", 2)
    s = check_int(seed, "seed", 0)
    p = math.log(n) / n
    for k in range(MFDL_MAX_TRIES):
        graph = nx.erdos_renyi_graph(n, p, seed=MFDL_MAX_TRIES * s + k)
        if nx.is_connected(graph):
            break
    else:
        raise ConfigError(f"agents: MFDL's Erdos-Renyi sampler found no connected G({n}, ln n / n) in "
                          f"{MFDL_MAX_TRIES} draws; use more agents", field="agents")
    graph = nx.Graph(graph)
    return Network(graph=graph, W=row_normalised_weights(graph), name="erdos_renyi-mfdl",
                   mixing="row-normalised", allow_nonstochastic=True)
