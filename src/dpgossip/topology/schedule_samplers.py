"""Samplers of mixing schedules (:class:`~dpgossip.topology.schedules.MixingSchedule`).

Synchronous, time-varying (``"rounds"``, every ``W_t`` symmetric and doubly stochastic):

:func:`random_matchings`
    Each round a uniformly shuffled greedy maximal matching of the graph's edges (of the complete
    graph when none is given); matched pairs average, ``W_t = I - sum_{(i,j)} (e_i - e_j)(e_i - e_j)^T / 2``.
:func:`one_peer_exponential`
    Round ``t``: agent ``i`` averages with ``i + 2^(t mod tau)`` (mod ``m``),
    ``tau = ceil(log2 m)``: ``W_t = (I + S_t) / 2`` with ``S_t`` the cyclic shift by ``2^(t mod tau)``,
    a permutation, so ``W_t`` is doubly stochastic (not symmetric). For ``m`` a power of two the
    product of ``tau`` consecutive rounds is exactly ``J / m`` (Ying et al. 2021).
:func:`random_regular_rounds`
    Each round a fresh random ``d``-regular graph (networkx's pairing model), with the Metropolis
    weights ``1 / (d + 1)`` on its edges and on the diagonal.
:func:`schedule_from_files`
    ``W_t`` read from ``.npy``, ``.npz`` (scipy sparse) or whitespace-separated text files.

Asynchronous (``"pairwise"``): :func:`pairwise_gossip`, Boyd et al. (2006): every agent has a
rate-``rate`` Poisson clock; when agent ``i``'s clock ticks it averages with ``j`` drawn from row
``i`` of ``P``. The superposed clocks tick at rate ``m * rate``, and each tick belongs to a uniformly
chosen agent.

Push-sum (``"rounds"`` with ``stochastic = "column"``): :func:`push_sum_weights` on a directed
graph (Kempe, Dobra and Gehrke 2003): agent ``j`` with out-degree ``d_j`` keeps ``1 / (d_j + 1)`` of
its mass and sends as much to each out-neighbour: ``A_ij = 1 / (d_j + 1)`` for ``i`` in
``{j} u out(j)``, column stochastic. :func:`push_sum_schedule` repeats it for ``T`` rounds.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Sequence
from pathlib import Path

import networkx as nx
import numpy as np
import scipy.sparse as sp

from dpgossip.errors import ConfigError, check_int, check_number
from dpgossip.topology.edges import adjacency_csr, upper_edges
from dpgossip.topology.schedules import MixingSchedule

__all__ = ["random_matchings", "one_peer_exponential", "random_regular_rounds",
           "schedule_from_files", "pairwise_gossip", "neighbour_probabilities", "check_probabilities",
           "push_sum_weights", "push_sum_schedule", "pair_matrix", "check_strongly_connected"]


def _generator(seed: int | np.random.SeedSequence | np.random.Generator) -> np.random.Generator:
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, np.random.SeedSequence) or (isinstance(seed, (int, np.integer))
                                                     and not isinstance(seed, bool) and seed >= 0):
        return np.random.default_rng(seed)
    raise ConfigError(f"seed must be an integer >= 0, a SeedSequence or a Generator, got {seed!r}",
                      field="seed")


def pair_matrix(m: int, pairs: np.ndarray) -> sp.csr_array:
    """``I - sum_{(i, j) in pairs} (e_i - e_j)(e_i - e_j)^T / 2`` for disjoint pairs."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    touched = np.zeros(m, dtype=bool)
    touched[pairs.ravel()] = True
    if touched.sum() != 2 * len(pairs):
        raise ConfigError("pairs must be disjoint (a matching)", field="pairs")
    free = np.flatnonzero(~touched)
    i, j = pairs[:, 0], pairs[:, 1]
    rows = np.concatenate([free, i, i, j, j])
    cols = np.concatenate([free, i, j, j, i])
    vals = np.concatenate([np.ones(free.size), np.full(4 * len(pairs), 0.5)])
    return sp.csr_array((vals, (rows, cols)), shape=(m, m))


