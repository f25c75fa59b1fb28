"""capepca-gossip: capePCA (Imtiaz and Sarwate, Alg. 2) with no trusted generator and no aggregator
(docs/cape-gossip.md).

Site ``s`` (an agent of a :class:`~dpgossip.topology.network.Network`) holds ``A_s = X_s^T X_s / N_s``.
The zero-sum noise of capePCA's generator is built from pairwise exchanges instead: every edge
``(i, j)``, ``i < j``, has one symmetric draw ``D_ij`` (upper triangle i.i.d. ``N(0, tau_e^2)``), which
``i`` adds and ``j`` subtracts, and every site adds its own symmetric ``G_s`` (``N(0, tau_g^2)``):

    E_s     = sum_{(s, j) in E} D_sj - sum_{(i, s) in E} D_is        (= (M D)_s, M the signed incidence)
    Y_s^(0) = A_s + E_s + G_s
    Y^(k)   = (W (x) I) Y^(k-1),   k = 1..c          (site s sends Y_s^(k-1) to its neighbours in round k)
    V_s     = top-K eigenvectors of Y_s^(c)          (each site's own estimate)

``sum_s E_s = 0`` (each draw enters once with each sign), and ``1^T W = 1^T`` keeps the sum of the states,
so as ``c`` grows ``Y_s^(c) -> (1/S) sum_s (A_s + G_s)``: capePCA's aggregate with the same ``G``
(``run_cape`` with ``E`` the edge noise and ``F = 0``), each entry of the noise with variance
``tau_g^2 / S``. With ``tau_g = tau / sqrt(S)`` that is capePCA's ``tau^2 / S^2``. Under a schedule of
rounds round ``k`` mixes with ``W_{k-1}`` instead (docs/dynamic-gossip.md, section 8).

Noise levels are multipliers of the sensitivity ``Delta(N_min)`` of
:func:`~dpgossip.protocols.cape.star.second_moment_sensitivity`: ``tau_e = edge_multiplier * Delta``,
``tau_g = own_multiplier * Delta``. Streams: ``root = SeedSequence(seed)``; edge ``(i, j)`` draws from
``SeedSequence(root.entropy, spawn_key=root.spawn_key + (1, i, j))`` (both ends can derive it), site
``s`` from ``spawn_key + (0, s)``; each is one ``symmetric_gaussian`` draw.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpgossip.data.partition import PartitionedData
from dpgossip.errors import ConfigError, check_choice, check_int, check_number
from dpgossip.protocols.cape.star import (
    SENSITIVITIES,
    CapeNoise,
    second_moment_sensitivity,
    symmetric_gaussian,
    top_eigenvectors,
)
from dpgossip.protocols.gossip.decor import dense_incidence as incidence
from dpgossip.protocols.gossip.round_mixing import RoundMixing
from dpgossip.protocols.ppm.gossip import edge_list
from dpgossip.resources import FLOAT, Need, check_needs, size_text
from dpgossip.rng import as_seed_sequence
from dpgossip.topology.network import Network
from dpgossip.topology.schedules import MixingSchedule

__all__ = ["CapeGossipParams", "CapeGossipNoise", "CapeGossipResult", "incidence",
           "cape_gossip_noise", "second_moments", "run_cape_gossip"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CapeGossipParams:
    """Parameters of capepca-gossip (module docstring): ``k`` eigenvectors, ``c`` gossip rounds, the
    edge and own noise multipliers (std over ``Delta(N_min)``) and the sensitivity kind."""

    k: int
    consensus_steps: int
    edge_multiplier: float
    own_multiplier: float
    sensitivity: str = "row-replacement"

    def __post_init__(self) -> None:
        """Validate every field (``ConfigError`` names it)."""
        object.__setattr__(self, "k", check_int(self.k, "k", 1))
        object.__setattr__(self, "consensus_steps",
                           check_int(self.consensus_steps, "consensus_steps", 0))
        for name in ("edge_multiplier", "own_multiplier"):
            object.__setattr__(self, name, check_number(getattr(self, name), name, low=0,
                                                        expected="a finite number >= 0"))
        check_choice(self.sensitivity, "sensitivity", tuple(SENSITIVITIES))

    def stds(self, rows: int) -> tuple[float, float]:
        """``(tau_e, tau_g)`` for a smallest site of ``rows`` rows."""
        delta = second_moment_sensitivity(rows, self.sensitivity)
        return self.edge_multiplier * delta, self.own_multiplier * delta

    def to_row(self) -> dict[str, object]:
        """Tidy row."""
        return {"k": self.k, "c": self.consensus_steps, "edge_multiplier": self.edge_multiplier,
                "own_multiplier": self.own_multiplier, "sensitivity": self.sensitivity}


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class CapeGossipNoise:
    """Edge draws ``D`` (``|E| x d x d``, for the sorted ``edges``) and own draws ``G`` (``S x d x d``).

    Validated: symmetric (``ConfigError`` naming ``noise.D`` or ``noise.G`` otherwise), shapes agree.
    """

    edges: np.ndarray
    D: np.ndarray
    G: np.ndarray

    def __post_init__(self) -> None:
        """Check symmetry (through :class:`~dpgossip.protocols.cape.star.CapeNoise`) and shapes."""
        G = np.asarray(self.G, dtype=float)
        D = np.asarray(self.D, dtype=float)
        if D.ndim != 3 or D.shape[0] != len(self.edges) or (D.size and D.shape[1:] != G.shape[1:]):
            raise ConfigError(f"noise.D must have shape (|E|, d, d) = ({len(self.edges)}, "
                              f"{G.shape[1:]}), got {D.shape}", field="noise.D")
        zeros = np.zeros_like(G)
        CapeNoise(E=zeros, F=zeros, G=G)                                   # G symmetric
        if D.size:
            try:
                CapeNoise(E=np.zeros_like(D), F=np.zeros_like(D), G=D)
            except ConfigError as err:
                raise ConfigError(str(err).replace("noise.G", "noise.D"), field="noise.D") from None
        object.__setattr__(self, "D", (D + np.swapaxes(D, 1, 2)) / 2)
        object.__setattr__(self, "G", (G + np.swapaxes(G, 1, 2)) / 2)

    def edge_sums(self) -> np.ndarray:
        """``E_s = (M D)_s`` (``S x d x d``): each edge's draw added at one end, subtracted at the other."""
        M = incidence(np.asarray(self.edges), self.G.shape[0])
        return np.einsum("se,eab->sab", M, self.D)


