"""The relabelled gossip product against the plain sparse product and dense powers of ``W``."""

from __future__ import annotations

import numpy as np
import pytest

from dpgossip.topology import make_network
from dpgossip.topology.locality import CACHE_BYTES, column_block, local_mixing


@pytest.mark.parametrize("topology", ["ring", "random_geometric", "erdos_renyi", "grid"])
def test_power_equals_dense_power(topology: str) -> None:
    net = make_network(topology, agents=64, seed=2)
    lm = local_mixing(net.W)
    Wd = net.W.toarray()
    Z = np.random.default_rng(1).standard_normal((64, 7))
    for c in (0, 1, 3):
        want = np.linalg.matrix_power(Wd, c) @ Z
        assert np.max(np.abs(lm.power(Z, c) - want)) <= 1e-13
    assert np.max(np.abs(lm @ Z[:, 0] - Wd @ Z[:, 0])) <= 1e-14
    assert np.array_equal(lm.inverse[lm.perm], np.arange(64))
    P = np.eye(64)[lm.perm]
    assert np.array_equal(lm.W.toarray(), P @ Wd @ P.T)


def test_ring_band_is_narrow_after_relabelling() -> None:
    """Reverse Cuthill-McKee turns a ring into a band of width 2 (a zigzag numbering)."""
    net = make_network("ring", agents=500, seed=0)
    assert local_mixing(net.W).bandwidth <= 2


def test_column_split_changes_no_bit(monkeypatch: pytest.MonkeyPatch) -> None:
    net = make_network("erdos_renyi", agents=200, seed=4)
    lm = local_mixing(net.W)
    Z = np.random.default_rng(3).standard_normal((200, 9))
    whole = lm.power(Z, 2)
    monkeypatch.setattr("dpgossip.topology.locality.CACHE_BYTES", 8 * 200 * 2)
    assert column_block(200, 9, lm.bandwidth) == 2
    assert np.array_equal(lm.power(Z, 2), whole)


def test_column_block_rule() -> None:
    assert column_block(10**5, 20, 100) == 20
    assert column_block(10**5, 20, 10**5) == CACHE_BYTES // (8 * 10**5)
    assert column_block(10**7, 20, 10**7) == 1


def test_gossip_paths_agree_above_local_from() -> None:
    """Above LOCAL_FROM the protocol's gossip goes through the relabelling and equals plain products."""
    from dpgossip.protocols.gossip.average import LOCAL_FROM, gossip, gossip_states, mixing_operator
    from dpgossip.topology.locality import LocalMixing

    net = make_network("random_geometric", agents=LOCAL_FROM + 200, seed=1)
    Wop = mixing_operator(net.W)
    assert isinstance(Wop, LocalMixing)
    Z = np.random.default_rng(0).standard_normal((net.m, 3))
    plain = [Z]
    for _ in range(4):
        plain.append(net.W @ plain[-1])
    states = gossip_states(Wop, Z, 4)
    assert np.max(np.abs(states - np.stack(plain))) <= 1e-13
    assert np.max(np.abs(gossip(Wop, Z, 4) - plain[-1])) <= 1e-13
    small = make_network("ring", agents=LOCAL_FROM, seed=0)
    assert not isinstance(mixing_operator(small.W), LocalMixing)
