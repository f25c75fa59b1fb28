"""Run the private power method of Nicolas et al. on the discrete-event engine (docs/engine.md, power method).

:func:`run_ppm_engine` runs ``ppm`` (Algorithm 1, a trusted curator), ``ppm-federated`` (Algorithm 2, a
server behind a secure aggregation) and ``ppm-gossip`` (Algorithm 2 with the sum replaced by ``c`` gossip
rounds, :mod:`dpgossip.protocols.ppm.gossip`) as node programs (:mod:`dpgossip.protocols.ppm.parties`)
on the engine kernel (:class:`~dpgossip.engine.kernel.Simulation`), exchanging real messages over the same
:class:`~dpgossip.engine.links.Fabric` as D-DP-PM: latency, bandwidth, loss, retransmission, stragglers
and crashes of :class:`~dpgossip.engine.NetworkConditions`, and a transcript of every accepted message.

Networks. ``ppm-gossip`` runs on the given graph with its ``W``. The star kinds ignore the graph: clients
are nodes ``0..s-1`` (agent ``i`` of the data), the server (curator) is node ``s``, and the links are
``i <-> s``; ``engine.crashes`` and link overrides may name the server as node ``s``.

Random streams (``root = SeedSequence(seed)``, spawn keys relative to the root's):

* ``(0,)`` ``X^0`` and ``(1,)`` the noise, exactly as :func:`~dpgossip.protocols.ppm.central.run_ppm`,
  :func:`~dpgossip.protocols.ppm.central.run_ppm_federated` and
  :func:`~dpgossip.protocols.ppm.gossip.run_ppm_gossip`
  (client ``i`` draws its share from ``(1, i)``, the curator its central noise from ``(1,)``);
* ``(2, i, j)`` the ppm-gossip edge masks (both ends derive them);
* ``(3, i, j)``, ``i < j``: the secure-aggregation mask ``K_ij`` of clients ``i`` and ``j`` of
  ``ppm-federated`` (``secagg_mask_std`` times standard normals, ``i`` adds it, ``j`` subtracts it);
* ``(4,)`` the network conditions (latency, loss draws), so links never touch the protocol's draws.

So with ideal links every released iterate equals the matrix backend's to rounding error (the sums are
taken in a different order and the secure-aggregation masks cancel only to rounding).

Crashes. Every iteration needs every party's message (the sum must hold every noise share), so there is
no re-weighting: ``engine.on_crash`` does not apply. A party that waits on a crashed one stays blocked,
the monitor finds the run stalled after two ``failure_timeout`` periods and stops it: status
``"stopped"``, the reason says who crashed. A crash nobody waits on (after a party's last message) gives
``"completed_with_crash"``. Loss without retransmission stops the run the same way ("message lost").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import networkx as nx
import numpy as np
import scipy.sparse as sp

from dpgossip.data.partition import PartitionedData
from dpgossip.engine.conditions import NetworkConditions, condition_fields
from dpgossip.engine.kernel import NETWORK_SPAWN_KEY, Simulation, child_seed, resolve_conditions
from dpgossip.engine.node import Node
from dpgossip.engine.record import EngineRecord
from dpgossip.errors import ConfigError, check_choice, check_number, renamed_fields
from dpgossip.protocols.gossip.round_mixing import RoundMixing, check_schedule_edges
from dpgossip.protocols.nodes.scheduled import realised_schedule
from dpgossip.protocols.ppm.central import (
    PpmParams,
    PpmResult,
    _check_dims,
    _entropy,
    orthonormalise,
)
from dpgossip.protocols.ppm.gossip import (
    PpmGossipParams,
    PpmGossipResult,
    _check_inputs,
    edge_list,
    edge_masks,
    ppm_mixing,
)
from dpgossip.protocols.ppm.parties import (
    ClientNoise,
    GossipParty,
    GossipRole,
    PartyTrace,
    StarClient,
    StarServer,
)
from dpgossip.resources import FLOAT, Need, check_needs, size_text
from dpgossip.rng import as_seed_sequence
from dpgossip.topology.network import Network
from dpgossip.topology.schedules import MixingSchedule

__all__ = ["PPM_ENGINE_KINDS", "SECAGG_SPAWN_KEY", "NETWORK_SPAWN_KEY", "PpmEngineResult",
           "run_ppm_engine", "star_network", "secagg_share"]

PPM_ENGINE_KINDS = ("ppm", "ppm-federated", "ppm-gossip")
SECAGG_SPAWN_KEY = 3
"""First element of a secure-aggregation mask's spawn key ``(3, i, j)``."""


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class PpmEngineResult(EngineRecord):
    """One engine run of a ``ppm*`` kind: the protocol's own result plus what only the engine knows.

    ``result`` is a :class:`~dpgossip.protocols.ppm.central.PpmResult` (star kinds, the server's record; the
    federated ``noise`` is the sum of the clients' shares, which the server never sees) or a
    :class:`~dpgossip.protocols.ppm.gossip.PpmGossipResult`; NaN where nothing was computed.
    """

    kind: str
    result: PpmResult | PpmGossipResult
    traces: tuple[PartyTrace, ...]
    """Every party's own record, by node id (star kinds: clients ``0..s-1``, then the server)."""
    server: int | None
    """Node id of the server or curator (star kinds), ``None`` for ppm-gossip."""
    transcript_path: str | None = None

    def to_row(self) -> dict[str, object]:
        """Tidy row: the protocol's row, the engine status and the traffic summary."""
        return self.engine_row(self.result.to_row(), kind=self.kind)


