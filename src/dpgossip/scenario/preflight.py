"""Before a sweep runs: build every distinct network and dataset once, and save the networks.

Building them in the main process finds configuration errors that only show when a point is built (too
many agents for the data, a disconnected random graph, a bad file) before any worker starts, and with
the point that causes them. Each distinct network is saved as ``DIR/networks/<name>-<hash>.json``
(node-link JSON with its ``W``, readable by ``dpgossip topology FILE``) for the report's topology
drawings.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpgossip.errors import ConfigError
from dpgossip.scenario.expand import Point, point_hash
from dpgossip.scenario.progress import axes_label

__all__ = ["KEEP_BYTES", "Structures", "preflight", "structure_key", "input_file", "input_digests"]


def structure_key(config: dict[str, Any]) -> str:
    """Hash of what determines a point's network and data: seed, ``[network]`` and ``[data]``."""
    relevant = {k: config[k] for k in ("seed", "network", "data")}
    text = json.dumps(relevant, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def _network_key(config: dict[str, Any]) -> str:
    text = json.dumps({k: config[k] for k in ("seed", "network")}, sort_keys=True, default=str)
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
        the SHA-256 of every user file it reads (``data.source``, ``network.topology``) mixed in, so
        that editing such a file invalidates the stored points.
    built
        Point index -> the network and data preflight built for it, kept (shared by the points with
        the same structure) while their data total at most :data:`KEEP_BYTES`, so that a run in this
        process does not build them a second time. Built on one BLAS thread, as a point's run builds
        them (:func:`~dpgossip.scenario.execute.run_task`), so they are the same bits.
    """

    stems: dict[int, str]
    networks: dict[str, tuple[Any, dict[str, Any], int]]
    keys: dict[int, str]
    built: dict[int, Any] = field(default_factory=dict)

    def save(self, out_dir: Path) -> list[Path]:
        """Write every network to ``out_dir/networks/<stem>.json`` (atomically); returns the paths."""
        from dpgossip.topology import save_graph_json, spectral_summary
        from dpgossip.topology.spectral import DENSE_MAX_AGENTS

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
    """Build the network and data of every distinct structure among ``points``.

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
        From building a network or dataset, prefixed with the first point that uses it.
    """
    from dpgossip._threads import single_blas_thread
    from dpgossip.scenario.problem import build_structure

    built: dict[str, str] = {}
    stems: dict[int, str] = {}
    networks: dict[str, tuple[Any, dict[str, Any], int]] = {}
    keys: dict[int, str] = {}
    digests: dict[Path, str] = {}
    kept: dict[str, Any] = {}
    by_point: dict[int, Any] = {}
    kept_bytes = 0
    for p in points:
        inputs = input_digests(p.config, base, digests)
        keys[p.index] = point_hash({**p.config, "inputs": inputs}) if inputs else p.key
        skey = structure_key(p.config)
        if skey not in built:
            try:
                with single_blas_thread():
                    structure = build_structure(p.config, base)
            except ConfigError as exc:
                prefix = f"point {p.index} ({axes_label(p.axes)}): " if p.axes else ""
                raise ConfigError(f"{prefix}{exc}") from None
            network = structure.network
            stem = f"{_safe(network.name)}-{_network_key(p.config)}"
            built[skey] = stem
            networks.setdefault(stem, (network, p.config["network"], p.config["seed"]))
            if kept_bytes + structure.data.X.nbytes <= KEEP_BYTES:
                kept[skey] = structure
                kept_bytes += structure.data.X.nbytes
        stems[p.index] = built[skey]
        if skey in kept:
            by_point[p.index] = kept[skey]
    return Structures(stems=stems, networks=networks, keys=keys, built=by_point)


def input_digests(config: Mapping[str, Any], base: Path | None,
                  cache: dict[Path, str] | None = None) -> dict[str, str]:
    """SHA-256 of every user file a point reads (``data.source``, ``network.topology``), by the value
    that names it; ``cache`` (file -> digest) lets a sweep read each file once."""
    cache = {} if cache is None else cache
    inputs = {}
    for value in (config["data"]["source"], config["network"]["topology"]):
        file = input_file(value, base)
        if file is not None:
            if file not in cache:
                cache[file] = hashlib.sha256(file.read_bytes()).hexdigest()
            inputs[str(value)] = cache[file]
    return inputs


def input_file(value: Any, base: Path | None) -> Path | None:
    """The user file a ``data.source`` or ``network.topology`` value reads, if it names one (a path
    with an extension that exists, relative to the scenario's folder or the working directory)."""
    if not isinstance(value, str) or not Path(value).suffix:
        return None
    for candidate in ([base / value] if base is not None else []) + [Path(value)]:
        if candidate.is_file():
            return candidate.resolve()
    return None


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", str(name)).strip("._") or "network"
