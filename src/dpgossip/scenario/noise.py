"""The TOML noise table (``protocol.noise``: ``schedule``, ``scale``, ``values``) as D-DP-PM's
:class:`~dpgossip.protocols.ddppm.params.NoiseSchedule`.

Validation (:mod:`~dpgossip.scenario.schema`) and the point specs (:mod:`~dpgossip.scenario.point`)
both read it; it imports no other module of the scenario layer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dpgossip.errors import renamed_fields
from dpgossip.protocols.ddppm.params import NoiseSchedule

__all__ = ["noise_fields", "noise_schedule"]


def noise_fields(path: str = "protocol.noise") -> dict[str, str]:
    """Fields of :class:`~dpgossip.protocols.ddppm.params.NoiseSchedule` -> the keys of the TOML noise
    table at ``path`` (``kind`` is written ``schedule`` there)."""
    return {"kind": f"{path}.schedule", "scale": f"{path}.scale", "values": f"{path}.values"}


def noise_schedule(table: Mapping[str, Any] | None, path: str = "protocol.noise") -> NoiseSchedule:
    """The :class:`~dpgossip.protocols.ddppm.params.NoiseSchedule` of a TOML noise table (absent:
    geometric, scale 1); the schedule validates it, and its errors name the table's keys under
    ``path``."""
    table = table or {}
    with renamed_fields(noise_fields(path)):
        return NoiseSchedule(kind=table.get("schedule", "geometric"), scale=table.get("scale", 1.0),
                             values=table.get("values", ()))
