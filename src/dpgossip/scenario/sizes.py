"""Size checks of a sweep before anything is built: the number of points, and for every point agents
against rows and the memory its network, data, run, results and audit need.

:func:`check_sweep_size` runs on the validated configuration, before the sweep is expanded (a product of
axes can have ``10^8`` points); :func:`check_point_sizes` on the expanded points, before
:func:`~dpgossip.scenario.preflight.preflight` builds any network or dataset. Both raise
:class:`~dpgossip.errors.ConfigError` with the estimate in the message (see :mod:`dpgossip.resources`).

Estimates per point (``m`` agents, ``n x d`` data, ``T`` iterations, ``c`` gossip rounds, ``r`` components,
``R`` repeats; 8 bytes per number):

* network: the graph and the dense ``m x m`` mixing matrix with its working copies;
* data: the matrix and its preprocessed, partitioned and deflated copies, ``Xi`` (``n x n``) when
  ``n <= 2500`` (larger ``n`` uses an iterative eigensolver), the SVD factor ``n x min(n, d)``;
* run: the iterates and noise (``2 r (T + 1) n``), the gossip messages (``2 r T m d``; only kept by the
  engine and the privacy audit, the matrix backend's runs keep one iteration's) and the states of one
  gossip (``(c + 1) m d``);
* results: ``R r (T + 1)`` rows of ``iterations.csv`` at about 2 KiB each while they are held;
* privacy audit (``privacy.audit``, ``privacy.calibrate``, ``dpgossip audit``/``calibrate``): at least a
  dense ``N x K`` factor with ``N = n (T + 1)`` latent coordinates and ``K >= T d + n`` observed ones.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dpgossip.data import source_shape
from dpgossip.errors import ConfigError
from dpgossip.resources import FLOAT, Need, check_needs, graph_needs, sparse_matrix_needs
from dpgossip.scenario.expand import axis_groups_of
from dpgossip.scenario.problem import resolve_path
from dpgossip.scenario.progress import axes_label

__all__ = ["sweep_point_count", "check_sweep_size", "check_point_sizes", "point_needs"]

POINT_BYTES = 8 * 1024
"""Bookkeeping of one point held for the whole sweep (its configuration, axes, task, result)."""
ROW_BYTES = 2 * 1024
"""One row of ``iterations.csv`` or ``runs.csv`` while the results are held (measured: about 0.7 KiB
as a dict, plus its JSON and CSV copies)."""
_DENSE_XI = 2500


def _values(config: Mapping[str, Any], path: str) -> list[Any]:
    node: Any = config
    for part in path.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    return node if isinstance(node, list) else [node]


def _ints(config: Mapping[str, Any], path: str, default: int) -> list[int]:
    out = [int(v) for v in _values(config, path) if isinstance(v, int) and not isinstance(v, bool)]
    return out or [default]


def sweep_point_count(config: Mapping[str, Any]) -> tuple[int, list[tuple[str, ...]], list[int]]:
    """Number of points of a validated configuration without expanding it, its axis groups and their
    lengths."""
    groups = axis_groups_of(config)
    lengths = [len(_values(config, g[0])) for g in groups]
    return math.prod(lengths), groups, lengths


def check_sweep_size(config: Mapping[str, Any]) -> None:
    """Refuse a sweep whose points (and at least their smallest results) do not fit in memory, before
    it is expanded."""
    count, groups, lengths = sweep_point_count(config)
    if count <= 1:
        return
    repeats = min(_ints(config, "repeats", 1))
    rows = repeats * min(_ints(config, "protocol.rank", 1)) * (
        min(_ints(config, "protocol.iterations", 1)) + 1) + repeats
    axes = " x ".join(f"{'+'.join(g)} ({k})" for g, k in zip(groups, lengths, strict=True))
    check_needs([Need(f"the sweep has {count} points ({axes}), each holding at least {rows} rows "
                      "of results", count * (POINT_BYTES + rows * ROW_BYTES))],
                advice="sweep fewer values, or split the scenario")


def point_needs(config: Mapping[str, Any], base: Path | None = None, *,
                audit: bool = False) -> tuple[list[Need], int]:
    """Memory one point needs while it runs, and what its results occupy afterwards (bytes).

    Raises
    ------
    ConfigError
        When the data has fewer rows than there are agents (told before the graph is built).
    """
    net, data, proto = config["network"], config["data"], config["protocol"]
    m = net.get("agents")
    m = int(m) if isinstance(m, int) and not isinstance(m, bool) and m >= 2 else None
    params = net.get("params") if isinstance(net.get("params"), Mapping) else {}
    if m is None and net.get("topology") in ("grid", "torus"):
        rows, cols = params.get("rows"), params.get("cols")
        if all(isinstance(v, int) and not isinstance(v, bool) and v >= 2 for v in (rows, cols)):
            m = rows * cols
    source = data.get("source")
    shape = source_shape(resolve_path(source, base) if isinstance(source, str) else source,
                         data.get("synthetic"))
    if shape is not None and m is not None:
        from dpgossip.data.partition import check_rows_per_agent

        check_rows_per_agent(shape[0], m)
    T, c = int(proto["iterations"]), int(proto["consensus_steps"])
    r, repeats = int(proto.get("rank") or 1), int(config.get("repeats") or 1)
    needs: list[Need] = []
    if m is not None and isinstance(net.get("topology"), str):
        from dpgossip.topology import TOPOLOGIES, edge_estimate

        cause = f"network.agents = {m}"
        edges = edge_estimate(net["topology"], m, params) if net["topology"] in TOPOLOGIES else m
        if net["topology"] in TOPOLOGIES:
            needs += graph_needs(m, edges, cause)
        needs += sparse_matrix_needs(m, edges, cause)
    rows_held = repeats * (r * (T + 1) + 1)
    needs.append(Need(f"protocol.iterations = {T} with {repeats} repeat(s) and rank {r} gives "
                      f"{rows_held} rows of results", rows_held * ROW_BYTES))
    if shape is not None:
        n, d = shape
        needs.append(Need(f"the data, {n} x {d}, and its copies", FLOAT * n * d * (5 + r)
                          + FLOAT * n * min(n, d)))
        if n <= _DENSE_XI:
            needs.append(Need(f"the {n} x {n} consensus matrix Xi", 2 * FLOAT * n * n))
        needs.append(Need(f"protocol.iterations = {T} keeps every iterate and its noise: "
                          f"2 x {r} x {T + 1} x {n} numbers", 2 * FLOAT * r * (T + 1) * n))
        if m is not None and (audit or _audited(config) or config.get("backend") == "engine"):
            needs.append(Need(f"protocol.iterations = {T} keeps every gossip message: "
                              f"2 x {r} x {T} x {m} x {d} numbers", 2 * FLOAT * r * T * m * d))
        if m is not None:
            needs.append(Need(f"protocol.consensus_steps = {c} keeps every gossip round: "
                              f"{c + 1} x {m} x {d} numbers", FLOAT * (c + 1) * m * d))
        if (audit or _audited(config)) and _pair_audited(config):
            N, K = n * (T + 1), T * d + n
            needs.append(Need(f"the privacy audit with protocol.iterations = {T} and {n} rows needs "
                              f"a dense {N} x {K} view factor at least", FLOAT * (N * K + 2 * K * K)))
    return needs, POINT_BYTES + rows_held * ROW_BYTES


def _pair_audited(config: Mapping[str, Any]) -> bool:
    """Whether the point's kind is audited pair by pair (``ProtocolKind.pair_audit``), the audit whose
    dense view factor :func:`point_needs` counts; a kind with its own accountant and auditor (``ppm*``,
    ``capepca*``, ...) builds no such factor. An unknown kind keeps the estimate (it is refused later)."""
    from dpgossip.protocols.registry import find_kind

    kind = find_kind(config["protocol"].get("kind"))
    return kind is None or kind.pair_audit


def _audited(config: Mapping[str, Any]) -> bool:
    priv = config.get("privacy")
    return isinstance(priv, Mapping) and bool(priv.get("audit") or priv.get("calibrate"))


def check_point_sizes(points: Sequence[Any], base: Path | None = None, *, audit: bool = False) -> None:
    """Check every point (agents against rows, the memory of one point, the results of all points)
    before any network or dataset is built; the message names the point of a sweep."""
    held = 0
    seen: set[str] = set()
    for p in points:
        key = p.key
        try:
            needs, kept = point_needs(p.config, base, audit=audit)
            held += kept
            if key in seen:
                continue
            seen.add(key)
            check_needs(needs, advice="make the point smaller (fewer agents, rows, iterations, "
                        "rounds or repeats)")
        except ConfigError as exc:
            prefix = f"point {p.index} ({axes_label(p.axes)}): " if p.axes else ""
            raise ConfigError(f"{prefix}{exc}") from None
    if len(points) > 1:
        check_needs([Need(f"the results of all {len(points)} points", held)],
                    advice="sweep fewer values or fewer repeats, or split the scenario")
