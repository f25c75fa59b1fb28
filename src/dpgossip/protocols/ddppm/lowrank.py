"""Generalised eigenvalues of a view under ``X`` and a neighbour ``X'`` through a low-rank update.

A neighbour changes one row, so the latent factor of the view changes by a low-rank term:
``G_1 = G_0 + U C^T`` with ``C`` (``N x p``, orthonormal) spanning the row space of ``G_1 - G_0`` (``p <= 2T``
for one changed row: the change enters the dynamics through two scalar channels per iteration). Then

    S_1 = G_1 G_1^T = S_0 + [G_0 C, U] [[0, I], [I, I]] [G_0 C, U]^T,

and after whitening by ``S_0 = L L^T`` the generalised eigenvalues of the pencil ``(S_1, S_0)`` are one,
except ``1 + eig(R M R^T)`` where ``L^{-1} [G_0 C, U] = Q R``. One factorisation of ``S_0`` per observer
serves every candidate neighbour; a candidate costs ``O(T (n d + m^2 d) p)`` for the operators and
``O(K^2 p)`` for the whitening.

Supports: ``S_0`` may be singular (exact linear dependencies in the view that hold under both datasets);
it is factorised by pivoted Cholesky and a column of ``[G_0 C, U]`` with a component outside its range means
the supports differ: every divergence is infinite (docs/model.md, Section 4).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
from scipy.linalg.lapack import dpstrf

from dpgossip.protocols.ddppm.operators import ViewOperator

__all__ = [
    "WhitenedCovariance", "JointWhitening", "difference_rowspace", "LowRankPencil",
    "pencil_eigenvalues",
]


class WhitenedCovariance:
    """A factorisation ``S = D^{-1} Pi L L^T Pi^T D^{-1}`` of a view covariance, for whitening.

    ``D`` scales ``S`` to unit diagonal, ``Pi`` is a pivoting permutation and ``L`` (``K x rank``) is lower
    trapezoidal. First by pivoted Cholesky of ``S`` (rank tolerance ``K`` machine epsilons); its condition
    estimate ``(L_11 / L_rr)^2`` says how accurate whitening is (relative error about ``cond * 1e-16``).
    When it exceeds ``max_condition`` and the factor ``G^T`` (``S = G G^T``, or a function building it
    on demand) is given, ``L`` is recomputed
    from a column-pivoted QR of ``G^T D``, which never squares the condition number (``method = "qr"``).
    """

    def __init__(self, S: np.ndarray, *, factor: np.ndarray | Callable[[], np.ndarray] | None = None,
                 max_condition: float = 1e10) -> None:
        S = np.asarray(S, dtype=float)
        self.K = S.shape[0]
        dg = np.diag(S).copy()
        self.scale = np.where(dg > 0, 1.0 / np.sqrt(np.where(dg > 0, dg, 1.0)), 0.0)
        Ss = S * self.scale[:, None] * self.scale[None, :]
        eps = np.finfo(float).eps
        c, piv, rank, info = dpstrf(Ss, lower=1, tol=self.K * eps)
        if info < 0:
            raise RuntimeError(f"pivoted Cholesky failed (info={info})")
        rank = int(rank)
        d = np.abs(np.diag(c)[:rank])
        self.condition = float((d[0] / d[-1]) ** 2) if rank else 1.0
        self.method = "cholesky"
        L, piv = np.tril(c)[:, :rank], piv - 1
        if self.condition > max_condition and factor is not None:
            Gs = np.asarray(factor() if callable(factor) else factor, dtype=float) * self.scale[None, :]
            R, qpiv = sla.qr(Gs, mode="r", pivoting=True, check_finite=False)
            r = np.abs(np.diag(R))
            rank = int(np.sum(r > max(Gs.shape) * eps * r[0])) if r.size and r[0] > 0 else 0
            L, piv = R[:rank].T, qpiv
            self.condition = float((r[0] / r[rank - 1]) ** 2) if rank else 1.0
            self.method = "qr"
        self.rank = rank
        self.piv = piv
        self.L = L
        self.L11 = L[:rank]

    def whiten(self, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Whitened coordinates of the columns of ``Y`` inside the range of ``S``, and the relative norm
        of each column's component outside it."""
        Ys = (np.asarray(Y, dtype=float) * self.scale[:, None])[self.piv]
        a = sla.solve_triangular(self.L11, Ys[: self.rank], lower=True, check_finite=False)
        if self.rank == self.K:  # square factor: every vector lies in the range
            return a, np.zeros(Ys.shape[1])
        resid = Ys - self.L @ a
        norms = np.linalg.norm(Ys, axis=0)
        rel = np.linalg.norm(resid, axis=0) / np.where(norms > 0, norms, 1.0)
        return a, rel

    def whiten_transpose(self, A: np.ndarray) -> np.ndarray:
        """``V = Wh^T A`` where ``Wh`` is the whitening map of :meth:`whiten` (``Wh S Wh^T = I``)."""
        A = np.asarray(A, dtype=float).reshape(self.rank, -1)
        out = np.zeros((self.K, A.shape[1]))
        out[self.piv[: self.rank]] = sla.solve_triangular(self.L11, A, lower=True, trans="T",
                                                          check_finite=False)
        return out * self.scale[:, None]


