"""The component auditor: one factorisation per view, then every candidate neighbour by a low-rank update.

For a component run on data ``X`` (docs/model.md, Sections 1-4):

1. for each view, ``S_0 = G_0 G_0^T`` from the matrix-free operator and its pivoted Cholesky factor;
2. for a neighbour ``X'``, the row space ``C`` of ``G_1 - G_0`` (randomised, on the full view, shared by all
   views), then per view the nontrivial generalised eigenvalues of ``(S_1, S_0)``
   (:func:`~dpgossip.protocols.ddppm.lowrank.pencil_eigenvalues`);
3. a :class:`~dpgossip.privacy.gaussian_pair.GaussianPair` built from those eigenvalues (means are zero
   under both datasets in the joint views, so the whitened mean difference is zero).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

import numpy as np

from dpgossip.data.partition import PartitionedData
from dpgossip.privacy.gaussian_pair import GaussianPair, SupportMismatch
from dpgossip.protocols.ddppm.lowrank import (
    JointWhitening,
    LowRankPencil,
    difference_rowspace,
    pencil_eigenvalues,
)
from dpgossip.protocols.ddppm.operators import ViewOperator, view_operator
from dpgossip.protocols.ddppm.params import ProtocolParams
from dpgossip.protocols.ddppm.views import View, ViewSpec, view_spec
from dpgossip.topology.network import Network

__all__ = ["ComponentAuditor"]


class ComponentAuditor:
    """Audits views of one component of a run on data ``X`` against candidate neighbours.

    Parameters
    ----------
    data, network, params
        The problem; ``X`` overrides ``data.X`` (deflated data of a later component).
    views
        Views to audit, keyed by any hashable key.
    component
        Index of the component (selects ``alpha`` and ``sigma_p``).
    seed
        Seed of the randomised range finder (the result does not depend on it beyond rounding).
    """

    def __init__(self, data: PartitionedData, network: Network, params: ProtocolParams,
                 views: Mapping[Hashable, View], *, component: int = 0,
                 X: np.ndarray | None = None, seed: int = 0) -> None:
        self.data, self.network, self.params = data, network, params
        self.X = np.asarray(data.X if X is None else X, dtype=float)
        T, n = params.iterations, data.n
        self.T, self.c = T, params.consensus_steps
        self.alpha = params.alpha[component]
        self.std = np.concatenate([np.full(n, params.sigma_q)]
                                  + [np.full(n, s) for s in params.sigma_p[component]])
        self.rng = np.random.default_rng(seed)
        self.views = dict(views)
        self.specs: dict[Hashable, ViewSpec] = {
            k: view_spec(v, network.graph, network.dense_W(), c=self.c, T=T, offsets=data.offsets,
                         latent_std=self.std) for k, v in self.views.items()}
        self.ops0 = {k: self._op(self.X, s) for k, s in self.specs.items()}
        self.white = {k: JointWhitening(op) for k, op in self.ops0.items()}
        full = ViewSpec(B=np.eye(data.m), final_rows=np.arange(n), known=np.zeros(0, dtype=int))
        self._full_spec = full
        self.full0 = self._op(self.X, full)

    def reseed(self, entropy: object) -> None:
        """Restart the range finder's random stream (``default_rng(entropy)``): a search that reseeds per
        target gets the same values whichever targets ran before it, or in which process."""
        self.rng = np.random.default_rng(entropy)

    def _op(self, X: np.ndarray, spec: ViewSpec) -> ViewOperator:
        return view_operator(X, self.data.offsets, self.network.dense_W(), T=self.T, c=self.c,
                             alpha=self.alpha, latent_std=self.std, spec=spec)

    def dimension(self, key: Hashable) -> int:
        """Number of coordinates ``K`` of a view (after compression)."""
        return self.ops0[key].K

    def pencils(self, X1: np.ndarray, keys: list[Hashable] | None = None
                ) -> dict[Hashable, LowRankPencil]:
        """Nontrivial generalised eigenvalues of every view for the neighbouring data ``X1``."""
        keys = list(self.views) if keys is None else keys
        C = difference_rowspace(self.full0, self._op(X1, self._full_spec), rng=self.rng)
        return {k: pencil_eigenvalues(self.white[k], self.ops0[k], self._op(X1, self.specs[k]), C)
                for k in keys}

    def pairs(self, X1: np.ndarray, keys: list[Hashable] | None = None
              ) -> dict[Hashable, GaussianPair]:
        """:class:`GaussianPair` of every view for the neighbouring data ``X1`` (P under ``X``)."""
        out = {}
        for k, pen in self.pencils(X1, keys).items():
            if not pen.support_ok:
                out[k] = GaussianPair.from_mismatch(
                    SupportMismatch("cov1 outside cov0", pen.outside_direction, pen.outside))
            else:
                out[k] = GaussianPair.from_whitened(pen.lam, np.zeros(pen.lam.size))
        return out
