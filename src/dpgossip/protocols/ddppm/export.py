r"""Export an audited pair's privacy loss to a maintained accountant (dp_accounting's PLD).

A :class:`~dpgossip.privacy.gaussian_pair.GaussianPair` ``(P, Q)`` is exact; to compose it with other
mechanisms (subsampled Gaussians, Laplace, other audited pairs) a user needs it in an accountant's
format. :func:`to_pld` builds a ``dp_accounting.pld.PrivacyLossDistribution`` (Koskela et al.;
Google's dp_accounting) whose two directions are the pair's two privacy losses:

* "remove": ``L = ln p/q`` under ``P`` (:meth:`GaussianPair.loss_law` ``"PQ"``);
* "add": ``L' = ln q/p`` under ``Q`` (``"QP"``).

Each law is discretised on the grid ``k h`` (``h`` = ``interval``) by its exact CDF (Imhof's integral,
:meth:`~dpgossip.privacy.plrv.QuadraticFormLaw.cdf`), with the **pessimistic** rounding of
dp_accounting: the mass of ``((k-1) h, k h]`` is put at ``k h`` (the loss is rounded up), and the mass
beyond the grid's two ends (at most ``tail_mass`` in all) is put at ``+inf``. So for every ``epsilon``

    delta_exact(epsilon) <= delta_PLD(epsilon) <= delta_exact(epsilon - h) + tail_mass,

and a ``k``-fold composition in the accountant lies between the exact ``delta`` of the ``k``-fold
product (:meth:`GaussianPair.compose`) at ``epsilon`` and at ``epsilon - k h``, plus ``k tail_mass``
(``tests/protocols/ddppm/test_export.py`` checks both ends). The grid has ``width / h`` points (``width`` the
span of the law between its ``tail_mass / 2`` quantiles), all computed in one pass of Imhof's integral
(about ten times faster than one CDF per point on laws of a few terms); a law with very small
``|alpha|`` terms needs very many nodes, and then costs about as much as one CDF per point.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from dpgossip.errors import ConfigError
from dpgossip.privacy.gaussian_pair import GaussianPair
from dpgossip.privacy.plrv import QuadraticFormLaw

if TYPE_CHECKING:
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

__all__ = ["to_pld", "rounded_pmf"]

_MAX_POINTS = 2_000_000


def _edge(law: QuadraticFormLaw, target: float, upper: bool) -> float:
    """A grid end beyond which the law has at most ``target`` mass (``upper``: above it)."""
    sd = math.sqrt(max(law.variance, 1e-300))
    step = max(sd, 1e-3)
    x = law.mean + (step if upper else -step)
    for _ in range(200):
        mass = law.sf(x) if upper else law.cdf(x)
        if mass <= target:
            return x
        x += step if upper else -step
        step *= 1.5
    raise ConfigError(f"tail_mass: the privacy loss has more than {target:g} mass beyond "
                      f"{x:g}; give a larger tail_mass", field="tail_mass")


def rounded_pmf(law: QuadraticFormLaw, interval: float, tail_mass: float
                ) -> tuple[dict[int, float], float]:
    """Pessimistic discretisation of a loss law: ``{k: Pr(L in ((k-1) h, k h])}`` and the mass put at
    ``+inf`` (beyond the grid on both sides), ``h = interval``.

    Parameters
    ----------
    law
        The privacy loss law (:func:`~dpgossip.privacy.plrv.privacy_loss_law`).
    interval
        Grid step ``h > 0``.
    tail_mass
        Mass allowed beyond the grid (half on each side), ``0 < tail_mass < 1``.
    """
    if law.alpha.size == 0 and law.sigma == 0:  # a point mass at c
        return {math.ceil(law.c / interval - 1e-12): 1.0}, 0.0
    lo = _edge(law, tail_mass / 2, upper=False)
    hi = _edge(law, tail_mass / 2, upper=True)
    k_lo, k_hi = math.floor(lo / interval), math.ceil(hi / interval)
    if k_hi - k_lo > _MAX_POINTS:
        raise ConfigError(f"interval: {interval:g} needs {k_hi - k_lo} grid points over "
                          f"[{lo:.4g}, {hi:.4g}] (at most {_MAX_POINTS}); give a larger interval",
                          field="interval")
    ks = np.arange(k_lo, k_hi + 1)
    cdf = law.cdf_grid(ks * interval)
    cdf = np.maximum.accumulate(np.clip(cdf, 0.0, 1.0))  # a CDF: rounding must not make it decrease
    mass = np.diff(cdf)
    pmf = {int(k): float(p) for k, p in zip(ks[1:], mass, strict=True) if p > 0}
    infinity = float(cdf[0] + (1.0 - cdf[-1]))
    return pmf, infinity


def to_pld(pair: GaussianPair, *, interval: float = 1e-3, tail_mass: float = 1e-12
           ) -> PrivacyLossDistribution:
    """The pair's privacy loss as a dp_accounting ``PrivacyLossDistribution`` (module docstring).

    Parameters
    ----------
    pair
        Any pair (e.g. :func:`~dpgossip.protocols.ddppm.audit.result_pair` of an audited worst pair). When its
        supports differ, all mass is at ``+inf`` (``delta = 1`` at every epsilon, as
        :meth:`GaussianPair.delta` reports).
    interval
        The PLD's value discretisation interval ``h``.
    tail_mass
        Mass of each direction that may be put at ``+inf`` beyond the grid.

    Returns
    -------
    dp_accounting.pld.privacy_loss_distribution.PrivacyLossDistribution
        Pessimistic (its deltas are upper bounds of the pair's exact ones), asymmetric: "remove" is
        ``ln p/q`` under ``P``, "add" is ``ln q/p`` under ``Q``.

    Raises
    ------
    ConfigError
        ``interval`` or ``tail_mass`` out of range, or a grid over ``2,000,000`` points.
    """
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

    if not (isinstance(interval, int | float) and math.isfinite(interval) and interval > 0):
        raise ConfigError(f"interval must be a finite number > 0, got {interval!r}", field="interval")
    if not (isinstance(tail_mass, int | float) and 0 < tail_mass < 1):
        raise ConfigError(f"tail_mass must be in (0, 1), got {tail_mass!r}", field="tail_mass")
    if pair.support_mismatch is not None:
        return PrivacyLossDistribution.create_from_rounded_probability(
            {}, 1.0, interval, pessimistic_estimate=True)
    remove = rounded_pmf(pair.loss_law("PQ"), float(interval), float(tail_mass))
    add = rounded_pmf(pair.loss_law("QP"), float(interval), float(tail_mass))
    return PrivacyLossDistribution.create_from_rounded_probability(
        remove[0], remove[1], float(interval), pessimistic_estimate=True,
        rounded_probability_mass_function_add=add[0], infinity_mass_add=add[1], symmetric=False)
