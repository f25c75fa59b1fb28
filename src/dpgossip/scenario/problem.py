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
from dpgossip.errors import renamed_fields
from dpgossip.protocols.ddppm.params import ProtocolParams, resolve_params
from dpgossip.protocols.registry import kind
from dpgossip.scenario.point import (
    DATA_FIELDS,
    NETWORK_FIELDS,
    PROTOCOL_FIELDS,
    PointSpec,
    ProtocolSpec,
)
from dpgossip.topology import Network, make_network

__all__ = ["Structure", "Problem", "make_structure", "make_problem", "build_structure",
           "resolve_problem", "build_problem", "resolve_path", "STRUCTURE_KEY"]

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


def make_structure(spec: PointSpec, base: Path | None = None) -> Structure:
    """Network and partitioned data of one point (no protocol parameters).

    Both draw from one structure stream, ``SeedSequence(seed, spawn_key=(2**31,))``: first the graph of
    a random topology, then a synthetic matrix and a random partition.
    """
    structure = np.random.default_rng(np.random.SeedSequence(spec.seed, spawn_key=(STRUCTURE_KEY,)))
    net, dat = spec.network, spec.data
    kwargs: dict[str, Any] = {"agents": net.agents, "seed": structure,
                              "params": None if net.params is None else dict(net.params)}
    if net.mixing is not None:
        kwargs["mixing"] = net.mixing
    with renamed_fields(NETWORK_FIELDS):
        network = make_network(resolve_path(net.topology, base), **kwargs)
    if dat.source is None:  # the kind draws its own data (schema: no [data] section)
        data = kind(spec.protocol.kind).own_data(network, spec.settings)
        return Structure(network=network, data=data)
    with renamed_fields(DATA_FIELDS):
        data = load_dataset(
            resolve_path(dat.source, base), agents=network.m, partition=dat.partition,
            sizes=None if dat.sizes is None else list(dat.sizes), min_rows=dat.min_rows,
            center=dat.center, standardize=dat.standardize, scale=dat.scale,
            synthetic=None if dat.synthetic is None else dict(dat.synthetic), rng=structure,
        )
    return Structure(network=network, data=data)


def make_problem(protocol: ProtocolSpec, structure: Structure) -> Problem:
    """The point's protocol parameters resolved on its structure (``alpha`` and the geometric schedule
    depend on the spectrum)."""
    with renamed_fields(PROTOCOL_FIELDS):
        params = resolve_params(
            structure.data, structure.network, iterations=protocol.iterations,
            consensus_steps=protocol.consensus_steps, rank=protocol.rank,
            alpha=dict(protocol.alpha) if isinstance(protocol.alpha, Mapping) else protocol.alpha,
            sigma_q=protocol.sigma_q, noise=protocol.noise,
        )
    return Problem(network=structure.network, data=structure.data, params=params)


def build_structure(cfg: Mapping[str, Any], base: Path | None = None) -> Structure:
    """:func:`make_structure` of a point's validated configuration."""
    return make_structure(PointSpec.from_config(cfg), base)


def resolve_problem(cfg: Mapping[str, Any], structure: Structure) -> Problem:
    """:func:`make_problem` of a point's validated configuration."""
    return make_problem(ProtocolSpec.from_config(cfg["protocol"]), structure)


def build_problem(cfg: Mapping[str, Any], base: Path | None = None) -> Problem:
    """:func:`build_structure` then :func:`resolve_problem`: for a point used alone (the CLI)."""
    return resolve_problem(cfg, build_structure(cfg, base))
