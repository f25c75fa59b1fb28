"""The ``ppm*`` protocols of :mod:`dpgossip.protocols.interface` on the engine backend.

:class:`EngineProtocol` wraps a :class:`~dpgossip.protocols.interface.Ppm`,
:class:`~dpgossip.protocols.interface.PpmFederated` or :class:`~dpgossip.protocols.interface.PpmGossip`
(same ``kind``, ``side`` and ``params``) and runs it with
:func:`~dpgossip.protocols.ppm.nodes.run_ppm_engine`; :func:`engine_protocol_run` puts an engine run in the
common view of :class:`~dpgossip.protocols.interface.ProtocolRun` exactly as the matrix backend's objects
do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dpgossip.data.partition import PartitionedData
from dpgossip.protocols.interface import ProtocolRun
from dpgossip.protocols.nodes.wrapped import WrappedProtocol
from dpgossip.protocols.ppm.gossip import PpmGossipResult
from dpgossip.protocols.ppm.nodes import PpmEngineResult, run_ppm_engine
from dpgossip.protocols.ppm.protocol import Ppm, PpmFederated, PpmGossip
from dpgossip.topology.network import Network

__all__ = ["EngineProtocol", "engine_protocol_run"]


def engine_protocol_run(res: PpmEngineResult) -> ProtocolRun:
    """The common view of an engine run: ``trajectory`` is the server's iterates (star kinds) or agent
    0's (ppm-gossip, with every agent's final estimate in ``agent_finals``); ``result`` the protocol's
    own result (:class:`~dpgossip.protocols.ppm.central.PpmResult` or :class:`PpmGossipResult`)."""
    run = res.result
    if isinstance(run, PpmGossipResult):
        k = run.params.ppm.k
        return ProtocolRun(kind=res.kind, side="right", trajectory=run.iterates[:, 0, :, :k].copy(),
                           agent_finals=run.iterates[-1, :, :, :k].copy(), result=run)
    return ProtocolRun(kind=res.kind, side="right", trajectory=run.iterates[:, :, : run.params.k].copy(),
                       agent_finals=None, result=run)


@dataclass(frozen=True, slots=True)
class EngineProtocol(WrappedProtocol):
    """A ``ppm*`` protocol object run on the engine under ``conditions`` (ideal links by default)."""

    protocol: Ppm | PpmFederated | PpmGossip
    ACCEPTS: ClassVar[tuple[type, ...]] = (Ppm, PpmFederated, PpmGossip)

    def run_engine(self, data: PartitionedData, network: Network,
                   seed: int | np.random.SeedSequence) -> PpmEngineResult:
        """One engine run (status, traffic, transcript when recorded)."""
        return run_ppm_engine(self.kind, data, network, self.params, seed, conditions=self.conditions,
                              record_transcript=self.record_transcript,
                              schedule=getattr(self.protocol, "schedule", None))

    def protocol_run(self, res: PpmEngineResult, data: PartitionedData) -> ProtocolRun:
        """An engine run in the common view (:func:`engine_protocol_run`; ``data`` unused)."""
        return engine_protocol_run(res)

    def run(self, data: PartitionedData, network: Network,
            seed: int | np.random.SeedSequence) -> ProtocolRun:
        """:meth:`run_engine` in the common view."""
        return engine_protocol_run(self.run_engine(data, network, seed))
