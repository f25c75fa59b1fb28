"""ppm-gossip: the federated private power method of Nicolas et al. (Algorithm 2) on a gossip graph
(docs/ppm.md).

The ``s = m`` agents of a :class:`~dpgossip.data.partition.PartitionedData` sit on the nodes of a
connected :class:`~dpgossip.topology.network.Network` with doubly-stochastic mixing matrix ``W``. The
secure-aggregation sum of Algorithm 2 is replaced by ``c`` rounds of gossip averaging, and the secure
aggregation itself is emulated by pairwise additive masks on the edges, which cancel in the sum.
Every agent ``i`` keeps its own iterate ``V_i^(l)``; all start from the same ``X^0``. At iteration ``l``:

    Y^(i)   = X_i^T X_i V_i^(l-1) + Delta_l(V_i^(l-1)) nu Z_i[l] + sum_{j in N(i)} sign(i, j) M_ij^(l)
    S^(0)   = (Y^(1); ...; Y^(s)),     S^(k) = W S^(k-1),  k = 1..c     (agent i sends S_i^(k-1) in round k)
    V_i^(l) = QR(s S_i^(c))

with ``nu = sigma / sqrt(s)`` (Nicolas et al., Algorithm 2), ``sign(i, j) = +1`` for ``i < j`` and ``-1`` for
``i > j``. Since ``1^T W = 1^T``, ``sum_i S_i^(k) = sum_i Y^(i) = A V + G`` in every round (masks cancel,
the noise shares sum to the central ``N(0, (Delta sigma)^2)``), and ``S_i^(c) -> sum_i Y^(i) / s`` as
``SLEM(W)^c``: with large ``c`` every agent's iterate is the federated run's (Nicolas et al., Theorem 5.2).

Under a schedule of rounds (``schedule``, docs/dynamic-gossip.md, section 8) round ``k`` of iteration
``l`` mixes with ``W_t``, ``t = (l - 1) c + (k - 1)``, instead of ``W`` (:func:`ppm_mixing`); a doubly
stochastic ``W_t`` keeps the sum of the states, so the masks still cancel in it.

Random streams (the convention of :mod:`dpgossip.protocols.ppm.central`, extended):
``root = SeedSequence(seed)``; ``init, noise = root.spawn(2)``; ``X^0`` from ``default_rng(init)``; agent
``i``'s standard noise
``Z_i = default_rng(noise.spawn(s)[i]).standard_normal((L, d, p))``, exactly the draws of
:func:`~dpgossip.protocols.ppm.central.run_ppm_federated`; the mask of edge ``(i, j)``, ``i < j``, is
``M_ij = mask_std * default_rng(SeedSequence(root.entropy, spawn_key=root.spawn_key + (2, i, j)))
.standard_normal((L, d, p))``: both ends can derive it from the edge's key, and the key ``(2, ...)`` is
disjoint from the children ``(0,)`` and ``(1,)`` of ``init`` and ``noise``, which it does not disturb.
The lower end adds the mask, the higher end subtracts it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dpgossip.data.partition import PartitionedData
from dpgossip.errors import ConfigError, check_int, check_number
from dpgossip.protocols.gossip.average import mixing_operator
from dpgossip.protocols.gossip.round_mixing import RoundMixing
from dpgossip.protocols.ppm.central import (
    PpmParams,
    _check_dims,
    _client_noise,
    _entropy,
    _streams,
    orthonormalise,
)
from dpgossip.protocols.ppm.sensitivity import iterate_sensitivity
from dpgossip.resources import FLOAT, Need, check_needs, size_text
from dpgossip.rng import as_seed_sequence
from dpgossip.topology.network import Network
from dpgossip.topology.schedules import MixingSchedule

__all__ = ["PpmGossipParams", "PpmGossipResult", "run_ppm_gossip", "ppm_mixing", "edge_list",
           "edge_masks", "mask_shares", "MASK_SPAWN_KEY"]

MASK_SPAWN_KEY = 2
"""First element of an edge mask's spawn key ``(2, i, j)`` (after the root's own key)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PpmGossipParams:
    """Parameters of ppm-gossip: those of the power method, the gossip rounds and the mask scale.

    Parameters
    ----------
    ppm : PpmParams
        ``p``, ``k``, ``L``, ``sigma`` (the central noise multiplier; each agent adds the share
        ``nu = sigma / sqrt(s)``), sensitivity kind and adjacency.
    consensus_steps : int
        ``c >= 1`` gossip rounds per iteration.
    mask_std : float
        Standard deviation ``>= 0`` of every entry of an edge mask (``0``: no masks).
    """

    ppm: PpmParams
    consensus_steps: int
    mask_std: float = 0.0

    def __post_init__(self) -> None:
        """Validate every field (``ConfigError`` names it)."""
        if not isinstance(self.ppm, PpmParams):
            raise ConfigError(f"ppm must be a PpmParams, got {type(self.ppm).__name__}", field="ppm")
        object.__setattr__(self, "consensus_steps", check_int(self.consensus_steps, "consensus_steps", 1))
        object.__setattr__(self, "mask_std", check_number(self.mask_std, "mask_std", low=0,
                                                          expected="a finite number >= 0"))

    def to_row(self) -> dict[str, object]:
        """Tidy row: the power method's parameters, ``consensus_steps`` and ``mask_std``."""
        return {**self.ppm.to_row(), "consensus_steps": self.consensus_steps, "mask_std": self.mask_std}


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class PpmGossipResult:
    """One run of ppm-gossip (module docstring); arrays indexed by iteration first (``l - 1``)."""

    iterates: np.ndarray
    """``(L + 1, s, d, p)``: ``V_i^(l)`` of every agent, ``l = 0..L`` (``V_i^(0) = X^0``)."""
    states: np.ndarray
    """``(L, c + 1, s, d, p)``: ``S^(k)`` at iteration ``l``; ``states[l-1, k-1, i]`` is what agent ``i``
    sends to each neighbour in round ``k`` (``k = 1..c``), ``states[l-1, 0]`` the messages ``Y^(i)``."""
    noise: np.ndarray
    """``(L, s, d, p)``: agent ``i``'s noise share ``Delta_l(V_i) nu Z_i[l]``."""
    edges: np.ndarray
    """``(E, 2)``: the edges ``(i, j)``, ``i < j``, in sorted order."""
    masks: np.ndarray
    """``(L, E, d, p)``: ``M_ij^(l)`` (``i`` adds it, ``j`` subtracts it)."""
    sensitivities: np.ndarray
    """``(L, s)``: ``Delta_l`` computed by agent ``i`` from its own ``V_i^(l-1)``."""
    noise_std: np.ndarray
    """``(L, s)``: ``Delta_l(V_i) nu``."""
    params: PpmGossipParams
    network_name: str = "custom"
    seed_entropy: int | None = None
    schedule: MixingSchedule | None = None
    """The rounds' schedule (``None``: ``W`` every round); an engine run's is the realised one."""

    @property
    def clients(self) -> int:
        """``s``, the number of agents."""
        return int(self.iterates.shape[1])

    @property
    def messages(self) -> np.ndarray:
        """``(L, c, s, d, p)``: the state each agent sends in rounds ``1..c``."""
        return self.states[:, :-1]

    @property
    def components(self) -> np.ndarray:
        """Agent 0's estimate of the top-``k`` subspace: the first ``k`` columns of ``V_0^(L)``."""
        return self.agent_components(0)

    def agent_components(self, agent: int) -> np.ndarray:
        """Agent ``agent``'s first ``k`` columns of ``V^(L)``."""
        return self.iterates[-1, agent, :, : self.params.ppm.k]

    @property
    def disagreement(self) -> float:
        """``max_i ||V_i^(L) - V_0^(L)||_max``: how far the agents' final iterates are apart."""
        last = self.iterates[-1]
        return float(np.max(np.abs(last - last[0])))

    def to_row(self) -> dict[str, object]:
        """Tidy summary row."""
        return {**self.params.to_row(), "clients": self.clients, "d": int(self.iterates.shape[2]),
                "network": self.network_name, "edges": int(self.edges.shape[0]),
                "max_sensitivity": float(np.max(self.sensitivities)),
                "max_noise_std": float(np.max(self.noise_std)), "disagreement": self.disagreement,
                "seed": self.seed_entropy,
                **({} if self.schedule is None else {"schedule": self.schedule.label})}


