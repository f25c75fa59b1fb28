"""The channel form of a row replacement (``TargetChannels``): ``S_1 - S_0 = B A M A^T B^T``.

Oracles: the full target view's covariances under both datasets by dense matrices (the view map applied
to the identity, ``S = G G^T``, the neighbour's run done on its own data); and, for the auditor built on
the form, a view evaluated alone on a fresh auditor (its Gram of the basis by the few-views path)
against the same view among all views (the stacked path).
"""

from __future__ import annotations

import numpy as np
import pytest

from dpgossip.data.partition import PartitionedData
from dpgossip.privacy.neighbours import Neighbour
from dpgossip.protocols.ddppm.observer_batch import ObserverBatchAuditor
from dpgossip.protocols.ddppm.params import NoiseSchedule, resolve_params
from dpgossip.protocols.ddppm.row_channels import TargetChannels
from dpgossip.topology import make_network
from tests.protocols.ddppm.test_reduced_views import _neighbours, _views


def _problem(graph: str, m: int, rows: int, d: int, T: int, c: int, noise: NoiseSchedule, seed: int = 3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m * rows, d)) * np.linspace(1.0, 0.5, d)
    X /= np.max(np.linalg.norm(X, axis=1))
    data = PartitionedData(X=X, sizes=(rows,) * m)
    net = (make_network(graph, agents=m, seed=2, params={"p": 0.6}) if graph == "erdos_renyi"
           else make_network(graph, agents=m))
    return data, net, resolve_params(data, net, iterations=T, consensus_steps=c, noise=noise)


@pytest.mark.parametrize("graph, m, rows, d, T, c, noise", [
    ("ring", 5, 4, 2, 2, 1, NoiseSchedule(kind="constant", scale=1.0)),
    ("ring", 6, 5, 3, 3, 2, NoiseSchedule(kind="geometric", scale=0.7)),
    ("erdos_renyi", 6, 4, 2, 3, 1, NoiseSchedule(kind="geometric", scale=1.3)),
    ("complete", 4, 3, 2, 4, 1, NoiseSchedule(kind="constant", scale=0.5)),
])
def test_the_channel_form_is_the_dense_covariance_change(graph, m, rows, d, T, c, noise):
    """``B A M A^T B^T`` equals ``G_1 G_1^T - G_0 G_0^T`` of the full target view (dense, the
    neighbour's run on its own data) for several rows, replacements and targets, to 1e-10 of its size."""
    data, net, params = _problem(graph, m, rows, d, T, c, noise)
    aud = ObserverBatchAuditor(data, net, params, _views(m), seed=0)
    for j in (0, m - 1):
        full = aud._target_view(j)
        channels = TargetChannels(full)
        G0 = full.forward(np.eye(full.N))
        for nb in [*_neighbours(data, j, 3, seed=5 + j),
                   Neighbour(row=int(data.offsets[j]), x_new=np.zeros(d), label="zero")]:
            r = int(nb.row) - int(data.offsets[j])
            X1 = full.X.copy()
            X1[full._n0 + r] = nb.x_new
            G1 = full.with_data(X1).forward(np.eye(full.N))
            dense = G1 @ G1.T - G0 @ G0.T
            up = channels.update(r, nb.x_new)
            V = channels.basis @ up.coef
            got = V @ up.middle @ V.T
            assert np.abs(got - dense).max() <= 1e-10 * np.abs(dense).max()


def test_one_view_alone_equals_the_view_among_all():
    """A view's eigenvalues from a fresh auditor asked for it alone (its Gram of the basis by one
    triangular solve) equal the same view's among every view (the stacked Schur complements), to 1e-9."""
    m = 9
    data, net, params = _problem("ring", m, 5, 2, 3, 1, NoiseSchedule(kind="constant", scale=1.0))
    every = ObserverBatchAuditor(data, net, params, _views(m), seed=0)
    j = 4
    keys = [("observer", o) for o in range(m) if o != j]
    for nb in _neighbours(data, j, 2, seed=1):
        together = every.pairs(nb, keys)
        for key in (keys[0], keys[3], keys[-1]):
            alone = ObserverBatchAuditor(data, net, params, _views(m), seed=0).pairs(nb, [key])[key]
            np.testing.assert_allclose(np.sort(alone.eigenvalues), np.sort(together[key].eigenvalues),
                                       rtol=1e-9, atol=1e-12)
