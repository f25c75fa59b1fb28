"""Privacy accounting of ``L`` adaptively composed Gaussian mechanisms, as in the private power method
(Nicolas et al., Theorem 3.2, corrected).

Iteration ``l`` of the private power method is a Gaussian mechanism on ``A X^(l-1)`` with
sensitivity at most ``Delta_l`` and noise ``N(0, (Delta_l sigma_l)^2)``: its *noise multiplier* (noise
std over sensitivity) is ``sigma_l``. The ``L`` iterations compose adaptively (``Delta_l`` and ``X^(l-1)``
are functions of earlier releases only). Three accountings of that composition:

* zCDP (Nicolas et al., Appendix A.2): each step is ``1/(2 sigma_l^2)``-zCDP (Bun-Steinke 2016, Prop. 1.6), so
  ``rho = sum_l 1/(2 sigma_l^2)`` (Lemma 2.3; ``L/(2 sigma^2)`` for a constant ``sigma``) and
  ``eps = rho + 2 sqrt(rho ln(1/delta))`` (Prop. 1.3). Inverse, exact:
  ``rho = (sqrt(ln(1/delta) + eps) - sqrt(ln(1/delta)))^2``, ``sigma = sqrt(L / (2 rho))``.
* RDP and PLD from the maintained library ``dp_accounting``: ``L`` events
  ``GaussianDpEvent(sigma_l)`` composed by ``RdpAccountant`` (RDP ``a sum_l 1/(2 sigma_l^2)`` at order
  ``a``, converted with arXiv 2004.00010 Prop. 12) and by ``PLDAccountant`` (numerical privacy loss
  distribution, pessimistic discretisation).
* Gaussian DP: the composition of Gaussian mechanisms with ratios ``1/sigma_l`` is dominated by one
  Gaussian with ``mu = sqrt(sum_l 1/sigma_l^2)`` (Dong-Roth-Su 2022, Cor. 3.3), whose exact
  ``(eps, delta)`` curve (Balle-Wang 2018, Thm. 8) is computed by ``dp_accounting.get_epsilon_gaussian``;
  it is the tight value the PLD approaches from above.

``dp_accounting`` is used with ``NeighboringRelation.ADD_OR_REMOVE_ONE`` because its Gaussian event then
means exactly "noise std / l2 sensitivity", the sensitivity being the one of our adjacency (element or
row replacement); under ``REPLACE_ONE`` its PLD accountant
would double that distance again.

Nicolas et al.'s own calibration ``sigma = eps^-1 sqrt(4 L ln(1/delta))`` gives
``rho = eps^2 / (8 ln(1/delta))`` and, with the conversion above, ``eps' = rho + eps / sqrt(2)``: it
meets ``(eps, delta)`` only when
``eps <= 8 (1 - 1/sqrt(2)) ln(1/delta)`` (:func:`paper_epsilon_limit`), not ``eps <= 4 ln(1/delta)`` as
printed in Nicolas et al.'s proof (Eqs. (27)-(31) use ``eps/2`` for
``2 sqrt(rho ln(1/delta)) = eps/sqrt(2)``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from dpgossip.errors import ConfigError, check_int, check_number

if TYPE_CHECKING:
    from dp_accounting.pld import PLDAccountant
    from dp_accounting.rdp import RdpAccountant

__all__ = ["Guarantee", "zcdp_rho", "zcdp_to_epsilon", "zcdp_from_epsilon", "calibrate_zcdp_noise",
           "paper_noise_multiplier", "paper_epsilon_limit", "compose_rdp", "compose_pld",
           "composition_guarantee"]


def _check_delta(delta: object) -> float:
    return check_number(delta, "delta", low=0, high=1, low_open=True, high_open=True,
                        expected="a number in (0, 1)")


def _check_positive(value: object, field: str) -> float:
    return check_number(value, field, low=0, low_open=True, expected="a finite number > 0")


def _check_multipliers(noise_multipliers: Sequence[float] | np.ndarray) -> tuple[float, ...]:
    values = tuple(np.atleast_1d(np.asarray(noise_multipliers, dtype=float)).ravel())
    if not values:
        raise ConfigError("noise_multipliers must list one value per iteration, got none",
                          field="noise_multipliers")
    for l, s in enumerate(values):
        if math.isnan(s) or s < 0:
            raise ConfigError(f"noise_multipliers[{l}] must be a number >= 0, got {s!r}",
                              field=f"noise_multipliers[{l}]")
    return tuple(float(s) for s in values)


def zcdp_rho(noise_multipliers: Sequence[float] | np.ndarray) -> float:
    """``rho = sum_l 1 / (2 sigma_l^2)`` (Nicolas et al., Eqs. (20)-(22)); ``inf`` when some
    ``sigma_l = 0``."""
    values = _check_multipliers(noise_multipliers)
    if min(values) == 0:
        return math.inf
    return math.fsum(1.0 / (2.0 * s * s) for s in values)


def zcdp_to_epsilon(rho: float, delta: float) -> float:
    """``eps = rho + 2 sqrt(rho ln(1/delta))``: ``rho``-zCDP implies ``(eps, delta)``-DP.

    Bun and Steinke (2016), Proposition 1.3; Nicolas et al., Eq. (25).
    """
    delta = _check_delta(delta)
    if isinstance(rho, bool) or not isinstance(rho, (int, float, np.integer, np.floating)) \
            or math.isnan(float(rho)) or float(rho) < 0:
        raise ConfigError(f"rho must be a number >= 0, got {rho!r}", field="rho")
    rho = float(rho)
    return math.inf if math.isinf(rho) else rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def zcdp_from_epsilon(epsilon: float, delta: float) -> float:
    """The largest ``rho`` with ``zcdp_to_epsilon(rho, delta) <= epsilon``.

    ``rho = (sqrt(ln(1/delta) + eps) - sqrt(ln(1/delta)))^2``, evaluated as
    ``eps^2 / (sqrt(ln(1/delta) + eps) + sqrt(ln(1/delta)))^2`` (no cancellation for small ``eps``).
    """
    epsilon = _check_positive(epsilon, "epsilon")
    b = math.log(1.0 / _check_delta(delta))
    return (epsilon / (math.sqrt(b + epsilon) + math.sqrt(b))) ** 2


def calibrate_zcdp_noise(epsilon: float, delta: float, iterations: int) -> float:
    """The noise multiplier ``sigma = sqrt(L / (2 rho))``, ``rho = zcdp_from_epsilon(eps, delta)``.

    With it, ``L`` Gaussian mechanisms of noise multiplier ``sigma`` (the iterations of the private power
    method) compose to ``rho``-zCDP, exactly ``(eps, delta)``-DP by the conversion of
    :func:`zcdp_to_epsilon`, for every ``eps > 0`` (corrects Nicolas et al., Theorem 3.2).
    """
    L = check_int(iterations, "iterations", 1)
    return math.sqrt(L / (2.0 * zcdp_from_epsilon(epsilon, delta)))


def paper_noise_multiplier(epsilon: float, delta: float, iterations: int) -> float:
    """Nicolas et al.'s calibration ``sigma = eps^-1 sqrt(4 L ln(1/delta))`` (Algorithm 1, line 3).

    Valid for ``(eps, delta)`` only when ``eps <= paper_epsilon_limit(delta)``; use
    :func:`calibrate_zcdp_noise` instead (smaller noise, no range restriction).
    """
    L = check_int(iterations, "iterations", 1)
    epsilon = _check_positive(epsilon, "epsilon")
    return math.sqrt(4.0 * L * math.log(1.0 / _check_delta(delta))) / epsilon


def paper_epsilon_limit(delta: float) -> float:
    """``8 (1 - 1/sqrt(2)) ln(1/delta)``: the largest ``eps`` that Nicolas et al.'s calibration
    really achieves.

    From ``eps >= eps^2 / (8 ln(1/delta)) + eps / sqrt(2)`` (Nicolas et al.'s Eq. (29) with the
    conversion step fixed).
    """
    return 8.0 * (1.0 - 1.0 / math.sqrt(2.0)) * math.log(1.0 / _check_delta(delta))


def compose_rdp(noise_multipliers: Sequence[float] | np.ndarray,
                orders: Sequence[float] | None = None) -> RdpAccountant:
    """``dp_accounting.rdp.RdpAccountant`` with one ``GaussianDpEvent(sigma_l)`` per iteration.

    Its ``rdp`` at order ``a`` is ``a sum_l 1/(2 sigma_l^2)``; ``get_epsilon_and_optimal_order(delta)``
    converts with arXiv 2004.00010, Proposition 12. ``orders`` default to the library's grid.
    """
    from dp_accounting import GaussianDpEvent, NeighboringRelation
    from dp_accounting.rdp import RdpAccountant

    values = _check_multipliers(noise_multipliers)
    accountant = RdpAccountant(orders=orders, neighboring_relation=NeighboringRelation.ADD_OR_REMOVE_ONE)
    for s in values:
        accountant.compose(GaussianDpEvent(noise_multiplier=s))
    return accountant


PLD_MIN_MULTIPLIER = 0.1
"""The smallest noise multiplier :func:`compose_pld` accounts (its grid grows as ``1 / sigma^2``)."""


def compose_pld(noise_multipliers: Sequence[float] | np.ndarray,
                value_discretization_interval: float = 1e-4) -> PLDAccountant:
    """``dp_accounting.pld.PLDAccountant`` with one ``GaussianDpEvent(sigma_l)`` per iteration.

    Raises
    ------
    ConfigError
        A multiplier below :data:`PLD_MIN_MULTIPLIER`: the privacy loss of ``GaussianDpEvent(sigma)``
        spans about ``1 / sigma^2``, so the accountant's grid would have about
        ``1 / (sigma^2 value_discretization_interval)`` points (10^10 at ``sigma = 1e-3``: dp_accounting
        then fails for want of memory). The message gives the exact Gaussian-DP epsilon instead.
    """
    from dp_accounting import GaussianDpEvent, NeighboringRelation
    from dp_accounting.pld import PLDAccountant

    values = _check_multipliers(noise_multipliers)
    step = _check_positive(value_discretization_interval, "value_discretization_interval")
    low = min(values)
    if 0 < low < PLD_MIN_MULTIPLIER:
        mu = math.sqrt(sum(1.0 / s**2 for s in values))
        raise ConfigError(
            f"noise multiplier {low:.3g} is below {PLD_MIN_MULTIPLIER:g}: the PLD accountant's grid would "
            f"need about {1.0 / (low**2 * step):.1e} points; at this noise the composed mechanism is "
            f"mu = {mu:.3g} Gaussian DP (no meaningful privacy); choose a smaller epsilon or a larger "
            "noise multiplier", field="noise_multiplier")
    accountant = PLDAccountant(neighboring_relation=NeighboringRelation.ADD_OR_REMOVE_ONE,
                               value_discretization_interval=step)
    for s in values:
        accountant.compose(GaussianDpEvent(noise_multiplier=s))
    return accountant


@dataclass(frozen=True, slots=True, kw_only=True)
class Guarantee:
    """``(eps, delta)`` of ``L`` composed Gaussian mechanisms, by four accountings (module docstring).

    Every ``epsilon_*`` is a valid guarantee at ``delta``; ``epsilon_gdp <= epsilon_pld`` (up to the
    PLD's discretisation) ``<= epsilon_rdp <= epsilon_zcdp``.
    """

    noise_multipliers: tuple[float, ...]
    """``sigma_l`` (noise std / sensitivity), one per iteration."""
    delta: float
    rho: float
    """zCDP parameter ``sum_l 1/(2 sigma_l^2)``."""
    epsilon_zcdp: float
    """``rho + 2 sqrt(rho ln(1/delta))``."""
    epsilon_rdp: float
    """``dp_accounting`` RDP accountant."""
    rdp_order: float
    """Order at which the RDP accountant's minimum is attained."""
    epsilon_pld: float
    """``dp_accounting`` PLD accountant (``nan`` when not computed)."""
    epsilon_gdp: float
    """Exact for ``mu``-GDP with ``mu = sqrt(2 rho)`` (``dp_accounting.get_epsilon_gaussian``)."""
    adjacency: str = ""
    """The adjacency whose sensitivity the multipliers refer to (``""``: not stated)."""

    @property
    def iterations(self) -> int:
        """``L``."""
        return len(self.noise_multipliers)

    def to_row(self) -> dict[str, object]:
        """Tidy row (the multipliers summarised by their minimum)."""
        return {"iterations": self.iterations, "min_noise_multiplier": min(self.noise_multipliers),
                "delta": self.delta, "rho": self.rho, "epsilon_zcdp": self.epsilon_zcdp,
                "epsilon_rdp": self.epsilon_rdp, "rdp_order": self.rdp_order,
                "epsilon_pld": self.epsilon_pld, "epsilon_gdp": self.epsilon_gdp,
                "adjacency": self.adjacency}


def composition_guarantee(noise_multipliers: Sequence[float] | np.ndarray, delta: float, *,
                          adjacency: str = "", pld: bool = True) -> Guarantee:
    """:class:`Guarantee` of Gaussian mechanisms with noise multipliers ``sigma_l``, composed adaptively.

    Parameters
    ----------
    noise_multipliers : sequence of float
        ``sigma_l >= 0`` (``0``: no privacy, every epsilon is ``inf``).
    delta : float
        In ``(0, 1)``.
    adjacency : str
        Recorded in the result.
    pld : bool
        Run the PLD accountant (the slowest part; ``epsilon_pld = nan`` when ``False``).
    """
    from dp_accounting import get_epsilon_gaussian

    values = _check_multipliers(noise_multipliers)
    delta = _check_delta(delta)
    rho = zcdp_rho(values)
    if math.isinf(rho):
        return Guarantee(noise_multipliers=values, delta=delta, rho=rho, epsilon_zcdp=math.inf,
                         epsilon_rdp=math.inf, rdp_order=math.nan,
                         epsilon_pld=math.inf if pld else math.nan, epsilon_gdp=math.inf,
                         adjacency=adjacency)
    eps_rdp, order = compose_rdp(values).get_epsilon_and_optimal_order(delta)
    eps_pld = float(compose_pld(values).get_epsilon(delta)) if pld else math.nan
    return Guarantee(noise_multipliers=values, delta=delta, rho=rho,
                     epsilon_zcdp=zcdp_to_epsilon(rho, delta), epsilon_rdp=float(eps_rdp),
                     rdp_order=float(order), epsilon_pld=eps_pld,
                     epsilon_gdp=float(get_epsilon_gaussian(1.0 / math.sqrt(2.0 * rho), delta)),
                     adjacency=adjacency)
