"""What ``dpgossip audit`` and ``dpgossip calibrate`` change in a scenario's ``[privacy]`` table, and the
points they work on.

``--view`` and ``--search`` replace ``privacy.view`` and ``privacy.search`` of every point; they are
checked like the scenario's keys (messages name ``privacy.view``; the command line renames them to its
flags). They apply to the pair audit of ``protocol.kind = "ddppm"`` only: on a scenario without a
``ddppm`` point they are refused (:func:`check_overrides_used`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dpgossip.scenario.expand import Point
from dpgossip.scenario.privacy_section import check_privacy
from dpgossip.scenario.sizes import check_point_sizes, check_sweep_size

__all__ = ["PrivacyOverrides", "privacy_config", "audited_points", "uses_engine"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PrivacyOverrides:
    """Settings of ``[privacy]`` replaced for every point (``None``: as the scenario says).

    Attributes
    ----------
    view
        Replaces ``privacy.view``.
    search
        Replaces ``privacy.search``: the search's effort, a preset name or a number of levels.

    Raises
    ------
    ConfigError
        On construction, a value ``[privacy]`` would refuse, naming its key (``privacy.view``).
    """

    view: str | None = None
    search: str | int | None = None

    def __post_init__(self) -> None:
        self.checked()

    def given(self) -> dict[str, Any]:
        """The settings given, by key of ``[privacy]``."""
        values = {"view": self.view, "search": self.search}
        return {k: v for k, v in values.items() if v is not None}

    def checked(self) -> dict[str, Any]:
        """The settings given, validated and normalised as :func:`check_privacy` does.

        Raises
        ------
        ConfigError
            A value ``[privacy]`` would refuse, naming its key.
        """
        given = self.given()
        resolved = check_privacy("privacy", given)
        return {k: resolved[k] for k in given}


def privacy_config(config: Mapping[str, Any], overrides: PrivacyOverrides | None = None
                   ) -> dict[str, Any]:
    """A point's configuration with a resolved ``[privacy]`` table (its defaults when the scenario has
    none) and ``overrides`` applied.

    Parameters
    ----------
    config
        A point's configuration (:attr:`Point.config <dpgossip.scenario.expand.Point.config>`).
    overrides
        Settings replaced (default: none).

    Returns
    -------
    dict
        A shallow copy of ``config`` with a new ``privacy`` table.
    """
    priv = dict(config.get("privacy") or check_privacy("privacy", {}))
    if overrides is not None:
        priv.update(overrides.checked())
    return {**config, "privacy": priv}


def audited_points(scenario: Any) -> list[Point]:
    """The scenario's points, after the size checks of an audit (it holds dense view factors).

    Parameters
    ----------
    scenario
        A :class:`~dpgossip.scenario.Scenario`.

    Raises
    ------
    ConfigError
        A sweep or a point too large for the memory (:mod:`~dpgossip.scenario.sizes`).
    """
    check_sweep_size(scenario.config)
    points = scenario.points()
    check_point_sizes(points, scenario.base, audit=True)
    return points


def uses_engine(config: Mapping[str, Any]) -> bool:
    """Whether the scenario sets ``[engine]`` conditions, which the audit does not model (it audits the
    ideal synchronous protocol)."""
    return bool(config.get("engine"))
