"""Links: latency distributions, bandwidth and FIFO serialisation, loss and retransmission,
stragglers. Values never change; times and traffic do."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

from dpgossip.engine import HEADER_BYTES
from dpgossip.protocols.ddppm.nodes import run_engine
from tests.conftest import net_from_graph
from tests.engine.conftest import check_flood, data_for, params_for

LATENCIES = {
    "constant": ({"kind": "constant", "value": 0.01}, {"kind": "constant", "value": 0.02}),
    "uniform": ({"kind": "uniform", "low": 0.01, "high": 0.03},
                {"kind": "uniform", "low": 0.02, "high": 0.06}),
    "exponential": ({"kind": "exponential", "mean": 0.01}, {"kind": "exponential", "mean": 0.02}),
    "lognormal": ({"kind": "lognormal", "mu": -4.5, "sigma": 0.8},
                  {"kind": "lognormal", "mu": -4.5 + math.log(2), "sigma": 0.8}),
}


@pytest.fixture
def ring_params(paper_ring, small_data):
    return params_for(small_data, paper_ring, T=3, c=2, r=2)


@pytest.mark.parametrize("kind", sorted(LATENCIES))
def test_latency_changes_times_not_values(kind, paper_ring, small_data, ring_params):
    """Doubling every delay (and the timeouts) doubles every time: the same draws, in the same
    order, scaled. Values equal the ideal run's."""
    ideal = run_engine(small_data, paper_ring, ring_params, seed=6)
    runs = []
    for scale, spec in zip((1, 2), LATENCIES[kind], strict=True):
        runs.append(run_engine(small_data, paper_ring, ring_params, seed=6, conditions={
            "latency": spec, "retransmit_timeout": 5.0 * scale, "failure_timeout": 10.0 * scale}))
    for res in runs:
        assert res.status == "completed"
        for name in ("iterates", "z", "z_half", "Q", "deflation"):
            np.testing.assert_allclose(getattr(res, name), getattr(ideal, name), rtol=0,
                                       atol=1e-12)
        assert res.summary.gossip_messages == ideal.summary.gossip_messages
        check_flood(res, small_data, paper_ring, 2)
    # the batches depend on which blocks arrive together, which scaling every delay keeps
    assert runs[0].summary.messages_delivered == runs[1].summary.messages_delivered
    t1, t2 = (r.summary.completion_time for r in runs)
    assert ideal.summary.completion_time == 0.0 < t1 < t2
    assert t2 == pytest.approx(2 * t1, rel=1e-9)
    d1 = [r.delivered_at - r.sent_at for r in runs[0].transcript]
    d2 = [r.delivered_at - r.sent_at for r in runs[1].transcript]
    np.testing.assert_allclose(d2, 2 * np.array(d1), rtol=1e-9)
    if kind != "constant":
        assert np.std(d1) > 0


def test_bandwidth_closed_form_ring(paper_ring, small_data):
    """T = c = 1, zero latency, B bytes/s: one gossip message (48 + 32 bytes), then the flood's two
    hops, each one block of q (80 + 32 + 8 bytes) per link, on disjoint links."""
    params = params_for(small_data, paper_ring, T=1, c=1)
    for B in (1e3, 1e4):
        res = run_engine(small_data, paper_ring, params, seed=0,
                         conditions={"bandwidth": B, "dissemination": "flood"})
        gossip, block = 6 * 8 + HEADER_BYTES, 10 * 8 + HEADER_BYTES + 8
        assert res.summary.completion_time == pytest.approx((gossip + 2 * block) / B)


