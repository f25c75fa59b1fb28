"""Exact law of generalised chi-square variables (Imhof inversion) against independent oracles.

Oracles: scipy.stats chi2 / ncx2 (equal weights), one-dimensional quadrature conditioning on one
variable with a scipy.stats inner probability, the normal cdf, and exponential tilting.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import integrate, special, stats

from dpgossip.errors import ConfigError
from dpgossip.privacy import plrv
from dpgossip.privacy.plrv import QuadraticFormLaw, WhitenedPair, privacy_loss_law

TOL = 1e-10


def _quad(f, lo=-40.0, hi=40.0, points=None) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        return integrate.quad(f, lo, hi, epsabs=1e-15, epsrel=1e-13, limit=2000, points=points)[0]


def _one_term_sf_oracle(a: float, b: float, c0: float) -> float:
    """Pr(a Z^2 + b Z + c0 > 0) = Pr(a (Z + h)^2 > -m) from scipy's noncentral chi-square."""
    h = b / (2 * a)
    m = c0 - a * h * h
    if a > 0:
        return float(stats.ncx2.sf(-m / a, 1, h * h)) if -m / a > 0 else 1.0
    return float(stats.ncx2.cdf(m / -a, 1, h * h)) if m / -a > 0 else 0.0


@pytest.mark.parametrize("n, w, shift", [(2, 0.8, 0.0), (3, -1.5, 0.0), (4, 0.05, 1.2),
                                         (5, -0.3, 2.0), (2, 6.0, 0.4), (3, 0.02, 0.0)])
def test_equal_weights_match_scipy_chi2_and_ncx2(n, w, shift):
    # X = m + w sum_j (Z_j + h)^2 = m + w chi'^2_n(n h^2): alpha = w, beta = 2 w h, c = m + n w h^2
    m, nc = -0.7, n * shift**2
    law = QuadraticFormLaw(np.full(n, w), np.full(n, 2 * w * shift), 0.0, m + w * nc)
    dist = stats.ncx2(n, nc) if nc > 0 else stats.chi2(n)
    for q in (1e-4, 0.05, 0.5, 0.95, 0.9999):
        y = dist.ppf(q)
        x = m + w * y
        exact = dist.sf(y) if w > 0 else dist.cdf(y)
        tv = law.tail(x)
        assert abs(tv.sf - exact) < TOL
        assert abs(tv.cdf - (1 - exact)) < TOL
        assert tv.error < 1e-11


@pytest.mark.parametrize("a, b, s, c", [(0.7, 0.3, 0.5, 0.1), (-0.4, 1.2, 0.05, -0.3),
                                        (3.0, -0.2, 2.0, 1.0), (-2e-3, 0.8, 0.3, 0.0)])
def test_one_term_plus_gaussian_matches_conditional_quadrature(a, b, s, c):
    law = QuadraticFormLaw([a], [b], s, c)
    for x in (law.mean - 2 * math.sqrt(law.variance), law.mean, law.mean + 3 * math.sqrt(
            law.variance)):
        # condition on the Gaussian part W: Pr(a Z^2 + b Z + c + s W - x > 0 | W)
        w0 = (b * b / (4 * a) - c + x) / s  # where the inner discriminant vanishes (a kink)
        oracle = _quad(lambda w, x=x: math.exp(-w * w / 2) / math.sqrt(2 * math.pi)
                       * _one_term_sf_oracle(a, b, c + s * w - x), points=[w0])
        assert abs(law.sf(x) - oracle) < TOL


@pytest.mark.parametrize("alpha, beta", [([0.5, -0.3], [0.2, 0.0]), ([10.07, 6e-4], [0.0, 0.0]),
                                         ([-1.3, 0.9], [0.4, -1.1]), ([0.05, 2.0], [1.0, 0.3])])
def test_two_terms_match_conditional_quadrature(alpha, beta):
    law = QuadraticFormLaw(alpha, beta, 0.0, 0.2)
    i, j = np.argsort(np.abs(alpha))  # condition on the smaller weight: smooth outer integrand
    for x in (law.mean - math.sqrt(law.variance), law.mean + 0.3, law.mean + 4 * math.sqrt(
            law.variance)):
        oracle = _quad(lambda z, x=x: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)
                       * _one_term_sf_oracle(alpha[j], beta[j],
                                             alpha[i] * z * z + beta[i] * z + 0.2 - x))
        assert abs(law.sf(x) - oracle) < TOL


