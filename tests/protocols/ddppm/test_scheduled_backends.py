"""D-DP-PM's backends under a schedule of rounds (docs/dynamic-gossip.md, section 8): the engine's agents
(MixingNode) and the matrix backend read ``W_g`` for global round ``g = (l T + t - 1) c + k - 1``.

* three graphs, two samplers: the engine's recorded schedule is the sampled one and its run equals the
  matrix backend on it (1e-10);
* a ``fixed`` schedule reproduces the run without one bit for bit on both backends;
* a crash: the realised schedule moves the crashed neighbour's weight onto the survivors' diagonals
  (row stochastic, checked against the sampled ``W_t`` edited by hand) and the survivors' recorded
  states are the realised ``W_t`` applied round by round;
* the ``ddppm`` kind refuses a scenario schedule (its pair audit assumes one fixed ``W``).
"""

from __future__ import annotations

import numpy as np
import pytest

from dpgossip.data import load_dataset
from dpgossip.protocols.ddppm.matrix import run_matrix
from dpgossip.protocols.ddppm.nodes import run_engine
from dpgossip.protocols.ddppm.params import NoiseSchedule, resolve_params
from dpgossip.protocols.registry import kind
from dpgossip.topology import make_network
from dpgossip.topology.schedule_spec import ScheduleSpec

GRAPHS = {"ring": {}, "grid": {"params": {"rows": 2}}, "erdos_renyi": {"params": {"p": 0.6}, "seed": 4}}
SAMPLERS = {"random-matchings": ScheduleSpec(sampler="random-matchings", seed=3),
            "fixed": ScheduleSpec(sampler="fixed")}
T, C, R = 3, 3, 2


def _case(graph: str):
    net = make_network(graph, agents=6, **GRAPHS[graph])
    data = load_dataset("wine", agents=6)
    params = resolve_params(data, net, iterations=T, consensus_steps=C, rank=R,
                            noise=NoiseSchedule(kind="constant", scale=0.05))
    return net, data, params


def _stack(schedule) -> np.ndarray:
    return np.stack([W.toarray() for W in schedule.matrices])


@pytest.mark.parametrize("sampler", list(SAMPLERS))
@pytest.mark.parametrize("graph", list(GRAPHS))
def test_engine_equals_matrix_on_the_recorded_schedule(graph: str, sampler: str) -> None:
    net, data, params = _case(graph)
    schedule = SAMPLERS[sampler].sample(net, R * T * C)
    eng = run_engine(data, net, params, 5, schedule=schedule, record_states=True)
    assert eng.status == "completed"
    np.testing.assert_array_equal(_stack(eng.schedule), _stack(schedule))
    mat = run_matrix(data, net, params, 5, schedule=eng.schedule, record_states=True)
    np.testing.assert_allclose(eng.Q, mat.Q, rtol=0, atol=1e-10)
    np.testing.assert_allclose(eng.states, mat.states, rtol=0, atol=1e-10)
    if sampler == "fixed":
        plain_m = run_matrix(data, net, params, 5, record_states=True)
        plain_e = run_engine(data, net, params, 5, record_states=True)
        np.testing.assert_array_equal(mat.iterates, plain_m.iterates)
        np.testing.assert_array_equal(mat.states, plain_m.states)
        np.testing.assert_array_equal(eng.iterates, plain_e.iterates)
        np.testing.assert_array_equal(eng.Q, plain_e.Q)
    else:
        assert not np.allclose(mat.Q, run_matrix(data, net, params, 5).Q)


def test_a_crash_gives_a_row_stochastic_realised_schedule() -> None:
    """One-peer exponential rounds on the complete graph (``W_t`` not symmetric, so moving a weight to
    the diagonal leaves a column short: with a symmetric ``W_t`` the edit keeps it doubly stochastic)."""
    net = make_network("complete", agents=6)
    data = load_dataset("wine", agents=6)
    params = resolve_params(data, net, iterations=T, consensus_steps=C, rank=R,
                            noise=NoiseSchedule(kind="constant", scale=0.05))
    schedule = ScheduleSpec(sampler="one-peer-exponential").sample(net, R * T * C)
    dead = 5
    res = run_engine(data, net, params, 5, schedule=schedule, record_states=True,
                     conditions={"crashes": {dead: 0.0}, "on_crash": "reweight", "failure_timeout": 0.5})
    assert res.status == "completed_with_crash"
    got = _stack(res.schedule)
    want = _stack(schedule)
    survivors = [i for i in range(6) if i != dead]
    for W in want:                           # by hand: the dead agent's weight to each survivor's diagonal
        for i in survivors:
            W[i, i] += W[i, dead]
            W[i, dead] = 0.0
        W[dead] = np.eye(6)[dead]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-15)
    np.testing.assert_allclose(got.sum(axis=2), 1.0, rtol=0, atol=1e-15)        # rows sum to one
    assert res.schedule.stochastic == "row"
    assert any(not np.allclose(W.sum(axis=0), 1) for W in got)     # some columns no longer do
    # the survivors' states are the realised W_t applied round by round (first iteration of component 0)
    S = res.states[0, 0]
    for k in range(1, C + 1):
        np.testing.assert_allclose(S[k][survivors], (got[k - 1] @ np.nan_to_num(S[k - 1]))[survivors],
                                   rtol=0, atol=1e-12)


def test_the_ddppm_kind_refuses_a_schedule_and_says_why() -> None:
    spec = kind("ddppm")
    assert spec.schedule_rounds is None and "pair audit" in spec.schedule_refusal
