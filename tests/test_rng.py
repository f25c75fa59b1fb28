import numpy as np
import pytest

from dpgossip.errors import ConfigError
from dpgossip.rng import draw_component_noise, run_streams


def test_same_seed_sequence_object_gives_same_streams_twice():
    seq = np.random.SeedSequence(5, spawn_key=(3,))
    a = run_streams(seq, 3)
    b = run_streams(seq, 3)
    for ga, gb in zip(a.agents, b.agents, strict=True):
        assert ga.standard_normal() == gb.standard_normal()
    assert a.network.random() == b.network.random()
    assert run_streams(5, 2).agents[0].random() == run_streams(5, 2).agents[0].random()


def test_agents_and_network_streams_differ():
    s = run_streams(1, 3)
    draws = [g.random() for g in s.agents] + [s.network.random()]
    assert len(set(draws)) == 4


def test_component_noise_scales():
    rng = np.random.default_rng(0)
    w = draw_component_noise(rng, 5000, 2.0, np.array([0.5, 0.0]))
    assert w.shape == (3, 5000)
    assert abs(w[0].std() - 2.0) < 0.1 and abs(w[1].std() - 0.5) < 0.03 and not w[2].any()


@pytest.mark.parametrize("bad", [-1, 1.5, "7", True])
def test_bad_seed(bad):
    with pytest.raises(ConfigError, match="seed must be a non-negative integer"):
        run_streams(bad, 2)