def test_bandwidth_serialises_each_link_fifo():
    """Star with hub 0 and leaves 1..4, c = 0: the hub's own block (S = 4 x 8 + 32 + 8 bytes)
    occupies each hub -> leaf link until S / B, when the leaves' blocks reach the hub; its batch of
    the three other leaves' blocks (3 x 32 + 32 + 3 x 8 bytes) leaves right after, on the same
    link, and arrives at (S + R) / B."""
    net = net_from_graph(nx.star_graph(4))
    data = data_for(5, rows_per_agent=4)
    params = params_for(data, net, T=1, c=0)
    B = 1000.0
    S = 4 * 8 + HEADER_BYTES + 8
    R = 3 * 4 * 8 + HEADER_BYTES + 3 * 8
    res = run_engine(data, net, params, seed=0,
                     conditions={"bandwidth": B, "dissemination": "flood"})
    assert res.summary.completion_time == pytest.approx((S + R) / B)
    to_leaf4 = [r for r in res.transcript if r.src == 0 and r.dst == 4]
    assert [r.origins for r in to_leaf4] == [(0,), (1, 2, 3)]
    assert [r.size_bytes for r in to_leaf4] == [S, R]
    np.testing.assert_allclose([r.delivered_at for r in to_leaf4], np.array([S, S + R]) / B)
    ideal = run_engine(data, net, params, seed=0)
    np.testing.assert_allclose(res.Q, ideal.Q, atol=1e-12)


def test_link_override_applies_to_one_edge_both_ways(paper_ring, small_data, ring_params):
    res = run_engine(small_data, paper_ring, ring_params, seed=0, conditions={
        "latency": 0.001, "links": [{"edge": [2, 1], "latency": 0.05}]})
    for r in res.transcript:
        expect = 0.05 if {r.src, r.dst} == {1, 2} else 0.001
        assert r.delivered_at - r.sent_at == pytest.approx(expect)
    base = run_engine(small_data, paper_ring, ring_params, seed=0, conditions={"latency": 0.001})
    assert res.summary.completion_time > base.summary.completion_time


def test_stragglers_slow_the_run_monotonically(paper_ring, small_data, ring_params):
    ideal = run_engine(small_data, paper_ring, ring_params, seed=2)
    times = []
    for stragglers in ({}, {1: 2.0}, {1: 5.0}, {1: {"factor": 5.0, "delay": 0.01}}):
        res = run_engine(small_data, paper_ring, ring_params, seed=2, conditions={
            "latency": 0.001, "compute_time": 1e-3, "stragglers": stragglers})
        assert res.status == "completed"
        np.testing.assert_allclose(res.iterates, ideal.iterates, rtol=0, atol=1e-12)
        times.append(res.summary.completion_time)
    assert 0 < times[0] < times[1] < times[2] < times[3]


def test_loss_grows_traffic_and_time(paper_ring, small_data, ring_params):
    ideal = run_engine(small_data, paper_ring, ring_params, seed=4)
    rows = []
    for loss in (0.0, 0.1, 0.4):
        res = run_engine(small_data, paper_ring, ring_params, seed=4, conditions={
            "latency": 0.01, "loss": loss, "retransmit_timeout": 0.05})
        assert res.status == "completed"
        np.testing.assert_allclose(res.iterates, ideal.iterates, rtol=0, atol=1e-12)
        s = res.summary
        assert s.gossip_messages == ideal.summary.gossip_messages
        check_flood(res, small_data, paper_ring, 2)
        rows.append((s.copies_sent, s.retransmissions, s.completion_time))
    assert rows[0][1] == 0
    assert rows[0][0] < rows[1][0] < rows[2][0]
    assert rows[0][2] < rows[1][2] < rows[2][2]


def test_max_attempts_abandons_and_stops(paper_ring, small_data, ring_params):
    res = run_engine(small_data, paper_ring, ring_params, seed=1, conditions={
        "latency": 0.01, "loss": 0.3, "max_attempts": 1, "failure_timeout": 0.5})
    s = res.summary
    assert res.status == "stopped" and s.abandoned > 0 and s.retransmissions == 0
    assert res.outcome.reason.startswith("message abandoned")
    assert res.outcome.detections[-1].verdict == "lost"


def test_heartbeats_only_when_idle(paper_ring, small_data, ring_params):
    busy = run_engine(small_data, paper_ring, ring_params, seed=0, conditions={"latency": 0.01})
    assert busy.summary.heartbeats == 0
    slow = run_engine(small_data, paper_ring, ring_params, seed=0, conditions={
        "latency": 0.01, "compute_time": 0.01, "stragglers": {0: {"delay": 0.6}},
        "failure_timeout": 1.0})
    assert slow.status == "completed"
    assert slow.summary.heartbeats > 0
    beats = [r for r in slow.transcript if r.kind == "alive"]
    assert all(r.payload.size == 0 and r.size_bytes == HEADER_BYTES for r in beats)
