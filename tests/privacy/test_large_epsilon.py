"""Epsilon in the millions: the exact and Chernoff conversions of a pair with tiny noise are finite.

The pair is the worst one ``dpgossip audit scenarios/quickstart.toml`` finds (observer 1, target 0, row 0;
sigma_p down to 9.5e-5): 22 generalised eigenvalues from 8.9e-8 to 9.3e6, zero means. Its RDP epsilon at
delta = 1e-5 is 1.539e8, so its exact epsilon is finite and at most that.

Oracles, independent of the package's route to the hockey-stick divergence:

* one eigenvalue ``lam`` and zero means (``P = N(0, 1)``, ``Q = N(0, lam)``): the loss is
  ``L = a y^2 + c`` with ``a = (1 - lam) / (2 lam)``, ``c = ln(lam) / 2``, so
  ``delta(eps) = Pr(chi2_1 > t) - e^eps Pr(chi2_1 > t / lam)``, ``t = (eps - c) / a`` (scipy's normal
  tail in logs);
* two eigenvalues: the same one-term closed form conditioned on the second coordinate, integrated over it
  with :func:`scipy.integrate.quad`;
* data processing: the marginal of a pair on some of its whitened coordinates is a post-processing, so its
  exact epsilon is at most the full pair's, which is at most the full pair's RDP epsilon.
"""

import math

import numpy as np
import pytest
from scipy import integrate, optimize, special

from dpgossip.privacy.gaussian_pair import GaussianPair

QUICKSTART_WORST = [
    8.882421831390985e-08, 0.35511429410902073, 0.7571679217390812, 0.7659368368460672,
    0.7722325143684394, 0.7772435331287173, 0.781098735376919, 0.7840530472881283, 0.78609841544179,
    0.7873854027526913, 0.7880962642816594, 1.000000097140554, 1.0067483105456554, 1.0072094987717317,
    1.0080640630706368, 1.0094723262764955, 1.0117361610630413, 1.0154624236011491, 1.0220306442313385,
    1.0361285138057252, 2.1184646701654555, 9282567.072659044]
DELTA = 1e-5


def _log_chi2_sf(t: float) -> float:
    """``ln Pr(chi2_1 > t)`` = ``ln 2 + ln Phi(-sqrt t)`` (``t >= 0``)."""
    return math.log(2.0) + float(special.log_ndtr(-math.sqrt(max(t, 0.0))))


def _one_term_delta(lam: float, eps: float, shift: float = 0.0) -> float:
    """``E_P (1 - e^(eps - L))_+`` for ``L = a y^2 + c + shift``, ``P = N(0, 1)``, ``Q = N(0, lam)``,
    ``lam < 1`` (``a > 0``)."""
    a, c = (1.0 - lam) / (2.0 * lam), 0.5 * math.log(lam) + shift
    t = (eps - c) / a
    if t <= 0:  # L > eps everywhere: 1 - e^eps E_P e^-L, and E_P e^-L = e^-shift E_P q/p = e^-shift
        return -math.expm1(eps - shift)
    return math.exp(_log_chi2_sf(t)) - math.exp(eps - shift + _log_chi2_sf(t / lam))


def _two_term_delta(lam_small: float, lam_big: float, eps: float) -> float:
    """Both coordinates: condition on ``y_2 ~ N(0, 1)`` (its loss ``a_2 y_2^2 + ln(lam_big)/2``, and
    ``q_2 / p_2`` enters the second mass) and integrate with scipy."""
    a2 = (1.0 - lam_big) / (2.0 * lam_big)

    def f(y2: float) -> float:
        shift = a2 * y2 * y2 + 0.5 * math.log(lam_big)
        return math.exp(-0.5 * y2 * y2) / math.sqrt(2 * math.pi) * _one_term_delta(lam_small, eps, shift)

    v, _ = integrate.quad(f, -40.0, 40.0, points=[0.0], limit=400, epsabs=1e-15, epsrel=1e-12)
    return v


def _oracle_epsilon(delta_of, target: float, hi: float) -> float:
    return optimize.brentq(lambda e: math.log(max(delta_of(e), 1e-300)) - math.log(target), 0.0, hi,
                           xtol=1e-6, rtol=1e-12)


