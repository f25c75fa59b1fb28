"""``dpgossip calibrate``: the smallest noise of a scenario's first point that meets a target, by the
calibration of the point's ``protocol.kind`` (:data:`~dpgossip.scenario.kind_commands.KIND_COMMANDS`).

``ddppm``: the smallest noise scale whose audited worst case meets the target, by the same function as
``[privacy] calibrate`` in a run. :func:`plan_calibration` maps the scenario's ``privacy.calibrate``
table and the command's settings (:class:`CalibrationTarget`,
:class:`~dpgossip.scenario.privacy_overrides.PrivacyOverrides`) onto the first point's configuration;
:func:`calibrate_plan` calibrates it with :func:`calibrate_pairs`
(:func:`~dpgossip.scenario.privacy_section.calibrate_point`, which also calibrates every point of a
run), with progress per candidate noise scale and per target; :func:`write_calibration` writes the
result as JSON, atomically.

The kinds with their own accountant (``ppm*``, ``capepca*``, ``ddppm-floorfree``): the noise multiplier
of their section for ``--epsilon`` and ``--delta`` (default: the section's ``delta``) by the kind's own
calibration, checked by its guarantee (:func:`~dpgossip.scenario.kind_audit.calibrate_kind`). The
pair audit's settings (``--family``, ``--method``, ``--search``, ``--candidates``, ``--view``) are
refused there, naming the kind.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpgossip.errors import ConfigError
from dpgossip.protocols.ddppm.calibrate import UPPER_METHOD, Calibration
from dpgossip.scenario import privacy_section
from dpgossip.scenario.expand import Point
from dpgossip.scenario.kind_audit import KindCalibration, calibrate_kind
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
           "calibrate_plan", "calibrate_pairs", "calibrate_kind_plan", "calibration_record",
           "write_calibration"]

UPPER_STATEMENT = (
    "certified upper bound (docs/upper-bound.md): proven for every neighbour of this X and every "
    "observer; per instance (about this X), not a DP guarantee over all datasets"
)
"""What a calibration against the certified upper bound (``method = "upper"``) is, in its record."""

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
    kind
        ``protocol.kind`` of the point.
    epsilon, delta
        The target of a kind with its own accountant (``None`` for ``ddppm``, whose target is
        :attr:`target`).
    """

    scenario: str
    file: Path | None
    base: Path | None
    point: Point
    points: int
    config: dict[str, Any]
    engine: bool
    kind: str = "ddppm"
    epsilon: float | None = None
    delta: float | None = None

    @property
    def target(self) -> CalibrateSpec:
        """The resolved ``privacy.calibrate`` settings (``delta`` defaulted to ``privacy.delta``) of a
        ``ddppm`` point."""
        target = PrivacySpec.from_config(self.config["privacy"]).calibrate
        assert target is not None
        return target

    @property
    def pair_audit(self) -> bool:
        """The point is calibrated by the pair audit's noise-scale search (``ddppm``)."""
        return self.epsilon is None


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class CalibrationRun:
    """A calibration and how long it took."""

    calibration: Calibration | KindCalibration
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
    from dpgossip.scenario.kind_commands import commands_for

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
    if overrides is not None and overrides.candidates is not None:
        raw["candidates"] = overrides.candidates
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
    (:data:`~dpgossip.scenario.kind_commands.KIND_COMMANDS`).

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
    from dpgossip.scenario.kind_commands import commands_for

    t0 = time.perf_counter()
    cal = commands_for(plan.kind).calibrate(plan, stage)
    return CalibrationRun(calibration=cal, seconds=time.perf_counter() - t0)


def calibrate_pairs(plan: CalibrationPlan, stage: Callable[[str], None] | None = None) -> Calibration:
    """``ddppm``: build the point's network and data and search its noise scale
    (:func:`~dpgossip.scenario.privacy_section.calibrate_point`, whose
    :class:`~dpgossip.protocols.ddppm.calibrate.Calibration` carries the notes); ``stage`` hears of every
    candidate scale and, with an ETA, of its targets
    (:class:`~dpgossip.scenario.step_progress.LevelProgress`)."""
    from dpgossip.scenario.step_progress import LevelProgress

    say = stage if stage is not None else (lambda _text: None)
    say(f"point {plan.point.index}: building the network and the data")
    structure = build_structure(plan.config, plan.base)
    say(f"point {plan.point.index}: searching the noise scale on {structure.data.m} agents ("
        + ("every step computes every target's certified upper bound)" if plan.target.method == "upper"
           else "every step audits every pair)"))
    progress = None if stage is None else LevelProgress(stage, target_delta=plan.target.delta,
                                                        target_epsilon=plan.target.epsilon)
    return privacy_section.calibrate_point(plan.config, structure, on_level=progress)


def calibrate_kind_plan(plan: CalibrationPlan, stage: Callable[[str], None] | None = None
                        ) -> KindCalibration:
    """A kind with its own accountant: :func:`~dpgossip.scenario.kind_audit.calibrate_kind`."""
    assert plan.epsilon is not None and plan.delta is not None
    return calibrate_kind(plan.config, plan.base, plan.epsilon, plan.delta, stage)


def calibration_record(plan: CalibrationPlan, cal: Calibration | KindCalibration) -> dict[str, Any]:
    """The JSON record of a calibration: the scenario, file, point and axes, the per-instance statement
    (``ddppm``) and :meth:`~dpgossip.protocols.ddppm.calibrate.Calibration.to_dict` (strict JSON values)."""
    what = ({"audit": UPPER_STATEMENT if cal.method == UPPER_METHOD else privacy_section.PER_INSTANCE}
            if isinstance(cal, Calibration)
            else {"guarantee": "a DP guarantee of the kind's accountant (not a per-instance audit)"})
    record = {"scenario": plan.scenario, "file": str(plan.file), "point": plan.point.index,
              "axes": plan.point.axes, **what, **cal.to_dict()}
    return json_safe(json.loads(json.dumps(record, default=float)))


def write_calibration(path: str | Path, plan: CalibrationPlan, cal: Calibration | KindCalibration
                      ) -> Path:
    """Write :func:`calibration_record` to ``path`` atomically; returns the path."""
    write_json(Path(path), calibration_record(plan, cal))
    return Path(path)