def difference_rowspace(full0: ViewOperator, full1: ViewOperator, *, rng: np.random.Generator,
                        tol: float = 1e-10, oversample: int = 10) -> np.ndarray:
    """Orthonormal ``C`` (``N x p``) spanning the row space of ``G_1 - G_0`` for the full view.

    Randomised range finding on ``(G_1 - G_0)^T``: ``Y = (G_1 - G_0)^T Psi`` for a Gaussian ``Psi`` with
    ``2 T + oversample`` columns, then the singular vectors above ``tol`` times the largest. The width is
    doubled until the found rank leaves ``oversample`` spare columns, so the rank is not truncated.
    """
    b = 2 * full0.T + oversample
    while True:
        Psi = rng.standard_normal((full0.K, b))
        Y = full1.adjoint(Psi) - full0.adjoint(Psi)
        U, s, _ = np.linalg.svd(Y, full_matrices=False)
        if s.size == 0 or s[0] == 0:
            return np.zeros((full0.N, 0))
        p = int(np.sum(s > tol * s[0]))
        if p + oversample <= b or b >= full0.K:
            return U[:, :p]
        b *= 2


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class LowRankPencil:
    """Nontrivial generalised eigenvalues ``lam`` of ``(S_1, S_0)`` (the others are 1) in a whitened space
    of dimension ``rank``; ``outside`` is the largest relative component of the update outside
    ``range(S_0)`` (supports differ when it exceeds the tolerance)."""

    lam: np.ndarray
    rank: int
    outside: float
    support_ok: bool
    outside_direction: np.ndarray | None = None
    """When the supports differ: the (unit, view-coordinate) column of ``G_1 C`` with the largest component
    outside ``range(S_0)``, a direction along which ``X'`` gives variance that ``X`` does not."""


def pencil_eigenvalues(white: WhitenedCovariance, view0: ViewOperator, view1: ViewOperator | None,
                       C: np.ndarray, *, support_tol: float = 1e-7,
                       forwards: tuple[np.ndarray, np.ndarray] | None = None) -> LowRankPencil:
    """Generalised eigenvalues of the pencil ``(S_1, S_0)`` from ``G_1 = G_0 + U C^T`` (module docstring).

    With ``Wh`` the whitening map of ``S_0`` and ``Q`` an orthonormal basis of ``Wh [G_0 C, G_1 C]`` (the
    subspace where ``Wh S_1 Wh^T`` differs from ``I``), the nontrivial eigenvalues are the squared singular
    values of ``H = Q^T Wh G_1``, computed from its transpose

        H^T = (I - C C^T) G_0^T Wh^T Q + C (Wh G_1 C)^T Q,

    because ``G_1 (I - C C^T) = G_0 (I - C C^T)``. Taking singular values of ``H`` instead of eigenvalues of
    ``I + (low-rank)`` keeps small eigenvalues accurate in relative terms (no cancellation against 1).
    ``forwards``: ``(G_0 C, G_1 C)`` when the caller has them (then ``view1`` is not used).
    """
    p = C.shape[1]
    if p == 0:
        return LowRankPencil(lam=np.zeros(0), rank=white.rank, outside=0.0, support_ok=True)
    A0, A1 = forwards if forwards is not None else (view0.forward(C), view1.forward(C))
    Yw, rel = white.whiten(np.hstack([A0, A1]))
    outside = float(rel.max())
    Q, _ = np.linalg.qr(Yw)
    HT = view0.adjoint(white.whiten_transpose(Q))
    HT -= C @ (C.T @ HT)
    HT += C @ (Yw[:, p:].T @ Q)
    sv = np.linalg.svd(HT, compute_uv=False)
    lam = sv ** 2
    if lam.size < Q.shape[1]:
        lam = np.concatenate([lam, np.zeros(Q.shape[1] - lam.size)])
    direction = None
    if outside > support_tol:
        col = A1[:, int(np.argmax(rel[p:]))]
        direction = col / np.linalg.norm(col)
    return LowRankPencil(lam=lam, rank=white.rank, outside=outside,
                         support_ok=outside <= support_tol, outside_direction=direction)


