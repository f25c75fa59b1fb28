"""Exact leakage of gossip averaging under a recorded schedule, against a dense oracle.

Oracle: every message's coefficient row written down by running the schedule on the unit vectors
(brute force, step by step), then ``mu_u^2 = c_u^T (C D^2 C^T)^+ c_u`` over the rows ``C`` the
observer received from others, with the observer's own columns removed (``Delta = 1``).
"""

from __future__ import annotations

import numpy as np
import pytest

from dpgossip.engine.dynamic import run_pairwise
from dpgossip.protocols.gossip.audit import audit_view
from dpgossip.protocols.gossip.scheduled import observe_schedule
from dpgossip.topology import make_network
from dpgossip.topology.churn import SessionLength, sample_presence
from dpgossip.topology.schedule_samplers import neighbour_probabilities, random_matchings
from dpgossip.topology.schedules import AVERAGED, REFUSED, REPLY_LATE, MixingSchedule


def _received_rows(s: MixingSchedule, obs: int) -> np.ndarray:
    """Coefficient rows (on y^0) of the messages ``obs`` received, by brute force."""
    Y = np.eye(s.m)                      # column u: the run started from e_u
    rows = []
    if s.kind == "pairwise":
        for (i, j), o in zip(s.pairs.tolist(), s.outcomes.tolist(), strict=True):
            a = 0.5 * (Y[i] + Y[j])
            if j == obs and i != obs:
                rows.append(Y[i].copy())
            if i == obs and o in (AVERAGED, REPLY_LATE):
                rows.append(a.copy())
            if o != REFUSED:
                Y[j] = a
                if o == AVERAGED:
                    Y[i] = a
        return np.array(rows)
    for W in s.matrices:
        A = W.toarray()
        rows += [Y[j].copy() for j in range(s.m) if j != obs and A[obs, j]]
        Y = A @ Y
    return np.array(rows)


def _engine_schedule(net, seed: int) -> MixingSchedule:
    pres = sample_presence(net.m, 15.0, SessionLength("exponential", 5.0),
                           SessionLength("exponential", 1.0), seed)
    cond = {"latency": {"kind": "uniform", "low": 0.0, "high": 0.9}, "loss": 0.2, "retransmit": False}
    return run_pairwise(net, neighbour_probabilities(net.graph), np.zeros(net.m), seed, horizon=15.0,
                        conditions=cond, presence=pres).schedule


@pytest.mark.parametrize("which", ["engine-pairwise", "matchings"])
def test_scheduled_leakage_equals_the_dense_oracle(which: str) -> None:
    net = make_network("ring", agents=7)
    s = (_engine_schedule(net, 4) if which == "engine-pairwise"
         else random_matchings(8, 1, graph=net.graph))
    sigma = np.linspace(0.5, 1.5, 7)
    obs = 2
    rows = audit_view(observe_schedule(s, sigma, obs), net)
    C = _received_rows(s, obs)
    others = [u for u in range(7) if u != obs]
    Sigma = (C[:, others] * sigma[others] ** 2) @ C[:, others].T
    pinv = np.linalg.pinv(Sigma, rcond=1e-12)
    want = {u: float(np.sqrt(C[:, u] @ pinv @ C[:, u])) for u in others}
    got = {r.target: r.mu for r in rows}
    assert set(got) == set(want)
    for u in others:
        assert got[u] == pytest.approx(want[u], abs=1e-9)
    assert max(want.values()) > 0.1                # the observer learned something
