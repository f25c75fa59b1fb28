"""Communication networks: graphs, mixing matrices, validation and spectral summaries.

:func:`make_network` is the entry point: it builds or loads a graph, computes or reads its mixing
matrix ``W``, validates ``W`` (symmetric, nonnegative, doubly stochastic, supported on the edges,
connected graph, SLEM < 1) and returns a :class:`Network`.

Shipped topology files (``src/dpgossip/topology/files/``, mirrored in the repository's
``topologies/`` folder) can be named without a path: ``paper-ring4`` (the 4-agent ring with the
mixing matrix of Section IV-B of Campbell et al.), ``karate-club`` (Zachary 1977, 34 agents) and
``florentine-families`` (Padgett & Ansell 1993, 15 agents).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from dpgossip.errors import ConfigError, renamed_fields
from dpgossip.resources import check_needs, graph_needs, sparse_matrix_needs
from dpgossip.topology.builders import (
    TOPOLOGIES,
    TOPOLOGY_PARAMS,
    SeedLike,
    build_graph,
    check_params_mapping,
    check_seed_like,
    check_topology_name,
    edge_estimate,
)
from dpgossip.topology.edges import adjacency_csr
from dpgossip.topology.io import FILE_FORMATS, LoadedGraph, load_graph, save_graph_json
from dpgossip.topology.mixing import MIXING_RULES, check_rule_name, mixing_matrix
from dpgossip.topology.network import Network
from dpgossip.topology.spectral import (
    DENSE_MAX_AGENTS,
    SpectralSummary,
    consensus_rounds,
    spectral_summary,
)
from dpgossip.topology.validate import check_graph, validate_mixing

__all__ = [
    "EXPLICIT_MIXING",
    "FILE_FORMATS",
    "MIXING_RULES",
    "SHIPPED_DIR",
    "SHIPPED_TOPOLOGIES",
    "TOPOLOGIES",
    "TOPOLOGY_PARAMS",
    "LoadedGraph",
    "Network",
    "SpectralSummary",
    "build_graph",
    "check_graph",
    "consensus_rounds",
    "diameter_text",
    "load_graph",
    "make_network",
    "mixing_matrix",
    "save_graph_json",
    "shipped_path",
    "spectral_summary",
    "summary_text",
    "validate_mixing",
]

SHIPPED_DIR: Path = Path(__file__).resolve().parent / "files"
"""Folder of the topology files shipped with the package."""

SHIPPED_TOPOLOGIES: tuple[str, ...] = tuple(sorted(
    p.stem for p in SHIPPED_DIR.glob("*") if p.suffix.lower() in FILE_FORMATS
))
"""Names of the shipped topology files (usable as ``topology`` without a path)."""

EXPLICIT_MIXING: tuple[str, ...] = ("explicit", "file")
"""``mixing`` values meaning "use the file's own W"."""


def shipped_path(name: str) -> Path:
    """Path of the shipped topology file called ``name`` (e.g. ``'paper-ring4'``)."""
    for p in sorted(SHIPPED_DIR.glob(f"{name}.*")):
        if p.suffix.lower() in FILE_FORMATS:
            return p
    raise ConfigError(f"topology: no shipped topology file {name!r}; shipped: "
                      f"{', '.join(SHIPPED_TOPOLOGIES)}", field="topology")


def _resolve_file(topology: str | Path) -> Path | None:
    """The file ``topology`` refers to, or ``None`` for a generated topology name."""
    if isinstance(topology, Path):
        return topology
    if not isinstance(topology, str) or topology in TOPOLOGIES:
        return None
    p = Path(topology)
    if p.suffix or p.is_file() or "/" in topology or "\\" in topology:
        if not p.exists() and p.name == topology and (SHIPPED_DIR / p.name).is_file():
            return SHIPPED_DIR / p.name  # e.g. 'paper-ring4.json' with no such local file
        return p
    if topology in SHIPPED_TOPOLOGIES:
        return shipped_path(topology)
    return None


def _check_agents(agents: object) -> int | None:
    if agents is None:
        return None
    if isinstance(agents, bool) or not isinstance(agents, (int, np.integer)):
        raise ConfigError(f"agents: must be an integer >= 2, got {agents!r}", field="agents")
    return int(agents)


_Built = tuple[nx.Graph, np.ndarray | sp.csr_array, str, str, str]
"""``(graph, W, name, rule, field)``: a graph, its mixing matrix, the topology's name, the rule that
gave ``W`` and the field that validation errors name."""


def _generated(topology: str | Path, m: int | None, mixing: str | None, seed: SeedLike,
               params: Mapping[str, Any] | None) -> _Built:
    """Build a generated topology and its ``W`` by a rule (sizes checked before allocating)."""
    name = check_topology_name(topology, extra=SHIPPED_TOPOLOGIES)
    rule = mixing or "metropolis"
    if rule in EXPLICIT_MIXING:
        raise ConfigError(f"mixing: {rule!r} means the mixing matrix given in a "
                          f"topology file, but {name!r} is generated; known rules: "
                          f"{', '.join(MIXING_RULES)}", field="mixing")
    if m is not None and m >= 2:  # before the graph is built: its size and W's
        cause = f"agents = {m}"
        edges = edge_estimate(name, m, params)
        check_needs(graph_needs(m, edges, cause) + sparse_matrix_needs(m, edges, cause),
                    advice="use fewer agents", field="agents")
    graph = build_graph(name, m, seed=seed, params=params)
    check_needs(sparse_matrix_needs(graph.number_of_nodes(), graph.number_of_edges(),
                                    f"topology = {name!r} with "
                                    f"{graph.number_of_nodes()} agents"),
                advice="use fewer agents", field="topology")
    return graph, mixing_matrix(graph, rule), name, rule, "mixing"


def _from_file(path: Path, m: int | None, mixing: str | None,
               params: Mapping[str, Any] | None) -> _Built:
    """Load a topology file and take its own ``W`` or compute one by a rule."""
    if params:
        raise ConfigError(f"params: {dict(params)!r} is not allowed with a topology "
                          f"file ({str(path)!r}); parameters apply to generated topologies",
                          field="params")
    with renamed_fields({"path": "topology"}):
        loaded = load_graph(path)
    graph, name = loaded.graph, loaded.name
    n_nodes = graph.number_of_nodes()
    if m is not None and m != n_nodes:
        raise ConfigError(f"agents: {m} does not match the {n_nodes} nodes of "
                          f"{str(path)!r}; omit agents or set it to {n_nodes}", field="agents")
    check_needs(sparse_matrix_needs(n_nodes, graph.number_of_edges(),
                                    f"the {n_nodes}-node graph of {str(path)!r}"),
                advice="use a smaller graph")
    rule = mixing or ("explicit" if loaded.W is not None else "metropolis")
    if rule in EXPLICIT_MIXING:
        if loaded.W is None:
            raise ConfigError(f"mixing: {rule!r} needs a file with mixing weights, "
                              f"but {str(path)!r} has none; choose a rule: "
                              f"{', '.join(MIXING_RULES)}", field="mixing")
        return graph, loaded.W, name, "explicit", "topology"
    check_graph(graph, field="topology")
    return graph, mixing_matrix(graph, rule), name, rule, "mixing"


def make_network(topology: str | Path, *, agents: int | None = None, mixing: str | None = None,
                 seed: SeedLike = None, params: Mapping[str, Any] | None = None) -> Network:
    """Build or load a graph, attach a validated mixing matrix and return a :class:`Network`.

    Parameters
    ----------
    topology : str or Path
        A generated topology (one of :data:`TOPOLOGIES`, see
        :func:`~dpgossip.topology.builders.build_graph`), the name of a shipped file (one of
        :data:`SHIPPED_TOPOLOGIES`, e.g. ``'paper-ring4'``), or a path to a ``.json``,
        ``.graphml``, ``.edgelist`` or ``.txt`` file (see :mod:`dpgossip.topology.io`). A
        :class:`~pathlib.Path`, a string with an extension or a slash, or the name of an
        existing file is read as a file; a generated topology name always wins over a file of the
        same name without extension, and a bare file name such as ``'paper-ring4.json'`` that
        does not exist locally falls back to the shipped file of that name.
    agents : int, optional
        Number of agents ``m >= 2``. Required for generated topologies (except ``grid``/``torus``
        with both ``rows`` and ``cols``); for a file it must equal the file's node count if given.
    mixing : str, optional
        A rule of :data:`MIXING_RULES`, or ``'explicit'``/``'file'`` for the file's own ``W``.
        Default: ``'explicit'`` for a file that has weights, else ``'metropolis'``. Naming a rule
        for a file with weights recomputes ``W`` from the file's graph.
    seed : int, SeedSequence, numpy Generator or None
        Randomness for random graph families.
    params : mapping, optional
        Topology parameters; not allowed with a file.

    Returns
    -------
    Network
        Frozen graph (``networkx.freeze``) and validated ``W`` (errors about the file's own ``W`` name
        ``topology``, about a computed one ``mixing``).

    Raises
    ------
    ConfigError
        For any invalid input; the message names the parameter (``agents``, ``params.rows``, ...;
        :attr:`ConfigError.field`), the value and what is allowed.
    """
    m = _check_agents(agents)
    params = check_params_mapping(params) or None
    check_seed_like(seed)
    if mixing is not None:
        check_rule_name(mixing, extra=EXPLICIT_MIXING)
    path = _resolve_file(topology)
    if path is None:
        graph, W, name, rule, field = _generated(topology, m, mixing, seed, params)
    else:
        graph, W, name, rule, field = _from_file(path, m, mixing, params)
    try:
        validate_mixing(graph, W, field=field)
    except ConfigError as exc:
        diag = W.diagonal()
        if rule == "best_constant" and float(np.min(diag)) < 0:
            i = int(np.argmin(diag))
            raise ConfigError(f"{exc} (rule 'best_constant' gives W = I - a L with diagonal "
                              f"1 - a d_i, negative at agent {i} of degree {graph.degree(i)}; "
                              "use 'metropolis' or 'fastest' on this graph)",
                              field=exc.field) from None
        raise
    return Network(graph=nx.freeze(graph), W=W, name=name, mixing=rule, _validated=True)


def diameter_text(graph: nx.Graph, *, exact: bool | None = None) -> str:
    """The graph's diameter, exact or bounded.

    Exact (``nx.diameter``, all-pairs BFS, ``O(m |E|)``) when ``exact`` is true, or when it is
    ``None`` and ``m <= DENSE_MAX_AGENTS``. Otherwise two BFS (``O(|E|)`` each): the eccentricity
    ``e_0`` of node 0, then ``e_u`` of a node ``u`` farthest from it; ``max(e_0, e_u) <= diameter
    <= 2 min(e_0, e_u)`` (every eccentricity ``e`` satisfies ``e <= diam <= 2 e``).
    """
    check_graph(graph)
    m = graph.number_of_nodes()
    if exact or (exact is None and m <= DENSE_MAX_AGENTS):
        return str(nx.diameter(graph))
    A = adjacency_csr(graph)
    d0 = csgraph.shortest_path(A, unweighted=True, indices=0, directed=False)
    u = int(np.argmax(d0))
    du = csgraph.shortest_path(A, unweighted=True, indices=u, directed=False)
    e0, eu = int(d0.max()), int(du.max())
    lo, hi = max(e0, eu), 2 * min(e0, eu)
    if lo == hi:
        return f"{lo} (two BFS: bounds meet)"
    return f"between {lo} and {hi} (two BFS, not exact above {DENSE_MAX_AGENTS} agents)"


def summary_text(network: Network, *, exact_diameter: bool | None = None) -> str:
    """Short multi-line description of a network and the spectral properties of its ``W``.

    Lists name, nodes, edges, degree min/mean/max, diameter (:func:`diameter_text`: exact up to
    ``DENSE_MAX_AGENTS`` agents or when ``exact_diameter``, else bounds), mixing rule, SLEM
    ``||W - 11^T/m||_2``, spectral gap ``1 - SLEM`` and the rounds ``c`` with ``SLEM^c <= tol`` for
    ``tol = 1e-3, 1e-6, 1e-9`` (:func:`spectral_summary`: dense, or Lanczos with its error bound).
    """
    if not isinstance(network, Network):
        raise ConfigError(f"network must be a dpgossip.topology.Network, got {network!r}",
                          field="network")
    g = network.graph
    degrees = np.fromiter((d for _, d in g.degree()), dtype=np.int64, count=network.m)
    s = spectral_summary(network.W)
    rounds = " / ".join(str(s.rounds_for(t)) for t in (1e-3, 1e-6, 1e-9))
    how = "" if s.method == "dense" else f" (Lanczos, error <= {s.error_bound:.1g})"
    rows = [
        ("name", network.name),
        ("nodes", str(g.number_of_nodes())),
        ("edges", str(g.number_of_edges())),
        ("degree", f"min {degrees.min()}, mean {np.mean(degrees):.3g}, max {degrees.max()}"),
        ("diameter", diameter_text(g, exact=exact_diameter)),
        ("mixing", network.mixing),
        ("SLEM", f"{s.slem:.6g}{how}"),
        ("spectral gap", f"{s.spectral_gap:.6g}"),
        ("rounds to 1e-3, 1e-6, 1e-9", rounds),
    ]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)
