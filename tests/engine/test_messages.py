"""Messages and tags."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dpgossip.engine import HEADER_BYTES, Message, tag_kind
from dpgossip.engine.messages import EMPTY_PAYLOAD


def test_message_is_frozen_and_slotted():
    p = np.ones(3)
    msg = Message(0, 1, (0, 1, 1), p, p.nbytes + HEADER_BYTES, 0.0)
    assert msg.attempt == 1 and msg.size_bytes == 24 + 32
    with pytest.raises(dataclasses.FrozenInstanceError):
        msg.src = 2
    assert not hasattr(msg, "__dict__")


def test_tag_kinds():
    assert tag_kind((0, 1, 2)) == "gossip"
    assert tag_kind(("final", 0, 3)) == "final"
    assert tag_kind(("crash", 3)) == "crash"
    assert tag_kind(("alive", 0, 1, 1)) == "alive"
    assert EMPTY_PAYLOAD.size == 0 and not EMPTY_PAYLOAD.flags.writeable
