r"""Every observer's reduced view of one candidate neighbour at once, from one factorisation per audit.

docs/audit-scale.md, Section 8. Take the reduced observer view of :mod:`~dpgossip.protocols.ddppm.reduced`
and rotate the target's raw final rows into ``[U_j^T Y_j ; U_j^{\perp T} Y_j]``. Under the audited data
``X`` the second part is the target's final noise alone (``(I - U_j U_j^T) X_j = 0``), independent of
everything else, of covariance ``s_T^2 I``. What remains is, for every target,

.. math::

    F = \bigl(U_a^T Y_a\bigr)_{a \ne o} \quad (d (m - 1)), \qquad
    E_o = \bigl[(B \otimes I_d) z^{(t)}\bigr]_{t \le T} \cup \bigl[\kappa_s = U_o^T w_{s,o}\bigr]_{s < T},

(``kappa_T`` enters only the observer's own final rows, which are not in the view, so it is an
independent factor of the same law under both datasets and is left out). **Under ``X`` their joint law
does not depend on the target**: one factorisation per audit serves every pair. The covariances are

.. math::

    S_{F_0} = \Psi + s_T^2 I,\quad
    \mathrm{Cov}(F_0, z^{(t)}) = (C_{(t,T)} K_r)^T,\quad
    \mathrm{Cov}(z^{(t)}, \kappa_s) = A^{t-1-s} E_o R_o^T \mathrm{std}_s^2 \ (s < t),

with ``F_0`` every agent's reduced final block (``F`` is ``F_0`` without the observer's block),
``Psi = K_r^T C_(T,T) K_r`` and ``K_r`` as in :mod:`~dpgossip.protocols.ddppm.reduced`. With
``P = S_{F_0}^{-1}``, the inverse of ``S_F`` (the principal submatrix without block ``o``) is
``P_{-o,-o} - P_{-o,o} P_{oo}^{-1} P_{o,-o}``, so for any ``V``

.. math::

    V_F^T S_F^{-1} V_F = V^T P V - (P V)_o^T P_{oo}^{-1} (P V)_o,
    \qquad S_F^{-1} V_F = \bigl[P V - P_{:,o} P_{oo}^{-1} (P V)_o\bigr]_{-o}.

A neighbour changes the view's latent factor on the row space ``C`` of the change (``p`` columns), so
``S_1 = S_0 - V_0 V_0^T + V_1 V_1^T`` with ``V_i = G_i C``, and the generalised eigenvalues of
``(S_1, S_0)`` other than one are ``1 + eig(J Q)``, ``J = diag(-I_p, I_p)``, where

.. math::

    Q = V^T S_0^{-1} V = \frac{V_\perp^T V_\perp}{s_T^2} + V_F^T S_F^{-1} V_F + r^T \Sigma_o^{-1} r,
    \qquad r = V_E - S_{EF} S_F^{-1} V_F,

``V = [V_0, V_1]`` and ``Sigma_o = S_EE - S_EF S_F^{-1} S_FE`` the Schur complement of ``E_o`` given ``F``
(factorised once per observer, by pivoted Cholesky: exact linear dependencies between messages are
allowed; a component of ``r`` outside its range means the supports differ). ``eig(J Q)`` is computed
as ``eig(R J R^T)`` for ``Q = R^T R``, symmetric.

The row space of the change is found in closed form (:meth:`ObserverBatchAuditor._change_rowspace`).

Cost: ``O((m d)^3 T)`` once per audit, ``O((m d)^2 |E_o|)`` once per observer, and per neighbour
``O(T (m d)^2 p)`` for all observers together plus ``O(|E_o|^2 p)`` per observer; no matrix of the
size of a view is factorised per pair.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

from dpgossip.data.partition import PartitionedData
from dpgossip.privacy.gaussian_pair import GaussianPair, SupportMismatch
from dpgossip.privacy.neighbours import Neighbour
from dpgossip.protocols.ddppm.lowrank import (
    WhitenedCovariance,
    pencil_eigenvalues,
)
from dpgossip.protocols.ddppm.params import ProtocolParams
from dpgossip.protocols.ddppm.reduced import ReducedAuditor
from dpgossip.protocols.ddppm.views import View
from dpgossip.topology.network import Network

__all__ = ["ObserverBatchAuditor"]

FEW_VIEWS = 4
"""Up to this many views per neighbour, ``V^T P V`` by a triangular solve and ``S_{E F_0} P V`` from
each view's stored ``P S_{F_0 E}``; beyond, the products shared by all views."""

