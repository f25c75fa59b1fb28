"""Linear models of noisy gossip averaging and the Gaussian views of observers (docs/network-dp.md).

Agents ``0..m-1`` of a :class:`~dpgossip.topology.Network` hold scalar private values and mix with its
doubly-stochastic ``W``.  ``D = diag(sigma_0, ..., sigma_{m-1})`` holds the noise scales and ``z``
independent standard normal variables, so ``eta = D z``.

``gossip-average`` (noise once, then ``T`` rounds; Muffliato's noisy averaging)
    ``y^0 = x + D z^0``, ``y^t = W y^{t-1}`` for ``t = 1..T-1``.
``gossip-noisy`` (fresh noise every round; the attacker-view model ``O = A G + B Z``)
    ``y^0 = x^0 + D z^0``, ``y^t = W y^{t-1} + x^t + D z^t`` for ``t = 1..T-1`` (mix, then add the
    round's input and noise), with ``x^t = x`` for ``inputs = "fixed"`` (the same private value every
    round), ``x^t`` a new private vector for ``inputs = "per-round"`` (the gradients of
    decentralized SGD), and ``x^t = 0`` for ``t >= 1`` for ``inputs = "once"``.

In both, agent ``w`` sends ``y_w^t`` to each of its neighbours at rounds ``t = 0..T-1``.  Unrolled,
``y^t = sum_{s <= t} W^{t-s} (x^s + D z^s)`` (``gossip-average``: ``y^t = W^t (x + D z^0)``), so the
message ``y_w^t`` has the coefficient row ``e_w^T W^{t-s}`` on round ``s``'s input and noise.

An observer set ``S`` (one agent or a coalition) receives ``y_w^t`` for every ``w`` in
``N(S) \\ S`` and every round; its own states are functions of these and of its own data and noise,
which it knows: :func:`observe` returns the view ``O = J x + B z`` with the columns of the observers'
own data and noise removed (conditioning on them).  The rows ``e_w^T W^k`` (``k < T``) are built by
sparse propagation ``r_{k+1} = W^T r_k`` from the senders' unit vectors; no power of ``W`` is formed.

Vector data: with ``d`` coordinates per agent and noise i.i.d. across coordinates, the view of each
coordinate is this scalar model, independent of the others, so a shift ``delta`` of one agent's vector
has Mahalanobis norm ``||delta|| * mu`` (scalar ``mu`` at ``Delta = 1``) for fixed inputs; per-round
shifts are discussed in docs/network-dp.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from numbers import Integral

import numpy as np
import scipy.sparse as sp

from dpgossip.errors import ConfigError, check_int, check_number
from dpgossip.topology.network import Network

__all__ = ["PROTOCOLS", "INPUTS", "LinearGossip", "GossipView", "check_observers", "senders_of",
           "observe", "propagated_rows", "krylov_basis", "simulate_messages"]

PROTOCOLS: tuple[str, ...] = ("gossip-average", "gossip-noisy")
"""Protocols with a linear model here."""
INPUTS: tuple[str, ...] = ("once", "fixed", "per-round")
"""How the private input enters ``gossip-noisy`` (``gossip-average`` takes it ``"once"``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LinearGossip:
    """A noisy gossip protocol as a linear map of data and noise (module docstring).

    Parameters
    ----------
    protocol : str
        ``"gossip-average"`` or ``"gossip-noisy"``.
    rounds : int
        ``T >= 1``: messages are sent at rounds ``t = 0..T-1``.
    sigma : float or sequence of float
        Noise standard deviation, one for all agents or one per agent (``>= 0``; zero is noiseless).
    inputs : str, optional
        ``"once"``, ``"fixed"`` or ``"per-round"``; default ``"once"`` for ``gossip-average`` (the only
        allowed value there) and ``"fixed"`` for ``gossip-noisy``.
    """

    protocol: str = "gossip-average"
    rounds: int
    sigma: float | tuple[float, ...] = 1.0
    inputs: str | None = None

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise ConfigError(f"protocol must be one of {', '.join(PROTOCOLS)}, got "
                              f"{self.protocol!r}", field="protocol")
        object.__setattr__(self, "rounds", check_int(self.rounds, "rounds", 1))
        default = "once" if self.protocol == "gossip-average" else "fixed"
        inputs = default if self.inputs is None else self.inputs
        if inputs not in INPUTS:
            raise ConfigError(f"inputs must be one of {', '.join(INPUTS)}, got {inputs!r}",
                              field="inputs")
        if self.protocol == "gossip-average" and inputs != "once":
            raise ConfigError(f"inputs: gossip-average takes its input once, got {inputs!r}; "
                              "use protocol 'gossip-noisy' for inputs every round", field="inputs")
        object.__setattr__(self, "inputs", inputs)
        object.__setattr__(self, "sigma", _check_sigma(self.sigma))

    def noise_scales(self, m: int) -> np.ndarray:
        """Per-agent noise standard deviations ``sigma_u``, shape ``(m,)``."""
        if isinstance(self.sigma, float):
            return np.full(m, self.sigma)
        if len(self.sigma) != m:
            raise ConfigError(f"sigma: {len(self.sigma)} values for {m} agents; give one number "
                              f"or one per agent", field="sigma")
        return np.array(self.sigma, dtype=float)

    @property
    def data_rounds(self) -> int:
        """Number of private inputs per agent: ``T`` for ``"per-round"``, else 1."""
        return self.rounds if self.inputs == "per-round" else 1

    @property
    def noise_rounds(self) -> int:
        """Number of noise draws per agent: ``T`` for ``gossip-noisy``, 1 for ``gossip-average``."""
        return self.rounds if self.protocol == "gossip-noisy" else 1


def _check_sigma(sigma: object) -> float | tuple[float, ...]:
    if isinstance(sigma, Iterable) and not isinstance(sigma, str):
        values = tuple(check_number(s, f"sigma[{i}]", low=0.0) for i, s in enumerate(sigma))
        if not values:
            raise ConfigError("sigma must be a number >= 0 or a nonempty sequence, got []",
                              field="sigma")
        return values
    return check_number(sigma, "sigma", low=0.0)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class GossipView:
    """What an observer set sees: ``O = J x + B z`` with ``z ~ N(0, I)`` (own columns removed).

    Columns of ``J`` are ``(agent, round)`` inputs listed in :attr:`data_index`
    (round ``-1`` for an input that is not per round); columns of ``B`` are the standard normal
    noise draws :attr:`noise_index`; rows are the messages :attr:`messages` ``(sender, round)``.
    """

    observers: tuple[int, ...]
    """The observing agents (sorted)."""
    J: np.ndarray
    """Data -> observations, ``(rows, data columns)``."""
    B: np.ndarray
    """Latent standard normal noise -> observations, ``(rows, noise columns)``."""
    data_index: np.ndarray
    """``(columns, 2)`` int array: agent and round (``-1``: same input every round) of ``J``'s columns."""
    noise_index: np.ndarray
    """``(columns, 2)`` int array: agent and round of ``B``'s columns."""
    messages: np.ndarray
    """``(rows, 2)`` int array: sender and round of each observation (``-1, -1``: a row of the
    ``"krylov"`` basis)."""
    columns_of: dict[int, np.ndarray] = field(repr=False)
    """Agent -> indices of its columns in ``J`` (absent for observers)."""


def check_observers(network: Network, observers: int | Iterable[int]) -> tuple[int, ...]:
    """``observers`` (one agent or an iterable of agents) as a sorted tuple of distinct agents."""
    items = [observers] if isinstance(observers, Integral) else list(observers)
    out = []
    for v in items:
        if isinstance(v, bool) or not isinstance(v, Integral) or not 0 <= v < network.m:
            raise ConfigError(f"observers must be agents in 0..{network.m - 1}, got {v!r}",
                              field="observers")
        out.append(int(v))
    if not out:
        raise ConfigError("observers must name at least one agent, got none", field="observers")
    return tuple(sorted(set(out)))


def senders_of(network: Network, obs: tuple[int, ...]) -> np.ndarray:
    """The agents whose messages an observer set receives: ``N(S) \\ S``, sorted."""
    inside = set(obs)
    return np.array(sorted({w for v in obs for w in network.neighbours[v]} - inside), dtype=int)


def propagated_rows(network: Network, senders: np.ndarray, rounds: int) -> np.ndarray:
    """``P[k] = E^T W^k`` for ``k = 0..rounds-1`` (``E`` the senders' unit vectors), by sparse
    propagation ``P[k+1]^T = W^T P[k]^T``; shape ``(rounds, len(senders), m)``."""
    Wt = sp.csr_matrix(network.W.T)
    cur = np.zeros((network.m, senders.size))
    cur[senders, np.arange(senders.size)] = 1.0
    out = np.empty((rounds, senders.size, network.m))
    for k in range(rounds):
        out[k] = cur.T
        if k + 1 < rounds:
            cur = Wt @ cur
    return out


def krylov_basis(network: Network, senders: np.ndarray, rounds: int, *,
                 tol: float = 1e-10) -> np.ndarray:
    """Orthonormal basis ``Q`` (``m x r``) of ``span{(W^T)^k e_w : w in senders, k < rounds}``.

    Block Arnoldi with two passes of full reorthogonalisation: ``Q_0 = orth(E)``,
    ``Q_{k+1} = orth((I - Q Q^T) W^T Q_k)``, by sparse products only.  A new direction whose norm after
    orthogonalisation is at most ``tol`` times its norm before is dropped (deflation); the loop stops
    when a block adds nothing, since the span is then invariant under ``W^T``.  The rows ``Q^T`` see
    exactly what the messages ``e_w^T W^k`` see, but stay well conditioned where the powers
    ``W^k`` make the messages nearly dependent (docs/network-dp.md, Section 2).
    """
    Wt = sp.csr_matrix(network.W.T)
    block = np.zeros((network.m, senders.size))
    block[senders, np.arange(senders.size)] = 1.0
    basis = np.zeros((network.m, 0))
    for _ in range(rounds):
        before = float(np.max(np.linalg.norm(block, axis=0), initial=0.0))
        for _ in range(2):
            block = block - basis @ (basis.T @ block)
        if before == 0.0 or block.shape[1] == 0:
            break
        U, S, _ = np.linalg.svd(block, full_matrices=False)
        new = U[:, S > tol * before]
        new = new - basis @ (basis.T @ new)
        new, _ = np.linalg.qr(new)
        if new.shape[1] == 0:
            break
        basis = np.hstack([basis, new])
        block = Wt @ new
    return basis


def _blocks(spec: LinearGossip, P: np.ndarray, scales: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Full ``J`` (rows x m * data_rounds) and ``B`` (rows x m * noise_rounds), rows ordered
    ``(round, sender)``: the row of ``y_w^t`` has block ``s`` equal to ``P[t-s]`` (times ``D``)."""
    T, n_s, m = P.shape
    J = np.zeros((T * n_s, m * spec.data_rounds))
    B = np.zeros((T * n_s, m * spec.noise_rounds))
    cumulative = np.cumsum(P, axis=0)
    for t in range(T):
        rows = slice(t * n_s, (t + 1) * n_s)
        if spec.inputs == "per-round":
            for s in range(t + 1):
                J[rows, s * m:(s + 1) * m] = P[t - s]
        else:
            J[rows, :m] = cumulative[t] if spec.inputs == "fixed" else P[t]
        if spec.noise_rounds == 1:
            B[rows, :m] = P[t] * scales
        else:
            for s in range(t + 1):
                B[rows, s * m:(s + 1) * m] = P[t - s] * scales
    return J, B


def _index(m: int, rounds: int, per_round: bool) -> np.ndarray:
    agents = np.tile(np.arange(m), rounds)
    r = np.repeat(np.arange(rounds), m) if per_round else np.full(m * rounds, -1)
    return np.stack([agents, r], axis=1)


def observe(network: Network, spec: LinearGossip, observers: int | Iterable[int], *,
            basis: str = "messages") -> GossipView:
    """The Gaussian view of an observer set: ``O = J x + B z`` (module docstring).

    Parameters
    ----------
    network : Network
        Graph and mixing matrix ``W``.
    spec : LinearGossip
        The protocol.
    observers : int or iterable of int
        One agent or a coalition.
    basis : str
        ``"messages"``: one row per message ``(sender, round)``.  ``"krylov"`` (``gossip-average``
        only): the rows ``Q^T`` of :func:`krylov_basis`, an equivalent view (same information, same
        leakage) that stays well conditioned for many rounds; :attr:`GossipView.messages` is then
        ``(-1, -1)`` per row.

    Returns
    -------
    GossipView
        ``J``, ``B`` and the labels of their rows and columns; the observers' own data and noise
        columns are removed (the observers know them, so the view is conditioned on them).

    Raises
    ------
    ConfigError
        For observers outside ``0..m-1``, a ``sigma`` sequence of the wrong length or an unknown
        ``basis``.
    """
    obs = check_observers(network, observers)
    m = network.m
    scales = spec.noise_scales(m)
    senders = senders_of(network, obs)
    if basis == "krylov" and spec.protocol == "gossip-average":
        Q = krylov_basis(network, senders, spec.rounds)
        J, B = Q.T.copy(), Q.T * scales
        messages = np.full((Q.shape[1], 2), -1)
    elif basis == "messages":
        P = propagated_rows(network, senders, spec.rounds)
        J, B = _blocks(spec, P, scales)
        messages = np.stack([np.tile(senders, spec.rounds),
                             np.repeat(np.arange(spec.rounds), senders.size)], axis=1)
    else:
        raise ConfigError(f"basis must be 'messages', or 'krylov' for gossip-average, got {basis!r}"
                          f" with protocol {spec.protocol!r}", field="basis")
    data_index = _index(m, spec.data_rounds, spec.inputs == "per-round")
    noise_index = _index(m, spec.noise_rounds, True)
    keep_d = ~np.isin(data_index[:, 0], obs)
    keep_n = ~np.isin(noise_index[:, 0], obs) & (scales[noise_index[:, 0]] > 0)
    data_index, noise_index = data_index[keep_d], noise_index[keep_n]
    columns_of = {u: np.flatnonzero(data_index[:, 0] == u) for u in range(m) if u not in obs}
    return GossipView(observers=obs, J=J[:, keep_d], B=B[:, keep_n], data_index=data_index,
                      noise_index=noise_index, messages=messages, columns_of=columns_of)


def simulate_messages(network: Network, spec: LinearGossip, x: np.ndarray,
                      z: np.ndarray) -> np.ndarray:
    """Run the protocol and return every state ``y^t``, shape ``(T, m)`` (``y_w^t`` is what ``w``
    sends at round ``t``).

    Parameters
    ----------
    x : ndarray
        Inputs: shape ``(m,)``, or ``(T, m)`` for ``inputs = "per-round"``.
    z : ndarray
        Standard normal draws: shape ``(m,)`` for ``gossip-average``, ``(T, m)`` for ``gossip-noisy``.
    """
    m, T = network.m, spec.rounds
    scales = spec.noise_scales(m)
    x = np.asarray(x, dtype=float).reshape(spec.data_rounds, m)
    z = np.asarray(z, dtype=float).reshape(spec.noise_rounds, m)
    out = np.empty((T, m))
    out[0] = x[0] + scales * z[0]
    for t in range(1, T):
        out[t] = network.W @ out[t - 1]
        if spec.protocol == "gossip-noisy":
            if spec.inputs != "once":
                out[t] += x[t if spec.inputs == "per-round" else 0]
            out[t] += scales * z[t]
    return out
