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
``gossip-decor`` (DECOR: correlated edge noise every round, :mod:`dpgossip.protocols.gossip.decor`)
    as ``gossip-noisy`` with the round's noise ``D z^t + sigma_cor E v^t`` (``E`` the oriented
    incidence matrix, ``v^t`` one standard normal secret per edge and round): covariance
    ``D^2 + sigma_cor^2 L`` per round.

In all three, agent ``w`` sends ``y_w^t`` to each of its neighbours at rounds ``t = 0..T-1``.
Unrolled, ``y^t = sum_{s <= t} W^{t-s} (x^s + n^s)`` (``gossip-average``: ``y^t = W^t (x + D z^0)``),
so the message ``y_w^t`` has the coefficient row ``e_w^T W^{t-s}`` on round ``s``'s input and noise.

An observer set ``S`` (one agent or a coalition) receives ``y_w^t`` for every ``w`` in
``N(S) \\ S`` and every round; its own states are functions of these and of its own data and noise,
which it knows: :func:`observe` returns the view ``O = J x + B z`` with the columns of the observers'
own data, noise and edge secrets (DECOR: every edge with an end in ``S``) removed (conditioning on
them).  The rows ``e_w^T W^k`` (``k < T``) are built by sparse propagation ``r_{k+1} = W^T r_k``
from the senders' unit vectors; no power of ``W`` is formed.

Secure summation over neighbours (``secure_summation = True``, Koskela and Kulkarni 2025): the
neighbours of a receiver ``v`` mask their messages so that ``v`` learns only
``a_v^t = sum_{w in N(v)} W_vw y_w^t``, what it needs to mix.  A coalition's view is then one row per
member ``v`` and round: ``sum_{w in N(v) \\ S} W_vw y_w^t`` (the members' own terms are known).
:func:`eavesdrop` is the view of an outsider reading every message on a set of edges (DECOR's
external eavesdropper), optionally colluding with some agents.

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
from dpgossip.privacy.linear_audit import observer_label
from dpgossip.privacy.linear_release import LinearGaussianRelease
from dpgossip.protocols.gossip.decor import edge_list, incidence
from dpgossip.resources import Need, check_needs
from dpgossip.topology.network import Network

__all__ = ["PROTOCOLS", "GOSSIP_KINDS", "INPUTS", "LinearGossip", "GossipView", "check_observers",
           "senders_of", "observe", "eavesdrop", "propagated_rows", "krylov_basis",
           "simulate_messages", "view_values"]

PROTOCOLS: tuple[str, ...] = ("gossip-average", "gossip-noisy", "gossip-decor")
"""Protocols with a linear model here (the gossip kinds of network DP)."""
GOSSIP_KINDS = PROTOCOLS
"""The gossip protocol kinds a scenario may name (same tuple as :data:`PROTOCOLS`)."""
INPUTS: tuple[str, ...] = ("once", "fixed", "per-round")
"""How the private input enters ``gossip-noisy`` and ``gossip-decor`` (``gossip-average`` takes it
``"once"``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LinearGossip:
    """A noisy gossip protocol as a linear map of data and noise (module docstring).

    Parameters
    ----------
    protocol : str
        ``"gossip-average"``, ``"gossip-noisy"`` or ``"gossip-decor"``.
    rounds : int
        ``T >= 1``: messages are sent at rounds ``t = 0..T-1``.
    sigma : float or sequence of float
        Noise standard deviation, one for all agents or one per agent (``>= 0``; zero is noiseless);
        DECOR's ``sigma_cdp``.
    inputs : str, optional
        ``"once"``, ``"fixed"`` or ``"per-round"``; default ``"once"`` for ``gossip-average`` (the only
        allowed value there) and ``"fixed"`` otherwise.
    sigma_cor : float
        DECOR's edge-secret standard deviation (``>= 0``; only ``gossip-decor`` takes a nonzero one).
    secure_summation : bool
        Receivers learn only the weighted sum of their neighbours' messages per round.
    """

    protocol: str = "gossip-average"
    rounds: int
    sigma: float | tuple[float, ...] = 1.0
    inputs: str | None = None
    sigma_cor: float = 0.0
    secure_summation: bool = False

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
        cor = check_number(self.sigma_cor, "sigma_cor", low=0.0)
        if cor and self.protocol != "gossip-decor":
            raise ConfigError(f"sigma_cor: only gossip-decor draws edge secrets, got sigma_cor = "
                              f"{cor:g} with protocol {self.protocol!r}", field="sigma_cor")
        object.__setattr__(self, "sigma_cor", cor)
        if not isinstance(self.secure_summation, bool):
            raise ConfigError(f"secure_summation must be true or false, got "
                              f"{self.secure_summation!r}", field="secure_summation")

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
        """Number of noise draws per agent: 1 for ``gossip-average``, else ``T``."""
        return 1 if self.protocol == "gossip-average" else self.rounds

    @property
    def secret_rounds(self) -> int:
        """Number of secrets per edge: ``T`` for ``gossip-decor``, else 0."""
        return self.rounds if self.protocol == "gossip-decor" else 0

    def to_row(self) -> dict[str, object]:
        """Tidy row of the parameters."""
        return {"protocol": self.protocol, "rounds": self.rounds, "sigma": self.sigma,
                "inputs": self.inputs, "sigma_cor": self.sigma_cor,
                "secure_summation": self.secure_summation}


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
    noise draws :attr:`noise_index` followed by DECOR's edge secrets :attr:`secret_index`; rows are
    the messages :attr:`messages` ``(sender, round)``, or with :attr:`summed` the masked sums
    ``(receiver, round)`` of secure summation.
    """

    observers: tuple[int, ...]
    """The observing agents (sorted; empty for an eavesdropper that colludes with nobody)."""
    J: np.ndarray
    """Data -> observations, ``(rows, data columns)``."""
    B: np.ndarray
    """Latent standard normal noise -> observations, ``(rows, noise columns + secret columns)``."""
    data_index: np.ndarray
    """``(columns, 2)`` int array: agent and round (``-1``: same input every round) of ``J``'s columns."""
    noise_index: np.ndarray
    """``(columns, 2)`` int array: agent and round of ``B``'s first columns."""
    messages: np.ndarray
    """``(rows, 2)`` int array: sender and round of each observation (``-1, -1``: a row of the
    ``"krylov"`` basis; the receiver when :attr:`summed`)."""
    columns_of: dict[int, np.ndarray] = field(repr=False)
    """Agent -> indices of its columns in ``J`` (absent for observers)."""
    secret_index: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), dtype=int))
    """``(columns, 3)`` int array: edge ``(i, j)`` and round of ``B``'s last columns (DECOR)."""
    summed: bool = False
    """Rows are secure-summation sums received by :attr:`messages` ``[:, 0]``."""
    eavesdropped: tuple[tuple[int, int], ...] = ()
    """Edges read by an eavesdropper (:func:`eavesdrop`); empty for an observer set."""

    @property
    def label(self) -> str:
        """``"3"``, ``"1+5"`` for observers; ``"eavesdropper"`` or ``"eavesdropper+2"`` for an
        eavesdropper (colluding with agent 2)."""
        label = observer_label(self.observers)
        if self.eavesdropped:
            label = "+".join(["eavesdropper"] + ([label] if label else []))
        return label

    @property
    def release(self) -> LinearGaussianRelease:
        """The view as a :class:`~dpgossip.privacy.linear_release.LinearGaussianRelease`: targets the
        agents that are not observers, each owning its input columns (one, or one per round)."""
        return LinearGaussianRelease.from_columns(self.J, self.B, self.columns_of, label=self.label)


