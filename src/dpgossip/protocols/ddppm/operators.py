"""Matrix-free view maps: ``g -> G g`` and ``v -> G^T v`` for a view of one component.

With the latent noise standardised, ``w = diag(std) g``, ``g ~ N(0, I_N)``, a view is ``V = G g`` with

    G g = [ (B (x) I_d) z^(1); ...; (B (x) I_d) z^(T); q^(T)[final_rows]; std[known] g[known] ]

where ``q^(0) = w_0``, ``q^(t) = P q^(t-1) + w_t`` and ``z^(t) = D^T q^(t-1)`` (Eqs. (16)-(18) of
Campbell et al.), ``P = alpha Xi`` applied without forming it:
``P q = alpha m D (W^c (x) I_d) D^T q``. The adjoint uses that
``P`` is symmetric: latent block ``s`` of ``G^T v`` is ``std_s * R_s`` with

    R_T = f,   R_s = P R_(s+1) + D (B^T (x) I_d) v_(s+1)          (f = v's final part, scattered)

plus ``std[known] v_known`` on the known coordinates. Each costs ``T`` applications of ``P`` to a block
of vectors, ``O(T (n d + m^2 d) b)`` for ``b`` vectors.
"""

from __future__ import annotations

import copy

import numpy as np

__all__ = ["ViewOperator", "view_operator"]


