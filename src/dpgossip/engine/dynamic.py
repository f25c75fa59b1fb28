"""Dynamic mixing on the kernel: asynchronous pairwise averaging and time-varying rounds, with churn.

Both send real messages on the fabric (latency; plain loss is message drop) and record the realised
:class:`~dpgossip.topology.schedules.MixingSchedule`, from which the matrix backend
(:func:`~dpgossip.topology.schedule_backend.apply_schedule`) computes the same values. An agent
offline (:class:`~dpgossip.topology.churn.Presence`) neither ticks, sends nor receives; it keeps its
value. docs/dynamic-gossip.md describes both modes.

Pairwise (:func:`run_pairwise`, Boyd et al. 2006): agent ``i``'s rate-``rate`` Poisson clock ticks
until ``horizon``; on a tick, if online and not waiting, it draws ``j`` from row ``i`` of ``P``,
locks and sends ``x_i`` (tag ``(i, c, 0)``). An online, unlocked ``j`` getting it within
``timeout / 2`` of its sending sets ``x_j <- (x_i + x_j) / 2`` and replies with it (tag
``(i, c, 1, k)``), else refuses (``REFUSED``). ``i`` takes the reply if still locked on ``c`` and
online (``AVERAGED``); else the reply was late (``REPLY_LATE``) or never came (``REPLY_LOST``). ``i``
unlocks ``timeout`` after sending at the latest; locked, it takes part in nothing else, so each
exchange is the pair update at the responder's time, in the order of the record.

Rounds (:func:`run_rounds`): round ``t`` starts at ``t * period``; an agent online then is present
in it. Averaging (``W_t``) sends ``x_i`` to every ``j`` with ``W_t[j, i] != 0``; push-sum
(column-stochastic ``A_t``) sends ``A_t[j, i] (s_i, w_i)`` to ``j`` and keeps ``A_t[i, i] (s_i, w_i)``.
At ``(t + 1) * period`` a present agent mixes what arrived: ``x_i <- W_ii x_i + sum_{j got} W_ij x_j
+ (sum_{j missing} W_ij) x_i`` (a row-stochastic realised row), or push-sum ``kept + sum received``
(a lost message loses mass). A message arriving after its receiver mixed is recorded as late; one
to an absent agent is not received.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial

import numpy as np
import scipy.sparse as sp
from simpy.events import Event

from dpgossip.engine.conditions import NetworkConditions
from dpgossip.engine.kernel import Simulation, resolve_conditions
from dpgossip.engine.messages import Message
from dpgossip.engine.node import Node, NodeTrace, Outbox
from dpgossip.errors import ConfigError, check_number
from dpgossip.rng import run_streams
from dpgossip.topology import schedules as sch
from dpgossip.topology.churn import Presence, always_online
from dpgossip.topology.network import Network
from dpgossip.topology.schedule_backend import value_matrix
from dpgossip.topology.schedule_samplers import check_probabilities
from dpgossip.topology.schedules import MixingSchedule

__all__ = ["DynamicRun", "ScheduleRecorder", "run_pairwise", "run_rounds"]


@dataclass(frozen=True, slots=True, eq=False)
class DynamicRun:
    """Final values (push-sum: ``(s, w)``, ``w`` last), the realised schedule and the traffic."""

    values: np.ndarray
    schedule: MixingSchedule
    traffic: dict[str, int]
    transcript: tuple | None
    finished_at: float
    wall: float


class ScheduleRecorder:
    """What the engine writes down: exchanges ``(time, initiator, responder)`` and outcomes, or
    round entries ``(t, i, j, W_t[i, j])`` and late messages."""

    __slots__ = ("log", "outcomes", "entries", "late")

    def __init__(self) -> None:
        self.log: list[tuple[float, int, int]] = []
        self.outcomes: list[int] = []
        self.entries: list[tuple[int, int, int, float]] = []
        self.late: list[tuple[int, int, int, float]] = []

    def exchange(self, now: float, i: int, j: int, outcome: int) -> int:
        """Record an exchange; its index."""
        self.log.append((now, i, j))
        self.outcomes.append(outcome)
        return len(self.outcomes) - 1


def _checked(value: NetworkConditions | Mapping | None, network: Network,
             presence: Presence | None) -> tuple[NetworkConditions, Presence]:
    if presence is not None and presence.m != network.m:
        raise ConfigError(f"presence must cover the {network.m} agents, got {presence.m}",
                          field="presence")
    c = resolve_conditions(value)
    c.check_network(network)
    if c.crashes:
        raise ConfigError("conditions.crashes: dynamic gossip models absences by churn (presence); "
                          "allowed: no crashes", field="conditions.crashes")
    if c.stragglers or c.compute_time:
        raise ConfigError("conditions.compute_time, conditions.stragglers: dynamic gossip does not "
                          "model computation time; allowed: 0 and none", field="conditions.stragglers")
    if c.loss > 0 and c.retransmit:
        raise ConfigError("conditions.retransmit: message drop (loss > 0) in dynamic gossip is "
                          "plain loss; allowed: retransmit = false", field="conditions.retransmit")
    return c, always_online(network.m) if presence is None else presence


class _PairNode(Node):
    """Agent of randomized pairwise gossip (module docstring)."""

    __slots__ = ("x", "rng", "peers", "cum", "rate", "horizon", "timeout", "offline", "rec",
                 "_lock", "_count", "_gaps", "_us", "_k")

    def __init__(self, i: int, outbox: Outbox, x: np.ndarray, rng: np.random.Generator,
                 row: tuple[np.ndarray, np.ndarray], clock: tuple[float, float, float],
                 presence: Presence, rec: ScheduleRecorder) -> None:
        super().__init__(i, outbox, NodeTrace(), 0.0)
        self.x, self.rng, self.rec = x, rng, rec
        self.offline = presence.offline if presence.starts[i] else None   # None: never offline
        self.peers, self.cum = row[0].tolist(), np.cumsum(row[1]).tolist()
        self.rate, self.horizon, self.timeout = clock
        self._lock: int | None = None
        self._count, self._k = 0, 256

    def _protocol(self):  # noqa: ANN202 - a simpy generator
        out, i = self.outbox, self.id
        while True:
            if self._k == 256:                       # draws in blocks: clock gaps, peer choices
                self._gaps = self.rng.exponential(1.0 / self.rate, 256).tolist()
                self._us, self._k = (self.rng.random(256) * self.cum[-1]).tolist(), 0
            gap, u = self._gaps[self._k], self._us[self._k]
            self._k += 1
            yield out.sleep(gap)
            now = out.now
            if now >= self.horizon:
                return
            if self._lock is not None or (self.offline is not None and self.offline(i, now)):
                continue
            j = self.peers[min(bisect_right(self.cum, u), len(self.peers) - 1)]
            self._count += 1
            self._lock = c = self._count
            out.broadcast((i, c, 0), self.x, (j,))
            out.timer(self.timeout, partial(self._expire, c))

    def _expire(self, c: int, _event: Event) -> None:
        if self._lock == c:
            self._lock = None

    def receive(self, msg: Message, now: float) -> None:
        """Answer a request or take a reply (module docstring)."""
        if self.offline is not None and self.offline(self.id, now):
            return
        tag = msg.tag
        if tag[2] == 0:
            if self._lock is not None or now - msg.sent_at > 0.5 * self.timeout:
                self.rec.exchange(now, msg.src, self.id, sch.REFUSED)
                return
            a = 0.5 * (msg.payload + self.x)
            self.x = a
            k = self.rec.exchange(now, msg.src, self.id, sch.REPLY_LOST)
            self.outbox.broadcast((tag[0], tag[1], 1, k), a, (msg.src,))
        elif self._lock == tag[1]:
            self.x = msg.payload
            self._lock = None
            self.rec.outcomes[tag[3]] = sch.AVERAGED
        else:
            self.rec.outcomes[tag[3]] = sch.REPLY_LATE


def run_pairwise(network: Network, P: sp.csr_array, x: object, seed: int | np.random.SeedSequence,
                 *, horizon: float, rate: float = 1.0, timeout: float = 1.0,
                 conditions: NetworkConditions | Mapping | None = None,
                 presence: Presence | None = None, record_transcript: bool = False) -> DynamicRun:
    """Randomized pairwise gossip on the engine (module docstring). ``P`` (``m x m``, rows summing
    to one, supported on the network's edges) picks the peer; agent ``i``'s clock and choices come
    from its own stream of ``run_streams(seed, m)``, the links from the network stream."""
    m = network.m
    H = check_number(horizon, "horizon", low=0.0)
    clock = (check_number(rate, "rate", low=0.0, low_open=True), H,
             check_number(timeout, "timeout", low=0.0, low_open=True))
    Pc = check_probabilities(P, network.graph)
    if Pc.shape != (m, m):
        raise ConfigError(f"P must be {m} x {m}, got {Pc.shape}", field="P")
    cond, pres = _checked(conditions, network, presence)
    vals = value_matrix(x, m)
    streams = run_streams(seed, m)
    sim = Simulation(network, cond, streams.network, record_transcript=record_transcript, watch=False)
    rec = ScheduleRecorder()
    nodes = [_PairNode(i, sim.outbox(i), vals[i].copy(), streams.agents[i],
                       (Pc.indices[Pc.indptr[i]:Pc.indptr[i + 1]], Pc.data[Pc.indptr[i]:Pc.indptr[i + 1]]),
                       clock, pres, rec) for i in range(m)]
    sim.run(nodes)
    log = np.array(rec.log).reshape(-1, 3)
    sched = MixingSchedule(m=m, kind="pairwise", times=log[:, 0], pairs=log[:, 1:].astype(np.int64),
                           outcomes=rec.outcomes, absent=pres.absences(H), label="engine")
    return _result(np.stack([n.x for n in nodes]), sched, sim)


def _result(values: np.ndarray, sched: MixingSchedule, sim: Simulation) -> DynamicRun:
    st = sim.fabric.stats
    return DynamicRun(values=values, schedule=sched,
                      traffic={k: int(getattr(st, k)) for k in st.__slots__},
                      transcript=sim.transcript, finished_at=float(sim.env.now), wall=sim.wall)


class _RoundNode(Node):
    """Agent of time-varying rounds, averaging or push-sum (module docstring)."""

    __slots__ = ("x", "cols", "rows", "push", "period", "presence", "rec", "_got", "_open", "_keep",
                 "absent", "_started", "_early")

    def __init__(self, i: int, outbox: Outbox, x: np.ndarray, mats: tuple[list, list], push: bool,
                 period: float, presence: Presence, rec: ScheduleRecorder) -> None:
        super().__init__(i, outbox, NodeTrace(), 0.0)
        self.x, self.push, self.period, self.presence, self.rec = x, push, period, presence, rec
        self.cols, self.rows = mats          # per round: (dsts, weights) and {src: weight}, self weight
        self._got: dict[int, np.ndarray] = {}
        self._open, self._started, self._keep = -1, -1, x   # open round, last round begun, kept share
        self.absent: set[int] = set()
        self._early: dict[int, dict[int, np.ndarray]] = {}

    def _protocol(self):  # noqa: ANN202 - a simpy generator
        out, i = self.outbox, self.id
        for t in range(len(self.rows) + 1):
            wait = t * self.period - out.now
            if wait > 0:
                yield out.sleep(wait)
            if self._open >= 0:
                self._mix(self._open)
            if t == len(self.rows):
                return
            self._started = t
            early = self._early.pop(t, {})
            if not self.presence.online(i, out.now):
                self.absent.add(t)
                continue
            self._open, self._got = t, early
            dsts, w = self.cols[t]
            if not self.push:
                out.broadcast((t,), self.x, dsts)
                continue
            self._keep = self.rows[t][1] * self.x
            for d, wd in zip(dsts, w, strict=True):
                out.broadcast((t,), wd * self.x, (d,))

    def _mix(self, t: int) -> None:
        nbr, w_self = self.rows[t]
        rec, i, got = self.rec, self.id, self._got
        if self.push:
            acc = self._keep
            for j in sorted(got):
                acc = acc + got[j]
                rec.entries.append((t, i, j, nbr[j]))
        else:
            acc = 0.0
            for j, w in nbr.items():
                if j in got:
                    acc = acc + w * got[j]
                    rec.entries.append((t, i, j, w))
                else:
                    w_self += w
            acc = w_self * self.x + acc
        rec.entries.append((t, i, i, w_self))
        self.x, self._got, self._open = acc, {}, -1

    def receive(self, msg: Message, now: float) -> None:
        """Keep a message of the open round; a later one is late, one to an absent agent is lost."""
        t = msg.tag[0]
        if t == self._open:
            self._got[msg.src] = msg.payload
        elif t > self._started:                       # its round has not begun here yet
            self._early.setdefault(t, {})[msg.src] = msg.payload
        elif t not in self.absent:
            self.rec.late.append((t, msg.src, self.id, self.rows[t][0].get(msg.src, 0.0)))


def run_rounds(schedule: MixingSchedule, x: object, seed: int | np.random.SeedSequence, *,
               period: float = 1.0, conditions: NetworkConditions | Mapping | None = None,
               presence: Presence | None = None, record_transcript: bool = False) -> DynamicRun:
    """Time-varying rounds of a sampled ``"rounds"`` schedule on the engine (module docstring);
    push-sum when ``schedule.stochastic == "column"`` (``x`` holds ``s``; ``w^0 = 1``)."""
    if schedule.kind != "rounds":
        raise ConfigError(f"schedule must be a 'rounds' schedule, got {schedule.kind!r}",
                          field="schedule")
    m, T, push = schedule.m, schedule.steps, schedule.stochastic == "column"
    per = check_number(period, "period", low=0.0, low_open=True)
    network = sch.link_network(m, sch.schedule_union_edges(schedule))
    cond, pres = _checked(conditions, network, presence)
    vals = value_matrix(x, m)
    if push:
        vals = np.column_stack([vals, np.ones(m)])
    sim = Simulation(network, cond, run_streams(seed, m).network, record_transcript=record_transcript,
                     watch=False)
    rec = ScheduleRecorder()
    nodes = [_RoundNode(i, sim.outbox(i), vals[i].copy(), sch.agent_rounds(schedule, i), push, per, pres,
                        rec) for i in range(m)]
    sim.run(nodes)
    absent_rows = [[n.id for n in nodes if t in n.absent] for t in range(T)]
    mats = sch.matrices_from_entries(m, T, rec.entries, absent_rows)
    exact = all(abs(W - V).sum() < 1e-12 for W, V in zip(mats, schedule.matrices, strict=True))
    sched = MixingSchedule(m=m, kind="rounds", matrices=mats, times=per * np.arange(T),
                           stochastic="column" if push else ("doubly" if exact else "row"),
                           absent=pres.absences(per * T), late=np.array(rec.late).reshape(-1, 4),
                           label="engine")
    return _result(np.stack([n.x for n in nodes]), sched, sim)