def check_observers(network: Network, observers: int | Iterable[int], *,
                    allow_empty: bool = False) -> tuple[int, ...]:
    """``observers`` (one agent or an iterable of agents) as a sorted tuple of distinct agents."""
    items = [observers] if isinstance(observers, Integral) else list(observers)
    out = []
    for v in items:
        if isinstance(v, bool) or not isinstance(v, Integral) or not 0 <= v < network.m:
            raise ConfigError(f"observers must be agents in 0..{network.m - 1}, got {v!r}",
                              field="observers")
        out.append(int(v))
    if not out and not allow_empty:
        raise ConfigError("observers must name at least one agent, got none", field="observers")
    return tuple(sorted(set(out)))


def senders_of(network: Network, obs: tuple[int, ...]) -> np.ndarray:
    """The agents whose messages an observer set receives: ``N(S) \\ S``, sorted."""
    inside = set(obs)
    return np.array(sorted({w for v in obs for w in network.neighbours[v]} - inside), dtype=int)


def propagated_rows(network: Network, senders: np.ndarray, rounds: int) -> np.ndarray:
    """``P[k] = E^T W^k`` for ``k = 0..rounds-1`` (``E`` the senders' unit vectors), by sparse
    propagation ``P[k+1]^T = W^T P[k]^T``; shape ``(rounds, len(senders), m)``."""
    start = np.zeros((network.m, senders.size))
    start[senders, np.arange(senders.size)] = 1.0
    return _propagate(network, start, rounds)


