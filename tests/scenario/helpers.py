"""Small scenarios for the scenario and report tests (fast: Wine on a 4-agent ring, few iterations)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from dpgossip.errors import ConfigError
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
    kinds = raw["protocol"].get("kind", "ddppm")
    if "ddppm" not in (kinds if isinstance(kinds, list) else [kinds]) \
            and "noise" not in sections.get("protocol", {}):
        del raw["protocol"]["noise"]  # D-DP-PM's noise: another kind refuses it
    return Scenario(validate(raw), None, raw)


def read_bytes(folder: Path, *names: str) -> dict[str, bytes]:
    return {n: (folder / n).read_bytes() for n in names}


def scenario_error(folder: Path, toml: str) -> ConfigError:
    """The error a scenario user gets for ``toml`` (a scenario file in ``folder``): at load, or when its
    points' networks, data and parameters are built (what ``dpgossip run`` does before running)."""
    from dpgossip.scenario import load_scenario
    from dpgossip.scenario.problem import build_structure, resolve_problem

    path = folder / "scenario.toml"
    path.write_text(toml, encoding="utf-8")
    try:
        scenario = load_scenario(path)
        for point in scenario.points():
            resolve_problem(point.config, build_structure(point.config, scenario.base))
    except ConfigError as exc:
        return exc
    raise AssertionError(f"no ConfigError for {toml!r}")


def toml_scenario(*sections: str) -> str:
    """A small TOML scenario (Wine on a 4-agent ring) with ``sections`` added: each item is the text of
    one table (``"[network]\\ntopology = 'grid'"``), which replaces the default table of that name, or
    top-level keys (``'backend = "engine"'``)."""
    tables = {"data": '[data]\nsource = "wine"',
              "network": '[network]\ntopology = "ring"\nagents = 4',
              "protocol": "[protocol]\niterations = 3\nconsensus_steps = 1"}
    top, extra = ['name = "t"'], []
    for text in sections:
        name = text.split("]", 1)[0].lstrip("[")
        if not text.startswith("["):
            top.append(text)
        elif name in tables:
            tables[name] = text
        else:
            extra.append(text)
    return "\n".join([*top, *tables.values(), *extra]) + "\n"


def tiny_audit_toml(*, name: str = "tiny", consensus_steps: str = "1", rank: str | int | None = None
                    ) -> str:
    """The cheapest D-DP-PM pair-audit scenario, as TOML text (for CLI and folder tests, not search
    tests): 16 synthetic rows in 2 columns on a 4-agent ring, T = 2, the quickest search (one
    level), RDP only. ``consensus_steps`` and ``rank`` are TOML values (a list makes a sweep axis)."""
    rank_line = "" if rank is None else f"rank = {rank}\n"
    return f"""name = "{name}"
seed = 1
[data]
source = "synthetic"
standardize = false
synthetic = {{ n = 16, d = 2, spectrum = [1.0, 0.8] }}
[network]
topology = "ring"
agents = 4
[protocol]
iterations = 2
consensus_steps = {consensus_steps}
{rank_line}noise = {{ schedule = "constant", scale = 1.0 }}
[privacy]
search = "quick"
methods = ["rdp"]
epsilon = [50.0]
"""
