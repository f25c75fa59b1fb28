"""What a point's run would refuse, found on its built network and data before anything is written.

Some settings are valid or not only once the network and the data are known: a rank above
``min(n, d)``, an explicit noise table whose length is not the number of iterations, a crash or a
straggler scheduled for an agent the network does not have, a link override on a missing edge, a
``ppm.block_rank`` above the data's columns, a calibration of a rank-2 point or with base values of
the wrong length. :func:`check_point` finds all of them on the point's
:class:`~dpgossip.scenario.problem.Structure` (built once by the preflight), by the same functions the
run calls (so the messages are the run's), without running a repeat or a calibration.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from dpgossip.errors import ConfigError, renamed_fields
from dpgossip.protocols.ddppm.params import NoiseSchedule, ProtocolParams
from dpgossip.protocols.registry import kind
from dpgossip.scenario.point import PointSpec
from dpgossip.scenario.problem import Structure, make_problem

__all__ = ["check_point", "check_engine", "engine_network", "check_calibration"]

def check_point(config: Mapping[str, Any], structure: Structure) -> ProtocolParams | None:
    """Raise the :class:`~dpgossip.errors.ConfigError` the point's run would raise on its settings.

    Returns the point's resolved protocol parameters, which its run uses instead of resolving them
    again (the same function on the same network and data: the same bits), or ``None`` for a
    calibrated point (its calibration replaces the noise, and the parameters are resolved after it).

    Checks, in the order a run meets them: the ``[engine]`` conditions against the network
    (:func:`check_engine`), the calibration target (:func:`check_calibration`), the protocol
    parameters resolved on the network and data
    (:func:`~dpgossip.scenario.problem.make_problem`: rank, alpha, noise schedule; with the noise a
    calibration would replace left out), and the kind's own checks on the data and network
    (``ProtocolKind.preflight``, e.g. ``ppm.block_rank <= d``).
    """
    spec = PointSpec.from_config(config)
    if spec.backend == "engine":
        check_engine(spec, structure)
    protocol = spec.protocol
    calibrated = check_calibration(spec)
    if calibrated:  # the calibrated schedule replaces the point's own noise table
        protocol = dataclasses.replace(protocol, noise=NoiseSchedule(kind="constant", scale=1.0))
    problem = make_problem(protocol, structure)
    preflight = kind(protocol.kind).preflight
    if preflight is not None:
        from dpgossip.scenario.protocol_point import point_inputs

        preflight(point_inputs(spec, problem.data, problem.network))
    return None if calibrated else problem.params


def check_engine(spec: PointSpec, structure: Structure) -> None:
    """The ``[engine]`` conditions parse and name only nodes and edges of the network the engine
    runs the point's protocol on (:func:`engine_network`)."""
    from dpgossip.engine import NetworkConditions
    from dpgossip.engine.conditions import condition_fields

    network = engine_network(spec.protocol.kind, structure.network, structure.data.m)
    with renamed_fields(condition_fields("engine")):
        NetworkConditions.from_mapping(dict(spec.engine)).check_network(network)


def engine_network(kind_name: str, network: Any, parties: int) -> Any:
    """The network the engine runs ``kind_name`` on: the kind's ``engine_network`` of the point's network
    and its ``parties`` agents (e.g. the star around a curator or an aggregator that the kind's engine
    builds), else the point's own network."""
    build = kind(kind_name).engine_network
    return network if build is None else build(network, parties)


def check_calibration(spec: PointSpec) -> bool:
    """Check the ``privacy.calibrate`` settings a calibration refuses before it searches (rank 1, base
    values of the explicit family, one per iteration); returns whether the point is calibrated."""
    priv = spec.privacy
    if priv is None or priv.calibrate is None or not kind(spec.protocol.kind).pair_audit:
        return False
    cal, proto = priv.calibrate, spec.protocol
    if proto.rank != 1:
        raise ConfigError(f"privacy.calibrate needs protocol.rank = 1, got {proto.rank}: "
                          "calibration searches the noise of a rank-1 run (a rank-r audit is "
                          "conditional on one realised run); calibrate rank 1, then audit rank r",
                          field="privacy.calibrate")
    if cal.family == "explicit":
        values = cal.values if cal.values is not None else (proto.noise.values or None)
        if values is None:
            raise ConfigError("privacy.calibrate: family \"explicit\" needs base values "
                              "(privacy.calibrate.values or protocol.noise.values)",
                              field="privacy.calibrate.values")
        if len(values) != proto.iterations:
            raise ConfigError(f"privacy.calibrate.values must have one value per iteration "
                              f"(protocol.iterations = {proto.iterations}), got {len(values)}",
                              field="privacy.calibrate.values")
    return True
