"""The mean terms of the certified bound averaged over the Gaussian ``u_t`` (docs/upper-bound.md,
Section 8), instead of charged at the worst ``u_t`` of a truncation ball.

For one changed row ``x -> x'`` of the target ``j`` (``Delta = x' x'^T - x x^T``) and an order ``a > 1``,
the exact change of measure of an adaptive Gaussian sequence gives (docs/upper-bound.md, Section 8.1)

    exp((a - 1) D_a(P || Q)) = exp((a - 1) T cov(a)) E_R[ exp(sum_t theta_t u_t^T M_t u_t) ],

where ``R`` is the law of the run in which agent ``j``'s Gram matrix ``A`` is replaced by the tilted
``C_a = (a A^{-1} - (a - 1) A'^{-1})^{-1}`` (in its noise and in its mean), ``theta_t = a (a - 1) alpha^2
/ (2 sigma_p(t)^2)``, ``M_t = Delta S^{-1} Delta`` (``S = A + a Delta``; rank <= 2, norm <= ``1 / ell``)
for ``t < T`` and ``M_T = (x - x')(x - x')^T`` (rank 1, norm <= ``rho^2``). Under ``R`` the ``u_t`` are
zero-mean Gaussian; with ``lam_t >= lambda_max Cov_R(u_t)`` and ``tau_t >=`` the sum of the top
``rank(M_t)`` eigenvalues of ``Cov_R(u_t)``, ``g_t = a alpha^2 mu_t / (2 sigma_p(t)^2)``,
``G = sum_t g_t lam_t`` and ``S = sum_t g_t tau_t``,

    D_a(mean) <= (S / G) (-ln(1 - 2 (a - 1) G)) / (2 (a - 1))          (finite when 2 (a - 1) G < 1).

``lam_t`` and ``tau_t`` come from the exact ``Cov_X(u_t)`` and a perturbation bound: ``||C_a - A|| <= e``
with ``e = (a - 1)(1 + a / ell)`` (forward) or ``e = a (1 + (a - 1) / ell')`` (reverse, where the tilted
matrix is taken against ``A`` of ``X``), and the recursions

    dev_k = alpha e sum_(i<k) ||c_(k-1-i)|| (||H_i|| + dev_i),
    n_k   = ||c_k|| + alpha e sum_(i<k) ||c_(k-1-i)|| n_i,

so that ``lam_t <= (sqrt(lambda_max Gamma_t) + Dev_t)^2 + e N_t`` and ``tau_t <= (sqrt(top_r Gamma_t) +
sqrt(r) Dev_t)^2 + r e N_t`` with ``Dev_t^2 = sum_s sigma_s^2 dev_(t-1-s)^2`` and ``N_t = sum_s
sigma_s^2 n_(t-1-s)^2``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["TiltFacts", "averaged_mean_term"]


@dataclass(frozen=True, slots=True)
class TiltFacts:
    """What the averaged mean term needs of the run under ``X`` (docs/upper-bound.md, Section 8.1),
    per row of a batch (each row's target's values).

    ``lam``, ``top2`` are ``(T, P, 1)``: ``lambda_max`` and the sum of the two largest eigenvalues of
    ``Gamma_t = Cov_X(u_t)``; ``c_norm``, ``h_norm`` ``(T, P, 1)``: ``||c_k||`` and ``||H_k||``;
    ``var`` ``(T,)``: the variances ``sigma_s^2`` of the noise blocks reaching ``u`` (``q^(0),
    p^(1), ...``); ``inv_var`` ``(T,)``: ``1 / sigma_p(t)^2`` of the step that multiplies ``u_t``."""

    lam: np.ndarray
    top2: np.ndarray
    c_norm: np.ndarray
    h_norm: np.ndarray
    var: np.ndarray
    inv_var: np.ndarray

    def part(self, sl: slice) -> TiltFacts:
        """The rows ``sl`` when the per-row arrays are ``(T, P, 1)``."""
        return TiltFacts(lam=self.lam[:, sl], top2=self.top2[:, sl], c_norm=self.c_norm[:, sl],
                         h_norm=self.h_norm[:, sl], var=self.var, inv_var=self.inv_var)


def _tilted_bounds(facts: TiltFacts, e: np.ndarray, alpha: float,
                   rank2: float) -> tuple[np.ndarray, np.ndarray]:
    """``(lam_t, tau_t)``, each ``(T,) + e.shape``: bounds on ``lambda_max`` and on the top-``r`` sum
    (``r = rank2`` for ``t < T``, 1 for ``t = T``) of ``Cov_R(u_t)`` when ``||C_a - A|| <= e``."""
    T = facts.lam.shape[0]
    alpha_e = alpha * e
    dev = np.zeros((T,) + e.shape)
    n = np.zeros((T,) + e.shape)
    for k in range(T):
        acc_dev = np.zeros(e.shape)
        acc_n = np.zeros(e.shape)
        for i in range(k):
            acc_dev = acc_dev + facts.c_norm[k - 1 - i] * (facts.h_norm[i] + dev[i])
            acc_n = acc_n + facts.c_norm[k - 1 - i] * n[i]
        dev[k] = alpha_e * acc_dev
        n[k] = facts.c_norm[k] + alpha_e * acc_n
    lam = np.empty((T,) + e.shape)
    tau = np.empty((T,) + e.shape)
    for t in range(1, T + 1):
        ks = t - 1 - np.arange(t)
        w = facts.var[:t].reshape((t,) + (1,) * e.ndim)
        big_dev = np.sqrt(np.sum(w * dev[ks] ** 2, axis=0))
        big_n = np.sum(w * n[ks] ** 2, axis=0)
        r = rank2 if t < T else 1.0
        top = facts.top2[t - 1] if t < T else facts.lam[t - 1]
        lam[t - 1] = (np.sqrt(facts.lam[t - 1]) + big_dev) ** 2 + e * big_n
        tau[t - 1] = (np.sqrt(top) + np.sqrt(r) * big_dev) ** 2 + r * e * big_n
    return lam, tau


def averaged_mean_term(a: np.ndarray, ell: np.ndarray, rho: np.ndarray, facts: TiltFacts,
                       alpha: float, forward: bool, d: int) -> np.ndarray:
    """The mean part of the Renyi bound of order ``a`` averaged over ``u`` (module docstring).

    Parameters
    ----------
    a, ell : ndarray
        ``(P, k)`` orders and lower bounds on ``lambda_min(S)`` of the step's ``S_a / sigma^2``.
    rho : ndarray
        ``(P, 1)`` ``sup ||x - x'||`` of each row.
    facts : TiltFacts
        The target's run under ``X`` (every row of the batch belongs to it).
    alpha : float
        The step size.
    forward : bool
        ``D_a(P || Q)`` (True) or ``D_a(Q || P)``.
    d : int
        Dimension (the rank of ``M_t``, ``t < T``, is ``min(2, d)``).

    Returns
    -------
    ndarray
        ``(P, k)``; ``inf`` where ``ell <= 0`` or ``2 (a - 1) G >= 1``.
    """
    ok = ell > 0
    safe_ell = np.where(ok, ell, 1.0)
    e = (a - 1.0) * (1.0 + a / safe_ell) if forward else a * (1.0 + (a - 1.0) / safe_ell)
    lam, tau = _tilted_bounds(facts, e, alpha, float(min(2, d)))
    T = facts.lam.shape[0]
    mu = np.concatenate([np.broadcast_to(1.0 / safe_ell, (T - 1,) + a.shape),
                         np.broadcast_to(rho ** 2, a.shape)[None]])
    g = 0.5 * a * alpha ** 2 * mu * facts.inv_var.reshape((T,) + (1,) * a.ndim)
    big_g = np.sum(g * lam, axis=0)
    big_s = np.sum(g * tau, axis=0)
    z = 2.0 * (a - 1.0) * big_g
    with np.errstate(all="ignore"):
        value = np.where(z > 0, (big_s / np.where(z > 0, big_g, 1.0)) * (-np.log1p(-z))
                         / (2.0 * (a - 1.0)), big_s)
    return np.where(ok & (z < 1.0), value, np.inf)
