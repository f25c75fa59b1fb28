"""The reduced observer views (used by the search wherever they apply): every other agent's final rows
replaced by ``U_a^T Y_a``, i.e. the observer view of the protocol on the reduced data.

Oracles: the dense release model of the *unreduced* view (explicit covariances of every latent
coordinate, no low-rank update, no reduction): the reduction must not change any divergence; the
covariance of the reduced view built by brute force from its operator's columns (``G_u G_u^T``); the
per-agent loop of the base view operator (the target-last batched products); the search on the
unreduced views (the search on the reduced ones follows its course: the same values to rounding).
"""

from __future__ import annotations

import numpy as np
import pytest

from dpgossip.data.partition import PartitionedData
from dpgossip.privacy.neighbours import Neighbour, project
from dpgossip.protocols.ddppm import audit as audit_module
from dpgossip.protocols.ddppm.audit import (
    AuditOptions,
    RunAuditor,
    _search_auditor,
    audit_pairs,
    component_model,
    view_pair,
)
from dpgossip.protocols.ddppm.observer_batch import ObserverBatchAuditor
from dpgossip.protocols.ddppm.operators import ViewOperator
from dpgossip.protocols.ddppm.params import NoiseSchedule, resolve_params
from dpgossip.protocols.ddppm.reduced import ReducedAuditor, reducible
from dpgossip.protocols.ddppm.views import make_view
from dpgossip.topology import make_network

DELTA = 1e-5


def _ring(m: int = 6, rows: int = 5, d: int = 2, T: int = 2, c: int = 1, seed: int = 4):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m * rows, d)) * np.linspace(1.0, 0.6, d)
    X /= np.max(np.linalg.norm(X, axis=1))
    data = PartitionedData(X=X, sizes=(rows,) * m)
    net = make_network("ring", agents=m)
    params = resolve_params(data, net, iterations=T, consensus_steps=c,
                            noise=NoiseSchedule(kind="constant", scale=1.0))
    return data, net, params


def _views(m: int) -> dict:
    return {("observer", o): make_view("observer", m=m, agents=(o,)) for o in range(m)}


def _neighbours(data: PartitionedData, j: int, count: int, seed: int) -> list[Neighbour]:
    rng = np.random.default_rng(seed)
    rows = data.offsets[j] + rng.integers(0, data.offsets[j + 1] - data.offsets[j], count)
    out = []
    for r in rows:
        x = data.X[r]
        out.append(Neighbour(row=int(r), x_new=project(x, x + rng.standard_normal(x.size),
                                                       "bounded")))
    return out


@pytest.mark.parametrize("T, c", [(2, 1), (3, 2)])
def test_reduction_changes_no_divergence_against_the_dense_unreduced_view(T, c):
    """The reduced view's nontrivial eigenvalues and RDP epsilon equal those of the unreduced view by
    dense matrices, for near and far observers and two targets, to 1e-9 (the exact conversion is a
    function of the eigenvalues alone)."""
    data, net, params = _ring(T=T, c=c)
    red = ReducedAuditor(data, net, params, _views(data.m), seed=1)
    _assert_every_view_is_the_dense_one(red, data, net, params, targets=(0, 3), count=1, seed=10)


def _assert_every_view_is_the_dense_one(aud, data, net, params, *, targets, count, seed):
    """Every observer view of ``count`` neighbours of each target: nontrivial eigenvalues and RDP
    epsilon of ``aud.pairs`` against the dense release model of the unreduced view, to 1e-9."""
    m = data.m
    model0 = component_model(data, net, params)
    for j in targets:
        for nb in _neighbours(data, j, count, seed=seed + j):
            model1 = component_model(data, net, params, X=nb.apply(data.X))
            keys = [("observer", o) for o in range(m) if o != j]
            got = aud.pairs(nb, keys)
            for key in keys:
                dense = view_pair(model0, model1, make_view("observer", m=m, agents=key[1:]), net)
                lam_d = np.sort(dense.eigenvalues[np.abs(dense.eigenvalues - 1) > 1e-9])
                lam_r = np.sort(got[key].eigenvalues[np.abs(got[key].eigenvalues - 1) > 1e-9])
                assert lam_r.size == lam_d.size
                np.testing.assert_allclose(lam_r, lam_d, rtol=1e-9, atol=1e-12)
                assert got[key].epsilon(DELTA, "rdp") == pytest.approx(
                    dense.epsilon(DELTA, "rdp"), rel=1e-9)


def test_pair_covariance_equals_the_brute_force_covariance_of_the_reduced_view():
    """The moments path (the run's ``z`` covariances less the observer's own noise) equals
    ``G_u G_u^T`` of the reduced view's operator, its columns taken one unit vector at a time."""
    data, net, params = _ring(T=3, c=2)
    red = ReducedAuditor(data, net, params, _views(data.m))
    for o, j in ((1, 0), (4, 0), (0, 2)):
        key = ("observer", o)
        op = red.pair_operator(key, j)
        std_u = op.std.copy()
        std_u[op.known] = 0.0
        G = op.forward(np.diag(std_u > 0).astype(float))[: op.K - op.known.size]
        S = red.pair_covariance(key, j)
        assert S.shape == (G.shape[0],) * 2
        np.testing.assert_allclose(S, G @ G.T, rtol=0, atol=1e-12 * np.abs(S).max())


