"""What ``dpgossip audit`` and ``dpgossip calibrate`` run for each ``protocol.kind``: one table,
:data:`KIND_COMMANDS` (a protocol registry can replace it).

* ``ddppm``: the pair audit of ``[privacy]`` (every (observer, target) pair, a worst-case search;
  :func:`~dpgossip.scenario.audit_command.audit_task`) and the noise-scale search of
  ``privacy.calibrate`` (:func:`~dpgossip.scenario.calibrate_command.calibrate_pairs`).
* ``ppm``, ``ppm-federated``, ``ppm-gossip``, ``capepca``, ``capepca-gossip``, ``ddppm-floorfree``: the
  kind's own accountant and auditor, as ``dpgossip run`` uses them
  (:func:`~dpgossip.scenario.kind_audit.audit_kind_point`), and the kind's own calibration of its
  section's ``noise_multiplier`` (:func:`~dpgossip.scenario.kind_audit.calibrate_kind`).

A kind missing from the table is refused by :func:`commands_for`, naming it and the kinds supported:
never audited as another kind.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dpgossip.errors import ConfigError
from dpgossip.scenario.audit_command import audit_task
from dpgossip.scenario.calibrate_command import calibrate_kind_plan, calibrate_pairs
from dpgossip.scenario.kind_audit import KIND_SECTIONS, audit_kind_point

__all__ = ["KindCommands", "KIND_COMMANDS", "commands_for"]


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
        ``--view``, ``--search``, ``--candidates``, ``--family`` and ``--method`` change), ``ppm``,
        ``cape`` or ``floorfree``.
    """

    audit: Callable[..., Any]
    calibrate: Callable[..., Any]
    section: str

    @property
    def pair_audit(self) -> bool:
        """The kind is audited pair by pair as ``[privacy]`` says."""
        return self.section == "privacy"


KIND_COMMANDS: dict[str, KindCommands] = {
    "ddppm": KindCommands(audit=audit_task, calibrate=calibrate_pairs, section="privacy"),
    **{kind: KindCommands(audit=audit_kind_point, calibrate=calibrate_kind_plan, section=section)
       for kind, section in KIND_SECTIONS.items()},
}
"""``protocol.kind`` -> its audit and calibration."""


def commands_for(kind: str) -> KindCommands:
    """The commands of ``kind``.

    Raises
    ------
    ConfigError
        ``kind`` has none, naming it and the kinds that have.
    """
    try:
        return KIND_COMMANDS[kind]
    except KeyError:
        raise ConfigError(f"protocol.kind = {kind!r}: dpgossip audit and dpgossip calibrate do not "
                          f"support this kind (it has no auditor or accountant here); supported: "
                          f"{', '.join(KIND_COMMANDS)}", field="protocol.kind") from None
