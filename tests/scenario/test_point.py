"""PointSpec: the typed, frozen settings of one point, read from its validated configuration."""

from __future__ import annotations

import dataclasses

import pytest

from dpgossip.protocols.ddppm.params import NoiseSchedule
from dpgossip.scenario.expand import expand
from dpgossip.scenario.point import PointSpec
from dpgossip.scenario.schema import validate

RAW = {
    "name": "spec", "seed": 7, "repeats": 2,
    "data": {"source": "synthetic", "synthetic": {"n": 16, "d": 2, "spectrum": [1.0, 0.6]}},
    "network": {"topology": "ring", "agents": 4, "mixing": "metropolis"},
    "protocol": {"iterations": 3, "consensus_steps": [1, 2],
                 "noise": {"schedule": "constant", "scale": 0.5}},
    "baseline": {"ldp": True, "epsilon": 2.0, "delta": 1e-3},
    "privacy": {"delta": 1e-6, "epsilon": [1, 5], "calibrate": {"epsilon": 4.0}},
}


def test_a_point_spec_holds_the_resolved_settings():
    points = expand(validate(RAW))
    assert len(points) == 2
    spec = PointSpec.from_config(points[1].config)
    assert (spec.seed, spec.repeats, spec.backend) == (7, 2, "matrix")
    assert spec.data.standardize is False  # synthetic data: not standardised by default
    assert spec.network.agents == 4 and spec.network.mixing == "metropolis"
    assert spec.protocol.consensus_steps == 2 and spec.protocol.rank == 1
    assert spec.protocol.noise == NoiseSchedule(kind="constant", scale=0.5)
    assert spec.baseline.ldp and spec.baseline.epsilon == 2.0
    assert spec.privacy is not None and spec.privacy.epsilon == (1.0, 5.0)
    assert spec.privacy.search == "standard" and spec.privacy.epsilon_cap == 1000.0  # defaults
    cal = spec.privacy.calibrate
    assert cal is not None and cal.delta == 1e-6 and cal.family == "geometric"  # delta defaulted
    assert (cal.method, cal.rel_tol, cal.infeasible) == ("exact", 0.02, "error")


def test_a_point_spec_is_frozen_and_needs_no_privacy():
    raw = {k: v for k, v in RAW.items() if k != "privacy"}
    spec = PointSpec.from_config(expand(validate(raw))[0].config)
    assert spec.privacy is None and spec.engine == {}
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.seed = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        spec.data.synthetic["n"] = 3  # type: ignore[index]
