"""run_engine: equality with the matrix backend, statuses, crash policies, loss, determinism."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

from dpgossip.data.partition import PartitionedData
from dpgossip.engine import NetworkConditions
from dpgossip.errors import ConfigError
from dpgossip.protocols.ddppm.matrix import run_matrix
from dpgossip.protocols.ddppm.nodes import run_engine
from dpgossip.protocols.ddppm.params import NoiseSchedule
from dpgossip.protocols.metrics import sin_angle
from dpgossip.topology.network import Network
from tests.conftest import net_from_graph
from tests.engine.conftest import assert_same_run, data_for, grid3, params_for, ws12

CASES = [(3, 2, 1), (4, 0, 1), (3, 3, 2), (5, 1, 2), (3, 0, 2)]


@pytest.mark.parametrize("T, c, r", CASES)
@pytest.mark.parametrize("which", ["ring", "grid", "ws12"])
def test_ideal_engine_equals_matrix(which, T, c, r, paper_ring, small_data):
    if which == "ring":
        net, data = paper_ring, small_data
    else:
        net = grid3() if which == "grid" else ws12()
        data = data_for(net.m)
    params = params_for(data, net, T=T, c=c, r=r)
    a = run_matrix(data, net, params, seed=21, record_states=True)
    b = run_engine(data, net, params, seed=21, record_states=True)
    assert b.backend == "engine" and b.status == "completed"
    assert_same_run(a, b)
    for l in range(r):
        scale = max(1.0, float(np.abs(a.states[l]).max()))
        np.testing.assert_allclose(b.states[l], a.states[l], rtol=0, atol=1e-10 * scale)
    for l in range(r):
        np.testing.assert_array_equal(b.data[l], a.data[l]) if l == 0 else \
            np.testing.assert_allclose(b.data[l], a.data[l], atol=1e-10)
    assert b.rows_kept.all()
    s = b.summary
    assert s.completion_time == 0.0 and s.retransmissions == 0 and s.dropped_copies == 0


def test_network_conditions_never_change_iterates(paper_ring, small_data):
    params = params_for(small_data, paper_ring, T=4, c=3, r=2)
    ideal = run_engine(small_data, paper_ring, params, seed=4)
    busy = run_engine(small_data, paper_ring, params, seed=4, conditions={
        "latency": {"kind": "lognormal", "mu": -5, "sigma": 1}, "loss": 0.3,
        "bandwidth": 5e4, "compute_time": 1e-3, "stragglers": {2: 3.0}})
    assert busy.status == "completed"
    for name in ("iterates", "z", "z_half", "noise", "Q", "deflation"):
        np.testing.assert_allclose(getattr(busy, name), getattr(ideal, name), rtol=0, atol=1e-12)


def test_same_seed_same_transcript_other_seed_other_times(paper_ring, small_data):
    params = params_for(small_data, paper_ring, T=3, c=2, r=1)
    cond = NetworkConditions.from_mapping({"latency": {"kind": "exponential", "mean": 0.01},
                                           "loss": 0.25})
    a = run_engine(small_data, paper_ring, params, seed=8, conditions=cond)
    b = run_engine(small_data, paper_ring, params, seed=8, conditions=cond)
    c = run_engine(small_data, paper_ring, params, seed=9, conditions=cond)
    ta, tb, tc = (x.transcript for x in (a, b, c))
    assert len(ta) == len(tb)
    for x, y in zip(ta, tb, strict=True):
        assert (x.sent_at, x.delivered_at, x.src, x.dst, x.tag, x.attempt, x.size_bytes) == \
               (y.sent_at, y.delivered_at, y.src, y.dst, y.tag, y.attempt, y.size_bytes)
        assert x.payload.tobytes() == y.payload.tobytes()
    assert [r.delivered_at for r in ta] != [r.delivered_at for r in tc]
    # the iterates depend on the seed only through the agents' streams, never the network's:
    for res, seed in ((a, 8), (c, 9)):
        assert_same_run(run_matrix(small_data, paper_ring, params, seed=seed), res)


def test_bad_inputs(paper_ring, small_data):
    params = params_for(small_data, paper_ring, r=2)
    with pytest.raises(ConfigError, match=r"^conditions\.crashes: agent 7 does not exist"):
        run_engine(small_data, paper_ring, params, 0, conditions={"crashes": {7: 0.1}})
    with pytest.raises(ConfigError, match=r"disseminate = False needs params\.rank = 1"):
        run_engine(small_data, paper_ring, params, 0, disseminate=False)
    with pytest.raises(ConfigError, match=r"^conditions\.links\[0\]\.edge: \[0, 2\] is not an edge"):
        run_engine(small_data, paper_ring, params, 0, conditions={"links": [{"edge": [0, 2]}]})
    with pytest.raises(ConfigError, match=r"network has 4 agents"):
        run_engine(data_for(5), paper_ring, params, 0)


def test_without_dissemination_only_gossip_is_sent(paper_ring, small_data):
    params = params_for(small_data, paper_ring, T=3, c=2)
    a = run_matrix(small_data, paper_ring, params, seed=2)
    b = run_engine(small_data, paper_ring, params, seed=2, disseminate=False)
    assert_same_run(a, b)
    s = b.summary
    assert s.flood_messages == 0 and s.gossip_messages == 3 * 2 * 8


def test_completion_time_closed_form_ring(paper_ring, small_data):
    """Constant latency L on the 4-ring: T c gossip hops, then 2 flooding hops (diameter 2)."""
    T, c, L = 3, 2, 0.01
    params = params_for(small_data, paper_ring, T=T, c=c)
    res = run_engine(small_data, paper_ring, params, seed=0,
                     conditions={"latency": L, "dissemination": "flood"})
    assert res.summary.completion_time == pytest.approx((T * c + 2) * L, rel=1e-12)


# ------------------------------------------------------------------------------------ crashes
def _survivor_oracle(data, net, params, seed, crashed):
    """Matrix backend on the survivors' blocks and W re-weighted (W_ii += W_ij for crashed j)."""
    keep = [i for i in range(net.m) if i not in crashed]
    assert keep == list(range(len(keep))), "crash the highest ids so the streams line up"
    W = net.dense_W()[np.ix_(keep, keep)].copy()
    W[np.diag_indices(len(keep))] += net.dense_W()[np.ix_(keep, sorted(crashed))].sum(axis=1)
    graph = net.graph.subgraph(keep).copy()
    sub = PartitionedData(X=data.X[:data.offsets[len(keep)]], sizes=data.sizes[:len(keep)])
    return run_matrix(sub, Network(graph=graph, W=W), params, seed), sub.n


