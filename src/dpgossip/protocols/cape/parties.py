"""The parties of capePCA (Imtiaz and Sarwate, Alg. 2) and capepca-gossip as simpy processes
(docs/engine.md, CAPE).

Every party holds only what a real participant would: a site its own ``A_s = X_s^T X_s / N_s`` and its own
draw ``G_s``; the trusted noise generator its draw ``W`` (and so the zero-sum ``E``); the aggregator its
``F``; a gossip site its own ``G_s`` and the draws ``D_ij`` of its edges (both ends derive them from the
edge's key). Values follow :func:`~dpgossip.protocols.cape.star.run_cape` and
:func:`~dpgossip.protocols.cape.gossip.run_cape_gossip` operation by operation.

Tags (three ints):

* capePCA: :data:`E_SHARE` ``(0, 0, 1)`` generator -> site ``E_s``; :data:`F_SHARE` ``(0, 0, 2)``
  aggregator -> site ``F_s``; :data:`UPLOAD` ``(0, 1, 1)`` site -> aggregator ``Ahat_s``;
  :data:`RELEASE` ``(0, 1, 2)`` aggregator -> site, the top-``K`` eigenvectors.
* capepca-gossip: ``(0, 1, k)``, ``k = 1..c``: the sender's state ``Y_s^(k-1)`` in round ``k``.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping

import numpy as np
from simpy.events import Event

from dpgossip.engine.node import Node, NodeTrace, Outbox
from dpgossip.protocols.cape.star import top_eigenvectors
from dpgossip.protocols.gossip.round_mixing import NodeRound
from dpgossip.protocols.nodes.scheduled import ScheduledNode

__all__ = ["E_SHARE", "F_SHARE", "UPLOAD", "RELEASE", "CapeSite", "CapeGenerator",
           "CapeAggregator", "CapeGossipSite"]

E_SHARE = (0, 0, 1)
F_SHARE = (0, 0, 2)
UPLOAD = (0, 1, 1)
RELEASE = (0, 1, 2)


class CapeSite(Node):
    """Site ``s`` of capePCA: receives ``E_s`` and ``F_s``, sends ``Ahat_s = A_s + E_s + F_s + G_s``
    (in that order of additions, as ``run_cape``) and receives the released eigenvectors."""

    def __init__(self, party_id: int, outbox: Outbox, compute_delay: float, *, A: np.ndarray,
                 G: np.ndarray, aggregator: int, generator: int) -> None:
        super().__init__(party_id, outbox, NodeTrace(), compute_delay)
        self.A, self.G = A, G
        self.aggregator, self.generator = aggregator, generator

    def _protocol(self) -> Generator[Event, object, None]:
        tr = self.trace.values
        tr["G"] = self.G
        tr["E"] = (yield from self._collect(E_SHARE, 1))[self.generator]
        tr["F"] = (yield from self._collect(F_SHARE, 1))[self.aggregator]
        yield from self._compute()
        tr["released"] = self.A + tr["E"] + tr["F"] + self.G
        self.outbox.broadcast(UPLOAD, tr["released"], (self.aggregator,))
        tr["components"] = (yield from self._collect(RELEASE, 1))[self.aggregator]


class CapeGenerator(Node):
    """The trusted noise generator: sends site ``s`` its share ``E_s = W_s - mean_t W_t``."""

    def __init__(self, party_id: int, outbox: Outbox, compute_delay: float, *, W: np.ndarray) -> None:
        super().__init__(party_id, outbox, NodeTrace(), compute_delay)
        self.W = W

    def _protocol(self) -> Generator[Event, object, None]:
        yield from self._compute()
        E = self.W - self.W.mean(axis=0)
        self.trace.values["E"] = E
        for s in range(E.shape[0]):
            self.outbox.broadcast(E_SHARE, E[s], (s,))


class CapeAggregator(Node):
    """The aggregator: sends ``F_s``, forms ``Ahat = (1/S) sum_s (Ahat_s - F_s)`` and releases its top-``k``
    eigenvectors (Imtiaz and Sarwate, Alg. 2, lines 8-10)."""

    def __init__(self, party_id: int, outbox: Outbox, compute_delay: float, *, F: np.ndarray,
                 k: int) -> None:
        super().__init__(party_id, outbox, NodeTrace(), compute_delay)
        self.F, self.k = F, k
        self.sites = tuple(range(F.shape[0]))

    def _protocol(self) -> Generator[Event, object, None]:
        tr = self.trace.values
        for s in self.sites:
            self.outbox.broadcast(F_SHARE, self.F[s], (s,))
        got = yield from self._collect(UPLOAD, len(self.sites))
        yield from self._compute()
        tr["released"] = np.stack([got[s] for s in self.sites])
        tr["aggregate"] = (tr["released"] - self.F).sum(axis=0) / len(self.sites)
        tr["eigenvalues"], tr["eigenvectors"] = top_eigenvectors(tr["aggregate"])
        self.outbox.broadcast(RELEASE, tr["eigenvectors"][:, : self.k], self.sites)


class CapeGossipSite(ScheduledNode):
    """Site ``s`` of capepca-gossip:

        Y_s^(0) = A_s + sum_{j in N(s)} sign(s, j) D_sj + G_s,
        Y_s^(k) = W_ss Y_s^(k-1) + sum_j W_sj Y_j^(k-1),

    then the top eigenvectors of ``(Y_s^(c) + Y_s^(c)T) / 2``. ``signed`` is ``{j: sign(s, j) D_sj}``
    (``+`` at the lower end of the edge). Under a schedule ``plan[k - 1]`` is the site's part of
    ``W_{k-1}`` (:class:`~dpgossip.protocols.nodes.scheduled.ScheduledNode`)."""

    def __init__(self, party_id: int, outbox: Outbox, compute_delay: float, *, A: np.ndarray,
                 G: np.ndarray, signed: Mapping[int, np.ndarray], weights: tuple[float, Mapping[int, float]],
                 rounds: int, plan: tuple[NodeRound, ...] | None = None) -> None:
        super().__init__(party_id, outbox, NodeTrace(), compute_delay)
        self.A, self.G, self.signed = A, G, signed
        self.w_self, self.w_nbr = weights
        self.neighbours = tuple(sorted(self.w_nbr))
        self.rounds = rounds
        self.plan = plan

    def _edge_sum(self) -> np.ndarray:
        """``E_s = sum_j sign(s, j) D_sj`` in increasing ``j``."""
        out = np.zeros(self.A.shape)
        for j in self.neighbours:
            out += self.signed[j]
        return out

    def _protocol(self) -> Generator[Event, object, None]:
        tr = self.trace.values
        yield from self._compute()
        Y = self.A + self._edge_sum() + self.G
        tr["initial"], states = Y, []
        if self.plan is None:
            Y = yield from self._mix(Y, (0, 1), self.rounds, (self.w_self, self.w_nbr),
                                     lambda _k, state: states.append(state))
        else:
            Y = yield from self._mix_rounds(Y, (0, 1), self.plan, 0, lambda _k, state: states.append(state))
        tr["states"] = np.stack(states)
        tr["estimate"] = (Y + Y.T) / 2
        tr["eigenvalues"], tr["eigenvectors"] = top_eigenvectors(tr["estimate"])
