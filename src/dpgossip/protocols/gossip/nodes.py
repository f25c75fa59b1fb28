"""The gossip protocols of network DP on the discrete-event engine: real messages on the edges.

:func:`run_gossip_engine` runs ``gossip-average``, ``gossip-noisy``, ``gossip-decor`` (and secure
summation over neighbours, ``spec.secure_summation``) of :class:`~dpgossip.protocols.gossip.linear.
LinearGossip` with one simpy process per agent, on the same links as D-DP-PM
(:class:`~dpgossip.engine.links.Fabric`: latency, bandwidth, loss, retransmission, crashes) and the
same transcript (:class:`~dpgossip.engine.transcript.TranscriptWriter`). Agent ``i`` holds only its
own inputs, its own noise stream, the secrets of its own edges (DECOR) and its masks (secure
summation), its row of ``W`` and the public graph. At round ``t = 0..T-1`` it computes

    y_i^0 = x_i^0 + n_i^0,    y_i^t = W_ii y_i^{t-1} + sum_{w in N(i)} W_iw y_w^{t-1} + x_i^t + n_i^t

(``gossip-average``: no input nor noise after round 0; ``inputs = "once"``: no input after round 0;
``n_i^t = sigma_i z_i^t + sigma_cor sum_{e = (i, j)} +-v_e^t``, ``+`` when ``i`` is the lower end),
sends ``y_i^t`` to every neighbour under the tag ``(t,)`` and, before round ``t + 1``, waits for the
round-``t`` message of every neighbour. With secure summation it sends neighbour ``v`` the masked
``W_vi y_i^t + r_{i->v}^t`` instead, ``r_{i->v}^t = sum_{b in N(v), b != i} +-mask^{v,t}_{ib}``
(``+`` when ``i < b``): the masks of ``v``'s neighbours cancel in their sum, so ``v`` mixes with
``sum_{w} W_vw y_w^t`` without learning a single ``y_w^t`` (in the ideal model of secure summation
the masks are uniform over a group; here they are Gaussian of scale ``mask_scale``, enough to
check that they cancel, docs/network-dp.md, Section 5).

Noise convention: :mod:`dpgossip.protocols.gossip.decor` (agent streams of :func:`dpgossip.rng.run_streams`;
a pair stream per edge for DECOR's secrets and per receiver and pair for the masks), so with ideal
links the states equal :func:`~dpgossip.protocols.gossip.linear.simulate_messages` on
:func:`~dpgossip.protocols.gossip.decor.draw_gossip_noise` to rounding error, and network conditions change
times and traffic, never a value (each agent mixes its neighbours in a fixed order).

Faults: there is no failure detector here (D-DP-PM's re-weighting is not ported). A crashed agent
stops; its neighbours wait for it forever, as they do for a message lost without retransmission;
the run ends when nothing is left to happen and reports ``status = "stopped"`` with the round each
agent reached. ``on_crash = "reweight"`` is refused.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from simpy.events import Event

from dpgossip.engine.conditions import NetworkConditions, condition_fields
from dpgossip.engine.kernel import Simulation, resolve_conditions
from dpgossip.engine.node import Node, NodeTrace, Outbox
from dpgossip.engine.transcript import TranscriptRecord
from dpgossip.errors import ConfigError, check_number, renamed_fields
from dpgossip.protocols.gossip.decor import EDGE, MASK, GossipNoise, edge_list, pair_stream
from dpgossip.protocols.gossip.linear import LinearGossip
from dpgossip.rng import as_seed_sequence, run_streams
from dpgossip.topology.network import Network

__all__ = ["GossipEngineResult", "run_gossip_engine", "gossip_values"]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class GossipEngineResult:
    """What a gossip run on the engine produced (module docstring)."""

    spec: LinearGossip
    states: np.ndarray
    """``y_i^t`` as computed by each agent, ``(T, m, d)`` (NaN where an agent never got)."""
    noise: GossipNoise
    """The standard normal draws the agents made (``z``) and the edge secrets (DECOR)."""
    status: str
    """``"completed"`` or ``"stopped"``."""
    reason: str | None
    """Why the run stopped (``None`` when completed)."""
    rounds_done: tuple[int, ...]
    """Per agent, how many rounds' messages it sent."""
    transcript: tuple[TranscriptRecord, ...] | None
    """Every accepted message, in delivery order (``None`` when not recorded)."""
    traffic: dict[str, int]
    """The fabric's counters (messages, copies, retransmissions, losses, bytes...)."""
    finished_at: float
    """Simulated time at which the last event happened."""

    def to_row(self) -> dict[str, object]:
        """Tidy row: the protocol, status, rounds, agents, finish time and traffic counters."""
        row: dict[str, object] = {**self.spec.to_row(), "status": self.status,
                                  "reason": self.reason, "agents": self.states.shape[1],
                                  "dim": self.states.shape[2], "finished_at": self.finished_at}
        row.update(self.traffic)
        return row


