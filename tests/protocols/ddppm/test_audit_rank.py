"""Rank r > 1: composition of independent Gaussian pairs and the conditional audit of all components.

Oracles: one dense pair of the block-diagonal covariances (for ``GaussianPair.compose``), and the dense
reference path ``view_gaussian(component_model(..., X=run.data[l]))`` of every component on the realised
deflated data (for the low-rank, composed audit).
"""

import math

import networkx as nx
import numpy as np
import pytest
import scipy.linalg as sla

from dpgossip.errors import ConfigError
from dpgossip.privacy.gaussian_pair import GaussianPair
from dpgossip.privacy.neighbours import Neighbour, is_neighbour
from dpgossip.protocols.ddppm.audit import (
    AuditOptions,
    RunAuditor,
    audit_pairs,
    component_model,
    view_gaussian,
)
from dpgossip.protocols.ddppm.matrix import run_matrix
from dpgossip.protocols.ddppm.params import NoiseSchedule, resolve_params
from dpgossip.protocols.ddppm.search import SearchSettings
from dpgossip.protocols.ddppm.views import make_view
from dpgossip.scenario.privacy_section import exact_for_pair, rank_note
from dpgossip.topology.network import Network
from tests.conftest import PAPER_W, spiked_data

DELTA = 1e-2

TINY = SearchSettings(name="tiny", levels=1, rows=1, random=0, steps=1, starts=1, exact=1)


def _spd(rng: np.random.Generator, k: int) -> np.ndarray:
    A = rng.standard_normal((k, k))
    return A @ A.T + 0.5 * np.eye(k)


def _dense_parts(seed: int = 1) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    out = []
    for k in (3, 2):
        S0 = _spd(rng, k)
        S1 = S0 + 0.3 * _spd(rng, k)  # a nontrivial pencil in every part
        out.append((rng.standard_normal(k), S0, rng.standard_normal(k) * 0.3, S1))
    return out


# --- GaussianPair.compose -------------------------------------------------------------------------
def test_compose_of_dense_pairs_is_the_block_diagonal_pair():
    parts = _dense_parts()
    composed = GaussianPair.compose(GaussianPair(*p) for p in parts)
    block = GaussianPair(np.concatenate([p[0] for p in parts]), sla.block_diag(*[p[1] for p in parts]),
                         np.concatenate([p[2] for p in parts]), sla.block_diag(*[p[3] for p in parts]))
    assert np.any(np.abs(parts[0][0] - parts[0][2]) > 0.1)  # a nonzero mean difference
    for d in ("PQ", "QP"):
        assert composed.a_max(d) == pytest.approx(block.a_max(d), rel=1e-10)
        assert composed.kl(d) == pytest.approx(block.kl(d), rel=1e-10)
        for a in (1.05, 1.5, 2.0, 0.9 * block.a_max(d) if math.isfinite(block.a_max(d)) else 4.0):
            assert composed.renyi(a, d) == pytest.approx(block.renyi(a, d), rel=1e-10)
            # Renyi divergences of independent blocks add
            assert composed.renyi(a, d) == pytest.approx(
                sum(GaussianPair(*p).renyi(a, d) for p in parts), rel=1e-10)
    for eps in (0.1, 1.0, 3.0):
        assert composed.delta(eps) == pytest.approx(block.delta(eps), rel=1e-8, abs=1e-13)
        assert composed.pdp_tail(eps) == pytest.approx(block.pdp_tail(eps), rel=1e-8, abs=1e-13)
    assert composed.epsilon(1e-3) == pytest.approx(block.epsilon(1e-3), rel=1e-8)
    assert composed.epsilon(1e-3, "rdp") == pytest.approx(block.epsilon(1e-3, "rdp"), rel=1e-8)
    # a whitened part composes with a dense one, and a single part is itself
    w = GaussianPair.from_whitened([0.5, 2.0], [0.3, -0.1])
    mixed = GaussianPair.compose([GaussianPair(*parts[0]), w])
    assert mixed.renyi(1.5) == pytest.approx(GaussianPair(*parts[0]).renyi(1.5) + w.renyi(1.5),
                                             rel=1e-12)
    assert GaussianPair.compose([w]).delta(1.0) == pytest.approx(w.delta(1.0), rel=1e-12)


