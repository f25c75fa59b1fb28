"""Printing an upper bound so that the printed number is still an upper bound.

A bound ``b`` (a certified upper bound on epsilon or delta, a DP guarantee) printed to ``k``
significant digits by rounding to nearest can fall below ``b`` and so under-report the privacy loss.
:func:`format_upper` rounds up instead: it prints the smallest decimal ``D = m * 10**e`` with at most
``k`` significant digits whose double is not below ``b``,

    format_upper(b, k) = min { D : D has k significant digits, float(D) >= b },

so ``float(format_upper(b, k)) >= b`` always, and the decimal one unit lower in the last digit reads
back below ``b``. The candidate is the decimal ceiling of the exact binary value of ``b``
(:class:`decimal.Decimal` is exact for a double); when the decimal one unit below it reads back as ``b``
itself (``b = 0.1`` is the double nearest 0.1, a little above it; ``float("0.999999999999999")`` is
a little above 0.999999999999999, whose ceiling to 15 digits is 1), that lower decimal is taken. Between
normal doubles at most one such decimal exists (15 digits are spaced wider than a double's half ulp);
between subnormal doubles (below 2.2e-308, spaced wider) the text is still never below ``b`` but may
not be the smallest.

A lower estimate (the value of the worst neighbour a search found) is printed to nearest and labelled
"lower estimate"; it needs no helper. This is a base module: every layer may use it.
"""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, Context, Decimal

__all__ = ["format_upper", "MAX_DIGITS"]

MAX_DIGITS = 15
"""The most significant digits :func:`format_upper` prints: a double holds 15 decimal digits exactly."""


def format_upper(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits rounded **up** (never below ``value``).

    Parameters
    ----------
    value
        The bound; ``inf`` prints as ``inf``, ``nan`` (no bound) as ``nan``.
    digits
        Significant digits, 1 to :data:`MAX_DIGITS`.

    Returns
    -------
    str
        The smallest decimal of ``digits`` significant digits with ``float(text) >= value`` (module
        docstring), in the format of ``f"{x:.{digits}g}"``.
    """
    if not 1 <= digits <= MAX_DIGITS:
        raise ValueError(f"digits must be an integer from 1 to {MAX_DIGITS}, got {digits!r}")
    value = float(value)
    if math.isnan(value) or math.isinf(value):
        return str(value)
    if value == 0.0:
        return "0"
    context = Context(prec=digits, rounding=ROUND_CEILING)
    best = context.plus(Decimal(value))
    below = context.next_minus(best)  # the next lower decimal of `digits` digits (999 below 1.00e3)
    if float(below) >= value:
        best = below
    if math.isinf(float(best)):  # above the largest double (1.8e308 rounded up): the decimal itself
        return format(best.normalize(), "e")
    return f"{float(best):.{digits}g}"
