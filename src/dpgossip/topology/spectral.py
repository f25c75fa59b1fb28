"""Spectral summary of a symmetric doubly-stochastic mixing matrix and consensus round counts.

For symmetric ``W`` with ``W 1 = 1`` and eigenvalues ``1 = lambda_1 >= lambda_2 >= ... >=
lambda_m``, the matrix ``W - 11^T/m`` has eigenvalues ``0, lambda_2, ..., lambda_m`` (the
eigenvector ``1`` is sent to 0), hence

    SLEM = max(|lambda_2|, |lambda_m|) = ||W - 11^T/m||_2,

and, because ``W^c - 11^T/m = (W - 11^T/m)^c``,

    ||W^c - 11^T/m||_2 = SLEM^c     for every c >= 0 (c >= 1 when SLEM = 0).

So ``c`` gossip rounds shrink the disagreement ``x - mean(x) 1`` of any vector by at least the
factor ``SLEM^c``, with equality for the worst-case vector.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpgossip.errors import ConfigError

__all__ = ["SpectralSummary", "consensus_rounds", "rounds_for", "spectral_summary"]


def rounds_for(slem: float, tol: float) -> int | float:
    """Smallest integer ``c >= 0`` with ``slem**c <= tol``.

    Returns ``0`` when ``tol >= 1``, ``1`` when ``slem == 0 < tol < 1``, and ``math.inf`` when
    ``slem >= 1`` (no number of rounds suffices). Otherwise ``c = ceil(ln tol / ln slem)``,
    corrected so that ``slem**c <= tol < slem**(c - 1)`` holds in floating point.
    """
    if isinstance(tol, bool) or not isinstance(tol, (int, float, np.integer, np.floating)) \
            or not tol > 0 or math.isnan(tol):
        raise ConfigError(f"tol: {tol!r} is not allowed; the contraction tolerance must be a "
                          "number > 0")
    if not 0.0 <= slem:
        raise ConfigError(f"slem: {slem!r} is not allowed; the SLEM is a number >= 0")
    tol = float(tol)
    if tol >= 1.0:
        return 0
    if slem >= 1.0:
        return math.inf
    if slem == 0.0:
        return 1
    c = max(1, math.ceil(math.log(tol) / math.log(slem)))
    while slem**c > tol:
        c += 1
    while c > 1 and slem ** (c - 1) <= tol:
        c -= 1
    return c


@dataclass(frozen=True, slots=True, kw_only=True)
class SpectralSummary:
    """Eigenvalue summary of a symmetric mixing matrix ``W`` (see the module docstring)."""

    m: int
    """Number of agents."""
    lambda_1: float
    """Largest eigenvalue (1 for a stochastic ``W``)."""
    lambda_2: float
    """Second largest eigenvalue."""
    lambda_min: float
    """Smallest eigenvalue ``lambda_m``."""
    slem: float
    """Second largest eigenvalue modulus ``||W - 11^T/m||_2``."""
    spectral_gap: float
    """``1 - slem``."""
    tol: float
    """Contraction tolerance used for :attr:`rounds`."""
    rounds: int | float
    """``rounds_for(tol)``: gossip rounds needed to shrink disagreement by ``tol``."""

    def rounds_for(self, tol: float) -> int | float:
        """Smallest ``c`` with ``slem**c <= tol`` (0 if ``tol >= 1``, ``inf`` if ``slem >= 1``)."""
        return rounds_for(self.slem, tol)

    def to_row(self) -> dict[str, object]:
        """Flat dictionary of all fields."""
        return {"m": self.m, "lambda_1": self.lambda_1, "lambda_2": self.lambda_2,
                "lambda_min": self.lambda_min, "slem": self.slem,
                "spectral_gap": self.spectral_gap, "tol": self.tol, "rounds": self.rounds}


def spectral_summary(W: np.ndarray, tol: float = 1e-6) -> SpectralSummary:
    """Eigenvalues, SLEM, spectral gap and consensus rounds of a symmetric mixing matrix.

    Parameters
    ----------
    W : array_like, shape (m, m)
        Symmetric mixing matrix (asymmetry above ``1e-9`` is rejected; the symmetric part is used).
    tol : float
        Contraction tolerance for the ``rounds`` field.

    Returns
    -------
    SpectralSummary
        ``slem = ||W - 11^T/m||_2`` computed as the largest ``|eigenvalue|`` of ``W - 11^T/m``;
        ``lambda_1 >= lambda_2`` the two largest and ``lambda_min`` the smallest eigenvalue of
        ``W``; ``spectral_gap = 1 - slem``; ``rounds = rounds_for(slem, tol)``.
    """
    W = np.asarray(W, dtype=float)
    if W.ndim != 2 or W.shape[0] != W.shape[1] or W.shape[0] < 2:
        raise ConfigError(f"W: must be a square matrix of size at least 2, got shape {W.shape}")
    if not np.all(np.isfinite(W)):
        raise ConfigError("W: has non-finite entries")
    asym = float(np.max(np.abs(W - W.T)))
    if asym > 1e-9:
        raise ConfigError(f"W: is not symmetric (max |W - W^T| = {asym:.3g}); the spectral "
                          "summary assumes a symmetric mixing matrix")
    m = W.shape[0]
    S = (W + W.T) / 2.0
    lam = np.linalg.eigvalsh(S)
    slem = float(np.max(np.abs(np.linalg.eigvalsh(S - np.full((m, m), 1.0 / m)))))
    return SpectralSummary(m=m, lambda_1=float(lam[-1]), lambda_2=float(lam[-2]),
                           lambda_min=float(lam[0]), slem=slem, spectral_gap=1.0 - slem,
                           tol=float(tol), rounds=rounds_for(slem, tol))


def consensus_rounds(W: np.ndarray, tol: float) -> int | float:
    """Smallest ``c`` with ``||W^c - 11^T/m||_2 = SLEM^c <= tol`` for a symmetric mixing ``W``."""
    return spectral_summary(W, tol).rounds
