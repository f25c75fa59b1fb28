"""Synthetic ratings, non-private ALS at the noise floor, and private ALS's RMSE against epsilon."""

import numpy as np
import pytest

from dpgossip.errors import ConfigError
from dpgossip.protocols.als.central import run_als, run_dpals
from dpgossip.protocols.als.gossip import run_dpals_gossip
from dpgossip.protocols.als.params import AlsParams, DpAlsParams, GossipParams
from dpgossip.protocols.als.ratings import synthetic_ratings
from dpgossip.topology import make_network


@pytest.fixture(scope="module")
def large():
    return synthetic_ratings(1000, 30, 2, 1, min_count=8)


def test_generator_is_reproducible_long_tailed_and_split():
    a, b = synthetic_ratings(300, 40, 3, 7), synthetic_ratings(300, 40, 3, 7)
    assert np.array_equal(a.values, b.values) and np.array_equal(a.train, b.train)
    assert not np.array_equal(a.values, synthetic_ratings(300, 40, 3, 8).values)
    per_item = (a.train | a.test).sum(axis=0)
    assert per_item[:5].mean() > 2 * per_item[-5:].mean()          # Zipf popularity
    per_user = (a.train | a.test).sum(axis=1)
    assert per_user.min() >= 8 and per_user.max() > 3 * np.median(per_user)  # heavy raters
    assert not np.any(a.train & a.test) and a.train.any(axis=1).all()
    assert a.test.sum() == sum(min(int(0.2 * c), c - 1) for c in per_user)   # rounded down per user


def test_generator_rejects_bad_settings():
    with pytest.raises(ConfigError, match="min_count"):
        synthetic_ratings(10, 5, 2, 0, min_count=6)
    with pytest.raises(ConfigError, match="zipf"):
        synthetic_ratings(10, 5, 2, 0, zipf=-1)


@pytest.mark.parametrize("seed", [0, 3])
def test_non_private_als_reaches_the_noise_floor(large, seed):
    res = run_als(large, AlsParams(rank=2, steps=8, reg=0.1), seed)
    assert 0.95 * large.noise <= res.rmse <= 1.2 * large.noise
    # the fitted model is close to the noiseless truth on held-out entries, too
    pred = res.final_users @ res.items[-1].T
    assert np.sqrt(np.mean((pred - large.truth)[large.test] ** 2)) < 0.6 * large.noise


def test_private_rmse_falls_as_epsilon_grows(large):
    def mean_rmse(eps):
        p = DpAlsParams(rank=2, steps=3, reg=1.0, epsilon=eps, delta=1e-5, k=10)
        return np.mean([run_dpals(large, p, s).rmse for s in range(2)])

    small, medium, big = mean_rmse(1.0), mean_rmse(20.0), mean_rmse(1000.0)
    assert small > medium > big
    assert small > 0.9                              # no signal at eps = 1 with 1000 users
    assert big < 2.5 * large.noise


@pytest.mark.parametrize("form", ["central", "federated"])
def test_released_sums_carry_the_central_noise_level(large, form):
    p = DpAlsParams(rank=2, steps=1, reg=1.0, epsilon=5.0, delta=1e-5, k=10)
    res = run_dpals(large, p, 11, form=form)
    from dpgossip.protocols.als.central import clipped_values, private_statistics
    from dpgossip.protocols.als.steps import initial_items
    from dpgossip.rng import as_seed_sequence

    root = as_seed_sequence(11)
    _, stats = private_statistics(large, clipped_values(large, p.clip_rating),
                                  initial_items(root, large.items, 2), p, root, 1)
    noise = (res.released[0] - stats.sum(axis=0)) / p.units()
    assert noise.std() == pytest.approx(p.multiplier, rel=0.15)    # 150 draws of std z


def test_gossip_edge_noise_cancels_in_the_sum():
    ratings = synthetic_ratings(20, 12, 2, 4, min_count=4)
    net = make_network("ring", agents=20)
    p = DpAlsParams(rank=2, steps=1, reg=1.0, epsilon=5.0, delta=1e-5, k=5)
    sums = [run_dpals_gossip(ratings, net, p, GossipParams(rounds=3, edge_noise=e), 2).released[0].sum(axis=0)
            for e in (0.0, 1.0, 10.0)]
    assert np.abs(sums[1] - sums[0]).max() < 1e-9 * (1 + np.abs(sums[0]).max())
    assert np.abs(sums[2] - sums[0]).max() < 1e-8 * (1 + np.abs(sums[0]).max())
    one = run_dpals_gossip(ratings, net, p, GossipParams(rounds=3, edge_noise=1.0), 2).released[0]
    assert not np.allclose(one, run_dpals_gossip(ratings, net, p, GossipParams(rounds=3, edge_noise=0.0),
                                                 2).released[0])


def test_gossip_with_many_rounds_reaches_the_sum():
    ratings = synthetic_ratings(12, 10, 2, 5, min_count=4)
    net = make_network("complete", agents=12)
    p = DpAlsParams(rank=2, steps=2, reg=1.0, epsilon=50.0, delta=1e-5, k=5)
    res = run_dpals_gossip(ratings, net, p, GossipParams(rounds=1), 3)
    assert np.abs(res.items[-1] - res.items[-1][0]).max() < 1e-9   # complete graph: exact in one round
