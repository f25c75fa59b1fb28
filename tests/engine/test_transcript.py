"""Transcript: every message, equal to the matrix backend's states; JSON-lines streaming."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dpgossip.engine import HEADER_BYTES, load_transcript
from dpgossip.protocols.ddppm.matrix import run_matrix
from dpgossip.protocols.ddppm.nodes import run_engine
from tests.engine.conftest import data_for, params_for, ws12

CONDITIONS = [None, {"latency": {"kind": "exponential", "mean": 0.01}, "loss": 0.2,
                     "bandwidth": 2e4}]


@pytest.mark.parametrize("conditions", CONDITIONS, ids=["ideal", "lossy"])
@pytest.mark.parametrize("which", ["ring", "ws12"])
def test_every_message_is_the_matrix_state(which, conditions, paper_ring, small_data):
    """Gossip (l, t, k) from src carries s_src^(t,k-1); ("final", l, b) carries q_o^(T) of each
    origin o it lists."""
    net, data = (paper_ring, small_data) if which == "ring" else (ws12(), data_for(12))
    T, c, r = 3, 2, 2
    params = params_for(data, net, T=T, c=c, r=r)
    ref = run_matrix(data, net, params, seed=13, record_states=True)
    res = run_engine(data, net, params, seed=13, conditions=conditions)
    assert res.status == "completed"
    records = res.transcript
    gossip = [x for x in records if x.kind == "gossip"]
    E = net.graph.number_of_edges()
    assert len(gossip) == r * T * c * 2 * E == res.summary.gossip_messages
    keys = {(x.src, x.dst, x.tag) for x in gossip}
    assert len(keys) == len(gossip)
    for x in gossip:
        assert net.graph.has_edge(x.src, x.dst)
        l, t, k = x.tag
        expect = ref.states[l, t - 1, k - 1, x.src]
        scale = max(1.0, float(np.abs(ref.states[l]).max()))
        np.testing.assert_allclose(x.payload, expect, rtol=0, atol=1e-10 * scale)
    for x in records:
        if x.kind == "final":
            l = x.tag[1]
            assert x.origins and sum(b.size for b in x.final_blocks().values()) == x.payload.size
            for o, block in x.final_blocks().items():
                expect = ref.iterates[l, T, data.offsets[o]:data.offsets[o + 1]]
                np.testing.assert_allclose(block, expect, rtol=0,
                                           atol=1e-10 * max(1, np.abs(ref.iterates[l]).max()))
        assert x.size_bytes == x.payload.nbytes + HEADER_BYTES + 8 * len(x.origins)
        assert x.delivered_at >= x.sent_at and x.attempt >= 1
        assert not x.payload.flags.writeable
    times = [x.delivered_at for x in records]
    assert times == sorted(times)


def test_streamed_transcript_round_trips(tmp_path, paper_ring, small_data):
    params = params_for(small_data, paper_ring, T=2, c=2)
    cond = {"latency": {"kind": "uniform", "low": 0.001, "high": 0.01}, "loss": 0.2}
    path = tmp_path / "sub" / "transcript.jsonl"
    mem = run_engine(small_data, paper_ring, params, seed=5, conditions=cond)
    disk = run_engine(small_data, paper_ring, params, seed=5, conditions=cond,
                      record_transcript=False, transcript_path=path)
    assert disk.transcript is None and disk.transcript_path == str(path)
    back = load_transcript(path)
    ref = mem.transcript
    assert len(back) == len(ref) > 0
    for x, y in zip(ref, back, strict=True):
        assert (x.sent_at, x.delivered_at, x.src, x.dst, x.tag, x.size_bytes, x.attempt,
                x.origins) == (y.sent_at, y.delivered_at, y.src, y.dst, y.tag, y.size_bytes,
                               y.attempt, y.origins)
        if x.kind == "final":
            np.testing.assert_array_equal(x.blocks.starts, y.blocks.starts)
        np.testing.assert_array_equal(x.payload, y.payload)
    assert path.read_text().count("\n") == len(ref)


def test_records_are_frozen(paper_ring, small_data):
    res = run_engine(small_data, paper_ring, params_for(small_data, paper_ring), seed=0)
    rec = res.transcript[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        rec.delivered_at = 1.0
    with pytest.raises(ValueError):
        rec.payload[0] = 1.0
    assert set(rec.to_row()) >= {"sent_at", "delivered_at", "src", "dst", "kind", "attempt"}


def test_no_transcript_when_not_recorded(paper_ring, small_data):
    res = run_engine(small_data, paper_ring, params_for(small_data, paper_ring), seed=0,
                     record_transcript=False)
    assert res.transcript is None and res.transcript_path is None
    assert res.summary.messages_delivered > 0
