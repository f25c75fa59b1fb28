"""``dpgossip calibrate``: the smallest noise of a scenario's first point that meets a target, by the
calibration of the point's ``protocol.kind`` (:func:`~dpgossip.scenario.kind_commands.kind_commands`).

:func:`plan_calibration` maps the scenario's ``privacy.calibrate`` table and the command's settings
(:class:`~dpgossip.scenario.calibrate_command.CalibrationTarget`,
:class:`~dpgossip.scenario.privacy_overrides.PrivacyOverrides`) onto the first point's configuration;
:func:`calibrate_plan` calibrates it by its kind's calibration
(:mod:`~dpgossip.scenario.calibrate_command`). For a kind with its own accountant the target is
``--epsilon`` and ``--delta`` (default: the section's ``delta``), and the pair audit's settings
(``--family``, ``--method``, ``--search``, ``--view``) are refused, naming the kind.

This module sits above the table of kinds (:mod:`~dpgossip.scenario.kind_commands`), which refers to the
calibrations below it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from dpgossip.errors import ConfigError
from dpgossip.scenario import privacy_section
from dpgossip.scenario.calibrate_command import CalibrationPlan, CalibrationRun, CalibrationTarget
from dpgossip.scenario.kind_commands import commands_for
from dpgossip.scenario.privacy_overrides import (
    PrivacyOverrides,
    audited_points,
    privacy_config,
    uses_engine,
)

__all__ = ["plan_calibration", "calibrate_plan"]

_NO_TARGET = ("calibrate: give the target with --epsilon E --delta D (or a [privacy] calibrate = "
              "{ epsilon = E, delta = D } table in the scenario)")


def plan_calibration(scenario: Any, *, target: CalibrationTarget | None = None,
                     overrides: PrivacyOverrides | None = None) -> CalibrationPlan:
    """The first point of ``scenario`` with its ``privacy.calibrate`` table as ``target`` and
    ``overrides`` change it, validated like the scenario's own (messages name
    ``privacy.calibrate.family``, ...).

    Parameters
    ----------
    scenario
        A :class:`~dpgossip.scenario.Scenario`.
    target
        Keys of ``privacy.calibrate`` replaced.
    overrides
        ``[privacy]`` settings replaced.

    Returns
    -------
    CalibrationPlan

    Raises
    ------
    ConfigError
        No target (neither given nor in the scenario), a bad value, a sweep or point too large.
    """
    target = target if target is not None else CalibrationTarget()
    points = audited_points(scenario)
    p = points[0]
    kind = p.config["protocol"]["kind"]
    common = dict(scenario=scenario.name, file=scenario.path, base=scenario.base, point=p,
                  points=len(points), engine=uses_engine(scenario.config), kind=kind)
    commands = commands_for(kind)
    if not commands.pair_audit:
        epsilon, delta = _kind_target(kind, commands.section, p.config, target, overrides)
        return CalibrationPlan(config=dict(p.config), epsilon=epsilon, delta=delta, **common)
    cfg = privacy_config(p.config, overrides)
    priv = cfg["privacy"]
    table = priv.get("calibrate")
    raw = {k: v for k, v in (table or {}).items() if v is not None}
    raw.update(target.given())
    if target.family not in (None, "explicit"):
        raw.pop("values", None)  # base values belong to the explicit family only
    if "epsilon" not in raw or (table is None and "delta" not in raw):
        raise ConfigError(_NO_TARGET)
    resolved = privacy_section.check_privacy(
        "privacy", {"search": priv["search"], "calibrate": raw})["calibrate"]
    config = {**cfg, "privacy": {**priv, "calibrate": resolved}}
    return CalibrationPlan(config=config, **common)


def _kind_target(kind: str, section: str, config: dict[str, Any], target: CalibrationTarget,
                 overrides: PrivacyOverrides | None) -> tuple[float, float]:
    """``(epsilon, delta)`` of a kind with its own accountant: ``target.epsilon`` (required) and
    ``target.delta`` or the section's ``delta``; the pair audit's settings are refused."""
    unused = [f"--{k}" for k in ("family", "method") if getattr(target, k) is not None]
    if overrides is not None:
        unused += [f"--{k}" for k in overrides.given()]
    if unused:
        raise ConfigError(f"{', '.join(unused)}: protocol.kind = {kind!r} is calibrated by its own "
                          f"accountant ([{section}] noise_multiplier), which has no such setting "
                          "(they belong to the pair audit of protocol.kind = 'ddppm'); leave them out")
    if target.epsilon is None:
        raise ConfigError(f"calibrate: give the target with --epsilon E (and --delta D; default "
                          f"{section}.delta = {config[section]['delta']:g}) for protocol.kind = "
                          f"{kind!r}")
    delta = target.delta if target.delta is not None else config[section]["delta"]
    return float(target.epsilon), float(delta)


def calibrate_plan(plan: CalibrationPlan, stage: Callable[[str], None] | None = None
                   ) -> CalibrationRun:
    """Calibrate the point's noise by its kind's calibration
    (:func:`~dpgossip.scenario.kind_commands.kind_commands`).

    Parameters
    ----------
    plan
        From :func:`plan_calibration`.
    stage
        Called with a sentence before each step and, for ``ddppm``, at each candidate noise scale and
        target (with an ETA).

    Raises
    ------
    ConfigError
        A point that cannot be built, ``protocol.rank > 1``, an explicit family without base values.
    """
    t0 = time.perf_counter()
    cal = commands_for(plan.kind).calibrate(plan, stage)
    return CalibrationRun(calibration=cal, seconds=time.perf_counter() - t0)
