"""The delta a certified bound proves at an epsilon: the safeguarded regula falsi of
:func:`dpgossip.privacy.delta_from_bound.delta_upper` against a plain bisection on ``logit(delta)`` to the
same precision (the method of the script it replaced bisected ``ln(1 - delta)`` 40 times).

Problem: the points of ``scenarios/paper-fig3.toml`` at T = 1 and T = 5 (Wine and Diabetes; the
paper's 4-agent ring, c = 5, constant noise 1), every target, at epsilon = 5 and at epsilon = 50, from
the lowest delta ``1e-300`` (no lower estimate given). Each bound evaluation is one call of the
certified bound of one target (``certified_bound._direction`` both ways, its delta-free parts computed
once). Both methods run side by side in one process on the same bound functions; the rows report the
number of bound evaluations (the cost: every evaluation is a full bound) and the seconds, and check that
both answers are proven (the bound at the answer is at most epsilon) and agree to the 0.1 % precision.

Run: ``python benchmarks/bench_delta_upper.py``. Not a test. Prints one JSON line per point and a summary.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

from dpgossip.privacy import certified_bound as cb
from dpgossip.privacy.delta_from_bound import NEAR_ONE, SMALLEST, _expit, _logit, delta_upper
from dpgossip.protocols.ddppm.audit import _bound_model
from dpgossip.scenario import load_scenario
from dpgossip.scenario.problem import build_structure, resolve_problem

ROOT = Path(__file__).resolve().parents[1]
REL_TOL = 1e-3


def bisection(bound_at, epsilon: float, lowest: float = SMALLEST) -> float:
    """The reference: bisection on logit(delta) between ``lowest`` and NEAR_ONE to ``REL_TOL``."""
    if not bound_at(NEAR_ONE) <= epsilon:
        return 1.0
    if bound_at(lowest) <= epsilon:
        return lowest
    a, b, moved = _logit(lowest), _logit(NEAR_ONE), False
    while b - a > REL_TOL:
        mid = 0.5 * (a + b)
        if bound_at(_expit(mid)) <= epsilon:
            b, moved = mid, True
        else:
            a = mid
    return _expit(b) if moved else NEAR_ONE


def _bound_functions(model):
    rho_of, cov, facts = cb._prepared(model, "bounded", None, "best")
    for tf in facts:
        def at(delta: float, tf=tf) -> float:
            fwd = cb._direction(model, [tf], cov, delta, rho_of, True, "best")[0]
            rev = cb._direction(model, [tf], cov, delta, rho_of, False, "best")[0]
            return cb._assemble(tf, fwd, rev, delta, "bounded").epsilon
        yield tf.target, at


def _timed(method, bound_at, epsilon):
    calls = []

    def counted(delta: float) -> float:
        calls.append(delta)
        return bound_at(delta)
    t0 = time.perf_counter()
    value = method(counted, epsilon)
    return value, len(calls), time.perf_counter() - t0


def main() -> None:
    sc = load_scenario(ROOT / "scenarios" / "paper-fig3.toml")
    totals = {"new": [0, 0.0], "bisection": [0, 0.0]}
    for p in sc.points():
        ds, T = p.axes["data.source"], int(p.axes["protocol.iterations"])
        if ds == "breast_cancer" or T not in (1, 5):
            continue
        problem = resolve_problem(p.config, build_structure(p.config, sc.base))
        model = _bound_model(problem.data, problem.network, problem.params)
        for j, at in _bound_functions(model):
            for eps in (5.0, 50.0):
                new, n_new, s_new = _timed(delta_upper, at, eps)
                ref, n_ref, s_ref = _timed(bisection, at, eps)
                assert new == 1.0 or at(new) <= eps
                assert ref == 1.0 or at(ref) <= eps
                agree = math.isclose(new, ref, rel_tol=3e-3) or abs(new - ref) <= 3e-3 * (1 - ref)
                totals["new"][0] += n_new
                totals["new"][1] += s_new
                totals["bisection"][0] += n_ref
                totals["bisection"][1] += s_ref
                print(json.dumps({"dataset": ds, "T": T, "target": j, "epsilon": eps, "delta_new": new,
                                  "delta_bisection": ref, "agree": agree, "evaluations_new": n_new,
                                  "evaluations_bisection": n_ref, "seconds_new": round(s_new, 3),
                                  "seconds_bisection": round(s_ref, 3)}), flush=True)
    print(json.dumps({"evaluations_ratio": totals["new"][0] / totals["bisection"][0],
                      "seconds_ratio": totals["new"][1] / totals["bisection"][1],
                      "evaluations": {k: v[0] for k, v in totals.items()}}))


if __name__ == "__main__":
    main()
