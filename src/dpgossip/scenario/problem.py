"""What one scenario point computes on: its network, its data and its resolved protocol parameters.

A point builds its :class:`Structure` (network and partitioned data) once; its calibration, if any,
searches the noise on that structure; then its :class:`Problem` (the structure plus the resolved
parameters) is built once and every repeat and the audit use it.

Seeds: the graph of a random topology and a random partition draw from one structure stream,
``SeedSequence(seed, spawn_key=(2**31,))``, the same for every repeat.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpgossip.data import PartitionedData, load_dataset
from dpgossip.protocol import NoiseSchedule, ProtocolParams, resolve_params
from dpgossip.topology import Network, make_network

__all__ = ["Structure", "Problem", "build_structure", "resolve_problem", "build_problem", "resolve_path",
           "STRUCTURE_KEY"]

STRUCTURE_KEY = 2**31
"""Spawn key of the structure stream (random graph, synthetic data, random partition)."""


@dataclass(frozen=True, slots=True)
class Structure:
    """The network and the partitioned data of one point (no protocol parameters yet)."""

    network: Network
    data: PartitionedData


@dataclass(frozen=True, slots=True)
class Problem:
    """Everything a point's runs and audit compute on."""

    network: Network
    data: PartitionedData
    params: ProtocolParams


def resolve_path(value: str, base: Path | None) -> str:
    """``value`` relative to the scenario folder ``base`` when it names a file there, else as given."""
    if base is None:
        return value
    p = Path(value)
    if p.suffix and not p.is_absolute() and (base / p).exists():
        return str(base / p)
    return value


def build_structure(cfg: Mapping[str, Any], base: Path | None = None) -> Structure:
    """Network and partitioned data of one point (no protocol parameters).

    Both draw from one structure stream, ``SeedSequence(seed, spawn_key=(2**31,))``: first the graph of
    a random topology, then a synthetic matrix and a random partition.
    """
    structure = np.random.default_rng(
        np.random.SeedSequence(cfg["seed"], spawn_key=(STRUCTURE_KEY,))
    )
    net_cfg, data_cfg = cfg["network"], cfg["data"]
    kwargs: dict[str, Any] = {"agents": net_cfg.get("agents"), "seed": structure,
                              "params": net_cfg.get("params")}
    if net_cfg.get("mixing") is not None:
        kwargs["mixing"] = net_cfg["mixing"]
    network = make_network(resolve_path(net_cfg["topology"], base), **kwargs)
    standardize = data_cfg["standardize"]
    data = load_dataset(
        resolve_path(data_cfg["source"], base), agents=network.m,
        partition=data_cfg["partition"], sizes=data_cfg.get("sizes"),
        min_rows=data_cfg["min_rows"], center=data_cfg["center"],
        standardize=data_cfg["source"] != "synthetic" if standardize is None else standardize,
        scale=data_cfg["scale"], synthetic=data_cfg.get("synthetic"), rng=structure,
    )
    return Structure(network=network, data=data)


def resolve_problem(cfg: Mapping[str, Any], structure: Structure) -> Problem:
    """The point's protocol parameters resolved on its structure (``[protocol]``: ``alpha`` and the
    geometric schedule depend on the spectrum)."""
    proto = cfg["protocol"]
    noise_cfg = proto.get("noise") or {}
    noise = NoiseSchedule(
        kind=noise_cfg.get("schedule", "geometric"),
        scale=float(noise_cfg.get("scale", 1.0)),
        values=tuple(float(v) for v in noise_cfg.get("values", ())),
    )
    params = resolve_params(
        structure.data, structure.network, iterations=proto["iterations"],
        consensus_steps=proto["consensus_steps"], rank=proto["rank"], alpha=proto["alpha"],
        sigma_q=proto.get("sigma_q"), noise=noise,
    )
    return Problem(network=structure.network, data=structure.data, params=params)


def build_problem(cfg: Mapping[str, Any], base: Path | None = None) -> Problem:
    """:func:`build_structure` then :func:`resolve_problem`: for a point used alone (the CLI)."""
    return resolve_problem(cfg, build_structure(cfg, base))
