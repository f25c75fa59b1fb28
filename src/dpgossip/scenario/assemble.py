"""The results folder of a finished sweep, assembled from its point files in point order.

Files (all written atomically; ``summary.json`` last, so its presence marks a finished run):

``config.resolved.json``
    The validated configuration with every default filled (written before the first point runs, in
    the staging folder: :mod:`~dpgossip.scenario.staging`).
``runs.csv``
    One row per point and repeat: axis columns (dots replaced by ``_``), network, data and protocol
    descriptors, final metrics, ``status`` and ``status_reason`` (:mod:`dpgossip.scenario.status`),
    the engine's summary, the LDP baseline when enabled, and ``point``.
``iterations.csv``
    One row per point, repeat, component and iteration ``t = 0..T``: ``error = sin(u_l, q_l^(t))``.
``<table>.csv``
    Extra tables written by registered sections (e.g. the privacy auditor).
``points.csv``
    One row per point: ``point``, ``hash`` (its point file), ``network`` (its file in ``networks/``) and
    the axis values.
``summary.json``
    Mean, standard deviation and 95 % Student-t interval of every metric per point (over the finite
    values), how many runs ended in each status (in all, ``statuses``, and per point, ``status``; see
    :mod:`dpgossip.scenario.status`), the resolved configuration, the axes and zip groups, seed
    entropy, library versions and the list of files.
``timing.json``
    Wall-clock seconds per point and in total, and which points were resumed (kept out of
    ``summary.json`` so that a resumed run's summary equals an uninterrupted run's).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from dpgossip.scenario.expand import Point
from dpgossip.scenario.results import PointResult
from dpgossip.scenario.staging import foreign
from dpgossip.scenario.status import status_counts
from dpgossip.scenario.store import write_csv, write_json
from dpgossip.scenario.summary import library_versions, summarise

__all__ = ["FINAL_FILES", "METRICS", "assemble", "stale_outputs", "write_resolved_config", "axis_column"]

FINAL_FILES: tuple[str, ...] = (
    "runs.csv",
    "iterations.csv",
    "points.csv",
    "timing.json",
    "summary.json",
)
"""Files written when a sweep finishes (besides extra tables and plots)."""

METRICS: tuple[str, ...] = ("error", "subspace_distance", "captured_energy", "ldp_error")
"""Metrics summarised per point when present."""

SEEDING = (
    "repeat k of every point uses SeedSequence(seed, spawn_key=(k,)) (spawned per agent); the LDP "
    "baseline of repeat k uses SeedSequence(seed, spawn_key=(k, 1)); random graphs, synthetic data and "
    "random partitions use SeedSequence(seed, spawn_key=(2**31,)), the same for every point"
)


def axis_column(path: str) -> str:
    """Column name of an axis in the tidy tables: dots replaced by underscores."""
    return path.replace(".", "_")


def _point_stats(runs: list[dict[str, Any]], axes: list[str],
                 keys: Mapping[int, str]) -> list[dict[str, Any]]:
    """Summary statistics of every point's runs, with its hash and status counts."""
    metrics = [m for m in METRICS if any(m in r for r in runs)]
    stats = summarise(runs, ["point", *(axis_column(a) for a in axes)], metrics)
    by_point: dict[Any, list[dict[str, Any]]] = {}
    for r in runs:
        by_point.setdefault(r["point"], []).append(r)
    for entry in stats:
        entry["hash"] = keys[entry["point"]]
        entry["status"] = status_counts(by_point.get(entry["point"], []))
    return stats


def assemble(
    out_dir: Path,
    config: Mapping[str, Any],
    points: Sequence[Point],
    results: Mapping[str, PointResult],
    networks: Mapping[int, str],
    keys: Mapping[int, str],
    timing: Mapping[str, Any],
) -> list[str]:
    """Write the tidy tables, ``points.csv``, ``timing.json`` and ``summary.json``.

    Parameters
    ----------
    out_dir
        Results folder.
    config
        Resolved configuration of the scenario.
    points
        The sweep's points, in order.
    results
        Result of each point, by key.
    networks
        Network file stem of each point index.
    keys
        Key (point file name) of each point index.
    timing
        Run-level timing fields for ``timing.json``.

    Returns
    -------
    list of str
        Names of the files written, relative to ``out_dir``.
    """
    out_dir = Path(out_dir)
    tables: dict[str, list[dict[str, Any]]] = {"runs": [], "iterations": []}
    for p in points:
        for name, rows in results[keys[p.index]].tables.items():
            dest = tables.setdefault(name, [])
            dest.extend({**row, "point": p.index} for row in rows)
    written = []
    for name, rows in tables.items():
        write_csv(out_dir / f"{name}.csv", rows)
        written.append(f"{name}.csv")
    axes = list(points[0].axes) if points else []
    write_csv(out_dir / "points.csv",
              [{"point": p.index, "hash": keys[p.index], "network": networks.get(p.index, ""),
                **{axis_column(a): v for a, v in p.axes.items()}} for p in points])
    written.append("points.csv")
    write_json(
        out_dir / "timing.json",
        {
            **timing,
            "points": [
                {**results[keys[p.index]].to_row(), "point": p.index} for p in points
            ],
        },
    )
    written.append("timing.json")
    stats = _point_stats(tables["runs"], axes, keys)
    written.append("summary.json")
    write_json(
        out_dir / "summary.json",
        {
            "scenario": config["name"],
            "description": config.get("description", ""),
            "points": len(points),
            "repeats": config["repeats"],
            "axes": axes,
            "zip": (config.get("sweep") or {}).get("zip", []),
            "statuses": status_counts(tables["runs"]),
            "seed_entropy": config["seed"],
            "seeding": SEEDING,
            "versions": library_versions(),
            "files": written + [f"networks/{n}.json" for n in sorted(set(networks.values()))],
            "config": config,
            "results": stats,
        },
    )
    return written


def write_resolved_config(out_dir: Path, config: Mapping[str, Any]) -> None:
    """Write ``config.resolved.json`` (before the first point runs)."""
    write_json(Path(out_dir) / "config.resolved.json", config)


def stale_outputs(out_dir: Path, config: Mapping[str, Any], scenario: str) -> Callable[[str], bool]:
    """Which files of the results already in ``out_dir`` a run of ``config`` makes obsolete, as a
    predicate on paths relative to ``out_dir`` (for :meth:`~dpgossip.scenario.staging.StagedFolder.commit`).

    * The same configuration: none (the new run rewrites its own files; plots and other files stay).
    * Another configuration of ``scenario``: the files its ``summary.json`` and ``plots/plots.json``
      list, and those two files (never point files, which are keyed by hash, nor anything else).
    * Another scenario's results (replaced with ``--force``): everything.
    """
    out_dir = Path(out_dir)
    if foreign(out_dir, scenario):
        return lambda rel: True
    cfg_path = out_dir / "config.resolved.json"
    new = json.loads(json.dumps(config, default=str))
    try:
        old = json.loads(cfg_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return lambda rel: False
    if old == new:
        return lambda rel: False
    try:
        files = json.loads((out_dir / "summary.json").read_text(encoding="utf-8")).get("files", [])
    except (OSError, ValueError, AttributeError):
        files = []
    try:
        plots = json.loads((out_dir / "plots" / "plots.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        plots = []
    plots = [f"plots/{p}" for p in plots if isinstance(p, str)] if isinstance(plots, list) else []
    listed = {*(f for f in files if isinstance(f, str)), *plots, "plots/plots.json", "summary.json"}
    stale = frozenset(Path(f).as_posix() for f in listed)
    return lambda rel: rel in stale
