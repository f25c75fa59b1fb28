"""Run D-DP-PM on the discrete-event engine: agents as simpy processes exchanging messages.

:func:`run_engine` builds one :class:`~dpgossip.engine.agent.Agent` per row block, the links of
:mod:`dpgossip.engine.links`, runs the simulation and returns the same
:class:`~dpgossip.protocol.result.RunResult` as the matrix backend (``backend="engine"``). With
ideal links (the default conditions) every iterate equals the matrix backend's to rounding error,
because every agent draws its noise from its own stream exactly as
:func:`~dpgossip.protocol.run_matrix` does, and the network's randomness comes from a separate
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

import gc
import math
import os
import time
from collections.abc import Iterator, Mapping
from contextlib import closing, contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import networkx as nx
import numpy as np
import scipy.sparse as sp
import simpy
from simpy.core import StopSimulation

from dpgossip.data.partition import PartitionedData
from dpgossip.engine.agent import Agent, AgentSettings, Outbox, member_bytes
from dpgossip.engine.conditions import NetworkConditions, condition_fields
from dpgossip.engine.links import Fabric
from dpgossip.engine.outcome import AgentProgress, Detection, EngineOutcome, EngineSummary
from dpgossip.engine.result import EngineResult
from dpgossip.engine.transcript import TranscriptWriter
from dpgossip.engine.tree import SpanningTree, bfs_tree
from dpgossip.errors import ConfigError, renamed_fields
from dpgossip.protocol.checks import check_data, check_network, check_params, check_seed
from dpgossip.protocol.params import ProtocolParams
from dpgossip.rng import as_seed_sequence, run_streams
from dpgossip.topology.network import Network

__all__ = ["run_engine"]


def _make_agents(data: PartitionedData, network: Network, params: ProtocolParams,
                 streams: tuple[np.random.Generator, ...], fabric: Fabric, monitor: _Monitor, *,
                 disseminate: bool, record_states: bool, how: str | None) -> list[Agent]:
    """One :class:`Agent` per node, holding only its rows, its stream, its row of ``W`` and (tree
    dissemination, ``how = "tree"``) its parent and children in the BFS spanning tree."""
    conditions, env = monitor.conditions, monitor.env
    tree: SpanningTree | None = None
    if how == "tree":
        with renamed_fields(condition_fields("conditions")):
            tree = bfs_tree(network.neighbours)
    W = sp.csr_array(network.W)                       # dense or sparse W: rows in O(deg) each
    agents = []
    for i in range(data.m):
        nbrs = network.neighbours[i]
        st = conditions.stragglers.get(i)
        delay = conditions.compute_time * (st.factor if st else 1.0) + (st.delay if st else 0.0)
        lo, hi = W.indptr[i], W.indptr[i + 1]
        row = dict(zip(W.indices[lo:hi].tolist(), W.data[lo:hi].tolist(), strict=True))
        w_nbr = np.array([row.get(j, 0.0) for j in nbrs])
        agent = Agent(i, data.block(i), streams[i], nbrs, row.get(i, 0.0), w_nbr, data.m,
                      params, Outbox(i, env, fabric, monitor),
                      AgentSettings(compute_delay=delay, failure_timeout=conditions.failure_timeout,
                                    disseminate=disseminate, record_states=record_states,
                                    parent=None if tree is None else tree.parent[i],
                                    children=() if tree is None else tree.children[i]))
        fabric.attach(i, agent.receive)
        agents.append(agent)
    monitor.agents = agents
    return agents


def _schedule(env: simpy.Environment, agents: list[Agent], monitor: _Monitor,
              conditions: NetworkConditions, crash_times: list[float]) -> None:
    """Start every agent's process, and schedule the crashes and the first stall check."""
    for i, agent in enumerate(agents):
        if crash_times[i] > 0:
            monitor.procs[i] = env.process(agent.run())
        else:
            agent.crash(0.0)                                  # crashed before the start
    for i, tc in conditions.crashes.items():
        if tc > 0:
            env.timeout(tc).callbacks.append(partial(monitor.crash, i))
    env.timeout(conditions.failure_timeout).callbacks.append(monitor.stall_check)


