"""``[cape]`` and ``[floorfree]``: the settings of the CAPE and floor-free protocols
(docs/protocol-frontier.md).

``[cape]`` is read by the points whose ``protocol.kind`` is ``capepca`` (004, Algorithm 2 on a star) or
``capepca-gossip`` (its gossip form); ``[floorfree]`` by ``ddppm-floorfree`` (docs/floorfree.md). Both
take the noise as a multiplier of the sensitivity, or a budget to calibrate it to; exactly one of the two:

* ``[cape]``: ``noise_multiplier`` (``tau / Delta(N_min)``, 004's site level) or ``epsilon`` (the
  multiplier at which capePCA's aggregator, who sees every release and knows every ``F_s``, is exactly
  ``(epsilon, delta)``-DP: :func:`dpgossip.protocols.cape.guarantee.calibrate_cape_noise`, view
  ``aggregator``; for ``capepca-gossip`` the same multiplier); ``delta``; ``sensitivity``
  (``row-replacement``: ``sqrt(2)/N``, exact for a row replaced in the unit ball; ``paper``: 004's
  ``1/N``); ``audit``;
* ``[floorfree]``: ``noise_multiplier`` (``s``) or ``epsilon`` (the ``s`` at which the run, ``T + 1``
  composed Gaussian mechanisms of multiplier ``s``, is exactly ``(epsilon, delta)`` as
  ``sqrt(T + 1)/s``-GDP); ``delta``; ``adjacency`` (``bounded`` | ``replace-one``); ``disseminate``;
  ``audit``, ``audit_targets`` (how many agents, from agent 0, the audit takes as targets) and
  ``audit_rows`` (climb only that many rows, the best of a closed-form screening of every row).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dpgossip.errors import ConfigError, reject_unknown_keys
from dpgossip.protocols.cape.star import SENSITIVITIES
from dpgossip.protocols.ddppm.floorfree import FLOORFREE_ADJACENCIES
from dpgossip.scenario.sections import register_section
from dpgossip.settings import Field

__all__ = ["CAPE_FIELDS", "FLOORFREE_FIELDS", "CAPE_KINDS", "FLOORFREE_KINDS", "CapeSpec",
           "FloorFreeSpec", "check_cape", "check_floorfree"]

CAPE_KINDS: tuple[str, ...] = ("capepca", "capepca-gossip")
"""The values of ``protocol.kind`` that read ``[cape]``."""
FLOORFREE_KINDS: tuple[str, ...] = ("ddppm-floorfree",)
"""The values of ``protocol.kind`` that read ``[floorfree]``."""


def _noise_fields(what: str) -> dict[str, Field]:
    return {
        "noise_multiplier": Field(kind=float, default=None, low=0,
                                  doc=f"{what}: noise std over sensitivity (give this or epsilon)"),
        "epsilon": Field(kind=float, default=None, low=0, low_open=True,
                         doc="budget the noise is calibrated to (give this or noise_multiplier)"),
        "delta": Field(kind=float, default=1e-5, low=0, low_open=True, high=1, high_open=True,
                       doc="delta of the calibration and of the reported epsilons"),
        "audit": Field(kind=bool, default=True, sweep=False, doc="audit each run"),
    }


CAPE_FIELDS: dict[str, Field] = {
    **_noise_fields("tau / Delta(N_min), 004's site noise level"),
    "sensitivity": Field(kind=str, default="row-replacement", choices=tuple(SENSITIVITIES),
                         doc="row-replacement (sqrt(2)/N, a row replaced in the unit ball) or paper "
                         "(004's 1/N)"),
}

FLOORFREE_FIELDS: dict[str, Field] = {
    **_noise_fields("s, the multiplier of every release"),
    "adjacency": Field(kind=str, default="bounded", choices=tuple(FLOORFREE_ADJACENCIES),
                       doc="bounded (||x - x'|| <= 1) or replace-one (any row of the unit ball)"),
    "disseminate": Field(kind=bool, default=True, doc="send the noisy q^(T) to everyone"),
    "audit_targets": Field(kind=int, default=None, low=1, sweep=False,
                           doc="audit agents 0..audit_targets-1 as targets (default every agent)"),
    "audit_rows": Field(kind=int, default=None, low=1, sweep=False,
                        doc="screen every row in closed form and climb only the audit_rows best "
                        "(default: climb every row)"),
}


def _check(path: str, value: Any, fields: Mapping[str, Field]) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{path} must be a table ([{path}]), got {value!r}", field=path)
    reject_unknown_keys(f"{path}.", value, fields, f"in [{path}]")
    from dpgossip.scenario.schema import check_field  # at top level: schema -> point -> here

    out = {key: check_field(f"{path}.{key}", f, value[key]) if key in value else f.default
           for key, f in fields.items()}
    if (out["noise_multiplier"] is None) == (out["epsilon"] is None):
        raise ConfigError(f"{path}: give exactly one of {path}.noise_multiplier and {path}.epsilon, got "
                          f"noise_multiplier = {out['noise_multiplier']!r}, epsilon = "
                          f"{out['epsilon']!r}", field=f"{path}.epsilon")
    return out


def check_cape(path: str, value: Any) -> dict[str, Any]:
    """Validate the raw ``[cape]`` table and fill defaults (``ConfigError`` names the field)."""
    return _check(path, value, CAPE_FIELDS)


def check_floorfree(path: str, value: Any) -> dict[str, Any]:
    """Validate the raw ``[floorfree]`` table and fill defaults (``ConfigError`` names the field)."""
    return _check(path, value, FLOORFREE_FIELDS)


@dataclass(frozen=True, slots=True, kw_only=True)
class CapeSpec:
    """``[cape]`` of one point (scalars)."""

    noise_multiplier: float | None
    epsilon: float | None
    delta: float
    audit: bool
    sensitivity: str

    @classmethod
    def from_config(cls, table: Mapping[str, Any]) -> CapeSpec:
        """From the validated ``[cape]`` table of one point."""
        return cls(**{k: table[k] for k in CAPE_FIELDS})

    def to_row(self) -> dict[str, object]:
        """Tidy columns (prefixed ``cape_``)."""
        return {f"cape_{k}": getattr(self, k) for k in CAPE_FIELDS if k != "audit"}


@dataclass(frozen=True, slots=True, kw_only=True)
class FloorFreeSpec:
    """``[floorfree]`` of one point (scalars)."""

    noise_multiplier: float | None
    epsilon: float | None
    delta: float
    audit: bool
    adjacency: str
    disseminate: bool
    audit_targets: int | None
    audit_rows: int | None

    @classmethod
    def from_config(cls, table: Mapping[str, Any]) -> FloorFreeSpec:
        """From the validated ``[floorfree]`` table of one point."""
        return cls(**{k: table[k] for k in FLOORFREE_FIELDS})

    def to_row(self) -> dict[str, object]:
        """Tidy columns (prefixed ``floorfree_``)."""
        return {f"floorfree_{k}": getattr(self, k) for k in FLOORFREE_FIELDS
                if k not in ("audit", "audit_targets", "audit_rows")}


register_section("cape", check_cape, sweepable=tuple(k for k, f in CAPE_FIELDS.items() if f.sweep),
                 fields=CAPE_FIELDS,
                 doc="Settings of capePCA (004) for the points whose protocol.kind is capepca or "
                 "capepca-gossip (docs/cape.md, docs/cape-gossip.md, docs/protocol-frontier.md).")
register_section("floorfree", check_floorfree,
                 sweepable=tuple(k for k, f in FLOORFREE_FIELDS.items() if f.sweep),
                 fields=FLOORFREE_FIELDS,
                 doc="Settings of the floor-free D-DP-PM for the points whose protocol.kind is "
                 "ddppm-floorfree (docs/floorfree.md, docs/protocol-frontier.md).")
