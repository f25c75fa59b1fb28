"""Law of the privacy-loss random variable of two Gaussians, and its exact tail (Imhof 1961).

For ``P = N(mu_0, S_0)`` and ``Q = N(mu_1, S_1)`` with equal supports, write the problem in the
whitened coordinates of the pencil ``(S_1, S_0)``: ``S_0 -> I``, ``S_1 -> diag(lam)``,
``mu_0 - mu_1 -> b`` (see :mod:`dpgossip.privacy.gaussian_pair`).  With ``y = b + z``,
``z ~ N(0, I)`` under ``P``, the privacy loss ``L = ln p(Y)/q(Y)`` is

    L = sum_i [ alpha_i z_i^2 + beta_i z_i ] + c,
    alpha_i = (1 - lam_i) / (2 lam_i),   beta_i = b_i / lam_i,
    c = sum_i [ b_i^2 / (2 lam_i) + ln(lam_i) / 2 ],

a generalised chi-square variable.  Components with ``lam_i = 1`` have ``alpha_i = 0`` and add up to
a single Gaussian term ``sigma z_0`` with ``sigma^2 = sum b_i^2`` (and ``b_i^2 / 2`` to ``c``).  The
law of ``L`` under ``Q`` is the law of ``-L'`` under ``P'``, where ``(P', Q') = (Q, P)`` is the
swapped pair, whose whitened data are ``(1/lam, b/sqrt(lam))``.

The tail is computed by Gil-Pelaez / Imhof inversion of the characteristic function
``phi(t) = E exp(itX)``::

    Pr(X > x) = 1/2 + (1/pi) int_0^inf sin(theta(t)) / (t rho(t)) dt,
    theta(t)  = sum_j [ atan(2 alpha_j t)/2 - alpha_j beta_j^2 t^3 / (1 + 4 alpha_j^2 t^2) ]
                + (c - x) t,
    ln rho(t) = sum_j [ ln(1 + 4 alpha_j^2 t^2)/4 + beta_j^2 t^2 / (2 (1 + 4 alpha_j^2 t^2)) ]
                + sigma^2 t^2 / 2,

(Imhof 1961, Eq. (3.2), written for ``alpha z^2 + beta z`` instead of completed squares so that
components with ``lam`` close to 1 cause no cancellation; Gil-Pelaez 1951).  The hockey-stick
divergence uses the same phase and modulus with the kernel ``(sin theta - t cos theta)/(t(1+t^2))``
(:meth:`QuadraticFormLaw.hockey_stick`).

Numerical method and accuracy.  The integral is truncated at the point where a rigorous bound on
the rest falls below ``1e-13``.  When that range spans at most ``2000`` periods of the integrand it
is split into one-period pieces, each integrated by 10- and 21-point Gauss-Legendre rules (all
pieces at once; pieces where the two disagree are bisected).  Otherwise (the modulus decays only
algebraically: no Gaussian part and small noncentralities, or a weight ``alpha`` near 0, which
decays only far out) the first ``2000`` periods are done that way and the rest as Fourier
integrals, writing ``theta = omega t + psi(t)`` with the bounded phase ``psi``:
:func:`scipy.integrate.quad`'s QAWO on geometric pieces ``[t, 2t]`` up to ``64 pi`` (or the
truncation point), then its QAWF (whose cycles of length ``~2 pi`` cannot resolve a modulation that
varies on the scale of a small start point: :func:`_oscillatory_tail`). A weight near 0 made the
direct route span up to ``1e5`` periods before (seconds per value); the Fourier route gives the same
values to ``3e-16`` on such laws (tests/privacy/test_inversion_routes.py).  Against closed forms (scipy's
``chi2``/``ncx2``, normal cdf) and one-dimensional quadrature oracles the absolute error is below
``1e-14`` in typical cases and below ``1e-11`` in all tests; the returned error estimate (usually
``~3e-14``) is reported, and :class:`~dpgossip.privacy.gaussian_pair.GaussianPair` warns if it
exceeds ``1e-8`` (seen only for far tails, many standard deviations out, of laws with a weight
``alpha`` near 0 and a large ``beta``).  Being absolute, the accuracy is not relative for
probabilities below ``~1e-13``: a hockey-stick value below ``1e4`` times its error estimate is
therefore recomputed by Laplace inversion along a vertical line through the saddle point
(:func:`_saddle_integral`: ``delta = (1/2 pi i) int M(u) e^{-u x} / (u (u + 1)) du``, the value factored
as ``exp(Phi(kappa))`` times a well-conditioned integral), which keeps about ``1e-10`` relative
accuracy down to values like ``1e-300`` (a rigorous bound on the truncated tail; it gives up, and the
Imhof value stands, when the characteristic function decays too slowly: one or two quadratic terms).

Two quadratic terms, or one and a Gaussian part, make Imhof's integrand decay like ``t^(-2)`` at best,
so its inversion needs tens of thousands of periods (seconds per value). There the hockey-stick
divergence is computed instead by conditioning on one variable: the one-term closed form, integrated over
the other standard normal by Gauss-Legendre pieces split at the kinks of the conditional value
(:func:`_conditioned_hockey`, relative accuracy ``1e-12``). A law bounded above (every ``alpha < 0``, no
Gaussian part) has hockey-stick value exactly 0 at and beyond its maximum.

References
----------
J. P. Imhof, "Computing the distribution of quadratic forms in normal variables", Biometrika 48
(1961) 419-426.  J. Gil-Pelaez, "Note on the inversion theorem", Biometrika 38 (1951) 481-482.
"""

from __future__ import annotations

__all__ = [
    "TAIL_TOL",
    "Estimate",
    "QuadraticFormLaw",
    "TailValue",
    "WhitenedPair",
    "privacy_loss_law",
]

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

import numpy as np
from scipy import integrate, special

from dpgossip.errors import ConfigError

TAIL_TOL = 1e-11
"""Absolute accuracy budget of the inversion integrals (probability units); see the module notes."""

_MAX_PIECES = 100_000  # cdf_grid: half-period pieces of one shared pass before each x is done alone
_QAWF_PIECES = 2000  # one-period pieces integrated directly before the Fourier integrals take over
SMALL_FACTOR = 1e4  # Imhof values below this many error estimates are redone on the saddle contour
_BOUND_TOL = 1e-13  # rigorous bound on the truncated part of the Imhof integral (before 1/pi)
_CHUNK = 1 << 14  # (point, term) pairs per vectorised block of the inversion integrand
_LOOP_TERMS = 8  # up to this many terms the integrand loops over terms (measured faster)


class TailValue(NamedTuple):
    """Upper and lower tail of a law at one point, with an error estimate.

    ``sf = Pr(X > x)``, ``cdf = Pr(X <= x)`` and ``error`` estimates ``|sf - exact|`` (and the same
    for ``cdf``): 0 for closed forms, otherwise the sum of the quadrature error estimates plus a
    rigorous bound on the truncated part of the integral.
    """

    sf: float
    cdf: float
    error: float


