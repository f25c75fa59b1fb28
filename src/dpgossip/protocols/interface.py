"""One interface for every private PCA protocol: what a run returns, and the registry of kinds.

A protocol is an object with a ``kind`` (its name in a scenario's ``protocol.kind``), a ``side``
(what it estimates) and ``run(data, network, seed) -> ProtocolRun``. The run keeps the protocol's own
result (``result``: e.g. :class:`~dpgossip.protocols.ddppm.result.RunResult` of D-DP-PM or
:class:`~dpgossip.protocols.ppm.central.PpmResult`) for the layers that need its details (the auditor, the
engine's comparison), and a common view for measurement:

* ``trajectory[t]`` (``t = 0..L``): the estimate released after iteration ``t``, ``dim x k`` with
  unit columns (orthonormal for the ``ppm*`` kinds, whose iterates are QR factors; D-DP-PM's
  components, computed one after another by a noisy deflation, need not be orthogonal);
* ``final``: the protocol's output (``trajectory[L]``);
* ``agent_finals``: each agent's own final estimate when agents end with different ones (gossip
  protocols with finite ``c``), else ``None``.

Sides. D-DP-PM estimates the **left** singular vectors of ``X`` (``n``-dimensional, one slice per
agent: ``q = alpha X z``); the power method of 000 (``ppm*``) estimates the top-``k`` **right**
singular subspace, of ``A = X^T X`` (``d``-dimensional). Both are measured by the subspace distance
``||(I - U U^T) U_hat||_2`` (the sine of the largest principal angle) to the exact subspace of their
own side, so their errors are on the same scale in ``[0, 1]``.

The guarantee a protocol's paper proves and the per-instance audit live in the privacy layer
(:mod:`dpgossip.privacy.accountant`, :mod:`dpgossip.protocols.ppm.audit`), which may import this module
and never the reverse.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable

import numpy as np

from dpgossip.data.partition import PartitionedData
from dpgossip.errors import ConfigError, check_choice
from dpgossip.protocols.cape.gossip import CapeGossipParams, CapeGossipResult, run_cape_gossip
from dpgossip.protocols.cape.star import CapeParams, CapeResult, run_cape
from dpgossip.protocols.ddppm.floorfree import FloorFreeParams, FloorFreeResult, run_floorfree
from dpgossip.protocols.ddppm.matrix import run_matrix
from dpgossip.protocols.ddppm.params import ProtocolParams
from dpgossip.protocols.metrics import subspace_distance
from dpgossip.protocols.ppm.central import PpmParams, PpmResult, run_ppm, run_ppm_federated
from dpgossip.protocols.ppm.gossip import PpmGossipParams, run_ppm_gossip
from dpgossip.topology.network import Network

__all__ = ["ProtocolRun", "PrivateProtocol", "Ddppm", "Ppm", "PpmFederated", "PpmGossip",
           "CapePca", "CapePcaGossip", "DdppmFloorFree", "PROTOCOL_KINDS",
           "SIDES", "exact_subspace"]

PROTOCOL_KINDS: tuple[str, ...] = ("ddppm", "ppm", "ppm-federated", "ppm-gossip", "capepca",
                                   "capepca-gossip", "ddppm-floorfree")
"""Every value of ``protocol.kind``; ``ddppm`` (001, Algorithm 1) is the default. ``capepca`` (004,
Algorithm 2 on a star), ``capepca-gossip`` (its gossip form, docs/cape-gossip.md) and
``ddppm-floorfree`` (docs/floorfree.md) are the CAPE and floor-free kinds."""

SIDES: tuple[str, ...] = ("left", "right")
"""``left``: ``n``-dimensional left singular vectors of ``X``; ``right``: ``d``-dimensional right ones."""


def exact_subspace(X: np.ndarray, k: int, side: str) -> np.ndarray:
    """The exact top-``k`` singular subspace of ``X`` on ``side`` (orthonormal columns, by SVD)."""
    check_choice(side, "side", SIDES)
    U, _, Vt = np.linalg.svd(np.asarray(X, dtype=float), full_matrices=False)
    return U[:, :k].copy() if side == "left" else Vt[:k].T.copy()


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class ProtocolRun:
    """One run of any protocol, in the common view of the module docstring."""

    kind: str
    side: str
    trajectory: np.ndarray
    """``(L + 1, dim, k)``: the released estimate after each iteration (unit columns)."""
    agent_finals: np.ndarray | None
    """``(m, dim, k)``: each agent's own final estimate, or ``None`` when all hold ``final``."""
    result: object
    """The protocol's own result (``RunResult``, ``PpmResult``, ...)."""

    @property
    def final(self) -> np.ndarray:
        """``(dim, k)``: the protocol's output."""
        return self.trajectory[-1]

    def errors(self, truth: np.ndarray) -> np.ndarray:
        """``(L + 1,)``: subspace distance of each iterate's estimate to ``truth`` (``dim x k``)."""
        return np.array([_distance(truth, V) for V in self.trajectory])

    def agent_errors(self, truth: np.ndarray) -> np.ndarray:
        """``(m,)`` subspace distance of each agent's final estimate (the output's when all agree)."""
        if self.agent_finals is None:
            return np.array([_distance(truth, self.final)])
        return np.array([_distance(truth, V) for V in self.agent_finals])


