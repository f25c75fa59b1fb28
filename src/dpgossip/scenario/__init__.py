"""Scenario files: load and validate TOML, expand sweeps, run points, write tidy results."""

from __future__ import annotations

import sys
import time
import tomllib
from pathlib import Path
from typing import Any

from dpgossip.errors import ConfigError
from dpgossip.scenario.expand import Point, expand, point_hash
from dpgossip.scenario.runner import run_point
from dpgossip.scenario.schema import SCHEMA, validate
from dpgossip.scenario.store import write_csv, write_json
from dpgossip.scenario.summary import library_versions, summarise

__all__ = ["load_scenario", "run_scenario", "Scenario", "expand", "Point", "point_hash", "SCHEMA"]


class Scenario:
    """A validated scenario: its resolved configuration and the folder it was loaded from."""

    __slots__ = ("config", "path")

    def __init__(self, config: dict[str, Any], path: Path | None = None) -> None:
        self.config = config
        self.path = path

    @property
    def name(self) -> str:
        return str(self.config["name"])

    @property
    def base(self) -> Path | None:
        return self.path.parent if self.path is not None else None

    def points(self) -> list[Point]:
        return expand(self.config)


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario TOML file (errors name the file and the bad path)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"scenario file {str(path)!r} does not exist")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    try:
        return Scenario(validate(raw), path)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def run_scenario(scenario: Scenario, out: str | Path | None = None, *, quiet: bool = False) -> Path:
    """Run every point and repeat; write ``runs.csv``, ``iterations.csv``, ``summary.json`` and
    ``config.resolved.json`` into ``out`` (default ``results/<name>``). Returns the folder."""
    cfg = scenario.config
    out_dir = Path(out or cfg["output"].get("dir") or Path("results") / scenario.name)
    points = scenario.points()
    runs: list[dict[str, Any]] = []
    iters: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    for p in points:
        r, it = run_point(p.config, p.axes, scenario.base)
        for row in r + it:
            row["point"] = p.index
        runs.extend(r)
        iters.extend(it)
        if not quiet:
            print(
                f"[{p.index + 1}/{len(points)}] {p.axes or scenario.name}: "
                f"error {sum(x['error'] for x in r) / len(r):.4g}",
                file=sys.stderr,
            )
    write_csv(out_dir / "runs.csv", runs)
    write_csv(out_dir / "iterations.csv", iters)
    axes = [k.replace(".", "_") for k in points[0].axes]
    metrics = [
        m
        for m in ("error", "subspace_distance", "captured_energy", "ldp_error")
        if any(m in r for r in runs)
    ]
    write_json(out_dir / "config.resolved.json", cfg)
    write_json(
        out_dir / "summary.json",
        {
            "scenario": scenario.name,
            "points": len(points),
            "repeats": cfg["repeats"],
            "seed_entropy": cfg["seed"],
            "seconds": round(time.perf_counter() - t0, 3),
            "versions": library_versions(),
            "config": cfg,
            "results": summarise(runs, ["point", *axes], metrics),
        },
    )
    return out_dir
