"""Run D-DP-PM on the discrete-event engine: agents as simpy processes exchanging messages.

:func:`run_engine` builds one :class:`~dpgossip.protocols.ddppm.agent.Agent` per row block, the links of
:mod:`dpgossip.engine.links`, runs the simulation and returns the same
:class:`~dpgossip.protocols.ddppm.result.RunResult` as the matrix backend (``backend="engine"``). With
ideal links (the default conditions) every iterate equals the matrix backend's to rounding error,
because every agent draws its noise from its own stream exactly as
:func:`~dpgossip.protocols.ddppm.matrix.run_matrix` does, and the network's randomness comes from a separate
stream. Network conditions change times and traffic, never the values computed.

Failures
--------
*Crash* (``engine.crashes``): agent ``j`` fail-stops at the given simulated time: it computes and
sends nothing more, copies still queued on its links never leave, copies reaching it are dropped,
it relays nothing. Neighbours learn of it only by timeout: a neighbour waiting on ``j`` (for its
gossip message, or, while assembling ``q^(T)``, for any relay) that has heard nothing from ``j``
(no message, no heartbeat) for ``failure_timeout`` since it began to wait suspects ``j`` (checked
every ``failure_timeout / 4``, so detection comes ``failure_timeout`` to ``1.25 failure_timeout``
after the later of the crash and the start of the wait). Live agents that are idle send
heartbeats, so only the crashed agent's own neighbours time out, not a cascade of blocked agents.
A crash that nobody needs to wait on (e.g. after the agent relayed its last block) is never
detected and costs nothing. Then:

``on_crash = "stop"``
    the run stops at the first detection, with status ``"stopped"``. The result holds everything
    computed so far (NaN elsewhere); ``EngineResult.outcome`` says which agent got how far.
``on_crash = "reweight"``
    each survivor that learns of the crash (by its own timeout or by a flooded notice
    ``("crash", j)``) moves the crashed neighbour's weight onto its diagonal, ``W_ii += W_ij``,
    from the round it is in, and ignores ``j`` from then on. On the survivors this is ``W``
    restricted to them plus the dropped row mass on the diagonal, again symmetric, nonnegative and
    doubly stochastic (each row and column of the restriction lost exactly ``sum_j W_ij``). The
    crashed agent's rows are NaN in ``Q`` for every component whose ``q_j^(T)`` did not reach the
    survivors (a block that got out before the crash is used). If the survivors' graph is
    disconnected the run stops. A crash before the start (time 0) gives exactly the matrix
    backend on the survivors' blocks with the re-weighted ``W``; a crash mid-run leaves a transient
    (survivors stop using ``j`` in different rounds, so the average is not exactly conserved in the
    iteration of the crash). If survivors end up assembling different sets of blocks (a block
    raced with its crash notice: ``failure_timeout`` too short for the flooding time), the run is
    reported ``"stopped"``.

*Loss without retransmission* (``retransmit = false``): a lost copy never arrives and its receiver
waits. Either the receiver times out on a silent neighbour (verdict ``"lost"``), or every agent
ends up blocked with nothing in flight, and the monitor declares the run stalled after two
``failure_timeout`` periods without progress; either way the status is ``"stopped"`` and the reason
starts with ``"message lost"``. Any other suspicion of a live agent also stops the run: its
heartbeats were lost (``"heartbeats lost"``), a message to it was abandoned after
``max_attempts`` (``"message abandoned"``), or ``failure_timeout`` is shorter than the delays
(``"false suspicion"``). The simulator uses its ground truth (crash times, lost copies) only to
label reports and to stop the run as an operator would; agents never see it.

Status (``EngineResult.status``): ``"completed"``, ``"completed_with_crash"`` (every agent that did
not crash finished) or ``"stopped"``; ``EngineResult.outcome`` (:class:`~dpgossip.engine.EngineOutcome`)
lists crashed agents, timeout detections (detector, suspect, time, verdict), the policy, and each
agent's progress.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dpgossip.data.partition import PartitionedData
from dpgossip.engine.conditions import NetworkConditions, condition_fields
from dpgossip.engine.kernel import Simulation, resolve_conditions
from dpgossip.engine.monitor import decide_status
from dpgossip.engine.outcome import AgentProgress, EngineOutcome
from dpgossip.engine.record import EngineRecord
from dpgossip.engine.tree import SpanningTree, bfs_tree
from dpgossip.errors import ConfigError, renamed_fields
from dpgossip.protocols.checks import check_data, check_network, check_seed
from dpgossip.protocols.ddppm.agent import Agent, AgentSettings, member_bytes
from dpgossip.protocols.ddppm.engine_result import EngineResult
from dpgossip.protocols.ddppm.matrix import ddppm_mixing
from dpgossip.protocols.ddppm.params import ProtocolParams, check_params
from dpgossip.protocols.gossip.round_mixing import RoundMixing, check_schedule_edges
from dpgossip.protocols.nodes.scheduled import realised_schedule
from dpgossip.rng import as_seed_sequence, run_streams
from dpgossip.topology.network import Network
from dpgossip.topology.schedules import MixingSchedule

__all__ = ["run_engine"]


def _make_agents(data: PartitionedData, network: Network, params: ProtocolParams,
                 streams: tuple[np.random.Generator, ...], sim: Simulation, *,
                 disseminate: bool, record_states: bool, how: str | None,
                 mixing: RoundMixing) -> list[Agent]:
    """One :class:`Agent` per node, holding only its rows, its stream, its row of ``W`` (under a
    schedule its part of every ``W_t``) and (tree dissemination, ``how = "tree"``) its parent and
    children in the BFS spanning tree."""
    conditions = sim.conditions
    tree: SpanningTree | None = None
    if how == "tree":
        with renamed_fields(condition_fields("conditions")):
            tree = bfs_tree(network.neighbours)
    agents = []
    for i in range(data.m):
        w_self, w_row = sim.weight_row(i)
        w_nbr = np.array(list(w_row.values()))
        agents.append(Agent(i, data.block(i), streams[i], network.neighbours[i], w_self, w_nbr, data.m,
                            params, sim.outbox(i),
                            AgentSettings(compute_delay=sim.compute_delay(i),
                                          failure_timeout=conditions.failure_timeout,
                                          disseminate=disseminate, record_states=record_states,
                                          parent=None if tree is None else tree.parent[i],
                                          children=() if tree is None else tree.children[i],
                                          plan=(tuple(mixing.node_rounds(i, 0, mixing.rounds))
                                                if mixing.scheduled else None))))
    return agents


def _check_arguments(data: object, network: object, params: object, seed: object,
                     transcript_path: object) -> None:
    """The types of :func:`run_engine`'s arguments (:mod:`dpgossip.protocols.checks`): a
    ``ConfigError`` naming the argument."""
    check_network(network, check_data(data).m)
    check_params(params)
    check_seed(seed)
    if transcript_path is not None and not isinstance(transcript_path, (str, os.PathLike)):
        raise ConfigError(f"transcript_path must be a file path or None, got {transcript_path!r}",
                          field="transcript_path")


def run_engine(data: PartitionedData, network: Network, params: ProtocolParams,
               seed: int | np.random.SeedSequence, *,
               conditions: NetworkConditions | Mapping[str, object] | None = None,
               record_transcript: bool = True, transcript_path: str | Path | None = None,
               record_states: bool = False, disseminate: bool = True,
               schedule: MixingSchedule | None = None) -> EngineResult:
    """Simulate D-DP-PM (Algorithm 1 of Campbell et al.) message by message.

    Parameters
    ----------
    data, network, params
        Partitioned data (agent ``i`` gets a private copy of ``data.block(i)``), network (graph and
        ``W``; agent ``i`` gets ``W_ii`` and ``W_ij`` of its neighbours), resolved parameters.
    seed
        Seed of the run: agent ``i`` draws from ``run_streams(seed, m).agents[i]``, links from
        ``run_streams(seed, m).network`` (:mod:`dpgossip.rng`).
    conditions
        Network conditions (or the ``[engine]`` mapping of a scenario); ideal links by default.
    record_transcript
        Keep every accepted message in ``EngineResult.transcript`` (one small record per message;
        the tree dissemination of ``q^(T)`` sends ``2 (m - 1)`` messages per component, ``m - 1`` of
        them holding all ``m`` blocks (shared arrays, no copy in memory; but a transcript file
        writes them out), the batched flood about ``2|E|`` per hop of the diameter: turn this off,
        or stream to ``transcript_path``, for large networks).
    transcript_path
        Also stream the transcript to this JSON-lines file
        (:func:`~dpgossip.engine.transcript.load_transcript` reads it back).
    record_states
        Fill ``RunResult.states`` with every agent's ``s_i^(t,k)``, like
        ``run_matrix(..., record_states=True)``.
    disseminate
        Disseminate ``q_i^(T)`` to all agents (the protocol), along the BFS spanning tree or by
        batched flooding (``conditions.dissemination``; see :mod:`dpgossip.protocols.ddppm.agent`,
        :mod:`dpgossip.engine.tree`). ``False`` skips it: ``Q`` is then
        assembled by the simulator, not by the agents; for timing the gossip alone. Rank 1 only.
    schedule
        Time-varying rounds: round ``k`` of iteration ``t`` of component ``l`` mixes with ``W_g``,
        ``g = (l T + t - 1) c + k - 1`` (docs/dynamic-gossip.md, section 8); its pairs must be edges of
        ``network``. ``EngineResult.schedule`` is then the realised schedule (a crash moves weights
        onto the diagonal: row stochastic; a crashed agent's later rows are the identity).

    Returns
    -------
    EngineResult
        A :class:`~dpgossip.protocols.ddppm.result.RunResult` with ``backend="engine"`` (arrays hold NaN
        where nothing was computed: crashes, stopped runs) and typed fields ``status``, ``outcome``
        (:class:`EngineOutcome`), ``summary`` (:class:`EngineSummary`), ``transcript`` (tuple of
        :class:`~dpgossip.engine.transcript.TranscriptRecord` or ``None``), ``transcript_path``,
        ``conditions``, ``rows_kept`` (``(n, r)`` bool: rows of ``Q`` that were assembled) and
        ``dissemination``.

    Raises
    ------
    ConfigError
        Mismatched data and network, invalid conditions, agents or edges that do not exist.
    """
    _check_arguments(data, network, params, seed, transcript_path)
    with renamed_fields(condition_fields("conditions")):
        conditions = resolve_conditions(conditions)
    if network.m != data.m:
        raise ConfigError(f"network has {network.m} agents but the data are split among {data.m}")
    if not disseminate and params.rank > 1:
        raise ConfigError(f"disseminate = False needs params.rank = 1 (deflation needs the "
                          f"disseminated q^(T)), got rank {params.rank}", field="disseminate")
    with renamed_fields(condition_fields("conditions")):
        conditions.check_network(network)
    seq = as_seed_sequence(seed)
    streams = run_streams(seq, data.m)
    sim = Simulation(network, conditions, streams.network, record_transcript=record_transcript,
                     transcript_path=transcript_path)
    how = conditions.resolved_dissemination if disseminate else None
    mixing = ddppm_mixing(network, params, schedule)
    check_schedule_edges(network, schedule)
    agents = _make_agents(data, network, params, streams.agents, sim, disseminate=disseminate,
                          record_states=record_states, how=how, mixing=mixing)
    sim.run(agents)
    res = _assemble(data, params, seq, sim, agents, how, record_states)
    if schedule is None:
        return res
    return dataclasses.replace(res, schedule=realised_schedule(agents, mixing.rounds, keep_missing=True))


@dataclass(frozen=True, slots=True)
class _Traces:
    """The agents' own records stacked into run-wide arrays (NaN where an agent recorded nothing)."""

    iterates: np.ndarray
    noise: np.ndarray
    z: np.ndarray
    z_half: np.ndarray
    states: np.ndarray | None
    deflation: np.ndarray
    blocks: tuple[np.ndarray, ...]


def _gather_traces(data: PartitionedData, params: ProtocolParams, agents: list[Agent],
                   record_states: bool) -> _Traces:
    """Stack every agent's trace into the arrays of a :class:`RunResult`."""
    m, n, d = data.m, data.n, data.d
    T, c, r = params.iterations, params.consensus_steps, params.rank
    nan = np.nan
    iterates = np.full((r, T + 1, n), nan)
    noise = np.full((r, T + 1, n), nan)
    z = np.full((r, T, m, d), nan)
    z_half = np.full((r, T, m, d), nan)
    states = np.full((r, T, c + 1, m, d), nan) if record_states else None
    deflation = np.full((r, m, d), nan)
    blocks = [np.full((n, d), nan) for _ in range(r)]
    for i, a in enumerate(agents):
        sl = slice(data.offsets[i], data.offsets[i + 1])
        tr = a.trace
        iterates[:, :, sl] = tr.q
        noise[:, :, sl] = tr.noise
        z[:, :, i] = tr.z
        z_half[:, :, i] = tr.z_half
        deflation[:, i] = tr.deflation
        if states is not None:
            states[:, :, :, i] = tr.states
        for l in range(r):
            if tr.blocks[l] is not None:
                blocks[l][sl] = tr.blocks[l]
    return _Traces(iterates=iterates, noise=noise, z=z, z_half=z_half, states=states,
                   deflation=deflation, blocks=tuple(blocks))


def _final_members(agents: list[Agent], l: int, T: int,
                   disseminate: bool) -> tuple[tuple[int, ...], float] | str | None:
    """Who assembled component ``l`` of ``q^(T)`` and its norm; a disagreement message; or None.

    With dissemination every survivor assembled ``q^(T)`` from the blocks it received, and all must
    agree on the set of contributors; without it the simulator takes every agent that finished.
    """
    if disseminate:
        # every survivor summed ||q_o^(T)||^2 over the blocks it received, in its own order: the
        # norms agree to rounding, the sets of contributors must agree exactly
        done = [a.trace for a in agents if a.trace.member_mask[l] is not None]
        m = len(agents)
        as_bytes: dict[int, bytes] = {}                 # tree agents share one origins array
        for tr in done:
            mk = tr.member_mask[l]
            if id(mk) not in as_bytes:
                as_bytes[id(mk)] = member_bytes(mk, m)
        masks = set(as_bytes.values())
        if len(masks) > 1:
            sets = sorted({tuple(np.flatnonzero(np.frombuffer(mk, np.uint8)).tolist())
                           for mk in masks})
            return (f"survivors disagree on component {l}: they assembled q^(T) from "
                    f"different sets of agents ({len(sets)} variants, e.g. "
                    f"{[list(s) for s in sets[:2]]}): a block raced with its crash "
                    "notice; increase engine.failure_timeout")
        if not done:
            return None
        mask = np.frombuffer(member_bytes(done[0].member_mask[l], m), np.uint8)
        return tuple(np.flatnonzero(mask).tolist()), float(done[0].q_norm[l])
    members = tuple(a.id for a in agents if not np.isnan(a.trace.q[l, T]).any())
    if not members:
        return None
    q_norm = float(np.linalg.norm(np.concatenate([agents[o].trace.q[l, T] for o in members])))
    return members, q_norm


def _final_estimate(data: PartitionedData, params: ProtocolParams, agents: list[Agent],
                    disseminate: bool) -> tuple[np.ndarray, np.ndarray, str | None]:
    """The normalised final estimate ``Q`` (n x r), the rows it kept, and any disagreement."""
    n, T, r = data.n, params.iterations, params.rank
    Q = np.full((n, r), np.nan)
    kept = np.zeros((n, r), dtype=bool)
    disagreement = None
    for l in range(r):
        found = _final_members(agents, l, T, disseminate)
        if isinstance(found, str):
            disagreement = found
            continue
        if found is None:
            continue
        members, q_norm = found
        for o in members:
            sl = slice(data.offsets[o], data.offsets[o + 1])
            q = agents[o].trace.q[l, T]
            Q[sl, l] = q / q_norm if q_norm > 0 else q
            kept[sl, l] = True
    return Q, kept, disagreement


def _assemble(data: PartitionedData, params: ProtocolParams, seq: np.random.SeedSequence,
              sim: Simulation, agents: list[Agent], how: str | None,
              record_states: bool) -> EngineResult:
    """Collect the agents' own records into an EngineResult and decide the status."""
    tr = _gather_traces(data, params, agents, record_states)
    Q, kept, disagreement = _final_estimate(data, params, agents, how is not None)
    monitor = sim.monitor
    status, reason, crashed = decide_status(agents, monitor, disagreement)
    progress = tuple(AgentProgress(agent=a.id, last_step=a.trace.last_step,
                                   components_done=a.trace.components_done, finished=a.finished,
                                   crashed_at=a.trace.crashed_at, waiting_on=a.waiting_on)
                     for a in agents)
    outcome = EngineOutcome(
        status=status, reason=reason, policy=sim.conditions.on_crash,
        policy_applied=monitor.policy_applied, crashed=crashed,
        detections=tuple(sorted(monitor.detections, key=lambda x: x.time)),
        survivors=tuple(a.id for a in agents if a.trace.crashed_at is None), progress=progress,
        halted_at=monitor.halted_at)
    ent = seq.entropy
    return EngineResult(
        Q=Q, iterates=tr.iterates, z=tr.z, z_half=tr.z_half, noise=tr.noise, data=tr.blocks,
        deflation=tr.deflation, params=params, backend="engine",
        seed_entropy=int(ent) if isinstance(ent, (int, np.integer)) else None, states=tr.states,
        record=EngineRecord(outcome=outcome, summary=sim.summary(status, agents),
                            conditions=sim.conditions, transcript=sim.transcript),
        rows_kept=kept, dissemination=how or "none (Q assembled by the simulator)",
        transcript_path=sim.transcript_path)