def cape_gossip_noise(network: Network, d: int, stds: tuple[float, float],
                      seed: int | np.random.SeedSequence) -> CapeGossipNoise:
    """Draw the edge and own noise for ``network`` at ``stds = (tau_e, tau_g)`` (module docstring)."""
    root = as_seed_sequence(seed)
    edges = edge_list(network)

    def draw(key: tuple[int, ...], std: float) -> np.ndarray:
        seq = np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, *key))
        return symmetric_gaussian(np.random.default_rng(seq), (), d, std)

    D = np.stack([draw((1, int(i), int(j)), stds[0]) for i, j in edges]) if len(edges) \
        else np.zeros((0, d, d))
    G = np.stack([draw((0, s), stds[1]) for s in range(network.m)])
    return CapeGossipNoise(edges=edges, D=D, G=G)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class CapeGossipResult:
    """One run: every site's initial message, final estimate and eigenvectors."""

    initial: np.ndarray
    """``(S, d, d)``: ``Y^(0) = A + E + G``."""
    estimates: np.ndarray
    """``(S, d, d)``: ``Y^(c)``, each site's estimate."""
    eigenvalues: np.ndarray
    """``(S, d)``, descending."""
    eigenvectors: np.ndarray
    """``(S, d, d)``: columns, largest-magnitude entry positive."""
    target: np.ndarray
    """``(d, d)``: ``(1/S) sum_s A_s``."""
    limit: np.ndarray
    """``(d, d)``: ``(1/S) sum_s (A_s + G_s)``, the estimates' limit as ``c`` grows."""
    noise: CapeGossipNoise
    params: CapeGossipParams
    states: np.ndarray | None = None
    """``(c + 1, S, d, d)`` when recorded."""
    schedule: MixingSchedule | None = None
    """The rounds' schedule (``None``: ``W`` every round); an engine run's is the realised one."""

    @property
    def components(self) -> np.ndarray:
        """``(S, d, k)``: each site's top-``k`` eigenvectors."""
        return self.eigenvectors[:, :, : self.params.k]

    def to_row(self) -> dict[str, object]:
        """Tidy row."""
        return {"protocol": "capepca-gossip", **self.params.to_row(), "sites": self.initial.shape[0],
                "d": int(self.target.shape[0]),
                **({} if self.schedule is None else {"schedule": self.schedule.label})}


