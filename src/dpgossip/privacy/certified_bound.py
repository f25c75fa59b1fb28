"""A certified upper bound on the privacy loss of a noisy linear power iteration, per target agent.

docs/upper-bound.md derives every step; this module implements it. The mechanism (Algorithm 1 of
Campbell et al., docs/model.md, Section 1) is described without the protocol layer by
:class:`NoisyPowerIteration`:
row blocks ``X_i``, a mixing matrix ``W``, ``T`` iterations of ``c`` mixing rounds, ``alpha``,
``sigma_q`` and the schedule ``sigma_p(1..T)``. Rank one only.

The bound is about the **all-but-one coalition** of a target ``j`` (every other agent's data and noise,
every message, every final ``q_i^(T)``). Every supported view of an observer, coalition or eavesdropper
that does not contain ``j`` is a data-independent function of that view, so by data processing the bound
holds for every such view. Given the coalition's own noise, it sees the adaptive sequence::

    y_1 = X_j^T q_j^(0)                 ~ N(0, sigma_q^2 A)
    y_(t+1) | past                      ~ N(alpha A u_t, sigma_p(t)^2 A),      t = 1..T-1
    q_j^(T) | past                      ~ N(alpha X_j u_T, sigma_p(T)^2 I)

with ``A = X_j^T X_j`` and ``u_t = z_j^(t+1/2)`` computed by the coalition. With the event
``E = {||u_t|| <= R_t for all t}`` and the mechanism whose ``u_t`` is clipped to the ``R_t``-ball,::

    delta(P || Q) <= delta_rdp(clipped) + Pr_X(not E),
    delta(Q || P) <= delta_rdp'(clipped) + sup_X' Pr_X'(not E),

and the clipped mechanism's Renyi divergence of order ``a`` is at most (one changed row ``x -> x'``,
``h = x^T A^{-1} x``, ``kappa = 1 / lambda_min(A)``, ``f_a(l) = (a ln l - ln(a l + 1 - a)) / (2 (a - 1))``)::

    D_a(P || Q) <= T [f_a(1 + kappa) + f_a(1 - h)]
                   + (a alpha^2 / 2) [sum_(t<T) R_t^2 / (sigma_p(t)^2 ell_a) + rho^2 R_T^2 / sigma_p(T)^2],
                   ell_a = lambda_min(A - a x x^T)
    D_a(Q || P) <= T [f_a(1 / (1 + kappa)) + f_a(1 / (1 - h))]
                   + (a alpha^2 / 2) [sum_(t<T) R'_t^2 / (sigma_p(t)^2 ell'_a) + rho^2 R'_T^2 / sigma_p(T)^2],
                   ell'_a = lambda_min(A + (a-1) x x^T) - (a-1)

(``rho = sup ||x - x'||``: 1 for ``bounded``, ``1 + ||x||`` for ``replace-one``). The curves are
converted by Canonne, Kamath & Steinke (2020), Prop. 12, the conversion of :mod:`.conversions`; the
truncation mass ``Pr(||u_t|| > R_t)`` is bounded by a Chernoff bound with the exact covariance of ``u_t``
under ``X`` and a uniform bound on its covariance under every neighbour. A second curve, with no
truncation, averages the mean terms over the Gaussian ``u_t`` by a change of measure to a tilted
run (:mod:`.tilted_mean`, docs/upper-bound.md, Section 8); each row and direction keeps the smaller
epsilon of the two. Floating-point rounding is not part of the certificate.
"""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from dpgossip.errors import ConfigError
from dpgossip.privacy.conversions import rdp_to_epsilon_batch
from dpgossip.privacy.delta_from_bound import SMALLEST, delta_upper
from dpgossip.privacy.tilted_mean import TiltFacts, averaged_mean_term

__all__ = ["ADJACENCIES", "COVERS", "MEAN_TERMS", "CertifiedBound", "NoisyPowerIteration",
           "averaged_renyi_bound", "certified_delta_upper", "certified_upper_bounds", "chernoff_radius"]

ADJACENCIES = ("bounded", "replace-one")
MEAN_TERMS = ("best", "truncated", "averaged")
"""How :func:`certified_upper_bounds` bounds the mean terms (its ``mean_terms``)."""
COVERS = ("every replacement of every row of the target allowed by the adjacency, for this X; "
          "the all-but-one coalition, hence every observer, coalition without the target and "
          "eavesdropper (joint views); rank 1")
