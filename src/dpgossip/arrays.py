"""The check of an array argument shared by every layer: real, finite, non-empty, the right rank.

Below every layer (like :mod:`dpgossip.errors`): it imports only numpy and the errors.
"""

from __future__ import annotations

import numpy as np

from dpgossip.errors import ConfigError, show

__all__ = ["check_array", "describe"]


def describe(value: object) -> str:
    """A short description of a value for a message: ``'x' (str)`` or ``an array of shape (3,)``."""
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape}"
    text = show(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


def check_array(X: object, field: str, *, ndim: int = 2) -> np.ndarray:
    """``X`` as a finite, non-empty float64 array with ``ndim`` dimensions (no copy when it already is).

    Raises
    ------
    ConfigError
        ``"<field> must be an array of real numbers, got ..."`` (strings, objects, complex numbers),
        ``"<field> must be a non-empty 2-D array, got shape (5,)"`` or
        ``"<field>[3, 2] = nan; NaN and infinite entries are not allowed"`` (the first such entry).
    """
    try:
        A = np.asarray(X)
        if A.dtype.kind not in "biuf":
            raise TypeError(A.dtype)
        A = A.astype(float, copy=False)
    except (TypeError, ValueError):
        raise ConfigError(f"{field} must be an array of real numbers, got {describe(X)}",
                          field=field) from None
    if A.ndim != ndim or A.size == 0:
        what = {1: "a non-empty vector", 2: "a non-empty 2-D array"}.get(ndim,
                                                                         f"a non-empty {ndim}-D array")
        raise ConfigError(f"{field} must be {what}, got shape {A.shape}", field=field)
    finite = np.isfinite(A)
    if not finite.all():
        where = np.unravel_index(int(np.argmin(finite)), A.shape)
        index = ", ".join(str(int(v)) for v in where)
        raise ConfigError(f"{field}[{index}] = {A[where]}; NaN and infinite entries are not allowed",
                          field=field)
    return A
