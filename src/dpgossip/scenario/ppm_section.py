"""``[ppm]``: the settings of the private power method of 000 when ``protocol.kind`` is a ``ppm*`` kind.

``protocol.kind`` (a sweep axis) picks the protocol of a point: ``ddppm`` (001, the default),
``ppm`` (000 Algorithm 1, a trusted curator), ``ppm-federated`` (000 Algorithm 2, every agent a
client of a server behind a secure aggregation) or ``ppm-gossip`` (Algorithm 2 on the point's graph:
``protocol.consensus_steps`` rounds of gossip averaging, pairwise edge masks). For the ``ppm*``
kinds, ``protocol.iterations`` is ``L`` and ``protocol.rank`` is the target rank ``k``; this section
gives the rest:

* ``block_rank`` (``p >= k``, default ``k``), ``sensitivity`` (``improved`` | ``prior``) and
  ``adjacency`` (``row-replacement`` | ``bounded-row-replacement`` | ``element``): see ``docs/ppm.md``;
* the noise: ``noise_multiplier`` (``sigma``), or ``epsilon`` (the noise multiplier is then the
  smallest whose composed guarantee, by the exact zCDP conversion, is ``epsilon`` at ``delta``:
  :func:`dpgossip.privacy.accountant.calibrate_zcdp_noise`); exactly one of the two;
* ``delta`` (default ``1e-5``): the delta of the reported epsilons;
* ``audit`` (default true): the per-instance audit of each run
  (:func:`dpgossip.protocols.ppm.audit.audit_ppm`);
* ``mask_std`` (default 1): the standard deviation of the edge masks of ``ppm-gossip``.

Each run's row carries ``guaranteed_epsilon`` (the PLD accountant's epsilon at ``delta`` for the
run's realised noise multipliers under ``adjacency``: a DP guarantee) and, with ``audit``,
``audited_epsilon`` (the exact epsilon of the worst neighbour the audit found for the server's view,
along the realised trajectory: a per-instance LOWER ESTIMATE, never a guarantee; it must not exceed
the guarantee, and a row where it does is flagged ``audit_exceeds_guarantee = true``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dpgossip.errors import ConfigError, reject_unknown_keys
from dpgossip.protocols.ppm.sensitivity import ADJACENCIES, SENSITIVITY_KINDS
from dpgossip.scenario.sections import register_section
from dpgossip.settings import Field

__all__ = ["PPM_FIELDS", "PpmSpec", "check_ppm", "PPM_KINDS"]

PPM_KINDS: tuple[str, ...] = ("ppm", "ppm-federated", "ppm-gossip")
"""The values of ``protocol.kind`` that read ``[ppm]``."""

PPM_FIELDS: dict[str, Field] = {
    "block_rank": Field(kind=int, default=None, low=1,
                        doc="iteration rank p >= protocol.rank (default protocol.rank)"),
    "noise_multiplier": Field(kind=float, default=None, low=0,
                              doc="sigma: noise std over sensitivity (give this or epsilon)"),
    "epsilon": Field(kind=float, default=None, low=0, low_open=True,
                     doc="budget the noise is calibrated to by the accountant (give this or "
                     "noise_multiplier)"),
    "delta": Field(kind=float, default=1e-5, low=0, low_open=True, high=1, high_open=True,
                   doc="delta of the calibration and of the reported epsilons"),
    "sensitivity": Field(kind=str, default="improved", choices=SENSITIVITY_KINDS,
                         doc="improved (max row norm of the iterate, 000 Thm 3.1) or prior "
                         "(sqrt(p) max entry); only the element adjacency distinguishes them"),
    "adjacency": Field(kind=str, default="row-replacement", choices=ADJACENCIES,
                       doc="which neighbouring datasets the guarantee covers (docs/ppm.md)"),
    "audit": Field(kind=bool, default=True, sweep=False,
                   doc="audit each run (per-instance lower estimate of the worst case)"),
    "mask_std": Field(kind=float, default=1.0, low=0,
                      doc="standard deviation of the pairwise edge masks of ppm-gossip"),
}

_SWEEPABLE = tuple(k for k, f in PPM_FIELDS.items() if f.sweep)


def check_ppm(path: str, value: Any) -> dict[str, Any]:
    """Validate the raw ``[ppm]`` table and fill defaults (lists of sweepable keys are axes).

    Raises
    ------
    ConfigError
        Unknown keys, bad values, or neither/both of ``noise_multiplier`` and ``epsilon``.
    """
    if not isinstance(value, Mapping):
        raise ConfigError(f"{path} must be a table ([{path}]), got {value!r}")
    reject_unknown_keys(f"{path}.", value, PPM_FIELDS, f"in [{path}]")
    from dpgossip.scenario.schema import check_field  # at top level: schema -> point -> here

    out = {key: check_field(f"{path}.{key}", f, value[key]) if key in value else f.default
           for key, f in PPM_FIELDS.items()}
    if (out["noise_multiplier"] is None) == (out["epsilon"] is None):
        raise ConfigError(f"{path}: give exactly one of noise_multiplier and epsilon, got "
                          f"noise_multiplier = {out['noise_multiplier']!r}, epsilon = "
                          f"{out['epsilon']!r}", field=f"{path}.epsilon")
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class PpmSpec:
    """``[ppm]`` of one point (scalars)."""

    block_rank: int | None
    noise_multiplier: float | None
    epsilon: float | None
    delta: float
    sensitivity: str
    adjacency: str
    audit: bool
    mask_std: float

    @classmethod
    def from_config(cls, table: Mapping[str, Any]) -> PpmSpec:
        """From the validated ``[ppm]`` table of one point."""
        return cls(**{k: table[k] for k in PPM_FIELDS})

    def to_row(self) -> dict[str, object]:
        """Tidy columns (prefixed ``ppm_``)."""
        return {f"ppm_{k}": getattr(self, k) for k in PPM_FIELDS if k != "audit"}


register_section("ppm", check_ppm, sweepable=_SWEEPABLE, fields=PPM_FIELDS,
                 doc="Settings of the private power method of 000 for the points whose "
                 "protocol.kind is ppm, ppm-federated or ppm-gossip (docs/ppm.md).")