def _edges_of(graph: nx.Graph | None, m: int | None) -> tuple[int, np.ndarray]:
    if graph is None:
        m = check_int(m, "m", 2)
        iu = np.triu_indices(m, 1)
        return m, np.column_stack(iu).astype(np.int64)
    if not isinstance(graph, nx.Graph) or graph.is_directed():
        raise ConfigError(f"graph must be an undirected networkx graph on 0..m-1, got "
                          f"{type(graph).__name__}", field="graph")
    n = graph.number_of_nodes()
    if sorted(graph.nodes) != list(range(n)) or n < 2:
        raise ConfigError("graph must have the nodes 0..m-1 (m >= 2)", field="graph")
    return n, upper_edges(adjacency_csr(graph))


def random_matchings(rounds: int, seed: int | np.random.SeedSequence | np.random.Generator, *,
                     graph: nx.Graph | None = None, m: int | None = None) -> MixingSchedule:
    """``rounds`` rounds of a random maximal matching of ``graph`` (or of the complete graph on
    ``m`` agents) (module docstring)."""
    T = check_int(rounds, "rounds", 1)
    m, edges = _edges_of(graph, m)
    rng = _generator(seed)
    mats = []
    for _ in range(T):
        order = rng.permutation(len(edges))
        used = np.zeros(m, dtype=bool)
        chosen = []
        for a, b in edges[order].tolist():
            if not used[a] and not used[b]:
                used[a] = used[b] = True
                chosen.append((a, b))
        mats.append(pair_matrix(m, np.array(chosen, dtype=np.int64)))
    return MixingSchedule(m=m, kind="rounds", matrices=tuple(mats), label="random-matchings")


def one_peer_exponential(m: int, rounds: int) -> MixingSchedule:
    """``W_t = (I + S_t) / 2``, ``S_t`` the shift by ``2^(t mod ceil(log2 m))`` (module docstring)."""
    m = check_int(m, "m", 2)
    T = check_int(rounds, "rounds", 1)
    tau = max(1, math.ceil(math.log2(m)))
    idx = np.arange(m)
    mats = []
    for t in range(T):
        shift = 2 ** (t % tau) % m
        rows = np.concatenate([idx, idx])
        cols = np.concatenate([idx, (idx + shift) % m])
        mats.append(sp.csr_array((np.full(2 * m, 0.5), (rows, cols)), shape=(m, m)))
    return MixingSchedule(m=m, kind="rounds", matrices=tuple(mats), label="one-peer-exponential")


def random_regular_rounds(m: int, degree: int, rounds: int,
                          seed: int | np.random.SeedSequence | np.random.Generator) -> MixingSchedule:
    """A fresh random ``degree``-regular graph each round, weights ``1 / (degree + 1)``."""
    m = check_int(m, "m", 2)
    d = check_int(degree, "degree", 1)
    if d >= m or (m * d) % 2:
        raise ConfigError(f"degree must be < m = {m} with m * degree even, got {d}", field="degree")
    T = check_int(rounds, "rounds", 1)
    rng = _generator(seed)
    mats = []
    for _ in range(T):
        g = nx.random_regular_graph(d, m, seed=int(rng.integers(2**63 - 1)))
        A = adjacency_csr(g)
        mats.append(((A + sp.eye_array(m, format="csr")) / (d + 1)).tocsr())
    return MixingSchedule(m=m, kind="rounds", matrices=tuple(mats), label="random-regular")


def _read_matrix(path: Path, k: int) -> object:
    where = f"files[{k}]"
    if not path.is_file():
        raise ConfigError(f"{where}: no such file {str(path)!r}", field=where)
    try:
        if path.suffix == ".npz":
            return sp.load_npz(path)
        if path.suffix == ".npy":
            return np.load(path, allow_pickle=False)
        with warnings.catch_warnings():  # an empty file: numpy warns, then returns no matrix
            warnings.simplefilter("ignore", UserWarning)
            W = np.loadtxt(path, ndmin=2, encoding="utf-8-sig")  # a BOM is accepted, as in scenarios
        if W.size == 0:
            raise ValueError("it holds no numbers")
        return W
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{where}: cannot read {str(path)!r} as a matrix ({exc}); allowed: .npy, "
                          ".npz (scipy sparse) or whitespace-separated text", field=where) from None


