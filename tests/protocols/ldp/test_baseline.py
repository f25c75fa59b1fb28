import numpy as np
import pytest
from scipy.special import ndtr

from dpgossip.errors import ConfigError
from dpgossip.protocols.ldp.baseline import ldp_sigma, run_ldp


def test_paper_calibration_formula():
    assert ldp_sigma(2.0, 1e-5, "paper") == pytest.approx(
        np.sqrt(2 * np.log(1.25e5)) / 2, rel=1e-15
    )


@pytest.mark.parametrize("eps, delta", [(0.5, 1e-5), (1, 1e-3), (5, 0.008), (40, 1e-4)])
def test_analytic_calibration_meets_delta_exactly(eps, delta):
    s = ldp_sigma(eps, delta, "analytic")
    D = 1 / s
    achieved = ndtr(D / 2 - eps / D) - np.exp(eps) * ndtr(-D / 2 - eps / D)
    assert achieved == pytest.approx(delta, rel=1e-6)
    # analytic is never noisier than the classical calibration where the latter is valid
    if eps < 1:
        assert s <= ldp_sigma(eps, delta, "paper")


def test_run_ldp_is_reproducible_and_close_at_large_epsilon():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 4)) @ np.diag([3, 1, 0.5, 0.2]) / 10
    a = run_ldp(X, 1, 1e5, 1e-5, np.random.default_rng(1))
    b = run_ldp(X, 1, 1e5, 1e-5, np.random.default_rng(1))
    np.testing.assert_array_equal(a.U_hat, b.U_hat)
    u = np.linalg.svd(X)[0][:, 0]
    assert abs(abs(u @ a.U_hat[:, 0]) - 1) < 1e-3


def test_bad_ldp_inputs():
    with pytest.raises(ConfigError, match=r"epsilon must be a positive number, got -1"):
        ldp_sigma(-1, 1e-5)
    with pytest.raises(ConfigError, match=r"delta must be in \(0, 1\), got 2"):
        ldp_sigma(1, 2)
    with pytest.raises(ConfigError, match=r"calibration must be one of paper, analytic, got 'x'"):
        ldp_sigma(1, 1e-5, "x")