def edge_list(network: Network) -> np.ndarray:
    """``(E, 2)`` int array of the edges ``(i, j)``, ``i < j``, sorted (from ``network.neighbours``)."""
    pairs = [(i, j) for i, nbrs in enumerate(network.neighbours) for j in nbrs if i < j]
    return np.array(pairs, dtype=int).reshape(-1, 2)


def edge_masks(seed: int | np.random.SeedSequence, edges: np.ndarray, shape: tuple[int, ...],
               mask_std: float) -> np.ndarray:
    """``(E, *shape)``: ``M_ij = mask_std * default_rng(SeedSequence(entropy, spawn_key=key + (2, i, j)))
    .standard_normal(shape)`` for each edge (module docstring); zeros when ``mask_std = 0``."""
    out = np.zeros((edges.shape[0], *shape))
    if mask_std == 0:
        return out
    root = as_seed_sequence(seed)
    for e, (i, j) in enumerate(edges):
        key = (*root.spawn_key, MASK_SPAWN_KEY, int(i), int(j))
        seq = np.random.SeedSequence(root.entropy, spawn_key=key, pool_size=root.pool_size)
        out[e] = mask_std * np.random.default_rng(seq).standard_normal(shape)
    return out


def mask_shares(masks: np.ndarray, edges: np.ndarray, agents: int) -> np.ndarray:
    """``(agents, ...)``: agent ``i``'s total ``sum_{j in N(i)} sign(i, j) M_ij`` of ``masks`` ``(E, ...)``
    (``+`` at the lower end, ``-`` at the higher end)."""
    out = np.zeros((agents, *masks.shape[1:]))
    for e, (i, j) in enumerate(edges):
        out[i] += masks[e]
        out[j] -= masks[e]
    return out


