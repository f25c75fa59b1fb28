"""capePCA's guarantee: Imtiaz and Sarwate's per-site statement and the aggregator's joint view
(docs/cape.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpgossip.data.partition import PartitionedData
from dpgossip.errors import ConfigError
from dpgossip.privacy.mechanism import gaussian_mechanism_delta
from dpgossip.protocols.cape.guarantee import (
    baseline_epsilon,
    calibrate_cape_noise,
    cape_guarantee,
    gaussian_epsilon,
    mahalanobis_sq,
    paper_epsilon,
    paper_noise_std,
    view_covariance,
    view_factor,
)
from dpgossip.protocols.cape.star import (
    CapeParams,
    cape_noise,
    second_moment_sensitivity,
    triu_vector,
)


def _dense_covariance(S: int, d: int, tau: float, with_f: bool) -> np.ndarray:
    """Covariance of the stacked upper triangles of all S releases (minus F when the viewer knows F),
    built from the construction: E = C W with C = I - J/S and W i.i.d. N(0, tau^2) per entry, F i.i.d.
    N(0, (1 - 1/S) tau^2), G i.i.d. N(0, tau^2/S); site-major order."""
    m = d * (d + 1) // 2
    C = np.eye(S) - np.ones((S, S)) / S
    site = tau**2 * C @ C.T + (tau**2 / S) * np.eye(S)
    if with_f:
        site += (1 - 1 / S) * tau**2 * np.eye(S)
    return np.kron(site, np.eye(m))


def _change(S: int, d: int, s: int, x: np.ndarray, y: np.ndarray, N: int) -> np.ndarray:
    """The stacked mean change when row x of site s becomes y."""
    m = d * (d + 1) // 2
    out = np.zeros(S * m)
    out[s * m:(s + 1) * m] = triu_vector((np.outer(y, y) - np.outer(x, x)) / N)
    return out


@pytest.mark.parametrize("S", [2, 3, 5])
def test_joint_view_factor_matches_a_dense_pseudo_inverse(S):
    d, N, tau = 3, 50, 0.07
    e = np.eye(d)
    Delta = second_moment_sensitivity(N)
    for view, with_f in (("aggregator", False), ("eavesdropper", True)):
        P = np.linalg.pinv(_dense_covariance(S, d, tau, with_f))
        for s in range(S):
            v = _change(S, d, s, e[0], e[1], N)  # the worst case: ||triu|| = sqrt(2)/N
            dense = float(v @ P @ v)
            assert dense == pytest.approx(mahalanobis_sq(S, Delta, tau, view), rel=1e-9, abs=0)
            assert dense / (Delta / tau) ** 2 == pytest.approx(view_factor(S, view), rel=1e-9)
    assert view_factor(S, "aggregator") == pytest.approx(2 * S / (S + 1), rel=1e-15)
    assert view_factor(S, "eavesdropper") == pytest.approx((S + 1) / (2 * S), rel=1e-15)
    # no other row change at any site does better than the closed form
    rng = np.random.default_rng(S)
    P = np.linalg.pinv(_dense_covariance(S, d, tau, False))
    bound = mahalanobis_sq(S, Delta, tau, "aggregator")
    for _ in range(300):
        x, y = (w / max(1.0, np.linalg.norm(w)) for w in rng.standard_normal((2, d)))
        v = _change(S, d, int(rng.integers(S)), x, y, N)
        assert float(v @ P @ v) <= bound * (1 + 1e-9)


@pytest.mark.parametrize("S", [2, 3, 5])
def test_view_covariance_is_the_dense_one_and_the_drawn_one(S):
    tau = 1.5
    for view, with_f in (("aggregator", False), ("eavesdropper", True)):
        np.testing.assert_allclose(np.kron(view_covariance(S, tau, view), np.eye(3)),
                                   _dense_covariance(S, 2, tau, with_f), rtol=0, atol=1e-14)
    # the protocol's draws have that covariance (Monte Carlo, fixed seed; std error ~0.03 tau^2)
    draws = [cape_noise(S, 2, tau, seed) for seed in range(800)]
    agg = np.concatenate([triu_vector(n.E + n.G) for n in draws], axis=1)  # (S, 2400)
    np.testing.assert_allclose(agg @ agg.T / agg.shape[1], view_covariance(S, tau, "aggregator"),
                               atol=0.15 * tau**2)


def test_the_marginal_guarantee_is_004s():
    """Imtiaz and Sarwate: tau_s = (1/(N_s eps)) sqrt(2 ln(1.25/delta)) makes site s's release (eps,
    delta)-DP with Delta_s = 1/N_s; Var(e_s + g_s) = Var(f_s + g_s) = tau_s^2."""
    N, S, delta = 100, 4, 1e-5
    for eps in (0.3, 0.5, 0.9):
        p = CapeParams(k=1, noise_multiplier=math.sqrt(2 * math.log(1.25 / delta)) / eps,
                       sensitivity="paper")
        tau = paper_noise_std(eps, delta, N)
        assert p.noise_std(N) == pytest.approx(tau, rel=1e-14)
        g = cape_guarantee((N,) * S, p, delta, adjacency="paper")
        assert g.noise_std == pytest.approx(tau, rel=1e-14)
        assert g.epsilon_paper == pytest.approx(eps, rel=1e-12)
        assert paper_epsilon(tau, delta, N) == pytest.approx(eps, rel=1e-12)
        assert view_covariance(S, tau, "site")[0, 0] == pytest.approx(tau**2, rel=1e-14)
        assert (1 - 1 / S) * tau**2 + tau**2 / S == pytest.approx(tau**2, rel=1e-15)  # Eq. (2)
        assert g.mu_site == pytest.approx(1 / (N * tau), rel=1e-14)
        # the classical calibration holds for eps < 1: the exact epsilon is below eps
        assert g.epsilon_site <= eps
        assert gaussian_mechanism_delta(eps, g.mu_site) <= delta
        # ... but not for the aggregator's joint view
        assert g.mu_aggregator ** 2 == pytest.approx(g.mu_site**2 * 2 * S / (S + 1), rel=1e-14)
        assert g.epsilon_aggregator > g.epsilon_site
    # The classical calibration's slack hides the joint factor at Imtiaz and Sarwate's own
    # sensitivity (eps < 1) ...
    assert g.epsilon_aggregator == pytest.approx(0.8655, abs=1e-4)
    # ... but not under row replacement (sqrt(2)/N): even eps = 0.1, S = 2 is broken jointly
    p = CapeParams(k=1, noise_multiplier=math.sqrt(2 * math.log(1.25 / delta)) / 0.1, sensitivity="paper")
    g = cape_guarantee((N, N), p, delta)
    assert g.epsilon_site < 0.1 < g.epsilon_aggregator
    assert g.epsilon_aggregator == pytest.approx(0.1040, abs=1e-4)
    # and an exact site-level calibration is always broken by the joint view
    for S in (2, 3, 5):
        p = CapeParams(k=1, noise_multiplier=calibrate_cape_noise(0.5, delta, S, view="site"))
        g = cape_guarantee((N,) * S, p, delta)
        assert g.epsilon_site == pytest.approx(0.5, rel=1e-6)
        assert gaussian_mechanism_delta(0.5, g.mu_aggregator) > 2 * delta


def test_guarantee_numbers():
    data = PartitionedData(X=np.zeros((12, 2)), sizes=(3, 4, 5))
    p = CapeParams(k=1, noise_multiplier=5.0)
    g = cape_guarantee(data, p, 1e-5)
    assert (g.sites, g.rows, g.factor) == (3, 3, 1.5)
    assert g.noise_std == pytest.approx(5 * math.sqrt(2) / 3)
    assert g.mu_site == pytest.approx(0.2) and g.mu_aggregator == pytest.approx(0.2 * math.sqrt(1.5))
    assert g.mu_eavesdropper == pytest.approx(0.2 * math.sqrt(2 / 3))
    assert g.epsilon_eavesdropper < g.epsilon_site < g.epsilon_aggregator
    assert g.epsilon_site == pytest.approx(baseline_epsilon(p, 1e-5), rel=1e-12)
    assert set(g.to_row()) >= {"epsilon_site", "epsilon_aggregator", "factor"}
    # S = 1: no correlated noise, every view is the site's
    assert cape_guarantee((7,), p, 1e-5).epsilon_aggregator == pytest.approx(g.epsilon_site)


@pytest.mark.parametrize("S", [2, 3, 5])
def test_calibrating_for_the_joint_view_meets_epsilon(S):
    eps, delta = 1.0, 1e-5
    sigma = calibrate_cape_noise(eps, delta, S)
    g = cape_guarantee((40,) * S, CapeParams(k=1, noise_multiplier=sigma), delta)
    assert g.epsilon_aggregator == pytest.approx(eps, rel=1e-6)
    assert g.epsilon_site < eps
    assert sigma / calibrate_cape_noise(eps, delta, S, view="site") == pytest.approx(
        math.sqrt(2 * S / (S + 1)), rel=1e-9)


def test_gaussian_epsilon_inverts_the_closed_form():
    for mu in (0.1, 0.7, 2.0):
        eps = gaussian_epsilon(mu, 1e-6)
        assert gaussian_mechanism_delta(eps, mu) == pytest.approx(1e-6, rel=1e-6)
    assert gaussian_epsilon(0.0, 1e-6) == 0.0


@pytest.mark.parametrize("call, field", [
    (lambda: view_factor(3, "server"), "view"),
    (lambda: view_factor(0), "sites"),
    (lambda: view_covariance(3, 0.0), "noise_std"),
    (lambda: cape_guarantee((5, 5), CapeParams(k=1, noise_multiplier=1.0), 1.5), "delta"),
    (lambda: cape_guarantee((5, 0), CapeParams(k=1, noise_multiplier=1.0), 0.1), "data_or_sizes"),
    (lambda: cape_guarantee((5,), CapeParams(k=1, noise_multiplier=0.0), 0.1), "params.noise_multiplier"),
    (lambda: cape_guarantee((5,), "p", 0.1), "params"),
    (lambda: cape_guarantee((5,), CapeParams(k=1, noise_multiplier=1.0), 0.1, adjacency="x"), "adjacency"),
])
def test_bad_input_names_the_parameter(call, field):
    with pytest.raises(ConfigError) as err:
        call()
    assert err.value.field == field
