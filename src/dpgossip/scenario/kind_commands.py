"""What ``dpgossip audit`` and ``dpgossip calibrate`` run for each ``protocol.kind``, read from the
registry of kinds (:mod:`dpgossip.protocols.registry`):

* a kind audited pair by pair (``ProtocolKind.pair_audit``: ``ddppm``): the pair audit of
  ``[privacy]`` (every (observer, target) pair, a worst-case search;
  :func:`~dpgossip.scenario.audit_command.audit_task`) and the noise-scale search of
  ``privacy.calibrate`` (:func:`~dpgossip.scenario.calibrate_command.calibrate_pairs`);
* a kind that builds its own point with its own section and noise calibration (``ppm*``,
  ``capepca*``, ``ddppm-floorfree``, :func:`~dpgossip.scenario.kind_audit.has_kind_commands`): the
  kind's own accountant and auditor, as ``dpgossip run`` uses them
  (:func:`~dpgossip.scenario.kind_audit.audit_kind_point`), and the kind's own calibration of its
  section's ``noise_multiplier`` (:func:`~dpgossip.scenario.kind_audit.calibrate_kind`).

Any other kind is refused by :func:`commands_for`, naming it and the kinds supported: never audited as
another kind.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dpgossip.errors import ConfigError
from dpgossip.protocols.registry import ProtocolKind, find_kind, kinds
from dpgossip.scenario.audit_command import audit_task
from dpgossip.scenario.calibrate_command import calibrate_kind_plan, calibrate_pairs
from dpgossip.scenario.kind_audit import audit_kind_point, has_kind_commands

__all__ = ["KindCommands", "kind_commands", "commands_for"]


@dataclass(frozen=True, slots=True, kw_only=True)
class KindCommands:
    """The audit and the calibration of one kind.

    Attributes
    ----------
    audit
        ``audit(task, base, stage) -> point``: an
        :class:`~dpgossip.scenario.audit_point.AuditPoint` or
        :class:`~dpgossip.scenario.audit_point.KindAuditPoint`.
    calibrate
        ``calibrate(plan, stage) -> calibration``: a
        :class:`~dpgossip.protocols.ddppm.calibrate.Calibration` or
        :class:`~dpgossip.scenario.kind_audit.KindCalibration`.
    section
        The section the kind's audit and calibration read: ``privacy`` (the pair audit, which
        ``--view``, ``--search``, ``--family`` and ``--method`` change), or the
        kind's own section (``ppm``, ``cape``, ``floorfree``, ...).
    pair_audit
        The kind is audited pair by pair as ``[privacy]`` says (``ProtocolKind.pair_audit``).
    """

    audit: Callable[..., Any]
    calibrate: Callable[..., Any]
    section: str
    pair_audit: bool = False


def _commands(spec: ProtocolKind) -> KindCommands | None:
    if spec.pair_audit:
        return KindCommands(audit=audit_task, calibrate=calibrate_pairs, section=spec.section or "privacy",
                            pair_audit=True)
    if has_kind_commands(spec) and spec.section is not None:
        return KindCommands(audit=audit_kind_point, calibrate=calibrate_kind_plan, section=spec.section)
    return None


def kind_commands() -> dict[str, KindCommands]:
    """``protocol.kind`` -> its audit and calibration, for every registered kind that has them."""
    out = {}
    for spec in kinds():
        commands = _commands(spec)
        if commands is not None:
            out[spec.name] = commands
    return out


def commands_for(kind: str) -> KindCommands:
    """The commands of ``kind``.

    Raises
    ------
    ConfigError
        ``kind`` has none, naming it and the kinds that have.
    """
    spec = find_kind(kind)
    commands = None if spec is None else _commands(spec)
    if commands is None:
        raise ConfigError(f"protocol.kind = {kind!r}: dpgossip audit and dpgossip calibrate do not "
                          f"support this kind ({_why_not(spec)}); supported: "
                          f"{', '.join(kind_commands())}", field="protocol.kind")
    return commands


def _why_not(spec: ProtocolKind | None) -> str:
    """Why a kind has no :class:`KindCommands`, in words true of it."""
    if spec is None:
        return "it is not a registered protocol kind"
    if not spec.runs_points:
        return (f"it is run by a scenario with a [{spec.section}] table, which computes its privacy "
                "itself")
    if spec.views:
        return ("its guarantee and its audit are computed by dpgossip run: the guaranteed_epsilon and "
                f"audited_epsilon columns of runs.csv, views {', '.join(spec.views)}; it has no noise "
                "calibration for dpgossip calibrate to search")
    return "it has no auditor or accountant"
