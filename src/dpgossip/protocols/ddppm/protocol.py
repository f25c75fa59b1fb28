"""The D-DP-PM protocol objects (:class:`~dpgossip.protocols.interface.PrivateProtocol`): D-DP-PM
(Campbell et al., Algorithm 1) and its floor-free variant (docs/floorfree.md), in the common view of
:class:`~dpgossip.protocols.interface.ProtocolRun`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dpgossip.data.partition import PartitionedData
from dpgossip.errors import ConfigError
from dpgossip.protocols.ddppm.floorfree import FloorFreeParams, FloorFreeResult, run_floorfree
from dpgossip.protocols.ddppm.matrix import run_matrix
from dpgossip.protocols.ddppm.params import ProtocolParams
from dpgossip.protocols.ddppm.result import RunResult
from dpgossip.protocols.interface import ProtocolRun, normalised_columns
from dpgossip.topology.network import Network

__all__ = ["Ddppm", "DdppmFloorFree"]


@dataclass(frozen=True, slots=True)
class Ddppm:
    """D-DP-PM (Campbell et al., Algorithm 1) on the matrix backend:
    :func:`~dpgossip.protocols.ddppm.matrix.run_matrix`.

    ``trajectory[t]`` holds, in column ``l``, component ``l``'s normalised iterate ``q_l^(t)``
    (components are computed one after another by deflation, so column ``l`` at ``t`` is not
    simultaneous with column ``l + 1`` at ``t``); ``final`` is ``Q`` of Algorithm 1, line 9.
    """

    params: ProtocolParams
    kind: ClassVar[str] = "ddppm"
    side: ClassVar[str] = "left"

    def run(self, data: PartitionedData, network: Network,
            seed: int | np.random.SeedSequence) -> ProtocolRun:
        """:func:`run_matrix` in the common view."""
        return self.view(run_matrix(data, network, self.params, seed))

    def view(self, res: RunResult) -> ProtocolRun:
        """A run of either backend (:class:`RunResult`: the matrix backend's, or the engine's
        :class:`~dpgossip.protocols.ddppm.engine_result.EngineResult`) in the common view."""
        traj = np.stack([normalised_columns(res.iterates[:, t, :].T)
                         for t in range(res.iterates.shape[1])])
        traj[-1] = res.Q
        return ProtocolRun(kind=self.kind, side=self.side, trajectory=traj, agent_finals=None,
                           result=res)


@dataclass(frozen=True, slots=True)
class DdppmFloorFree:
    """The floor-free D-DP-PM (rank 1): :func:`~dpgossip.protocols.ddppm.floorfree.run_floorfree`.

    Side ``left``, as D-DP-PM: ``trajectory[t]`` (``t < T``) is ``q^(t) = X_i u_i^(t)`` on each agent's
    rows, normalised (internal, never sent); ``trajectory[T]`` is the released ``Q`` (the
    disseminated ``q^(T)``, normalised).
    """

    params: FloorFreeParams
    rank: int = 1
    kind: ClassVar[str] = "ddppm-floorfree"
    side: ClassVar[str] = "left"

    def __post_init__(self) -> None:
        """Refuse a rank other than 1 (the variant estimates the top component only)."""
        if self.rank != 1:
            raise ConfigError(f"rank: must be 1 for the floor-free D-DP-PM (it estimates the top "
                              f"component only), got {self.rank!r}", field="rank")

    def run(self, data: PartitionedData, network: Network,
            seed: int | np.random.SeedSequence) -> ProtocolRun:
        """:func:`run_floorfree` in the common view."""
        return self.view(run_floorfree(data, network, self.params, seed), data)

    def view(self, res: FloorFreeResult, data: PartitionedData) -> ProtocolRun:
        """A :class:`FloorFreeResult` (of either backend) in the common view: ``trajectory[t]`` the
        normalised ``X_i u_i^(t)`` on each agent's rows (``t < T``), ``trajectory[T] = Q``."""
        owner = data.agent_of_row()
        X = np.asarray(data.X, dtype=float)
        traj = np.stack([normalised_columns(np.einsum("nd,nd->n", X, U[owner])[:, None])
                         for U in res.directions])
        traj[-1] = res.Q
        return ProtocolRun(kind=self.kind, side=self.side, trajectory=traj, agent_finals=None,
                           result=res)
