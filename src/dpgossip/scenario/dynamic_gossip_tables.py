"""The tidy tables of a dynamic-gossip scenario, from the runs of each mode.

* :func:`time_rows`: one row per (mode, time) on ``points`` times evenly spread over
  ``[0, horizon]``;
* :func:`message_rows`: one row per (mode, message count) on at most ``points`` counts evenly spread
  over ``[0, M]``, ``M`` the fewest messages any run of the mode delivered (so every run is present at
  every count);
* :func:`distance_rows`: one row per (mode, graph distance) from
  :func:`~dpgossip.protocols.gossip.schedule_mixture.spread_by_distance` over every (run, pair) at that
  distance;
* :func:`pair_rows`: one row per (mode, observer, target).

Error columns are over the runs: mean, 10 %, 50 % and 90 % quantiles.  Leakage columns are Renyi
divergences at ``alpha`` and ``epsilon`` at ``delta`` of the exact known-schedule leakage; over
sampled schedules the maximum is an estimate from below of the worst schedule's value, not a bound,
and the mean, quantile and mixture columns are Monte Carlo estimates of expectations over schedules
(docs/dynamic-leakage.md, Section 2): the ``note`` column says so on every such row.
"""

from __future__ import annotations

import numpy as np

from dpgossip.privacy.linear_allpairs import gaussian_epsilons
from dpgossip.privacy.linear_audit import LinearAuditSettings
from dpgossip.protocols.gossip.schedule_mixture import (
    mixture_epsilon,
    mixture_rdp,
    spread_by_distance,
)
from dpgossip.scenario.dynamic_gossip_runs import RunTrace

__all__ = ["time_rows", "message_rows", "distance_rows", "pair_rows", "SAMPLED", "ONE_SCHEDULE"]

SAMPLED = ("sampled max is an estimate, not a bound: the largest over {n} sampled schedules (from "
           "below); mean, quantile and mixture columns are Monte Carlo estimates over schedules")
"""The ``note`` of a row over sampled schedules (``{n}``: their number)."""
ONE_SCHEDULE = "one schedule (deterministic mode): every column is its exact value"
"""The ``note`` of a row of a deterministic mode."""


def _stats(values: np.ndarray) -> dict[str, float]:
    q10, q50, q90 = np.quantile(values, (0.1, 0.5, 0.9), axis=0)
    return {"error_mean": values.mean(axis=0), "error_q10": q10, "error_median": q50, "error_q90": q90}


def _rows(mode: str, axis: str, grid: np.ndarray, other: str, other_values: np.ndarray,
          error: np.ndarray, disagreement: np.ndarray) -> list[dict[str, object]]:
    stats = _stats(error)
    dis = disagreement.mean(axis=0)
    return [{"mode": mode, axis: float(x), "runs": error.shape[0], other: float(other_values[k]),
             **{name: float(col[k]) for name, col in stats.items()},
             "disagreement_mean": float(dis[k])} for k, x in enumerate(grid)]


def time_rows(mode: str, traces: list[RunTrace], horizon: float, points: int) -> list[dict[str, object]]:
    """Error against simulated time (module docstring); ``messages_mean`` is the mean number of
    messages delivered by then."""
    grid = np.linspace(0.0, horizon, points)
    done = [np.searchsorted(t.ends, grid, side="right") for t in traces]
    error = np.array([t.error[k] for t, k in zip(traces, done, strict=True)])
    dis = np.array([t.disagreement[k] for t, k in zip(traces, done, strict=True)])
    sent = np.array([np.concatenate([[0], t.messages])[k] for t, k in zip(traces, done, strict=True)])
    return _rows(mode, "time", grid, "messages_mean", sent.mean(axis=0), error, dis)


