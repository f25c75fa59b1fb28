"""Accounting of private ALS: Theorem 1 of Chien et al. in closed form, and dp_accounting's RDP of
the same events.

Theorem 1. Each of the ``T`` item steps releases, for every item, a Gaussian mechanism; a user enters at
most ``k`` items per step, each with ``||shift|| / std <= 1 / sigma`` (the convention of
:mod:`dpgossip.protocols.als.params`). A step is ``(a, a k / (2 sigma^2))``-RDP and ``T`` steps compose
to ``(a, a rho^2)`` with ``rho^2 = k T / (2 sigma^2)``. Mironov's conversion (Prop. 3),
``eps = a rho^2 + ln(1/delta) / (a - 1)``, is smallest at ``a = 1 + sqrt(ln(1/delta)) / rho``:

    eps(rho) = rho^2 + 2 rho sqrt(ln(1/delta)),
    rho^+    = sqrt(ln(1/delta) + eps) - sqrt(ln(1/delta)),      sigma = sqrt(k T / 2) / rho^+.

A view that sees user ``i``'s contributions through extra noise or with part of it removed scales the
squared shift by a factor ``kappa z^2`` (:mod:`dpgossip.protocols.als.audit`): its ``rho^2`` is
``k T kappa z^2 / 2 = k T kappa sigma^2 / sigma^2``. :func:`view_guarantee` states the closed form for any
``rho^2``.

dp_accounting: the same events are ``2 k T`` Gaussian releases (a Gram triangle and a right-hand side per
item), each ``GaussianDpEvent(z)`` with ``z = sqrt(2) sigma`` (or ``1 / sqrt(kappa)`` for a view), composed
by ``RdpAccountant`` (``ADD_OR_REMOVE_ONE``: its multiplier is noise std over l2 sensitivity) over a fine
grid of orders (1.01 to 10^4) and converted with its tighter conversion (arXiv 2004.00010, Prop. 12); it is
never above the closed form.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpgossip.errors import check_int, check_number

__all__ = ["theorem_sigma", "theorem_epsilon", "closed_form_epsilon", "rdp_epsilon", "ViewGuarantee",
           "view_guarantee", "RDP_ORDERS"]

RDP_ORDERS: tuple[float, ...] = tuple(np.concatenate([np.linspace(1.01, 10.0, 900),
                                                      np.geomspace(10.0, 1e4, 600)[1:]]).tolist())
"""The orders at which dp_accounting's RDP is evaluated."""


def _check(epsilon: float | None, delta: float, k: int, steps: int) -> None:
    if epsilon is not None:
        check_number(epsilon, "epsilon", low=0, low_open=True, expected="a positive number")
    check_number(delta, "delta", low=0, high=1, low_open=True, high_open=True)
    check_int(k, "k", 1)
    check_int(steps, "steps", 1)


def theorem_sigma(epsilon: float, delta: float, k: int, steps: int) -> float:
    """``sigma = sqrt(kT/2) / (sqrt(ln(1/delta) + eps) - sqrt(ln(1/delta)))`` (Chien et al., Theorem 1)."""
    _check(epsilon, delta, k, steps)
    log = math.log(1.0 / delta)
    rho = epsilon / (math.sqrt(log + epsilon) + math.sqrt(log))   # = sqrt(log + eps) - sqrt(log), stably
    return math.sqrt(k * steps / 2.0) / rho


def closed_form_epsilon(rho_squared: float, delta: float) -> float:
    """``eps = rho^2 + 2 rho sqrt(ln(1/delta))`` for ``(a, a rho^2)``-RDP at every order ``a``."""
    rho2 = check_number(rho_squared, "rho_squared", low=0, allow_inf=True)
    check_number(delta, "delta", low=0, high=1, low_open=True, high_open=True)
    return rho2 + 2.0 * math.sqrt(rho2 * math.log(1.0 / delta))


def theorem_epsilon(sigma: float, delta: float, k: int, steps: int) -> float:
    """The closed form at ``rho^2 = k T / (2 sigma^2)`` (the inverse of :func:`theorem_sigma`)."""
    _check(None, delta, k, steps)
    check_number(sigma, "sigma", low=0, low_open=True, expected="a positive number")
    return closed_form_epsilon(k * steps / (2.0 * sigma**2), delta)


def rdp_epsilon(multiplier: float, releases: int, delta: float) -> tuple[float, float]:
    """dp_accounting's ``(eps, order)`` for ``releases`` Gaussian events of noise multiplier ``multiplier``
    each (module docstring), over :data:`RDP_ORDERS`."""
    from dp_accounting import GaussianDpEvent, NeighboringRelation
    from dp_accounting.rdp import RdpAccountant

    check_int(releases, "releases", 1)
    check_number(multiplier, "multiplier", low=0, low_open=True, expected="a positive number")
    acc = RdpAccountant(orders=list(RDP_ORDERS), neighboring_relation=NeighboringRelation.ADD_OR_REMOVE_ONE)
    acc.compose(GaussianDpEvent(noise_multiplier=float(multiplier)), count=releases)
    eps, order = acc.get_epsilon_and_optimal_order(delta)
    return float(eps), float(order)


@dataclass(frozen=True, slots=True, kw_only=True)
class ViewGuarantee:
    """The guarantee of one view: ``rho^2``, the closed-form epsilon and dp_accounting's (both valid)."""

    view: str
    rho_squared: float
    epsilon_closed_form: float
    epsilon_rdp: float
    delta: float

    @property
    def epsilon(self) -> float:
        """The smaller of the two valid epsilons."""
        return min(self.epsilon_closed_form, self.epsilon_rdp)


def view_guarantee(view: str, kappa: float, k: int, steps: int, delta: float) -> ViewGuarantee:
    """The guarantee of a view with factor ``kappa`` (in ``1 / unit^2``; ``1 / z^2`` is the central view).

    Per item the shift's squared Mahalanobis norm is at most ``2 kappa`` (two releases of norm at most
    one unit each), so ``rho^2 = k T kappa`` and each of the ``2 k T`` releases has multiplier
    ``1 / sqrt(kappa)``.
    """
    _check(None, delta, k, steps)
    kap = check_number(kappa, "kappa", low=0, allow_inf=True)
    if math.isinf(kap):
        return ViewGuarantee(view=view, rho_squared=math.inf, epsilon_closed_form=math.inf,
                             epsilon_rdp=math.inf, delta=delta)
    if kap == 0:
        return ViewGuarantee(view=view, rho_squared=0.0, epsilon_closed_form=0.0, epsilon_rdp=0.0,
                             delta=delta)
    rho2 = k * steps * kap
    eps_rdp, _ = rdp_epsilon(1.0 / math.sqrt(kap), 2 * k * steps, delta)
    return ViewGuarantee(view=view, rho_squared=rho2, epsilon_closed_form=closed_form_epsilon(rho2, delta),
                         epsilon_rdp=eps_rdp, delta=delta)
