"""Gossip averaging under a time-varying mixing schedule: every message as a linear map of the data and
the noise, and the exact leakage to an observer who knows the schedule (docs/dynamic-leakage.md).

A schedule is a sequence ``W_1, ..., W_T`` of ``m x m`` sparse mixing matrices (one per step; an
asynchronous averaging of agents ``i`` and ``j`` is ``I - (e_i - e_j)(e_i - e_j)^T / 2``, a random
matching is the product of such matrices over disjoint pairs).  The protocols are those of
:class:`~dpgossip.protocols.gossip.linear.LinearGossip` with ``W`` replaced by ``W_t`` at step ``t``
(``rounds = T``):

``gossip-average``
    ``y^0 = x + D z^0``, ``y^t = W_t y^{t-1}``.
``gossip-noisy``
    ``y^0 = x^0 + D z^0``, ``y^t = W_t y^{t-1} + x^t + D z^t`` (``x^t`` as ``inputs`` says).

At step ``t = 1..T`` agent ``v`` mixes the states ``y_w^{t-1}`` of the agents ``w != v`` with
``(W_t)_{vw} != 0``, so it receives exactly those messages; the last matrix ``W_T`` only says who
receives ``y^{T-1}``.  With ``W_t = W`` for every ``t`` these are the messages of the fixed-``W``
model (rounds ``0..T-1`` to every neighbour), and the leakage equals
:func:`~dpgossip.privacy.linear_audit.audit_gossip`'s.

Unrolled with the transition ``Phi(r, s) = W_r W_{r-1} ... W_{s+1}`` (``Phi(s, s) = I``),

    ``y^r = sum_{s <= r} Phi(r, s) (x^s + D z^s)``     (``gossip-average``: ``y^r = Phi(r, 0)(x + D z^0)``),

so the message ``y_w^r`` has the coefficient row ``e_w^T Phi(r, s)`` on round ``s``'s input and noise.
The rows of all received messages are built together by one backward sweep: a block of row vectors
starts at each message's round ``r`` as ``e_w^T`` and is multiplied on the right by ``W_s`` when the
sweep passes from round ``s`` to ``s - 1`` (sparse products only; no transition matrix is formed).

The observer set ``S`` knows its own data and noise: their columns are removed (conditioning on
them), as in :func:`~dpgossip.protocols.gossip.linear.observe`.  The view ``O = J x + B z`` then gives
target ``u`` the Mahalanobis norm ``mu_u`` of a Gaussian mechanism
(:func:`~dpgossip.privacy.linear_audit.whiten`; box maximum over per-round shifts), exact RDP
``alpha mu^2 / 2`` and exact ``epsilon(delta)``.  This is the leakage to an observer that **knows
the schedule**; docs/dynamic-leakage.md derives what holds when it does not.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import networkx as nx
import numpy as np
import scipy.sparse as sp

from dpgossip.errors import ConfigError
from dpgossip.privacy.linear_audit import (
    LinearAuditSettings,
    PairLeakage,
    gaussian_epsilon,
    observer_label,
    target_box,
    whiten,
)
from dpgossip.protocols.gossip.linear import GossipView, LinearGossip

__all__ = ["check_schedule", "pairwise_matrix", "matching_matrix", "communication_graph",
           "received_messages", "message_coefficients", "dynamic_view", "view_leakage",
           "dynamic_leakage", "check_dynamic_spec", "view_maps"]


def check_schedule(matrices: Iterable[object]) -> tuple[sp.csr_array, ...]:
    """The schedule as a tuple of ``m x m`` CSR arrays (square, same size, finite, at least one).

    Raises
    ------
    ConfigError
        Naming ``schedule`` and the offending step.
    """
    out: list[sp.csr_array] = []
    for t, W in enumerate(matrices, start=1):
        try:
            A = sp.csr_array(W, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"schedule: step {t} is not a matrix ({exc})", field="schedule") from None
        if A.ndim != 2 or A.shape[0] != A.shape[1]:
            raise ConfigError(f"schedule: step {t} must be a square matrix, got shape {A.shape}",
                              field="schedule")
        if out and A.shape != out[0].shape:
            raise ConfigError(f"schedule: step {t} has shape {A.shape}, step 1 has {out[0].shape}; "
                              "every step mixes the same agents", field="schedule")
        if not np.all(np.isfinite(A.data)):
            raise ConfigError(f"schedule: step {t} has a non-finite entry", field="schedule")
        A.sum_duplicates()
        out.append(A)
    if not out:
        raise ConfigError("schedule must hold at least one mixing matrix, got none", field="schedule")
    return tuple(out)


def pairwise_matrix(m: int, i: int, j: int) -> sp.csr_array:
    """``I - (e_i - e_j)(e_i - e_j)^T / 2``: agents ``i != j`` replace their values by their mean."""
    return matching_matrix(m, [(i, j)])


def matching_matrix(m: int, pairs: Sequence[tuple[int, int]]) -> sp.csr_array:
    """The product of :func:`pairwise_matrix` over disjoint ``pairs`` (a matching): ``1/2`` on
    ``(i, i), (i, j), (j, i), (j, j)`` of each pair, ``1`` on the diagonal elsewhere.

    Raises
    ------
    ConfigError
        For an agent outside ``0..m-1``, a pair ``(i, i)`` or an agent in two pairs.
    """
    diag = np.ones(m)
    rows, cols = [], []
    seen: set[int] = set()
    for i, j in pairs:
        if not (0 <= i < m and 0 <= j < m) or i == j or i in seen or j in seen:
            raise ConfigError(f"pairs must be disjoint pairs of distinct agents in 0..{m - 1}, got "
                              f"({i}, {j})", field="pairs")
        seen.update((i, j))
        diag[[i, j]] = 0.5
        rows += [i, j]
        cols += [j, i]
    r = np.concatenate([np.arange(m), rows]).astype(np.int64)
    c = np.concatenate([np.arange(m), cols]).astype(np.int64)
    v = np.concatenate([diag, np.full(len(rows), 0.5)])
    return sp.csr_array((v, (r, c)), shape=(m, m))


def communication_graph(schedule: Sequence[sp.csr_array]) -> nx.Graph:
    """Agents ``0..m-1`` and an edge ``{v, w}`` wherever some ``W_t`` has ``(W_t)_{vw} != 0``,
    ``v != w`` (the union of the steps' contacts)."""
    m = schedule[0].shape[0]
    g = nx.Graph()
    g.add_nodes_from(range(m))
    for W in schedule:
        C = sp.coo_array(W)
        off = (C.row != C.col) & (C.data != 0)
        g.add_edges_from(zip(C.row[off].tolist(), C.col[off].tolist(), strict=True))
    return g


def received_messages(schedule: Sequence[sp.csr_array], observers: tuple[int, ...]) -> np.ndarray:
    """``(k, 2)`` int array of the messages ``(sender w, round r)`` the observer set receives, sorted
    by round then sender: ``w`` outside ``S`` with ``(W_{r+1})_{vw} != 0`` for some ``v`` in ``S``
    (a message two members receive is listed once)."""
    inside = np.array(observers, dtype=np.int64)
    out = []
    for r, W in enumerate(schedule):
        sub = sp.csr_array(W[inside])
        senders = np.unique(sub.indices[sub.data != 0])
        senders = senders[~np.isin(senders, inside)]
        out.extend((int(w), r) for w in senders)
    return np.array(out, dtype=np.int64).reshape(-1, 2)


def message_coefficients(schedule: Sequence[sp.csr_array], messages: np.ndarray) -> np.ndarray:
    """``C[s, i] = e_w^T Phi(r, s)`` for message ``i = (w, r)`` and ``s <= r`` (zero for ``s > r``),
    shape ``(T, k, m)``, by the backward sweep of the module docstring."""
    T, m = len(schedule), schedule[0].shape[0]
    k = messages.shape[0]
    C = np.zeros((T, k, m))
    block = np.zeros((m, k))
    for s in range(T - 1, -1, -1):
        start = np.flatnonzero(messages[:, 1] == s)
        block[messages[start, 0], start] = 1.0
        C[s] = block.T
        if s > 0:
            block = schedule[s - 1].T @ block  # row e^T Phi(r, s) W_s = e^T Phi(r, s - 1)
    return C


def check_dynamic_spec(spec: LinearGossip, schedule: Sequence[sp.csr_array]) -> None:
    """``spec.rounds`` must be the schedule's length; DECOR and secure summation are not modelled.

    Raises
    ------
    ConfigError
        Naming ``rounds``, ``protocol`` or ``secure_summation``.
    """
    if spec.rounds != len(schedule):
        raise ConfigError(f"rounds must equal the schedule's length {len(schedule)} (one message "
                          f"round per mixing step), got {spec.rounds}", field="rounds")
    if spec.protocol == "gossip-decor":
        raise ConfigError("protocol: gossip-decor's edge secrets follow a fixed graph; a dynamic "
                          "schedule is modelled for gossip-average and gossip-noisy", field="protocol")
    if spec.secure_summation:
        raise ConfigError("secure_summation: not modelled for a dynamic schedule",
                          field="secure_summation")


def view_maps(spec: LinearGossip, C: np.ndarray, scales: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``J`` (rows x ``n * data_rounds``) and ``B`` (rows x ``n * noise_rounds``) from the
    coefficients ``C`` (``(T, k, n)``, any column subset of the agents): data columns ``(s, u)``
    hold ``C[s]`` for per-round inputs, ``sum_s C[s]`` for fixed ones, ``C[0]`` for once; noise
    columns ``(s, u)`` hold ``C[s] D``."""
    T, k, n = C.shape
    if spec.inputs == "per-round":
        J = C.transpose(1, 0, 2).reshape(k, T * n)
    elif spec.inputs == "fixed":
        J = C.sum(axis=0)
    else:
        J = C[0].copy()
    noisy = C[:spec.noise_rounds] * scales
    B = noisy.transpose(1, 0, 2).reshape(k, spec.noise_rounds * n)
    return J, B


def _index(nodes: np.ndarray, rounds: int, per_round: bool) -> np.ndarray:
    agents = np.tile(nodes, rounds)
    r = np.repeat(np.arange(rounds), nodes.size) if per_round else np.full(nodes.size * rounds, -1)
    return np.stack([agents, r], axis=1)


def dynamic_view(schedule: Iterable[object], spec: LinearGossip,
                 observers: int | Iterable[int]) -> GossipView:
    """The Gaussian view ``O = J x + B z`` of an observer set that knows the schedule.

    Parameters
    ----------
    schedule : iterable of sparse matrices
        ``W_1..W_T`` (:func:`check_schedule`).
    spec : LinearGossip
        ``gossip-average`` or ``gossip-noisy`` with ``rounds = T``.
    observers : int or iterable of int
        One agent or a coalition.

    Returns
    -------
    GossipView
        Rows: the received messages ``(sender, round)`` (:func:`received_messages`); columns as in
        :func:`~dpgossip.protocols.gossip.linear.observe` (all agents but the observers; noise
        columns of noiseless agents dropped).
    """
    sched = check_schedule(schedule)
    check_dynamic_spec(spec, sched)
    m = sched[0].shape[0]
    obs = _check_observers(m, observers)
    messages = received_messages(sched, obs)
    C = message_coefficients(sched, messages)
    scales = spec.noise_scales(m)
    J, B = view_maps(spec, C, scales)
    nodes = np.arange(m)
    data_index = _index(nodes, spec.data_rounds, spec.inputs == "per-round")
    noise_index = _index(nodes, spec.noise_rounds, True)
    keep_d = ~np.isin(data_index[:, 0], obs)
    keep_n = ~np.isin(noise_index[:, 0], obs) & (scales[noise_index[:, 0]] > 0)
    data_index, noise_index = data_index[keep_d], noise_index[keep_n]
    columns_of = {u: np.flatnonzero(data_index[:, 0] == u) for u in range(m) if u not in obs}
    return GossipView(observers=obs, J=J[:, keep_d], B=B[:, keep_n], data_index=data_index,
                      noise_index=noise_index, messages=messages, columns_of=columns_of)


def _check_observers(m: int, observers: int | Iterable[int]) -> tuple[int, ...]:
    items = [observers] if isinstance(observers, int | np.integer) else list(observers)
    out = []
    for v in items:
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or not 0 <= v < m:
            raise ConfigError(f"observers must be agents in 0..{m - 1}, got {v!r}", field="observers")
        out.append(int(v))
    if not out:
        raise ConfigError("observers must name at least one agent, got none", field="observers")
    return tuple(sorted(set(out)))


def view_leakage(view: GossipView, hops: dict[int, int], settings: LinearAuditSettings | None = None,
                 targets: Iterable[int] | None = None) -> list[PairLeakage]:
    """Exact leakage of every target (default: every non-observer) to one view, one row each.

    ``hops`` maps agents to their distance from the observers (``-1`` when absent).  The RDP and
    ``epsilon`` columns are at ``mu_upper`` (equal to ``mu`` when exact), as
    :func:`~dpgossip.privacy.linear_audit.audit_view` reports them.
    """
    s = settings or LinearAuditSettings()
    chosen = sorted(view.columns_of) if targets is None else sorted({int(u) for u in targets})
    for u in chosen:
        if u not in view.columns_of:
            raise ConfigError(f"targets must be agents that are not observers "
                              f"({observer_label(view.observers)}), got {u!r}", field="targets")
    white = whiten(view.J, view.B, rank_rtol=s.rank_rtol, range_rtol=s.range_rtol)
    label = observer_label(view.observers)
    rows = []
    for u in chosen:
        box = target_box(white, view.columns_of[u], s)
        mu, up = math.sqrt(max(box.lower, 0.0)), math.sqrt(max(box.upper, 0.0))
        rows.append(PairLeakage(observer=label, target=u, hops=int(hops.get(u, -1)), mu=mu,
                                mu_upper=up, exact=box.exact, method=box.method, orders=s.orders,
                                rdp=tuple(a * up ** 2 / 2 for a in s.orders), delta=s.delta,
                                epsilon=gaussian_epsilon(up, s.delta)))
    return rows


def dynamic_leakage(schedule: Iterable[object], spec: LinearGossip, observers: int | Iterable[int],
                    settings: LinearAuditSettings | None = None, targets: Iterable[int] | None = None,
                    *, graph: nx.Graph | None = None) -> list[PairLeakage]:
    """Exact leakage of every target to an observer set that knows the schedule.

    :func:`view_leakage` of :func:`dynamic_view`; ``hops`` are distances in ``graph`` (default: the
    :func:`communication_graph` of the schedule) from the nearest observer.
    """
    sched = check_schedule(schedule)
    view = dynamic_view(sched, spec, observers)
    g = communication_graph(sched) if graph is None else graph
    hops = nx.multi_source_dijkstra_path_length(g, set(view.observers))
    return view_leakage(view, hops, settings, targets)
