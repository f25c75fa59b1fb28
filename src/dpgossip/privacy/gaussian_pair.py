"""Exact privacy of two Gaussians ``P = N(mu_0, S_0)``, ``Q = N(mu_1, S_1)`` (docs/model.md, Section 4).

One factorisation reduces the pair to the generalised eigenvalues ``lam_i`` of the pencil
``(S_1, S_0)`` and the whitened mean difference ``b = V^T L^{-1} (mu_0 - mu_1)`` (``S_0 = L L^T``,
``L^{-1} S_1 L^{-T} = V diag(lam) V^T``).  Everything after that costs ``O(#{lam_i != 1})``:

* the Renyi divergence, Eqs. (33)-(34) of Campbell et al., in whitened coordinates

      D_a(P||Q) = (a/2) sum b_i^2 / (a lam_i + 1 - a)
                  - 1/(2(a-1)) sum [ ln(a lam_i + 1 - a) - a ln lam_i ],

  finite iff ``a < a_max = min_{lam_i < 1} 1/(1 - lam_i)``; ``D_a(Q||P)`` is the same formula for
  the swapped data ``(1/lam, b/sqrt(lam))`` (whitening by ``S_1`` instead of ``S_0``);
* the privacy loss ``L = ln p/q``, a generalised chi-square variable, with exact tails and
  hockey-stick divergence (:mod:`dpgossip.privacy.plrv`);
* Chernoff and RDP bounds (:mod:`dpgossip.privacy.conversions`) from ``K(s) = s D_{1+s}(P||Q)``.

Supports: Gaussians with different supports (column spaces of the covariances, or a mean
difference leaving the common one) are mutually singular, so every divergence is infinite and every
hockey-stick divergence is exactly 1.  Equal but rank-deficient supports are reduced exactly to an
orthonormal basis of the common range.  Nothing is projected silently.

Numerical rank rule (``rank_rtol``, default ``1e-10``): an eigenvalue of a covariance at most
``rank_rtol`` times its largest counts as zero.  ``S_0`` is taken as full rank without an
eigendecomposition when its Cholesky factorisation succeeds with LAPACK's reciprocal condition
estimate (``dpocon``, 1-norm) above ``rank_rtol``; ``S_1`` then when ``rcond(S_0) lam_min/lam_max``
(a bound on its reciprocal condition number) or its own estimate is above ``rank_rtol``.  In all
other cases both spectra are computed and the rule is applied exactly.  Generalised eigenvalues with
``|lam - 1| <= unit_tol`` (default ``1e-12``) are set to one: their mean components form one
Gaussian term.
"""

from __future__ import annotations

__all__ = ["GaussianPair", "SupportMismatch", "rdp_epsilons", "rdp_deltas"]

import math
import numbers
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

import numpy as np
import scipy.linalg as sla
from scipy import optimize

import dpgossip.privacy.plrv as _plrv
from dpgossip.errors import ConfigError, did_you_mean
from dpgossip.privacy.conversions import (
    _check_delta,
    _check_eps,
    chernoff_bound,
)
from dpgossip.privacy.plrv import QuadraticFormLaw, WhitenedPair
from dpgossip.privacy.rdp_batch import whitened_rdp_deltas, whitened_rdp_epsilons

Direction = Literal["PQ", "QP"]
Method = Literal["exact", "rdp", "chernoff"]
METHODS: tuple[str, ...] = ("exact", "rdp", "chernoff")
"""The conversions from a pair's divergences to (epsilon, delta)."""
_METHODS = METHODS
_DIRECTIONS = ("PQ", "QP")
_EPS_MAX = 1e6  # above this, epsilon(delta) brackets from the RDP epsilon instead of doubling from 1
_MAX_DOUBLINGS = 64  # epsilon(delta) is inf when delta stays above the target 2^64 times the RDP value
_ACCURACY_WARN = 1e-8  # warn when an exact value's error estimate exceeds this
_MACH = float(np.finfo(float).eps)


@dataclass(frozen=True, eq=False)
class SupportMismatch:
    """Why the supports of ``P`` and ``Q`` differ: a unit ``direction`` (original coordinates, or
    whitened ones for :meth:`GaussianPair.from_whitened`) and the offending ``amount``."""

    kind: Literal["cov1 outside cov0", "cov0 outside cov1", "mean outside support"]
    direction: np.ndarray
    amount: float

    def __str__(self) -> str:
        v = np.array2string(self.direction, precision=4, threshold=12, max_line_width=200)
        if self.kind == "cov1 outside cov0":
            what = f"cov1 has variance {self.amount:.6g} along it, cov0 has none"
        elif self.kind == "cov0 outside cov1":
            what = f"cov0 has variance {self.amount:.6g} along it, cov1 has none"
        else:
            what = f"mean0 - mean1 has a component {self.amount:.6g} along it, outside the support"
        return f"supports differ: direction v = {v}: {what}"