@pytest.mark.parametrize("which, r", [("ring", 1), ("ws12", 2)])
def test_crash_at_start_reweight_equals_matrix_on_survivors(which, r, paper_ring, small_data):
    net, data = (paper_ring, small_data) if which == "ring" else (ws12(), data_for(12))
    crashed = {net.m - 1}
    params = params_for(data, net, T=4, c=3, r=r)
    res = run_engine(data, net, params, seed=5,
                     conditions={"crashes": {net.m - 1: 0.0}, "on_crash": "reweight",
                                 "failure_timeout": 0.5})
    out = res.outcome
    assert res.status == "completed_with_crash" == out.status
    assert out.crashed == (net.m - 1,) and out.policy == "reweight" and out.policy_applied
    detectors = {d.detector for d in out.detections}
    assert detectors == set(net.neighbours[net.m - 1])
    assert all(d.verdict == "crash" and d.time == pytest.approx(0.5) for d in out.detections)
    oracle, n_surv = _survivor_oracle(data, net, params, 5, crashed)
    for name in ("iterates", "noise"):
        x, y = getattr(oracle, name), getattr(res, name)[:, :, :n_surv]
        np.testing.assert_allclose(y, x, rtol=0, atol=1e-10 * max(1, np.abs(x).max()))
    np.testing.assert_allclose(res.Q[:n_surv], oracle.Q, atol=1e-10)
    np.testing.assert_allclose(res.z_half[:, :, :-1], oracle.z_half,
                               atol=1e-10 * max(1, np.abs(oracle.z_half).max()))
    assert np.isnan(res.Q[n_surv:]).all() and not res.rows_kept[n_surv:].any()
    assert np.isnan(res.iterates[:, :, n_surv:]).all()


def test_crash_at_start_stop_policy(paper_ring, small_data):
    params = params_for(small_data, paper_ring, T=3, c=2)
    res = run_engine(small_data, paper_ring, params, seed=5,
                     conditions={"crashes": {1: 0.0}, "failure_timeout": 0.4})
    out = res.outcome
    assert res.status == "stopped" and out.policy == "stop" and out.policy_applied
    assert "crash detected" in out.reason and "agent(s) [1]" in out.reason
    assert out.crashed == (1,) and out.halted_at == pytest.approx(0.4)
    assert out.detections[0].suspect == 1 and out.detections[0].detector in (0, 2)
    assert out.detections[0].time > 0.0
    assert not any(p.finished for p in out.progress)
    assert np.isnan(res.Q).all()


