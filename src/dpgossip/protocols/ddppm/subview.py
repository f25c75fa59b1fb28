r"""The first-message sub-view: a closed-form lower bound on a pair's worst case over neighbours.

In iteration 1 every agent ``i`` computes ``z_i = X_i^T q_i^(0)`` with ``q_i^(0) ~ N(0, sigma_q^2 I)``, and
an adversary whose view has compression basis ``B`` (``r x m``,
:class:`~dpgossip.protocols.ddppm.views.ViewSpec`)
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

import numpy as np

from dpgossip.privacy.gaussian_pair import GaussianPair, SupportMismatch
from dpgossip.protocols.ddppm.views import ViewSpec

__all__ = ["FirstMessageView"]


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
        known_mask = np.zeros(n, dtype=bool)
        known_mask[known[known < n]] = True
        m = len(offsets) - 1
        self.available = False
        if B.shape[0] == 0:
            return
        if not np.any(B[:, target]):
            return  # no first message of the target (checked first: the loop below is the cost)
        r = B.shape[0]
        S = np.zeros((r * d, r * d))
        for i in range(m):
            rows = range(int(offsets[i]), int(offsets[i + 1]))
            nk = int(np.count_nonzero(known_mask[offsets[i]:offsets[i + 1]]))
            if nk == len(rows):
                continue  # a known constant
            if nk:
                return  # partially known randomness: not a view built here
            if not np.any(B[:, i]):
                continue  # adds a zero block
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
