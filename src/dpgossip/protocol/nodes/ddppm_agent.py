"""One agent of D-DP-PM as a simpy process (Algorithm 1 of 001, one row block).

An :class:`Agent` holds only what a real participant would: its id, a private copy of its block
``X_i``, its own random stream, its neighbour ids, its row of ``W`` restricted to itself and its
neighbours (``W_ii``, ``W_ij``), ``n_i``, the public parameters (``m``, ``T``, ``c``, ``alpha``,
noise levels, timeouts), the messages it has received, a record of its own computations
(:class:`AgentTrace`, read by the simulator after the run) and an :class:`Outbox`, its handle to the
simulated world (send on its own edges, read the clock, wait). It never sees the global data, the
full ``W`` or another agent.

For each component ``l`` the process runs, for ``t = 1..T``:

    z_i^(t) = X_i^T q_i^(t-1);  s_i^(t,0) = z_i^(t)
    round k = 1..c:  send s_i^(t,k-1) to every live neighbour; once round-k messages from all live
                     neighbours are held:  s_i^(t,k) = W_ii s_i^(t,k-1) + sum_j W_ij s_j^(t,k-1)
    z_i^(t+1/2) = m s_i^(t,c);   q_i^(t) = alpha_l X_i z_i^(t+1/2) + p_i^(t)

then disseminates ``q_i^(T)`` (batches tagged ``("final", l, b)``), waits until it holds every
agent's block (or knows that agent crashed), computes ``||q^(T)||`` and, if another component
follows, deflates its own block ``X_i <- X_i - q_hat_i b_i^T`` with
``b_i = deflation_vector(||q^(T)||, alpha_l, z_i^(T+1/2))``.
Noise: at the start of each component, ``draw_component_noise(rng_i, n_i, sigma_q, sigma_p[l])``
(:mod:`dpgossip.rng`), so the values equal the matrix backend's.

Dissemination along the BFS spanning tree (the default, :mod:`dpgossip.engine.tree`,
docs/engine.md): once the agent holds its own ``q_i^(T)`` and every child's batch it sends its parent
one batch with its whole subtree's blocks (built once, ``[q_i, batch(child_1), ...]``); the root
then holds ``q^(T)`` and sends it to its children, and every agent forwards the same read-only array
to its own children. ``2 (m - 1)`` messages per component. Every agent computes ``||q^(T)||`` the
same way in both modes: ``s_o = ||q_o^(T)||^2`` per block (``block_squares``) stored at index ``o``
of an ``m``-vector, summed in origin order (``canonical_norm``), so the estimate is bit-identical
whichever dissemination is used.

Flooding rule (the fallback, batched flooding, docs/engine.md): the first copy of origin ``o``'s block that
an agent receives is kept for relaying to every live neighbour except the one it came from; later
copies are ignored. Relays are not sent one block at a time: everything an agent learned at one
simulated instant (all the messages delivered to it at that time, and its own block) leaves at the
end of that instant as *one* message per live neighbour, carrying the concatenated blocks and their
origins (:class:`~dpgossip.engine.messages.BlockIndex`); a neighbour gets the blocks that did not
come from it. So each block crosses each directed edge at most once, and an agent sends at most
one message per neighbour per instant at which it learned something: with constant latency about
``2|E|`` messages per hop of the graph's diameter, instead of ``m (2|E| - m + 1)``.
The agent keeps no other agent's block after relaying it: it stores ``||q_o^(T)||^2`` at index
``o`` and marks ``o`` as seen.

Failure detection (see :mod:`dpgossip.protocol.nodes.ddppm` for the policies): every
``failure_timeout / 4`` an unfinished agent (a) sends a heartbeat to its live neighbours if it has
sent nothing to all of them (relays skip one) for ``failure_timeout / 4`` and (b), if it is
waiting, suspects each neighbour it is waiting on from which it has heard nothing (no message of
any kind) for ``failure_timeout`` since it began to wait; a live neighbour is thus suspected only
if about four heartbeats in a row are lost or late. In a gossip round it waits on the neighbours
whose round message is missing; while assembling ``q^(T)`` by flooding, on all its neighbours (any
of them may be the relay of a missing block; a neighbour that has finished has already relayed
everything it had); along the tree, on the children whose batch is missing, then on its parent.
Heartbeats keep a neighbour that is alive but itself blocked from being suspected, so a
crash is detected by its own neighbours only, not by a cascade of timeouts.
A crash learned from a notice ``("crash", j)`` or by detection: the agent moves ``W_ij`` onto its
diagonal (``W_ii += W_ij``) from the round it is in, ignores ``j`` from then on, stops
retransmitting to ``j`` and relays the notice (same flooding rule); in ``z_i^(t+1/2) = m s_i^(t,c)``
it uses for ``m`` the number of agents it does not know to have crashed (the survivors' count).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass

import numpy as np
import simpy
from simpy.events import Event

from dpgossip.engine.messages import (
    ALIVE,
    CRASH,
    EMPTY_PAYLOAD,
    FINAL,
    BlockIndex,
    Message,
    block_squares,
    canonical_norm,
)
from dpgossip.engine.node import Outbox
from dpgossip.engine.tree import TreeCast
from dpgossip.protocol.ddppm import deflation_vector
from dpgossip.protocol.params import ProtocolParams
from dpgossip.rng import draw_component_noise

__all__ = ["Agent", "AgentSettings", "AgentTrace", "member_bytes"]

_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class AgentSettings:
    """How an :class:`Agent` behaves beyond the protocol.

    Attributes
    ----------
    compute_delay
        Simulated seconds of each local computation step.
    failure_timeout
        Seconds of silence before a neighbour is suspected.
    disseminate
        Whether to disseminate ``q^(T)`` (otherwise the agent stops after ``T`` iterations).
    record_states
        Keep ``s_i^(t,k)`` in the trace.
    parent, children
        The agent's place in the BFS spanning tree (:mod:`dpgossip.engine.tree`) when ``q^(T)`` is
        disseminated along it (``parent = -1`` at the root); ``parent = None``: batched flooding.
    """

    compute_delay: float = 0.0
    failure_timeout: float = 1.0
    disseminate: bool = True
    record_states: bool = False
    parent: int | None = None
    children: tuple[int, ...] = ()


class AgentTrace:
    """What one agent computed, in its own arrays (NaN where it never got).

    Shapes use ``r`` components, ``T`` iterations, ``c`` rounds, ``n_i`` rows, ``d`` columns.
    """

    __slots__ = ("blocks", "noise", "q", "z", "z_half", "states", "deflation", "q_norm",
                 "member_mask", "late", "detections", "last_step", "components_done", "steps", "finished_at",
                 "crashed_at")

    def __init__(self, r: int, T: int, c: int, n_i: int, d: int, record_states: bool) -> None:
        nan = np.nan
        self.blocks: list[np.ndarray | None] = [None] * r
        """``X_i`` at the start of each component (after the earlier deflations)."""
        self.noise = np.full((r, T + 1, n_i), nan)
        """``[q_i^(0); p_i^(1..T)]`` of each component."""
        self.q = np.full((r, T + 1, n_i), nan)
        """``q_i^(t)``, ``t = 0..T``."""
        self.z = np.full((r, T, d), nan)
        """``z_i^(t)``, ``t = 1..T``."""
        self.z_half = np.full((r, T, d), nan)
        """``z_i^(t+1/2)``."""
        self.states = np.full((r, T, c + 1, d), nan) if record_states else None
        """``s_i^(t,k)``, ``k = 0..c`` (when recorded)."""
        self.deflation = np.full((r, d), nan)
        """``b_i`` of each component (zero for the last one)."""
        self.q_norm = np.full(r, nan)
        """``||q^(T)||`` over the blocks the agent assembled."""
        self.member_mask: list[bytes | np.ndarray | None] = [None] * r
        """Per component, who was in the agent's ``||q^(T)||``: flood, bytes (byte ``o`` is 1 if
        ``q_o^(T)`` was); tree, the read-only origin ids of the assembled ``q^(T)`` (the array the
        message carried, shared by every agent). :func:`member_bytes` turns either into bytes."""
        self.late: list[tuple[int, int]] = []
        """``(l, o)``: a block that arrived after the agent had assembled component ``l``."""
        self.detections: list[tuple[int, float, tuple | None, str]] = []
        """``(suspect, time, waiting_on, "timeout" | "notice")`` for each crash it learned of."""
        self.last_step: tuple | None = None
        self.components_done = 0
        self.steps = 0
        """Completed steps (waits, computations, crash handling): the monitor's progress signal."""
        self.finished_at: float | None = None
        self.crashed_at: float | None = None

    @property
    def members(self) -> list[tuple[int, ...] | None]:
        """Origins whose ``q_o^(T)`` the agent assembled, per component (from ``member_mask``)."""
        return [None if mk is None
                else tuple(np.flatnonzero(np.frombuffer(mk, np.uint8)).tolist())
                if isinstance(mk, bytes) else tuple(sorted(mk.tolist()))
                for mk in self.member_mask]


