"""Exact leakage of gossip under a time-varying schedule against a dense oracle (every state built
forwards by hand, the observer's own noise kept as observed coordinates, GaussianPair on the whole
covariance), against the fixed-W audit when W_t = W, and the message maps against a simulation."""

from __future__ import annotations

import itertools
import math

import networkx as nx
import numpy as np
import pytest

from dpgossip.errors import ConfigError
from dpgossip.privacy.gaussian_pair import GaussianPair
from dpgossip.privacy.linear_audit import LinearAuditSettings
from dpgossip.protocols.gossip.audit import audit_gossip
from dpgossip.protocols.gossip.dynamic_release import (
    dynamic_leakage,
    dynamic_view,
    matching_matrix,
    message_coefficients,
    received_messages,
)
from dpgossip.protocols.gossip.linear import LinearGossip
from dpgossip.topology import make_network
from tests.protocols.gossip.dynamic_schedules import pairwise_ticks, random_matchings

SETTINGS = LinearAuditSettings(sensitivity=0.7, orders=(2.0, 5.0), delta=1e-5)


def _forward_maps(schedule, spec, scales):
    """Dense ``A[t]`` (state -> data columns) and ``N[t]`` (state -> noise columns), forwards."""
    m, T = schedule[0].shape[0], len(schedule)
    d_cols, n_cols = m * spec.data_rounds, m * spec.noise_rounds
    A, N = np.zeros((m, d_cols)), np.zeros((m, n_cols))
    A[:, :m], N[:, :m] = np.eye(m), np.diag(scales)
    states = [(A.copy(), N.copy())]
    for t in range(1, T):
        W = schedule[t - 1].toarray()
        A, N = W @ A, W @ N
        if spec.protocol == "gossip-noisy":
            if spec.inputs == "per-round":
                A[:, t * m:(t + 1) * m] += np.eye(m)
            elif spec.inputs == "fixed":
                A[:, :m] += np.eye(m)
            N[:, t * m:(t + 1) * m] += np.diag(scales)
        states.append((A.copy(), N.copy()))
    return states


def _oracle_pairs(schedule, spec, obs, u, scales):
    """GaussianPairs of the observer set's view (messages and its own noise draws) for each extreme
    shift of target ``u``'s inputs (one, or every sign vector for per-round inputs)."""
    m = schedule[0].shape[0]
    states = _forward_maps(schedule, spec, scales)
    rows_a, rows_n, seen = [], [], set()
    for t in range(1, len(schedule) + 1):
        W = schedule[t - 1].toarray()
        for v in obs:
            for w in range(m):
                if w != v and w not in obs and W[v, w] != 0 and (w, t - 1) not in seen:
                    seen.add((w, t - 1))
                    rows_a.append(states[t - 1][0][w])
                    rows_n.append(states[t - 1][1][w])
    for s, v in itertools.product(range(spec.noise_rounds), obs):  # own noise, observed
        e = np.zeros(m * spec.noise_rounds)
        e[s * m + v] = 1.0
        rows_a.append(np.zeros(m * spec.data_rounds))
        rows_n.append(e)
    A, N = np.array(rows_a), np.array(rows_n)
    cov = N @ N.T
    cols = [s * m + u for s in range(spec.data_rounds)]
    signs = itertools.product((1.0, -1.0), repeat=len(cols) - 1)
    return [GaussianPair(np.zeros(len(A)), cov, A[:, cols] @ (SETTINGS.sensitivity * np.array((1.0, *sg))),
                         cov) for sg in signs]


def _check_against_oracle(schedule, spec, obs, scales):
    rows = dynamic_leakage(schedule, spec, obs, SETTINGS)
    assert [r.target for r in rows] == [u for u in range(schedule[0].shape[0]) if u not in obs]
    for r in rows:
        pairs = _oracle_pairs(schedule, spec, obs, r.target, scales)
        for k, a in enumerate(SETTINGS.orders):
            want = max(p.renyi(a) for p in pairs)
            assert r.exact
            if math.isinf(want):
                assert math.isinf(r.rdp[k])
            else:
                assert r.rdp[k] == pytest.approx(want, rel=1e-9, abs=1e-12)
        want_eps = max(p.epsilon(SETTINGS.delta) for p in pairs)
        assert r.epsilon == pytest.approx(want_eps, rel=1e-7, abs=1e-9)


@pytest.mark.parametrize("protocol,inputs", [("gossip-average", "once"), ("gossip-noisy", "once"),
                                             ("gossip-noisy", "fixed"), ("gossip-noisy", "per-round")])
