"""The release model against the simulator's own arithmetic (matrix backend) and against Eqs. (17)-(18)."""

import networkx as nx
import numpy as np
import pytest

from dpgossip.protocols.ddppm.matrix import run_matrix
from dpgossip.protocols.ddppm.params import NoiseSchedule, resolve_params
from dpgossip.protocols.ddppm.release import build_release_model
from tests.conftest import net_from_graph, spiked_data


@pytest.mark.parametrize("graph, T, c", [(nx.cycle_graph(4), 4, 3), (nx.path_graph(5), 3, 0),
                                         (nx.star_graph(4), 5, 2)])
def test_model_reproduces_every_state_of_a_run(graph, T, c):
    net = net_from_graph(graph)
    data = spiked_data(30, 5, [4, 2, 1, .5, .2], net.m, seed=3)
    p = resolve_params(data, net, iterations=T, consensus_steps=c,
                       noise=NoiseSchedule(kind="constant", scale=0.3))
    res = run_matrix(data, net, p, seed=8, record_states=True)
    model = build_release_model(data, net.dense_W(), T=T, c=c, alpha=p.alpha[0], sigma_q=p.sigma_q,
                                sigma_p=p.sigma_p[0])
    w = res.noise[0].ravel()
    scale = np.abs(res.states).max() if c else 1.0
    if c:
        np.testing.assert_allclose(model.predict_states(w), res.states[0][:, :c], atol=1e-12 * scale)
    np.testing.assert_allclose(model.predict_final(w), res.iterates[0, -1],
                               atol=1e-12 * np.abs(res.iterates).max())
    for t in range(1, T + 1):
        np.testing.assert_allclose((model.z_matrix(t) @ w).reshape(net.m, -1), res.z[0, t - 1],
                                   atol=1e-12 * np.abs(res.z).max())


def test_latent_std_and_slices():
    net = net_from_graph(nx.cycle_graph(3))
    data = spiked_data(9, 3, [2, 1, .5], 3)
    model = build_release_model(data, net.dense_W(), T=2, c=1, alpha=0.5, sigma_q=0.7,
                                sigma_p=np.array([0.1, 0.2]))
    np.testing.assert_array_equal(model.latent_std, [0.7] * 9 + [0.1] * 9 + [0.2] * 9)
    np.testing.assert_array_equal(model.latent_slice([1]), [3, 4, 5, 12, 13, 14, 21, 22, 23])
