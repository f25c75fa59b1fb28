"""The protocol objects of the private power method of Nicolas et al.
(:class:`~dpgossip.protocols.interface.PrivateProtocol`): Algorithm 1 (``ppm``), Algorithm 2 with a server
(``ppm-federated``) and on a gossip graph (``ppm-gossip``), in the common view of
:class:`~dpgossip.protocols.interface.ProtocolRun`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dpgossip.data.partition import PartitionedData
from dpgossip.protocols.interface import ProtocolRun
from dpgossip.protocols.ppm.central import PpmParams, PpmResult, run_ppm, run_ppm_federated
from dpgossip.protocols.ppm.gossip import PpmGossipParams, run_ppm_gossip
from dpgossip.topology.network import Network
from dpgossip.topology.schedules import MixingSchedule

__all__ = ["Ppm", "PpmFederated", "PpmGossip"]


def _ppm_run(kind: str, res: PpmResult) -> ProtocolRun:
    k = res.params.k
    return ProtocolRun(kind=kind, side="right", trajectory=res.iterates[:, :, :k].copy(),
                       agent_finals=None, result=res)


@dataclass(frozen=True, slots=True)
class Ppm:
    """Nicolas et al.'s Algorithm 1 (trusted curator):
    :func:`~dpgossip.protocols.ppm.central.run_ppm`; no network."""

    params: PpmParams
    kind: ClassVar[str] = "ppm"
    side: ClassVar[str] = "right"

    def run(self, data: PartitionedData, network: Network,
            seed: int | np.random.SeedSequence) -> ProtocolRun:
        """:func:`run_ppm` in the common view (``network`` is not used)."""
        return _ppm_run(self.kind, run_ppm(data, self.params, seed))


@dataclass(frozen=True, slots=True)
class PpmFederated:
    """Nicolas et al.'s Algorithm 2 (a server, every agent a client, secure aggregation):
    :func:`~dpgossip.protocols.ppm.central.run_ppm_federated`; the graph is not used (a star to the
    server)."""

    params: PpmParams
    kind: ClassVar[str] = "ppm-federated"
    side: ClassVar[str] = "right"

    def run(self, data: PartitionedData, network: Network,
            seed: int | np.random.SeedSequence) -> ProtocolRun:
        """:func:`run_ppm_federated` in the common view."""
        return _ppm_run(self.kind, run_ppm_federated(data, self.params, seed))


@dataclass(frozen=True, slots=True)
class PpmGossip:
    """Nicolas et al.'s Algorithm 2 on the network: :func:`~dpgossip.protocols.ppm.gossip.run_ppm_gossip`.

    Agents end with their own iterates; ``trajectory`` is agent 0's (every agent's final estimate is in
    ``agent_finals``). ``schedule``: time-varying rounds (``None``: ``W`` every round).
    """

    params: PpmGossipParams
    schedule: MixingSchedule | None = None
    kind: ClassVar[str] = "ppm-gossip"
    side: ClassVar[str] = "right"

    def run(self, data: PartitionedData, network: Network,
            seed: int | np.random.SeedSequence) -> ProtocolRun:
        """:func:`run_ppm_gossip` in the common view."""
        res = run_ppm_gossip(data, network, self.params, seed, schedule=self.schedule)
        k = self.params.ppm.k
        return ProtocolRun(kind=self.kind, side=self.side,
                           trajectory=res.iterates[:, 0, :, :k].copy(),
                           agent_finals=res.iterates[-1, :, :, :k].copy(), result=res)
