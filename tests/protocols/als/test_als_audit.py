"""The audit of private ALS against a dense oracle (GaussianPair on every raw release) and the guarantees.

The oracle rebuilds, for one view, the observation of every (step, item) release from scratch: the
messages by running the protocol's own mixing on unit vectors, the covariance by enumerating every noise
source (own and edge draws, in raw units) the view does not know, the shift from the user's recomputed
statistic; then composes the exact pairs with GaussianPair.
"""

import math

import numpy as np
import pytest

from dpgossip.privacy.gaussian_pair import GaussianPair
from dpgossip.protocols.als.audit import (
    audit_views,
    gossip_kappas,
    kappa,
    noise_covariance,
    observation_map,
)
from dpgossip.protocols.als.central import clipped_values, run_dpals
from dpgossip.protocols.als.gossip import run_dpals_gossip
from dpgossip.protocols.als.params import DpAlsParams, GossipParams
from dpgossip.protocols.als.ratings import synthetic_ratings
from dpgossip.protocols.als.steps import user_sample, user_statistic
from dpgossip.protocols.gossip.average import gossip
from dpgossip.rng import as_seed_sequence
from dpgossip.topology import make_network

N, SEED = 6, 5
P = DpAlsParams(rank=2, steps=2, reg=1.0, epsilon=3.0, delta=1e-5, k=3)


@pytest.fixture(scope="module")
def case():
    ratings = synthetic_ratings(N, 5, 2, 2, min_count=4)
    net = make_network("random_regular", agents=N, seed=3, params={"degree": 3})
    return ratings, net


def _statistics(ratings, result, step, user):
    values = clipped_values(ratings, P.clip_rating)
    sample = user_sample(as_seed_sequence(SEED), step, user, ratings.rated(user), P.k)
    return user_statistic(result.users[step - 1][user], values[user], sample, ratings.items)


def _messages(net, rounds, members):
    """Rows of what the view receives, by mixing unit vectors with the protocol's gossip."""
    members = set(members)
    senders = sorted({b for a in members for b in net.neighbours[a]} - members) if members \
        else [b for b in range(N) if net.neighbours[b]]
    rows = [gossip(net.W, np.eye(N), k)[senders] for k in range(rounds)]
    return np.concatenate(rows) if rows else np.zeros((0, N))


def _sources(net, stds, known):
    own, edge = stds
    out = [(np.eye(N)[a], own) for a in range(N) if a not in known]
    for a in range(N):
        for b in net.neighbours[a]:
            if a < b and a not in known and b not in known and edge > 0:
                out.append((np.eye(N)[a] - np.eye(N)[b], edge))
    return out


def _dense_pair(ratings, net, result, user, members, rounds, stds):
    units2 = np.diag(P.units() ** 2)
    H = _messages(net, rounds, members)
    cov_agents = sum(std**2 * np.outer(v, v) for v, std in _sources(net, stds, set(members)))
    C = np.kron(H @ cov_agents @ H.T, units2)
    pairs = []
    for t in range(1, P.steps + 1):
        stat = _statistics(ratings, result, t, user)
        for j in np.flatnonzero(np.abs(stat).sum(axis=1)):       # the items the user contributes to
            shift = np.kron(H[:, user], stat[j])
            pairs.append(GaussianPair(shift, C, np.zeros_like(shift), C))
    return GaussianPair.compose(pairs)


@pytest.mark.parametrize("noise", ["shared", "own"])
@pytest.mark.parametrize("view", ["neighbour", "coalition", "eavesdropper"])
def test_gossip_audit_equals_the_dense_oracle(case, noise, view):
    ratings, net = case
    gp = GossipParams(rounds=2, noise=noise, edge_noise=0.7)
    res = run_dpals_gossip(ratings, net, P, gp, SEED)
    (audit,) = audit_views(res, net, (view,))
    user = audit.worst_user
    groups = {"eavesdropper": [()], "coalition": [net.neighbours[user]],
              "neighbour": [(a,) for a in net.neighbours[user]]}[view]
    stds = gp.stds(P.multiplier, N)
    oracle = max((_dense_pair(ratings, net, res, user, g, gp.rounds, stds) for g in groups),
                 key=lambda pair: pair.whitened_mean[1])
    d2 = gossip_kappas(net, gp.rounds, stds, view)[user] * res.norms[:, user].sum()
    assert oracle.whitened_mean[1] ** 2 == pytest.approx(d2, rel=1e-9)
    assert oracle.epsilon(P.delta) == pytest.approx(audit.audited_epsilon, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("form", ["central", "federated"])
def test_server_audit_equals_the_dense_oracle(case, form):
    ratings, _ = case
    res = run_dpals(ratings, P, SEED, form=form)
    audit = audit_views(res)[0]
    C = np.diag((P.multiplier * P.units()) ** 2)        # the sum's noise: z units per entry
    pairs = [GaussianPair(s, C, np.zeros_like(s), C)
             for t in range(1, P.steps + 1) for s in _statistics(ratings, res, t, audit.worst_user)]
    oracle = GaussianPair.compose(pairs)
    assert oracle.epsilon(P.delta) == pytest.approx(audit.audited_epsilon, rel=1e-9)


def test_closed_forms_of_the_shared_views(case):
    _, net = case
    z = P.multiplier
    stds = GossipParams(rounds=3).stds(z, N)
    # the neighbours together know every edge draw of i: only i's own noise z^2 / n is left
    assert gossip_kappas(net, 3, stds, "coalition") == pytest.approx(np.full(N, N / z**2), rel=1e-10)
    # the eavesdropper sees every initial value: kappa_i = [(e^2 L + g^2 I)^-1]_ii
    L = np.diag([len(nb) for nb in net.neighbours]) - nx_adjacency(net)
    inv = np.linalg.inv(stds[1] ** 2 * L + stds[0] ** 2 * np.eye(N))
    assert gossip_kappas(net, 3, stds, "eavesdropper") == pytest.approx(np.diag(inv), rel=1e-10)
    assert gossip_kappas(net, 0, stds, "eavesdropper") == pytest.approx(np.zeros(N))  # no message


def nx_adjacency(net):
    A = np.zeros((N, N))
    for a, nbrs in enumerate(net.neighbours):
        A[a, list(nbrs)] = 1.0
    return A


def test_a_view_that_knows_every_draw_sees_the_shift_without_noise(case):
    _, net = case
    i = 0
    members = net.neighbours[i]
    H = observation_map(net, 2, members)
    assert kappa(H, noise_covariance(net, (0.0, 1.0), members), i) == math.inf


@pytest.mark.parametrize("noise", ["shared", "own"])
def test_audit_is_at_most_the_guarantee_of_every_view(case, noise):
    ratings, net = case
    res = run_dpals_gossip(ratings, net, P, GossipParams(rounds=2, noise=noise), SEED)
    for a in audit_views(res, net):
        assert a.audited_epsilon <= a.guarantee.epsilon
        assert a.guarantee.epsilon_rdp <= a.guarantee.epsilon_closed_form
        if a.covered_by_theorem:                       # Theorem 1's epsilon covers the view
            assert a.guarantee.epsilon_closed_form <= P.epsilon * (1 + 1e-12)
            assert a.audited_epsilon <= P.epsilon
    covered = {a.view: a.covered_by_theorem for a in audit_views(res, net)}
    assert all(covered.values()) if noise == "own" else not any(covered.values())
    for form in ("central", "federated"):
        server = audit_views(run_dpals(ratings, P, SEED, form=form))[0]
        assert server.covered_by_theorem and server.audited_epsilon <= server.guarantee.epsilon <= P.epsilon
