"""capePCA (Imtiaz and Sarwate, Algorithm 2) on a star and its conventional and pooled baselines
(docs/cape.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpgossip.data.partition import PartitionedData
from dpgossip.errors import ConfigError
from dpgossip.protocols.cape.star import (
    CapeNoise,
    CapeParams,
    cape_noise,
    run_cape,
    run_conventional,
    run_pooled,
    second_moment_sensitivity,
    symmetric_gaussian,
    top_eigenvectors,
    triu_vector,
)


def _data(S: int = 4, rows: int = 100, d: int = 8, seed: int = 0) -> PartitionedData:
    """Equal sites; rows in the unit ball with a clear gap after the second eigenvalue."""
    rng = np.random.default_rng(seed)
    n = S * rows
    U = np.linalg.qr(rng.standard_normal((n, d)))[0]
    W = np.linalg.qr(rng.standard_normal((d, d)))[0]
    X = U @ np.diag([10.0, 8.0, 3.0, 2.5, 2.0, 1.5, 1.0, 0.5][:d]) @ W.T
    return PartitionedData(X=X / np.linalg.norm(X, axis=1).max(), sizes=(rows,) * S)


def _symmetric(M: np.ndarray) -> bool:
    return bool(np.array_equal(M, np.swapaxes(M, -1, -2)))


@pytest.mark.parametrize("S", [1, 2, 3, 5])
def test_every_noise_matrix_is_symmetric_and_E_sums_to_zero(S):
    data = _data(S=S, rows=20, d=5)
    r = run_cape(data, CapeParams(k=2, noise_multiplier=3.0), seed=11)
    for M in (r.noise.E, r.noise.F, r.noise.G, r.released, r.aggregate):
        assert _symmetric(M)
    tau = r.site_noise_std[0]
    # zero-sum up to rounding: a few ulps of the largest draw
    assert np.max(np.abs(r.noise.E.sum(axis=0))) <= 8 * S * np.finfo(float).eps * 6 * tau
    if S == 1:
        assert np.all(r.noise.E == 0) and np.all(r.noise.F == 0)
    # the aggregator's estimate is (1/S) sum_s (A_s + G_s): E cancels, F is removed
    A = np.stack([data.block(s).T @ data.block(s) / 20 for s in range(S)])
    np.testing.assert_allclose(r.aggregate, (A + r.noise.G).mean(axis=0), rtol=0, atol=1e-14)
    np.testing.assert_allclose(r.released, A + r.noise.E + r.noise.F + r.noise.G, rtol=0, atol=1e-15)


def test_entry_variances_and_cross_site_covariance_follow_eq_2():
    S, d, tau = 3, 40, 2.0
    noise = cape_noise(S, d, tau, seed=5)
    E, F, G = (triu_vector(M) for M in (noise.E, noise.F, noise.G))  # (S, 820) each
    m = E.shape[1]
    cov_e = E @ E.T / m  # mean zero known
    expected = tau**2 * (np.eye(S) - np.ones((S, S)) / S)
    np.testing.assert_allclose(cov_e, expected, atol=0.2 * tau**2)  # std error ~0.07 tau^2
    np.testing.assert_allclose(np.var(F, axis=1), (1 - 1 / S) * tau**2, rtol=0.15)
    np.testing.assert_allclose(np.var(G, axis=1), tau**2 / S, rtol=0.15)
    np.testing.assert_allclose(np.var(E + G, axis=1), tau**2, rtol=0.15)  # Imtiaz and Sarwate: Var(e_s + g_s)


def test_runs_are_reproducible_from_the_seed():
    data, p = _data(S=3, rows=30, d=6), CapeParams(k=2, noise_multiplier=2.0)
    for run in (run_cape, run_conventional, run_pooled):
        a, b = run(data, p, 42), run(data, p, np.random.SeedSequence(42))
        assert np.array_equal(a.released, b.released) and np.array_equal(a.components, b.components)
        assert not np.array_equal(a.released, run(data, p, 43).released)
        assert a.seed_entropy == 42
    r = run_cape(data, p, 42)
    replay = run_cape(data, p, 0, noise=r.noise)
    assert np.array_equal(replay.released, r.released)
    # the conventional baseline draws from the same site streams: G_s^conv = G_s * tau_s / (tau/sqrt(S))
    c = run_conventional(data, p, 42)
    np.testing.assert_allclose(c.noise.G, r.noise.G * math.sqrt(3), rtol=1e-15)


@pytest.mark.parametrize("S", [2, 3, 5])
def test_the_aggregate_has_the_pooled_noise_variance(S):
    """Imtiaz and Sarwate, Lemma 1: tau_g^2 / S = tau^2 / S^2 = tau_pool^2 with equal sites;
    conventional is S times."""
    data, p = _data(S=S, rows=40, d=6), CapeParams(k=2, noise_multiplier=4.0)
    cape, conv, pooled = run_cape(data, p, 1), run_conventional(data, p, 1), run_pooled(data, p, 1)
    tau = p.noise_std(40)
    assert cape.site_noise_std.tolist() == [tau] * S
    assert cape.aggregate_noise_std == pytest.approx(tau / S, rel=1e-15)
    assert pooled.aggregate_noise_std == pytest.approx(p.noise_std(40 * S), rel=1e-15)
    assert cape.aggregate_noise_std == pytest.approx(pooled.aggregate_noise_std, rel=1e-14)
    assert conv.aggregate_noise_std == pytest.approx(math.sqrt(S) * pooled.aggregate_noise_std, rel=1e-14)
    np.testing.assert_allclose(cape.target, pooled.target, atol=1e-15)
    # the realised aggregate noise is (1/S) sum_s G_s
    np.testing.assert_allclose(cape.aggregate_noise, cape.noise.G.mean(axis=0), atol=1e-15)


def _subspace_error(V: np.ndarray, U: np.ndarray) -> float:
    return float(np.linalg.norm(V @ V.T - U @ U.T))


def test_capepca_reaches_the_pooled_utility_and_beats_the_conventional_one():
    """Monte Carlo over 100 fixed seeds (each run is milliseconds): CAPE's mean subspace error is within
    10% of the pooled one (same noise law, so equal in expectation; observed within 1%) and the
    conventional one is at least 1.5 times larger (S = 5: sqrt(5) times the noise std; observed 2.3)."""
    data, p = _data(S=5, rows=100, d=8), CapeParams(k=2, noise_multiplier=2.0)
    U = top_eigenvectors(data.X.T @ data.X)[1][:, :2]
    err = {run.__name__: np.mean([_subspace_error(run(data, p, s).components, U) for s in range(100)])
           for run in (run_cape, run_conventional, run_pooled)}
    assert 0.05 < err["run_pooled"] < 1.0  # noisy enough to matter, far from the random-subspace level
    assert abs(err["run_cape"] / err["run_pooled"] - 1) < 0.1, err
    assert err["run_conventional"] > 1.5 * err["run_cape"], err


def test_without_noise_the_subspace_is_the_pooled_top_k():
    data = _data(S=4, rows=50, d=8)
    r = run_cape(data, CapeParams(k=3, noise_multiplier=0.0), 0)
    U = np.linalg.svd(data.X)[2][:3].T
    assert _subspace_error(r.components, U) < 1e-10
    assert np.all(np.diff(r.eigenvalues) <= 0)


def test_sensitivity_is_the_exact_row_replacement_supremum():
    N = 7
    assert second_moment_sensitivity(N) == pytest.approx(math.sqrt(2) / N)
    assert second_moment_sensitivity(N, "paper") == pytest.approx(1 / N)
    e = np.eye(4)
    C = (np.outer(e[0], e[0]) - np.outer(e[1], e[1])) / N
    assert np.linalg.norm(triu_vector(C)) == pytest.approx(math.sqrt(2) / N, rel=1e-15)
    rng = np.random.default_rng(3)
    for _ in range(2000):
        x, y = (v / max(1.0, np.linalg.norm(v)) for v in rng.standard_normal((2, 4)))
        C = (np.outer(x, x) - np.outer(y, y)) / N
        assert np.linalg.norm(triu_vector(C)) <= math.sqrt(2) / N * (1 + 1e-12)
        assert np.linalg.norm(triu_vector(np.outer(x, x) / N)) <= 1 / N * (1 + 1e-12)  # zero-out


def test_symmetric_gaussian_draws_the_upper_triangle_and_mirrors_it():
    M = symmetric_gaussian(np.random.default_rng(0), (2,), 3, 2.0)
    z = np.random.default_rng(0).standard_normal((2, 6)) * 2.0
    assert _symmetric(M)
    assert np.array_equal(triu_vector(M), z)


def _noise(S: int = 3, d: int = 4) -> dict[str, np.ndarray]:
    n = cape_noise(S, d, 1.0, 0)
    return {"E": n.E.copy(), "F": n.F.copy(), "G": n.G.copy()}


@pytest.mark.parametrize("name", ["E", "F", "G"])
def test_asymmetric_noise_is_refused_naming_the_matrix(name):
    arrays = _noise()
    arrays[name][1, 0, 2] += 0.5  # breaks (0, 2) vs (2, 0) of site 1 (and E's zero sum, checked after)
    with pytest.raises(ConfigError, match=rf"noise\.{name} must hold symmetric matrices.*"
                                          rf"noise\.{name}\[1\] with \|M\[0, 2\] - M\[2, 0\]\| = 0\.5"
                       ) as err:
        CapeNoise(**arrays)
    assert err.value.field == f"noise.{name}"


def test_bad_noise_is_refused():
    arrays = _noise()
    arrays["E"][0] += np.eye(4)
    with pytest.raises(ConfigError, match=r"noise\.E must sum to zero") as err:
        CapeNoise(**arrays)
    assert err.value.field == "noise.E"
    data, p = _data(S=3, rows=10, d=4), CapeParams(k=1, noise_multiplier=1.0)
    with pytest.raises(ConfigError, match="must be zero for a baseline") as err:
        run_conventional(data, p, 0, noise=CapeNoise(**_noise()))
    assert err.value.field == "noise"
    with pytest.raises(ConfigError, match=r"shape \(S, d, d\) = \(3, 4, 4\), got \(2, 4, 4\)"):
        run_cape(data, p, 0, noise=CapeNoise(**_noise(S=2)))
    with pytest.raises(ConfigError, match="noise must be a CapeNoise"):
        run_cape(data, p, 0, noise=np.zeros((3, 4, 4)))  # type: ignore[arg-type]
    # tiny rounding asymmetry is accepted and removed exactly
    arrays = _noise()
    arrays["G"][0, 0, 1] *= 1 + 1e-15
    assert _symmetric(CapeNoise(**arrays).G)


@pytest.mark.parametrize("kwargs, field", [
    ({"k": 0, "noise_multiplier": 1.0}, "k"),
    ({"k": 1, "noise_multiplier": -1.0}, "noise_multiplier"),
    ({"k": 1, "noise_multiplier": float("nan")}, "noise_multiplier"),
    ({"k": 1, "noise_multiplier": 1.0, "sensitivity": "frobenius"}, "sensitivity"),
])
def test_bad_params_name_the_field(kwargs, field):
    with pytest.raises(ConfigError) as err:
        CapeParams(**kwargs)
    assert err.value.field == field and str(err.value).startswith(field)


def test_k_larger_than_d_is_refused():
    with pytest.raises(ConfigError, match="params.k must be <= d = 4, got 5") as err:
        run_cape(_data(S=2, rows=5, d=4), CapeParams(k=5, noise_multiplier=1.0), 0)
    assert err.value.field == "params.k"
