"""Exact leakage of gossip under a time-varying schedule for every observer, on large sparse schedules
(docs/dynamic-leakage.md, Section 5).

For one observer ``v`` the view is that of :func:`~dpgossip.protocols.gossip.dynamic_release.dynamic_view`:
rows the messages ``y_w^r`` it receives, with coefficient rows ``e_w^T Phi(r, s)``.  Such a row is
nonzero only on the agents with a time-respecting path to ``w`` through the steps ``s + 1..r`` (each
step moves a value one edge of ``W_t``), so every column outside the observer's **reach**, the union
of the rows' supports, is zero in ``J`` and ``B``: those agents have ``mu = 0`` exactly and their
noise adds nothing to ``B B^T``.  The coefficients are built by the backward sweep of
:func:`~dpgossip.protocols.gossip.dynamic_release.message_coefficients` (a block of ``m x k`` dense
rows, ``k`` the observer's messages, and one sparse product per step), restricted to the reach, and
whitened by one SVD (:func:`~dpgossip.privacy.linear_audit.whiten`): the same rank and support rules
as the small path, on the nonzero columns only.

Randomized pairwise gossip with noise once (``gossip-average``) is handled through
:func:`group_disjoint_ticks`: consecutive ticks on disjoint pairs form one matching step with exactly
the same messages.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dpgossip.errors import ConfigError
from dpgossip.privacy.linear_audit import LinearAuditSettings, WhitenedView, box_maximum, whiten
from dpgossip.protocols.gossip.dynamic_release import (
    check_dynamic_spec,
    check_schedule,
    matching_matrix,
    view_maps,
)
from dpgossip.protocols.gossip.linear import LinearGossip

__all__ = ["ReachLeakage", "MatchingSteps", "matching_steps", "group_disjoint_ticks",
           "observer_reach_leakage", "all_observers"]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class ReachLeakage:
    """Leakage of every target in reach to one observer (the others have ``mu = 0`` exactly)."""

    observer: int
    targets: np.ndarray
    """Agents in the observer's reach, itself excluded, increasing (int64)."""
    mu: np.ndarray
    """Exact ``mu`` (attained lower end for per-round inputs beyond exhaustive enumeration);
    ``inf`` where the target leaves the support."""
    mu_upper: np.ndarray
    exact: np.ndarray
    messages: int
    """Number of messages the observer receives."""


def group_disjoint_ticks(ticks: Sequence[tuple[int, int]], m: int) -> tuple[list[sp.csr_array],
                                                                           list[list[tuple[int, int]]]]:
    """Consecutive pairwise ticks as matching steps: a new step starts at the first tick that shares
    an agent with a tick of the current step.

    Ticks on disjoint pairs commute, and the message an agent receives at its tick is its partner's
    state before that tick, which no earlier tick of the same step has changed: the grouped schedule
    sends exactly the same messages, with the same coefficient rows, when noise enters once
    (``gossip-average``).  With fresh noise or inputs at every tick the grouping changes the protocol.
    Returns the matching matrices and their pairs.
    """
    steps: list[list[tuple[int, int]]] = []
    busy: set[int] = set()
    for i, j in ticks:
        if not steps or i in busy or j in busy:
            steps.append([])
            busy = set()
        steps[-1].append((int(i), int(j)))
        busy.update((int(i), int(j)))
    return [matching_matrix(m, p) for p in steps], steps


def _contacts(schedule: Sequence[sp.csr_array], v: int,
              steps: MatchingSteps | None = None) -> np.ndarray:
    """``(k, 2)`` messages ``(sender, round)`` of the single observer ``v``, by round then sender
    (with matching ``steps``: its partner at each step where it has one)."""
    if steps is not None:
        t = steps.node_steps[steps.node_ptr[v]:steps.node_ptr[v + 1]]
        t = t[steps.partner[t, v] >= 0]
        return np.stack([steps.partner[t, v], t], axis=1).astype(np.int64).reshape(-1, 2)
    out = []
    for r, W in enumerate(schedule):
        lo, hi = W.indptr[v], W.indptr[v + 1]
        idx = W.indices[lo:hi][W.data[lo:hi] != 0]
        out.extend((int(w), r) for w in np.unique(idx) if w != v)
    return np.array(out, dtype=np.int64).reshape(-1, 2)


