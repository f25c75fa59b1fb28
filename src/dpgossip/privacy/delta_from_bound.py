"""The delta a certified bound proves at a given epsilon, by inverting its epsilon-at-delta function.

A certified bound (docs/upper-bound.md) is computed as a function ``b(delta)``: for every ``delta`` in
``(0, 1)`` the mechanism is ``(b(delta), delta)``-DP (for the neighbours and views it covers). A bound
on delta at a fixed epsilon follows without a new derivation: whenever ``b(delta) <= epsilon`` the pair
``(epsilon, delta)`` holds too (a larger epsilon only weakens the statement). So

    delta_upper(epsilon) = inf { delta : b(delta) <= epsilon }

is proven at every ``delta`` where the bound was evaluated and found ``<= epsilon``; the value returned
is always such a point (or the trivial 1). ``b`` need not be monotone for this to be sound; the
bisection assumes it is (``b`` is non-increasing in delta for the bounds of this package), and when it is
not, the value returned is still proven, only possibly not the smallest.

The search runs on ``x = logit(delta) = ln(delta / (1 - delta))``, so that it resolves a delta near 0
and a delta near 1 to the same relative precision (of ``delta`` or of ``1 - delta``), ``rel_tol``. It keeps
a bracket ``b(lo) > epsilon >= b(hi)`` and steps by the Illinois variant of regula falsi on
``x -> b(expit(x)) - epsilon`` once the bracket is narrow (:data:`SECANT_WIDTH`), with a bisection step
wherever the bracket is wider, ``b(lo)`` is infinite or the bracket did not halve in the two steps
before; every evaluation costs a full bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable

__all__ = ["NEAR_ONE", "SMALLEST", "delta_upper"]

NEAR_ONE = 1.0 - 1e-9
"""The largest delta at which the bound is evaluated: above it nothing useful is proven."""
SMALLEST = 1e-300
"""The smallest delta tried."""
SECANT_WIDTH = 4.0
"""Regula falsi steps only inside a bracket this narrow in ``logit(delta)`` (a factor ``e^4`` in delta or
in ``1 - delta``); wider ones are bisected, since the bound is flat (0) near delta = 1 and nearly linear
in ``logit(delta)`` far below, where a secant step barely moves."""


def _logit(p: float) -> float:
    return math.log(p) - math.log1p(-p)


def _expit(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def delta_upper(bound_at: Callable[[float], float], epsilon: float, lowest: float = SMALLEST,
                rel_tol: float = 1e-3, max_steps: int = 60) -> float:
    """A delta that the bound ``bound_at`` proves at ``epsilon``.

    Parameters
    ----------
    bound_at
        ``delta -> b(delta)``, the certified epsilon at ``delta`` (``inf`` where none is proven).
    epsilon
        The epsilon at which a delta is wanted.
    lowest
        Where the bisection starts from below: any delta at which the bound cannot be ``<= epsilon``
        (for example the exact delta at ``epsilon`` of a neighbour found: a sound bound cannot prove
        less). Values outside ``[SMALLEST, NEAR_ONE]`` are clipped to it.
    rel_tol
        Stop when the bracket's ends agree to this relative precision on ``delta`` and on ``1 - delta``
        (``logit(hi) - logit(lo) <= rel_tol``).
    max_steps
        At most this many evaluations inside the bracket (then its upper end is returned).

    Returns
    -------
    float
        ``1.0`` when ``b(NEAR_ONE) > epsilon`` (nothing below 1 is proven); ``lowest`` when
        ``b(lowest) <= epsilon``; otherwise the upper end ``hi`` of a bracket with
        ``b(lo) > epsilon >= b(hi)``: a value at which the bound was computed and found ``<= epsilon``
        (``NEAR_ONE`` at worst).
    """
    at_one = bound_at(NEAR_ONE)
    if not at_one <= epsilon:
        return 1.0
    lo = min(max(float(lowest), SMALLEST), NEAR_ONE)
    at_lo = bound_at(lo)
    if at_lo <= epsilon:
        return lo
    hi = _illinois(lambda x: bound_at(_expit(x)) - epsilon, _logit(lo), at_lo - epsilon,
                   _logit(NEAR_ONE), at_one - epsilon, rel_tol, max_steps)
    return NEAR_ONE if hi is None else _expit(hi)


def _illinois(f: Callable[[float], float], a: float, fa: float, b: float, fb: float, tol: float,
              max_steps: int) -> float | None:
    """The upper end of a bracket ``f(a) > 0 >= f(b)`` (values given) shrunk below width ``tol``, or
    after ``max_steps`` evaluations, by the Illinois method; ``None`` when it is still ``b`` (so that
    the caller returns the very point it evaluated there)."""
    moved, side, widths = False, 0, [math.inf, math.inf]
    for _ in range(max_steps):
        if b - a <= tol:
            break
        secant = (math.isfinite(fa) and fa > fb and b - a <= min(SECANT_WIDTH, 0.5 * widths[-2]))
        widths.append(b - a)
        if secant:
            x = b - fb * (b - a) / (fb - fa)
            x = min(max(x, a + 0.25 * tol), b - 0.25 * tol)  # strictly inside the bracket
        else:  # a wide bracket, one that did not halve in two steps, or b(lo) infinite: bisect
            x = 0.5 * (a + b)
        fx = f(x)
        if fx <= 0:
            b, fb, moved = x, fx, True
            if side == -1:
                fa *= 0.5
            side = -1
        else:
            a, fa = x, fx
            if side == 1:
                fb *= 0.5
            side = 1
    return b if moved else None