def test_mid_run_crash_stop_keeps_what_was_computed(small_data, paper_ring):
    params = params_for(small_data, paper_ring, T=6, c=3)
    ideal = run_engine(small_data, paper_ring, params, seed=3)
    res = run_engine(small_data, paper_ring, params, seed=3,
                     conditions={"latency": 0.01, "crashes": {2: 0.085}, "failure_timeout": 0.2})
    out = res.outcome
    assert res.status == "stopped" and out.crashed == (2,)
    det = out.detections[0]
    assert det.suspect == 2 and det.detector in (1, 3) and det.time > 0.085
    assert det.verdict == "crash" and det.crashed_at == 0.085
    known = ~np.isnan(res.iterates)
    assert known[:, :3].all() and not known.all()
    np.testing.assert_allclose(res.iterates[known], ideal.iterates[known], rtol=0, atol=1e-12)
    prog = {p.agent: p for p in out.progress}
    assert prog[2].crashed_at == 0.085 and prog[2].last_step is not None


def test_mid_run_crash_reweight_survivors_converge_to_oracle():
    """Without noise the survivors' power iteration forgets the transient of the crash round and
    converges to the leading vector of the survivors' re-weighted problem (the t=0 oracle)."""
    net, data = ws12(), data_for(12, seed=4)
    params = params_for(data, net, T=40, c=6, noise=NoiseSchedule(kind="none"))
    res = run_engine(data, net, params, seed=2,
                     conditions={"latency": 0.01, "crashes": {11: 0.305}, "on_crash": "reweight",
                                 "failure_timeout": 0.1})
    out = res.outcome
    assert res.status == "completed_with_crash" and out.crashed == (11,)
    assert {d.detector for d in out.detections} == set(net.neighbours[11])
    assert all(d.time > 0.305 for d in out.detections)
    n_surv = data.offsets[11]
    assert np.isfinite(res.Q[:n_surv]).all() and np.isnan(res.Q[n_surv:]).all()
    assert np.linalg.norm(res.Q[:n_surv, 0]) == pytest.approx(1.0)
    oracle, _ = _survivor_oracle(data, net, params, 2, {11})
    assert sin_angle(oracle.Q[:, 0], res.Q[:n_surv, 0]) < 1e-6
    # the crash changed the run: before it the iterates equal the crash-free run, after it not
    ideal = run_engine(data, net, params, seed=2)
    np.testing.assert_allclose(res.iterates[0, :2], ideal.iterates[0, :2], atol=1e-12)
    assert np.nanmax(np.abs(res.iterates[0, -1, :n_surv] - ideal.iterates[0, -1, :n_surv])) > 1e-6
    # other agents learned of the crash from the flooded notice
    assert res.summary.crash_notices > 0


def test_crash_in_second_component_keeps_the_first():
    """A crash during component 2 of a rank-2 run: component 1 is whole, component 2 has the
    crashed agent's rows missing, and the survivors agree on everything."""
    net = grid3()
    data = data_for(9)
    params = params_for(data, net, T=3, c=2, r=2)
    ideal = run_engine(data, net, params, seed=1)
    res = run_engine(data, net, params, seed=1,
                     conditions={"latency": 0.01, "crashes": {4: 0.15}, "on_crash": "reweight",
                                 "failure_timeout": 0.2})
    out = res.outcome
    assert res.status == "completed_with_crash" and out.crashed == (4,)
    assert {d.detector for d in out.detections} == set(net.neighbours[4])
    kept = res.rows_kept
    rows4 = slice(data.offsets[4], data.offsets[5])
    assert kept[:, 0].all() and not kept[rows4, 1].any() and kept[:, 1].sum() == data.n - 4
    np.testing.assert_allclose(res.Q[:, 0], ideal.Q[:, 0], atol=1e-12)
    assert np.isfinite(res.Q[kept]).all()
    prog = {p.agent: p for p in out.progress}
    assert prog[4].components_done == 1 and not prog[4].finished
    assert all(prog[i].finished and prog[i].components_done == 2 for i in range(9) if i != 4)
    row = out.to_row()
    assert row["status"] == "completed_with_crash" and row["crashed"] == "4"
    assert set(res.summary.to_row()) >= {"messages_delivered", "completion_time",
                                                 "retransmissions", "duplicates_discarded"}


