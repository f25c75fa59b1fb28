r"""Every observer's reduced view of one candidate neighbour at once, from one factorisation per audit.

docs/audit-scale.md, Sections 8 and 9. Take the reduced observer view of
:mod:`~dpgossip.protocols.ddppm.reduced` and rotate the target's raw final rows into ``[U_j^T Y_j ;
U_j^{\perp T} Y_j]``. Under the audited data ``X`` the second part is the target's final noise alone
(``(I - U_j U_j^T) X_j = 0``), independent of everything else, of covariance ``s_T^2 I``. What remains
is, for every target,

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

A neighbour changes the view by a low-rank update ``S_1 = S_0 + V M V^T`` (``V = [Gamma, Psi]``, ``4 T``
columns, the channel form of :mod:`~dpgossip.protocols.ddppm.row_channels`), and the generalised
eigenvalues of ``(S_1, S_0)`` other than one are ``1 + eig(M Q)``, where

.. math::

    Q = V^T S_0^{-1} V = \frac{V_\perp^T V_\perp}{s_T^2} + V_F^T S_F^{-1} V_F + r^T \Sigma_o^{-1} r,
    \qquad r = V_E - S_{EF} S_F^{-1} V_F,

and ``Sigma_o = S_EE - S_EF S_F^{-1} S_FE`` the Schur complement of ``E_o`` given ``F`` (factorised once
per observer, by pivoted Cholesky: exact linear dependencies between messages are allowed; a component
of ``r`` outside its range means the supports differ). ``eig(M Q)`` is computed as ``eig(R M R^T)``
for ``Q = R^T R``, symmetric.

Every ``V`` of a target is ``B_j A`` for the target's basis ``B_j`` (``2 T d + s`` columns) and a small
``A`` per neighbour, so ``Q = A^T (B_j^T S_0^{-1} B_j) A``: the views' Grams of the basis are computed once
per target (the formulas above with ``V = B_j``), and a neighbour costs ``O(|views| (T d + s)^2 T)``
and nothing of the size of a view. Where a basis column seems to leave a Schur complement's range, the
view of each neighbour is decided by the per-pair factorisation of Section 7 on the row space of the
change (:meth:`ObserverBatchAuditor._change_rowspace`, closed form).

Cost: ``O((m d)^3 T)`` once per audit, ``O((m d)^2 |E_o|)`` once per observer, ``O(T (m d)^2 (T d +
s))`` plus ``O(|E_o|^2 (T d + s))`` per observer once per target; no matrix of the size of a view is
factorised per pair.
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
from dpgossip.protocols.ddppm.row_channels import TargetChannels
from dpgossip.protocols.ddppm.views import View
from dpgossip.topology.network import Network

__all__ = ["ObserverBatchAuditor"]

FEW_VIEWS = 4
"""Up to this many views at once, ``V^T P V`` by a triangular solve and ``S_{E F_0} P V`` from each
view's stored ``P S_{F_0 E}``; beyond, the products shared by all views and the views stacked."""

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
    cols: np.ndarray
    """The agents whose ``z`` the messages combine."""
    Bc: np.ndarray
    """``B`` on those agents (``r x |cols|``; ``Bk = Bc (x) I_d``)."""
    Wh: np.ndarray | None
    """The whitening matrix of a full-rank ``Sigma_o`` (``schur.whiten(r)[0] = Wh r``); else None."""


