"""Sweep expansion: every list-valued setting is an axis; points are the cartesian product."""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dpgossip.scenario.schema import axis_paths

__all__ = ["Point", "expand", "point_hash"]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Point:
    """One point of a sweep: a fully scalar configuration and the axis values that define it."""

    index: int
    config: dict[str, Any]
    axes: dict[str, Any]

    @property
    def key(self) -> str:
        """Hash of the resolved configuration (identifies finished points when resuming)."""
        return point_hash(self.config)


def _get(config: Mapping[str, Any], path: str) -> Any:
    node: Any = config
    for part in path.split("."):
        node = node[part]
    return node


def _set(config: dict[str, Any], path: str, value: Any) -> None:
    parts = path.split(".")
    node = config
    for part in parts[:-1]:
        node = node[part]
    node[parts[-1]] = value


def expand(config: Mapping[str, Any]) -> list[Point]:
    """All points of a validated configuration, in row-major order of the axes as they appear."""
    paths = axis_paths(config)
    values = [_get(config, p) for p in paths]
    points = []
    for idx, combo in enumerate(itertools.product(*values) if paths else [()]):
        cfg = copy.deepcopy(dict(config))
        for p, v in zip(paths, combo, strict=True):
            _set(cfg, p, v)
        points.append(Point(index=idx, config=cfg, axes=dict(zip(paths, combo, strict=True))))
    return points


def point_hash(config: Mapping[str, Any]) -> str:
    """SHA-256 (first 16 hex digits) of the canonical JSON of a configuration, output settings excluded."""
    relevant = {k: v for k, v in config.items() if k not in ("output", "description")}
    text = json.dumps(relevant, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
