"""The links of the simulated network: latency, bandwidth, loss and reliable delivery.

Each directed edge ``i -> j`` is a link with a latency distribution, a bandwidth and a loss
probability (global defaults, per-edge overrides; :class:`~dpgossip.engine.NetworkConditions`).
A copy of ``size`` bytes handed to the link at time ``now``:

1. waits until the link is free: transmission starts at ``start = max(now, busy)`` (FIFO, one copy
   on the link at a time); if the sender has crashed by ``start`` the copy never leaves;
2. occupies the link for ``size / bandwidth``: ``end = start + size / bandwidth``;
3. propagates: it arrives at ``end + latency`` (one draw per copy; copies may overtake each other
   under random latency, receivers buffer by tag so order does not matter);
4. is lost with probability ``loss``; a copy arriving at or after the receiver's crash is dropped.

Reliable delivery (``retransmit = true``, the default). The receiver acknowledges every copy it
gets (also duplicates, which its transport discards). An ack is a header-only message on the
reverse link: it takes that link's latency and is lost with that link's loss probability, but it
does not occupy the link's bandwidth. If no ack has reached the sender by ``end + retransmit_timeout``
the sender transmits a new copy (``attempt + 1``), until an ack arrives, the sender crashes, the
sender learns (failure detection) that the receiver crashed, or ``max_attempts`` copies were
tried (the message is then abandoned). Because every random draw of a copy (latency, loss, ack
latency, ack loss) is made when the copy is handed to the link, acks need no simulated events:
the earliest ack time of each message is known and the retransmission timer just compares with it.

``retransmit = false``: a lost copy is gone; the receiver waits for it until the run is declared
stalled (see :mod:`dpgossip.engine.monitor`).

All draws come from the run's network stream (:func:`dpgossip.rng.run_streams`), never from an
agent's stream, so network conditions cannot change the algorithm's noise.

Performance: with constant latency on every link, unlimited bandwidth and no loss (and no way for
an ack to be late or missing), a broadcast is one simulated event that delivers all its copies;
otherwise each copy is one lean event (:class:`_Arrival`) whose callback delivers it. No simpy
process is created per message, acks and retransmission timers cost nothing unless a copy or an
ack is actually lost or late, and random variates are drawn from the network stream in blocks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np
import simpy
from simpy.events import NORMAL, Event

from dpgossip.engine.conditions import LatencySpec, NetworkConditions
from dpgossip.engine.messages import (
    ALIVE,
    BLOCK_ENTRY_BYTES,
    CRASH,
    FINAL,
    HEADER_BYTES,
    BlockIndex,
    Message,
)
from dpgossip.topology.network import Network

__all__ = ["Fabric", "TrafficCounters"]

_KIND = {"constant": 0, "uniform": 1, "exponential": 2, "lognormal": 3}

Receiver = Callable[[Message, float], None]
"""``receive(message, now)``: what the fabric calls when a copy is accepted at its destination."""


class TrafficCounters:
    """Mutable traffic counters of a run (turned into an ``EngineSummary`` at the end)."""

    __slots__ = ("messages_sent", "copies_sent", "retransmissions", "delivered", "bytes_delivered",
                 "gossip", "final", "crash", "alive", "lost", "dropped_dead", "unsent",
                 "duplicates", "abandoned")

    def __init__(self) -> None:
        for name in self.__slots__:
            setattr(self, name, 0)


class _Variates:
    """Standard random variates drawn from the network stream in blocks, consumed in order.

    Drawing a block of 4096 at a time instead of one scalar per call keeps the per-copy cost low;
    the sequence is still a deterministic function of the seed and of the order of the draws.
    """

    __slots__ = ("_rng", "_u", "_ui", "_e", "_ei", "_n", "_ni")
    BLOCK = 4096

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self._u: list[float] = []
        self._e: list[float] = []
        self._n: list[float] = []
        self._ui = self._ei = self._ni = 0

    def uniform(self) -> float:
        """``U(0, 1)``."""
        i = self._ui
        if i == len(self._u):
            self._u = self._rng.random(self.BLOCK).tolist()
            i = 0
        self._ui = i + 1
        return self._u[i]

    def exponential(self) -> float:
        """Exponential with mean 1."""
        i = self._ei
        if i == len(self._e):
            self._e = self._rng.standard_exponential(self.BLOCK).tolist()
            i = 0
        self._ei = i + 1
        return self._e[i]

    def normal(self) -> float:
        """Standard normal."""
        i = self._ni
        if i == len(self._n):
            self._n = self._rng.standard_normal(self.BLOCK).tolist()
            i = 0
        self._ni = i + 1
        return self._n[i]


class _Arrival(Event):
    """A simulated event that hands ``value`` to ``callback`` after ``delay`` (a lean Timeout)."""

    def __init__(self, env: simpy.Environment, delay: float, value: object,
                 callback: Callable[[Event], None]) -> None:
        self.env = env
        self.callbacks = [callback]
        self._value = value
        self._ok = True
        env.schedule(self, NORMAL, delay)


class _Retx:
    """Reliable-delivery state of one message that may be sent more than once."""

    __slots__ = ("ack_at", "accepted")

    def __init__(self) -> None:
        self.ack_at = math.inf
        self.accepted = False


class _Link:
    """State of one directed link."""

    __slots__ = ("kind", "a", "b", "rate", "loss", "busy", "rev")

    def __init__(self, latency: LatencySpec, rate: float, loss: float) -> None:
        self.kind = _KIND[latency.kind]
        if latency.kind == "constant":
            self.a, self.b = float(latency.value), 0.0
        elif latency.kind == "uniform":
            self.a, self.b = float(latency.low), float(latency.high)
        elif latency.kind == "exponential":
            self.a, self.b = float(latency.mean), 0.0
        else:
            self.a, self.b = float(latency.mu), float(latency.sigma)
        self.rate = rate
        self.loss = loss
        self.busy = -math.inf
        self.rev: _Link = self
        """The link in the opposite direction (carries the acks)."""


class Fabric:
    """All links of a run; moves :class:`~dpgossip.engine.messages.Message` copies between agents.

    Parameters
    ----------
    env
        The simpy environment.
    network
        Graph whose edges are the links.
    conditions
        Link conditions.
    rng
        The run's network stream (:attr:`dpgossip.rng.RunStreams.network`).
    crash_times
        Simulated crash time of every agent (``inf`` for none): the fabric does not transmit from a
        crashed sender and drops copies arriving at a crashed receiver.
    sink
        Called as ``sink(message, now)`` for every accepted copy (the transcript), or ``None``.
    """

    def __init__(self, env: simpy.Environment, network: Network, conditions: NetworkConditions,
                 rng: np.random.Generator, crash_times: Iterable[float],
                 sink: Callable[[Message, float], None] | None) -> None:
        self.env = env
        self.stats = TrafficCounters()
        self._draw = _Variates(rng)
        self._down = [float(x) for x in crash_times]
        m = len(self._down)
        self._receivers: list[Receiver | None] = [None] * m
        self._sink = sink
        self._rto = conditions.retransmit_timeout
        self._max_attempts = conditions.max_attempts
        self._reliable = conditions.retransmit
        self._cancelled: list[set[int]] = [set() for _ in range(m)]
        self._retx: dict[tuple, _Retx] = {}
        self._lost_pairs: set[tuple[int, int]] = set()
        self._beat_pairs: set[tuple[int, int]] = set()
        self._abandoned_pairs: set[tuple[int, int]] = set()
        self.lost_data: list[tuple[float, int, int, tuple]] = []
        """``(time, src, dst, tag)`` of the first data copies lost for good (at most 20)."""
        self.lost_data_count = 0
        self._in_flight = 0
        self._timers = 0
        override = {ov.edge: ov for ov in conditions.links}
        self._links: dict[tuple[int, int], _Link] = {}
        for i, j in network.graph.edges():
            if i == j:
                continue
            ov = override.get((min(i, j), max(i, j)))
            lat = ov.latency if ov is not None and ov.latency is not None else conditions.latency
            bw = ov.bandwidth if ov is not None and ov.bandwidth is not None else conditions.bandwidth
            loss = ov.loss if ov is not None and ov.loss is not None else conditions.loss
            for a, b in ((i, j), (j, i)):
                self._links[(int(a), int(b))] = _Link(lat, bw, loss)
        self._out: list[dict[int, _Link]] = [{} for _ in range(m)]
        for (a, b), link in self._links.items():
            self._out[a][b] = link
            link.rev = self._links[(b, a)]
        self._uniform = self._uniform_delay(conditions)

    def _uniform_delay(self, conditions: NetworkConditions) -> float | None:
        """The common constant delay when one event per broadcast is exact, else ``None``."""
        links = list(self._links.values())
        if not links:
            return 0.0
        first = links[0]
        same = all(k.kind == 0 and k.a == first.a and math.isinf(k.rate) and k.loss == 0.0
                   for k in links) and first.kind == 0
        if not same:
            return None
        if self._reliable and (2 * first.a > self._rto or any(math.isfinite(t)
                                                              for t in self._down)):
            return None
        return first.a

    # ----------------------------------------------------------------------------- wiring
    def attach(self, agent: int, receiver: Receiver) -> None:
        """Register the function that accepts copies for ``agent``."""
        self._receivers[agent] = receiver

    def give_up(self, src: int, dst: int) -> None:
        """``src`` learned that ``dst`` crashed: stop retransmitting to it."""
        self._cancelled[src].add(dst)

    @property
    def pending(self) -> int:
        """Data copies in flight plus retransmission timers (heartbeats excluded)."""
        return self._in_flight + self._timers

    def lost_between(self, src: int, dst: int) -> str | None:
        """Why copies ``src -> dst`` went missing for good: ``"lost"`` (data without
        retransmission), ``"abandoned"`` (``max_attempts`` reached), ``"heartbeats"`` (heartbeats
        lost), or ``None``."""
        key = (src, dst)
        if key in self._lost_pairs:
            return "lost"
        if key in self._abandoned_pairs:
            return "abandoned"
        if key in self._beat_pairs:
            return "heartbeats"
        return None

    # ----------------------------------------------------------------------------- sending
    def broadcast(self, src: int, tag: tuple, payload: np.ndarray, dsts: tuple[int, ...],
                  *, heartbeat: bool = False, blocks: BlockIndex | None = None) -> None:
        """Send ``payload`` under ``tag`` from ``src`` to each of ``dsts`` (graph neighbours).

        Heartbeats are unreliable (never retransmitted) and do not count as pending data.
        ``blocks`` lays out a batch of ``"final"`` blocks (8 more header bytes per block).
        """
        if not dsts:
            return
        if payload.base is not None:                # a view: freeze a copy, not someone's array
            payload = payload.copy()
        if payload.flags.writeable:
            payload.setflags(write=False)
        now = self.env.now
        size = payload.nbytes + HEADER_BYTES
        if blocks is not None:
            size += BLOCK_ENTRY_BYTES * blocks.origins.size
        st = self.stats
        st.messages_sent += len(dsts)
        delay = self._uniform
        if delay is not None:
            msgs = [Message(src, d, tag, payload, size, now, 1, blocks) for d in dsts]
            st.copies_sent += len(msgs)
            if not heartbeat:
                self._in_flight += len(msgs)
            _Arrival(self.env, delay, msgs, self._arrive_batch)
            return
        transmit, out = self._transmit, self._out[src]
        for d in dsts:
            transmit(Message(src, d, tag, payload, size, now, 1, blocks), out[d], heartbeat, now)

    def _latency(self, link: _Link) -> float:
        kind = link.kind
        if kind == 0:
            return link.a
        if kind == 1:
            return link.a + (link.b - link.a) * self._draw.uniform()
        if kind == 2:
            return link.a * self._draw.exponential()
        return math.exp(link.a + link.b * self._draw.normal())

    def _transmit(self, msg: Message, link: _Link, heartbeat: bool, now: float) -> None:
        """Hand one copy to its link at time ``now`` (steps 1-4 of the module docstring)."""
        src = msg.src
        start = link.busy if link.busy > now else now
        if start >= self._down[src]:
            self.stats.unsent += 1
            return
        end = start
        if link.rate != math.inf:
            end = start + msg.size_bytes / link.rate
            link.busy = end
        kind = link.kind
        if kind == 0:
            arrive = end + link.a
        elif kind == 2:
            arrive = end + link.a * self._draw.exponential()
        else:
            arrive = end + self._latency(link)
        self.stats.copies_sent += 1
        lost = link.loss > 0.0 and self._draw.uniform() < link.loss
        if lost:
            self._lose(msg, heartbeat, now)
        else:
            if not heartbeat:
                self._in_flight += 1
            _Arrival(self.env, arrive - now, msg, self._arrive)
        if heartbeat or not self._reliable:
            return
        # reliable delivery: when does the (earliest) ack reach the sender?
        rec = self._retx.get((src, msg.dst, msg.tag)) if msg.attempt > 1 else None
        acked = rec.ack_at if rec is not None else math.inf
        if not lost and arrive < self._down[msg.dst]:
            rev = link.rev
            kind = rev.kind
            if kind == 0:
                ack_at = arrive + rev.a
            elif kind == 2:
                ack_at = arrive + rev.a * self._draw.exponential()
            else:
                ack_at = arrive + self._latency(rev)
            if ack_at < acked and not (rev.loss > 0.0 and self._draw.uniform() < rev.loss):
                acked = ack_at
        deadline = end + self._rto
        if acked <= deadline and rec is None:
            return                                  # the common case: acked in time, no state
        if rec is None:
            rec = self._retx[(src, msg.dst, msg.tag)] = _Retx()
        rec.ack_at = acked
        if acked <= deadline:
            return
        self._timers += 1
        _Arrival(self.env, deadline - now, msg, self._timeout)

    def _lose(self, msg: Message, heartbeat: bool, now: float) -> None:
        """Book-keeping of a copy lost on the wire."""
        self.stats.lost += 1
        if heartbeat:
            self._beat_pairs.add((msg.src, msg.dst))
        elif not self._reliable:
            self._lost_pairs.add((msg.src, msg.dst))
            self.lost_data_count += 1
            if len(self.lost_data) < 20:
                self.lost_data.append((now, msg.src, msg.dst, msg.tag))

    def _timeout(self, event: _Arrival) -> None:
        """Retransmission timer of one copy: resend unless acked, hopeless or given up."""
        self._timers -= 1
        msg: Message = event._value
        now = self.env.now
        rec = self._retx[(msg.src, msg.dst, msg.tag)]
        if rec.ack_at <= now:
            return
        if now >= self._down[msg.src] or msg.dst in self._cancelled[msg.src]:
            return
        if msg.attempt >= self._max_attempts:
            self.stats.abandoned += 1
            self._abandoned_pairs.add((msg.src, msg.dst))
            return
        self.stats.retransmissions += 1
        self._transmit(Message(msg.src, msg.dst, msg.tag, msg.payload, msg.size_bytes, now,
                               msg.attempt + 1, msg.blocks), self._out[msg.src][msg.dst], False, now)

    # ----------------------------------------------------------------------------- delivery
    def _arrive(self, event: _Arrival) -> None:
        self._deliver(event._value, self.env.now)

    def _arrive_batch(self, event: _Arrival) -> None:
        now = self.env.now
        deliver = self._deliver
        for msg in event._value:
            deliver(msg, now)

    def _deliver(self, msg: Message, now: float) -> None:
        """Accept a copy at ``msg.dst`` unless the receiver crashed or already has it."""
        tag = msg.tag
        head = tag[0]
        st = self.stats
        if head != ALIVE:
            self._in_flight -= 1
        dst = msg.dst
        if now >= self._down[dst]:
            st.dropped_dead += 1
            return
        if self._retx:                              # duplicates need a retransmitted message
            rec = self._retx.get((msg.src, dst, tag))
            if rec is not None:
                if rec.accepted:
                    st.duplicates += 1
                    return
                rec.accepted = True
        st.delivered += 1
        st.bytes_delivered += msg.size_bytes
        if head.__class__ is int:
            st.gossip += 1
        elif head == FINAL:
            st.final += 1
        elif head == CRASH:
            st.crash += 1
        else:
            st.alive += 1
        if self._sink is not None:
            self._sink(msg, now)
        self._receivers[dst](msg, now)
