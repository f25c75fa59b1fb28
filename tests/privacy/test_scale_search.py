"""The generic scale search against closed forms: ``worst(s) = c / s`` meets ``v`` exactly from
``s* = c / v`` on, so the answer, the bracket and the number of evaluations are known in advance."""

import math

import pytest

from dpgossip.errors import ConfigError
from dpgossip.privacy.scale_search import (
    Bracket,
    Escalation,
    Floor,
    Plateau,
    Rise,
    ScaleSearchOptions,
    Unconverged,
    Unreached,
    Worst,
    first_rise,
    levelled,
    search_scale,
)


def analytic(f):
    """An evaluator from a closed form ``f(s)`` (the effort and the previous evaluations ignored)."""
    return lambda s, effort, previous: Worst(value=f(s))


def search(f, v, **options):
    return search_scale(analytic(f), analytic(f), target=v, options=ScaleSearchOptions(**options))


def closes_on(found, s_star, rel_tol=0.02):
    """The answer meets the target, lies within ``rel_tol`` above ``s*``, and the largest scale
    evaluated below it misses the target."""
    missed = [e.scale for e in found.evaluations if e.scale < found.scale]
    return (s_star <= found.scale <= s_star * (1 + rel_tol)
            and found.scale / max(missed) <= 1 + rel_tol and max(missed) < s_star)


def test_brackets_upwards_by_doubling_then_bisects():
    found = search(lambda s: 1.0 / s, 0.1)  # s* = 10
    assert found.met and found.reached and found.monotone_ok and not found.events
    assert [e.scale for e in found.evaluations[:5]] == [1.0, 2.0, 4.0, 8.0, 16.0]
    assert closes_on(found, 10.0)
    # bracket [8, 16]: each bisection halves log(hi / lo); ln 2 / ln 1.02 = 35.0 needs 2^6 = 64
    assert len(found.evaluations) == 5 + 6
    assert found.check.check and found.check.scale == found.scale and found.check.effort == 2
    assert found.log == (*found.evaluations, found.check)


def test_brackets_downwards_by_halving():
    found = search(lambda s: 1.0 / s, 10.0)  # s* = 0.1
    assert found.met and not found.events
    assert [e.scale for e in found.evaluations[:5]] == [1.0, 0.5, 0.25, 0.125, 0.0625]
    assert closes_on(found, 0.1)


@pytest.mark.parametrize("rel_tol", [0.3, 0.05, 0.02, 1e-3, 1e-6])
def test_bisection_meets_the_tolerance(rel_tol):
    s_star = 7.3
    found = search(lambda s: s_star / s, 1.0, rel_tol=rel_tol)
    assert found.met and closes_on(found, s_star, rel_tol)
    bracket = Bracket(lo=max(e.scale for e in found.evaluations if e.value > 1.0), hi=found.scale)
    assert bracket.ratio <= 1 + rel_tol


def test_a_given_bracket_is_evaluated_first_and_extended_when_it_does_not_bracket():
    found = search(lambda s: 10.0 / s, 1.0, s_lo=9.0, s_hi=11.0)
    assert [e.scale for e in found.evaluations[:2]] == [9.0, 11.0] and closes_on(found, 10.0)
    found = search(lambda s: 10.0 / s, 1.0, s_lo=1.0, s_hi=2.0)  # both miss: doubling from 2
    assert [e.scale for e in found.evaluations[:5]] == [1.0, 2.0, 4.0, 8.0, 16.0]
    assert closes_on(found, 10.0)
    found = search(lambda s: 10.0 / s, 1.0, s_lo=40.0, s_hi=80.0)  # both meet: halving from 40
    assert [e.scale for e in found.evaluations[:4]] == [40.0, 80.0, 20.0, 10.0]
    assert closes_on(found, 10.0)


