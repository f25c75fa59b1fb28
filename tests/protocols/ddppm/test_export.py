"""Export of a pair's privacy loss to dp_accounting's PLD: the pessimistic discretisation brackets the
exact values, alone and composed, and a Gaussian mechanism equals dp_accounting's own."""

import math

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as pld

from dpgossip.errors import ConfigError
from dpgossip.privacy.gaussian_pair import GaussianPair
from dpgossip.protocols.ddppm.export import rounded_pmf, to_pld

H = 1e-2  # coarse grid: one CDF per point, and the brackets below are a few H wide


def _covariance_pair() -> GaussianPair:
    # a covariance change with a mean shift: two quadratic terms and a Gaussian part
    return GaussianPair.from_whitened([0.6, 1.8, 1.0], [0.5, -0.3, 0.7])


def test_gaussian_mechanism_matches_dp_accounting():
    mu = 1.3  # P = N(mu, 1), Q = N(0, 1): the Gaussian mechanism with noise 1 / mu
    pair = GaussianPair(np.array([mu]), np.eye(1), np.zeros(1), np.eye(1))
    ours = to_pld(pair, interval=H)
    ref = pld.from_gaussian_mechanism(standard_deviation=1.0 / mu, sensitivity=1.0,
                                      value_discretization_interval=H)
    for eps in (0.5, 1.0, 2.0, 4.0):
        exact = pair.delta(eps)
        a, b = ours.get_delta_for_epsilon(eps), ref.get_delta_for_epsilon(eps)
        assert exact - 1e-12 <= a <= pair.delta(eps - H) + 1e-11
        # dp_accounting's own Gaussian PLD (also pessimistic, at the same interval) is in the same bracket
        assert exact - 1e-12 <= b <= pair.delta(eps - H) + 1e-11
        assert abs(a - b) <= pair.delta(eps - H) - exact + 1e-11


@pytest.mark.parametrize("k", [1, 3])
def test_composed_pld_brackets_the_exact_composition(k):
    pair = _covariance_pair()
    tail = 1e-12
    composed = to_pld(pair, interval=H, tail_mass=tail)
    if k > 1:
        composed = composed.self_compose(k)
    exact = GaussianPair.compose([pair] * k)
    for eps in (0.25, 1.0, 2.0, 3.0):
        got = composed.get_delta_for_epsilon(eps)
        assert exact.delta(eps) - 1e-10 <= got  # pessimistic: never below the exact value
        # rounding moves each loss up by at most H, so at most the exact value k H lower
        assert got <= exact.delta(eps - k * H) + 2 * k * tail + 1e-10


def test_both_directions_are_kept():
    # an asymmetric pair: the worse direction decides, as in GaussianPair.delta
    pair = GaussianPair.from_whitened([0.2, 0.3, 1.0], [0.0, 0.0, 0.8])
    p = to_pld(pair, interval=H)
    for eps in (0.5, 1.5):
        assert pair.delta(eps) - 1e-12 <= p.get_delta_for_epsilon(eps) <= pair.delta(eps - H) + 1e-10


def test_support_mismatch_is_all_mass_at_infinity():
    pair = GaussianPair.from_whitened([0.0, 2.0], [0.0, 0.0])
    assert pair.support_mismatch is not None
    assert to_pld(pair).get_delta_for_epsilon(50.0) == 1.0


def test_rounded_pmf_is_a_distribution():
    law = _covariance_pair().loss_law("PQ")
    pmf, inf_mass = rounded_pmf(law, H, 1e-12)
    assert inf_mass <= 1e-12 + 1e-15 and math.isclose(sum(pmf.values()) + inf_mass, 1.0, abs_tol=1e-12)
    assert all(v >= 0 for v in pmf.values())
    # the rounded-up mean exceeds the exact mean by at most H
    mean = sum(k * H * v for k, v in pmf.items())
    assert law.mean - 1e-9 <= mean <= law.mean + H


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"interval": 0.0}, r"interval must be a finite number > 0, got 0.0"),
    ({"interval": float("nan")}, r"interval must be a finite number > 0"),
    ({"tail_mass": 1.0}, r"tail_mass must be in \(0, 1\), got 1.0"),
    ({"interval": 1e-9}, r"interval: 1e-09 needs \d+ grid points"),
])
def test_bad_arguments_name_the_parameter(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        to_pld(_covariance_pair(), **kwargs)