def _sweep(transposed: Sequence[sp.csr_array], messages: np.ndarray, m: int) -> np.ndarray:
    """``C[s, i] = e_w^T Phi(r, s)`` (``(T', k, m)``, ``T'`` the last message round plus one)."""
    k = messages.shape[0]
    top = int(messages[:, 1].max()) + 1
    C = np.zeros((top, k, m))
    block = np.zeros((m, k))
    for s in range(top - 1, -1, -1):
        start = np.flatnonzero(messages[:, 1] == s)
        block[messages[start, 0], start] = 1.0
        C[s] = block.T
        if s > 0:
            block = transposed[s - 1] @ block
    return C


@dataclass(frozen=True, slots=True, eq=False)
class MatchingSteps:
    """Steps whose off-diagonal entries form a matching, as arrays: row propagation
    ``rho W_s`` is ``rho_i <- W_ii rho_i + W_ji rho_j`` with ``j`` the partner of ``i``."""

    partner: np.ndarray
    """``(T, m)`` partner of each agent at each step, ``-1`` for none."""
    diag: np.ndarray
    """``(T, m)`` diagonal ``W_ii``."""
    cross: np.ndarray
    """``(T, m)`` ``W_{partner(i), i}`` (0 without a partner)."""
    touched: np.ndarray
    """``(T, m)`` boolean: the agent's entry changes (a partner or ``W_ii != 1``)."""
    node_ptr: np.ndarray
    """``(m + 1,)``: the steps touching agent ``i`` are ``node_steps[node_ptr[i]:node_ptr[i + 1]]``."""
    node_steps: np.ndarray
    """Steps touching each agent, increasing per agent."""
    node_lists: tuple[list[int], ...]
    """The same per agent as Python lists (for :func:`bisect.bisect_left`)."""


def matching_steps(schedule: Sequence[sp.csr_array]) -> MatchingSteps | None:
    """:class:`MatchingSteps` of the schedule, or ``None`` when some step is not a matching."""
    T, m = len(schedule), schedule[0].shape[0]
    partner = np.full((T, m), -1, dtype=np.int64)
    diag, cross = np.zeros((T, m)), np.zeros((T, m))
    for t, W in enumerate(schedule):
        C = sp.coo_array(W)
        keep = C.data != 0
        r, c, x = C.row[keep], C.col[keep], C.data[keep]
        on = r == c
        diag[t, r[on]] = x[on]
        r, c, x = r[~on], c[~on], x[~on]
        if np.unique(r).size != r.size:
            return None
        partner[t, r] = c
        if np.any(partner[t, c] != r):  # not symmetric in pattern: not a matching
            return None
        cross[t, c] = x  # W_{r c}: the weight of rho_r in rho_c
    touched = (partner >= 0) | (diag != 1.0)
    node, step = np.nonzero(touched.T)  # sorted by agent, then step
    node_ptr = np.concatenate([[0], np.cumsum(np.bincount(node, minlength=m))])
    lists = tuple(a.tolist() for a in np.split(step, node_ptr[1:-1]))
    return MatchingSteps(partner=partner, diag=diag, cross=cross, touched=touched, node_ptr=node_ptr,
                         node_steps=step, node_lists=lists)