@pytest.mark.parametrize("a, b, c0", [(0.8, 0.3, -0.5), (-0.3, 1.0, 0.2), (2.5, -1.0, 1.0),
                                      (0.01, 0.1, -0.02), (-0.45, 0.0, 0.3)])
def test_imhof_integral_matches_closed_forms_in_one_dimension(a, b, c0):
    # force the inversion integral (tail and hockey kernels) where closed forms exist
    alpha, beta = np.array([a]), np.array([b])
    for shift in (-1.0, 0.0, 0.7, 3.0):
        d = c0 - shift
        integral, err = plrv._inversion_integral(alpha, beta, 0.0, d, "tail")
        assert abs(0.5 + integral / math.pi - _one_term_sf_oracle(a, b, d)) < TOL
        integral, err = plrv._inversion_integral(alpha, beta, 0.0, d, "hockey")
        law = QuadraticFormLaw(alpha, beta, 0.0, c0)
        assert abs(0.5 + integral / math.pi - law.hockey_stick(shift).value) < TOL
        assert err < 1e-10


def _tilted(law: QuadraticFormLaw) -> tuple[float, QuadraticFormLaw]:
    """E e^{-X} and the law of X under the tilt dP~/dP = e^{-X}/E e^{-X} (needs 1 + 2 alpha > 0)."""
    a, b = law.alpha, law.beta
    v = 1 / (1 + 2 * a)
    m = -b * v
    log_mgf = -law.c + 0.5 * law.sigma**2 + float(np.sum(0.5 * np.log(v) + b * b * v / 2))
    # Z_j = m_j + sqrt(v_j) W_j; the Gaussian part becomes N(-sigma^2, sigma^2)
    tilted = QuadraticFormLaw(a * v, (2 * a * m + b) * np.sqrt(v), law.sigma,
                              law.c - law.sigma**2 + float(np.sum(a * m * m + b * m)))
    return math.exp(log_mgf), tilted


@pytest.mark.parametrize("alpha, beta, sigma", [([0.4, -0.2], [0.3, 1.0], 0.0),
                                                ([1.5, 0.3, -0.1], [0.0, 0.5, 0.2], 0.6),
                                                ([-0.45], [0.7], 0.2)])
def test_hockey_stick_equals_tail_difference_under_tilting(alpha, beta, sigma):
    # E(1 - e^{x-X})_+ = Pr(X > x) - e^x E[e^{-X} 1{X > x}] = Pr(X > x) - e^x M Pr~(X > x)
    law = QuadraticFormLaw(alpha, beta, sigma, 0.3)
    mgf, tilted = _tilted(law)
    for x in (0.0, 0.5, 2.0):
        expected = law.sf(x) - math.exp(x) * mgf * tilted.sf(x)
        assert abs(law.hockey_stick(x).value - expected) < TOL


