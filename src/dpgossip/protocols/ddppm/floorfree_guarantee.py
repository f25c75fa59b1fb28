"""The data-independent guarantee of the floor-free D-DP-PM (docs/floorfree.md, Section 3).

Treat everything the network could see as released: every noisy gossip input ``z~^(t)`` (every gossip
message is a linear function of it) and the disseminated ``q^(T)``. Release ``t`` is

    z~^(t) = D^T X u^(t-1) + e^(t)      (u^(t-1) a function of z~^(1..t-1) only; u^(0) public),

so, conditionally on the earlier releases, it is a Gaussian mechanism on the data with l2 sensitivity
``Delta_z = 1`` (:func:`dpgossip.protocols.ddppm.floorfree.rank_two_norm`) and noise std
``sigma_z = s Delta_z``: noise multiplier ``s``. The final ``q^(T) = X u^(T) + p`` has sensitivity
``Delta_q`` (1 bounded, 2 replace-one) and std ``s Delta_q``: multiplier ``s``. The run is the adaptive
composition of ``T + 1`` Gaussian mechanisms of multiplier ``s`` (``T`` without dissemination), which
:func:`dpgossip.privacy.accountant.composition_guarantee` accounts with ``dp_accounting`` (RDP, PLD) and
exactly as ``mu``-GDP with ``mu = sqrt(T + 1) / s`` (Dong-Roth-Su, Cor. 3.3). It holds for every dataset
and every view (each view is a post-processing of these releases), and tends to zero as ``s`` grows.
"""

from __future__ import annotations

import math

from dpgossip.errors import ConfigError
from dpgossip.privacy.accountant import Guarantee, composition_guarantee
from dpgossip.protocols.ddppm.floorfree import FloorFreeParams

__all__ = ["floorfree_guarantee", "floorfree_mu"]


def _params(params: object) -> FloorFreeParams:
    if not isinstance(params, FloorFreeParams):
        raise ConfigError(f"params must be a FloorFreeParams, got {type(params).__name__}",
                          field="params")
    return params


def floorfree_mu(params: FloorFreeParams) -> float:
    """GDP parameter of the whole run: ``mu = sqrt(releases) / s`` (``inf`` at ``s = 0``)."""
    p = _params(params)
    return math.inf if p.noise_multiplier == 0 else math.sqrt(p.releases()) / p.noise_multiplier


def floorfree_guarantee(params: FloorFreeParams, delta: float, *, pld: bool = True) -> Guarantee:
    """``(eps, delta)`` of :func:`~dpgossip.protocols.ddppm.floorfree.run_floorfree` with ``params``.

    ``releases()`` Gaussian mechanisms of noise multiplier ``s`` composed adaptively (module docstring):
    ``epsilon_gdp`` is exact for the dominating ``mu``-GDP pair, ``epsilon_pld`` and ``epsilon_rdp``
    come from ``dp_accounting``.
    """
    p = _params(params)
    return composition_guarantee((p.noise_multiplier,) * p.releases(), delta, adjacency=p.adjacency,
                                 pld=pld)
