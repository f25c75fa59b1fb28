"""Likelihood-ratio membership attack and its empirical epsilon lower bound (docs/model.md, Section 5.3).

An (epsilon, delta)-DP mechanism ``M`` bounds every test of ``H_0: X`` against ``H_1: X'`` that sees
one output: a test that says "X'" on a set ``S`` has false-positive rate ``FPR = Pr_X(S)`` and
false-negative rate ``FNR = Pr_X'(not S)``, and the two inequalities ``Pr_X'(S) <= e^eps Pr_X(S) +
delta`` and ``Pr_X(not S) <= e^eps Pr_X'(not S) + delta`` read

    FPR + e^eps FNR >= 1 - delta,        e^eps FPR + FNR >= 1 - delta

(the hypothesis-testing characterisation of DP: Kairouz, Oh & Viswanath, "The composition theorem
for differential privacy", ICML 2015).  Hence, for any test,

    epsilon >= max( ln((1 - delta - FNR)/FPR),  ln((1 - delta - FPR)/FNR),  0 ).

An audit by attack (Jagielski, Ullman & Oprea, "Auditing differentially private machine learning: how
private is private SGD?", NeurIPS 2020; Nasr, Song, Thakurta, Papernot & Carlini, "Adversary
instantiation: lower bounds for differentially private machine learning", IEEE S&P 2021)
estimates ``FPR`` and ``FNR`` of one test from independent runs under ``X`` and ``X'`` and replaces
them by one-sided Clopper-Pearson upper bounds: the result is a lower bound on the mechanism's
epsilon that holds with the stated confidence.  It can never exceed a correct auditor's epsilon
(except with probability at most ``1 - confidence``).

The test used here is the Neyman-Pearson optimal one for the two Gaussian views the auditor derives
(:func:`dpgossip.protocols.ddppm.audit.view_gaussian`): say "X'" when the log-likelihood ratio
``L(v) = ln p(v)/q(v)`` is below a threshold.  The threshold is chosen on a calibration split and
the error counts are taken on the disjoint held-out split, so the Clopper-Pearson bounds are valid
(the threshold is independent of the samples that are counted).
"""

from __future__ import annotations

__all__ = [
    "AttackResult",
    "clopper_pearson",
    "clopper_pearson_upper",
    "empirical_epsilon_lower_bound",
    "error_rate_upper_bounds",
    "likelihood_ratio_attack",
    "log_likelihood_ratio",
]

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
from scipy import stats

from dpgossip.errors import ConfigError
from dpgossip.privacy.gaussian_pair import GaussianPair

GaussianSpec = GaussianPair | tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


# --- Clopper-Pearson ---------------------------------------------------------------------------
def _check_counts(k: object, n: object, what: str = "k") -> tuple[np.ndarray, np.ndarray]:
    ka, na = np.asarray(k), np.asarray(n)
    for name, a in ((what, ka), ("n", na)):
        if not (np.issubdtype(a.dtype, np.integer) or
                (np.issubdtype(a.dtype, np.floating) and np.all(a == np.round(a)))):
            raise ConfigError(f"{name} must be an integer count, got {a!r}")
    if np.any(na < 1) or np.any(ka < 0) or np.any(ka > na):
        raise ConfigError(f"counts must satisfy 0 <= {what} <= n and n >= 1, got {what}={k!r}, "
                          f"n={n!r}")
    return ka.astype(float), na.astype(float)


def _check_confidence(confidence: object) -> float:
    if not (isinstance(confidence, numbers.Real) and not isinstance(confidence, bool)
            and 0 < confidence < 1):
        raise ConfigError(f"confidence must be a number in (0, 1), got {confidence!r}")
    return float(confidence)


def clopper_pearson_upper(k: int | np.ndarray, n: int | np.ndarray,
                          confidence: float = 0.95) -> float | np.ndarray:
    """One-sided exact (Clopper-Pearson) upper confidence bound on a binomial proportion.

    ``p_u`` solves ``Pr(Bin(n, p_u) <= k) = 1 - confidence``, i.e.

        p_u = Beta^{-1}(confidence; k + 1, n - k)   (k < n),      p_u = 1   (k = n),

    so ``Pr_p(p <= p_u) >= confidence`` for every ``p``.  For ``k = 0`` this is
    ``1 - (1 - confidence)^(1/n)``: an upper bound exists even when no error was observed.
    Vectorised over ``k`` (and ``n``).
    """
    conf = _check_confidence(confidence)
    ka, na = _check_counts(k, n)
    full = ka >= na
    up = stats.beta.ppf(conf, ka + 1, np.where(full, 1.0, na - ka))
    up = np.where(full, 1.0, up)
    return float(up) if up.ndim == 0 else up