def schedule_from_files(paths: Sequence[str | Path], *, stochastic: str = "doubly") -> MixingSchedule:
    """``W_t`` from one file per round, in the order given (module docstring)."""
    if isinstance(paths, (str, Path)) or not len(paths):
        raise ConfigError(f"files must be a nonempty list of paths, got {paths!r}", field="files")
    mats = [_read_matrix(Path(p), k) for k, p in enumerate(paths)]
    for k, W in enumerate(mats):
        if len(W.shape) != 2 or W.shape[0] != W.shape[1] or W.shape != mats[0].shape:
            raise ConfigError(f"files[{k}]: every file must hold the same square m x m matrix, got "
                              f"shape {W.shape} (first file: {mats[0].shape})", field=f"files[{k}]")
    m = mats[0].shape[0]
    try:
        return MixingSchedule(m=m, kind="rounds", matrices=tuple(mats), stochastic=stochastic,
                              label="files")
    except ConfigError as exc:  # name the file, not the schedule's internal matrices[k]
        match = re.match(r"matrices\[(\d+)\]", exc.field or "")
        if match is None:
            raise
        k = int(match.group(1))
        where = f"files[{k}]"
        rest = str(exc).removeprefix(match.group(0)).lstrip(": ")
        sep = " " if rest.startswith("must") else ": "
        raise ConfigError(f"{where} ({str(paths[k])!r}){sep}{rest}", field=where) from None


def neighbour_probabilities(graph: nx.Graph) -> sp.csr_array:
    """``P_ij = 1 / deg(i)`` for every neighbour ``j`` of ``i`` (uniform choice of a neighbour)."""
    A = adjacency_csr(graph)
    A.setdiag(0)
    A.eliminate_zeros()
    deg = A.sum(axis=1)
    if np.any(deg == 0):
        raise ConfigError(f"graph: agent {int(np.flatnonzero(deg == 0)[0])} has no neighbour",
                          field="graph")
    return sp.csr_array(sp.diags_array(1.0 / deg) @ A)


def check_probabilities(P: object, graph: nx.Graph | None = None) -> sp.csr_array:
    """``P`` as a CSR array: nonnegative, zero diagonal, rows summing to one, supported on the
    graph's edges when a graph is given."""
    A = sp.csr_array(P, dtype=float) if sp.issparse(P) else sp.csr_array(np.asarray(P, dtype=float))
    m = A.shape[0]
    if A.ndim != 2 or A.shape != (m, m) or m < 2:
        raise ConfigError(f"P must be a square m x m matrix with m >= 2, got shape {A.shape}",
                          field="P")
    A.eliminate_zeros()
    if not np.all(np.isfinite(A.data)) or (A.data.size and A.data.min() < 0):
        raise ConfigError("P must be finite and nonnegative", field="P")
    if np.any(A.diagonal() != 0):
        raise ConfigError("P: an agent cannot choose itself (P_ii must be 0)", field="P")
    rows = A.sum(axis=1)
    bad = int(np.argmax(np.abs(rows - 1)))
    if abs(rows[bad] - 1) > 1e-9:
        raise ConfigError(f"P: row {bad} sums to {rows[bad]:.12g}; every row must sum to 1",
                          field="P")
    if graph is not None:
        adj = adjacency_csr(graph)
        off = (A != 0).astype(float) - (A != 0).multiply(adj != 0)
        if off.nnz and off.sum() > 0:
            i, j = (x[0] for x in sp.find(off)[:2])
            raise ConfigError(f"P: P[{i}, {j}] > 0 but ({i}, {j}) is not an edge of the graph",
                              field="P")
    return A


def _draw_peers(P: sp.csr_array, who: np.ndarray, u: np.ndarray) -> np.ndarray:
    """For each ``who[k]`` the column ``j`` with ``F(j-1) <= u[k] < F(j)``, ``F`` the cumulative
    sum of its row of ``P`` (inverse transform; a zero-probability column is never chosen)."""
    cum = np.cumsum(P.data)
    start, end = P.indptr[who], P.indptr[who + 1]
    base = np.where(start > 0, cum[np.maximum(start - 1, 0)], 0.0)
    pos = np.searchsorted(cum, base + u * (cum[end - 1] - base), side="right")
    return P.indices[np.clip(pos, start, end - 1)]


