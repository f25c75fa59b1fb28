"""Small cases on which every registered kind can run quickly (``ProtocolKind.example``).

:func:`small_inputs` builds a :class:`~dpgossip.protocols.registry.PointInputs` of the Wine data (178 x 13,
standardised, rows scaled into the unit ball) split equally over the agents of a ring with Metropolis
weights: no random draw, so the same case every time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dpgossip.data import load_dataset
from dpgossip.protocols.registry import PointInputs
from dpgossip.settings import Field
from dpgossip.topology import make_network

__all__ = ["small_inputs", "with_defaults"]


def with_defaults(fields: Mapping[str, Field], **given: Any) -> dict[str, Any]:
    """A section's settings: ``given``, and every other field's default."""
    return {key: given.get(key, f.default) for key, f in fields.items()}


def small_inputs(settings: Mapping[str, Any] | None = None, *, agents: int = 6, rank: int = 1,
                 iterations: int = 3, consensus_steps: int = 4) -> PointInputs:
    """The Wine data over a ring of ``agents`` agents, with the kind's section ``settings``."""
    network = make_network("ring", agents=agents)
    data = load_dataset("wine", agents=agents)
    return PointInputs(data=data, network=network, rank=rank, iterations=iterations,
                       consensus_steps=consensus_steps, settings=dict(settings or {}))
