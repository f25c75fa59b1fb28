"""The Gaussian mechanism: classical and analytic calibrations.

* classical (Dwork & Roth 2014, Thm. A.1; used by Campbell et al., Section IV-A):
  ``sigma = Delta sqrt(2 ln(1.25/delta)) / epsilon`` (proved only for ``epsilon < 1``).
* analytic (Balle & Wang 2018, Thm. 8): the smallest ``sigma`` with
  ``Phi(Delta/(2 sigma) - eps sigma/Delta) - e^eps Phi(-Delta/(2 sigma) - eps sigma/Delta) <= delta``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq
from scipy.special import log_ndtr, ndtr

from dpgossip.errors import check_number

__all__ = ["gaussian_mechanism_delta", "gaussian_mechanism_epsilon", "analytic_gaussian_sigma",
           "classical_gaussian_sigma"]


def _check(epsilon: float, delta: float | None = None) -> None:
    check_number(epsilon, "epsilon", low=0, low_open=True, expected="a positive number")
    if delta is not None:
        check_number(delta, "delta", low=0, high=1, low_open=True, high_open=True)


def gaussian_mechanism_delta(epsilon: float, mahalanobis: float) -> float:
    """Exact ``delta(eps)`` of a Gaussian mechanism whose mean shift has Mahalanobis norm ``D``.

    ``delta = Phi(D/2 - eps/D) - e^eps Phi(-D/2 - eps/D)`` (Balle & Wang 2018, Thm. 8).
    """
    D = float(mahalanobis)
    if D == 0:
        return 0.0
    a = D / 2 - epsilon / D
    b = -D / 2 - epsilon / D
    return float(max(ndtr(a) - np.exp(epsilon + log_ndtr(b)), 0.0))


def gaussian_mechanism_epsilon(mahalanobis: float, delta: float) -> float:
    """Smallest ``epsilon >= 0`` of a Gaussian mechanism with Mahalanobis norm ``D`` at ``delta``.

    The root of ``Phi(D/2 - eps/D) - e^eps Phi(-D/2 - eps/D) = delta`` (Balle & Wang 2018, Thm. 8;
    :func:`gaussian_mechanism_delta` is decreasing in ``eps``); ``0`` when ``D = 0`` or already
    ``delta(0) <= delta``, ``inf`` when ``D = inf``.
    """
    D = check_number(mahalanobis, "mahalanobis", low=0, allow_inf=True)
    d = check_number(delta, "delta", low=0, high=1, low_open=True, high_open=True)
    if math.isinf(D):
        return math.inf
    if D == 0 or gaussian_mechanism_delta(0.0, D) <= d:
        return 0.0
    hi = max(1.0, D * D)
    while gaussian_mechanism_delta(hi, D) > d:
        hi *= 2.0
    return float(brentq(lambda e: gaussian_mechanism_delta(e, D) - d, 0.0, hi,
                        xtol=1e-13, rtol=4 * np.finfo(float).eps))


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest ``sigma`` such that the Gaussian mechanism with L2 sensitivity ``Delta`` is
    ``(epsilon, delta)``-DP (Balle & Wang 2018, analytic Gaussian mechanism), by bisection on
    ``log sigma`` of the exact, decreasing ``delta(sigma)``."""
    _check(epsilon, delta)

    def gap(log_sigma: float) -> float:
        return gaussian_mechanism_delta(epsilon, sensitivity / np.exp(log_sigma)) - delta

    lo, hi = np.log(sensitivity) - 10.0, np.log(sensitivity) + 10.0
    while gap(lo) < 0:
        lo -= 10.0
    while gap(hi) > 0:
        hi += 10.0
    return float(np.exp(brentq(gap, lo, hi, xtol=1e-14, rtol=1e-14)))


def classical_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """``sigma = Delta sqrt(2 ln(1.25/delta)) / epsilon`` (the calibration Campbell et al. use for
    local DP)."""
    _check(epsilon, delta)
    return float(sensitivity * np.sqrt(2 * np.log(1.25 / delta)) / epsilon)