def _distance(truth: np.ndarray, V: np.ndarray) -> float:
    """:func:`subspace_distance`, NaN for an estimate that is not finite or has a zero column (the
    arithmetic broke down; the run's status says so)."""
    V2 = np.asarray(V).reshape(np.shape(V)[0], -1)
    if not np.isfinite(V2).all() or np.any(np.linalg.norm(V2, axis=0) == 0):
        return float("nan")
    return subspace_distance(truth, V)


@runtime_checkable
class PrivateProtocol(Protocol):
    """What the scenario layer needs of a protocol: its kind, its side and a run."""

    kind: ClassVar[str]
    side: ClassVar[str]

    def run(self, data: PartitionedData, network: Network,
            seed: int | np.random.SeedSequence) -> ProtocolRun:
        """One run on ``data`` (and, for decentralised protocols, on ``network``)."""
        ...


def _normalised_columns(Q: np.ndarray) -> np.ndarray:
    """Columns of ``Q`` scaled to unit norm (a zero column stays zero)."""
    norms = np.linalg.norm(Q, axis=0)
    return Q / np.where(norms > 0, norms, 1.0)


@dataclass(frozen=True, slots=True)
class Ddppm:
    """D-DP-PM (001, Algorithm 1) on the matrix backend: :func:`~dpgossip.protocols.ddppm.matrix.run_matrix`.

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
        res = run_matrix(data, network, self.params, seed)
        traj = np.stack([_normalised_columns(res.iterates[:, t, :].T)
                         for t in range(res.iterates.shape[1])])
        traj[-1] = res.Q
        return ProtocolRun(kind=self.kind, side=self.side, trajectory=traj, agent_finals=None,
                           result=res)


def _ppm_run(kind: str, res: PpmResult) -> ProtocolRun:
    k = res.params.k
    return ProtocolRun(kind=kind, side="right", trajectory=res.iterates[:, :, :k].copy(),
                       agent_finals=None, result=res)


@dataclass(frozen=True, slots=True)
class Ppm:
    """000's Algorithm 1 (trusted curator): :func:`~dpgossip.protocols.ppm.central.run_ppm`; no network."""

    params: PpmParams
    kind: ClassVar[str] = "ppm"
    side: ClassVar[str] = "right"

    def run(self, data: PartitionedData, network: Network,
            seed: int | np.random.SeedSequence) -> ProtocolRun:
        """:func:`run_ppm` in the common view (``network`` is not used)."""
        return _ppm_run(self.kind, run_ppm(data, self.params, seed))


@dataclass(frozen=True, slots=True)
class PpmFederated:
    """000's Algorithm 2 (a server, every agent a client, secure aggregation):
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
    """000's Algorithm 2 on the network: :func:`~dpgossip.protocols.ppm.gossip.run_ppm_gossip`.

    Agents end with their own iterates; ``trajectory`` is agent 0's (every agent's final estimate is in
    ``agent_finals``).
    """

    params: PpmGossipParams
    kind: ClassVar[str] = "ppm-gossip"
    side: ClassVar[str] = "right"

    def run(self, data: PartitionedData, network: Network,
            seed: int | np.random.SeedSequence) -> ProtocolRun:
        """:func:`run_ppm_gossip` in the common view."""
        res = run_ppm_gossip(data, network, self.params, seed)
        k = self.params.ppm.k
        return ProtocolRun(kind=self.kind, side=self.side,
                           trajectory=res.iterates[:, 0, :, :k].copy(),
                           agent_finals=res.iterates[-1, :, :, :k].copy(), result=res)


@dataclass(frozen=True, slots=True)
class CapePca:
    """capePCA (004, Algorithm 2) on a star, every agent a site:
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
    ``trajectory`` holds agent 0's (one entry: the protocol is one-shot).
    """

    params: CapeGossipParams
    kind: ClassVar[str] = "capepca-gossip"
    side: ClassVar[str] = "right"

    def run(self, data: PartitionedData, network: Network,
            seed: int | np.random.SeedSequence) -> ProtocolRun:
        """:func:`run_cape_gossip` in the common view."""
        return self.view(run_cape_gossip(data, network, self.params, seed), data)

    def view(self, res: CapeGossipResult, data: PartitionedData) -> ProtocolRun:
        """A :class:`CapeGossipResult` (of either backend) in the common view: every agent's top-``k``
        eigenvectors, agent 0's as the trajectory (``data`` unused)."""
        finals = res.eigenvectors[:, :, : self.params.k].copy()
        return ProtocolRun(kind=self.kind, side=self.side, trajectory=finals[:1].copy(),
                           agent_finals=finals, result=res)


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
        traj = np.stack([_normalised_columns(np.einsum("nd,nd->n", X, U[owner])[:, None])
                         for U in res.directions])
        traj[-1] = res.Q
        return ProtocolRun(kind=self.kind, side=self.side, trajectory=traj, agent_finals=None,
                           result=res)
