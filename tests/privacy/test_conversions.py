"""Conversions from Renyi curves / MGFs against closed forms and brute-force order grids."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dpgossip.errors import ConfigError
from dpgossip.privacy.conversions import (
    chernoff_bound,
    chernoff_lower_tail_from_rdp,
    chernoff_upper_tail_from_rdp,
    rdp_to_delta,
    rdp_to_epsilon,
)


def _grid_delta(rho: float, eps: float) -> float:
    """Brute force over a fine order grid of CKS Prop. 12 for D_a = a rho."""
    a = 1.0 + np.geomspace(1e-6, 1e6, 400_001)
    log_d = (a - 1) * (a * rho - eps) + (a - 1) * np.log1p(-1 / a) - np.log(a)
    return float(min(1.0, np.exp(log_d.min())))


@pytest.mark.parametrize("rho, eps", [(0.5, 1.0), (0.05, 0.5), (2.0, 8.0), (1e-3, 0.3)])
def test_rdp_to_delta_matches_a_fine_grid(rho, eps):
    got = rdp_to_delta(lambda a: a * rho, eps)
    brute = _grid_delta(rho, eps)
    assert got.value <= brute * (1 + 1e-9)  # continuous optimum is at least as good as the grid
    assert got.value == pytest.approx(brute, rel=1e-6)
    assert got.order > 1 and not got.at_edge


def test_rdp_to_epsilon_inverts_rdp_to_delta():
    rho = 0.3
    for delta in (1e-3, 1e-6, 1e-10):
        eps = rdp_to_epsilon(lambda a: a * rho, delta).value
        assert rdp_to_delta(lambda a: a * rho, eps).value == pytest.approx(delta, rel=1e-6)
    assert rdp_to_epsilon(lambda a: math.inf, 1e-5).value == math.inf
    assert rdp_to_delta(lambda a: math.inf, 1.0).value == 1.0


def test_rdp_conversion_respects_a_max():
    # a curve that is infinite from a_max = 3 on: the search never evaluates it there
    seen = []

    def renyi(a: float) -> float:
        seen.append(a)
        return math.inf if a >= 3 else a * 0.2 - math.log1p(-(a - 1) / 2)

    rdp_to_delta(renyi, 1.0, a_max=3.0)
    assert max(seen) < 3.0


def test_chernoff_bound_of_a_standard_normal_is_exp_minus_eps_squared_over_two():
    for eps in (0.5, 1.0, 3.0):
        got = chernoff_bound(lambda s: s * s / 2, eps)
        assert got.value == pytest.approx(math.exp(-eps * eps / 2), rel=1e-9)
        assert got.order == pytest.approx(eps, rel=1e-4)


def test_chernoff_from_rdp_of_the_gaussian_mechanism():
    # D_a(P||Q) = D_a(Q||P) = a rho: inf_a exp((a-1)(a rho - eps)) is at a = (eps + rho)/(2 rho)
    rho, eps = 0.2, 1.0
    a_star = (eps + rho) / (2 * rho)
    upper = chernoff_upper_tail_from_rdp(lambda a: a * rho, eps)
    assert upper.value == pytest.approx(math.exp((a_star - 1) * (a_star * rho - eps)), rel=1e-9)
    # lower: inf_a exp((a-1) a rho - a eps), minimised at a = (eps/rho + 1)/2
    a_low = (eps / rho + 1) / 2
    lower = chernoff_lower_tail_from_rdp(lambda a: a * rho, eps)
    assert lower.value == pytest.approx(math.exp((a_low - 1) * a_low * rho - a_low * eps),
                                        rel=1e-9)


def test_edge_of_the_order_range_warns():
    with pytest.warns(RuntimeWarning, match="edge"):
        out = rdp_to_delta(lambda a: 1e-6 * a, 0.01, max_order=50.0)
    assert out.at_edge and out.order == pytest.approx(50.0, rel=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rdp_to_delta(lambda a: 0.5 * a, 1.0)  # interior optimum: no warning


def test_bad_arguments_raise_config_error():
    with pytest.raises(ConfigError, match="got -1"):
        rdp_to_delta(lambda a: a, -1)
    with pytest.raises(ConfigError, match="got 1.5"):
        rdp_to_epsilon(lambda a: a, 1.5)
    with pytest.raises(ConfigError, match="a_max must be > 1, got 1.0"):
        rdp_to_delta(lambda a: a, 1.0, a_max=1.0)
    with pytest.raises(ConfigError, match="s_max"):
        chernoff_bound(lambda s: s, 1.0, s_max=0.0)
