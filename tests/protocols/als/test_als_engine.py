"""dpals-gossip on the engine equals the matrix backend (1e-10), message by message and under lossy links."""

import numpy as np
import pytest

from dpgossip.protocols.als.gossip import run_dpals_gossip
from dpgossip.protocols.als.nodes import run_dpals_gossip_engine, transcript_residual
from dpgossip.protocols.als.params import DpAlsParams, GossipParams
from dpgossip.protocols.als.ratings import synthetic_ratings
from dpgossip.topology import make_network

LOSSY = {"latency": {"kind": "exponential", "mean": 0.01}, "loss": 0.3, "retransmit_timeout": 0.05}
P = DpAlsParams(rank=2, steps=3, reg=1.0, epsilon=20.0, delta=1e-5, k=4)
FIELDS = ("items", "users", "final_users", "norms", "released")


def _close(a, b, rel=1e-10):
    assert np.all(np.isfinite(b))
    np.testing.assert_allclose(b, a, rtol=0, atol=rel * max(1.0, float(np.max(np.abs(a)))))


@pytest.mark.parametrize(("topology", "params"), [("ring", None), ("random_regular", {"degree": 3})])
@pytest.mark.parametrize("noise", ["shared", "own"])
def test_engine_equals_matrix_backend(topology, params, noise):
    ratings = synthetic_ratings(10, 8, 2, 4, min_count=4)
    net = make_network(topology, agents=10, seed=2, params=params)
    gp = GossipParams(rounds=3, noise=noise)
    matrix = run_dpals_gossip(ratings, net, P, gp, 9)
    engine = run_dpals_gossip_engine(ratings, net, P, gp, 9)
    assert engine.status == "completed"
    for name in FIELDS:
        _close(getattr(matrix, name), getattr(engine.result, name))
    assert engine.result.rmse == pytest.approx(matrix.rmse, rel=1e-10)
    # every message is the release model's state: (W^(k-1) Y^(0)_t)_sender
    assert len(engine.transcript) == P.steps * gp.rounds * sum(len(nb) for nb in net.neighbours)
    assert transcript_residual(engine, matrix.released, net) <= 1e-10


def test_engine_under_lossy_links_keeps_the_values():
    ratings = synthetic_ratings(8, 6, 2, 1, min_count=4)
    net = make_network("ring", agents=8)
    gp = GossipParams(rounds=2)
    matrix = run_dpals_gossip(ratings, net, P, gp, 3)
    engine = run_dpals_gossip_engine(ratings, net, P, gp, 3, conditions=LOSSY)
    assert engine.status == "completed" and engine.summary.to_row()
    for name in FIELDS:
        _close(getattr(matrix, name), getattr(engine.result, name))


def test_a_residual_detects_a_changed_message():
    ratings = synthetic_ratings(6, 5, 2, 1, min_count=4)
    net = make_network("ring", agents=6)
    gp = GossipParams(rounds=2)
    engine = run_dpals_gossip_engine(ratings, net, P, gp, 3)
    other = run_dpals_gossip(ratings, net, P, gp, 4)                 # another seed: other noise
    assert transcript_residual(engine, other.released, net) > 1e-3