@dataclass(frozen=True, slots=True, eq=False)
class _ObserverStack:
    """The views of one shape of messages, their :class:`_ObserverBase` quantities stacked (first axis:
    view)."""

    keys: list
    agents: np.ndarray
    cols: np.ndarray
    Bc: np.ndarray
    Poo_inv: np.ndarray
    HoT: np.ndarray
    """``H_o^T`` (``|E| x d``)."""
    Ro: np.ndarray
    Wh: np.ndarray


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
        self._channels: tuple[object, TargetChannels] | None = None
        self._gram_of: dict[Hashable, tuple[np.ndarray, bool]] = {}

    # ------------------------------------------------------------------ once per audit
    def _base_moments(self) -> None:
        m, d, T = self.m, self.d, self.T
        md = m * d
        self.latent_std = self.std[::self.n][:T + 1]
        S = self.Psi + np.diag(np.repeat(self.var_final, d))
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
        white = WhitenedCovariance((schur + schur.T) / 2)
        base = _ObserverBase(agent=o, Bk=Bk, idx=idx, Poo_inv=Poo_inv, Hm=H_m, schur=white,
                             cols=cols, Bc=np.ascontiguousarray(B[:, cols]),
                             Wh=(white.whiten(np.eye(white.K))[0] if white.rank == white.K else None))
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
        j = self.owner(nb.row)
        local = int(nb.row) - int(self.offsets[j])
        up = self._target_channels(j).update(local, nb.x_new)
        G, bad = self._basis_grams(j, keys)
        A = up.coef
        Q = np.matmul(np.matmul(A.T, G), A)
        lam = self._eigenvalues(Q, up.middle)
        out = {k: GaussianPair.from_whitened(lam[i], np.zeros(lam.shape[1]))
               for i, k in enumerate(keys) if not bad[i]}
        odd = [k for i, k in enumerate(keys) if bad[i]]
        if odd:  # supports seem to differ: the per-pair factorisation decides (and names the direction)
            full = self._target_view(j)
            rho = full.target_start + local
            X1 = full.X.copy()
            X1[rho] = nb.x_new
            C = self._change_rowspace(full, rho, nb.x_new)
            if C.shape[1] == 0:
                out.update({k: GaussianPair.from_whitened(np.ones(1), np.zeros(1)) for k in odd})
            else:
                out.update(self._pairs_one_by_one(j, odd, C, full.forward(C),
                                                  full.with_data(X1).forward(C)))
        return {k: out[k] for k in keys}

    def _target_channels(self, j: int) -> TargetChannels:
        """The channel form's per-target quantities (:mod:`~dpgossip.protocols.ddppm.row_channels`),
        built again when the target changes (with them, the views' Grams of the basis)."""
        full = self._target_view(j)
        if self._channels is None or self._channels[0] is not full:
            self._channels = (full, TargetChannels(full))
            self._gram_of = {}
        return self._channels[1]

    def _basis_grams(self, j: int, keys: list[Hashable]) -> tuple[np.ndarray, list[bool]]:
        """``B_j^T S_0^{-1} B_j`` of the views ``keys`` (the target's basis,
        :attr:`TargetChannels.basis`; a neighbour's ``Q`` is ``A^T`` this ``A``) and, per view, whether
        a basis column leaves the range of ``Sigma_o``; computed once per target and view."""
        channels = self._target_channels(j)
        todo = [k for k in keys if k not in self._gram_of]
        if todo:
            common = self._neighbour_terms(channels.basis, j, [self._observer_base(k) for k in todo])
            G, bad = self._grams(todo, channels.basis, channels.basis_latent, j, common)
            self._gram_of.update({k: (G[i], bad[i]) for i, k in enumerate(todo)})
        return (np.stack([self._gram_of[k][0] for k in keys]), [self._gram_of[k][1] for k in keys])

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
        singular vectors above ``tol`` times the largest (from a thin QR ``L = Q_f R_f`` and the SVD of
        the ``2 T x 2 T`` factor ``R_f = U_r Sigma V^T``: ``C = Q_f U_r``).
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
        Qf, Rf = np.linalg.qr(L)  # L = Q_f R_f: the singular values of R_f are L's, at 2 T columns' cost
        Ur, sv, _ = np.linalg.svd(Rf)
        if sv.size == 0 or sv[0] == 0:
            return np.zeros((full.N, 0))
        return Qf @ Ur[:, :int(np.sum(sv > tol * sv[0]))]

    def _neighbour_terms(self, V: np.ndarray, j: int, bases: list[_ObserverBase]
                         ) -> dict[str, np.ndarray]:
        """For view vectors ``V`` of target ``j`` (its basis), shared by the views ``bases``: the
        trajectories in agent order, ``V_F0``, the rows of ``P V_F0`` the views read,
        ``V_F0^T P V_F0 + V_perp^T V_perp / s_T^2`` and, for more than :data:`FEW_VIEWS` views,
        ``C_(t,T) K_r P V_F0`` and ``K_A[s]^T P V_F0``."""
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
        gram = gram + perp.T @ perp / self.var_final[j]
        out.update(PV=PV, gram=(gram + gram.T) / 2)
        return out

    def _grams(self, keys: list[Hashable], V: np.ndarray, latent: np.ndarray, j: int,
               common: dict[str, np.ndarray]) -> tuple[np.ndarray, list[bool]]:
        """``Q`` of every view (stacked) and, per view, whether a column of ``r`` leaves the range of
        ``Sigma_o`` (relative component above :data:`SUPPORT_TOL`). ``latent``: ``Cov(g, V)``, whose
        rows at the observer's known noise (times its scale) are ``V``'s known coordinates."""
        d, T = self.d, self.T
        b = V.shape[1]
        n_red = self._full.n
        Q = np.empty((len(keys), b, b))
        bad: list = [False] * len(keys)
        alone = list(range(len(keys)))
        if not common.get("few"):
            alone = self._grams_stacked(keys, latent, common, Q)
        for i in alone:
            k = keys[i]
            base = self._observer_base(k)
            o = base.agent
            ob = slice(o * d, (o + 1) * d)
            PVo, Ho = common["PV"][ob], base.Hm[ob]
            corr = base.Poo_inv @ PVo
            rd = base.Bk.shape[0]
            msgs = np.matmul(base.Bk, common["z"][:, base.idx]).reshape(T * rd, b)
            pos = int(common["pos_of"][o])
            known = np.vstack([self.latent_std[sb] * latent[sb * n_red + pos * d:sb * n_red + (pos + 1) * d]
                               for sb in range(T)])
            if common.get("few"):  # S_EF0 P V = H^T V
                r = np.vstack([msgs, known]) - base.Hm.T @ common["VF"] + Ho.T @ corr
            else:
                sef = np.matmul(base.Bk, common["CKPV"][:, base.idx]).reshape(T * rd, b)
                kap = [self.latent_std[sb] ** 2 * self.R[o] @ common["KAPV"][sb][ob]
                       for sb in range(T)]
                r = np.vstack([msgs - sef, known - np.vstack(kap)]) + Ho.T @ corr
            a, rel = base.schur.whiten(r)
            Q[i] = common["gram"] - PVo.T @ corr + a.T @ a
            bad[i] = bool(rel.size) and float(rel.max()) > SUPPORT_TOL
        return Q, bad

    def _grams_stacked(self, keys: list[Hashable], latent: np.ndarray, common: dict[str, np.ndarray],
                       Q: np.ndarray) -> list[int]:
        """:meth:`_grams` of the views in ``keys`` whose messages have the same shape and whose
        ``Sigma_o`` is of full rank (every ``r`` then lies in its range), all at once by batched
        products (``a = W_o r`` with ``W_o`` the whitening matrix); fills their rows of ``Q`` and
        returns the positions of the others."""
        d, T, m = self.d, self.T, self.m
        b = Q.shape[1]
        n_red = self._full.n
        std, std2 = self.latent_std[:T], self.latent_std[:T] ** 2
        z4 = common["z"].reshape(T, m, d, b)
        ck4 = common["CKPV"].reshape(T, m, d, b)
        ka4 = common["KAPV"].reshape(T, m, d, b)
        PV3 = common["PV"].reshape(m, d, b)
        lat = latent[:T * n_red].reshape(T, n_red, b)
        pos_of = common["pos_of"]
        at = {k: i for i, k in enumerate(keys)}
        done: set[int] = set()
        for group in self._stacks(keys):
            idx = np.array([at[k] for k in group.keys])
            o = group.agents
            PVo = PV3[o]  # (V, d, b)
            corr = np.matmul(group.Poo_inv, PVo)
            msgs = np.einsum("vrc,tvcdb->vtrdb", group.Bc, z4[:, group.cols] - ck4[:, group.cols])
            rows = (pos_of[o] * d)[:, None] + np.arange(d)[None, :]  # (V, d)
            known = std[None, :, None, None] * lat[:, rows].transpose(1, 0, 2, 3)
            kap = np.einsum("t,vij,tvjb->vtib", std2, group.Ro, ka4[:, o])
            V = o.size
            r = np.concatenate([msgs.reshape(V, -1, b), (known - kap).reshape(V, -1, b)], axis=1)
            r += np.matmul(group.HoT, corr)
            a = np.matmul(group.Wh, r)
            Q[idx] = (common["gram"][None] - np.matmul(PVo.transpose(0, 2, 1), corr)
                      + np.matmul(a.transpose(0, 2, 1), a))
            done.update(idx.tolist())
        return [i for i in range(len(keys)) if i not in done]

    def _stacks(self, keys: list[Hashable]) -> list[_ObserverStack]:
        """The views of ``keys`` with a full-rank ``Sigma_o``, grouped by the shape of their messages,
        each group's per-view quantities stacked (:class:`_ObserverStack`)."""
        groups: dict[tuple[int, int, int], list[tuple[Hashable, _ObserverBase]]] = {}
        for k in keys:
            base = self._observer_base(k)
            if base.schur.rank == base.schur.K:
                groups.setdefault((base.Bc.shape[0], base.Bc.shape[1], base.schur.K), []).append(
                    (k, base))
        out = []
        for members in groups.values():
            bases = [base for _, base in members]
            agents = np.array([base.agent for base in bases])
            ob = (agents * self.d)[:, None] + np.arange(self.d)[None, :]
            out.append(_ObserverStack(
                keys=[k for k, _ in members], agents=agents,
                cols=np.stack([base.cols for base in bases]), Bc=np.stack([base.Bc for base in bases]),
                Poo_inv=np.stack([base.Poo_inv for base in bases]),
                HoT=np.stack([base.Hm[ob[i]].T for i, base in enumerate(bases)]),
                Ro=self.R[agents], Wh=np.stack([base.Wh for base in bases])))
        return out

    @staticmethod
    def _eigenvalues(Q: np.ndarray, M: np.ndarray) -> np.ndarray:
        """``1 + eig(R M R^T)`` for ``Q = R^T R`` (stacked) and the update's middle matrix ``M``
        (``S_1 - S_0 = V M V^T``); clipped at 0."""
        Q = (Q + Q.transpose(0, 2, 1)) / 2
        w, U = np.linalg.eigh(Q)
        R = np.sqrt(np.clip(w, 0.0, None))[:, :, None] * U.transpose(0, 2, 1)
        A = np.matmul(np.matmul(R, M), R.transpose(0, 2, 1))
        return np.clip(1.0 + np.linalg.eigvalsh((A + A.transpose(0, 2, 1)) / 2), 0.0, None)
