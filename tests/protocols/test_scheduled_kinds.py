"""The gossip kinds under a schedule of rounds (docs/dynamic-gossip.md, section 8), per kind that runs
under one (``ProtocolKind.schedule_rounds``): ppm-gossip, capepca-gossip and dpals-gossip.

* on three graphs and two samplers the engine run equals the matrix backend run on the schedule the
  engine recorded (1e-10), and the recorded schedule is the sampled one (ideal links);
* the views rebuilt from the engine's transcript equal the release model of that schedule (1e-10), and
  are far from the model of another schedule (the residual reads the schedule);
* a ``fixed`` schedule (every ``W_t = W``) reproduces the run without a schedule bit for bit, on both
  backends, and its audit equals the fixed-``W`` audit (computed by block Krylov on ``W``, a second
  method against the explicit products of the schedule; dpals-gossip: its fixed-``W`` eavesdropper
  keeps one round, the schedule's every round, whose rows span the same space);
* schedules a gossip kind cannot follow are refused with a clear error.
"""

from __future__ import annotations

import dataclasses
from functools import cache

import numpy as np
import pytest

from dpgossip.engine import NetworkConditions
from dpgossip.errors import ConfigError
from dpgossip.protocols.gossip.round_mixing import RoundMixing
from dpgossip.protocols.registry import PointInputs, kind
from dpgossip.topology import make_network
from dpgossip.topology.schedule_spec import ScheduleSpec

TOL = 1e-10
SEED = 11
KINDS = ["ppm-gossip", "capepca-gossip", "dpals-gossip"]
GRAPHS = {"ring": {}, "grid": {"params": {"rows": 2}}, "erdos_renyi": {"params": {"p": 0.6}, "seed": 4}}
SAMPLERS = {"random-matchings": ScheduleSpec(sampler="random-matchings", seed=3),
            "fixed": ScheduleSpec(sampler="fixed")}


@cache
def _inputs(name: str, graph: str, sampler: str | None) -> PointInputs:
    spec = kind(name)
    base = spec.example()
    net = make_network(graph, agents=base.network.m, **GRAPHS[graph])
    inputs = dataclasses.replace(base, network=net)
    if sampler is None:
        return inputs
    return dataclasses.replace(inputs, schedule=SAMPLERS[sampler].sample(net, spec.schedule_rounds(inputs)))


@cache
def _runs(name: str, graph: str, sampler: str | None):
    inputs = _inputs(name, graph, sampler)
    point = kind(name).build(inputs)
    matrix = point.protocol.run(inputs.data, inputs.network, SEED)
    form = point.engine(NetworkConditions())
    record = form.run_engine(inputs.data, inputs.network, SEED)
    return point, matrix, record, form.protocol_run(record, inputs.data)


def _matrices(schedule) -> np.ndarray:
    return np.stack([W.toarray() for W in schedule.matrices])


@pytest.mark.parametrize("sampler", list(SAMPLERS))
@pytest.mark.parametrize("graph", list(GRAPHS))
@pytest.mark.parametrize("name", KINDS)
def test_engine_equals_the_matrix_backend_on_the_recorded_schedule(name, graph, sampler) -> None:
    inputs = _inputs(name, graph, sampler)
    point, _, record, engine = _runs(name, graph, sampler)
    assert record.status == "completed"
    recorded = record.result.schedule
    np.testing.assert_array_equal(_matrices(recorded), _matrices(inputs.schedule))
    replay = dataclasses.replace(point.protocol, schedule=recorded).run(inputs.data, inputs.network, SEED)
    np.testing.assert_allclose(engine.agent_finals, replay.agent_finals, rtol=0, atol=TOL)
    np.testing.assert_allclose(engine.trajectory, replay.trajectory, rtol=0, atol=TOL)
    assert point.view_residual(record, inputs.data) <= TOL


@pytest.mark.parametrize("name", KINDS)
def test_view_residual_reads_the_schedule(name) -> None:
    """The transcript of a random-matchings run against the model of another schedule (a different
    seed) is far off: the residual compares messages with the schedule's products, and which pairs
    talk in which round."""
    inputs = _inputs(name, "ring", "random-matchings")
    point, _, record, _ = _runs(name, "ring", "random-matchings")
    other = ScheduleSpec(sampler="random-matchings", seed=8).sample(inputs.network, inputs.schedule.steps)
    assert not np.array_equal(_matrices(other), _matrices(inputs.schedule))
    result = record.result
    result = (dataclasses.replace(result, extra={**result.extra, "schedule": other})
              if isinstance(getattr(result, "extra", None), dict)            # dpals-gossip's AlsResult
              else dataclasses.replace(result, schedule=other))
    swapped = dataclasses.replace(record, result=result)
    assert not point.view_residual(swapped, inputs.data) <= 1e-6


