"""Conversions from Renyi divergences and moment generating functions to privacy guarantees.

Every function takes a callable, so it applies to any Renyi (RDP) curve ``a -> D_a(P||Q)`` or
cumulant generating function, not only to Gaussian pairs.  Orders are optimised over a continuous
range: a geometric grid of ``a - 1`` (or of ``s``) brackets the minimum, which
:func:`scipy.optimize.minimize_scalar` then refines in log space.  When the optimum sits at an
edge of the range searched, a :class:`RuntimeWarning` says so (unless the result is vacuous).

References
----------
C. L. Canonne, G. Kamath, T. Steinke, "The discrete Gaussian for differential privacy",
NeurIPS 2020, Proposition 12.  B. Balle, G. Barthe, M. Gaboardi, J. Hsu, T. Sato, "Hypothesis
testing interpretations and Renyi differential privacy", AISTATS 2020, Theorem 21.  S. Campbell, A.
Scaglione, S. Peisert,
"Decentralized Differentially Private Power Method": its privacy analysis, Definition 2
(probabilistic DP) and Theorem 2 (Chernoff bound on the privacy loss from Renyi divergences).
"""

from __future__ import annotations

__all__ = [
    "OrderOptimum",
    "chernoff_bound",
    "chernoff_lower_tail_from_rdp",
    "chernoff_upper_tail_from_rdp",
    "rdp_to_delta",
    "rdp_to_delta_batch",
    "rdp_to_epsilon",
    "rdp_to_epsilon_batch",
]

import math
import numbers
import warnings
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from scipy import optimize

from dpgossip.errors import ConfigError

_GRID = 96
_VACUOUS = 0.999  # edge warnings are not raised for bounds this weak


class OrderOptimum(NamedTuple):
    """Result of an optimisation over orders: the optimal ``value`` and the ``order`` (``a`` or
    ``s``) attaining it, and whether that order is at an edge of the searched range."""

    value: float
    order: float
    at_edge: bool


def _minimise(objective: Callable[[float], float], x_lo: float, x_hi: float) -> OrderOptimum:
    """Minimise ``objective(x)`` over ``[x_lo, x_hi]`` (``0 < x_lo < x_hi``) in ``u = ln x``."""
    def g(u: float) -> float:
        v = objective(math.exp(u))
        return v if math.isfinite(v) else 1e300

    grid = np.linspace(math.log(x_lo), math.log(x_hi), _GRID)
    values = np.array([g(float(u)) for u in grid])
    i = int(np.argmin(values))
    best_u, best = float(grid[i]), float(values[i])
    lo, hi = float(grid[max(i - 1, 0)]), float(grid[min(i + 1, _GRID - 1)])
    res = optimize.minimize_scalar(g, bounds=(lo, hi), method="bounded",
                                   options={"xatol": 1e-10 * max(1.0, abs(best_u))})
    if res.fun < best:
        best_u, best = float(res.x), float(res.fun)
    at_edge = best_u - grid[0] < 1e-6 * (grid[-1] - grid[0]) or \
        grid[-1] - best_u < 1e-6 * (grid[-1] - grid[0])
    if best >= 1e300:
        best = math.inf
    return OrderOptimum(best, math.exp(best_u), bool(at_edge))


def _is_real(x: object) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def _check_eps(epsilon: float) -> float:
    """``epsilon`` as a float, or :class:`ConfigError` unless it is a finite number ``>= 0``."""
    if not (_is_real(epsilon) and math.isfinite(epsilon) and epsilon >= 0):
        raise ConfigError(f"epsilon must be a finite number >= 0, got {epsilon!r}")
    return float(epsilon)


def _check_delta(delta: float) -> float:
    """``delta`` as a float, or :class:`ConfigError` unless it is in ``(0, 1)``."""
    if not (_is_real(delta) and 0 < delta < 1):
        raise ConfigError(f"delta must be in (0, 1), got {delta!r}")
    return float(delta)


def _order_range(a_max: float, max_order: float) -> tuple[float, float]:
    if not a_max > 1:
        raise ConfigError(f"a_max must be > 1, got {a_max!r}")
    if not (math.isfinite(max_order) and max_order > 1):
        raise ConfigError(f"max_order must be a finite number > 1, got {max_order!r}")
    x_hi = min(max_order, a_max) - 1.0
    if a_max <= max_order:  # the divergence may be infinite at a_max itself: stay inside
        x_hi *= 1.0 - 1e-12
    return min(1e-8, 1e-6 * x_hi), x_hi


def _warn_edge(at_edge: bool, order: float, value: float, what: str) -> None:
    if at_edge and 0.0 < value < _VACUOUS:
        warnings.warn(f"{what}: the optimal order {order:.6g} is at an edge of the range "
                      f"searched; the bound may be improvable", RuntimeWarning, stacklevel=3)


