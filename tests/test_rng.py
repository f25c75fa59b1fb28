import numpy as np
import pytest

from dpgossip.errors import ConfigError
from dpgossip.rng import (
    agent_seed_words,
    as_seed_sequence,
    draw_component_noise,
    draw_run_noise,
    run_streams,
)


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


SEEDS = [0, 5, 2**70 + 3, np.random.SeedSequence(9, spawn_key=(3, 2**40)),
         np.random.SeedSequence(7, pool_size=8), np.random.SeedSequence(2**100 + 1, spawn_key=(1,)),
         np.random.SeedSequence(4).spawn(3)[2]]


@pytest.mark.parametrize("seed", SEEDS, ids=range(len(SEEDS)))
def test_agent_seed_words_equal_numpy_spawned_states(seed):
    """The vectorised SeedSequence hash against numpy's own spawn + generate_state (the oracle)."""
    m = 9
    root = as_seed_sequence(seed)
    root = np.random.SeedSequence(root.entropy, spawn_key=root.spawn_key, pool_size=root.pool_size)
    agent_root = root.spawn(2)[0]
    expect = np.array([s.generate_state(4, np.uint64) for s in agent_root.spawn(m)])
    np.testing.assert_array_equal(agent_seed_words(seed, m), expect)


@pytest.mark.parametrize("sizes", [(3, 1, 4, 2, 5), (2, 2, 2, 2), (7,)])
@pytest.mark.parametrize("seed", SEEDS[:4], ids=range(4))
def test_run_noise_equals_each_agents_own_stream(seed, sizes):
    """draw_run_noise is, bit for bit, r calls of draw_component_noise on each agent's generator."""
    sigma_p = np.array([[0.5, 0.1, 0.2], [0.3, 0.0, 1.0]])
    noise = draw_run_noise(seed, sizes, 2.0, sigma_p)
    streams = run_streams(seed, len(sizes))
    off = np.cumsum((0,) + sizes)
    assert noise.shape == (2, 4, sum(sizes))
    for l in range(2):
        for i, n_i in enumerate(sizes):
            np.testing.assert_array_equal(
                noise[l, :, off[i]:off[i + 1]],
                draw_component_noise(streams.agents[i], n_i, 2.0, sigma_p[l]))