def test_compose_propagates_a_support_mismatch():
    mean, S0, _, _ = _dense_parts()[0]
    singular = np.diag([1.0, 2.0, 0.0])  # Q has no variance along e_3, P has
    bad = GaussianPair(mean, S0, mean, singular)
    assert bad.support_mismatch is not None
    composed = GaussianPair.compose([GaussianPair(*_dense_parts()[1]), bad])
    assert composed.support_mismatch is not None
    assert composed.support_mismatch.kind == bad.support_mismatch.kind == "cov0 outside cov1"
    assert composed.delta(1.0) == 1.0 and composed.delta(1.0, "rdp") == 1.0
    assert composed.epsilon(1e-5) == math.inf and composed.renyi(2.0) == math.inf
    assert "supports differ" in composed.renyi_reason(2.0)
    with pytest.raises(ConfigError, match="at least one GaussianPair"):
        GaussianPair.compose([])


# --- the rank-r audit -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def problem():
    net = Network(graph=nx.cycle_graph(4), W=PAPER_W, name="paper-ring4")
    data = spiked_data(48, 3, [2, 1.2, .6], 4, seed=3)
    noise = NoiseSchedule(kind="constant", scale=0.1)
    p1 = resolve_params(data, net, iterations=1, consensus_steps=1, noise=noise)
    p2 = resolve_params(data, net, iterations=1, consensus_steps=1, rank=2, noise=noise)
    # component 0 of the rank-2 run is the rank-1 run: the comparisons below are like for like
    assert p2.alpha[0] == p1.alpha[0] and np.array_equal(p2.sigma_p[0], p1.sigma_p[0])
    return data, net, p1, p2


def _dense_component(data, net, p, run, view, nb: Neighbour, l: int):
    """Dense (mean, cov) of a view of component l under X_l and under its neighbour."""
    X0 = run.data[l]
    X1 = np.array(X0)
    X1[nb.row] += nb.x_new - data.X[nb.row]
    m0, S0 = view_gaussian(component_model(data, net, p, component=l, X=X0), view, net)
    m1, S1 = view_gaussian(component_model(data, net, p, component=l, X=X1), view, net)
    return m0, (S0 + S0.T) / 2, m1, (S1 + S1.T) / 2


def test_composed_low_rank_pair_matches_the_dense_components(problem):
    data, net, _, p2 = problem
    view = make_view("observer", m=4, agents=(0,))
    run = run_matrix(data, net, p2, 5)
    assert not np.array_equal(run.data[1], data.X)  # deflation happened
    x = data.X[20]  # a row of agent 1, observed by agent 0
    nb = Neighbour(row=20, x_new=x + 0.6 * np.array([0.6, -0.8, 0.0]), label="fixed")
    assert is_neighbour(x, nb.x_new, "bounded")
    pair = RunAuditor(data, net, p2, {"v": view}, seed=5).pairs(nb, ["v"])["v"]
    dense = [_dense_component(data, net, p2, run, view, nb, l) for l in range(2)]
    parts = [GaussianPair(*d) for d in dense]
    a_max = min(q.a_max() for q in parts)
    assert pair.a_max() == pytest.approx(a_max, rel=1e-6)
    assert pair.kl() == pytest.approx(sum(q.kl() for q in parts), rel=1e-6)
    for a in (1.01, 1.0 + 0.3 * (min(a_max, 5.0) - 1.0), 1.0 + 0.8 * (min(a_max, 5.0) - 1.0)):
        assert pair.renyi(a) == pytest.approx(sum(q.renyi(a) for q in parts), rel=1e-6)
        assert pair.renyi(a, "QP") == pytest.approx(sum(q.renyi(a, "QP") for q in parts), rel=1e-6)
    # the exact value of the product: one dense pair of the block-diagonal covariances
    block = GaussianPair(*(np.concatenate([d[i] for d in dense]) if i % 2 == 0
                           else sla.block_diag(*[d[i] for d in dense]) for i in range(4)))
    assert pair.epsilon(DELTA) == pytest.approx(block.epsilon(DELTA), rel=1e-6)
    assert pair.delta(2.0) == pytest.approx(block.delta(2.0), rel=1e-6)
    # composition cannot reduce leakage: every component adds
    assert pair.epsilon(DELTA) >= parts[0].epsilon(DELTA) * (1 - 1e-9)


