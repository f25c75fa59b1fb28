"""Noise calibration: the scale found meets the target, a smaller one does not, floors are reported."""

import math

import numpy as np
import pytest

from dpgossip.errors import ConfigError
from dpgossip.privacy.scale_search import ScaleSearchOptions
from dpgossip.protocols.ddppm.audit import AuditOptions, audit_pairs
from dpgossip.protocols.ddppm.calibrate import (
    AuditSettings,
    Calibration,
    FixedProtocol,
    _monotone,
    calibrate_noise,
    check_target,
)
from dpgossip.protocols.ddppm.params import NoiseSchedule, resolve_params
from dpgossip.protocols.ddppm.search import SearchSettings
from dpgossip.scenario.problem import build_structure
from dpgossip.scenario.schema import validate

# 4-ring, 4 rows of d = 2 per agent, T = 2, c = 1: every audit takes well under a second.
T, C = 2, 1
# The bisection's mechanics are tested with the smallest search (one level, one row, one start).
TINY = SearchSettings(name="tiny", levels=1, rows=1, random=0, steps=1, starts=1, exact=1)
FAST = AuditSettings(method="rdp", search=TINY, targets=[0])  # target 0: epsilon 68 at s = 0.5, 52 at
# the floor (the other targets sit near 620 at every scale)


@pytest.fixture(scope="module")
def problem():
    raw = {"name": "c", "seed": 0,
           "data": {"source": "synthetic", "standardize": False,
                    "synthetic": {"n": 16, "d": 2, "spectrum": [1.0, 0.8]}},
           "network": {"topology": "ring", "agents": 4},
           "protocol": {"iterations": T, "consensus_steps": C}}
    structure = build_structure(validate(raw))
    network, data = structure.network, structure.data
    return data, network


def worst(data, network, family, s, method="rdp", sigma_q=None, **kw):
    params = resolve_params(data, network, iterations=T, consensus_steps=C, sigma_q=sigma_q,
                            noise=NoiseSchedule(kind=family, scale=s))
    audit = audit_pairs(data, network, params, delta=1e-5, methods=(method,), seed=0, search=TINY,
                        options=AuditOptions(**kw))
    return audit.worst(method).epsilon[method]


@pytest.fixture(scope="module")
def constant_cal(problem):
    data, network = problem
    return calibrate_noise(data, network, iterations=T, consensus_steps=C, epsilon=60.0,
                           delta=1e-5, family="constant", audit=FAST)


def test_scale_meets_the_target_and_is_the_smallest(problem, constant_cal):
    data, network = problem
    cal = constant_cal
    assert isinstance(cal, Calibration)
    assert cal.met and cal.monotone_ok and not cal.notes
    tol = 0.02
    assert cal.epsilon <= 60.0 * (1 + tol)
    # a cold search at the scale finds no more than the check (a search warm-started from the pool)
    assert worst(data, network, "constant", cal.scale, targets=[0]) <= cal.epsilon * (1 + 1e-9)
    # the search compares the worst delta at epsilon = 60 with 1e-5 (the equivalent criterion); the
    # bracket closed to rel_tol; the first audit and the check are full searches, the rest the pool
    above = [s for s, d in cal.evaluations if d > 1e-5]
    assert max(above) * (1 + tol) >= cal.scale > max(above)
    assert all(d <= 1e-5 for s, d in cal.evaluations if s >= cal.scale)
    assert cal.history[0][2] == "search:tiny" and cal.history[-1] == (cal.scale, cal.delta,
                                                                       "search:tiny")
    assert {h[2] for h in cal.history[1:-1]} <= {f"pool:{n}" for n in range(1, 20)}
    assert cal.pooled >= 1


def test_result_is_ready_for_a_scenario(constant_cal):
    cal = constant_cal
    assert cal.noise == {"schedule": "constant", "scale": cal.scale}
    assert cal.to_toml() == f'noise = {{ schedule = "constant", scale = {cal.scale!r} }}'
    np.testing.assert_allclose(cal.params.sigma_p, [[cal.scale] * T])
    assert cal.params.sigma_q == pytest.approx(1 / 4)  # 1/sqrt(n), not calibrated
    row = cal.to_row()
    assert row["noise_scale"] == cal.scale and row["calibration_met"] is True
    assert 0 < cal.delta <= 1e-5 * 1.5  # delta at the target epsilon, near the target delta
    d = cal.to_dict()
    assert d["noise"] == cal.noise and len(d["history"]) == len(cal.history)
    assert {"observer", "target", "hops", "row"} <= set(cal.worst)


