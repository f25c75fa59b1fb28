"""Every observer view of a neighbour from one factorisation per audit (``ObserverBatchAuditor``) and
the ``network`` search built on it.

Oracles: the dense release model of the *unreduced* view (explicit covariances, no reduction, no
low-rank update, no Schur complement); the per-pair factorisation of the reduced view
(``ReducedAuditor``, an independent route to the same divergences); the asked quantity of the reported
neighbour recomputed on the dense view; the scalar RDP conversion of each pair.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpgossip.data.partition import PartitionedData
from dpgossip.privacy.gaussian_pair import GaussianPair, rdp_deltas, rdp_epsilons
from dpgossip.protocols.ddppm.audit import (
    AuditOptions,
    _search_auditor,
    audit_pairs,
    component_model,
    view_pair,
)
from dpgossip.protocols.ddppm.observer_batch import ObserverBatchAuditor
from dpgossip.protocols.ddppm.params import NoiseSchedule, resolve_params
from dpgossip.protocols.ddppm.reduced import ReducedAuditor
from dpgossip.protocols.ddppm.views import make_view
from dpgossip.topology import make_network
from tests.protocols.ddppm.test_reduced_views import _neighbours, _ring, _views

DELTA = 1e-5


def _nontrivial(pair: GaussianPair) -> np.ndarray:
    lam = pair.eigenvalues
    return np.sort(lam[np.abs(lam - 1) > 1e-9])


@pytest.mark.parametrize("T, c, m, rows, d", [(2, 1, 6, 5, 2), (3, 2, 6, 5, 2), (3, 1, 7, 6, 3)])
def test_every_view_equals_the_dense_unreduced_view(T, c, m, rows, d):
    """Nontrivial eigenvalues and RDP epsilon of every observer view, near and far, for two targets,
    against the dense release model of the unreduced view (to 1e-9)."""
    data, net, params = _ring(m=m, rows=rows, d=d, T=T, c=c)
    batch = ObserverBatchAuditor(data, net, params, _views(m), seed=1)
    model0 = component_model(data, net, params)
    for j in (0, m // 2):
        nb = _neighbours(data, j, 1, seed=20 + j)[0]
        model1 = component_model(data, net, params, X=nb.apply(data.X))
        keys = [("observer", o) for o in range(m) if o != j]
        got = batch.pairs(nb, keys)
        for key in keys:
            dense = view_pair(model0, model1, make_view("observer", m=m, agents=key[1:]), net)
            lam_b, lam_d = _nontrivial(got[key]), _nontrivial(dense)
            assert lam_b.size == lam_d.size
            np.testing.assert_allclose(lam_b, lam_d, rtol=1e-9, atol=1e-12)
            assert got[key].epsilon(DELTA, "rdp") == pytest.approx(dense.epsilon(DELTA, "rdp"),
                                                                   rel=1e-9)


@pytest.mark.parametrize("graph", ["ring", "complete", "erdos_renyi"])
def test_every_view_equals_the_per_pair_factorisation(graph):
    """The same pairs as :class:`ReducedAuditor` (one factorisation per pair) on graphs whose message
    bases are local (ring), dense (complete) and irregular (Erdos-Renyi), every target, three neighbours
    each, asked for all views at once and for one view alone (to 1e-9)."""
    rng = np.random.default_rng(5)
    m, rows, d = 7, 5, 3
    X = rng.standard_normal((m * rows, d))
    X /= np.max(np.linalg.norm(X, axis=1))
    data = PartitionedData(X=X, sizes=(rows,) * m)
    kw = {"params": {"p": 0.5}, "seed": 2} if graph == "erdos_renyi" else {}
    net = make_network(graph, agents=m, **kw)
    params = resolve_params(data, net, iterations=3, consensus_steps=2,
                            noise=NoiseSchedule(kind="constant", scale=1.0))
    views = _views(m)
    red = ReducedAuditor(data, net, params, views, seed=4)
    batch = ObserverBatchAuditor(data, net, params, views, seed=4)
    for j in range(m):
        keys = [("observer", o) for o in range(m) if o != j]
        for nb in _neighbours(data, j, 3, seed=j):
            want = red.pairs(nb, keys)
            for got in (batch.pairs(nb, keys), {k: batch.pairs(nb, [k])[k] for k in keys[:2]}):
                for key, pair in got.items():
                    assert (pair.support_mismatch is None) == (want[key].support_mismatch is None)
                    if pair.support_mismatch is None:
                        np.testing.assert_allclose(_nontrivial(pair), _nontrivial(want[key]),
                                                   rtol=1e-9, atol=1e-12)


def test_a_change_outside_a_schur_complement_goes_to_the_per_pair_factorisation(monkeypatch):
    """Where a change seems to leave the range of an observer's Schur complement, the pair is decided
    by the per-pair factorisation on the same row space: with the tolerance forced below zero every
    view takes that path, and the values are the per-pair factorisation's (its supports, its
    eigenvalues, to rounding: the two find the row space of the change in different bases)."""
    import dpgossip.protocols.ddppm.observer_batch as ob

    data, net, params = _ring(T=2, c=1)
    m = data.m
    batch = ObserverBatchAuditor(data, net, params, _views(m), seed=6)
    red = ReducedAuditor(data, net, params, _views(m), seed=6)
    monkeypatch.setattr(ob, "SUPPORT_TOL", -1.0)
    nb = _neighbours(data, 2, 1, seed=3)[0]
    keys = [("observer", o) for o in range(m) if o != 2]
    got, want = batch.pairs(nb, keys), red.pairs(nb, keys)
    for key in keys:
        assert got[key].support_mismatch is None and want[key].support_mismatch is None
        np.testing.assert_allclose(_nontrivial(got[key]), _nontrivial(want[key]), rtol=1e-9,
                                   atol=1e-12)


@pytest.mark.parametrize("T, c", [(2, 1), (4, 2)])
def test_the_closed_form_row_space_of_a_change_is_the_random_range_finders(T, c):
    """The row space of ``G_1 - G_0`` in closed form (``2 T`` functionals of the latent noise) is the
    one found by randomised range finding on the difference of the two view maps: the same dimension,
    each basis inside the other's span to 1e-8."""
    from dpgossip.protocols.ddppm.lowrank import difference_rowspace

    data, net, params = _ring(m=6, rows=5, d=3, T=T, c=c)
    batch = ObserverBatchAuditor(data, net, params, _views(data.m), seed=2)
    s = data.n // data.m
    for j in (0, 4):
        for nb in _neighbours(data, j, 2, seed=40 + j):
            full = batch._target_view(j)
            rho = full.n - s + int(nb.row) - j * s
            X1 = full.X.copy()
            X1[rho] = nb.x_new
            C_rand = difference_rowspace(full, full.with_data(X1), rng=np.random.default_rng(0))
            C = batch._change_rowspace(full, rho, nb.x_new)
            assert C.shape == C_rand.shape
            assert np.linalg.norm(C_rand - C @ (C.T @ C_rand)) < 1e-8
            assert np.linalg.norm(C - C_rand @ (C_rand.T @ C)) < 1e-8


