"""The vectorised RDP conversion (privacy.rdp_batch, conversions.rdp_to_*_batch) against the scalar path."""

import math
import warnings

import numpy as np
import pytest

from dpgossip.privacy.conversions import (
    rdp_to_delta,
    rdp_to_delta_batch,
    rdp_to_epsilon,
    rdp_to_epsilon_batch,
)
from dpgossip.privacy.plrv import WhitenedPair
from dpgossip.privacy.rdp_batch import RenyiCurves, whitened_rdp_deltas, whitened_rdp_epsilons


def _pairs(count: int, seed: int) -> list[WhitenedPair]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        k = int(rng.integers(1, 10))
        lam = np.exp(rng.normal(0.0, rng.choice([0.1, 1.0, 3.0]), k))
        b = rng.normal(0.0, rng.choice([0.0, 0.3, 3.0]), k)
        out.append(WhitenedPair(lam, b, float(rng.choice([0.0, 0.5]))))
    return out


def test_curves_equal_the_scalar_renyi_at_every_order():
    pairs = _pairs(20, 0)
    c = RenyiCurves(pairs)
    orders = np.array([[1.001, 1.5, 2.0, 7.0, 1e3]] * len(pairs))
    got = c(orders)
    for i, w in enumerate(pairs):
        want = np.array([w.renyi(a) for a in orders[i]])
        assert np.array_equal(np.isinf(got[i]), np.isinf(want))
        fin = np.isfinite(want)
        np.testing.assert_allclose(got[i][fin], want[fin], rtol=1e-13, atol=0)


@pytest.mark.parametrize("delta", [1e-5, 1e-2])
def test_epsilon_equals_the_scalar_search(delta):
    """The batch minimises to 1e-13 in ln(a - 1), the scalar Brent to 1e-10: the batch value is never
    above the scalar one beyond rounding, and below it by at most 1e-11 relative."""
    pairs = _pairs(40, 1)
    got = whitened_rdp_epsilons(pairs, delta)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.array([rdp_to_epsilon(w.renyi, delta, a_max=w.a_max).value for w in pairs])
    assert np.array_equal(np.isinf(got), np.isinf(want))
    fin = np.isfinite(want) & (want > 0)
    rel = (got[fin] - want[fin]) / want[fin]
    assert rel.max() <= 1e-13 and rel.min() >= -1e-11


@pytest.mark.parametrize("epsilon", [0.5, 5.0])
def test_delta_equals_the_scalar_search(epsilon):
    pairs = _pairs(40, 2)
    got = whitened_rdp_deltas(pairs, epsilon)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.array([rdp_to_delta(w.renyi, epsilon, a_max=w.a_max).value for w in pairs])
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=0)


def test_generic_batch_on_a_gaussian_mechanism_closed_form():
    """D_a = a / (2 s^2) for the Gaussian mechanism of sensitivity 1: the minimum over a of
    a/(2 s^2) + ln(1 - 1/a) - (ln delta + ln a)/(a - 1), brute-forced on a fine grid."""
    s = np.array([0.5, 1.0, 4.0])

    def curves(a):
        return a / (2 * s[:, None] ** 2)

    eps = rdp_to_epsilon_batch(curves, 1e-5, count=3)
    a = 1 + np.geomspace(1e-6, 1e6, 400001)
    brute = np.min(a[None] / (2 * s[:, None] ** 2) + np.log1p(-1 / a) - (math.log(1e-5) + np.log(a))
                   / (a - 1), axis=1)
    np.testing.assert_allclose(eps, brute, rtol=1e-8)
    assert np.all(eps <= brute * (1 + 1e-14))
    dl = rdp_to_delta_batch(curves, 1.0, count=3)
    assert np.all((dl > 0) & (dl <= 1))