def star_network(clients: int) -> Network:
    """The star of a server (node ``clients``) and ``clients`` clients; ``W`` is unused (identity)."""
    graph = nx.Graph()
    graph.add_nodes_from(range(clients + 1))
    graph.add_edges_from((i, clients) for i in range(clients))
    return Network(graph=graph, W=sp.identity(clients + 1, format="csr"), name=f"star-{clients}",
                   mixing="none", allow_nonstochastic=True)


def secagg_share(seed: int | np.random.SeedSequence, client: int, clients: int,
                 shape: tuple[int, ...], mask_std: float) -> np.ndarray:
    """Client ``i``'s secure-aggregation masks ``sum_{j != i} sign(i, j) K_ij`` (``+`` for ``i < j``).

    ``K_ij = mask_std * default_rng(SeedSequence(entropy, spawn_key=key + (3, min, max)))
    .standard_normal(shape)``; the shares of all clients sum to zero (to rounding).
    """
    out = np.zeros(shape)
    if mask_std == 0:
        return out
    root = as_seed_sequence(seed)
    for j in range(clients):
        if j != client:
            a, b = min(client, j), max(client, j)
            rng = np.random.default_rng(child_seed(root, SECAGG_SPAWN_KEY, a, b))
            K = mask_std * rng.standard_normal(shape)
            out += K if client == a else -K
    return out


@dataclass(frozen=True, slots=True)
class _Draws:
    """The run's root seed, the public start ``X^0`` and the noise's seed sequence ``(1,)``."""

    root: np.random.SeedSequence
    init_V: np.ndarray
    noise_seq: np.random.SeedSequence


def _gossip_parties(data: PartitionedData, network: Network, params: PpmGossipParams,
                    sim: Simulation, su: _Draws, mixing: RoundMixing) -> list[Node]:
    """One :class:`GossipParty` per agent: its rows, its noise stream, its edges' masks, its row of W
    (or its part of every ``W_t`` of a schedule)."""
    ppm, s = params.ppm, data.m
    rounds = ppm.iterations * params.consensus_steps
    shape = (ppm.iterations, data.d, ppm.p)
    children = su.noise_seq.spawn(s)
    parties: list[Node] = []
    for i in range(s):
        nbrs = network.neighbours[i]
        own = np.array([(min(i, j), max(i, j)) for j in nbrs], dtype=int).reshape(-1, 2)
        drawn = edge_masks(su.root, own, shape, params.mask_std)
        masks = {j: (drawn[e] if i < j else -drawn[e]) for e, j in enumerate(nbrs)}
        w_self, w_row = sim.weight_row(i)
        trace = PartyTrace(ppm.iterations, data.d, ppm.p, params.consensus_steps)
        trace.masks = {j: drawn[e] for e, j in enumerate(nbrs) if j > i}
        parties.append(GossipParty(
            i, sim.outbox(i), trace, sim.compute_delay(i),
            block=data.block(i), V0=su.init_V, Z=np.random.default_rng(children[i]).standard_normal(shape),
            masks=masks, role=GossipRole(params=params, agents=s, nu=ppm.noise_multiplier / math.sqrt(s),
                                         w_self=w_self, w_neighbours=w_row,
                                         plan=(tuple(mixing.node_rounds(i, 0, rounds))
                                               if mixing.scheduled else None))))
    return parties


