"""Private randomized (block) power method of Nicolas et al.: Algorithm 1 (trusted curator) and
Algorithm 2 (federated).

On this project's data model ``A = X^T X`` (``X`` is ``n x d``, rows in the unit ball), with iteration rank
``p``, target rank ``k <= p`` and ``L`` iterations:

    X^0 = QR(G_0),                 G_0 ~ N(0, 1)^{d x p}                     (Nicolas et al., Alg. 1, line 3)
    Y_l = A X^(l-1) + G_l,         G_l ~ N(0, (Delta_l sigma)^2)^{d x p}     (Nicolas et al., Alg. 1, line 6)
    X^l = QR(Y_l),                 l = 1..L                                  (Nicolas et al., Alg. 1, line 7)

``sigma`` is the noise multiplier (noise standard deviation over sensitivity) and ``Delta_l`` the
sensitivity of ``A X^(l-1)`` (:mod:`dpgossip.protocols.ppm.sensitivity`), computed from the released
iterate ``X^(l-1)``: the noise scale is public post-processing of earlier releases. Nicolas et al. write the
scale with ``X^l`` (Eq. (3), Theorem 3.1); the product it protects is ``A X^(l-1)``, which is what we use.
``QR`` is the thin QR factorisation with ``diag(R) >= 0`` (the Gram-Schmidt ``Q`` of Nicolas et al.,
Section 2). The released estimate of the top-``k`` subspace is the span of the first ``k`` columns
of ``X^L``.

Nicolas et al. set ``sigma = eps^-1 sqrt(4 L ln(1/delta))``; calibration lives in the privacy layer
(:func:`dpgossip.privacy.accountant.calibrate_zcdp_noise`), here ``sigma`` is a parameter.

Federated (Nicolas et al., Alg. 2): client ``i`` of ``s`` sends ``Y_l^(i) = X_i^T X_i X^(l-1) + G_l^(i)`` with
``G_l^(i) ~ N(0, Delta_l^2 nu^2)``, ``nu = sigma / sqrt(s)``; secure aggregation reveals only
``Y_l = sum_i Y_l^(i) = A X^(l-1) + G_l`` with ``sum_i G_l^(i) ~ N(0, (Delta_l sigma)^2)`` (Nicolas
et al., Thm. 5.2).

Random streams: ``root = SeedSequence(seed)``; ``init, noise = root.spawn(2)``; ``X^0`` comes from
``default_rng(init)`` (shared by both algorithms); the central noise is
``Z = default_rng(noise).standard_normal((L, d, p))`` and ``G_l = Delta_l sigma Z[l]``; client ``i``
draws ``Z_i = default_rng(noise.spawn(s)[i]).standard_normal((L, d, p))`` and ``G_l^(i) = Delta_l nu Z_i[l]``.
:func:`federated_standard_noise` returns ``sum_i Z_i / sqrt(s)``: given to :func:`run_ppm` it reproduces
the federated noise realisation, so the two runs agree to rounding error.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dpgossip.data.partition import PartitionedData
from dpgossip.errors import ConfigError, check_choice, check_int, check_number
from dpgossip.protocols.checks import check_seed
from dpgossip.protocols.ppm.sensitivity import (
    ADJACENCIES,
    SENSITIVITY_KINDS,
    iterate_sensitivity,
)
from dpgossip.rng import as_seed_sequence

__all__ = ["PpmParams", "PpmResult", "run_ppm", "run_ppm_federated", "federated_standard_noise",
           "orthonormalise"]

Release = Callable[[int, np.ndarray, float], tuple[np.ndarray, np.ndarray]]
"""``(l, X^(l-1), Delta_l) -> (Y_l, G_l)``: one noisy product, centrally or by secure aggregation."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PpmParams:
    """Parameters of the private power method (Nicolas et al., Algorithm 1).

    ``p`` iteration rank, ``k <= p`` target rank, ``iterations`` = ``L``, ``noise_multiplier`` =
    ``sigma`` (noise std ``Delta_l sigma`` at iteration ``l``; ``0`` runs the plain block power method),
    ``sensitivity`` in ``("prior", "improved")`` and ``adjacency`` in ``("element", "row-replacement",
    "bounded-row-replacement")`` select ``Delta_l``
    (:func:`dpgossip.protocols.ppm.sensitivity.iterate_sensitivity`).
    """

    p: int
    k: int
    iterations: int
    noise_multiplier: float
    sensitivity: str = "improved"
    adjacency: str = "row-replacement"

    def __post_init__(self) -> None:
        """Validate every field (``ConfigError`` names it)."""
        p = check_int(self.p, "p", 1)
        k = check_int(self.k, "k", 1)
        if k > p:
            raise ConfigError(f"k must be <= p = {p}, got {k}", field="k")
        iterations = check_int(self.iterations, "iterations", 1)
        sigma = check_number(self.noise_multiplier, "noise_multiplier", low=0,
                             expected="a finite number >= 0")
        check_choice(self.sensitivity, "sensitivity", SENSITIVITY_KINDS)
        check_choice(self.adjacency, "adjacency", ADJACENCIES)
        for name, value in (("p", p), ("k", k), ("iterations", iterations),
                            ("noise_multiplier", sigma)):
            object.__setattr__(self, name, value)

    def to_row(self) -> dict[str, object]:
        """Tidy row of the parameters."""
        return {"p": self.p, "k": self.k, "iterations": self.iterations,
                "noise_multiplier": self.noise_multiplier, "sensitivity": self.sensitivity,
                "adjacency": self.adjacency}


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class PpmResult:
    """One run of the private power method.

    Arrays are indexed by iteration: ``iterates[l] = X^l`` (``l = 0..L``), ``Y[l-1] = Y_l``,
    ``noise[l-1] = G_l``, ``sensitivities[l-1] = Delta_l``, ``noise_std[l-1] = Delta_l sigma``.
    """

    basis: np.ndarray
    """``X^L`` (``d x p``, orthonormal columns)."""
    iterates: np.ndarray
    """``(L + 1, d, p)``: ``X^0 .. X^L``."""
    Y: np.ndarray
    """``(L, d, p)``: the released noisy products ``Y_1 .. Y_L``."""
    noise: np.ndarray
    """``(L, d, p)``: ``G_1 .. G_L`` (federated: the sum of the clients' shares)."""
    sensitivities: np.ndarray
    """``(L,)``: ``Delta_l`` computed from ``X^(l-1)``."""
    noise_std: np.ndarray
    """``(L,)``: ``Delta_l sigma``."""
    params: PpmParams
    clients: int = 1
    """Number of clients (``1``: the trusted-curator Algorithm 1)."""
    seed_entropy: int | None = None

    @property
    def components(self) -> np.ndarray:
        """The first ``k`` columns of ``X^L``: the estimate of the top-``k`` right singular subspace."""
        return self.basis[:, : self.params.k]

    def to_row(self) -> dict[str, object]:
        """Tidy summary row."""
        return {**self.params.to_row(), "clients": self.clients, "d": int(self.basis.shape[0]),
                "max_sensitivity": float(np.max(self.sensitivities)),
                "max_noise_std": float(np.max(self.noise_std)), "seed": self.seed_entropy}