def test_crash_disconnecting_survivors_stops():
    net = net_from_graph(nx.path_graph(3))
    data = data_for(3)
    params = params_for(data, net)
    res = run_engine(data, net, params, seed=0,
                     conditions={"crashes": {1: 0.0}, "on_crash": "reweight"})
    assert res.status == "stopped"
    assert "survivors disconnected" in res.outcome.reason and "[[0], [2]]" in \
        res.outcome.reason


def test_crash_after_finish_is_not_a_crash(paper_ring, small_data):
    params = params_for(small_data, paper_ring)
    res = run_engine(small_data, paper_ring, params, seed=0,
                     conditions={"latency": 0.01, "crashes": {0: 50.0}})
    assert res.status == "completed" and res.outcome.crashed == ()


# ------------------------------------------------------------------------------------ loss
@pytest.mark.parametrize("seed, how", [(0, "run stalled"), (1, "timed out")])
def test_loss_without_retransmission_stops_with_message_lost(seed, how, paper_ring, small_data):
    """Either every agent ends up blocked (the monitor's stall timeout) or a receiver times out on
    a live but silent neighbour; both are reported as a lost message."""
    params = params_for(small_data, paper_ring, T=5, c=3)
    res = run_engine(small_data, paper_ring, params, seed=seed,
                     conditions={"latency": 0.01, "loss": 0.3, "retransmit": False,
                                 "failure_timeout": 0.5})
    out, s = res.outcome, res.summary
    assert res.status == "stopped"
    assert out.reason.startswith("message lost") and how in out.reason
    assert s.lost_copies > 0 and s.retransmissions == 0 and s.copies_sent == s.messages_sent
    assert out.halted_at > 0.5 and not any(p.finished for p in out.progress)
    assert out.crashed == () and not out.policy_applied
    if how == "timed out":
        assert out.detections[0].verdict == "lost"


def test_loss_with_retransmission_completes_and_counts_traffic(paper_ring, small_data):
    params = params_for(small_data, paper_ring, T=4, c=3, r=2)
    ideal = run_engine(small_data, paper_ring, params, seed=1)
    res = run_engine(small_data, paper_ring, params, seed=1,
                     conditions={"latency": 0.01, "loss": 0.3, "retransmit_timeout": 0.05})
    s, s0 = res.summary, ideal.summary
    assert res.status == "completed"
    assert s.gossip_messages == s0.gossip_messages and s.flood_messages == s0.flood_messages
    assert s.retransmissions > 0 and s.copies_sent == s.messages_sent + s.retransmissions
    assert s.lost_copies > 0 and s.duplicates_discarded > 0
    assert max(r.attempt for r in res.transcript) > 1
    assert s.completion_time > 0
    np.testing.assert_allclose(res.iterates, ideal.iterates, rtol=0, atol=1e-12)


def test_false_suspicion_is_reported(paper_ring, small_data):
    params = params_for(small_data, paper_ring)
    res = run_engine(small_data, paper_ring, params, seed=0,
                     conditions={"latency": 3.0, "failure_timeout": 1.0,
                                 "retransmit_timeout": 10.0})
    assert res.status == "stopped"
    assert "false suspicion" in res.outcome.reason
    assert res.outcome.detections[0].verdict == "false"
    assert math.isnan(res.summary.completion_time)


def test_every_agent_crashing_stops(paper_ring, small_data):
    res = run_engine(small_data, paper_ring, params_for(small_data, paper_ring), seed=0,
                     conditions={"crashes": {0: 0.0, 1: 0.0, 2: 0.0, 3: 0.0}})
    assert res.status == "stopped" and res.outcome.reason == "every agent crashed"
    assert res.summary.messages_delivered == 0 and np.isnan(res.Q).all()


def test_overflowing_iterates_do_not_look_like_a_disagreement(paper_ring, small_data):
    # with alpha = 1e308 the final norms are NaN on every agent: the views are the same all the same
    params = params_for(small_data, paper_ring, T=3, c=2, alpha=1e308)
    with np.errstate(all="ignore"):
        res = run_engine(small_data, paper_ring, params, seed=1, record_transcript=False)
    assert not np.isfinite(res.iterates[0, -1]).all()
    assert res.status == "completed", res.outcome.reason
    assert res.rows_kept.all()


def test_run_restores_the_garbage_collector(paper_ring, small_data):
    """run_engine pauses the cyclic collector during the simulation and restores its state."""
    import gc
    params = params_for(small_data, paper_ring)
    was = gc.isenabled()
    try:
        for state in (True, False):
            (gc.enable if state else gc.disable)()
            run_engine(small_data, paper_ring, params, seed=0)
            assert gc.isenabled() is state
    finally:
        (gc.enable if was else gc.disable)()
