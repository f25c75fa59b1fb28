"""The communication network: a graph on agents ``0..m-1`` with a validated sparse mixing matrix."""

from __future__ import annotations

from dataclasses import InitVar, dataclass, field

import networkx as nx
import numpy as np
import scipy.sparse as sp

from dpgossip.errors import ConfigError
from dpgossip.resources import FLOAT, Need, check_needs, size_text
from dpgossip.topology.edges import LARGE_FROM, adjacency_csr
from dpgossip.topology.matrices import as_csr
from dpgossip.topology.validate import validate_network

__all__ = ["DENSE_W_MAX_AGENTS", "Network"]

DENSE_W_MAX_AGENTS = 20_000
"""Largest network whose mixing matrix :meth:`Network.dense_W` hands out as a dense array (3.2 GB)."""


def _neighbours(graph: nx.Graph, m: int) -> tuple[tuple[int, ...], ...]:
    """Sorted neighbours of agents ``0..m-1`` other than themselves (from the CSR adjacency for a large
    graph on exactly the nodes ``0..m-1``)."""
    if m > LARGE_FROM and graph.number_of_nodes() == m:
        A = adjacency_csr(graph)
        A = A - sp.diags_array(A.diagonal())
        A.eliminate_zeros()
        return tuple(tuple(r) for r in _rows(A))
    adj = graph.adj
    return tuple(tuple(sorted(int(j) for j in adj[i] if j != i)) for i in range(m))


def _rows(A: sp.csr_array) -> list[list[int]]:
    """Column indices of each row of a CSR array, as Python lists."""
    cols = A.indices.tolist()
    ptr = A.indptr.tolist()
    return [cols[ptr[i]:ptr[i + 1]] for i in range(A.shape[0])]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Network:
    """A connected undirected graph on agents ``0..m-1`` and its doubly-stochastic mixing matrix.

    Construct it with :func:`dpgossip.topology.make_network`, which validates ``W``
    (Assumption 2 of Campbell et al.): symmetric, nonnegative, rows and columns summing to one, weights only
    on edges and the diagonal, connected graph, second largest eigenvalue modulus (SLEM) below one.
    A ``Network(graph=..., W=...)`` built directly is checked the same way
    (:func:`~dpgossip.topology.validate.validate_network`; errors name ``graph`` or ``W``), unless
    ``allow_nonstochastic=True``: then only the graph, the shape, finiteness and support of ``W`` are
    required, and :attr:`doubly_stochastic` records whether ``W`` also meets the averaging conditions
    (the D-DP-PM runs refuse a network where it does not).

    ``W`` is stored as a read-only :class:`scipy.sparse.csr_array` (``2 |E| + m`` entries at most):
    ``W @ x``, ``W[i, j]`` and ``W.T`` work as for an array. Code that needs a dense matrix (the exact
    privacy audits, at small ``m``) asks for it with :meth:`dense_W`, which refuses large networks.
    """

    graph: nx.Graph
    """Undirected graph whose nodes are the integers ``0..m-1`` (agent ``i`` is node ``i``)."""
    W: sp.csr_array
    """Mixing matrix, ``m x m``, sparse (a dense array given here is converted)."""
    name: str = "custom"
    """Topology name or file the graph came from."""
    mixing: str = "explicit"
    """Mixing rule that produced ``W``."""
    allow_nonstochastic: bool = False
    """Accept a ``W`` that is not a symmetric doubly-stochastic averaging matrix (weights a protocol
    other than D-DP-PM needs: row-normalised, push-sum, the identity on a star of clients)."""
    neighbours: tuple[tuple[int, ...], ...] = field(init=False)
    """Sorted neighbour list of each agent (derived)."""
    doubly_stochastic: bool = field(init=False)
    """Whether ``W`` meets every condition of Assumption 2 of Campbell et al. (always, unless
    :attr:`allow_nonstochastic`)."""
    _dense: np.ndarray | None = field(init=False, default=None, repr=False)
    _validated: InitVar[bool] = False
    """Internal: :func:`~dpgossip.topology.make_network` has validated ``W`` already."""

    def __post_init__(self, _validated: bool) -> None:
        for name in ("name", "mixing"):
            if not isinstance(getattr(self, name), str):
                raise ConfigError(f"{name} must be a string, got {getattr(self, name)!r}", field=name)
        if _validated is True:
            W, averaging = as_csr(self.W), True
        else:
            W, averaging = validate_network(self.graph, self.W,
                                            allow_nonstochastic=self.allow_nonstochastic)
        object.__setattr__(self, "doubly_stochastic", averaging)
        for a in (W.data, W.indices, W.indptr):
            a.setflags(write=False)
        object.__setattr__(self, "W", W)
        object.__setattr__(self, "neighbours", _neighbours(self.graph, W.shape[0]))

    @property
    def m(self) -> int:
        """Number of agents."""
        return int(self.W.shape[0])

    def self_weight(self, i: int) -> float:
        """``W_ii``."""
        return float(self.W[i, i])

    def neighbour_weights(self, i: int) -> np.ndarray:
        """``W_ij`` for ``j`` in :attr:`neighbours` ``[i]`` (same order), a new float array."""
        row = slice(self.W.indptr[i], self.W.indptr[i + 1])
        cols, vals = self.W.indices[row], self.W.data[row]
        out = np.zeros(len(self.neighbours[i]))
        pos = np.searchsorted(cols, self.neighbours[i])
        ok = pos < len(cols)
        ok[ok] = cols[pos[ok]] == np.asarray(self.neighbours[i])[ok]
        out[ok] = vals[pos[ok]]
        return out

    def dense_W(self) -> np.ndarray:
        """``W`` as a dense read-only ``m x m`` array (computed once, then shared).

        Raises
        ------
        ConfigError
            When ``m > DENSE_W_MAX_AGENTS`` or the ``8 m^2`` bytes exceed the available memory
            (:func:`dpgossip.resources.check_needs`); the message names ``m`` and the memory.
        """
        if self._dense is None:
            m, nbytes = self.m, FLOAT * self.m * self.m
            what = f"agents = {m} needs a dense {m} x {m} mixing matrix"
            if m > DENSE_W_MAX_AGENTS:
                raise ConfigError(f"{what} ({size_text(nbytes)}) for a computation that only "
                                  f"works densely; dense W is allowed up to {DENSE_W_MAX_AGENTS} "
                                  "agents; use fewer agents", field="agents")
            check_needs([Need(what, nbytes)], advice="use fewer agents", field="agents")
            dense = self.W.toarray()
            dense.setflags(write=False)
            object.__setattr__(self, "_dense", dense)
        assert self._dense is not None
        return self._dense

    def to_row(self) -> dict[str, object]:
        """Tidy summary row: name, mixing rule, agents and edges."""
        return {"topology": self.name, "mixing": self.mixing, "agents": self.m,
                "edges": self.graph.number_of_edges()}