_TRUNCATION_SHARES = (0.02, 0.1, 0.3, 0.6, 0.9)
"""Shares of ``delta`` spent on the truncation mass; each gives a valid bound, the smallest is kept."""
_AVERAGED = -1
"""The index, among the truncation shares, that marks a row whose bound averages its mean terms over
``u`` (no truncation, docs/upper-bound.md, Section 8)."""
_ROW_CHUNK = 512
"""Curves converted at once (memory: ``96 x d^2`` doubles per curve and order grid)."""


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class NoisyPowerIteration:
    """The mechanism of Algorithm 1 of Campbell et al. (rank one), without the protocol layer.

    ``q^(0) ~ N(0, sigma_q^2 I)``; for ``t = 1..T``: ``z^(t) = D^T q^(t-1)``,
    ``z^(t+1/2) = m (W^c (x) I_d) z^(t)``, ``q^(t) = alpha D z^(t+1/2) + p^(t)`` with
    ``p^(t) ~ N(0, sigma_p(t)^2 I)``; every ``q_i^(T)`` is released.
    """

    X: np.ndarray
    """``(n, d)`` rows, every norm ``<= 1``."""
    offsets: np.ndarray
    """``(m + 1,)`` row offsets of the agents' blocks."""
    W: np.ndarray
    """``(m, m)`` mixing matrix."""
    consensus_steps: int
    alpha: float
    sigma_q: float
    sigma_p: np.ndarray
    """``(T,)`` per-iteration noise standard deviations."""

    def __post_init__(self) -> None:
        X = np.asarray(self.X, dtype=float)
        if X.ndim != 2 or not np.all(np.isfinite(X)):
            raise ConfigError("X must be a finite 2-D array", field="X")
        norms = np.linalg.norm(X, axis=1)
        if np.any(norms > 1 + 1e-9):
            r = int(np.argmax(norms))
            raise ConfigError(f"X: row {r} has norm {norms[r]:.6g}; the bound needs every row in the "
                              "unit ball", field="X")
        sp = np.atleast_1d(np.asarray(self.sigma_p, dtype=float))
        if sp.ndim != 1 or sp.size < 1 or np.any(~np.isfinite(sp)) or np.any(sp < 0):
            raise ConfigError(f"sigma_p must be T >= 1 numbers >= 0, got {sp.tolist()!r}",
                              field="sigma_p")
        for name in ("alpha", "sigma_q"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise ConfigError(f"{name} must be a positive number, got {v!r}", field=name)
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "sigma_p", sp)
        object.__setattr__(self, "offsets", np.asarray(self.offsets, dtype=int))
        object.__setattr__(self, "W", np.asarray(self.W, dtype=float))

    @property
    def T(self) -> int:
        return int(self.sigma_p.size)

    @property
    def m(self) -> int:
        return int(self.offsets.size - 1)

    @property
    def d(self) -> int:
        return int(self.X.shape[1])

    def gram(self, i: int) -> np.ndarray:
        """``A_i = X_i^T X_i``."""
        Xi = self.X[self.offsets[i]:self.offsets[i + 1]]
        return Xi.T @ Xi

    def stds(self) -> np.ndarray:
        """``(T,)`` standard deviations of the noise blocks ``q^(0), p^(1), ..., p^(T-1)`` that reach
        ``u_1 .. u_T``."""
        return np.concatenate([[self.sigma_q], self.sigma_p[:-1]])


@dataclass(frozen=True, slots=True, kw_only=True)
class CertifiedBound:
    """A proven ``(epsilon, delta)`` for one target: every neighbour ``X'`` of this ``X`` that changes a
    row of the target, both directions, every view that does not contain the target (``covers``).

    ``epsilon`` is ``inf`` when no finite value is proven (``reason`` says why).
    """

    target: int
    delta: float
    epsilon: float
    adjacency: str
    epsilon_forward: float
    """Bound for ``P = law under X`` against ``Q = law under X'`` (``Pr_P(S) <= e^eps Pr_Q(S) + delta``)."""
    epsilon_reverse: float
    """Bound for the reverse direction."""
    worst_row: int
    """Global index of the row whose bound is the largest (-1 when none)."""
    order: float
    """Renyi order at which the worst row's binding direction is converted (nan when infinite)."""
    radii_forward: tuple[float, ...]
    """``R_1 .. R_T`` of the forward direction at the worst row's truncation share."""
    radii_reverse: tuple[float, ...]
    truncation_forward: float
    """``Pr_X(||u_t|| > R_t for some t)`` bound spent by the worst row, forward direction."""
    truncation_reverse: float
    """``sup_X' Pr_X'(...)`` bound spent by the worst row, reverse direction."""
    mean_terms: str = "truncated"
    """How the worst row's binding direction bounds its mean terms: ``truncated`` (the worst ``u_t`` on
    a ball, Section 5; ``radii_*`` and ``truncation_*`` say which) or ``averaged`` (over the Gaussian
    ``u_t``, Section 8.1; no truncation: empty radii and a zero mass)."""
    covers: str = COVERS
    reason: str | None = None

    def to_row(self) -> dict[str, object]:
        """Tidy row."""
        return {"target": self.target, "delta": self.delta, "epsilon_upper": self.epsilon,
                "epsilon_upper_forward": self.epsilon_forward,
                "epsilon_upper_reverse": self.epsilon_reverse, "upper_worst_row": self.worst_row,
                "upper_order": self.order, "upper_truncation_forward": self.truncation_forward,
                "upper_truncation_reverse": self.truncation_reverse, "adjacency": self.adjacency,
                "upper_reason": self.reason or ""}


# --- the covariance of u_t under X and its uniform bound under X' -----------------------------------
@dataclass(frozen=True, slots=True)
class _UCovariances:
    """Per target ``j`` and step ``t``: the exact ``Cov_X(u_t)`` eigenvalues and the uniform bounds
    ``lambda_max``, ``trace`` of ``Cov_X'(u_t)`` over every neighbour."""

    eigs: np.ndarray        # (m, T, d)
    lam_bar: np.ndarray     # (m, T)
    tau_bar: np.ndarray     # (m, T)
    c_norm: np.ndarray      # (T, m): ||c_k|| = ||E_j K M^k E_j^T||
    h_norm: np.ndarray      # (T, m): ||H_k||
    var: np.ndarray         # (T,): variances of q^(0), p^(1), ..., p^(T-1)

    def tilt(self, targets: np.ndarray, sigma_p: np.ndarray) -> TiltFacts:
        """What the averaged mean term needs (:mod:`.tilted_mean`) for rows of the given targets (one
        target per row): ``(T, P, 1)`` arrays."""
        eigs = np.swapaxes(self.eigs[targets], 0, 1)                   # (T, P, d)
        return TiltFacts(lam=eigs[..., -1:], top2=eigs[..., -2:].sum(axis=-1, keepdims=True),
                         c_norm=self.c_norm[:, targets, None], h_norm=self.h_norm[:, targets, None],
                         var=self.var, inv_var=1.0 / sigma_p ** 2)


