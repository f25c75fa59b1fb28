"""Protocols whose common view is their own ``view`` (``capepca``, ``capepca-gossip``,
``ddppm-floorfree``) on the engine backend.

:class:`ViewEngineProtocol` wraps a :class:`~dpgossip.protocols.interface.CapePca`,
:class:`~dpgossip.protocols.interface.CapePcaGossip` or
:class:`~dpgossip.protocols.interface.DdppmFloorFree` (same ``kind``, ``side`` and ``params``) and runs it
with :func:`~dpgossip.protocols.cape.nodes.run_cape_engine` or
:func:`~dpgossip.protocols.ddppm.floorfree_nodes.run_floorfree_engine` under the given network conditions, as
:class:`~dpgossip.protocols.ppm.engine_protocol.EngineProtocol` does for the ``ppm*`` kinds.

The common view (:class:`~dpgossip.protocols.interface.ProtocolRun`) of an engine run is the wrapped
protocol's own ``view`` of the engine's result, the very code the matrix backend uses, so both
backends' views agree whenever their results do. A stopped run has no result (``None``); its view
has the matrix view's shapes filled with NaN:

* ``capepca``: ``trajectory`` ``(1, d, k)``;
* ``capepca-gossip``: ``trajectory`` ``(1, d, k)`` and ``agent_finals`` ``(m, d, k)``;
* ``ddppm-floorfree``: ``trajectory`` ``(T + 1, n, 1)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dpgossip.data.partition import PartitionedData
from dpgossip.protocols.cape.nodes import CapeEngineResult, run_cape_engine
from dpgossip.protocols.cape.protocol import CapePca, CapePcaGossip
from dpgossip.protocols.ddppm.floorfree_nodes import FloorFreeEngineResult, run_floorfree_engine
from dpgossip.protocols.ddppm.protocol import DdppmFloorFree
from dpgossip.protocols.interface import ProtocolRun
from dpgossip.protocols.nodes.wrapped import WrappedProtocol
from dpgossip.topology.network import Network

__all__ = ["ViewEngineProtocol"]

ViewEngineResult = CapeEngineResult | FloorFreeEngineResult


@dataclass(frozen=True, slots=True)
class ViewEngineProtocol(WrappedProtocol):
    """A ``capepca``, ``capepca-gossip`` or ``ddppm-floorfree`` protocol object run on the engine under
    ``conditions`` (ideal links by default)."""

    protocol: CapePca | CapePcaGossip | DdppmFloorFree
    ACCEPTS: ClassVar[tuple[type, ...]] = (CapePca, CapePcaGossip, DdppmFloorFree)

    def run_engine(self, data: PartitionedData, network: Network,
                   seed: int | np.random.SeedSequence) -> ViewEngineResult:
        """One engine run (status, traffic, the protocol's result or ``None`` when it stopped)."""
        if isinstance(self.protocol, DdppmFloorFree):
            return run_floorfree_engine(data, network, self.protocol.params, seed,
                                        conditions=self.conditions,
                                        record_transcript=self.record_transcript)
        return run_cape_engine(self.kind, data, network, self.protocol.params, seed,
                               conditions=self.conditions, record_transcript=self.record_transcript,
                               schedule=getattr(self.protocol, "schedule", None))

    def protocol_run(self, res: ViewEngineResult, data: PartitionedData) -> ProtocolRun:
        """The common view of an engine run (module docstring; NaN when the run stopped)."""
        if res.result is not None:
            return self.protocol.view(res.result, data)
        if isinstance(self.protocol, DdppmFloorFree):
            T = self.protocol.params.iterations
            return ProtocolRun(kind=self.kind, side=self.side, trajectory=np.full((T + 1, data.n, 1), np.nan),
                               agent_finals=None, result=None)
        k = self.protocol.params.k
        finals = np.full((data.m, data.d, k), np.nan) if isinstance(self.protocol, CapePcaGossip) else None
        return ProtocolRun(kind=self.kind, side=self.side, trajectory=np.full((1, data.d, k), np.nan),
                           agent_finals=finals, result=None)

    def run(self, data: PartitionedData, network: Network,
            seed: int | np.random.SeedSequence) -> ProtocolRun:
        """:meth:`run_engine` in the common view."""
        return self.protocol_run(self.run_engine(data, network, seed), data)
