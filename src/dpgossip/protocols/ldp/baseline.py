"""The LDP baseline of Campbell et al., Section IV-A: noise on the data, then an SVD.

Every agent releases ``X_i + G_i`` with ``G_i`` i.i.d. ``N(0, sigma^2)`` entries; a changed row
(``||x - x'|| <= 1``) moves the release by at most 1 in L2, so ``sigma`` is a Gaussian-mechanism calibration
with sensitivity 1: the paper's ``sqrt(2 ln(1.25/delta))/epsilon`` or the analytic one (Balle & Wang 2018).
Every agent then holds the noisy ``X`` and takes its top left singular vectors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpgossip.errors import ConfigError
from dpgossip.privacy.mechanism import analytic_gaussian_sigma, classical_gaussian_sigma
from dpgossip.protocols.checks import as_generator, check_matrix, check_rank

__all__ = ["LdpResult", "ldp_sigma", "run_ldp", "LDP_CALIBRATIONS"]

LDP_CALIBRATIONS = ("paper", "analytic")


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class LdpResult:
    """Estimate of the LDP baseline."""

    U_hat: np.ndarray
    """``(n, r)`` top left singular vectors of the noisy data."""
    sigma: float
    """Noise standard deviation per entry."""
    calibration: str

    def to_row(self) -> dict[str, object]:
        """Tidy row."""
        return {"ldp_sigma": self.sigma, "ldp_calibration": self.calibration}


def ldp_sigma(epsilon: float, delta: float, calibration: str = "analytic") -> float:
    """Per-entry noise of the LDP baseline for ``(epsilon, delta)`` (sensitivity 1)."""
    if not isinstance(calibration, str) or calibration not in LDP_CALIBRATIONS:
        raise ConfigError(f"calibration must be one of {', '.join(LDP_CALIBRATIONS)}, got "
                          f"{calibration!r}", field="calibration")
    if calibration == "paper":
        return classical_gaussian_sigma(epsilon, delta)
    return analytic_gaussian_sigma(epsilon, delta)


def run_ldp(
    X: np.ndarray,
    rank: int,
    epsilon: float,
    delta: float,
    rng: np.random.Generator | int | np.random.SeedSequence,
    calibration: str = "analytic",
) -> LdpResult:
    """Release ``X + G``, ``G_ij ~ N(0, sigma^2)``, and return its ``rank`` top left singular vectors.

    Parameters
    ----------
    X : array_like
        ``n x d`` finite data (rows in the unit ball for the calibration to hold).
    rank : int
        ``1 <= rank <= min(n, d)``.
    epsilon, delta : float
        The privacy target of the Gaussian mechanism with sensitivity 1 (:func:`ldp_sigma`).
    rng : numpy.random.Generator, int or numpy.random.SeedSequence
        The noise generator, or a seed for ``numpy.random.default_rng``.
    calibration : {"analytic", "paper"}
        How ``sigma`` is set (:data:`LDP_CALIBRATIONS`).

    Raises
    ------
    ConfigError
        Naming ``X``, ``rank``, ``epsilon``, ``delta``, ``rng`` or ``calibration``.
    """
    X = check_matrix(X, "X")
    rank = check_rank(rank, min(X.shape))
    gen = as_generator(rng, "rng")
    sigma = ldp_sigma(epsilon, delta, calibration)
    noisy = X + sigma * gen.standard_normal(X.shape)
    U, _, _ = np.linalg.svd(noisy, full_matrices=False)
    return LdpResult(U_hat=U[:, :rank].copy(), sigma=sigma, calibration=calibration)
