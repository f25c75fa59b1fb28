"""ViewOperator.covariance (from the covariances of the z^(t), no identity through the operator) against
the dense release model's G G^T, for every kind of view, c = 0 included."""

import networkx as nx
import numpy as np
import pytest

from dpgossip.protocols.ddppm.audit import component_model, view_gaussian
from dpgossip.protocols.ddppm.lowrank import JointWhitening
from dpgossip.protocols.ddppm.operators import view_operator
from dpgossip.protocols.ddppm.params import NoiseSchedule, resolve_params
from dpgossip.protocols.ddppm.views import make_view, view_spec
from tests.conftest import net_from_graph, spiked_data

VIEWS = [("observer", (0,), None), ("coalition", (0, 2), None), ("eavesdropper", (), None),
         ("all-but-one", (), 1), ("paper", (0,), 1)]


@pytest.mark.parametrize("graph, T, c", [(nx.cycle_graph(5), 3, 2), (nx.path_graph(4), 2, 0),
                                         (nx.star_graph(4), 4, 3)])
@pytest.mark.parametrize("kind, agents, target", VIEWS)
def test_covariance_equals_the_dense_release_model(graph, T, c, kind, agents, target):
    net = net_from_graph(graph)
    data = spiked_data(3 * net.m + 1, 3, [3, 1.5, .5], net.m, seed=2)
    p = resolve_params(data, net, iterations=T, consensus_steps=c,
                       noise=NoiseSchedule(kind="geometric", scale=0.7))
    view = make_view(kind, m=net.m, agents=agents, target=target)
    std = component_model(data, net, p).latent_std
    spec = view_spec(view, net.graph, net.dense_W(), c=c, T=T, offsets=data.offsets, latent_std=std)
    op = view_operator(data.X, data.offsets, net.dense_W(), T=T, c=c, alpha=p.alpha[0], latent_std=std,
                       spec=spec)
    _, dense = view_gaussian(component_model(data, net, p), view, net)
    S = op.covariance()
    assert np.array_equal(S, S.T)
    np.testing.assert_allclose(S, dense, rtol=0, atol=1e-12 * np.abs(dense).max())


def test_joint_whitening_whitens_the_dense_covariance():
    """Wh S Wh^T = I on the range, with S the dense joint covariance of an observer view."""
    net = net_from_graph(nx.cycle_graph(5))
    data = spiked_data(20, 3, [3, 1.5, .5], 5, seed=3)
    p = resolve_params(data, net, iterations=3, consensus_steps=2)
    view = make_view("observer", m=5, agents=(1,))
    std = component_model(data, net, p).latent_std
    spec = view_spec(view, net.graph, net.dense_W(), c=2, T=3, offsets=data.offsets, latent_std=std)
    op = view_operator(data.X, data.offsets, net.dense_W(), T=3, c=2, alpha=p.alpha[0], latent_std=std,
                       spec=spec)
    jw = JointWhitening(op)
    _, S = view_gaussian(component_model(data, net, p), view, net)
    V = jw.whiten_transpose(np.eye(jw.rank))
    np.testing.assert_allclose(V.T @ S @ V, np.eye(jw.rank), atol=1e-8)