def _check_arguments(data: object, network: object, params: object, seed: object,
                     transcript_path: object) -> None:
    """The types of :func:`run_engine`'s arguments (:mod:`dpgossip.protocol.checks`): a
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
               record_states: bool = False, disseminate: bool = True) -> EngineResult:
    """Simulate D-DP-PM (Algorithm 1 of 001) message by message.

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
        batched flooding (``conditions.dissemination``; see :mod:`dpgossip.engine.agent`,
        :mod:`dpgossip.engine.tree`). ``False`` skips it: ``Q`` is then
        assembled by the simulator, not by the agents; for timing the gossip alone. Rank 1 only.

    Returns
    -------
    EngineResult
        A :class:`~dpgossip.protocol.result.RunResult` with ``backend="engine"`` (arrays hold NaN
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
        conditions = _conditions(conditions)
    if not disseminate and params.rank > 1:
        raise ConfigError(f"disseminate = False needs params.rank = 1 (deflation needs the "
                          f"disseminated q^(T)), got rank {params.rank}", field="disseminate")
    with renamed_fields(condition_fields("conditions")):
        conditions.check_network(network)
    seq = as_seed_sequence(seed)
    m = data.m
    streams = run_streams(seq, m)
    env = simpy.Environment()
    crash_times = [conditions.crashes.get(i, math.inf) for i in range(m)]
    writer = TranscriptWriter(keep=record_transcript, path=transcript_path)
    fabric = Fabric(env, network, conditions, streams.network, crash_times,
                    writer if writer.active else None)
    monitor = _Monitor(env, network, conditions, fabric, crash_times)
    how = conditions.resolved_dissemination if disseminate else None
    agents = _make_agents(data, network, params, streams.agents, fabric, monitor,
                          disseminate=disseminate, record_states=record_states, how=how)
    _schedule(env, agents, monitor, conditions, crash_times)
    t0 = time.perf_counter()
    with closing(writer), _gc_paused():
        env.run()
    wall = time.perf_counter() - t0
    return _assemble(data, params, seq, conditions, agents, fabric, monitor, writer, wall,
                     how, record_states)


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while the simulation runs, restore it after.

    The run allocates millions of short-lived messages and events, freed by reference counting;
    with many of them in flight at once (a gossip round of every agent), generational collection
    promotes them and then rescans the whole heap again and again. Measured on a 3,000-agent
    random geometric graph (``bench_scale_engine.py``'s problem), pausing it cut the wall time by
    about a third (see docs/engine.md); the little cyclic garbage of a run is collected when the
    collector resumes. Only the wall time changes, never a value.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _conditions(value: object) -> NetworkConditions:
    if value is None:
        return NetworkConditions()
    if isinstance(value, NetworkConditions):
        return value
    if isinstance(value, Mapping):
        return NetworkConditions.from_mapping(value)
    raise ConfigError(f"conditions must be a NetworkConditions or a table, got {value!r}",
                      field="conditions")


class _Monitor:
    """The run's operator: records detections, applies the crash policy, stops stalled runs."""

    def __init__(self, env: simpy.Environment, network: Network, conditions: NetworkConditions,
                 fabric: Fabric, crash_times: list[float]) -> None:
        self.env = env
        self.graph = network.graph
        self.conditions = conditions
        self.fabric = fabric
        self.crash_times = crash_times
        self.agents: list[Agent] = []
        self.procs: dict[int, simpy.Process] = {}
        self.detections: list[Detection] = []
        self.excluded: set[int] = set()
        self.policy_applied = False
        self.halt_reason: str | None = None
        self.halted_at: float | None = None
        self._sig = -1
        self._stalls = 0

    def halt(self, reason: str) -> None:
        self.halt_reason = reason
        self.halted_at = self.env.now
        raise StopSimulation(reason)

    def crash(self, i: int, _event: object = None) -> None:
        """Fail-stop agent ``i`` now."""
        self.agents[i].crash(self.env.now)
        proc = self.procs.get(i)
        if proc is not None and proc.is_alive:
            proc.interrupt("crash")

    def suspect(self, detector: int, suspects: tuple[int, ...], waiting_on: tuple) -> None:
        """Agent ``detector`` timed out on ``suspects``: record, then stop or let it re-weight."""
        now = self.env.now
        problems = []
        for j in suspects:
            tc = self.crash_times[j]
            why = None if tc <= now else self.fabric.lost_between(j, detector)
            verdict = "crash" if tc <= now else ("lost" if why else "false")
            self.detections.append(Detection(detector=detector, suspect=j, time=now,
                                             waiting_on=waiting_on,
                                             crashed_at=tc if tc <= now else None,
                                             verdict=verdict))
            if verdict != "crash":
                problems.append((j, why))
        if problems:
            j, why = problems[0]
            fab, cond = self.fabric, self.conditions
            what = (f"agent {detector} timed out at t = {now:.6g} waiting for agent {j} on "
                    f"{waiting_on}, but agent {j} is alive")
            if why == "lost":
                self.halt(f"message lost: {what}; copies from {j} to {detector} were lost and "
                          f"engine.retransmit = false ({fab.lost_data_count} data copies lost "
                          "in all)")
            if why == "abandoned":
                self.halt(f"message abandoned: {what}; a message from {j} to {detector} was "
                          f"given up after engine.max_attempts = {cond.max_attempts}")
            if why == "heartbeats":
                self.halt(f"heartbeats lost: {what}; its heartbeats were lost "
                          f"(engine.loss = {cond.loss:g}); raise engine.failure_timeout")
            self.halt(f"false suspicion: {what}; engine.failure_timeout = "
                      f"{cond.failure_timeout:g} s is too short for these conditions")
        self.policy_applied = True
        if self.conditions.on_crash == "stop":
            self.halt(f"crash detected: agent {detector} timed out on agent(s) "
                      f"{list(suspects)} at t = {now:.6g} (waiting on {waiting_on}); "
                      "engine.on_crash = 'stop'")
        new = set(suspects) - self.excluded
        if new:
            self.excluded |= new
            alive = [i for i in self.graph.nodes if i not in self.excluded]
            sub = self.graph.subgraph(alive)
            if not alive or not nx.is_connected(sub):
                comps = sorted(sorted(c) for c in nx.connected_components(sub))
                self.halt(f"survivors disconnected: after the crash of agent(s) "
                          f"{sorted(self.excluded)} the survivors' graph has components {comps}; "
                          "engine.on_crash = 'reweight' needs a connected survivor graph")

    def stall_check(self, _event: object = None) -> None:
        """Stop the run when every live agent has waited, with nothing in flight and no progress,
        for two consecutive ``failure_timeout`` periods."""
        live = [a for a in self.agents if not a.finished and not a.crashed]
        if not live:
            return
        sig = sum(a.trace.steps for a in self.agents)
        blocked = all(a.waiting_on is not None for a in live)
        if blocked and self.fabric.pending == 0 and sig == self._sig:
            self._stalls += 1
        else:
            self._stalls = 0
        self._sig = sig
        if self._stalls >= 2:
            st = self.fabric.stats
            waits = ", ".join(f"{a.id}: {a.waiting_on}" for a in live[:6])
            more = f" and {len(live) - 6} more" if len(live) > 6 else ""
            stall = (f"stalled: no progress for {2 * self.conditions.failure_timeout:g} s with "
                     f"every live agent waiting ({waits}{more})")
            if self.fabric.lost_data:
                t, src, dst, tag = self.fabric.lost_data[0]
                self.halt(f"message lost: {self.fabric.lost_data_count} data copies were lost "
                          f"and engine.retransmit = false (first: {src} -> {dst} {tag} sent at "
                          f"t = {t:.6g}); run {stall}")
            now = self.env.now
            hidden = [i for i, tc in enumerate(self.crash_times)
                      if tc <= now and i not in self.excluded]
            if hidden:
                self.halt(f"crash undetected: agent(s) {hidden} crashed but no survivor timed out "
                          f"on them; run {stall}")
            if st.abandoned:
                self.halt(f"message abandoned: {st.abandoned} messages were given up after "
                          f"engine.max_attempts = {self.conditions.max_attempts}; run {stall}")
            self.halt(f"{stall}; no lost copy found")
        self.env.timeout(self.conditions.failure_timeout).callbacks.append(self.stall_check)


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


def _decide_status(agents: list[Agent], monitor: _Monitor,
                   disagreement: str | None) -> tuple[str, str, tuple[int, ...]]:
    """The run's status, its reason, and the agents that crashed."""
    crashed = tuple(a.id for a in agents if a.trace.crashed_at is not None)
    unfinished = [a.id for a in agents if not a.finished and a.trace.crashed_at is None]
    if monitor.halt_reason is not None:
        return "stopped", monitor.halt_reason, crashed
    if unfinished:
        return "stopped", f"deadlock: agents {unfinished[:10]} never finished", crashed
    if disagreement is not None:
        return "stopped", disagreement, crashed
    if len(crashed) == len(agents):
        return "stopped", "every agent crashed", crashed
    if crashed:
        reason = (f"agent(s) {list(crashed)} crashed; survivors re-weighted W (W_ii += W_ij) "
                  "and finished" if monitor.policy_applied else
                  f"agent(s) {list(crashed)} crashed after their neighbours stopped waiting on "
                  "them; no detection was needed")
        return "completed_with_crash", reason, crashed
    return "completed", "", crashed


def _engine_summary(status: str, fabric: Fabric, agents: list[Agent], wall: float) -> EngineSummary:
    """Message counts and times of the run."""
    finish = [a.trace.finished_at for a in agents if a.trace.finished_at is not None]
    st = fabric.stats
    return EngineSummary(
        status=status, messages_delivered=st.delivered, gossip_messages=st.gossip, flood_messages=st.final,
        crash_notices=st.crash, heartbeats=st.alive, bytes_delivered=st.bytes_delivered,
        messages_sent=st.messages_sent, copies_sent=st.copies_sent,
        retransmissions=st.retransmissions, lost_copies=st.lost, copies_to_crashed=st.dropped_dead,
        copies_unsent=st.unsent, dropped_copies=st.lost + st.dropped_dead + st.unsent,
        duplicates_discarded=st.duplicates, abandoned=st.abandoned,
        completion_time=max(finish) if finish else np.nan, wall_time=wall)


def _assemble(data: PartitionedData, params: ProtocolParams, seq: np.random.SeedSequence,
              conditions: NetworkConditions, agents: list[Agent], fabric: Fabric,
              monitor: _Monitor, writer: TranscriptWriter, wall: float, how: str | None,
              record_states: bool) -> EngineResult:
    """Collect the agents' own records into an EngineResult and decide the status."""
    tr = _gather_traces(data, params, agents, record_states)
    Q, kept, disagreement = _final_estimate(data, params, agents, how is not None)
    status, reason, crashed = _decide_status(agents, monitor, disagreement)
    summary = _engine_summary(status, fabric, agents, wall)
    progress = tuple(AgentProgress(agent=a.id, last_step=a.trace.last_step,
                                   components_done=a.trace.components_done, finished=a.finished,
                                   crashed_at=a.trace.crashed_at, waiting_on=a.waiting_on)
                     for a in agents)
    outcome = EngineOutcome(
        status=status, reason=reason, policy=conditions.on_crash,
        policy_applied=monitor.policy_applied, crashed=crashed,
        detections=tuple(sorted(monitor.detections, key=lambda x: x.time)),
        survivors=tuple(a.id for a in agents if a.trace.crashed_at is None), progress=progress,
        halted_at=monitor.halted_at)
    ent = seq.entropy
    return EngineResult(
        Q=Q, iterates=tr.iterates, z=tr.z, z_half=tr.z_half, noise=tr.noise, data=tr.blocks,
        deflation=tr.deflation, params=params, backend="engine",
        seed_entropy=int(ent) if isinstance(ent, (int, np.integer)) else None, states=tr.states,
        outcome=outcome, summary=summary, conditions=conditions, rows_kept=kept,
        dissemination=how or "none (Q assembled by the simulator)",
        transcript=None if writer.records is None else tuple(writer.records),
        transcript_path=None if writer.path is None else str(writer.path))
