"""The guarantee, audit and direction-error columns of one run of ``ddppm-floorfree`` (docs/floorfree.md).

``guaranteed_epsilon`` is the PLD accountant's epsilon of the composed Gaussian mechanisms of
multiplier ``s`` (:func:`dpgossip.protocols.ddppm.floorfree_guarantee.floorfree_guarantee`;
``gdp_epsilon`` is the exact ``mu``-GDP figure, ``rdp_epsilon`` the RDP accountant's);
``audited_epsilon`` the audit of the eavesdropper, who sees every release the guarantee covers
(:func:`dpgossip.protocols.ddppm.floorfree_audit.audit_floorfree`: exact for the neighbour it reports, a
lower estimate of the per-instance worst case), attained by replacing row ``audited_row`` (a global
row index) of agent ``audited_target``, and ``audited_epsilon_upper`` the audit's certified upper end
(the largest over the audited targets, valid for every neighbour). Without noise (``s = 0``) the audit
is not searched: a changed row moves the releases deterministically, so both epsilons are ``inf`` (and
the target and row are ``-1``).

``max_direction_error`` is the error of the right singular vector: the largest ``sin(v_1, u_i^(T))``
over the agents of their final directions (every agent holds one; ``error``, the runner's column, is
that of the left singular vector ``q^(T)``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from dpgossip.data.partition import PartitionedData
from dpgossip.protocols.ddppm.floorfree import FloorFreeResult
from dpgossip.protocols.ddppm.floorfree_audit import audit_floorfree
from dpgossip.protocols.ddppm.floorfree_guarantee import floorfree_guarantee
from dpgossip.protocols.metrics import sin_angle
from dpgossip.topology.network import Network

__all__ = ["floorfree_columns", "max_direction_error"]


def max_direction_error(data: PartitionedData, result: FloorFreeResult) -> float:
    """The largest ``sin(v_1, u_i^(T))`` over the agents whose final direction is finite (``v_1`` the
    top right singular vector of ``X``); NaN when no agent holds one (an engine run that stopped)."""
    v1 = np.linalg.svd(np.asarray(data.X, dtype=float), full_matrices=False)[2][0]
    finals = [u for u in result.directions[-1] if np.isfinite(u).all()]
    return max((sin_angle(v1, u) for u in finals), default=math.nan)


def _audit(data: PartitionedData, network: Network, result: FloorFreeResult,
           ff: Mapping[str, Any]) -> dict[str, Any]:
    """The eavesdropper's audit columns (module docstring)."""
    if result.params.noise_multiplier == 0:
        return {"audited_epsilon": math.inf, "audited_target": -1, "audited_row": -1,
                "audited_epsilon_upper": math.inf}
    targets = None if ff["audit_targets"] is None else range(min(ff["audit_targets"], data.m))
    pairs = audit_floorfree(data, network, result, delta=ff["delta"], view="eavesdropper",
                            targets=targets, rows=ff["audit_rows"])
    worst = max(pairs, key=lambda p: p.epsilon)
    return {"audited_epsilon": worst.epsilon, "audited_target": worst.target, "audited_row": worst.row,
            "audited_epsilon_upper": max(p.epsilon_upper for p in pairs)}


def floorfree_columns(data: PartitionedData, network: Network, result: FloorFreeResult,
                      ff: Mapping[str, Any]) -> dict[str, Any]:
    """The columns of one run (module docstring); ``ff`` is the point's ``[floorfree]``."""
    g = floorfree_guarantee(result.params, ff["delta"])
    row: dict[str, Any] = {"guarantee_delta": ff["delta"], "guaranteed_epsilon": g.epsilon_pld,
                           "gdp_epsilon": g.epsilon_gdp, "rdp_epsilon": g.epsilon_rdp,
                           "guarantee_accountant": "pld", "adjacency": ff["adjacency"],
                           "max_direction_error": max_direction_error(data, result)}
    if ff["audit"]:
        audit = _audit(data, network, result, ff)
        row.update({**audit, "audit_view": "eavesdropper (every release)",
                    "audit_exceeds_guarantee": bool(audit["audited_epsilon"] > g.epsilon_pld * (1 + 1e-6))})
    return row