def orthonormalise(Y: np.ndarray) -> np.ndarray:
    """``Q`` of the thin QR factorisation ``Y = Q R`` with ``diag(R) >= 0`` (deterministic signs)."""
    Q, R = np.linalg.qr(Y)
    signs = np.sign(np.diag(R))
    signs[signs == 0] = 1.0
    return Q * signs


def _as_matrix(data_or_X: PartitionedData | np.ndarray) -> np.ndarray:
    if isinstance(data_or_X, PartitionedData):
        return data_or_X.X
    X = np.asarray(data_or_X, dtype=float)
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
        raise ConfigError(f"data_or_X must be a non-empty 2-D array, got shape {X.shape}",
                          field="data_or_X")
    if not np.all(np.isfinite(X)):
        raise ConfigError("data_or_X must be finite, got nan or inf entries", field="data_or_X")
    norms = np.linalg.norm(X, axis=1)
    if np.any(norms > 1.0 + 1e-12):
        i = int(np.argmax(norms))
        raise ConfigError(f"data_or_X: row {i} has norm {norms[i]:.6g} > 1; every row must lie in the "
                          "unit ball", field="data_or_X")
    return X


def _streams(seed: int | np.random.SeedSequence) -> tuple[np.random.Generator, np.random.SeedSequence]:
    """``(rng for X^0, SeedSequence of the noise)`` (module docstring), from a fresh copy of ``seed``."""
    root = check_seed(seed)
    root = np.random.SeedSequence(root.entropy, spawn_key=root.spawn_key, pool_size=root.pool_size)
    init, noise = root.spawn(2)
    return np.random.default_rng(init), noise


