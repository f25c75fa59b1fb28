"""Leakage over random schedules: the mixture formulas against numerical integration of the mixed
densities and the Gaussian mechanism's scalar curve, the per-distance table against the fixed-W audit
and Muffliato's per-message sum of bounds.py when every sampled schedule is the same W, its flag
columns against a hand-computed case, and the sampled schedules' matrices against the topology
backend and the recorded-schedule audit (a second construction of the same view)."""

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
from dpgossip.protocols.gossip.audit import audit_gossip, audit_view
from dpgossip.protocols.gossip.bounds import muffliato_per_message
from dpgossip.protocols.gossip.dynamic_release import dynamic_leakage
from dpgossip.protocols.gossip.linear import LinearGossip
from dpgossip.protocols.gossip.schedule_mixture import (
    averaging_steps,
    gaussian_deltas,
    mixture_delta,
    mixture_epsilon,
    mixture_rdp,
    muffliato_schedule_charge,
    spread_by_distance,
)
from dpgossip.protocols.gossip.scheduled import observe_schedule
from dpgossip.topology import make_network, schedule_samplers
from dpgossip.topology.schedule_backend import apply_schedule
from dpgossip.topology.schedules import REPLY_LOST, MixingSchedule
from tests.protocols.gossip.dynamic_schedules import random_matchings


def sampled_spread(schedules, spec, observer, graph, settings=None):
    """:func:`spread_by_distance` of the exact known-schedule leakage of every target to ``observer``
    over the given schedules, beside :func:`muffliato_schedule_charge` (as the dynamic-gossip
    scenario's leakage table computes them)."""
    s = settings or LinearAuditSettings()
    mus, charges, targets, hops = [], [], None, None
    for given in schedules:
        sched = averaging_steps(given) if isinstance(given, MixingSchedule) else given
        rows = dynamic_leakage(sched, spec, observer, s, graph=graph)
        mus.append([r.mu_upper for r in rows])
        targets = np.array([r.target for r in rows])
        hops = np.array([r.hops for r in rows])
        charges.append(muffliato_schedule_charge(sched, spec, observer, order=s.orders[0],
                                                 sensitivity=s.sensitivity)[targets])
    return spread_by_distance(np.array(mus), hops, s, bound=np.array(charges), targets=targets)


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


def test_flag_columns_of_a_hand_computed_case():
    """Two schedules, two targets at distance 1, order 2: exact RDP ``mu^2`` is ``[[1, 0], [0, 1]]``.
    Target 0's mean bound equals its mean RDP (1/2) but is below its mixture RDP ``ln((e + 1) / 2)``;
    target 1's mean bound 0.15 is below both."""
    mu = np.array([[1.0, 0.0], [0.0, 1.0]])
    bound = np.array([[0.9, 0.1], [0.1, 0.2]])
    (row,) = spread_by_distance(mu, np.array([1, 1]), LinearAuditSettings(orders=(2.0,)), bound=bound,
                                targets=np.array([7, 3]))
    assert row.target_ids == (7, 3)
    assert row.below_exact == 2 and row.target_below_exact == (1, 1)   # 0.9 < 1 and 0.2 < 1
    assert row.target_exact_rdp_mean == (0.5, 0.5)
    assert row.target_bound_mean == pytest.approx((0.5, 0.15), rel=1e-15)
    assert row.target_mixture_rdp == pytest.approx((math.log((math.e + 1) / 2),) * 2, rel=1e-12)
    assert row.mean_below_exact_mean == 1 and row.mean_below_mixture == 2
    assert row.to_row()["target_ids"] == [7, 3]
    with pytest.raises(ConfigError) as err:
        spread_by_distance(mu, np.array([1, 1]), LinearAuditSettings(), targets=np.array([1]))
    assert err.value.field == "mu"


@pytest.mark.parametrize("kind", ["pairwise", "matchings"])
def test_averaging_steps_follow_the_schedule_and_give_the_recorded_schedule_audit(kind: str):
    """The matrices move values as the topology backend applies the schedule, and the exact leakage
    built on them equals the audit of the recorded-schedule view (scheduled.observe_schedule, which
    takes its message rows from the backend)."""
    net = make_network("grid", agents=9, params={"rows": 3, "cols": 3})
    s = (schedule_samplers.pairwise_gossip(schedule_samplers.neighbour_probabilities(net.graph), 3,
                                           ticks=25)
         if kind == "pairwise" else schedule_samplers.random_matchings(4, 3, graph=net.graph))
    mats = averaging_steps(s)
    assert len(mats) == s.steps
    x = np.random.default_rng(0).normal(size=9)
    y = x.copy()
    for W in mats:
        y = W @ y
    np.testing.assert_allclose(y, apply_schedule(s, x), atol=1e-13)
    settings = LinearAuditSettings(orders=(2.0,))
    got = {r.target: r.mu for r in dynamic_leakage(mats, LinearGossip(rounds=len(mats), sigma=1.0), 4,
                                                   settings, graph=net.graph)}
    want = {r.target: r.mu for r in audit_view(observe_schedule(s, 1.0, 4), net, settings)}
    assert set(got) == set(want) and max(want.values()) > 0.1
    for u, mu in want.items():
        assert got[u] == pytest.approx(mu, abs=1e-9)


def test_averaging_steps_refuse_schedules_the_release_does_not_model():
    net = make_network("ring", agents=5)
    ok = schedule_samplers.pairwise_gossip(schedule_samplers.neighbour_probabilities(net.graph), 1,
                                           ticks=3)
    lost = MixingSchedule(m=5, kind="pairwise", times=ok.times, pairs=ok.pairs,
                          outcomes=np.array([0, REPLY_LOST, 0]))
    push = schedule_samplers.push_sum_schedule(net.graph.to_directed(), 2)
    for bad in (lost, push, [np.eye(5)]):
        with pytest.raises(ConfigError) as err:
            averaging_steps(bad)
        assert err.value.field == "schedule"


def test_muffliato_charge_along_a_time_varying_schedule_is_the_forward_message_sum():
    """Forward oracle: run the products P_t = W_t ... W_1 step by step and, at each step, add for every
    neighbour w of the observer in W_{t+1} the charge alpha / (2 sigma^2) (P_t)_{wu}^2 / ||(P_t)_w||^2."""
    net = make_network("grid", agents=9, params={"rows": 3, "cols": 3})
    sched = random_matchings(net.graph, 5, seed=11)
    v, sigma, alpha = 4, 0.7, 3.0
    want = np.zeros(9)
    P = np.eye(9)
    for W in sched:
        A = W.toarray()
        for w in np.flatnonzero(A[v]):
            if w != v:
                want += alpha / (2 * sigma ** 2) * P[w] ** 2 / np.sum(P[w] ** 2)
        P = A @ P
    got = muffliato_schedule_charge(sched, LinearGossip(rounds=5, sigma=sigma), v, order=alpha)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    assert want.max() > 0
