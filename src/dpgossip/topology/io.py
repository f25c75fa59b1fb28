"""Reading and writing communication graphs, optionally with an explicit mixing matrix.

Formats, chosen by the file extension:

``.json`` -- networkx node-link JSON
    A JSON object with a ``"nodes"`` list (objects with an ``"id"``) and an ``"edges"`` list
    (``"links"`` is accepted too; objects with ``"source"`` and ``"target"``), as written by
    :func:`networkx.node_link_data`. ``"directed": true`` is rejected. Optional extra top-level
    keys: ``"description"`` and ``"source"`` (free text, provenance). Explicit mixing weights,
    optional, in one of two forms (not both):

    * top-level ``"W"``: the full ``m x m`` matrix as a list of rows, rows and columns in the
      order of the ``"nodes"`` list;
    * edge attribute ``"weight"`` on *every* edge (``W_ij = W_ji = weight``) and optional node
      attribute ``"self_weight"`` (``W_ii``); a node without it gets ``W_ii = 1 - sum_j W_ij``.

``.edgelist`` or ``.txt`` -- edge list
    One edge per line, ``u v`` or ``u v weight``; ``#`` starts a comment; blank lines are
    skipped. Either every line has a weight or none does. A line ``u u w`` sets ``W_uu = w``;
    diagonals not given are filled as ``1 - sum_j W_uj``. Labels that are all integers are read
    as integers.

``.graphml`` -- GraphML
    Undirected graph; optional edge attribute ``weight`` (on every edge) and node attribute
    ``self_weight``, with the same meaning as in JSON.

Whatever the format, nodes are relabelled ``0..m-1`` in sorted order of their labels (numeric for
integers, natural order for strings such as ``n2 < n10``); an original label that differs from
its new index is kept in node attribute ``"label"``, and ``W`` is permuted to match. Self-loops
never appear in the returned graph. The weights are only parsed here; they are checked by
:func:`dpgossip.topology.validate.validate_mixing` when a network is made.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import scipy.sparse as sp

from dpgossip.errors import ConfigError
from dpgossip.topology.builders import canonical_graph
from dpgossip.topology.matrices import DENSE_MAX_AGENTS, as_csr
from dpgossip.topology.network import DENSE_W_MAX_AGENTS

__all__ = ["FILE_FORMATS", "LoadedGraph", "load_graph", "save_graph_json"]

FILE_FORMATS: dict[str, str] = {
    ".json": "node-link JSON",
    ".graphml": "GraphML",
    ".edgelist": "edge list",
    ".txt": "edge list",
}
"""Recognised file extensions and their formats."""

_ALLOWED = ("allowed formats: .json (node-link JSON), .graphml (GraphML), "
            ".edgelist or .txt (edge list)")


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class LoadedGraph:
    """A graph read from a file, relabelled to ``0..m-1``, with the file's mixing matrix if any."""

    graph: nx.Graph
    """Simple undirected graph on ``0..m-1`` (not yet checked for connectedness)."""
    W: sp.csr_array | None
    """The file's explicit mixing matrix in the new node order (sparse), or ``None``."""
    name: str
    """File stem, e.g. ``paper-ring4``."""
    path: str = ""
    """Path the graph was read from."""
    description: str = ""
    """The file's ``description`` text (JSON only)."""
    source: str = ""
    """The file's ``source``/provenance text (JSON only)."""
    labels: tuple[Hashable, ...] = field(default=())
    """Original label of each node ``0..m-1``."""

    def to_row(self) -> dict[str, object]:
        """Flat summary: name, path, agents, edges, whether the file has weights."""
        return {"name": self.name, "path": self.path, "agents": self.graph.number_of_nodes(),
                "edges": self.graph.number_of_edges(), "has_weights": self.W is not None}


def _err(path: Path, what: str) -> ConfigError:
    return ConfigError(f"path: cannot read {str(path)!r}: {what}", field="path")


