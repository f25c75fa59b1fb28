"""GaussianPair against independent oracles: closed forms, dense linear algebra, quadrature, MC."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.linalg as sla
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import integrate, optimize, special, stats

from dpgossip.errors import ConfigError
from dpgossip.privacy.gaussian_pair import GaussianPair


def _spd(rng: np.random.Generator, k: int, floor: float = 0.3) -> np.ndarray:
    A = rng.standard_normal((k, k))
    return A @ A.T / k + floor * np.eye(k)


def _dense_renyi(m0, S0, m1, S1, a: float) -> float:
    """Eq. (33)-(34) with explicit inverse and determinants (numpy.linalg)."""
    Sa = a * S1 + (1 - a) * S0
    if np.min(np.linalg.eigvalsh(Sa)) <= 0:
        return math.inf
    dm = m0 - m1
    quad = dm @ np.linalg.inv(Sa) @ dm
    logdet = math.log(np.linalg.det(Sa) / (np.linalg.det(S0) ** (1 - a) * np.linalg.det(S1) ** a))
    return a / 2 * quad - logdet / (2 * (a - 1))


def _dense_kl(m0, S0, m1, S1) -> float:
    k = len(m0)
    S1i = np.linalg.inv(S1)
    dm = m0 - m1
    return 0.5 * (np.trace(S1i @ S0) + dm @ S1i @ dm - k
                  + math.log(np.linalg.det(S1) / np.linalg.det(S0)))


def _balle_wang(D: float, eps: float) -> float:
    return special.ndtr(D / 2 - eps / D) - math.exp(eps) * special.ndtr(-D / 2 - eps / D)


def _quad(f, lo, hi) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        return integrate.quad(f, lo, hi, epsabs=1e-14, epsrel=1e-12, limit=500)[0]


# ----------------------------------------------------------------------------- closed forms
@pytest.fixture
def equal_cov_pair():
    rng = np.random.default_rng(7)
    S = _spd(rng, 4)
    m0 = rng.standard_normal(4)
    m1 = m0 + 0.6 * rng.standard_normal(4)
    dm = m0 - m1
    D = math.sqrt(dm @ np.linalg.solve(S, dm))
    return GaussianPair(m0, S, m1, S), D


def test_equal_covariances_renyi_is_gaussian_mechanism(equal_cov_pair):
    pair, D = equal_cov_pair
    for a in (1.01, 1.5, 2.0, 7.0, 100.0):
        assert pair.renyi(a) == pytest.approx(a * D * D / 2, rel=1e-12)
        assert pair.renyi(a, "QP") == pytest.approx(a * D * D / 2, rel=1e-12)
    assert pair.a_max() == math.inf and pair.a_max("QP") == math.inf
    assert pair.kl() == pytest.approx(D * D / 2, rel=1e-12)


def test_equal_covariances_exact_delta_is_balle_wang(equal_cov_pair):
    pair, D = equal_cov_pair
    for eps in (0.0, 0.05, 0.5, 1.0, 2.0, 4.0, 8.0):
        bw = _balle_wang(D, eps)
        assert abs(pair.delta(eps) - bw) < 1e-9
        assert abs(pair.hockey_stick(eps, "QP") - bw) < 1e-9  # symmetric for equal covariances


def test_equal_covariances_epsilon_inverts_balle_wang(equal_cov_pair):
    pair, D = equal_cov_pair
    for delta in (1e-2, 1e-5, 1e-9):
        eps = pair.epsilon(delta)
        root = optimize.brentq(lambda e, t=delta: _balle_wang(D, e) - t, 0.0, 100.0, xtol=1e-14)
        assert eps == pytest.approx(root, rel=1e-8)
    assert pair.epsilon(0.9) == 0.0  # delta(0) = TV distance < 0.9


# ----------------------------------------------------------------------------- 1-D variance change
S0_1D, S1_1D = 1.3, 0.6  # P = N(0, 1.3), Q = N(0, 0.6)


def _logpdf(x, v):
    return -x * x / (2 * v) - 0.5 * math.log(2 * math.pi * v)


def _pdf(x, v):
    return math.exp(_logpdf(x, v))


def test_one_dimensional_variance_change_renyi_matches_quadrature():
    pair = GaussianPair([0.0], [[S0_1D]], [0.0], [[S1_1D]])
    a_max = 1 / (1 - S1_1D / S0_1D)  # lam = S1/S0 < 1
    assert pair.a_max() == pytest.approx(a_max, rel=1e-14)
    for a in (1.2, 1.5, 1.8):
        integral = _quad(lambda x, a=a: math.exp(a * _logpdf(x, S0_1D)
                                                 + (1 - a) * _logpdf(x, S1_1D)), -60, 60)
        assert pair.renyi(a) == pytest.approx(math.log(integral) / (a - 1), rel=1e-10)
        integral = _quad(lambda x, a=a: math.exp(a * _logpdf(x, S1_1D)
                                                 + (1 - a) * _logpdf(x, S0_1D)), -60, 60)
        assert pair.renyi(a, "QP") == pytest.approx(math.log(integral) / (a - 1), rel=1e-10)
    assert pair.renyi(a_max * 1.001) == math.inf


@pytest.mark.parametrize("mu0", [0.0, 0.4])
def test_one_dimensional_exact_tails_match_density_quadrature(mu0):
    # L(y) = ln p(y) - ln q(y) = A y^2 + B y + C; {L > eps} is an interval or its complement
    pair = GaussianPair([mu0], [[S0_1D]], [0.0], [[S1_1D]])
    A = -1 / (2 * S0_1D) + 1 / (2 * S1_1D)
    B = mu0 / S0_1D
    C = -mu0**2 / (2 * S0_1D) - 0.5 * math.log(S0_1D / S1_1D)

    def region_mass(v, mean, eps, sign):
        """Integral of the N(mean, v) density over {sign * (L - sign*eps) > 0} by quadrature."""
        coef = [sign * A, sign * B, sign * C - eps]
        roots = sorted(r.real for r in np.roots(coef) if abs(r.imag) < 1e-12)
        pdf = lambda y: _pdf(y - mean, v)  # noqa: E731
        edges = [-80.0, *roots, 80.0]
        total = 0.0
        for lo, hi in zip(edges[:-1], edges[1:], strict=True):
            mid = 0.5 * (lo + hi)
            if np.polyval(coef, mid) > 0:
                total += _quad(pdf, lo, hi)
        return total

    for eps in (0.0, 0.2, 0.8, 2.0):
        up = region_mass(S0_1D, mu0, eps, 1)      # Pr_P(L > eps)
        low = region_mass(S0_1D, mu0, eps, -1)    # Pr_P(-L > eps)
        up_q = region_mass(S1_1D, 0.0, eps, 1)    # Pr_Q(L > eps)
        assert pair.loss_law("PQ").sf(eps) == pytest.approx(up, abs=1e-11)
        assert pair.pdp_tail(eps) == pytest.approx(up + low, abs=1e-11)
        assert pair.hockey_stick(eps) == pytest.approx(up - math.exp(eps) * up_q, abs=1e-11)


@pytest.mark.parametrize("n", [1, 2, 3, 6])
@pytest.mark.parametrize("lam", [0.5, 0.9, 1.3, 3.0])
def test_equal_eigenvalues_without_mean_shift_match_scipy_chi2(n, lam):
    # P = N(0, I_n), Q = N(0, lam I_n): L = (n/2) ln lam + (1 - lam)/(2 lam) X, X ~ chi2_n under P
    # and lam X ~ ... under Q, so H(eps) = Pr(lam-side event) differences of chi2 tails.
    pair = GaussianPair(np.zeros(n), np.eye(n), np.zeros(n), lam * np.eye(n))
    c, alpha = n / 2 * math.log(lam), (1 - lam) / (2 * lam)
    chi2 = stats.chi2(n)
    for eps in (0.0, 0.5, 2.0):
        y0 = (eps - c) / alpha  # L > eps  <=>  X > y0 (alpha > 0) or X < y0 (alpha < 0)
        if alpha > 0:
            up_p, up_q = chi2.sf(max(y0, 0.0)), chi2.sf(max(y0, 0.0) / lam)
        else:
            up_p, up_q = (chi2.cdf(y0), chi2.cdf(y0 / lam)) if y0 > 0 else (0.0, 0.0)
        assert pair.loss_law().sf(eps) == pytest.approx(up_p, abs=1e-11)
        assert pair.hockey_stick(eps) == pytest.approx(up_p - math.exp(eps) * up_q, abs=1e-11)


# ----------------------------------------------------------------------------- general pairs
def test_kl_is_the_order_one_limit_and_matches_closed_form():
    rng = np.random.default_rng(3)
    for k in (1, 2, 4, 6):
        m0, m1, S0, S1 = rng.standard_normal(k), rng.standard_normal(k), _spd(rng, k), _spd(rng, k)
        pair = GaussianPair(m0, S0, m1, S1)
        kl = _dense_kl(m0, S0, m1, S1)
        assert pair.kl() == pytest.approx(kl, rel=1e-10)
        assert pair.kl("QP") == pytest.approx(_dense_kl(m1, S1, m0, S0), rel=1e-10)
        for h in (1e-4, 1e-6, 1e-8):
            assert pair.renyi(1 + h) == pytest.approx(kl, rel=10 * h + 1e-9)


def test_two_dimensional_renyi_matches_dense_formula():
    rng = np.random.default_rng(11)
    for _ in range(10):
        m0, m1, S0, S1 = rng.standard_normal(2), rng.standard_normal(2), _spd(rng, 2), _spd(rng, 2)
        pair = GaussianPair(m0, S0, m1, S1)
        for a in (1.05, 1.3, 1.7, 2.5, 4.0):
            for d, args in (("PQ", (m0, S0, m1, S1)), ("QP", (m1, S1, m0, S0))):
                expected = _dense_renyi(*args, a)
                got = pair.renyi(a, d)
                if math.isinf(expected):
                    assert math.isinf(got) and pair.renyi_reason(a, d) is not None
                else:
                    assert got == pytest.approx(expected, rel=1e-9)
                    assert pair.renyi_reason(a, d) is None


def test_reverse_renyi_is_the_mgf_at_negative_order():
    # D_a(Q||P) = ln E_P[(q/p)^a] / (a - 1) = K_P(-a) / (a - 1)
    rng = np.random.default_rng(5)
    m0, m1, S0, S1 = rng.standard_normal(3), rng.standard_normal(3), _spd(rng, 3), _spd(rng, 3)
    pair = GaussianPair(m0, S0, m1, S1)
    for a in np.linspace(1.05, 0.95 * min(pair.a_max("QP"), 6.0), 6):
        assert pair.renyi(a, "QP") == pytest.approx(pair.log_mgf(-a) / (a - 1), rel=1e-10)


def test_from_whitened_agrees_with_scipy_generalised_eigh():
    rng = np.random.default_rng(2)
    k = 5
    m0, m1, S0, S1 = rng.standard_normal(k), rng.standard_normal(k), _spd(rng, k), _spd(rng, k)
    lam, V = sla.eigh(S1, S0)  # V^T S0 V = I, V^T S1 V = diag(lam)
    other = GaussianPair.from_whitened(lam, V.T @ (m0 - m1))
    pair = GaussianPair(m0, S0, m1, S1)
    np.testing.assert_allclose(np.sort(pair.eigenvalues), np.sort(lam), rtol=1e-10)
    for a in (1.1, 1.5, 3.0):
        for d in ("PQ", "QP"):
            assert pair.renyi(a, d) == pytest.approx(other.renyi(a, d), rel=1e-10)
    for eps in (0.3, 1.5):
        assert pair.delta(eps) == pytest.approx(other.delta(eps), abs=1e-10)
        assert pair.pdp_tail(eps, "QP") == pytest.approx(other.pdp_tail(eps, "QP"), abs=1e-10)


def test_low_rank_update_path_agrees_with_dense_eigendecomposition():
    # k = 80 with a rank-2 change: the constructor takes the low-rank path (range finder)
    rng = np.random.default_rng(4)
    k = 80
    S0 = _spd(rng, k)
    u, v = 0.3 * rng.standard_normal(k), rng.standard_normal(k)
    w = S0 @ v  # S0 - t w w^T is PSD iff t v^T S0 v <= 1
    S1 = S0 + np.outer(u, u) - 0.5 / (v @ S0 @ v) * np.outer(w, w)
    S1 = 0.5 * (S1 + S1.T)
    m0, m1 = np.zeros(k), 0.05 * rng.standard_normal(k)
    pair = GaussianPair(m0, S0, m1, S1)
    lam, V = sla.eigh(S1, S0)
    assert pair.eigenvalues.size == 2
    nontrivial = lam[np.abs(lam - 1) > 1e-8]
    np.testing.assert_allclose(np.sort(pair.eigenvalues), np.sort(nontrivial), rtol=1e-9)
    dense = GaussianPair.from_whitened(lam, V.T @ (m0 - m1), unit_tol=1e-8)
    for a in (1.2, 2.0):
        assert pair.renyi(a) == pytest.approx(dense.renyi(a), rel=1e-9)
    assert pair.delta(1.0) == pytest.approx(dense.delta(1.0), abs=1e-10)


def test_rank_deficient_equal_supports_reduce_exactly():
    # S_i = G diag(d_i) G^T with G (4 x 2) of full column rank: the pair is the image of a 2-D pair
    # under the injective map c -> G c, which changes no divergence
    rng = np.random.default_rng(9)
    G = rng.standard_normal((4, 2))
    d0, d1, c0 = np.array([1.0, 2.0]), np.array([1.5, 1.4]), np.array([0.3, -0.2])
    pair = GaussianPair(G @ c0, G @ np.diag(d0) @ G.T, np.zeros(4), G @ np.diag(d1) @ G.T)
    small = GaussianPair(c0, np.diag(d0), np.zeros(2), np.diag(d1))
    assert pair.support_mismatch is None
    for a in (1.2, 2.0, 2.9):  # a_max(QP) = 1/(1 - 1/1.5) = 3
        assert pair.renyi(a) == pytest.approx(_dense_renyi(c0, np.diag(d0), np.zeros(2),
                                                           np.diag(d1), a), rel=1e-9)
        assert pair.renyi(a, "QP") == pytest.approx(small.renyi(a, "QP"), rel=1e-9)
    assert pair.delta(0.5) == pytest.approx(small.delta(0.5), abs=1e-10)


def test_exact_tail_matches_monte_carlo_in_three_dimensions():
    rng = np.random.default_rng(12)
    m0, m1 = np.array([0.2, -0.1, 0.3]), np.zeros(3)
    S0, S1 = _spd(rng, 3, 0.5), _spd(rng, 3, 0.5)
    pair = GaussianPair(m0, S0, m1, S1)
    n = 2_000_000
    P, Q = stats.multivariate_normal(m0, S0), stats.multivariate_normal(m1, S1)
    y = P.rvs(size=n, random_state=rng)
    loss = P.logpdf(y) - Q.logpdf(y)
    for eps in (0.1, 0.5, 1.0):
        for got, hits in ((pair.loss_law().sf(eps), loss > eps),
                          (pair.pdp_tail(eps), np.abs(loss) > eps)):
            p_hat = hits.mean()
            se = math.sqrt(max(p_hat * (1 - p_hat), 1e-12) / n)
            assert abs(got - p_hat) < 5 * se


def test_hockey_stick_equals_difference_of_tails():
    # E_P(1 - e^{eps - L})_+ (one integral under P) vs Pr_P(L > eps) - e^eps Pr_Q(L > eps), with
    # Pr_Q(L > eps) from the law of ln q/p under Q (different integrals)
    rng = np.random.default_rng(8)
    for k in (2, 3):
        m0, m1, S0, S1 = rng.standard_normal(k), rng.standard_normal(k), _spd(rng, k), _spd(rng, k)
        pair = GaussianPair(m0, S0, m1, S1)
        for eps in (0.0, 0.7, 2.0):
            tails = pair.loss_law("PQ").sf(eps) - math.exp(eps) * pair.loss_law("QP").cdf(-eps)
            assert pair.hockey_stick(eps) == pytest.approx(tails, abs=1e-10)


# ----------------------------------------------------------------------------- supports
@pytest.mark.parametrize("m0, S0, S1, kind", [
    ([0.0, 0.0], np.diag([1.0, 0.0]), np.eye(2), "cov1 has variance"),
    ([0.0, 0.0], np.eye(2), np.diag([1.0, 0.0]), "cov0 has variance"),
    ([0.0, 0.3], np.diag([1.0, 0.0]), np.diag([2.0, 0.0]), "mean0 - mean1"),
])
def test_different_supports_are_infinite_with_the_direction(m0, S0, S1, kind):
    pair = GaussianPair(np.array(m0), S0, np.zeros(2), S1)
    mismatch = pair.support_mismatch
    assert mismatch is not None
    np.testing.assert_allclose(np.abs(mismatch.direction), [0.0, 1.0], atol=1e-12)
    for d in ("PQ", "QP"):
        for a in (1.001, 2.0, 50.0):
            assert pair.renyi(a, d) == math.inf
            reason = pair.renyi_reason(a, d)
            assert "supports differ" in reason and kind in reason and "direction" in reason
        assert pair.kl(d) == math.inf and pair.a_max(d) == 1.0
        assert pair.pdp_tail(0.5, d) == 1.0 and pair.hockey_stick(0.5, d) == 1.0
    for method in ("exact", "rdp", "chernoff"):
        assert pair.delta(3.0, method) == 1.0
        assert pair.epsilon(1e-3, method) == math.inf
    with pytest.raises(ConfigError, match="infinite"):
        pair.loss_law()


def test_identical_distributions_have_zero_loss():
    rng = np.random.default_rng(1)
    S, m = _spd(rng, 3), rng.standard_normal(3)
    pair = GaussianPair(m, S, m, S)
    assert pair.eigenvalues.size == 0 and pair.whitened_mean[1] == 0.0
    assert pair.renyi(5.0) == 0.0 and pair.kl() == 0.0
    for eps in (0.0, 0.5):
        assert pair.delta(eps) == 0.0 and pair.delta(eps, "rdp") == 0.0
        assert pair.pdp_tail(eps) == 0.0
    assert pair.epsilon(1e-6) == 0.0 and pair.epsilon(1e-6, "rdp") == 0.0


def test_from_whitened_merges_unit_eigenvalues_into_one_gaussian_term():
    # lam = 1 +- 1e-14 with mean shifts 0.3, 0.4 is the Gaussian mechanism with D = 0.5
    pair = GaussianPair.from_whitened([1 + 1e-14, 1 - 1e-14, 0.5], [0.3, 0.4, 0.0])
    np.testing.assert_allclose(pair.eigenvalues, [0.5])
    assert pair.whitened_mean[1] == pytest.approx(0.5, rel=1e-14)
    only = GaussianPair.from_whitened([0.5], [0.0])
    mech = GaussianPair.from_whitened([1.0], [0.5])
    for a in (1.3, 1.9):  # divergences of product measures add
        assert pair.renyi(a) == pytest.approx(only.renyi(a) + mech.renyi(a), rel=1e-12)
        assert mech.renyi(a) == pytest.approx(a * 0.25 / 2, rel=1e-12)


def test_from_whitened_zero_eigenvalue_is_a_support_mismatch():
    pair = GaussianPair.from_whitened([1.0, 0.0], [0.0, 0.0])
    assert pair.support_mismatch is not None and pair.renyi(2.0) == math.inf


def test_order_above_a_max_is_infinite_with_reason():
    pair = GaussianPair([0.0, 0.0], np.eye(2), [0.0, 0.0], np.diag([0.5, 3.0]))
    assert pair.a_max() == pytest.approx(2.0)          # 1 / (1 - 0.5)
    assert pair.a_max("QP") == pytest.approx(1.5)      # 1 / (1 - 1/3)
    assert pair.renyi(2.5) == math.inf
    assert "exceeds a_max=2" in pair.renyi_reason(2.5)
    assert pair.renyi(1.99) < math.inf and pair.renyi_reason(1.99) is None
    assert pair.renyi(1.6, "QP") == math.inf and "a_max=1.5" in pair.renyi_reason(1.6, "QP")


def test_paper_projection_is_a_new_smaller_pair_and_never_increases_divergence():
    rng = np.random.default_rng(6)
    m0, m1, S0, S1 = rng.standard_normal(4), rng.standard_normal(4), _spd(rng, 4), _spd(rng, 4)
    pair = GaussianPair(m0, S0, m1, S1)
    proj = pair.paper_projection(2)
    assert isinstance(proj, GaussianPair) and proj is not pair and proj.cov0.shape == (2, 2)
    _, E = np.linalg.eigh(S0)
    V = E[:, [3, 2]]  # top-2 eigenvectors of cov0
    assert proj.renyi(1.5) == pytest.approx(_dense_renyi(V.T @ m0, V.T @ S0 @ V, V.T @ m1,
                                                         V.T @ S1 @ V, 1.5), rel=1e-9)
    for a in (1.1, 1.4):  # data processing: a projection cannot increase the divergence
        assert proj.renyi(a) <= pair.renyi(a) * (1 + 1e-12)
    with pytest.raises(ConfigError, match="r must be"):
        pair.paper_projection(5)


# ----------------------------------------------------------------------------- validation
@pytest.mark.parametrize("args, match", [
    (([0.0, 0.0], [[1.0, 0.5], [0.0, 1.0]], [0.0, 0.0], np.eye(2)), "symmetric"),
    (([0.0, 0.0], -np.eye(2), [0.0, 0.0], np.eye(2)), "positive semi-definite"),
    (([0.0, 0.0], np.eye(2), [0.0, 0.0], [[1.0, 2.0], [2.0, 1.0]]), "smallest eigenvalue -1"),
    (([0.0, 0.0], np.eye(3), [0.0, 0.0], np.eye(3)), "2 x 2"),
    (([0.0, 0.0], np.eye(2), [0.0], np.eye(2)), "length 2"),
    (([0.0, np.nan], np.eye(2), [0.0, 0.0], np.eye(2)), "finite"),
])
def test_bad_constructor_inputs_raise_config_error(args, match):
    with pytest.raises(ConfigError, match=match):
        GaussianPair(*args)


def test_bad_call_arguments_raise_config_error_with_the_value():
    pair = GaussianPair([0.0], [[1.0]], [0.5], [[1.0]])
    for bad in (1.0, 0.5, -2, math.inf, math.nan):
        with pytest.raises(ConfigError, match=f"got {bad!r}"):
            pair.renyi(bad)
    with pytest.raises(ConfigError, match="got -0.1"):
        pair.delta(-0.1)
    with pytest.raises(ConfigError, match="got -1"):
        pair.pdp_tail(-1)
    for bad in (0.0, 1.0, 1.5, -1e-3):
        with pytest.raises(ConfigError, match=f"got {bad!r}"):
            pair.epsilon(bad)
    with pytest.raises(ConfigError, match="did you mean 'exact'"):
        pair.delta(1.0, method="exakt")
    with pytest.raises(ConfigError, match="'QP'"):
        pair.renyi(2.0, direction="PQQ")
    with pytest.raises(ConfigError, match="lam must be finite"):
        GaussianPair.from_whitened([-1.0], [0.0])


# ----------------------------------------------------------------------------- random instances
@st.composite
def pairs(draw):
    k = draw(st.integers(1, 5))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    scale = draw(st.sampled_from([0.0, 0.05, 0.3, 1.0, 3.0]))
    m0 = rng.standard_normal(k) * scale
    m1 = rng.standard_normal(k) * scale
    S0 = _spd(rng, k, 0.2)
    change = draw(st.sampled_from([0.0, 0.1, 0.5, -1.0]))  # -1: an independent covariance
    if change < 0:
        S1 = _spd(rng, k, 0.2)
    else:
        S1 = S0 + change * (_spd(rng, k, 0.0) - _spd(rng, k, 0.0))
        if np.min(np.linalg.eigvalsh(S1)) < 0.05:
            S1 = S1 + (0.05 - np.min(np.linalg.eigvalsh(S1))) * np.eye(k)
    return GaussianPair(m0, S0, m1, 0.5 * (S1 + S1.T))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pairs(), st.data())
def test_renyi_is_nondecreasing_in_the_order(pair, data):
    for d in ("PQ", "QP"):
        top = min(pair.a_max(d), 50.0)
        orders = np.sort(data.draw(st.lists(st.floats(1.0001, 0.999 * top), min_size=2,
                                            max_size=6)))
        values = [pair.renyi(float(a), d) for a in orders]
        assert all(v2 >= v1 - 1e-12 * max(1.0, abs(v1)) for v1, v2 in zip(values, values[1:],
                                                                             strict=False))
        assert values[0] >= pair.kl(d) - 1e-12 * max(1.0, pair.kl(d))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pairs(), st.floats(0.0, 4.0))
def test_exact_values_never_exceed_their_bounds(pair, eps):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # edge-of-range notes of the bounds
        exact = pair.delta(eps)
        assert exact <= pair.delta(eps, "rdp") + 1e-9
        assert exact <= pair.delta(eps, "chernoff") + 1e-9
        for d in ("PQ", "QP"):
            up, low = pair.chernoff(eps, d)
            assert pair.loss_law(d).sf(eps) <= up + 1e-9
            assert pair.pdp_tail(eps, d) <= up + low + 1e-9
            assert pair.hockey_stick(eps, d) <= pair.pdp_tail(eps, d) + 1e-9


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pairs(), st.sampled_from([1e-2, 1e-4, 1e-6]))
def test_epsilon_inverts_delta(pair, delta):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for method in ("exact", "rdp"):
            eps = pair.epsilon(delta, method)
            if eps == 0.0:
                assert pair.delta(0.0, method) <= delta * (1 + 1e-6)
                continue
            assert pair.delta(eps, method) == pytest.approx(delta, rel=1e-5)
            assert pair.delta(eps * (1 - 1e-4), method) >= delta * (1 - 1e-6)


def test_a_rounding_residue_of_a_zero_eigenvalue_is_a_support_mismatch():
    # a zero generalised eigenvalue computed as 1e-17 (a rank-deficient message covariance) used to
    # become an infinite loss-law coefficient and a crash; it is mutually singular: delta 1, epsilon inf
    for lam, kind in (([1e-17, 0.5], "cov0 outside cov1"), ([2.0, 1e17], "cov1 outside cov0")):
        pair = GaussianPair.from_whitened(lam, [0.3, 0.0])
        assert pair.support_mismatch is not None and pair.support_mismatch.kind == kind
        for method in ("exact", "rdp", "chernoff"):
            assert pair.delta(5.0, method) == 1.0
            assert pair.epsilon(1e-5, method) == math.inf
    # just inside the thresholds the pair stays finite and ordinary
    pair = GaussianPair.from_whitened([1e-9, 0.5], [0.3, 0.0])
    assert pair.support_mismatch is None and 0 < pair.delta(5.0, "exact") < 1


def test_fewer_rows_than_columns_audits_to_infinite_epsilon_not_a_crash():
    from dpgossip.data import load_dataset
    from dpgossip.protocols.ddppm.audit import audit_pairs
    from dpgossip.protocols.ddppm.params import NoiseSchedule, resolve_params
    from dpgossip.topology import make_network

    net = make_network("paper-ring4")
    data = load_dataset("synthetic", agents=4, rng=np.random.default_rng(0),
                        synthetic={"n": 8, "d": 3, "spectrum": [1.0, 0.5, 0.25]})
    params = resolve_params(data, net, iterations=2, consensus_steps=1,
                            noise=NoiseSchedule(kind="constant", scale=1.0))
    audit = audit_pairs(data, net, params, delta=1e-5, epsilons=(5,), search="quick",
                        methods=("rdp",))
    assert audit.worst("rdp").epsilon["rdp"] == math.inf