def _check_inputs(data: PartitionedData, network: Network, params: PpmGossipParams) -> None:
    if not isinstance(data, PartitionedData):
        raise ConfigError(f"data must be a PartitionedData, got {type(data).__name__}", field="data")
    if not isinstance(network, Network):
        raise ConfigError(f"network must be a Network, got {type(network).__name__}", field="network")
    if not isinstance(params, PpmGossipParams):
        raise ConfigError(f"params must be a PpmGossipParams, got {type(params).__name__}", field="params")
    if network.m != data.m:
        raise ConfigError(f"network has {network.m} agents but data has {data.m}; they must be equal",
                          field="network")
    _check_dims(params.ppm, data.d)
    L, c, s, dp = params.ppm.iterations, params.consensus_steps, data.m, data.d * params.ppm.p
    edges = sum(len(n) for n in network.neighbours) // 2
    nbytes = FLOAT * dp * (L * (c + 1) * s + 3 * L * s + 2 * L * edges)
    check_needs([Need(what=f"consensus_steps = {c} with {L} iterations, {s} agents and d x p = {dp} "
                           f"needs every round's states", nbytes=nbytes, shown=size_text(nbytes))],
                advice="use fewer consensus_steps or iterations", field="consensus_steps")


def ppm_mixing(network: Network, params: PpmGossipParams,
               schedule: MixingSchedule | None = None) -> RoundMixing:
    """The rounds of a run: ``W`` every round, or ``W_t`` of ``schedule`` for global round
    ``t = (l - 1) c + (k - 1)`` (:mod:`dpgossip.protocols.gossip.round_mixing`)."""
    return RoundMixing(network, schedule, params.ppm.iterations * params.consensus_steps,
                       convert=_operator)


def _operator(W: object) -> object:
    return W if sp.issparse(W) else mixing_operator(W)


def run_ppm_gossip(data: PartitionedData, network: Network, params: PpmGossipParams,
                   seed: int | np.random.SeedSequence, *,
                   schedule: MixingSchedule | None = None) -> PpmGossipResult:
    """Run ppm-gossip (module docstring): Nicolas et al.'s Algorithm 2 with the sum replaced by
    ``c`` gossip rounds.

    Parameters
    ----------
    data : PartitionedData
        ``s = data.m`` agents; agent ``i`` holds the rows ``X_i``.
    network : Network
        ``s`` agents and the mixing matrix ``W`` (dense or sparse; only products ``W @ S`` are used).
    params : PpmGossipParams
    seed : int or numpy.random.SeedSequence
        Seed of ``X^0``, the noise shares and the masks; the same seed gives bit-identical runs, and the
        noise shares are those of :func:`~dpgossip.protocols.ppm.central.run_ppm_federated` with the same
        seed.
    schedule : MixingSchedule, optional
        Time-varying rounds: iteration ``l``'s round ``k`` mixes with ``W_t``,
        ``t = (l - 1) c + (k - 1)`` (:func:`ppm_mixing`); ``None``: ``W`` every round.

    Returns
    -------
    PpmGossipResult

    Raises
    ------
    ConfigError
        Wrong types, ``network.m != data.m``, ``p > d``, the states would not fit in memory, or a
        schedule a gossip kind cannot follow.
    """
    _check_inputs(data, network, params)
    mixing = ppm_mixing(network, params, schedule)
    ppm, c, s, d = params.ppm, params.consensus_steps, data.m, data.d
    L, p = ppm.iterations, ppm.p
    init_rng, noise_seq = _streams(seed)
    V0 = orthonormalise(init_rng.standard_normal((d, p)))
    Z = _client_noise(noise_seq, s, (L, d, p))
    edges = edge_list(network)
    masks = edge_masks(seed, edges, (L, d, p), params.mask_std)
    shares = mask_shares(masks, edges, s)
    masks = np.moveaxis(masks, 1, 0)
    iterates = np.empty((L + 1, s, d, p))
    iterates[0] = V0
    states, noise = np.empty((L, c + 1, s, d, p)), np.empty((L, s, d, p))
    deltas = np.empty((L, s))
    nu = ppm.noise_multiplier / math.sqrt(s)
    blocks = [data.block(i) for i in range(s)]
    for l in range(L):
        V = iterates[l]
        deltas[l] = [iterate_sensitivity(V[i], ppm.adjacency, ppm.sensitivity) for i in range(s)]
        noise[l] = (deltas[l] * nu)[:, None, None] * Z[:, l]
        Y = np.stack([Xi.T @ (Xi @ V[i]) for i, Xi in enumerate(blocks)]) + noise[l] + shares[:, l]
        states[l] = mixing.states(Y.reshape(s, d * p), l * c, c).reshape(c + 1, s, d, p)
        iterates[l + 1] = [orthonormalise(s * states[l, c, i]) for i in range(s)]
    return PpmGossipResult(iterates=iterates, states=states, noise=noise, edges=edges, masks=masks,
                           sensitivities=deltas, noise_std=deltas * nu, params=params,
                           network_name=network.name, seed_entropy=_entropy(seed), schedule=schedule)