# Not errors.check_number: a number read from a file is reported as an unreadable file (the path, then
# where in the file: "nodes[3].self_weight = 'x' is not a number"), not as a bad parameter value.
def _number(value: Any, path: Path, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _err(path, f"{where} = {value!r} is not a number")
    if not math.isfinite(float(value)):
        raise _err(path, f"{where} = {value!r} is not finite")
    return float(value)


def _hashable(value: Any) -> Hashable:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    return value


# ---------------------------------------------------------------------------------------------
# Parsers: each returns (raw graph, matrix or None, matrix order, edge weights, self weights, meta)
# ---------------------------------------------------------------------------------------------


class _Parsed:
    __slots__ = ("graph", "matrix", "order", "edge_w", "self_w", "description", "source")

    def __init__(self, graph: nx.Graph) -> None:
        self.graph = graph
        self.matrix: np.ndarray | None = None
        self.order: list[Hashable] = []
        self.edge_w: dict[tuple[Hashable, Hashable], float] = {}
        self.self_w: dict[Hashable, float] = {}
        self.description = ""
        self.source = ""


def _add_weight(parsed: _Parsed, u: Hashable, v: Hashable, w: float, path: Path,
                where: str) -> None:
    """Record ``W_uv = W_vu = w`` (or ``W_uu = w``), rejecting a second, different value."""
    if u == v:
        old = parsed.self_w.setdefault(u, w)
        if old != w:
            raise _err(path, f"{where}: node {u!r} has two self-weights, {old!r} and {w!r}")
        return
    key = (v, u) if (v, u) in parsed.edge_w else (u, v)
    old = parsed.edge_w.setdefault(key, w)
    if old != w:
        raise _err(path, f"{where}: edge ({u!r}, {v!r}) has two weights, {old!r} and {w!r}")


def _parse_json(path: Path, text: str) -> _Parsed:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _err(path, f"not valid JSON ({exc}); {_ALLOWED}") from None
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list):
        raise _err(path, "expected a node-link JSON object with a 'nodes' list")
    if data.get("directed", False):
        raise _err(path, "the file declares a directed graph; the communication graph must be "
                         "undirected")
    if "edges" in data and "links" in data:
        raise _err(path, "has both 'edges' and 'links'; give the edge list once")
    edges = data.get("edges", data.get("links", []))
    if not isinstance(edges, list):
        raise _err(path, "'edges' must be a list")
    graph = nx.Graph()
    parsed = _Parsed(graph)
    parsed.description = str(data.get("description", ""))
    parsed.source = str(data.get("source", ""))
    for k, node in enumerate(data["nodes"]):
        if not isinstance(node, dict) or "id" not in node:
            raise _err(path, f"nodes[{k}] is not an object with an 'id'")
        if isinstance(node["id"], bool) or not isinstance(node["id"], (int, str, list)):
            raise _err(path, f"nodes[{k}]: id {node['id']!r} must be an integer or a string")
        u = _hashable(node["id"])
        if u in graph:
            raise _err(path, f"nodes[{k}]: duplicate node id {u!r}")
        attrs = {a: v for a, v in node.items() if a not in ("id", "self_weight")}
        graph.add_node(u, **attrs)
        parsed.order.append(u)
        if "self_weight" in node:
            parsed.self_w[u] = _number(node["self_weight"], path, f"nodes[{k}].self_weight")
    weighted = [isinstance(e, dict) and "weight" in e for e in edges]
    for k, edge in enumerate(edges):
        if not isinstance(edge, dict) or "source" not in edge or "target" not in edge:
            raise _err(path, f"edges[{k}] is not an object with 'source' and 'target'")
        u, v = _hashable(edge["source"]), _hashable(edge["target"])
        for end in (u, v):
            if end not in graph:
                raise _err(path, f"edges[{k}] refers to unknown node {end!r}")
        if any(weighted) and not weighted[k]:
            raise _err(path, f"edges[{k}] ({u!r}, {v!r}) has no 'weight' but other edges do; "
                             "give a weight on every edge or on none")
        if weighted[k]:
            _add_weight(parsed, u, v, _number(edge["weight"], path, f"edges[{k}].weight"), path,
                        f"edges[{k}]")
        if u != v:
            attrs = {a: val for a, val in edge.items() if a not in ("source", "target", "weight")}
            graph.add_edge(u, v, **attrs)
    if "W" in data:
        if any(weighted) or parsed.self_w:
            raise _err(path, "gives both a top-level 'W' and 'weight'/'self_weight' attributes; "
                             "give the mixing weights in one form only")
        try:
            matrix = np.array(data["W"], dtype=float)
        except (TypeError, ValueError):
            raise _err(path, "'W' must be a list of lists of numbers") from None
        m = len(parsed.order)
        if matrix.shape != (m, m):
            raise _err(path, f"'W' has shape {matrix.shape} but the file has {m} nodes; "
                             f"W must be {m} x {m}, rows in the order of 'nodes'")
        parsed.matrix = matrix
    elif parsed.self_w and not parsed.edge_w:
        raise _err(path, "gives 'self_weight' on nodes but no edge 'weight'; give both or neither")
    return parsed


_INT = re.compile(r"[+-]?\d+")


