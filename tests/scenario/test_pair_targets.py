"""The per-target pair audit: atomic files, resume, same rows as one audit of every target."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from dpgossip.data.partition import PartitionedData
from dpgossip.errors import ConfigError
from dpgossip.protocols.ddppm.audit import AuditOptions, audit_pairs
from dpgossip.protocols.ddppm.params import NoiseSchedule, resolve_params
from dpgossip.protocols.ddppm.search import SearchSettings
from dpgossip.scenario.pair_targets import TargetAuditSettings, audit_by_target
from dpgossip.topology import make_network


def _problem():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((12, 2))
    X /= np.max(np.linalg.norm(X, axis=1))
    data = PartitionedData(X=X, sizes=(3,) * 4)
    net = make_network("ring", agents=4)
    params = resolve_params(data, net, iterations=1, consensus_steps=1,
                            noise=NoiseSchedule(kind="constant", scale=1.0))
    return data, net, params


def test_resume_and_equal_to_one_audit(tmp_path):
    data, net, params = _problem()
    small = SearchSettings(name="small", levels=1, rows=1, random=1, steps=1, starts=1, exact=1)
    s = TargetAuditSettings(search=small, seed=4)
    stream = io.StringIO()
    first = audit_by_target(data, net, params, tmp_path, s, targets=[0, 2], stream=stream)
    assert "ETA" in stream.getvalue()
    (tmp_path / "targets" / "000002.json").unlink()  # an interrupted run: target 2 missing
    stream = io.StringIO()
    again = audit_by_target(data, net, params, tmp_path, s, targets=[0, 2], stream=stream)
    assert "resuming: 1 of 2" in stream.getvalue()
    assert json.dumps(again, default=str) == json.dumps(first, default=str)
    whole = audit_pairs(data, net, params, delta=s.delta, epsilons=s.epsilons, search=small, seed=4,
                        methods=s.methods, options=AuditOptions(targets=[0, 2]))
    want = {(r["observer"], r["target"]): r["epsilon"] for r in whole.rows()}
    got = {(r["observer"], r["target"]): r["epsilon"] for r in again}
    assert got == pytest.approx(want, rel=0, abs=0)
    with pytest.raises(ConfigError, match="another audit"):
        audit_by_target(data, net, params, tmp_path, TargetAuditSettings(search=small, seed=5),
                        targets=[0], quiet=True)
