"""Exact pairwise leakage of a linear Gaussian release, for every target at once (docs/network-dp.md).

A view ``O = J x + B z`` with ``z ~ N(0, I)``
(:class:`~dpgossip.privacy.linear_release.LinearGaussianRelease`) has covariance ``B B^T`` independent
of the data, so changing target ``u``'s inputs by ``s`` moves only the mean, by ``J_u s`` (``J_u``:
``u``'s columns).
The pair of views is a Gaussian mechanism with Mahalanobis norm

    ``mu^2 = s^T J_u^T (B B^T)^+ J_u s``     if ``J_u s`` lies in the range of ``B B^T``,
    ``mu = inf``                              otherwise (the two Gaussians are mutually singular).

With the thin SVD ``B = U S V^T`` truncated to the rank ``r`` (singular values above
``rank_rtol * s_max``), ``(B B^T)^+ = U_r S_r^{-2} U_r^T``, so ``C = S_r^{-1} U_r^T J`` whitens every
column at once and ``mu^2 = ||C_u s||^2``.  A column is outside the range when its residual
``||(I - U_r U_r^T) j||`` exceeds ``range_rtol`` times the largest column norm of ``J``.

* One input per target (``|s| <= Delta``): ``mu = Delta ||c_u||``.
* Per-round inputs (``s`` in the box ``[-Delta, Delta]^T``): ``mu^2 = max_s s^T M s`` with
  ``M = C_u^T C_u``.  A convex quadratic attains its maximum over a box at a vertex, so the value is
  exact by enumerating the ``2^(T-1)`` vertices up to sign when ``T <= exhaustive_up_to``; otherwise
  a certified pair: the lower end is the best vertex found by single-flip local search, the upper end
  a dual certificate of the SDP relaxation: any ``y`` with ``diag(y) - M`` PSD gives
  ``s^T M s <= sum_i y_i s_i^2 <= Delta^2 sum_i y_i``.  ``y = lambda_max(M) 1`` (the bound
  ``T lambda_max``) and ``y_i = sum_j |M_ij|`` (diagonal dominance; the bound ``sum_ij |M_ij|``) are
  two; L-BFGS on ``f(y) = sum_i y_i + T max(0, lambda_max(M - diag y))`` improves them, and every
  evaluated ``f(y)`` is itself a certificate (``y`` raised by the eigenvalue excess).

Then RDP of order ``alpha`` is exactly ``alpha mu^2 / 2`` and ``epsilon(delta)`` is the Gaussian
mechanism's exact curve ``delta = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)``
(:func:`dpgossip.privacy.mechanism.gaussian_mechanism_delta`) solved for ``epsilon``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

from dpgossip._threads import blas_threads
from dpgossip.errors import ConfigError, check_int, check_number
from dpgossip.privacy.linear_release import LinearGaussianRelease
from dpgossip.privacy.mechanism import gaussian_mechanism_epsilon

__all__ = ["target_box", "LinearAuditSettings", "WhitenedView", "BoxMaximum", "PairLeakage", "whiten",
           "whiten_release", "unit_shift_gains", "box_maximum", "dual_certificate", "gaussian_epsilon",
           "audit_release", "observer_label"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LinearAuditSettings:
    """Settings of the exact linear auditor.

    Parameters
    ----------
    sensitivity : float
        ``Delta > 0``: the largest change of one input of the target (per round for per-round inputs).
    orders : tuple of float
        Renyi orders ``alpha > 1`` reported.
    delta : float
        ``delta`` in ``(0, 1)`` at which ``epsilon`` is reported.
    rank_rtol : float
        Singular values of ``B`` at most ``rank_rtol * s_max`` count as zero.
    range_rtol : float
        A column of ``J`` whose residual outside ``range(B)`` exceeds ``range_rtol`` times the largest
        column norm of ``J`` is outside the support (infinite leakage).
    exhaustive_up_to : int
        Largest ``T`` for which the box maximum enumerates vertices (``2^(T-1)`` of them).
    restarts : int
        Random starts of the local search for larger ``T``.
    seed : int
        Seed of those random starts.
    """

    sensitivity: float = 1.0
    orders: tuple[float, ...] = (2.0,)
    delta: float = 1e-5
    rank_rtol: float = 1e-10
    range_rtol: float = 1e-8
    exhaustive_up_to: int = 16
    restarts: int = 16
    seed: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "sensitivity",
                           check_number(self.sensitivity, "sensitivity", low=0.0, low_open=True))
        orders = self.orders if isinstance(self.orders, Iterable) else (self.orders,)
        object.__setattr__(self, "orders", tuple(
            check_number(a, f"orders[{i}]", low=1.0, low_open=True) for i, a in enumerate(orders)))
        object.__setattr__(self, "delta", check_number(self.delta, "delta", low=0.0, high=1.0,
                                                       low_open=True, high_open=True))
        for name in ("rank_rtol", "range_rtol"):
            check_number(getattr(self, name), name, low=0.0, high=1.0, low_open=True, high_open=True)
        for name, low in (("exhaustive_up_to", 1), ("restarts", 0), ("seed", 0)):
            check_int(getattr(self, name), name, low)
        if self.exhaustive_up_to > 24:
            raise ConfigError(f"exhaustive_up_to must be <= 24 (2^23 vertices), got "
                              f"{self.exhaustive_up_to}", field="exhaustive_up_to")


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class WhitenedView:
    """``C = S_r^{-1} U_r^T J`` and, per column of ``J``, whether it leaves ``range(B)``."""

    C: np.ndarray
    """Whitened columns, ``(rank, columns)``: ``mu^2 = ||C s||^2`` for a shift inside the support."""
    outside: np.ndarray
    """Boolean per column of ``J``: its residual outside ``range(B)`` is above the tolerance."""
    rank: int
    """Numerical rank of ``B``."""


def whiten(J: np.ndarray, B: np.ndarray, *, rank_rtol: float = 1e-10,
           range_rtol: float = 1e-8) -> WhitenedView:
    """Whiten every column of ``J`` against the noise ``B B^T`` with one SVD of ``B`` (module
    docstring); costs ``O(k^2 n)`` for ``k`` rows and ``n`` columns."""
    J = np.asarray(J, dtype=float)
    B = np.asarray(B, dtype=float)
    if J.ndim != 2 or B.ndim != 2 or J.shape[0] != B.shape[0]:
        raise ConfigError(f"J and B must be matrices with the same rows, got shapes {J.shape} and "
                          f"{B.shape}", field="J")
    if B.size and J.shape[0]:
        U, S, _ = np.linalg.svd(B, full_matrices=False)
        r = int(np.sum(S > rank_rtol * S[0])) if S[0] > 0 else 0
    else:
        U, S, r = np.zeros((J.shape[0], 0)), np.zeros(0), 0
    U = U[:, :r]
    coef = U.T @ J
    residual = np.linalg.norm(J - U @ coef, axis=0) if J.shape[0] else np.zeros(J.shape[1])
    scale = float(np.max(np.linalg.norm(J, axis=0))) if J.size else 0.0
    outside = residual > range_rtol * scale
    return WhitenedView(C=coef / S[:r, None], outside=outside, rank=r)


@dataclass(frozen=True, slots=True, kw_only=True)
class BoxMaximum:
    """``max s^T M s`` over the box ``[-Delta, Delta]^T``: ``lower <= value <= upper``."""

    lower: float
    """Attained at :attr:`vertex`."""
    upper: float
    """Sound upper bound (equals ``lower`` when :attr:`exact`)."""
    vertex: tuple[float, ...]
    """The best shift found."""
    exact: bool
    method: str
    """``"closed-form"`` (``T = 1``), ``"vertices"`` (enumeration) or ``"local-search+bound"``."""


def _enumerate(M: np.ndarray) -> tuple[float, np.ndarray]:
    T = M.shape[0]
    codes = np.arange(2 ** (T - 1), dtype=np.int64)[:, None]
    bits = (codes >> np.arange(T - 1, dtype=np.int64)) & 1
    V = np.concatenate([np.ones((codes.size, 1)), 1.0 - 2.0 * bits], axis=1)
    values = np.einsum("ij,ij->i", V @ M, V)
    i = int(np.argmax(values))
    return float(values[i]), V[i]


def _local_search(M: np.ndarray, s: np.ndarray) -> tuple[float, np.ndarray]:
    """Single-flip ascent: flipping ``s_i`` changes ``s^T M s`` by ``-4 s_i (M s)_i + 4 M_ii``."""
    s = s.copy()
    Ms = M @ s
    diag = np.diag(M)
    while True:
        gain = -4.0 * s * Ms + 4.0 * diag
        i = int(np.argmax(gain))
        if gain[i] <= 1e-14 * max(float(np.max(np.abs(M))), 1e-300):
            return float(s @ Ms), s
        Ms -= 2.0 * s[i] * M[:, i]
        s[i] = -s[i]


def dual_certificate(M: np.ndarray, *, maxiter: int = 200) -> float:
    """A sound upper bound on ``max_{s in [-1, 1]^T} s^T M s``: ``min f(y)`` over the points visited,
    ``f(y) = sum_i y_i + T max(0, lambda_max(M - diag y))`` (module docstring), plus a rounding margin
    ``64 T eps ||M||_F`` for the computed eigenvalues.

    Starts from ``y_i = sum_j |M_ij|``; ``f`` at ``y = 0`` is ``T lambda_max(M)``, so the result is at
    most ``min(T lambda_max, sum_ij |M_ij|)`` (plus the margin).
    """
    M = np.asarray(M, dtype=float)
    T = M.shape[0]
    best = [T * max(float(np.linalg.eigvalsh(M)[-1]), 0.0), float(np.sum(np.abs(M)))]

    def f(y: np.ndarray) -> tuple[float, np.ndarray]:
        w, U = np.linalg.eigh(M - np.diag(y))
        excess = max(float(w[-1]), 0.0)
        value = float(np.sum(y)) + T * excess
        best.append(value)
        return value, np.ones(T) - (T * U[:, -1] ** 2 if excess > 0 else 0.0)

    minimize(f, np.sum(np.abs(M), axis=1), jac=True, method="L-BFGS-B",
             options={"maxiter": maxiter})
    return min(best) + 64 * T * np.finfo(float).eps * float(np.linalg.norm(M))


def box_maximum(M: np.ndarray, bound: float = 1.0, *, exhaustive_up_to: int = 16,
                restarts: int = 16, seed: int = 0) -> BoxMaximum:
    """``max_{s in [-bound, bound]^T} s^T M s`` for a symmetric PSD ``M`` (module docstring).

    Exact (vertex enumeration) for ``T <= exhaustive_up_to``; otherwise ``lower`` from local
    search started at the all-ones vertex, the sign of the top eigenvector and ``restarts`` random
    vertices (``numpy.random.default_rng(seed)``), and ``upper = bound^2`` times
    :func:`dual_certificate` (at most ``bound^2 min(T lambda_max, sum |M_ij|)``).
    """
    M = np.asarray(M, dtype=float)
    M = 0.5 * (M + M.T)
    T = M.shape[0]
    b2 = float(bound) ** 2
    if T == 1:
        return BoxMaximum(lower=b2 * M[0, 0], upper=b2 * M[0, 0], vertex=(float(bound),),
                          exact=True, method="closed-form")
    if T <= exhaustive_up_to:
        value, s = _enumerate(M)
        return BoxMaximum(lower=b2 * value, upper=b2 * value, vertex=tuple(bound * s), exact=True,
                          method="vertices")
    vecs = np.linalg.eigh(M)[1]
    top = np.where(vecs[:, -1] >= 0, 1.0, -1.0)
    rng = np.random.default_rng(seed)
    starts = [np.ones(T), top] + [rng.choice([-1.0, 1.0], size=T) for _ in range(restarts)]
    best, best_s = max((_local_search(M, s) for s in starts), key=lambda p: p[0])
    upper = dual_certificate(M)
    return BoxMaximum(lower=b2 * best, upper=b2 * max(upper, best), vertex=tuple(bound * best_s),
                      exact=False, method="local-search+bound")


gaussian_epsilon = gaussian_mechanism_epsilon
"""Exact epsilon of a Gaussian mechanism of Mahalanobis norm ``mu`` at ``delta``
(:func:`~dpgossip.privacy.mechanism.gaussian_mechanism_epsilon`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PairLeakage:
    """Leakage of ``target`` to ``observer``: a Gaussian mechanism of Mahalanobis norm ``mu``.

    ``rdp`` and ``epsilon`` are computed at :attr:`mu_upper` (a sound guarantee; equal to ``mu``
    when :attr:`exact`).
    """

    observer: str
    """The observer, or a coalition as ``"a+b+..."``."""
    target: int
    hops: int
    """Graph distance from the target to the nearest observer."""
    mu: float
    """Exact ``mu``, or the lower end (attained by a shift) when not exact; ``inf``: supports differ."""
    mu_upper: float
    exact: bool
    method: str
    orders: tuple[float, ...]
    rdp: tuple[float, ...]
    """``alpha mu_upper^2 / 2`` at each order."""
    delta: float
    epsilon: float

    def to_row(self) -> dict[str, object]:
        """Tidy row: observer, target, hops, mu, mu_upper, exact, method, ``rdp_<order>``, delta,
        epsilon."""
        row: dict[str, object] = {"observer": self.observer, "target": self.target,
                                  "hops": self.hops, "mu": self.mu, "mu_upper": self.mu_upper,
                                  "exact": self.exact, "method": self.method}
        row.update({f"rdp_{a:g}": r for a, r in zip(self.orders, self.rdp, strict=True)})
        row.update({"delta": self.delta, "epsilon": self.epsilon})
        return row


def observer_label(observers: Sequence[int]) -> str:
    """``"3"`` for one observer, ``"1+5"`` for a coalition."""
    return "+".join(str(v) for v in observers)


def whiten_release(release: LinearGaussianRelease, *, rank_rtol: float = 1e-10,
                   range_rtol: float = 1e-8) -> WhitenedView:
    """:func:`whiten` of the release's ``J`` against its noise factor ``B``."""
    return whiten(release.J, release.noise_factor(), rank_rtol=rank_rtol, range_rtol=range_rtol)


def unit_shift_gains(release: LinearGaussianRelease, *, rank_rtol: float = 1e-10,
                     range_rtol: float = 1e-8) -> np.ndarray:
    """``g_u = j_u^T (B B^T)^+ j_u`` for each target of a release with one column per target: the
    ``mu^2`` of a unit shift of its coordinate (``inf`` when ``j_u`` leaves ``range(B)``), in the order
    of :attr:`~dpgossip.privacy.linear_release.LinearGaussianRelease.targets`.

    One SVD of ``B`` (:func:`whiten`, one BLAS thread), then ``g_u = ||c_u||^2`` summed down each
    whitened column. ``mu`` of a shift by ``s`` is ``|s| sqrt(g_u)``.
    """
    if release.columns.shape[1] != 1:
        raise ConfigError(f"release: unit_shift_gains needs one column per target, got "
                          f"{release.columns.shape[1]}; use audit_release for several inputs per target",
                          field="release")
    with blas_threads(1):
        white = whiten_release(release, rank_rtol=rank_rtol, range_rtol=range_rtol)
    g = np.sum(white.C**2, axis=0)
    cols = release.columns[:, 0]
    return np.where(white.outside[cols], np.inf, g[cols])


def target_box(white: WhitenedView, cols: np.ndarray, settings: LinearAuditSettings) -> BoxMaximum:
    """``max ||C_u s||^2`` over a target's shifts ``|s_i| <= Delta`` (its whitened columns ``C_u``):
    ``0`` for a target without columns, ``inf`` when a column leaves the support of the noise."""
    if cols.size == 0:
        return BoxMaximum(lower=0.0, upper=0.0, vertex=(), exact=True, method="closed-form")
    if bool(np.any(white.outside[cols])):
        return BoxMaximum(lower=math.inf, upper=math.inf, vertex=(), exact=True, method="support")
    Cu = white.C[:, cols]
    return box_maximum(Cu.T @ Cu, settings.sensitivity, exhaustive_up_to=settings.exhaustive_up_to,
                       restarts=settings.restarts, seed=settings.seed)


def audit_release(release: LinearGaussianRelease, settings: LinearAuditSettings | None = None,
                  targets: Iterable[int] | None = None,
                  hops: Mapping[int, int] | None = None) -> list[PairLeakage]:
    """Exact leakage of every target of one view, from one SVD of ``B`` (run with one BLAS thread).

    Parameters
    ----------
    release : LinearGaussianRelease
        The view ``Y = J x + B w`` (:mod:`dpgossip.privacy.linear_release`).
    settings : LinearAuditSettings, optional
        Sensitivity ``Delta`` (the box of each target's columns), orders, ``delta``, tolerances and the
        box-maximum settings.
    targets : iterable of int, optional
        Targets to audit; default every target of the release.
    hops : mapping, optional
        Target -> graph distance to the adversary, copied into the rows (``-1`` when absent).

    Returns
    -------
    list of PairLeakage
        One row per target, in increasing target order, observer :attr:`release.label`; ``mu`` and
        ``mu_upper`` are the square roots of :func:`box_maximum` over the target's whitened block
        (``inf`` when a column leaves the support), RDP and ``epsilon`` at ``mu_upper``.

    Raises
    ------
    ConfigError
        For a target that is not a target of the release.
    """
    s = settings or LinearAuditSettings()
    chosen = sorted(release.targets.tolist()) if targets is None else _targets(release, targets)
    position = {int(u): i for i, u in enumerate(release.targets.tolist())}
    hops = hops or {}
    rows = []
    with blas_threads(1):  # one SVD and many tiny products: one BLAS thread is faster (dpgossip._threads)
        white = whiten_release(release, rank_rtol=s.rank_rtol, range_rtol=s.range_rtol)
        boxes = [target_box(white, release.columns[position[u]], s) for u in chosen]
    for u, box in zip(chosen, boxes, strict=True):
        mu, mu_up = math.sqrt(max(box.lower, 0.0)), math.sqrt(max(box.upper, 0.0))
        rows.append(PairLeakage(
            observer=release.label, target=u, hops=int(hops.get(u, -1)), mu=mu, mu_upper=mu_up,
            exact=box.exact, method=box.method, orders=s.orders,
            rdp=tuple(a * mu_up ** 2 / 2 for a in s.orders), delta=s.delta,
            epsilon=gaussian_epsilon(mu_up, s.delta)))
    return rows


def _targets(release: LinearGaussianRelease, targets: Iterable[int]) -> list[int]:
    known = set(release.targets.tolist())
    out = []
    for u in targets:
        if isinstance(u, bool) or not isinstance(u, int | np.integer) or int(u) not in known:
            raise ConfigError(f"targets must be agents that are not observers ({release.label}), got "
                              f"{u!r}", field="targets")
        out.append(int(u))
    return sorted(set(out))
