"""Run capePCA (Imtiaz and Sarwate, Alg. 2) and capepca-gossip on the discrete-event engine
(docs/engine.md, CAPE).

:func:`run_cape_engine` runs ``capepca`` on a star and ``capepca-gossip`` on the given graph as simpy
processes (:mod:`dpgossip.protocols.cape.parties`) on the same
:class:`~dpgossip.engine.links.Fabric` as the other kinds: latency, bandwidth, loss, retransmission,
stragglers and crashes, and a transcript of every accepted message.

Networks. ``capepca``: sites are nodes ``0..S-1`` (agent ``s`` of the data), the aggregator is node ``S``
and the trusted noise generator node ``S + 1``; the links are ``s <-> S`` and ``s <-> S + 1``.
``capepca-gossip`` runs on the given graph with its ``W``.

Random streams: exactly those of the matrix backend, each drawn by the party that holds it.

* ``capepca`` (:func:`~dpgossip.protocols.cape.star.run_cape`): ``generator, aggregator, sites =
  SeedSequence(seed).spawn(3)``; the generator draws ``W`` (``(S, d, d)``, std ``tau``), the aggregator
  ``F`` (std ``tau sqrt(1 - 1/S)``), site ``s`` its ``G_s`` from ``sites.spawn(S)[s]`` (std
  ``tau / sqrt(S)``).
* ``capepca-gossip`` (:func:`~dpgossip.protocols.cape.gossip.cape_gossip_noise`): site ``s``'s ``G_s``
  from spawn key ``(0, s)``; edge ``(i, j)``'s ``D_ij`` from ``(1, i, j)`` (derived by both ends).
* the network conditions from ``(4,)`` (:data:`~dpgossip.protocols.ppm.nodes.NETWORK_SPAWN_KEY`), so links
  never touch the protocol's draws.

With ideal links, and under latency, loss with retransmission and stragglers, every value equals the
matrix backend's to rounding (tested to ``1e-10``). Every party waits for every message it needs, so a
crash that anyone waits on stops the run (status ``"stopped"``) and ``result`` is ``None`` then. A crash
after a party's last needed message lets the others finish (``"completed_with_crash"``): the crashed
party's missing records are NaN (:meth:`~dpgossip.engine.node.NodeTrace.recorded`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import networkx as nx
import numpy as np
import scipy.sparse as sp

from dpgossip.data.partition import PartitionedData
from dpgossip.engine.conditions import NetworkConditions, condition_fields
from dpgossip.engine.kernel import NETWORK_SPAWN_KEY, Simulation, child_seed, resolve_conditions
from dpgossip.engine.node import Node
from dpgossip.engine.record import EngineRecord
from dpgossip.errors import ConfigError, check_choice, renamed_fields
from dpgossip.protocols.cape.gossip import (
    CapeGossipNoise,
    CapeGossipParams,
    CapeGossipResult,
    second_moments,
)
from dpgossip.protocols.cape.parties import (
    CapeAggregator,
    CapeGenerator,
    CapeGossipSite,
    CapeSite,
)
from dpgossip.protocols.cape.star import CapeNoise, CapeParams, CapeResult, symmetric_gaussian
from dpgossip.protocols.gossip.round_mixing import RoundMixing, check_schedule_edges
from dpgossip.protocols.nodes.scheduled import realised_schedule
from dpgossip.protocols.ppm.gossip import edge_list
from dpgossip.rng import as_seed_sequence
from dpgossip.topology.network import Network
from dpgossip.topology.schedules import MixingSchedule

__all__ = ["CAPE_ENGINE_KINDS", "CapeEngineResult", "cape_star_network",
           "run_cape_engine"]

CAPE_ENGINE_KINDS = ("capepca", "capepca-gossip")


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class CapeEngineResult(EngineRecord):
    """One engine run of a CAPE kind: the protocol's result (``None`` if the run stopped) and the engine's
    records (every party's own ``values`` by node id, the transcript)."""

    kind: str
    result: CapeResult | CapeGossipResult | None
    values: tuple[Mapping[str, np.ndarray], ...]
    """Each party's own record (capepca: sites, aggregator ``S``, generator ``S + 1``)."""

    def to_row(self) -> dict[str, object]:
        """Tidy row: the protocol's row (if any), the engine status and the traffic summary."""
        return self.engine_row(self.result.to_row() if self.result is not None else {}, kind=self.kind)


def cape_star_network(sites: int) -> Network:
    """Sites ``0..S-1``, the aggregator ``S`` and the noise generator ``S + 1``; ``W`` unused (identity)."""
    graph = nx.Graph()
    graph.add_nodes_from(range(sites + 2))
    graph.add_edges_from((s, hub) for s in range(sites) for hub in (sites, sites + 1))
    return Network(graph=graph, W=sp.identity(sites + 2, format="csr"), name=f"cape-star-{sites}",
                   mixing="none", allow_nonstochastic=True)


def _fresh(seed: int | np.random.SeedSequence) -> list[np.random.SeedSequence]:
    root = as_seed_sequence(seed)
    return np.random.SeedSequence(root.entropy, spawn_key=root.spawn_key, pool_size=root.pool_size).spawn(3)


def _cape_parties(data: PartitionedData, params: CapeParams, sim: Simulation, seed: object) -> list[Node]:
    """Sites with their ``A_s`` and ``G_s``, the aggregator with ``F``, the generator with ``W``."""
    A = second_moments(data)
    S, d = A.shape[0], A.shape[1]
    tau = params.noise_std(min(data.sizes))
    generator, aggregator, sites = _fresh(seed)

    parties: list[Node] = [
        CapeSite(s, sim.outbox(s), sim.compute_delay(s), A=A[s], aggregator=S, generator=S + 1,
                 G=symmetric_gaussian(np.random.default_rng(seq), (), d, tau / math.sqrt(S)))
        for s, seq in enumerate(sites.spawn(S))]
    F = symmetric_gaussian(np.random.default_rng(aggregator), (S,), d, tau * math.sqrt(1 - 1 / S))
    parties.append(CapeAggregator(S, sim.outbox(S), sim.compute_delay(S), F=F, k=params.k))
    W = symmetric_gaussian(np.random.default_rng(generator), (S,), d, tau)
    parties.append(CapeGenerator(S + 1, sim.outbox(S + 1), sim.compute_delay(S + 1), W=W))
    return parties


def _gossip_parties(data: PartitionedData, network: Network, params: CapeGossipParams, sim: Simulation,
                    seed: object, mixing: RoundMixing) -> list[Node]:
    """Each site with its ``A_s``, its ``G_s``, its edges' signed draws and its row of ``W`` (or its
    part of every ``W_t`` of a schedule)."""
    A = second_moments(data)
    d = A.shape[1]
    tau_e, tau_g = params.stds(min(data.sizes))
    root = as_seed_sequence(seed)

    def draw(key: tuple[int, ...], std: float) -> np.ndarray:
        return symmetric_gaussian(np.random.default_rng(child_seed(root, *key)), (), d, std)

    parties: list[Node] = []
    for s in range(data.m):
        nbrs = network.neighbours[s]
        signed = {j: draw((1, s, j), tau_e) if s < j else -draw((1, j, s), tau_e) for j in nbrs}
        parties.append(CapeGossipSite(
            s, sim.outbox(s), sim.compute_delay(s), A=A[s],
            G=draw((0, s), tau_g), signed=signed, rounds=params.consensus_steps,
            weights=sim.weight_row(s),
            plan=(tuple(mixing.node_rounds(s, 0, params.consensus_steps)) if mixing.scheduled
                  else None)))
    return parties


def _cape_result(data: PartitionedData, params: CapeParams, parties: list[Node],
                 seed: object) -> CapeResult:
    """The aggregator's record as a :class:`CapeResult` (noise from every party's own draws)."""
    S = data.m
    agg, gen = parties[S].trace.values, parties[S + 1].trace.values
    G = np.stack([p.G for p in parties[:S]])
    tau = params.noise_std(min(data.sizes))
    ent = as_seed_sequence(seed).entropy
    return CapeResult(protocol="capepca", released=agg["released"], aggregate=agg["aggregate"],
                      target=second_moments(data).mean(axis=0), eigenvalues=agg["eigenvalues"],
                      eigenvectors=agg["eigenvectors"], noise=CapeNoise(E=gen["E"], F=parties[S].F, G=G),
                      site_noise_std=np.full(S, tau), aggregate_noise_std=tau / S, params=params,
                      sizes=data.sizes, seed_entropy=int(ent) if isinstance(ent, (int, np.integer)) else None)


def _gossip_result(data: PartitionedData, network: Network, params: CapeGossipParams,
                   parties: list[Node], scheduled: bool) -> CapeGossipResult:
    """Stack the sites' records into a :class:`CapeGossipResult` (edge draws from each edge's lower end;
    NaN for what a crashed site never computed)."""
    d = data.d
    shapes = {"initial": (d, d), "estimate": (d, d), "eigenvalues": (d,), "eigenvectors": (d, d),
              "states": (params.consensus_steps + 1, d, d)}
    v = [{n: p.trace.recorded(n, shape) for n, shape in shapes.items()} for p in parties]
    edges = edge_list(network)
    D = np.stack([parties[i].signed[j] for i, j in edges]) if len(edges) else np.zeros((0, d, d))
    G = np.stack([p.G for p in parties])
    A = second_moments(data)
    return CapeGossipResult(
        initial=np.stack([x["initial"] for x in v]), estimates=np.stack([x["estimate"] for x in v]),
        eigenvalues=np.stack([x["eigenvalues"] for x in v]),
        eigenvectors=np.stack([x["eigenvectors"] for x in v]), target=A.mean(axis=0),
        limit=(A + G).mean(axis=0), noise=CapeGossipNoise(edges=edges, D=D, G=G), params=params,
        states=np.stack([x["states"] for x in v], axis=1),
        schedule=realised_schedule(parties, params.consensus_steps) if scheduled else None)


def _check(kind: str, data: PartitionedData, network: Network | None, params: object) -> None:
    check_choice(kind, "kind", CAPE_ENGINE_KINDS)
    if not isinstance(data, PartitionedData):
        raise ConfigError(f"data must be a PartitionedData, got {type(data).__name__}", field="data")
    want = CapeParams if kind == "capepca" else CapeGossipParams
    if not isinstance(params, want):
        raise ConfigError(f"params must be a {want.__name__} for kind {kind!r}, got "
                          f"{type(params).__name__}", field="params")
    if params.k > data.d:
        raise ConfigError(f"params.k must be <= d = {data.d}, got {params.k}", field="params.k")
    if kind == "capepca-gossip" and (not isinstance(network, Network) or network.m != data.m):
        raise ConfigError(f"network must be a Network with {data.m} agents (one per site), got "
                          f"{getattr(network, 'm', network)!r}", field="network")


def run_cape_engine(kind: str, data: PartitionedData, network: Network | None,
                    params: CapeParams | CapeGossipParams, seed: int | np.random.SeedSequence, *,
                    conditions: NetworkConditions | Mapping[str, object] | None = None,
                    record_transcript: bool = True,
                    schedule: MixingSchedule | None = None) -> CapeEngineResult:
    """Simulate ``capepca`` or ``capepca-gossip`` message by message (module docstring).

    Parameters
    ----------
    kind : str
        One of :data:`CAPE_ENGINE_KINDS`.
    data : PartitionedData
        ``S = data.m`` sites; site ``s`` holds ``A_s = X_s^T X_s / N_s`` of ``data.block(s)``.
    network : Network or None
        ``capepca-gossip``: the graph and ``W``; ignored by ``capepca`` (its star is
        :func:`cape_star_network`).
    params : CapeParams or CapeGossipParams
    seed : int or numpy.random.SeedSequence
        The run's seed: the same draws as :func:`~dpgossip.protocols.cape.star.run_cape` /
        :func:`~dpgossip.protocols.cape.gossip.run_cape_gossip`.
    conditions : NetworkConditions or mapping, optional
        Links, stragglers and crashes (ideal by default).
    record_transcript : bool
        Keep every accepted message in ``transcript``.
    schedule : MixingSchedule, optional
        ``capepca-gossip``: time-varying rounds, round ``k`` with ``W_{k-1}``; its pairs must be edges
        of ``network``. The result's ``schedule`` is the one the sites ran.

    Returns
    -------
    CapeEngineResult
    """
    _check(kind, data, network, params)
    if schedule is not None and kind != "capepca-gossip":
        raise ConfigError(f"schedule: kind {kind!r} runs no gossip rounds (a star to an aggregator); "
                          "only capepca-gossip follows a schedule", field="schedule")
    mixing = RoundMixing(network, schedule, params.consensus_steps) if kind == "capepca-gossip" else None
    if mixing is not None:
        check_schedule_edges(network, schedule)
    with renamed_fields(condition_fields("conditions")):
        conditions = resolve_conditions(conditions)
        net = network if kind == "capepca-gossip" else cape_star_network(data.m)
        conditions.check_network(net)
    root = as_seed_sequence(seed)
    sim = Simulation(net, conditions, np.random.default_rng(child_seed(root, NETWORK_SPAWN_KEY)),
                     record_transcript=record_transcript)
    parties = (_cape_parties(data, params, sim, seed) if kind == "capepca"
               else _gossip_parties(data, net, params, sim, seed, mixing))
    sim.run(parties)
    outcome = sim.outcome(parties, kind)
    result = None
    if outcome.status != "stopped":
        result = (_cape_result(data, params, parties, seed) if kind == "capepca"
                  else _gossip_result(data, net, params, parties, schedule is not None))
    return CapeEngineResult(kind=kind, result=result, values=tuple(p.trace.values for p in parties),
                            **sim.record_fields(outcome, parties))