def pairwise_gossip(P: object, seed: int | np.random.SeedSequence | np.random.Generator, *,
                    ticks: int | None = None, horizon: float | None = None,
                    rate: float = 1.0) -> MixingSchedule:
    """Randomized pairwise gossip of Boyd et al. (2006): ``ticks`` clock ticks, or every tick in
    ``[0, horizon)`` (module docstring).

    Returns a ``"pairwise"`` schedule whose exchanges all have outcome ``AVERAGED``.
    """
    Pc = check_probabilities(P)
    m = Pc.shape[0]
    rate = check_number(rate, "rate", low=0.0, low_open=True)
    rng = _generator(seed)
    if (ticks is None) == (horizon is None):
        raise ConfigError("give exactly one of ticks and horizon", field="ticks")
    if ticks is not None:
        K = check_int(ticks, "ticks", 0)
        times = np.cumsum(rng.exponential(1.0 / (m * rate), size=K))
    else:
        H = check_number(horizon, "horizon", low=0.0)
        times = np.zeros(0)
        while times.size == 0 or times[-1] < H:
            more = np.cumsum(rng.exponential(1.0 / (m * rate), size=max(16, int(1.2 * H * m * rate))))
            times = np.concatenate([times, (times[-1] if times.size else 0.0) + more])
        times = times[times < H]
        K = times.size
    who = rng.integers(m, size=K)
    peer = _draw_peers(Pc, who, rng.random(K))
    return MixingSchedule(m=m, kind="pairwise", times=times, pairs=np.column_stack([who, peer]),
                          label="pairwise")


def push_sum_weights(graph: nx.DiGraph) -> sp.csr_array:
    """Column-stochastic ``A``: ``A_ij = 1 / (outdeg(j) + 1)`` for ``i = j`` or ``j -> i``."""
    if not isinstance(graph, nx.DiGraph):
        raise ConfigError(f"graph must be a networkx DiGraph on 0..m-1, got {type(graph).__name__}",
                          field="graph")
    m = graph.number_of_nodes()
    if sorted(graph.nodes) != list(range(m)) or m < 1:
        raise ConfigError("graph must have the nodes 0..m-1", field="graph")
    src, dst = [], []
    for j, i in graph.edges():
        if i != j:
            src.append(j)
            dst.append(i)
    check_strongly_connected(graph, "graph", "push-sum")
    src_a, dst_a = np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64)
    out = np.bincount(src_a, minlength=m)
    idx = np.arange(m)
    rows = np.concatenate([idx, dst_a])
    cols = np.concatenate([idx, src_a])
    vals = 1.0 / (out[cols] + 1.0)
    return sp.csr_array((vals, (rows, cols)), shape=(m, m))


def check_strongly_connected(graph: nx.DiGraph, where: str, what: str) -> None:
    """Refuse a directed graph that is not strongly connected: there push-sum's ratios do not tend to
    the average (some agent's mass never reaches another).

    Raises
    ------
    ConfigError
        Naming ``where``, the property and one agent that cannot reach another.
    """
    m = graph.number_of_nodes()
    if m < 2 or nx.is_strongly_connected(graph):
        return
    reached = nx.descendants(graph, 0) | {0}
    if len(reached) < m:
        u, v = 0, min(set(graph.nodes) - reached)
    else:
        u, v = min(set(graph.nodes) - nx.ancestors(graph, 0) - {0}), 0
    parts = nx.number_strongly_connected_components(graph)
    raise ConfigError(f"{where}: {what} needs a strongly connected directed graph (every agent reaches "
                      f"every other along the edges), got {parts} strongly connected components "
                      f"(agent {u} cannot reach agent {v}); its ratios s_i / w_i would not tend to "
                      "the average", field=where)


def push_sum_schedule(graph: nx.DiGraph, rounds: int) -> MixingSchedule:
    """:func:`push_sum_weights` for ``rounds`` rounds (a ``"column"`` schedule)."""
    A = push_sum_weights(graph)
    T = check_int(rounds, "rounds", 1)
    return MixingSchedule(m=A.shape[0], kind="rounds", matrices=(A,) * T, stochastic="column",
                          label="push-sum")
