import networkx as nx
import numpy as np
import pytest

from dpgossip.errors import ConfigError
from dpgossip.protocols.ddppm.views import make_view, receive_basis
from tests.conftest import metropolis


def test_receive_basis_spans_the_received_rows():
    g = nx.path_graph(6)
    W = metropolis(g)
    B = receive_basis(g, W, [0], 3)
    # agent 0 receives from agent 1 only: rows e_1 W^k, k = 0, 1, 2, with agent 0's own coordinate
    # removed (it computes z_0 itself): three independent rows
    K = np.vstack([np.linalg.matrix_power(W, k)[[1]] for k in range(3)])
    K[:, 0] = 0
    assert B.shape == (3, 6)
    np.testing.assert_allclose(B @ B.T, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(K @ np.linalg.pinv(B) @ B, K, atol=1e-12)  # same row space
    assert receive_basis(g, W, [0], 0).shape == (0, 6)
    # on a 4-ring with c = 5 the neighbours' rows e_1 W^k, e_3 W^k span 3 dimensions, not 4: the
    # reflection swapping agents 1 and 3 commutes with W, so e_1 - e_3 is the only odd direction reached
    ring = nx.cycle_graph(4)
    Wr = metropolis(ring)
    K = np.vstack([np.linalg.matrix_power(Wr, k)[[1, 3]] for k in range(5)])
    assert np.linalg.matrix_rank(K) == 3
    K[:, 0] = 0
    assert np.linalg.matrix_rank(K) == 3
    assert receive_basis(ring, Wr, [0], 5).shape[0] == 3


def test_bad_views():
    with pytest.raises(ConfigError, match=r"unknown view 'observr' \(did you mean 'observer'\?\)"):
        make_view("observr", m=4, agents=(0,))
    with pytest.raises(ConfigError, match=r"agent 7 does not exist"):
        make_view("observer", m=4, agents=(7,))
    with pytest.raises(ConfigError, match=r"target 1 is one of the observers"):
        make_view("observer", m=4, agents=(1,), target=1)
    with pytest.raises(ConfigError, match=r"'all-but-one' needs a target"):
        make_view("all-but-one", m=4)
