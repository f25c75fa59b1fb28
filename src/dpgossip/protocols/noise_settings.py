"""The noise keys shared by the sections of kinds whose noise is a multiplier of the sensitivity or a
budget to calibrate it to (``[cape]``, ``[floorfree]``): exactly one of the two is given."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dpgossip.errors import ConfigError
from dpgossip.settings import Field

__all__ = ["noise_fields", "check_noise_section"]


def noise_fields(what: str) -> dict[str, Field]:
    """The noise keys of a section whose noise is a multiplier or a budget (``[cape]``,
    ``[floorfree]``); ``what`` says what the multiplier is."""
    return {
        "noise_multiplier": Field(kind=float, default=None, low=0,
                                  doc=f"{what}: noise std over sensitivity (give this or epsilon)"),
        "epsilon": Field(kind=float, default=None, low=0, low_open=True,
                         doc="budget the noise is calibrated to (give this or noise_multiplier)"),
        "delta": Field(kind=float, default=1e-5, low=0, low_open=True, high=1, high_open=True,
                       doc="delta of the calibration and of the reported epsilons"),
        "audit": Field(kind=bool, default=True, sweep=False, doc="audit each run"),
    }


def check_noise_section(section: str, config: Mapping[str, Any]) -> None:
    """Exactly one of ``<section>.noise_multiplier`` and ``<section>.epsilon``."""
    table = config[section]
    if (table["noise_multiplier"] is None) == (table["epsilon"] is None):
        raise ConfigError(f"{section}: give exactly one of {section}.noise_multiplier and "
                          f"{section}.epsilon, got noise_multiplier = {table['noise_multiplier']!r}, "
                          f"epsilon = {table['epsilon']!r}", field=f"{section}.epsilon")
