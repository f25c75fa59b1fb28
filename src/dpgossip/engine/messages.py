"""Messages that travel along the edges of the graph, and their tags.

Every message carries a *tag* that says which step of a node program it belongs to; nodes
synchronise on tags alone (there is no global barrier). A tag whose first field is an int is a
protocol's own (counted as ``"gossip"`` traffic): e.g. ``(l, t, k)``, round ``k`` of iteration ``t``
of component ``l``, carrying the sender's state. The engine's own tags:

=====================================  ==========================================================
tag                                    payload
=====================================  ==========================================================
``("final", l, b)``                    dissemination of component ``l``'s blocks: the sender's
                                       ``b``-th batch of component ``l``, carrying the blocks
                                       ``q_o`` of the origins in ``Message.blocks``
                                       (:class:`BlockIndex`), concatenated in that order.
``("crash", j)``                       crash notice: node ``j`` was detected crashed (empty payload).
``("alive", ...)``                     heartbeat of an idle node, followed by the tag it waits on
                                       (empty payload).
=====================================  ==========================================================

Sizes: ``size_bytes = payload.nbytes + HEADER_BYTES + BLOCK_ENTRY_BYTES * k`` for a batch of ``k``
blocks (``k = 0`` for every other message). The fixed header of :data:`HEADER_BYTES` = 32
bytes stands for source and destination ids (2 x 4 bytes), a tag of up to four 4-byte fields
(16 bytes), and a 4-byte attempt counter and 4-byte payload length; each block of a batch adds
its origin id and its length (2 x 4 bytes, :data:`BLOCK_ENTRY_BYTES`). Acknowledgements of the
reliable transport are header-only (see :mod:`dpgossip.engine.links`).

Payloads are made read-only when sent, so a message (and a transcript record) can share the array
with the sender's broadcast without copying and nobody can change it afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Message", "BlockIndex", "HEADER_BYTES", "BLOCK_ENTRY_BYTES", "EMPTY_PAYLOAD", "FINAL",
           "CRASH", "ALIVE", "tag_kind", "TAG_KINDS", "block_squares", "canonical_norm"]

HEADER_BYTES = 32
"""Fixed per-message header size in bytes (see the module docstring)."""

BLOCK_ENTRY_BYTES = 8
"""Bytes per block of a ``"final"`` batch: its origin id and its length (2 x 4 bytes)."""

FINAL = "final"
CRASH = "crash"
ALIVE = "alive"
TAG_KINDS = ("gossip", FINAL, CRASH, ALIVE)
"""Kinds of tags, as returned by :func:`tag_kind`."""

EMPTY_PAYLOAD = np.zeros(0)
"""Shared read-only payload of control messages (crash notices, heartbeats)."""
EMPTY_PAYLOAD.setflags(write=False)


@dataclass(frozen=True, slots=True, eq=False)
class BlockIndex:
    """Which origins' blocks a ``"final"`` batch carries, and where each starts in its payload.

    Block ``j`` is ``payload[starts[j]:starts[j + 1]]`` (``starts[k] = payload.size``) and belongs
    to origin ``origins[j]``. Both arrays are read-only ``int64``.
    """

    origins: np.ndarray
    """Origin ids, in payload order."""
    starts: np.ndarray
    """``k + 1`` offsets into the payload (the last is the payload's length)."""

    @classmethod
    def of(cls, origins: np.ndarray, starts: np.ndarray) -> BlockIndex:
        """Freeze ``origins`` and ``starts`` (as read-only int64 arrays) into an index."""
        o = np.asarray(origins, dtype=np.int64)
        s = np.asarray(starts, dtype=np.int64)
        o.setflags(write=False)
        s.setflags(write=False)
        return cls(origins=o, starts=s)

    def split(self, payload: np.ndarray) -> dict[int, np.ndarray]:
        """``{origin: block}`` of a payload laid out by this index (views of ``payload``)."""
        s = self.starts
        return {int(o): payload[s[j]:s[j + 1]] for j, o in enumerate(self.origins)}

    def squares(self, payload: np.ndarray) -> np.ndarray:
        """``||q_o||^2`` of every block, in index order (see :func:`block_squares`)."""
        return block_squares(payload, self.starts)


def block_squares(payload: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Sum of squares of each block ``payload[starts[j]:starts[j + 1]]`` (0 for an empty block).

    ``s_j = sum_k payload[k]^2`` over the block, computed by ``np.add.reduceat`` on the elementwise
    squares, segment by segment: the value depends only on the block's own entries and length,
    never on where the block sits in a batch or what else the batch holds. This is what makes
    ``||q||`` computed by every agent bit-identical whatever the dissemination
    (:func:`canonical_norm`).
    """
    starts = np.asarray(starts, dtype=np.int64)
    out = np.zeros(starts.size - 1)
    nonempty = starts[1:] > starts[:-1]
    if nonempty.any():
        sq = payload * payload
        out[nonempty] = np.add.reduceat(sq, starts[:-1][nonempty])
    return out


def canonical_norm(per_origin: np.ndarray) -> float:
    """``||q|| = sqrt(sum_o s_o)`` from ``s_o = ||q_o||^2`` stored at index ``o``.

    ``per_origin`` has one entry per agent (0 for a block not received), so the sum runs over the
    same array in the same order (numpy's pairwise sum) for every agent: equal sets of contributors
    give bit-identical norms, whatever order the blocks arrived in.
    """
    return float(np.sqrt(per_origin.sum()))


@dataclass(frozen=True, slots=True)
class Message:
    """One copy of a message on the directed link ``src -> dst``.

    Positional construction is allowed (it is on the hot path); every retransmission is a new
    ``Message`` with the same ``src``, ``dst``, ``tag`` and ``payload`` and ``attempt + 1``.
    """

    src: int
    """Sending agent (always a graph neighbour of ``dst``)."""
    dst: int
    """Receiving agent."""
    tag: tuple
    """What the message is (see the module docstring)."""
    payload: np.ndarray
    """Read-only float array."""
    size_bytes: int
    """``payload.nbytes + HEADER_BYTES``."""
    sent_at: float
    """Simulated time at which this copy was handed to the link (queued for transmission)."""
    attempt: int = 1
    """1 for the first transmission, ``k`` for the ``(k-1)``-th retransmission."""
    blocks: BlockIndex | None = None
    """Origins and offsets of the blocks of a ``"final"`` batch (``None`` for other messages)."""


def tag_kind(tag: tuple) -> str:
    """Return ``"gossip"``, ``"final"``, ``"crash"`` or ``"alive"`` for a message tag."""
    head = tag[0]
    return head if isinstance(head, str) else "gossip"
