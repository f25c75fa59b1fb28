r"""Per-instance audit of the private power method (:mod:`dpgossip.protocol.ppm`), against its guarantee.

What the curator (or the federated server, which sees the same sums) releases at iteration ``l`` is
``Y_l = A V_{l-1} + G_l`` with ``A = X^T X``, ``V_{l-1}`` the previous orthonormalised iterate (public)
and ``G_l ~ N(0, s_l^2 I)``, ``s_l = Delta_l sigma``. **Given the released trajectory**
``V_0, ..., V_{L-1}``, the releases of ``X`` and of a neighbour ``X'`` (row ``x`` replaced by ``x'``) are
Gaussians with the same covariance and means ``A V_{l-1}`` and ``A' V_{l-1}``: a Gaussian mechanism
with

    mu^2(x, x') = sum_l ||C V_{l-1}||_F^2 / s_l^2,        C = x' x'^T - x x^T,
                = ||x'||^2 x'^T P x' + ||x||^2 x^T P x - 2 (x . x') (x'^T P x),
    P = sum_l V_{l-1} V_{l-1}^T / s_l^2

(expand ``C V = x' (V^T x')^T - x (V^T x)^T``). :func:`audit_ppm` maximises ``mu`` over every row of
``X`` and every allowed ``x'`` (``bounded``: ``||x'|| <= 1`` and ``||x' - x|| <= 1``; ``replace-one``:
``||x'|| <= 1``): every row is screened at its starts (``-x``, plus and minus every eigenvector of ``P``,
random directions), and the ``rows`` best are climbed by projected gradient ascent from each start.

**Element adjacency** (000's Eq. (7), ``neighbours = "element"``): ``A' = A + C`` for any symmetric
``C`` with ``sqrt(sum_i ||C_i:||_1^2) <= 1``. Then
``mu^2(C) = sum_l ||C V_{l-1}||_F^2 / s_l^2 = sum_i C_i: P C_i:^T``, and the supremum is **exact**:
``mu^2 = max_j P_jj``. Upper bound: for a row ``c`` with ``||c||_1 = a``,
``c P c^T <= a^2 max_j P_jj`` (a convex function on the l1 ball of radius ``a`` peaks at a vertex
``+-a e_j``), and ``sum_i a_i^2 <= 1``. Attained by the symmetric ``C = e_j e_j^T`` (one diagonal entry of
``A`` moved by 1). The guarantee's ``Delta_l = max_j ||(V_{l-1})_j:||`` (improved; the prior
``sqrt(p) max |V|`` is larger) gives ``sum_l Delta_l^2 / s_l^2 >= max_j P_jj``: the audit cannot exceed
it.

**What the value means.** It is the leakage *along the realised trajectory*: the exact ``mu`` of the
releases when the iterates are held at the ones this run produced, maximised by a search over
neighbours, so a per-instance lower estimate. The guarantee (:mod:`dpgossip.privacy.accountant`) bounds
the supremum over every trajectory and neighbour: ``mu <= sqrt(sum_l (Delta_l / s_l)^2) = sqrt(L) /
sigma`` whenever ``Delta_l`` bounds ``||C V_{l-1}||_F`` for the adjacency audited, so the audit can
never exceed it; when it does, one of them is wrong (``tests/privacy/test_ppm_audit.py`` checks it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpgossip.data.partition import PartitionedData
from dpgossip.errors import ConfigError, check_int, check_number
from dpgossip.privacy.neighbours import NEIGHBOUR_KINDS, project
from dpgossip.protocol.mechanism import gaussian_mechanism_epsilon
from dpgossip.protocol.ppm import PpmResult

__all__ = ["PpmAudit", "audit_ppm", "trajectory_metric", "replacement_mu2", "MEANING", "ELEMENT_MEANING"]

ELEMENT_MEANING = ("exact per-instance value under 000's element adjacency: the supremum over every "
                   "change C of A in Eq. (7)'s ball of the releases' mu along this run's realised iterates "
                   "(C = e_j e_j^T, j = row); the guarantee bounds every trajectory")
MEANING = ("per-instance lower estimate: the exact mu of the releases along this run's realised iterates, "
           "maximised over neighbours by a search; the guarantee bounds every trajectory")


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class PpmAudit:
    """The worst neighbour found for one run and its Gaussian-mechanism numbers."""

    mu: float
    """Mahalanobis norm of the worst neighbour found (along the realised trajectory)."""
    epsilon: float
    """Exact epsilon at :attr:`delta` of a Gaussian mechanism with :attr:`mu`."""
    delta: float
    row: int
    """Row of ``X`` replaced."""
    x_new: np.ndarray
    guarantee_mu: float
    """``sqrt(sum_l (Delta_l / s_l)^2)``: the ``mu`` the run's noise guarantees for its adjacency."""
    neighbours: str
    meaning: str = MEANING

    def to_row(self) -> dict[str, object]:
        """Tidy row."""
        return {"mu": self.mu, "epsilon": self.epsilon, "delta": self.delta, "row": self.row,
                "guarantee_mu": self.guarantee_mu, "neighbours": self.neighbours,
                "meaning": self.meaning}


def trajectory_metric(result: PpmResult) -> np.ndarray:
    """``P = sum_l V_{l-1} V_{l-1}^T / s_l^2`` of a run (``d x d``); ``ConfigError`` without noise."""
    s = np.asarray(result.noise_std, dtype=float)
    if np.any(s <= 0):
        raise ConfigError("result: a run without noise (noise_multiplier = 0) has no finite leakage",
                          field="result")
    V = result.iterates[:-1]  # V_0 .. V_{L-1}
    return np.einsum("lip,ljp,l->ij", V, V, 1.0 / s**2)