def second_moments(data: PartitionedData) -> np.ndarray:
    """``(S, d, d)``: ``A_s = X_s^T X_s / N_s``, symmetrised exactly (the matrices of capePCA)."""
    if not isinstance(data, PartitionedData):
        raise ConfigError(f"data must be a PartitionedData, got {type(data).__name__}", field="data")
    A = np.stack([data.block(s).T @ data.block(s) / data.sizes[s] for s in range(data.m)])
    return (A + np.swapaxes(A, 1, 2)) / 2.0


def _check_memory(S: int, d: int, edges: int, c: int, record_states: bool) -> None:
    """Refuse before allocating: ``S d^2`` per state (``c + 1`` kept when recorded), ``|E| d^2`` draws."""
    states = (c + 1) if record_states else 3
    nbytes = FLOAT * d * d * (states * S + edges + 4 * S)
    kept = ", every state kept" if record_states else ""
    check_needs([Need(what=f"{S} sites with d = {d} ({edges} edges{kept}) need their d x d matrices",
                      nbytes=nbytes, shown=size_text(nbytes))],
                advice="use fewer sites or columns, or do not record the states", field="data")


def run_cape_gossip(data: PartitionedData, network: Network, params: CapeGossipParams,
                    seed: int | np.random.SeedSequence, *, noise: CapeGossipNoise | None = None,
                    record_states: bool = False,
                    schedule: MixingSchedule | None = None) -> CapeGossipResult:
    """Run capepca-gossip (module docstring) on the matrix backend.

    Parameters
    ----------
    data : PartitionedData
        ``S = data.m`` sites.
    network : Network
        ``network.m == S``; its mixing matrix ``W`` (doubly stochastic).
    params : CapeGossipParams
        ``k <= d``.
    seed : int or numpy.random.SeedSequence
        Seed of :func:`cape_gossip_noise`.
    noise : CapeGossipNoise, optional
        Noise to use instead (its edges must be the network's).
    record_states : bool
        Keep every gossip state.
    schedule : MixingSchedule, optional
        Time-varying rounds: round ``k`` mixes with ``W_{k-1}``
        (:mod:`dpgossip.protocols.gossip.round_mixing`); ``None``: ``W`` every round.

    Returns
    -------
    CapeGossipResult
    """
    A = second_moments(data)
    S, d = A.shape[0], A.shape[1]
    if network.m != S:
        raise ConfigError(f"network has {network.m} agents but the data are split among {S}")
    if params.k > d:
        raise ConfigError(f"params.k must be <= d = {d}, got {params.k}", field="params.k")
    _check_memory(S, d, network.graph.number_of_edges(), params.consensus_steps, record_states)
    if noise is None:
        noise = cape_gossip_noise(network, d, params.stds(min(data.sizes)), seed)
    elif not np.array_equal(np.asarray(noise.edges).reshape(-1, 2), edge_list(network)) \
            or noise.G.shape != A.shape:
        raise ConfigError("noise must have the network's edges and G of shape (S, d, d)", field="noise")
    Y0 = A + noise.edge_sums() + noise.G
    flat, c = Y0.reshape(S, d * d), params.consensus_steps
    mixing = RoundMixing(network, schedule, c)
    states = mixing.states(flat, 0, c).reshape(-1, S, d, d) if record_states else None
    last = states[-1] if states is not None else mixing.apply(flat, 0, c).reshape(S, d, d)
    est = (last + np.swapaxes(last, 1, 2)) / 2
    pairs = [top_eigenvectors(M) for M in est]
    return CapeGossipResult(initial=Y0, estimates=est, eigenvalues=np.stack([w for w, _ in pairs]),
                            eigenvectors=np.stack([V for _, V in pairs]), target=A.mean(axis=0),
                            limit=(A + noise.G).mean(axis=0), noise=noise, params=params,
                            states=states, schedule=schedule)
