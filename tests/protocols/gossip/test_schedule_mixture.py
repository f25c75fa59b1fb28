"""Leakage over random schedules: the mixture formulas against numerical integration of the mixed
densities and the Gaussian mechanism's scalar curve, the per-distance table against the fixed-W audit
and Muffliato's per-message sum of bounds.py when every sampled schedule is the same W."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate
from scipy.special import logsumexp
from scipy.stats import norm

from dpgossip.errors import ConfigError
from dpgossip.privacy.linear_audit import LinearAuditSettings
from dpgossip.privacy.mechanism import gaussian_mechanism_delta, gaussian_mechanism_epsilon
from dpgossip.protocols.gossip.audit import audit_gossip
from dpgossip.protocols.gossip.bounds import muffliato_per_message
from dpgossip.protocols.gossip.linear import LinearGossip
from dpgossip.protocols.gossip.schedule_mixture import (
    gaussian_deltas,
    mixture_delta,
    mixture_epsilon,
    mixture_rdp,
    muffliato_schedule_charge,
    sampled_spread,
    spread_by_distance,
)
from dpgossip.topology import make_network
from tests.protocols.gossip.dynamic_schedules import random_matchings

# three equally likely schedules: the target's shift a_k and the noise scale s_k of a 1-D view
SHIFTS, SCALES = np.array([0.4, 1.5, 0.9]), np.array([1.0, 0.7, 1.6])
MUS = SHIFTS / SCALES


def _integral(f):
    return integrate.quad(f, -30, 30, points=[0.0], limit=400, epsabs=1e-13, epsrel=1e-11)[0]


def test_gaussian_deltas_match_the_scalar_curve_and_integration():
    for eps in (0.0, 0.3, 2.0):
        got = gaussian_deltas(eps, MUS)
        for mu, g, a, s in zip(MUS, got, SHIFTS, SCALES, strict=True):
            assert g == pytest.approx(gaussian_mechanism_delta(eps, mu), abs=1e-14)
            e = math.exp(eps)
            quad = _integral(lambda y, a=a, s=s, e=e: max(norm.pdf(y, a, s) - e * norm.pdf(y, 0, s), 0))
            assert g == pytest.approx(quad, abs=1e-9)
    assert gaussian_deltas(1.0, np.array([0.0, np.inf])).tolist() == [0.0, 1.0]


def test_the_messages_only_mixture_is_below_the_average_and_the_worst_schedule():
    """Joint convexity (hockey-stick) and the Renyi bound of the schedule-and-messages release,
    checked against the mixed densities integrated numerically."""
    def p(y):
        return np.mean(norm.pdf(y, SHIFTS, SCALES))

    def q(y):
        return np.mean(norm.pdf(y, 0.0, SCALES))

    for eps in (0.0, 0.5, 1.5):
        e = math.exp(eps)
        mixed = _integral(lambda y, e=e: max(p(y) - e * q(y), 0.0))
        assert mixed <= mixture_delta(eps, MUS) + 1e-10
        assert mixture_delta(eps, MUS) <= float(np.max(gaussian_deltas(eps, MUS)))
    def log_pq(y):
        return (logsumexp(norm.logpdf(y, SHIFTS, SCALES)) - math.log(3),
                logsumexp(norm.logpdf(y, 0.0, SCALES)) - math.log(3))

    for a in (2.0, 4.0):
        renyi = math.log(_integral(lambda y, a=a: math.exp(a * log_pq(y)[0] + (1 - a) * log_pq(y)[1]))
                         ) / (a - 1)
        assert renyi <= mixture_rdp(MUS, a) + 1e-10
        assert float(np.mean(a * MUS ** 2 / 2)) <= mixture_rdp(MUS, a) <= float(np.max(a * MUS ** 2 / 2))


def test_mixture_epsilon_solves_the_average_delta():
    d = 1e-3
    eps = mixture_epsilon(MUS, d)
    assert np.mean([gaussian_mechanism_delta(eps, mu) for mu in MUS]) == pytest.approx(d, rel=1e-9)
    assert eps < max(gaussian_mechanism_epsilon(mu, d) for mu in MUS)
    assert mixture_epsilon([0.8] * 4, d) == pytest.approx(gaussian_mechanism_epsilon(0.8, d), rel=1e-9)
    assert mixture_rdp([0.8] * 4, 3.0) == pytest.approx(3.0 * 0.64 / 2, rel=1e-12)
    assert mixture_epsilon([0.5, math.inf], 0.6) < math.inf  # half the schedules leak everything
    assert mixture_epsilon([0.5, math.inf], 0.4) == math.inf
    with pytest.raises(ConfigError):
        mixture_epsilon([], d)


def test_table_of_a_constant_schedule_is_the_fixed_w_audit_and_muffliato_sum():
    net = make_network("grid", agents=16, params={"rows": 4, "cols": 4})
    T, v = 5, 5
    spec = LinearGossip(rounds=T, sigma=1.0)
    s = LinearAuditSettings(orders=(2.0,), delta=1e-5)
    rows = sampled_spread([[net.W] * T] * 3, spec, v, net.graph, s)
    audit = audit_gossip(net, spec, v, s)
    charge = muffliato_per_message(net, spec, v, order=2.0)
    for row in rows:
        at = [r for r in audit if r.hops == row.distance]
        exact = np.array([r.rdp[0] for r in at])
        ref = charge[[r.target for r in at]]
        assert row.schedules == 3 and row.targets == len(at)
        assert row.exact_rdp_max == pytest.approx(exact.max(), rel=1e-9)
        assert row.exact_rdp_mean == pytest.approx(exact.mean(), rel=1e-9)
        assert row.mixture_rdp == pytest.approx(exact.max(), rel=1e-9)  # one schedule: no mixing
        assert row.bound_mean == pytest.approx(ref.mean(), rel=1e-12)
        assert row.below_exact == 3 * int(np.sum(ref < exact * (1 - 1e-12)))


def test_table_over_sampled_matchings_orders_its_columns():
    net = make_network("grid", agents=16, params={"rows": 4, "cols": 4})
    spec = LinearGossip(rounds=4, sigma=1.0)
    schedules = [random_matchings(net.graph, 4, seed=k) for k in range(6)]
    rows = sampled_spread(schedules, spec, 0, net.graph)
    assert [r.distance for r in rows] == sorted(r.distance for r in rows)
    for r in rows:
        assert r.exact_rdp_median <= r.exact_rdp_q90 <= r.exact_rdp_max
        assert r.mixture_rdp <= r.exact_rdp_max * (1 + 1e-12)
        assert r.mixture_eps <= r.exact_eps_max * (1 + 1e-9)
    charge = muffliato_schedule_charge(schedules[0], spec, 0)
    assert charge.shape == (16,) and np.all(charge >= 0)
    with pytest.raises(ConfigError) as err:
        spread_by_distance(np.zeros((2, 3)), np.zeros(2), LinearAuditSettings())
    assert err.value.field == "mu"
