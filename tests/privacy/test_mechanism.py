"""The Gaussian mechanism's closed forms: delta(epsilon), its inverse, and the analytic calibration."""

import math

import pytest
from dp_accounting import get_epsilon_gaussian

from dpgossip.errors import ConfigError
from dpgossip.privacy.mechanism import (
    analytic_gaussian_sigma,
    gaussian_mechanism_delta,
    gaussian_mechanism_epsilon,
)


@pytest.mark.parametrize("mu", [0.05, 0.7, 2.0, 9.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-6])
def test_epsilon_inverts_delta_and_matches_dp_accounting(mu, delta):
    eps = gaussian_mechanism_epsilon(mu, delta)
    if eps > 0:
        assert gaussian_mechanism_delta(eps, mu) == pytest.approx(delta, rel=1e-8)
    else:
        assert gaussian_mechanism_delta(0.0, mu) <= delta
    # dp_accounting's Gaussian mechanism with sensitivity 1 and noise 1 / mu is the same mechanism
    assert eps == pytest.approx(get_epsilon_gaussian(1.0 / mu, delta), rel=1e-6, abs=1e-9)


def test_epsilon_edges_and_calibration_round_trip():
    assert gaussian_mechanism_epsilon(0.0, 1e-5) == 0.0
    assert gaussian_mechanism_epsilon(math.inf, 1e-5) == math.inf
    sigma = analytic_gaussian_sigma(2.0, 1e-5, sensitivity=1.0)
    assert gaussian_mechanism_epsilon(1.0 / sigma, 1e-5) == pytest.approx(2.0, rel=1e-6)


@pytest.mark.parametrize(("args", "match"), [
    ((-1.0, 1e-5), r"^mahalanobis must be a number >= 0, got -1.0"),
    ((1.0, 1.0), r"^delta must be in \(0, 1\), got 1.0"),
])
def test_bad_input_names_the_parameter(args, match):
    with pytest.raises(ConfigError, match=match):
        gaussian_mechanism_epsilon(*args)