def rdp_to_delta(renyi: Callable[[float], float], epsilon: float, *, a_max: float = math.inf,
                 max_order: float = 1e8) -> OrderOptimum:
    """The ``(epsilon, delta)``-DP guarantee implied by an RDP curve: ``delta`` at ``epsilon``.

    Implements Canonne, Kamath & Steinke (2020), Prop. 12 (= Balle et al. 2020, Thm. 21):

        delta = inf_{1 < a < a_max} exp((a - 1)(D_a - epsilon)) / a * (1 - 1/a)^(a - 1),

    evaluated in logs, over a continuous order ``a`` in ``(1, min(a_max, max_order))``, capped at 1.

    Parameters
    ----------
    renyi : callable
        ``a -> D_a(P||Q)`` (or an upper bound), finite on ``(1, a_max)``; ``inf`` is allowed.
    epsilon : float
        ``>= 0``.
    a_max : float
        Supremum of the orders where ``renyi`` is finite.
    max_order : float
        Largest order searched when ``a_max`` is larger.

    Returns
    -------
    OrderOptimum
        ``value`` is ``delta``; ``order`` the optimal ``a``.
    """
    eps = _check_eps(epsilon)
    x_lo, x_hi = _order_range(a_max, max_order)

    def log_delta(x: float) -> float:  # x = a - 1
        return x * (renyi(1.0 + x) - eps) + x * (math.log(x) - math.log1p(x)) - math.log1p(x)

    opt = _minimise(log_delta, x_lo, x_hi)
    delta = min(1.0, math.exp(min(opt.value, 0.0)))
    _warn_edge(opt.at_edge, 1.0 + opt.order, delta, "rdp_to_delta")
    return OrderOptimum(delta, 1.0 + opt.order, opt.at_edge)


def rdp_to_epsilon(renyi: Callable[[float], float], delta: float, *, a_max: float = math.inf,
                   max_order: float = 1e8) -> OrderOptimum:
    """Smallest ``epsilon`` with ``rdp_to_delta(renyi, epsilon) <= delta``, closed form per order.

    Solving Prop. 12 of Canonne, Kamath & Steinke (2020) for ``epsilon`` at each order:

        epsilon = inf_{1 < a < a_max} D_a + ln(1 - 1/a) - (ln delta + ln a) / (a - 1),

    clipped at 0.  ``value`` is ``epsilon`` (``inf`` when no order gives a finite value).
    """
    log_d = math.log(_check_delta(delta))
    x_lo, x_hi = _order_range(a_max, max_order)

    def eps_at(x: float) -> float:
        return renyi(1.0 + x) + math.log(x) - math.log1p(x) - (log_d + math.log1p(x)) / x

    opt = _minimise(eps_at, x_lo, x_hi)
    eps = max(0.0, opt.value)
    if opt.at_edge and 0.0 < eps < math.inf:
        warnings.warn(f"rdp_to_epsilon: the optimal order {1.0 + opt.order:.6g} is at an edge of "
                      f"the range searched; the bound may be improvable", RuntimeWarning,
                      stacklevel=2)
    return OrderOptimum(eps, 1.0 + opt.order, opt.at_edge)


def chernoff_bound(log_mgf: Callable[[float], float], epsilon: float, *,
                   s_max: float = math.inf, max_s: float = 1e8) -> OrderOptimum:
    """Chernoff bound ``Pr(X > epsilon) <= inf_{0 < s < s_max} exp(K(s) - s epsilon)``.

    ``K(s) = ln E exp(sX)`` must be finite on ``(0, s_max)``; ``s`` is searched in
    ``(0, min(s_max, max_s))``.  ``value`` is the bound, capped at 1; ``order`` the optimal ``s``.
    """
    eps = _check_eps(epsilon)
    if not s_max > 0:
        raise ConfigError(f"s_max must be > 0, got {s_max!r}")
    x_hi = min(s_max, max_s) * ((1.0 - 1e-12) if s_max <= max_s else 1.0)
    opt = _minimise(lambda s: log_mgf(s) - s * eps, min(1e-8, 1e-6 * x_hi), x_hi)
    bound = min(1.0, math.exp(min(opt.value, 0.0)))
    _warn_edge(opt.at_edge, opt.order, bound, "chernoff_bound")
    return OrderOptimum(bound, opt.order, opt.at_edge)


