"""Agents: what they can reach (only their own data), and flooding of q^(T)."""

from __future__ import annotations

import gc
from types import BuiltinFunctionType, CodeType, FunctionType, MethodType, ModuleType

import networkx as nx
import numpy as np
import pytest
import simpy

import dpgossip.protocols.ddppm.nodes as simulator
from dpgossip.engine import Outbox
from dpgossip.protocols.ddppm.agent import Agent
from dpgossip.protocols.ddppm.nodes import run_engine
from tests.conftest import net_from_graph
from tests.engine.conftest import check_flood, data_for, flood_oracle, grid3, params_for, ws12

_OPAQUE = (type, ModuleType, FunctionType, BuiltinFunctionType, CodeType, simpy.Environment,
           Outbox, np.random.Generator, np.random.BitGenerator)


def reachable(root: object) -> list[object]:
    """Every object reachable from ``root`` through attributes, containers, bound methods, events
    and generator frames; the clock/network handle (Outbox, Environment) is a boundary."""
    seen: set[int] = set()
    stack, out = [root], []
    while stack:
        o = stack.pop()
        if id(o) in seen:
            continue
        seen.add(id(o))
        out.append(o)
        if isinstance(o, _OPAQUE):
            continue
        if isinstance(o, MethodType):
            stack.append(o.__self__)
        elif isinstance(o, np.ndarray):
            if o.base is not None:
                stack.append(o.base)
        else:
            stack.extend(gc.get_referents(o))
    return out


def check_isolation(agents: list[Agent], data, network) -> int:
    """Assert that no agent reaches the global data, W, or another agent; return objects seen."""
    total = 0
    for a in agents:
        objs = reachable(a)
        total += len(objs)
        assert any(o is a.X for o in objs)
        for o in objs:
            assert o is not data and o is not data.X and o is not network and o is not network.dense_W()
            assert not (isinstance(o, Agent) and o is not a), f"agent {a.id} reaches agent {o.id}"
            if isinstance(o, np.ndarray) and o.size:
                assert not np.shares_memory(o, data.X), f"agent {a.id} shares memory with X"
                assert not np.shares_memory(o, network.dense_W()), f"agent {a.id} shares memory with W"
                for b in agents:
                    if b is not a:
                        assert not np.shares_memory(o, b.X), f"{a.id} shares {b.id}'s block"
        # the handle exposes the agent's own id, the clock, the links and the monitor, nothing else
        assert set(Outbox.__slots__) == {"owner", "_env", "_fabric", "_monitor"}
        assert a.outbox.owner == a.id
    return total


@pytest.fixture
def spy(monkeypatch):
    """Capture the Agent objects of a run and check isolation while messages are held."""
    agents: list[Agent] = []
    checks = {"n": 0, "context": None}

    class Spy(Agent):
        __slots__ = ()

        def __init__(self, *args, **kw):
            super().__init__(*args, **kw)
            agents.append(self)

        def receive(self, msg, now):
            super().receive(msg, now)
            if checks["context"] is not None and len(checks["seen"]) % 7 == 0:
                check_isolation(agents, *checks["context"])
                checks["n"] += 1
            checks.setdefault("seen", []).append(msg.tag)

    checks["seen"] = []
    monkeypatch.setattr(simulator, "Agent", Spy)
    return agents, checks


def test_agents_reach_only_their_own_data(spy, paper_ring, small_data):
    agents, checks = spy
    checks["context"] = (small_data, paper_ring)
    params = params_for(small_data, paper_ring, T=2, c=2, r=2)
    res = run_engine(small_data, paper_ring, params, seed=1)
    assert res.status == "completed" and checks["n"] > 5
    assert check_isolation(agents, small_data, paper_ring) > 20 * len(agents)
    for a in agents:
        assert a.X.flags.writeable and a.X.base is None
        assert a.w_nbr.shape == (len(a.neighbours),)
        assert not hasattr(a, "__dict__")


def test_agent_holds_only_its_row_of_W(spy, paper_ring, small_data):
    agents, _ = spy
    run_engine(small_data, paper_ring, params_for(small_data, paper_ring), seed=0)
    for a in agents:
        assert a.w_self == paper_ring.dense_W()[a.id, a.id]
        np.testing.assert_array_equal(a.w_nbr, paper_ring.dense_W()[a.id, list(a.neighbours)])
        assert a.neighbours == paper_ring.neighbours[a.id]


@pytest.mark.parametrize("which", ["ring", "grid", "ws12", "star", "ring30"])
def test_batched_flood_delivers_every_block_with_the_expected_count(spy, which, paper_ring,
                                                                   small_data):
    """With a constant latency every hop takes the same time, so the batched flood runs in hops
    (here 10 ms):
    the message and block counts equal the BFS-distance oracle (conftest.flood_oracle), every agent
    gets every block once per incoming edge at most, and every agent's ||q^(T)|| is the norm.
    (With zero latency every message is delivered at time 0 and an agent's batch can absorb what
    a later hop would carry: fewer messages, checked by test_properties.)"""
    agents, _ = spy
    if which == "ring":
        net, data = paper_ring, small_data
    elif which == "star":
        net = net_from_graph(nx.star_graph(4))
        data = data_for(5)
    elif which == "ring30":
        net = net_from_graph(nx.cycle_graph(30))
        data = data_for(30, rows_per_agent=2)
    else:
        net = grid3() if which == "grid" else ws12()
        data = data_for(net.m)
    r = 2
    params = params_for(data, net, T=2, c=1, r=r)
    res = run_engine(data, net, params, seed=3,
                     conditions={"latency": 0.01, "dissemination": "flood"})
    m, E = net.m, net.graph.number_of_edges()
    messages, blocks = flood_oracle(net.graph)
    # component 0 starts its flood on every agent at T c L; component 1 does not (each agent starts
    # it when it has assembled component 0, after its own eccentricity), so only the first follows
    # the oracle's hops
    first = [rec for rec in res.transcript if rec.kind == "final" and rec.tag[1] == 0]
    assert len(first) == messages and sum(len(rec.origins) for rec in first) == blocks
    assert res.summary.flood_messages <= r * m * (2 * E - m + 1)
    check_flood(res, data, net, r)
    for a in agents:
        assert a.trace.members == [tuple(range(m))] * r
        np.testing.assert_allclose(a.trace.q_norm, np.linalg.norm(res.iterates[:, -1], axis=1),
                                   rtol=1e-14)


def test_flood_oracle_by_hand():
    """The oracle on the 4-ring: hop 1 sends every own block both ways (8 messages); at hop 2
    agent i relays i-1's block to i+1 and i+1's to i-1 (8); at hop 3 the opposite agent's block
    arrived from both sides at once, so nothing is relayed: 16 messages, 16 blocks. On the star
    K_{1,4}: 8 own blocks, then the hub sends each leaf the 3 others: 12 messages, 20 blocks."""
    assert flood_oracle(nx.cycle_graph(4)) == (16, 16)
    assert flood_oracle(nx.star_graph(4)) == (12, 20)


def test_isolation_check_has_teeth(spy, paper_ring, small_data):
    agents, _ = spy
    run_engine(small_data, paper_ring, params_for(small_data, paper_ring), seed=0)
    check_isolation(agents, small_data, paper_ring)
    agents[0]._pending = [small_data.X[3:5]]               # a view into the global matrix
    with pytest.raises(AssertionError, match="shares memory with X"):
        check_isolation(agents, small_data, paper_ring)
    agents[0]._pending = [agents[2]]                         # a reference to another agent
    with pytest.raises(AssertionError, match="agent 0 reaches agent 2"):
        check_isolation(agents, small_data, paper_ring)
