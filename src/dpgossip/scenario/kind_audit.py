"""``dpgossip audit`` and ``dpgossip calibrate`` for the kinds with their own accountant and auditor:
``ppm``, ``ppm-federated``, ``ppm-gossip`` (``[ppm]``), ``capepca``, ``capepca-gossip`` (``[cape]``) and
``ddppm-floorfree`` (``[floorfree]``).

**Audit** (:func:`audit_kind_point`): the point's protocol runs once, repeat 0 of ``dpgossip run`` on the
matrix backend (seed ``SeedSequence(seed, spawn_key=(0,))``), and the point gets exactly the guarantee
and audit columns ``dpgossip run`` writes for that repeat (:mod:`dpgossip.scenario.protocol_point`,
:mod:`dpgossip.scenario.cape_point`), with the kind's audit switched on whatever ``<section>.audit``
says: ``guaranteed_epsilon`` (the kind's accountant: a DP guarantee, or the paper's claim where the
column's ``guarantee_accountant`` says so) and ``audited_epsilon`` (the kind's per-instance auditor of
the view the guarantee covers), and ``audited_epsilon_beyond`` where the kind audits a view the
guarantee does not cover.

**Calibrate** (:func:`calibrate_kind`): the noise multiplier the run itself would use with
``<section>.epsilon = E`` and ``<section>.delta = D`` (the kind's own calibration: the zCDP inversion
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
from dpgossip.scenario.audit_point import KindAuditPoint
from dpgossip.scenario.point import PointSpec
from dpgossip.scenario.problem import Problem, build_structure, resolve_problem
from dpgossip.scenario.results import jsonable

__all__ = ["KIND_SECTIONS", "KindCalibration", "audit_kind_point", "calibrate_kind", "round_up"]

KIND_SECTIONS: dict[str, str] = {"ppm": "ppm", "ppm-federated": "ppm", "ppm-gossip": "ppm",
                                 "capepca": "cape", "capepca-gossip": "cape",
                                 "ddppm-floorfree": "floorfree"}
"""The section that holds each kind's noise, budget and audit switch."""

Say = Callable[[str], None]