def _parse_edgelist(path: Path, text: str) -> _Parsed:
    lines: list[tuple[int, str, str, str | None]] = []
    for n, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        tokens = line.split()
        if len(tokens) not in (2, 3):
            raise _err(path, f"line {n}: expected 'u v' or 'u v weight', got {raw.strip()!r}")
        lines.append((n, tokens[0], tokens[1], tokens[2] if len(tokens) == 3 else None))
    if not lines:
        raise _err(path, "the edge list has no edges")
    has_w = [w is not None for *_, w in lines]
    if any(has_w) and not all(has_w):
        n = lines[has_w.index(not has_w[0])][0]
        raise _err(path, f"line {n}: some lines have a weight and some do not; give a weight on "
                         "every line or on none")
    as_int = all(_INT.fullmatch(u) and _INT.fullmatch(v) for _, u, v, _ in lines)
    graph = nx.Graph()
    parsed = _Parsed(graph)
    for n, su, sv, sw in lines:
        u: Hashable = int(su) if as_int else su
        v: Hashable = int(sv) if as_int else sv
        graph.add_node(u)
        graph.add_node(v)
        if u != v:
            graph.add_edge(u, v)
        if sw is not None:
            try:
                w = float(sw)
            except ValueError:
                raise _err(path, f"line {n}: weight {sw!r} is not a number") from None
            if not math.isfinite(w):
                raise _err(path, f"line {n}: weight {sw!r} is not finite")
            _add_weight(parsed, u, v, w, path, f"line {n}")
    return parsed


def _parse_graphml(path: Path) -> _Parsed:
    try:
        raw = nx.read_graphml(path)
    except Exception as exc:  # noqa: BLE001 - the XML and GraphML readers raise many types
        raise _err(path, f"not valid GraphML ({type(exc).__name__}: {exc}); {_ALLOWED}") from None
    if raw.is_directed():
        raise _err(path, "the GraphML graph is directed (edgedefault='directed'); the "
                         "communication graph must be undirected")
    if raw.is_multigraph():
        raise _err(path, "the GraphML graph has parallel edges; the communication graph must be "
                         "simple")
    graph = nx.Graph()
    parsed = _Parsed(graph)
    for u, d in raw.nodes(data=True):
        graph.add_node(u, **{a: v for a, v in d.items() if a != "self_weight"})
        parsed.order.append(u)
        if "self_weight" in d:
            parsed.self_w[u] = _number(d["self_weight"], path, f"node {u!r} self_weight")
    edges = list(raw.edges(data=True))
    weighted = ["weight" in d for _, _, d in edges]
    for (u, v, d), has in zip(edges, weighted, strict=True):
        if any(weighted) and not has:
            raise _err(path, f"edge ({u!r}, {v!r}) has no 'weight' but other edges do; give a "
                             "weight on every edge or on none")
        if has:
            _add_weight(parsed, u, v, _number(d["weight"], path, f"edge ({u!r}, {v!r}) weight"),
                        path, f"edge ({u!r}, {v!r})")
        if u != v:
            graph.add_edge(u, v, **{a: val for a, val in d.items() if a != "weight"})
    if parsed.self_w and not parsed.edge_w:
        raise _err(path, "gives 'self_weight' on nodes but no edge 'weight'; give both or neither")
    return parsed


# ---------------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------------