def test_explicit_family_scales_the_base_values(problem):
    data, network = problem
    cal = calibrate_noise(data, network, iterations=T, consensus_steps=C, epsilon=60.0,
                          delta=1e-5, family="explicit", base_values=[1.0, 2.0], audit=FAST)
    assert cal.met
    assert cal.noise["values"] == [cal.scale, 2 * cal.scale]
    np.testing.assert_allclose(cal.params.sigma_p, [[cal.scale, 2 * cal.scale]])


def test_unreachable_target_reports_the_floor(problem):
    """The view is zero-mean Gaussian with a covariance proportional to the noise: with sigma_q fixed,
    raising s drives eps* to a floor, and a target below it cannot be met."""
    data, network = problem
    with pytest.warns(RuntimeWarning, match="levels off"):
        cal = calibrate_noise(data, network, iterations=T, consensus_steps=C, epsilon=40.0,
                              delta=1e-5, family="constant", audit=FAST)
    assert not cal.met and cal.limit_epsilon is not None and cal.limit_epsilon > 40.0
    assert cal.epsilon > 40.0 and "levels off" in cal.notes[-1]
    assert len(cal.evaluations) < 15  # stopped at the plateau, not at s_max


def test_scale_invariance_behind_the_floor(problem):
    """Multiplying sigma_q and sigma_p by the same factor leaves every divergence unchanged."""
    data, network = problem
    one = dict(targets=[0], observers=[1])
    a = worst(data, network, "constant", 0.5, sigma_q=0.25, **one)
    b = worst(data, network, "constant", 50.0, sigma_q=25.0, **one)
    assert a == pytest.approx(b, rel=1e-9)


def test_exact_method_on_one_pair(problem):
    data, network = problem
    cal = calibrate_noise(data, network, iterations=T, consensus_steps=C, epsilon=50.0,
                          delta=1e-5, family="geometric",
                          audit=AuditSettings(method="exact", targets=[0], observers=[1], search=TINY))
    assert cal.met and cal.method == "exact" and cal.epsilon <= 50.0 * 1.02
    ratio = cal.params.mu[1] / cal.params.mu[0]
    np.testing.assert_allclose(cal.params.sigma_p[0], cal.scale * ratio ** np.arange(1, T + 1))


def test_monotonicity_check():
    assert _monotone([(1.0, 10.0), (2.0, 8.0), (4.0, 8.1)], 0.05) == (True, "")
    ok, msg = _monotone([(1.0, 10.0), (2.0, 5.0), (4.0, 9.0)], 0.05)
    assert not ok and "not monotone" in msg and "delta(4)" in msg
    assert _monotone([(1.0, 5e-16), (2.0, 1.5e-15)], 0.05)[0]  # roundoff, not a rise
    assert _monotone([(1.0, math.inf), (2.0, math.inf), (4.0, 3.0)], 0.05)[0]
    assert not _monotone([(1.0, 3.0), (2.0, math.inf)], 0.05)[0]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"epsilon": 0.0}, r"calibrate\.epsilon must be a finite number > 0, got 0\.0"),
        ({"epsilon": -1.0}, r"calibrate\.epsilon must be a finite number > 0, got -1\.0"),
        ({"epsilon": math.inf}, r"calibrate\.epsilon must be a finite number > 0, got inf"),
        ({"delta": 0.0}, r"calibrate\.delta must be in \(0, 1\), got 0\.0"),
        ({"delta": 1.0}, r"calibrate\.delta must be in \(0, 1\), got 1\.0"),
        ({"family": "geometrc"}, r"calibrate\.family: 'geometrc' is not allowed.*'geometric'"),
        ({"audit": AuditSettings(method="chernoff")}, r"calibrate\.method: 'chernoff' is not allowed"),
        ({"family": "explicit"}, r"family 'explicit' needs base values"),
        ({"family": "explicit", "base_values": [1.0]}, r"one value per iteration \(2\), got 1"),
        ({"base_values": [1.0, 1.0]}, r"only used with family 'explicit'"),
        ({"protocol": FixedProtocol(rank=2)}, r"protocol\.rank must be 1, got 2"),
        ({"scale_search": ScaleSearchOptions(rel_tol=0.0)}, r"calibrate\.rel_tol must be in \(0, 1\)"),
        ({"scale_search": ScaleSearchOptions(s_lo=2.0, s_hi=1.0)}, r"need s_lo < s_hi"),
        ({"audit": AuditSettings(search="candidates")},
         r"search = 'candidates' was removed: there is one search"),
    ],
)
def test_bad_inputs(problem, kwargs, message):
    data, network = problem
    args = {"iterations": T, "consensus_steps": C, "epsilon": 1.0, "delta": 1e-5, **kwargs}
    with pytest.raises(ConfigError, match=message):
        calibrate_noise(data, network, **args)


