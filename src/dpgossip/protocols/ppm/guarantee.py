"""The guarantee of the private power method of Nicolas et al.: the composition of its ``L`` Gaussian steps.

Each iteration releases ``A V + noise`` with multiplier ``noise_std / Delta`` (``Delta`` the sensitivity of
the iterate under the adjacency); the ``L`` steps compose by
:func:`dpgossip.privacy.accountant.composition_guarantee` (zCDP, RDP and PLD accountants).
"""

from __future__ import annotations

import math

from dpgossip.errors import ConfigError, check_choice
from dpgossip.privacy.accountant import Guarantee, composition_guarantee
from dpgossip.protocols.ppm.central import PpmParams, PpmResult
from dpgossip.protocols.ppm.sensitivity import ADJACENCIES, iterate_sensitivity

__all__ = ["ppm_guarantee", "realised_guarantee"]


def ppm_guarantee(params: PpmParams, delta: float, *, pld: bool = True) -> Guarantee:
    """The guarantee of :func:`dpgossip.protocols.ppm.central.run_ppm` with ``params``: ``L`` multipliers
    ``sigma``.

    It holds for ``params.adjacency`` with either sensitivity kind (both bound the true sensitivity).
    """
    if not isinstance(params, PpmParams):
        raise ConfigError(f"params must be a PpmParams, got {type(params).__name__}", field="params")
    return composition_guarantee((params.noise_multiplier,) * params.iterations, delta,
                                 adjacency=params.adjacency, pld=pld)


def realised_guarantee(result: PpmResult, delta: float, *, adjacency: str | None = None,
                       pld: bool = True) -> Guarantee:
    """The guarantee of a finished run for ``adjacency`` (default: the run's own).

    The multiplier of iteration ``l`` is ``noise_std_l / Delta_l``, with ``Delta_l`` the exact supremum
    (``"improved"`` kind) under ``adjacency`` at the recorded ``X^(l-1)``: e.g. a run calibrated for the
    element adjacency, read under row replacement (``Delta_l = sqrt(min(p, 2))``).

    Raises
    ------
    ConfigError
        ``result`` is not a :class:`~dpgossip.protocols.ppm.central.PpmResult`, ``adjacency`` unknown, bad
        ``delta``.
    """
    if not isinstance(result, PpmResult):
        raise ConfigError(f"result must be a PpmResult, got {type(result).__name__}", field="result")
    adjacency = result.params.adjacency if adjacency is None else adjacency
    check_choice(adjacency, "adjacency", ADJACENCIES)
    deltas = [iterate_sensitivity(V, adjacency, "improved") for V in result.iterates[:-1]]
    ratios = [std / D if D > 0 else math.inf for std, D in zip(result.noise_std, deltas, strict=True)]
    return composition_guarantee(ratios, delta, adjacency=adjacency, pld=pld)
