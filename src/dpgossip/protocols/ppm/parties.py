"""The parties of the private power method of Nicolas et al. as simpy processes (docs/engine.md,
power method).

Every party holds only what a real participant would: its id, its own rows ``X_i`` (clients and gossip
agents; the server and the curator hold no data), its own random draws, the public parameters and what it
received. Each is a generator run by the simulator (:mod:`dpgossip.protocols.ppm.nodes`); messages go through
an :class:`~dpgossip.protocols.ddppm.agent.Outbox` on the run's :class:`~dpgossip.engine.links.Fabric`.

Tags are three ints ``(0, l, k)`` (the block method has one "component", ``0``; ``l`` is the iteration):

* ``ppm-gossip``: ``k = 1..c`` is the gossip round; the payload is the sender's state ``S_i^(k-1)``
  (``d x p``) of iteration ``l``;
* ``ppm`` and ``ppm-federated`` (a star): ``k = 1`` is a client's upload at iteration ``l`` (``ppm``: the
  noiseless ``X_i^T X_i X^(l-1)``; ``ppm-federated``: ``Y_l^(i)`` plus its secure-aggregation masks),
  ``k = 2`` the server's broadcast of ``X^l`` (``l = 0``: the initial ``X^0``).

A party waits for all the messages of a tag (synchronous protocol): latency, loss with retransmission
and stragglers change times, never values. It keeps no failure detector: a party that never gets a message
stays blocked and the run's monitor stops the run (:mod:`dpgossip.protocols.ppm.nodes`).
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass

import numpy as np
from simpy.events import Event

from dpgossip.engine.node import Node, Outbox
from dpgossip.protocols.gossip.round_mixing import NodeRound
from dpgossip.protocols.nodes.scheduled import ScheduledNode
from dpgossip.protocols.ppm.central import PpmParams, orthonormalise
from dpgossip.protocols.ppm.gossip import PpmGossipParams
from dpgossip.protocols.ppm.sensitivity import iterate_sensitivity

__all__ = ["PartyTrace", "GossipRole", "ClientNoise", "GossipParty", "StarClient", "StarServer",
           "UPLOAD", "DOWNLOAD"]

UPLOAD = 1
"""Round ``k`` of a client's upload in a star (tag ``(0, l, 1)``)."""
DOWNLOAD = 2
"""Round ``k`` of the server's broadcast of ``X^l`` (tag ``(0, l, 2)``)."""


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class GossipRole:
    """What a ppm-gossip agent knows besides its data: the public parameters and its row of ``W``."""

    params: PpmGossipParams
    agents: int
    """``s``: the number of agents (public)."""
    nu: float
    """``sigma / sqrt(s)``: the agent's noise multiplier."""
    w_self: float
    """``W_ii``."""
    w_neighbours: Mapping[int, float]
    """``{j: W_ij}`` for every neighbour ``j``."""
    plan: tuple[NodeRound, ...] | None = None
    """Under a schedule, the agent's part of every ``W_t`` (``L c`` rounds, iteration ``l`` reads
    ``plan[(l - 1) c : l c]``); ``None``: ``W_ii`` and ``W_ij`` every round."""

    def to_row(self) -> dict[str, object]:
        """Tidy row (the weights summarised by the degree)."""
        return {**self.params.to_row(), "agents": self.agents, "nu": self.nu, "w_self": self.w_self,
                "degree": len(self.w_neighbours)}


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class ClientNoise:
    """A ppm-federated client's own draws: its share's scale, its standard noise and its masks."""

    nu: float
    """``sigma / sqrt(s)``."""
    Z: np.ndarray
    """``(L, d, p)`` standard normals of the client's share."""
    secagg: np.ndarray
    """``(L, d, p)``: ``sum_{j != i} sign(i, j) K_ij`` (secure-aggregation masks, cancel in the sum)."""

    def to_row(self) -> dict[str, object]:
        """Tidy row: the scale and the shapes."""
        return {"nu": self.nu, "shape": list(self.Z.shape)}