def _u_covariances(model: NoisyPowerIteration, rho: np.ndarray) -> _UCovariances:
    """docs/upper-bound.md, Section 5.

    ``u_t = sum_(s<t) H_(t-1-s) w_s`` with ``H_k = E_j K M^k D^T``, ``K = m (W^c (x) I_d)``,
    ``M = alpha Gbar K``, ``Gbar = blockdiag(A_i)``, so ``Cov_X(u_t) = sum_s sigma_s^2 H H^T``. Under a
    neighbour, ``H'_k - H_k = c_k (x' - x) e_r^T + alpha sum_(i<k) c_(k-1-i) (x'x'^T - x x^T) H'_i`` with
    ``c_l = E_j K M^l E_j^T``, hence ``||H'_k - H_k|| <= dev_k``,

        dev_k = ||c_k|| rho + alpha sum_(i<k) ||c_(k-1-i)|| (||H_i|| + dev_i),

    and ``sqrt(lambda_max Cov_X'(u_t)) <= sqrt(lambda_max Cov_X(u_t)) + Delta_t``,
    ``sqrt(tr Cov_X'(u_t)) <= sqrt(tr Cov_X(u_t)) + sqrt(d) Delta_t``,
    ``Delta_t = sqrt(sum_s sigma_s^2 dev_(t-1-s)^2)``.
    """
    m, d, T, alpha = model.m, model.d, model.T, model.alpha
    md = m * d
    gblocks = np.stack([model.gram(i) for i in range(m)])            # (m, d, d)
    K = m * np.kron(np.linalg.matrix_power(model.W, model.consensus_steps), np.eye(d))
    V = K.copy()                                                       # K M^k, k = 0
    HH = np.empty((T, m, d, d))
    c_norm = np.empty((T, m))
    for k in range(T):
        Vb = V.reshape(m, d, m, d)
        VG = np.einsum("iajb,jbc->iajc", Vb, gblocks)                  # (K M^k) Gbar
        HH[k] = np.einsum("iajc,ibjc->iab", VG, Vb)                    # diagonal blocks of V Gbar V^T
        diag = Vb[np.arange(m), :, np.arange(m), :]                    # c_k = (j, j) blocks
        c_norm[k] = np.linalg.norm(diag, ord=2, axis=(1, 2))
        if k + 1 < T:
            V = alpha * VG.reshape(md, md) @ K
    h_norm = np.sqrt(np.maximum(np.linalg.eigvalsh(HH)[..., -1], 0.0))  # ||H_k||, (T, m)
    dev = np.empty((T, m))
    for k in range(T):
        dev[k] = c_norm[k] * rho + alpha * sum(c_norm[k - 1 - i] * (h_norm[i] + dev[i])
                                               for i in range(k))
    var = model.stds() ** 2
    cov = np.empty((m, T, d, d))
    big_delta = np.empty((m, T))
    for t in range(1, T + 1):
        ks = t - 1 - np.arange(t)                                      # H_(t-1-s), s = 0..t-1
        cov[:, t - 1] = np.einsum("s,sjab->jab", var[:t], HH[ks])
        big_delta[:, t - 1] = np.sqrt(np.einsum("s,sj->j", var[:t], dev[ks] ** 2))
    eigs = np.maximum(np.linalg.eigvalsh((cov + np.swapaxes(cov, -1, -2)) / 2), 0.0)
    lam_bar = (np.sqrt(eigs[..., -1]) + big_delta) ** 2
    tau_bar = (np.sqrt(eigs.sum(axis=-1)) + math.sqrt(d) * big_delta) ** 2
    return _UCovariances(eigs=eigs, lam_bar=lam_bar, tau_bar=tau_bar, c_norm=c_norm, h_norm=h_norm,
                         var=var)