class ViewOperator:
    """The linear map ``G`` of a view (see the module docstring); data ``X`` fixed at construction.

    Parameters
    ----------
    X
        Data of the component, ``n x d``.
    offsets
        Row offsets of the agents' blocks (``m + 1``).
    W
        Mixing matrix.
    T, c, alpha
        Iterations, gossip rounds, scaling.
    latent_std
        ``(N,)`` standard deviations of ``w``.
    B
        ``(r, m)`` compression basis of the received messages (``r = 0``: no messages).
    final_rows
        Indices of ``q^(T)`` in the view.
    known
        Indices of ``w`` the adversary knows.
    final_bases
        Optional reduction of final rows (:mod:`~dpgossip.protocols.ddppm.reduced`): ``(rows, U)`` with
        ``rows`` (``b x s``) row indices of ``q^(T)`` and ``U`` (``b x s x k``) orthonormal columns; the
        view then holds ``U_i^T q^(T)[rows_i]`` for each block ``i`` before the raw ``final_rows``.
    """

    def __init__(self, X: np.ndarray, offsets: np.ndarray, W: np.ndarray, *, T: int, c: int,
                 alpha: float, latent_std: np.ndarray, B: np.ndarray, final_rows: np.ndarray,
                 known: np.ndarray,
                 final_bases: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        self.X = np.asarray(X, dtype=float)
        self.n, self.d = self.X.shape
        self.offsets = np.asarray(offsets)
        self.m = self.offsets.size - 1
        self._blocks = [(int(self.offsets[i]), int(self.offsets[i + 1])) for i in range(self.m)]
        self._XT = [np.ascontiguousarray(self.X[a:e].T) for a, e in self._blocks]
        sizes = np.diff(self.offsets)
        self._rows = int(sizes[0]) if sizes.size and (sizes == sizes[0]).all() else 0
        if self._rows:  # equal blocks: one batched product instead of a loop over agents
            self._X3 = np.ascontiguousarray(self.X.reshape(self.m, self._rows, self.d))
            self._X3T = np.ascontiguousarray(self._X3.transpose(0, 2, 1))
        self.T, self.c, self.alpha = T, c, float(alpha)
        self.W = np.asarray(W, dtype=float)
        self.mWc = self.m * np.linalg.matrix_power(self.W, c)
        self.std = np.asarray(latent_std, dtype=float)
        self._set_basis(B)
        self.final_rows = np.asarray(final_rows, dtype=int)
        self.known = np.asarray(known, dtype=int)
        if final_bases is None:
            final_bases = (np.zeros((0, 0), dtype=int), np.zeros((0, 0, 0)))
        self.final_bases = (np.asarray(final_bases[0], dtype=int),
                            np.asarray(final_bases[1], dtype=float))
        self.nf = int(self.final_bases[1].shape[0] * self.final_bases[1].shape[2]
                      + self.final_rows.size)
        """Final coordinates: the reduced blocks' ``U_i^T q`` and the raw ``final_rows``."""
        self.K = T * self.r * self.d + self.nf + self.known.size
        self.N = self.n * (T + 1)

    def _set_basis(self, B: np.ndarray) -> None:
        """The message basis ``B`` (``r x m``); with ``B = I`` (the full view) every agent's ``z`` is a
        message and ``B z`` is a copy, not a product."""
        self.B = np.asarray(B, dtype=float).reshape(-1, self.m)
        self.r = self.B.shape[0]
        self._B_eye = self.r == self.m and np.array_equal(self.B, np.eye(self.m))

    @property
    def every_message(self) -> bool:
        """Whether the message basis is the identity: every agent's ``z^(t)`` is a coordinate."""
        return self._B_eye

    def with_data(self, X: np.ndarray) -> ViewOperator:
        """The same view map on other data ``X`` of the same shape (a neighbour's), without
        recomputing what does not depend on the data (``m W^c``)."""
        out = copy.copy(self)
        out.X = np.asarray(X, dtype=float)
        out._XT = [np.ascontiguousarray(out.X[a:e].T) for a, e in self._blocks]
        if self._rows:
            out._X3 = np.ascontiguousarray(out.X.reshape(self.m, self._rows, self.d))
            out._X3T = np.ascontiguousarray(out._X3.transpose(0, 2, 1))
        return out

    # --- building blocks -------------------------------------------------------------------------
    def gather(self, q: np.ndarray) -> np.ndarray:
        """``D^T q`` as ``(m, d, b)``: every agent's ``z_i = X_i^T q_i`` (what it sends before mixing)."""
        return self._Dt(q)

    def _Dt(self, q: np.ndarray) -> np.ndarray:
        """``D^T q`` as ``(m, d, b)``: ``z_i = X_i^T q_i`` (one BLAS product per agent)."""
        if self._rows:
            return np.matmul(self._X3T, q.reshape(self.m, self._rows, q.shape[1]))
        out = np.empty((self.m, self.d, q.shape[1]))
        for i, (a, e) in enumerate(self._blocks):
            np.matmul(self._XT[i], q[a:e], out=out[i])
        return out

    def _D(self, y: np.ndarray) -> np.ndarray:
        """``D y`` for ``y`` of shape ``(m, d, b)``: row block ``i`` is ``X_i y_i``."""
        if self._rows:
            return np.matmul(self._X3, y).reshape(self.n, y.shape[2])
        out = np.empty((self.n, y.shape[2]))
        for i, (a, e) in enumerate(self._blocks):
            np.matmul(self.X[a:e], y[i], out=out[a:e])
        return out

    def apply_P(self, q: np.ndarray) -> np.ndarray:
        """``P q = alpha m D (W^c (x) I_d) D^T q`` for ``q`` of shape ``(n, b)``."""
        z = self._Dt(q)
        zh = (self.mWc @ z.reshape(self.m, -1)).reshape(z.shape)
        return self.alpha * self._D(zh)

    # --- the view map ----------------------------------------------------------------------------
    def forward(self, g: np.ndarray) -> np.ndarray:
        """``G g`` for standardised latent vectors ``g`` of shape ``(N, b)``; returns ``(K, b)``."""
        g = np.asarray(g, dtype=float).reshape(self.N, -1)
        b = g.shape[1]
        n, T = self.n, self.T
        w = g * self.std[:, None]
        out = np.empty((self.K, b))
        q = w[:n]
        pos = 0
        step = self.r * self.d
        for t in range(1, T + 1):
            if self.r:
                z = self._Dt(q)
                out[pos:pos + step] = (z if self._B_eye else
                                       self.B @ z.reshape(self.m, -1)).reshape(step, b)
                pos += step
            q = self.apply_P(q) + w[t * n:(t + 1) * n]
        nf = self.nf
        out[pos:pos + nf] = self._final(q)
        pos += nf
        out[pos:] = w[self.known]
        return out

    def _final(self, q: np.ndarray) -> np.ndarray:
        """The final coordinates of ``q^(T)`` (``n x b``): ``U_i^T q[rows_i]`` for every reduced
        block, then ``q[final_rows]``."""
        rows, U = self.final_bases
        if not U.shape[0]:
            return q[self.final_rows]
        red = np.matmul(U.transpose(0, 2, 1), q[rows]).reshape(-1, q.shape[1])
        return np.vstack([red, q[self.final_rows]])

    def _final_adjoint(self, f: np.ndarray) -> np.ndarray:
        """The adjoint of :meth:`_final`: ``f`` (final coordinates x b) scattered to ``n x b``."""
        R = np.zeros((self.n, f.shape[1]))
        rows, U = self.final_bases
        nr = U.shape[0] * U.shape[2]
        if nr:
            R[rows] = np.matmul(U, f[:nr].reshape(U.shape[0], U.shape[2], f.shape[1]))
        R[self.final_rows] = f[nr:]
        return R

    def adjoint(self, v: np.ndarray) -> np.ndarray:
        """``G^T v`` for ``v`` of shape ``(K, b)``; returns ``(N, b)``."""
        v = np.asarray(v, dtype=float).reshape(self.K, -1)
        b = v.shape[1]
        n, T, d = self.n, self.T, self.d
        step = self.r * d
        nf = self.nf
        msgs = v[:T * step].reshape(T, self.r, d, b) if self.r else None
        R = self._final_adjoint(v[T * step:T * step + nf])
        out = np.empty((self.N, b))
        out[T * n:] = R
        for s in range(T - 1, -1, -1):
            R = self.apply_P(R)
            if msgs is not None:
                y = (msgs[s] if self._B_eye else
                     (self.B.T @ msgs[s].reshape(self.r, -1)).reshape(self.m, d, b))
                R = R + self._D(y)
            out[s * n:(s + 1) * n] = R
        out[self.known] += v[T * step + nf:]
        return out * self.std[:, None]

    def covariance(self) -> np.ndarray:
        """``S = G G^T`` (``K x K``) from the covariances of the ``z^(t)`` (no operator applied to an
        identity; :meth:`z_covariances`). With ``K_W = alpha m (W^c (x) I_d)`` and
        ``q^(T) = D K_W z^(T) + p^(T)``:

            S_MM[t, t'] = (B (x) I_d) C_(t,t') (B (x) I_d)^T,
            S_MY[t]     = (B (x) I_d) C_(t,T) K_W D_Y^T,
            S_YY        = D_Y K_W C_(T,T) K_W D_Y^T + diag(std_T[final_rows]^2),

        ``D_Y`` the final rows of ``D``. The known coordinates ``w[known]`` (if any) add
        ``Cov(z^(t), w_s) = A^(t-1-s) D^T diag(std_s^2)`` (for ``s < t``) and ``diag(std[known]^2)``.
        Cost ``O(T^2 (m d)^3 + K^2 d)``.
        """
        C = self.z_covariances()
        T, d, n = self.T, self.d, self.n
        Kw = np.kron(self.alpha * self.mWc, np.eye(d))
        step = self.r * d
        M = [self._Bk(C[(t, T)] @ Kw) for t in range(1, T + 1)] if self.r else []
        cross = [self._final(self._Dmat(Mt.T)).T for Mt in M]  # S_MY[t] = (B_k Phi_t) D_Y^T
        Phi = Kw @ C[(T, T)] @ Kw
        S = np.zeros((self.K, self.K))
        for t in range(1, T + 1):
            for u in range(1, t + 1):
                blk = self._Bk(self._Bk(C[(t, u)]).T).T if self.r else None
                if blk is not None:
                    S[(t - 1) * step:t * step, (u - 1) * step:u * step] = blk
                    S[(u - 1) * step:u * step, (t - 1) * step:t * step] = blk.T
        pos = T * step
        nf = self.nf
        for t in range(self.r and T):
            S[t * step:(t + 1) * step, pos:pos + nf] = cross[t]
            S[pos:pos + nf, t * step:(t + 1) * step] = cross[t].T
        S[pos:pos + nf, pos:pos + nf] = self._final(self._Dmat(self._final(self._Dmat(Phi.T)).T))
        S[pos:pos + nf, pos:pos + nf] += self._final_noise(self.std[T * n:(T + 1) * n] ** 2)
        if self.known.size:
            self._known_covariance(S, pos + nf)
        return (S + S.T) / 2

    # --- helpers of covariance() -----------------------------------------------------------------
    def _final_noise(self, var: np.ndarray) -> np.ndarray:
        """The covariance of the final coordinates of a noise vector of variances ``var`` (``n``):
        ``U_i^T diag(var[rows_i]) U_i`` on each reduced block, ``diag(var[final_rows])`` on the raw rows."""
        rows, U = self.final_bases
        out = np.zeros((self.nf, self.nf))
        k = U.shape[2] if U.shape[0] else 0
        for i in range(U.shape[0]):
            out[i * k:(i + 1) * k, i * k:(i + 1) * k] = U[i].T @ (var[rows[i], None] * U[i])
        nr = U.shape[0] * k
        out[nr + np.arange(self.final_rows.size), nr + np.arange(self.final_rows.size)] = \
            var[self.final_rows]
        return out

    def _Bk(self, Z: np.ndarray) -> np.ndarray:
        """``(B (x) I_d) Z`` for ``Z`` of shape ``(m d, k)``."""
        k = Z.shape[1]
        return (self.B @ Z.reshape(self.m, self.d * k)).reshape(self.r * self.d, k)

    def _Dmat(self, Z: np.ndarray) -> np.ndarray:
        """``D Z`` for ``Z`` of shape ``(m d, k)``: row block ``i`` is ``X_i Z_i``."""
        return self._D(Z.reshape(self.m, self.d, -1))

    def _gram(self, s: int) -> np.ndarray:
        """``D^T diag(std_s^2) D`` (``m d x m d``, block diagonal): the covariance of ``D^T w_s``."""
        out = np.zeros((self.m * self.d, self.m * self.d))
        v = self.std[s * self.n:(s + 1) * self.n] ** 2
        for i, (a, e) in enumerate(self._blocks):
            out[i * self.d:(i + 1) * self.d, i * self.d:(i + 1) * self.d] = \
                self._XT[i] @ (self.X[a:e] * v[a:e, None])
        return out

    def _A(self) -> np.ndarray:
        """``A = D^T D K_W`` (``z^(t+1) = A z^(t) + D^T w_t``)."""
        G = np.zeros((self.m * self.d, self.m * self.d))
        for i in range(self.m):
            G[i * self.d:(i + 1) * self.d, i * self.d:(i + 1) * self.d] = self._XT[i] @ self._XT[i].T
        return G @ np.kron(self.alpha * self.mWc, np.eye(self.d))

    def z_covariances(self) -> dict[tuple[int, int], np.ndarray]:
        """``C_(t,u) = Cov(z^(t), z^(u))`` for ``1 <= u <= t <= T`` (and ``C_(u,t) = C_(t,u)^T``), by

            z^(1) = D^T w_0,  z^(t+1) = A z^(t) + D^T w_t,  A = D^T D K_W:
            C_(1,1) = Gram_0,  C_(t+1,u) = A C_(t,u),  C_(t+1,t+1) = A C_(t,t) A^T + Gram_t,

        ``Gram_s = D^T diag(std_s^2) D`` (``std`` zero on coordinates the adversary knows, which this
        operator treats as known only through ``known``)."""
        A = self._A()
        C = {(1, 1): self._gram(0)}
        for t in range(1, self.T):
            for u in range(1, t + 1):
                C[(t + 1, u)] = A @ C[(t, u)]
            C[(t + 1, t + 1)] = C[(t + 1, t)] @ A.T + self._gram(t)
        for (t, u) in list(C):
            C[(u, t)] = C[(t, u)].T
        return C

    def _known_covariance(self, S: np.ndarray, pos: int) -> None:
        """Fill the rows and columns of the known coordinates (``pos:``) of ``S``."""
        k = self.known.size
        g = np.zeros((self.N, k))
        g[self.known, np.arange(k)] = 1.0
        cols = self.forward(g)  # G e_known = G's columns at the known coordinates (K x k)
        cols *= self.std[self.known][None, :]
        S[:, pos:] = cols
        S[pos:, :] = cols.T


def view_operator(X: np.ndarray, offsets: np.ndarray, W: np.ndarray, *, T: int, c: int,
                  alpha: float, latent_std: np.ndarray, spec) -> ViewOperator:
    """The :class:`ViewOperator` of a :class:`~dpgossip.protocols.ddppm.views.ViewSpec` on data ``X``."""
    return ViewOperator(X, offsets, W, T=T, c=c, alpha=alpha, latent_std=latent_std, B=spec.B,
                        final_rows=spec.final_rows, known=spec.known,
                        final_bases=getattr(spec, "final_bases", None))