def gossip_values(spec: LinearGossip, values: object, m: int) -> np.ndarray:
    """The private inputs as ``(data_rounds, m, d)``: ``(m,)`` scalars, ``(m, d)`` vectors (or
    ``(T, m)`` scalars for per-round inputs), or ``(data_rounds, m, d)``."""
    x = np.asarray(values, dtype=float)
    R = spec.data_rounds
    if x.ndim == 1:
        x = x.reshape(1, -1, 1)
    elif x.ndim == 2:
        x = x[:, :, None] if spec.inputs == "per-round" else x[None]
    if x.ndim != 3 or x.shape[:2] != (R, m) or x.shape[2] < 1 or not np.all(np.isfinite(x)):
        raise ConfigError(f"values must be finite with shape (m,), (m, d) or ({R}, m, d) for "
                          f"{m} agents and {R} input round(s), got shape {np.shape(values)}",
                          field="values")
    return x


class _Agent(Node):
    """One agent's node program (module docstring); holds only its own inputs, draws and weights."""

    def __init__(self, i: int, x: np.ndarray, z: np.ndarray, sigma: float, spec: LinearGossip,
                 network: Network, outbox: Outbox, delay: float) -> None:
        super().__init__(i, outbox, NodeTrace(), delay)
        self.x, self.z, self.sigma, self.spec = x, z, sigma, spec
        self.nbrs = tuple(int(j) for j in network.neighbours[i])
        self.secret: np.ndarray | None = None
        self.masks: dict[int, np.ndarray] = {}
        self.states = np.full((spec.rounds, x.shape[1]), np.nan)
        self.sent_rounds = 0

    def set_weights(self, w_self: float, w_nbr: np.ndarray, w_out: np.ndarray) -> None:
        """``W_ii``, ``W_ij`` (its row) and ``W_ji`` (what receiver ``j`` gives it) per neighbour."""
        self.w_self, self.w_nbr, self.w_out = w_self, w_nbr, w_out

    def _fresh(self, t: int) -> np.ndarray:
        """Round ``t``'s input, own noise and signed edge secrets."""
        spec = self.spec
        add = np.zeros(self.x.shape[1])
        if t == 0 or spec.protocol != "gossip-average":
            if t == 0 or spec.inputs != "once":
                add = add + self.x[t if spec.inputs == "per-round" else 0]
            add = add + self.sigma * self.z[t]
        if self.secret is not None:
            add = add + spec.sigma_cor * self.secret[t]
        return add

    def _protocol(self) -> Generator[Event, object, None]:
        """Rounds ``0..T-1``: compute, send, wait for every neighbour's message of the round."""
        T = self.spec.rounds
        y = buf = None
        for t in range(T):
            if self._delay:
                yield self.outbox.sleep(self._delay)
            if t == 0:
                y = self._fresh(0)
            else:
                mixed = buf.sum(axis=0) if self.spec.secure_summation else self.w_nbr @ buf
                y = self.w_self * y + mixed + self._fresh(t)
            self.states[t] = y
            self._send(t, y)
            self.sent_rounds = t + 1
            if t + 1 < T:
                got = yield from self._collect((t,), len(self.nbrs))
                buf = (np.stack([got[j] for j in self.nbrs]) if self.nbrs
                       else np.zeros((0, self.x.shape[1])))

    def _send(self, t: int, y: np.ndarray) -> None:
        if not self.spec.secure_summation:
            self.outbox.broadcast((t,), y, self.nbrs)
            return
        for p, v in enumerate(self.nbrs):
            self.outbox.broadcast((t,), self.w_out[p] * y + self.masks[v][t], (v,))


def _edge_secrets(agents: list[_Agent], network: Network, seq: np.random.SeedSequence,
                  T: int, d: int) -> np.ndarray:
    """Each edge's secret drawn from its pair stream by its two ends (each end sums its signed
    secrets); returns ``(T, |E|, d)`` for the result."""
    edges = edge_list(network)
    out = np.zeros((T, edges.shape[0], d))
    for a in agents:
        a.secret = np.zeros((T, d))
    for k, (i, j) in enumerate(edges):
        out[:, k] = pair_stream(seq, EDGE, i, j).standard_normal((T, d))
        agents[i].secret += out[:, k]
        agents[j].secret -= pair_stream(seq, EDGE, i, j).standard_normal((T, d))  # j's own draw
    return out


def _masks(agent: _Agent, network: Network, seq: np.random.SeedSequence, T: int, d: int,
           scale: float) -> None:
    """``r_{i->v}^t``: for each receiver ``v`` and each other neighbour ``b`` of ``v``, the pair's
    mask ``scale * pair_stream(MASK, v, min, max)``, added by the lower id, subtracted by the other."""
    i = agent.id
    for v in agent.nbrs:
        r = np.zeros((T, d))
        for b in network.neighbours[v]:
            if b != i:
                lo, hi = min(i, b), max(i, b)
                mask = scale * pair_stream(seq, MASK, v, lo, hi).standard_normal((T, d))
                r = r + mask if i == lo else r - mask
        agent.masks[v] = r


