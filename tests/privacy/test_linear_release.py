"""The linear Gaussian release and its generic auditor on random releases, against independent oracles:
``pinv(B B^T)`` formed explicitly, the conditional Gaussian of a view given known noise (Schur
complement of the joint covariance), brute force over the box's vertices, and the Cholesky path against
the SVD path."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpgossip.errors import ConfigError
from dpgossip.privacy.linear_allpairs import release_leakage
from dpgossip.privacy.linear_audit import LinearAuditSettings, audit_release, unit_shift_gains
from dpgossip.privacy.linear_release import LinearGaussianRelease
from dpgossip.privacy.mechanism import gaussian_mechanism_epsilon


def _random(rows=7, targets=4, k=1, noise=9, seed=0):
    rng = np.random.default_rng(seed)
    J = rng.standard_normal((rows, targets * k))
    B = rng.standard_normal((rows, noise)) * rng.uniform(0.5, 2.0, noise)
    cols = np.arange(targets)[:, None] + targets * np.arange(k)[None, :]
    return LinearGaussianRelease(J=J, B=B, targets=np.arange(10, 10 + targets), columns=cols, label="o")


def _pinv_mu2(J_u, B, s):
    d = J_u @ s
    return float(d @ np.linalg.pinv(B @ B.T, rcond=1e-12, hermitian=True) @ d)


def test_unit_gains_and_the_audit_equal_the_explicit_pseudo_inverse():
    rel = _random()
    g = unit_shift_gains(rel)
    rows = audit_release(rel, LinearAuditSettings(sensitivity=0.3, orders=(2.0, 5.0)))
    assert [r.target for r in rows] == [10, 11, 12, 13] and {r.observer for r in rows} == {"o"}
    for i, r in enumerate(rows):
        oracle = _pinv_mu2(rel.J[:, [i]], rel.B, np.ones(1))
        assert g[i] == pytest.approx(oracle, rel=1e-10)
        assert r.mu ** 2 == pytest.approx(0.09 * oracle, rel=1e-10) and r.exact and r.hops == -1
        assert r.rdp == pytest.approx((r.mu ** 2, 2.5 * r.mu ** 2), rel=1e-14)
        assert r.epsilon == gaussian_mechanism_epsilon(r.mu_upper, r.delta)


def test_the_box_maximum_of_several_inputs_equals_brute_force_over_vertices():
    rel = _random(rows=8, targets=3, k=3, noise=10, seed=1)
    rows = audit_release(rel, LinearAuditSettings(sensitivity=0.5))
    for i, r in enumerate(rows):
        cols = rel.columns[i]
        oracle = max(_pinv_mu2(rel.J[:, cols], rel.B, np.array(s))
                     for s in itertools.product([-0.5, 0.5], repeat=3))
        assert r.mu ** 2 == pytest.approx(oracle, rel=1e-10) and r.method == "vertices"


def test_conditioning_on_known_noise_is_removing_its_columns():
    # Y = J x + B_K w_K + B_U w_U; given w_K the law of Y is Gaussian with covariance the Schur complement
    # Sigma_YY - Sigma_YK Sigma_KK^{-1} Sigma_KY of the joint (Y, w_K): it must equal B_U B_U^T
    rel = _random(rows=6, noise=10, seed=2)
    known = np.array([1, 4, 6])
    unknown = np.setdiff1d(np.arange(10), known)
    B = rel.B
    schur = B @ B.T - B[:, known] @ np.linalg.inv(np.eye(known.size)) @ B[:, known].T
    cond = LinearGaussianRelease(J=rel.J, B=B[:, unknown], targets=rel.targets, columns=rel.columns)
    np.testing.assert_allclose(cond.noise_covariance(), schur, atol=1e-12)
    for i, g in enumerate(unit_shift_gains(cond)):
        d = rel.J[:, i]
        assert g == pytest.approx(float(d @ np.linalg.pinv(schur, rcond=1e-12, hermitian=True) @ d),
                                  rel=1e-9)


def test_an_invertible_map_of_the_rows_leaks_the_same_and_a_selection_leaks_less():
    rel = _random(rows=6, noise=10, seed=3)
    R = np.random.default_rng(4).standard_normal((6, 6))
    np.testing.assert_allclose(unit_shift_gains(rel.combine(R)), unit_shift_gains(rel), rtol=1e-9)
    fewer = rel.combine(np.eye(6)[:3], label="first rows")
    assert fewer.label == "first rows"
    assert np.all(unit_shift_gains(fewer) <= unit_shift_gains(rel) * (1 + 1e-12))


def test_a_shift_outside_the_noise_range_leaks_everything():
    J = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    B = np.array([[1.0], [0.0], [1.0]])  # noise only along (1, 0, 1): target 1's column (0, 1, 1) leaves it
    rel = LinearGaussianRelease(J=J, B=B, targets=[0, 1], columns=[0, 1])
    g = unit_shift_gains(rel)
    assert g[0] == pytest.approx(1.0, rel=1e-12) and math.isinf(g[1])
    rows = audit_release(rel)
    assert math.isinf(rows[1].mu) and math.isinf(rows[1].epsilon) and rows[1].method == "support"


def test_the_cholesky_path_equals_the_svd_path():
    rel = _random(rows=6, targets=5, k=2, noise=12, seed=5)
    with_cov = LinearGaussianRelease(J=rel.J, B=lambda: rel.B, covariance=rel.B @ rel.B.T,
                                     targets=rel.targets, columns=rel.columns)
    s = LinearAuditSettings(sensitivity=0.7)
    fast = release_leakage(3, with_cov, np.arange(5), s)
    slow = release_leakage(3, with_cov, np.arange(5), s, min_rcond=1.0)  # forces the SVD of B
    plain = release_leakage(3, rel, np.arange(5), s)
    assert (fast.method, slow.method, plain.method) == ("cholesky", "svd", "svd")
    np.testing.assert_allclose(fast.mu, slow.mu, rtol=1e-10)
    np.testing.assert_array_equal(slow.mu, plain.mu)
    ref = {r.target: r.mu for r in audit_release(rel, s)}
    np.testing.assert_allclose(fast.mu, [ref[u] for u in fast.targets.tolist()], rtol=1e-10)


def test_mean_shift_and_columns_of():
    rel = _random(targets=3, k=2)
    s = np.array([0.5, -2.0])
    np.testing.assert_array_equal(rel.mean_shift(11, s), rel.J[:, [1, 4]] @ s)
    built = LinearGaussianRelease.from_columns(rel.J, rel.B, {12: [2, 5], 10: [0, 3], 11: [1, 4]})
    np.testing.assert_array_equal(built.targets, [10, 11, 12])
    np.testing.assert_array_equal(built.columns, rel.columns)


@pytest.mark.parametrize("make, field", [
    (lambda: LinearGaussianRelease(J=np.ones(3), B=np.ones((3, 1)), targets=[0], columns=[0]), "J"),
    (lambda: LinearGaussianRelease(J=np.ones((3, 2)), B=np.ones((2, 1)), targets=[0], columns=[0]), "B"),
    (lambda: LinearGaussianRelease(J=np.ones((3, 2)), B=np.ones((3, 1)), targets=[0, 1], columns=[0]),
     "columns"),
    (lambda: LinearGaussianRelease(J=np.ones((3, 2)), B=np.ones((3, 1)), targets=[0], columns=[2]),
     "columns"),
    (lambda: LinearGaussianRelease(J=np.ones((3, 2)), B=np.ones((3, 1)), targets=[0], columns=[0],
                                   covariance=np.eye(2)), "covariance"),
    (lambda: _random().columns_of(3), "target"),
    (lambda: _random().combine(np.ones((2, 3))), "R"),
    (lambda: unit_shift_gains(_random(k=2)), "release"),
    (lambda: audit_release(_random(), targets=[3]), "targets"),
])
def test_bad_releases_name_their_field(make, field):
    with pytest.raises(ConfigError) as err:
        make()
    assert err.value.field == field


class _EveryoneSeesAll:
    """A producer outside any protocol: every observer sees ``Y = x + sigma w`` of all agents but
    itself (its own coordinate known), so each target's ``mu = Delta / sigma``."""

    reach = 1_000

    def __init__(self, sigma: float) -> None:
        self.sigma = sigma

    def observer_leakage(self, network, v, dist, settings, min_rcond):
        m = network.m
        others = np.array([u for u in range(m) if u != v])
        rel = LinearGaussianRelease(J=np.eye(m)[others], B=self.sigma * np.eye(m)[others][:, others],
                                    covariance=self.sigma ** 2 * np.eye(m - 1), targets=others,
                                    columns=np.flatnonzero(np.arange(m) != v))
        return release_leakage(v, rel, dist[others], settings, min_rcond=min_rcond)

    def to_row(self):
        return {"sigma": self.sigma}


def test_the_all_pairs_run_takes_any_producer_of_releases(tmp_path):
    from dpgossip.privacy.allpairs_run import AllPairsSettings, read_all_pairs, run_all_pairs
    from dpgossip.topology import make_network

    network = make_network("path", agents=5)
    settings = AllPairsSettings(audit=LinearAuditSettings(sensitivity=0.5), chunk=2)
    run = run_all_pairs(network, _EveryoneSeesAll(2.0), tmp_path / "rows", settings)
    table = read_all_pairs(tmp_path / "rows")
    assert run.pairs == len(table) == 20
    np.testing.assert_allclose(table.columns["mu"], 0.25, rtol=1e-14)  # Delta / sigma
    np.testing.assert_array_equal(table.columns["hops"],
                                  np.abs(table.columns["observer"] - table.columns["target"]))
