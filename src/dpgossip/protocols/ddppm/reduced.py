r"""Observer views reduced to a sufficient statistic of the final rows, one per (observer, target).

docs/audit-scale.md, Section 7. In an observer view, agent ``a``'s final rows are

.. math::

    Y_a = X_a \nu_a + p_a^{(T)}, \qquad \nu = K_W z^{(T)},

with ``p_a^(T)`` of covariance ``diag(s_a^2)``, independent of everything else in the view (it enters
nothing but ``Y_a``). Let ``X_a = U_a R_a`` (thin QR, ``U_a`` with orthonormal columns). For an agent
``a`` that is neither the observer nor the target, ``X_a`` is the same under ``X`` and any neighbour
``X'``, and when ``s_a`` is constant over ``a``'s rows the part ``(I - U_a U_a^T) Y_a =
(I - U_a U_a^T) p_a^(T)`` is independent of ``U_a^T Y_a`` and of the rest of the view and has the same
law under both datasets. Keeping ``U_a^T Y_a`` (``d`` coordinates instead of ``n_a``) and dropping it
therefore changes no divergence between the two laws of the view (the dropped part is an independent
factor common to both). The target's rows stay raw. A view then has ``T r d + (m - 2) d + n_j``
unknown coordinates instead of ``T r d + n - n_o``.

The conditional covariance of the reduced view given the observer's noise is assembled from moments
shared by every pair, with ``C_(t,u) = Cov(z^(t), z^(u))`` of the whole run
(:meth:`ViewOperator.z_covariances`), ``B_k = B (x) I_d`` the observer's message basis and
``R = blockdiag(R_a)``:

.. math::

    C^{(o)}_{(t,u)} = C_{(t,u)} - F_t F_u^T, \quad
    F_t = [A^{t-1-s} E_o H_s]_{s < t}, \quad H_s H_s^T = X_o^T \mathrm{diag}(\mathrm{std}_{s,o}^2) X_o,

(the observer's own noise removed: ``z^(t) = sum_{s<t} A^(t-1-s) D^T w_s``), and

.. math::

    S_{MM}[t,u] = B_k C^{(o)}_{(t,u)} B_k^T, \quad
    S_{MY}[t] = B_k C^{(o)}_{(t,T)} K_W^T R^T E^T, \quad
    S_{YY} = E R K_W C^{(o)}_{(T,T)} K_W^T R^T E^T + N,

``E`` selecting the blocks of the agents other than the observer and the target and expanding the
target's block by ``U_j`` (its raw rows are ``U_j R_j nu_j``), ``N`` the final noise's covariance.
"""

from __future__ import annotations

import copy
from collections.abc import Hashable, Mapping

import numpy as np
from scipy import sparse

from dpgossip.data.partition import PartitionedData
from dpgossip.privacy.gaussian_pair import GaussianPair, SupportMismatch
from dpgossip.privacy.neighbours import Neighbour
from dpgossip.protocols.ddppm.lowrank import JointWhitening, difference_rowspace, pencil_eigenvalues
from dpgossip.protocols.ddppm.operators import ViewOperator, view_operator
from dpgossip.protocols.ddppm.params import ProtocolParams
from dpgossip.protocols.ddppm.views import View, ViewSpec, view_spec
from dpgossip.topology.network import Network

__all__ = ["ReducedAuditor", "reducible"]


def reducible(data: PartitionedData, params: ProtocolParams, views: Mapping[Hashable, View]) -> bool:
    """Whether :class:`ReducedAuditor` applies: rank 1, observer views only, every agent with more
    than ``d`` rows (blocks of any sizes; the noise of an iteration is the same for every row) and
    noise in every iteration (without it the reduced covariances are singular, and the views keep
    their own factorisation, which handles laws with different supports)."""
    sizes = np.diff(np.asarray(data.offsets))
    return (int(params.rank) == 1 and all(v.kind == "observer" for v in views.values())
            and bool(sizes.size) and int(sizes.min()) > data.d
            and float(params.sigma_q) > 0 and bool(np.all(np.asarray(params.sigma_p) > 0)))


