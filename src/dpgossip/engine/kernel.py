"""The discrete-event kernel: run node programs on the shared fabric and report one outcome.

:class:`Simulation` builds one run: a simpy environment, the links of
:class:`~dpgossip.engine.links.Fabric` (latency, bandwidth, loss and retransmission, drawn from the
run's network stream only), the transcript of every accepted message
(:class:`~dpgossip.engine.transcript.TranscriptWriter`) and the operator
(:class:`~dpgossip.engine.monitor.Monitor`: failure detections, the crash model, stall checks).
A protocol builds its nodes (:class:`~dpgossip.engine.node.Node` subclasses, each with its own
:meth:`Simulation.outbox`), hands them to :meth:`Simulation.run`, then reads the nodes' own
records into its result together with :meth:`Simulation.summary` (traffic and times),
:meth:`Simulation.outcome` (status and reason) and :meth:`Simulation.record_fields` (the
:class:`~dpgossip.engine.record.EngineRecord` fields every engine result shares).

Crashes (``engine.crashes``): node ``i`` fail-stops at its crash time (a crash at time 0: it never
starts); copies still queued on its links never leave and copies reaching it are dropped
(:mod:`dpgossip.engine.links`). Stragglers: node ``i``'s computation step takes
``compute_time * factor + delay`` (:meth:`Simulation.compute_delay`).
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from functools import partial
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import simpy

from dpgossip.engine.conditions import NetworkConditions
from dpgossip.engine.links import Fabric
from dpgossip.engine.monitor import Monitor, decide_status
from dpgossip.engine.node import Node, Outbox
from dpgossip.engine.outcome import AgentProgress, EngineOutcome, EngineSummary
from dpgossip.engine.transcript import TranscriptWriter
from dpgossip.errors import ConfigError
from dpgossip.topology.network import Network

__all__ = ["Simulation", "resolve_conditions", "child_seed", "NETWORK_SPAWN_KEY", "gc_paused"]

NETWORK_SPAWN_KEY = 4
"""Spawn key ``(4,)`` (relative to the run's root seed) of the network stream of a protocol whose
own draws use the keys ``(0,)`` to ``(3, ...)``, so links never touch the protocol's draws."""


def resolve_conditions(value: object) -> NetworkConditions:
    """``None`` (ideal links), a :class:`NetworkConditions`, or the ``[engine]`` table of a scenario."""
    if value is None:
        return NetworkConditions()
    if isinstance(value, NetworkConditions):
        return value
    if isinstance(value, Mapping):
        return NetworkConditions.from_mapping(value)
    raise ConfigError(f"conditions must be a NetworkConditions or a table, got {value!r}",
                      field="conditions")


def child_seed(root: np.random.SeedSequence, *key: int) -> np.random.SeedSequence:
    """The seed sequence of spawn key ``root.spawn_key + key`` (same entropy and pool size)."""
    return np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, *key), pool_size=root.pool_size)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while the simulation runs, restore it after.

    The run allocates millions of short-lived messages and events, freed by reference counting;
    with many of them in flight at once (a gossip round of every node), generational collection
    promotes them and then rescans the whole heap again and again. Measured on a 3,000-node
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


