"""The gossip-averaging kinds audited by a network-DP scenario (``[network_dp]``, docs/network-dp.md):
``gossip-average`` (noise once, then ``T`` rounds; Muffliato), ``gossip-noisy`` (fresh noise every round;
MFDL's model) and ``gossip-decor`` (DECOR's correlated edge noise).

They are registered so that every layer reads them from the registry (``dpgossip protocols``, the key
reference, the choices of ``[network_dp] protocol``), but they are not scenario points: they have no
``build``, and ``protocol.kind`` refuses them, naming the section that runs them
(:attr:`~dpgossip.protocols.registry.ProtocolKind.runs_points`). What differs between them is written
here once, for the network-DP scenario: :func:`default_inputs`, :func:`draws_edge_secrets`,
:func:`published_bounds` (the published bound that applies to an observer's view) and
:func:`view_size` (the largest view the exact audit builds).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dpgossip.protocols.gossip.bounds import (
    mfdl_abs_sum,
    muffliato_corrected,
    muffliato_per_message,
)
from dpgossip.protocols.gossip.linear import PROTOCOLS, LinearGossip
from dpgossip.protocols.registry import ProtocolKind, register
from dpgossip.topology.network import Network

__all__ = ["NETWORK_DP_SECTION", "default_inputs", "draws_edge_secrets", "published_bounds",
           "view_size"]

NETWORK_DP_SECTION = "network_dp"
"""The section of a network-DP scenario file, which names one of these kinds as its ``protocol``."""

_AVERAGE, _NOISY, _DECOR = PROTOCOLS


def default_inputs(protocol: str) -> str:
    """How the private input enters by default: once for ``gossip-average``, else the same every round."""
    return "once" if protocol == _AVERAGE else "fixed"


def draws_edge_secrets(protocol: str) -> bool:
    """Whether the kind draws pairwise edge secrets (``sigma_cor``): DECOR only."""
    return protocol == _DECOR


def published_bounds(network: Network, spec: LinearGossip, observer: int, alpha: float,
                     sensitivity: float, *, muffliato_rounds: Sequence[int] | None = None
                     ) -> dict[str, np.ndarray]:
    """The published bounds that apply to ``observer``'s view, by name.

    Muffliato's per-message sum (``"muffliato"``, over the powers ``muffliato_rounds``: default
    ``0..T-1``) for noise once; MFDL's absolute-value bound (``"mfdl"``) for noise every round, and
    with a new input every round also Muffliato's corrected form (arXiv Theorem 11): ``"corrected"``
    (``p = 1``, clipped at ``T``, as MFDL's code computes it), ``"corrected_p2"`` (``p = 2``, clipped)
    and ``"corrected_unclipped"`` (``p = 1``); none for ``gossip-decor`` (DECOR's closed form is about
    one round seen whole, not an observer's view).  Each is an array of Renyi values, one per target
    (:mod:`~dpgossip.protocols.gossip.bounds`).
    """
    if spec.protocol == _DECOR:
        return {}
    if spec.protocol == _AVERAGE:
        return {"muffliato": muffliato_per_message(network, spec, observer, order=alpha,
                                                   sensitivity=sensitivity, rounds=muffliato_rounds)}
    out = {"mfdl": mfdl_abs_sum(network, spec, observer, order=alpha, sensitivity=sensitivity)}
    if spec.inputs == "per-round":
        for name, power, clip in (("corrected", 1, True), ("corrected_p2", 2, True),
                                  ("corrected_unclipped", 1, False)):
            out[name] = muffliato_corrected(network, spec, observer, order=alpha,
                                            sensitivity=sensitivity, entry_power=power, clip=clip)
    return out


def view_size(network: Network, spec: LinearGossip) -> tuple[int, int, int]:
    """``(rows, columns, copies)`` of the largest view the exact audit builds: ``min(m, d_max T)`` rows
    by ``m`` columns for ``gossip-average`` (Krylov basis, ``J``, ``B`` and the SVD factors, about four
    such matrices), ``d_max T`` rows by ``m T`` columns (plus ``|E| T`` edge secrets for
    ``gossip-decor``) for the others (``d_max`` the largest degree)."""
    m, T = network.m, spec.rounds
    degree = max(len(n) for n in network.neighbours)
    if spec.protocol == _AVERAGE:
        return min(m, degree * T), m, 4
    secrets = network.graph.number_of_edges() * T if draws_edge_secrets(spec.protocol) else 0
    return degree * T, m * max(spec.data_rounds, spec.noise_rounds) + secrets, 4


_COMMON: dict[str, Any] = dict(family="gossip", side="average", views=("observer", "coalition"),
                               guarantee="none (exact pairwise audit, published bounds beside it)",
                               section=NETWORK_DP_SECTION)

register(ProtocolKind(name=_AVERAGE, estimates="the average of the agents' private values",
                      paper="Muffliato (noise once, then T rounds of gossip)", **_COMMON))
register(ProtocolKind(name=_NOISY, estimates="the average of the agents' private values",
                      paper="MFDL's model (fresh noise every round)", **_COMMON))
register(ProtocolKind(name=_DECOR, estimates="the average of the agents' private values",
                      paper="DECOR (correlated edge noise every round)", **_COMMON))
