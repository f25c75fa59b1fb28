"""The kernel runs a node program written outside ``engine/``: ``c`` rounds of averaging, a
:class:`~dpgossip.engine.node.Node` subclass defined here with ``Node._mix``, checked against an
independent oracle (the matrix power ``W^c x`` by numpy) and against closed-form message counts, under
ideal links, loss with retransmission, a crash and loss without retransmission."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from dpgossip.engine import EngineRecord, NetworkConditions, Node, NodeTrace, Simulation
from tests.conftest import net_from_graph

LOSSY = {"latency": {"kind": "exponential", "mean": 0.01}, "loss": 0.3, "retransmit_timeout": 0.05,
         "compute_time": 0.001, "stragglers": {"1": 3.0}}


class Averager(Node):
    """Node ``i`` holds ``x_i``; ``c`` rounds of ``S <- W_ii S + sum_j W_ij S_j`` from ``S = x_i``."""

    def __init__(self, i, sim, x, rounds):
        super().__init__(i, sim.outbox(i), NodeTrace(), sim.compute_delay(i))
        self.x, self.weights, self.rounds = x, sim.weight_row(i), rounds

    def _protocol(self):
        yield from self._compute()
        states = self.trace.values["states"] = np.full((self.rounds + 1, self.x.size), np.nan)
        self.trace.values["final"] = yield from self._mix(self.x, (0,), self.rounds, self.weights,
                                                          states.__setitem__)


def _run(net, x, c, conditions=None):
    sim = Simulation(net, NetworkConditions.from_mapping(conditions or {}), np.random.default_rng(0))
    nodes = [Averager(i, sim, x[i], c) for i in range(net.m)]
    sim.run(nodes)
    outcome = sim.outcome(nodes, "averaging")
    return EngineRecord(**sim.record_fields(outcome, nodes)), nodes


@pytest.fixture(scope="module")
def problem():
    net = net_from_graph(nx.connected_watts_strogatz_graph(9, 4, 0.3, seed=3), "ws9")
    x = np.random.default_rng(5).normal(size=(9, 3))
    return net, x


@pytest.mark.parametrize("conditions", [None, LOSSY])
def test_rounds_of_mixing_give_the_matrix_power(problem, conditions):
    net, x, c = *problem, 4
    rec, nodes = _run(net, x, c, conditions)
    assert rec.status == "completed" and rec.outcome.reason == ""
    W = net.dense_W()
    for k in range(c + 1):                      # every recorded state is row i of W^k x
        want = np.linalg.matrix_power(W, k) @ x
        got = np.stack([n.trace.values["states"][k] for n in nodes])
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    E = net.graph.number_of_edges()
    assert rec.summary.messages_delivered == rec.summary.gossip_messages == c * 2 * E
    assert len(rec.transcript) == c * 2 * E
    assert {r.tag for r in rec.transcript} == {(0, k) for k in range(1, c + 1)}
    if conditions is not None:
        assert rec.summary.retransmissions > 0


def test_network_conditions_change_times_never_values(problem):
    net, x = problem
    ideal = np.stack([n.trace.values["final"] for n in _run(net, x, 3)[1]])
    lossy = np.stack([n.trace.values["final"] for n in _run(net, x, 3, LOSSY)[1]])
    np.testing.assert_array_equal(ideal, lossy)             # same mixing order: bit for bit


def test_a_crash_anyone_waits_on_stops_the_run_and_names_the_program(problem):
    net, x = problem
    # copies to the crashed node are given up at 2 x 0.1 s; the stall check (every failure_timeout)
    # takes the progress signal at 0.5 s, then sees nothing in flight and no progress for two
    # periods: at 1.0 s and 1.5 s
    rec, nodes = _run(net, x, 3, {"crashes": {"2": 0.0}, "failure_timeout": 0.5, "max_attempts": 2,
                                  "retransmit_timeout": 0.1})
    assert rec.status == "stopped" and rec.outcome.crashed == (2,)
    assert rec.outcome.reason.startswith("averaging needs every party's message")
    assert "crash undetected: agent(s) [2]" in rec.outcome.reason
    assert not any(n.finished for n in nodes)
    assert rec.outcome.halted_at == pytest.approx(1.5)
    assert rec.summary.abandoned == sum(1 for _ in net.graph.neighbors(2))
    rec, _ = _run(net, x, 3, {"crashes": {"2": 100.0}})    # after the end: nobody waits on it
    assert rec.status == "completed"


def test_loss_without_retransmission_stops_with_a_named_reason(problem):
    net, x = problem
    rec, _ = _run(net, x, 3, {"loss": 0.2, "retransmit": False, "failure_timeout": 0.5})
    assert rec.status == "stopped" and "message lost" in rec.outcome.reason
    assert rec.summary.lost_copies > 0
