"""The run's operator: failure detections, the crash model (stop / reweight / continue), stalls.

Nodes learn of crashes only by their own timeouts (a node program reports a suspicion through its
:class:`~dpgossip.engine.node.Outbox`); the monitor uses the simulator's ground truth (crash times,
lost copies) only to label detections and to stop the run as an operator would. The crash model
(``engine.on_crash``):

``"stop"``
    the run stops at the first detection of a crash.
``"reweight"``
    the survivors carry on without the crashed node (a node program that supports it moves the
    crashed neighbour's mixing weight onto its diagonal); the run stops if the survivors' graph is
    disconnected.
continue
    a node program that keeps no failure detector never suspects anyone: a node waiting on a
    crashed one stays blocked and the stall check stops the run, while a crash that nobody waits
    on lets the others finish (``"completed_with_crash"``). A run without a watch (``watch =
    False`` in :class:`~dpgossip.engine.kernel.Simulation`) has no stall check: it ends when
    nothing is left to happen.

A suspicion of a live node (a lost message without retransmission, lost heartbeats, an abandoned
message, a ``failure_timeout`` too short) always stops the run, with a reason saying which.
"""

from __future__ import annotations

import networkx as nx
import simpy
from simpy.core import StopSimulation

from dpgossip.engine.conditions import NetworkConditions
from dpgossip.engine.links import Fabric
from dpgossip.engine.outcome import Detection
from dpgossip.topology.network import Network

__all__ = ["Monitor", "decide_status"]


class Monitor:
    """The run's operator: records detections, applies the crash policy, stops stalled runs."""

    def __init__(self, env: simpy.Environment, network: Network, conditions: NetworkConditions,
                 fabric: Fabric, crash_times: list[float]) -> None:
        self.env = env
        self.graph = network.graph
        self.conditions = conditions
        self.fabric = fabric
        self.crash_times = crash_times
        self.agents: list = []
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



def decide_status(nodes: list, monitor: Monitor,
                  disagreement: str | None) -> tuple[str, str, tuple[int, ...]]:
    """The run's status, its reason, and the nodes that crashed."""
    crashed = tuple(a.id for a in nodes if a.trace.crashed_at is not None)
    unfinished = [a.id for a in nodes if not a.finished and a.trace.crashed_at is None]
    if monitor.halt_reason is not None:
        return "stopped", monitor.halt_reason, crashed
    if unfinished:
        return "stopped", f"deadlock: agents {unfinished[:10]} never finished", crashed
    if disagreement is not None:
        return "stopped", disagreement, crashed
    if len(crashed) == len(nodes):
        return "stopped", "every agent crashed", crashed
    if crashed:
        reason = (f"agent(s) {list(crashed)} crashed; survivors re-weighted W (W_ii += W_ij) "
                  "and finished" if monitor.policy_applied else
                  f"agent(s) {list(crashed)} crashed after their neighbours stopped waiting on "
                  "them; no detection was needed")
        return "completed_with_crash", reason, crashed
    return "completed", "", crashed
