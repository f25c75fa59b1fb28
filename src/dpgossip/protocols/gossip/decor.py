"""DECOR's correlated edge noise and the noise convention shared by both gossip backends.

DECOR (Allouah et al., ICML 2024): at every round ``t`` each edge ``e = (i, j)`` (``i < j``) draws a
secret ``v_e^t ~ N(0, sigma_cor^2)`` that ``i`` adds and ``j`` subtracts, and every agent adds its own
independent noise ``N(0, sigma_cdp^2)``. The round's noise is ``n^t = sigma_cdp xi^t + sigma_cor E v^t``
with ``E`` the oriented incidence matrix (column ``e``: ``+1`` at ``i``, ``-1`` at ``j``), so its
covariance is ``sigma_cdp^2 I + sigma_cor^2 E E^T = sigma_cdp^2 I + sigma_cor^2 L`` (``L`` the
Laplacian). The edges are listed once, sorted as ``(min, max)`` pairs (:func:`edge_list`), the order
of :func:`dpgossip.protocols.gossip.bounds.decor_round_view`.

Noise convention (docs/network-dp.md, Section 5), from one run seed ``root = SeedSequence(seed)``:

* agent ``i``'s own noise: ``run_streams(seed, m).agents[i].standard_normal((R, d))`` with ``R`` the
  protocol's noise rounds (``z[:, i]``; one draw at the start);
* the secret of edge ``(i, j)``: ``pair_stream(root, EDGE, i, j).standard_normal((T, d))``: a stream
  both ends can compute (the model of the seed they exchange), independent of every agent stream;
* the masks of secure summation at receiver ``v`` for the pair of its neighbours ``a < b``:
  ``pair_stream(root, MASK, v, a, b).standard_normal((T, d))``; ``a`` adds it, ``b`` subtracts it.

:func:`draw_gossip_noise` returns the first two for all agents and edges at once; the engine draws
each from the agent's own streams and gets the same values bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dpgossip.rng import as_seed_sequence, run_streams
from dpgossip.topology.network import Network

__all__ = ["EDGE", "MASK", "GossipNoise", "edge_list", "incidence", "dense_incidence", "pair_stream",
           "draw_gossip_noise"]

EDGE = 2
"""First spawn-key word of the edge-secret streams (``run_streams`` uses 0 and 1)."""
MASK = 3
"""First spawn-key word of the secure-summation mask streams."""


def edge_list(network: Network) -> np.ndarray:
    """The undirected edges as sorted ``(i, j)`` pairs, ``i < j`` (self-loops left out), ``(|E|, 2)``."""
    edges = sorted((min(a, b), max(a, b)) for a, b in network.graph.edges() if a != b)
    return np.array(edges, dtype=int).reshape(-1, 2)


def incidence(network: Network) -> sp.csr_array:
    """Oriented incidence matrix ``E`` (``m x |E|``): column ``e = (i, j)`` is ``e_i - e_j``."""
    edges = edge_list(network)
    k = np.arange(edges.shape[0])
    rows = np.concatenate([edges[:, 0], edges[:, 1]])
    vals = np.concatenate([np.ones(k.size), -np.ones(k.size)])
    return sp.csr_array((vals, (rows, np.concatenate([k, k]))), shape=(network.m, k.size))


def dense_incidence(edges: np.ndarray, agents: int) -> np.ndarray:
    """Oriented incidence matrix of an edge array, dense (``agents x |edges|``): column ``e = (i, j)`` is
    ``e_i - e_j`` (``+1`` at the first end, ``-1`` at the second); for :func:`edge_list` it is
    :func:`incidence` as an array."""
    edges = np.asarray(edges, dtype=int).reshape(-1, 2)
    E = np.zeros((agents, edges.shape[0]))
    cols = np.arange(edges.shape[0])
    E[edges[:, 0], cols] = 1.0
    E[edges[:, 1], cols] = -1.0
    return E


def pair_stream(seed: int | np.random.SeedSequence, kind: int, *ids: int) -> np.random.Generator:
    """The generator shared by a pair (or a receiver and a pair) of agents: spawn key
    ``root.spawn_key + (kind, *ids)`` under the run's entropy (module docstring)."""
    root = as_seed_sequence(seed)
    key = tuple(root.spawn_key) + (int(kind),) + tuple(int(i) for i in ids)
    return np.random.default_rng(np.random.SeedSequence(root.entropy, spawn_key=key,
                                                        pool_size=root.pool_size))


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class GossipNoise:
    """The standard normal draws of one run (module docstring)."""

    z: np.ndarray
    """Agents' own draws, ``(noise_rounds, m, d)``."""
    secrets: np.ndarray
    """Edge secrets ``v_e^t / sigma_cor``, ``(T, |E|, d)`` (``(0, |E|, d)`` without DECOR)."""

    def to_row(self) -> dict[str, object]:
        """Shapes of the draws."""
        return {"noise_shape": self.z.shape, "secret_shape": self.secrets.shape}


def draw_gossip_noise(network: Network, seed: int | np.random.SeedSequence, *, noise_rounds: int,
                      secret_rounds: int, dim: int = 1) -> GossipNoise:
    """Every agent's draws and every edge's secrets of a run, by the convention of the module
    docstring (the engine's agents draw the same values from their own streams)."""
    m = network.m
    streams = run_streams(seed, m)
    z = np.stack([g.standard_normal((noise_rounds, dim)) for g in streams.agents], axis=1)
    edges = edge_list(network)
    if secret_rounds:
        secrets = np.stack([pair_stream(seed, EDGE, i, j).standard_normal((secret_rounds, dim))
                            for i, j in edges], axis=1).reshape(secret_rounds, edges.shape[0], dim)
    else:
        secrets = np.zeros((0, edges.shape[0], dim))
    return GossipNoise(z=z.reshape(noise_rounds, m, dim), secrets=secrets)
