"""Leakage of gossip over a random schedule: the distribution of the exact known-schedule leakage, the
bounds for an observer that does not know the schedule, and Muffliato's per-message accounting along
the schedule (docs/dynamic-leakage.md).

For one target and a schedule ``sigma`` drawn independently of the data, let ``mu_sigma`` be the exact
Mahalanobis norm of the known-schedule view (:mod:`~dpgossip.protocols.gossip.dynamic_release`).

* The release of the schedule together with the messages has exactly
  ``delta(eps) = E_sigma[delta_G(eps; mu_sigma)]`` (``delta_G`` the Gaussian mechanism's curve) and
  ``D_alpha = (1/(alpha-1)) ln E_sigma[exp((alpha-1) alpha mu_sigma^2 / 2)]``; an observer that sees
  only the messages (or only part of the schedule) sees a post-processing of it, so both are upper
  bounds for it.  :func:`mixture_epsilon` and :func:`mixture_rdp` evaluate them over **sampled**
  schedules: Monte Carlo estimates of the expectations, not certified bounds.
* Joint convexity of hockey-stick divergences and quasi-convexity of Renyi divergences bound both by
  the worst schedule, ``max_sigma``.  The maximum over **sampled** schedules is only an estimate
  (from below) of the maximum over all schedules.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np
from scipy.special import log_ndtr, logsumexp, ndtr

from dpgossip.errors import ConfigError, check_number
from dpgossip.privacy.linear_allpairs import gaussian_epsilons
from dpgossip.privacy.linear_audit import LinearAuditSettings
from dpgossip.protocols.gossip.dynamic_release import (
    check_dynamic_spec,
    check_schedule,
    dynamic_leakage,
    message_coefficients,
    received_messages,
)
from dpgossip.protocols.gossip.linear import LinearGossip

__all__ = ["gaussian_deltas", "mixture_delta", "mixture_epsilon", "mixture_rdp",
           "muffliato_schedule_charge", "DistanceSpread", "spread_by_distance", "sampled_spread",
           "SAMPLED_NOTE"]

SAMPLED_NOTE = ("max and mixture columns are over SAMPLED schedules: estimates of the maximum and of "
                "the expectations over all schedules, not certified bounds")
"""Said with every table of sampled schedules."""


def gaussian_deltas(eps: float, mu: np.ndarray) -> np.ndarray:
    """``delta(eps) = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)`` of a Gaussian mechanism for each
    ``mu`` (``0`` at ``mu = 0``, ``1`` at ``mu = inf``)."""
    mu = np.asarray(mu, dtype=float)
    out = np.where(np.isinf(mu), 1.0, 0.0)
    ok = np.isfinite(mu) & (mu > 0)
    m = mu[ok]
    out[ok] = np.maximum(ndtr(m / 2 - eps / m) - np.exp(eps + log_ndtr(-m / 2 - eps / m)), 0.0)
    return out


def mixture_delta(eps: float, mus: Sequence[float]) -> float:
    """``mean_k delta(eps; mu_k)``: the exact ``delta`` of releasing the schedule with the messages when
    the schedules ``k`` are the equally likely ones (module docstring)."""
    return float(np.mean(gaussian_deltas(eps, np.asarray(mus, dtype=float))))


def mixture_epsilon(mus: Sequence[float], delta: float, *, tol: float = 1e-12) -> float:
    """The ``epsilon >= 0`` with :func:`mixture_delta` ``= delta`` (bisection; ``delta(eps)`` decreases):
    ``0`` when already ``delta(0) <= delta``, ``inf`` when a share above ``delta`` of the schedules has
    ``mu = inf``."""
    d = check_number(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    mus = np.asarray(mus, dtype=float)
    if mus.size == 0:
        raise ConfigError("mus must hold at least one value, got none", field="mus")
    if float(np.mean(np.isinf(mus))) >= d:
        return math.inf
    if mixture_delta(0.0, mus) <= d:
        return 0.0
    lo, hi = 0.0, 1.0
    while mixture_delta(hi, mus) > d:
        lo, hi = hi, 2.0 * hi
    while hi - lo > tol * max(1.0, hi):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if mixture_delta(mid, mus) > d else (lo, mid)
    return hi


def mixture_rdp(mus: Sequence[float], order: float) -> float:
    """``(1/(alpha-1)) ln mean_k exp((alpha-1) alpha mu_k^2 / 2)``: the Renyi divergence of releasing the
    schedule with the messages (equally likely schedules ``k``)."""
    a = check_number(order, "order", low=1.0, low_open=True)
    mus = np.asarray(mus, dtype=float)
    if mus.size == 0:
        raise ConfigError("mus must hold at least one value, got none", field="mus")
    if np.any(np.isinf(mus)):
        return math.inf
    return float(logsumexp((a - 1) * a * mus ** 2 / 2) - math.log(mus.size)) / (a - 1)


def muffliato_schedule_charge(schedule: Iterable[object], spec: LinearGossip, observer: int, *,
                              order: float = 2.0, sensitivity: float = 1.0) -> np.ndarray:
    """Muffliato's per-message Renyi charge summed over the messages the observer receives along the
    schedule, for every target: ``alpha Delta^2 / (2 sigma^2) sum_{(w, r)} Phi(r, 0)_{wu}^2 /
    ||Phi(r, 0)_w||^2``.

    It charges each message as if its noise were fresh; all messages share ``y^0``'s noise, so the
    sum is not a bound in general (:mod:`~dpgossip.protocols.gossip.bounds`).  With ``W_t = W`` it is
    :func:`~dpgossip.protocols.gossip.bounds.muffliato_per_message`.  Shape ``(m,)``.

    Raises
    ------
    ConfigError
        Unless ``spec`` is ``gossip-average`` with one ``sigma``.
    """
    sched = check_schedule(schedule)
    check_dynamic_spec(spec, sched)
    if spec.protocol != "gossip-average" or not isinstance(spec.sigma, float):
        raise ConfigError(f"spec: Muffliato's charge is for gossip-average with one sigma, got "
                          f"protocol {spec.protocol!r}, sigma {spec.sigma!r}", field="spec")
    alpha = check_number(order, "order", low=1.0, low_open=True)
    bound = check_number(sensitivity, "sensitivity", low=0.0, low_open=True)
    if spec.sigma == 0:
        return np.full(sched[0].shape[0], math.inf)
    P = message_coefficients(sched, received_messages(sched, (int(observer),)))[0]
    norms2 = np.sum(P * P, axis=1, keepdims=True)
    terms = np.divide(P * P, norms2, out=np.zeros_like(P), where=norms2 > 0)
    return alpha * bound ** 2 / (2 * spec.sigma ** 2) * terms.sum(axis=0)


@dataclass(frozen=True, slots=True, kw_only=True)
class DistanceSpread:
    """Leakage to one observer at one graph distance over sampled schedules (RDP at ``order``).

    The ``exact_*`` columns describe the known-schedule leakage over all (schedule, target) pairs at
    this distance; ``worst_*`` the maximum over the sampled schedules (an estimate of the bound by
    the worst schedule); ``mixture_*`` the largest over the targets of :func:`mixture_rdp` and
    :func:`mixture_epsilon` (Monte Carlo estimates of the schedule-and-messages release).
    """

    distance: int
    targets: int
    schedules: int
    order: float
    delta: float
    exact_rdp_mean: float
    exact_rdp_median: float
    exact_rdp_q90: float
    exact_rdp_max: float
    exact_eps_mean: float
    exact_eps_max: float
    mixture_rdp: float
    mixture_eps: float
    bound_mean: float
    """Mean of the compared bound over (schedule, target) pairs (``nan`` when none is given)."""
    bound_max: float
    below_exact: int
    """(Schedule, target) pairs where the bound is below the exact RDP (then it is not a bound)."""

    def to_row(self) -> dict[str, object]:
        """Tidy row of every field."""
        return {name: getattr(self, name) for name in self.__slots__}


def spread_by_distance(mu: np.ndarray, hops: np.ndarray, settings: LinearAuditSettings, *,
                       bound: np.ndarray | None = None) -> list[DistanceSpread]:
    """Per graph distance, the spread of ``mu`` (``(schedules, targets)``, the known-schedule exact
    values, :func:`~dpgossip.protocols.gossip.dynamic_release.dynamic_leakage`'s ``mu_upper``) and of
    an optional ``bound`` (same shape, Renyi values at ``settings.orders[0]``).

    Raises
    ------
    ConfigError
        For shapes that do not match.
    """
    mu = np.asarray(mu, dtype=float)
    hops = np.asarray(hops)
    if mu.ndim != 2 or hops.shape != (mu.shape[1],) or (bound is not None and bound.shape != mu.shape):
        raise ConfigError(f"mu must be (schedules, targets) with one hop per target and a bound of the "
                          f"same shape, got {mu.shape}, {hops.shape}", field="mu")
    a, d = settings.orders[0], settings.delta
    rdp = a * mu ** 2 / 2
    eps = _epsilons(mu, d)
    out = []
    for dist in np.unique(hops):
        cols = np.flatnonzero(hops == dist)
        r, e = rdp[:, cols], eps[:, cols]
        b = bound[:, cols] if bound is not None else np.full(r.shape, np.nan)
        out.append(DistanceSpread(
            distance=int(dist), targets=int(cols.size), schedules=int(mu.shape[0]), order=a, delta=d,
            exact_rdp_mean=float(np.mean(r)), exact_rdp_median=float(np.median(r)),
            exact_rdp_q90=float(np.quantile(r, 0.9)), exact_rdp_max=float(np.max(r)),
            exact_eps_mean=float(np.mean(e)), exact_eps_max=float(np.max(e)),
            mixture_rdp=max(mixture_rdp(mu[:, c], a) for c in cols),
            mixture_eps=max(mixture_epsilon(mu[:, c], d) for c in cols),
            bound_mean=float(np.mean(b)), bound_max=float(np.max(b)),
            below_exact=int(np.sum(b < r * (1 - 1e-12)))))
    return out


def _epsilons(mu: np.ndarray, delta: float) -> np.ndarray:
    return gaussian_epsilons(mu.ravel(), delta).reshape(mu.shape)


def sampled_spread(schedules: Iterable[Iterable[object]], spec: LinearGossip, observer: int,
                   graph: nx.Graph, settings: LinearAuditSettings | None = None) -> list[DistanceSpread]:
    """:func:`spread_by_distance` of the exact known-schedule leakage of every target to ``observer``
    over the given schedules (distances in ``graph``), beside :func:`muffliato_schedule_charge` at
    ``settings.orders[0]`` for ``gossip-average`` with one ``sigma`` (no bound column otherwise)."""
    s = settings or LinearAuditSettings()
    mus, charges, hops = [], [], None
    compare = spec.protocol == "gossip-average" and isinstance(spec.sigma, float)
    for sched in schedules:
        rows = dynamic_leakage(sched, spec, observer, s, graph=graph)
        mus.append([r.mu_upper for r in rows])
        if hops is None:
            targets = np.array([r.target for r in rows])
            hops = np.array([r.hops for r in rows])
        if compare:
            charges.append(muffliato_schedule_charge(sched, spec, observer, order=s.orders[0],
                                                     sensitivity=s.sensitivity)[targets])
    if hops is None:
        raise ConfigError("schedules must hold at least one schedule, got none", field="schedules")
    return spread_by_distance(np.array(mus), hops, s, bound=np.array(charges) if compare else None)
