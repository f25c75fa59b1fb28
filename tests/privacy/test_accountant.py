"""Accounting of the private power method: closed forms against dp_accounting (docs/ppm.md, Section 4)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize
from scipy.special import ndtr

from dpgossip.errors import ConfigError
from dpgossip.privacy.accountant import (
    calibrate_zcdp_noise,
    compose_pld,
    compose_rdp,
    composition_guarantee,
    paper_epsilon_limit,
    paper_noise_multiplier,
    zcdp_from_epsilon,
    zcdp_rho,
    zcdp_to_epsilon,
)
from dpgossip.protocols.ppm.central import PpmParams, run_ppm
from dpgossip.protocols.ppm.guarantee import ppm_guarantee, realised_guarantee

EPSILONS = [1e-3, 0.1, 0.5, 1.0, 3.0, 10.0, 50.0, 300.0]
DELTAS = [1e-10, 1e-6, 1e-4, 1e-2, 0.3]


@pytest.mark.parametrize("delta", DELTAS)
def test_conversion_and_its_inverse_round_trip(delta):
    for eps in EPSILONS:
        rho = zcdp_from_epsilon(eps, delta)
        assert zcdp_to_epsilon(rho, delta) == pytest.approx(eps, rel=1e-12)
        assert zcdp_from_epsilon(zcdp_to_epsilon(rho, delta), delta) == pytest.approx(rho, rel=1e-12)
        b = math.log(1 / delta)
        assert rho == pytest.approx((math.sqrt(b + eps) - math.sqrt(b)) ** 2, rel=1e-6)


@pytest.mark.parametrize("L", [1, 3, 10])
def test_calibrated_noise_gives_exactly_the_target_zcdp_epsilon(L):
    for eps in [0.3, 1.0, 8.0]:
        sigma = calibrate_zcdp_noise(eps, 1e-5, L)
        assert sigma == pytest.approx(math.sqrt(L / (2 * zcdp_from_epsilon(eps, 1e-5))), rel=1e-15)
        assert zcdp_rho([sigma] * L) == pytest.approx(L / (2 * sigma**2), rel=1e-14)
        assert zcdp_to_epsilon(zcdp_rho([sigma] * L), 1e-5) == pytest.approx(eps, rel=1e-12)


@pytest.mark.parametrize("sigmas", [[2.0] * 3, [0.9] * 5, [1.0, 3.0, 0.7], [25.0] * 10])
def test_rdp_of_composed_gaussians_is_a_sum_over_iterations_of_a_over_2_sigma2(sigmas):
    acc = compose_rdp(sigmas)
    expected = acc.orders * sum(1 / (2 * s * s) for s in sigmas)
    np.testing.assert_allclose(acc.rdp, expected, rtol=1e-9, atol=0)
    assert zcdp_rho(sigmas) == pytest.approx(expected[0] / acc.orders[0], rel=1e-12)


def _prop12(a: float, rho: float, delta: float) -> float:
    """arXiv 2004.00010 Prop. 12 applied to the RDP curve ``a rho``."""
    return a * rho + math.log1p(-1 / a) - math.log(delta * a) / (a - 1)


@pytest.mark.parametrize("sigma,L,delta", [(8.488, 3, 1e-5), (0.9085, 3, 1e-4), (33.5, 10, 1e-6),
                                           (2.0, 1, 1e-3)])
def test_rdp_epsilon_is_the_closed_form_conversion_and_below_the_zcdp_epsilon(sigma, L, delta):
    g = composition_guarantee([sigma] * L, delta, pld=False)
    rho = L / (2 * sigma**2)
    assert g.rho == pytest.approx(rho, rel=1e-14)
    assert g.epsilon_rdp == pytest.approx(_prop12(g.rdp_order, rho, delta), rel=1e-9)
    best = optimize.minimize_scalar(lambda a: _prop12(a, rho, delta), bounds=(1.01, 2000),
                                    method="bounded", options={"xatol": 1e-10})
    assert best.fun - 1e-9 <= g.epsilon_rdp <= best.fun * 1.01  # the library's order grid is coarse
    # the basic conversion, optimised over the order, is the zCDP one: the improved one is smaller
    assert g.epsilon_rdp < g.epsilon_zcdp
    basic = optimize.minimize_scalar(lambda a: a * rho + math.log(1 / delta) / (a - 1),
                                     bounds=(1 + 1e-9, 1e7), method="bounded",
                                     options={"xatol": 1e-12})
    assert basic.fun == pytest.approx(g.epsilon_zcdp, rel=1e-6)


def _gaussian_delta(mu: float, eps: float) -> float:
    """Exact hockey-stick divergence of ``N(mu, 1)`` vs ``N(0, 1)`` (Balle-Wang 2018, Theorem 8)."""
    return float(ndtr(mu / 2 - eps / mu) - math.exp(eps) * ndtr(-mu / 2 - eps / mu))


@pytest.mark.parametrize("eps,delta,L", [(1.0, 1e-5, 3), (10.0, 1e-4, 3), (0.5, 1e-6, 10),
                                         (4.0, 1e-4, 2)])
def test_pld_epsilon_is_below_the_zcdp_epsilon_and_near_the_exact_gaussian_one(eps, delta, L):
    sigma = calibrate_zcdp_noise(eps, delta, L)
    g = ppm_guarantee(PpmParams(p=4, k=2, iterations=L, noise_multiplier=sigma), delta)
    assert g.epsilon_zcdp == pytest.approx(eps, rel=1e-12)
    assert g.epsilon_pld <= g.epsilon_rdp <= g.epsilon_zcdp
    mu = math.sqrt(L) / sigma  # L Gaussians of ratio 1/sigma compose to one of ratio sqrt(L)/sigma
    assert _gaussian_delta(mu, g.epsilon_gdp) == pytest.approx(delta, rel=1e-6)
    assert g.epsilon_gdp - 1e-6 <= g.epsilon_pld <= g.epsilon_gdp + 1e-3
    assert float(compose_pld([sigma] * L).get_delta(g.epsilon_gdp)) == pytest.approx(delta, rel=1e-2)


def test_paper_calibration_meets_the_target_only_up_to_the_corrected_limit():
    delta, L = 1e-4, 3
    limit = paper_epsilon_limit(delta)
    assert limit == pytest.approx(8 * (1 - 1 / math.sqrt(2)) * math.log(1e4), rel=1e-15)
    assert limit == pytest.approx(21.58, abs=0.01)
    for eps, ok in [(0.5, True), (5.0, True), (0.999 * limit, True), (1.001 * limit, False),
                    (4 * math.log(1 / delta), False)]:  # Nicolas et al. print eps <= 4 ln(1/delta) = 36.8
        sigma = paper_noise_multiplier(eps, delta, L)
        achieved = zcdp_to_epsilon(zcdp_rho([sigma] * L), delta)
        assert achieved == pytest.approx(eps**2 / (8 * math.log(1 / delta)) + eps / math.sqrt(2))
        assert (achieved <= eps) is ok
        if ok:
            assert sigma > calibrate_zcdp_noise(eps, delta, L)
    assert zcdp_to_epsilon(zcdp_rho([paper_noise_multiplier(limit, delta, L)] * L), delta) \
        == pytest.approx(limit, rel=1e-12)


def test_realised_guarantee_reads_a_run_under_either_adjacency():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 6))
    X /= np.linalg.norm(X, axis=1).max()
    sigma = calibrate_zcdp_noise(2.0, 1e-5, 4)
    params = PpmParams(p=3, k=2, iterations=4, noise_multiplier=sigma, adjacency="element")
    res = run_ppm(X, params, 1)
    own = realised_guarantee(res, 1e-5, pld=False)
    assert own.epsilon_zcdp == pytest.approx(2.0, rel=1e-12)
    assert own.adjacency == "element"
    # element noise (max_i ||X_i:|| < 1 <= sqrt(2)) is too small for row replacement
    rows = realised_guarantee(res, 1e-5, adjacency="row-replacement", pld=False)
    ratios = np.sqrt(2) / res.sensitivities
    assert rows.rho == pytest.approx(own.rho * np.mean(ratios**2), rel=1e-12)
    assert rows.epsilon_zcdp > 2.0


def test_zero_noise_gives_no_privacy():
    g = composition_guarantee([1.0, 0.0], 1e-5)
    assert math.isinf(g.rho) and math.isinf(g.epsilon_zcdp) and math.isinf(g.epsilon_rdp)
    assert math.isinf(g.epsilon_pld) and math.isinf(g.epsilon_gdp)


@pytest.mark.parametrize("call,field", [
    (lambda: zcdp_to_epsilon(1.0, 0.0), "delta"),
    (lambda: zcdp_to_epsilon(1.0, 1.0), "delta"),
    (lambda: zcdp_to_epsilon(1.0, "1e-5"), "delta"),
    (lambda: zcdp_to_epsilon(-1.0, 1e-5), "rho"),
    (lambda: zcdp_from_epsilon(0.0, 1e-5), "epsilon"),
    (lambda: zcdp_from_epsilon(math.inf, 1e-5), "epsilon"),
    (lambda: calibrate_zcdp_noise(1.0, 1e-5, 0), "iterations"),
    (lambda: calibrate_zcdp_noise(1.0, 1e-5, 2.5), "iterations"),
    (lambda: paper_noise_multiplier(-1.0, 1e-5, 2), "epsilon"),
    (lambda: zcdp_rho([]), "noise_multipliers"),
    (lambda: zcdp_rho([1.0, -2.0]), "noise_multipliers[1]"),
    (lambda: composition_guarantee([1.0], 2.0), "delta"),
    (lambda: ppm_guarantee("params", 1e-5), "params"),
    (lambda: realised_guarantee(None, 1e-5), "result"),
    (lambda: compose_pld([1.0], 0.0), "value_discretization_interval"),
])
def test_bad_input_names_the_parameter(call, field):
    with pytest.raises(ConfigError) as err:
        call()
    assert err.value.field == field and str(err.value).startswith(field)


def test_pld_refuses_a_multiplier_its_grid_cannot_hold():
    """Below PLD_MIN_MULTIPLIER the accountant's grid (about 1 / (sigma^2 step) points) would need
    tens of GiB; the refusal names the field and gives the Gaussian-DP mu = sqrt(sum 1 / sigma^2)."""
    from dpgossip.errors import ConfigError
    from dpgossip.privacy.accountant import PLD_MIN_MULTIPLIER, compose_pld, composition_guarantee

    with pytest.raises(ConfigError, match=r"noise multiplier 1e-06 is below 0\.1.*mu = 3\.16e\+06") as err:
        composition_guarantee((1e-6,) * 10, 1e-5)
    assert err.value.field == "noise_multiplier"
    with pytest.raises(ConfigError):
        compose_pld([1.0, 0.5 * PLD_MIN_MULTIPLIER])
    # without the PLD the other accountings still answer
    g = composition_guarantee((1e-6,) * 10, 1e-5, pld=False)
    assert g.epsilon_rdp > 1e6 and math.isnan(g.epsilon_pld)


def test_cli_calibrate_at_a_huge_epsilon_says_why(tmp_path, capsys):
    """`calibrate` of a ppm scenario at epsilon = 1e6 ends with a one-line error naming the noise, not
    an out-of-memory message from deep in dp_accounting."""
    from dpgossip.cli import main

    toml = tmp_path / "p.toml"
    toml.write_text('name = "p"\nseed = 1\n[data]\nsource = "wine"\n[network]\ntopology = "ring"\n'
                    'agents = 4\n[protocol]\nkind = "ppm"\niterations = 3\nconsensus_steps = 1\n'
                    '[ppm]\nepsilon = 2.0\n', encoding="utf-8")
    code = main(["calibrate", str(toml), "--epsilon", "1e6", "-q"])
    err = capsys.readouterr().err
    assert code == 2 and "is below 0.1" in err and "Traceback" not in err and "memory" not in err