@pytest.mark.parametrize("graph", list(GRAPHS))
@pytest.mark.parametrize("name", KINDS)
def test_a_fixed_schedule_reproduces_the_fixed_run_bit_for_bit(name, graph) -> None:
    point, matrix, record, engine = _runs(name, graph, "fixed")
    plain_point, plain, plain_record, plain_engine = _runs(name, graph, None)
    np.testing.assert_array_equal(matrix.agent_finals, plain.agent_finals)
    np.testing.assert_array_equal(matrix.trajectory, plain.trajectory)
    np.testing.assert_array_equal(engine.agent_finals, plain_engine.agent_finals)
    # the audits: explicit products of the schedule's W_t (per iteration) against the Krylov basis of W
    scheduled, fixed = point.columns(matrix.result, 0), plain_point.columns(plain.result, 0)
    keys = [k for k in fixed if "epsilon" in k and isinstance(fixed[k], float)]
    assert {"guaranteed_epsilon", "audited_epsilon"} <= set(keys) and scheduled.keys() == fixed.keys()
    for key in keys:
        assert scheduled[key] == pytest.approx(fixed[key], rel=1e-9), key


@pytest.mark.parametrize("name", KINDS)
def test_a_complete_graph_runs_the_one_peer_exponential_graph(name) -> None:
    """A schedule whose pairs are not edges of the ring is refused by the engine (it sends only along
    edges); on the complete graph the engine follows it and matches the matrix backend."""
    spec = ScheduleSpec(sampler="one-peer-exponential")
    base = kind(name).example()
    T = kind(name).schedule_rounds(base)
    ring = dataclasses.replace(base, schedule=spec.sample(base.network, T))
    with pytest.raises(ConfigError, match=r"^schedule: its rounds \(one-peer-exponential\) pair agents "
                                          r"0 and 2, which are not neighbours"):
        kind(name).build(ring).engine(NetworkConditions()).run_engine(ring.data, ring.network, SEED)
    net = make_network("complete", agents=base.network.m)
    full = dataclasses.replace(base, network=net, schedule=spec.sample(net, T))
    point = kind(name).build(full)
    form = point.engine(NetworkConditions())
    record = form.run_engine(full.data, net, SEED)
    np.testing.assert_allclose(form.protocol_run(record, full.data).agent_finals,
                               point.protocol.run(full.data, net, SEED).agent_finals, rtol=0, atol=TOL)
    assert point.view_residual(record, full.data) <= TOL


def test_round_mixing_refuses_what_a_gossip_kind_cannot_follow() -> None:
    net = make_network("ring", agents=6)
    pairwise = ScheduleSpec(sampler="pairwise", seed=1).sample(net, 10)
    push = ScheduleSpec(sampler="push-sum").sample(net, 10)
    short = ScheduleSpec(sampler="fixed").sample(net, 3)
    with pytest.raises(ConfigError, match=r"^schedule: a 'pairwise' schedule \(pairwise\) has no "
                                          r"synchronous rounds"):
        RoundMixing(net, pairwise, 10)
    with pytest.raises(ConfigError, match=r"^schedule: a push-sum \('column' stochastic\) schedule"):
        RoundMixing(net, push, 10)
    with pytest.raises(ConfigError, match=r"^schedule has 3 rounds, the run needs 12"):
        RoundMixing(net, short, 12)
    other = ScheduleSpec(sampler="fixed").sample(make_network("ring", agents=5), 12)
    with pytest.raises(ConfigError, match=r"^schedule has 5 agents, the network 6$"):
        RoundMixing(net, other, 12)


def test_round_products_follow_the_global_round_index() -> None:
    """Phase ``p`` of ``c`` rounds reads ``W_{pc} .. W_{pc + c - 1}``: the states equal the explicit
    products of those matrices (dense, one at a time)."""
    net = make_network("grid", agents=9)
    s = ScheduleSpec(sampler="random-matchings", seed=2).sample(net, 12)
    mixing = RoundMixing(net, s, 12)
    x = np.random.default_rng(0).normal(size=(9, 2))
    for p in range(3):
        want = x
        for t in range(4 * p, 4 * p + 4):
            want = s.matrices[t].toarray() @ want
        np.testing.assert_allclose(mixing.states(x, 4 * p, 4)[-1], want, rtol=0, atol=1e-14)
        np.testing.assert_allclose(mixing.product(4 * p, 4) @ x, want, rtol=0, atol=1e-14)
