"""The floor-free D-DP-PM (docs/floorfree.md): against a dense power iteration, its sensitivity bound, and
its streams."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from dpgossip.errors import ConfigError
from dpgossip.protocols.ddppm.floorfree import (
    FloorFreeParams,
    floorfree_noise,
    rank_two_norm,
    run_floorfree,
)
from tests.conftest import net_from_graph, spiked_data


def test_without_noise_and_exact_consensus_it_is_the_power_method_on_x_t_x(small_data):
    net = net_from_graph(nx.complete_graph(4))            # Metropolis on K4: W = J/4, exact in 1 round
    params = FloorFreeParams(iterations=6, consensus_steps=1, noise_multiplier=0.0)
    res = run_floorfree(small_data, net, params, seed=3)
    A = small_data.X.T @ small_data.X
    u = res.noise.u0.copy()
    for t in range(1, 7):
        u = A @ u
        u /= np.linalg.norm(u)
        np.testing.assert_allclose(res.directions[t], np.tile(u, (4, 1)), atol=1e-12)
    np.testing.assert_allclose(res.q_local, small_data.X @ u, atol=1e-12)
    np.testing.assert_array_equal(res.q_released, res.q_local)            # sigma_p = 0


def test_messages_are_the_data_mean_plus_the_drawn_noise(small_data, paper_ring):
    params = FloorFreeParams(iterations=3, consensus_steps=2, noise_multiplier=0.7)
    res = run_floorfree(small_data, paper_ring, params, seed=1, record_states=True)
    X = small_data.X
    for t in range(3):
        for i in range(4):
            Xi = small_data.block(i)
            mean = Xi.T @ (Xi @ res.directions[t, i])
            np.testing.assert_allclose(res.z[t, i], mean + res.noise.e[t, i], atol=1e-12)
        np.testing.assert_allclose(res.states[t, -1], np.linalg.matrix_power(paper_ring.dense_W(), 2)
                                   @ res.z[t], atol=1e-12)
    owner = small_data.agent_of_row()
    q = np.einsum("nd,nd->n", X, res.directions[-1][owner])
    np.testing.assert_allclose(res.q_released, q + res.noise.p, atol=1e-12)
    assert np.std(res.noise.e) == pytest.approx(0.7, rel=0.3)
    assert np.std(res.noise.p) == pytest.approx(0.7, rel=0.3)                # bounded: Delta_q = 1


def test_same_seed_same_bits_and_replayed_noise(small_data, paper_ring):
    params = FloorFreeParams(iterations=4, consensus_steps=3, noise_multiplier=2.0,
                             adjacency="replace-one")
    a = run_floorfree(small_data, paper_ring, params, seed=7)
    b = run_floorfree(small_data, paper_ring, params, seed=7)
    c = run_floorfree(small_data, paper_ring, params, seed=8, noise=floorfree_noise(small_data,
                                                                                    params, 7))
    for r in (b, c):
        np.testing.assert_array_equal(a.directions, r.directions)
        np.testing.assert_array_equal(a.q_released, r.q_released)
    assert params.sigma_p == 4.0 and params.releases() == 5


def test_rank_two_norm_is_the_spectral_norm_and_the_shift_is_at_most_one():
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(300):
        d = int(rng.integers(1, 6))
        x, y, u = (rng.standard_normal(d) for _ in range(3))
        x *= rng.uniform(0, 1) / np.linalg.norm(x)
        y *= rng.uniform(0, 1) / np.linalg.norm(y)
        u /= np.linalg.norm(u)
        C = np.outer(y, y) - np.outer(x, x)
        assert rank_two_norm(x, y) == pytest.approx(np.linalg.norm(C, 2), abs=1e-12)
        worst = max(worst, float(np.linalg.norm(C @ u)))
    assert worst <= 1.0
    e1 = np.array([1.0, 0.0])
    assert rank_two_norm(np.zeros(2), e1) == 1.0                             # attained (bounded too)


def test_disseminate_false_releases_nothing_final():
    data = spiked_data(24, 4, [3, 1, 0.5, 0.1], 3)
    net = net_from_graph(nx.path_graph(3))
    res = run_floorfree(data, net, FloorFreeParams(iterations=2, consensus_steps=2,
                                                   noise_multiplier=1.0, disseminate=False), 0)
    assert res.q_released is None and res.params.releases() == 2
    np.testing.assert_allclose(res.Q[:, 0], res.q_local / np.linalg.norm(res.q_local))


@pytest.mark.parametrize("kwargs, field", [
    ({"iterations": 0}, "iterations"), ({"consensus_steps": -1}, "consensus_steps"),
    ({"noise_multiplier": -1.0}, "noise_multiplier"), ({"adjacency": "element"}, "adjacency"),
    ({"disseminate": 1}, "disseminate"),
])
def test_bad_parameters_name_their_field(kwargs, field):
    base = {"iterations": 2, "consensus_steps": 1, "noise_multiplier": 1.0}
    with pytest.raises(ConfigError) as err:
        FloorFreeParams(**{**base, **kwargs})
    assert err.value.field == field


def test_memory_is_checked_before_allocating(small_data, paper_ring, monkeypatch):
    monkeypatch.setenv("DPGOSSIP_MEMORY_LIMIT", "1kB")
    with pytest.raises(ConfigError) as err:
        run_floorfree(small_data, paper_ring, FloorFreeParams(iterations=50, consensus_steps=5,
                                                              noise_multiplier=1.0), 0, record_states=True)
    assert err.value.field == "iterations" and "iterations = 50" in str(err.value)
