"""The BFS spanning tree along which the engine disseminates ``q`` (docs/engine.md).

Every agent can compute the same tree from the public graph alone: breadth-first search from
agent ``0``, visiting each agent's neighbours in increasing id order; the parent of ``v`` is the
agent that first discovered it, ``parent(v) = min`` over the neighbours ``u`` of ``v`` that come
first in BFS order. The simulator computes it once and hands each agent its parent and children
(the same result as each agent running the search itself, without ``m`` copies of the work).

Dissemination along the tree (by a node program): convergecast, each agent sends its
parent one batch holding its subtree's blocks once it holds all of them; then broadcast, the root
sends the assembled ``q`` to its children and every agent forwards it to its own. That is
``2 (m - 1)`` messages per component; each block crosses each tree edge at most twice (once up
if it belongs to the lower side's subtree, once down).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from dpgossip.engine.messages import BlockIndex
from dpgossip.errors import ConfigError

__all__ = ["SpanningTree", "TreeCast", "bfs_tree"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SpanningTree:
    """A rooted spanning tree: ``parent[v]`` (``-1`` at the root) and sorted ``children[v]``."""

    root: int
    parent: tuple[int, ...]
    children: tuple[tuple[int, ...], ...]
    depth: tuple[int, ...]
    """Hops from the root (``depth[root] = 0``)."""

    @property
    def m(self) -> int:
        """Number of agents."""
        return len(self.parent)

    def subtree_sizes(self) -> tuple[int, ...]:
        """``|sub(v)|``: agents in the subtree rooted at ``v`` (``v`` included)."""
        size = [1] * self.m
        for v in sorted(range(self.m), key=self.depth.__getitem__, reverse=True):
            p = self.parent[v]
            if p >= 0:
                size[p] += size[v]
        return tuple(size)

    def to_row(self) -> dict[str, object]:
        """Tidy row: root, agents, height, leaves."""
        return {"root": self.root, "agents": self.m, "height": max(self.depth),
                "leaves": sum(1 for c in self.children if not c)}


def bfs_tree(neighbours: tuple[tuple[int, ...], ...], root: int = 0) -> SpanningTree:
    """Breadth-first spanning tree from ``root``, neighbours visited in sorted order.

    Parameters
    ----------
    neighbours
        Neighbour ids of every agent (``Network.neighbours``; sorted here anyway).
    root
        The root agent.

    Raises
    ------
    ConfigError
        If the graph is not connected (the tree would not reach every agent).
    """
    m = len(neighbours)
    parent = [-2] * m
    depth = [0] * m
    parent[root] = -1
    order = deque([root])
    while order:
        u = order.popleft()
        for v in sorted(neighbours[u]):
            if parent[v] == -2:
                parent[v] = u
                depth[v] = depth[u] + 1
                order.append(v)
    missing = [v for v in range(m) if parent[v] == -2]
    if missing:
        raise ConfigError(f"dissemination = 'tree' needs a connected graph; agents {missing[:10]} "
                          f"are not reachable from agent {root}", field="dissemination")
    children: list[list[int]] = [[] for _ in range(m)]
    for v in range(m):
        if parent[v] >= 0:
            children[parent[v]].append(v)
    return SpanningTree(root=root, parent=tuple(parent), children=tuple(map(tuple, children)),
                        depth=tuple(depth))


class TreeCast:
    """One agent's side of the tree dissemination: its parent, children, and per component the
    children's batches received so far, its own block, and the assembled ``q``.

    Batches are built once, into one preallocated array: the agent's own block followed by each
    child's batch in child order (so the root's batch is ``q`` in depth-first preorder). The
    assembled ``q`` that comes down from the parent is forwarded as the same read-only array
    (no copy).
    """

    __slots__ = ("parent", "children", "_pos", "_up", "_own", "_sent", "_full")

    def __init__(self, parent: int, children: tuple[int, ...]) -> None:
        self.parent = parent
        """Parent id, ``-1`` at the root."""
        self.children = children
        self._pos = {c: k for k, c in enumerate(children)}
        self._up: dict[int, list] = {}
        self._own: dict[int, tuple[int, np.ndarray]] = {}
        self._sent: set[int] = set()
        self._full: dict[int, tuple[np.ndarray, BlockIndex]] = {}

    @property
    def is_root(self) -> bool:
        """Whether this agent is the root."""
        return self.parent < 0

    def add_own(self, l: int, agent: int, q: np.ndarray) -> None:
        """Record the agent's own block ``q_i`` of component ``l``."""
        self._own[l] = (agent, q)

    def add_child(self, l: int, child: int, payload: np.ndarray, blocks: BlockIndex) -> None:
        """Record the batch (the subtree's blocks) that ``child`` sent up for component ``l``."""
        up = self._up.setdefault(l, [None] * len(self.children))
        up[self._pos[child]] = (payload, blocks)

    def set_full(self, l: int, payload: np.ndarray, blocks: BlockIndex) -> None:
        """Record the assembled ``q`` of component ``l`` (from the parent, or built at the root)."""
        self._full[l] = (payload, blocks)

    def full(self, l: int) -> tuple[np.ndarray, BlockIndex] | None:
        """The assembled ``q`` of component ``l`` as ``(payload, blocks)``, once known."""
        return self._full.get(l)

    def drop(self, l: int) -> None:
        """Forget component ``l`` (the agent has used it)."""
        self._full.pop(l, None)

    def missing_children(self, l: int) -> tuple[int, ...]:
        """Children whose batch of component ``l`` has not arrived."""
        up = self._up.get(l)
        return tuple(c for k, c in enumerate(self.children) if up is None or up[k] is None)

    def take_batch(self, l: int) -> tuple[np.ndarray, BlockIndex] | None:
        """The subtree batch of component ``l``, once the own block and every child's batch are in
        (``None`` before, and after it was taken once).

        Layout: ``[q_i, batch(child_1), batch(child_2), ...]``; ``origins`` and ``starts`` are
        concatenated the same way, each child's ``starts`` shifted by where its batch begins.
        """
        if l in self._sent or l not in self._own or self.missing_children(l):
            return None
        self._sent.add(l)
        agent, q = self._own.pop(l)
        parts = self._up.pop(l, [])
        if not parts:
            return q, BlockIndex.of(np.array([agent]), np.array([0, q.size]))
        total = q.size + sum(p.size for p, _ in parts)
        k = 1 + sum(b.origins.size for _, b in parts)
        payload = np.empty(total)
        origins = np.empty(k, dtype=np.int64)
        starts = np.empty(k + 1, dtype=np.int64)
        payload[:q.size] = q
        origins[0], starts[0] = agent, 0
        at, j = q.size, 1
        for p, b in parts:
            n = b.origins.size
            payload[at:at + p.size] = p
            origins[j:j + n] = b.origins
            starts[j:j + n] = b.starts[:-1] + at
            at, j = at + p.size, j + n
        starts[k] = total
        return payload, BlockIndex.of(origins, starts)
