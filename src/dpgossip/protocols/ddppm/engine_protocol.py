"""D-DP-PM (:class:`~dpgossip.protocols.ddppm.protocol.Ddppm`) on the engine backend.

:class:`DdppmEngineProtocol` wraps a :class:`~dpgossip.protocols.ddppm.protocol.Ddppm` (same ``kind``,
``side`` and ``params``) and runs it with :func:`~dpgossip.protocols.ddppm.nodes.run_engine` under the
given network conditions, as :class:`~dpgossip.protocols.ppm.engine_protocol.EngineProtocol` does for
the ``ppm*`` kinds. The common view of an engine run is the wrapped protocol's own
:meth:`~dpgossip.protocols.ddppm.protocol.Ddppm.view`, the very code of the matrix backend; a stopped
run's iterates are NaN where nothing was computed, and so is its view.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dpgossip.data.partition import PartitionedData
from dpgossip.protocols.ddppm.engine_result import EngineResult
from dpgossip.protocols.ddppm.nodes import run_engine
from dpgossip.protocols.ddppm.protocol import Ddppm
from dpgossip.protocols.interface import ProtocolRun
from dpgossip.protocols.nodes.wrapped import WrappedProtocol
from dpgossip.topology.network import Network

__all__ = ["DdppmEngineProtocol"]


@dataclass(frozen=True, slots=True)
class DdppmEngineProtocol(WrappedProtocol):
    """A :class:`Ddppm` run on the engine under ``conditions`` (ideal links by default)."""

    protocol: Ddppm
    ACCEPTS: ClassVar[tuple[type, ...]] = (Ddppm,)

    def run_engine(self, data: PartitionedData, network: Network,
                   seed: int | np.random.SeedSequence) -> EngineResult:
        """One engine run (status, traffic, transcript when recorded, every iterate)."""
        return run_engine(data, network, self.protocol.params, seed, conditions=self.conditions,
                          record_transcript=self.record_transcript)

    def protocol_run(self, res: EngineResult, data: PartitionedData) -> ProtocolRun:
        """An engine run in the common view (``data`` unused)."""
        return self.protocol.view(res)

    def run(self, data: PartitionedData, network: Network,
            seed: int | np.random.SeedSequence) -> ProtocolRun:
        """:meth:`run_engine` in the common view."""
        return self.protocol_run(self.run_engine(data, network, seed), data)