def _propagate(network: Network, start: np.ndarray, rounds: int) -> np.ndarray:
    """``P[k] = S^T W^k`` for the ``m x n`` start block ``S``, shape ``(rounds, n, m)``."""
    Wt = sp.csr_matrix(network.W.T)
    cur = start
    out = np.empty((rounds, start.shape[1], network.m))
    for k in range(rounds):
        out[k] = cur.T
        if k + 1 < rounds:
            cur = Wt @ cur
    return out


def krylov_basis(network: Network, senders: np.ndarray, rounds: int, *,
                 tol: float = 1e-10, start: np.ndarray | None = None) -> np.ndarray:
    """Orthonormal basis ``Q`` (``m x r``) of ``span{(W^T)^k e_w : w in senders, k < rounds}``.

    Block Arnoldi with two passes of full reorthogonalisation: ``Q_0 = orth(E)``,
    ``Q_{k+1} = orth((I - Q Q^T) W^T Q_k)``, by sparse products only.  A new direction whose norm after
    orthogonalisation is at most ``tol`` times its norm before is dropped (deflation); the loop stops
    when a block adds nothing, since the span is then invariant under ``W^T``.  The rows ``Q^T`` see
    exactly what the messages ``e_w^T W^k`` see, but stay well conditioned where the powers
    ``W^k`` make the messages nearly dependent (docs/network-dp.md, Section 2).  ``start`` (an
    ``m x n`` block) replaces the senders' unit vectors ``E`` (secure summation starts from the
    receivers' weight rows).
    """
    Wt = sp.csr_matrix(network.W.T)
    if start is None:
        block = np.zeros((network.m, senders.size))
        block[senders, np.arange(senders.size)] = 1.0
    else:
        block = np.array(start, dtype=float)
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


