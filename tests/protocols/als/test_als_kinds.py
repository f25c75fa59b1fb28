"""The three private ALS kinds through the registry: found, built from their example, contract columns."""

import numpy as np
import pytest

from dpgossip.errors import ConfigError
from dpgossip.protocols.als.kinds import ALS_KINDS, default_settings, point_parts, ratings_data
from dpgossip.protocols.interface import PrivateProtocol
from dpgossip.protocols.registry import PointInputs, kind, kind_names


def test_the_home_registers_its_kinds():
    for name in ALS_KINDS:
        assert name in kind_names()
        spec = kind(name)
        assert spec.family == "als" and spec.example is not None and spec.build is not None
        assert spec.section == "als" and set(default_settings()) == set(spec.fields)
    assert kind("dpals-gossip").backends == ("matrix", "engine")


@pytest.mark.parametrize("name", ALS_KINDS)
def test_a_point_runs_and_its_audit_is_at_most_its_guarantee(name):
    spec = kind(name)
    inputs = spec.example()
    point = spec.build(inputs)
    assert isinstance(point.protocol, PrivateProtocol) and point.protocol.kind == name
    run = point.protocol.run(inputs.data, inputs.network, 5)
    assert run.kind == name and run.trajectory.shape == (inputs.iterations + 1, 6, inputs.rank)
    cols = point.columns(run.result, 0)
    assert cols["audited_epsilon"] <= cols["guaranteed_epsilon"] and not cols["audit_exceeds_guarantee"]
    assert cols["theorem_epsilon"] == inputs.settings["epsilon"]
    assert cols["guarantee_proven"] == (name != "dpals-gossip")     # the example: shared noise, T = 2
    for view in spec.views:
        assert cols[f"audited_epsilon_{view}"] <= cols[f"guaranteed_epsilon_{view}"]
    if name == "dpals":
        assert cols["covered_server"] and cols["guaranteed_epsilon"] <= cols["theorem_epsilon"]
    again = point.protocol.run(inputs.data, inputs.network, 5)
    assert np.array_equal(again.final, run.final)          # explicit seeds: bit-identical


def test_the_gossip_kinds_engine_form_equals_its_matrix_backend():
    spec = kind("dpals-gossip")
    inputs = spec.example()
    point = spec.build(inputs)
    form = point.engine(None)
    record = form.run_engine(inputs.data, inputs.network, 7)
    engine_run = form.protocol_run(record, inputs.data)
    matrix_run = point.protocol.run(inputs.data, inputs.network, 7)
    np.testing.assert_allclose(engine_run.trajectory, matrix_run.trajectory, rtol=0, atol=1e-10)
    np.testing.assert_allclose(engine_run.agent_finals, matrix_run.agent_finals, rtol=0, atol=1e-10)
    assert point.view_residual(record, inputs.data) <= 1e-10


def test_ratings_as_partitioned_data_keep_the_mask():
    ratings, _, _ = point_parts(kind("dpals").example())
    data = ratings_data(ratings)
    assert data.m == ratings.users and np.array_equal(data.X != 0, ratings.train)


def test_bad_settings_name_the_field():
    inputs = kind("dpals").example()
    with pytest.raises(ConfigError, match="protocol.rank"):
        kind("dpals").build(PointInputs(data=inputs.data, network=inputs.network, rank=9, iterations=2,
                                        consensus_steps=1, settings=inputs.settings))
    with pytest.raises(ConfigError, match="epsilon_typo"):
        default_settings(epsilon_typo=1.0)
    with pytest.raises(ConfigError, match="noise"):
        point_parts(PointInputs(data=inputs.data, network=inputs.network, rank=2, iterations=2,
                                consensus_steps=1, settings=default_settings(noise="loud")))