def _agents(network: Network, spec: LinearGossip, x: np.ndarray, seq: np.random.SeedSequence,
            streams: tuple[np.random.Generator, ...], sim: Simulation, mask_scale: float) -> list[_Agent]:
    """One agent per node with its inputs, its own draws (from ``streams[i]``), weights and masks."""
    m, T, d = network.m, spec.rounds, x.shape[2]
    sig = spec.noise_scales(m)
    W = sp.csr_array(network.W)
    agents = []
    for i in range(m):
        z = streams[i].standard_normal((spec.noise_rounds, d))
        a = _Agent(i, x[:, i], z, float(sig[i]), spec, network, sim.outbox(i), sim.compute_delay(i))
        a.set_weights(float(W[i, i]), np.array([W[i, j] for j in a.nbrs]),
                      np.array([W[j, i] for j in a.nbrs]))
        if spec.secure_summation:
            _masks(a, network, seq, T, d, mask_scale)
        agents.append(a)
    return agents


def run_gossip_engine(network: Network, spec: LinearGossip, values: object,
                      seed: int | np.random.SeedSequence, *,
                      conditions: NetworkConditions | Mapping[str, object] | None = None,
                      record_transcript: bool = True, transcript_path: str | Path | None = None,
                      mask_scale: float = 1.0) -> GossipEngineResult:
    """Run a gossip protocol message by message (module docstring).

    Parameters
    ----------
    network : Network
        Graph (the links) and ``W``.
    spec : LinearGossip
        The protocol, its noise and rounds.
    values : array_like
        Private inputs (:func:`gossip_values`): ``(m,)``, ``(m, d)`` or ``(T, m)`` for per-round
        scalar inputs, or ``(data_rounds, m, d)``; noise is i.i.d. across the ``d`` coordinates.
    seed : int or SeedSequence
        The run seed of the noise convention (:mod:`dpgossip.protocols.gossip.decor`); links draw from
        ``run_streams(seed, m).network``.
    conditions : NetworkConditions or mapping, optional
        Link conditions (ideal by default); ``on_crash = "reweight"`` is refused.
    record_transcript, transcript_path
        Keep the accepted messages in memory and/or stream them to a JSON-lines file.
    mask_scale : float
        Standard deviation of the secure-summation masks (``> 0``).

    Returns
    -------
    GossipEngineResult
    """
    with renamed_fields(condition_fields("conditions")):
        conditions = resolve_conditions(conditions)
        conditions.check_network(network)
    if conditions.crashes and conditions.on_crash != "stop":
        raise ConfigError(f"conditions.on_crash: the gossip engine has no failure detector; only "
                          f"'stop' is allowed, got {conditions.on_crash!r}", field="conditions.on_crash")
    scale = check_number(mask_scale, "mask_scale", low=0.0, low_open=True)
    m = network.m
    x = gossip_values(spec, values, m)
    seq = as_seed_sequence(seed)
    streams = run_streams(seq, m)
    sim = Simulation(network, conditions, streams.network, record_transcript=record_transcript,
                     transcript_path=transcript_path, watch=False)
    agents = _agents(network, spec, x, seq, streams.agents, sim, scale)
    secrets = (_edge_secrets(agents, network, seq, spec.rounds, x.shape[2]) if spec.secret_rounds
               else np.zeros((0, edge_list(network).shape[0], x.shape[2])))
    sim.run(agents)
    return _result(spec, agents, secrets, sim)


def _result(spec: LinearGossip, agents: list[_Agent], secrets: np.ndarray,
            sim: Simulation) -> GossipEngineResult:
    T, fabric, now = spec.rounds, sim.fabric, sim.env.now
    done = tuple(a.sent_rounds for a in agents)
    reason = None
    if min(done) < T:
        crashed = [i for i, tc in enumerate(sim.crash_times) if tc <= now]
        stuck = [i for i, k in enumerate(done) if k < T and i not in crashed]
        lost = fabric.lost_data_count + fabric.stats.abandoned
        reason = (f"{len(stuck)} live agent(s) did not finish (first: {stuck[:6]}); crashed: "
                  f"{crashed}; data copies lost for good: {lost}")
    traffic = {name: int(getattr(fabric.stats, name)) for name in fabric.stats.__slots__}
    noise = GossipNoise(z=np.stack([a.z for a in agents], axis=1), secrets=secrets)
    return GossipEngineResult(
        spec=spec, states=np.stack([a.states for a in agents], axis=1), noise=noise,
        status="completed" if reason is None else "stopped", reason=reason, rounds_done=done,
        transcript=sim.transcript, traffic=traffic,
        finished_at=float(now))
