"""``dpgossip audit`` and ``dpgossip calibrate`` for the kinds with their own accountant and auditor:
the kinds of the registry that build their own point and have their own section (``ppm*`` in
``[ppm]``, ``capepca*`` in ``[cape]``, ``ddppm-floorfree`` in ``[floorfree]``, ...).

**Audit** (:func:`audit_kind_point`): the point's protocol runs once, repeat 0 of ``dpgossip run`` on the
matrix backend (seed ``SeedSequence(seed, spawn_key=(0,))``), and the point gets exactly the guarantee
and audit columns ``dpgossip run`` writes for that repeat (the kind's ``KindPoint.columns``,
:mod:`dpgossip.scenario.protocol_point`), with the kind's audit switched on whatever
``<section>.audit`` says: ``guaranteed_epsilon`` (the kind's accountant: a DP guarantee, or the
paper's claim where the column's ``guarantee_accountant`` says so) and ``audited_epsilon`` (the
kind's per-instance auditor of the view the guarantee covers), and ``audited_epsilon_beyond`` where
the kind audits a view the guarantee does not cover.

**Calibrate** (:func:`calibrate_kind`): the noise multiplier the run itself would use with
``<section>.epsilon = E`` and ``<section>.delta = D`` (the kind's own calibration,
:class:`~dpgossip.protocols.registry.NoiseCalibration`: e.g. the zCDP inversion
:func:`~dpgossip.privacy.accountant.calibrate_zcdp_noise` for ``ppm*``,
:func:`~dpgossip.protocols.cape.guarantee.calibrate_cape_noise` for capePCA (the aggregator's view) and
capePCA-gossip (one site's view), the analytic Gaussian mechanism at sensitivity ``sqrt(T + 1)`` for the
floor-free variant; ``sqrt(T)`` without ``floorfree.disseminate``), rounded **up** to 6 significant
digits (more noise), and checked by the kind's guarantee at the rounded value: the
``noise_multiplier`` line printed is the one whose guarantee is printed.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpgossip.errors import ConfigError
from dpgossip.protocols.registry import PointInputs, ProtocolKind, kind
from dpgossip.scenario.audit_point import KindAuditPoint
from dpgossip.scenario.point import PointSpec
from dpgossip.scenario.problem import Problem, build_structure, resolve_problem
from dpgossip.scenario.results import jsonable

__all__ = ["has_kind_commands", "KindCalibration", "audit_kind_point", "calibrate_kind", "round_up"]

Say = Callable[[str], None]


def has_kind_commands(spec: ProtocolKind) -> bool:
    """The kind is audited and calibrated here: it builds its own point, its section holds its
    noise, budget and audit switch, and it is not audited pair by pair (``pair_audit``)."""
    return (spec.build is not None and not spec.pair_audit and spec.fields is not None
            and spec.calibration is not None)


def _with_section(config: Mapping[str, Any], **values: Any) -> dict[str, Any]:
    """``config`` with keys of the kind's section replaced (a copy; the rest shared)."""
    section = kind(config["protocol"]["kind"]).section
    return {**config, section: {**config[section], **values}}


def _inputs(config: Mapping[str, Any], problem: Problem) -> PointInputs:
    from dpgossip.scenario.protocol_point import point_inputs

    return point_inputs(PointSpec.from_config(config), problem.data, problem.network)


def _problem(config: Mapping[str, Any], base: Path | None) -> Problem:
    return resolve_problem(config, build_structure(config, base))


def _size(problem: Problem, config: Mapping[str, Any]) -> dict[str, int]:
    data = problem.data
    return {"agents": int(data.m), "rows": int(data.n), "columns": int(data.d),
            "iterations": int(config["protocol"]["iterations"])}


def audit_kind_point(task: Any, base: Path | None = None, stage: Say | None = None) -> KindAuditPoint:
    """Run repeat 0 of the point's protocol and return its guarantee and audit columns (module
    docstring).

    Parameters
    ----------
    task
        An :class:`~dpgossip.scenario.audit_command.AuditTask` whose kind has its own audit
        (:func:`has_kind_commands`).
    base
        Folder of the scenario file.
    stage
        Called with a sentence before each long step.

    Raises
    ------
    ConfigError
        A point that cannot be built.
    """
    from dpgossip.scenario.protocol_point import build_point
    from dpgossip.scenario.runner import repeat_seed

    say = stage if stage is not None else (lambda _text: None)
    t0 = time.perf_counter()
    config = _with_section(task.config, audit=True)
    name = config["protocol"]["kind"]
    say(f"{task.name}: building the network and the data ({name})")
    problem = _problem(config, base)
    spec = PointSpec.from_config(config)
    point = build_point(spec, problem)
    say(f"{task.name}: running repeat 0 of {name} and auditing it with its own auditor")
    run = point.protocol.run(problem.data, problem.network, repeat_seed(spec.seed, 0))
    row = jsonable(point.columns(run.result, 0))
    return KindAuditPoint(index=task.index, key=task.key, axes=dict(task.axes), kind=name,
                          size=_size(problem, config), columns=row,
                          seconds=time.perf_counter() - t0)


