"""The communication graph drawn with its mixing weights.

Small graphs (at most :data:`LABEL_EDGES` edges) get every ``W_ij`` as an edge label; larger ones show
the weights as edge widths (proportional to ``W_ij``). Node colour is the self weight ``W_ii``. The
layout follows the topology: a circle for rings, the lattice for grids and tori, the sampled positions
for random geometric graphs, a line for paths, else Kamada-Kawai (spring layout above 200 agents),
seeded so the drawing is reproducible.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import scipy.sparse as sp

from dpgossip.report.figures import new_figure, save

__all__ = ["plot_topology", "plot_network_file", "layout", "LABEL_EDGES"]

LABEL_EDGES = 24
"""Largest number of edges drawn with ``W_ij`` labels."""


def layout(
    graph: nx.Graph, name: str = "", params: dict[str, Any] | None = None
) -> dict[int, tuple[float, float]]:
    """Node positions for drawing ``graph`` (a topology called ``name`` built with ``params``)."""
    m = graph.number_of_nodes()
    pos_attr = nx.get_node_attributes(graph, "pos")
    if len(pos_attr) == m:
        return {int(i): (float(p[0]), float(p[1])) for i, p in pos_attr.items()}
    if name in ("ring", "paper-ring4", "complete"):
        return {i: (math.cos(math.pi / 2 - 2 * math.pi * i / m),
                    math.sin(math.pi / 2 - 2 * math.pi * i / m)) for i in range(m)}
    if name in ("grid", "torus"):
        from dpgossip.topology.builders import grid_shape

        params = params or {}
        try:
            rows, cols = grid_shape(m, name, rows=params.get("rows"), cols=params.get("cols"))
        except Exception:  # a grid whose shape cannot be recovered: fall back to a generic layout
            rows = cols = 0
        if rows * cols == m:
            return {i: (float(i % cols), -float(i // cols)) for i in range(m)}
    if name == "path":
        return {i: (float(i), 0.0) for i in range(m)}
    if m <= 200:
        return {int(k): (float(v[0]), float(v[1])) for k, v in nx.kamada_kawai_layout(graph).items()}
    return {int(k): (float(v[0]), float(v[1]))
            for k, v in nx.spring_layout(graph, seed=0).items()}


def plot_topology(
    graph: nx.Graph,
    W: np.ndarray,
    path: str | Path,
    *,
    name: str = "",
    params: dict[str, Any] | None = None,
    title: str | None = None,
) -> Path:
    """Draw ``graph`` with the weights of ``W`` and save it as PNG at ``path``.

    Parameters
    ----------
    graph
        Graph on ``0..m-1``.
    W
        Its mixing matrix.
    path
        PNG file to write.
    name, params
        Topology name and builder parameters (choose the layout).
    title
        Figure title (default: name, agents, edges and SLEM).
    """
    from dpgossip.topology.spectral import spectral_summary

    W = W if sp.issparse(W) else np.asarray(W, dtype=float)
    m = graph.number_of_nodes()
    pos = layout(graph, name, params)
    edges = sorted((min(u, v), max(u, v)) for u, v in graph.edges())
    weights = np.array([W[u, v] for u, v in edges]) if edges else np.zeros(0)
    size = min(11.0, max(4.8, 0.35 * math.sqrt(m) * 4))
    fig = new_figure(size + 1.2, size)
    ax = fig.subplots()
    wmax = float(weights.max()) if weights.size else 1.0
    label_edges = len(edges) <= LABEL_EDGES
    for (u, v), w in zip(edges, weights, strict=True):
        (x0, y0), (x1, y1) = pos[u], pos[v]
        width = 1.2 if label_edges else 0.4 + 3.6 * w / wmax
        ax.plot([x0, x1], [y0, y1], color="0.45", lw=width, zorder=1, solid_capstyle="round")
        if label_edges:
            ax.text((x0 + x1) / 2, (y0 + y1) / 2, f"{w:.3g}", fontsize=7, ha="center",
                    va="center", zorder=3,
                    bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85})
    xy = np.array([pos[i] for i in range(m)])
    diag = W.diagonal()
    node_size = max(40.0, min(420.0, 5000.0 / max(m, 1)))
    sc = ax.scatter(xy[:, 0], xy[:, 1], s=node_size, c=diag, cmap="Blues", vmin=0.0,
                    vmax=max(1e-9, float(diag.max())), edgecolors="0.2", linewidths=0.8, zorder=2)
    if m <= 64:
        for i in range(m):
            ax.text(xy[i, 0], xy[i, 1], str(i), fontsize=7 if m > 20 else 8, ha="center",
                    va="center", zorder=4, color="black" if diag[i] < 0.6 * diag.max() else "white")
    cbar = fig.colorbar(sc, ax=ax, shrink=0.7)
    cbar.set_label("self weight $W_{ii}$")
    ax.set_aspect("equal", adjustable="datalim")
    ax.margins(0.08)
    ax.set_axis_off()
    s = spectral_summary(W)
    if title is None:
        title = f"{name or 'network'}: {m} agents, {len(edges)} edges, SLEM {s.slem:.4f}"
    note = "edge labels: $W_{ij}$" if label_edges else r"edge width $\propto W_{ij}$"
    ax.set_title(f"{title}\n{note}", fontsize="medium")
    return save(fig, path)


def plot_network_file(file: str | Path, path: str | Path) -> Path:
    """Draw a network saved in a results folder (``networks/<stem>.json``)."""
    from dpgossip.topology.io import load_graph
    from dpgossip.topology.spectral import spectral_summary

    file = Path(file)
    loaded = load_graph(file)
    meta = json.loads(file.read_text(encoding="utf-8"))
    net_cfg = meta.get("scenario_network") or {}
    name = str(meta.get("network_name") or net_cfg.get("topology") or loaded.name)
    m = loaded.graph.number_of_nodes()
    W = loaded.W if loaded.W is not None else np.eye(m)
    title = (f"{name}: {m} agents, {loaded.graph.number_of_edges()} edges, mixing "
             f"{meta.get('mixing', '?')}, SLEM {spectral_summary(W).slem:.4f}")
    return plot_topology(loaded.graph, W, path, name=name, params=net_cfg.get("params"),
                         title=title)
