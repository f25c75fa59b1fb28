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


def test_target_store_reads_back_every_field_and_skips_damaged_files(tmp_path):
    """A stored target reads back to equal fields, non-finite values included; a damaged or foreign
    file counts as not done (the target is searched again)."""
    import math

    from dpgossip.privacy.neighbours import Neighbour
    from dpgossip.protocols.ddppm.audit import PairResult
    from dpgossip.protocols.ddppm.search import SearchEvidence, SearchStage
    from dpgossip.scenario.pair_targets import TargetStore

    ev = SearchEvidence(settings=SearchSettings.of("thorough"),
                        stages=(SearchStage(level=0, stage="screen", evaluations=3, surrogate=math.inf,
                                            value=math.nan, seconds=0.25),),
                        rows_screened=4, rows_searched=2, first_message_bound=math.nan,
                        level_values=(1.0 / 3.0, math.inf), warm=1, capped=True)
    r = PairResult(observer=3, target=1, hops=2,
                   neighbour=Neighbour(row=7, x_new=np.array([0.1, -2.0 / 3.0]), label="-x+polish"),
                   epsilon={"rdp": 12.345678901234567, "exact": math.inf},
                   delta={"rdp": [0.1, 1e-300], "exact": [1.0, math.nan]}, renyi2=math.inf,
                   renyi2_pq=0.7, renyi2_qp=math.inf, evidence=ev)
    store = TargetStore(tmp_path / "t")
    store.save(1, {(3, 1): r})
    back = store.done([0, 1])[1][(3, 1)]
    assert list(store.done([0, 1])) == [1]
    assert back.rows((1.0, 5.0), 1e-5)[0].keys() == r.rows((1.0, 5.0), 1e-5)[0].keys()
    for a, b in zip(back.rows((1.0, 5.0), 1e-5), r.rows((1.0, 5.0), 1e-5), strict=True):
        assert all(a[k] == b[k] or (a[k] != a[k] and b[k] != b[k]) for k in a)
    assert np.array_equal(back.neighbour.x_new, r.neighbour.x_new) and back.evidence == ev
    store.path(1).write_text("{not json")
    (tmp_path / "t" / "000002.json").write_text(json.dumps({"format": "other", "target": 2}))
    assert store.done([1, 2]) == {}