def chernoff_radius(eigs: np.ndarray, weights: np.ndarray, mass: float) -> np.ndarray:
    """Radii ``R`` with ``Pr(||u|| > R) <= mass`` for zero-mean Gaussians ``u``, by Chernoff's bound.

    For ``u ~ N(0, S)`` with eigenvalues ``l_k`` and any ``0 < theta < 1 / (2 max l_k)``,
    ``Pr(||u||^2 > R^2) <= exp(-theta R^2) prod_k (1 - 2 theta l_k)^(-1/2)``, so

        R^2 = min_theta [ln(1/mass) - (1/2) sum_k w_k ln(1 - 2 theta l_k)] / theta

    certifies ``mass`` for every ``theta`` tried (``w_k = 1``: exact eigenvalues; one eigenvalue
    ``l = lambda_bar`` of weight ``tau / lambda_bar`` bounds every covariance with
    ``lambda_max <= lambda_bar`` and trace ``<= tau``, since ``-ln(1 - 2 theta l)`` is convex and 0 at 0).

    Parameters
    ----------
    eigs, weights : ndarray
        ``(..., k)`` eigenvalues (``>= 0``) and their weights.
    mass : float
        Target tail probability in ``(0, 1)``.

    Returns
    -------
    ndarray
        ``(...)`` radii (0 where every eigenvalue is 0).
    """
    eigs = np.asarray(eigs, dtype=float)
    top = eigs.max(axis=-1)
    safe = np.where(top > 0, top, 1.0)
    v = 1.0 / (1.0 + np.exp(-np.linspace(-12.0, 12.0, 1201)))        # 2 theta top in (0, 1)
    theta = v[:, None] / (2.0 * safe.reshape(1, -1))                   # (G, B)
    lam = eigs.reshape(-1, eigs.shape[-1])
    w = np.broadcast_to(weights, eigs.shape).reshape(-1, eigs.shape[-1])
    log_mgf = -0.5 * np.einsum("bk,gbk->gb", w, np.log1p(-2.0 * theta[..., None] * lam[None]))
    r2 = ((log_mgf + math.log(1.0 / mass)) / theta).min(axis=0)
    return np.where(top.reshape(-1) > 0, np.sqrt(r2), 0.0).reshape(top.shape)