@pytest.fixture(scope="module")
def audits(problem):
    data, net, p1, p2 = problem
    kw = dict(delta=DELTA, epsilons=(1.0, 5.0), search=TINY, seed=3,
              options=AuditOptions(targets=[1], observers=[0]))
    return audit_pairs(data, net, p1, **kw), audit_pairs(data, net, p2, **kw)


def test_rank_two_audit_composes_and_carries_the_note(problem, audits):
    data, net, p1, p2 = problem
    a1, a2 = audits
    assert a1.components == 1 and a1.note is None and a1.run is None
    assert a2.components == 2 and a2.run is not None
    assert a2.note == ("rank 2: audited conditionally on the realised components of run seed 3; the "
                       "per-component Renyi divergences add (adaptive RDP composition); exact and "
                       "Chernoff values are those of the product of the conditional components")
    # the realised run is the matrix backend's run with the audit's seed
    assert np.array_equal(a2.run.data[1], run_matrix(data, net, p2, 3).data[1])
    view = {"v": make_view("observer", m=4, agents=(0,))}
    rank1 = RunAuditor(data, net, p1, view, seed=3)
    rank2 = RunAuditor(data, net, p2, view, seed=3, run=a2.run)
    r1, r2 = a1.results[(0, 1)], a2.results[(0, 1)]
    # for the same neighbour, rank 2 leaks at least as much as rank 1: at both worst neighbours
    at_r1 = rank2.pairs(r1.neighbour, ["v"])["v"]
    at_r2 = rank1.pairs(r2.neighbour, ["v"])["v"]
    for meth in a2.methods:
        assert at_r1.epsilon(DELTA, meth) >= r1.epsilon[meth] * (1 - 1e-9)
        assert r2.epsilon[meth] >= at_r2.epsilon(DELTA, meth) * (1 - 1e-9)
    for d in ("PQ", "QP"):  # the Renyi divergences add in each direction
        key = f"renyi2_{d.lower()}"
        assert at_r1.renyi(2.0, d) >= getattr(r1, key) and getattr(r2, key) >= at_r2.renyi(2.0, d)
    assert r1.renyi2 == max(r1.renyi2_pq, r1.renyi2_qp)
    # exact <= rdp, chernoff still hold for the composed pairs
    assert r2.epsilon["exact"] <= min(r2.epsilon["rdp"], r2.epsilon["chernoff"]) * (1 + 1e-9)
    # the exact value of the stored worst neighbour is rebuilt on the same realised run
    again = exact_for_pair(data, net, p2, a2, 0, 1)
    assert again["epsilon"] == pytest.approx(r2.epsilon["exact"], rel=1e-9)


def test_rank_two_audit_on_a_given_run_and_bad_runs(problem, audits):
    data, net, p1, p2 = problem
    _, a2 = audits
    again = audit_pairs(data, net, p2, delta=DELTA, epsilons=(1.0, 5.0), search=TINY, seed=3,
                        options=AuditOptions(targets=[1], observers=[0], run=a2.run))
    assert again.results[(0, 1)].epsilon["rdp"] == pytest.approx(a2.results[(0, 1)].epsilon["rdp"],
                                                                 rel=1e-9)
    assert "run seed 3" in again.note
    view = {"v": make_view("observer", m=4, agents=(0,))}
    with pytest.raises(ConfigError, match="components, params.rank = 2"):
        RunAuditor(data, net, p2, view, run=run_matrix(data, net, p1, 0))
    other = spiked_data(48, 3, [2, 1.2, .6], 4, seed=4)
    with pytest.raises(ConfigError, match=r"data\[0\] is not data.X"):
        RunAuditor(data, net, p2, view, run=run_matrix(other, net, p2, 0))


def test_rank_note_states_the_composition():
    assert rank_note(1) is None
    note = rank_note(3)
    assert "component 1 only" not in note and "Renyi divergences add" in note
    assert "adaptive RDP composition" in note and "conditionally on the realised" in note
