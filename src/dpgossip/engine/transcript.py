"""The transcript of an engine run: every accepted message, in delivery order.

A record is kept for each message accepted by its receiver (the first copy to arrive; duplicate
copies from retransmissions are discarded by the receiver's transport and only counted in the run
summary). Records live in memory (a tuple of :class:`TranscriptRecord` in ``EngineResult.transcript``) and
can also be streamed to a JSON-lines file, one object per line::

    {"sent_at": 0.0, "delivered_at": 0.01, "src": 0, "dst": 1, "tag": [0, 1, 1],
     "payload": [0.12, ...], "size_bytes": 80, "attempt": 1}

A ``"final"`` batch also has ``"origins"`` and ``"starts"`` (its :class:`BlockIndex`): the origins
whose blocks ``q_o`` it carries and where each starts in the payload;
:meth:`TranscriptRecord.final_blocks` splits it into ``{origin: block}``.

:func:`load_transcript` reads such a file back into records. The gossip payload of tag
``(l, t, k)`` from ``src`` is the state ``s_src^(t,k-1)`` of component ``l`` (Section 1 of
docs/model.md), which is what the privacy auditor reproduces from the realised noise.

A record keeps the very array that was sent, without copying it: the network makes every payload
read-only when it is sent (copying views first), so neither the sender nor a receiver can change
it afterwards.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np

from dpgossip.engine.messages import BlockIndex, Message, tag_kind

__all__ = ["TranscriptRecord", "TranscriptWriter", "load_transcript"]


@dataclass(frozen=True, slots=True)
class TranscriptRecord:
    """One accepted message: the delivered copy and the time it was accepted."""

    message: Message
    """The accepted copy (its ``sent_at`` and ``attempt`` are those of that copy)."""
    delivered_at: float
    """Simulated time at which the receiver accepted the copy."""

    @property
    def sent_at(self) -> float:
        """Time the accepted copy was handed to the link."""
        return self.message.sent_at

    @property
    def src(self) -> int:
        """Sender."""
        return self.message.src

    @property
    def dst(self) -> int:
        """Receiver."""
        return self.message.dst

    @property
    def tag(self) -> tuple:
        """Message tag (see :mod:`dpgossip.engine.messages`)."""
        return self.message.tag

    @property
    def kind(self) -> str:
        """``"gossip"``, ``"final"``, ``"crash"`` or ``"alive"``."""
        return tag_kind(self.message.tag)

    @property
    def payload(self) -> np.ndarray:
        """Read-only payload (the sender can no longer change it)."""
        return self.message.payload

    @property
    def size_bytes(self) -> int:
        """Bytes on the wire, header included."""
        return self.message.size_bytes

    @property
    def attempt(self) -> int:
        """Attempt number of the accepted copy (1 = first transmission)."""
        return self.message.attempt

    @property
    def blocks(self) -> BlockIndex | None:
        """Origins and offsets of a ``"final"`` batch (``None`` for other messages)."""
        return self.message.blocks

    @property
    def origins(self) -> tuple[int, ...]:
        """Origins whose blocks ``q_o`` the message carries (empty for other messages)."""
        b = self.message.blocks
        return () if b is None else tuple(int(o) for o in b.origins)

    def final_blocks(self) -> dict[int, np.ndarray]:
        """``{origin: q_o}`` carried by a ``"final"`` batch (read-only views of the payload)."""
        b = self.message.blocks
        return {} if b is None else b.split(self.message.payload)

    def to_json(self) -> dict[str, object]:
        """JSON-ready dict (payload as a list of floats, tag as a list)."""
        m = self.message
        out = {"sent_at": m.sent_at, "delivered_at": self.delivered_at, "src": m.src,
               "dst": m.dst, "tag": list(m.tag), "payload": m.payload.tolist(),
               "size_bytes": m.size_bytes, "attempt": m.attempt}
        if m.blocks is not None:
            out["origins"] = m.blocks.origins.tolist()
            out["starts"] = m.blocks.starts.tolist()
        return out

    def to_row(self) -> dict[str, object]:
        """Tidy row without the payload (``blocks``: how many origins' blocks it carries)."""
        m = self.message
        return {"sent_at": m.sent_at, "delivered_at": self.delivered_at, "src": m.src,
                "dst": m.dst, "kind": self.kind, "tag": str(m.tag), "size_bytes": m.size_bytes,
                "attempt": m.attempt,
                "blocks": 0 if m.blocks is None else int(m.blocks.origins.size)}


class TranscriptWriter:
    """Collects records in memory and/or streams them as JSON lines to ``path``."""

    def __init__(self, *, keep: bool, path: str | Path | None) -> None:
        self.records: list[TranscriptRecord] | None = [] if keep else None
        self.path = None if path is None else Path(path)
        self._fh: IO[str] | None = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = self.path.open("w", encoding="utf-8")

    @property
    def active(self) -> bool:
        """Whether anything is recorded at all."""
        return self.records is not None or self._fh is not None

    def __call__(self, msg: Message, now: float) -> None:
        rec = TranscriptRecord(msg, now)
        if self.records is not None:
            self.records.append(rec)
        if self._fh is not None:
            self._fh.write(json.dumps(rec.to_json()))
            self._fh.write("\n")

    def close(self) -> None:
        """Flush and close the file, if any."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def load_transcript(path: str | Path) -> tuple[TranscriptRecord, ...]:
    """Read a JSON-lines transcript written by the engine back into records."""
    out = []
    with Path(path).open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            d = json.loads(line)
            payload = np.asarray(d["payload"], dtype=float)
            payload.setflags(write=False)
            blocks = (BlockIndex.of(d["origins"], d["starts"]) if "origins" in d else None)
            msg = Message(int(d["src"]), int(d["dst"]), tuple(d["tag"]), payload,
                          int(d["size_bytes"]), float(d["sent_at"]), int(d["attempt"]), blocks)
            out.append(TranscriptRecord(msg, float(d["delivered_at"])))
    return tuple(out)
