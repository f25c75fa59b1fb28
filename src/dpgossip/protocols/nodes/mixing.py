"""Fault-tolerant mixing and dissemination: the node side of the re-weighting crash model.

A base for the node programs of gossip protocols that survive crashes (today D-DP-PM,
:mod:`dpgossip.protocols.ddppm.agent`); the operator side of the crash model is the engine's
:class:`~dpgossip.engine.monitor.Monitor`. A :class:`MixingNode` is a
:class:`~dpgossip.engine.node.Node` that knows its neighbours and its row of a mixing matrix ``W``
(``W_ii``, ``W_ij``) and offers its node program three steps:

* :meth:`MixingNode._send_round` and :meth:`MixingNode._mix_round`: one synchronous round
  ``s <- W_ii s + sum_j W_ij s_j`` over the live neighbours (tag ``(l, t, k)``, three ints);
* :meth:`MixingNode._disseminate_block`: send the node's own block of component ``l`` to every node
  and wait until it holds every node's block (or knows that node crashed); ``||q||`` over the assembled
  blocks goes to ``trace.q_norm[l]`` and who contributed to ``trace.member_mask[l]``;
* :attr:`MixingNode.live_count`: the number of nodes it does not know to have crashed.

Under a schedule of rounds (``MixingSettings.plan``, docs/dynamic-gossip.md, section 8) the round of
global index ``t`` (the program passes it) uses the node's part of ``W_t``: it sends to the live
``j`` with ``W_t[j, i] != 0``, waits for the live ``j`` with ``W_t[i, j] != 0`` and mixes
``W_t[i, i] s + sum_j W_t[i, j] s_j``, the weight of a crashed ``j`` moved onto the diagonal as for
``W``. Every weight used is appended to :attr:`MixingNode.realised` as ``(t, i, j, w)`` (the engine
run's realised schedule, row stochastic once a crash moved weights).

Dissemination along the BFS spanning tree (the default, :mod:`dpgossip.engine.tree`,
docs/engine.md): once the node holds its own block and every child's batch it sends its parent
one batch with its whole subtree's blocks (built once, ``[q_i, batch(child_1), ...]``); the root
then holds ``q`` and sends it to its children, and every node forwards the same read-only array
to its own children. ``2 (m - 1)`` messages per component. Every node computes ``||q||`` the
same way in both modes: ``s_o = ||q_o||^2`` per block (``block_squares``) stored at index ``o``
of an ``m``-vector, summed in origin order (``canonical_norm``), so the norm is bit-identical
whichever dissemination is used.

Flooding rule (the fallback, batched flooding, docs/engine.md): the first copy of origin ``o``'s
block that a node receives is kept for relaying to every live neighbour except the one it came
from; later copies are ignored. Relays are not sent one block at a time: everything a node learned
at one simulated instant (all the messages delivered to it at that time, and its own block) leaves
at the end of that instant as *one* message per live neighbour, carrying the concatenated blocks
and their origins (:class:`~dpgossip.engine.messages.BlockIndex`); a neighbour gets the blocks that
did not come from it. So each block crosses each directed edge at most once, and a node sends at
most one message per neighbour per instant at which it learned something: with constant latency
about ``2|E|`` messages per hop of the graph's diameter, instead of ``m (2|E| - m + 1)``. The node
keeps no other node's block after relaying it: it stores ``||q_o||^2`` at index ``o`` and marks
``o`` as seen.

Failure detection (the policies are in :mod:`dpgossip.engine.monitor`): every
``failure_timeout / 4`` an unfinished node (a) sends a heartbeat to its live neighbours if it has
sent nothing to all of them (relays skip one) for ``failure_timeout / 4`` and (b), if it is
waiting, suspects each neighbour it is waiting on from which it has heard nothing (no message of
any kind) for ``failure_timeout`` since it began to wait; a live neighbour is thus suspected only
if about four heartbeats in a row are lost or late. In a round it waits on the neighbours whose
round message is missing; while assembling by flooding, on all its neighbours (any of them may be
the relay of a missing block; a neighbour that has finished has already relayed everything it
had); along the tree, on the children whose batch is missing, then on its parent. Heartbeats keep
a neighbour that is alive but itself blocked from being suspected, so a crash is detected by its
own neighbours only, not by a cascade of timeouts. A crash learned from a notice ``("crash", j)``
or by detection: the node moves ``W_ij`` onto its diagonal (``W_ii += W_ij``) from the round it is
in, ignores ``j`` from then on, stops retransmitting to ``j`` and relays the notice (same flooding
rule).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass

import numpy as np
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
from dpgossip.engine.node import Node, Outbox
from dpgossip.engine.tree import TreeCast

__all__ = ["MixingNode", "MixingSettings", "MixingTrace", "member_bytes"]

_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class MixingSettings:
    """How a :class:`MixingNode` behaves beyond its program.

    Attributes
    ----------
    compute_delay
        Simulated seconds of each local computation step.
    failure_timeout
        Seconds of silence before a neighbour is suspected.
    disseminate
        Whether the program disseminates its blocks (read by the program).
    parent, children
        The node's place in the BFS spanning tree (:mod:`dpgossip.engine.tree`) when blocks are
        disseminated along it (``parent = -1`` at the root); ``parent = None``: batched flooding.
    plan
        Under a schedule, the node's part of every ``W_t``
        (:meth:`~dpgossip.protocols.gossip.round_mixing.RoundMixing.node_rounds`); ``None``: its row of
        ``W`` every round.
    """

    compute_delay: float = 0.0
    failure_timeout: float = 1.0
    disseminate: bool = True
    parent: int | None = None
    children: tuple[int, ...] = ()
    plan: tuple | None = None


class MixingTrace:
    """What a :class:`MixingNode` records of its dissemination, detections and progress."""

    __slots__ = ("q_norm", "member_mask", "late", "detections", "last_step", "components_done",
                 "steps", "finished_at", "crashed_at")

    def __init__(self, r: int) -> None:
        self.q_norm = np.full(r, np.nan)
        """``||q||`` of each component over the blocks the node assembled."""
        self.member_mask: list[bytes | np.ndarray | None] = [None] * r
        """Per component, who was in the node's ``||q||``: flood, bytes (byte ``o`` is 1 if
        ``q_o`` was); tree, the read-only origin ids of the assembled ``q`` (the array the
        message carried, shared by every node). :func:`member_bytes` turns either into bytes."""
        self.late: list[tuple[int, int]] = []
        """``(l, o)``: a block that arrived after the node had assembled component ``l``."""
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
        """Origins whose ``q_o`` the node assembled, per component (from ``member_mask``)."""
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
    """Messages of one gossip round held by one node (row ``p`` = neighbour ``p``)."""

    __slots__ = ("buf", "have", "count")

    def __init__(self, deg: int, d: int) -> None:
        self.buf = np.zeros((deg, d))
        self.have = bytearray(deg)
        self.count = 0

class MixingNode(Node):
    """A node that mixes with its live neighbours and disseminates blocks (module docstring).

    Parameters
    ----------
    node_id
        ``i``.
    outbox
        Handle to the simulated world.
    trace
        Its record (a :class:`MixingTrace`).
    neighbours
        Sorted neighbour ids.
    w_self, w_neighbours
        ``W_ii`` and ``W_ij`` for ``j`` in ``neighbours``.
    m
        Number of nodes (public).
    dim
        Length of the vectors it mixes.
    settings
        Computation delay, failure timeout, dissemination (:class:`MixingSettings`).
    """

    __slots__ = ("neighbours", "w_self", "w_nbr", "m", "_d", "_deg", "_pos", "_live", "_n_live",
                 "_wself_eff", "_wnbr_eff", "_targets", "_relay", "_rounds", "_sumsq", "_seen",
                 "_nseen", "_pending", "_dups", "_flush_due", "_batches", "_dead", "_wait_since",
                 "_heard", "_last_sent", "_ft", "_disseminate", "_tree", "_plan", "_members",
                 "realised")

    def __init__(self, node_id: int, outbox: Outbox, trace: MixingTrace, neighbours: tuple[int, ...],
                 w_self: float, w_neighbours: np.ndarray, m: int, dim: int,
                 settings: MixingSettings) -> None:
        super().__init__(node_id, outbox, trace, settings.compute_delay)
        self.neighbours = tuple(int(j) for j in neighbours)
        self.w_self = float(w_self)
        self.w_nbr = np.array(w_neighbours, dtype=float, copy=True)
        self.m = m
        self._d = dim
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
        self._wait_since = 0.0
        self._heard = [-np.inf] * self._deg
        self._last_sent = 0.0
        self._ft = float(settings.failure_timeout)
        self._disseminate = settings.disseminate
        self._tree = (None if settings.parent is None
                      else TreeCast(int(settings.parent), tuple(settings.children)))
        self._plan = settings.plan
        self._members: dict[tuple, tuple[int, ...]] = {}
        """Under a schedule: the neighbour positions each round's row of ``W_t`` waits for."""
        self.realised: list[tuple[int, int, int, float]] = []
        """Under a schedule: ``(t, i, j, w)`` of every weight the node used (module docstring)."""

    @property
    def live_count(self) -> int:
        """The number of nodes it does not know to have crashed (the survivors' count)."""
        return self.m - len(self._dead)

    def run(self) -> Generator[Event, object, None]:
        """The simpy process: start the failure detector, then the program until it finishes or
        crashes."""
        self.outbox.timer(0.25 * self._ft, self._tick)
        yield from super().run()

    def _round_need(self, tag: tuple) -> int:
        """How many messages round ``tag`` waits for: every live neighbour, or under a schedule the
        live ones in the round's row of ``W_t``."""
        members = self._members.get(tag)
        if members is None:
            return self._n_live
        live = self._live
        return sum(1 for p in members if live[p])

    def _send_round(self, tag: tuple, s: np.ndarray, t: int | None = None) -> bool:
        """Round ``tag`` (global round ``t`` under a schedule): send ``s`` to every live neighbour
        (under a schedule, to the live receivers of ``W_t``'s column); ``True`` if some of theirs are
        still missing (then ``yield from self._wait(tag)`` before :meth:`_mix_round`)."""
        self._last_sent = self.outbox.now
        if self._plan is not None:
            _, row, receivers = self._plan[t]
            targets = tuple(j for j in receivers if j not in self._dead)
            if targets:
                self.outbox.broadcast(tag, s, targets)
            self._members[tag] = tuple(self._pos[j] for j in row)
            need = self._round_need(tag)
            rb = self._rounds.get(tag)
            return bool(need) and (rb is None or rb.count < need)
        self.outbox.broadcast(tag, s, self._targets)
        rb = self._rounds.get(tag)
        return bool(self._n_live) and (rb is None or rb.count < self._n_live)

    def _mix_scheduled(self, tag: tuple, s: np.ndarray, t: int, rb: _Round | None) -> np.ndarray:
        """``W_t[i, i] s + sum_j W_t[i, j] s_j`` with the crashed ``j``'s weights on the diagonal;
        the weights used go to :attr:`realised`."""
        w_self, row, _ = self._plan[t]
        self._members.pop(tag, None)
        w_nbr = np.zeros(self._deg)
        for j, w in row.items():
            p = self._pos[j]
            if self._live[p]:
                w_nbr[p] = w
            else:
                w_self += w
        self.realised.append((t, self.id, self.id, w_self))
        self.realised.extend((t, self.id, j, float(w_nbr[self._pos[j]])) for j in row
                             if self._live[self._pos[j]])
        return w_self * s + w_nbr @ rb.buf if rb is not None else w_self * s

    def _mix_round(self, tag: tuple, s: np.ndarray, t: int | None = None) -> np.ndarray:
        """``W_ii s + sum_j W_ij s_j`` over the round's messages (the crashed neighbours' weights on
        the diagonal; under a schedule the weights of ``W_t``). A round is :meth:`_send_round`,
        :meth:`_wait` if needed, then this; not one generator, which would cost a frame per round on
        the hot path."""
        rb = self._rounds.pop(tag, None)
        if self._plan is not None:
            s = self._mix_scheduled(tag, s, t, rb)
        elif self._n_live:
            s = self._wself_eff * s + self._wnbr_eff @ rb.buf
        else:
            s = self._wself_eff * s
        tr = self.trace
        tr.last_step = tag
        tr.steps += 1
        return s

    def _disseminate_block(self, l: int, q: np.ndarray) -> Generator[Event, object, None]:
        """Send ``q`` (the own block), wait for every block, compute ``||q||`` (``canonical_norm``)."""
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
        """Convergecast then broadcast along the tree; ``||q||`` from the assembled vector."""
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
        parent (one message), or, at the root, send the assembled ``q`` down."""
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
        """Keep the assembled ``q`` and forward the same array to every live child."""
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
        """A child's subtree batch (convergecast) or the parent's ``q`` (broadcast)."""
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
            self._sumsq[l] = np.zeros(self.m)               # ||q_o||^2 at index o
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
        need = self._n_live if self._plan is None else self._round_need(want)
        if need == 0 or (rb is not None and rb.count >= need):
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
            if tag == self._want and rb.count >= (self._n_live if self._plan is None
                                                  else self._round_need(tag)):
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
        """Live neighbours the node is waiting on.

        In a gossip round, those whose round message is missing. While assembling ``q``, every
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
        members = self._members.get(want)
        return [j for p, j in enumerate(self.neighbours)
                if self._live[p] and (rb is None or not rb.have[p])
                and (members is None or p in members)]

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
