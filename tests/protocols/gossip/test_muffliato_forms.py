"""Muffliato's two published forms (docs/network-dp.md, Section 4) against a hand computation and a literal
double sum: the NeurIPS per-message sum for noisy averaging (``muffliato_per_message``) and the corrected
GD/SGD form of the arXiv version (``muffliato_corrected``), each beside the exact value of the auditor.

The hand computation is the 3-node path ``0 - 1 - 2`` with Metropolis weights, every weight ``1/3``:
``W = [[2, 1, 0], [1, 1, 1], [0, 1, 2]] / 3``; observer 0 hears only agent 1, target 2, ``sigma = 1``,
``Delta = 1``, ``alpha = 2`` (so a Renyi value is ``mu^2``), ``T = 2`` rounds.

* Noise once: agent 1 sends ``y_1 = x_1 + eta_1`` then ``(y_0 + y_1 + y_2) / 3``; the observer knows
  ``y_0``, so it learns ``y_2 = x_2 + eta_2``: exact ``mu^2 = 1``.  The NeurIPS sum over rounds 0, 1 of
  ``(W^t)_{12}^2 / ||(W^t)_1||^2`` is ``0 + (1/9) / (1/3) = 1/3``: below the exact value.
* New input and noise every round: the round-1 message minus what the observer knows is
  ``(x_2^0 + z_2^0) / 3 + x_1^1 + z_1^1``; target 2's round-0 input moves it by ``1/3`` against a noise
  variance ``1/9 + 1``: exact ``mu^2 = (1/9) / (10/9) = 1/10``.  The corrected sum
  ``sum_s (T - s) |(W^s)_{12}|^p / ||(W^s)_1||^2`` is ``2 * 0 + 1 * (1/3)^p / (1/3)``: 1 for ``p = 1``,
  ``1/3`` for ``p = 2`` (below the clip at ``T = 2``), both above the exact value.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from dpgossip.errors import ConfigError
from dpgossip.privacy.linear_audit import LinearAuditSettings
from dpgossip.protocols.gossip.audit import audit_gossip
from dpgossip.protocols.gossip.bounds import (
    compare_to_bound,
    muffliato_corrected,
    muffliato_per_message,
)
from dpgossip.protocols.gossip.linear import LinearGossip
from dpgossip.topology import make_network

ONCE = LinearGossip(protocol="gossip-average", rounds=2, sigma=1.0)
EVERY = LinearGossip(protocol="gossip-noisy", rounds=2, sigma=1.0, inputs="per-round")


def _exact(network, spec, observer=0):
    return audit_gossip(network, spec, observer, LinearAuditSettings(orders=(2.0,)))


def test_the_three_node_path_by_hand():
    path = make_network("path", agents=3)
    assert np.allclose(path.W.toarray(), np.array([[2, 1, 0], [1, 1, 1], [0, 1, 2]]) / 3)
    once = {r.target: r.rdp[0] for r in _exact(path, ONCE)}
    every = {r.target: r.rdp[0] for r in _exact(path, EVERY)}
    assert once[2] == pytest.approx(1.0, abs=1e-12)
    assert every[2] == pytest.approx(0.1, abs=1e-12)
    assert muffliato_per_message(path, ONCE, 0)[2] == pytest.approx(1 / 3, abs=1e-15)
    assert muffliato_corrected(path, EVERY, 0)[2] == pytest.approx(1.0, abs=1e-15)
    assert muffliato_corrected(path, EVERY, 0, entry_power=2)[2] == pytest.approx(1 / 3, abs=1e-15)
    # the flags: the NeurIPS sum is below the exact value there, the corrected form is not
    (neurips,) = [c for c in compare_to_bound(_exact(path, ONCE), muffliato_per_message(path, ONCE, 0),
                                              order=2.0) if c.target == 2]
    assert neurips.bound_below_exact and neurips.ratio == pytest.approx(3.0)
    for p in (1, 2):
        rows = compare_to_bound(_exact(path, EVERY), muffliato_corrected(path, EVERY, 0, entry_power=p),
                                order=2.0, source="muffliato-corrected")
        assert not any(c.bound_below_exact for c in rows)


def _double_sum(W: np.ndarray, graph: nx.Graph, v: int, T: int, p: int, clip: bool) -> np.ndarray:
    """The corrected form as its double sum over rounds ``t <= j < T``, dense matrix powers."""
    total = np.zeros(W.shape[0])
    for t in range(T):
        for j in range(t, T):
            P = np.linalg.matrix_power(W, j - t)
            for w in graph.neighbors(v):
                total += np.abs(P[w]) ** p / float(P[w] @ P[w])
    return np.minimum(total, T) if clip else total


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("clip", [True, False])
def test_the_corrected_form_is_its_double_sum(p, clip):
    network = make_network("random_geometric", agents=25, seed=3, params={"radius": 0.35})
    spec = LinearGossip(protocol="gossip-noisy", rounds=6, sigma=0.5, inputs="per-round")
    want = _double_sum(network.W.toarray(), network.graph, 4, 6, p, clip) * 3.0 * 0.7 ** 2 / (2 * 0.25)
    got = muffliato_corrected(network, spec, 4, order=3.0, sensitivity=0.7, entry_power=p, clip=clip)
    assert np.allclose(got, want, rtol=1e-12, atol=1e-15)
    if clip:
        assert got.max() <= 6 * 3.0 * 0.7 ** 2 / (2 * 0.25) * (1 + 1e-12)  # the local-DP level


def test_the_corrected_form_is_never_below_exact_where_the_neurips_sum_is():
    """On a 64-node hypercube (T = 10, observer 0) the NeurIPS averaging sum falls below the exact value
    far from the observer; the corrected form does not, at any target, with either power."""
    cube = make_network("hypercube", agents=64)
    once = LinearGossip(protocol="gossip-average", rounds=10, sigma=1.0)
    every = LinearGossip(protocol="gossip-noisy", rounds=10, sigma=1.0, inputs="per-round")
    neurips = compare_to_bound(_exact(cube, once), muffliato_per_message(cube, once, 0), order=2.0)
    assert any(c.bound_below_exact for c in neurips)
    for p in (1, 2):
        corrected = compare_to_bound(_exact(cube, every), muffliato_corrected(cube, every, 0, entry_power=p),
                                     order=2.0, source="muffliato-corrected")
        assert not any(c.bound_below_exact for c in corrected)


def test_bad_input_names_the_field():
    path = make_network("path", agents=3)
    with pytest.raises(ConfigError, match="per-round"):
        muffliato_corrected(path, ONCE, 0)
    with pytest.raises(ConfigError, match="per-round"):
        muffliato_corrected(path, LinearGossip(protocol="gossip-noisy", rounds=2, sigma=1.0), 0)
    with pytest.raises(ConfigError, match="entry_power must be 1 or 2, got 3"):
        muffliato_corrected(path, EVERY, 0, entry_power=3)
