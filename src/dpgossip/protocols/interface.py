"""One interface for every private PCA protocol: what a run returns.

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
agent: ``q = alpha X z``); the power method of Nicolas et al. (``ppm*``) estimates the top-``k`` **right**
singular subspace, of ``A = X^T X`` (``d``-dimensional). Both are measured by the subspace distance
``||(I - U U^T) U_hat||_2`` (the sine of the largest principal angle) to the exact subspace of their
own side, so their errors are on the same scale in ``[0, 1]``.

The protocol objects live in their homes (e.g. :class:`dpgossip.protocols.ppm.protocol.Ppm`), and the
values of ``protocol.kind`` in the registry (:mod:`dpgossip.protocols.registry`).

The guarantee a protocol's paper proves and the per-instance audit live in the privacy layer
(:mod:`dpgossip.privacy.accountant`, :mod:`dpgossip.protocols.ppm.audit`), which may import this module
and never the reverse.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable

import numpy as np

from dpgossip.data.partition import PartitionedData
from dpgossip.errors import check_choice
from dpgossip.protocols.metrics import subspace_distance
from dpgossip.topology.network import Network

__all__ = ["ProtocolRun", "PrivateProtocol", "SIDES", "exact_subspace", "normalised_columns"]

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


def normalised_columns(Q: np.ndarray) -> np.ndarray:
    """Columns of ``Q`` scaled to unit norm (a zero column stays zero)."""
    norms = np.linalg.norm(Q, axis=0)
    return Q / np.where(norms > 0, norms, 1.0)