def load_graph(path: str | Path) -> LoadedGraph:
    """Read a graph, and its mixing matrix if the file has one (formats: module docstring).

    Parameters
    ----------
    path : str or Path
        File ending in ``.json``, ``.graphml``, ``.edgelist`` or ``.txt``.

    Returns
    -------
    LoadedGraph
        Graph relabelled to ``0..m-1``; ``W`` is the file's matrix permuted to the new labels
        (``W[i, j] = W_file[labels[i], labels[j]]``), or ``None`` when the file has no weights.

    Raises
    ------
    ConfigError
        For a missing file, an unknown extension or an unparseable file; the message names the
        path and the allowed formats or the offending line, node or edge.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise ConfigError(f"path must be a file path (str or os.PathLike), got {path!r}",
                          field="path")
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in FILE_FORMATS:
        raise ConfigError(f"path: {str(p)!r} has unknown extension {p.suffix!r}; "
                          f"{_ALLOWED}", field="path")
    if not p.is_file():
        raise ConfigError(f"path: no such file {str(p)!r}; {_ALLOWED}", field="path")
    if suffix == ".graphml":
        parsed = _parse_graphml(p)
    else:
        try:
            text = p.read_text(encoding="utf-8-sig")  # a leading byte-order mark is dropped
        except (OSError, UnicodeDecodeError) as exc:
            raise _err(p, f"{exc}; {_ALLOWED}") from None
        parsed = _parse_json(p, text) if suffix == ".json" else _parse_edgelist(p, text)

    graph, labels = canonical_graph(parsed.graph, name=p.stem)
    for i, label in enumerate(labels):
        if label != i and "label" not in graph.nodes[i]:
            graph.nodes[i]["label"] = label
    return LoadedGraph(graph=graph, W=_weights(parsed, labels), name=p.stem, path=str(p),
                       description=parsed.description, source=parsed.source,
                       labels=tuple(labels))


def _weights(parsed: _Parsed, labels: list[Hashable]) -> sp.csr_array | None:
    """The parsed weights as a sparse ``W`` in the order of ``labels`` (``O(|E| + m)``).

    A file's dense ``W`` is permuted, ``W[i, j] = W_file[labels[i], labels[j]]``; edge weights give
    ``W_ij = W_ji = w``, and ``W_ii`` is the node's self-weight or ``1 - sum_{j != i} W_ij``.
    """
    m = len(labels)
    if parsed.matrix is not None:
        position = {u: k for k, u in enumerate(parsed.order)}
        perm = np.array([position[u] for u in labels], dtype=int)
        return as_csr(parsed.matrix[np.ix_(perm, perm)])
    if not parsed.edge_w:
        return None
    index = {u: i for i, u in enumerate(labels)}
    if m <= DENSE_MAX_AGENTS:  # the original dense fill: small files keep their exact weights
        W = np.zeros((m, m))
        for (u, v), w_uv in parsed.edge_w.items():
            W[index[u], index[v]] = W[index[v], index[u]] = w_uv
        fill = 1.0 - W.sum(axis=1)
        for i, u in enumerate(labels):
            W[i, i] = parsed.self_w.get(u, fill[i])
        return as_csr(W)
    pairs = np.array([(index[u], index[v]) for u, v in parsed.edge_w], dtype=np.int64)
    w = np.fromiter(parsed.edge_w.values(), dtype=float, count=len(parsed.edge_w))
    off = sp.csr_array((np.concatenate((w, w)), (np.concatenate((pairs[:, 0], pairs[:, 1])),
                                                 np.concatenate((pairs[:, 1], pairs[:, 0])))),
                       shape=(m, m))
    off.sort_indices()
    fill = 1.0 - np.add.reduceat(np.append(off.data, 0.0), np.minimum(off.indptr[:-1], off.nnz))
    fill[np.diff(off.indptr) == 0] = 1.0
    diag = np.array([parsed.self_w.get(u, fill[i]) for i, u in enumerate(labels)], dtype=float)
    return as_csr(off + sp.diags_array(diag, format="csr"))




def _jsonable(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _edge_lines(edge_list: list[dict], dump: Any) -> Iterator[str]:
    """One line per edge, as ``dump`` writes it; edges with only integer ends and a float weight are
    formatted directly (``json`` writes an int with ``str`` and a finite float with ``repr``: the same
    text, four times faster on 10^6 edges)."""
    simple = all(len(d) == 3 and "weight" in d for d in edge_list) and all(
        type(d["source"]) is int and type(d["target"]) is int and type(d["weight"]) is float
        and math.isfinite(d["weight"]) for d in edge_list)
    if not simple:
        return (f"    {dump(d)}" for d in edge_list)
    return (f'    {{"source": {d["source"]}, "target": {d["target"]}, "weight": {d["weight"]!r}}}'
            for d in edge_list)


def _edge_form(A: sp.csr_array, graph: nx.Graph, index: dict[Hashable, int]) -> bool:
    """Whether ``W`` fits the edge form: symmetric and nonzero only on the graph's edges and diagonal."""
    if (A != A.T).nnz:
        return False
    coo = A.tocoo()
    off = coo.row != coo.col
    m = np.int64(A.shape[0])
    ends = np.fromiter(chain.from_iterable((index[u], index[v]) for u, v in graph.edges()),
                       dtype=np.int64, count=2 * graph.number_of_edges()).reshape(-1, 2)
    r, c = coo.row[off].astype(np.int64), coo.col[off].astype(np.int64)
    # an unordered pair {i, j} as the number min * m + max: every stored (i, j) must be an edge
    return bool(np.isin(np.minimum(r, c) * m + np.maximum(r, c),
                        ends.min(axis=1) * m + ends.max(axis=1)).all())


