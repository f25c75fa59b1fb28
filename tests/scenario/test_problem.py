"""One network, one dataset and one parameter resolution per point: calibration, repeats and audit
share the point's Problem; a rank-2 audit is conditional on the recorded repeat 0."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from dpgossip.protocols.ddppm.matrix import run_matrix
from dpgossip.scenario import execute, problem
from dpgossip.scenario.expand import expand
from dpgossip.scenario.privacy_section import AUDITED_REPEAT, audit_config
from dpgossip.scenario.runner import repeat_seed
from dpgossip.scenario.schema import validate

pytestmark = pytest.mark.usefixtures("smallest_search")  # the pipeline, not the search: tests/conftest.py

POINT = {
    "name": "count",
    "seed": 3,
    "repeats": 3,
    "data": {"source": "synthetic", "synthetic": {"n": 16, "d": 2, "spectrum": [1.0, 0.6]},
             "standardize": False},
    "network": {"topology": "ring", "agents": 4},
    "protocol": {"iterations": 2, "consensus_steps": 1,
                 "noise": {"schedule": "constant", "scale": 1.0}},
    "privacy": {"audit": True, "search": "quick", "methods": ["rdp"],
                "calibrate": {"epsilon": 300.0, "family": "constant", "method": "rdp"}},
    "output": {"plots": False},
}


class Counter:
    def __init__(self, real):
        self.real, self.calls = real, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.real(*args, **kwargs)


def test_a_point_builds_its_network_and_resolves_its_parameters_once(monkeypatch):
    counters = {name: Counter(getattr(problem, name))
                for name in ("make_network", "load_dataset", "resolve_params")}
    for name, c in counters.items():
        monkeypatch.setattr(problem, name, c)
    p = expand(validate(copy.deepcopy(POINT)))[0]
    result = execute.run_task(execute.PointTask(index=0, key="k", config=p.config, axes=p.axes))
    assert len(result.tables["runs"]) == 3  # three repeats
    assert len(result.tables["calibration"]) == 1 and len(result.tables["leakage"]) == 12
    # the calibration's own scale search resolves parameters per scale inside the privacy layer; the
    # scenario layer builds the network and data once and resolves the point's parameters once
    assert {name: c.calls for name, c in counters.items()} == {
        "make_network": 1, "load_dataset": 1, "resolve_params": 1}


def test_a_rank_two_audit_is_conditional_on_the_recorded_repeat_zero():
    raw = copy.deepcopy(POINT)
    raw["protocol"]["rank"] = 2
    del raw["privacy"]["calibrate"]
    cfg = expand(validate(raw))[0].config
    prob = problem.build_problem(cfg)
    audit = audit_config(cfg, prob)
    recorded = run_matrix(prob.data, prob.network, prob.params, repeat_seed(cfg["seed"], 0))
    assert AUDITED_REPEAT == 0 and audit.run is not None
    for a, b in zip(audit.run.data, recorded.data, strict=True):
        assert np.array_equal(a, b)
    assert np.array_equal(audit.run.Q, recorded.Q)
    # not the run of SeedSequence(seed) that the audit used before: that one differs
    other = run_matrix(prob.data, prob.network, prob.params, cfg["seed"])
    assert not np.array_equal(other.Q, recorded.Q)
