"""Spectral summary of a symmetric doubly-stochastic mixing matrix and consensus round counts.

For symmetric ``W`` with ``W 1 = 1`` and eigenvalues ``1 = lambda_1 >= lambda_2 >= ... >=
lambda_m``, the matrix ``W - 11^T/m`` has eigenvalues ``0, lambda_2, ..., lambda_m`` (the
eigenvector ``1`` is sent to 0), hence ::

    SLEM = max(|lambda_2|, |lambda_m|) = ||W - 11^T/m||_2,

and, because ``W^c - 11^T/m = (W - 11^T/m)^c`` ::

    ||W^c - 11^T/m||_2 = SLEM^c     for every c >= 0 (c >= 1 when SLEM = 0).

So ``c`` gossip rounds shrink the disagreement ``x - mean(x) 1`` of any vector by at least the
factor ``SLEM^c``, with equality for the worst-case vector.

Up to :data:`DENSE_MAX_AGENTS` agents every eigenvalue is computed densely (``eigvalsh``). Above, the
three extreme eigenvalues ``lambda_1 >= lambda_2`` and ``lambda_m`` of the sparse ``W`` come from
Lanczos (:func:`scipy.sparse.linalg.eigsh`, ``which='BE'``, a fixed start vector), with relative
tolerance :data:`LANCZOS_TOL`; since ``W 1 = 1`` (checked to ``1e-9``), ``SLEM = max(|lambda_2|,
|lambda_m|)``. Each returned Ritz value ``theta`` with Ritz vector ``v`` is within the residual norm
``||W v - theta v||`` of an eigenvalue of ``W`` (symmetric ``W``), and that bound is reported as
:attr:`SpectralSummary.error_bound`. Lanczos that does not converge raises ``RuntimeError``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import networkx as nx
import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.sparse import csgraph

from dpgossip.arrays import check_array
from dpgossip.errors import ConfigError, check_number
from dpgossip.topology.matrices import DENSE_MAX_AGENTS
from dpgossip.topology.network import Network

__all__ = ["DENSE_MAX_AGENTS", "LANCZOS_TOL", "SpectralSummary", "consensus_rounds",
           "extreme_eigenvalues", "laplacian_extremes", "rounds_for", "spectral_summary"]

LANCZOS_TOL = 1e-10
"""Relative tolerance of the Lanczos eigenvalues (``eigsh``'s ``tol``) above :data:`DENSE_MAX_AGENTS`."""
LANCZOS_MAXITER = 100_000
"""Restarts allowed to ``eigsh`` before it is declared not to converge."""
_START_SEED = 20_240_515
"""Seed of the fixed Lanczos start vector (no global random state: same input, same output)."""


def start_vector(n: int) -> np.ndarray:
    """Fixed Lanczos start vector of length ``n``: standard normal from seed :data:`_START_SEED`."""
    return np.random.default_rng(_START_SEED).standard_normal(n)


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtremeEigenvalues:
    """Ritz values of a symmetric operator, ascending, and the residual bound on each."""

    values: np.ndarray
    """Eigenvalues found (ascending)."""
    error_bound: float
    """``max_k ||A v_k - theta_k v_k||``: every value is within this of an eigenvalue of ``A``."""

    def to_row(self) -> dict[str, object]:
        """Tidy row."""
        return {"values": self.values.tolist(), "error_bound": self.error_bound}


def extreme_eigenvalues(A: sp.sparray | spla.LinearOperator, k: int, which: str, what: str, *,
                        maxiter: int = LANCZOS_MAXITER, tol: float = LANCZOS_TOL,
                        ncv: int | None = None,
                        v0: np.ndarray | None = None) -> ExtremeEigenvalues:
    """``k`` extreme eigenvalues of a symmetric ``A`` by Lanczos (``eigsh(A, k, which)``).

    Uses ``v0`` (default :func:`start_vector`), relative tolerance :data:`LANCZOS_TOL` and at most ``maxiter``
    restarts; ``what`` names the matrix in the error raised on non-convergence
    (``RuntimeError``, chained to :class:`scipy.sparse.linalg.ArpackNoConvergence`). The residual
    norms ``||A v - theta v||`` of the Ritz pairs bound the distance of each ``theta`` to the
    spectrum (symmetric ``A``).
    """
    n = A.shape[0]
    try:
        theta, V = spla.eigsh(A, k=k, which=which,
                              v0=start_vector(n) if v0 is None else v0, tol=tol,
                              maxiter=maxiter, ncv=min(n, ncv or max(2 * k + 1, 32)))
    except spla.ArpackNoConvergence as exc:
        raise RuntimeError(f"Lanczos (eigsh, which={which!r}, k={k}) did not converge on {what} "
                           f"of size {n} within {maxiter} restarts at tolerance "
                           f"{tol:g}") from exc
    resid = np.linalg.norm(A @ V - V * theta, axis=0)
    order = np.argsort(theta)
    return ExtremeEigenvalues(values=theta[order], error_bound=float(resid.max()))


def _shift_invert_end(S: sp.csr_array, sigma: float, sign: float, what: str) -> ExtremeEigenvalues:
    """The eigenvalue of ``S`` nearest ``sigma`` on the side ``sign`` (+1: above, -1: below), other than
    ``lambda_1 = 1`` with eigenvector ``1``, by Lanczos on ``P (sign (S - sigma I))^{-1} P``.

    ``P = I - 11^T/m`` removes the eigenvector ``1`` (for ``sign = -1`` and ``sigma`` just above 1 it
    would dominate); ``sign (S - sigma I)`` is positive definite when every other eigenvalue lies on
    that side of ``sigma``, and its inverse (one sparse LU) maps the wanted eigenvalue ``lambda`` to the
    largest value ``1 / |lambda - sigma|``, well separated from the next even when the eigenvalues of
    ``S`` cluster (a long ring). The result is refined: ``lambda = sigma + sign / theta`` and the
    residual bound is recomputed on ``S`` itself.
    """
    m = S.shape[0]
    lu = spla.splu(sp.csc_array(sign * (S - sigma * sp.eye_array(m, format="csr"))))

    def apply(v: np.ndarray) -> np.ndarray:
        v = np.ravel(v) - np.mean(v)
        w = lu.solve(v)
        return w - np.mean(w)

    op = spla.LinearOperator((m, m), matvec=apply, dtype=float)
    n_wanted = 1
    theta, V = spla.eigsh(op, k=n_wanted, which="LA", v0=start_vector(m), tol=LANCZOS_TOL,
                          maxiter=LANCZOS_MAXITER, ncv=min(m, 32))
    v = V[:, 0] / np.linalg.norm(V[:, 0])
    lam = float(v @ (S @ v))                       # Rayleigh quotient on S itself
    resid = float(np.linalg.norm(S @ v - lam * v))
    return ExtremeEigenvalues(values=np.array([lam]), error_bound=resid)


PLAIN_MAXITER = 3
"""Restarts given to plain Lanczos before the shift-invert fallback (about 100 products ``W v``)."""


def _end_of_spectrum(S: sp.csr_array, top: bool) -> ExtremeEigenvalues:
    """``lambda_2`` (``top``) or ``lambda_m`` of a symmetric ``S`` with ``S 1 = 1``.

    Plain Lanczos first (``PLAIN_MAXITER`` restarts; on ``S - 11^T/m`` for the top, so that
    ``lambda_1 = 1`` is not among the values sought); when the end of the spectrum is too clustered
    for it to converge, shift-invert (:func:`_shift_invert_end`) about ``sigma = 1 + 1e-12`` for the
    top and about Gershgorin's lower bound ``min_i (2 S_ii - sum_j |S_ij|) - 1e-12`` for the bottom.
    """
    m = S.shape[0]
    if top:
        op = spla.LinearOperator((m, m), dtype=float, matvec=lambda v: S @ v - np.mean(v, axis=0))
    else:
        op = S
    try:
        return extreme_eigenvalues(op, 1, "LA" if top else "SA", "the mixing matrix W",
                                   maxiter=PLAIN_MAXITER)
    except RuntimeError:
        pass
    if top:
        return _shift_invert_end(S, 1.0 + 1e-12, -1.0, "the mixing matrix W")
    gersh = float(np.min(2.0 * S.diagonal() - abs(S).sum(axis=1))) - 1e-12
    return _shift_invert_end(S, gersh, 1.0, "the mixing matrix W")


BANDED_LU_MAX = 64
"""Largest bandwidth (after reverse Cuthill-McKee) for which the bottom of the spectrum is found by
shift-invert (a sparse LU whose fill stays inside the band); wider graphs use :data:`LOOSE_TOL`."""
LOOSE_TOL = 1e-6
"""Relative tolerance of the last resort for ``lambda_m``: Lanczos with ``LOOSE_NCV`` vectors."""
LOOSE_NCV = 64


def anderson_morley_lower(S: sp.csr_array) -> float | None:
    """Lower bound on ``lambda_m(S)`` for symmetric ``S`` with nonnegative off-diagonal entries.

    With ``delta_i = sum_{j != i} S_ij`` and ``L = diag(delta) - offdiag(S)`` (a weighted Laplacian),
    ``S = I + E - L`` with ``E = diag(S 1 - 1)``, so
    ``lambda_m(S) >= 1 - ||E||_inf - lambda_max(L) >= 1 - max|S 1 - 1| - max_{S_ij > 0, i != j}
    (delta_i + delta_j)`` (Anderson-Morley: ``L = B diag(w) B^T`` has the nonzero spectrum of
    ``B^T B diag(w)``, whose Gershgorin row of edge ``{i, j}`` sums to ``delta_i + delta_j``).
    ``None`` if an off-diagonal entry is negative (the bound needs ``w >= 0``) or there is no edge.
    """
    off = sp.csr_array(S - sp.diags_array(S.diagonal()))
    off.eliminate_zeros()
    if off.nnz == 0 or off.data.min() < 0:
        return None
    delta = np.asarray(off.sum(axis=1)).ravel()
    coo = off.tocoo()
    drift = float(np.max(np.abs(np.asarray(S.sum(axis=1)).ravel() - 1.0)))
    return 1.0 - drift - float(np.max(delta[coo.row] + delta[coo.col]))


def _bandwidth(S: sp.csr_array) -> int:
    """Bandwidth ``max |p(i) - p(j)|`` over stored entries after reverse Cuthill-McKee."""
    perm = csgraph.reverse_cuthill_mckee(sp.csr_matrix(S), symmetric_mode=True)
    where = np.empty_like(perm)
    where[perm] = np.arange(len(perm))
    coo = S.tocoo()
    return int(np.max(np.abs(where[coo.row] - where[coo.col]))) if coo.nnz else 0


def _bottom(S: sp.csr_array, lam_2: float) -> tuple[ExtremeEigenvalues, bool]:
    """``lambda_m`` of ``S`` and whether it is an eigenvalue (``True``) or a lower bound (``False``).

    1. plain Lanczos (``PLAIN_MAXITER`` restarts, tolerance ``LANCZOS_TOL``);
    2. if the Anderson-Morley bound ``b`` (:func:`anderson_morley_lower`) satisfies ``b >= -lam_2``, then
       ``|lambda_m| <= lambda_2`` and the SLEM is ``lambda_2`` whatever ``lambda_m`` is: ``b`` is returned
       as a bound (``lam_2`` is a Ritz value, a lower bound on ``lambda_2``, so this is safe);
    3. shift-invert when the graph is banded (bandwidth <= ``BANDED_LU_MAX``: rings, paths);
    4. Lanczos with ``LOOSE_NCV`` vectors at tolerance ``LOOSE_TOL`` (error reported).
    """
    try:
        return extreme_eigenvalues(S, 1, "SA", "the mixing matrix W", maxiter=PLAIN_MAXITER), True
    except RuntimeError:
        pass
    b = anderson_morley_lower(S)
    if b is not None and b >= -lam_2:
        return ExtremeEigenvalues(values=np.array([b]), error_bound=0.0), False
    if _bandwidth(S) <= BANDED_LU_MAX:
        gersh = float(np.min(2.0 * S.diagonal() - abs(S).sum(axis=1))) - 1e-12
        return _shift_invert_end(S, gersh, 1.0, "the mixing matrix W"), True
    return extreme_eigenvalues(S, 1, "SA", "the mixing matrix W", tol=LOOSE_TOL,
                               ncv=LOOSE_NCV), True


def laplacian_extremes(graph: nx.Graph) -> tuple[float, float]:
    """Largest and second smallest Laplacian eigenvalues ``lambda_1(L)``, ``lambda_{m-1}(L)``.

    Dense ``eigvalsh`` up to :data:`DENSE_MAX_AGENTS` nodes; above, Lanczos on ``L`` for the largest
    and on ``L + lambda_1(L) 11^T / m`` (the eigenvector ``1`` moved from 0 to ``lambda_1``) for the
    smallest, which is then ``lambda_{m-1}(L)``.
    """
    m = graph.number_of_nodes()
    if m <= DENSE_MAX_AGENTS:
        lam = np.linalg.eigvalsh(nx.laplacian_matrix(graph, nodelist=range(m)).toarray()
                                 .astype(float))
        return float(lam[-1]), float(lam[1])
    L = sp.csr_array(nx.laplacian_matrix(graph, nodelist=range(m)), dtype=float)
    top = float(extreme_eigenvalues(L, 1, "LA", "the Laplacian").values[-1])
    shifted = spla.LinearOperator((m, m), dtype=float,
                                  matvec=lambda v: L @ v + top * np.mean(v, axis=0))
    low = float(extreme_eigenvalues(shifted, 1, "SA", "the deflated Laplacian").values[0])
    return top, low


def rounds_for(slem: float, tol: float) -> int | float:
    """Smallest integer ``c >= 0`` with ``slem**c <= tol``.

    Returns ``0`` when ``tol >= 1``, ``1`` when ``slem == 0 < tol < 1``, and ``math.inf`` when
    ``slem >= 1`` (no number of rounds suffices). Otherwise ``c = ceil(ln tol / ln slem)``,
    corrected so that ``slem**c <= tol < slem**(c - 1)`` holds in floating point.
    """
    if isinstance(tol, bool) or not isinstance(tol, (int, float, np.integer, np.floating)) \
            or not tol > 0 or math.isnan(tol):
        raise ConfigError(f"tol: {tol!r} is not allowed; the contraction tolerance must be a "
                          "number > 0")
    if not 0.0 <= slem:
        raise ConfigError(f"slem: {slem!r} is not allowed; the SLEM is a number >= 0")
    tol = float(tol)
    if tol >= 1.0:
        return 0
    if slem >= 1.0:
        return math.inf
    if slem == 0.0:
        return 1
    c = max(1, math.ceil(math.log(tol) / math.log(slem)))
    while slem**c > tol:
        c += 1
    while c > 1 and slem ** (c - 1) <= tol:
        c -= 1
    return c


@dataclass(frozen=True, slots=True, kw_only=True)
class SpectralSummary:
    """Eigenvalue summary of a symmetric mixing matrix ``W`` (see the module docstring)."""

    m: int
    """Number of agents."""
    lambda_1: float
    """Largest eigenvalue (1 for a stochastic ``W``)."""
    lambda_2: float
    """Second largest eigenvalue."""
    lambda_min: float
    """Smallest eigenvalue ``lambda_m``."""
    slem: float
    """Second largest eigenvalue modulus ``||W - 11^T/m||_2``."""
    spectral_gap: float
    """``1 - slem``."""
    tol: float
    """Contraction tolerance used for :attr:`rounds`."""
    rounds: int | float
    """``rounds_for(tol)``: gossip rounds needed to shrink disagreement by ``tol``."""
    method: str = "dense"
    """``'dense'`` (every eigenvalue by ``eigvalsh``) or ``'lanczos'`` (three extreme ones)."""
    error_bound: float = 0.0
    """Bound on the error of each eigenvalue reported (0 for ``'dense'``: exact to rounding)."""
    lambda_min_exact: bool = True
    """``False`` when :attr:`lambda_min` is only a lower bound (Anderson-Morley), enough to show
    ``|lambda_min| <= lambda_2`` so that ``slem = lambda_2``."""

    def rounds_for(self, tol: float) -> int | float:
        """Smallest ``c`` with ``slem**c <= tol`` (0 if ``tol >= 1``, ``inf`` if ``slem >= 1``)."""
        return rounds_for(self.slem, tol)

    def to_row(self) -> dict[str, object]:
        """Flat dictionary of all fields."""
        return {"m": self.m, "lambda_1": self.lambda_1, "lambda_2": self.lambda_2,
                "lambda_min": self.lambda_min, "slem": self.slem,
                "spectral_gap": self.spectral_gap, "tol": self.tol, "rounds": self.rounds,
                "method": self.method, "error_bound": self.error_bound,
                "lambda_min_exact": self.lambda_min_exact}


def _check_square(W: np.ndarray | sp.sparray) -> None:
    if W.ndim != 2 or W.shape[0] != W.shape[1] or W.shape[0] < 2:
        raise ConfigError(f"W: must be a square matrix of size at least 2, got shape {W.shape}",
                          field="W")


STOCHASTIC_TOL = 1e-9
"""Largest ``max_i |(W 1)_i - 1|`` :func:`spectral_summary` takes as doubly stochastic."""


def _mixing_of(W: object, allow_nonstochastic: bool) -> np.ndarray | sp.csr_array:
    """The matrix to summarise: ``W`` itself, or a :class:`Network`'s ``W``; checked to be a finite
    square real matrix whose rows sum to one (unless ``allow_nonstochastic``)."""
    if isinstance(W, Network):
        if not (W.doubly_stochastic or allow_nonstochastic):
            raise ConfigError(f"W: the network {W.name!r} has a W that is not doubly stochastic "
                              "(built with allow_nonstochastic=True); pass allow_nonstochastic=True "
                              "to summarise it anyway", field="W")
        return W.W
    if not sp.issparse(W):
        W = check_array(W, "W", ndim=2)
    elif W.dtype.kind not in "biuf":
        raise ConfigError(f"W must be a matrix of real numbers, got dtype {W.dtype}", field="W")
    _check_square(W)
    if sp.issparse(W):
        W = sp.csr_array(W, dtype=float)
        if not np.all(np.isfinite(W.data)):
            raise ConfigError("W: has non-finite entries", field="W")
    rows = np.abs(np.asarray(W.sum(axis=1)).ravel() - 1.0)
    if not allow_nonstochastic and float(rows.max()) > STOCHASTIC_TOL:
        i = int(np.argmax(rows))
        raise ConfigError(f"W: row {i} does not sum to 1 (|sum - 1| = {rows[i]:.3g} > "
                          f"{STOCHASTIC_TOL:g}); the SLEM is the "
                          "consensus rate only for a doubly-stochastic W (pass "
                          "allow_nonstochastic=True to summarise another matrix)", field="W")
    return W


def _dense_summary(W: np.ndarray, tol: float) -> SpectralSummary:
    """Every eigenvalue by ``eigvalsh`` (the exact computation, for ``m <= DENSE_MAX_AGENTS``)."""
    if not np.all(np.isfinite(W)):
        raise ConfigError("W: has non-finite entries", field="W")
    asym = float(np.max(np.abs(W - W.T)))
    if asym > 1e-9:
        raise ConfigError(f"W: is not symmetric (max |W - W^T| = {asym:.3g}); the spectral "
                          "summary assumes a symmetric mixing matrix", field="W")
    m = W.shape[0]
    S = (W + W.T) / 2.0
    lam = np.linalg.eigvalsh(S)
    slem = float(np.max(np.abs(np.linalg.eigvalsh(S - np.full((m, m), 1.0 / m)))))
    return SpectralSummary(m=m, lambda_1=float(lam[-1]), lambda_2=float(lam[-2]),
                           lambda_min=float(lam[0]), slem=slem, spectral_gap=1.0 - slem,
                           tol=float(tol), rounds=rounds_for(slem, tol))


def _lanczos_summary(W: sp.csr_array, tol: float) -> SpectralSummary:
    """``lambda_1, lambda_2, lambda_m`` by Lanczos; ``SLEM = max(|lambda_2|, |lambda_m|)``."""
    if not np.all(np.isfinite(W.data)):
        raise ConfigError("W: has non-finite entries", field="W")
    asym = float(abs(W - W.T).max())
    if asym > 1e-9:
        raise ConfigError(f"W: is not symmetric (max |W - W^T| = {asym:.3g}); the spectral "
                          "summary assumes a symmetric mixing matrix", field="W")
    m = W.shape[0]
    S = (W + W.T) / 2.0
    drift = float(np.max(np.abs(S @ np.ones(m) - 1.0)))
    if drift > 1e-9:
        raise ConfigError(f"W: rows do not sum to one (max |W 1 - 1| = {drift:.3g}); the "
                          f"spectral summary of a {m}-agent W (Lanczos) needs W 1 = 1")
    hi = _end_of_spectrum(S, top=True)
    lo, exact = _bottom(S, float(hi.values[-1]))
    lam_1, lam_2, lam_min = 1.0, float(hi.values[-1]), float(lo.values[0])
    error = max(hi.error_bound, lo.error_bound)
    slem = max(abs(lam_2), abs(lam_min))
    return SpectralSummary(m=m, lambda_1=lam_1, lambda_2=lam_2, lambda_min=lam_min, slem=slem,
                           spectral_gap=1.0 - slem, tol=float(tol),
                           rounds=rounds_for(slem, tol), method="lanczos",
                           error_bound=error + drift, lambda_min_exact=exact)


def spectral_summary(W: np.ndarray | sp.sparray | Network, tol: float = 1e-6, *,
                     allow_nonstochastic: bool = False) -> SpectralSummary:
    """Eigenvalues, SLEM, spectral gap and consensus rounds of a symmetric mixing matrix.

    Parameters
    ----------
    W : array_like, scipy sparse matrix, shape (m, m), or Network
        Symmetric mixing matrix (asymmetry above ``1e-9`` is rejected; the symmetric part is used),
        or a :class:`~dpgossip.topology.Network` (its ``W``).
    tol : float
        Contraction tolerance for the ``rounds`` field, in ``(0, 1)``.
    allow_nonstochastic : bool
        Summarise a ``W`` whose rows do not sum to one (within :data:`STOCHASTIC_TOL`); by default
        refused, since its SLEM is then no consensus rate.

    Raises
    ------
    ConfigError
        When ``W`` is not a finite square real matrix of size ``>= 2``, not symmetric, not
        stochastic (unless allowed), or ``tol`` is not in ``(0, 1)``.

    Returns
    -------
    SpectralSummary
        ``slem = ||W - 11^T/m||_2``; ``lambda_1 >= lambda_2`` the two largest and ``lambda_min`` the
        smallest eigenvalue of ``W``; ``spectral_gap = 1 - slem``; ``rounds = rounds_for(slem, tol)``.
        Up to :data:`DENSE_MAX_AGENTS` agents: dense, ``slem`` the largest ``|eigenvalue|`` of
        ``W - 11^T/m`` (``method = 'dense'``). Above: Lanczos, see the module docstring
        (``method = 'lanczos'``, ``error_bound`` the residual bound plus ``max |W 1 - 1|``).
    """
    tol = check_number(tol, "tol", low=0, high=1, low_open=True, high_open=True)
    W = _mixing_of(W, allow_nonstochastic)
    if W.shape[0] <= DENSE_MAX_AGENTS:
        return _dense_summary(W.toarray() if sp.issparse(W) else W, tol)
    return _lanczos_summary(sp.csr_array(W, dtype=float), tol)


def consensus_rounds(W: np.ndarray | sp.sparray | Network, tol: float) -> int | float:
    """Smallest ``c`` with ``||W^c - 11^T/m||_2 = SLEM^c <= tol`` for a symmetric mixing ``W``."""
    return spectral_summary(W, tol).rounds
