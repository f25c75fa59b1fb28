"""Small scenarios for the scenario and report tests (fast: Wine on a 4-agent ring, few iterations)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from dpgossip.scenario import Scenario
from dpgossip.scenario.schema import validate

SMALL: dict[str, Any] = {
    "name": "small",
    "seed": 5,
    "repeats": 3,
    "data": {"source": "wine"},
    "network": {"topology": "ring", "agents": 4},
    "protocol": {
        "iterations": 6,
        "consensus_steps": [1, 2, 4],
        "noise": {"schedule": "geometric", "scale": 0.05},
    },
    "output": {"plots": False},
}


def small(**sections: Any) -> Scenario:
    """The SMALL scenario with sections updated (a dict updates a section; anything else replaces)."""
    raw = copy.deepcopy(SMALL)
    for name, value in sections.items():
        if isinstance(value, dict) and isinstance(raw.get(name), dict):
            raw[name].update(value)
        else:
            raw[name] = value
    return Scenario(validate(raw), None, raw)


def read_bytes(folder: Path, *names: str) -> dict[str, bytes]:
    return {n: (folder / n).read_bytes() for n in names}
