r"""The first-message sub-view: a closed-form lower bound on a pair's worst case over neighbours.

In iteration 1 every agent ``i`` computes ``z_i = X_i^T q_i^(0)`` with ``q_i^(0) ~ N(0, sigma_q^2 I)``, and
an adversary whose view has compression basis ``B`` (``r x m``, :class:`~dpgossip.privacy.views.ViewSpec`)
receives ``Y = (B ⊗ I_d) z``. Agents whose ``q^(0)`` the adversary knows contribute a known constant
(their columns of ``B`` are zero for the views built here), so ``Y`` given the known randomness is

.. math::

    Y \sim N\Bigl(0,\ \sigma_q^2 S\Bigr), \qquad S = \sum_i b_i b_i^T \otimes X_i^T X_i ,

``b_i`` the column ``i`` of ``B``. Replacing row ``x`` of the target ``j`` by ``x'`` changes ``S`` by
``a a^T - e e^T`` with ``a = b_j ⊗ x'``, ``e = b_j ⊗ x``: a rank-2 update. With ``P = E^T S^+ E``,
``E = b_j ⊗ I_d``, and ``u = x'^T P x'``, ``v = x'^T P x``, ``w = x^T P x``, the nontrivial generalised
eigenvalues of ``(S', S)`` are ``1 + mu_±`` with

.. math::

    \mu_\pm = \tfrac12\Bigl(u - w \pm \sqrt{(u + w)^2 - 4 v^2}\Bigr)

(the eigenvalues of ``diag(1, -1) G``, ``G`` the Gram matrix of the whitened ``a`` and ``e``). ``sigma_q``
cancels. If ``a`` has a component outside the range of ``S`` the supports differ and every divergence is
infinite. ``Y`` is part of the full view (the joint view holds it and the known randomness), so by data
processing every divergence of this sub-view at ``x'`` is at most the full view's at ``x'``: its maximum
over neighbours is a lower bound of the full view's worst case that does not depend on how well the full
search does. The maximum is found by a dense search over directions and a local ascent of this closed
form (microseconds per candidate); it is the value of an actual neighbour, hence a valid lower bound.
"""

from __future__ import annotations

import math

import numpy as np

from dpgossip.privacy.gaussian_pair import GaussianPair, SupportMismatch
from dpgossip.privacy.views import ViewSpec

__all__ = ["FirstMessageView", "small_pair_delta", "small_pair_epsilon"]


