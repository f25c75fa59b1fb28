"""The guarantee and audit columns of one run of ``ddppm-floorfree`` (docs/floorfree.md).

``guaranteed_epsilon`` is the PLD accountant's epsilon of the composed Gaussian mechanisms of
multiplier ``s`` (:func:`dpgossip.protocols.ddppm.floorfree_guarantee.floorfree_guarantee`;
``gdp_epsilon`` is the exact ``mu``-GDP figure); ``audited_epsilon`` the audit of the eavesdropper, who
sees every release the guarantee covers (:func:`dpgossip.protocols.ddppm.floorfree_audit.audit_floorfree`:
exact for the neighbour it reports, a lower estimate of the per-instance worst case).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dpgossip.data.partition import PartitionedData
from dpgossip.protocols.ddppm.floorfree import FloorFreeResult
from dpgossip.protocols.ddppm.floorfree_audit import audit_floorfree
from dpgossip.protocols.ddppm.floorfree_guarantee import floorfree_guarantee
from dpgossip.topology.network import Network

__all__ = ["floorfree_columns"]


def floorfree_columns(data: PartitionedData, network: Network, result: FloorFreeResult,
                      ff: Mapping[str, Any]) -> dict[str, Any]:
    """The columns of one run (module docstring); ``ff`` is the point's ``[floorfree]``."""
    g = floorfree_guarantee(result.params, ff["delta"])
    row: dict[str, Any] = {"guarantee_delta": ff["delta"], "guaranteed_epsilon": g.epsilon_pld,
                           "gdp_epsilon": g.epsilon_gdp, "guarantee_accountant": "pld",
                           "adjacency": ff["adjacency"]}
    if ff["audit"]:
        targets = None if ff["audit_targets"] is None else range(min(ff["audit_targets"], data.m))
        pairs = audit_floorfree(data, network, result, delta=ff["delta"], view="eavesdropper",
                                targets=targets, rows=ff["audit_rows"])
        audited = max(p.epsilon for p in pairs)
        row.update({"audited_epsilon": audited, "audit_view": "eavesdropper (every release)",
                    "audit_exceeds_guarantee": bool(audited > g.epsilon_pld * (1 + 1e-6))})
    return row
