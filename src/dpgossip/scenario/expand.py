"""Sweep expansion: every list-valued setting is an axis; points are the cartesian product of the axes,
except that the axes of a ``[sweep] zip`` group advance together (see :mod:`dpgossip.scenario.sweep`)."""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dpgossip.scenario.point import DEFAULT_KIND
from dpgossip.scenario.schema import axis_paths
from dpgossip.scenario.sweep import axis_groups

__all__ = ["Point", "expand", "point_hash", "axis_groups_of"]

"""``protocol.kind`` by default; left out of the point key (keys of stored results stay valid)."""


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


def axis_groups_of(config: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """The axis groups of a validated configuration: zip groups, and every other axis alone."""
    return axis_groups(axis_paths(config), (config.get("sweep") or {}).get("zip", []))


def expand(config: Mapping[str, Any]) -> list[Point]:
    """All points of a validated configuration.

    Row-major order over the axis groups, in the order their first axis appears in the configuration
    (the last group varies fastest); the axes of a zip group take their ``k``-th values together.
    Point configurations are fully scalar and carry no ``sweep`` table; ``Point.axes`` lists every axis
    in :func:`~dpgossip.scenario.schema.axis_paths` order.
    """
    paths = axis_paths(config)
    groups = axis_groups_of(config)
    columns = [list(zip(*(_get(config, p) for p in g), strict=True)) for g in groups]
    points = []
    for idx, combo in enumerate(itertools.product(*columns)):
        chosen = {
            p: v
            for g, vals in zip(groups, combo, strict=True)
            for p, v in zip(g, vals, strict=True)
        }
        cfg = copy.deepcopy({k: v for k, v in config.items() if k != "sweep"})
        for p in paths:
            _set(cfg, p, chosen[p])
        points.append(Point(index=idx, config=cfg, axes={p: chosen[p] for p in paths}))
    return points


def point_hash(config: Mapping[str, Any]) -> str:
    """SHA-256 (first 16 hex digits) of the canonical JSON of a configuration, output settings excluded.

    ``protocol.kind = "ddppm"`` (the default) and ``network.schedule`` unset (``None``, the default)
    are left out, so that a point's key is the one it had before those settings existed and stored
    results resume.
    """
    relevant = {k: v for k, v in config.items() if k not in ("output", "description")}
    protocol = relevant.get("protocol")
    if isinstance(protocol, Mapping) and protocol.get("kind") == DEFAULT_KIND:
        # protocol.kind came after results were stored: its default leaves the key as it was
        relevant["protocol"] = {k: v for k, v in protocol.items() if k != "kind"}
    network = relevant.get("network")
    if isinstance(network, Mapping) and network.get("schedule", ...) is None:
        relevant["network"] = {k: v for k, v in network.items() if k != "schedule"}
    text = json.dumps(relevant, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
