"""Generated communication graphs: rings, grids, hypercubes and seeded random graph families.

Every builder returns a simple undirected :class:`networkx.Graph` whose nodes are the integers
``0..m-1``, inserted in that order, with no self-loops. Nodes are relabelled in the sorted order
of the generator's own labels; for ``grid`` and ``torus`` the labels are ``(row, col)`` pairs, so
agent ``i`` sits at row ``i // cols`` and column ``i % cols`` (row-major order).

Random families (``erdos_renyi``, ``random_geometric``, ``random_regular``, ``watts_strogatz``,
``barabasi_albert``) draw from one :class:`numpy.random.Generator` built from ``seed``: each sample
is the networkx generator run with a fresh 32-bit seed drawn from it, so the same seed always gives
the same graph (for a given networkx version). A disconnected sample is discarded and redrawn from
the same generator, at most ``max_tries`` times, after which :class:`~dpgossip.errors.ConfigError`
is raised.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any

import networkx as nx
import numpy as np

from dpgossip.errors import ConfigError, did_you_mean
from dpgossip.resources import check_needs, graph_needs
from dpgossip.rng import as_seed_sequence
from dpgossip.topology.edges import (
    LARGE_FROM,
    connected,
    geometric_edges,
    geometric_points,
    gnp_edges,
    graph_from_edges,
    ring_edges,
)

__all__ = [
    "TOPOLOGIES",
    "TOPOLOGY_PARAMS",
    "RANDOM_TOPOLOGIES",
    "build_graph",
    "canonical_graph",
    "check_topology_name",
    "edge_estimate",
    "grid_shape",
    "node_sort_key",
]

TOPOLOGIES: tuple[str, ...] = (
    "ring",
    "path",
    "star",
    "complete",
    "grid",
    "torus",
    "hypercube",
    "erdos_renyi",
    "random_geometric",
    "random_regular",
    "watts_strogatz",
    "barabasi_albert",
)
"""Names accepted by :func:`build_graph`."""

RANDOM_TOPOLOGIES: frozenset[str] = frozenset(
    {"erdos_renyi", "random_geometric", "random_regular", "watts_strogatz", "barabasi_albert"}
)
"""Topologies that depend on the seed."""

TOPOLOGY_PARAMS: dict[str, tuple[str, ...]] = {
    "ring": (),
    "path": (),
    "star": (),
    "complete": (),
    "grid": ("rows", "cols"),
    "torus": ("rows", "cols"),
    "hypercube": (),
    "erdos_renyi": ("p", "max_tries"),
    "random_geometric": ("radius", "max_tries"),
    "random_regular": ("degree", "max_tries"),
    "watts_strogatz": ("k", "p", "max_tries"),
    "barabasi_albert": ("attach", "max_tries"),
}
"""Allowed keys of ``params`` for each topology."""

_DEFAULT_MAX_TRIES = 100

SeedLike = int | np.integer | np.random.SeedSequence | np.random.Generator | None


# ---------------------------------------------------------------------------------------------
# Canonical form
# ---------------------------------------------------------------------------------------------


def node_sort_key(label: Hashable) -> tuple[Any, ...]:
    """Sort key giving a deterministic, human-friendly order of node labels.

    Integers (and strings of digits) sort numerically; other strings sort "naturally", so
    ``'n2' < 'n10'``; tuples sort element-wise with the same rule; anything else sorts by
    ``repr``. Numbers come before text.
    """
    if isinstance(label, bool):
        return (2, repr(label))
    if isinstance(label, (int, np.integer)):
        return (0, int(label))
    if isinstance(label, str):
        if re.fullmatch(r"[+-]?\d+", label.strip()):
            return (0, int(label))
        parts = re.split(r"(\d+)", label)
        return (1, tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts if p))
    if isinstance(label, tuple):
        return (1, tuple(node_sort_key(x) for x in label))
    return (2, repr(label))


def canonical_graph(graph: nx.Graph, *, name: str | None = None) -> tuple[nx.Graph, list[Hashable]]:
    """Relabel ``graph`` to nodes ``0..m-1`` in :func:`node_sort_key` order and drop self-loops.

    Node and edge attributes are kept. Returns the new graph (a plain :class:`networkx.Graph`
    whose nodes and edges are inserted in sorted order) and the original labels, so that node
    ``i`` of the result is ``labels[i]`` of the input.
    """
    labels = sorted(graph.nodes, key=node_sort_key)
    index = {u: i for i, u in enumerate(labels)}
    out = nx.Graph()
    if name is not None:
        out.graph["name"] = name
    out.add_nodes_from((index[u], dict(graph.nodes[u])) for u in labels)
    edges = sorted(
        (min(index[u], index[v]), max(index[u], index[v]), dict(d))
        for u, v, d in graph.edges(data=True)
        if u != v
    )
    out.add_edges_from(edges)
    return out, labels


# ---------------------------------------------------------------------------------------------
# Parameter checking
# ---------------------------------------------------------------------------------------------


def _check_m(name: str, m: object) -> int:
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)):
        raise ConfigError(
            f"agents: must be an integer >= 2 for topology {name!r}, got {m!r}",
            field="agents"
        )
    m = int(m)
    if m < 2:
        raise ConfigError(
            f"agents: {m} is too small; a graph needs at least 2 agents",
            field="agents"
        )
    return m


def _int_param(params: Mapping[str, Any], key: str, topology: str, default: int | None,
               *, minimum: int, rule: str | None = None) -> int | None:
    if key not in params or params[key] is None:
        return default
    value = params[key]
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        rule = rule or f"an integer >= {minimum}"
        raise ConfigError(
            f"params.{key}: {value!r} is not allowed for topology {topology!r}; "
            f"{key} must be {rule}",
            field=f"params.{key}"
        )
    return int(value)


def _float_param(params: Mapping[str, Any], key: str, topology: str, default: float,
                 *, lo: float, hi: float, lo_open: bool = True) -> float:
    if key not in params or params[key] is None:
        return default
    value = params[key]
    ok = (not isinstance(value, bool) and isinstance(value, (int, float, np.integer, np.floating))
          and math.isfinite(float(value)))
    if ok:
        v = float(value)
        ok = (v > lo if lo_open else v >= lo) and v <= hi
    if not ok:
        interval = f"{'(' if lo_open else '['}{lo:g}, {hi:g}]"
        raise ConfigError(
            f"params.{key}: {value!r} is not allowed for topology {topology!r}; "
            f"{key} must be a number in {interval}",
            field=f"params.{key}"
        )
    return float(value)


def _check_keys(name: str, params: Mapping[str, Any]) -> None:
    allowed = TOPOLOGY_PARAMS[name]
    for key in params:
        if key not in allowed:
            what = ", ".join(allowed) if allowed else "none (this topology takes no parameters)"
            raise ConfigError(
                f"params.{key}: unknown parameter {key!r} for topology {name!r}"
                f"{did_you_mean(str(key), allowed)}; allowed: {what}",
                field=f"params.{key}"
            )


def check_seed_like(seed: object) -> None:
    """Raise :class:`ConfigError` naming ``seed`` unless it is a :data:`SeedLike` (a bool is not)."""
    if seed is None or isinstance(seed, (np.random.Generator, np.random.SeedSequence)):
        return
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError(f"seed must be a non-negative integer, a numpy.random.SeedSequence, a "
                          f"numpy.random.Generator or None, got {seed!r}", field="seed")


def _rng(seed: SeedLike) -> np.random.Generator:
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None:
        return np.random.default_rng()
    return np.random.default_rng(as_seed_sequence(seed))


# ---------------------------------------------------------------------------------------------
# Deterministic families
# ---------------------------------------------------------------------------------------------


def grid_shape(m: int | None, topology: str = "grid", *, rows: int | None = None,
               cols: int | None = None) -> tuple[int, int]:
    """Rows and columns of a ``grid`` or ``torus`` with ``m`` agents.

    Without ``rows``/``cols`` the most square factorisation ``m = r * c`` with ``r <= c`` is chosen,
    i.e. the largest divisor ``r <= sqrt(m)`` with both sides at least 2 (grid) or 3 (torus: a side
    of 2 would make the wrap-around edge coincide with the ordinary one). With one of them given
    the other is ``m`` divided by it; with both, ``m`` may be ``None`` and is their product.
    """
    side = 3 if topology == "torus" else 2
    why = ("a side of 2 would make the wrap-around edge coincide with the ordinary edge"
           if topology == "torus" else "a 1-row grid is a path")
    if rows is not None and rows < side:
        raise ConfigError(f"params.rows: {rows} is not allowed for topology {topology!r}; "
                          f"rows must be an integer >= {side} ({why})", field="params.rows")
    if cols is not None and cols < side:
        raise ConfigError(f"params.cols: {cols} is not allowed for topology {topology!r}; "
                          f"cols must be an integer >= {side} ({why})", field="params.cols")
    if m is None:
        if rows is None or cols is None:
            raise ConfigError(f"agents: required for topology {topology!r} unless both "
                              "params.rows and params.cols are given", field="agents")
        return rows, cols
    if rows is not None and cols is not None:
        if rows * cols != m:
            raise ConfigError(f"params.rows: rows x cols = {rows} x {cols} = {rows * cols} "
                              f"does not equal agents = {m}", field="params.rows")
        return rows, cols
    if rows is not None or cols is not None:
        given, key = (rows, "rows") if rows is not None else (cols, "cols")
        assert given is not None
        if m % given:
            raise ConfigError(f"params.{key}: {given} does not divide agents = {m}",
                              field=f"params.{key}")
        other = m // given
        if other < side:
            raise ConfigError(f"params.{key}: {given} leaves {m} // {given} = {other} for "
                              f"the other side of the {topology}, which must be >= {side} ({why})",
                              field=f"params.{key}")
        return (given, other) if key == "rows" else (other, given)
    best = None
    for r in range(side, math.isqrt(m) + 1):
        if m % r == 0:
            best = (r, m // r)
    if best is None:
        if topology == "grid":
            extra = (f"{m} is prime, so the only grid is 1 x {m}, which is the path graph "
                     "(use topology 'path')" if _is_prime(m) else
                     f"{m} = 1 x {m} only, which is the path graph (use topology 'path')")
        else:
            extra = (f"{m} has no such factorisation; use e.g. 9, 12 or 16 agents, "
                     "or topology 'ring' or 'grid'")
        raise ConfigError(f"agents: {topology} needs agents = rows x cols with rows, cols "
                          f">= {side}; {extra}", field="agents")
    return best


def _is_prime(m: int) -> bool:
    return m >= 2 and all(m % d for d in range(2, math.isqrt(m) + 1))


def _ring(m: int, params: Mapping[str, Any]) -> nx.Graph:
    if m < 3:
        raise ConfigError(f"agents: a ring needs at least 3 agents, got {m} "
                          "(with 2 agents use 'path' or 'complete')", field="agents")
    if m > LARGE_FROM:
        return graph_from_edges(m, ring_edges(m), name="ring")
    return nx.cycle_graph(m)


def _hypercube(m: int, params: Mapping[str, Any]) -> nx.Graph:
    if m & (m - 1):
        lo = 1 << (m.bit_length() - 1)
        raise ConfigError(f"agents: hypercube needs a power of two agents "
                          f"(2, 4, 8, 16, ...), got {m}; nearest: {lo} or {2 * lo}", field="agents")
    # Nodes are bit tuples (b_0, ..., b_{d-1}); sorted order makes node i the binary number
    # b_0 b_1 ... b_{d-1}, so i ~ j iff i XOR j is a power of two.
    return nx.hypercube_graph(m.bit_length() - 1)


def _grid(m: int, params: Mapping[str, Any], *, periodic: bool) -> nx.Graph:
    topology, side = ("torus", 3) if periodic else ("grid", 2)
    rows = _int_param(params, "rows", topology, None, minimum=side)
    cols = _int_param(params, "cols", topology, None, minimum=side)
    r, c = grid_shape(m, topology, rows=rows, cols=cols)
    return nx.grid_2d_graph(r, c, periodic=periodic)


# ---------------------------------------------------------------------------------------------
# Random families
# ---------------------------------------------------------------------------------------------


def _connected_sample(topology: str, params: Mapping[str, Any], rng: np.random.Generator,
                      draw: Callable[[int], nx.Graph], failure: str, advice: str) -> nx.Graph:
    """Draw ``draw(seed_k)`` with fresh seeds from ``rng`` until the sample is connected."""
    tries = _int_param(params, "max_tries", topology, _DEFAULT_MAX_TRIES, minimum=1)
    assert tries is not None
    for _ in range(tries):
        g = draw(int(rng.integers(0, 2**32)))
        g.remove_edges_from(list(nx.selfloop_edges(g)))
        if nx.is_connected(g):
            return g
    raise ConfigError(f"{failure} gave a disconnected graph in all {tries} samples "
                      f"(params.max_tries = {tries}); the graph must be connected; "
                      f"{advice}", field=failure.split(":", 1)[0])


FAST_GNP_FROM = LARGE_FROM
"""Above this many agents ``erdos_renyi`` samples edge arrays (:func:`~dpgossip.topology.edges.gnp_edges`,
``O(m + |E|)``) and ``random_geometric`` builds its graph from ``cKDTree`` pairs without networkx loops."""


def _connected_edges(topology: str, params: Mapping[str, Any], rng: np.random.Generator, m: int,
                     draw: Callable[[int], tuple[np.ndarray, list[dict] | None]], failure: str,
                     advice: str) -> nx.Graph:
    """:func:`_connected_sample` on edge arrays: ``draw(seed_k)`` gives ``(edges, node attributes)``;
    connectivity by ``csgraph``; the first connected sample becomes a canonical graph."""
    tries = _int_param(params, "max_tries", topology, _DEFAULT_MAX_TRIES, minimum=1)
    assert tries is not None
    for _ in range(tries):
        edges, attrs = draw(int(rng.integers(0, 2**32)))
        edges = edges[edges[:, 0] != edges[:, 1]]
        if connected(m, edges):
            return graph_from_edges(m, edges, name=topology, node_attrs=attrs)
    raise ConfigError(f"{failure} gave a disconnected graph in all {tries} samples "
                      f"(params.max_tries = {tries}); the graph must be connected; "
                      f"{advice}", field=failure.split(":", 1)[0])


def _erdos_renyi(m: int, params: Mapping[str, Any], rng: np.random.Generator) -> nx.Graph:
    p = _float_param(params, "p", "erdos_renyi", min(1.0, 2.0 * math.log(m) / m), lo=0.0, hi=1.0)
    failure = f"params.p: erdos_renyi with m = {m} agents and p = {p:.6g}"
    advice = f"raise p above the connectivity threshold ln(m)/m = {math.log(m) / m:.4g}"
    if m > FAST_GNP_FROM:  # O(m + |E|), numpy (gnp_random_graph tries all m(m-1)/2 pairs)
        return _connected_edges("erdos_renyi", params, rng, m,
                                lambda s: (gnp_edges(m, p, np.random.default_rng(s)), None),
                                failure, advice)
    return _connected_sample("erdos_renyi", params, rng,
                             lambda s: nx.gnp_random_graph(m, p, seed=s), failure, advice)


def _geometric_draw(m: int, radius: float, s: int) -> tuple[np.ndarray, list[dict]]:
    """Edges and ``pos`` attributes of ``nx.random_geometric_graph(m, radius, seed=s)``, without networkx."""
    pts = geometric_points(m, s)
    return geometric_edges(pts, radius), [{"pos": xy} for xy in pts.tolist()]


def _random_geometric(m: int, params: Mapping[str, Any], rng: np.random.Generator) -> nx.Graph:
    # Connectivity threshold in the unit square: pi r^2 m = ln m (Penrose 1997); the default
    # doubles that area, r = sqrt(2 ln m / (pi m)), capped at sqrt(2) (the square's diagonal).
    default = min(math.sqrt(2.0), math.sqrt(2.0 * math.log(m) / (math.pi * m)))
    radius = _float_param(params, "radius", "random_geometric", default, lo=0.0,
                          hi=math.sqrt(2.0))
    failure = (f"params.radius: random_geometric with m = {m} agents and "
               f"radius = {radius:.6g}")
    advice = ("raise radius above the connectivity threshold sqrt(ln m / (pi m)) = "
              f"{math.sqrt(math.log(m) / (math.pi * m)):.4g}")
    if m > FAST_GNP_FROM:
        return _connected_edges("random_geometric", params, rng, m,
                                lambda s: _geometric_draw(m, radius, s), failure, advice)
    return _connected_sample("random_geometric", params, rng,
                             lambda s: nx.random_geometric_graph(m, radius, seed=s), failure,
                             advice)


def _random_regular(m: int, params: Mapping[str, Any], rng: np.random.Generator) -> nx.Graph:
    degree = _int_param(params, "degree", "random_regular", 3, minimum=1)
    assert degree is not None
    if degree >= m:
        raise ConfigError(f"params.degree: {degree} is not allowed for topology "
                          f"'random_regular' with {m} agents; degree must be < agents",
                          field="params.degree")
    if (m * degree) % 2:
        raise ConfigError(f"params.degree: {degree} is not allowed with {m} agents; "
                          f"agents x degree = {m * degree} must be even (each edge has two ends)",
                          field="params.degree")
    if degree == 1 and m > 2:
        raise ConfigError(f"params.degree: 1 is not allowed with {m} agents; a 1-regular "
                          "graph is a perfect matching and is disconnected for more than 2 agents",
                          field="params.degree")
    failure = f"params.degree: random_regular with m = {m} agents and degree = {degree}"
    return _connected_sample("random_regular", params, rng,
                             lambda s: nx.random_regular_graph(degree, m, seed=s), failure,
                             "raise degree or max_tries")


def _watts_strogatz(m: int, params: Mapping[str, Any], rng: np.random.Generator) -> nx.Graph:
    k = _int_param(params, "k", "watts_strogatz", 4, minimum=2, rule="an even integer >= 2")
    p = _float_param(params, "p", "watts_strogatz", 0.1, lo=0.0, hi=1.0, lo_open=False)
    assert k is not None
    if k % 2:
        raise ConfigError(f"params.k: {k} is not allowed for topology 'watts_strogatz'; "
                          "k must be an even integer >= 2 (k/2 neighbours on each side)",
                          field="params.k")
    if k >= m:
        raise ConfigError(f"params.k: {k} is not allowed for topology 'watts_strogatz' "
                          f"with {m} agents; k must be < agents", field="params.k")
    failure = f"params.p: watts_strogatz with m = {m} agents, k = {k} and p = {p:.6g}"
    return _connected_sample("watts_strogatz", params, rng,
                             lambda s: nx.watts_strogatz_graph(m, k, p, seed=s), failure,
                             "lower p, raise k or raise max_tries")


def _barabasi_albert(m: int, params: Mapping[str, Any], rng: np.random.Generator) -> nx.Graph:
    attach = _int_param(params, "attach", "barabasi_albert", 2, minimum=1)
    assert attach is not None
    if attach >= m:
        raise ConfigError(f"params.attach: {attach} is not allowed for topology "
                          f"'barabasi_albert' with {m} agents; attach must be < agents",
                          field="params.attach")
    # Always connected (each new node links to `attach` existing ones); the check is a safeguard.
    failure = f"params.attach: barabasi_albert with m = {m} agents and attach = {attach}"
    return _connected_sample("barabasi_albert", params, rng,
                             lambda s: nx.barabasi_albert_graph(m, attach, seed=s), failure,
                             "raise attach")


_DETERMINISTIC: dict[str, Callable[[int, Mapping[str, Any]], nx.Graph]] = {
    "ring": _ring,
    "path": lambda m, p: nx.path_graph(m),
    "star": lambda m, p: nx.star_graph(m - 1),
    "complete": lambda m, p: nx.complete_graph(m),
    "grid": lambda m, p: _grid(m, p, periodic=False),
    "torus": lambda m, p: _grid(m, p, periodic=True),
    "hypercube": _hypercube,
}

_RANDOM: dict[str, Callable[[int, Mapping[str, Any], np.random.Generator], nx.Graph]] = {
    "erdos_renyi": _erdos_renyi,
    "random_geometric": _random_geometric,
    "random_regular": _random_regular,
    "watts_strogatz": _watts_strogatz,
    "barabasi_albert": _barabasi_albert,
}


_EDGE_ARRAY = frozenset({"ring", "erdos_renyi", "random_geometric"})
"""Builders that return a canonical graph built from an edge array above ``LARGE_FROM`` agents."""


def check_params_mapping(params: object) -> dict[str, Any]:
    """``params`` (a mapping of parameter names, or ``None``) as a new dict; anything else raises
    :class:`ConfigError` naming ``params``."""
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise ConfigError(f"params must be a mapping of topology parameters such as "
                          f"{{'p': 0.3}}, or None, got {params!r}", field="params")
    return dict(params)


def edge_estimate(name: str, m: int, params: Mapping[str, Any] | None = None) -> float:
    """About how many edges :func:`build_graph` makes for ``m`` agents (before it is run, to check the
    memory it needs; parameters that are not numbers count as their defaults)."""
    params = params or {}

    def num(key: str, default: float) -> float:
        v = params.get(key)
        ok = isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
        return float(v) if ok and math.isfinite(float(v)) and float(v) > 0 else default

    m = max(int(m), 2)
    pairs = m * (m - 1) / 2
    if name == "complete":
        return pairs
    if name == "erdos_renyi":
        return pairs * min(1.0, num("p", 2.0 * math.log(m) / m))
    if name == "random_geometric":
        radius = num("radius", math.sqrt(2.0 * math.log(m) / (math.pi * m)))
        return pairs * min(1.0, math.pi * radius**2)
    if name == "hypercube":
        return m * math.log2(m) / 2
    per_node = {"grid": 2.0, "torus": 2.0, "random_regular": num("degree", 3) / 2,
                "watts_strogatz": num("k", 4) / 2, "barabasi_albert": num("attach", 2)}
    return m * min(per_node.get(name, 1.0), (m - 1) / 2)


def check_topology_name(name: object, extra: Iterable[str] = ()) -> str:
    """Return ``name`` if it is a known topology, else raise ``ConfigError`` with a suggestion."""
    known = list(TOPOLOGIES) + [e for e in extra if e not in TOPOLOGIES]
    if not isinstance(name, str) or name not in known:
        hint = did_you_mean(name, known) if isinstance(name, str) else ""
        raise ConfigError(f"topology: unknown topology {name!r}{hint}; "
                          f"known: {', '.join(known)}", field="topology")
    return name


def build_graph(name: str, m: int | None, *, seed: SeedLike = None,
                params: Mapping[str, Any] | None = None) -> nx.Graph:
    """Build the connected graph ``name`` on agents ``0..m-1``.

    Parameters
    ----------
    name : str
        One of :data:`TOPOLOGIES`:

        * ``ring`` -- cycle ``C_m`` (``m >= 3``), edges ``{i, i+1 mod m}``;
        * ``path`` -- path ``P_m``, edges ``{i, i+1}``;
        * ``star`` -- hub ``0`` joined to ``1..m-1``;
        * ``complete`` -- ``K_m``;
        * ``grid`` -- ``r x c`` lattice, ``r c = m``, node ``i`` at ``(i // c, i % c)``;
          params ``rows``, ``cols`` (default: most square factorisation, ``r <= c``, sides >= 2);
        * ``torus`` -- periodic ``r x c`` lattice (4-regular), sides >= 3; params as ``grid``;
        * ``hypercube`` -- ``Q_d`` with ``m = 2^d``; ``i ~ j`` iff ``i XOR j`` is a power of two;
        * ``erdos_renyi`` -- ``G(m, p)``; param ``p`` (default ``min(1, 2 ln m / m)``);
        * ``random_geometric`` -- ``m`` uniform points in the unit square joined when within
          ``radius`` (default ``sqrt(2 ln m / (pi m))``, twice the critical area);
        * ``random_regular`` -- uniform ``degree``-regular graph (default 3; ``m degree`` even);
        * ``watts_strogatz`` -- ring lattice with ``k`` nearest neighbours (default 4, even),
          each edge rewired with probability ``p`` (default 0.1);
        * ``barabasi_albert`` -- preferential attachment, each new node with ``attach`` edges
          (default 2).

        Random families also take ``max_tries`` (default 100): disconnected samples are redrawn
        from the same generator at most that many times.
    m : int or None
        Number of agents, at least 2. May be ``None`` only for ``grid``/``torus`` with both
        ``rows`` and ``cols``.
    seed : int, SeedSequence, numpy Generator or None
        Randomness for the random families (ignored by the others). A Generator is advanced.
    params : mapping, optional
        Topology parameters, see above. Unknown keys raise ``ConfigError``.

    Returns
    -------
    networkx.Graph
        Connected simple graph, nodes ``0..m-1`` in sorted order of the generator's labels.
    """
    name = check_topology_name(name)
    params = check_params_mapping(params)
    check_seed_like(seed)
    _check_keys(name, params)
    if m is None and name in ("grid", "torus"):
        side = 3 if name == "torus" else 2
        rows = _int_param(params, "rows", name, None, minimum=side)
        cols = _int_param(params, "cols", name, None, minimum=side)
        m = int(np.prod(grid_shape(None, name, rows=rows, cols=cols)))
    if m is None:
        raise ConfigError(f"agents: required for topology {name!r} (an integer >= 2)",
                          field="agents")
    m = _check_m(name, m)
    check_needs(graph_needs(m, edge_estimate(name, m, params), f"agents = {m}"),
                advice="use fewer agents", field="agents")
    if name in _RANDOM:
        raw = _RANDOM[name](m, params, _rng(seed))
    else:
        raw = _DETERMINISTIC[name](m, params)
    if m > LARGE_FROM and name in _EDGE_ARRAY:  # already canonical and checked connected
        return raw
    graph, _ = canonical_graph(raw, name=name)
    if graph.number_of_nodes() != m or not nx.is_connected(graph):  # pragma: no cover - safeguard
        raise AssertionError(f"builder {name!r} produced an invalid graph")
    return graph