def message_rows(mode: str, traces: list[RunTrace], points: int) -> list[dict[str, object]]:
    """Error against delivered messages (module docstring); ``time_mean`` is the mean simulated time
    at which the last step within the count ended."""
    total = min(int(t.messages[-1]) if t.messages.size else 0 for t in traces)
    grid = np.unique(np.round(np.linspace(0.0, total, points)))
    done = [np.searchsorted(t.messages, grid, side="right") for t in traces]
    error = np.array([t.error[k] for t, k in zip(traces, done, strict=True)])
    dis = np.array([t.disagreement[k] for t, k in zip(traces, done, strict=True)])
    when = np.array([np.concatenate([[0.0], t.ends])[k] for t, k in zip(traces, done, strict=True)])
    return _rows(mode, "messages", grid, "time_mean", when.mean(axis=0), error, dis)


def _note(runs: int) -> str:
    return ONE_SCHEDULE if runs == 1 else SAMPLED.format(n=runs)


def distance_rows(mode: str, traces: list[RunTrace], pairs: np.ndarray,
                  settings: LinearAuditSettings) -> list[dict[str, object]]:
    """Per graph distance, the spread of the exact known-schedule leakage over every (run, pair)
    (module docstring)."""
    mu = np.array([t.mu for t in traces])
    charge = _charges(traces)
    out = []
    for s in spread_by_distance(mu, pairs[:, 2], settings, bound=charge):
        row = {"mode": mode, "distance": s.distance, "pairs": s.targets, "schedules": s.schedules,
               "rdp_mean": s.exact_rdp_mean, "rdp_median": s.exact_rdp_median,
               "rdp_q90": s.exact_rdp_q90, "rdp_max": s.exact_rdp_max,
               "epsilon_mean": s.exact_eps_mean, "epsilon_max": s.exact_eps_max,
               "mixture_rdp": s.mixture_rdp, "mixture_epsilon": s.mixture_eps}
        if charge is not None:
            row.update({"charge_mean": s.bound_mean, "charge_max": s.bound_max,
                        "charge_below_exact": s.below_exact,
                        "mean_charge_below_mean_exact": s.mean_below_exact_mean,
                        "mean_charge_below_mixture": s.mean_below_mixture})
        out.append({**row, "note": _note(s.schedules)})
    return out


def _charges(traces: list[RunTrace]) -> np.ndarray | None:
    """``(runs, pairs)`` Muffliato charges, or ``None`` when the scenario does not ask for them."""
    if traces[0].charge is None:
        return None
    return np.array([t.charge for t in traces])


def pair_rows(mode: str, traces: list[RunTrace], pairs: np.ndarray,
              settings: LinearAuditSettings) -> list[dict[str, object]]:
    """One row per audited (observer, target) pair: the spread of its exact known-schedule leakage
    over the runs (module docstring)."""
    mu = np.array([t.mu for t in traces])
    a, d = settings.orders[0], settings.delta
    rdp = a * mu ** 2 / 2
    eps = gaussian_epsilons(mu.ravel(), d).reshape(mu.shape)
    charge = _charges(traces)
    out = []
    for k, (v, u, dist) in enumerate(pairs.tolist()):
        row = {"mode": mode, "observer": v, "target": u, "distance": dist,
               "schedules": mu.shape[0], "rdp_mean": float(rdp[:, k].mean()),
               "rdp_median": float(np.median(rdp[:, k])), "rdp_max": float(rdp[:, k].max()),
               "epsilon_mean": float(eps[:, k].mean()), "epsilon_max": float(eps[:, k].max()),
               "mixture_rdp": mixture_rdp(mu[:, k], a),
               "mixture_epsilon": mixture_epsilon(mu[:, k], d) if mu.shape[0] > 1
               else float(eps[0, k])}
        if charge is not None:  # the flag of spread_by_distance, per pair
            row.update({"charge_mean": float(charge[:, k].mean()), "charge_max": float(charge[:, k].max()),
                        "charge_below_exact": int(np.sum(charge[:, k] < rdp[:, k] * (1 - 1e-12)))})
        out.append({**row, "note": _note(mu.shape[0])})
    return out