def _star_parties(kind: str, data: PartitionedData, params: PpmParams, sim: Simulation, su: _Draws,
                  secagg_mask_std: float) -> list[Node]:
    """Clients ``0..s-1`` (their rows; federated: their noise share and secure-aggregation masks) and
    the server ``s`` (``X^0``; curator: the central noise)."""
    s, L = data.m, params.iterations
    shape = (L, data.d, params.p)
    federated = kind == "ppm-federated"
    children = su.noise_seq.spawn(s) if federated else None
    nu = params.noise_multiplier / math.sqrt(s)
    parties: list[Node] = []
    for i in range(s):
        noisy = None
        if federated:
            noisy = ClientNoise(nu=nu, Z=np.random.default_rng(children[i]).standard_normal(shape),
                                secagg=secagg_share(su.root, i, s, shape, secagg_mask_std))
        parties.append(StarClient(i, sim.outbox(i),
                                  PartyTrace(L, data.d, params.p), sim.compute_delay(i),
                                  block=data.block(i), server=s, params=params, noisy=noisy))
    central = None if federated else np.random.default_rng(su.noise_seq).standard_normal(shape)
    parties.append(StarServer(s, sim.outbox(s), PartyTrace(L, data.d, params.p),
                              sim.compute_delay(s), clients=s, params=params, V0=su.init_V,
                              central=central))
    return parties


def _gossip_result(parties: list[Node], network: Network, params: PpmGossipParams,
                   seed: object, scheduled: bool) -> PpmGossipResult:
    """Stack the agents' traces into a :class:`PpmGossipResult` (the masks from each edge's lower end)."""
    tr = [p.trace for p in parties]
    edges = edge_list(network)
    masks = np.stack([tr[i].masks[j] for i, j in edges], axis=1) if edges.size else np.zeros(
        (params.ppm.iterations, 0, *tr[0].iterates.shape[1:]))
    sens = np.stack([t.sensitivities for t in tr], axis=1)
    return PpmGossipResult(
        iterates=np.stack([t.iterates for t in tr], axis=1), states=np.stack([t.states for t in tr], axis=2),
        noise=np.stack([t.noise for t in tr], axis=1), edges=edges, masks=masks, sensitivities=sens,
        noise_std=sens * (params.ppm.noise_multiplier / math.sqrt(len(tr))), params=params,
        network_name=network.name, seed_entropy=_entropy(seed),
        schedule=(realised_schedule(parties, params.ppm.iterations * params.consensus_steps)
                  if scheduled else None))


def _star_result(kind: str, parties: list[Node], params: PpmParams, seed: object) -> PpmResult:
    """The server's record as a :class:`PpmResult` (federated noise: the sum of the clients' shares)."""
    server = parties[-1].trace
    clients = len(parties) - 1
    noise = (np.sum(np.stack([p.trace.noise for p in parties[:-1]]), axis=0)
             if kind == "ppm-federated" else server.noise)
    return PpmResult(basis=server.iterates[-1].copy(), iterates=server.iterates, Y=server.Y, noise=noise,
                     sensitivities=server.sensitivities,
                     noise_std=server.sensitivities * params.noise_multiplier, params=params,
                     clients=clients if kind == "ppm-federated" else 1, seed_entropy=_entropy(seed))


def _check(kind: str, data: PartitionedData, network: Network, params: object) -> PpmParams:
    """Validate the inputs of ``kind``; return its :class:`PpmParams`."""
    check_choice(kind, "kind", PPM_ENGINE_KINDS)
    if kind == "ppm-gossip":
        _check_inputs(data, network, params)
        return params.ppm
    if not isinstance(params, PpmParams):
        raise ConfigError(f"params must be a PpmParams for kind {kind!r}, got {type(params).__name__}",
                          field="params")
    if not isinstance(data, PartitionedData):
        raise ConfigError(f"data must be a PartitionedData, got {type(data).__name__}", field="data")
    _check_dims(params, data.d)
    s, dp, L = data.m, data.d * params.p, params.iterations
    nbytes = FLOAT * dp * L * (5 * (s + 1) + 2 * s)   # every party's trace (4 arrays), draws and masks
    check_needs([Need(what=f"{s} clients with {L} iterations and d x p = {dp} need every party's "
                           "iterates, noise and secure-aggregation masks", nbytes=nbytes,
                      shown=size_text(nbytes))], advice="use fewer iterations or clients", field="params")
    return params