class Estimate(NamedTuple):
    """A value with an absolute error estimate (0 for closed forms, up to rounding)."""

    value: float
    error: float


@dataclass(frozen=True, eq=False)
class QuadraticFormLaw:
    """Law of ``X = c + sigma Z_0 + sum_j (alpha_j Z_j^2 + beta_j Z_j)``, ``Z`` i.i.d. ``N(0, 1)``.

    Parameters
    ----------
    alpha, beta : array_like, shape (n,)
        Quadratic and linear coefficients; every ``alpha_j`` must be nonzero (fold ``alpha_j = 0``
        terms into ``sigma``).
    sigma : float
        Standard deviation of the Gaussian part, ``>= 0``.
    c : float
        Constant.
    """

    alpha: np.ndarray
    beta: np.ndarray
    sigma: float
    c: float

    def __post_init__(self) -> None:
        alpha = np.array(self.alpha, dtype=float).reshape(-1)
        beta = np.array(self.beta, dtype=float).reshape(-1)
        if alpha.shape != beta.shape:
            raise ConfigError(f"alpha and beta must have equal lengths, got {alpha.size} and "
                              f"{beta.size}")
        if not (np.all(np.isfinite(alpha)) and np.all(np.isfinite(beta))) or np.any(alpha == 0):
            raise ConfigError(f"alpha must be finite and nonzero and beta finite, got "
                              f"alpha={alpha!r}, beta={beta!r}")
        if not (math.isfinite(self.sigma) and self.sigma >= 0 and math.isfinite(self.c)):
            raise ConfigError(f"sigma must be finite and >= 0 and c finite, got "
                              f"sigma={self.sigma!r}, c={self.c!r}")
        alpha.setflags(write=False)
        beta.setflags(write=False)
        object.__setattr__(self, "alpha", alpha)
        object.__setattr__(self, "beta", beta)
        object.__setattr__(self, "sigma", float(self.sigma))
        object.__setattr__(self, "c", float(self.c))

    @property
    def mean(self) -> float:
        """``E X = c + sum alpha_j``."""
        return self.c + float(np.sum(self.alpha))

    @property
    def variance(self) -> float:
        """``Var X = sum (2 alpha_j^2 + beta_j^2) + sigma^2``."""
        return float(np.sum(2 * self.alpha**2 + self.beta**2)) + self.sigma**2

    def mgf_domain(self) -> tuple[float, float]:
        """Open interval ``(s_lo, s_hi)`` where ``E exp(sX) < inf`` (``1 - 2 s alpha_j > 0``)."""
        pos, neg = self.alpha[self.alpha > 0], self.alpha[self.alpha < 0]
        s_hi = float(np.min(0.5 / pos)) if pos.size else math.inf
        s_lo = float(np.max(0.5 / neg)) if neg.size else -math.inf
        return s_lo, s_hi

    def log_mgf(self, s: float) -> float:
        """Cumulant generating function ``ln E exp(sX)``; ``+inf`` outside :meth:`mgf_domain`.

        ``K(s) = c s + sigma^2 s^2 / 2 + sum_j [ -ln(1 - 2 s alpha_j)/2
        + s^2 beta_j^2 / (2 (1 - 2 s alpha_j)) ]``.
        """
        if not math.isfinite(s) or np.any(1.0 - 2.0 * s * self.alpha <= 0):
            return math.inf
        return float(self._cumulants(np.array([float(s)]))[0])

    def _cumulants(self, s: np.ndarray) -> np.ndarray:
        """:meth:`log_mgf` at every ``s`` of a 1-d array inside the domain (not checked)."""
        a = 2.0 * s[:, None] * self.alpha
        return (self.c * s + 0.5 * self.sigma**2 * s * s
                + np.sum(-0.5 * np.log1p(-a) + (s * s)[:, None] * self.beta**2 / (2.0 * (1.0 - a)),
                         axis=1))

    def tail_bound(self, x: float) -> float:
        """An upper bound of ``Pr(X > x)``, hence of :meth:`hockey_stick` at ``x`` (which is at most the
        tail): Chernoff's ``min_s exp(K(s) - s x)`` over a fixed grid of 64 ``s`` in ``(0, s_hi)``
        (every ``s`` of the domain gives a valid bound, so the grid need not find the optimum). Cheap:
        one vectorised pass; used to skip exact values that cannot matter.
        """
        s = min(self.mgf_domain()[1], 1e8) * (1.0 - 1e-9) * _BOUND_GRID  # inside the domain
        k = self._cumulants(s) - s * float(x)
        return float(min(1.0, math.exp(min(float(np.min(k)), 0.0))))

    def tail(self, x: float) -> TailValue:
        """``Pr(X > x)`` and ``Pr(X <= x)`` with an absolute error estimate.

        Closed forms (error 0 up to rounding): no quadratic term (normal cdf, or a point mass when
        also ``sigma = 0``), and one quadratic term without Gaussian part (roots of a quadratic in a
        standard normal).  Otherwise Imhof's inversion integral (module notes: Gauss-Legendre on
        one-period pieces up to a rigorous truncation point, QAWF for slowly decaying tails).
        Absolute error below ``1e-11`` in every test (typically ``< 1e-14``); ``error`` is the
        estimate achieved.
        """
        x = float(x)
        n = self.alpha.size
        if n == 0:
            if self.sigma == 0:
                return TailValue(float(self.c > x), float(self.c <= x), 0.0)
            z = (self.c - x) / self.sigma
            return TailValue(float(special.ndtr(z)), float(special.ndtr(-z)), 0.0)
        if n == 1 and self.sigma == 0:
            sf, cdf = _one_term_tail(float(self.alpha[0]), float(self.beta[0]), self.c - x)
            return TailValue(sf, cdf, 0.0)
        integral, error = _inversion_integral(self.alpha, self.beta, self.sigma, self.c - x,
                                              "tail")
        sf = min(max(0.5 + integral / math.pi, 0.0), 1.0)
        cdf = min(max(0.5 - integral / math.pi, 0.0), 1.0)
        return TailValue(sf, cdf, error / math.pi)

    def hockey_stick(self, x: float, *, refine_small: bool = True) -> Estimate:
        """``E (1 - exp(x - X))_+`` with an absolute error estimate.

        ``refine_small=False`` skips the saddle-point recomputation of values below Imhof's accuracy
        (for callers that only need the larger of several values).

        For ``X = L = ln p/q`` under ``P`` this is the hockey-stick divergence
        ``H_{e^x}(P||Q) = Pr_P(L > x) - e^x Pr_Q(L > x)``, computed from the law under ``P`` only:
        by Parseval, ``E[e^(x - X) 1{X > x}] = (1/pi) int_0^inf Re[phi_{X-x}(t) / (1 + it)] dt``, so

            E (1 - e^(x - X))_+ = 1/2 + (1/pi) int_0^inf r(t) (sin theta(t) - t cos theta(t))
                                                             / (t (1 + t^2)) dt,

        with ``r = |phi|`` and ``theta`` as in :meth:`tail`.  Unlike ``Pr_P - e^x Pr_Q``, its
        absolute error does not grow like ``e^x``.  Closed forms: a point mass; a normal law
        ``N(c, sigma^2)`` (``Phi((c-x)/sigma) - e^(x - c + sigma^2/2) Phi((c-x)/sigma - sigma)``,
        the analytic Gaussian mechanism of Balle & Wang 2018, Thm. 8, when ``c = sigma^2/2``); one
        quadratic term with ``1 + 2 alpha > 0`` and no Gaussian part (Gaussian integrals over the
        roots' intervals); 0 when ``X`` is bounded above (every ``alpha < 0``, no Gaussian part) and
        ``x`` is at least its maximum ``c + sum beta^2 / (-4 alpha)``. Two quadratic terms, or one and a
        Gaussian part: one quadrature of the one-term closed form over the other variable
        (:func:`_conditioned_hockey`; Imhof's integrand decays too slowly there).
        """
        x = float(x)
        n = self.alpha.size
        if n == 0 and self.sigma == 0:
            return Estimate(max(0.0, -math.expm1(x - self.c)), 0.0)
        if n == 0:
            z = (self.c - x) / self.sigma
            second = math.exp(x - self.c + 0.5 * self.sigma**2 + special.log_ndtr(z - self.sigma))
            return Estimate(max(0.0, float(special.ndtr(z)) - second), 0.0)
        if n == 1 and self.sigma == 0 and 1.0 + 2.0 * self.alpha[0] > 0:
            value, _ = _one_term_hockey(float(self.alpha[0]), float(self.beta[0]),
                                        np.array([self.c - x]))
            return Estimate(float(value[0]), 0.0)
        if self.sigma == 0 and np.all(self.alpha < 0):  # X is bounded above: zero beyond its maximum
            if x >= self.c + float(np.sum(self.beta**2 / (-4.0 * self.alpha))):
                return Estimate(0.0, 0.0)
        if n == 1 and 1.0 + 2.0 * self.alpha[0] > 0:
            return _conditioned_hockey(float(self.alpha[0]), float(self.beta[0]), self.c - x, 0.0,
                                       self.sigma)
        if n == 2 and self.sigma == 0 and self.alpha.max() > -0.5:
            i = int(np.argmax(self.alpha))  # the inner term needs 1 + 2 alpha > 0
            a, b = self.alpha.tolist(), self.beta.tolist()
            return _conditioned_hockey(a[i], b[i], self.c - x, a[1 - i], b[1 - i])
        return self.inversion_hockey(x, refine_small=refine_small)

    def inversion_hockey(self, x: float, *, refine_small: bool = True) -> Estimate:
        """:meth:`hockey_stick` by Imhof's inversion integral whatever the shape of the law (the general
        method; for the closed forms and few-term cases it is the slow independent check)."""
        integral, error = _inversion_integral(self.alpha, self.beta, self.sigma, self.c - float(x),
                                              "hockey")
        est = Estimate(min(max(0.5 + integral / math.pi, 0.0), 1.0), error / math.pi)
        return self.refine_hockey(x, est) if refine_small else est

    def refine_hockey(self, x: float, est: Estimate) -> Estimate:
        """``est`` (from :meth:`hockey_stick` with ``refine_small=False``), recomputed on the saddle-point
        contour (:func:`_saddle_integral`, relative accuracy) when it is below ``SMALL_FACTOR`` times its
        absolute error estimate; otherwise ``est`` itself."""
        if not est.value < SMALL_FACTOR * est.error:
            return est
        log_v, rel = _saddle_integral(self, float(x))
        if math.isfinite(rel) and rel < 1e-6:
            v = math.exp(log_v) if math.isfinite(log_v) else 0.0
            return Estimate(v, v * rel)
        return est

    def sf(self, x: float) -> float:
        """``Pr(X > x)``; see :meth:`tail`."""
        return self.tail(x).sf

    def cdf(self, x: float) -> float:
        """``Pr(X <= x)``; see :meth:`tail`."""
        return self.tail(x).cdf

    def cdf_grid(self, xs: np.ndarray, *, max_work: float = 4e8) -> np.ndarray:
        """``Pr(X <= x)`` at every ``x`` of ``xs``, as :meth:`cdf` would give, in one pass when that is
        cheaper.

        Imhof's integral at ``x`` is ``int r(t) sin(theta_0(t) + (c - x) t) / t dt`` with ``r`` and
        ``theta_0`` independent of ``x``: both are evaluated once on one set of nodes (10- and 21-point
        Gauss-Legendre rules on pieces of at most half a period of the fastest phase over the grid, up
        to the rigorous truncation point), then every ``x`` costs one weighted sum. An ``x`` whose two rules
        differ by more than :data:`TAIL_TOL` is recomputed by :meth:`cdf`; so is every ``x`` when the
        law has a closed form, needs the slowly decaying branch, or the pass would exceed ``max_work``
        (nodes times grid points).
        """
        xs = np.asarray(xs, dtype=float).reshape(-1)
        n = self.alpha.size
        if xs.size == 0 or n == 0 or (n == 1 and self.sigma == 0):
            return np.array([self.cdf(float(x)) for x in xs])
        b2, s2 = self.beta * self.beta, self.sigma * self.sigma
        t_end = _truncation_point(self.alpha, b2, s2, _BOUND_TOL)
        d_far = float(np.max(np.abs(self.c - xs)))
        pieces = 2 * _pieces(self.alpha, b2, d_far, t_end)  # half periods: no adaptive bisection here
        if pieces > 2 * _MAX_PIECES or pieces * 31.0 * xs.size > max_work:
            return np.array([self.cdf(float(x)) for x in xs])
        edges = np.linspace(0.0, t_end, pieces + 1)
        mid, half = 0.5 * (edges[1:] + edges[:-1]), 0.5 * (edges[1:] - edges[:-1])
        sums = []
        for nodes, weights in (_GL_HI, _GL_LO):
            t = (mid[:, None] + half[:, None] * nodes).reshape(-1)
            w = (half[:, None] * weights).reshape(-1)
            theta0, r = _phase_and_modulus(t, alpha=self.alpha, b2=b2, s2=s2, d=0.0)
            a = w * r / t  # t > 0 at every Gauss node
            step = max(1, int(2e7 // t.size))
            out = np.empty(xs.size)
            for k in range(0, xs.size, step):  # blocks of grid points (memory)
                phase = theta0[None, :] + (self.c - xs[k:k + step])[:, None] * t[None, :]
                out[k:k + step] = np.sin(phase) @ a
            sums.append(out)
        hi, lo = sums
        cdf = np.clip(0.5 - hi / math.pi, 0.0, 1.0)
        redo = np.abs(hi - lo) / math.pi + _BOUND_TOL > TAIL_TOL
        for i in np.flatnonzero(redo):
            cdf[i] = self.cdf(float(xs[i]))
        return cdf


def privacy_loss_law(lam: np.ndarray, b: np.ndarray, b0sq: float = 0.0) -> QuadraticFormLaw:
    """Law of ``L = ln p/q`` under ``P`` from whitened data of the pencil ``(S_1, S_0)``.

    Parameters
    ----------
    lam : array_like, shape (n,)
        Generalised eigenvalues (``> 0``).  Entries equal to 1 are folded into the Gaussian part.
    b : array_like, shape (n,)
        Whitened mean difference ``V^T L^{-1} (mu_0 - mu_1)`` on those eigenvectors.
    b0sq : float
        Squared norm of the whitened mean difference on eigenvalue-1 directions not listed.

    Returns
    -------
    QuadraticFormLaw
        ``alpha = (1 - lam)/(2 lam)``, ``beta = b / lam``, ``sigma^2 = b0sq + sum_{lam=1} b^2``,
        ``c = sum [b^2/(2 lam) + ln(lam)/2] + sigma^2/2`` (module docstring).  Under ``Q`` use
        ``privacy_loss_law(1/lam, b/sqrt(lam), b0sq)`` for ``-L``.
    """
    lam = np.asarray(lam, dtype=float).reshape(-1)
    b = np.asarray(b, dtype=float).reshape(-1)
    unit = lam == 1.0
    s2 = float(b0sq) + float(np.sum(b[unit] ** 2))
    lam_n, b_n = lam[~unit], b[~unit]
    c = float(np.sum(b_n**2 / (2.0 * lam_n) + 0.5 * np.log(lam_n))) + 0.5 * s2
    return QuadraticFormLaw((1.0 - lam_n) / (2.0 * lam_n), b_n / lam_n, math.sqrt(s2), c)


@dataclass(frozen=True, eq=False)
class WhitenedPair:
    """A Gaussian pair with equal supports in the whitened coordinates of the pencil ``(S_1, S_0)``.

    ``P = N(b, I)`` and ``Q = N(0, diag(lam))`` on the nontrivial coordinates (``lam != 1``), plus
    coordinates with ``lam = 1`` whose mean differences have squared norm ``b0sq``.  The formulas
    below are Eqs. (33)-(34) of Campbell et al. with ``S_0 = I``, ``S_1 = diag(lam)``.
    """

    lam: np.ndarray
    b: np.ndarray
    b0sq: float

    def swapped(self) -> WhitenedPair:
        """The pair ``(Q, P)`` whitened by ``S_1``: eigenvalues ``1/lam``, mean ``b/sqrt(lam)``."""
        return WhitenedPair(1.0 / self.lam, self.b / np.sqrt(self.lam), self.b0sq)

    @property
    def a_max(self) -> float:
        """``min_{lam_i < 1} 1/(1 - lam_i)``: ``D_a(P||Q)`` is finite exactly for ``a < a_max``."""
        small = self.lam[self.lam < 1]
        return float(np.min(1.0 / (1.0 - small))) if small.size else math.inf

    def mgf_domain(self) -> tuple[float, float]:
        """``(s_lo, s_hi) = (-a_max(Q||P), a_max(P||Q) - 1)``: where ``E_P e^{sL} < inf``.

        ``a lam + 1 - a > 0`` with ``a = 1 + s``; for ``s < 0`` this is ``E_P (q/p)^(-s) =
        exp((-s - 1) D_{-s}(Q||P))``, finite for ``-s < a_max(Q||P)``.
        """
        return -self.swapped().a_max, self.a_max - 1.0

    def log_mgf(self, s: float) -> float:
        """``K(s) = ln E_P e^{sL} = s D_{1+s}(P||Q)`` for ``s`` in :meth:`mgf_domain`, else inf.

        ``K(s) = (1/2) sum [ s(1+s) b_i^2 / (lam_i (1 + t_i)) - ln(1 + t_i) + s ln lam_i ]
        + s(1+s) b0sq / 2`` with ``t_i = s (lam_i - 1)/lam_i``, since
        ``a lam + 1 - a = lam (1 + t)`` for ``a = 1 + s``.
        """
        t = s * (self.lam - 1.0) / self.lam
        if np.any(t <= -1.0):
            return math.inf
        return float(0.5 * np.sum(s * (1.0 + s) * self.b**2 / (self.lam * (1.0 + t))
                                  - np.log1p(t) + s * np.log(self.lam))
                     + 0.5 * s * (1.0 + s) * self.b0sq)

    def renyi(self, a: float) -> float:
        """``D_a(P||Q)`` (module docstring of :mod:`.gaussian_pair`); ``inf`` for ``a >= a_max``.

        Evaluated as ``(1/2) sum [ a b_i^2/(lam_i (1 + t_i)) - ln(1 + t_i)/(a - 1) + ln lam_i ]
        + a b0sq/2`` with ``t_i = (a - 1)(lam_i - 1)/lam_i``, which stays accurate as ``a -> 1``.
        """
        x = a - 1.0
        if x == 0.0:  # the limit a -> 1
            return self.kl()
        t = x * (self.lam - 1.0) / self.lam
        if a >= self.a_max or np.any(t <= -1.0):
            return math.inf
        return float(0.5 * np.sum(a * self.b**2 / (self.lam * (1.0 + t)) - np.log1p(t) / x
                                  + np.log(self.lam)) + 0.5 * a * self.b0sq)

    def kl(self) -> float:
        """``KL(P||Q) = (1/2) sum [1/lam - 1 + ln lam + b^2/lam] + b0sq/2`` (limit ``a -> 1``)."""
        u = self.lam - 1.0
        return float(0.5 * np.sum(np.log1p(u) - u / self.lam + self.b**2 / self.lam)
                     + 0.5 * self.b0sq)

    def loss_law(self) -> QuadraticFormLaw:
        """Law of ``L = ln p/q`` under ``P`` (:func:`privacy_loss_law`)."""
        return privacy_loss_law(self.lam, self.b, self.b0sq)


def _roots(alpha: float, beta: float, c0: float) -> tuple[float, float] | None:
    """Sorted real roots of ``alpha z^2 + beta z + c0`` (stable formula), or None if none/double."""
    disc = beta * beta - 4.0 * alpha * c0
    if disc <= 0:
        return None
    q = -0.5 * (beta + math.copysign(math.sqrt(disc), beta))
    r1, r2 = sorted((q / alpha, c0 / q))
    return r1, r2


def _one_term_tail(alpha: float, beta: float, c0: float) -> tuple[float, float]:
    """``Pr(alpha Z^2 + beta Z + c0 > 0)`` and its complement, exactly."""
    roots = _roots(alpha, beta, c0)
    if roots is None:  # the quadratic has the sign of alpha except at (at most) one point
        return (1.0, 0.0) if alpha > 0 else (0.0, 1.0)
    lo, hi = np.array(roots[0]), np.array(roots[1])
    outside = math.exp(float(_log_normal_mass(lo, hi, inside=False)))
    inside = math.exp(float(_log_normal_mass(lo, hi, inside=True)))
    return (outside, inside) if alpha > 0 else (inside, outside)


def _log_normal_mass(lo: np.ndarray, hi: np.ndarray, inside: bool) -> np.ndarray:
    """``ln Pr(lo < Z < hi)`` (``inside``) or ``ln Pr(Z < lo or Z > hi)`` for ``Z ~ N(0, 1)``, elementwise
    (``lo <= hi``); the difference of two tails is taken in logs where both are on the same side."""
    if not inside:
        return np.logaddexp(special.log_ndtr(lo), special.log_ndtr(-hi))
    upper = lo >= 0  # both upper tails: Phi(-lo) - Phi(-hi)
    lower = hi <= 0
    a = np.where(upper, special.log_ndtr(-lo), special.log_ndtr(hi))
    b = np.where(upper, special.log_ndtr(-hi), special.log_ndtr(lo))
    with np.errstate(divide="ignore", invalid="ignore"):
        tails = np.where(b < a, a + np.log1p(-np.exp(np.minimum(b - a, 0.0))), -np.inf)
        middle = np.log1p(-(special.ndtr(lo) + special.ndtr(-hi)))
    return np.where(upper | lower, tails, middle)


def _one_term_hockey(alpha: float, beta: float, c0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``E (1 - exp(-Y))_+`` for ``Y = alpha Z^2 + beta Z + c0``, ``1 + 2 alpha > 0``, exactly, for an array
    of constants ``c0``; and the size of the two terms whose difference it is (its rounding scale).

    ``E[e^(-Y) 1{Z in A}] = exp(-c0 + beta^2 v/2) sqrt(v) Pr(N(-beta v, v) in A)`` with
    ``v = 1/(1 + 2 alpha)``; ``A`` is where ``Y > 0``: outside the roots of the quadratic, or inside them
    when ``alpha < 0`` (stable root formula, as :func:`_roots`).
    """
    v = 1.0 / (1.0 + 2.0 * alpha)
    m, sd = -beta * v, math.sqrt(v)
    log_scale = -c0 + 0.5 * beta * beta * v + 0.5 * math.log(v)
    disc = beta * beta - 4.0 * alpha * c0
    has = disc > 0
    sq = np.sqrt(np.where(has, disc, 1.0))
    q = -0.5 * (beta + math.copysign(1.0, beta) * sq)  # |q| >= sq / 2 > 0
    r1, r2 = q / alpha, c0 / q
    lo, hi = np.minimum(r1, r2), np.maximum(r1, r2)
    inside = alpha < 0
    with np.errstate(over="ignore", invalid="ignore"):
        p = np.exp(_log_normal_mass(lo, hi, inside))
        qv = np.exp(log_scale + _log_normal_mass((lo - m) / sd, (hi - m) / sd, inside))
        rooted = np.maximum(0.0, p - qv)
        none = 0.0 if alpha < 0 else np.maximum(0.0, -np.expm1(log_scale))
        scale = np.where(has, p + qv, 1.0 + np.exp(log_scale))
    return np.where(has, rooted, none), scale


_U_RANGE = 39.0  # the standard normal density is below 1e-330 (zero in double) beyond this


def _conditioned_hockey(alpha: float, beta: float, c0: float, outer_a: float, outer_b: float
                        ) -> Estimate:
    """``E (1 - exp(-Y))_+`` for ``Y = alpha Z^2 + beta Z + c0 + outer_a U^2 + outer_b U`` with independent
    standard normals ``Z, U`` and ``1 + 2 alpha > 0``, by one quadrature over ``U``.

    Conditionally on ``U = u`` the value is the one-term closed form (:func:`_one_term_hockey`) at the
    constant ``s(u) = c0 + outer_a u^2 + outer_b u``. As a function of the constant it is smooth except
    where the quadratic in ``Z`` just touches zero (``s = beta^2 / (4 alpha)``); for ``alpha < 0`` it is
    zero on one side of that point. The ``u`` where this happens (at most two), the vertex of ``s`` and
    the integers in ``[-39, 39]`` (outside, the normal density is zero in double precision) split the
    line into pieces, integrated by 10- and 21-point Gauss-Legendre rules against the normal density,
    bisecting pieces where the two differ by more than ``1e-12`` of the total: relative accuracy, so
    tiny values keep it. Two quadratic terms (``outer_a != 0``), or one and a Gaussian part
    (``outer_a = 0``, ``outer_b = sigma``). Imhof's integrand decays only algebraically for so few terms,
    which makes its inversion slow; this is faster and agrees with it to about ``1e-14``.
    """
    kink = beta * beta / (4.0 * alpha) - c0  # outer_a u^2 + outer_b u = kink: the conditional kinks
    pts = list(np.arange(-_U_RANGE, _U_RANGE + 0.5))
    if outer_a != 0.0:
        roots = _roots(outer_a, outer_b, -kink)
        if roots is not None:
            pts += list(roots)
        pts.append(-outer_b / (2.0 * outer_a))
    elif outer_b != 0.0:
        pts.append(kink / outer_b)
    edges = np.unique(np.clip(np.array([p for p in pts if math.isfinite(p)]), -_U_RANGE, _U_RANGE))
    norm = 1.0 / math.sqrt(2.0 * math.pi)

    def f(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        dens = norm * np.exp(-0.5 * u * u)
        h, scale = _one_term_hockey(alpha, beta, c0 + outer_a * u * u + outer_b * u)
        with np.errstate(invalid="ignore"):  # 0 * inf where the density underflows: no mass there
            return np.where(dens > 0, dens * h, 0.0), np.where(dens > 0, dens * scale, 0.0)

    total, error = _gauss_pieces(f, edges[:-1], edges[1:], tol=1e-12, relative=True,
                                 max_rounds=60, max_pieces=100_000)
    return Estimate(min(max(total, 0.0), 1.0), error)


def _phase_and_modulus(t: np.ndarray, *, alpha: np.ndarray, b2: np.ndarray, s2: float,
                       d: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Phase ``theta(t)`` and modulus ``rho(t)^-1`` of the characteristic function in Imhof's integral.

    ``theta(t) = d t + sum_j [arctan(2 a_j t)/2 - a_j b_j^2 t^3 / (1 + 4 a_j^2 t^2)]`` and
    ``log rho(t) = s2 t^2/2 + sum_j [log(1 + 4 a_j^2 t^2)/4 + b_j^2 t^2 / (2 (1 + 4 a_j^2 t^2))]``.
    """
    a2 = alpha * alpha
    if alpha.size <= _LOOP_TERMS:  # few terms: one pass per term over all points is fastest
        theta, log_rho = d * t, 0.5 * s2 * t * t
        for a_j, a2_j, b2_j in zip(alpha, a2, b2, strict=True):
            den = 1.0 + 4.0 * a2_j * t * t
            theta = theta + 0.5 * np.arctan(2.0 * a_j * t) - a_j * b2_j * t**3 / den
            log_rho = log_rho + 0.25 * np.log1p(4.0 * a2_j * t * t) + b2_j * t * t / (2.0 * den)
        return theta, np.exp(-log_rho)
    # many terms: all at once, in blocks of _CHUNK (point, term) pairs (small enough for the cache)
    ab2 = alpha * b2
    flat = np.asarray(t, dtype=float).reshape(-1)
    theta, log_rho = np.empty_like(flat), np.empty_like(flat)
    step = max(1, _CHUNK // alpha.size)
    for start in range(0, flat.size, step):
        block = slice(start, start + step)
        u = flat[block, None]
        u2 = u * u
        four = 4.0 * a2 * u2
        den = 1.0 + four
        theta[block] = d * u[:, 0] + np.sum(0.5 * np.arctan(2.0 * alpha * u)
                                                 - ab2 * u2 * u / den, axis=1)
        log_rho[block] = 0.5 * s2 * u2[:, 0] + np.sum(0.25 * np.log1p(four)
                                                           + b2 * u2 / (2.0 * den), axis=1)
    shape = np.shape(t)
    return theta.reshape(shape), np.exp(-log_rho).reshape(shape)


def _inversion_integral(alpha: np.ndarray, beta: np.ndarray, sigma: float, d: float,
                        kernel: str) -> tuple[float, float]:
    """Inversion integral of ``X - x`` (``c - x = d``) and an absolute error estimate.

    ``kernel="tail"``: ``int_0^inf r sin(theta) / t dt`` (Imhof's integral, ``Pr(X > x) = 1/2 +
    I/pi``).  ``kernel="hockey"``: ``int_0^inf r (sin(theta) - t cos(theta)) / (t (1 + t^2)) dt``
    (``E (1 - e^(x - X))_+ = 1/2 + I/pi``).  Here ``r = 1/rho = |phi|``.
    """
    a2, b2 = alpha * alpha, beta * beta
    s2 = sigma * sigma
    slope0 = d + float(np.sum(alpha)) - (1.0 if kernel == "hockey" else 0.0)  # limit at t = 0

    phase_and_modulus = partial(_phase_and_modulus, alpha=alpha, b2=b2, s2=s2, d=d)

    def integrand(t: np.ndarray) -> np.ndarray:
        theta, r = phase_and_modulus(t)
        with np.errstate(divide="ignore", invalid="ignore"):
            if kernel == "tail":
                out = r * np.sin(theta) / t
            else:
                out = r * (np.sin(theta) - t * np.cos(theta)) / (t * (1.0 + t * t))
        return np.where(t == 0.0, slope0, out)

    # |hockey kernel| <= (1 + t) / (1 + t^2) |tail kernel| <= 1.21 |tail kernel|
    t_end = _truncation_point(alpha, b2, s2, _BOUND_TOL / (1.25 if kernel == "hockey" else 1.0))
    n_end = _pieces(alpha, b2, d, t_end)
    if n_end <= _QAWF_PIECES:
        value, error = _adaptive_gauss(integrand, t_end, n_end)
        return value, error + _BOUND_TOL
    # Algebraically decaying integrand: integrate directly up to t0, then as Fourier integrals.
    # With theta = omega t + psi(t) (psi bounded) and the kernel A sin(theta) + B cos(theta):
    # A sin + B cos = sin(omega t) (A cos psi - B sin psi) + cos(omega t) (A sin psi + B cos psi).
    t0 = min(_largest_affordable(alpha, b2, d, t_end), 8.0 / float(np.min(np.abs(alpha))))
    value, error = _adaptive_gauss(integrand, t0, _pieces(alpha, b2, d, t0))
    omega = d - float(np.sum(b2 / (4.0 * alpha)))

    def modulation(t: float, weight: str) -> float:
        den = 1.0 + 4.0 * a2 * t * t
        psi = float(np.sum(0.5 * np.arctan(2.0 * alpha * t) + b2 / (4.0 * alpha) * t / den))
        log_rho = float(np.sum(0.25 * np.log1p(4.0 * a2 * t * t) + b2 * t * t / (2.0 * den)))
        r_t = math.exp(-log_rho - 0.5 * s2 * t * t) / t
        a_k, b_k = (1.0, 0.0) if kernel == "tail" else (1.0 / (1 + t * t), -t / (1 + t * t))
        if weight == "sin":
            return r_t * (a_k * math.cos(psi) - b_k * math.sin(psi))
        return r_t * (a_k * math.sin(psi) + b_k * math.cos(psi))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        if abs(omega) * t0 < 1e-12:
            tail, tail_err = integrate.quad(lambda t: float(integrand(np.array(t))), t0, math.inf,
                                            epsabs=_BOUND_TOL, epsrel=1e-12, limit=500)
        else:
            tail, tail_err = _oscillatory_tail(modulation, omega, t0, t_end)
    return value + tail, error + tail_err


def _oscillatory_tail(modulation: Callable[[float, str], float], omega: float, t0: float,
                      t_end: float) -> tuple[float, float]:
    """``int_t0^inf [sin(omega t) m_s(t) + cos(omega t) m_c(t)] dt`` with ``m_w = modulation(t, w)``.

    QUADPACK's QAWF cuts ``[t0, inf)`` into cycles of length about ``2 pi`` whatever ``omega``; when the
    modulation varies on the scale of ``t0 << 2 pi`` (it behaves like a power of ``t``), its first cycle
    is resolved badly and its error estimate is not reliable (measured: errors near ``1e-10`` with
    estimates of ``3e-13`` for ``|omega| ~ 1e8``, ``t0 ~ 1e-4``). So ``[t0, t_g]`` is cut into geometric
    pieces ``[t, 2t]``, on each of which the modulation is smooth, integrated by QAWO (the oscillatory
    weight's moments in closed form), up to ``t_g = min(t_end, max(t0, 64 pi))`` (``t_end``: the rigorous
    truncation point), and QAWF is used from there on only when ``t_g < t_end``.
    """
    w, sgn = abs(omega), math.copysign(1.0, omega)
    total, err = 0.0, 0.0
    t_g = min(t_end, max(t0, 64.0 * math.pi))
    lo = t0
    while lo < t_g:
        hi = min(2.0 * lo, t_g)
        for weight, sign in (("sin", sgn), ("cos", 1.0)):
            v, e = integrate.quad(modulation, lo, hi, args=(weight,), weight=weight, wvar=w,
                                  epsabs=0.1 * _BOUND_TOL, epsrel=1e-13, limit=200)
            total, err = total + sign * v, err + e
        lo = hi
    if t_g < t_end:
        for weight, sign in (("sin", sgn), ("cos", 1.0)):
            v, e = integrate.quad(modulation, t_g, math.inf, args=(weight,), weight=weight, wvar=w,
                                  epsabs=_BOUND_TOL, limlst=200, limit=200)
            total, err = total + sign * v, err + e
    else:  # the rest, beyond the truncation point, is bounded by _BOUND_TOL
        err += _BOUND_TOL
    return total, err


def _log_truncation_bound(alpha: np.ndarray, b2: np.ndarray, s2: float, t: float) -> float:
    """Log of a rigorous bound on ``int_t^inf |integrand|``.

    For ``u >= t``: ``exp(-sum b2 u^2/(2(1+4 a2 u^2)))`` is at most its value at ``t``; each
    ``(1 + 4 a2 u^2)^(-1/4) <= (2|alpha| u)^(-1/2)``, used for the ``m`` terms with
    ``2|alpha| t >= 1`` (the others are bounded by 1); then ``int_t^inf u^(-1-m/2) du =
    (2/m) t^(-m/2)`` and ``int_t^inf u^(-1-m/2) e^(-s2 u^2/2) du
    <= t^(-m/2) e^(-s2 t^2/2) / (s2 t^2)``.
    """
    big = 2.0 * np.abs(alpha) * t >= 1.0
    m = int(np.count_nonzero(big))
    log_b = -float(np.sum(b2 * t * t / (2.0 * (1.0 + 4.0 * alpha**2 * t * t))))
    log_b -= 0.5 * float(np.sum(np.log(2.0 * np.abs(alpha[big]) * t)))
    options = []
    if m:
        options.append(math.log(2.0 / m))
    if s2 > 0:
        options.append(-0.5 * s2 * t * t - math.log(s2 * t * t))
    return log_b + (min(options) if options else math.inf)


def _truncation_point(alpha: np.ndarray, b2: np.ndarray, s2: float, tol: float) -> float:
    """Smallest ``T`` (to 1e-3 relative) with the truncation bound at ``T`` below ``tol``."""
    log_tol = math.log(tol)
    hi = 1.0 / math.sqrt(float(np.sum(2 * alpha**2 + b2)) + s2)
    while _log_truncation_bound(alpha, b2, s2, hi) > log_tol:
        hi *= 4.0
        if hi > 1e300:
            return math.inf
    lo = hi / 4.0
    while hi / lo > 1.001:
        mid = math.sqrt(lo * hi)
        if _log_truncation_bound(alpha, b2, s2, mid) > log_tol:
            lo = mid
        else:
            hi = mid
    return hi


def _pieces(alpha: np.ndarray, b2: np.ndarray, d: float, t: float) -> int:
    """Number of pieces of ``[0, t]`` each spanning at most one period of ``theta``.

    ``|theta'(u)| <= |d| + sum |alpha_j| + sum b2_j / (4|alpha_j|) g(min(4 alpha_j^2 u^2, 3))``
    with ``g(v) = v (3 + v) / (1 + v)^2`` increasing on ``[0, 3]`` (its maximum 9/8 is at 3).
    """
    if not math.isfinite(t):
        return 2**62
    v = np.minimum(4.0 * alpha**2 * t * t, 3.0)
    rate = abs(d) + float(np.sum(np.abs(alpha)))
    rate += float(np.sum(b2 / (4.0 * np.abs(alpha)) * v * (3.0 + v) / (1.0 + v) ** 2))
    return max(1, math.ceil(rate * t / (2.0 * math.pi)))


def _largest_affordable(alpha: np.ndarray, b2: np.ndarray, d: float, t_end: float) -> float:
    """Largest ``t0 <= t_end`` (to 1e-3) with at most ``_QAWF_PIECES`` pieces on ``[0, t0]``."""
    hi = min(t_end, 1e300)
    while _pieces(alpha, b2, d, hi) > _QAWF_PIECES:
        hi /= 2.0
    lo, hi = hi, 2.0 * hi  # pieces(lo) affordable, pieces(hi) not (or hi > t_end)
    while hi - lo > 1e-3 * lo:
        mid = 0.5 * (lo + hi)
        if _pieces(alpha, b2, d, mid) <= _QAWF_PIECES:
            lo = mid
        else:
            hi = mid
    return lo


_EPS = float(np.finfo(float).eps)
_BOUND_GRID = np.geomspace(1e-6, 1.0, 64)
_GL_LO = np.polynomial.legendre.leggauss(10)
_GL_HI = np.polynomial.legendre.leggauss(21)


def _adaptive_gauss(f, b: float, n: int, max_rounds: int = 40) -> tuple[float, float]:
    """``int_0^b f`` by Gauss-Legendre rules on ``n`` equal pieces, bisecting inaccurate pieces.

    Each piece gets a 10- and a 21-point rule, evaluated for all pieces at once (``f`` is
    vectorised).  A piece is accepted when the two differ by at most its share
    ``TAIL_TOL * length / b / 100`` of the budget; its 21-point value is kept and the difference
    is added to the returned error (a pessimistic estimate for the 21-point rule).
    """
    if b <= 0:
        return 0.0, 0.0
    edges = np.linspace(0.0, b, n + 1)

    def with_size(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        v = f(t)
        return v, np.abs(v)

    return _gauss_pieces(with_size, edges[:-1], edges[1:], tol=1e-2 * TAIL_TOL, relative=False,
                         max_rounds=max_rounds, max_pieces=200_000)


def _gauss_pieces(f, lo: np.ndarray, hi: np.ndarray, *, tol: float, relative: bool, max_rounds: int,
                  max_pieces: int) -> tuple[float, float]:
    """``sum_k int_{lo_k}^{hi_k} f`` and an error estimate, by 10- and 21-point Gauss-Legendre rules on
    every piece at once, bisecting the pieces where the two disagree.

    ``f(t)`` returns the values and their rounding scale (the size of the terms whose sum or difference
    they are) at the points ``t``. A piece passes when the two rules differ by at most its share of the
    budget (``tol`` times the piece's share of the total length; ``relative``: times the first
    round's total, which is returned as 0 at once when it is 0) or by rounding (``1e3`` ulps of the
    scale); its 21-point value is kept and the difference is added to the error.
    """
    length = float(np.sum(hi - lo))
    total, error, budget = 0.0, 0.0, tol
    for round_ in range(max_rounds):
        mid, half = 0.5 * (lo + hi), 0.5 * (hi - lo)
        g_lo = half * (f(mid[:, None] + half[:, None] * _GL_LO[0])[0] @ _GL_LO[1])
        f_hi, size = f(mid[:, None] + half[:, None] * _GL_HI[0])
        g_hi = half * (f_hi @ _GL_HI[1])
        diff = np.abs(g_hi - g_lo)
        if relative and round_ == 0:
            budget = tol * float(np.sum(g_hi))
            if budget == 0.0:
                return 0.0, 0.0
        roundoff = 1e3 * _EPS * half * (size @ _GL_HI[1])
        ok = diff <= np.maximum(budget * (2.0 * half) / length, roundoff)
        if round_ == max_rounds - 1 or lo.size > max_pieces:
            ok[:] = True
        total += float(np.sum(g_hi[ok]))
        error += float(np.sum(diff[ok]))
        if ok.all():
            break
        lo, hi, mid = lo[~ok], hi[~ok], mid[~ok]
        lo, hi = np.concatenate([lo, mid]), np.concatenate([mid, hi])
    return total, error


# --- Laplace inversion along a vertical line through the saddle point -----------------------------
def _log_mgf_complex(alpha: np.ndarray, beta: np.ndarray, s2: float, c: float,
                     u: np.ndarray) -> np.ndarray:
    """``K(u) = c u + s2 u^2/2 + sum_j [-ln(1 - 2 alpha_j u)/2 + beta_j^2 u^2 / (2 (1 - 2 alpha_j u))]``
    for complex ``u`` with ``Re(1 - 2 alpha_j u) > 0`` (principal logarithm: continuous there)."""
    u = np.asarray(u, dtype=complex)[..., None]
    one = 1.0 - 2.0 * alpha * u
    terms = -0.5 * np.log(one) + (beta * beta) * u * u / (2.0 * one)
    u = u[..., 0]
    return c * u + 0.5 * s2 * u * u + np.sum(terms, axis=-1)


def _dlog_mgf(alpha: np.ndarray, beta: np.ndarray, s2: float, c: float, s: float) -> float:
    """``K'(s)`` for real ``s`` in the domain."""
    one = 1.0 - 2.0 * alpha * s
    return float(c + s2 * s + np.sum(alpha / one + beta * beta * s * (1.0 - alpha * s) / one**2))


def _saddle_integral(law: QuadraticFormLaw, x: float) -> tuple[float, float]:
    """``ln E (1 - e^{x - X})_+`` by Laplace inversion, and its relative error estimate.

    With ``M(u) = E e^{uX}`` and a real ``kappa > 0`` inside the domain of ``M``,

        E (1 - e^{x - X})_+ = (1/2 pi i) int_{kappa - i inf}^{kappa + i inf} M(u) e^{-u x} / (u (u + 1)) du

    (from ``(1/2 pi i) int e^{uv} (1/u - 1/(u+1)) du = 1{v > 0} (1 - e^{-v})``). Writing ``u = kappa + i y``
    the integral is ``(1/pi) int_0^inf Re[...] dy``. The line goes through the saddle point of
    ``Phi(k) = ln M(k) - k x - ln(k (k + 1))`` on the real axis, where the integrand is real, positive and
    decays without oscillating at first order; the value is factored as ``exp(Phi(kappa))`` times an
    integral of order one, so tiny values keep their relative accuracy. Every ``kappa`` gives the same
    (exact) value; the saddle only conditions the quadrature. Returns ``(-inf, 0)`` when the integral is
    0 and ``(nan, inf)`` when the characteristic function decays too slowly for the truncation bound.
    """
    a, b = law.alpha, law.beta
    s2, c = law.sigma**2, law.c
    hi = min(law.mgf_domain()[1], 1e8)

    def g(k: float) -> float:  # Phi'(k)
        return _dlog_mgf(a, b, s2, c, k) - x - 1.0 / k - 1.0 / (1.0 + k)

    # Phi is convex on (0, hi); its minimum is the saddle. Bracket inside the open interval.
    k_lo, k_hi = 1e-12 * max(1.0, hi), hi - 1e-9 * max(1.0, hi)
    if g(k_lo) >= 0:
        kappa = k_lo
    elif g(k_hi) <= 0:
        kappa = k_hi
    else:
        from scipy.optimize import brentq

        kappa = brentq(g, k_lo, k_hi, xtol=1e-14 * max(1.0, k_hi), rtol=1e-12)
    norm = kappa * (kappa + 1.0)  # 1 / |kernel(kappa)|
    shift = float(_log_mgf_complex(a, b, s2, c, np.array([kappa])).real[0]) - kappa * x
    phi0 = shift - math.log(norm)
    # curvature of Phi at kappa sets the natural scale of y
    h = 1e-6 * max(kappa, 1e-3)
    k1, k2 = min(kappa + h, k_hi), max(kappa - h, k_lo)
    curv = (g(k1) - g(k2)) / (k1 - k2)
    scale = 1.0 / math.sqrt(curv) if curv > 0 and math.isfinite(curv) else max(kappa, 1.0)

    def integrand(y: float) -> float:  # scaled to 1 at y = 0
        u = complex(kappa, y)
        val = _log_mgf_complex(a, b, s2, c, np.array([u]))[0] - u * x - shift
        return float((np.exp(val) * norm / (u * (u + 1.0))).real)

    # Rigorous tail bound: under the tilted law (density e^{kappa X} / M(kappa)) X is again a
    # quadratic form, with alpha' = alpha / (1 - 2 alpha kappa), so |M(u) / M(kappa)| <=
    # prod (1 + 4 alpha'^2 y^2)^(-1/4) exp(-sigma^2 y^2 / 2) and, the scaled kernel being <= norm / y^2,
    # int_Y^inf |integrand| <= bound(Y) * norm / Y.
    a_t = a / (1.0 - 2.0 * a * kappa)

    def rest_bound(y: float) -> float:
        log_c = float(np.sum(-0.25 * np.log1p(4.0 * a_t * a_t * y * y))) - 0.5 * s2 * y * y
        return math.exp(log_c) * norm / y

    # |integrand| <= 1 (|M(u) e^{-ux}| <= M(kappa) e^{-kappa x}, |u (u + 1)| >= norm), so the running total
    # is at most hi_y: when the bound on the rest at the last hi_y tried is above 1e-12 hi_y, no hi_y can
    # pass the test below (the bound decreases in y) and the quadratures would only end in giving up
    last_y = scale * 2.0 ** math.ceil(math.log2(1e7) + 1e-12)
    if rest_bound(last_y) >= 1e-12 * last_y:
        return math.nan, math.inf
    total, err = 0.0, 0.0
    lo_y, hi_y = 0.0, scale
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        while True:
            v, e = integrate.quad(integrand, lo_y, hi_y, epsabs=1e-13 * abs(total),
                                  epsrel=1e-11, limit=1000)
            total, err = total + v, err + abs(e)
            rest = rest_bound(hi_y)
            if total > 0 and rest < 1e-12 * total:
                err += rest
                break
            if hi_y > 1e7 * scale:
                return math.nan, math.inf  # the algebraic tail is too slow: let the caller fall back
            lo_y, hi_y = hi_y, 2.0 * hi_y
    return phi0 + math.log(total / math.pi), err / total