def _sweep_matching(steps: MatchingSteps, messages: np.ndarray, keep_all: bool
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The backward sweep on the reached agents only: returns the reached agents (in order of
    arrival) and ``C`` of shape ``(T', k, reached)`` (``T' = 1`` unless ``keep_all``: only round 0)."""
    m = steps.partner.shape[1]
    k, top = messages.shape[0], int(messages[:, 1].max()) + 1
    pos = np.full(m, -1, dtype=np.int64)
    nodes: list[int] = []
    L = np.zeros((0, k))
    snaps: list[np.ndarray] = []
    for s in range(top - 1, -1, -1):
        for i in np.flatnonzero(messages[:, 1] == s):
            w = int(messages[i, 0])
            if pos[w] < 0:
                pos[w] = len(nodes)
                nodes.append(w)
                L = np.vstack([L, np.zeros((1, k))])
            L[pos[w], i] = 1.0
        if keep_all or s == 0:
            snaps.append(L.copy())
        if s == 0:
            break
        active = np.asarray(nodes, dtype=np.int64)
        hit = active[steps.touched[s - 1, active]]
        if hit.size == 0:
            continue
        mates = steps.partner[s - 1, hit]
        fresh = np.unique(mates[(mates >= 0) & (pos[np.maximum(mates, 0)] < 0)])
        if fresh.size:
            pos[fresh] = len(nodes) + np.arange(fresh.size)
            nodes.extend(fresh.tolist())
            L = np.vstack([L, np.zeros((fresh.size, k))])
            active = np.asarray(nodes, dtype=np.int64)
            hit = active[steps.touched[s - 1, active]]
            mates = steps.partner[s - 1, hit]
        rows = pos[hit]
        other = np.where((mates >= 0)[:, None], L[pos[np.maximum(mates, 0)]], 0.0)
        L[rows] = steps.diag[s - 1, hit][:, None] * L[rows] + steps.cross[s - 1, hit][:, None] * other
    n = len(nodes)
    C = np.zeros((len(snaps), k, n))
    for j, snap in enumerate(reversed(snaps)):  # snapshots were taken at s = top-1, ..., 0
        C[j, :, :snap.shape[0]] = snap.T
    return np.asarray(nodes, dtype=np.int64), C


def _sweep_events(steps: MatchingSteps, messages: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Round 0 of the backward sweep, event by event: only the steps that touch a reached agent are
    visited (a heap of each reached agent's latest earlier step).  Returns the reached agents (in
    order of arrival) and ``C`` of shape ``(1, k, reached)``.

    Ordering: the messages of round ``r`` enter at level ``r``; step index ``t`` (``W_{t+1}``) maps
    level ``t + 1`` to ``t``, so it runs after the insertions of round ``t + 1`` and before those of
    round ``t``.
    """
    k = messages.shape[0]
    rows: dict[int, np.ndarray] = {}
    order: list[int] = []
    heap: list[tuple[int, int]] = []

    def push_before(i: int, t: int) -> None:
        mine = steps.node_lists[i]
        j = bisect.bisect_left(mine, t) - 1  # latest touching step < t
        if j >= 0:
            heapq.heappush(heap, (-mine[j], i))

    def reach(i: int, t: int) -> None:
        if i not in rows:
            rows[i] = np.zeros(k)
            order.append(i)
            push_before(i, t)

    rounds = sorted({int(r) for r in messages[:, 1]}, reverse=True)
    for r in [*rounds, -1]:
        while heap and -heap[0][0] >= r:  # steps t >= r map level t + 1 to t
            t = -heap[0][0]
            hit = []
            while heap and -heap[0][0] == t:
                hit.append(heapq.heappop(heap)[1])
            _apply_step(steps, t, hit, rows, order)
            for i in {*hit, *(int(steps.partner[t, i]) for i in hit if steps.partner[t, i] >= 0)}:
                push_before(i, t)
        if r < 0:
            break
        for i in np.flatnonzero(messages[:, 1] == r):
            w = int(messages[i, 0])
            reach(w, r)
            rows[w][i] = 1.0
    C = np.array([rows[i] for i in order]).T[None] if order else np.zeros((1, k, 0))
    return np.asarray(order, dtype=np.int64), C


def _apply_step(steps: MatchingSteps, t: int, hit: list[int], rows: dict[int, np.ndarray],
                order: list[int]) -> None:
    """``rho <- rho W_{t+1}`` on the reached agents ``hit`` touched at step ``t`` (their partners
    are reached now if they were not)."""
    k = next(iter(rows.values())).size
    done: set[int] = set()
    for i in hit:
        if i in done:
            continue
        j = int(steps.partner[t, i])
        if j < 0:
            rows[i] = steps.diag[t, i] * rows[i]
            done.add(i)
            continue
        if j not in rows:
            rows[j] = np.zeros(k)
            order.append(j)
        ri, rj = rows[i], rows[j]
        rows[i] = steps.diag[t, i] * ri + steps.cross[t, i] * rj
        rows[j] = steps.diag[t, j] * rj + steps.cross[t, j] * ri
        done.update((i, j))


def _coefficients(schedule: Sequence[sp.csr_array], Wt: Sequence[sp.csr_array],
                  steps: MatchingSteps | None, messages: np.ndarray, spec: LinearGossip, v: int
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The reached agents (sorted, observer excluded) and ``C`` on them, ``(rounds, k, reached)``."""
    m, T = schedule[0].shape[0], spec.rounds
    keep_all = spec.noise_rounds > 1 or spec.inputs != "once"
    if steps is None:
        C = _sweep(Wt, messages, m)
        nodes = np.flatnonzero(np.any(C != 0, axis=(0, 1)))
        C = C[:, :, nodes]
    else:
        nodes, C = (_sweep_matching(steps, messages, keep_all) if keep_all
                    else _sweep_events(steps, messages))
        order = np.argsort(nodes)
        nodes, C = nodes[order], C[:, :, order]
    mine = nodes != v
    nodes, C = nodes[mine], C[:, :, mine]
    if not keep_all:  # gossip-average: only round 0's coefficients enter J and B
        return nodes, C[:1]
    pad = np.zeros((T - C.shape[0], C.shape[1], nodes.size))
    return nodes, np.concatenate([C, pad])


def observer_reach_leakage(schedule: Sequence[sp.csr_array], spec: LinearGossip, v: int,
                           settings: LinearAuditSettings, *,
                           transposed: Sequence[sp.csr_array] | None = None,
                           steps: MatchingSteps | None = None) -> ReachLeakage:
    """Exact leakage of every target in reach to observer ``v`` (module docstring).

    ``transposed`` (the ``W_t^T`` as CSR) or ``steps`` (:func:`matching_steps`, then the sweep
    touches only the reached agents) may be passed to share them between observers.
    """
    m = schedule[0].shape[0]
    messages = _contacts(schedule, v, steps)
    empty = np.zeros(0)
    if messages.shape[0] == 0:
        return ReachLeakage(observer=v, targets=np.zeros(0, dtype=np.int64), mu=empty, mu_upper=empty,
                            exact=np.zeros(0, dtype=bool), messages=0)
    Wt = transposed
    if steps is None and Wt is None:
        Wt = [sp.csr_array(W.T) for W in schedule]
    nodes, C = _coefficients(schedule, Wt, steps, messages, spec, v)
    scales = spec.noise_scales(m)[nodes]
    J, B = view_maps(spec, C, scales)
    B = B[:, np.tile(scales > 0, spec.noise_rounds)]  # noiseless agents add no noise column
    white = whiten(J, B, rank_rtol=settings.rank_rtol, range_rtol=settings.range_rtol)
    mu, up, exact = _per_target(white, nodes.size, spec, settings)
    return ReachLeakage(observer=v, targets=nodes, mu=mu, mu_upper=up, exact=exact,
                        messages=int(messages.shape[0]))


def _per_target(white: WhitenedView, n: int, spec: LinearGossip,
                settings: LinearAuditSettings) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    b2 = settings.sensitivity ** 2
    if spec.inputs != "per-round":
        mu2 = b2 * np.einsum("ij,ij->j", white.C, white.C)
        mu2[white.outside] = np.inf
        mu = np.sqrt(mu2)
        return mu, mu.copy(), np.ones(n, dtype=bool)
    lo, up, exact = np.empty(n), np.empty(n), np.ones(n, dtype=bool)
    for i in range(n):
        cols = np.arange(spec.rounds) * n + i
        if np.any(white.outside[cols]):
            lo[i] = up[i] = math.inf
            continue
        Cu = white.C[:, cols]
        box = box_maximum(Cu.T @ Cu, settings.sensitivity, exhaustive_up_to=settings.exhaustive_up_to,
                          restarts=settings.restarts, seed=settings.seed)
        lo[i], up[i], exact[i] = box.lower, box.upper, box.exact
    return np.sqrt(np.maximum(lo, 0.0)), np.sqrt(np.maximum(up, 0.0)), exact


def all_observers(schedule: Iterable[object], spec: LinearGossip,
                  settings: LinearAuditSettings | None = None,
                  observers: Iterable[int] | None = None) -> Iterator[ReachLeakage]:
    """:func:`observer_reach_leakage` of every observer (default all agents), one at a time.

    Raises
    ------
    ConfigError
        As :func:`~dpgossip.protocols.gossip.dynamic_release.check_dynamic_spec`, or for an observer
        outside ``0..m-1``.
    """
    sched = check_schedule(schedule)
    check_dynamic_spec(spec, sched)
    s = settings or LinearAuditSettings()
    m = sched[0].shape[0]
    chosen = range(m) if observers is None else list(observers)
    for v in chosen:
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or not 0 <= v < m:
            raise ConfigError(f"observers must be agents in 0..{m - 1}, got {v!r}", field="observers")
    steps = matching_steps(sched)
    Wt = None if steps is not None else [sp.csr_array(W.T) for W in sched]
    for v in chosen:
        yield observer_reach_leakage(sched, spec, int(v), s, transposed=Wt, steps=steps)
