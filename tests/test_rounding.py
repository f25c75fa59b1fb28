"""A printed upper bound is never below the bound it prints, and is the smallest such decimal.

The oracle is the definition, checked in exact rational arithmetic (:class:`fractions.Fraction`), not the
module's :mod:`decimal` ceiling: the printed text reads back (as a double) at or above the value, it has
at most ``digits`` significant digits, and the decimal one unit lower in its last digit reads back
below the value.
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpgossip.rounding import MAX_DIGITS, format_upper


def _next_lower(text: str, digits: int) -> Fraction:
    """The largest decimal of at most ``digits`` significant digits below ``text`` (exactly)."""
    exact = Fraction(text)
    e = 0
    while Fraction(10) ** e > abs(exact):  # the decimal exponent: 10**e <= |exact| < 10**(e + 1)
        e -= 1
    while Fraction(10) ** (e + 1) <= abs(exact):
        e += 1
    if exact == Fraction(10) ** e:  # a positive power of ten: the next lower is 99..9 of the decade below
        return exact - Fraction(10) ** (e - digits)
    return exact - Fraction(10) ** (e - digits + 1)


def _read_back(x: Fraction) -> float:
    """The double a decimal reads back as (``inf`` beyond the largest double)."""
    try:
        return float(x)
    except OverflowError:
        return math.inf if x > 0 else -math.inf


def _significant_digits(text: str) -> int:
    mantissa = text.lstrip("-").split("e")[0].replace(".", "").lstrip("0")
    return len(mantissa)


finite = st.floats(allow_nan=False, allow_infinity=False).filter(lambda v: v != 0.0)


@settings(max_examples=400, deadline=None)
@given(value=finite, digits=st.integers(1, MAX_DIGITS))
def test_a_printed_upper_bound_is_never_below_the_value_and_is_the_smallest(value, digits):
    text = format_upper(value, digits)
    assert _read_back(Fraction(text)) >= value, (value, digits, text)
    assert _significant_digits(text) <= digits, (value, digits, text)
    if abs(value) < sys.float_info.min:
        return  # subnormal: never below, but not always the smallest (module docstring of rounding)
    lower = _next_lower(text, digits)
    assert _read_back(lower) < value, (value, digits, text, lower)  # rounding up by no more than needed


@settings(max_examples=200, deadline=None)
@given(value=st.floats(min_value=1e-12, max_value=1e12), digits=st.integers(1, 6))
def test_rounding_up_never_prints_below_rounding_to_nearest(value, digits):
    up, nearest = format_upper(value, digits), f"{value:.{digits}g}"
    assert float(up) >= float(nearest) or float(nearest) >= value
    assert float(up) - value <= 10.0 ** (math.floor(math.log10(value)) - digits + 1)  # one unit at most


def test_a_subnormal_bound_is_never_below():
    for v in (5e-324, -5e-324, 1e-310, -2.5e-320):
        for digits in (1, 3, MAX_DIGITS):
            assert float(format_upper(v, digits)) >= v


def test_known_values():
    assert format_upper(0.1, 1) == "0.1"  # the double 0.1 is just above 0.1: 0.1 reads back as it
    assert format_upper(1.234, 3) == "1.24"  # nearest would print 1.23, below the bound
    assert format_upper(999.6, 3) == "1e+03"
    assert format_upper(1.5, 1) == "2" and format_upper(-1.5, 1) == "-1"
    assert format_upper(math.inf, 3) == "inf" and format_upper(math.nan, 3) == "nan"
    assert format_upper(0.0, 3) == "0"
    # just above 0.999999999999999: its 15-digit ceiling is 1, but 0.999999999999999 reads back as it
    assert format_upper(float("0.999999999999999"), 15) == "0.999999999999999"


def test_digits_out_of_range_are_refused():
    for digits in (0, MAX_DIGITS + 1):
        with pytest.raises(ValueError, match="digits"):
            format_upper(1.0, digits)
