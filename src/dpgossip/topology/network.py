"""The communication network: a graph on agents ``0..m-1`` with a validated mixing matrix."""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx
import numpy as np

__all__ = ["Network"]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Network:
    """A connected undirected graph on agents ``0..m-1`` and its doubly-stochastic mixing matrix.

    Construct it with :func:`dpgossip.topology.make_network`, which validates ``W``
    (Assumption 2 of 001): symmetric, nonnegative, rows and columns summing to one, weights only
    on edges and the diagonal, connected graph, second largest eigenvalue modulus (SLEM) below one.
    """

    graph: nx.Graph
    """Undirected graph whose nodes are the integers ``0..m-1`` (agent ``i`` is node ``i``)."""
    W: np.ndarray
    """Mixing matrix, ``m x m``."""
    name: str = "custom"
    """Topology name or file the graph came from."""
    mixing: str = "explicit"
    """Mixing rule that produced ``W``."""
    neighbours: tuple[tuple[int, ...], ...] = field(init=False)
    """Sorted neighbour list of each agent (derived)."""

    def __post_init__(self) -> None:
        W = np.array(self.W, dtype=float)
        W.setflags(write=False)
        object.__setattr__(self, "W", W)
        nbrs = tuple(tuple(sorted(int(j) for j in self.graph.neighbors(i) if j != i))
                     for i in range(W.shape[0]))
        object.__setattr__(self, "neighbours", nbrs)

    @property
    def m(self) -> int:
        """Number of agents."""
        return int(self.W.shape[0])

    def to_row(self) -> dict[str, object]:
        """Tidy summary row: name, mixing rule, agents and edges."""
        return {"topology": self.name, "mixing": self.mixing, "agents": self.m,
                "edges": self.graph.number_of_edges()}