def _secret_block(network: Network, spec: LinearGossip, P: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """DECOR's secrets: the row of ``y_w^t`` has ``sigma_cor P[t-s] E`` on round ``s``'s secrets.

    Only the edges some message reaches get columns (the others are zero in ``B`` and change
    nothing): returns the block and the boolean mask of those edges, ``(|E|,)``.
    """
    T, n_s, _ = P.shape
    E = incidence(network)
    PE = [(E.T @ P[j].T).T for j in range(T)]
    reached = np.zeros(E.shape[1], dtype=bool)
    for block in PE:
        reached |= np.any(block != 0, axis=0)
    k = int(reached.sum())
    _check_size(spec, T * n_s, T * (k + network.m * (1 + spec.data_rounds)))
    S = np.zeros((T * n_s, T * k))
    for t in range(T):
        for s in range(t + 1):
            S[t * n_s:(t + 1) * n_s, s * k:(s + 1) * k] = spec.sigma_cor * PE[t - s][:, reached]
    return S, reached


def _check_size(spec: LinearGossip, rows: int, cols: int) -> None:
    """Refuse a view whose dense ``J`` and ``B`` (and their copies) exceed the memory."""
    check_needs([Need(f"rounds = {spec.rounds} gives a view of {rows} x {cols} (messages x data, "
                      f"noise and secret columns)", 3 * 8 * rows * cols)],
                advice="use fewer rounds or a smaller observer set", field="rounds")


def _index(m: int, rounds: int, per_round: bool) -> np.ndarray:
    agents = np.tile(np.arange(m), rounds)
    r = np.repeat(np.arange(rounds), m) if per_round else np.full(m * rounds, -1)
    return np.stack([agents, r], axis=1)


def _summation_weights(network: Network, obs: tuple[int, ...],
                       senders: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Receivers (members with a neighbour outside ``S``) and their weights ``W_vw`` on the senders,
    ``(receivers, senders)``: the row ``v`` of secure summation is ``sum_w G[v, w] y_w^t``."""
    pos = {int(w): k for k, w in enumerate(senders)}
    W = sp.csr_array(network.W)
    receivers, rows = [], []
    for v in obs:
        g = np.zeros(senders.size)
        for w in network.neighbours[v]:
            if w in pos:
                g[pos[w]] = W[v, w]
        if g.any():
            receivers.append(v)
            rows.append(g)
    G = np.array(rows).reshape(len(rows), senders.size)
    return np.array(receivers, dtype=int), G


def _rows(network: Network, spec: LinearGossip, senders: np.ndarray, basis: str,
          G: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``J``, ``B`` (all data and noise columns, and the secrets of the edges reached), row labels of
    the messages of ``senders`` (or, with ``G``, of their secure sums ``G y^t``), in the basis asked
    for, and the mask of the edges reached (:func:`_secret_block`)."""
    m, T = network.m, spec.rounds
    scales = spec.noise_scales(m)
    if basis == "krylov" and spec.protocol == "gossip-average":
        start = None
        if G is not None:
            start = np.zeros((m, G.shape[0]))
            start[senders] = G.T
        Q = krylov_basis(network, senders, T, start=start)
        none = np.zeros(edge_list(network).shape[0], dtype=bool)
        return Q.T.copy(), Q.T * scales, np.full((Q.shape[1], 2), -1), none
    if basis != "messages":
        raise ConfigError(f"basis must be 'messages', or 'krylov' for gossip-average, got {basis!r}"
                          f" with protocol {spec.protocol!r}", field="basis")
    _check_size(spec, T * senders.size, m * (spec.data_rounds + spec.noise_rounds))
    P = propagated_rows(network, senders, T)
    J, B = _blocks(spec, P, scales)
    reached = np.zeros(edge_list(network).shape[0], dtype=bool)
    if spec.protocol == "gossip-decor":
        S, reached = _secret_block(network, spec, P)
        B = np.hstack([B, S])
    labels = np.stack([np.tile(senders, T), np.repeat(np.arange(T), senders.size)], axis=1)
    if G is not None:
        n_r = G.shape[0]
        J = np.einsum("rk,tkc->trc", G, J.reshape(T, senders.size, -1)).reshape(T * n_r, -1)
        B = np.einsum("rk,tkc->trc", G, B.reshape(T, senders.size, -1)).reshape(T * n_r, -1)
    return J, B, labels, reached


def _view(network: Network, spec: LinearGossip, known: tuple[int, ...],
          rows: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], **extra: object) -> GossipView:
    """Remove the columns the known agents hold (data, noise, DECOR secrets of their edges) from
    the rows ``(J, B, labels, reached)`` of :func:`_rows`."""
    J, B, labels, reached = rows
    m = network.m
    scales = spec.noise_scales(m)
    data_index = _index(m, spec.data_rounds, spec.inputs == "per-round")
    noise_index = _index(m, spec.noise_rounds, True)
    edges = edge_list(network)[reached]
    secret_index = np.concatenate([np.tile(edges, (spec.secret_rounds, 1)),
                                   np.repeat(np.arange(spec.secret_rounds), edges.shape[0])[:, None]],
                                  axis=1).reshape(-1, 3)
    keep_d = ~np.isin(data_index[:, 0], known)
    keep_n = ~np.isin(noise_index[:, 0], known) & (scales[noise_index[:, 0]] > 0)
    keep_s = (~np.isin(secret_index[:, 0], known) & ~np.isin(secret_index[:, 1], known)
              & (spec.sigma_cor > 0))
    data_index, noise_index = data_index[keep_d], noise_index[keep_n]
    columns_of = {u: np.flatnonzero(data_index[:, 0] == u) for u in range(m) if u not in known}
    return GossipView(observers=known, J=J[:, keep_d], B=B[:, np.concatenate([keep_n, keep_s])],
                      data_index=data_index, noise_index=noise_index, messages=labels,
                      columns_of=columns_of, secret_index=secret_index[keep_s], **extra)


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
        ``"messages"``: one row per message ``(sender, round)`` (per secure sum ``(receiver, round)``
        with ``secure_summation``).  ``"krylov"`` (``gossip-average`` only): the rows ``Q^T`` of
        :func:`krylov_basis`, an equivalent view (same information, same leakage) that stays well
        conditioned for many rounds; :attr:`GossipView.messages` is then ``(-1, -1)`` per row.

    Returns
    -------
    GossipView
        ``J``, ``B`` and the labels of their rows and columns; the observers' own data, noise and
        (DECOR) the secrets of their edges are removed (the observers know them, so the view is
        conditioned on them).

    Raises
    ------
    ConfigError
        For observers outside ``0..m-1``, a ``sigma`` sequence of the wrong length or an unknown
        ``basis``.
    """
    obs = check_observers(network, observers)
    senders = senders_of(network, obs)
    G = None
    if spec.secure_summation:
        receivers, G = _summation_weights(network, obs, senders)
    J, B, labels, reached = _rows(network, spec, senders, basis, G)
    if G is not None and basis == "messages":
        labels = np.stack([np.tile(receivers, spec.rounds),
                           np.repeat(np.arange(spec.rounds), receivers.size)], axis=1)
    return _view(network, spec, obs, (J, B, labels, reached), summed=G is not None)


def eavesdrop(network: Network, spec: LinearGossip,
              edges: Iterable[tuple[int, int]] | None = None, *, knows: Iterable[int] = (),
              basis: str = "messages") -> GossipView:
    """The view of an outsider that reads every message on ``edges`` (default: all edges).

    A message ``y_w^t`` goes to every neighbour of ``w``, so reading edge ``(a, b)`` gives the
    messages of both ends: the rows are those of :func:`observe` with the senders the edges' ends.
    ``knows``: agents colluding with the eavesdropper (DECOR's curious users), whose data, noise and
    edge secrets are conditioned on.  With every edge and no one known, one round of
    ``gossip-decor`` is :func:`dpgossip.protocols.gossip.bounds.decor_round_view`.

    Raises
    ------
    ConfigError
        For an edge that is not in the graph, with ``secure_summation`` (a masked message on its own
        is not modelled), or as :func:`observe`.
    """
    if spec.secure_summation:
        raise ConfigError("secure_summation: the eavesdropper's view of masked messages is not "
                          "modelled; use observe() for the receivers' sums", field="secure_summation")
    known = check_observers(network, knows, allow_empty=True)
    chosen = _check_edges(network, edges)
    senders = np.array(sorted({a for e in chosen for a in e}), dtype=int)
    return _view(network, spec, known, _rows(network, spec, senders, basis, None),
                 eavesdropped=chosen)


def _check_edges(network: Network, edges: Iterable[tuple[int, int]] | None
                 ) -> tuple[tuple[int, int], ...]:
    if edges is None:
        return tuple((int(a), int(b)) for a, b in edge_list(network))
    out = set()
    for e in edges:
        pair = tuple(e) if isinstance(e, Iterable) else ()
        if len(pair) != 2 or not all(isinstance(a, Integral) for a in pair) or \
                not network.graph.has_edge(*pair) or pair[0] == pair[1]:
            raise ConfigError(f"edges must be edges of the graph, got {e!r}", field="edges")
        out.add((int(min(pair)), int(max(pair))))
    if not out:
        raise ConfigError("edges must name at least one edge, got none", field="edges")
    return tuple(sorted(out))


def simulate_messages(network: Network, spec: LinearGossip, x: np.ndarray, z: np.ndarray,
                      secrets: np.ndarray | None = None) -> np.ndarray:
    """Run the protocol and return every state ``y^t``, shape ``(T, m)`` (``y_w^t`` is what ``w``
    sends at round ``t``).

    Parameters
    ----------
    x : ndarray
        Inputs: shape ``(m,)``, or ``(T, m)`` for ``inputs = "per-round"``.
    z : ndarray
        Standard normal draws: shape ``(m,)`` for ``gossip-average``, ``(T, m)`` otherwise.
    secrets : ndarray, optional
        ``gossip-decor``: standard normal edge secrets ``(T, |E|)`` (edges as
        :func:`~dpgossip.protocols.gossip.decor.edge_list`); the round's noise adds ``sigma_cor E v^t``.
    """
    m, T = network.m, spec.rounds
    scales = spec.noise_scales(m)
    x = np.asarray(x, dtype=float).reshape(spec.data_rounds, m)
    z = np.asarray(z, dtype=float).reshape(spec.noise_rounds, m)
    E = incidence(network)
    v = (np.zeros((spec.secret_rounds, E.shape[1])) if secrets is None
         else np.asarray(secrets, dtype=float).reshape(spec.secret_rounds, E.shape[1]))
    out = np.empty((T, m))
    out[0] = x[0] + scales * z[0]
    for t in range(T):
        if t:
            out[t] = network.W @ out[t - 1]
        if t and spec.protocol != "gossip-average":
            if spec.inputs != "once":
                out[t] += x[t if spec.inputs == "per-round" else 0]
            out[t] += scales * z[t]
        if spec.secret_rounds:
            out[t] += spec.sigma_cor * (E @ v[t])
    return out


def view_values(network: Network, view: GossipView, states: np.ndarray) -> np.ndarray:
    """The value of each row of a ``"messages"`` view from the states ``y^t`` (``(T, m)``): the
    message ``y_w^t``, or the secure sum ``sum_{w in N(v) \\ S} W_vw y_w^t`` when :attr:`summed`."""
    if view.messages.size and int(view.messages.min()) < 0:
        raise ConfigError("view: the rows of a 'krylov' view are not messages; build the view with "
                          "basis='messages'", field="view")
    if not view.summed:
        return states[view.messages[:, 1], view.messages[:, 0]]
    W = sp.csr_array(network.W)
    inside = set(view.observers)
    out = np.empty(view.messages.shape[0])
    for r, (v, t) in enumerate(view.messages):
        out[r] = sum(W[v, w] * states[t, w] for w in network.neighbours[v] if w not in inside)
    return out