class Simulation:
    """One run of node programs on ``network`` under ``conditions`` (module docstring).

    Parameters
    ----------
    network
        The graph of the links (its ``W`` is the protocol's business).
    conditions
        Resolved link, straggler and crash conditions.
    network_rng
        The run's network stream (latency and loss draws), never a node's stream.
    record_transcript, transcript_path
        Keep every accepted message in memory and/or stream it to a JSON-lines file.
    watch
        Schedule the monitor's stall check every ``failure_timeout`` (stops a run in which every
        live node waits with nothing in flight); ``False``: the run ends when nothing is left to
        happen.
    """

    def __init__(self, network: Network, conditions: NetworkConditions, network_rng: np.random.Generator, *,
                 record_transcript: bool = True, transcript_path: str | Path | None = None,
                 watch: bool = True) -> None:
        self.env = env = simpy.Environment()
        self.network = network
        self.conditions = conditions
        self.crash_times = [conditions.crashes.get(i, math.inf) for i in range(network.m)]
        self.writer = TranscriptWriter(keep=record_transcript, path=transcript_path)
        self.fabric = Fabric(env, network, conditions, network_rng, self.crash_times,
                             self.writer if self.writer.active else None)
        self.monitor = Monitor(env, network, conditions, self.fabric, self.crash_times)
        self.watch = watch
        self.wall = math.nan
        self._W: sp.csr_array | None = None

    def outbox(self, i: int) -> Outbox:
        """Node ``i``'s handle to this run."""
        return Outbox(i, self.env, self.fabric, self.monitor)

    def compute_delay(self, i: int) -> float:
        """Simulated seconds of one computation step of node ``i`` (its straggler factor and delay)."""
        st = self.conditions.stragglers.get(i)
        return self.conditions.compute_time * (st.factor if st else 1.0) + (st.delay if st else 0.0)

    def weight_row(self, i: int) -> tuple[float, dict[int, float]]:
        """Node ``i``'s row of the network's ``W``: ``W_ii`` and ``{j: W_ij}`` over its neighbours in
        increasing order (0 where ``W`` stores nothing); ``O(deg)`` per row, dense or sparse ``W``."""
        if self._W is None:
            self._W = sp.csr_array(self.network.W)
        W = self._W
        lo, hi = W.indptr[i], W.indptr[i + 1]
        row = dict(zip(W.indices[lo:hi].tolist(), W.data[lo:hi].tolist(), strict=True))
        return row.get(i, 0.0), {j: row.get(j, 0.0) for j in self.network.neighbours[i]}

    def run(self, nodes: Sequence[Node]) -> float:
        """Attach the nodes (ordered by id), start them, schedule the crashes and the stall check,
        run to the end; return (and keep in ``wall``) the wall-clock seconds."""
        env, monitor = self.env, self.monitor
        monitor.agents = list(nodes)
        for p in nodes:
            self.fabric.attach(p.id, p.receive)
            if self.crash_times[p.id] > 0:
                monitor.procs[p.id] = env.process(p.run())
            else:
                p.crash(0.0)                                  # crashed before the start
        for i, tc in self.conditions.crashes.items():
            if tc > 0:
                env.timeout(tc).callbacks.append(partial(monitor.crash, i))
        if self.watch:
            env.timeout(self.conditions.failure_timeout).callbacks.append(monitor.stall_check)
        t0 = time.perf_counter()
        with closing(self.writer), gc_paused():
            env.run()
        self.wall = time.perf_counter() - t0
        return self.wall

    def summary(self, status: str, nodes: Sequence[Node]) -> EngineSummary:
        """Message counts and times of the run."""
        finish = [a.trace.finished_at for a in nodes if a.trace.finished_at is not None]
        st = self.fabric.stats
        return EngineSummary(
            status=status, messages_delivered=st.delivered, gossip_messages=st.gossip,
            flood_messages=st.final, crash_notices=st.crash, heartbeats=st.alive,
            bytes_delivered=st.bytes_delivered, messages_sent=st.messages_sent,
            copies_sent=st.copies_sent, retransmissions=st.retransmissions, lost_copies=st.lost,
            copies_to_crashed=st.dropped_dead, copies_unsent=st.unsent,
            dropped_copies=st.lost + st.dropped_dead + st.unsent, duplicates_discarded=st.duplicates,
            abandoned=st.abandoned, completion_time=max(finish) if finish else np.nan,
            wall_time=self.wall)

    def outcome(self, nodes: Sequence[Node], name: str) -> EngineOutcome:
        """The outcome of a protocol whose every step needs every message (crash model: continue,
        no failure detector, no re-weighting); a stopped run's reason names the protocol ``name``."""
        status, reason, crashed = decide_status(list(nodes), self.monitor, None)
        if status == "stopped" and crashed:
            reason = (f"{name} needs every party's message in every iteration (no re-weighting; "
                      f"engine.on_crash does not apply): party(ies) {list(crashed)} crashed; {reason}")
        progress = tuple(AgentProgress(agent=p.id, last_step=p.trace.last_step,
                                       components_done=int(p.finished), finished=p.finished,
                                       crashed_at=p.trace.crashed_at, waiting_on=p.waiting_on)
                         for p in nodes)
        return EngineOutcome(status=status, reason=reason, policy=self.conditions.on_crash,
                             policy_applied=False, crashed=crashed, detections=(),
                             survivors=tuple(p.id for p in nodes if p.trace.crashed_at is None),
                             progress=progress, halted_at=self.monitor.halted_at)

    @property
    def transcript(self) -> tuple | None:
        """The accepted messages in delivery order (``None`` when not kept in memory)."""
        return None if self.writer.records is None else tuple(self.writer.records)

    @property
    def transcript_path(self) -> str | None:
        """The JSON-lines transcript file, when the run wrote one."""
        return None if self.writer.path is None else str(self.writer.path)

    def record_fields(self, outcome: EngineOutcome, nodes: Sequence[Node]) -> dict[str, object]:
        """The fields of :class:`~dpgossip.engine.record.EngineRecord`: outcome, summary,
        conditions and transcript."""
        return {"outcome": outcome, "summary": self.summary(outcome.status, nodes),
                "conditions": self.conditions, "transcript": self.transcript}
