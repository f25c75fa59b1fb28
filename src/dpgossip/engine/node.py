"""A node program of the engine: a simpy process that sends, receives by tag and computes.

A protocol's node holds only what a real participant would (its own data, its own draws, the
public parameters, what it received); it acts on the simulated world only through its
:class:`Outbox` (send on its own edges, read the clock, wait). :class:`Node` is the common base:
an inbox keyed by message tag, :meth:`Node._collect` (wait until ``count`` senders' messages of a
tag are held), :meth:`Node._compute` (simulated computation time of one step), crash and progress
for the run's monitor, and :meth:`Node._mix`, ``c`` synchronous rounds of linear mixing

    S^(k) = W_ii S^(k-1) + sum_{j in N(i)} W_ij S_j^(k-1),    k = 1..c,

the pattern every gossip protocol shares. A subclass gives :meth:`Node._protocol`, its own steps.
The kernel (:mod:`dpgossip.engine.kernel`) runs the nodes on the links of
:mod:`dpgossip.engine.links`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, Mapping

import numpy as np
import simpy
from simpy.events import Event

from dpgossip.engine.messages import EMPTY_PAYLOAD, BlockIndex, Message

__all__ = ["Outbox", "Node", "NodeTrace"]


class Outbox:
    """A node's handle to the simulated world (the only way it can act on it).

    It sends on the node's own edges, reads the clock, creates events to wait on, and reports
    suspicions to the run's monitor (which may halt the run, as an operator would).
    """

    __slots__ = ("owner", "_env", "_fabric", "_monitor")

    def __init__(self, owner: int, env: simpy.Environment, fabric: object, monitor: object) -> None:
        self.owner = owner
        self._env = env
        self._fabric = fabric
        self._monitor = monitor

    @property
    def now(self) -> float:
        """Current simulated time (seconds)."""
        return self._env.now

    def broadcast(self, tag: tuple, payload: np.ndarray, dsts: tuple[int, ...]) -> None:
        """Send ``payload`` under ``tag`` to each neighbour in ``dsts`` (payload becomes read-only)."""
        self._fabric.broadcast(self.owner, tag, payload, dsts)

    def send_blocks(self, tag: tuple, payload: np.ndarray, blocks: BlockIndex,
                    dsts: tuple[int, ...]) -> None:
        """Send a batch of ``"final"`` blocks laid out by ``blocks`` to each neighbour in ``dsts``."""
        self._fabric.broadcast(self.owner, tag, payload, dsts, blocks=blocks)

    def heartbeat(self, tag: tuple, dsts: tuple[int, ...]) -> None:
        """Send an unreliable, empty heartbeat to each neighbour in ``dsts``."""
        self._fabric.broadcast(self.owner, tag, EMPTY_PAYLOAD, dsts, heartbeat=True)

    def give_up(self, dst: int) -> None:
        """Stop retransmitting to ``dst`` (it crashed)."""
        self._fabric.give_up(self.owner, dst)

    def sleep(self, seconds: float) -> Event:
        """Event that fires after ``seconds`` of simulated computation."""
        return self._env.timeout(seconds)

    def event(self) -> Event:
        """A fresh event to wait on."""
        return self._env.event()

    def timer(self, seconds: float, callback: object) -> None:
        """Call ``callback(event)`` after ``seconds``."""
        self._env.timeout(seconds).callbacks.append(callback)

    def suspect(self, suspects: tuple[int, ...], waiting_on: tuple) -> None:
        """Report that ``suspects`` timed out; the monitor may stop the run here."""
        self._monitor.suspect(self.owner, suspects, waiting_on)


class NodeTrace:
    """A node's own record: ``values`` by name (what it computed or received) and its progress."""

    __slots__ = ("values", "steps", "last_step", "finished_at", "crashed_at")

    def __init__(self) -> None:
        self.values: dict[str, np.ndarray] = {}
        self.steps = 0
        """Completed steps (the monitor's progress signal)."""
        self.last_step: tuple | None = None
        self.finished_at: float | None = None
        self.crashed_at: float | None = None

    def recorded(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        """``values[name]``, or NaN of ``shape`` when the node crashed before recording it (a run
        that completed with a crash: the survivors finished without it)."""
        got = self.values.get(name)
        return np.full(shape, np.nan) if got is None else got


class Node(ABC):
    """What every node shares: an inbox by tag, waiting for a tag's messages, crash and progress.

    ``trace`` is any object with the progress fields of :class:`NodeTrace` (``steps``,
    ``last_step``, ``finished_at``, ``crashed_at``). A subclass gives :meth:`_protocol`.
    """

    __slots__ = ("id", "outbox", "trace", "_delay", "_inbox", "_want", "_need", "_wake", "_done",
                 "_crashed")

    def __init__(self, node_id: int, outbox: Outbox, trace: object, compute_delay: float) -> None:
        self.id = node_id
        self.outbox = outbox
        self.trace = trace
        self._delay = float(compute_delay)
        self._inbox: dict[tuple, dict[int, np.ndarray]] = {}
        self._want: tuple | None = None
        self._need = 0
        self._wake: Event | None = None
        self._done = False
        self._crashed = False

    @property
    def waiting_on(self) -> tuple | None:
        """Tag the node is blocked on, or ``None``."""
        return self._want

    @property
    def finished(self) -> bool:
        """Whether the node completed its program."""
        return self._done

    @property
    def crashed(self) -> bool:
        """Whether the node has crashed."""
        return self._crashed

    def crash(self, now: float) -> None:
        """Fail-stop at ``now`` (the kernel interrupts the process separately)."""
        self._crashed = True
        if not self._done:
            self.trace.crashed_at = now

    def run(self) -> Generator[Event, object, None]:
        """The simpy process: the node's program, until it finishes or crashes."""
        try:
            yield from self._protocol()
        except simpy.Interrupt:
            return
        self._done = True
        self.trace.finished_at = self.outbox.now

    @abstractmethod
    def _protocol(self) -> Generator[Event, object, None]:
        """The node's steps: send, :meth:`_collect` a tag's messages, compute, until it is done."""

    def receive(self, msg: Message, now: float) -> None:
        """Keep a message under its tag (called by the network at delivery time)."""
        box = self._inbox.setdefault(msg.tag, {})
        box[msg.src] = msg.payload
        if msg.tag == self._want and len(box) >= self._need:
            self._want = None
            self._wake.succeed()

    def _collect(self, tag: tuple, count: int) -> Generator[Event, object, dict[int, np.ndarray]]:
        """Wait until ``count`` senders' messages of ``tag`` are held; return ``{sender: payload}``."""
        if len(self._inbox.get(tag, ())) < count:
            self._want, self._need = tag, count
            self._wake = self.outbox.event()
            yield self._wake
        self.trace.steps += 1
        self.trace.last_step = tag
        return self._inbox.pop(tag, {})

    def _compute(self) -> Generator[Event, object, None]:
        """Simulated computation time of one local step."""
        self.trace.steps += 1
        if self._delay:
            yield self.outbox.sleep(self._delay)

    def _mix(self, S: np.ndarray, prefix: tuple, rounds: int,
             weights: tuple[float, Mapping[int, float]],
             record: Callable[[int, np.ndarray], None] | None = None, *,
             record_after_compute: bool = False) -> Generator[Event, object, np.ndarray]:
        """``rounds`` synchronous rounds of mixing from ``S`` (module docstring); returns ``S^(c)``.

        Round ``k`` sends ``S^(k-1)`` to every neighbour (the keys of ``weights[1]``, in increasing
        order) under the tag ``prefix + (k,)``, waits for all of theirs and mixes them in that
        order; then one computation step. ``record(k, S^(k))`` is called for ``k = 0..c`` (after
        the round's mixing, or after its computation step with ``record_after_compute``: which
        states a node that crashes mid-step has recorded).
        """
        w_self, w_nbr = weights
        nbrs = tuple(sorted(w_nbr))
        if record is not None:
            record(0, S)
        for k in range(1, rounds + 1):
            tag = prefix + (k,)
            self.outbox.broadcast(tag, S, nbrs)
            got = yield from self._collect(tag, len(nbrs))
            S = w_self * S + sum(w_nbr[j] * got[j] for j in nbrs)
            if record is not None and not record_after_compute:
                record(k, S)
            yield from self._compute()
            if record is not None and record_after_compute:
                record(k, S)
        return S