class ReducedAuditor:
    """Pairs of reduced observer views (module docstring) for candidate neighbours.

    The same interface as :class:`~dpgossip.protocols.ddppm.audit.RunAuditor` for the search
    (``pairs``, ``reseed``, ``specs``, ``auditors``), with the same random stream for the row space of
    a change, so a search on it follows the same course up to rounding. The views of one target are
    built when its first neighbour is evaluated and dropped when another target's neighbour comes
    (streaming: only one target's factors are held).
    """

    def __init__(self, data: PartitionedData, network: Network, params: ProtocolParams,
                 views: Mapping[Hashable, View], *, seed: int = 0) -> None:
        if not reducible(data, params, views):
            raise ValueError("ReducedAuditor: rank 1, observer views and blocks of more than d "
                             "rows only (reducible)")
        self.data, self.X = data, np.asarray(data.X, dtype=float)
        T, n, m, d = params.iterations, data.n, data.m, data.d
        self.T, self.n, self.m, self.d = T, n, m, d
        self.offsets = np.asarray(data.offsets, dtype=int)
        self.std = np.concatenate([np.full(n, params.sigma_q)]
                                  + [np.full(n, s) for s in params.sigma_p[0]])
        self.views = dict(views)
        W = network.dense_W()
        self.specs: dict[Hashable, ViewSpec] = {
            k: view_spec(v, network.graph, W, c=params.consensus_steps, T=T, offsets=data.offsets,
                         latent_std=self.std) for k, v in self.views.items()}
        self.auditors = [self]
        self.rng = np.random.default_rng(seed)
        full = ViewSpec(B=np.eye(m), final_rows=np.arange(n), known=np.zeros(0, dtype=int))
        self.full0 = view_operator(self.X, data.offsets, W, T=T, c=params.consensus_steps,
                                   alpha=params.alpha[0], latent_std=self.std, spec=full)
        self._moments_of_run()
        self._observer: dict[Hashable, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._target: int | None = None
        self._views: dict[Hashable, tuple[ViewOperator, JointWhitening]] = {}
        self._full: TargetLastOperator | None = None
        self._order = np.arange(self.m)

    def reseed(self, entropy: object) -> None:
        """Restart the row-space finder's random stream (as :meth:`ComponentAuditor.reseed`)."""
        self.rng = np.random.default_rng(entropy)

    # ------------------------------------------------------------------ moments
    def _moments_of_run(self) -> None:
        """What every pair shares: the ``z`` covariances, ``A``, the QR of every block, ``Psi = R K_W
        C_(T,T) K_W^T R^T``, ``C_(t,T) K_W^T R^T`` and the final noise of every reduced block."""
        m, d, T, n = self.m, self.d, self.T, self.n
        op = self.full0
        self.C = op.z_covariances()
        self.A = op._A()
        blocks = [np.linalg.qr(self.X[self.rows_of(a)]) for a in range(m)]  # X_a = U_a R_a
        self.U = [U for U, _ in blocks]
        self.R = np.stack([R for _, R in blocks])  # (m, d, d)
        Rbd = np.zeros((m * d, m * d))
        for a in range(m):
            Rbd[a * d:(a + 1) * d, a * d:(a + 1) * d] = self.R[a]
        Kw = np.kron(op.alpha * op.mWc, np.eye(d))
        self.Kr = Kw.T @ Rbd.T
        Psi = self.Kr.T @ self.C[(T, T)] @ self.Kr
        self.Psi = (Psi + Psi.T) / 2
        self.CK = {t: self.C[(t, T)] @ self.Kr for t in range(1, T + 1)}
        var = self.std[T * n:(T + 1) * n] ** 2
        self.var_T = [var[self.rows_of(a)] for a in range(m)]
        """The final noise's variance on each agent's rows."""
        self.var_final = np.array([v[0] for v in self.var_T])
        """... one number per agent (the noise of an iteration is the same for every row)."""
        self.noise = np.stack([U.T @ (v[:, None] * U) for U, v in zip(self.U, self.var_T, strict=True)])

    def rows_of(self, a: int) -> slice:
        """Agent ``a``'s rows of the data."""
        return slice(int(self.offsets[a]), int(self.offsets[a + 1]))

    def owner(self, row: int) -> int:
        """The agent holding data row ``row``."""
        return int(np.searchsorted(self.offsets, int(row), side="right")) - 1

    def _observer_moments(self, k: Hashable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(S_MM, S_MZ, G_o)`` of view ``k``'s observer: the messages' covariance, their covariance
        with the reduced final coordinates of every agent (``T r d x m d``) and ``G_o = R K_W F_T``
        (``Psi - G_o G_o^T`` is the final coordinates' covariance given the observer's noise)."""
        if k in self._observer:
            return self._observer[k]
        spec, (m, d, T, n) = self.specs[k], (self.m, self.d, self.T, self.n)
        o = self.views[k].agents[0]
        rows = self.rows_of(o)
        Xo = self.X[rows]
        known = np.zeros(n * (T + 1), dtype=bool)
        known[spec.known] = True
        F = {t: np.zeros((m * d, T * d)) for t in range(1, T + 1)}
        for sb in range(T):
            lat = slice(sb * n + rows.start, sb * n + rows.stop)
            v = np.where(known[lat], self.std[lat] ** 2, 0.0)
            w, V = np.linalg.eigh(Xo.T @ (v[:, None] * Xo))
            Y = np.zeros((m * d, d))
            Y[o * d:(o + 1) * d] = V * np.sqrt(np.clip(w, 0.0, None))
            for t in range(sb + 1, T + 1):  # z^(t) holds A^(t-1-s) D^T w_s
                F[t][:, sb * d:(sb + 1) * d] = Y
                Y = self.A @ Y
        Bk = np.kron(spec.B, np.eye(d))
        BF = {t: Bk @ F[t] for t in F}
        rd = Bk.shape[0]
        SMM = np.zeros((T * rd, T * rd))
        for t in range(1, T + 1):
            for u in range(1, T + 1):
                SMM[(t - 1) * rd:t * rd, (u - 1) * rd:u * rd] = (
                    Bk @ self.C[(t, u)] @ Bk.T - BF[t] @ BF[u].T)
        Go = self.Kr.T @ F[T]
        SMZ = (np.vstack([Bk @ self.CK[t] - BF[t] @ Go.T for t in range(1, T + 1)]) if rd
               else np.zeros((0, m * d)))
        self._observer[k] = ((SMM + SMM.T) / 2, SMZ, Go)
        return self._observer[k]

    # ------------------------------------------------------------------ views of a pair
    def pair_covariance(self, k: Hashable, j: int) -> np.ndarray:
        """The conditional covariance (given the observer's noise) of the reduced view of observer
        ``k`` against target ``j`` (module docstring), in the coordinates of :meth:`pair_operator`:
        the messages, then the final rows of the reduced data in agent order (the observer's left out)."""
        SMM, SMZ, Go = self._observer_moments(k)
        o, d = self.views[k].agents[0], self.d
        red = np.array([a for a in range(self.m) if a not in (o, j)], dtype=int)
        idx = (red[:, None] * d + np.arange(d)).ravel()
        jb = np.arange(j * d, (j + 1) * d)
        Uj = self.U[j]
        P_rr = self.Psi[np.ix_(idx, idx)] - Go[idx] @ Go[idx].T
        for i, a in enumerate(red):
            P_rr[i * d:(i + 1) * d, i * d:(i + 1) * d] += self.noise[a]
        P_rj = (self.Psi[np.ix_(idx, jb)] - Go[idx] @ Go[jb].T) @ Uj.T
        P_jj = Uj @ (self.Psi[np.ix_(jb, jb)] - Go[jb] @ Go[jb].T) @ Uj.T + np.diag(self.var_T[j])
        SMY = np.hstack([SMZ[:, idx], SMZ[:, jb] @ Uj.T])
        S = np.block([[SMM, SMY], [SMY.T, np.block([[P_rr, P_rj], [P_rj.T, P_jj]])]])
        return (S + S.T) / 2

    def reduced_data(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """The reduced data of target ``j`` with the target moved last (:class:`TargetLastOperator`):
        ``R_a`` (``d x d``, ``X_a = U_a R_a``) of every other agent in order, then ``X_j``; and the
        agents' order (``order[i]`` is the original agent at position ``i``)."""
        order = np.array([a for a in range(self.m) if a != j] + [j])
        Xr = np.concatenate([self.R[order[:-1]].reshape(-1, self.d), self.X[self.rows_of(j)]])
        return Xr, order

    def pair_operator(self, k: Hashable, j: int) -> ViewOperator:
        """The reduced view map of observer ``k`` against target ``j``: the observer view of the
        protocol on the reduced data (:meth:`reduced_data`): messages, every other agent's
        ``U_a^T q_a^(T)``, the target's raw final rows, the observer's known noise ``U_o^T w_o``
        (all its iterations; ``w_o^(T)`` enters nothing else and changes no divergence)."""
        full = self._target_view(j)
        pos = int(np.flatnonzero(self._order == self.views[k].agents[0])[0])
        n, d = full.n, self.d
        mine = np.arange(pos * d, (pos + 1) * d)
        known = np.concatenate([t * n + mine for t in range(self.T + 1)])
        return full.viewing(self.specs[k].B[:, self._order], np.setdiff1d(np.arange(n), mine), known)

    def _target_view(self, j: int) -> TargetLastOperator:
        """The full view of target ``j``'s reduced data; a new target drops the previous one's views."""
        if self._target != j:
            Xr, order = self.reduced_data(j)
            n = Xr.shape[0]
            W = self.full0.W[np.ix_(order, order)]
            full = TargetLastOperator(Xr, np.concatenate([np.arange(self.m) * self.d, [n]]), W,
                                      T=self.T, c=self.full0.c, alpha=self.full0.alpha,
                                      latent_std=np.repeat(self.std[::self.n], n),
                                      B=np.eye(self.m), final_rows=np.arange(n),
                                      known=np.zeros(0, dtype=int))
            self._target, self._views, self._full, self._order = j, {}, full, order
        return self._full

    def _view(self, k: Hashable, j: int) -> tuple[ViewOperator, JointWhitening]:
        self._target_view(j)
        if k not in self._views:
            op = self.pair_operator(k, j)
            self._views[k] = (op, JointWhitening(op, covariance=self.pair_covariance(k, j),
                                                 dense_known=True))
        return self._views[k]

    def pairs(self, nb: Neighbour, keys: list[Hashable]) -> dict[Hashable, GaussianPair]:
        """:class:`GaussianPair` of every view in ``keys`` (reduced against the neighbour's target)
        for the neighbour ``nb`` (P under ``X``). The trajectories of the change's row space are
        computed once on the full view and read out by every view."""
        j = self.owner(nb.row)
        full = self._target_view(j)
        X1 = full.X.copy()
        X1[full.target_start + int(nb.row) - int(self.offsets[j])] = nb.x_new
        full1 = full.with_data(X1)
        C = difference_rowspace(full, full1, rng=self.rng)
        Z0, Z1 = full.forward(C), full1.forward(C)
        out = {}
        for k in keys:
            op0, white = self._view(k, j)
            pen = pencil_eigenvalues(white, op0, None, C,
                                     forwards=(op0.read_out(Z0, C), op0.read_out(Z1, C)))
            if not pen.support_ok:
                out[k] = GaussianPair.from_mismatch(
                    SupportMismatch("cov1 outside cov0", pen.outside_direction, pen.outside))
            else:
                out[k] = GaussianPair.from_whitened(pen.lam, np.zeros(pen.lam.size))
        return out


class TargetLastOperator(ViewOperator):
    """A :class:`ViewOperator` on reduced data: ``m - 1`` agents of ``d`` rows, then the target's
    block; ``D^T q`` and ``D y`` by one batched product for the first ``m - 1`` and one for the
    target."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self._split()
        # a sparse graph's m W^c is sparse (a ring's has 2 c + 1 entries per row): its products cost
        # O(nnz) instead of O(m^2) (the same sums up to their order)
        nnz = int(np.count_nonzero(self.mWc))
        self._mWc_sparse = (sparse.csr_array(self.mWc) if nnz < 0.25 * self.m * self.m else None)

    @property
    def target_start(self) -> int:
        """The first of the target's rows in this operator's coordinates (the other agents' reduced
        blocks, ``d`` rows each, come first)."""
        return self._n0

    def _split(self) -> None:
        m, d = self.m, self.d
        self._n0 = (m - 1) * d
        self._S3 = np.ascontiguousarray(self.X[:self._n0].reshape(m - 1, d, d))
        self._S3T = np.ascontiguousarray(self._S3.transpose(0, 2, 1))
        self._XjT = np.ascontiguousarray(self.X[self._n0:].T)

    def with_data(self, X: np.ndarray) -> TargetLastOperator:
        out = super().with_data(X)
        out._split()
        return out

    def viewing(self, B: np.ndarray, final_rows: np.ndarray, known: np.ndarray) -> TargetLastOperator:
        """The same data and dynamics seen through another view (basis ``B``, final rows, known
        latent coordinates)."""
        out = copy.copy(self)
        out._set_basis(B)
        out.final_rows, out.known = np.asarray(final_rows, dtype=int), np.asarray(known, dtype=int)
        out.nf = int(out.final_rows.size)
        out.K = self.T * out.r * self.d + out.nf + out.known.size
        return out

    def read_out(self, Z: np.ndarray, g: np.ndarray) -> np.ndarray:
        """``G g`` of this view from ``Z``, the full view's ``G_full g`` on the same data (every
        ``z^(t)`` and every final row): the messages ``(B (x) I_d) z^(t)``, the final rows and the
        known coordinates ``std[known] g[known]``."""
        b, md, T = Z.shape[1], self.m * self.d, self.T
        z = Z[:T * md].reshape(T, self.m, self.d * b)
        msgs = np.matmul(self.B, z).reshape(T * self.r * self.d, b)
        return np.vstack([msgs, Z[T * md:][self.final_rows],
                          g[self.known] * self.std[self.known][:, None]])

    def apply_P(self, q: np.ndarray) -> np.ndarray:
        """``P q`` (:meth:`ViewOperator.apply_P`), with a sparse ``m W^c`` where it is sparse."""
        if self._mWc_sparse is None:
            return super().apply_P(q)
        return self.mix_out(self._Dt(q))

    def mix_out(self, z: np.ndarray) -> np.ndarray:
        """``alpha D (m W^c (x) I_d) z`` for ``z`` of shape ``(m, d, b)``: the rows ``q`` the mixed
        ``z`` gives, before noise."""
        mix = self.mWc if self._mWc_sparse is None else self._mWc_sparse
        zh = (mix @ z.reshape(self.m, -1)).reshape(z.shape)
        return self.alpha * self._D(zh)

    def _Dt(self, q: np.ndarray) -> np.ndarray:
        out = np.empty((self.m, self.d, q.shape[1]))
        np.matmul(self._S3T, q[:self._n0].reshape(self.m - 1, self.d, q.shape[1]), out=out[:-1])
        np.matmul(self._XjT, q[self._n0:], out=out[-1])
        return out

    def _D(self, y: np.ndarray) -> np.ndarray:
        out = np.empty((self.n, y.shape[2]))
        out[:self._n0] = np.matmul(self._S3, y[:-1]).reshape(self._n0, y.shape[2])
        np.matmul(self.X[self._n0:], y[-1], out=out[self._n0:])
        return out