class PartyTrace:
    """What one party computed (NaN where it never got) and its progress, read after the run.

    ``iterates[l]`` is the party's ``X^l`` (gossip: its own ``V_i^(l)``), ``noise[l-1]`` its noise
    (a share, or the curator's central noise), ``Y[l-1]`` what it released or summed, ``states`` the
    gossip states ``S_i^(k)`` (``(L, c + 1, d, p)``), ``sensitivities[l-1]`` its ``Delta_l``.
    """

    __slots__ = ("iterates", "noise", "Y", "states", "sensitivities", "masks", "steps", "last_step",
                 "finished_at", "crashed_at")

    def __init__(self, L: int, d: int, p: int, rounds: int = 0) -> None:
        self.iterates = np.full((L + 1, d, p), np.nan)
        self.noise = np.full((L, d, p), np.nan)
        self.Y = np.full((L, d, p), np.nan)
        self.states = np.full((L, rounds + 1, d, p), np.nan) if rounds else None
        self.sensitivities = np.full(L, np.nan)
        self.masks: dict[int, np.ndarray] = {}
        """Gossip: ``{j: M_ij}`` (``(L, d, p)``) of the edges to higher neighbours ``j > i``."""
        self.steps = 0
        """Completed steps (the monitor's progress signal)."""
        self.last_step: tuple | None = None
        self.finished_at: float | None = None
        self.crashed_at: float | None = None


class GossipParty(ScheduledNode):
    """Agent ``i`` of ppm-gossip (:mod:`dpgossip.protocols.ppm.gossip`): at iteration ``l``

        Y^(i) = X_i^T X_i V_i + Delta_l(V_i) nu Z_i[l] + sum_{j in N(i)} sign(i, j) M_ij^(l)
        S^(k) = W_ii S_i^(k-1) + sum_j W_ij S_j^(k-1),  k = 1..c;    V_i <- QR(s S_i^(c)).

    Under a schedule (``role.plan``) round ``k`` of iteration ``l`` uses the agent's row and column
    of ``W_t``, ``t = (l - 1) c + (k - 1)`` (:class:`~dpgossip.protocols.nodes.scheduled.ScheduledNode`).

    ``Z`` (``(L, d, p)``) and ``masks`` (``{j: sign(i, j) M_ij}``) are the agent's own draws from the
    run's seed (both ends of an edge derive ``M_ij`` from the edge's key).
    """

    def __init__(self, party_id: int, outbox: Outbox, trace: PartyTrace, compute_delay: float, *,
                 block: np.ndarray, V0: np.ndarray, Z: np.ndarray, masks: Mapping[int, np.ndarray],
                 role: GossipRole) -> None:
        super().__init__(party_id, outbox, trace, compute_delay)
        self.X = np.array(block, dtype=float)
        self.V0, self.Z, self.masks = V0, Z, masks
        self.w_self, self.w_nbr = role.w_self, role.w_neighbours
        self.neighbours = tuple(sorted(self.w_nbr))
        self.params, self.s, self.nu = role.params, role.agents, role.nu
        self.plan = role.plan

    def _share(self, l: int) -> np.ndarray:
        """``sum_j sign(i, j) M_ij^(l)`` in increasing ``j`` (the order of the matrix backend)."""
        out = np.zeros(self.V0.shape)
        for j in self.neighbours:
            out += self.masks[j][l]
        return out

    def _protocol(self) -> Generator[Event, object, None]:
        P, tr = self.params, self.trace
        V = self.V0
        tr.iterates[0] = V
        for l in range(1, P.ppm.iterations + 1):
            yield from self._compute()
            delta = iterate_sensitivity(V, P.ppm.adjacency, P.ppm.sensitivity)
            tr.sensitivities[l - 1] = delta
            tr.noise[l - 1] = (delta * self.nu) * self.Z[l - 1]
            S = self.X.T @ (self.X @ V) + tr.noise[l - 1] + self._share(l - 1)
            tr.Y[l - 1] = S
            states = tr.states[l - 1]
            c = P.consensus_steps
            if self.plan is None:
                S = yield from self._mix(S, (0, l), c, (self.w_self, self.w_nbr), states.__setitem__,
                                         record_after_compute=True)
            else:
                S = yield from self._mix_rounds(S, (0, l), self.plan[(l - 1) * c: l * c], (l - 1) * c,
                                                states.__setitem__, record_after_compute=True)
            V = orthonormalise(self.s * S)
            tr.iterates[l] = V


