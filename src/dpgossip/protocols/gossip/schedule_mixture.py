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
* A bound stated for an expectation over schedules is compared with the expectation it bounds:
  :func:`spread_by_distance` sets, for each target, the mean of the bound over the sampled schedules
  beside the mean exact Renyi value and beside :func:`mixture_rdp` (both Monte Carlo estimates).

:func:`averaging_steps` turns a sampled :class:`~dpgossip.topology.schedules.MixingSchedule` (the
samplers of :mod:`dpgossip.topology.schedule_samplers`) into the mixing matrices used here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.special import log_ndtr, logsumexp, ndtr

from dpgossip.errors import ConfigError, check_number
from dpgossip.privacy.linear_allpairs import gaussian_epsilons
from dpgossip.privacy.linear_audit import LinearAuditSettings
from dpgossip.protocols.gossip.dynamic_release import (
    check_dynamic_spec,
    check_schedule,
    message_coefficients,
    pairwise_matrix,
    received_messages,
)
from dpgossip.protocols.gossip.linear import LinearGossip
from dpgossip.topology.schedules import AVERAGED, MixingSchedule

__all__ = ["gaussian_deltas", "mixture_delta", "mixture_epsilon", "mixture_rdp",
           "muffliato_schedule_charge", "DistanceSpread", "spread_by_distance",
           "averaging_steps"]

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
    :func:`~dpgossip.protocols.gossip.bounds.muffliato_per_message`; along a time-varying schedule it
    is the sum the authors' code accumulates for freshly drawn graphs (docs/dynamic-leakage.md).
    Shape ``(m,)``.

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


def averaging_steps(schedule: MixingSchedule) -> tuple[sp.csr_array, ...]:
    """The steps ``W_1, ..., W_T`` of a sampled schedule as the mixing matrices of
    :mod:`~dpgossip.protocols.gossip.dynamic_release`.

    A ``"rounds"`` schedule gives its matrices; a ``"pairwise"`` schedule gives one
    ``I - (e_i - e_j)(e_i - e_j)^T / 2`` (:func:`~dpgossip.protocols.gossip.dynamic_release.pairwise_matrix`)
    per exchange ``(i, j)``: at that step ``i`` receives ``y_j`` and ``j`` receives ``y_i``, the same
    information as the request and the averaged reply of the exchange.

    Raises
    ------
    ConfigError
        For a schedule the release model does not describe: absences, late messages, a ``"rounds"``
        schedule that is not doubly stochastic (push-sum, realised rounds with losses) or a pairwise
        exchange whose outcome is not ``AVERAGED`` (a lost, late or refused reply changes who
        receives what).
    """
    if not isinstance(schedule, MixingSchedule):
        raise ConfigError(f"schedule must be a MixingSchedule, got {type(schedule).__name__}",
                          field="schedule")
    if len(schedule.absent) or (schedule.kind == "rounds" and len(schedule.late)):
        raise ConfigError("schedule: absences and late messages are not modelled by the averaging "
                          "release; give a schedule without churn", field="schedule")
    if schedule.kind == "rounds":
        if schedule.stochastic != "doubly":
            raise ConfigError(f"schedule: stochastic must be 'doubly' for the averaging release, got "
                              f"{schedule.stochastic!r}", field="schedule")
        return tuple(schedule.matrices)
    bad = np.flatnonzero(schedule.outcomes != AVERAGED)
    if bad.size:
        k = int(bad[0])
        raise ConfigError(f"schedule: exchange {k} has outcome {int(schedule.outcomes[k])}; only "
                          f"AVERAGED ({AVERAGED}) exchanges are modelled", field="schedule")
    return tuple(pairwise_matrix(schedule.m, int(i), int(j)) for i, j in schedule.pairs.tolist())


