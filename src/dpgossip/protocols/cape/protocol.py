"""The capePCA protocol objects (:class:`~dpgossip.protocols.interface.PrivateProtocol`): capePCA
(Imtiaz and Sarwate, Algorithm 2) on a star (``capepca``) and its gossip form (``capepca-gossip``,
docs/cape-gossip.md), in the
common view of :class:`~dpgossip.protocols.interface.ProtocolRun`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dpgossip.data.partition import PartitionedData
from dpgossip.protocols.cape.gossip import CapeGossipParams, CapeGossipResult, run_cape_gossip
from dpgossip.protocols.cape.star import CapeParams, CapeResult, run_cape
from dpgossip.protocols.interface import ProtocolRun
from dpgossip.topology.network import Network
from dpgossip.topology.schedules import MixingSchedule

__all__ = ["CapePca", "CapePcaGossip"]


@dataclass(frozen=True, slots=True)
class CapePca:
    """capePCA (Imtiaz and Sarwate, Algorithm 2) on a star, every agent a site:
    :func:`~dpgossip.protocols.cape.star.run_cape`.

    One-shot: ``trajectory`` has one entry, the top-``k`` eigenvectors ``V_K`` of the aggregate
    ``(1/S) sum_s (A_s + G_s)``, ``A_s = X_s^T X_s / N_s`` (side ``right``: an estimate of the top
    eigenvectors of ``X^T X / N`` when the sites have equal sizes). The graph is not used.
    """

    params: CapeParams
    kind: ClassVar[str] = "capepca"
    side: ClassVar[str] = "right"

    def run(self, data: PartitionedData, network: Network,
            seed: int | np.random.SeedSequence) -> ProtocolRun:
        """:func:`run_cape` in the common view (``network`` is not used)."""
        return self.view(run_cape(data, self.params, seed), data)

    def view(self, res: CapeResult, data: PartitionedData) -> ProtocolRun:
        """A :class:`CapeResult` (of either backend) in the common view: ``trajectory = [V_K]``
        (``data`` unused)."""
        return ProtocolRun(kind=self.kind, side=self.side, trajectory=res.components[None].copy(),
                           agent_finals=None, result=res)


@dataclass(frozen=True, slots=True)
class CapePcaGossip:
    """capepca-gossip: :func:`~dpgossip.protocols.cape.gossip.run_cape_gossip` on the network.

    Each agent ends with the top-``k`` eigenvectors of its own gossip estimate (``agent_finals``);
    ``trajectory`` holds agent 0's (one entry: the protocol is one-shot). ``schedule``: time-varying
    rounds (``None``: ``W`` every round).
    """

    params: CapeGossipParams
    schedule: MixingSchedule | None = None
    kind: ClassVar[str] = "capepca-gossip"
    side: ClassVar[str] = "right"

    def run(self, data: PartitionedData, network: Network,
            seed: int | np.random.SeedSequence) -> ProtocolRun:
        """:func:`run_cape_gossip` in the common view."""
        return self.view(run_cape_gossip(data, network, self.params, seed, schedule=self.schedule), data)

    def view(self, res: CapeGossipResult, data: PartitionedData) -> ProtocolRun:
        """A :class:`CapeGossipResult` (of either backend) in the common view: every agent's top-``k``
        eigenvectors, agent 0's as the trajectory (``data`` unused)."""
        finals = res.eigenvectors[:, :, : self.params.k].copy()
        return ProtocolRun(kind=self.kind, side=self.side, trajectory=finals[:1].copy(),
                           agent_finals=finals, result=res)