@pytest.mark.parametrize("sampler", ["ticks", "matchings"])
def test_leakage_equals_the_dense_oracle(protocol, inputs, sampler):
    g = nx.cycle_graph(7)
    g.add_edges_from([(0, 3), (2, 5)])
    T = 4 if inputs == "per-round" else (12 if sampler == "ticks" else 5)
    sched = (pairwise_ticks(g, T, seed=4) if sampler == "ticks" else random_matchings(g, T, seed=4))
    scales = np.array([1.0, 0.8, 1.3, 0.5, 1.1, 0.9, 1.2])
    spec = LinearGossip(protocol=protocol, rounds=T, sigma=tuple(scales), inputs=inputs)
    _check_against_oracle(sched, spec, (0,), scales)
    _check_against_oracle(sched, spec, (1, 4), scales)


def test_noiseless_agent_leaves_the_support_as_in_the_oracle():
    sched = [matching_matrix(5, [(1, 2), (3, 4)]), matching_matrix(5, [(0, 1), (2, 3)]),
             matching_matrix(5, [(1, 2)]), matching_matrix(5, [(0, 1), (3, 4)])]
    scales = np.array([1.0, 1.0, 0.0, 1.0, 1.0])
    spec = LinearGossip(protocol="gossip-noisy", rounds=4, sigma=tuple(scales), inputs="fixed")
    rows = dynamic_leakage(sched, spec, 1, SETTINGS)
    assert math.isinf(rows[1].mu)  # agent 2 sends its noiseless value to 1 at round 0
    _check_against_oracle(sched, spec, (1,), scales)


@pytest.mark.parametrize("protocol,inputs", [("gossip-average", "once"), ("gossip-noisy", "fixed"),
                                             ("gossip-noisy", "per-round")])
def test_a_constant_schedule_equals_the_fixed_w_audit(protocol, inputs):
    net = make_network("random_geometric", agents=14, seed=3, params={"radius": 0.4})
    T = 5
    spec = LinearGossip(protocol=protocol, rounds=T, sigma=0.9, inputs=inputs)
    for v in (0, 6):
        want = audit_gossip(net, spec, v, SETTINGS)
        got = dynamic_leakage([net.W] * T, spec, v, SETTINGS, graph=net.graph)
        assert [r.target for r in got] == [r.target for r in want]
        assert [r.hops for r in got] == [r.hops for r in want]
        np.testing.assert_allclose([r.mu for r in got], [r.mu for r in want], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose([r.epsilon for r in got], [r.epsilon for r in want], rtol=1e-9,
                                   atol=1e-12)


def test_message_maps_reproduce_a_simulated_run():
    g = nx.grid_2d_graph(3, 3)
    g = nx.convert_node_labels_to_integers(g, ordering="sorted")
    sched = pairwise_ticks(g, 15, seed=7)
    m, T = 9, 15
    rng = np.random.default_rng(0)
    x, z, scales = rng.normal(size=(T, m)), rng.normal(size=(T, m)), rng.uniform(0.5, 1.5, m)
    y = [x[0] + scales * z[0]]
    for t in range(1, T):  # gossip-noisy, per-round inputs, simulated step by step
        y.append(sched[t - 1] @ y[-1] + x[t] + scales * z[t])
    messages = received_messages(sched, (4,))
    C = message_coefficients(sched, messages)
    got = np.einsum("skm,sm->k", C, x + scales * z)
    want = np.array([y[r][w] for w, r in messages])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    for w, r in messages:  # every message comes from a contact of agent 4 at step r + 1
        assert sched[r][4, w] != 0 and w != 4


def test_view_columns_drop_the_observers_and_noiseless_agents():
    sched = [matching_matrix(4, [(0, 1), (2, 3)]), matching_matrix(4, [(1, 2)])]
    spec = LinearGossip(protocol="gossip-noisy", rounds=2, sigma=(1.0, 0.0, 1.0, 1.0))
    view = dynamic_view(sched, spec, 1)
    assert sorted(view.columns_of) == [0, 2, 3]
    assert 1 not in view.noise_index[:, 0]
    assert view.messages.tolist() == [[0, 0], [2, 1]]


@pytest.mark.parametrize("bad,field", [
    (lambda: dynamic_view([], LinearGossip(rounds=1), 0), "schedule"),
    (lambda: dynamic_view([np.ones((2, 3))], LinearGossip(rounds=1), 0), "schedule"),
    (lambda: dynamic_view([np.eye(3), np.eye(4)], LinearGossip(rounds=2), 0), "schedule"),
    (lambda: dynamic_view([np.eye(3)], LinearGossip(rounds=2), 0), "rounds"),
    (lambda: dynamic_view([np.eye(3)], LinearGossip(protocol="gossip-decor", rounds=1), 0), "protocol"),
    (lambda: dynamic_view([np.eye(3)], LinearGossip(rounds=1), 3), "observers"),
    (lambda: matching_matrix(4, [(0, 1), (1, 2)]), "pairs"),
    (lambda: dynamic_leakage([np.eye(3)], LinearGossip(rounds=1), 0, targets=[0]), "targets"),
])
def test_bad_input_names_the_field(bad, field):
    with pytest.raises(ConfigError) as err:
        bad()
    assert err.value.field == field
