"""Property tests over random small networks and conditions: exactness and message counts."""

from __future__ import annotations

import networkx as nx
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpgossip.protocols.ddppm.matrix import run_matrix
from dpgossip.protocols.ddppm.nodes import run_engine
from tests.conftest import net_from_graph
from tests.engine.conftest import assert_same_run, check_flood, data_for, params_for

LATENCY = st.sampled_from([
    0.0, 0.01, {"kind": "uniform", "low": 0.0, "high": 0.02},
    {"kind": "exponential", "mean": 0.01}, {"kind": "lognormal", "mu": -5.0, "sigma": 1.0}])


@st.composite
def problems(draw):
    m = draw(st.integers(1, 7))
    seed = draw(st.integers(0, 10_000))
    if m == 1:
        graph = nx.empty_graph(1)
    else:
        rng = np.random.default_rng(seed)
        graph = nx.random_labeled_tree(m, seed=seed) if hasattr(nx, "random_labeled_tree") \
            else nx.random_tree(m, seed=seed)
        for i in range(m):
            for j in range(i + 1, m):
                if rng.random() < 0.3:
                    graph.add_edge(i, j)
    T = draw(st.integers(1, 4))
    c = draw(st.integers(0, 4))
    r = draw(st.integers(1, 2))
    conditions = {"latency": draw(LATENCY),
                  "loss": draw(st.sampled_from([0.0, 0.0, 0.2])),
                  "bandwidth": draw(st.sampled_from([float("inf"), 2e4])),
                  "retransmit_timeout": 0.05, "failure_timeout": 50.0,
                  "dissemination": draw(st.sampled_from(["tree", "flood"]))}
    return graph, T, c, r, conditions, seed


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_engine_matches_matrix_and_counts(problem):
    graph, T, c, r, conditions, seed = problem
    net = net_from_graph(nx.convert_node_labels_to_integers(graph, ordering="sorted"))
    m, E = net.m, net.graph.number_of_edges()
    data = data_for(m, rows_per_agent=max(3, -(-6 // m)), seed=seed % 7)
    params = params_for(data, net, T=T, c=c, r=r)
    ref = run_matrix(data, net, params, seed, record_states=True)
    res = run_engine(data, net, params, seed, conditions=conditions)
    assert res.status == "completed"
    assert_same_run(ref, res)
    s = res.summary
    assert s.gossip_messages == r * T * c * 2 * E
    assert s.flood_messages <= r * m * (2 * E - m + 1)      # the unbatched flood's count
    if conditions["dissemination"] == "tree":
        assert s.flood_messages == 2 * r * (m - 1)
    check_flood(res, data, net, r)
    assert s.messages_delivered == s.gossip_messages + s.flood_messages + s.heartbeats
    for rec in res.transcript:
        if rec.kind == "gossip":
            l, t, k = rec.tag
            x = ref.states[l, t - 1, k - 1, rec.src]
            np.testing.assert_allclose(rec.payload, x, rtol=0,
                                       atol=1e-10 * max(1, np.abs(ref.states[l]).max()))


REASONS = ("crash detected", "survivors disconnected", "heartbeats lost", "false suspicion",
           "survivors disagree", "message lost", "message abandoned", "crash undetected")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(), st.floats(0.0, 0.4), st.sampled_from(["stop", "reweight"]), st.data())
def test_crash_anywhere_ends_cleanly(problem, crash_time, policy, more):
    """Whatever agent crashes whenever, the run ends with a documented status and consistent
    survivors: no hang, no exception, unit-norm estimates over the rows it kept."""
    graph, T, c, r, conditions, seed = problem
    net = net_from_graph(nx.convert_node_labels_to_integers(graph, ordering="sorted"))
    m = net.m
    victim = more.draw(st.integers(0, m - 1))
    data = data_for(m, rows_per_agent=max(3, -(-6 // m)), seed=seed % 7)
    params = params_for(data, net, T=T, c=c, r=r)
    conditions = {**conditions, "latency": 0.01, "failure_timeout": 0.3,
                  "crashes": {victim: crash_time}, "on_crash": policy}
    if policy == "reweight":             # the tree cannot survive a crash: config refuses it
        conditions["dissemination"] = "auto"
    res = run_engine(data, net, params, seed, conditions=conditions)
    out = res.outcome
    assert res.status == out.status == res.summary.status
    assert all(d.time > crash_time for d in out.detections if d.verdict == "crash")
    assert set(out.crashed) <= {victim}
    if out.status == "stopped":
        assert out.reason.startswith(REASONS) or out.reason == "every agent crashed", out.reason
        return
    assert all(p.finished for p in out.progress if p.agent not in out.crashed)
    kept = res.rows_kept
    for l in range(r):
        if kept[:, l].any():
            assert np.isfinite(res.Q[kept[:, l], l]).all()
            assert abs(np.linalg.norm(res.Q[kept[:, l], l]) - 1) < 1e-9
    if out.status == "completed":
        assert out.crashed == () and kept.all()
