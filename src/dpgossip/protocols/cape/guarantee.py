"""Privacy of capePCA (Imtiaz and Sarwate, Theorem 1) for one site's release and for the
aggregator's joint view.

:func:`dpgossip.protocols.cape.star.run_cape` releases, per upper-triangle entry ``(i, j)`` and site ``s``,
``a_s + e_s + f_s + g_s`` with (docs/cape.md; ``tau`` the site noise level, ``J = 11^T``)

    Cov(e) = tau^2 (I - J/S),    Cov(f) = (1 - 1/S) tau^2 I,    Cov(g) = (tau^2 / S) I,

independently over entries. Every view below is a Gaussian mechanism with the same covariance for
both neighbouring datasets, so its exact ``(eps, delta)`` is that of ``N(0, 1)`` against ``N(mu, 1)``
(Balle & Wang 2018, Thm. 8) with ``mu^2 = max Delta^T Sigma^+ Delta`` over the allowed changes. A
replaced row lives at one site ``s`` and changes ``triu(A_s)`` by a vector ``v`` with ``||v|| <= Delta_s``
(:func:`dpgossip.protocols.cape.star.second_moment_sensitivity`); the view's covariance is ``C (x) I`` with
``C`` the ``S x S`` covariance of one entry across sites, so

    mu^2 = Delta_s^2 (C^-1)_ss = (Delta_s / tau)^2 * factor.

* ``"site"`` (Imtiaz and Sarwate's guarantee: one release alone, or anyone who knows only ``F_s``):
  ``Var(e_s + g_s) = Var(f_s + g_s) = tau^2``, ``factor = 1``.
* ``"aggregator"`` (knows every ``F_s``, sees every release): ``C = tau^2 ((1 + 1/S) I - J/S)``,
  eigenvalues ``tau^2 / S`` on ``1`` and ``tau^2 (S + 1)/S`` on ``1^perp``, so
  ``(C^-1)_ss = tau^-2 [(1 - 1/S) S/(S + 1) + (1/S) S] = tau^-2 * 2S/(S + 1)``.
* ``"eavesdropper"`` (sees every release, knows no noise): ``C = tau^2 (2I - J/S)``,
  ``(C^-1)_ss = tau^-2 (S + 1)/(2S)``.

So the aggregator's ``mu^2`` exceeds Imtiaz and Sarwate's by the factor ``2S/(S + 1)`` (``mu`` by
its square root):
Imtiaz and Sarwate's Theorem 1 bounds each marginal release but not the joint one. The released
subspace ``V_K`` is a function of ``(1/S) sum_s (a_s + g_s)`` only: shift ``Delta_s / S``, std
``tau / S``, so ``factor = 1``.

Imtiaz and Sarwate's stated calibration is the classical Gaussian mechanism ``tau_s = (Delta_s / eps)
sqrt(2 ln(1.25/delta))`` with ``Delta_s = 1/N_s`` (:func:`paper_noise_std`, :func:`paper_epsilon`);
under row replacement in the unit ball the sensitivity is ``sqrt(2)/N_s``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np

from dpgossip.data.partition import PartitionedData
from dpgossip.errors import ConfigError, check_choice, check_int, check_number
from dpgossip.privacy.mechanism import (
    analytic_gaussian_sigma,
    classical_gaussian_sigma,
    gaussian_mechanism_epsilon,
)
from dpgossip.protocols.cape.star import SENSITIVITIES, CapeParams, second_moment_sensitivity

__all__ = ["VIEWS", "view_covariance", "view_factor", "mahalanobis_sq", "gaussian_epsilon",
           "paper_noise_std", "paper_epsilon", "CapeGuarantee", "cape_guarantee",
           "calibrate_cape_noise", "baseline_epsilon"]

VIEWS = ("site", "aggregator", "eavesdropper")
"""Who looks: one site's release alone (Imtiaz and Sarwate's guarantee); the aggregator (every release, every
``F_s``); an eavesdropper on every link (every release, no noise)."""


def _delta(value: object) -> float:
    return check_number(value, "delta", low=0, high=1, low_open=True, high_open=True,
                        expected="a number in (0, 1)")


def view_covariance(sites: int, noise_std: float, view: str = "aggregator") -> np.ndarray:
    """``C``: covariance across sites of one upper-triangle noise entry in ``view`` (module docstring).

    Parameters
    ----------
    sites : int
        ``S >= 1``.
    noise_std : float
        ``tau > 0``.
    view : str
        One of :data:`VIEWS`; ``"site"`` gives the ``1 x 1`` matrix ``[[tau^2]]``.

    Returns
    -------
    numpy.ndarray
        ``tau^2 (I - J/S) + tau^2/S I`` (aggregator), ``tau^2 (2I - J/S)`` (eavesdropper).
    """
    S = check_int(sites, "sites", 1)
    tau2 = check_number(noise_std, "noise_std", low=0, low_open=True) ** 2
    check_choice(view, "view", VIEWS)
    if view == "site":
        return np.array([[tau2]])
    I, J = np.eye(S), np.ones((S, S))
    cov_e = tau2 * (I - J / S)
    cov_f = (1 - 1 / S) * tau2 * I if view == "eavesdropper" else 0.0 * I
    return cov_e + cov_f + (tau2 / S) * I


def view_factor(sites: int, view: str = "aggregator") -> float:
    """``tau^2 (C^-1)_ss``: ``mu^2`` of ``view`` over ``mu^2`` of one release alone.

    ``1`` (site), ``2S/(S + 1)`` (aggregator), ``(S + 1)/(2S)`` (eavesdropper); derivation in the
    module docstring and docs/cape.md.
    """
    S = check_int(sites, "sites", 1)
    check_choice(view, "view", VIEWS)
    return {"site": 1.0, "aggregator": 2 * S / (S + 1), "eavesdropper": (S + 1) / (2 * S)}[view]


def mahalanobis_sq(sites: int, sensitivity: float, noise_std: float, view: str = "aggregator") -> float:
    """``mu^2 = max_v (e_s (x) v)^T (C (x) I)^-1 (e_s (x) v) = view_factor * (Delta / tau)^2``.

    Parameters
    ----------
    sites : int
    sensitivity : float
        ``Delta_s >= 0``, the largest ``||triu(A_s' - A_s)||``.
    noise_std : float
        ``tau > 0``.
    view : str
    """
    D = check_number(sensitivity, "sensitivity", low=0)
    tau = check_number(noise_std, "noise_std", low=0, low_open=True)
    return view_factor(sites, view) * (D / tau) ** 2


gaussian_epsilon = gaussian_mechanism_epsilon
"""Exact ``eps(delta)`` of ``N(0, 1)`` against ``N(mu, 1)``
(:func:`~dpgossip.privacy.mechanism.gaussian_mechanism_epsilon`)."""


def paper_noise_std(epsilon: float, delta: float, rows: int) -> float:
    """Imtiaz and Sarwate's ``tau_s = (1 / (N_s eps)) sqrt(2 ln(1.25/delta))`` (Alg. 2 text; proof
    of Theorem 1)."""
    return classical_gaussian_sigma(epsilon, delta, second_moment_sensitivity(rows, "paper"))


def paper_epsilon(noise_std: float, delta: float, rows: int) -> float:
    """Imtiaz and Sarwate's stated epsilon at ``tau``: ``eps = sqrt(2 ln(1.25/delta)) / (N_s tau)``
    (inverse of
    :func:`paper_noise_std`; the classical mechanism is proved only for ``eps < 1``)."""
    tau = check_number(noise_std, "noise_std", low=0, low_open=True)
    return math.sqrt(2 * math.log(1.25 / _delta(delta))) * second_moment_sensitivity(rows, "paper") / tau


@dataclass(frozen=True, slots=True, kw_only=True)
class CapeGuarantee:
    """``(eps, delta)`` of capePCA in each view (module docstring), for the site most at risk.

    ``epsilon_site`` also holds for the released subspace ``V_K`` and for the baselines run with the
    same parameters (:func:`baseline_epsilon`).
    """

    sites: int
    rows: int
    """``N_min``, the smallest site (largest sensitivity)."""
    delta: float
    noise_std: float
    """``tau``, the site noise level of :func:`dpgossip.protocols.cape.star.run_cape`."""
    adjacency: str
    """The sensitivity kind the epsilons are for (:data:`dpgossip.protocols.cape.star.SENSITIVITIES`)."""
    sensitivity: float
    """``Delta(N_min)`` under ``adjacency``."""
    factor: float
    """``2S/(S + 1)``: aggregator ``mu^2`` over site ``mu^2``."""
    mu_site: float
    mu_aggregator: float
    mu_eavesdropper: float
    epsilon_paper: float
    """Imtiaz and Sarwate's stated epsilon at ``tau`` (classical calibration, ``Delta = 1/N``)."""
    epsilon_site: float
    epsilon_aggregator: float
    epsilon_eavesdropper: float

    def to_row(self) -> dict[str, object]:
        """Tidy row."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _sizes(data_or_sizes: PartitionedData | tuple[int, ...] | list[int]) -> tuple[int, ...]:
    if isinstance(data_or_sizes, PartitionedData):
        return data_or_sizes.sizes
    sizes = tuple(data_or_sizes) if isinstance(data_or_sizes, (tuple, list)) else ()
    if not sizes or any(isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1
                        for n in sizes):
        raise ConfigError(f"data_or_sizes must be a PartitionedData or a non-empty list of row counts "
                          f">= 1, got {data_or_sizes!r}", field="data_or_sizes")
    return tuple(int(n) for n in sizes)


def cape_guarantee(data_or_sizes: PartitionedData | tuple[int, ...] | list[int], params: CapeParams,
                   delta: float, *, adjacency: str = "row-replacement") -> CapeGuarantee:
    """The guarantee of :func:`dpgossip.protocols.cape.star.run_cape` with ``params`` on these sites.

    ``tau = params.noise_std(N_min)``; ``mu_view^2 = view_factor(S, view) (Delta_adj(N_min) / tau)^2``.

    Parameters
    ----------
    data_or_sizes : PartitionedData or sequence of int
        The sites' row counts ``N_s``.
    params : CapeParams
        ``noise_multiplier > 0``.
    delta : float
        In ``(0, 1)``.
    adjacency : str
        Whose sensitivity the epsilons are for: ``"row-replacement"`` (default) or ``"paper"``.

    Returns
    -------
    CapeGuarantee
    """
    sizes = _sizes(data_or_sizes)
    if not isinstance(params, CapeParams):
        raise ConfigError(f"params must be a CapeParams, got {type(params).__name__}", field="params")
    check_choice(adjacency, "adjacency", tuple(SENSITIVITIES))
    delta = _delta(delta)
    S, n = len(sizes), min(sizes)
    tau = params.noise_std(n)
    if tau <= 0:
        raise ConfigError(f"params.noise_multiplier must be > 0 for a guarantee, got "
                          f"{params.noise_multiplier!r}", field="params.noise_multiplier")
    D = second_moment_sensitivity(n, adjacency)
    mu = {v: math.sqrt(mahalanobis_sq(S, D, tau, v)) for v in VIEWS}
    return CapeGuarantee(sites=S, rows=n, delta=delta, noise_std=tau, adjacency=adjacency,
                         sensitivity=D, factor=view_factor(S, "aggregator"), mu_site=mu["site"],
                         mu_aggregator=mu["aggregator"], mu_eavesdropper=mu["eavesdropper"],
                         epsilon_paper=paper_epsilon(tau, delta, n),
                         epsilon_site=gaussian_epsilon(mu["site"], delta),
                         epsilon_aggregator=gaussian_epsilon(mu["aggregator"], delta),
                         epsilon_eavesdropper=gaussian_epsilon(mu["eavesdropper"], delta))


def calibrate_cape_noise(epsilon: float, delta: float, sites: int, *, view: str = "aggregator") -> float:
    """The smallest ``noise_multiplier`` making ``view`` exactly ``(eps, delta)``-DP.

    The multiplier is ``tau / Delta``; ``view`` has ``mu = sqrt(view_factor) / multiplier``, so it is
    the analytic Gaussian mechanism's ``sigma`` at sensitivity ``sqrt(view_factor(S, view))``. Use it
    in :class:`~dpgossip.protocols.cape.star.CapeParams` with ``sensitivity`` equal to the adjacency to
    protect (``"row-replacement"``).
    """
    epsilon = check_number(epsilon, "epsilon", low=0, low_open=True)
    return analytic_gaussian_sigma(epsilon, _delta(delta), math.sqrt(view_factor(sites, view)))


def baseline_epsilon(params: CapeParams, delta: float, *, adjacency: str = "row-replacement") -> float:
    """Exact epsilon of the conventional and pooled baselines (and of capePCA's ``"site"`` view).

    Every release there is a Gaussian mechanism with std ``noise_multiplier * Delta_kind(N)`` against
    a shift ``Delta_adj(N)``: ``mu = c_adj / (c_kind * noise_multiplier)``, whatever ``N``.
    """
    if not isinstance(params, CapeParams):
        raise ConfigError(f"params must be a CapeParams, got {type(params).__name__}", field="params")
    check_choice(adjacency, "adjacency", tuple(SENSITIVITIES))
    if params.noise_multiplier == 0:
        return math.inf
    mu = SENSITIVITIES[adjacency] / (SENSITIVITIES[params.sensitivity] * params.noise_multiplier)
    return gaussian_epsilon(mu, delta)