def replacement_mu2(P: np.ndarray, x: np.ndarray, x_new: np.ndarray) -> float:
    """``mu^2(x, x')`` of the module docstring for the metric ``P``."""
    return float((x_new @ x_new) * (x_new @ P @ x_new) + (x @ x) * (x @ P @ x)
                 - 2.0 * (x @ x_new) * (x_new @ P @ x))


def _gradient(P: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    Py, Px = P @ y, P @ x
    return 2.0 * y * (y @ Py) + 2.0 * (y @ y) * Py - 2.0 * x * (y @ Px) - 2.0 * (x @ y) * Px


def _climb(P: np.ndarray, x: np.ndarray, y: np.ndarray, kind: str, steps: int) -> tuple[float, np.ndarray]:
    """Projected gradient ascent of ``mu^2(x, .)`` from ``y`` with a backtracking step."""
    y = project(x, y, kind)
    f, step = replacement_mu2(P, x, y), 0.5
    for _ in range(steps):
        g = _gradient(P, x, y)
        ng = float(np.linalg.norm(g))
        if ng == 0.0:
            break
        while step > 1e-8:
            z = project(x, y + step * g / ng, kind)
            fz = replacement_mu2(P, x, z)
            if fz > f:
                y, f, step = z, fz, step * 1.5
                break
            step /= 4.0
        else:
            break
    return f, y


def _element_audit(result: PpmResult, delta: float) -> PpmAudit:
    """The exact worst element neighbour (module docstring): ``mu^2 = max_j P_jj``."""
    P = trajectory_metric(result)
    j = int(np.argmax(np.diag(P)))
    mu = math.sqrt(max(float(P[j, j]), 0.0))
    guarantee = float(math.sqrt(np.sum((result.sensitivities / result.noise_std) ** 2)))
    return PpmAudit(mu=mu, epsilon=gaussian_mechanism_epsilon(mu, delta), delta=delta, row=j,
                    x_new=np.eye(P.shape[0])[j], guarantee_mu=guarantee, neighbours="element",
                    meaning=ELEMENT_MEANING)


def audit_ppm(data_or_X: PartitionedData | np.ndarray, result: PpmResult, *, delta: float = 1e-5,
              neighbours: str = "bounded", rows: int = 16, random: int = 4, steps: int = 60,
              seed: int = 0) -> PpmAudit:
    """The worst neighbour of a run of :func:`~dpgossip.protocol.ppm.run_ppm` found by the search of the
    module docstring, and its exact Gaussian-mechanism epsilon.

    Parameters
    ----------
    data_or_X
        The data the run used (rows in the unit ball).
    result
        The run; its realised iterates and noise levels define the audited releases.
    delta
        Epsilon is reported at this delta.
    neighbours
        ``bounded`` (``||x'|| <= 1``, ``||x' - x|| <= 1``), ``replace-one`` (``||x'|| <= 1``), or
        ``element`` (000's Eq. (7): exact, no search; ``row`` is then the coordinate ``j`` of the worst
        change ``C = e_j e_j^T`` of ``A`` and ``x_new`` is ``e_j``).
    rows, random, steps, seed
        Rows climbed (those whose best start is highest; every row is screened at its starts), random
        starts per row, ascent steps per start, and the seed of the random starts.

    Returns
    -------
    PpmAudit
        A per-instance lower estimate (:data:`MEANING`); exact for ``element``
        (:data:`ELEMENT_MEANING`).
    """
    X = data_or_X.X if isinstance(data_or_X, PartitionedData) else np.asarray(data_or_X, dtype=float)
    if X.ndim != 2 or X.shape[1] != result.basis.shape[0]:
        raise ConfigError(f"data_or_X must have d = {result.basis.shape[0]} columns (the run's), got "
                          f"shape {X.shape}", field="data_or_X")
    if neighbours not in (*NEIGHBOUR_KINDS, "element"):
        raise ConfigError(f"neighbours must be one of {', '.join(NEIGHBOUR_KINDS)}, element; got "
                          f"{neighbours!r}", field="neighbours")
    delta = check_number(delta, "delta", low=0, high=1, low_open=True, high_open=True)
    if neighbours == "element":
        return _element_audit(result, delta)
    rows, random = check_int(rows, "rows", 1), check_int(random, "random", 0)
    steps = check_int(steps, "steps", 1)
    P = trajectory_metric(result)
    _, E = np.linalg.eigh(P)
    rng = np.random.default_rng(seed)
    screened = []  # every row: its starts, projected, and the best of them
    for r, x in enumerate(X):
        starts = [project(x, np.asarray(y0, dtype=float), neighbours)
                  for y0 in (-x, *E.T, *(-E.T), *rng.standard_normal((random, X.shape[1])))]
        values = [replacement_mu2(P, x, y) for y in starts]
        screened.append((max(values), r, starts))
    best = (-math.inf, 0, X[0])
    for _, r, starts in sorted(screened, key=lambda t: -t[0])[:rows]:
        for y0 in starts:
            f, y = _climb(P, X[r], y0, neighbours, steps)
            if f > best[0]:
                best = (f, r, y)
    mu = math.sqrt(max(best[0], 0.0))
    guarantee = float(math.sqrt(np.sum((result.sensitivities / result.noise_std) ** 2)))
    return PpmAudit(mu=mu, epsilon=gaussian_mechanism_epsilon(mu, delta), delta=delta, row=best[1],
                    x_new=best[2], guarantee_mu=guarantee, neighbours=neighbours)
