"""Muffliato's per-message sum: its formula, and where it falls below the exact leakage."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

from dpgossip.errors import ConfigError
from dpgossip.privacy.linear_audit import LinearAuditSettings, whiten
from dpgossip.protocols.gossip.audit import audit_gossip
from dpgossip.protocols.gossip.bounds import (
    compare_to_bound,
    decor_round_rdp,
    decor_round_view,
    muffliato_per_message,
)
from dpgossip.protocols.gossip.linear import LinearGossip
from dpgossip.topology import Network, build_graph, make_network, mixing_matrix


def _dense_sum(W, graph, v, ts, alpha, sigma):
    """``alpha/(2 sigma^2) sum_t sum_{w in N(v)} (W^t)_{wu}^2 / ||W^t_w||^2`` with dense powers."""
    out = np.zeros(W.shape[0])
    for t in ts:
        Wt = np.linalg.matrix_power(W, t)
        for w in graph.neighbors(v):
            out += Wt[w] ** 2 / np.sum(Wt[w] ** 2)
    return alpha / (2 * sigma ** 2) * out


@pytest.mark.parametrize("name, m", [("grid", 16), ("star", 6), ("erdos_renyi", 20)])
def test_per_message_sum_matches_the_dense_formula(name, m):
    network = make_network(name, agents=m, seed=3)
    spec = LinearGossip(rounds=6, sigma=1.7)
    for ts in (None, range(1, 7)):
        got = muffliato_per_message(network, spec, 2, order=3.0, sensitivity=1.0, rounds=ts)
        want = _dense_sum(network.dense_W(), network.graph, 2, range(6) if ts is None else ts, 3.0, 1.7)
        assert np.allclose(got, want, rtol=1e-12, atol=1e-15)
    scaled = muffliato_per_message(network, spec, 2, order=3.0, sensitivity=0.5)
    assert np.allclose(scaled, 0.25 * muffliato_per_message(network, spec, 2, order=3.0))


@pytest.mark.parametrize("d", [6, 8])
def test_per_message_sum_is_below_the_exact_leakage_at_the_antipode(d):
    # Metropolis weights, sigma = 1, alpha = 2, T = 2d rounds: the antipodal observer's view determines
    # x_u + eta_u exactly, so the exact Renyi divergence is the local-DP level alpha/(2 sigma^2) = 1
    network = make_network("hypercube", agents=2 ** d)
    spec = LinearGossip(rounds=2 * d, sigma=1.0)
    v = 2 ** d - 1
    rows = audit_gossip(network, spec, v, LinearAuditSettings(orders=(2.0,)))
    assert rows[0].target == 0 and rows[0].hops == d
    assert rows[0].rdp[0] == pytest.approx(1.0, abs=1e-9)
    bound = muffliato_per_message(network, spec, v, order=2.0)
    table = compare_to_bound(rows, bound, order=2.0)
    antipode = table[0]
    assert antipode.bound_below_exact and antipode.ratio > 3.0
    assert antipode.bound == pytest.approx({6: 0.32633350, 8: 0.11116059}[d], rel=1e-7)
    # the authors' rounds 1..T give a larger sum, still below the exact value
    theirs = muffliato_per_message(network, spec, v, order=2.0, rounds=range(1, 2 * d + 1))
    assert antipode.bound < theirs[0] < 0.5
    # every row is consistent: ratio = exact / bound, flag iff the bound is below
    for c in table:
        assert c.bound_below_exact == (c.bound < c.exact * (1 - 1e-9))
        assert c.ratio == pytest.approx(c.exact / c.bound, rel=1e-12)


def test_hypercube_dimension_11_authors_sum_and_exact_divergence():
    # 2,048 nodes, Metropolis, sigma = 1, alpha = 2, T = 19 gossip steps: the authors' sum at the
    # antipodal node is 0.0121; the exact Renyi divergence there is 1 (local DP)
    # built as make_network does but without its dense spectral validation (seconds at 2,048 nodes)
    graph = build_graph("hypercube", 2048)
    network = Network(graph=graph, W=mixing_matrix(graph, "metropolis"), name="hypercube",
                      mixing="metropolis")
    spec = LinearGossip(rounds=19, sigma=1.0)
    theirs = muffliato_per_message(network, spec, 2047, order=2.0, rounds=range(1, 20))
    assert theirs[0] == pytest.approx(0.0121047107, rel=1e-8)
    row = audit_gossip(network, spec, 2047, LinearAuditSettings(orders=(2.0,)), targets=[0])[0]
    assert row.rdp[0] == pytest.approx(1.0, abs=1e-9) and row.hops == 11
    (c,) = compare_to_bound([row], theirs, order=2.0)
    assert c.bound_below_exact and c.ratio == pytest.approx(1 / theirs[0], rel=1e-8)


def test_ratio_edge_cases_and_bad_input():
    network = make_network("path", agents=4)
    spec = LinearGossip(rounds=1, sigma=1.0)
    rows = audit_gossip(network, spec, 3)  # T = 1: only y_2^0 reaches the observer
    table = compare_to_bound(rows, muffliato_per_message(network, spec, 3), order=2.0)
    assert [(c.target, c.ratio, c.bound_below_exact) for c in table] == [
        (0, 1.0, False), (1, 1.0, False), (2, 1.0, False)]
    assert math.isclose(table[2].exact, 1.0)
    with pytest.raises(ConfigError) as caught:
        compare_to_bound(rows, np.zeros(4), order=3.0)
    assert caught.value.field == "order"
    with pytest.raises(ConfigError) as caught:
        muffliato_per_message(network, LinearGossip(protocol="gossip-noisy", rounds=2), 0)
    assert caught.value.field == "spec"
    with pytest.raises(ConfigError) as caught:
        muffliato_per_message(network, spec, 0, rounds=[-1])
    assert caught.value.field == "rounds"
    with pytest.raises(ConfigError) as caught:
        muffliato_per_message(network, spec, 0, order=1.0)
    assert caught.value.field == "order"


def test_the_table_of_docs_network_dp_for_dimension_8():
    network = make_network("hypercube", agents=256)
    spec = LinearGossip(rounds=16, sigma=1.0)
    rows = audit_gossip(network, spec, 0, LinearAuditSettings(orders=(2.0,)))
    theirs = muffliato_per_message(network, spec, 0, order=2.0, rounds=range(1, 17))
    table = compare_to_bound(rows, theirs, order=2.0)
    doc = {1: (1, 1.72), 2: (0.286, 1.10), 4: (0.114, 0.371), 6: (0.286, 0.206), 7: (1, 0.166),
           8: (1, 0.135)}
    for hops, (exact, bound) in doc.items():
        at = [c for c in table if c.hops == hops]
        assert np.mean([c.exact for c in at]) == pytest.approx(exact, rel=5e-3)
        assert np.mean([c.bound for c in at]) == pytest.approx(bound, rel=5e-3)
        assert all(c.bound_below_exact == (hops >= 6) for c in at)


@pytest.mark.parametrize("name, m", [("ring", 8), ("grid", 16), ("erdos_renyi", 30)])
def test_decor_closed_form_is_the_exact_value_of_one_round(name, m):
    network = make_network(name, agents=m, seed=5)
    closed = decor_round_rdp(network, sigma_cdp=0.6, sigma_cor=2.0, clip=1.5, order=3.0)
    view = decor_round_view(network, sigma_cdp=0.6, sigma_cor=2.0)
    L = np.diag([d for _, d in sorted(network.graph.degree())]) - nx.to_numpy_array(
        network.graph, nodelist=range(m))
    assert np.allclose(view.covariance, 0.36 * np.eye(m) + 4.0 * L, atol=1e-12)
    white = whiten(view.J, view.B)
    assert not white.outside.any()
    exact = 3.0 * (2 * 1.5) ** 2 * np.sum(white.C ** 2, axis=0) / 2  # alpha mu^2 / 2, mu = 2C |c_i|
    assert float(np.max(exact)) == pytest.approx(closed, rel=1e-10)
    assert np.allclose(exact, 3.0 * 2 * 1.5 ** 2 * np.diag(np.linalg.inv(view.covariance)), rtol=1e-10)
    with pytest.raises(ConfigError) as caught:
        decor_round_rdp(network, sigma_cdp=0.0, sigma_cor=1.0, clip=1.0)
    assert caught.value.field == "sigma_cdp"


@pytest.mark.parametrize("d", [4, 5, 6, 8])
def test_exact_hypercube_leakage_has_a_closed_form(d):
    # with T >= d rounds, the exact mu^2 of a target h hops from the observer is
    # min(d, C(d, h)) / C(d, h) / sigma^2 (docs/network-dp.md, Section 4): symmetric in h <-> d - h
    network = make_network("hypercube", agents=2 ** d)
    for T, sigma in ((d, 1.0), (2 * d, 2.0)):
        rows = audit_gossip(network, LinearGossip(rounds=T, sigma=sigma), 0)
        for r in rows:
            c = math.comb(d, r.hops)
            assert r.mu ** 2 == pytest.approx(min(d, c) / c / sigma ** 2, abs=1e-12), (T, r)