def test_target_last_products_equal_the_per_agent_loop():
    """``D^T q``, ``D y``, the forward and the adjoint of the target-last operator equal the base
    operator's (a loop over agents) on the same reduced data, and the adjoint is the transpose."""
    data, net, params = _ring(T=2, c=1)
    red = ReducedAuditor(data, net, params, _views(data.m))
    op = red.pair_operator(("observer", 2), 4)
    base = ViewOperator(op.X, op.offsets, op.W, T=op.T, c=op.c, alpha=op.alpha, latent_std=op.std,
                        B=op.B, final_rows=op.final_rows, known=op.known)
    rng = np.random.default_rng(0)
    g, v = rng.standard_normal((op.N, 3)), rng.standard_normal((op.K, 3))
    np.testing.assert_allclose(op.forward(g), base.forward(g), rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(op.adjoint(v), base.adjoint(v), rtol=1e-13, atol=1e-14)
    assert np.sum(op.forward(g) * v) == pytest.approx(np.sum(g * op.adjoint(v)), rel=1e-12)


@pytest.mark.parametrize("sizes", [None, (3, 6, 4, 5, 3)])
def test_the_search_on_reduced_views_follows_the_search_on_the_views(sizes, monkeypatch):
    """The search on the reduced views (the default where they apply) reports, pair by pair, the
    values of the search on one factorisation per view to 1e-3 relative, with equal blocks and with
    blocks of 3 to 6 rows (two targets). The divergences are the same (to 1e-9: the tests above), but
    rounding can tip the search's course at a near tie (which candidate a polish or the exchange
    takes), so the two searches need not end on the same neighbour."""
    data, net, params = _ring(m=5, rows=4, T=2, c=1)
    if sizes is not None:
        data = PartitionedData(X=np.vstack([data.X, data.X[:1] * 0.5]), sizes=sizes)
        params = resolve_params(data, net, iterations=2, consensus_steps=1,
                                noise=NoiseSchedule(kind="constant", scale=1.0))
    kw = dict(delta=DELTA, epsilons=(1.0,), methods=("rdp",), seed=3, search="quick",
              options=AuditOptions(targets=[0, 1], upper_bound=False))
    reduced = audit_pairs(data, net, params, **kw)
    monkeypatch.setattr(audit_module, "reducible", lambda *_args: False)
    views = audit_pairs(data, net, params, **kw)
    assert set(reduced.results) == set(views.results)
    for key, res in views.results.items():
        assert reduced.results[key].epsilon["rdp"] == pytest.approx(res.epsilon["rdp"], rel=1e-3)


def test_where_the_reduction_applies():
    data, net, params = _ring()
    views = _views(data.m)
    assert isinstance(_search_auditor((data, net, params, None, views, 0)), ReducedAuditor)
    uneven = PartitionedData(X=data.X, sizes=(4, 6) + (5,) * (data.m - 2))
    assert reducible(uneven, params, views)
    assert isinstance(_search_auditor((uneven, net, params, None, views, 0)), ReducedAuditor)
    one_short = PartitionedData(X=data.X, sizes=(2, 8) + (5,) * (data.m - 2))  # d = 2 rows: not more
    assert not reducible(one_short, params, views)
    assert isinstance(_search_auditor((one_short, net, params, None, views, 0)), RunAuditor)
    too_few = _ring(rows=2, d=2)
    assert not reducible(too_few[0], too_few[2], views)

@pytest.mark.parametrize("auditor", [ReducedAuditor, ObserverBatchAuditor])
def test_blocks_of_unequal_sizes_against_the_dense_unreduced_view(auditor):
    """Agents holding 3 to 7 rows (d = 2): every observer view of a target with the fewest, the most
    and a middle number of rows, per-pair factorisation and batched auditor alike, against the dense
    release model of the unreduced view, to 1e-9."""
    sizes = (3, 7, 4, 6, 5, 3, 4)
    rng = np.random.default_rng(8)
    X = rng.standard_normal((sum(sizes), 2)) * np.array([1.0, 0.7])
    X /= np.max(np.linalg.norm(X, axis=1))
    data = PartitionedData(X=X, sizes=sizes)
    m = len(sizes)
    net = make_network("ring", agents=m)
    params = resolve_params(data, net, iterations=3, consensus_steps=1,
                            noise=NoiseSchedule(kind="geometric", scale=1.0))
    aud = auditor(data, net, params, _views(m), seed=1)
    _assert_every_view_is_the_dense_one(aud, data, net, params, targets=(0, 1, 4), count=2, seed=30)
