"""``dpgossip calibrate``, the pieces below the table of kinds: the plan's types, the calibration of each
kind's point (:func:`calibrate_pairs`, :func:`calibrate_kind_plan`) and the record written
(:func:`write_calibration`). The driver, which chooses the calibration by the point's ``protocol.kind``
(:func:`~dpgossip.scenario.kind_commands.kind_commands`), is :mod:`~dpgossip.scenario.calibrate_run`.

``ddppm``: the smallest noise scale whose audited worst case meets the target, by the same function as
``[privacy] calibrate`` in a run (:func:`calibrate_pairs`:
:func:`~dpgossip.scenario.privacy_section.calibrate_point`, which also calibrates every point of a
run), with progress per candidate noise scale and per target; :func:`write_calibration` writes the
result as JSON, atomically.

The kinds with their own accountant (``ppm*``, ``capepca*``, ``ddppm-floorfree``): the noise multiplier
of their section by the kind's own calibration, checked by its guarantee
(:func:`~dpgossip.scenario.kind_audit.calibrate_kind`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpgossip.protocols.ddppm.calibrate import UPPER_METHOD, Calibration
from dpgossip.scenario import privacy_section
from dpgossip.scenario.expand import Point
from dpgossip.scenario.kind_audit import KindCalibration, calibrate_kind
from dpgossip.scenario.point import DEFAULT_KIND, CalibrateSpec, PrivacySpec
from dpgossip.scenario.problem import build_structure
from dpgossip.scenario.store import json_safe, write_json

__all__ = ["CalibrationTarget", "CalibrationPlan", "CalibrationRun", "calibrate_pairs",
           "calibrate_kind_plan", "calibration_record", "write_calibration"]

UPPER_STATEMENT = (
    "certified upper bound (docs/upper-bound.md): proven for every neighbour of this X and every "
    "observer; per instance (about this X), not a DP guarantee over all datasets"
)
"""What a calibration against the certified upper bound (``method = "upper"``) is, in its record."""


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
    kind: str = DEFAULT_KIND
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