def test_batched_rdp_conversions_are_the_scalar_ones_bit_for_bit():
    """``rdp_epsilons`` / ``rdp_deltas`` of a list equal each pair's own conversion exactly (a curve's
    refinement stops on its own, whatever else is in the batch), including equal laws and
    mismatched supports."""
    rng = np.random.default_rng(0)
    pairs = []
    for _ in range(40):
        k = int(rng.integers(1, 9))
        pairs.append(GaussianPair.from_whitened(np.exp(rng.normal(0, 1.5, k)),
                                                rng.normal(0, 0.3, k) * (rng.random() < 0.5)))
    pairs.append(GaussianPair.from_whitened(np.ones(2), np.zeros(2)))
    pairs.append(GaussianPair.from_whitened(np.array([0.0, 2.0]), np.zeros(2)))
    eps = rdp_epsilons(pairs, DELTA)
    dl = rdp_deltas(pairs, 1.0)
    assert [float(e) for e in eps] == [p.epsilon(DELTA, "rdp") for p in pairs]
    assert [float(x) for x in dl] == [p.delta(1.0, "rdp") for p in pairs]
    assert np.isinf(eps[-1]) and dl[-1] == 1.0 and eps[-2] == 0.0


def test_the_search_on_reduced_views_reports_actual_neighbours_and_is_independent_of_processes():
    """Where the reduction applies the search runs on the reduced views by itself; every pair reports
    the asked quantity of its own neighbour, recomputed on the dense unreduced view (an actual
    neighbour's value: a lower estimate); two processes give the same bits as one."""
    data, net, params = _ring(m=6, rows=5, d=2, T=2, c=1)
    assert isinstance(_search_auditor((data, net, params, None, _views(data.m), 0)),
                      ObserverBatchAuditor)
    kw = dict(delta=DELTA, epsilons=(1.0,), methods=("rdp",), seed=3, search="quick")
    one = audit_pairs(data, net, params, options=AuditOptions(targets=[0, 3], upper_bound=False), **kw)
    two = audit_pairs(data, net, params,
                      options=AuditOptions(targets=[0, 3], upper_bound=False, workers=2), **kw)
    model0 = component_model(data, net, params)
    assert len(one.results) == 10
    for key, res in one.results.items():
        other = two.results[key]
        assert (other.epsilon, other.delta, other.neighbour.row) == (res.epsilon, res.delta,
                                                                      res.neighbour.row)
        assert np.array_equal(other.neighbour.x_new, res.neighbour.x_new)
        model1 = component_model(data, net, params, X=res.neighbour.apply(data.X))
        dense = view_pair(model0, model1, make_view("observer", m=data.m, agents=(key[0],)), net)
        assert res.epsilon["rdp"] == pytest.approx(dense.epsilon(DELTA, "rdp"), rel=1e-9)
