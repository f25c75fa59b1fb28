"""Small seeded samplers of mixing schedules for the dynamic-leakage tests (private to the tests)."""

from __future__ import annotations

import networkx as nx
import numpy as np

from dpgossip.protocols.gossip.dynamic_release import matching_matrix, pairwise_matrix


def pairwise_ticks(graph: nx.Graph, ticks: int, seed: int) -> list:
    """Randomized pairwise gossip: at each tick one edge drawn uniformly averages its two ends."""
    rng = np.random.default_rng(seed)
    edges = sorted(tuple(sorted(e)) for e in graph.edges)
    m = graph.number_of_nodes()
    return [pairwise_matrix(m, *edges[int(rng.integers(len(edges)))]) for _ in range(ticks)]


def random_matchings(graph: nx.Graph, steps: int, seed: int) -> list:
    """Each step a greedy random matching: edges in random order, kept when both ends are free."""
    rng = np.random.default_rng(seed)
    edges = sorted(tuple(sorted(e)) for e in graph.edges)
    m = graph.number_of_nodes()
    out = []
    for _ in range(steps):
        free = np.ones(m, dtype=bool)
        pairs = []
        for k in rng.permutation(len(edges)):
            i, j = edges[k]
            if free[i] and free[j]:
                free[[i, j]] = False
                pairs.append((i, j))
        out.append(matching_matrix(m, pairs))
    return out