def _weights_into(graph: nx.Graph, nodes: list[Hashable], W: object, node_list: list[dict],
                  edge_list: list[dict]) -> list[list[float]] | None:
    """Put ``W`` in the file: as edge ``weight`` and node ``self_weight`` attributes (edited in place)
    when it is symmetric and supported on the edges and the diagonal, else as dense rows (returned).

    The dense form is kept for matrices the edge form cannot hold (an asymmetric ``W``, or weight off
    the edges: files that :func:`~dpgossip.topology.validate.validate_mixing` must reject); it is
    refused above :data:`~dpgossip.topology.network.DENSE_W_MAX_AGENTS` nodes.
    """
    m = len(nodes)
    A = as_csr(W) if sp.issparse(W) else None
    shape = A.shape if A is not None else np.shape(np.asarray(W, dtype=float))
    if shape != (m, m):
        raise ConfigError(f"W: W has shape {shape} but the graph has {m} "
                          f"nodes; W must be {m} x {m}", field="W")
    A = as_csr(W) if A is None else A
    if not np.all(np.isfinite(A.data)):
        raise ConfigError("W: W has non-finite entries", field="W")
    index = {u: k for k, u in enumerate(nodes)}
    for d in node_list:
        d.pop("self_weight", None)
    for d in edge_list:
        d.pop("weight", None)
    if not _edge_form(A, graph, index):
        if m > DENSE_W_MAX_AGENTS:
            raise ConfigError(f"W: a {m}-node W that is not symmetric or has weight off the edges "
                              "can only be written densely, which is refused above "
                              f"{DENSE_W_MAX_AGENTS} nodes", field="W")
        return A.toarray().tolist()
    diag = A.diagonal()
    for d in node_list:
        d["self_weight"] = float(diag[index[d["id"]]])
    if edge_list:  # one vectorised lookup (element-wise W[i, j] cost minutes at 10^6 edges)
        i = np.fromiter((index[d["source"]] for d in edge_list), dtype=np.int64, count=len(edge_list))
        j = np.fromiter((index[d["target"]] for d in edge_list), dtype=np.int64, count=len(edge_list))
        for d, w in zip(edge_list, np.asarray(A[i, j]).ravel().tolist(), strict=True):
            d["weight"] = w
    return None


def save_graph_json(graph: nx.Graph, W: np.ndarray | None, path: str | Path, *,
                    description: str | None = None, source: str | None = None,
                    extra: Mapping[str, Any] | None = None) -> Path:
    """Write ``graph`` (and ``W``) as node-link JSON readable by :func:`load_graph`.

    The file has top-level keys ``description``/``source`` (when given), then ``directed``,
    ``multigraph``, ``graph``, ``nodes`` (one per line), ``edges`` (one per line) and, when ``W``
    is given, its weights. A symmetric ``W`` supported on the edges and the diagonal (every valid
    mixing matrix) is written as edge ``weight`` and node ``self_weight`` attributes, ``O(|E| + m)``
    in size; any other ``W`` (kept so that invalid matrices can be written for tests and read back
    to be rejected) as a top-level ``W``, one row per line, rows in the order of ``nodes``. Floats
    are written with ``repr`` precision, so ``W`` round-trips exactly. With ``W`` given, the graph's
    own ``weight``/``self_weight`` attributes are replaced; without it they are kept and will be
    read back as mixing weights.

    Returns
    -------
    Path
        The path written.
    """
    p = Path(path)
    if graph.is_directed() or graph.is_multigraph():
        raise ConfigError("graph: only simple undirected graphs can be saved", field="graph")
    nodes = list(graph.nodes)
    data = nx.node_link_data(graph, edges="edges")
    head: dict[str, Any] = {}
    if description is not None:
        head["description"] = description
    if source is not None:
        head["source"] = source
    head.update(extra or {})
    head.update({k: data[k] for k in ("directed", "multigraph", "graph")})
    node_list = [{"id": d["id"], **{k: v for k, v in d.items() if k != "id"}}
                 for d in data["nodes"]]
    edge_list = [{"source": d["source"], "target": d["target"],
                  **{k: v for k, v in d.items() if k not in ("source", "target")}}
                 for d in data["edges"]]
    rows: list[list[float]] | None = None
    if W is not None:
        rows = _weights_into(graph, nodes, W, node_list, edge_list)

    dump = json.JSONEncoder(default=_jsonable, allow_nan=False, ensure_ascii=False).encode  # made once

    parts = [f"  {dump(k)}: {dump(v)}" for k, v in head.items()]
    parts.append('  "nodes": [\n' + ",\n".join(f"    {dump(d)}" for d in node_list) + "\n  ]")
    parts.append('  "edges": [\n' + ",\n".join(_edge_lines(edge_list, dump)) + "\n  ]")
    if rows is not None:
        parts.append('  "W": [\n' + ",\n".join(f"    {dump(r)}" for r in rows) + "\n  ]")
    p.write_text("{\n" + ",\n".join(parts) + "\n}\n", encoding="utf-8")
    return p
