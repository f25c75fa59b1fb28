"""The reach-restricted all-observer path against the full-view leakage of dynamic_release, and
grouping of disjoint pairwise ticks against the ungrouped schedule."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from dpgossip.errors import ConfigError
from dpgossip.privacy.linear_audit import LinearAuditSettings
from dpgossip.protocols.gossip.dynamic_allpairs import (
    all_observers,
    group_disjoint_ticks,
    matching_steps,
)
from dpgossip.protocols.gossip.dynamic_release import dynamic_leakage, pairwise_matrix
from dpgossip.protocols.gossip.linear import LinearGossip
from dpgossip.topology.mixing import metropolis_weights
from tests.protocols.gossip.dynamic_schedules import pairwise_ticks, random_matchings

SETTINGS = LinearAuditSettings(sensitivity=1.3, orders=(2.0,), delta=1e-5)


def _graph():
    g = nx.random_regular_graph(3, 16, seed=2)
    return nx.convert_node_labels_to_integers(g, ordering="sorted")


@pytest.mark.parametrize("protocol,inputs,sigma", [
    ("gossip-average", "once", 1.0),
    ("gossip-noisy", "fixed", tuple([1.0, 0.0] + [0.7] * 14)),
    ("gossip-noisy", "per-round", 0.8),
])
def test_every_observer_equals_the_full_view(protocol, inputs, sigma):
    T = 3 if inputs == "per-round" else 5
    sched = random_matchings(_graph(), T, seed=5)
    spec = LinearGossip(protocol=protocol, rounds=T, sigma=sigma, inputs=inputs)
    for got in all_observers(sched, spec, SETTINGS):
        full = {r.target: r for r in dynamic_leakage(sched, spec, got.observer, SETTINGS)}
        mu = np.array([r.mu for r in full.values()])
        in_reach = np.zeros(16, dtype=bool)
        in_reach[got.targets] = True
        assert got.observer not in got.targets
        np.testing.assert_allclose(got.mu, mu[[list(full).index(u) for u in got.targets]],
                                   rtol=1e-9, atol=1e-12)
        outside = [u for u in full if not in_reach[u]]
        assert all(full[u].mu == 0.0 for u in outside)  # out of reach: exactly zero


def test_grouped_ticks_send_the_same_messages():
    g = _graph()
    rng = np.random.default_rng(3)
    edges = sorted(g.edges)
    ticks = [edges[k] for k in rng.integers(len(edges), size=30)]
    grouped, pairs = group_disjoint_ticks(ticks, 16)
    assert [p for step in pairs for p in step] == [tuple(map(int, t)) for t in ticks]
    assert all(len({a for p in step for a in p}) == 2 * len(step) for step in pairs)
    flat = [pairwise_matrix(16, *t) for t in ticks]
    for v in (0, 7):
        a = dynamic_leakage(flat, LinearGossip(rounds=len(flat), sigma=1.0), v, SETTINGS, graph=g)
        b = dynamic_leakage(grouped, LinearGossip(rounds=len(grouped), sigma=1.0), v, SETTINGS, graph=g)
        np.testing.assert_allclose([r.mu for r in a], [r.mu for r in b], rtol=1e-9, atol=1e-12)


def test_bad_observer_names_the_field():
    sched = random_matchings(_graph(), 2, seed=1)
    with pytest.raises(ConfigError) as err:
        list(all_observers(sched, LinearGossip(rounds=2), observers=[16]))
    assert err.value.field == "observers"


@pytest.mark.parametrize("protocol", ["gossip-noisy", "gossip-average"])
@pytest.mark.parametrize("kind", ["fixed-w", "ticks", "lazy-matchings"])
def test_dense_fallback_and_tick_schedules_equal_the_full_view(kind, protocol):
    g = _graph()
    if kind == "fixed-w":
        sched = [metropolis_weights(g)] * 4
        assert matching_steps(sched) is None
    elif kind == "ticks":
        sched = pairwise_ticks(g, 25, seed=8)
        assert matching_steps(sched) is not None
    else:  # matchings with unequal weights and agents that only shrink (W_ii = 0.9, no partner)
        base = random_matchings(g, 4, seed=2)
        sched = [sp.csr_array(0.6 * W + 0.4 * sp.diags(np.full(16, 0.9))) for W in base]
        assert matching_steps(sched) is not None
    inputs = "fixed" if protocol == "gossip-noisy" else "once"
    spec = LinearGossip(protocol=protocol, rounds=len(sched), sigma=0.9, inputs=inputs)
    for got in all_observers(sched, spec, SETTINGS, observers=[0, 9]):
        full = {r.target: r.mu for r in dynamic_leakage(sched, spec, got.observer, SETTINGS)}
        np.testing.assert_allclose(got.mu, [full[u] for u in got.targets], rtol=1e-9, atol=1e-12)
        assert all(full[u] == 0.0 for u in full if u not in set(got.targets.tolist()))