def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Two-sided exact (Clopper-Pearson) confidence interval for a binomial proportion ``k / n``.

    With ``a = 1 - confidence``,

        low  = Beta^{-1}(a/2; k, n - k + 1)       (0 if k = 0),
        high = Beta^{-1}(1 - a/2; k + 1, n - k)   (1 if k = n),

    equal-tailed: each side fails with probability at most ``a/2``.  Same values as
    ``scipy.stats.binomtest(k, n).proportion_ci(confidence, method="exact")``.
    """
    conf = _check_confidence(confidence)
    ka, na = _check_counts(k, n)
    if ka.ndim or na.ndim:
        raise ConfigError(f"clopper_pearson takes scalar counts, got k={k!r}, n={n!r}")
    a = 1.0 - conf
    low = 0.0 if ka == 0 else float(stats.beta.ppf(a / 2, ka, na - ka + 1))
    high = float(clopper_pearson_upper(int(ka), int(na), 1.0 - a / 2))
    return low, high


# --- the hypothesis-testing bound --------------------------------------------------------------
def error_rate_upper_bounds(fp_count: int, n0: int, fn_count: int, n1: int,
                            confidence: float = 0.95) -> tuple[float, float]:
    """Simultaneous upper bounds ``(FPR_u, FNR_u)`` holding together with probability ``>= confidence``.

    Union (Bonferroni) bound: each is a one-sided Clopper-Pearson bound at level
    ``1 - (1 - confidence)/2``, so ``Pr(FPR > FPR_u or FNR > FNR_u) <= 1 - confidence``.  (The two
    counts come from independent runs, so the exact joint level is ``(1 - a/2)^2 >= 1 - a``; the
    union bound is used because it needs no independence.)
    """
    conf = _check_confidence(confidence)
    each = 1.0 - (1.0 - conf) / 2.0
    fpr_u = clopper_pearson_upper(fp_count, n0, each)
    fnr_u = clopper_pearson_upper(fn_count, n1, each)
    return fpr_u, fnr_u  # type: ignore[return-value]


def _eps_from_rates(fpr_u: np.ndarray | float, fnr_u: np.ndarray | float,
                    delta: float) -> np.ndarray | float:
    """``max(ln((1 - delta - FNR_u)/FPR_u), ln((1 - delta - FPR_u)/FNR_u), 0)``, vectorised."""
    fpr_u, fnr_u = np.asarray(fpr_u, dtype=float), np.asarray(fnr_u, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(1 - delta - fnr_u > 0, np.log(np.maximum(1 - delta - fnr_u, 1e-300) / fpr_u),
                     0.0)
        b = np.where(1 - delta - fpr_u > 0, np.log(np.maximum(1 - delta - fpr_u, 1e-300) / fnr_u),
                     0.0)
    out = np.maximum(np.maximum(a, b), 0.0)
    return float(out) if out.ndim == 0 else out


def _check_delta(delta: object) -> float:
    if not (isinstance(delta, numbers.Real) and not isinstance(delta, bool) and 0 <= delta < 1):
        raise ConfigError(f"delta must be a number in [0, 1), got {delta!r}")
    return float(delta)


def empirical_epsilon_lower_bound(fp_count: int, n0: int, fn_count: int, n1: int, delta: float,
                                  confidence: float = 0.95) -> float:
    """Epsilon lower bound from the error counts of one test, valid with probability ``confidence``.

    The test says "X'" on a fixed set ``S``; ``fp_count`` of ``n0`` independent runs under ``X`` fell
    in ``S`` (false positives) and ``fn_count`` of ``n1`` runs under ``X'`` fell outside it (false
    negatives).  With the simultaneous upper bounds ``(FPR_u, FNR_u)`` of
    :func:`error_rate_upper_bounds` (one-sided Clopper-Pearson, union bound),

        eps_lb = max( ln((1 - delta - FNR_u)/FPR_u),  ln((1 - delta - FPR_u)/FNR_u),  0 ).

    Every (epsilon, delta)-DP mechanism satisfies ``FPR + e^eps FNR >= 1 - delta`` and
    ``e^eps FPR + FNR >= 1 - delta`` (Kairouz, Oh & Viswanath 2015), and both logarithms above
    decrease as the rates grow; so on the event ``FPR <= FPR_u, FNR <= FNR_u`` (probability
    ``>= confidence``) ``eps_lb <= eps``: ``Pr(eps_lb > eps) <= 1 - confidence`` for the mechanism's
    true epsilon at ``delta`` (the audit of Jagielski, Ullman & Oprea 2020 and Nasr et al. 2021).
    Zero counts are fine: the upper bounds are then ``1 - (a/2)^(1/n)`` (``a = 1 - confidence``),
    never zero, so the bound is finite, at most about ``ln(n / ln(2/a))``.

    Parameters
    ----------
    fp_count, n0
        False positives among the runs under ``X`` (``H_0``).
    fn_count, n1
        False negatives among the runs under ``X'`` (``H_1``).
    delta
        In ``[0, 1)``.
    confidence
        In ``(0, 1)``; the joint coverage of the two upper bounds.
    """
    dl = _check_delta(delta)
    fpr_u, fnr_u = error_rate_upper_bounds(fp_count, n0, fn_count, n1, confidence)
    return float(_eps_from_rates(fpr_u, fnr_u, dl))


# --- the likelihood-ratio attack ---------------------------------------------------------------
def _as_gaussians(pair: GaussianSpec) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    if isinstance(pair, GaussianPair):
        if pair.mean0 is None or pair.cov0 is None or pair.mean1 is None or pair.cov1 is None:
            raise ConfigError("the attack needs the dense means and covariances; this GaussianPair "
                              "was made by from_whitened")
        parts = (pair.mean0, pair.cov0, pair.mean1, pair.cov1)
    else:
        try:
            parts = tuple(np.asarray(a, dtype=float) for a in pair)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"pair must be a GaussianPair or (mean0, cov0, mean1, cov1), got "
                              f"{type(pair).__name__}") from exc
        if len(parts) != 4:
            raise ConfigError(f"pair must be (mean0, cov0, mean1, cov1), got {len(parts)} items")
    m0, S0, m1, S1 = parts
    k = m0.size
    if m0.shape != (k,) or m1.shape != (k,) or S0.shape != (k, k) or S1.shape != (k, k):
        raise ConfigError(f"pair: means must be (k,) and covariances (k, k), got {m0.shape}, "
                          f"{S0.shape}, {m1.shape}, {S1.shape}")
    return m0, S0, m1, S1


def _neg_half_mahalanobis_and_logdet(v: np.ndarray, mean: np.ndarray, cov: np.ndarray,
                                     name: str) -> tuple[np.ndarray, float]:
    try:
        C = sla.cholesky(0.5 * (cov + cov.T), lower=True)
    except sla.LinAlgError as exc:
        raise ConfigError(f"{name} is not positive definite: the likelihood-ratio attack needs "
                          f"full-rank views (reduce the view to its support first)") from exc
    y = sla.solve_triangular(C, (v - mean).T, lower=True)
    return -0.5 * np.einsum("ij,ij->j", y, y), float(np.sum(np.log(np.diag(C))))


def log_likelihood_ratio(samples: np.ndarray, pair: GaussianSpec) -> np.ndarray:
    """The privacy-loss score ``L(v) = ln p(v) - ln q(v)`` of each row of ``samples``.

    ``p = N(mean0, cov0)`` (the view under ``X``), ``q = N(mean1, cov1)`` (under ``X'``); with
    Cholesky factors ``cov_j = C_j C_j^T``,

        L(v) = (1/2) ||C_1^{-1}(v - mean1)||^2 - (1/2) ||C_0^{-1}(v - mean0)||^2
               + sum ln diag C_1 - sum ln diag C_0.

    Both covariances must be positive definite (:class:`ConfigError` otherwise).
    """
    m0, S0, m1, S1 = _as_gaussians(pair)
    v = np.asarray(samples, dtype=float)
    if v.ndim != 2 or v.shape[1] != m0.size:
        raise ConfigError(f"samples must be (runs, {m0.size}), got shape {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ConfigError("samples contain non-finite values")
    a0, ld0 = _neg_half_mahalanobis_and_logdet(v, m0, S0, "cov0")
    a1, ld1 = _neg_half_mahalanobis_and_logdet(v, m1, S1, "cov1")
    return (a0 - ld0) - (a1 - ld1)


@dataclass(frozen=True, slots=True, kw_only=True)
class AttackResult:
    """Outcome of :func:`likelihood_ratio_attack`: the held-out error counts of the test
    "say X' iff ``L(v) < threshold``" and the epsilon lower bound they certify."""

    threshold: float
    fp: int
    """False positives: held-out runs under ``X`` with ``L < threshold``."""
    n0: int
    fn: int
    """False negatives: held-out runs under ``X'`` with ``L >= threshold``."""
    n1: int
    fpr: float
    fnr: float
    fpr_upper: float
    fnr_upper: float
    """Simultaneous Clopper-Pearson upper bounds (:func:`error_rate_upper_bounds`)."""
    eps_lb: float
    delta: float
    confidence: float
    calibration0: int
    """Runs under ``X`` used to choose the threshold (0: the threshold was given)."""
    calibration1: int

    def to_row(self) -> dict[str, object]:
        """Tidy row."""
        return {"threshold": self.threshold, "fp": self.fp, "n0": self.n0, "fn": self.fn,
                "n1": self.n1, "fpr": self.fpr, "fnr": self.fnr, "fpr_upper": self.fpr_upper,
                "fnr_upper": self.fnr_upper, "eps_lb": self.eps_lb, "delta": self.delta,
                "confidence": self.confidence, "calibration0": self.calibration0,
                "calibration1": self.calibration1}


def _counts(L0: np.ndarray, L1: np.ndarray, thresholds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``#{L0 < t}`` and ``#{L1 >= t}`` for each threshold ``t``."""
    fp = np.searchsorted(np.sort(L0), thresholds, side="left")
    fn = L1.size - np.searchsorted(np.sort(L1), thresholds, side="left")
    return fp, fn


def likelihood_ratio_attack(samples0: np.ndarray, samples1: np.ndarray, pair: GaussianSpec, *,
                            delta: float, confidence: float = 0.95,
                            threshold: float | None = None, calibration: float = 0.5,
                            grid: Sequence[float] | None = None) -> AttackResult:
    """Likelihood-ratio attack on views simulated under ``X`` (``samples0``) and ``X'`` (``samples1``).

    Score ``L(v) = ln p(v)/q(v)`` (:func:`log_likelihood_ratio`, with the auditor's Gaussians
    ``p`` of ``X`` and ``q`` of ``X'``); the test says "X'" iff ``L(v) < threshold``.  By the
    Neyman-Pearson lemma these tests trace the optimal trade-off between ``FPR`` and ``FNR``
    when the auditor's Gaussians are the true laws of the views.

    Threshold: given (``threshold``; every sample is then held out), or chosen on a calibration
    split (the first ``ceil(calibration * runs)`` rows of each sample set; rows must be i.i.d.) as
    the candidate that maximises the epsilon lower bound computed on the calibration counts.
    Candidates: ``grid``, or the midpoints between consecutive sorted calibration scores.  The
    error counts and :func:`empirical_epsilon_lower_bound` are then computed on the remaining,
    held-out rows only, so the threshold is independent of the counted samples and the
    Clopper-Pearson bounds keep their coverage (no selection bias).

    Parameters
    ----------
    samples0, samples1
        ``(runs, k)`` views simulated under ``X`` and ``X'``.
    pair
        The auditor's :class:`GaussianPair` (dense) or ``(mean0, cov0, mean1, cov1)``.
    delta, confidence
        As in :func:`empirical_epsilon_lower_bound`.
    threshold, calibration, grid
        See above; ``calibration`` in ``(0, 1)``.
    """
    dl = _check_delta(delta)
    conf = _check_confidence(confidence)
    L0 = log_likelihood_ratio(samples0, pair)
    L1 = log_likelihood_ratio(samples1, pair)
    if threshold is not None:
        if not (isinstance(threshold, numbers.Real) and math.isfinite(threshold)):
            raise ConfigError(f"threshold must be a finite number, got {threshold!r}")
        tau, c0, c1 = float(threshold), 0, 0
    else:
        if not (isinstance(calibration, numbers.Real) and 0 < calibration < 1):
            raise ConfigError(f"calibration must be a fraction in (0, 1), got {calibration!r}")
        c0, c1 = math.ceil(calibration * L0.size), math.ceil(calibration * L1.size)
        if c0 >= L0.size or c1 >= L1.size:
            raise ConfigError(f"calibration = {calibration} leaves no held-out runs "
                              f"({L0.size} and {L1.size} runs)")
        cal0, cal1 = L0[:c0], L1[:c1]
        if grid is None:
            s = np.unique(np.concatenate([cal0, cal1]))
            cand = (s[:-1] + s[1:]) / 2 if s.size > 1 else s
        else:
            cand = np.asarray(grid, dtype=float).reshape(-1)
            if cand.size == 0 or not np.all(np.isfinite(cand)):
                raise ConfigError("grid must be a nonempty list of finite thresholds")
        fp_c, fn_c = _counts(cal0, cal1, cand)
        fpr_u, fnr_u = error_rate_upper_bounds(fp_c, c0, fn_c, c1, conf)
        tau = float(cand[int(np.argmax(_eps_from_rates(fpr_u, fnr_u, dl)))])
    h0, h1 = L0[c0:], L1[c1:]
    fp, fn = int(np.sum(h0 < tau)), int(np.sum(h1 >= tau))
    fpr_up, fnr_up = error_rate_upper_bounds(fp, h0.size, fn, h1.size, conf)
    return AttackResult(threshold=tau, fp=fp, n0=int(h0.size), fn=fn, n1=int(h1.size),
                        fpr=fp / h0.size, fnr=fn / h1.size, fpr_upper=float(fpr_up),
                        fnr_upper=float(fnr_up),
                        eps_lb=float(_eps_from_rates(fpr_up, fnr_up, dl)), delta=dl,
                        confidence=conf, calibration0=c0, calibration1=c1)
