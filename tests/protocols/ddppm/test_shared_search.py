"""The shared search (``search = "shared"``): lead views searched, their neighbours given to the others.

Oracles: the dense release model (every value reported is that of the reported neighbour, rebuilt with
explicit covariances), the per-view search (the shared value is not below it by more than 1 % on a small
ring), and the per-agent loop of the view operator (its batched products are the same bits).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpgossip.data.partition import PartitionedData
from dpgossip.protocols.ddppm.audit import (
    AuditOptions,
    _view_key,
    audit_pairs,
    component_model,
    view_pair,
)
from dpgossip.protocols.ddppm.operators import ViewOperator
from dpgossip.protocols.ddppm.params import NoiseSchedule, resolve_params
from dpgossip.protocols.ddppm.search import SearchSettings
from dpgossip.topology import make_network

DELTA = 1e-5


def _ring(m: int = 5, rows: int = 4, d: int = 2, T: int = 2, c: int = 1, seed: int = 2):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m * rows, d)) * np.linspace(1.0, 0.5, d)
    X /= np.max(np.linalg.norm(X, axis=1))
    data = PartitionedData(X=X, sizes=(rows,) * m)
    net = make_network("ring", agents=m)
    params = resolve_params(data, net, iterations=T, consensus_steps=c,
                            noise=NoiseSchedule(kind="constant", scale=1.0))
    return data, net, params


@pytest.fixture(scope="module")
def audits():
    data, net, params = _ring()
    kw = dict(delta=DELTA, epsilons=(1.0,), methods=("rdp",), seed=3,
              options=AuditOptions(targets=[0]))
    one_level = SearchSettings(name="quick-shared", levels=1, shared=True)
    return (data, net, params, audit_pairs(data, net, params, search=one_level, **kw),
            audit_pairs(data, net, params, search="quick", **kw))


def test_shared_preset():
    s = SearchSettings.of("shared")
    assert s.shared and s.levels == SearchSettings.of("standard").levels
    assert not SearchSettings.of("standard").shared


def test_shared_values_are_those_of_their_neighbours_by_dense_matrices(audits):
    """Never above the truth: every pair's value is recomputed on the dense reference path at its
    reported neighbour (explicit covariances, no low-rank update), to 1e-9."""
    data, net, params, shared, _ = audits
    m0 = component_model(data, net, params)
    for (o, j), r in shared.results.items():
        m1 = component_model(data, net, params, X=r.neighbour.apply(data.X))
        _, view = _view_key("observer", o, j, data.m)
        dense = view_pair(m0, m1, view, net)
        assert r.epsilon["rdp"] == pytest.approx(dense.epsilon(DELTA, "rdp"), rel=1e-9)
        for d, got in (("PQ", r.renyi2_pq), ("QP", r.renyi2_qp)):
            want = dense.renyi(2.0, d)
            assert got == want or got == pytest.approx(want, rel=1e-9)
        assert r.renyi2 == max(r.renyi2_pq, r.renyi2_qp)


def test_shared_not_below_the_per_view_search(audits):
    """Against the per-view search on the same pairs: within 1 % on every pair, leads searched."""
    *_, shared, standard = audits
    for key, r in standard.results.items():
        got = shared.results[key].epsilon["rdp"]
        assert got >= 0.99 * r.epsilon["rdp"], (key, got, r.epsilon["rdp"])
    searched = {r.evidence.to_row().get("searched_on") for r in shared.results.values()}
    assert None in searched and len(searched) == 2  # the leads, and the views given their neighbours


def test_batched_view_operator_is_bit_identical_to_the_agent_loop():
    data, net, params = _ring(m=5, rows=4, d=3, T=3, c=2)
    rng = np.random.default_rng(0)
    n = data.n
    std = np.concatenate([np.full(n, params.sigma_q), np.full(params.iterations * n, 0.7)])
    op = ViewOperator(data.X, data.offsets, net.dense_W(), T=params.iterations, c=2,
                      alpha=params.alpha[0], latent_std=std, B=rng.standard_normal((2, data.m)),
                      final_rows=np.arange(3, n), known=np.zeros(0, dtype=int))
    assert op._rows == 4
    g, v = rng.standard_normal((op.N, 7)), rng.standard_normal((op.K, 7))
    batched = op.forward(g), op.adjoint(v)
    op._rows = 0  # the per-agent loop
    looped = op.forward(g), op.adjoint(v)
    assert all(np.array_equal(a, b) for a, b in zip(batched, looped, strict=True))
    assert not math.isnan(float(batched[0].sum()))


def test_surrogate_gradient_matches_central_differences():
    from dpgossip.protocols.ddppm.search import surrogate, surrogate_gradient

    rng = np.random.default_rng(0)
    lam = np.exp(rng.normal(0.0, 1.0, (30, 3)))
    g = surrogate_gradient(lam, delta=DELTA)
    h = 1e-6
    fd = np.stack([(surrogate(lam + h * e, False, delta=DELTA)
                    - surrogate(lam - h * e, False, delta=DELTA)) / (2 * h) for e in np.eye(3)],
                  axis=1)
    assert np.all(np.isfinite(g))
    assert np.max(np.abs(g - fd) / np.maximum(np.abs(fd), 1e-8)) < 1e-4


def test_first_message_eigenvalue_gradients_match_central_differences():
    from dpgossip.protocols.ddppm.audit import RunAuditor
    from dpgossip.protocols.ddppm.subview import FirstMessageView

    data, net, params = _ring(d=3)
    k, view = _view_key("observer", 1, 0, data.m)
    spec = RunAuditor(data, net, params, {k: view}).auditors[0].specs[k]
    sv = FirstMessageView(data.X, data.offsets, spec, 0)
    assert sv.available
    rng = np.random.default_rng(1)
    x = data.X[1]
    Y = rng.standard_normal((10, 3)) * 0.3
    lam, grad = sv.eigenvalue_gradients(x, Y)
    h = 1e-6
    fd = np.stack([(sv.eigenvalues(x, Y + h * e)[0] - sv.eigenvalues(x, Y - h * e)[0]) / (2 * h)
                   for e in np.eye(3)], axis=2)
    ok = np.all(np.isfinite(grad), axis=(1, 2))
    assert ok.sum() >= 8
    assert np.allclose(grad[ok], fd[ok], rtol=1e-5, atol=1e-7)


def test_renyi2_reports_the_worse_direction():
    """Closed form: P = N(0, 1), Q = N(0, 3) (one generalised eigenvalue 3 >= 2): D_2(P||Q) =
    ln(9/5)/2, D_2(Q||P) infinite (2 Q^{-1} - P^{-1} is not positive)."""
    from dpgossip.privacy.gaussian_pair import GaussianPair
    from dpgossip.protocols.ddppm.audit import _renyi2

    got = _renyi2(GaussianPair.from_whitened([3.0], [0.0]))
    assert got["renyi2_pq"] == pytest.approx(0.5 * math.log(9 / 5), rel=1e-12)
    assert got["renyi2_qp"] == math.inf and got["renyi2"] == math.inf
    small = _renyi2(GaussianPair.from_whitened([1.5], [0.0]))  # both finite: the larger one
    assert small["renyi2"] == max(small["renyi2_pq"], small["renyi2_qp"]) > small["renyi2_pq"]


def test_subview_ascent_of_all_rows_is_the_row_by_row_ascent_bit_for_bit():
    from dpgossip.protocols.ddppm.audit import RunAuditor
    from dpgossip.protocols.ddppm.search import AskedQuantity, TargetSearch
    from dpgossip.protocols.ddppm.subview import FirstMessageView

    data, net, params = _ring(d=3)
    k, view = _view_key("observer", 1, 0, data.m)
    aud = RunAuditor(data, net, params, {k: view})
    sv = FirstMessageView(data.X, data.offsets, aud.auditors[0].specs[k], 0)
    rows = list(range(data.offsets[0], data.offsets[1]))
    ts = TargetSearch(aud.pairs, data.X, rows, [k], subviews={k: sv}, kind="bounded",
                      asked=AskedQuantity(delta=DELTA))
    U = np.random.default_rng(0).standard_normal((16, 3))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    together = ts._subview_bests(sv, rows, U)
    for r in rows:
        value, nb = ts._subview_best(sv, r, U)
        assert together[r][0] == value and np.array_equal(together[r][1].x_new, nb.x_new)
    closed = ts._subview_bests(sv, rows, U, analytic=True)  # closed-form gradients: no worse here
    assert all(closed[r][0] >= together[r][0] * (1 - 1e-6) for r in rows)


def test_shared_search_on_two_processes_is_the_one_process_result_bit_for_bit():
    """Targets searched by two spawned processes (each factorising every view once) give exactly the
    one-process result: values, neighbours and the evidence of every pair, in the same order; the
    count comes from ``audit_processes`` when ``AuditOptions.workers`` is None."""
    from dpgossip.errors import ConfigError
    from dpgossip.protocols.ddppm.audit import audit_processes

    data, net, params = _ring(m=4, rows=3, T=2)
    kw = dict(delta=DELTA, epsilons=(1.0, 5.0), methods=("rdp", "chernoff"), seed=5,
              search=SearchSettings(name="one-level-shared", levels=1, shared=True))
    seen: list[int] = []
    one = audit_pairs(data, net, params, options=AuditOptions(targets=[3, 0]), **kw)
    with audit_processes(2):
        two = audit_pairs(data, net, params, options=AuditOptions(
            targets=[3, 0], on_target_results=lambda j, _r: seen.append(j)), **kw)
    assert seen == [3, 0]  # handed over in target order
    assert list(one.results) == list(two.results) and len(one.results) == 6
    for key, r in one.results.items():
        s = two.results[key]
        assert r.epsilon == s.epsilon and r.delta == s.delta and r.renyi2 == s.renyi2
        assert r.neighbour.row == s.neighbour.row
        assert np.array_equal(r.neighbour.x_new, s.neighbour.x_new)
        a, b = r.evidence.to_row(), s.evidence.to_row()
        assert a.keys() == b.keys()
        assert all(a[f] == b[f] or (a[f] != a[f] and b[f] != b[f]) for f in a)  # NaN: not recorded
    with pytest.raises(ConfigError, match="audit processes"), audit_processes(0):
        pass
