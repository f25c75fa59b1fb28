"""capePCA (Imtiaz and Sarwate, Algorithm 2) on a star of ``S`` sites, with the conventional and
pooled baselines.

Site ``s`` holds the rows ``X_s`` (``N_s x d``, rows in the unit ball) of a :class:`PartitionedData`.
Imtiaz and Sarwate store samples as columns (``X_s`` is ``D x N_s``) and use
``A_s = X_s X_s^T / N_s``; with this project's rows the same matrix is

    A_s = X_s^T X_s / N_s                                           (Imtiaz and Sarwate, Alg. 2, line 4)

(the *normalised* second-moment matrix, exactly Imtiaz and Sarwate's normalisation). Site ``s`` sends

    Ahat_s = A_s + E_s + F_s + G_s                                  (Imtiaz and Sarwate, Alg. 2, line 6)

and the aggregator forms ``Ahat = (1/S) sum_s (Ahat_s - F_s) = (1/S) sum_s (A_s + G_s)`` (line 8, using
``sum_s E_s = 0``) and releases its top-``K`` eigenvectors (lines 9-10). Every noise matrix is
**symmetric**: its upper triangle (diagonal included) is drawn i.i.d. and mirrored, so the mechanism
adds one independent Gaussian per unordered pair ``(i, j)``. With the site noise level ``tau``
(Imtiaz and Sarwate's ``tau_s``) the entry variances are Imtiaz and Sarwate's Eq. (2):

    tau_e^2 = tau_f^2 = (1 - 1/S) tau^2,     tau_g^2 = tau^2 / S.

Zero-sum ``E`` (the trusted noise generator): ``E_s = W_s - (1/S) sum_t W_t`` with ``W_t`` symmetric,
upper triangle i.i.d. ``N(0, tau^2)``. Per entry, the vector ``(E_1, .., E_S)`` has covariance
``tau^2 (I - 11^T/S)``, marginal variance ``(1 - 1/S) tau^2 = tau_e^2``, and sums to zero (to rounding).

Noise level: ``tau = noise_multiplier * Delta(N_min)`` with ``Delta(N) = c / N`` the sensitivity of
``A_s`` (:func:`second_moment_sensitivity`; ``c = sqrt(2)`` under row replacement, ``c = 1`` as
Imtiaz and Sarwate states it) and ``N_min`` the smallest site, so every site gets at least its own
Gaussian-mechanism
noise (Imtiaz and Sarwate, Alg. 2 assumes equal ``N_s``; then ``tau`` is each site's ``tau_s``). The
baselines:

* conventional (Imtiaz and Sarwate's reference [17] with full matrices): site ``s`` sends
  ``A_s + G_s^conv`` with ``G_s^conv`` symmetric, entries ``N(0, tau_s^2)``,
  ``tau_s = noise_multiplier * Delta(N_s)``; the
  aggregator averages. Aggregate noise variance ``(1/S^2) sum_s tau_s^2``.
* pooled (the centralised reference): ``A = X^T X / N + G``, entries of ``G`` ``N(0, tau_pool^2)``,
  ``tau_pool = noise_multiplier * Delta(N)``. With equal ``N_s = N/S``, ``tau_pool = tau / S`` and
  capePCA's aggregate noise variance ``tau_g^2 / S = tau^2 / S^2`` equals ``tau_pool^2`` (Imtiaz and
  Sarwate, Lemma 1).

All three release Gaussian mechanisms with the same ratio ``noise std / sensitivity`` as seen by one
site's release alone; the joint view of capePCA's aggregator is weaker
(:mod:`dpgossip.protocols.cape.guarantee`, docs/cape.md).

Random streams: ``root = SeedSequence(seed)``; ``generator, aggregator, sites = root.spawn(3)``;
``W`` is ``default_rng(generator)``'s ``(S, d, d)`` symmetric draw, ``F`` ``default_rng(aggregator)``'s;
site ``s`` draws its ``G_s`` from ``default_rng(sites.spawn(S)[s])``. The conventional baseline uses
the same site streams (so its ``G_s^conv`` is ``G_s`` rescaled: common random numbers); the pooled one
draws from ``default_rng(sites.spawn(1)[0])``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpgossip.data.partition import PartitionedData
from dpgossip.errors import ConfigError, check_choice, check_int, check_number
from dpgossip.rng import as_seed_sequence

__all__ = ["SENSITIVITIES", "CapeParams", "CapeNoise", "CapeResult", "second_moment_sensitivity",
           "symmetric_gaussian", "triu_vector", "cape_noise", "run_cape", "run_conventional",
           "run_pooled", "top_eigenvectors"]

SENSITIVITIES = {"row-replacement": math.sqrt(2.0), "paper": 1.0}
"""``c`` in ``Delta(N) = c / N``, the l2 sensitivity of ``A = X^T X / N`` in the upper-triangle
coordinates of the symmetric noise. ``"row-replacement"``: one row ``x`` replaced by ``x'``, both in the
unit ball (exact supremum, attained by ``x = e_1``, ``x' = e_2``); ``"paper"``: Imtiaz and Sarwate's
``1/N_s``, exact when a row is zeroed out (Dwork et al.'s add/remove bound ``||x x^T||_F <= 1``)."""

_SYM_RTOL = 1e-12  # a user-given matrix counts as symmetric within this relative tolerance
_SUM_RTOL = 1e-10  # the zero-sum check of a user-given E, relative to its largest entry


def second_moment_sensitivity(rows: int, kind: str = "row-replacement") -> float:
    """``Delta(N) = c / N``: l2 sensitivity of ``triu(X^T X / N)`` for ``N = rows`` (:data:`SENSITIVITIES`).

    Parameters
    ----------
    rows : int
        ``N >= 1``, the number of rows the matrix averages.
    kind : str
        ``"row-replacement"`` (``c = sqrt(2)``) or ``"paper"`` (``c = 1``, Imtiaz and Sarwate's statement).

    Notes
    -----
    For ``C = x x^T - x' x'^T``, ``||triu(C)||^2 = (||C||_F^2 + ||diag C||^2) / 2`` with
    ``||C||_F^2 = ||x||^4 + ||x'||^4 - 2 <x, x'>^2 <= 2`` and ``||diag C||^2 <= sum_i x_i^4 + x_i'^4
    <= 2``: ``||triu(C)|| <= sqrt(2)``, with equality at ``x = e_1``, ``x' = e_2``.
    """
    rows = check_int(rows, "rows", 1)
    check_choice(kind, "kind", tuple(SENSITIVITIES))
    return SENSITIVITIES[kind] / rows


def triu_vector(M: np.ndarray) -> np.ndarray:
    """The upper triangle, diagonal included, of the last two axes (row-major order): ``(..., d(d+1)/2)``.

    These are the coordinates in which the symmetric noise is i.i.d.
    """
    M = np.asarray(M, dtype=float)
    i, j = np.triu_indices(M.shape[-1])
    return M[..., i, j]


def symmetric_gaussian(rng: np.random.Generator, shape: tuple[int, ...], d: int,
                       std: float) -> np.ndarray:
    """Symmetric ``d x d`` matrices (leading ``shape``): upper triangle i.i.d. ``N(0, std^2)``, mirrored.

    Draws ``standard_normal((*shape, d(d+1)/2))`` from ``rng`` (row-major upper triangle), scales by
    ``std`` and copies entry ``(i, j)`` to ``(j, i)``: exactly symmetric.
    """
    i, j = np.triu_indices(d)
    z = rng.standard_normal((*shape, i.size)) * std
    out = np.empty((*shape, d, d))
    out[..., i, j] = z
    out[..., j, i] = z
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class CapeParams:
    """Parameters of capePCA and its baselines.

    ``k`` is the number of released eigenvectors (Imtiaz and Sarwate's ``K``); ``noise_multiplier``
    is the noise std over the sensitivity of the matrix it protects
    (``tau_s = noise_multiplier * Delta(N_s)``; ``0``
    releases the exact matrices); ``sensitivity`` in :data:`SENSITIVITIES` selects ``Delta``.
    With Imtiaz and Sarwate's calibration ``tau_s = (Delta_s / eps) sqrt(2 ln(1.25/delta))`` the multiplier is
    ``sqrt(2 ln(1.25/delta)) / eps``.
    """

    k: int
    noise_multiplier: float
    sensitivity: str = "row-replacement"

    def __post_init__(self) -> None:
        """Validate every field (``ConfigError`` names it)."""
        object.__setattr__(self, "k", check_int(self.k, "k", 1))
        sigma = check_number(self.noise_multiplier, "noise_multiplier", low=0,
                             expected="a finite number >= 0")
        object.__setattr__(self, "noise_multiplier", sigma)
        check_choice(self.sensitivity, "sensitivity", tuple(SENSITIVITIES))

    def noise_std(self, rows: int) -> float:
        """``noise_multiplier * Delta(rows)``: the Gaussian-mechanism std for a matrix over ``rows`` rows."""
        return self.noise_multiplier * second_moment_sensitivity(rows, self.sensitivity)

    def to_row(self) -> dict[str, object]:
        """Tidy row of the parameters."""
        return {"k": self.k, "noise_multiplier": self.noise_multiplier,
                "sensitivity": self.sensitivity}


def _symmetric_stack(value: object, name: str) -> np.ndarray:
    """``value`` as a read-only ``(S, d, d)`` float array, checked symmetric and symmetrised exactly."""
    M = np.array(value, dtype=float)
    if M.ndim != 3 or M.shape[1] != M.shape[2] or M.shape[0] < 1:
        raise ConfigError(f"{name} must have shape (S, d, d), got {M.shape}", field=name)
    if not np.all(np.isfinite(M)):
        raise ConfigError(f"{name} must be finite, got nan or inf entries", field=name)
    gap = np.abs(M - np.swapaxes(M, 1, 2))
    scale = max(float(np.max(np.abs(M))), 1e-300)
    if float(gap.max()) > _SYM_RTOL * scale:
        s, i, j = np.unravel_index(int(np.argmax(gap)), gap.shape)
        raise ConfigError(f"{name} must hold symmetric matrices (one Gaussian per unordered pair "
                          f"(i, j); an asymmetric noise is averaged away in (i, j) + (j, i)), got "
                          f"{name}[{s}] with |M[{i}, {j}] - M[{j}, {i}]| = {gap[s, i, j]:.3g}",
                          field=name)
    M = (M + np.swapaxes(M, 1, 2)) / 2.0
    M.setflags(write=False)
    return M


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class CapeNoise:
    """The noise matrices of one run, each ``(S, d, d)`` and symmetric.

    ``E`` sums to zero over sites (the noise generator's draw), ``F`` is the aggregator's (it subtracts
    it), ``G`` the sites' own. The conventional and pooled baselines use ``G`` only (``E = F = 0``).
    Given by a user (e.g. in tests), every matrix is checked: asymmetric ones (beyond a relative
    ``1e-12``) and an ``E`` that does not sum to zero (beyond ``1e-10`` of its largest entry) raise
    :class:`ConfigError` naming ``noise.E``, ``noise.F`` or ``noise.G``; the accepted ones are
    symmetrised exactly.
    """

    E: np.ndarray
    F: np.ndarray
    G: np.ndarray

    def __post_init__(self) -> None:
        """Check shapes, symmetry and ``sum_s E_s = 0``."""
        arrays = {name: _symmetric_stack(getattr(self, name), f"noise.{name}") for name in "EFG"}
        shapes = {a.shape for a in arrays.values()}
        if len(shapes) != 1:
            raise ConfigError(f"noise.E, noise.F and noise.G must have one shape (S, d, d), got "
                              f"{[a.shape for a in arrays.values()]}", field="noise")
        E = arrays["E"]
        residue = float(np.max(np.abs(E.sum(axis=0))))
        if residue > _SUM_RTOL * max(float(np.max(np.abs(E))), 1e-300) * E.shape[0]:
            raise ConfigError(f"noise.E must sum to zero over sites (sum_s E_s = 0), got a sum with "
                              f"largest entry {residue:.3g}", field="noise.E")
        for name, arr in arrays.items():
            object.__setattr__(self, name, arr)

    @property
    def sites(self) -> int:
        """``S``."""
        return int(self.G.shape[0])

    @property
    def d(self) -> int:
        """The side ``d`` of the matrices."""
        return int(self.G.shape[1])


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class CapeResult:
    """One run of capePCA (``protocol = "capepca"``) or a baseline (``"conventional"``, ``"pooled"``).

    ``released[s]`` is what site ``s`` sends (pooled: the one central release, ``S = 1``); ``aggregate``
    is the aggregator's ``Ahat``, ``target`` the noiseless matrix it estimates (``(1/S) sum_s A_s``;
    pooled: ``X^T X / N``).
    """

    protocol: str
    released: np.ndarray
    """``(S, d, d)``: ``Ahat_s = A_s + E_s + F_s + G_s``."""
    aggregate: np.ndarray
    """``(d, d)``: ``(1/S) sum_s (Ahat_s - F_s)``."""
    target: np.ndarray
    """``(d, d)``: the matrix without noise."""
    eigenvalues: np.ndarray
    """``(d,)``: eigenvalues of ``aggregate``, descending."""
    eigenvectors: np.ndarray
    """``(d, d)``: matching unit eigenvectors (columns; largest-magnitude entry positive)."""
    noise: CapeNoise
    site_noise_std: np.ndarray
    """``(S,)``: per-entry std of the noise of each site's release as seen alone (``tau`` or ``tau_s``)."""
    aggregate_noise_std: float
    """Per-entry std of ``aggregate - target`` (capePCA: ``tau / S``)."""
    params: CapeParams
    sizes: tuple[int, ...]
    seed_entropy: int | None = None

    @property
    def components(self) -> np.ndarray:
        """``V_K``: the first ``k`` eigenvectors (``d x k``), the released subspace."""
        return self.eigenvectors[:, : self.params.k]

    @property
    def aggregate_noise(self) -> np.ndarray:
        """``aggregate - target``."""
        return self.aggregate - self.target

    def to_row(self) -> dict[str, object]:
        """Tidy summary row."""
        return {"protocol": self.protocol, **self.params.to_row(), "sites": len(self.sizes),
                "d": int(self.target.shape[0]), "max_site_noise_std": float(self.site_noise_std.max()),
                "aggregate_noise_std": self.aggregate_noise_std, "seed": self.seed_entropy}


def top_eigenvectors(M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (descending) and unit eigenvectors of the symmetric ``M`` (Imtiaz and Sarwate,
    Alg. 2, line 9).

    Each eigenvector's largest-magnitude entry is made positive (deterministic signs).
    """
    w, V = np.linalg.eigh(M)
    w, V = w[::-1], V[:, ::-1]
    rows = np.argmax(np.abs(V), axis=0)
    signs = np.sign(V[rows, np.arange(V.shape[1])])
    signs[signs == 0] = 1.0
    return w.copy(), V * signs


def _fresh(seed: int | np.random.SeedSequence) -> tuple[np.random.SeedSequence, ...]:
    """``(generator, aggregator, sites)`` streams from a fresh copy of ``seed`` (module docstring)."""
    root = as_seed_sequence(seed)
    root = np.random.SeedSequence(root.entropy, spawn_key=root.spawn_key, pool_size=root.pool_size)
    return tuple(root.spawn(3))


def _entropy(seed: int | np.random.SeedSequence) -> int | None:
    ent = as_seed_sequence(seed).entropy
    return int(ent) if isinstance(ent, (int, np.integer)) else None


def _site_draws(sites: np.random.SeedSequence, S: int, d: int, stds: np.ndarray) -> np.ndarray:
    """``(S, d, d)``: site ``s``'s symmetric draw with std ``stds[s]`` from ``sites.spawn(S)[s]``."""
    return np.stack([symmetric_gaussian(np.random.default_rng(ss), (), d, float(std))
                     for ss, std in zip(sites.spawn(S), stds, strict=True)])


def cape_noise(sites: int, d: int, noise_std: float, seed: int | np.random.SeedSequence) -> CapeNoise:
    """Draw capePCA's ``E``, ``F``, ``G`` for ``S = sites`` sites at site noise level ``tau = noise_std``.

    ``E_s = W_s - mean_t W_t`` (``W`` entries ``N(0, tau^2)``, so ``Var E_s = (1 - 1/S) tau^2``),
    ``F_s`` entries ``N(0, (1 - 1/S) tau^2)``, ``G_s`` entries ``N(0, tau^2 / S)`` (Imtiaz and
    Sarwate, Eq. (2)); all symmetric, streams as in the module docstring.

    Parameters
    ----------
    sites : int
        ``S >= 1``.
    d : int
        Side of the matrices.
    noise_std : float
        ``tau >= 0``.
    seed : int or numpy.random.SeedSequence

    Returns
    -------
    CapeNoise
    """
    S = check_int(sites, "sites", 1)
    d = check_int(d, "d", 1)
    tau = check_number(noise_std, "noise_std", low=0, expected="a finite number >= 0")
    generator, aggregator, site_seq = _fresh(seed)
    W = symmetric_gaussian(np.random.default_rng(generator), (S,), d, tau)
    E = W - W.mean(axis=0)
    F = symmetric_gaussian(np.random.default_rng(aggregator), (S,), d, tau * math.sqrt(1 - 1 / S))
    G = _site_draws(site_seq, S, d, np.full(S, tau / math.sqrt(S)))
    return CapeNoise(E=E, F=F, G=G)


def _second_moments(data: PartitionedData) -> np.ndarray:
    """``(S, d, d)``: ``A_s = X_s^T X_s / N_s``, symmetrised exactly."""
    if not isinstance(data, PartitionedData):
        raise ConfigError(f"data must be a PartitionedData, got {type(data).__name__}", field="data")
    A = np.stack([data.block(s).T @ data.block(s) / data.sizes[s] for s in range(data.m)])
    return (A + np.swapaxes(A, 1, 2)) / 2.0


def _check_noise(noise: object, shape: tuple[int, int, int], baseline: bool) -> CapeNoise:
    if not isinstance(noise, CapeNoise):
        raise ConfigError(f"noise must be a CapeNoise, got {type(noise).__name__}", field="noise")
    if noise.G.shape != shape:
        raise ConfigError(f"noise matrices must have shape (S, d, d) = {shape}, got {noise.G.shape}",
                          field="noise")
    if baseline and (np.any(noise.E != 0) or np.any(noise.F != 0)):
        raise ConfigError("noise.E and noise.F must be zero for a baseline (it adds G only), got "
                          "non-zero entries", field="noise")
    return noise


def _check_k(params: CapeParams, d: int) -> None:
    if not isinstance(params, CapeParams):
        raise ConfigError(f"params must be a CapeParams, got {type(params).__name__}", field="params")
    if params.k > d:
        raise ConfigError(f"params.k must be <= d = {d}, got {params.k}", field="params.k")


def _result(protocol: str, released: np.ndarray, F: np.ndarray, target: np.ndarray,
            noise: CapeNoise, stds: tuple[np.ndarray, float], params: CapeParams,
            meta: tuple[tuple[int, ...], int | None]) -> CapeResult:
    """Aggregate ``(1/S) sum_s (released_s - F_s)``, eigendecompose, pack."""
    aggregate = (released - F).sum(axis=0) / released.shape[0]
    w, V = top_eigenvectors(aggregate)
    released.setflags(write=False)
    return CapeResult(protocol=protocol, released=released, aggregate=aggregate, target=target,
                      eigenvalues=w, eigenvectors=V, noise=noise, site_noise_std=stds[0],
                      aggregate_noise_std=stds[1], params=params, sizes=meta[0],
                      seed_entropy=meta[1])


def run_cape(data: PartitionedData, params: CapeParams, seed: int | np.random.SeedSequence, *,
             noise: CapeNoise | None = None) -> CapeResult:
    """capePCA (Imtiaz and Sarwate, Algorithm 2): each agent of ``data`` is a site of the star.

    Site ``s`` sends ``Ahat_s = A_s + E_s + F_s + G_s``, ``A_s = X_s^T X_s / N_s``; the aggregator
    computes ``Ahat = (1/S) sum_s (Ahat_s - F_s) = (1/S) sum_s (A_s + G_s)`` and its eigenvectors.
    ``tau = params.noise_std(min_s N_s)`` (module docstring).

    Parameters
    ----------
    data : PartitionedData
        ``S = data.m`` sites.
    params : CapeParams
        ``k <= d``.
    seed : int or numpy.random.SeedSequence
        Seed of the noise (:func:`cape_noise`); the same seed gives bit-identical results.
    noise : CapeNoise, optional
        Noise to use in place of the draws from ``seed`` (validated: symmetric, ``sum_s E_s = 0``).

    Returns
    -------
    CapeResult
        ``site_noise_std = tau`` for every site (``Var(E_s + G_s) = Var(F_s + G_s) = tau^2``),
        ``aggregate_noise_std = tau / S``.

    Raises
    ------
    ConfigError
        Bad ``data``, ``params`` or ``noise`` (asymmetric, not zero-sum, wrong shape).
    """
    A = _second_moments(data)
    S, d = A.shape[0], A.shape[1]
    _check_k(params, d)
    tau = params.noise_std(min(data.sizes))
    noise = cape_noise(S, d, tau, seed) if noise is None else _check_noise(noise, A.shape, False)
    released = A + noise.E + noise.F + noise.G
    stds = (np.full(S, tau), tau / S)
    return _result("capepca", released, noise.F, A.mean(axis=0), noise, stds, params,
                   (data.sizes, _entropy(seed)))


def run_conventional(data: PartitionedData, params: CapeParams, seed: int | np.random.SeedSequence,
                     *, noise: CapeNoise | None = None) -> CapeResult:
    """The conventional distributed baseline: site ``s`` sends ``A_s + G_s``, the aggregator averages.

    ``G_s`` symmetric with entries ``N(0, tau_s^2)``, ``tau_s = params.noise_std(N_s)``: each site's
    own full Gaussian-mechanism noise. Aggregate noise std ``sqrt(sum_s tau_s^2) / S``
    (``tau / sqrt(S)`` for equal sites: ``S`` times the pooled variance, Imtiaz and Sarwate's Proposition 1).

    Parameters
    ----------
    data : PartitionedData
    params : CapeParams
    seed : int or numpy.random.SeedSequence
        Site ``s`` draws from the same stream as in :func:`run_cape`.
    noise : CapeNoise, optional
        ``G`` to use (``E`` and ``F`` must be zero).

    Returns
    -------
    CapeResult
    """
    A = _second_moments(data)
    S, d = A.shape[0], A.shape[1]
    _check_k(params, d)
    taus = np.array([params.noise_std(n) for n in data.sizes])
    if noise is None:
        zero = np.zeros_like(A)
        noise = CapeNoise(E=zero, F=zero, G=_site_draws(_fresh(seed)[2], S, d, taus))
    noise = _check_noise(noise, A.shape, True)
    stds = (taus, float(math.sqrt(float(np.sum(taus**2))) / S))
    return _result("conventional", A + noise.G, noise.F, A.mean(axis=0), noise, stds, params,
                   (data.sizes, _entropy(seed)))


def run_pooled(data: PartitionedData, params: CapeParams, seed: int | np.random.SeedSequence, *,
               noise: CapeNoise | None = None) -> CapeResult:
    """The pooled-data (centralised) baseline: ``A = X^T X / N + G``, entries ``N(0, tau_pool^2)``.

    ``tau_pool = params.noise_std(N)``: the Gaussian mechanism at the pooled sensitivity
    ``Delta(N)``. The partition of ``data`` is ignored; the result has one "site".

    Parameters
    ----------
    data : PartitionedData
    params : CapeParams
    seed : int or numpy.random.SeedSequence
        The noise comes from ``default_rng(sites.spawn(1)[0])`` (module docstring).
    noise : CapeNoise, optional
        ``G`` of shape ``(1, d, d)`` to use (``E`` and ``F`` zero).

    Returns
    -------
    CapeResult
    """
    if not isinstance(data, PartitionedData):
        raise ConfigError(f"data must be a PartitionedData, got {type(data).__name__}", field="data")
    pooled = PartitionedData(X=data.X, sizes=(data.n,), name=data.name)
    A = _second_moments(pooled)
    d = A.shape[1]
    _check_k(params, d)
    tau = params.noise_std(data.n)
    if noise is None:
        zero = np.zeros_like(A)
        noise = CapeNoise(E=zero, F=zero, G=_site_draws(_fresh(seed)[2], 1, d, np.array([tau])))
    noise = _check_noise(noise, A.shape, True)
    return _result("pooled", A + noise.G, noise.F, A[0].copy(), noise, (np.array([tau]), tau),
                   params, ((data.n,), _entropy(seed)))