def _with_section(config: Mapping[str, Any], **values: Any) -> dict[str, Any]:
    """``config`` with keys of the kind's section replaced (a copy; the rest shared)."""
    section = KIND_SECTIONS[config["protocol"]["kind"]]
    return {**config, section: {**config[section], **values}}


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
        An :class:`~dpgossip.scenario.audit_command.AuditTask` whose kind is one of
        :data:`KIND_SECTIONS`.
    base
        Folder of the scenario file.
    stage
        Called with a sentence before each long step.

    Raises
    ------
    ConfigError
        A point that cannot be built.
    """
    from dpgossip.scenario.protocol_point import protocol_columns
    from dpgossip.scenario.runner import repeat_seed

    say = stage if stage is not None else (lambda _text: None)
    t0 = time.perf_counter()
    config = _with_section(task.config, audit=True)
    kind = config["protocol"]["kind"]
    say(f"{task.name}: building the network and the data ({kind})")
    problem = _problem(config, base)
    spec = PointSpec.from_config(config)
    protocol, columns = protocol_columns(spec, problem)
    say(f"{task.name}: running repeat 0 of {kind} and auditing it with its own auditor")
    run = protocol.run(problem.data, problem.network, repeat_seed(spec.seed, 0))
    row = jsonable(columns(run.result, 0))
    return KindAuditPoint(index=task.index, key=task.key, axes=dict(task.axes), kind=kind,
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


def _ppm_multiplier(spec: PointSpec, problem: Problem) -> float:
    from dpgossip.scenario.protocol_point import ppm_params

    return ppm_params(spec).noise_multiplier


def _ppm_guarantee(spec: PointSpec, problem: Problem) -> float:
    from dpgossip.protocols.ppm.guarantee import ppm_guarantee
    from dpgossip.scenario.protocol_point import ppm_params

    return float(ppm_guarantee(ppm_params(spec), spec.ppm.delta).epsilon_pld)


def _cape_multiplier(spec: PointSpec, problem: Problem) -> float:
    from dpgossip.protocols.cape.guarantee import calibrate_cape_noise

    view = "site" if spec.protocol.kind == "capepca-gossip" else "aggregator"
    return float(calibrate_cape_noise(spec.cape.epsilon, spec.cape.delta, problem.data.m, view=view))


def _cape_guarantee(spec: PointSpec, problem: Problem) -> float:
    from dpgossip.protocols.cape.guarantee import cape_guarantee
    from dpgossip.scenario.cape_point import cape_protocol, gossip_site_guarantee

    protocol, cape, sizes = cape_protocol(spec, problem), spec.cape, problem.data.sizes
    if spec.protocol.kind == "capepca-gossip":
        return float(gossip_site_guarantee(problem.network, protocol.params, sizes, cape.delta))
    return float(cape_guarantee(sizes, protocol.params, cape.delta,
                                adjacency=cape.sensitivity).epsilon_aggregator)


def _floorfree_multiplier(spec: PointSpec, problem: Problem) -> float:
    from dpgossip.scenario.cape_point import floorfree_protocol

    return float(floorfree_protocol(spec).params.noise_multiplier)


def _floorfree_guarantee(spec: PointSpec, problem: Problem) -> float:
    from dpgossip.protocols.ddppm.floorfree_guarantee import floorfree_guarantee
    from dpgossip.scenario.cape_point import floorfree_protocol

    return float(floorfree_guarantee(floorfree_protocol(spec).params, spec.floorfree.delta).epsilon_pld)


_CALIBRATORS: dict[str, tuple[Callable[[PointSpec, Problem], float],
                              Callable[[PointSpec, Problem], float], str, str]] = {
    "ppm": (_ppm_multiplier, _ppm_guarantee, "zCDP inversion (calibrate_zcdp_noise), T releases",
            "PLD accountant of the T releases"),
    "capepca": (_cape_multiplier, _cape_guarantee, "exact Gaussian, aggregator's joint view",
                "exact Gaussian (aggregator's joint view)"),
    "capepca-gossip": (_cape_multiplier, _cape_guarantee, "exact Gaussian, one site's release",
                       "exact Gaussian (004's claim: one site's release)"),
    "ddppm-floorfree": (_floorfree_multiplier, _floorfree_guarantee,
                        "analytic Gaussian mechanism at sensitivity sqrt(releases): T + 1, or T "
                        "without floorfree.disseminate",
                        "PLD accountant of the releases"),
}
"""Per kind: the run's calibration, its guarantee, and both in words (``ppm`` serves the three
``ppm*`` kinds; ppm-gossip's guarantee is 000's claim for a party that sees only the sum)."""


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
    kind = config["protocol"]["kind"]
    multiplier, guarantee, how, accountant = _CALIBRATORS["ppm" if kind.startswith("ppm") else kind]
    say(f"{kind}: building the network and the data")
    target = _with_section(config, epsilon=float(epsilon), delta=float(delta), noise_multiplier=None)
    problem = _problem(target, base)
    nm = round_up(multiplier(PointSpec.from_config(target), problem))
    check = _with_section(config, epsilon=None, delta=float(delta), noise_multiplier=nm)
    achieved = guarantee(PointSpec.from_config(check), problem)
    if kind == "ppm-gossip":
        accountant += " (000's claim: a party that sees only the sum)"
    if not math.isfinite(nm):
        raise ConfigError(f"calibrate: {kind} has no finite noise multiplier for epsilon = "
                          f"{epsilon:g} at delta = {delta:g}")
    return KindCalibration(kind=kind, section=KIND_SECTIONS[kind], epsilon=float(epsilon),
                           delta=float(delta), noise_multiplier=nm, guaranteed_epsilon=achieved,
                           accountant=accountant, calibration=how)