class FirstMessageView:
    """The first-message sub-view of one view against one target (module docstring).

    ``available`` is False when the view receives no first-iteration message from the target's block
    (``c = 0``, or the target's randomness is known to the adversary), in which case no bound is given.
    """

    def __init__(self, X: np.ndarray, offsets: np.ndarray, spec: ViewSpec, target: int) -> None:
        X = np.asarray(X, dtype=float)
        n, d = X.shape
        self.d = d
        B = np.asarray(spec.B, dtype=float)
        known = np.asarray(spec.known)
        known_q0 = set(int(k) for k in known[known < n])
        m = len(offsets) - 1
        self.available = False
        if B.shape[0] == 0:
            return
        r = B.shape[0]
        S = np.zeros((r * d, r * d))
        for i in range(m):
            rows = range(int(offsets[i]), int(offsets[i + 1]))
            nk = sum(1 for k in rows if k in known_q0)
            if nk == len(rows):
                continue  # a known constant
            if nk:
                return  # partially known randomness: not a view built here
            Xi = X[offsets[i]:offsets[i + 1]]
            S += np.kron(np.outer(B[:, i], B[:, i]), Xi.T @ Xi)
        if all(int(k) in known_q0 for k in range(int(offsets[target]), int(offsets[target + 1]))):
            return
        bj = B[:, target]
        if not np.any(bj):
            return
        E = np.kron(bj[:, None], np.eye(d))
        lam, V = np.linalg.eigh((S + S.T) / 2)
        keep = lam > max(lam.max(initial=0.0), 0.0) * 1e-12 * S.shape[0]
        Vk = V[:, keep]
        EV = Vk.T @ E
        self.P = EV.T @ (EV / lam[keep][:, None])
        self.P = (self.P + self.P.T) / 2
        out = E - Vk @ EV
        self.Q = out.T @ out
        self.EtE = E.T @ E
        self.available = True

    def eigenvalues(self, x: np.ndarray, Xnew: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Nontrivial eigenvalues ``(M, 2)`` for replacements ``Xnew`` (``M x d``) of row ``x``, and a
        mask of the replacements whose supports differ (eigenvalues then meaningless)."""
        Xnew = np.atleast_2d(np.asarray(Xnew, dtype=float))
        P = self.P
        u = np.einsum("md,de,me->m", Xnew, P, Xnew)
        v = Xnew @ (P @ x)
        w = float(x @ P @ x)
        disc = np.sqrt(np.maximum((u + w) ** 2 - 4 * v * v, 0.0))
        lam = np.stack([1 + (u - w + disc) / 2, 1 + (u - w - disc) / 2], axis=1)
        lam = np.maximum(lam, 0.0)
        outside = np.einsum("md,de,me->m", Xnew, self.Q, Xnew)
        scale = np.einsum("md,de,me->m", Xnew, self.EtE, Xnew)
        mismatch = outside > 1e-10 * np.maximum(scale, 1e-300)
        return lam, mismatch

    def pair(self, x: np.ndarray, x_new: np.ndarray) -> GaussianPair:
        """The sub-view's :class:`GaussianPair` (``P`` under ``X``) for one replacement."""
        lam, mismatch = self.eigenvalues(x, x_new[None, :])
        if mismatch[0]:
            return GaussianPair.from_mismatch(SupportMismatch(
                "cov1 outside cov0", np.zeros(0), float("nan")))
        return GaussianPair.from_whitened(lam[0], np.zeros(2))


def _below(a1: float, a2: float, K: float) -> float:
    """``Pr(a1 g1^2 + a2 g2^2 < K)`` for independent standard normals, by one quadrature over ``g2``."""
    from scipy import integrate, special

    def inner(y: float) -> float:
        s = K - a2 * y * y
        if a1 > 0:
            return float(special.erf(math.sqrt(s / (2 * a1)))) if s > 0 else 0.0
        if a1 < 0:
            return 1.0 if s >= 0 else float(special.erfc(math.sqrt(s / (2 * a1))))
        return 1.0 if s > 0 else 0.0

    dens = math.sqrt(2 / math.pi)
    pts = [0.0]
    if a2 != 0 and K / a2 > 0:
        pts.append(math.sqrt(K / a2))
    pts.append(math.inf)
    total = 0.0
    for lo, hi in zip(pts[:-1], pts[1:], strict=False):
        val, _ = integrate.quad(lambda y: dens * math.exp(-y * y / 2) * inner(y), lo, hi,
                                epsabs=0.0, epsrel=1e-11, limit=200)
        total += val
    return min(max(total, 0.0), 1.0)


def small_pair_delta(lam: np.ndarray, epsilon: float) -> float:
    r"""Exact hockey-stick ``delta(epsilon)`` (worse direction) of ``P = N(0, I_p)``, ``Q = N(0, diag(lam))``
    for ``p <= 2`` nontrivial eigenvalues, by one-dimensional quadrature.

    ``L = ln p/q = (1/2) sum ln lam_i - (1/2) sum (1 - 1/lam_i) y_i^2``, so ``L > epsilon`` iff
    ``sum c_i y_i^2 < K``, ``c_i = 1 - 1/lam_i``, ``K = sum ln lam_i - 2 epsilon``; under ``Q``,
    ``y_i = sqrt(lam_i) g_i``. Then ``delta = Pr(sum c_i g_i^2 < K) - e^eps Pr(sum (lam_i - 1) g_i^2 < K)``;
    the direction ``Q||P`` is the same with ``1/lam``. (Imhof's inversion converges slowly for so few
    terms; this is exact to the quadrature's ``1e-11`` relative accuracy.)
    """
    lam = np.asarray(lam, dtype=float).reshape(-1)
    if lam.size > 2 or np.any(lam <= 0):
        raise ValueError(f"small_pair_delta needs at most 2 positive eigenvalues, got {lam}")
    lam = np.concatenate([lam, np.ones(2 - lam.size)])
    out = 0.0
    for ll in (lam, 1.0 / lam):
        K = float(np.sum(np.log(ll))) - 2 * epsilon
        c = 1 - 1 / ll
        p_term = _below(float(c[0]), float(c[1]), K)
        q_term = _below(float(ll[0] - 1), float(ll[1] - 1), K)
        q_scaled = math.exp(min(epsilon + math.log(q_term), 700.0)) if q_term > 0 else 0.0
        out = max(out, p_term - q_scaled)
    return max(out, 0.0)


def small_pair_epsilon(lam: np.ndarray, delta: float, upper: float) -> float:
    """Smallest ``epsilon`` with :func:`small_pair_delta` ``<= delta`` (``upper``: an epsilon known to be
    enough, e.g. the RDP epsilon), by bisection-safe root finding on ``log delta``."""
    from scipy import optimize

    if small_pair_delta(lam, 0.0) <= delta:
        return 0.0
    if not math.isfinite(upper):
        return math.inf
    hi = max(upper, 1e-9)
    while small_pair_delta(lam, hi) > delta:
        hi *= 2
        if hi > 1e6:
            return math.inf

    def excess(e: float) -> float:
        return math.log(max(small_pair_delta(lam, e), 1e-300)) - math.log(delta)

    return float(optimize.brentq(excess, 0.0, hi, xtol=1e-12, rtol=1e-10))
