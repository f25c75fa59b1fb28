"""Messages that travel along the edges of the graph, and their tags.

Every message carries a *tag* that says which step of Algorithm 1 of 001 it belongs to; agents
synchronise on tags alone (there is no global barrier):

=====================================  ==========================================================
tag                                    payload
=====================================  ==========================================================
``(l, t, k)`` (three ints)             gossip round ``k = 1..c`` of iteration ``t = 1..T`` of
                                       component ``l = 0..r-1``: the sender's state
                                       ``s_src^(t,k-1)`` (a ``d``-vector). ``l`` is 0-based like the
                                       arrays of :class:`~dpgossip.protocol.result.RunResult`;
                                       ``t`` and ``k`` are 1-based like the paper.
``("final", l, o)``                    flooding of component ``l``'s final iterate: origin ``o``'s
                                       block ``q_o^(T)`` (an ``n_o``-vector), relayed unchanged.
``("crash", j)``                       crash notice: agent ``j`` was detected crashed (empty payload).
``("alive", ...)``                     heartbeat of an idle agent, followed by the round it waits on
                                       (empty payload).
=====================================  ==========================================================

Sizes: ``size_bytes = payload.nbytes + HEADER_BYTES``. The fixed header of :data:`HEADER_BYTES` = 32
bytes stands for source and destination ids (2 x 4 bytes), a tag of up to four 4-byte fields
(16 bytes), and a 4-byte attempt counter and 4-byte payload length. Acknowledgements of the
reliable transport are header-only (see :mod:`dpgossip.engine.links`).

Payloads are made read-only when sent, so a message (and a transcript record) can share the array
with the sender's broadcast without copying and nobody can change it afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Message", "HEADER_BYTES", "EMPTY_PAYLOAD", "FINAL", "CRASH", "ALIVE", "tag_kind",
           "TAG_KINDS"]

HEADER_BYTES = 32
"""Fixed per-message header size in bytes (see the module docstring)."""

FINAL = "final"
CRASH = "crash"
ALIVE = "alive"
TAG_KINDS = ("gossip", FINAL, CRASH, ALIVE)
"""Kinds of tags, as returned by :func:`tag_kind`."""

EMPTY_PAYLOAD = np.zeros(0)
"""Shared read-only payload of control messages (crash notices, heartbeats)."""
EMPTY_PAYLOAD.setflags(write=False)


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


def tag_kind(tag: tuple) -> str:
    """Return ``"gossip"``, ``"final"``, ``"crash"`` or ``"alive"`` for a message tag."""
    head = tag[0]
    return head if isinstance(head, str) else "gossip"