def _as_vector(x: object, name: str) -> np.ndarray:
    try:
        v = np.array(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{name} must be a vector of numbers, got {x!r}") from exc
    if v.ndim != 1 or v.size == 0 or not np.all(np.isfinite(v)):
        raise ConfigError(f"{name} must be a nonempty finite 1-D vector, got shape {v.shape} "
                          f"with values {np.array2string(v, threshold=6)}")
    return v


def _as_cov(S: object, name: str, k: int) -> np.ndarray:
    try:
        A = np.array(S, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{name} must be a matrix of numbers, got {S!r}") from exc
    if A.shape != (k, k) or not np.all(np.isfinite(A)):
        raise ConfigError(f"{name} must be a finite {k} x {k} matrix (k = len(mean0)), got shape "
                          f"{A.shape}")
    asym = float(np.max(np.abs(A - A.T)))
    scale = float(np.max(np.abs(A)))
    if asym > 1e-10 * scale:
        raise ConfigError(f"{name} must be symmetric, got max |S - S^T| = {asym:.3g} for "
                          f"max |S| = {scale:.3g} (allowed: relative asymmetry <= 1e-10)")
    return 0.5 * (A + A.T)


def _cholesky_if_well_conditioned(S: np.ndarray, rtol: float) -> tuple[np.ndarray, float] | None:
    """Upper Cholesky factor ``U`` (``S = U^T U``) and LAPACK's reciprocal condition estimate, or
    None if ``S`` is not positive definite or ``rcond <= rtol``."""
    U, info = sla.lapack.dpotrf(S, lower=0, clean=1)
    if info != 0:
        return None
    rcond, info = sla.lapack.dpocon(U, float(np.max(np.sum(np.abs(S), axis=0))))
    return (U, float(rcond)) if info == 0 and rcond > rtol else None


def _whiten(U0: np.ndarray, S0: np.ndarray, S1: np.ndarray, dmu: np.ndarray,
            unit_tol: float) -> WhitenedPair:
    """Whitened data of a pair with ``S_0 = U0^T U0`` positive definite.

    ``W = L^{-1} (S_1 - S_0) L^{-T}`` (``L = U0^T``) has eigenvalues ``lam - 1``.  When
    ``S_1 - S_0`` has low rank ``r <= 32`` (verified: the residual's Frobenius norm is within
    ``16 eps max(||S_0||_F, ||S_1||_F)``, the rounding level of the inputs), a range finder gives
    ``S_1 - S_0 = Q M Q^T`` and only an ``r x r`` eigenproblem is solved; otherwise ``W`` is formed
    and diagonalised.
    """
    k = S0.shape[0]
    c = sla.solve_triangular(U0, dmu, trans="T")  # L^{-1} dmu
    D = S1 - S0
    tol = 16 * _MACH * max(np.linalg.norm(S0), np.linalg.norm(S1))
    rng = np.random.default_rng(0)  # only speed depends on it: the residual check is exact
    for p in (8, 32):
        if 2 * p >= k:
            break
        Q, _ = np.linalg.qr(D @ rng.standard_normal((k, p)))
        if np.linalg.norm(D - Q @ (Q.T @ D)) > tol:
            continue
        M = Q.T @ D @ Q
        H = sla.solve_triangular(U0, Q, trans="T")  # L^{-1} Q
        Qh, Rh = np.linalg.qr(H)
        mu, Z = np.linalg.eigh(Rh @ (0.5 * (M + M.T)) @ Rh.T)
        b = Z.T @ (Qh.T @ c)
        rest = c - Qh @ (Qh.T @ c)
        return _merge(mu, b, float(rest @ rest), unit_tol)
    X = sla.solve_triangular(U0, D, trans="T")
    W = sla.solve_triangular(U0, X.T, trans="T")
    mu, V = np.linalg.eigh(0.5 * (W + W.T))
    return _merge(mu, V.T @ c, 0.0, unit_tol)


_LAM_ZERO = 1e-10
"""A generalised eigenvalue ``lam <= _LAM_ZERO`` (or ``>= 1/_LAM_ZERO``) is a support mismatch: ``Q``
(or ``P``) has no variance, relative to the other, along that whitened direction. A true zero reaches
:meth:`GaussianPair.from_whitened` as a rounding residue (about 1e-17 when a message covariance is
rank-deficient, e.g. fewer rows than columns), and ``1 + (lam - 1)`` rounds it to exactly 0 or keeps
it with no correct digit. The threshold matches the default ``rank_rtol``; calling such a pair
mutually singular (every ``delta`` 1, every divergence ``inf``) can only over-report."""


def _whitened_mismatch(lam: np.ndarray) -> SupportMismatch | None:
    """The support mismatch of a whitened pair with eigenvalues ``lam`` (``None`` if supports agree)."""
    for kind, hits, amount in (
        ("cov0 outside cov1", np.flatnonzero(lam <= _LAM_ZERO), 1.0),
        ("cov1 outside cov0", np.flatnonzero(lam >= 1.0 / _LAM_ZERO), None),
    ):
        if hits.size:
            e = np.zeros(lam.size)
            e[hits[0]] = 1.0
            return SupportMismatch(kind, e, float(lam[hits[0]]) if amount is None else amount)
    return None


def _merge(mu: np.ndarray, b: np.ndarray, b0sq: float, unit_tol: float) -> WhitenedPair:
    """Eigenvalues ``lam = 1 + mu``; those with ``|mu| <= unit_tol`` join the Gaussian term."""
    unit = np.abs(mu) <= unit_tol
    return WhitenedPair(1.0 + mu[~unit], b[~unit], b0sq + float(np.sum(b[unit] ** 2)))


def _psd_spectrum(S: np.ndarray, name: str, rtol: float,
                  vectors: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """Eigenvalues (ascending) and optionally eigenvectors; :class:`ConfigError` unless PSD."""
    s, U = np.linalg.eigh(S) if vectors else (np.linalg.eigvalsh(S), None)
    top = float(np.max(np.abs(s)))
    if s[0] < -rtol * top:
        raise ConfigError(f"{name} must be positive semi-definite, got smallest eigenvalue "
                          f"{s[0]:.6g} (largest {s[-1]:.6g})")
    return s, U


def _reduce(mean0: np.ndarray, S0: np.ndarray, mean1: np.ndarray, S1: np.ndarray,
            rtol: float, unit_tol: float) -> WhitenedPair | SupportMismatch:
    """Support check, exact reduction to the common range, and whitening."""
    dmu = mean0 - mean1
    chol0 = _cholesky_if_well_conditioned(S0, rtol)
    if chol0 is not None:
        w = _whiten(chol0[0], S0, S1, dmu, unit_tol)
        if np.all(w.lam > 0):
            # S_1 = L diag(lam) L^T in the eigenbasis: cond(S_1) <= cond(S_0) lam_max / lam_min,
            # so S_1 is well conditioned without its own factorisation when this is small enough
            lam = np.append(w.lam, 1.0) if w.lam.size < S0.shape[0] else w.lam
            if chol0[1] * float(np.min(lam) / np.max(lam)) > rtol \
                    or _cholesky_if_well_conditioned(S1, rtol) is not None:
                return w
    s0, E0 = _psd_spectrum(S0, "cov0", rtol, vectors=True)
    s1, _ = _psd_spectrum(S1, "cov1", rtol, vectors=False)
    assert E0 is not None
    top0, top1 = max(float(s0[-1]), 0.0), max(float(s1[-1]), 0.0)
    keep = s0 > rtol * top0 if top0 > 0 else np.zeros(s0.size, dtype=bool)
    R, N = E0[:, keep], E0[:, ~keep]
    if N.shape[1]:
        e, v = np.linalg.eigh(N.T @ S1 @ N)
        if e[-1] > rtol * top1:
            return SupportMismatch("cov1 outside cov0", N @ v[:, -1], float(e[-1]))
    S1r = R.T @ S1 @ R
    weakest = np.zeros(s0.size)
    if R.shape[1]:
        e, v = np.linalg.eigh(0.5 * (S1r + S1r.T))
        weakest = R @ v[:, 0]
        if e[0] <= rtol * top1:
            return SupportMismatch("cov0 outside cov1", weakest, float(s0[keep] @ v[:, 0] ** 2))
    out = N.T @ dmu
    gap = float(np.min(s0[keep])) if R.shape[1] else 1.0
    mu_tol = 16 * _MACH * (max(np.linalg.norm(mean0), np.linalg.norm(mean1))
                           + math.sqrt(s0.size) * np.linalg.norm(dmu) * max(top0, gap) / gap)
    if N.shape[1] and np.linalg.norm(out) > mu_tol:
        size = float(np.linalg.norm(out))
        return SupportMismatch("mean outside support", N @ out / size, size)
    if not R.shape[1]:
        return WhitenedPair(np.zeros(0), np.zeros(0), 0.0)
    # exact reduction to the common range: S_0 -> diag(s0[keep]) (Cholesky factor: its root)
    w = _whiten(np.diag(np.sqrt(s0[keep])), np.diag(s0[keep]), 0.5 * (S1r + S1r.T), R.T @ dmu,
                unit_tol)
    if np.any(w.lam <= 0):  # rounding made S_1 singular on the common range
        return SupportMismatch("cov0 outside cov1", weakest, float(np.min(s0[keep])))
    return w


def _check_direction(direction: object) -> Direction:
    if direction not in _DIRECTIONS:
        hint = did_you_mean(str(direction), list(_DIRECTIONS))
        raise ConfigError(f"direction must be 'PQ' or 'QP', got {direction!r}{hint}")
    return direction  # type: ignore[return-value]


def _check_method(method: object) -> Method:
    if method not in _METHODS:
        hint = did_you_mean(str(method), list(_METHODS))
        raise ConfigError(f"method must be one of {', '.join(_METHODS)}, got {method!r}{hint}")
    return method  # type: ignore[return-value]


def _check_tolerance(name: str, value: object) -> None:
    if not (isinstance(value, numbers.Real) and 0 <= value < 1):
        raise ConfigError(f"{name} must be in [0, 1), got {value!r}")


def _check_order(order: object) -> float:
    if not (isinstance(order, numbers.Real) and not isinstance(order, bool)
            and math.isfinite(order) and order > 1):
        raise ConfigError(f"order must be a finite number > 1, got {order!r}")
    return float(order)


@dataclass(frozen=True, eq=False)
class GaussianPair:
    """``P = N(mean0, cov0)`` and ``Q = N(mean1, cov1)`` in ``R^k``, factorised once.

    Parameters
    ----------
    mean0, cov0, mean1, cov1
        Means (``k``) and symmetric positive semi-definite covariances (``k x k``).  ``None`` only
        in pairs made by :meth:`from_whitened`.
    rank_rtol : float
        Relative eigenvalue threshold of the numerical rank (module docstring).
    unit_tol : float
        Generalised eigenvalues within ``unit_tol`` of 1 are set to 1.

    Notes
    -----
    Directions: ``"PQ"`` is about ``P || Q`` (the loss ``L = ln p/q`` under ``P``), ``"QP"`` about
    ``Q || P``.  With different supports the pair is mutually singular: Renyi divergences and KL
    are ``inf``, hockey-stick divergences and PDP tails are exactly 1 for every ``epsilon`` (so
    :meth:`delta` is 1.0 for every method and :meth:`epsilon` is ``inf``), and
    :attr:`support_mismatch` names the offending direction.
    """

    mean0: np.ndarray | None
    cov0: np.ndarray | None
    mean1: np.ndarray | None
    cov1: np.ndarray | None
    rank_rtol: float = field(default=1e-10, kw_only=True)
    unit_tol: float = field(default=1e-12, kw_only=True)
    _white: WhitenedPair | None = field(init=False, repr=False, default=None)
    _mismatch: SupportMismatch | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        _check_tolerance("rank_rtol", self.rank_rtol)
        _check_tolerance("unit_tol", self.unit_tol)
        mean0 = _as_vector(self.mean0, "mean0")
        k = mean0.size
        mean1 = _as_vector(self.mean1, "mean1")
        if mean1.size != k:
            raise ConfigError(f"mean1 must have length {k} like mean0, got {mean1.size}")
        cov0, cov1 = _as_cov(self.cov0, "cov0", k), _as_cov(self.cov1, "cov1", k)
        for name, arr in (("mean0", mean0), ("cov0", cov0), ("mean1", mean1), ("cov1", cov1)):
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        reduced = _reduce(mean0, cov0, mean1, cov1, self.rank_rtol, self.unit_tol)
        key = "_mismatch" if isinstance(reduced, SupportMismatch) else "_white"
        object.__setattr__(self, key, reduced)

    @classmethod
    def from_whitened(cls, lam: object, b: object, *, unit_tol: float = 1e-12) -> GaussianPair:
        """A pair given by generalised eigenvalues ``lam`` of ``(S_1, S_0)`` and whitened means.

        Equivalent to ``P = N(b, I)``, ``Q = N(0, diag(lam))``; costs ``O(len(lam))``, for callers
        that reduced the problem themselves (e.g. by a low-rank update).  ``lam_i = 0`` means that
        ``Q`` has no variance along whitened direction ``e_i``: the supports differ.  So does
        ``lam_i <= 1e-10`` or ``lam_i >= 1e10`` (:data:`_LAM_ZERO`: a rounding residue of a zero).

        Parameters
        ----------
        lam : array_like, shape (n,)
            Finite, ``>= 0``.  Omitted directions are taken to have ``lam = 1``, ``b = 0``.
        b : array_like, shape (n,)
            ``V^T L^{-1} (mu_0 - mu_1)``.
        """
        _check_tolerance("unit_tol", unit_tol)
        lam_v = np.array(lam, dtype=float).reshape(-1)
        b_v = np.array(b, dtype=float).reshape(-1)
        if lam_v.shape != b_v.shape or not (np.all(np.isfinite(lam_v)) and np.all(lam_v >= 0)
                                            and np.all(np.isfinite(b_v))):
            raise ConfigError(f"lam must be finite and >= 0 and b finite, of equal lengths, got "
                              f"lam={np.array2string(lam_v, threshold=8)}, "
                              f"b={np.array2string(b_v, threshold=8)}")
        pair = cls.__new__(cls)
        for name in ("mean0", "cov0", "mean1", "cov1"):
            object.__setattr__(pair, name, None)
        object.__setattr__(pair, "rank_rtol", 0.0)
        object.__setattr__(pair, "unit_tol", unit_tol)
        mismatch = _whitened_mismatch(lam_v)
        object.__setattr__(pair, "_mismatch", mismatch)
        object.__setattr__(pair, "_white", None if mismatch else _merge(lam_v - 1.0, b_v, 0.0, unit_tol))
        return pair

    @classmethod
    def from_mismatch(cls, mismatch: SupportMismatch) -> GaussianPair:
        """A pair whose supports differ, as found by a caller (e.g. a low-rank update whose column
        leaves the support of ``cov0``): every divergence is ``inf``, every ``delta`` is 1."""
        pair = cls.__new__(cls)
        for name in ("mean0", "cov0", "mean1", "cov1"):
            object.__setattr__(pair, name, None)
        object.__setattr__(pair, "rank_rtol", 0.0)
        object.__setattr__(pair, "unit_tol", 1e-12)
        object.__setattr__(pair, "_mismatch", mismatch)
        object.__setattr__(pair, "_white", None)
        return pair

    @classmethod
    def compose(cls, pairs: object) -> GaussianPair:
        """The pair of independent products: ``P_1 x ... x P_n`` against ``Q_1 x ... x Q_n``.

        For independent blocks the whitened coordinates of the product are the concatenation of
        those of the parts (``lam``, ``b``, and the squared norms ``b0sq`` of the eigenvalue-1
        parts add), so the product is represented exactly.  Every quantity of the product follows:

            D_a(P_1 x ... x P_n || Q_1 x ... x Q_n) = sum_l D_a(P_l || Q_l),   a > 1,
            KL(prod P_l || prod Q_l)                 = sum_l KL(P_l || Q_l),
            L = ln prod p_l / prod q_l               = sum_l L_l   (independent under P),

        and the exact hockey-stick divergence, the PDP tail and the Chernoff bounds of the composed
        pair are those of the summed loss (adaptive RDP composition when each part is the
        conditional law of a block given the earlier ones).

        Parameters
        ----------
        pairs : iterable of GaussianPair
            At least one part, built by any constructor (dense parts contribute their whitened
            form; their ``rank_rtol`` was applied when they were built).

        Returns
        -------
        GaussianPair
            A whitened pair (``mean0``... are ``None``) with ``unit_tol`` the largest of the
            parts'; if a part's supports differ, a pair with the first such part's
            :class:`SupportMismatch` (its direction is in that part's coordinates): every
            divergence is ``inf`` and every ``delta`` is 1.
        """
        try:
            parts = list(pairs)  # type: ignore[call-overload]
        except TypeError as exc:
            raise ConfigError(f"compose needs an iterable of GaussianPair, got {pairs!r}") from exc
        if not parts or not all(isinstance(p, GaussianPair) for p in parts):
            raise ConfigError(f"compose needs at least one GaussianPair, got "
                              f"{[type(p).__name__ for p in parts]}")
        for p in parts:
            if p._white is None:
                assert p._mismatch is not None
                return cls.from_mismatch(p._mismatch)
        whites = [p._white for p in parts]
        assert all(w is not None for w in whites)
        white = WhitenedPair(np.concatenate([w.lam for w in whites]),  # type: ignore[union-attr]
                             np.concatenate([w.b for w in whites]),  # type: ignore[union-attr]
                             float(sum(w.b0sq for w in whites)))  # type: ignore[union-attr]
        pair = cls.__new__(cls)
        for name in ("mean0", "cov0", "mean1", "cov1"):
            object.__setattr__(pair, name, None)
        object.__setattr__(pair, "rank_rtol", 0.0)
        object.__setattr__(pair, "unit_tol", max(p.unit_tol for p in parts))
        object.__setattr__(pair, "_mismatch", None)
        object.__setattr__(pair, "_white", white)
        return pair

    # ----------------------------------------------------------------- structure
    @property
    def support_mismatch(self) -> SupportMismatch | None:
        """None when the supports agree, else why they differ (``str()`` gives a description)."""
        return self._mismatch

    @property
    def eigenvalues(self) -> np.ndarray:
        """Nontrivial generalised eigenvalues ``lam`` of ``(S_1, S_0)`` (empty if none or if the
        supports differ)."""
        return self._white.lam.copy() if self._white is not None else np.zeros(0)

    @property
    def whitened_mean(self) -> tuple[np.ndarray, float]:
        """``(b, ||b_trivial||)``: whitened mean difference on the nontrivial eigenvectors and the
        norm of its part on the eigenvalue-1 space."""
        if self._white is None:
            return np.zeros(0), math.nan
        return self._white.b.copy(), math.sqrt(self._white.b0sq)

    def _pair(self, direction: object) -> WhitenedPair | None:
        d = _check_direction(direction)
        if self._white is None:
            return None
        return self._white if d == "PQ" else self._swapped

    @cached_property
    def _swapped(self) -> WhitenedPair:
        assert self._white is not None
        return self._white.swapped()

    def loss_law(self, direction: Direction = "PQ") -> QuadraticFormLaw:
        """Law of the privacy loss (``ln p/q`` under ``P`` for "PQ", ``ln q/p`` under ``Q`` for
        "QP"); :class:`ConfigError` when the supports differ (the loss is infinite)."""
        w = self._pair(direction)
        if w is None:
            raise ConfigError(f"the privacy loss is infinite: {self._mismatch}")
        return self._law(direction)

    def _law(self, direction: Direction) -> QuadraticFormLaw:
        cache = self.__dict__.setdefault("_laws", {})
        if direction not in cache:
            w = self._pair(direction)
            assert w is not None
            cache[direction] = w.loss_law()
        return cache[direction]

    def a_max(self, direction: Direction = "PQ") -> float:
        """Supremum of the orders with finite ``D_a`` (``min_{lam<1} 1/(1-lam)`` for "PQ", with
        ``1/lam`` for "QP"); 1.0 when the supports differ."""
        w = self._pair(direction)
        return 1.0 if w is None else w.a_max

    # ----------------------------------------------------------------- divergences
    def renyi(self, order: float, direction: Direction = "PQ") -> float:
        """Renyi divergence ``D_a(P||Q)`` ("PQ") or ``D_a(Q||P)`` ("QP") of order ``a > 1``.

        Eqs. (33)-(34) of Campbell et al. in whitened coordinates (module docstring);
        ``inf`` for ``a >= a_max`` (``S_a`` not positive definite) or different supports.
        """
        a = _check_order(order)
        w = self._pair(direction)
        return math.inf if w is None else w.renyi(a)

    def renyi_reason(self, order: float, direction: Direction = "PQ") -> str | None:
        """Why ``renyi(order, direction)`` is infinite, or None when it is finite."""
        a = _check_order(order)
        w = self._pair(direction)
        if w is None:
            return str(self._mismatch)
        if a >= w.a_max:
            first, second = ("S_1", "S_0") if direction == "PQ" else ("S_0", "S_1")
            verb = "exceeds" if a > w.a_max else "equals"
            return (f"order a={a:.10g} {verb} a_max={w.a_max:.10g} of the covariance ratio: "
                    f"S_a = a {first} + (1 - a) {second} is not positive definite")
        return None

    def kl(self, direction: Direction = "PQ") -> float:
        """KL divergence: ``(1/2)[tr(S_1^{-1} S_0) + dmu^T S_1^{-1} dmu - k + ln det S_1/det S_0]``
        for "PQ" (the ``a -> 1`` limit of :meth:`renyi`), in whitened coordinates."""
        w = self._pair(direction)
        return math.inf if w is None else w.kl()

    def log_mgf(self, s: float, direction: Direction = "PQ") -> float:
        """``K(s) = ln E e^{sL} = s D_{1+s}`` of the privacy loss, closed form; ``inf`` outside
        ``(-a_max(reverse), a_max - 1)``."""
        w = self._pair(direction)
        return math.inf if w is None else w.log_mgf(float(s))

    # ----------------------------------------------------------------- exact privacy
    def _exact(self, value: tuple[float, float], what: str) -> float:
        v, err = value
        if err > _ACCURACY_WARN:
            warnings.warn(f"{what}: numerical error estimate {err:.3g} exceeds {_ACCURACY_WARN:g}",
                          RuntimeWarning, stacklevel=3)
        return v

    def pdp_tail(self, epsilon: float, direction: Direction = "PQ") -> float:
        """Exact ``Pr_P(|L| > epsilon)`` (probabilistic DP, Campbell et al., Definition 2) by Imhof inversion.

        Absolute accuracy about ``1e-12`` (:meth:`plrv.QuadraticFormLaw.tail`); 1.0 when the
        supports differ.
        """
        eps = _check_eps(epsilon)
        if self._pair(direction) is None:
            return 1.0
        law = self._law(direction)
        if law.alpha.size == 0 and law.sigma == 0:  # P = Q: L = 0
            return float(abs(law.c) > eps)
        up, low = law.tail(eps), law.tail(-eps)  # continuous law: Pr(L < -eps) = Pr(L <= -eps)
        return self._exact((min(1.0, up.sf + low.cdf), up.error + low.error), "pdp_tail")

    def hockey_stick(self, epsilon: float, direction: Direction = "PQ") -> float:
        """Exact ``H_{e^eps}(P||Q) = Pr_P(L > eps) - e^eps Pr_Q(L > eps)`` ("PQ"; swapped for "QP").

        Computed as ``E_P (1 - e^{eps - L})_+`` from the law of ``L`` under ``P`` alone
        (:meth:`plrv.QuadraticFormLaw.hockey_stick`), so the error does not grow with ``e^eps``;
        absolute accuracy about ``1e-12``.  1.0 when the supports differ.
        """
        eps = _check_eps(epsilon)
        if self._pair(direction) is None:
            return 1.0
        return self._exact(self._law(direction).hockey_stick(eps), "hockey_stick")

    # ----------------------------------------------------------------- bounds
    def chernoff(self, epsilon: float, direction: Direction = "PQ") -> tuple[float, float]:
        """Chernoff bounds ``(upper, lower)`` on ``Pr_P(L > eps)`` and ``Pr_P(L < -eps)``.

        ``inf_{s>0} exp(K(s) - s eps)`` and ``inf_{s>0} exp(K(-s) - s eps)`` over the whole domain
        of the closed-form ``K`` (Campbell et al., Theorem 2 uses ``K(s) = s D_{1+s}``, ``s > 0``).
        """
        eps = _check_eps(epsilon)
        w = self._pair(direction)
        if w is None:
            return 1.0, 1.0
        s_lo, s_hi = w.mgf_domain()
        up = chernoff_bound(w.log_mgf, eps, s_max=s_hi).value
        low = chernoff_bound(lambda s: w.log_mgf(-s), eps, s_max=-s_lo).value
        return up, low

    def delta(self, epsilon: float, method: Method = "exact", *, resolution: float = 0.0) -> float:
        """``delta`` at ``epsilon``, the worse (max) of both directions.

        ``"exact"``: the hockey-stick divergence (tight ``(eps, delta)``-DP).  ``"rdp"``: the RDP
        conversion of Canonne, Kamath & Steinke 2020, Prop. 12 over continuous orders (an upper
        bound on the exact value).  ``"chernoff"``: the two-sided Chernoff bound on the PDP tail
        ``Pr(|L| > eps)`` (Campbell et al., Definition 2 / Theorem 2), also an upper bound on the exact value.
        1.0 when the supports differ. ``resolution`` (exact method): a value known to be below it is
        returned at Imhof's absolute accuracy (about ``1e-14``) without the slower relative refinement
        (for callers that only compare with a threshold far above).
        """
        meth = _check_method(method)
        eps = _check_eps(epsilon)
        if self._white is None:
            return 1.0
        if meth == "exact":
            # Imhof in both directions first; the slow saddle-point refinement of a value below Imhof's
            # absolute accuracy is needed only when no direction has a larger value (max of the two)
            # A direction whose Chernoff tail bound (an upper bound of its hockey-stick value) is at
            # most the other's exact value cannot be the max: it is skipped (exact, not approximate).
            laws = [self._law(d) for d in _DIRECTIONS]
            bounds = [law.tail_bound(eps) for law in laws]
            order = sorted(range(len(laws)), key=lambda i: -bounds[i])
            coarse: dict[int, _plrv.Estimate] = {}
            for i in order:
                if coarse and bounds[i] <= max(c.value for c in coarse.values()):
                    continue
                coarse[i] = laws[i].hockey_stick(eps, refine_small=False)
            top = max(c.value for c in coarse.values())
            if not (top >= _plrv.SMALL_FACTOR * max(c.error for c in coarse.values())
                    or top < resolution):
                coarse = {i: laws[i].refine_hockey(eps, c) for i, c in coarse.items()}
                top = max(c.value for c in coarse.values())
                for i in order:  # a skipped direction whose bound is above the refined value
                    if i not in coarse and bounds[i] > top:
                        coarse[i] = laws[i].hockey_stick(eps)
            return max(self._exact(c, "hockey_stick") for c in coarse.values())
        if meth == "rdp":  # both directions and all orders at once (privacy.rdp_batch)
            if self._white.lam.size == 0 and self._white.b0sq == 0:  # P = Q: the infimum is 0
                return 0.0
            return float(whitened_rdp_deltas([self._white, self._swapped], eps).max())
        return max(min(1.0, sum(self.chernoff(eps, d))) for d in _DIRECTIONS)

    def epsilon(self, delta: float, method: Method = "exact") -> float:
        """Smallest ``epsilon >= 0`` with ``self.delta(epsilon, method) <= delta``.

        ``"rdp"`` in closed form per order (:func:`conversions.rdp_to_epsilon_batch`, max over
        directions); otherwise by :func:`scipy.optimize.brentq` on ``log delta(eps)``
        (non-increasing; to ``1e-10`` relative), bracketed above by the RDP epsilon for the exact
        method.  ``inf`` when the supports differ (or, never for valid data, when no epsilon up to
        ``2^64`` times the RDP epsilon meets ``delta``).
        """
        meth = _check_method(method)
        target = _check_delta(delta)
        if self._white is None:
            return math.inf
        if meth == "rdp":  # both directions and all orders at once (privacy.rdp_batch)
            return max(0.0, float(whitened_rdp_epsilons([self._white, self._swapped], target).max()))

        log_target = math.log(target)

        def excess(e: float) -> float:
            # delta(eps) decays roughly exponentially: root-find on its logarithm (few evaluations)
            return math.log(max(self.delta(e, meth), 1e-300)) - log_target

        if excess(0.0) <= 0:
            return 0.0
        lo, hi = self._epsilon_bracket(excess, meth, target)
        if not math.isfinite(hi):
            return math.inf
        return float(optimize.brentq(excess, lo, hi, xtol=1e-12, rtol=1e-10))

    def _epsilon_bracket(self, excess: Callable[[float], float], meth: Method,
                         target: float) -> tuple[float, float]:
        """``(lo, hi)`` with ``excess(lo) > 0 >= excess(hi)`` (``excess(0) > 0`` is known), or
        ``(lo, inf)`` when no finite ``hi`` was found.

        The RDP epsilon ``e_R`` of the pair bounds the exact one from above (every RDP conversion is a
        valid (epsilon, delta) statement, and the hockey-stick divergence is the tight one), and the
        Chernoff PDP bound, an upper bound of the exact delta, is near ``delta`` at ``e_R``. Below
        ``_EPS_MAX`` the bracket is the RDP epsilon (exact method) or doubling from 1 (Chernoff); above
        it, where a value of the order of ``e_R`` is expected, the search starts from ``e_R`` and doubles
        at most ``_MAX_DOUBLINGS`` times (numerical slack only: the exact value is at most ``e_R``).
        """
        rdp = self.epsilon(target, "rdp") if meth == "exact" else math.nan  # nan: not computed yet
        hi = rdp if meth == "exact" else 1.0
        lo = 0.0
        if hi > _EPS_MAX:
            if excess(_EPS_MAX) > 0:
                lo = _EPS_MAX  # the root lies in (_EPS_MAX, e_R]
            else:
                hi = _EPS_MAX
        if not math.isfinite(hi) or hi <= 0:
            hi = 1.0
        doublings = 0
        while excess(hi) > 0:
            if lo > 0 or 2.0 * hi > _EPS_MAX:  # beyond _EPS_MAX: from e_R on, lo tracked explicitly
                if math.isnan(rdp):
                    rdp = self.epsilon(target, "rdp")
                lo = hi
                hi = max(2.0 * hi, rdp) if math.isfinite(rdp) else 2.0 * hi
                doublings += 1
                if doublings > _MAX_DOUBLINGS:
                    return lo, math.inf
            else:
                hi *= 2.0
        if lo == 0.0 and hi > 1.0 and excess(hi / 2.0) > 0:
            lo = hi / 2.0
        return lo, hi

    # ----------------------------------------------------------------- paper option
    def paper_projection(self, r: int) -> GaussianPair:
        """A NEW pair projected on the top-``r`` eigenvectors of ``cov0`` (both means, both
        covariances).  For reproducing the paper's computation only: the projection discards
        directions and can understate every divergence; nothing else in this class projects."""
        if self.cov0 is None or self.cov1 is None or self.mean0 is None or self.mean1 is None:
            raise ConfigError("paper_projection needs the dense covariances; this pair was made "
                              "by from_whitened")
        k = self.cov0.shape[0]
        if not (isinstance(r, numbers.Integral) and not isinstance(r, bool) and 1 <= r <= k):
            raise ConfigError(f"r must be an integer in 1..{k}, got {r!r}")
        _, E = np.linalg.eigh(self.cov0)
        V = E[:, ::-1][:, :r]
        return GaussianPair(V.T @ self.mean0, V.T @ self.cov0 @ V, V.T @ self.mean1,
                            V.T @ self.cov1 @ V, rank_rtol=self.rank_rtol, unit_tol=self.unit_tol)


def _batched_rdp(pairs: list[GaussianPair], solve, argument: float, *, mismatch: float) -> np.ndarray:
    """Both directions of every pair through one vectorised RDP conversion ``solve`` (each curve's
    result is the same bits alone or batched: :func:`~dpgossip.privacy.conversions._minimise_batch`)."""
    out = np.full(len(pairs), mismatch)
    live = [i for i, p in enumerate(pairs) if p._white is not None]
    equal = [i for i in live if pairs[i]._white.lam.size == 0 and pairs[i]._white.b0sq == 0]
    out[equal] = 0.0
    todo = [i for i in live if i not in set(equal)]
    if todo:
        curves = [w for i in todo for w in (pairs[i]._white, pairs[i]._swapped)]
        out[todo] = solve(curves, argument).reshape(-1, 2).max(axis=1)
    return out


def rdp_epsilons(pairs: list[GaussianPair], delta: float) -> np.ndarray:
    """``[p.epsilon(delta, "rdp") for p in pairs]`` in one vectorised conversion (the same values, bit
    for bit): ``inf`` where the supports differ, ``0`` where the laws are equal."""
    target = _check_delta(delta)
    return np.maximum(0.0, _batched_rdp(pairs, whitened_rdp_epsilons, target, mismatch=math.inf))


def rdp_deltas(pairs: list[GaussianPair], epsilon: float) -> np.ndarray:
    """``[p.delta(epsilon, "rdp") for p in pairs]`` in one vectorised conversion (the same values, bit
    for bit): ``1`` where the supports differ."""
    eps = _check_eps(epsilon)
    return _batched_rdp(pairs, whitened_rdp_deltas, eps, mismatch=1.0)