# --- the Renyi curves of one row ---------------------------------------------------------------------
def _f(a: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """``D_a(N(0, 1) || N(0, l)) = (a ln l - ln(a l + 1 - a)) / (2 (a - 1))``, ``inf`` off the domain."""
    s = a * lam + 1.0 - a
    with np.errstate(all="ignore"):
        out = (a * np.log(lam) - np.log(s)) / (2.0 * (a - 1.0))
    return np.where(s > 0, out, np.inf)


def _lambda_min_shifted(lam: np.ndarray, xh: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """``lambda_min(A + coef x x^T)`` for curves ``P`` and orders ``(P, k)``, from the eigenvalues
    ``lam`` ``(P, d)`` of ``A`` and ``xh`` ``(P, d)``, ``x`` in its eigenbasis
    (``A + coef x x^T`` is orthogonally similar to ``diag(lam) + coef xh xh^T``)."""
    mats = (np.einsum("pa,ab->pab", lam, np.eye(lam.shape[1]))[:, None]
            + coef[..., None, None] * np.einsum("pa,pb->pab", xh, xh)[:, None])
    return np.linalg.eigvalsh(mats)[..., 0]


_ELL_GRID = 160
"""Orders per row at which ``lambda_min`` of the mean term's denominator is tabulated."""
_ELL_X0 = 1e-9
"""Smallest positive ``a - 1`` of the table."""


_TABLES: OrderedDict[tuple[bytes, bool], _EllTable] = OrderedDict()
"""The last tables built, by a digest of their inputs (:meth:`_EllTable.build`)."""
_TABLES_KEPT = 8
_TABLE_KEPT_SIZE = 2_000_000
"""Larger tables (more than this many values, 16 MB) are not kept."""


@dataclass(frozen=True, slots=True)
class _EllTable:
    """``ell(a)`` (the mean term's denominator, docs/upper-bound.md, Section 5) tabulated per row at
    ``a - 1 = 0`` and ``a - 1 = x0 e^(k step)``, ``k = 0..G-1``. ``ell`` is non-increasing in ``a`` in
    both directions (forward ``lambda_min(A - a x x^T)``; reverse ``lambda_min(A + (a-1) x x^T) - (a-1)``,
    whose first part grows by at most ``||x||^2 <= 1`` per unit of ``a``), so the value at the nearest
    grid order above ``a`` is a lower bound at ``a``; beyond the last grid order the bound is 0."""

    step: np.ndarray      # (P,)
    values: np.ndarray    # (P, G + 1)

    @classmethod
    def build(cls, lam: np.ndarray, xh: np.ndarray, x_hi: np.ndarray, forward: bool) -> _EllTable:
        """The table of the rows ``(lam, xh)`` up to ``a - 1 = x_hi``; a table depends on the data only
        (not on the noise, ``W`` or ``delta``), so the last few are kept and reused when the same
        inputs come again, bit for bit (a calibration or a bisection over ``delta``)."""
        digest = hashlib.blake2b(digest_size=20)
        for part in (lam, xh, x_hi):
            part = np.ascontiguousarray(part, dtype=float)
            digest.update(repr(part.shape).encode())
            digest.update(part.tobytes())
        key = (digest.digest(), forward)
        if key in _TABLES:
            _TABLES.move_to_end(key)
            return _TABLES[key]
        table = cls._compute(lam, xh, x_hi, forward)
        if table.values.size <= _TABLE_KEPT_SIZE:
            table.values.setflags(write=False)
            _TABLES[key] = table
        while len(_TABLES) > _TABLES_KEPT:
            _TABLES.popitem(last=False)
        return table

    @classmethod
    def _compute(cls, lam: np.ndarray, xh: np.ndarray, x_hi: np.ndarray, forward: bool) -> _EllTable:
        step = (np.log(np.maximum(x_hi, 2 * _ELL_X0)) - math.log(_ELL_X0)) / (_ELL_GRID - 1)
        x = np.concatenate([np.zeros((x_hi.size, 1)),
                            _ELL_X0 * np.exp(step[:, None] * np.arange(_ELL_GRID))], axis=1)
        a = 1.0 + x
        ell = (_lambda_min_shifted(lam, xh, -a) if forward
               else _lambda_min_shifted(lam, xh, a - 1.0) - (a - 1.0))
        return cls(step=step, values=ell)

    def lower(self, a: np.ndarray, forward: bool) -> np.ndarray:
        """A lower bound on ``ell`` at the orders ``a`` (``(P, k)``); the same rule in both directions
        (``forward`` is kept for the callers' symmetry)."""
        del forward
        with np.errstate(all="ignore"):
            pos = (np.log(a - 1.0) - math.log(_ELL_X0)) / self.step[:, None]
        k = np.ceil(pos + 1e-9)
        col = np.where(k < 0, 1, 1 + k)
        out_of_range = col > _ELL_GRID
        col = np.clip(np.nan_to_num(col, nan=0.0), 0, _ELL_GRID).astype(int)
        vals = np.take_along_axis(self.values, col, axis=1)
        return np.where(out_of_range, 0.0, vals)


@dataclass(frozen=True, slots=True)
class _Rows:
    """The curves of a batch of rows: the table of the mean term's denominator, the leverage,
    ``kappa``, ``rho`` and the per-target sums ``sum_(t<T) R_t^2 / sigma_p(t)^2`` and
    ``R_T^2 / sigma_p(T)^2``."""

    ell: _EllTable
    h: np.ndarray
    kappa: np.ndarray
    rho: np.ndarray
    mid: np.ndarray
    fin: np.ndarray
    tilt: TiltFacts | None = None
    """The run under ``X`` of each row's target, for the averaged mean terms (None: not needed)."""

    def part(self, sl: slice) -> _Rows:
        """Rows ``sl``."""
        return _Rows(ell=_EllTable(step=self.ell.step[sl], values=self.ell.values[sl]), h=self.h[sl],
                     kappa=self.kappa[sl], rho=self.rho[sl], mid=self.mid[sl], fin=self.fin[sl],
                     tilt=None if self.tilt is None else self.tilt.part(sl))


def _cov_part(rows: _Rows, a: np.ndarray, forward: bool) -> np.ndarray:
    """The covariance part of one step, ``f_a(1 + kappa) + f_a(1 - h)`` or its reverse (Section 5)."""
    h, kap = rows.h[:, None], rows.kappa[:, None]
    if forward:
        return _f(a, 1.0 + kap) + _f(a, 1.0 - h)
    return _f(a, 1.0 / (1.0 + kap)) + _f(a, 1.0 / (1.0 - h))


def _averaged_curve(rows: _Rows, T: int, alpha: float, forward: bool, d: int):
    """The Renyi bound ``a -> D_a`` of each row with the mean terms averaged over ``u``
    (:mod:`.tilted_mean`; docs/upper-bound.md, Section 8); no truncation."""
    def renyi(a: np.ndarray) -> np.ndarray:
        mean = averaged_mean_term(a, rows.ell.lower(a, forward), rows.rho[:, None], rows.tilt, alpha,
                                  forward, d)
        out = T * _cov_part(rows, a, forward) + mean
        return np.where(np.isnan(out), np.inf, out)
    return renyi


def _curve(rows: _Rows, T: int, alpha: float, forward: bool):
    """The Renyi bound ``a -> D_a`` of each row (module docstring; docs/upper-bound.md, Section 4)."""
    def renyi(a: np.ndarray) -> np.ndarray:
        cov = _cov_part(rows, a, forward)
        ell = rows.ell.lower(a, forward)
        mid = rows.mid[:, None]
        with np.errstate(all="ignore"):
            mean_mid = np.where(mid > 0, mid / np.where(ell > 0, ell, np.nan), 0.0)
        mean_mid = np.where((mid > 0) & ~(ell > 0), np.inf, mean_mid)
        mean = 0.5 * a * alpha ** 2 * (mean_mid + rows.rho[:, None] ** 2 * rows.fin[:, None])
        out = T * cov + mean
        return np.where(np.isnan(out), np.inf, out)
    return renyi


# --- the bound per target -----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _TargetFacts:
    """What every row of one target shares: its Gram matrix, rows, leverages and ``kappa``, or the
    reason why no finite bound is proven."""

    target: int
    rows: np.ndarray
    A: np.ndarray
    h: np.ndarray
    kappa: float
    lam_min: float
    reason: str | None


def _target_facts(model: NoisyPowerIteration, j: int) -> _TargetFacts:
    """``A = X_j^T X_j``, the leverages ``h_r = x_r^T A^{-1} x_r`` and ``kappa = 1 / lambda_min(A)``
    (docs/upper-bound.md, Section 3); an infinite bound when ``A`` or some ``A - x x^T`` is singular,
    or some ``sigma_p(t) = 0``."""
    rows = np.arange(model.offsets[j], model.offsets[j + 1])
    A = model.gram(j)
    lam = np.linalg.eigvalsh(A)
    scale = max(float(lam[-1]), 1.0)
    reason = None
    h = np.zeros(rows.size)
    if rows.size == 0 or lam[0] <= 1e-12 * scale:
        reason = (f"X_j^T X_j of agent {j} is singular: a replacement outside its range makes the two "
                  "laws mutually singular (every divergence infinite)")
    else:
        h = np.einsum("ra,ra->r", model.X[rows], np.linalg.solve(A, model.X[rows].T).T)
        if np.max(h) >= 1.0 - 1e-12:
            r = int(rows[int(np.argmax(h))])
            reason = (f"row {r} has leverage 1 in agent {j}'s block: replacing it can make X_j'^T X_j' "
                      "singular (every divergence infinite)")
    if reason is None and np.any(model.sigma_p == 0):
        reason = "some sigma_p(t) is 0: a release without noise, the divergence is infinite"
    return _TargetFacts(target=j, rows=rows, A=A, h=np.clip(h, 0.0, 1.0),
                        kappa=1.0 / float(lam[0]) if lam[0] > 0 else math.inf,
                        lam_min=float(lam[0]), reason=reason)


def _radii(cov: _UCovariances, j: int, mass: float, forward: bool) -> np.ndarray:
    """``R_1 .. R_T`` with ``Pr(||u_t|| > R_t) <= mass`` under ``X`` (forward, exact covariance) or under
    every neighbour (reverse, the uniform bound)."""
    if forward:
        return chernoff_radius(cov.eigs[j], np.ones(cov.eigs.shape[-1]), mass)
    lam, tau = cov.lam_bar[j], cov.tau_bar[j]
    weights = np.where(lam > 0, tau / np.where(lam > 0, lam, 1.0), 0.0)
    return chernoff_radius(lam[:, None], weights[:, None], mass)


def _direction(model: NoisyPowerIteration, facts: list[_TargetFacts], cov: _UCovariances,
               delta: float, rho_of, forward: bool, mean_terms: str = "best") -> list[tuple]:
    """Per target: ``(epsilon, order, share index, radii per share)`` of each row, each row's epsilon
    minimised over the truncation shares and the averaged mean terms (share index ``_AVERAGED``), as
    ``mean_terms`` allows. Every target's rows are converted in one batch per share."""
    T, s_p = model.T, model.sigma_p
    live = [tf for tf in facts if tf.reason is None]
    eig = {tf.target: np.linalg.eigh(tf.A) for tf in live}
    radii = {tf.target: [_radii(cov, tf.target, share * delta / T, forward)
                         for share in _TRUNCATION_SHARES] for tf in live}
    sizes = [tf.rows.size for tf in live]
    best = np.full(sum(sizes), np.inf)
    order = np.full(best.size, np.nan)
    which = np.full(best.size, _AVERAGED if mean_terms == "averaged" else 0, dtype=int)
    shares = () if mean_terms == "averaged" else _TRUNCATION_SHARES
    if live:
        x = np.concatenate([model.X[tf.rows] for tf in live])
        lam = np.concatenate([np.broadcast_to(eig[tf.target][0], (tf.rows.size, model.d))
                              for tf in live])
        xh = np.concatenate([model.X[tf.rows] @ eig[tf.target][1] for tf in live])
        h = np.concatenate([tf.h for tf in live])
        kappa = np.repeat([tf.kappa for tf in live], sizes)
        a_max = (np.where(h > 0, 1.0 / np.where(h > 0, h, 1.0), np.inf) if forward
                 else np.repeat([1.0 + tf.lam_min for tf in live], sizes))
        table = _EllTable.build(lam, xh, np.minimum(a_max, 1e8) - 1.0, forward)
        for si, share in enumerate(shares):
            R = [radii[tf.target][si] for tf in live]
            mid = np.repeat([float(np.sum(r[:-1] ** 2 / s_p[:-1] ** 2)) for r in R], sizes)
            fin = np.repeat([float(r[-1] ** 2 / s_p[-1] ** 2) for r in R], sizes)
            batch = _Rows(ell=table, h=h, kappa=kappa, rho=rho_of(x), mid=mid, fin=fin)
            eps, a = _convert(batch, T, model.alpha, forward, (1.0 - share) * delta, a_max)
            take = eps < best
            best, order = np.where(take, eps, best), np.where(take, a, order)
            which = np.where(take, si, which)
        if mean_terms != "truncated":
            batch = _Rows(ell=table, h=h, kappa=kappa, rho=rho_of(x), mid=np.zeros(h.size),
                          fin=np.zeros(h.size))
            eps, a = _averaged(model, live, cov, batch, delta, forward, a_max)
            take = eps < best
            best, order = np.where(take, eps, best), np.where(take, a, order)
            which = np.where(take, _AVERAGED, which)
    out, start = [], 0
    for tf in facts:
        if tf.reason is not None:
            out.append((np.full(tf.rows.size, np.inf), np.full(tf.rows.size, np.nan),
                        np.zeros(tf.rows.size, dtype=int), None))
            continue
        sl = slice(start, start + tf.rows.size)
        start += tf.rows.size
        out.append((best[sl], order[sl], which[sl], radii[tf.target]))
    return out


def _averaged(model: NoisyPowerIteration, live: list[_TargetFacts], cov: _UCovariances,
              batch: _Rows, delta: float, forward: bool,
              a_max: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Epsilon at ``delta`` and order per row of the bound whose mean terms are averaged over ``u``
    (docs/upper-bound.md, Section 8); every row carries its target's run under ``X``."""
    owner = np.repeat([tf.target for tf in live], [tf.rows.size for tf in live])
    rows = replace(batch, tilt=cov.tilt(owner, model.sigma_p))

    def curve(part: _Rows):
        return _averaged_curve(part, model.T, model.alpha, forward, model.d)
    return _convert(rows, model.T, model.alpha, forward, delta, a_max, curve)


def _convert(rows: _Rows, T: int, alpha: float, forward: bool, delta: float,
             a_max: np.ndarray, curve=None) -> tuple[np.ndarray, np.ndarray]:
    """Epsilon at ``delta`` and the order used, per row, in chunks of ``_ROW_CHUNK`` rows;
    ``curve(rows)`` (default: the truncated curve, :func:`_curve`) gives a chunk's Renyi bound."""
    eps, orders = [], []
    for s in range(0, rows.h.size, _ROW_CHUNK):
        sl = slice(s, s + _ROW_CHUNK)
        part = rows.part(sl)
        renyi = _curve(part, T, alpha, forward) if curve is None else curve(part)
        e, a = rdp_to_epsilon_batch(renyi, delta, a_max=a_max[sl], with_orders=True)
        eps.append(e)
        orders.append(a)
    return np.concatenate(eps), np.concatenate(orders)


def averaged_renyi_bound(model: NoisyPowerIteration, row: int, orders: np.ndarray, *,
                         adjacency: str = "bounded", forward: bool = True) -> np.ndarray:
    """The Renyi bound with averaged mean terms (docs/upper-bound.md, Section 8) of one row: for every
    neighbour that replaces ``row`` and every order ``a`` in ``orders``, ``D_a`` of the all-but-one
    coalition's view (``P`` = law under ``X``, ``Q`` under ``X'``; ``D_a(P || Q)`` when ``forward``, else
    ``D_a(Q || P)``) is at most the returned value (``inf`` where none is proven).

    Parameters
    ----------
    model : NoisyPowerIteration
        The mechanism and the data.
    row : int
        Global row index.
    orders : ndarray
        Orders ``a > 1``.
    adjacency : str
        ``bounded`` or ``replace-one``.
    forward : bool
        The direction.

    Returns
    -------
    ndarray
        One value per order.
    """
    if adjacency not in ADJACENCIES:
        raise ConfigError(f"adjacency must be one of {', '.join(ADJACENCIES)}, got {adjacency!r}",
                          field="adjacency")
    j = int(np.searchsorted(model.offsets, row, side="right") - 1)
    tf = _target_facts(model, j)
    a = np.atleast_1d(np.asarray(orders, dtype=float))[None, :]
    if tf.reason is not None:
        return np.full(a.shape[1], np.inf)
    x = model.X[row:row + 1]
    rho = np.array([1.0 if adjacency == "bounded" else 1.0 + float(np.linalg.norm(x))])
    rho_all = np.full(model.m, max(rho[0], 1.0))
    lam, vec = np.linalg.eigh(tf.A)
    i = int(np.flatnonzero(tf.rows == row)[0])
    a_top = float(a.max()) - 1.0
    table = _EllTable.build(lam[None], x @ vec, np.array([max(a_top, 1e-6) * 2.0]), forward)
    rows = _Rows(ell=table, h=tf.h[i:i + 1], kappa=np.array([tf.kappa]), rho=rho,
                 mid=np.zeros(1), fin=np.zeros(1))
    rows = replace(rows, tilt=_u_covariances(model, rho_all).tilt(np.array([j]), model.sigma_p))
    return _averaged_curve(rows, model.T, model.alpha, forward, model.d)(a)[0]


def _prepared(model: NoisyPowerIteration, adjacency: str, targets: Sequence[int] | None,
              mean_terms: str) -> tuple[Callable[[np.ndarray], np.ndarray], _UCovariances,
                                        list[_TargetFacts]]:
    """What the bound needs at every delta, the settings checked: the norm factor ``rho`` of a
    replacement row, the covariances of the ``u_t`` and each target's facts."""
    if adjacency not in ADJACENCIES:
        raise ConfigError(f"adjacency must be one of {', '.join(ADJACENCIES)}, got {adjacency!r}",
                          field="adjacency")
    if mean_terms not in MEAN_TERMS:
        raise ConfigError(f"mean_terms must be one of {', '.join(MEAN_TERMS)}, got {mean_terms!r}",
                          field="mean_terms")
    targets = list(range(model.m)) if targets is None else [int(j) for j in targets]
    for j in targets:
        if not 0 <= j < model.m:
            raise ConfigError(f"targets: agent {j} does not exist (m = {model.m})", field="targets")
    norms = np.linalg.norm(model.X, axis=1)
    if adjacency == "bounded":
        def rho_of(x: np.ndarray) -> np.ndarray:
            return np.ones(x.shape[0])
        rho_all = np.ones(model.m)
    else:
        def rho_of(x: np.ndarray) -> np.ndarray:
            return 1.0 + np.linalg.norm(x, axis=1)
        rho_all = np.array([1.0 + (norms[model.offsets[i]:model.offsets[i + 1]].max(initial=0.0))
                            for i in range(model.m)])
    return rho_of, _u_covariances(model, rho_all), [_target_facts(model, j) for j in targets]


def certified_upper_bounds(model: NoisyPowerIteration, delta: float, *, adjacency: str = "bounded",
                           targets: Sequence[int] | None = None,
                           mean_terms: str = "best") -> dict[int, CertifiedBound]:
    """A proven ``epsilon`` at ``delta`` for every target (docs/upper-bound.md).

    For target ``j`` and every neighbour ``X'`` of this ``X`` that replaces one row of ``X_j`` (allowed
    by ``adjacency``), and every view that does not contain ``j`` (``COVERS``), both
    ``Pr_X(V in S) <= e^eps Pr_X'(V in S) + delta`` and the reverse hold. Per row ``r`` and direction,
    ``epsilon = min over shares s of CKS(D_a bound, (1 - s) delta)`` with radii certifying a truncation
    mass ``s delta`` (module docstring); the target's value is the largest over rows and directions.

    Parameters
    ----------
    model : NoisyPowerIteration
        The mechanism and the data.
    delta : float
        In ``(0, 1)``.
    adjacency : str
        ``bounded`` (``||x'|| <= 1``, ``||x - x'|| <= 1``) or ``replace-one`` (``||x'|| <= 1``).
    targets : sequence of int, optional
        Default: every agent.
    mean_terms : str
        ``best`` (default): per row and direction the smaller of the two bounds below, each valid;
        ``truncated``: the mean terms at the worst ``u_t`` of truncation balls (Section 5);
        ``averaged``: averaged over the Gaussian ``u_t`` (Section 8.1).

    Returns
    -------
    dict
        ``{j: CertifiedBound}``.
    """
    if not (isinstance(delta, (int, float)) and 0 < delta < 1):
        raise ConfigError(f"delta must be in (0, 1), got {delta!r}", field="delta")
    rho_of, cov, facts = _prepared(model, adjacency, targets, mean_terms)
    fwd = _direction(model, facts, cov, delta, rho_of, True, mean_terms)
    rev = _direction(model, facts, cov, delta, rho_of, False, mean_terms)
    return {tf.target: _assemble(tf, f, r, delta, adjacency) for tf, f, r in zip(facts, fwd, rev,
                                                                                  strict=True)}


def certified_delta_upper(model: NoisyPowerIteration, epsilons: Sequence[float], *,
                          adjacency: str = "bounded", targets: Sequence[int] | None = None,
                          mean_terms: str = "best", lowest: Mapping[int, Sequence[float]] | None = None
                          ) -> dict[int, tuple[float, ...]]:
    """The delta the bound proves at each epsilon, per target: ``inf {delta : b_j(delta) <= epsilon}``.

    ``b_j(delta)`` is :func:`certified_upper_bounds`'s epsilon of target ``j`` at ``delta``; it is
    inverted by :func:`~dpgossip.privacy.delta_from_bound.delta_upper` (a bisection whose every answer
    is a delta at which the bound was computed and found ``<= epsilon``, or the trivial 1). The
    delta-free parts of the bound (the covariances of the ``u_t``, the targets' facts) are computed once.

    Parameters
    ----------
    model, adjacency, targets, mean_terms
        As :func:`certified_upper_bounds`.
    epsilons : sequence of float
        The epsilons at which a delta is wanted.
    lowest : mapping, optional
        ``{j: (delta_1, ...)}``: per target and epsilon a delta the bound cannot prove less than (the
        exact delta of a neighbour found at that epsilon); it narrows the bisection.

    Returns
    -------
    dict
        ``{j: (delta_upper at epsilons[0], ...)}``, each in ``(0, 1]``.
    """
    rho_of, cov, facts = _prepared(model, adjacency, targets, mean_terms)
    out: dict[int, tuple[float, ...]] = {}
    for tf in facts:
        seen: dict[float, float] = {}

        def bound_at(delta: float, tf: _TargetFacts = tf, seen: dict[float, float] = seen) -> float:
            if delta not in seen:
                fwd = _direction(model, [tf], cov, delta, rho_of, True, mean_terms)[0]
                rev = _direction(model, [tf], cov, delta, rho_of, False, mean_terms)[0]
                seen[delta] = _assemble(tf, fwd, rev, delta, adjacency).epsilon
            return seen[delta]
        low = (lowest or {}).get(tf.target) or (SMALLEST,) * len(epsilons)
        out[tf.target] = tuple(delta_upper(bound_at, float(e), float(lo))
                               for e, lo in zip(epsilons, low, strict=True))
    return out


def _assemble(tf: _TargetFacts, fwd: tuple, rev: tuple, delta: float,
              adjacency: str) -> CertifiedBound:
    """The target's :class:`CertifiedBound` from both directions' per-row values."""
    ef, er = float(np.max(fwd[0], initial=-np.inf)), float(np.max(rev[0], initial=-np.inf))
    forward_binds = ef >= er
    eps_rows, orders, which, radii = fwd if forward_binds else rev
    if tf.reason is not None or tf.rows.size == 0:
        return CertifiedBound(target=tf.target, delta=delta, epsilon=math.inf, adjacency=adjacency,
                              epsilon_forward=math.inf, epsilon_reverse=math.inf, worst_row=-1,
                              order=math.nan, radii_forward=(), radii_reverse=(),
                              truncation_forward=math.nan, truncation_reverse=math.nan,
                              reason=tf.reason or "the target has no rows")
    i = int(np.argmax(eps_rows))
    eps = max(ef, er)

    def spent(side: tuple) -> tuple[tuple[float, ...], float]:
        k = int(side[2][i])
        if k == _AVERAGED:
            return (), 0.0
        return tuple(float(v) for v in side[3][k]), _TRUNCATION_SHARES[k] * delta
    (radii_f, trunc_f), (radii_r, trunc_r) = spent(fwd), spent(rev)
    return CertifiedBound(
        target=tf.target, delta=delta, epsilon=eps, adjacency=adjacency, epsilon_forward=ef,
        epsilon_reverse=er, worst_row=int(tf.rows[i]), order=float(orders[i]),
        radii_forward=radii_f, radii_reverse=radii_r, truncation_forward=trunc_f,
        truncation_reverse=trunc_r,
        mean_terms="averaged" if int(which[i]) == _AVERAGED else "truncated",
        reason=None if math.isfinite(eps) else "no Renyi order gives a finite bound")