def test_escalates_when_the_check_finds_a_larger_value():
    """The search at effort e sees min(e, 2) / s; the check runs at twice the effort. Round 0
    (effort 1) ends near s = 10, where the check sees 2 / 10 > 0.1: the search goes on from there
    at effort 2, ends near s = 20, and the check (effort 4, still 2 / s) meets the target."""
    def value(s, effort, previous):
        return Worst(value=min(effort, 2) / s)

    found = search_scale(value, value, target=0.1)
    assert found.met and found.reached and found.effort == 2 and found.check.effort == 4
    assert closes_on(found, 20.0)
    (esc,) = found.events
    assert isinstance(esc, Escalation) and 10.0 <= esc.scale <= 10.2
    assert esc.value == pytest.approx(2 / esc.scale) and (esc.effort, esc.check_effort) == (1, 2)
    i = next(i for i, e in enumerate(found.log) if e.check)  # the first check
    assert found.log[i].scale == esc.scale and found.log[i].value == esc.value
    assert esc.search_value == found.log[i - 1].value == pytest.approx(1 / esc.scale)
    # the second round starts from the first round's answer, now a known miss, at effort 2
    assert found.evaluations[0].scale == esc.scale and found.evaluations[0].effort == 2
    assert [e.check for e in found.log].count(True) == 2
    # without escalations the first check is final: reached, not met
    once = search_scale(value, value, target=0.1, options=ScaleSearchOptions(escalations=0))
    assert once.reached and not once.met and not once.events and once.effort == 1
    assert once.check.value == pytest.approx(2 / once.scale)


def test_escalations_are_bounded():
    def value(s, effort, previous):  # the check always sees twice what the search saw
        return Worst(value=effort / s)

    found = search_scale(value, value, target=0.1, options=ScaleSearchOptions(escalations=2))
    assert found.reached and not found.met and found.effort == 4
    assert [type(e) for e in found.events] == [Escalation, Escalation]
    assert closes_on(found, 40.0)  # the third round's search: 4 / s <= 0.1


def test_plateau_stops_the_doubling():
    """``w(s) = 2 + 1e-4 / s`` levels off at 2 > 1: two doublings from s = 1 each lower it by about
    2.5e-5 relative, below plateau_tol = 1e-3, so the search stops at s = 4."""
    def w(s):
        return 2.0 + 1e-4 / s

    found = search(w, 1.0)
    assert not found.reached and not found.met and found.scale == 4.0
    (stop,) = found.events
    assert stop == Plateau(start_scale=1.0, start_value=w(1.0), scale=4.0, value=w(4.0))
    assert [e.scale for e in found.evaluations] == [1.0, 2.0, 4.0]
    assert found.check.scale == 4.0 and found.check.value == w(4.0)
    # a steeper fall is not a plateau: doubling goes on to s_max
    steep = search(lambda s: 2.0 + 1.0 / s, 1.0, s_max=100.0)
    assert steep.events == (Unreached(scale=64.0, value=2.0 + 1 / 64, limit="s_max"),)


def test_unreached_at_s_max_or_max_evals():
    found = search(lambda s: 1e9 / s, 1.0, s_max=1e3)
    assert not found.reached and not found.met and found.scale == 512.0
    assert found.events == (Unreached(scale=512.0, value=1e9 / 512, limit="s_max"),)
    assert found.check.scale == 512.0
    found = search(lambda s: 1e9 / s, 1.0, max_evals=5)
    assert found.events == (Unreached(scale=16.0, value=1e9 / 16, limit="max_evals"),)
    assert len(found.evaluations) == 5


def test_floor_when_the_target_is_met_at_s_min():
    found = search(lambda s: 1e-3 / s, 1.0, s_min=0.1)  # s* = 1e-3 < s_min
    assert found.met and found.reached and found.scale == 0.125
    assert found.events == (Floor(scale=0.125),)
    assert [e.scale for e in found.evaluations] == [1.0, 0.5, 0.25, 0.125]


