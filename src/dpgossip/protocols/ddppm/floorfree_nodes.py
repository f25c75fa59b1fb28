"""Run the floor-free D-DP-PM (docs/floorfree.md) on the discrete-event engine (docs/engine.md).

Agent ``i`` is a simpy process holding its rows ``X_i``, the public start ``u^(0)``, its own noise
``e_i^(1..T)`` and ``p_i``, and its row of ``W``. For ``t = 1..T`` it computes
``z~_i^(t) = X_i^T (X_i u_i^(t-1)) + e_i^(t)``, gossips it for ``c`` rounds (tag ``(0, t, k)``, payload its
state ``s_i^(t,k-1)``) and sets ``u_i^(t) = m s_i^(t,c) / ||m s_i^(t,c)||`` (kept when zero). With
``disseminate`` it then floods ``q_i^(T) = X_i u_i^(T) + p_i`` to everyone: tag ``(1, T + 1, o)`` carries
origin ``o``'s block; an agent forwards a block it sees for the first time to its other neighbours and
finishes when it holds all ``m`` blocks.

Random streams: those of :func:`~dpgossip.protocols.ddppm.floorfree.floorfree_noise`
(``start, z_noise, q_noise = SeedSequence(seed).spawn(3)``; agent ``i`` draws from
``z_noise.spawn(m)[i]`` and ``q_noise.spawn(m)[i]``), the network conditions from ``(4,)``. Every value
equals :func:`~dpgossip.protocols.ddppm.floorfree.run_floorfree`'s to rounding, with ideal links and under
latency and loss with retransmission. A crash that anyone waits on stops the run (``result`` is
``None``); a crash after the agent's last needed message lets the others finish
(``"completed_with_crash"``), and the crashed agent's records keep what it computed, NaN for the rest.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass

import numpy as np
from simpy.events import Event

from dpgossip.data.partition import PartitionedData
from dpgossip.engine.conditions import NetworkConditions, condition_fields
from dpgossip.engine.kernel import NETWORK_SPAWN_KEY, Simulation, child_seed, resolve_conditions
from dpgossip.engine.messages import Message
from dpgossip.engine.node import Node, NodeTrace, Outbox
from dpgossip.engine.record import EngineRecord
from dpgossip.errors import ConfigError, renamed_fields
from dpgossip.protocols.ddppm.floorfree import (
    FloorFreeNoise,
    FloorFreeParams,
    FloorFreeResult,
    floorfree_noise,
)
from dpgossip.rng import as_seed_sequence
from dpgossip.topology.network import Network

__all__ = ["FLOOD", "FloorFreeAgent", "FloorFreeEngineResult", "run_floorfree_engine"]

FLOOD = 1
"""First element of a flooded block's tag ``(1, T + 1, origin)``."""


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class FloorFreeDraws:
    """Agent ``i``'s own randomness: the public start ``u0`` (``d``), ``e`` (``T x d``), ``p`` (``n_i``)."""

    u0: np.ndarray
    e: np.ndarray
    p: np.ndarray


class FloorFreeAgent(Node):
    """Agent ``i`` of the floor-free D-DP-PM (module docstring)."""

    def __init__(self, party_id: int, outbox: Outbox, compute_delay: float, *, block: np.ndarray,
                 draws: FloorFreeDraws, weights: tuple[float, Mapping[int, float]],
                 params: FloorFreeParams, agents: int) -> None:
        super().__init__(party_id, outbox, NodeTrace(), compute_delay)
        self.X, self.draws, self.params, self.m = np.array(block, dtype=float), draws, params, agents
        self.w_self, self.w_nbr = weights
        self.neighbours = tuple(sorted(self.w_nbr))
        self.blocks: dict[int, np.ndarray] = {}
        self._flood_wake: Event | None = None

    def _gossip(self, t: int, S: np.ndarray) -> Generator[Event, object, np.ndarray]:
        """``c`` rounds of iteration ``t`` from ``S = z~_i^(t)``; every state recorded as computed."""
        states = self.trace.values["states"][t - 1]
        return (yield from self._mix(S, (0, t), self.params.consensus_steps, (self.w_self, self.w_nbr),
                                     states.__setitem__))

    def _protocol(self) -> Generator[Event, object, None]:
        """The ``T`` iterations, then (``disseminate``) the flood. The records are allocated as NaN
        and filled as they are computed, so an agent that crashes keeps what it computed before."""
        T, c, tr, u = self.params.iterations, self.params.consensus_steps, self.trace.values, self.draws.u0
        d = u.shape[0]
        tr["directions"], tr["z"] = np.full((T + 1, d), np.nan), np.full((T, d), np.nan)
        tr["states"], tr["directions"][0] = np.full((T, c + 1, d), np.nan), u
        for t in range(1, T + 1):
            yield from self._compute()
            tr["z"][t - 1] = self.X.T @ (self.X @ u) + self.draws.e[t - 1]
            zh = self.m * (yield from self._gossip(t, tr["z"][t - 1]))
            norm = float(np.linalg.norm(zh))
            u = zh / norm if norm > 0 else u
            tr["directions"][t] = u
        tr["q_local"] = self.X @ u
        if self.params.disseminate:
            tr["q_released"] = tr["q_local"] + self.draws.p
            yield from self._flood(tr["q_released"])

    def _flood(self, own: np.ndarray) -> Generator[Event, object, None]:
        """Send the own block to every neighbour; wait until every origin's block is held."""
        self._on_block(self.id, None, own)
        if len(self.blocks) < self.m:
            self._want, self._flood_wake = (FLOOD, self.params.iterations + 1, -1), self.outbox.event()
            yield self._flood_wake
        self.trace.values["assembled"] = np.concatenate([self.blocks[o] for o in range(self.m)])

    def _on_block(self, origin: int, src: int | None, block: np.ndarray) -> None:
        if origin in self.blocks:
            return
        self.blocks[origin] = block
        self.trace.steps += 1
        self.outbox.broadcast((FLOOD, self.params.iterations + 1, origin), block,
                              tuple(j for j in self.neighbours if j != src))
        wake = self._flood_wake
        if len(self.blocks) == self.m and wake is not None and not wake.triggered:
            self._want = None
            wake.succeed()

    def receive(self, msg: Message, now: float) -> None:
        """Flooded blocks are relayed at once (module docstring); other tags go to the inbox."""
        if msg.tag[0] == FLOOD:
            self._on_block(int(msg.tag[2]), msg.src, msg.payload)
        else:
            super().receive(msg, now)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class FloorFreeEngineResult(EngineRecord):
    """One engine run: the :class:`FloorFreeResult` (``None`` if the run stopped), each agent's own
    record (``values``; ``"assembled"`` is the ``q^(T)`` it rebuilt from the flood) and the transcript."""

    result: FloorFreeResult | None
    values: tuple[Mapping[str, np.ndarray], ...]

    def to_row(self) -> dict[str, object]:
        """Tidy row: the protocol's row (if any), the engine status and the traffic summary."""
        return self.engine_row(self.result.to_row() if self.result is not None else {})


