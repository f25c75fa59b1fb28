"""Renyi curves of many Gaussian pairs at once, and their RDP conversions (vectorised).

The scalar path (:func:`~dpgossip.privacy.conversions.rdp_to_epsilon` on
:meth:`WhitenedPair.renyi <dpgossip.privacy.plrv.WhitenedPair.renyi>`) makes a 96-point grid of orders
and a bounded Brent search per direction, each point one Python call. Here every pair, both
directions and all orders are one numpy evaluation per refinement step
(:func:`~dpgossip.privacy.conversions.rdp_to_epsilon_batch`). The curve is the same closed form,

    D_a(P||Q) = (1/2) sum_i [ a b_i^2 / (lam_i (1 + t_i)) - ln(1 + t_i) / (a - 1) + ln lam_i ]
                + a b0sq / 2,        t_i = (a - 1)(lam_i - 1) / lam_i,

``inf`` for ``a >= a_max`` or any ``t_i <= -1``. Pairs with fewer eigenvalues are padded with
``lam = 1, b = 0``, whose terms are exactly zero; each pair's sum runs over its own eigenvalues only,
because numpy's summation order depends on the length summed, and a pair's value must be the same
bits alone or in any batch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpgossip.privacy.conversions import rdp_to_delta_batch, rdp_to_epsilon_batch
from dpgossip.privacy.plrv import WhitenedPair

__all__ = ["RenyiCurves", "whitened_rdp_epsilons", "whitened_rdp_deltas"]


class RenyiCurves:
    """``D_a`` of ``P`` whitened pairs, callable on a ``(P, k)`` array of orders (module docstring)."""

    def __init__(self, pairs: Sequence[WhitenedPair]) -> None:
        width = max((w.lam.size for w in pairs), default=0)
        self.lam = np.ones((len(pairs), max(width, 1)))
        self.b = np.zeros_like(self.lam)
        for i, w in enumerate(pairs):
            self.lam[i, : w.lam.size] = w.lam
            self.b[i, : w.b.size] = w.b
        sizes = np.array([max(w.lam.size, 1) for w in pairs], dtype=int)
        self.groups = [(int(k), np.flatnonzero(sizes == k)) for k in np.unique(sizes)]
        """Rows of each eigenvalue count (one group: no padding to leave out of the sums)."""
        self.b0sq = np.array([w.b0sq for w in pairs], dtype=float)
        self.a_max = np.array([w.a_max for w in pairs], dtype=float)
        # the order-free parts, shaped (P, 1, width) (the same values as computed at every call)
        self._lam = self.lam[:, None, :]
        self._lam_m1 = self._lam - 1.0
        self._b2 = self.b[:, None, :] ** 2
        self._log_lam = np.log(self._lam)
        self._b0sq = self.b0sq[:, None]
        self._a_max = self.a_max[:, None]

    def __call__(self, a: np.ndarray) -> np.ndarray:
        a = np.asarray(a, dtype=float)
        x = (a - 1.0)[:, :, None]
        lam = self._lam
        t = x * self._lam_m1 / lam
        with np.errstate(all="ignore"):
            terms = a[:, :, None] * self._b2 / (lam * (1.0 + t)) - np.log1p(t) / x + self._log_lam
            if len(self.groups) == 1:
                total = terms.sum(axis=2)
            else:  # each pair summed over its own width, so that its value does not depend on the
                total = np.empty(terms.shape[:2])  # batch (numpy's summation order depends on it)
                for size, rows in self.groups:
                    total[rows] = np.ascontiguousarray(terms[rows, :, :size]).sum(axis=2)
        out = 0.5 * total + 0.5 * a * self._b0sq
        bad = (a >= self._a_max) | np.any(t <= -1.0, axis=2)
        return np.where(bad, np.inf, out)


def whitened_rdp_epsilons(pairs: Sequence[WhitenedPair], delta: float) -> np.ndarray:
    """The RDP epsilon at ``delta`` of each whitened pair (one direction each), all at once: what
    :func:`~dpgossip.privacy.conversions.rdp_to_epsilon` gives with ``renyi = pair.renyi`` and
    ``a_max = pair.a_max``, to about ``1e-11`` relative (never larger by more than rounding: the
    vectorised refinement stops later than the scalar one, at a slightly lower point of the curve).
    Each curve's refinement stops on its own: its value is the same bits alone or in any batch."""
    if not pairs:
        return np.zeros(0)
    c = RenyiCurves(pairs)
    return rdp_to_epsilon_batch(c, delta, a_max=c.a_max, independent=True)


def whitened_rdp_deltas(pairs: Sequence[WhitenedPair], epsilon: float) -> np.ndarray:
    """The RDP delta at ``epsilon`` of each whitened pair (as :func:`whitened_rdp_epsilons`, for
    :func:`~dpgossip.privacy.conversions.rdp_to_delta`)."""
    if not pairs:
        return np.zeros(0)
    c = RenyiCurves(pairs)
    return rdp_to_delta_batch(c, epsilon, a_max=c.a_max, independent=True)