def test_unconverged_bracket_returns_the_upper_end():
    found = search(lambda s: 10.0 / s, 3.0, max_evals=4)  # 1, 2, 4, then sqrt(8): budget spent
    assert found.met and found.scale == 4.0
    assert found.events == (Unconverged(lo=math.sqrt(8.0), hi=4.0),)


def test_non_monotone_values_are_detected():
    """A bump at 2.7 < s < 2.9 above the target: the bisection steps over the closed-form s* = 2.5
    and ends above the bump, and the rise is reported."""
    found = search(lambda s: 20.0 if 2.7 < s < 2.9 else 10.0 / s, 4.0, s_lo=1.0, s_hi=8.0)
    assert found.met and not found.monotone_ok
    assert 2.9 <= found.scale <= 2.9 * 1.02
    rise = found.rise
    assert rise is not None and rise.value == 20.0 and 2.7 < rise.scale < 2.9
    assert rise.low_scale < rise.scale and rise.low_value == 10.0 / rise.low_scale
    assert search(lambda s: 10.0 / s, 4.0).rise is None


def test_first_rise_and_levelled():
    assert first_rise([(1.0, 10.0), (2.0, 8.0), (4.0, 8.1)], 0.05) is None
    assert first_rise([(4.0, 9.0), (1.0, 10.0), (2.0, 5.0)], 0.05) == Rise(
        scale=4.0, value=9.0, low_scale=2.0, low_value=5.0)
    assert first_rise([(1.0, 5e-16), (2.0, 1.5e-15)], 0.05, 1e-12) is None  # below atol
    assert first_rise([(1.0, 5e-16), (2.0, 1.5e-15)], 0.05) is not None
    assert first_rise([(1.0, math.inf), (2.0, math.inf), (4.0, 3.0)], 0.05) is None
    assert first_rise([(1.0, 3.0), (2.0, math.inf)], 0.05) is not None
    assert levelled([2.0, 1.999, 1.998], 1e-3) and not levelled([2.0, 1.9, 1.899], 1e-3)
    assert levelled([math.inf, math.inf, math.inf], 1e-3)
    assert not levelled([math.inf, 5.0, 5.0], 1e-3)


def test_evaluators_get_the_effort_and_every_previous_evaluation():
    seen = []

    def worst(s, effort, previous):
        seen.append((effort, len(previous)))
        return Worst(value=1.0 / s, payload=len(previous))

    found = search_scale(worst, worst, target=0.3, options=ScaleSearchOptions(check_factor=3))
    assert [e.payload for e in found.log] == list(range(len(found.log)))
    assert seen == [(1, i) for i in range(len(found.log) - 1)] + [(3, len(found.log) - 1)]


@pytest.mark.parametrize("options, message", [
    ({"rel_tol": 0.0}, r"scale_search\.rel_tol must be in \(0, 1\), got 0\.0"),
    ({"s_min": 2.0, "s_max": 1.0}, r"scale_search: need 0 < s_min < s_max"),
    ({"s_lo": 2.0, "s_hi": 1.0}, r"scale_search: need s_lo < s_hi, got s_lo=2\.0, s_hi=1\.0"),
    ({"s_hi": -1.0}, r"scale_search\.s_hi must be a finite number > 0, got -1\.0"),
    ({"max_evals": 2}, r"scale_search\.max_evals must be an integer >= 3, got 2"),
    ({"check_factor": True}, r"scale_search\.check_factor must be an integer >= 1, got True"),
    ({"escalations": -1}, r"scale_search\.escalations must be an integer >= 0, got -1"),
    ({"plateau_tol": -1e-3}, r"scale_search\.plateau_tol must be a finite number >= 0"),
    ({"monotone_tol": math.nan}, r"scale_search\.monotone_tol must be a finite number >= 0"),
])
def test_bad_options(options, message):
    with pytest.raises(ConfigError, match=message):
        search(lambda s: 1.0 / s, 1.0, **options)
    with pytest.raises(ConfigError, match=message.replace("scale_search", "calibrate")):
        ScaleSearchOptions(**options).validate("calibrate")