def _entropy(seed: int | np.random.SeedSequence) -> int | None:
    ent = as_seed_sequence(seed).entropy
    return int(ent) if isinstance(ent, (int, np.integer)) else None


def _check_dims(params: PpmParams, d: int) -> None:
    if not isinstance(params, PpmParams):
        raise ConfigError(f"params must be a PpmParams, got {type(params).__name__}", field="params")
    if params.p > d:
        raise ConfigError(f"params.p must be <= d = {d} (the number of columns of X), got {params.p}",
                          field="params.p")


def _iterate(V0: np.ndarray, params: PpmParams, release: Release, clients: int,
             seed: int | np.random.SeedSequence) -> PpmResult:
    """The loop shared by Algorithms 1 and 2: ``Delta_l`` from ``X^(l-1)``, release, ``X^l = QR(Y_l)``."""
    L = params.iterations
    iterates = np.empty((L + 1, *V0.shape))
    Ys = np.empty((L, *V0.shape))
    noise = np.empty((L, *V0.shape))
    deltas = np.empty(L)
    iterates[0] = V0
    for l in range(1, L + 1):
        deltas[l - 1] = iterate_sensitivity(iterates[l - 1], params.adjacency, params.sensitivity)
        Ys[l - 1], noise[l - 1] = release(l, iterates[l - 1], float(deltas[l - 1]))
        iterates[l] = orthonormalise(Ys[l - 1])
    return PpmResult(basis=iterates[L].copy(), iterates=iterates, Y=Ys, noise=noise,
                     sensitivities=deltas, noise_std=deltas * params.noise_multiplier, params=params,
                     clients=clients, seed_entropy=_entropy(seed))


def run_ppm(data_or_X: PartitionedData | np.ndarray, params: PpmParams,
            seed: int | np.random.SeedSequence, *, standard_noise: np.ndarray | None = None) -> PpmResult:
    """Algorithm 1 of Nicolas et al. (trusted curator) on ``A = X^T X``.

    ``Y_l = A X^(l-1) + Delta_l sigma Z_l`` with ``Z_l ~ N(0, 1)^{d x p}``, ``X^l = QR(Y_l)``.

    Parameters
    ----------
    data_or_X : PartitionedData or numpy.ndarray
        The data ``X`` (``n x d``, rows in the unit ball); a partition is ignored.
    params : PpmParams
        ``p <= d``.
    seed : int or numpy.random.SeedSequence
        Seed of ``X^0`` and of the noise (module docstring); the same seed gives bit-identical results.
    standard_noise : numpy.ndarray, optional
        ``Z`` of shape ``(L, d, p)`` to use in place of the draws from ``seed`` (``X^0`` still comes
        from ``seed``), e.g. :func:`federated_standard_noise` to replay a federated run.

    Returns
    -------
    PpmResult

    Raises
    ------
    ConfigError
        Bad data, ``params.p > d`` or ``standard_noise`` of the wrong shape.
    """
    X = _as_matrix(data_or_X)
    d = X.shape[1]
    _check_dims(params, d)
    init_rng, noise_seq = _streams(seed)
    V0 = orthonormalise(init_rng.standard_normal((d, params.p)))
    shape = (params.iterations, d, params.p)
    if standard_noise is None:
        Z = np.random.default_rng(noise_seq).standard_normal(shape)
    else:
        Z = np.asarray(standard_noise, dtype=float)
        if Z.shape != shape:
            raise ConfigError(f"standard_noise must have shape (iterations, d, p) = {shape}, got "
                              f"{Z.shape}", field="standard_noise")
    A = X.T @ X
    sigma = params.noise_multiplier

    def release(l: int, V: np.ndarray, delta: float) -> tuple[np.ndarray, np.ndarray]:
        G = (delta * sigma) * Z[l - 1]
        return A @ V + G, G

    return _iterate(V0, params, release, 1, seed)