def chernoff_upper_tail_from_rdp(renyi: Callable[[float], float], epsilon: float, *,
                                 a_max: float = math.inf, max_order: float = 1e8) -> OrderOptimum:
    """``Pr_P(L > epsilon) <= inf_{a > 1} exp((a - 1)(D_a(P||Q) - epsilon))`` (Campbell et al., Theorem 2).

    Markov's inequality on ``e^{(a-1)L}``, since ``E_P e^{(a-1)L} = exp((a-1) D_a(P||Q))``.
    ``order`` in the result is ``a``.
    """
    x_lo, x_hi = _order_range(a_max, max_order)
    eps = _check_eps(epsilon)
    opt = _minimise(lambda x: x * (renyi(1.0 + x) - eps), x_lo, x_hi)
    bound = min(1.0, math.exp(min(opt.value, 0.0)))
    _warn_edge(opt.at_edge, 1.0 + opt.order, bound, "chernoff_upper_tail_from_rdp")
    return OrderOptimum(bound, 1.0 + opt.order, opt.at_edge)


def chernoff_lower_tail_from_rdp(renyi_reverse: Callable[[float], float], epsilon: float, *,
                                 a_max: float = math.inf,
                                 max_order: float = 1e8) -> OrderOptimum:
    """``Pr_P(L < -epsilon) <= inf_{a > 1} exp((a - 1) D_a(Q||P) - a epsilon)``.

    Markov's inequality on ``e^{-aL}``: ``E_P (q/p)^a = int q^a p^(1-a) = exp((a-1) D_a(Q||P))``.
    ``renyi_reverse`` is ``a -> D_a(Q||P)``, finite on ``(1, a_max)``; ``order`` is ``a``.
    """
    x_lo, x_hi = _order_range(a_max, max_order)
    eps = _check_eps(epsilon)
    opt = _minimise(lambda x: x * renyi_reverse(1.0 + x) - (1.0 + x) * eps, x_lo, x_hi)
    bound = min(1.0, math.exp(min(opt.value, 0.0)))
    _warn_edge(opt.at_edge, 1.0 + opt.order, bound, "chernoff_lower_tail_from_rdp")
    return OrderOptimum(bound, 1.0 + opt.order, opt.at_edge)


# --- vectorised conversions: many curves, all orders at once ------------------------------------------
_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0
_BATCH_UTOL = 1e-13
"""Bracket width (in ``u = ln(a - 1)``) at which the vectorised refinement stops."""


