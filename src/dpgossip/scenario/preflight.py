"""Before a sweep runs: build every distinct network and dataset once, and save the networks.

Building them in the main process finds configuration errors that only show when a point is built (too
many agents for the data, a disconnected random graph, a bad file) before any worker starts, and with
the point that causes them; every point's settings are then checked on its network and data
(:func:`~dpgossip.scenario.point_checks.check_point`: a rank above ``min(n, d)``, a crash of a missing
agent, ...). All of this happens before the results folder is touched. Each distinct network is saved
as ``DIR/networks/<name>-<hash>.json`` (node-link JSON with its ``W``, readable by ``dpgossip topology
FILE``) for the report's topology drawings.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpgossip._threads import single_blas_thread
from dpgossip.errors import ConfigError
from dpgossip.scenario.expand import Point, point_hash
from dpgossip.scenario.point_checks import check_point
from dpgossip.scenario.problem import build_structure
from dpgossip.scenario.progress import axes_label

__all__ = ["KEEP_BYTES", "Structures", "preflight", "check_points", "structure_key", "input_file",
           "input_digests", "schedule_files"]


def _graph_table(config: dict[str, Any]) -> dict[str, Any]:
    """``[network]`` without ``schedule``, which does not change the graph or ``W``."""
    return {k: v for k, v in config["network"].items() if k != "schedule"}


def structure_key(config: dict[str, Any]) -> str:
    """Hash of what determines a point's network and data: seed, ``[network]`` (but its ``schedule``)
    and ``[data]``."""
    relevant = {"seed": config["seed"], "network": _graph_table(config), "data": config["data"]}
    text = json.dumps(relevant, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def _network_key(config: dict[str, Any]) -> str:
    text = json.dumps({"seed": config["seed"], "network": _graph_table(config)}, sort_keys=True,
                      default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:8]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Structures:
    """The distinct networks of a sweep.

    Attributes
    ----------
    stems
        Point index -> file stem of its network (``<name>-<hash>``).
    networks
        File stem -> (network, the ``[network]`` table and seed that built it).
    keys
        Point index -> the key its results are stored under: ``point_hash`` of its configuration, with
        the SHA-256 of every user file it reads (``data.source``, ``network.topology``, the matrices
        of a ``files`` schedule) mixed in, so
        that editing such a file invalidates the stored points.
    built
        Point index -> the network and data preflight built for it, kept (shared by the points with
        the same structure) while their data total at most :data:`KEEP_BYTES`, so that a run in this
        process does not build them a second time. Built on one BLAS thread, as a point's run builds
        them (:func:`~dpgossip.scenario.execute.run_task`), so they are the same bits.
    params
        Point index -> its protocol parameters resolved by the check
        (:func:`~dpgossip.scenario.point_checks.check_point`; not for a calibrated point), which its
        run uses instead of resolving them a second time (on one BLAS thread too: the same bits).
    """

    stems: dict[int, str]
    networks: dict[str, tuple[Any, dict[str, Any], int]]
    keys: dict[int, str]
    built: dict[int, Any] = field(default_factory=dict)
    params: dict[int, Any] = field(default_factory=dict)

    def save(self, out_dir: Path) -> list[Path]:
        """Write every network to ``out_dir/networks/<stem>.json`` (atomically); returns the paths."""
        from dpgossip.topology import save_graph_json, spectral_summary
        from dpgossip.topology.matrices import DENSE_MAX_AGENTS

        paths = []
        for stem, (network, net_cfg, seed) in self.networks.items():
            path = Path(out_dir) / "networks" / f"{stem}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.tmp")
            # the SLEM of a large network costs eigensolves (minutes on a 100,000-agent random
            # geometric graph); `dpgossip topology` reports it
            slem = (f"SLEM {spectral_summary(network.W).slem:.6g}" if network.m <= DENSE_MAX_AGENTS
                    else "SLEM not computed above 1000 agents (see dpgossip topology)")
            save_graph_json(
                network.graph,
                network.W,
                tmp,
                description=f"{network.name}: {network.m} agents, mixing {network.mixing!r}, "
                f"{slem}",
                source="dpgossip run: the network of a scenario",
                extra={
                    "network_name": network.name,
                    "mixing": network.mixing,
                    "scenario_network": net_cfg,
                    "seed": seed,
                },
            )
            tmp.replace(path)
            paths.append(path)
        return paths


KEEP_BYTES = 2**30
"""Data bytes of the structures :func:`preflight` keeps for the run (beyond it they are built again)."""


def preflight(points: Sequence[Point], base: Path | None) -> Structures:
    """Build the network and data of every distinct structure among ``points`` and check every point's
    settings on them (:func:`~dpgossip.scenario.point_checks.check_point`), before anything is written.

    Parameters
    ----------
    points
        The sweep's points.
    base
        Folder of the scenario file (relative data and topology paths).

    Returns
    -------
    Structures
        The distinct networks and the network of each point.

    Raises
    ------
    ConfigError
        From building a network or dataset, or a setting the point's run would refuse on them
        (a rank above ``min(n, d)``, a crash of a missing agent, ...), prefixed with the point.
    """
    digests: dict[Path, str] = {}
    keys: dict[int, str] = {}
    groups: dict[str, list[Point]] = {}
    for p in points:
        inputs = input_digests(p.config, base, digests)
        keys[p.index] = point_hash({**p.config, "inputs": inputs}) if inputs else p.key
        groups.setdefault(structure_key(p.config), []).append(p)
    stems: dict[int, str] = {}
    networks: dict[str, tuple[Any, dict[str, Any], int]] = {}
    by_point: dict[int, Any] = {}
    params: dict[int, Any] = {}
    kept_bytes = 0
    for group in groups.values():
        first = group[0]
        structure, resolved = _checked(group, base)
        network = structure.network
        stem = f"{_safe(network.name)}-{_network_key(first.config)}"
        networks.setdefault(stem, (network, first.config["network"], first.config["seed"]))
        keep = kept_bytes + structure.data.X.nbytes <= KEEP_BYTES
        kept_bytes += structure.data.X.nbytes if keep else 0
        for p in group:
            stems[p.index] = stem
            if resolved.get(p.key) is not None:
                params[p.index] = resolved[p.key]
            if keep:
                by_point[p.index] = structure
    return Structures(stems=stems, networks=networks, keys=keys, built=by_point, params=params)


def check_points(points: Sequence[Any], base: Path | None) -> None:
    """Build every distinct network and dataset of ``points`` and check each point's settings on them
    (:func:`~dpgossip.scenario.point_checks.check_point`), keeping nothing: the preflight of a command
    that builds its points again as it runs them (``dpgossip audit``).

    Parameters
    ----------
    points
        Objects with ``index``, ``key``, ``axes`` and ``config`` (a :class:`Point`, an audit task).

    Raises
    ------
    ConfigError
        As :func:`preflight`, prefixed with the point.
    """
    groups: dict[str, list[Any]] = {}
    for p in points:
        groups.setdefault(structure_key(p.config), []).append(p)
    for group in groups.values():
        _checked(group, base)


def _checked(group: Sequence[Any], base: Path | None) -> tuple[Any, dict[str, Any]]:
    """The structure shared by ``group`` (points with one network and dataset), built on one BLAS
    thread, after every distinct point of the group passed :func:`check_point`; and the protocol
    parameters it resolved, by point key."""
    point = group[0]
    try:
        with single_blas_thread():
            structure = build_structure(point.config, base)
            resolved: dict[str, Any] = {}
            for point in group:
                if point.key not in resolved:
                    resolved[point.key] = check_point(point.config, structure)
    except ConfigError as exc:
        prefix = f"point {point.index} ({axes_label(point.axes)}): " if point.axes else ""
        raise ConfigError(f"{prefix}{exc}", field=exc.field) from None
    return structure, resolved


def input_digests(config: Mapping[str, Any], base: Path | None,
                  cache: dict[Path, str] | None = None) -> dict[str, str]:
    """SHA-256 of every user file a point reads (``data.source``, ``network.topology``, the matrices
    of a ``files`` schedule), by the value that names it; ``cache`` (file -> digest) lets a sweep read
    each file once."""
    cache = {} if cache is None else cache
    inputs = {}
    named = [(value, input_file(value, base))
             for value in (config["data"]["source"], config["network"]["topology"])]
    # a schedule's files are read as given (relative to the working directory): hash those
    named += [(value, _existing(value, None)) for value in schedule_files(config)]
    for value, file in named:
        if file is not None:
            if file not in cache:
                cache[file] = hashlib.sha256(file.read_bytes()).hexdigest()
            inputs[str(value)] = cache[file]
    return inputs


def schedule_files(config: Mapping[str, Any]) -> list[str]:
    """The matrix files of a point's ``network.schedule`` with ``sampler = "files"`` (else none)."""
    table = config.get("network", {}).get("schedule")
    if not isinstance(table, Mapping) or table.get("sampler") != "files":
        return []
    files = table.get("files")
    return [f for f in files if isinstance(f, str) and f] if isinstance(files, list | tuple) else []


def input_file(value: Any, base: Path | None) -> Path | None:
    """The user file a ``data.source`` or ``network.topology`` value reads, if it names one (a path
    with an extension that exists, relative to the scenario's folder or the working directory)."""
    if not isinstance(value, str) or not Path(value).suffix:
        return None
    return _existing(value, base)


def _existing(value: str, base: Path | None) -> Path | None:
    """The file ``value`` names, relative to ``base`` or the working directory, if it exists."""
    for candidate in ([base / value] if base is not None else []) + [Path(value)]:
        if candidate.is_file():
            return candidate.resolve()
    return None


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", str(name)).strip("._") or "network"
