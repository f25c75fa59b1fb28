"""The pair audit: shapes, orderings that must hold, valid neighbours, and the dense reference."""

import networkx as nx
import numpy as np
import pytest

from dpgossip.errors import ConfigError
from dpgossip.privacy.neighbours import is_neighbour
from dpgossip.protocols.ddppm.audit import AuditOptions, audit_pairs, component_model, view_pair
from dpgossip.protocols.ddppm.params import NoiseSchedule, resolve_params
from dpgossip.protocols.ddppm.views import make_view
from dpgossip.topology.network import Network
from tests.conftest import PAPER_W, spiked_data


@pytest.fixture(scope="module")
def problem():
    net = Network(graph=nx.cycle_graph(4), W=PAPER_W, name="paper-ring4")
    data = spiked_data(48, 3, [2, 1.2, .6], 4, seed=3)
    p = resolve_params(data, net, iterations=2, consensus_steps=1,
                       noise=NoiseSchedule(kind="constant", scale=10.0))
    return data, net, p


@pytest.fixture(scope="module")
def audit(problem):
    data, net, p = problem
    # two pairs (a neighbour and a two-hop observer of target 1) keep the exact conversions quick
    return audit_pairs(data, net, p, delta=1e-2, epsilons=(1.0, 5.0), search="quick", seed=0,
                       options=AuditOptions(targets=[1], observers=[0, 2, 3]))


def test_matrix_shape_and_orderings(audit):
    E = audit.matrix("exact")
    assert E.shape == (4, 4) and np.all(np.isnan(np.diag(E)))
    off = np.zeros((4, 4), dtype=bool)
    off[[0, 2, 3], 1] = True
    assert np.all(np.isnan(E[~off]))
    assert np.all(np.isfinite(E[off])) and np.all(E[off] > 0)
    # exact <= rdp and exact <= chernoff (PDP bound) for every pair, at delta and at each epsilon
    assert np.all(E[off] <= audit.matrix("rdp")[off] * (1 + 1e-9))
    assert np.all(E[off] <= audit.matrix("chernoff")[off] * (1 + 1e-9))
    for i in range(2):
        De = audit.matrix("exact", "delta", i)[off]
        assert np.all(De <= audit.matrix("rdp", "delta", i)[off] + 1e-12)
        assert np.all(De <= audit.matrix("chernoff", "delta", i)[off] + 1e-12)


def test_worst_case_is_a_valid_neighbour_and_matches_the_dense_pair(problem, audit):
    data, net, p = problem
    w = audit.worst()
    x = data.X[w.neighbour.row]
    assert data.offsets[w.target] <= w.neighbour.row < data.offsets[w.target + 1]
    assert is_neighbour(x, w.neighbour.x_new, "bounded")
    dense = view_pair(component_model(data, net, p),
                      component_model(data, net, p, X=w.neighbour.apply(data.X)),
                      make_view("observer", m=4, agents=(w.observer,)), net)
    assert dense.epsilon(1e-2, "exact") == pytest.approx(w.epsilon["exact"], rel=1e-6)
    rows = audit.rows()
    assert len(rows) == 3 * 3 and {"observer", "target", "hops", "epsilon", "row"} <= set(rows[0])


def test_eavesdropper_rows_are_equal(problem):
    data, net, p = problem
    a = audit_pairs(data, net, p, view="eavesdropper", search="quick", methods=("rdp",), seed=1)
    M = a.matrix("rdp")
    for j in range(4):
        col = M[[o for o in range(4) if o != j], j]
        assert np.allclose(col, col[0])


def test_bad_audit_inputs(problem):
    data, net, p = problem
    with pytest.raises(ConfigError, match=r"^delta must be in \(0, 1\), got 2"):
        audit_pairs(data, net, p, delta=2)
    with pytest.raises(ConfigError, match=r"^view 'coalition' is not supported"):
        audit_pairs(data, net, p, view="coalition")