def test_check_target():
    assert check_target(1, 1e-5) == (1.0, 1e-5)
    with pytest.raises(ConfigError, match=r"--\.epsilon must be a number, got 'a'"):
        check_target("a", 1e-5, where="--")


# --- the search logic against a stand-in audit with a known worst epsilon -------------------------
class _StandIn:
    """What calibrate_noise reads from a PairAudit: the worst pair and the delta matrix. The worst
    delta at the target epsilon is ``delta * eps / epsilon``: below the target delta exactly when the
    stand-in's worst epsilon is below the target epsilon (as for a real audit)."""

    def __init__(self, eps, method, delta, epsilon):
        from types import SimpleNamespace

        nb = SimpleNamespace(to_row=lambda: {"row": 0, "replacement": "0 0", "direction": "-x"})
        self.results = {(0, 1): None}
        self._worst = SimpleNamespace(epsilon={method: eps}, delta={method: [delta * eps / epsilon]},
                                      observer=0, target=1, hops=1, neighbour=nb)

    def worst(self, method, by="epsilon"):
        return self._worst

    def matrix(self, method, what, index):
        return np.array([[np.nan, 1e-6], [2e-6, np.nan]])


# --- the optimising search: a full search seeds a pool, the bisection compares pooled neighbours ------
def search_stand_in(monkeypatch, full, pool):
    """``full(s, pooled) -> worst epsilon`` of a full search warm-started from ``pooled`` neighbours,
    ``pool(s, pooled) -> worst epsilon`` of the pooled neighbours alone. Every full search adds one
    neighbour to the pool."""
    import dpgossip.protocols.ddppm.calibrate as mod

    calls = []

    def fake_full(data, network, params, *, methods, delta, epsilons, search, options, **kw):
        warm = options.warm
        s = float(params.sigma_p[0, 0])
        n = sum(len(v) for v in warm.values())
        calls.append(("full", s, n))
        out = _StandIn(full(s, n), methods[0], delta, epsilons[0])
        from types import SimpleNamespace
        out.results = {(0, 1): SimpleNamespace(target=1, neighbour=SimpleNamespace(
            row=n, x_new=np.array([float(n)])))}
        return out

    def fake_pool(data, network, params, pool_, *, methods, delta, epsilons, **kw):
        s = float(params.sigma_p[0, 0])
        n = sum(len(v) for v in pool_.values())
        calls.append(("pool", s, n))
        return _StandIn(pool(s, n), methods[0], delta, epsilons[0])

    monkeypatch.setattr(mod, "audit_pairs", fake_full)
    monkeypatch.setattr(mod, "audit_neighbours", fake_pool)
    monkeypatch.setattr(mod, "_worst_epsilon",
                        lambda check, *a: check.worst(a[-1]).epsilon[a[-1]])
    return calls


def test_search_calibration_bisects_on_the_pool_and_checks_with_a_full_search(problem, monkeypatch):
    calls = search_stand_in(monkeypatch, lambda s, n: 10.0 / s, lambda s, n: 10.0 / s)
    cal = run(problem, epsilon=5.0, search="standard")  # s* = 2
    assert cal.met and cal.search == "standard" and 2.0 <= cal.scale <= 2.0 * 1.02
    assert calls[0] == ("full", 1.0, 0)  # the first audit seeds the pool
    assert all(kind == "pool" for kind, _, _ in calls[1:-1])
    assert calls[-1][:2] == ("full", cal.scale)  # the answer is checked by a full search
    assert cal.history[0][2] == "search:standard" and cal.history[-1][2] == "search:standard"
    assert {h[2] for h in cal.history[1:-1]} == {"pool:1"}
    assert "per-instance lower estimate" in cal.meaning and "not a DP guarantee" in cal.meaning
    assert cal.to_row()["calibration_meaning"] == cal.meaning