def round_up(x: float, digits: int = 6) -> float:
    """``x`` rounded up to ``digits`` significant digits (never below ``x``)."""
    if not math.isfinite(x) or x <= 0:
        return x
    scale = 10.0 ** (digits - 1 - math.floor(math.log10(x)))
    up = math.ceil(x * scale) / scale
    return up if up >= x else math.nextafter(up, math.inf)


@dataclass(frozen=True, slots=True, kw_only=True)
class KindCalibration:
    """The noise multiplier of a kind's section for a target ``(epsilon, delta)`` and its guarantee.

    Attributes
    ----------
    kind, section
        ``protocol.kind`` and the section that reads the multiplier (``ppm``, ``cape``, ``floorfree``).
    epsilon, delta
        The target.
    noise_multiplier
        The kind's calibration at the target, rounded up to 6 significant digits.
    guaranteed_epsilon
        The kind's guarantee at ``delta`` with ``noise_multiplier`` (what ``dpgossip run`` reports as
        ``guaranteed_epsilon``).
    accountant
        How :attr:`guaranteed_epsilon` is computed.
    calibration
        How the multiplier is computed.
    """

    kind: str
    section: str
    epsilon: float
    delta: float
    noise_multiplier: float
    guaranteed_epsilon: float
    accountant: str
    calibration: str

    @property
    def met(self) -> bool:
        """The guarantee at the printed multiplier is within the target (up to ``1e-9`` relative)."""
        return bool(self.guaranteed_epsilon <= self.epsilon * (1 + 1e-9))

    def to_toml(self) -> str:
        """The lines to put in the kind's section (in place of its ``epsilon`` or
        ``noise_multiplier``)."""
        return (f"[{self.section}]\nnoise_multiplier = {self.noise_multiplier!r}\n"
                f"delta = {self.delta!r}")

    def to_dict(self) -> dict[str, Any]:
        """Every field and ``met``."""
        return {"kind": self.kind, "section": self.section, "target_epsilon": self.epsilon,
                "target_delta": self.delta, "noise_multiplier": self.noise_multiplier,
                "guaranteed_epsilon": self.guaranteed_epsilon, "accountant": self.accountant,
                "calibration": self.calibration, "met": self.met}


def calibrate_kind(config: Mapping[str, Any], base: Path | None, epsilon: float, delta: float,
                   stage: Say | None = None) -> KindCalibration:
    """The noise multiplier of the point ``config`` for ``(epsilon, delta)`` by its kind's own
    calibration, rounded up, and the kind's guarantee at it (module docstring).

    Raises
    ------
    ConfigError
        A point that cannot be built.
    """
    say = stage if stage is not None else (lambda _text: None)
    spec = kind(config["protocol"]["kind"])
    cal = spec.calibration
    if cal is None or spec.section is None:
        raise ConfigError(f"calibrate: protocol.kind = {spec.name!r} has no noise calibration of its "
                          "own", field="protocol.kind")
    say(f"{spec.name}: building the network and the data")
    target = _with_section(config, epsilon=float(epsilon), delta=float(delta), noise_multiplier=None)
    problem = _problem(target, base)
    nm = round_up(cal.multiplier(_inputs(target, problem)))
    check = _with_section(config, epsilon=None, delta=float(delta), noise_multiplier=nm)
    achieved = cal.guarantee(_inputs(check, problem))
    if not math.isfinite(nm):
        raise ConfigError(f"calibrate: {spec.name} has no finite noise multiplier for epsilon = "
                          f"{epsilon:g} at delta = {delta:g}")
    return KindCalibration(kind=spec.name, section=spec.section, epsilon=float(epsilon),
                           delta=float(delta), noise_multiplier=nm, guaranteed_epsilon=achieved,
                           accountant=cal.accountant, calibration=cal.calibration)