@dataclass(frozen=True, slots=True, kw_only=True)
class DistanceSpread:
    """Leakage to one observer at one graph distance over sampled schedules (RDP at ``order``).

    The ``exact_*`` columns describe the known-schedule leakage over all sampled (schedule, target)
    pairs at this distance: each value is exact for its schedule, their mean and quantiles are
    estimates of the expectation and quantiles over all schedules, and ``exact_*_max`` is the
    maximum over the SAMPLED schedules (an estimate, from below, of the bound by the worst schedule,
    not a bound).  ``mixture_*`` are the largest over the targets of :func:`mixture_rdp` and
    :func:`mixture_epsilon` (Monte Carlo estimates of the schedule-and-messages release).  The
    ``target_*`` tuples give, per target (in ``target_ids`` order), the values the flag columns are
    counted from.
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
    mean_below_exact_mean: int
    """Targets whose mean bound over the schedules is below their mean exact RDP (the comparison for a
    bound on the expectation of the per-schedule leakage)."""
    mean_below_mixture: int
    """Targets whose mean bound is below their :func:`mixture_rdp` (the Renyi divergence of the
    schedule-and-messages release, which the expectation of per-schedule RDP does not bound)."""
    target_ids: tuple[int, ...]
    target_exact_rdp_mean: tuple[float, ...]
    target_mixture_rdp: tuple[float, ...]
    target_bound_mean: tuple[float, ...]
    target_below_exact: tuple[int, ...]
    """Per target: schedules where the bound is below the exact RDP (they sum to ``below_exact``)."""

    def to_row(self) -> dict[str, object]:
        """Tidy row of every field (tuples as lists)."""
        return {name: (list(v) if isinstance(v := getattr(self, name), tuple) else v)
                for name in self.__slots__}


def spread_by_distance(mu: np.ndarray, hops: np.ndarray, settings: LinearAuditSettings, *,
                       bound: np.ndarray | None = None,
                       targets: np.ndarray | None = None) -> list[DistanceSpread]:
    """Per graph distance, the spread of ``mu`` (``(schedules, targets)``, the known-schedule exact
    values, :func:`~dpgossip.protocols.gossip.dynamic_release.dynamic_leakage`'s ``mu_upper``) and of
    an optional ``bound`` (same shape, Renyi values at ``settings.orders[0]``), with the target ids
    of the columns (default ``0..``).

    A pair is flagged when ``bound < exact (1 - 1e-12)``; a target's means are flagged the same way
    against its mean exact RDP and its :func:`mixture_rdp`.

    Raises
    ------
    ConfigError
        For shapes that do not match.
    """
    mu = np.asarray(mu, dtype=float)
    hops = np.asarray(hops)
    ids = np.arange(mu.shape[-1]) if targets is None else np.asarray(targets, dtype=np.int64)
    if (mu.ndim != 2 or hops.shape != (mu.shape[1],) or ids.shape != hops.shape
            or (bound is not None and bound.shape != mu.shape)):
        raise ConfigError(f"mu must be (schedules, targets) with one hop and one id per target and a "
                          f"bound of the same shape, got {mu.shape}, {hops.shape}, {ids.shape}",
                          field="mu")
    a, d = settings.orders[0], settings.delta
    rdp = a * mu ** 2 / 2
    eps = _epsilons(mu, d)
    b_all = np.full(rdp.shape, np.nan) if bound is None else np.asarray(bound, dtype=float)
    out = []
    for dist in np.unique(hops):
        cols = np.flatnonzero(hops == dist)
        r, e, b = rdp[:, cols], eps[:, cols], b_all[:, cols]
        mix = np.array([mixture_rdp(mu[:, c], a) for c in cols])
        r_mean, b_mean = r.mean(axis=0), b.mean(axis=0)
        below = b < r * (1 - 1e-12)
        out.append(DistanceSpread(
            distance=int(dist), targets=int(cols.size), schedules=int(mu.shape[0]), order=a, delta=d,
            exact_rdp_mean=float(np.mean(r)), exact_rdp_median=float(np.median(r)),
            exact_rdp_q90=float(np.quantile(r, 0.9)), exact_rdp_max=float(np.max(r)),
            exact_eps_mean=float(np.mean(e)), exact_eps_max=float(np.max(e)),
            mixture_rdp=float(np.max(mix)),
            mixture_eps=max(mixture_epsilon(mu[:, c], d) for c in cols),
            bound_mean=float(np.mean(b)), bound_max=float(np.max(b)),
            below_exact=int(np.sum(below)),
            mean_below_exact_mean=int(np.sum(b_mean < r_mean * (1 - 1e-12))),
            mean_below_mixture=int(np.sum(b_mean < mix * (1 - 1e-12))),
            target_ids=tuple(int(t) for t in ids[cols]),
            target_exact_rdp_mean=tuple(float(x) for x in r_mean),
            target_mixture_rdp=tuple(float(x) for x in mix),
            target_bound_mean=tuple(float(x) for x in b_mean),
            target_below_exact=tuple(int(x) for x in below.sum(axis=0))))
    return out


def _epsilons(mu: np.ndarray, delta: float) -> np.ndarray:
    return gaussian_epsilons(mu.ravel(), delta).reshape(mu.shape)