def _order_ranges(a_max: np.ndarray, max_order: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_order_range` for an array of ``a_max`` (same arithmetic, elementwise)."""
    a_max = np.asarray(a_max, dtype=float)
    if not np.all(a_max > 1):
        raise ConfigError(f"a_max must be > 1, got {a_max[~(a_max > 1)][0]!r}")
    if not (math.isfinite(max_order) and max_order > 1):
        raise ConfigError(f"max_order must be a finite number > 1, got {max_order!r}")
    x_hi = np.minimum(max_order, a_max) - 1.0
    x_hi = np.where(a_max <= max_order, x_hi * (1.0 - 1e-12), x_hi)
    return np.minimum(1e-8, 1e-6 * x_hi), x_hi


def _minimise_batch(objective: Callable[[np.ndarray], np.ndarray], x_lo: np.ndarray,
                    x_hi: np.ndarray, *, independent: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_minimise` for ``P`` objectives at once: ``objective(x)`` maps a ``(P, k)`` array of points
    to their ``(P, k)`` values (row ``i`` is objective ``i``).

    The same ``_GRID``-point grid in ``u = ln x`` brackets each minimum; instead of scipy's scalar
    bounded Brent, a golden-section search shrinks every bracket at once to ``_BATCH_UTOL`` in ``u``.
    Returns the minimum values (``inf`` where none is finite) and the minimising ``x``.
    ``independent``: each bracket stops as soon as it is narrow enough, so each objective's result is
    the same bits alone or in any batch (otherwise every bracket shrinks until the widest is narrow).
    """
    def g(u: np.ndarray) -> np.ndarray:
        v = objective(np.exp(u))
        return np.where(np.isfinite(v), v, 1e300)

    with np.errstate(all="ignore"):
        grid = np.linspace(np.log(x_lo), np.log(x_hi), _GRID, axis=1)  # (P, _GRID)
        values = g(grid)
        rows = np.arange(grid.shape[0])
        i = np.argmin(values, axis=1)
        best_u, best = grid[rows, i], values[rows, i]
        lo, hi = grid[rows, np.maximum(i - 1, 0)], grid[rows, np.minimum(i + 1, _GRID - 1)]
        c = hi - _GOLDEN * (hi - lo)
        d = lo + _GOLDEN * (hi - lo)
        fc, fd = g(np.stack([c, d], axis=1)).T
        tol = _BATCH_UTOL * np.maximum(1.0, np.abs(best_u))  # best_u is not changed by the loop
        active = hi - lo > tol
        if not independent:
            active = np.full(active.shape, bool(np.any(active)))
        while active.any():
            # the same arithmetic as the textbook step (c, d the interior points, fresh the new one)
            left = fc < fd  # the minimum is in [lo, d]
            hi_n, lo_n = np.where(left, d, hi), np.where(left, lo, c)
            span = hi_n - lo_n
            fresh = np.where(left, hi_n - _GOLDEN * span, lo_n + _GOLDEN * span)
            f_fresh = g(fresh[:, None])[:, 0]
            if active.all():
                c, d = np.where(left, fresh, d), np.where(left, c, fresh)
                fc, fd = np.where(left, f_fresh, fd), np.where(left, fc, f_fresh)
                hi, lo = hi_n, lo_n
            else:
                c, d = (np.where(active, np.where(left, fresh, d), c),
                        np.where(active, np.where(left, c, fresh), d))
                fc, fd = (np.where(active, np.where(left, f_fresh, fd), fc),
                          np.where(active, np.where(left, fc, f_fresh), fd))
                hi, lo = np.where(active, hi_n, hi), np.where(active, lo_n, lo)
            wide = hi - lo > tol
            active = active & wide if independent else np.full(active.shape, bool(wide.any()))
    u_ref = np.where(fc < fd, c, d)
    f_ref = np.minimum(fc, fd)
    take = f_ref < best
    best_u, best = np.where(take, u_ref, best_u), np.where(take, f_ref, best)
    return np.where(best >= 1e300, np.inf, best), np.exp(best_u)


def rdp_to_epsilon_batch(renyi: Callable[[np.ndarray], np.ndarray], delta: float, *,
                         a_max: np.ndarray | float = math.inf, count: int | None = None,
                         max_order: float = 1e8, with_orders: bool = False,
                         independent: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """:func:`rdp_to_epsilon` for ``P`` RDP curves at once, all orders vectorised.

    ``renyi(a)`` maps a ``(P, k)`` array of orders to ``D_a`` of curve ``i`` in row ``i`` (``inf``
    allowed); ``a_max`` is a scalar or one value per curve (``count`` curves when it is a scalar).
    Per curve, as in the scalar path (Canonne, Kamath & Steinke 2020, Prop. 12 solved for epsilon),

        epsilon = max(0, inf_{1 < a < a_max} D_a + ln(1 - 1/a) - (ln delta + ln a) / (a - 1)),

    over the same order range and grid, refined by golden sections to ``1e-13`` in ``ln(a - 1)``
    (scipy's bounded Brent in the scalar path): the two agree to about ``1e-12`` relative wherever the
    curve is smooth at its optimum. No edge warnings. ``with_orders``: also return the order ``a`` at
    which each value was attained.
    """
    log_d = math.log(_check_delta(delta))
    a_arr = np.atleast_1d(np.asarray(a_max, dtype=float))
    if a_arr.size == 1 and count is not None:
        a_arr = np.full(int(count), float(a_arr[0]))
    x_lo, x_hi = _order_ranges(a_arr, max_order)

    def eps_at(x: np.ndarray) -> np.ndarray:
        return renyi(1.0 + x) + np.log(x) - np.log1p(x) - (log_d + np.log1p(x)) / x

    value, x = _minimise_batch(eps_at, x_lo, x_hi, independent=independent)
    if with_orders:
        return np.maximum(0.0, value), 1.0 + x
    return np.maximum(0.0, value)


def rdp_to_delta_batch(renyi: Callable[[np.ndarray], np.ndarray], epsilon: float, *,
                       a_max: np.ndarray | float = math.inf, count: int | None = None,
                       max_order: float = 1e8, independent: bool = False) -> np.ndarray:
    """:func:`rdp_to_delta` for ``P`` RDP curves at once (arguments as :func:`rdp_to_epsilon_batch`):

        delta = min(1, inf_{1 < a < a_max} exp((a - 1)(D_a - epsilon)) / a * (1 - 1/a)^(a - 1)).
    """
    eps = _check_eps(epsilon)
    a_arr = np.atleast_1d(np.asarray(a_max, dtype=float))
    if a_arr.size == 1 and count is not None:
        a_arr = np.full(int(count), float(a_arr[0]))
    x_lo, x_hi = _order_ranges(a_arr, max_order)

    def log_delta(x: np.ndarray) -> np.ndarray:
        return x * (renyi(1.0 + x) - eps) + x * (np.log(x) - np.log1p(x)) - np.log1p(x)

    value, _ = _minimise_batch(log_delta, x_lo, x_hi, independent=independent)
    return np.minimum(1.0, np.exp(np.minimum(value, 0.0)))
