"""``dpgossip calibrate``: the smallest noise scale of a scenario's first point whose audited worst case
meets a target, by the same function as ``[privacy] calibrate`` in a run.

:func:`plan_calibration` maps the scenario's ``privacy.calibrate`` table and the command's settings
(:class:`CalibrationTarget`, :class:`~dpgossip.scenario.privacy_overrides.PrivacyOverrides`) onto the
first point's configuration; :func:`calibrate_plan` calibrates it with
:func:`~dpgossip.scenario.privacy_section.calibrate_point`, which also calibrates every point of a run;
:func:`write_calibration` writes the result as JSON, atomically.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpgossip.errors import ConfigError
from dpgossip.privacy.calibrate import Calibration
from dpgossip.scenario import privacy_section
from dpgossip.scenario.expand import Point
from dpgossip.scenario.point import CalibrateSpec, PrivacySpec
from dpgossip.scenario.privacy_overrides import (
    PrivacyOverrides,
    audited_points,
    privacy_config,
    uses_engine,
)
from dpgossip.scenario.problem import build_structure
from dpgossip.scenario.store import json_safe, write_json

__all__ = ["CalibrationTarget", "CalibrationPlan", "CalibrationRun", "plan_calibration",
           "calibrate_plan", "calibration_record", "write_calibration"]

_NO_TARGET = ("calibrate: give the target with --epsilon E --delta D (or a [privacy] calibrate = "
              "{ epsilon = E, delta = D } table in the scenario)")


@dataclass(frozen=True, slots=True, kw_only=True)
class CalibrationTarget:
    """Keys of ``privacy.calibrate`` replaced (``None``: as the scenario's table says).

    Without a ``privacy.calibrate`` table in the scenario, ``epsilon`` and ``delta`` are both needed;
    with one, ``delta`` defaults to the table's, then to ``privacy.delta``.
    """

    epsilon: float | None = None
    delta: float | None = None
    family: str | None = None
    """``geometric``, ``constant`` or ``explicit`` (default: the table's, else ``geometric``)."""
    method: str | None = None
    """``exact`` or ``rdp`` (default: the table's, else ``exact``)."""

    def given(self) -> dict[str, Any]:
        """The keys given."""
        values = {"epsilon": self.epsilon, "delta": self.delta, "family": self.family,
                  "method": self.method}
        return {k: v for k, v in values.items() if v is not None}


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class CalibrationPlan:
    """The point to calibrate and its configuration (``privacy.calibrate`` resolved).

    Attributes
    ----------
    scenario, file
        The scenario's name and file.
    base
        Folder of the scenario file.
    point
        The point calibrated: the scenario's first.
    points
        How many points the scenario has (the others are not calibrated).
    config
        The point's configuration: ``[privacy]`` with the overrides and the resolved ``calibrate``
        table.
    engine
        The scenario sets ``[engine]`` conditions, which the audit does not model.
    """

    scenario: str
    file: Path | None
    base: Path | None
    point: Point
    points: int
    config: dict[str, Any]
    engine: bool

    @property
    def target(self) -> CalibrateSpec:
        """The resolved ``privacy.calibrate`` settings (``delta`` defaulted to ``privacy.delta``)."""
        target = PrivacySpec.from_config(self.config["privacy"]).calibrate
        assert target is not None
        return target


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class CalibrationRun:
    """A calibration and how long it took."""

    calibration: Calibration
    seconds: float


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
        ``[privacy]`` settings replaced; ``candidates`` also replaces ``privacy.calibrate.candidates``.

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
    cfg = privacy_config(p.config, overrides)
    priv = cfg["privacy"]
    table = priv.get("calibrate")
    raw = {k: v for k, v in (table or {}).items() if v is not None}
    raw.update(target.given())
    if target.family not in (None, "explicit"):
        raw.pop("values", None)  # base values belong to the explicit family only
    if overrides is not None and overrides.candidates is not None:
        raw["candidates"] = overrides.candidates
    if "epsilon" not in raw or (table is None and "delta" not in raw):
        raise ConfigError(_NO_TARGET)
    resolved = privacy_section.check_privacy("privacy", {"calibrate": raw})["calibrate"]
    config = {**cfg, "privacy": {**priv, "calibrate": resolved}}
    return CalibrationPlan(scenario=scenario.name, file=scenario.path, base=scenario.base, point=p,
                           points=len(points), config=config, engine=uses_engine(scenario.config))


def calibrate_plan(plan: CalibrationPlan, stage: Callable[[str], None] | None = None
                   ) -> CalibrationRun:
    """Build the point's network and data and calibrate its noise
    (:func:`~dpgossip.scenario.privacy_section.calibrate_point`, whose
    :class:`~dpgossip.privacy.calibrate.Calibration` carries the notes).

    Parameters
    ----------
    plan
        From :func:`plan_calibration`.
    stage
        Called with a sentence before each step.

    Raises
    ------
    ConfigError
        A point that cannot be built, ``protocol.rank > 1``, an explicit family without base values.
    """
    say = stage if stage is not None else (lambda _text: None)
    t0 = time.perf_counter()
    say(f"point {plan.point.index}: building the network and the data")
    structure = build_structure(plan.config, plan.base)
    say(f"point {plan.point.index}: searching the noise scale on {structure.data.m} agents (every "
        "step audits every pair; this can take minutes)")
    cal = privacy_section.calibrate_point(plan.config, structure)
    return CalibrationRun(calibration=cal, seconds=time.perf_counter() - t0)


def calibration_record(plan: CalibrationPlan, cal: Calibration) -> dict[str, Any]:
    """The JSON record of a calibration: the scenario, file, point and axes, the per-instance statement
    and :meth:`~dpgossip.privacy.calibrate.Calibration.to_dict` (strict JSON values)."""
    record = {"scenario": plan.scenario, "file": str(plan.file), "point": plan.point.index,
              "axes": plan.point.axes, "audit": privacy_section.PER_INSTANCE, **cal.to_dict()}
    return json_safe(json.loads(json.dumps(record, default=float)))


def write_calibration(path: str | Path, plan: CalibrationPlan, cal: Calibration) -> Path:
    """Write :func:`calibration_record` to ``path`` atomically; returns the path."""
    write_json(Path(path), calibration_record(plan, cal))
    return Path(path)