def test_search_calibration_goes_on_when_the_check_finds_a_worse_neighbour(problem, monkeypatch):
    # the pool knows a neighbour with epsilon 10/s; the full search at the answer finds one with 20/s,
    # which joins the pool: the bisection goes on upwards and the second check meets the target
    calls = search_stand_in(monkeypatch, lambda s, n: 20.0 / s if n else 10.0 / s,
                            lambda s, n: 20.0 / s if n >= 2 else 10.0 / s)
    cal = run(problem, epsilon=5.0, search="quick")  # s* = 2 on the pool of one, 4 with the worse one
    assert cal.met and 4.0 <= cal.scale <= 4.0 * 1.02
    assert "join the pool" in cal.notes[0]
    fulls = [c for c in calls if c[0] == "full"]
    assert len(fulls) == 3 and fulls[-1][1] == cal.scale
    assert len(cal.history) == len({(s, e) for s, _, e in cal.history})  # no audit twice


def test_search_calibration_on_a_real_problem(problem):
    """End to end on the small problem: the answer's full search meets the target; the history starts
    and ends with full searches."""
    data, network = problem
    cal = calibrate_noise(data, network, iterations=T, consensus_steps=C, epsilon=400.0, delta=1e-5,
                          family="constant",
                          audit=AuditSettings(method="rdp", targets=[0], search="quick"))
    assert cal.search == "quick"
    assert cal.history[0][2] == "search:quick" and cal.history[-1] == (cal.scale, cal.delta,
                                                                        "search:quick")
    if cal.met:
        assert cal.delta <= 1e-5 * 1.02
    else:
        assert cal.limit_epsilon is not None and cal.limit_epsilon > 400.0
    params = resolve_params(data, network, iterations=T, consensus_steps=C,
                            noise=NoiseSchedule(kind="constant", scale=cal.scale))
    again = audit_pairs(data, network, params, delta=1e-5, epsilons=(400.0,), methods=("rdp",),
                        search="quick",
                        options=AuditOptions(targets=[0], rank_by="delta", delta_resolution=1e-8))
    # a cold search at the same scale finds no more than the warm-started check did
    assert again.worst("rdp", by="delta").delta["rdp"][0] <= cal.delta * (1 + 1e-9)


def test_search_brackets_and_bisects(problem, monkeypatch):
    same = lambda s, n: 10.0 / s**2  # noqa: E731  (the pool and a full search agree)
    search_stand_in(monkeypatch, same, same)
    cal = run(problem, epsilon=2.5)  # s* = 2
    assert cal.met and cal.monotone_ok and 2.0 <= cal.scale <= 2.0 * 1.02
    assert cal.delta == 2e-6
    cal = run(problem, epsilon=1e3)  # s* = 0.1: halving from 1
    assert cal.met and 0.1 <= cal.scale <= 0.1 * 1.02


def test_search_flags_non_monotone_and_stops_at_s_max(problem, monkeypatch):
    bump = lambda s, n: 20.0 if 2.7 < s < 2.9 else 10.0 / s  # noqa: E731
    search_stand_in(monkeypatch, bump, bump)
    with pytest.warns(RuntimeWarning, match="not monotone"):
        cal = run(problem, epsilon=4.0, s_lo=1.0, s_hi=8.0)
    assert not cal.monotone_ok and cal.met and 2.9 <= cal.scale <= 2.9 * 1.02
    far = lambda s, n: 1e9 / s  # noqa: E731
    search_stand_in(monkeypatch, far, far)
    with pytest.warns(RuntimeWarning, match="s_max"):
        cal = run(problem, epsilon=1.0, s_max=1e3)
    assert not cal.met and cal.scale == 512.0 and cal.limit_epsilon == pytest.approx(1e9 / 512)


def run(problem, *, epsilon=10.0, search="standard", **scale_search):
    data, network = problem
    return calibrate_noise(data, network, iterations=T, consensus_steps=C, epsilon=epsilon,
                           delta=1e-5, family="constant",
                           audit=AuditSettings(method="rdp", search=search),
                           scale_search=ScaleSearchOptions(**scale_search))
