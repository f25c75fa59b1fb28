"""Theorem 1 of Chien et al. (closed form) against the paper's formula, a numeric optimum and
dp_accounting."""

import math

import pytest
from scipy.optimize import minimize_scalar

from dpgossip.errors import ConfigError
from dpgossip.protocols.als.accounting import (
    closed_form_epsilon,
    rdp_epsilon,
    theorem_epsilon,
    theorem_sigma,
    view_guarantee,
)
from dpgossip.protocols.als.params import DpAlsParams

CASES = [(0.5, 1e-4, 5, 5), (1.0, 1e-5, 10, 2), (8.0, 1e-6, 50, 2), (20.0, 1e-5, 40, 3), (100.0, 1e-5, 10, 3)]


@pytest.mark.parametrize(("eps", "delta", "k", "T"), CASES)
def test_sigma_is_the_seeds_formula(eps, delta, k, T):
    log = math.log(1 / delta)
    seed_form = math.sqrt(k * T / 2) / (math.sqrt(log + eps) - math.sqrt(log))
    rationalised = math.sqrt(k * T / 2) * (math.sqrt(log + eps) + math.sqrt(log)) / eps
    sigma = theorem_sigma(eps, delta, k, T)
    assert sigma == pytest.approx(seed_form, rel=1e-12)
    assert sigma == pytest.approx(rationalised, rel=1e-12)
    assert sigma <= math.sqrt(2 * k * T * (log + eps)) / eps          # the seed's upper bound


@pytest.mark.parametrize(("eps", "delta", "k", "T"), CASES)
def test_closed_form_is_the_optimal_order_of_mironovs_conversion(eps, delta, k, T):
    rho2 = k * T / (2 * theorem_sigma(eps, delta, k, T) ** 2)
    numeric = minimize_scalar(lambda a: a * rho2 + math.log(1 / delta) / (a - 1), bounds=(1 + 1e-9, 1e6),
                              method="bounded", options={"xatol": 1e-12})
    assert theorem_epsilon(theorem_sigma(eps, delta, k, T), delta, k, T) == pytest.approx(eps, rel=1e-12)
    assert closed_form_epsilon(rho2, delta) == pytest.approx(numeric.fun, rel=1e-7)


@pytest.mark.parametrize(("eps", "delta", "k", "T"), CASES)
def test_dp_accounting_is_at_most_the_closed_form(eps, delta, k, T):
    sigma = theorem_sigma(eps, delta, k, T)
    z = math.sqrt(2) * sigma                      # each of the 2kT releases (Gram, right-hand side)
    by_releases, _ = rdp_epsilon(z, 2 * k * T, delta)
    by_items, _ = rdp_epsilon(sigma, k * T, delta)  # one event per item at Theorem 1's sigma: same RDP
    assert by_releases <= eps
    assert by_releases == pytest.approx(by_items, rel=1e-9)
    assert by_releases > 0.5 * eps                # the same events, not a different mechanism


@pytest.mark.parametrize(("eps", "delta", "k", "T"), CASES[1:])
def test_noise_of_sigma_on_each_release_costs_more_than_theorem_1_states(eps, delta, k, T):
    """Algorithm 1 read literally (std sigma units on the Gram and on the right-hand side): twice the RDP."""
    sigma = theorem_sigma(eps, delta, k, T)
    literal, _ = rdp_epsilon(sigma, 2 * k * T, delta)
    assert literal > eps
    assert closed_form_epsilon(k * T / sigma**2, delta) > eps


def test_view_guarantee_of_the_central_view_is_the_target():
    p = DpAlsParams(rank=2, steps=3, reg=1.0, epsilon=4.0, delta=1e-5, k=10)
    g = view_guarantee("server", 1 / p.multiplier**2, p.k, p.steps, p.delta)
    assert g.epsilon_closed_form == pytest.approx(4.0, rel=1e-12)
    assert g.epsilon_rdp <= g.epsilon_closed_form
    assert view_guarantee("x", 0.0, 10, 3, 1e-5).epsilon == 0.0
    assert view_guarantee("x", math.inf, 10, 3, 1e-5).epsilon == math.inf


@pytest.mark.parametrize(("kwargs", "field"), [({"epsilon": 0}, "epsilon"), ({"delta": 1.0}, "delta"),
                                               ({"k": 0}, "k"), ({"steps": 0}, "steps")])
def test_bad_input_names_the_field(kwargs, field):
    args = {"epsilon": 1.0, "delta": 1e-5, "k": 10, "steps": 2, **kwargs}
    with pytest.raises(ConfigError) as err:
        theorem_sigma(**args)
    assert field in str(err.value)


def test_a_users_contribution_to_an_item_moves_at_most_sqrt_2_units():
    """The sensitivity behind the noise convention: ||(upper(u u^T), M u) / units||^2 <= 2, equal at the
    extreme (r = 1, ||u|| = Gamma_u, |M| = Gamma_M)."""
    import numpy as np

    from dpgossip.protocols.als.steps import normalised_norms, user_statistic

    rng = np.random.default_rng(0)
    for r in (1, 2, 4):
        p = DpAlsParams(rank=r, steps=1, epsilon=1.0, delta=1e-5, k=1, clip_user=0.7, clip_rating=2.5)
        for _ in range(200):
            u = rng.normal(size=r)
            u *= p.clip_user * rng.uniform() ** (1 / r) / np.linalg.norm(u)      # inside the ball
            m = rng.uniform(-p.clip_rating, p.clip_rating)
            assert normalised_norms(user_statistic(u, np.array([m]), np.array([0]), 1), p.units())[0] <= 2
    p1 = DpAlsParams(rank=1, steps=1, epsilon=1.0, delta=1e-5, k=1, clip_user=0.7, clip_rating=2.5)
    extreme = user_statistic(np.array([0.7]), np.array([-2.5]), np.array([0]), 1)
    assert normalised_norms(extreme, p1.units())[0] == pytest.approx(2.0, rel=1e-12)
