"""The delta a certified bound proves at an epsilon (dpgossip.privacy.delta_from_bound and
certified_bound.certified_delta_upper): every answer is a delta at which the bound was computed and found
at most epsilon (or the trivial 1), close to the smallest such delta, and sound against brute force."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpgossip.privacy.certified_bound import certified_delta_upper, certified_upper_bounds
from dpgossip.privacy.delta_from_bound import NEAR_ONE, SMALLEST, delta_upper
from tests.privacy.test_certified_bound import _brute_worst_delta, _model, _problem


def _smooth_bound(r: float):
    """A Gaussian-like bound ``b(delta) = r + 2 sqrt(r ln(1/delta))`` and its exact inverse."""
    calls: list[float] = []

    def b(delta: float) -> float:
        calls.append(delta)
        return r + 2 * math.sqrt(r * math.log(1 / delta))

    def inverse(eps: float) -> float:
        return math.exp(-((eps - r) / 2) ** 2 / r) if eps > r else 1.0
    return b, inverse, calls


@pytest.mark.parametrize("r", [0.05, 0.5, 5.0])
@pytest.mark.parametrize("eps", [1.0, 5.0, 20.0])
def test_the_answer_is_evaluated_sound_and_tight(r, eps):
    b, inverse, calls = _smooth_bound(r)
    got = delta_upper(b, eps)
    if got == 1.0:
        assert b(NEAR_ONE) > eps
        return
    assert got in calls or got == NEAR_ONE  # a delta at which the bound was computed
    assert b(got) <= eps  # proven there
    truth = max(inverse(eps), SMALLEST)
    assert truth <= got <= truth * (1 + 2e-3) or got - truth <= 2e-3 * (1 - truth)
    assert len(calls) <= 25  # regula falsi, not a 40-step bisection


def test_nothing_below_one_and_a_lowest_already_proven():
    b, _, _ = _smooth_bound(5.0)
    assert delta_upper(b, 4.0) == 1.0  # b >= r = 5 everywhere
    assert delta_upper(b, 30.0, lowest=1e-3) == 1e-3  # b(1e-3) <= 30: lowest is returned as it is


def test_an_infinite_bound_at_small_delta_is_bisected():
    def b(delta: float) -> float:
        return math.inf if delta < 1e-6 else 1.0 + math.log(1e-2 / delta) if delta < 1e-2 else 1.0

    got = delta_upper(b, 3.0)
    assert b(got) <= 3.0 and got <= 1e-2 * math.exp(-2.0) * 1.01


@pytest.mark.parametrize(("T", "c", "topology", "scale"), [
    (2, 1, "path", 1.0), pytest.param(1, 2, "paper-ring4", 0.5, marks=pytest.mark.slow)])
def test_the_bound_holds_at_its_delta_and_no_grid_neighbour_beats_it(T, c, topology, scale):
    """certified_delta_upper: the bound recomputed at the returned delta is at most epsilon, and the
    brute-force worst exact delta at epsilon of a grid of neighbours is at most the returned delta."""
    data, net, params = _problem(2, seed=1, rows=5, T=T, c=c, topology=topology, scale=scale)
    model = _model(data, net, params)
    eps = certified_upper_bounds(model, 1e-3, targets=[1])[1].epsilon * 1.2
    got = certified_delta_upper(model, [eps], targets=[1])[1][0]
    assert got < 1.0
    assert certified_upper_bounds(model, got, targets=[1])[1].epsilon <= eps
    assert _brute_worst_delta(data, net, params, 1, eps, got, n=2) <= got * 1.01


@pytest.mark.slow
def test_lowest_narrows_without_changing_what_is_proven():
    data, net, params = _problem(2, seed=0, rows=5, T=2, c=2, scale=0.5)
    model = _model(data, net, params)
    eps = [certified_upper_bounds(model, 1e-4, targets=[0])[0].epsilon]
    free = certified_delta_upper(model, eps, targets=[0], lowest={0: (1e-9,)})[0][0]
    narrowed = certified_delta_upper(model, eps, targets=[0], lowest={0: (free / 10,)})[0][0]
    assert narrowed == pytest.approx(free, rel=3e-3)
    assert np.isclose(free, 1e-4, rtol=3e-3)  # the bound's own delta at its epsilon, found back