def member_bytes(mask: bytes | np.ndarray, m: int) -> bytes:
    """A ``member_mask`` entry as ``m`` bytes (byte ``o`` is 1 if origin ``o`` contributed)."""
    if isinstance(mask, bytes):
        return mask
    out = np.zeros(m, dtype=bool)
    out[mask] = True
    return out.tobytes()


def _subset(origins: np.ndarray, starts: np.ndarray, payload: np.ndarray,
            keep: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The blocks of a batch whose ``keep`` flag is set, as ``(origins, starts, payload)``."""
    lengths = np.diff(starts)
    return (origins[keep], np.concatenate(([0], np.cumsum(lengths[keep]))),
            payload[np.repeat(keep, lengths)])


class _Round:
    """Messages of one gossip round held by one agent (row ``p`` = neighbour ``p``)."""

    __slots__ = ("buf", "have", "count")

    def __init__(self, deg: int, d: int) -> None:
        self.buf = np.zeros((deg, d))
        self.have = bytearray(deg)
        self.count = 0


class Agent:
    """Agent ``i`` of D-DP-PM (see the module docstring).

    Parameters
    ----------
    agent_id
        ``i``.
    block
        ``X_i`` (copied: the agent owns a private, writable copy).
    rng
        The agent's own stream (:attr:`dpgossip.rng.RunStreams.agents` ``[i]``).
    neighbours
        Sorted neighbour ids.
    w_self, w_neighbours
        ``W_ii`` and ``W_ij`` for ``j`` in ``neighbours``.
    m
        Number of agents (public).
    params
        Protocol parameters.
    outbox
        Handle to the simulated world.
    settings
        Computation delay, failure timeout, dissemination and state recording
        (:class:`AgentSettings`).
    """

    __slots__ = ("id", "X", "rng", "neighbours", "w_self", "w_nbr", "n_i", "m", "params",
                 "outbox", "trace", "_d", "_deg", "_pos", "_live", "_n_live", "_wself_eff",
                 "_wnbr_eff", "_targets", "_relay", "_rounds", "_sumsq", "_seen", "_nseen",
                 "_pending", "_dups", "_flush_due", "_batches", "_dead", "_want", "_wake",
                 "_wait_since", "_heard", "_last_sent", "_delay",
                 "_ft", "_done", "_crashed", "_disseminate", "_tree")

    def __init__(self, agent_id: int, block: np.ndarray, rng: np.random.Generator,
                 neighbours: tuple[int, ...], w_self: float, w_neighbours: np.ndarray, m: int,
                 params: ProtocolParams, outbox: Outbox,
                 settings: AgentSettings = AgentSettings()) -> None:
        compute_delay, failure_timeout = settings.compute_delay, settings.failure_timeout
        disseminate, record_states = settings.disseminate, settings.record_states
        self.id = agent_id
        self.X = np.array(block, dtype=float, copy=True)
        self.rng = rng
        self.neighbours = tuple(int(j) for j in neighbours)
        self.w_self = float(w_self)
        self.w_nbr = np.array(w_neighbours, dtype=float, copy=True)
        self.n_i, self._d = self.X.shape
        self.m = m
        self.params = params
        self.outbox = outbox
        self.trace = AgentTrace(params.rank, params.iterations, params.consensus_steps, self.n_i,
                                self._d, record_states)
        self._deg = len(self.neighbours)
        self._pos = {j: p for p, j in enumerate(self.neighbours)}
        self._live = [True] * self._deg
        self._n_live = self._deg
        self._wself_eff = self.w_self
        self._wnbr_eff = self.w_nbr.copy()
        self._targets = self.neighbours
        self._relay = {u: tuple(v for v in self.neighbours if v != u) for u in self.neighbours}
        self._rounds: dict[tuple, _Round] = {}
        self._sumsq: dict[int, float] = {}
        self._seen: dict[int, np.ndarray] = {}
        self._nseen: dict[int, int] = {}
        self._pending: list[tuple[int, int, np.ndarray, np.ndarray, np.ndarray]] = []
        self._dups: list[tuple[int, int, np.ndarray]] = []
        self._flush_due = False
        self._batches = 0
        self._dead: set[int] = set()
        self._want: tuple | None = None
        self._wake: Event | None = None
        self._wait_since = 0.0
        self._heard = [-np.inf] * self._deg
        self._last_sent = 0.0
        self._delay = float(compute_delay)
        self._ft = float(failure_timeout)
        self._done = False
        self._crashed = False
        self._disseminate = disseminate
        self._tree = (None if settings.parent is None
                      else TreeCast(int(settings.parent), tuple(settings.children)))

    # ================================================================ observed by the monitor
    @property
    def waiting_on(self) -> tuple | None:
        """Tag the agent is blocked on (``(l, t, k)`` or ``("final", l)``), or ``None``."""
        return self._want

    @property
    def finished(self) -> bool:
        """Whether the agent completed every component."""
        return self._done

    @property
    def crashed(self) -> bool:
        """Whether the agent has crashed."""
        return self._crashed

    # ================================================================ the process
    def run(self) -> Generator[Event, object, None]:
        """The simpy process: Algorithm 1 of 001 for this agent, until it finishes or crashes."""
        self.outbox.timer(0.25 * self._ft, self._tick)
        try:
            yield from self._protocol()
        except simpy.Interrupt:
            return
        self._done = True
        self.trace.finished_at = self.outbox.now

    def crash(self, now: float) -> None:
        """Fail-stop at ``now`` (called by the simulator; the process is interrupted separately)."""
        self._crashed = True
        if not self._done:
            self.trace.crashed_at = now

    def _protocol(self) -> Generator[Event, object, None]:
        P = self.params
        T, c, r = P.iterations, P.consensus_steps, P.rank
        out, tr = self.outbox, self.trace
        states = tr.states
        delay = self._delay
        for l in range(r):
            tr.blocks[l] = self.X.copy()
            w = draw_component_noise(self.rng, self.n_i, P.sigma_q, P.sigma_p[l])
            tr.noise[l] = w
            alpha = P.alpha[l]
            q = w[0]
            tr.q[l, 0] = q
            zh = q[:0]
            for t in range(1, T + 1):
                if delay:
                    yield out.sleep(delay)
                s = self.X.T @ q                                        # z_i^(t) = X_i^T q_i^(t-1)
                tr.z[l, t - 1] = s
                for k in range(1, c + 1):
                    if states is not None:
                        states[l, t - 1, k - 1] = s
                    tag = (l, t, k)
                    self._last_sent = out.now
                    out.broadcast(tag, s, self._targets)                # send s_i^(t,k-1)
                    rb = self._rounds.get(tag)
                    if self._n_live and (rb is None or rb.count < self._n_live):
                        yield from self._wait(tag)
                        rb = self._rounds.get(tag)
                    self._rounds.pop(tag, None)
                    if self._n_live:                                    # W_ii s_i + sum W_ij s_j
                        s = self._wself_eff * s + self._wnbr_eff @ rb.buf
                    else:
                        s = self._wself_eff * s
                    tr.last_step = tag
                    tr.steps += 1
                    if delay:
                        yield out.sleep(delay)
                if states is not None:
                    states[l, t - 1, c] = s
                zh = (self.m - len(self._dead)) * s                     # z_i^(t+1/2) = m s^(t,c)
                tr.z_half[l, t - 1] = zh
                q = alpha * (self.X @ zh) + w[t]                        # q_i^(t)
                tr.q[l, t] = q
                tr.steps += 1
                if delay:
                    yield out.sleep(delay)
            if not self._disseminate:
                tr.deflation[l] = 0.0
                tr.components_done = l + 1
                continue
            yield from self._disseminate_final(l, q)
            q_norm = tr.q_norm[l]
            if l + 1 < r:
                b = deflation_vector(q_norm, alpha, zh)
                q_hat = q / q_norm if q_norm > 0 else q
                self.X -= np.outer(q_hat, b)                            # X_i <- X_i - q_hat_i b_i^T
                tr.deflation[l] = b
            else:
                tr.deflation[l] = 0.0
            tr.components_done = l + 1

    def _disseminate_final(self, l: int, q: np.ndarray) -> Generator[Event, object, None]:
        """Send ``q_i^(T)``, wait for every block, and compute ``||q^(T)||`` (``canonical_norm``)."""
        tr = self.trace
        if self._tree is not None:
            yield from self._tree_final(l, q)
        else:
            seen = self._seen_of(l)
            if not seen[self.id]:
                seen[self.id] = True
                self._nseen[l] += 1
                self._sumsq[l][self.id] = block_squares(q, np.array([0, q.size]))[0]
                self._queue(l, -1, np.array([self.id]), np.array([0, q.size]), q)
            self._last_sent = self.outbox.now
            if not self._final_complete(l):
                yield from self._wait((FINAL, l))
            tr.member_mask[l] = seen.tobytes()
            tr.q_norm[l] = canonical_norm(self._sumsq.pop(l))
        tr.last_step = (FINAL, l)
        tr.steps += 1

    # ================================================================ dissemination along the tree
    def _tree_final(self, l: int, q: np.ndarray) -> Generator[Event, object, None]:
        """Convergecast then broadcast along the tree; ``||q^(T)||`` from the assembled vector."""
        tree = self._tree
        tree.add_own(l, self.id, q)
        self._tree_send_up(l)
        if tree.full(l) is None:
            yield from self._wait((FINAL, l))
        payload, blocks = tree.full(l)
        tree.drop(l)
        per_origin = np.zeros(self.m)
        per_origin[blocks.origins] = blocks.squares(payload)
        self.trace.member_mask[l] = blocks.origins       # shared read-only index: no copy
        self.trace.q_norm[l] = canonical_norm(per_origin)

    def _tree_send_up(self, l: int) -> None:
        """Once the own block and every child's batch are in: send the subtree's batch to the
        parent (one message), or, at the root, send the assembled ``q^(T)`` down."""
        tree = self._tree
        batch = tree.take_batch(l)
        if batch is None:
            return
        payload, blocks = batch
        self._batches += 1
        if tree.is_root:
            self._tree_send_down(l, payload, blocks)
        elif tree.parent not in self._dead:
            self.outbox.send_blocks((FINAL, l, self._batches), payload, blocks, (tree.parent,))

    def _tree_send_down(self, l: int, payload: np.ndarray, blocks: BlockIndex) -> None:
        """Keep the assembled ``q^(T)`` and forward the same array to every live child."""
        tree = self._tree
        tree.set_full(l, payload, blocks)
        kids = tuple(c for c in tree.children if c not in self._dead)
        if kids:
            self._batches += 1
            self.outbox.send_blocks((FINAL, l, self._batches), payload, blocks, kids)
        want = self._want
        if want is not None and want[0] == FINAL and want[1] == l:
            self._release()

    def _on_tree_final(self, msg: Message, l: int) -> None:
        """A child's subtree batch (convergecast) or the parent's ``q^(T)`` (broadcast)."""
        tree = self._tree
        if msg.src == tree.parent:
            if tree.full(l) is None:
                self._tree_send_down(l, msg.payload, msg.blocks)
            return
        tree.add_child(l, msg.src, msg.payload, msg.blocks)
        self._tree_send_up(l)

    # ================================================================ waiting
    def _wait(self, tag: tuple) -> Generator[Event, object, None]:
        self._want = tag
        self._wait_since = self.outbox.now
        self._wake = self.outbox.event()
        yield self._wake
        self.trace.steps += 1

    def _release(self) -> None:
        self._want = None
        self._wake.succeed()

    def _seen_of(self, l: int) -> np.ndarray:
        seen = self._seen.get(l)
        if seen is None:
            seen = self._seen[l] = np.zeros(self.m, dtype=bool)
            self._nseen[l] = 0
            self._sumsq[l] = np.zeros(self.m)               # ||q_o^(T)||^2 at index o
        return seen

    def _final_complete(self, l: int) -> bool:
        known = self._nseen[l]
        if self._dead:
            seen = self._seen[l]
            known += sum(1 for j in self._dead if not seen[j])
        return known >= self.m

    def _check_wake(self) -> None:
        want = self._want
        if want is None:
            return
        if want[0] == FINAL:
            if self._tree is None and self._final_complete(want[1]):
                self._release()
            return
        rb = self._rounds.get(want)
        if self._n_live == 0 or (rb is not None and rb.count >= self._n_live):
            self._release()

    # ================================================================ receiving
    def receive(self, msg: Message, now: float) -> None:
        """Accept a message from a neighbour (called by the network at delivery time)."""
        p = self._pos[msg.src]
        self._heard[p] = now
        tag = msg.tag
        head = tag[0]
        if head.__class__ is int:                                       # gossip round
            if not self._live[p]:
                return
            rb = self._rounds.get(tag)
            if rb is None:
                rb = self._rounds[tag] = _Round(self._deg, self._d)
            rb.buf[p] = msg.payload
            rb.have[p] = 1
            rb.count += 1
            if rb.count >= self._n_live and tag == self._want:
                self._release()
        elif head == FINAL:
            self._on_final(msg, tag)
        elif head == CRASH:
            j = tag[1]
            if j not in self._dead and j != self.id:
                self._learn_dead(j, "notice", msg.src)

    def _on_final(self, msg: Message, tag: tuple) -> None:
        """Keep the blocks of a batch seen for the first time; queue them for relaying."""
        l = tag[1]
        if self._tree is not None:
            self._on_tree_final(msg, l)
            return
        seen = self._seen_of(l)
        blocks, payload = msg.blocks, msg.payload
        origins, starts = blocks.origins, blocks.starts
        fresh = ~seen[origins]
        if not fresh.all():
            if self._flush_due:                 # the sender has these: do not relay them back
                self._dups.append((l, self._pos[msg.src], origins[~fresh]))
            if not fresh.any():
                return
            origins, starts, payload = _subset(origins, starts, payload, fresh)
        seen[origins] = True
        self._nseen[l] += origins.size
        if l in self._sumsq:
            self._sumsq[l][origins] = block_squares(payload, starts)
        else:
            self.trace.late.extend((l, int(o)) for o in origins)
        self._queue(l, self._pos[msg.src], origins, starts, payload)
        want = self._want
        if want is not None and want[0] == FINAL and want[1] == l and self._final_complete(l):
            self._release()

    def _queue(self, l: int, came_from: int, origins: np.ndarray, starts: np.ndarray,
               payload: np.ndarray) -> None:
        """Relay these blocks at the end of this instant to every neighbour but ``came_from``."""
        self._pending.append((l, came_from, origins, starts, payload))
        if not self._flush_due:
            self._flush_due = True
            self.outbox.timer(0.0, self._flush)

    def _flush(self, _event: Event) -> None:
        """Send what was queued at this instant: one batch per component and live neighbour."""
        self._flush_due = False
        pending, self._pending = self._pending, []
        dups, self._dups = self._dups, []
        if self._crashed or not self._n_live:
            return
        for l in sorted({c[0] for c in pending}):
            chunks = [c for c in pending if c[0] == l]
            self._batches += 1
            tag = (FINAL, l, self._batches)
            special = {c[1] for c in chunks} | {p for k, p, _ in dups if k == l}
            everyone = tuple(v for v in self._targets if self._pos[v] not in special)
            if everyone:
                self._send_chunks(tag, chunks, everyone)
            for v in self._targets:
                p = self._pos[v]
                if p in special:
                    known = [o for k, q, o in dups if k == l and q == p]
                    self._send_chunks(tag, [c for c in chunks if c[1] != p], (v,), known)
            if len(everyone) == self._n_live:
                self._last_sent = self.outbox.now

    def _send_chunks(self, tag: tuple, chunks: list, dsts: tuple[int, ...],
                     known: list[np.ndarray] | None = None) -> None:
        """Concatenate ``chunks`` (``(l, from, origins, starts, payload)``) into one batch,
        leaving out the origins in ``known`` (the receiver sent them to us)."""
        if not chunks:                                  # e.g. all that was queued came from dst
            return
        if known:
            mark = self._seen[chunks[0][0]]             # scratch: flip the known origins off
            drop = np.concatenate(known)
            mark[drop] = False
            kept = []
            for c in chunks:
                keep = mark[c[2]]
                if keep.all():
                    kept.append(c)
                elif keep.any():
                    kept.append((c[0], c[1]) + _subset(c[2], c[3], c[4], keep))
            mark[drop] = True
            chunks = kept
        if not chunks:
            return
        if len(chunks) == 1:
            _, _, origins, starts, payload = chunks[0]
        else:
            payload = np.concatenate([c[4] for c in chunks])
            origins = np.concatenate([c[2] for c in chunks])
            offsets = np.cumsum([0] + [c[4].size for c in chunks])
            starts = np.concatenate([c[3][:-1] + off for c, off in zip(chunks, offsets[:-1], strict=True)]
                                    + [offsets[-1:]])
        self.outbox.send_blocks(tag, payload, BlockIndex.of(origins, starts), dsts)

    # ================================================================ failures
    def _missing(self) -> list[int]:
        """Live neighbours the agent is waiting on.

        In a gossip round, those whose round message is missing. While assembling ``q^(T)``, every
        live neighbour: any of them may be the relay of a missing block.
        """
        want = self._want
        if want[0] == FINAL:
            tree = self._tree
            if tree is None:
                return list(self._targets)
            wait = tree.missing_children(want[1]) if tree.full(want[1]) is None else ()
            if not wait and not tree.is_root:
                wait = (tree.parent,)
            return [j for j in wait if j not in self._dead]
        rb = self._rounds.get(want)
        return [j for p, j in enumerate(self.neighbours)
                if self._live[p] and (rb is None or not rb.have[p])]

    def _tick(self, _event: Event) -> None:
        """Heartbeat and failure detector, every ``failure_timeout / 4``."""
        if self._done or self._crashed:
            return
        out = self.outbox
        now = out.now
        ft = self._ft
        if self._want is not None:
            since = self._wait_since
            suspects = tuple(j for j in self._missing()
                             if now - max(since, self._heard[self._pos[j]]) >= ft * (1 - _EPS))
            if suspects:
                out.suspect(suspects, self._want)                       # may stop the run
                for j in suspects:
                    self._learn_dead(j, "timeout", None)
        if self._n_live and now - self._last_sent >= 0.25 * ft * (1 - _EPS):
            self._last_sent = now
            out.heartbeat((ALIVE,) + (self._want or ()), self._targets)
        out.timer(0.25 * ft, self._tick)

    def _learn_dead(self, j: int, how: str, via: int | None) -> None:
        """Agent ``j`` crashed: exclude it (``W_ii += W_ij``) and relay the notice."""
        if j in self._dead:
            return
        self._dead.add(j)
        tr = self.trace
        tr.detections.append((j, self.outbox.now, self._want, how))
        tr.steps += 1
        p = self._pos.get(j)
        if p is not None and self._live[p]:
            self._live[p] = False
            self._n_live -= 1
            self._wself_eff += float(self.w_nbr[p])
            self._wnbr_eff[p] = 0.0
            self._targets = tuple(v for q, v in enumerate(self.neighbours) if self._live[q])
            self._relay = {u: tuple(v for v in self._targets if v != u) for u in self.neighbours}
            for rb in self._rounds.values():
                if rb.have[p]:
                    rb.have[p] = 0
                    rb.count -= 1
            self.outbox.give_up(j)
        targets = self._targets if via is None else self._relay[via]
        if targets:
            if via is None:
                self._last_sent = self.outbox.now
            self.outbox.broadcast((CRASH, j), EMPTY_PAYLOAD, targets)
        self._check_wake()