def _client_noise(noise_seq: np.random.SeedSequence, clients: int,
                  shape: tuple[int, int, int]) -> np.ndarray:
    """``(s, L, d, p)``: client ``i``'s standard draws ``Z_i`` from ``noise.spawn(s)[i]``."""
    fresh = np.random.SeedSequence(noise_seq.entropy, spawn_key=noise_seq.spawn_key,
                                   pool_size=noise_seq.pool_size)
    return np.stack([np.random.default_rng(s).standard_normal(shape) for s in fresh.spawn(clients)])


def federated_standard_noise(seed: int | np.random.SeedSequence, clients: int, d: int,
                             params: PpmParams) -> np.ndarray:
    """The central standard noise equivalent to the clients' shares: ``Z = sum_i Z_i / sqrt(s)``.

    With ``G_l^(i) = Delta_l (sigma / sqrt(s)) Z_i[l]`` (Nicolas et al., Alg. 2, line 7),
    ``sum_i G_l^(i) = Delta_l sigma Z[l]`` and ``Z[l] ~ N(0, 1)^{d x p}`` (Nicolas et al., Theorem 5.2).

    Returns
    -------
    numpy.ndarray
        ``(L, d, p)``; pass it as ``standard_noise`` to :func:`run_ppm`.
    """
    s = check_int(clients, "clients", 1)
    _, noise_seq = _streams(seed)
    shares = _client_noise(noise_seq, s, (params.iterations, check_int(d, "d", 1), params.p))
    return shares.sum(axis=0) / math.sqrt(s)


def run_ppm_federated(data: PartitionedData, params: PpmParams,
                      seed: int | np.random.SeedSequence) -> PpmResult:
    """Algorithm 2 of Nicolas et al.: each agent of ``data`` is a client, a secure aggregation sums
    their releases.

    Client ``i`` (rows ``X_i``) computes ``Y_l^(i) = X_i^T (X_i X^(l-1)) + Delta_l nu Z_i[l]`` with
    ``nu = sigma / sqrt(s)``; the server receives ``Y_l = sum_i Y_l^(i)`` only and sets
    ``X^l = QR(Y_l)``. ``X^0`` is the server's, drawn as in :func:`run_ppm`.

    Parameters
    ----------
    data : PartitionedData
        ``s = data.m`` clients.
    params : PpmParams
    seed : int or numpy.random.SeedSequence

    Returns
    -------
    PpmResult
        ``noise[l-1]`` is the sum of the shares (never seen by the server); ``clients = s``.
    """
    if not isinstance(data, PartitionedData):
        raise ConfigError(f"data must be a PartitionedData, got {type(data).__name__}", field="data")
    d, s = data.d, data.m
    _check_dims(params, d)
    init_rng, noise_seq = _streams(seed)
    V0 = orthonormalise(init_rng.standard_normal((d, params.p)))
    shares = _client_noise(noise_seq, s, (params.iterations, d, params.p))
    nu = params.noise_multiplier / math.sqrt(s)
    blocks = [data.block(i) for i in range(s)]

    def release(l: int, V: np.ndarray, delta: float) -> tuple[np.ndarray, np.ndarray]:
        local = [Xi.T @ (Xi @ V) + (delta * nu) * shares[i, l - 1] for i, Xi in enumerate(blocks)]
        return np.sum(local, axis=0), (delta * nu) * shares[:, l - 1].sum(axis=0)

    return _iterate(V0, params, release, s, seed)