class StarClient(Node):
    """Client ``i`` of a star (``ppm`` or ``ppm-federated``): gets ``X^(l-1)`` from the server, uploads
    ``X_i^T X_i X^(l-1)`` plus (federated) its noise share ``Delta_l nu Z_i[l]`` and its secure-aggregation
    masks ``sum_j sign(i, j) K_ij^(l)``, which cancel in the sum."""

    def __init__(self, party_id: int, outbox: Outbox, trace: PartyTrace, compute_delay: float, *,
                 block: np.ndarray, server: int, params: PpmParams, noisy: ClientNoise | None) -> None:
        super().__init__(party_id, outbox, trace, compute_delay)
        self.X = np.array(block, dtype=float)
        self.server, self.params = server, params
        self.noisy = noisy
        """The client's draws for ppm-federated, ``None`` for the curator's (noiseless) clients."""

    def _protocol(self) -> Generator[Event, object, None]:
        P, tr, out = self.params, self.trace, self.outbox
        got = yield from self._collect((0, 0, DOWNLOAD), 1)
        tr.iterates[0] = V = got[self.server]
        for l in range(1, P.iterations + 1):
            yield from self._compute()
            Y = self.X.T @ (self.X @ V)
            if self.noisy is not None:
                nz = self.noisy
                delta = iterate_sensitivity(V, P.adjacency, P.sensitivity)
                tr.sensitivities[l - 1] = delta
                tr.noise[l - 1] = (delta * nz.nu) * nz.Z[l - 1]
                tr.Y[l - 1] = Y = Y + tr.noise[l - 1]
                Y = Y + nz.secagg[l - 1]
            out.broadcast((0, l, UPLOAD), Y, (self.server,))
            got = yield from self._collect((0, l, DOWNLOAD), 1)
            tr.iterates[l] = V = got[self.server]


class StarServer(Node):
    """The server of ``ppm-federated`` (sums the uploads: secure aggregation) or the trusted curator of
    ``ppm`` (sums the noiseless uploads and adds the central noise ``Delta_l sigma Z[l]``):
    ``X^l = QR(Y_l)``, broadcast to every client. ``X^0`` is its own draw."""

    def __init__(self, party_id: int, outbox: Outbox, trace: PartyTrace, compute_delay: float, *,
                 clients: int, params: PpmParams, V0: np.ndarray, central: np.ndarray | None) -> None:
        super().__init__(party_id, outbox, trace, compute_delay)
        self.clients = tuple(range(clients))
        self.params, self.V0 = params, V0
        self.central = central
        """``Z`` (``(L, d, p)``) of the curator's central noise; ``None`` for the federated server."""

    def _protocol(self) -> Generator[Event, object, None]:
        P, tr, out = self.params, self.trace, self.outbox
        V = self.V0
        tr.iterates[0] = V
        out.broadcast((0, 0, DOWNLOAD), V, self.clients)
        for l in range(1, P.iterations + 1):
            got = yield from self._collect((0, l, UPLOAD), len(self.clients))
            yield from self._compute()
            delta = iterate_sensitivity(V, P.adjacency, P.sensitivity)
            tr.sensitivities[l - 1] = delta
            Y = np.sum(np.stack([got[i] for i in self.clients]), axis=0)
            if self.central is not None:
                tr.noise[l - 1] = (delta * P.noise_multiplier) * self.central[l - 1]
                Y = Y + tr.noise[l - 1]
            tr.Y[l - 1] = Y
            V = orthonormalise(Y)
            tr.iterates[l] = V
            out.broadcast((0, l, DOWNLOAD), V, self.clients)