SUPPORT_TOL = 1e-7
"""A column of ``r`` whose relative component outside the range of ``Sigma_o`` exceeds this means the
supports of the two laws differ (as :func:`~dpgossip.protocols.ddppm.lowrank.pencil_eigenvalues`)."""


@dataclass(frozen=True, slots=True, eq=False)
class _ObserverBase:
    """What one observer's view needs per neighbour, computed once per audit (module docstring)."""

    agent: int
    Bk: np.ndarray
    """``B (x) I_d`` on the agents the observer's messages combine (``r d x |idx|``)."""
    idx: np.ndarray
    """Their coordinates in ``z`` (original agent order)."""
    Poo_inv: np.ndarray
    """``P_oo^{-1}`` (``d x d``)."""
    Hm: np.ndarray
    """``H = P S_{F_0 E}`` (``m d x |E|``): ``S_{E F_0} P V = H^T V`` for a few views; its rows of
    the observer's block are ``H_o``."""
    schur: WhitenedCovariance
    """Factor of ``Sigma_o``."""


class ObserverBatchAuditor(ReducedAuditor):
    """:class:`ReducedAuditor` whose :meth:`pairs` evaluates every requested observer view of a
    neighbour from one factorisation per audit and one Schur complement per observer (module
    docstring). The same divergences, to rounding. The row space of a change is found in closed form
    (:meth:`_change_rowspace`), so no random stream is used and the values of a neighbour do not depend
    on what was evaluated before it."""

    def __init__(self, data: PartitionedData, network: Network, params: ProtocolParams,
                 views: Mapping[Hashable, View], *, seed: int = 0) -> None:
        super().__init__(data, network, params, views, seed=seed)
        self._base_moments()
        self._bases: dict[Hashable, _ObserverBase] = {}

    # ------------------------------------------------------------------ once per audit
    def _base_moments(self) -> None:
        m, d, T = self.m, self.d, self.T
        md = m * d
        s = self.n // m
        self.latent_std = self.std[::self.n][:T + 1]
        var_T = self.var_T[:, 0]
        S = self.Psi + np.diag(np.repeat(var_T, d))
        cf = sla.cho_factor((S + S.T) / 2, lower=True, check_finite=False)
        self.Lf = np.tril(cf[0])
        P = sla.cho_solve(cf, np.eye(md), check_finite=False)
        self.P = (P + P.T) / 2
        powers = [np.eye(md)]
        for _ in range(T - 1):
            powers.append(self.A @ powers[-1])
        self.Apow = powers
        # Cov(F0, z^(t)) = CK[t]^T; Cov(F0, kappa_s) = Kr^T A^(T-1-s) E_o R_o^T std_s^2
        self.KA = [self.Kr.T @ powers[T - 1 - sb] for sb in range(T)]
        self.PCK = [self.P @ self.CK[t].T for t in range(1, T + 1)]
        self.PKA = [self.P @ self.KA[sb] for sb in range(T)]
        self.CKs = np.stack([self.CK[t] for t in range(1, T + 1)])
        self.KAT = np.stack([k.T for k in self.KA])
        self.rows_per_agent = s

    def _observer_base(self, k: Hashable) -> _ObserverBase:
        if k in self._bases:
            return self._bases[k]
        m, d, T = self.m, self.d, self.T
        o = int(self.views[k].agents[0])
        B = np.asarray(self.specs[k].B, dtype=float).reshape(-1, m)
        cols = np.flatnonzero(np.any(B != 0, axis=0))  # the agents whose z the messages combine
        idx = (cols[:, None] * d + np.arange(d)).ravel()
        Bk = np.kron(B[:, cols], np.eye(d))
        ob = slice(o * d, (o + 1) * d)
        Ro, std2 = self.R[o], self.latent_std ** 2
        SEF = [Bk @ self.CK[t][idx] for t in range(1, T + 1)]
        SEF += [std2[sb] * Ro @ self.KA[sb][:, ob].T for sb in range(T)]
        H = [self.PCK[t - 1][:, idx] @ Bk.T for t in range(1, T + 1)]
        H += [self.PKA[sb][:, ob] @ Ro.T * std2[sb] for sb in range(T)]
        SEF_m, H_m = np.vstack(SEF), np.hstack(H)
        SEE = self._messages_known_covariance(Bk, idx, o)
        Ho = H_m[ob]
        Poo_inv = np.linalg.inv(self.P[ob, ob])
        schur = SEE - SEF_m @ H_m + Ho.T @ Poo_inv @ Ho
        base = _ObserverBase(agent=o, Bk=Bk, idx=idx, Poo_inv=Poo_inv, Hm=H_m,
                             schur=WhitenedCovariance((schur + schur.T) / 2))
        self._bases[k] = base
        return base

    def _messages_known_covariance(self, Bk: np.ndarray, idx: np.ndarray, o: int) -> np.ndarray:
        """``S_EE``: messages ``B_k C_(t,u) B_k^T``, messages and known noise
        ``B_k A^(t-1-s) E_o R_o^T std_s^2`` (``s < t``), known noise ``std_s^2 I``."""
        T, d = self.T, self.d
        rd = Bk.shape[0]
        nE = T * rd + T * d
        S = np.zeros((nE, nE))
        std2, Ro = self.latent_std ** 2, self.R[o]
        for t in range(1, T + 1):
            for u in range(1, t + 1):
                blk = Bk @ self.C[(t, u)][np.ix_(idx, idx)] @ Bk.T
                S[(t - 1) * rd:t * rd, (u - 1) * rd:u * rd] = blk
                S[(u - 1) * rd:u * rd, (t - 1) * rd:t * rd] = blk.T
            for sb in range(t):
                blk = Bk @ self.Apow[t - 1 - sb][idx, o * d:(o + 1) * d] @ Ro.T * std2[sb]
                c0 = T * rd + sb * d
                S[(t - 1) * rd:t * rd, c0:c0 + d] = blk
                S[c0:c0 + d, (t - 1) * rd:t * rd] = blk.T
        for sb in range(T):
            c0 = T * rd + sb * d
            S[c0:c0 + d, c0:c0 + d] = std2[sb] * np.eye(d)
        return S

    # ------------------------------------------------------------------ per neighbour
    def pairs(self, nb: Neighbour, keys: list[Hashable]) -> dict[Hashable, GaussianPair]:
        """:class:`GaussianPair` of every view in ``keys`` for the neighbour ``nb`` (``P`` under ``X``):
        the nontrivial generalised eigenvalues ``1 + eig(J Q)`` of each view (module docstring)."""
        if not keys:
            return {}
        s = self.rows_per_agent
        j = int(nb.row) // s
        full = self._target_view(j)
        rho = full.n - s + int(nb.row) - j * s
        X1 = full.X.copy()
        X1[rho] = nb.x_new
        full1 = full.with_data(X1)
        C = self._change_rowspace(full, rho, nb.x_new)
        p = C.shape[1]
        if p == 0:
            return {k: GaussianPair.from_whitened(np.ones(1), np.zeros(1)) for k in keys}
        V = np.hstack([full.forward(C), full1.forward(C)])
        common = self._neighbour_terms(V, j, [self._observer_base(k) for k in keys])
        Q, bad = self._grams(keys, V, C, j, common)
        lam = self._eigenvalues(Q, p)
        out = {k: GaussianPair.from_whitened(lam[i], np.zeros(lam.shape[1]))
               for i, k in enumerate(keys) if not bad[i]}
        odd = [k for i, k in enumerate(keys) if bad[i]]
        if odd:  # supports seem to differ: the per-pair factorisation decides (and names the direction)
            out.update(self._pairs_one_by_one(j, odd, C, V[:, :p], V[:, p:]))
        return {k: out[k] for k in keys}

    def _pairs_one_by_one(self, j: int, keys: list[Hashable], C: np.ndarray, Z0: np.ndarray,
                          Z1: np.ndarray) -> dict[Hashable, GaussianPair]:
        """:meth:`ReducedAuditor.pairs` of ``keys`` on the same row space ``C`` (one factorisation per
        view): where a change leaves the range of a Schur complement, whose pivoted factorisation
        decides only up to its tolerance. ``Z0``, ``Z1``: the full view's ``G_0 C`` and ``G_1 C``."""
        out = {}
        for k in keys:
            op0, white = self._view(k, j)
            pen = pencil_eigenvalues(white, op0, None, C,
                                     forwards=(op0.read_out(Z0, C), op0.read_out(Z1, C)))
            out[k] = (GaussianPair.from_mismatch(SupportMismatch(
                "cov1 outside cov0", pen.outside_direction, pen.outside)) if not pen.support_ok
                else GaussianPair.from_whitened(pen.lam, np.zeros(pen.lam.size)))
        return out

    def _change_rowspace(self, full, rho: int, x_new: np.ndarray, *, tol: float = 1e-10
                         ) -> np.ndarray:
        r"""Orthonormal ``C`` spanning the row space of ``G_1 - G_0`` of the target's full reduced view
        (``rho``: the changed row, ``x -> x_new``), in closed form instead of by random range finding.

        With ``delta = x_new - x``, ``D' = D + e_rho (E_j delta)^T`` and ``K_a = alpha (m W^c (x) I_d)``,
        the two runs differ by

        .. math::

            \Delta z^{(t)} = D'^T \Delta q^{(t-1)} + E_j \delta\, q^{(t-1)}_\rho, \qquad
            \Delta q^{(t)} = D' K_a \Delta z^{(t)} + e_\rho\, \delta^T (K_a z^{(t)})_j,

        so the difference is a linear function of the ``2 T`` scalars ``q^(t-1)_rho = x^T (K_a
        z^(t-1))_j + w_(t-1, rho)`` (``w_(0, rho)`` for ``t = 1``) and ``delta^T (K_a z^(t))_j``
        (``t = 1..T``), each a linear functional of the latent ``g``; their gradients are one adjoint of
        the view map with ``2 T - 1`` columns (the ``z^(t)`` slots of the full view). ``C``: their left
        singular vectors above ``tol`` times the largest.
        """
        T, m, d, n = self.T, self.m, self.d, full.n
        md = m * d
        row = full.mWc[m - 1] * full.alpha  # the target is last
        u_b = np.kron(row, x_new - full.X[rho])
        u_a = np.kron(row, full.X[rho])
        V = np.zeros((full.K, 2 * T - 1))
        for t in range(1, T + 1):
            V[(t - 1) * md:t * md, t - 1] = u_b
            if t < T:
                V[(t - 1) * md:t * md, T + t - 1] = u_a
        L = np.empty((full.N, 2 * T))
        L[:, :2 * T - 1] = full.adjoint(V)
        L[:, 2 * T - 1] = 0.0
        L[rho, 2 * T - 1] = 1.0  # q^(0)_rho = std_0 g[rho]
        for t in range(1, T):  # q^(t)_rho also holds w_(t, rho) = std_t g[t n + rho]
            L[t * n + rho, T + t - 1] += full.std[t * n + rho]
        U, sv, _ = np.linalg.svd(L, full_matrices=False)
        if sv.size == 0 or sv[0] == 0:
            return np.zeros((full.N, 0))
        return U[:, :int(np.sum(sv > tol * sv[0]))]

    def _neighbour_terms(self, V: np.ndarray, j: int, bases: list[_ObserverBase]
                         ) -> dict[str, np.ndarray]:
        """Per neighbour, shared by the views ``bases``: the trajectories in agent order, ``V_F0``, the
        rows of ``P V_F0`` the views read, ``V_F0^T P V_F0 + V_perp^T V_perp / s_T^2`` and, for more
        than :data:`FEW_VIEWS` views, ``C_(t,T) K_r P V_F0`` and ``K_A[s]^T P V_F0``."""
        m, d, T = self.m, self.d, self.T
        md, b = m * d, V.shape[1]
        pos_of = np.argsort(self._order)
        z = V[:T * md].reshape(T, m, d, b)[:, pos_of]
        fin = V[T * md:]
        red = fin[:(m - 1) * d].reshape(m - 1, d, b)
        VF = np.empty((m, d, b))
        VF[self._order[:-1]] = red
        Vj = fin[(m - 1) * d:]
        Uj = self.U[j]
        VF[j] = Uj.T @ Vj
        perp = Vj - Uj @ VF[j]
        VF = VF.reshape(md, b)
        out = {"z": z.reshape(T, md, b), "VF": VF, "pos_of": pos_of}
        own = np.concatenate([np.arange(base.agent * d, (base.agent + 1) * d) for base in bases])
        if len(bases) <= FEW_VIEWS:  # V^T P V by one triangular solve; the rows of P V they read
            W = sla.solve_triangular(self.Lf, VF, lower=True, check_finite=False)
            gram = W.T @ W
            PV = np.zeros((md, b))
            PV[own] = self.P[own] @ VF
            out["few"] = True
        else:
            PV = self.P @ VF
            gram = VF.T @ PV
            out["CKPV"], out["KAPV"] = np.matmul(self.CKs, PV), np.matmul(self.KAT, PV)
        gram = gram + perp.T @ perp / self.var_T[j, 0]
        out.update(PV=PV, gram=(gram + gram.T) / 2)
        return out

    def _grams(self, keys: list[Hashable], V: np.ndarray, C: np.ndarray, j: int,
               common: dict[str, np.ndarray]) -> tuple[np.ndarray, list[bool]]:
        """``Q`` of every view (stacked) and, per view, whether a column of ``r`` leaves the range of
        ``Sigma_o`` (relative component above :data:`SUPPORT_TOL`)."""
        d, T = self.d, self.T
        b = V.shape[1]
        n_red = self._full.n
        Q = np.empty((len(keys), b, b))
        bad: list = []
        for i, k in enumerate(keys):
            base = self._observer_base(k)
            o = base.agent
            ob = slice(o * d, (o + 1) * d)
            PVo, Ho = common["PV"][ob], base.Hm[ob]
            corr = base.Poo_inv @ PVo
            rd = base.Bk.shape[0]
            msgs = np.matmul(base.Bk, common["z"][:, base.idx]).reshape(T * rd, b)
            pos = int(common["pos_of"][o])
            kn = [self.latent_std[sb] * C[sb * n_red + pos * d:sb * n_red + (pos + 1) * d]
                  for sb in range(T)]
            known = np.hstack([np.vstack(kn)] * 2)
            if common.get("few"):  # S_EF0 P V = H^T V
                r = np.vstack([msgs, known]) - base.Hm.T @ common["VF"] + Ho.T @ corr
            else:
                sef = np.matmul(base.Bk, common["CKPV"][:, base.idx]).reshape(T * rd, b)
                kap = [self.latent_std[sb] ** 2 * self.R[o] @ common["KAPV"][sb][ob]
                       for sb in range(T)]
                r = np.vstack([msgs - sef, known - np.vstack(kap)]) + Ho.T @ corr
            a, rel = base.schur.whiten(r)
            Q[i] = common["gram"] - PVo.T @ corr + a.T @ a
            bad.append(bool(rel.size) and float(rel.max()) > SUPPORT_TOL)
        return Q, bad

    @staticmethod
    def _eigenvalues(Q: np.ndarray, p: int) -> np.ndarray:
        """``1 + eig(R J R^T)`` for ``Q = R^T R`` (stacked), ``J = diag(-I_p, I_p)``; clipped at 0."""
        Q = (Q + Q.transpose(0, 2, 1)) / 2
        w, U = np.linalg.eigh(Q)
        R = np.sqrt(np.clip(w, 0.0, None))[:, :, None] * U.transpose(0, 2, 1)
        J = np.concatenate([-np.ones(p), np.ones(Q.shape[1] - p)])
        M = np.matmul(R * J[None, None, :], R.transpose(0, 2, 1))
        return np.clip(1.0 + np.linalg.eigvalsh((M + M.transpose(0, 2, 1)) / 2), 0.0, None)
