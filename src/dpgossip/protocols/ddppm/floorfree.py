"""The floor-free D-DP-PM: Algorithm 1 of Campbell et al. with its noise moved onto the gossip
inputs (docs/floorfree.md).

D-DP-PM's first gossip message ``z_j = X_j^T q_j^(0)`` multiplies the data by a private Gaussian, so the
views' covariance moves with the data and no noise level removes the leak (docs/privacy.md, "floor").
This variant sends only Gaussian mechanisms of bounded sensitivity. Agent ``i`` holds a unit direction
``u_i^(t)`` (all start from a public ``u^(0)``) and, for ``t = 1..T``::

    q_i^(t-1)   = X_i u_i^(t-1)                          (internal, never sent: |q_r| <= ||x_r|| <= 1)
    z~_i^(t)    = X_i^T q_i^(t-1) + e_i^(t),   e_i^(t) ~ N(0, sigma_z^2 I_d)      (the gossip input)
    s^(t,0)     = z~^(t),   s^(t,k) = (W (x) I_d) s^(t,k-1),   k = 1..c
    z_i^(t+1/2) = m s_i^(t,c),        u_i^(t) = z_i^(t+1/2) / ||z_i^(t+1/2)||

and finally, as in D-DP-PM, the iterate is disseminated with the noise on ``q``:

    q_i^(T) = X_i u_i^(T) + p_i,   p_i ~ N(0, sigma_p^2 I_{n_i})     (``disseminate = True``)

Sensitivities (one row ``x`` of one agent replaced by ``x'``, both in the unit ball), given the
directions (functions of earlier releases, the same under both datasets):

* gossip input: ``z~_j`` moves by ``(x' x'^T - x x^T) u``, whose norm is at most the spectral norm of
  the rank-2 matrix ``x' x'^T - x x^T``, ``|a - b|/2 + sqrt((a + b)^2/4 - <x, x'>^2) <= max(a, b) <= 1``
  (``a = ||x'||^2``, ``b = ||x||^2``): ``Delta_z = 1`` (attained at ``x = 0``, ``x' = u``), both adjacencies;
* final iterate: one entry moves by ``<x' - x, u^(T)>``: ``Delta_q = ||x' - x|| <= 1`` (``bounded``) or
  ``2`` (``replace-one``).

``sigma_z = s Delta_z`` and ``sigma_p = s Delta_q`` with one noise multiplier ``s``: the run is the
adaptive composition of ``T`` (``T + 1`` with dissemination) Gaussian mechanisms of multiplier ``s``
(:mod:`dpgossip.protocols.ddppm.floorfree_guarantee`). Rank 1 only.

Random streams: ``start, z_noise, q_noise = SeedSequence(seed).spawn(3)``; ``u^(0)`` is the normalised
``default_rng(start).standard_normal(d)`` (public: every agent derives it from the run's seed); agent
``i``'s ``e_i^(1..T)`` is ``default_rng(z_noise.spawn(m)[i]).standard_normal((T, d))`` times ``sigma_z``
and its ``p_i`` is ``default_rng(q_noise.spawn(m)[i]).standard_normal(n_i)`` times ``sigma_p``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpgossip.data.partition import PartitionedData
from dpgossip.errors import ConfigError, check_choice, check_int, check_number
from dpgossip.protocols.gossip.average import gossip_states, mixing_operator
from dpgossip.resources import FLOAT, Need, check_needs, size_text
from dpgossip.rng import as_seed_sequence
from dpgossip.topology.network import Network

__all__ = ["FLOORFREE_ADJACENCIES", "FloorFreeParams", "FloorFreeNoise", "FloorFreeResult",
           "floorfree_noise", "run_floorfree", "rank_two_norm"]

FLOORFREE_ADJACENCIES = {"bounded": 1.0, "replace-one": 2.0}
"""``Delta_q``, the sensitivity of one entry of the final iterate, per adjacency (module docstring)."""


def rank_two_norm(x: np.ndarray, x_new: np.ndarray) -> float:
    """Spectral norm of ``x' x'^T - x x^T``: ``|a - b|/2 + sqrt((a + b)^2/4 - <x, x'>^2)``, ``<= 1``."""
    a, b, c = float(x_new @ x_new), float(x @ x), float(x @ x_new)
    return abs(a - b) / 2 + float(np.sqrt(max((a + b) ** 2 / 4 - c * c, 0.0)))


@dataclass(frozen=True, slots=True, kw_only=True)
class FloorFreeParams:
    """Parameters of the floor-free D-DP-PM (module docstring).

    ``noise_multiplier`` is ``s``: every release has noise std ``s`` times its sensitivity
    (``sigma_z = s``, ``sigma_p = s Delta_q``); ``0`` runs without noise. ``disseminate`` sends
    ``q^(T)`` to everyone (D-DP-PM's last step); without it only the directions are shared and each
    agent keeps ``X_i u_i^(T)`` to itself.
    """

    iterations: int
    consensus_steps: int
    noise_multiplier: float
    adjacency: str = "bounded"
    disseminate: bool = True

    def __post_init__(self) -> None:
        """Validate every field (``ConfigError`` names it)."""
        object.__setattr__(self, "iterations", check_int(self.iterations, "iterations", 1))
        object.__setattr__(self, "consensus_steps",
                           check_int(self.consensus_steps, "consensus_steps", 0))
        object.__setattr__(self, "noise_multiplier", check_number(
            self.noise_multiplier, "noise_multiplier", low=0, expected="a finite number >= 0"))
        check_choice(self.adjacency, "adjacency", tuple(FLOORFREE_ADJACENCIES))
        if not isinstance(self.disseminate, bool):
            raise ConfigError(f"disseminate must be true or false, got {self.disseminate!r}",
                              field="disseminate")

    @property
    def z_sensitivity(self) -> float:
        """``Delta_z = 1``: the largest ``||(x' x'^T - x x^T) u||`` over the unit ball."""
        return 1.0

    @property
    def q_sensitivity(self) -> float:
        """``Delta_q``: 1 (``bounded``) or 2 (``replace-one``)."""
        return FLOORFREE_ADJACENCIES[self.adjacency]

    @property
    def sigma_z(self) -> float:
        """Noise std of every gossip-input entry, ``s Delta_z``."""
        return self.noise_multiplier * self.z_sensitivity

    @property
    def sigma_p(self) -> float:
        """Noise std of every entry of the disseminated ``q^(T)``, ``s Delta_q``."""
        return self.noise_multiplier * self.q_sensitivity

    def releases(self) -> int:
        """Gaussian mechanisms composed: ``T``, plus one when ``q^(T)`` is disseminated."""
        return self.iterations + int(self.disseminate)

    def to_row(self) -> dict[str, object]:
        """Tidy row."""
        return {"T": self.iterations, "c": self.consensus_steps,
                "noise_multiplier": self.noise_multiplier, "adjacency": self.adjacency,
                "disseminate": self.disseminate, "sigma_z": self.sigma_z, "sigma_p": self.sigma_p}


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class FloorFreeNoise:
    """The randomness of one run: public start ``u0`` (``d``), ``e`` (``T x m x d``), ``p`` (``n``)."""

    u0: np.ndarray
    e: np.ndarray
    p: np.ndarray


def floorfree_noise(data: PartitionedData, params: FloorFreeParams,
                    seed: int | np.random.SeedSequence) -> FloorFreeNoise:
    """Draw ``u^(0)``, ``e`` and ``p`` from ``seed`` (streams in the module docstring)."""
    root = as_seed_sequence(seed)
    root = np.random.SeedSequence(root.entropy, spawn_key=root.spawn_key, pool_size=root.pool_size)
    start, z_noise, q_noise = root.spawn(3)
    u0 = np.random.default_rng(start).standard_normal(data.d)
    u0 /= np.linalg.norm(u0)
    T = params.iterations
    e = np.stack([np.random.default_rng(s).standard_normal((T, data.d))
                  for s in z_noise.spawn(data.m)], axis=1) * params.sigma_z
    p = np.concatenate([np.random.default_rng(s).standard_normal(n)
                        for s, n in zip(q_noise.spawn(data.m), data.sizes, strict=True)])
    return FloorFreeNoise(u0=u0, e=e, p=p * params.sigma_p)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class FloorFreeResult:
    """One run of the floor-free D-DP-PM."""

    directions: np.ndarray
    """``(T + 1, m, d)``: ``u_i^(t)`` (``t = 0`` is the public start)."""
    z: np.ndarray
    """``(T, m, d)``: the noisy gossip inputs ``z~_i^(t)``."""
    q_local: np.ndarray
    """``(n,)``: ``X_i u_i^(T)`` (each agent's own rows; not sent)."""
    q_released: np.ndarray | None
    """``(n,)``: the disseminated ``X_i u_i^(T) + p_i`` (``None`` without dissemination)."""
    noise: FloorFreeNoise
    params: FloorFreeParams
    states: np.ndarray | None = None
    """``(T, c + 1, m, d)`` gossip states when recorded."""

    @property
    def Q(self) -> np.ndarray:
        """``(n, 1)``: the estimate of the top left singular vector (released iterate when
        disseminated, else the agents' local ``X_i u_i^(T)``), normalised."""
        q = self.q_released if self.q_released is not None else self.q_local
        nq = float(np.linalg.norm(q))
        return (q / nq if nq > 0 else q)[:, None]

    def to_row(self) -> dict[str, object]:
        """Tidy row (the parameters)."""
        return {"protocol": "ddppm-floorfree", **self.params.to_row()}


def _normalise(Zh: np.ndarray, previous: np.ndarray) -> np.ndarray:
    """``z / ||z||`` per agent; an agent whose ``z`` is zero keeps its previous direction."""
    norms = np.linalg.norm(Zh, axis=1, keepdims=True)
    return np.where(norms > 0, Zh / np.where(norms > 0, norms, 1.0), previous)


def _check_memory(data: PartitionedData, T: int, c: int, record_states: bool) -> None:
    """Refuse before allocating: directions, inputs and noise ``(3T + 1) m d``, states when recorded."""
    per = data.m * data.d
    nbytes = FLOAT * (per * (3 * T + 1 + (T * (c + 1) if record_states else c + 1)) + 4 * data.n)
    kept = " with every gossip state kept" if record_states else ""
    check_needs([Need(what=f"iterations = {T}, consensus_steps = {c}, {data.m} agents x d = {data.d}"
                           f"{kept}", nbytes=nbytes, shown=size_text(nbytes))],
                advice="use fewer iterations or do not record the states", field="iterations")


def run_floorfree(data: PartitionedData, network: Network, params: FloorFreeParams,
                  seed: int | np.random.SeedSequence, *, noise: FloorFreeNoise | None = None,
                  record_states: bool = False) -> FloorFreeResult:
    """Run the floor-free D-DP-PM synchronously (module docstring), matrix backend.

    Parameters
    ----------
    data, network
        Partitioned data (rows in the unit ball) and a network with ``network.m == data.m``.
    params : FloorFreeParams
    seed : int or numpy.random.SeedSequence
        Seed of :func:`floorfree_noise`; the same seed gives bit-identical results.
    noise : FloorFreeNoise, optional
        Noise to use instead of drawing it (e.g. to replay a run).
    record_states : bool
        Keep every gossip state.

    Returns
    -------
    FloorFreeResult
    """
    if network.m != data.m:
        raise ConfigError(f"network has {network.m} agents but the data are split among {data.m}")
    m, T, c = data.m, params.iterations, params.consensus_steps
    _check_memory(data, T, c, record_states)
    noise = floorfree_noise(data, params, seed) if noise is None else noise
    if noise.e.shape != (T, m, data.d) or noise.p.shape != (data.n,) or noise.u0.shape != (data.d,):
        raise ConfigError("noise must have e of shape (T, m, d), p of shape (n,) and u0 of shape (d,)",
                          field="noise")
    Wop, owner, starts = mixing_operator(network.W), data.agent_of_row(), data.offsets[:-1]
    X = np.asarray(data.X, dtype=float)
    U = np.empty((T + 1, m, data.d))
    U[0] = noise.u0
    Z = np.empty((T, m, data.d))
    states = np.empty((T, c + 1, m, data.d)) if record_states else None
    for t in range(1, T + 1):
        q = np.einsum("nd,nd->n", X, U[t - 1][owner])
        Z[t - 1] = np.add.reduceat(X * q[:, None], starts, axis=0) + noise.e[t - 1]
        S = gossip_states(Wop, Z[t - 1], c)
        if states is not None:
            states[t - 1] = S
        U[t] = _normalise(m * S[-1], U[t - 1])
    q_local = np.einsum("nd,nd->n", X, U[T][owner])
    released = q_local + noise.p if params.disseminate else None
    return FloorFreeResult(directions=U, z=Z, q_local=q_local, q_released=released, noise=noise,
                           params=params, states=states)