def test_gaussian_law_is_balle_wang():
    for D in (0.2, 1.0, 4.0):
        law = privacy_loss_law(np.zeros(0), np.zeros(0), D * D)
        assert law.alpha.size == 0 and law.sigma == pytest.approx(D) and law.c == pytest.approx(
            D * D / 2)
        for eps in (0.0, 0.5, 2.0, 8.0):
            bw = special.ndtr(D / 2 - eps / D) - math.exp(eps) * special.ndtr(-D / 2 - eps / D)
            assert law.hockey_stick(eps).value == pytest.approx(bw, rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("a, b, c, s", [(0.3, 0.5, 0.1, 0.4), (-0.6, 1.0, 0.0, -0.5),
                                        (0.1, -2.0, 1.0, 1.2)])
def test_log_mgf_matches_quadrature(a, b, c, s):
    law = QuadraticFormLaw([a], [b], 0.0, c)
    lo, hi = law.mgf_domain()
    assert lo < s < hi
    oracle = _quad(lambda z: math.exp(s * (a * z * z + b * z + c) - z * z / 2) / math.sqrt(
        2 * math.pi), -60, 60)
    assert law.log_mgf(s) == pytest.approx(math.log(oracle), rel=1e-10)
    edge = hi if math.isfinite(hi) else lo
    assert law.log_mgf(edge * (1 + 1e-9)) == math.inf


def test_privacy_loss_law_mgf_is_s_times_renyi():
    # K(s) = ln E_P e^{sL} = s D_{1+s}(P||Q): quadratic-form algebra vs the Renyi formula
    rng = np.random.default_rng(1)
    for _ in range(20):
        n = int(rng.integers(1, 5))
        lam, b, b0sq = rng.uniform(0.2, 3.0, n), rng.normal(size=n), float(rng.uniform(0, 2))
        w = WhitenedPair(lam, b, b0sq)
        law = privacy_loss_law(lam, b, b0sq)
        lo, hi = w.mgf_domain()
        for s in np.linspace(max(lo, -5) * 0.99, min(hi, 5) * 0.99, 7):
            assert law.log_mgf(s) == pytest.approx(w.log_mgf(s), rel=1e-10, abs=1e-12)
        assert w.log_mgf(-1.0) == pytest.approx(0.0, abs=1e-12)  # E_P[q/p] = 1
        # the domain from a_max (Renyi side) is the domain from 1 - 2 s alpha > 0 (law side)
        np.testing.assert_allclose(w.mgf_domain(), law.mgf_domain(), rtol=1e-12)
        for edge in w.mgf_domain():
            if math.isfinite(edge):
                assert math.isfinite(w.log_mgf(edge * (1 - 1e-9)))
                assert w.log_mgf(edge * (1 + 1e-9)) == math.inf


def test_swapped_law_is_law_under_q():
    # Pr_Q(L > x) from the swapped pair must equal E_P[e^{-L} 1{L > x}] (change of measure)
    lam, b = np.array([0.5, 2.0]), np.array([0.3, -0.4])
    w = WhitenedPair(lam, b, 0.25)
    law_p, law_q_neg = w.loss_law(), w.swapped().loss_law()  # -L under Q
    mgf, tilted = _tilted(law_p)
    for x in (-0.5, 0.2, 1.0):
        assert law_q_neg.cdf(-x) == pytest.approx(mgf * tilted.sf(x), abs=TOL)


def test_bad_laws_raise():
    with pytest.raises(ConfigError, match="nonzero"):
        QuadraticFormLaw([0.0], [1.0], 0.0, 0.0)
    with pytest.raises(ConfigError, match="equal lengths"):
        QuadraticFormLaw([1.0, 2.0], [1.0], 0.0, 0.0)
    with pytest.raises(ConfigError, match="sigma"):
        QuadraticFormLaw([1.0], [1.0], -1.0, 0.0)


def _scaled_chi2_log_hockey(k: int, a: float, c: float, x: float) -> float:
    """ln E(1 - e^{x - X})_+ for X = c + a chi2_k (a > 0) by one-dimensional quadrature in y = chi2:
    int_t^inf (1 - e^{a (t - y)}) f_k(y) dy, t = (x - c)/a, with f_k(t) factored out (log scale)."""
    t = (x - c) / a
    log_ft = stats.chi2.logpdf(t, k)

    def f(y: float) -> float:
        return -math.expm1(a * (t - y)) * math.exp(stats.chi2.logpdf(y, k) - log_ft)

    val, _ = integrate.quad(f, t, math.inf, epsabs=0.0, epsrel=1e-12, limit=200)
    return log_ft + math.log(val)


@pytest.mark.parametrize("k,a,c", [(8, 0.3, -0.5), (12, 1.5, 0.2), (5, 0.05, 0.0)])
def test_tiny_hockey_stick_keeps_relative_accuracy(k, a, c):
    """Far tails (delta down to 1e-200): the saddle-point contour against a closed form; Imhof's
    absolute accuracy (1e-14) alone would return noise or 0 there."""
    law = QuadraticFormLaw(np.full(k, a), np.zeros(k), 0.0, c)
    for q in (0.5, 0.9999, 1 - 1e-30):
        x = c + a * stats.chi2.isf(1 - q, k) if q < 1 - 1e-20 else c + a * 600.0
        ref = _scaled_chi2_log_hockey(k, a, c, x)
        got = law.hockey_stick(x)
        assert math.log(got.value) == pytest.approx(ref, rel=1e-8, abs=1e-8)
        assert got.error <= 1e-6 * got.value or got.value > 1e-9


def test_saddle_contour_agrees_with_imhof_where_both_are_accurate():
    rng = np.random.default_rng(5)
    for _ in range(6):
        n = int(rng.integers(4, 9))
        lam = np.exp(rng.normal(0, 1, n))
        law = privacy_loss_law(lam, rng.normal(0, 0.5, n))
        for x in (0.0, 1.0, 3.0):
            imhof = law.hockey_stick(x)
            log_v, rel = plrv._saddle_integral(law, x)
            assert rel < 1e-8
            assert math.exp(log_v) == pytest.approx(imhof.value, rel=1e-7, abs=1e-12)


def test_few_term_hockey_agrees_with_the_inversion_integral():
    """Two quadratic terms, or one and a Gaussian part, go through the conditioned quadrature
    (``_conditioned_hockey``); Imhof's integral, forced, is the independent oracle (slow there but exact
    to ~1e-13)."""
    rng = np.random.default_rng(11)
    for trial in range(12):
        n = 2 if trial % 2 == 0 else 1
        lam = np.exp(rng.normal(0, 1.2, n))
        b = rng.normal(0, 1, n) * (0.0 if trial % 3 == 0 else 1.0)
        law = privacy_loss_law(lam, b)
        if n == 1:  # add a Gaussian part (components with lam = 1)
            law = QuadraticFormLaw(law.alpha, law.beta, 0.4, law.c + 0.08)
        for x in (0.0, 0.7, 2.5):
            got = law.hockey_stick(x)
            integral, err = plrv._inversion_integral(law.alpha, law.beta, law.sigma, law.c - x,
                                                     "hockey")
            assert abs(got.value - (0.5 + integral / math.pi)) < 1e-11 + err
            assert got.error < 1e-11


def test_few_term_hockey_keeps_relative_accuracy_for_tiny_values():
    # X = a (Z1^2 + Z2^2) + c: X - c = a chi2_2 is exponential with rate r = 1 / (2a), and for x >= c
    # E(1 - e^{x-X})_+ = e^{-r (x-c)} int_0^inf (1 - e^{-u}) r e^{-r u} du = e^{-r (x-c)} / (1 + r)
    for a, c in ((0.3, -0.2), (1.5, 0.1)):
        law = QuadraticFormLaw([a, a], [0.0, 0.0], 0.0, c)
        for x in (1.0, 20.0, 150.0):
            exact = math.exp(-(x - c) / (2 * a)) / (1 + 1 / (2 * a))
            got = law.hockey_stick(x)
            assert got.value == pytest.approx(exact, rel=1e-9), (a, x)


def test_hockey_is_zero_beyond_the_maximum_of_a_bounded_law():
    # every alpha < 0 and no Gaussian part: X <= c + sum beta^2 / (-4 alpha)
    law = QuadraticFormLaw([-0.2, -0.1, -0.3], [0.5, 0.0, -0.4], 0.0, 0.1)
    top = 0.1 + 0.25 / 0.8 + 0.16 / 1.2 + 1e-12  # (+1e-12: above the maximum despite rounding)
    assert law.hockey_stick(top).value == 0.0 and law.hockey_stick(top + 3).value == 0.0
    two = QuadraticFormLaw([-0.2, -0.1], [0.5, 0.0], 0.0, 0.1)  # below the maximum: positive
    top2 = 0.1 + 0.25 / 0.8
    assert two.hockey_stick(top2).value == 0.0 and two.hockey_stick(top2 - 0.3).value > 1e-6


@pytest.mark.parametrize(("alpha", "beta", "sigma"), [
    ([0.7, -0.3, 1.2, 0.05], [0.4, 0.0, -1.1, 2.0], 0.3),
    ([1.5, 1.49, -0.45, 0.2, 0.9], [0.0, 0.0, 0.0, 0.0, 0.0], 0.0),
    ([0.3], [0.5], 0.0),  # a closed form: every x by cdf()
])
def test_cdf_grid_equals_cdf_at_every_point(alpha, beta, sigma):
    law = QuadraticFormLaw(np.array(alpha), np.array(beta), sigma, 0.4)
    sd = np.sqrt(law.variance)
    xs = np.linspace(law.mean - 6 * sd, law.mean + 6 * sd, 41)
    grid = law.cdf_grid(xs)
    assert np.all(np.diff(grid) >= -1e-12)
    np.testing.assert_allclose(grid, [law.cdf(x) for x in xs], rtol=0, atol=1e-12)
