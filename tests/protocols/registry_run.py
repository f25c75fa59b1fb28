"""Run an installed kind through dpgossip's registry on both backends and print what it gave, as JSON.

``python registry_run.py KIND ARGS_JSON``, run by tests/protocols/test_outside_kind.py in a subprocess
whose ``PYTHONPATH`` holds the installed package. It imports dpgossip only: the kind is found through
the entry points of the installed distributions, as a user's process would find it.
``ARGS_JSON``: ``data`` (a dataset name), ``topology``, ``agents``, ``consensus_steps``, ``seed``,
``settings`` (the kind's section), ``lossy`` (the ``[engine]`` table of the lossy run) and ``probe``
(the path of a scenario file of the kind with every setting at its default: ``scenario_error`` is
the message of the error its load raises, ``None`` when it loads).
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import entry_points
from typing import Any

import numpy as np

from dpgossip.data import load_dataset
from dpgossip.engine import NetworkConditions
from dpgossip.errors import ConfigError
from dpgossip.protocols.registry import ENTRY_POINT_GROUP, PointInputs, kind, kind_names
from dpgossip.topology import make_network


def _plain(value: Any) -> Any:
    """A column value as JSON can hold it."""
    if isinstance(value, np.generic):
        return value.item()
    return value


def scenario_error(path: str) -> str | None:
    """Whether the scenario layer takes the kind: the load's error message, or ``None``."""
    from dpgossip.scenario import load_scenario

    try:
        load_scenario(path)
    except ConfigError as exc:
        return str(exc)
    return None


def run(name: str, args: dict[str, Any]) -> dict[str, Any]:
    spec = kind(name)
    inputs = PointInputs(data=load_dataset(args["data"], agents=args["agents"]),
                         network=make_network(args["topology"], agents=args["agents"]), rank=1,
                         iterations=1, consensus_steps=args["consensus_steps"],
                         settings=args["settings"])
    point = spec.build(inputs)
    matrix = point.protocol.run(inputs.data, inputs.network, args["seed"])
    out: dict[str, Any] = {
        "kinds": list(kind_names()), "row": spec.to_row(),
        "entry_points": sorted(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)),
        "scenario_error": scenario_error(args["probe"]),
        "matrix": {"trajectory": matrix.trajectory.tolist(),
                   "agent_finals": matrix.agent_finals.tolist(),
                   "columns": {k: _plain(v) for k, v in point.columns(matrix.result, 0).items()}}}
    for links, table in (("ideal", {}), ("lossy", args["lossy"])):
        form = point.engine(NetworkConditions.from_mapping(table))
        record = form.run_engine(inputs.data, inputs.network, args["seed"])
        engine = form.protocol_run(record, inputs.data)
        out[links] = {"status": record.status, "lost_copies": record.summary.lost_copies,
                      "retransmissions": record.summary.retransmissions,
                      "trajectory": engine.trajectory.tolist(),
                      "agent_finals": engine.agent_finals.tolist(),
                      "view_residual": point.view_residual(record, inputs.data),
                      "columns": {k: _plain(v) for k, v in point.columns(engine.result, 0).items()}}
    return out


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1], json.loads(sys.argv[2]))))