def run_ppm_engine(kind: str, data: PartitionedData, network: Network | None,
                   params: PpmParams | PpmGossipParams, seed: int | np.random.SeedSequence, *,
                   conditions: NetworkConditions | Mapping[str, object] | None = None,
                   record_transcript: bool = True, transcript_path: str | Path | None = None,
                   secagg_mask_std: float = 100.0,
                   schedule: MixingSchedule | None = None) -> PpmEngineResult:
    """Simulate ``ppm``, ``ppm-federated`` or ``ppm-gossip`` message by message (module docstring).

    Parameters
    ----------
    kind : str
        One of :data:`PPM_ENGINE_KINDS`.
    data : PartitionedData
        ``s = data.m`` clients (agents); party ``i`` gets a private copy of ``data.block(i)``.
    network : Network or None
        ``ppm-gossip``: the graph and ``W``; ignored by the star kinds (may be ``None``).
    params : PpmParams or PpmGossipParams
        :class:`PpmGossipParams` for ``ppm-gossip``, :class:`PpmParams` otherwise.
    seed : int or numpy.random.SeedSequence
        The run's seed (module docstring: the same draws as the matrix backend).
    conditions : NetworkConditions or mapping, optional
        Links, stragglers and crashes (node ``s`` is the server of a star); ideal links by default.
    record_transcript, transcript_path
        Keep every accepted message in ``transcript`` / stream it to a JSON-lines file.
    secagg_mask_std : float
        Scale ``>= 0`` of the secure-aggregation masks of ``ppm-federated`` (docs/engine.md).
    schedule : MixingSchedule, optional
        ``ppm-gossip``: time-varying rounds (:func:`~dpgossip.protocols.ppm.gossip.ppm_mixing`); its
        pairs must be edges of ``network``. The result's ``schedule`` is the one the agents ran.

    Returns
    -------
    PpmEngineResult

    Raises
    ------
    ConfigError
        Wrong kind or parameters, mismatched data and network, conditions naming missing nodes or edges.
    """
    ppm = _check(kind, data, network, params)
    if schedule is not None and kind != "ppm-gossip":
        raise ConfigError(f"schedule: kind {kind!r} runs no gossip rounds (a star to a server); only "
                          "ppm-gossip follows a schedule", field="schedule")
    mixing = ppm_mixing(network, params, schedule) if kind == "ppm-gossip" else None
    if mixing is not None:
        check_schedule_edges(network, schedule)
    mask_std = check_number(secagg_mask_std, "secagg_mask_std", low=0, expected="a finite number >= 0")
    with renamed_fields(condition_fields("conditions")):
        conditions = resolve_conditions(conditions)
        net = network if kind == "ppm-gossip" else star_network(data.m)
        conditions.check_network(net)
    root = as_seed_sequence(seed)
    init, noise_seq = child_seed(root, 0), child_seed(root, 1)
    V0 = orthonormalise(np.random.default_rng(init).standard_normal((data.d, ppm.p)))
    sim = Simulation(net, conditions, np.random.default_rng(child_seed(root, NETWORK_SPAWN_KEY)),
                     record_transcript=record_transcript, transcript_path=transcript_path)
    su = _Draws(root=root, init_V=V0, noise_seq=noise_seq)
    parties = (_gossip_parties(data, net, params, sim, su, mixing) if kind == "ppm-gossip"
               else _star_parties(kind, data, params, sim, su, mask_std))
    sim.run(parties)
    outcome = sim.outcome(parties, "a ppm protocol")
    result = (_gossip_result(parties, net, params, seed, schedule is not None) if kind == "ppm-gossip"
              else _star_result(kind, parties, params, seed))
    return PpmEngineResult(kind=kind, result=result, traces=tuple(p.trace for p in parties),
                           server=None if kind == "ppm-gossip" else data.m,
                           transcript_path=sim.transcript_path, **sim.record_fields(outcome, parties))
