"""The engine's dynamic modes equal the matrix backend on the schedule the engine recorded."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from dpgossip.engine.dynamic import run_pairwise, run_rounds
from dpgossip.errors import ConfigError
from dpgossip.protocols.gossip.scheduled import scheduled_view_values
from dpgossip.topology import make_network
from dpgossip.topology.churn import SessionLength, presence_from_trace, sample_presence
from dpgossip.topology.schedule_backend import apply_schedule, push_sum_ratio
from dpgossip.topology.schedule_samplers import (
    neighbour_probabilities,
    one_peer_exponential,
    push_sum_schedule,
    random_matchings,
    random_regular_rounds,
)
from dpgossip.topology.schedules import AVERAGED, REFUSED, REPLY_LATE, REPLY_LOST

GRAPHS = [("ring", 8), ("grid", 9), ("erdos_renyi", 10)]
# churn, drop and random delays together; delays up to 1.5 periods make some round messages late
HARSH = {"latency": {"kind": "uniform", "low": 0.0, "high": 1.5}, "loss": 0.2, "retransmit": False}
# pairwise: delays up to 0.9 against a timeout of 1 make some requests stale and some replies late
HARSH_PAIRS = {**HARSH, "latency": {"kind": "uniform", "low": 0.0, "high": 0.9}}


def _presence(m: int, horizon: float, seed: int):
    return sample_presence(m, horizon, SessionLength("exponential", 6.0),
                           SessionLength("lognormal", 0.0, 0.5), seed)


def _network(name: str, m: int):
    return make_network(name, agents=m, seed=3, **({"params": {"p": 0.4}} if name == "erdos_renyi" else {}))


@pytest.mark.parametrize(("name", "m"), GRAPHS)
@pytest.mark.parametrize("harsh", [False, True])
def test_pairwise_engine_equals_backend_on_recorded_schedule(name: str, m: int, harsh: bool) -> None:
    net = _network(name, m)
    x = np.random.default_rng(m).normal(size=(m, 2))
    kw = {"conditions": HARSH_PAIRS, "presence": _presence(m, 60.0, m)} if harsh else {}
    run = run_pairwise(net, neighbour_probabilities(net.graph), x, 5, horizon=60.0, **kw)
    s = run.schedule
    assert s.steps > 100
    np.testing.assert_allclose(run.values, apply_schedule(s, x), atol=1e-10, rtol=0)
    if harsh:   # every outcome and some absences happened, so each code path was compared
        assert set(s.outcomes.tolist()) == {AVERAGED, REPLY_LOST, REPLY_LATE, REFUSED}
        assert s.absent
    else:       # ideal links: every exchange averages both sides, the mean is kept
        assert set(s.outcomes.tolist()) == {AVERAGED}
        np.testing.assert_allclose(run.values.mean(0), x.mean(0), atol=1e-12)


def _sampled(kind: str, m: int, graph: nx.Graph):
    if kind == "matchings":
        return random_matchings(12, 4, graph=graph)
    if kind == "one-peer":
        return one_peer_exponential(m, 12)
    return random_regular_rounds(m + m % 2, 3, 12, 4) if kind == "regular" else None


@pytest.mark.parametrize(("name", "m"), GRAPHS)
@pytest.mark.parametrize("kind", ["matchings", "one-peer", "regular"])
@pytest.mark.parametrize("harsh", [False, True])
def test_rounds_engine_equals_backend_on_recorded_schedule(name: str, m: int, kind: str,
                                                           harsh: bool) -> None:
    sampled = _sampled(kind, m, _network(name, m).graph)
    n = sampled.m
    x = np.random.default_rng(n).normal(size=n)
    kw = {"conditions": HARSH, "presence": _presence(n, 12.0, 1)} if harsh else {}
    run = run_rounds(sampled, x, 9, **kw)
    np.testing.assert_allclose(run.values[:, 0], apply_schedule(run.schedule, x), atol=1e-10, rtol=0)
    if harsh:
        assert run.schedule.stochastic == "row" and run.schedule.late.size and run.schedule.absent
    else:       # nothing lost: the recorded schedule is the sampled one
        assert run.schedule.stochastic == "doubly"
        np.testing.assert_allclose(run.values[:, 0], apply_schedule(sampled, x), atol=1e-12)


DIGRAPHS = [nx.DiGraph([(0, 1), (1, 2), (2, 3), (3, 4), (4, 0), (0, 2), (0, 3), (1, 4)]),
            nx.DiGraph([(i, (i + s) % 7) for i in range(7) for s in (1, 3)]),
            nx.DiGraph([(i, (i + 1) % 6) for i in range(6)] + [(0, 3), (3, 5)])]


@pytest.mark.parametrize("k", range(3))
@pytest.mark.parametrize("harsh", [False, True])
def test_push_sum_engine_equals_backend_on_recorded_schedule(k: int, harsh: bool) -> None:
    g = DIGRAPHS[k]
    m = g.number_of_nodes()
    s = np.random.default_rng(k).normal(size=m)
    kw = {"conditions": HARSH, "presence": _presence(m, 60.0, 2)} if harsh else {}
    run = run_rounds(push_sum_schedule(g, 60), s, 1, **kw)
    rec = run.schedule
    want = apply_schedule(rec, np.column_stack([s, np.ones(m)]))
    np.testing.assert_allclose(run.values, want, atol=1e-10, rtol=0)
    if not harsh:   # nothing lost: push-sum's ratio reaches the exact average
        np.testing.assert_allclose(run.values[:, 0] / run.values[:, 1], s.mean(), atol=1e-9)
        np.testing.assert_allclose(push_sum_ratio(rec, s), s.mean(), atol=1e-9)


@pytest.mark.parametrize("mode", ["pairwise", "rounds"])
@pytest.mark.parametrize("harsh", [False, True])
def test_transcript_messages_are_the_release_rows(mode: str, harsh: bool) -> None:
    # what the observers received on the wire (while present) equals the release model's rows
    # applied to y^0: late replies, late round messages and refused requests included
    net = make_network("ring", agents=8)
    y0 = np.random.default_rng(0).normal(size=8)
    pres = _presence(8, 12.0, 3) if harsh else None
    if mode == "pairwise":
        run = run_pairwise(net, neighbour_probabilities(net.graph), y0, 2, horizon=12.0,
                           record_transcript=True, presence=pres,
                           conditions=HARSH_PAIRS if harsh else None)
        present = [pres is None or pres.online(r.message.dst, r.delivered_at) for r in run.transcript]
    else:
        run = run_rounds(random_matchings(12, 4, graph=net.graph), y0, 2, record_transcript=True,
                         presence=pres, conditions=HARSH if harsh else None)
        present = [pres is None or pres.online(r.message.dst, float(r.message.tag[0]))
                   for r in run.transcript]
    obs = (1, 4)
    wire = sorted(float(r.message.payload[0]) for r, p in zip(run.transcript, present, strict=True)
                  if p and r.message.dst in obs and r.message.src not in obs)
    model = sorted(scheduled_view_values(run.schedule, y0, obs).tolist())
    assert len(wire) == len(model) > 5
    np.testing.assert_allclose(wire, model, atol=1e-12)


def test_absent_agents_keep_their_value_and_bad_conditions_are_refused() -> None:
    net = make_network("ring", agents=6)
    x = np.arange(6.0)
    pres = presence_from_trace(6, [(2, 0.0, 100.0)])
    run = run_pairwise(net, neighbour_probabilities(net.graph), x, 1, horizon=20.0, presence=pres)
    assert run.values[2, 0] == 2.0 and 2 not in run.schedule.pairs
    with pytest.raises(ConfigError) as err:
        run_pairwise(net, neighbour_probabilities(net.graph), x, 1, horizon=1.0,
                     conditions={"loss": 0.1})
    assert err.value.field == "conditions.retransmit"
    with pytest.raises(ConfigError) as err:
        run_pairwise(net, neighbour_probabilities(net.graph), x, 1, horizon=1.0,
                     conditions={"crashes": {0: 0.5}})
    assert err.value.field == "conditions.crashes"
    with pytest.raises(ConfigError, match="cover the 6 agents") as err:
        run_pairwise(net, neighbour_probabilities(net.graph), x, 1, horizon=1.0,
                     presence=presence_from_trace(5, []))
    assert err.value.field == "presence"
    with pytest.raises(ConfigError, match="computation time") as err:
        run_rounds(random_matchings(2, 0, graph=net.graph), x, 1, conditions={"compute_time": 0.1})
    assert err.value.field == "conditions.stragglers"
    with pytest.raises(ConfigError, match="shape") as err:
        run_rounds(random_matchings(2, 0, graph=net.graph), x[:5], 1)
    assert err.value.field == "x"