def test_one_eigenvalue_epsilon_in_the_millions_matches_the_chi_square_closed_form():
    lam = QUICKSTART_WORST[0]
    pair = GaussianPair.from_whitened([lam], [0.0])
    rdp = pair.epsilon(DELTA, "rdp")
    exact = pair.epsilon(DELTA, "exact")
    oracle = _oracle_epsilon(lambda e: _one_term_delta(lam, e), DELTA, rdp)
    assert 1e6 < oracle < rdp
    assert exact == pytest.approx(oracle, rel=1e-8)


def test_two_eigenvalues_epsilon_in_the_millions_matches_scipy_quadrature():
    lam_small, lam_big = QUICKSTART_WORST[0], QUICKSTART_WORST[-1]
    pair = GaussianPair.from_whitened([lam_small, lam_big], [0.0, 0.0])
    rdp = pair.epsilon(DELTA, "rdp")
    exact = pair.epsilon(DELTA, "exact")
    oracle = _oracle_epsilon(lambda e: _two_term_delta(lam_small, lam_big, e), DELTA, rdp)
    assert 1e6 < oracle < rdp
    assert exact == pytest.approx(oracle, rel=1e-6)
    assert pair.delta(exact) == pytest.approx(DELTA, rel=1e-6)


def test_quickstart_worst_pair_is_finite_and_bracketed():
    pair = GaussianPair.from_whitened(QUICKSTART_WORST, np.zeros(len(QUICKSTART_WORST)))
    rdp = pair.epsilon(DELTA, "rdp")
    assert rdp == pytest.approx(1.539e8, rel=1e-3)  # the number the audit prints for this pair
    exact = pair.epsilon(DELTA, "exact")
    lam_small, lam_big = QUICKSTART_WORST[0], QUICKSTART_WORST[-1]
    marginal = _oracle_epsilon(lambda e: _two_term_delta(lam_small, lam_big, e), DELTA, rdp)
    assert marginal <= exact * (1 + 1e-9) and exact <= rdp
    assert pair.delta(exact) == pytest.approx(DELTA, rel=1e-6)
    chernoff = pair.epsilon(DELTA, "chernoff")
    assert math.isfinite(chernoff) and chernoff >= exact
    assert pair.delta(chernoff, "chernoff") == pytest.approx(DELTA, rel=1e-6)


def test_quickstart_worst_pair_epsilon_decreases_with_delta():
    pair = GaussianPair.from_whitened(QUICKSTART_WORST, np.zeros(len(QUICKSTART_WORST)))
    values = [pair.epsilon(d, "exact") for d in (1e-7, 1e-5, 1e-3)]
    assert all(math.isfinite(v) for v in values)
    assert values[0] > values[1] > values[2] > 1e6


def test_imhof_inversion_far_out_agrees_with_quadrature_and_data_processing():
    """Imhof's integral at ``x ~ 1.1e8`` (its oscillatory tail): the two-term law matches the scipy
    quadrature to ``1e-14``, and adding a coordinate with ``lam = 1 + 1e-7`` (a loss term of weight
    ``5e-8``) moves it by less than ``1e-14`` (data processing: a coordinate more can only raise the
    value, and this one by almost nothing). Before the oscillatory tail was cut into geometric pieces,
    both were off by ``3e-13`` and ``7e-11`` with error estimates near ``3e-13``."""
    from dpgossip.privacy.plrv import privacy_loss_law
    lam_small, lam_big, near_one = QUICKSTART_WORST[0], QUICKSTART_WORST[-1], QUICKSTART_WORST[11]
    eps = 109831600.0
    oracle = _two_term_delta(lam_small, lam_big, eps)
    assert oracle == pytest.approx(1e-5, rel=1e-4)
    two = privacy_loss_law(np.array([lam_small, lam_big]), np.zeros(2)).inversion_hockey(eps)
    three = privacy_loss_law(np.array([lam_small, lam_big, near_one]),
                             np.zeros(3)).inversion_hockey(eps)
    assert abs(two.value - oracle) < 1e-14
    assert abs(three.value - oracle) < 1e-14