class JointWhitening:
    """Whitening of a joint view ``V = [M ; w_k]`` whose known randomness ``w_k`` has diagonal covariance.

    ``M = F_u w_u + F_k w_k``; the joint covariance factors as ``[[L_u, F_k D_k], [0, D_k]]`` (messages first)
    with ``D_k = diag(std_k)`` and ``L_u L_u^T = F_u diag(std_u^2) F_u^T`` the conditional covariance of
    ``M`` given ``w_k``. Only ``L_u`` is a dense factorisation (``K_m = K - n_k`` instead of ``K``), and the
    products with ``F_k`` and ``F_k^T`` are one forward / adjoint of the view operator.

    Whitening: ``a_k = w_k / std_k``, ``a_m = L_u^{-1} (M - F_k w_k)``. ``covariance``: the
    conditional covariance ``F_u diag(std_u^2) F_u^T`` when the caller has it already (a reduced
    view's, :mod:`~dpgossip.protocols.ddppm.reduced`); by default it is computed from ``op``.
    ``dense_known``: ``F_k`` is formed once as a ``K_m x n_k`` matrix (one forward of ``n_k`` columns)
    instead of a forward and an adjoint of the operator per whitening (small views with few known
    coordinates).
    """

    def __init__(self, op: ViewOperator, *, max_condition: float = 1e10,
                 covariance: np.ndarray | None = None, dense_known: bool = False) -> None:
        self.op = op
        self.known = op.known
        self.std_k = op.std[self.known]
        self.Km = op.K - self.known.size
        std_u = op.std.copy()
        std_u[self.known] = 0.0
        self.op_u = ViewOperator(op.X, op.offsets, op.W,
                                 T=op.T, c=op.c, alpha=op.alpha, latent_std=std_u, B=op.B,
                                 final_rows=op.final_rows, known=np.zeros(0, dtype=int),
                                 final_bases=op.final_bases)
        S_u = self.op_u.covariance() if covariance is None else covariance
        self.white_u = WhitenedCovariance(S_u, factor=self._factor,
                                          max_condition=max_condition)
        self.rank = self.white_u.rank + self.known.size
        self.K = op.K
        self.method = self.white_u.method
        self.condition = self.white_u.condition
        self.Fk: np.ndarray | None = None
        if dense_known and self.known.size:  # F_k diag(std_k) / std_k as a matrix: one forward
            self.Fk = self._Fk(np.diag(self.std_k))

    def _factor(self) -> np.ndarray:
        """``G_u^T`` (``N x K_m``), built only for the QR fallback of an ill-conditioned ``S_u``, in
        blocks of unit vectors (never a ``K_m x K_m`` identity at once)."""
        out = np.empty((self.op_u.N, self.Km))
        for a in range(0, self.Km, 256):
            e = min(a + 256, self.Km)
            E = np.zeros((self.Km, e - a))
            E[np.arange(a, e), np.arange(e - a)] = 1.0
            out[:, a:e] = self.op_u.adjoint(E)
        return out

    def _Fk(self, wk: np.ndarray) -> np.ndarray:
        if self.Fk is not None:
            return self.Fk @ (wk / self.std_k[:, None])
        g = np.zeros((self.op.N, wk.shape[1]))
        g[self.known] = wk / self.std_k[:, None]
        return self.op.forward(g)[: self.Km]

    def _FkT(self, vm: np.ndarray) -> np.ndarray:
        if self.Fk is not None:
            return (self.Fk.T @ vm) / self.std_k[:, None]
        v = np.zeros((self.K, vm.shape[1]))
        v[: self.Km] = vm
        return self.op.adjoint(v)[self.known] / self.std_k[:, None]

    def whiten(self, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Whitened coordinates ``[a_m ; a_k]`` and relative components outside the range."""
        Y = np.asarray(Y, dtype=float)
        Ym, Yk = Y[: self.Km], Y[self.Km:]
        am, rel = self.white_u.whiten(Ym - self._Fk(Yk))
        return np.vstack([am, Yk / self.std_k[:, None]]), rel

    def whiten_transpose(self, A: np.ndarray) -> np.ndarray:
        """``Wh^T A`` (see :meth:`WhitenedCovariance.whiten_transpose`)."""
        A = np.asarray(A, dtype=float)
        r = self.white_u.rank
        vm = self.white_u.whiten_transpose(A[:r])
        vk = A[r:] / self.std_k[:, None] - self._FkT(vm)
        return np.vstack([vm, vk])