def _agents(data: PartitionedData, network: Network, params: FloorFreeParams, sim: Simulation,
            noise: FloorFreeNoise) -> list[Node]:
    """One agent per block, with its own slice of the run's draws and its row of ``W``."""
    out: list[Node] = []
    for i in range(data.m):
        a, b = data.offsets[i], data.offsets[i + 1]
        draws = FloorFreeDraws(u0=noise.u0, e=noise.e[:, i], p=noise.p[a:b])
        out.append(FloorFreeAgent(i, sim.outbox(i), sim.compute_delay(i),
                                  block=data.block(i), draws=draws, params=params, agents=data.m,
                                  weights=sim.weight_row(i)))
    return out


def _result(params: FloorFreeParams, agents: list[Node], noise: FloorFreeNoise) -> FloorFreeResult:
    """Stack the agents' records (NaN for what an agent that crashed, in a run the others completed
    without it, never computed: at least its final ``q``)."""
    T, c, d = params.iterations, params.consensus_steps, noise.u0.shape[0]
    v = []
    for a in agents:
        n_i = a.X.shape[0]
        shapes = {"directions": (T + 1, d), "z": (T, d), "states": (T, c + 1, d), "q_local": (n_i,),
                  "q_released": (n_i,)}
        v.append({n: a.trace.recorded(n, shape) for n, shape in shapes.items()})
    released = np.concatenate([x["q_released"] for x in v]) if params.disseminate else None
    return FloorFreeResult(directions=np.stack([x["directions"] for x in v], axis=1),
                           z=np.stack([x["z"] for x in v], axis=1),
                           q_local=np.concatenate([x["q_local"] for x in v]), q_released=released,
                           noise=noise, params=params, states=np.stack([x["states"] for x in v], axis=2))


def run_floorfree_engine(data: PartitionedData, network: Network, params: FloorFreeParams,
                         seed: int | np.random.SeedSequence, *,
                         conditions: NetworkConditions | Mapping[str, object] | None = None,
                         record_transcript: bool = True) -> FloorFreeEngineResult:
    """Simulate the floor-free D-DP-PM message by message (module docstring).

    Parameters
    ----------
    data : PartitionedData
        Agent ``i`` gets a private copy of ``data.block(i)``.
    network : Network
        ``network.m == data.m``; its ``W``.
    params : FloorFreeParams
    seed : int or numpy.random.SeedSequence
        The same draws as :func:`~dpgossip.protocols.ddppm.floorfree.run_floorfree` (each agent gets
        only its own).
    conditions : NetworkConditions or mapping, optional
        Links, stragglers and crashes (ideal by default).
    record_transcript : bool
        Keep every accepted message in ``transcript``.

    Returns
    -------
    FloorFreeEngineResult
    """
    if not isinstance(params, FloorFreeParams):
        raise ConfigError(f"params must be a FloorFreeParams, got {type(params).__name__}", field="params")
    if not isinstance(data, PartitionedData) or not isinstance(network, Network) or network.m != data.m:
        raise ConfigError(f"network must be a Network with one agent per block of data ({data.m}), got "
                          f"{getattr(network, 'm', network)!r}", field="network")
    with renamed_fields(condition_fields("conditions")):
        conditions = resolve_conditions(conditions)
        conditions.check_network(network)
    root = as_seed_sequence(seed)
    noise = floorfree_noise(data, params, seed)
    sim = Simulation(network, conditions, np.random.default_rng(child_seed(root, NETWORK_SPAWN_KEY)),
                     record_transcript=record_transcript)
    agents = _agents(data, network, params, sim, noise)
    sim.run(agents)
    outcome = sim.outcome(agents, "the floor-free D-DP-PM")
    result = None if outcome.status == "stopped" else _result(params, agents, noise)
    return FloorFreeEngineResult(result=result, values=tuple(a.trace.values for a in agents),
                                 **sim.record_fields(outcome, agents))
