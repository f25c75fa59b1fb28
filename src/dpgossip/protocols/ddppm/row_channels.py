r"""A row replacement of the target as ``2 T`` scalar channels: the full target view's covariance update
in closed form, without any run of the neighbour's dynamics.

docs/audit-scale.md, Section 9. On the full view of target ``j`` (:class:`TargetLastOperator`: every
``z^(t)``, every final row, the target last), replace the target's row ``rho`` (``x``) by
``x' = x + delta``. For the same latent noise the two runs differ by (``K_a = alpha (m W^c (x) I_d)``)

.. math::

    \Delta z^{(t)} = D'^T \Delta q^{(t-1)} + E_j \delta\, a_t, \qquad
    \Delta q^{(t)} = D' K_a \Delta z^{(t)} + e_\rho\, b_t, \qquad
    a_t = q^{(t-1)}_\rho,\ b_t = \delta^T (K_a z^{(t)})_j,

``2 T`` scalars of the audited run (``s = L^T g``, ``L`` their gradients in the latent noise ``g``). The
neighbour's dynamics are the audited ones plus the same two kinds of injection, read from the difference
itself, so ``G_1 - G_0 = \Psi L^T`` with

.. math::

    \Psi = \Phi_0 (I - R_0)^{-1},

``Phi_0`` the audited dynamics' responses to a unit of each channel (``delta`` injected into ``z_j^(t)``,
``e_rho`` into ``q^(t)``) and ``R_0`` what each channel reads on them (strictly lower triangular in time
order: ``I - R_0`` is invertible). With ``Gamma = G_0 L = \mathrm{Cov}(\text{view}, s)`` and
``Sigma_s = L^T L``,

.. math::

    S_1 - S_0 = \Gamma \Psi^T + \Psi \Gamma^T + \Psi \Sigma_s \Psi^T
              = [\Gamma, \Psi] \begin{bmatrix} 0 & I \\ I & \Sigma_s \end{bmatrix} [\Gamma, \Psi]^T,

so the nontrivial generalised eigenvalues of ``(S_1, S_0)`` are ``1 + eig(M Q)`` with
``Q = [Gamma, Psi]^T S_0^{-1} [Gamma, Psi]`` and ``M`` the middle matrix: no orthonormal row space and no
forward of the neighbour's run is needed.

**A basis per target.** Every column of ``[Gamma, Psi]`` is a combination of ``2 T d + s`` view vectors
of the target alone (``s`` its rows), :attr:`TargetChannels.basis`:

- ``S_0 u`` for the ``T d`` functionals ``u`` reading a coordinate of ``(K_a z^(t))_j`` (``b_t`` is
  ``delta`` of them, the first part of ``a_(t+1)`` is ``x`` of them); their latent part is ``G_0^T u``;
- the response to ``e_i`` injected into ``z_j^(t)`` (``T d``; the audited dynamics do not depend on time,
  so slot ``t`` is the slot-1 response delayed); a ``q``-injection ``e_rho`` in slot ``t < T`` is the
  ``z``-injection ``x`` in slot ``t + 1`` (``D^T e_rho = x`` at the target), and ``G_0 e`` of a latent
  coordinate of ``q^(t)_rho`` is its scale times that;
- a unit in each of the target's final rows (``s``).

So ``[Gamma, Psi] = B_j A`` with ``A`` (``(2 T d + s) x 4 T``, :meth:`TargetChannels.update`) small and
cheap, and any quadratic form of the view in ``[Gamma, Psi]`` is ``A^T (B_j^T ... B_j) A``: the per-view
Gram of the basis is computed once per target, and a neighbour then costs no operation on the size of
the view at all.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpgossip.protocols.ddppm.reduced import TargetLastOperator

__all__ = ["RowUpdate", "TargetChannels"]


@dataclass(frozen=True, slots=True, eq=False)
class RowUpdate:
    """One row replacement of the target in the channel form: ``[Gamma, Psi] = B_j A`` and
    ``S_1 - S_0 = B_j A M A^T B_j^T`` (module docstring)."""

    coef: np.ndarray
    """``A`` (basis x ``4 T``): the columns ``Gamma`` (``a_1 .. a_T``, ``b_1 .. b_T``), then ``Psi``."""
    middle: np.ndarray
    """``M = [[0, I], [I, Sigma_s]]`` (``4 T x 4 T``), ``Sigma_s = L^T L``."""


class TargetChannels:
    """The channel form's quantities of one target (module docstring), from the full view ``full`` of
    the target (the target last, every ``z^(t)`` and every final row a coordinate)."""

    def __init__(self, full: TargetLastOperator) -> None:
        T, m, d, n = full.T, full.m, full.d, full.n
        if not full.every_message or full.known.size or full.nf != n:
            raise ValueError("TargetChannels needs the full view (every z, every final row)")
        self.full, self.T, self.m, self.d, self.n = full, T, m, d, n
        self.md, self.n0 = m * d, full.target_start
        self.s = n - self.n0
        self.row = full.alpha * full.mWc[m - 1]  # (K_a z)_j = sum_b row[b] z_b
        self.reach = np.flatnonzero(self.row)
        U = np.zeros((full.K, T, d))
        for t in range(T):
            U[t * self.md:(t + 1) * self.md, t, :] = np.kron(self.row[:, None], np.eye(d))
        AU = full.adjoint(U.reshape(full.K, T * d))  # G_0^T u (N x T d: slot, then coordinate)
        Td = T * d
        self.nb = 2 * Td + self.s
        basis = np.zeros((full.K, self.nb))
        basis[:, :Td] = full.forward(AU)  # S_0 u
        zs, fin = self._injection_responses()
        for t in range(1, T + 1):  # e_i into z_j^(t): the slot-1 response delayed
            k = T - t + 1
            cols = slice(Td + (t - 1) * d, Td + t * d)
            basis[(t - 1) * self.md:T * self.md, cols] = zs[:k].reshape(k * self.md, d)
            basis[T * self.md:, cols] = fin[k - 1]
        basis[T * self.md + self.n0 + np.arange(self.s), 2 * Td + np.arange(self.s)] = 1.0
        self.basis = basis
        """``B_j`` (``K x (2 T d + s)``, module docstring)."""
        self.basis_latent = np.zeros((full.N, self.nb))
        """``Cov(g, B_j A)`` is ``basis_latent A`` off the target's own latent rows."""
        self.basis_latent[:, :Td] = AU
        self._AU_gram = AU.T @ AU
        rows = (np.arange(T)[:, None] * n + self.n0 + np.arange(self.s)[None, :])  # q^(t)_r, t < T
        self._AU_target = AU[rows]  # (T, s, T d)
        z = basis[:T * self.md].reshape(T, m, d, self.nb)[:, self.reach]
        self._reads = np.einsum("b,tbdk->tdk", self.row[self.reach], z)  # (K_a z^(t))_j of each

    def _injection_responses(self) -> tuple[np.ndarray, np.ndarray]:
        """The audited dynamics (no noise) after ``e_i`` (``i < d``) is injected into the target's
        ``z`` in slot 1: ``z`` in slots ``1 .. T`` (``T x md x d``) and the final rows had the run
        stopped in each of those slots (``T x n x d``, ``q = D K_a z``)."""
        full, T, m, d = self.full, self.T, self.m, self.d
        z = np.zeros((m, d, d))
        z[m - 1] = np.eye(d)
        zs, fin = np.empty((T, self.md, d)), np.empty((T, self.n, d))
        for t in range(T):
            zs[t] = z.reshape(self.md, d)
            fin[t] = full.mix_out(z)
            z = full.gather(fin[t])
        return zs, fin

    def update(self, r: int, x_new: np.ndarray) -> RowUpdate:
        """The channel form of replacing the target's local row ``r`` by ``x_new`` (module docstring)."""
        T, d, n = self.T, self.d, self.n
        Td = T * d
        rho = self.n0 + int(r)
        x = self.full.X[rho]
        delta = np.asarray(x_new, dtype=float) - x
        sd = self.full.std[np.arange(T) * n + rho]  # the noise scales of q^(0..T-1)_rho

        def A(t: int) -> slice:  # S_0 u of slot t
            return slice((t - 1) * d, t * d)

        def Z(t: int) -> slice:  # a z-injection in slot t
            return slice(Td + (t - 1) * d, Td + t * d)

        coef = np.zeros((self.nb, 4 * T))
        Phi = coef[:, 2 * T:]
        for t in range(1, T + 1):
            coef[Z(t), t - 1] = sd[t - 1] ** 2 * x  # Gamma of a_t: G_0 of q^(t-1)_rho's noise ...
            if t > 1:
                coef[A(t - 1), t - 1] = x  # ... and of x^T (K_a z^(t-1))_j
            coef[A(t), T + t - 1] = delta  # Gamma of b_t
            Phi[Z(t), t - 1] = delta  # a_t: delta into z_j^(t)
            if t < T:
                Phi[Z(t + 1), T + t - 1] = x  # b_t: e_rho into q^(t)
        Phi[2 * Td + int(r), 2 * T - 1] = 1.0  # b_T: e_rho into the final q^(T)
        reads = np.einsum("tdk,kc->tdc", self._reads, Phi)
        R0 = np.zeros((2 * T, 2 * T))
        R0[T:] = np.einsum("d,tdk->tk", delta, reads)
        R0[1:T] = np.einsum("d,tdk->tk", x, reads[:T - 1])
        R0[np.arange(1, T), T + np.arange(T - 1)] += 1.0
        coef[:, 2 * T:] = Phi @ np.linalg.inv(np.eye(2 * T) - R0)  # unit lower triangular in time
        # Sigma_s = L^T L, L = G_0^T u combinations plus the scales of q^(t-1)_rho's noise (a_t)
        CL = coef[:Td, :2 * T]
        units = np.zeros((T, 2 * T))
        units[np.arange(T), np.arange(T)] = sd
        cross = CL.T @ (self._AU_target[:, int(r)].T @ units)
        S = CL.T @ self._AU_gram @ CL + cross + cross.T + units.T @ units
        M = np.zeros((4 * T, 4 * T))
        M[:2 * T, 2 * T:] = M[2 * T:, :2 * T] = np.eye(2 * T)
        M[2 * T:, 2 * T:] = (S + S.T) / 2
        return RowUpdate(coef=coef, middle=M)
