"""The engine's typed result: a RunResult with the engine's own facts as fields."""

import dataclasses

import numpy as np
import pytest

from dpgossip.data import load_dataset
from dpgossip.engine import EngineOutcome, EngineSummary, NetworkConditions
from dpgossip.protocols.ddppm.engine_result import EngineResult
from dpgossip.protocols.ddppm.matrix import run_matrix
from dpgossip.protocols.ddppm.nodes import run_engine
from dpgossip.protocols.ddppm.params import NoiseSchedule, resolve_params
from dpgossip.protocols.ddppm.result import RunResult
from dpgossip.topology import make_network


@pytest.fixture(scope="module")
def runs():
    data = load_dataset("wine", agents=4)
    net = make_network("paper-ring4")
    params = resolve_params(data, net, iterations=2, consensus_steps=2,
                            noise=NoiseSchedule(kind="constant", scale=0.1))
    return run_engine(data, net, params, 7), run_matrix(data, net, params, 7)


def test_engine_result_is_a_typed_run_result(runs):
    eng, mat = runs
    assert isinstance(eng, EngineResult) and isinstance(eng, RunResult)
    assert not isinstance(mat, EngineResult)
    assert not hasattr(mat, "info") and not hasattr(eng, "info")
    assert eng.status == eng.outcome.status == "completed"
    assert isinstance(eng.outcome, EngineOutcome) and isinstance(eng.summary, EngineSummary)
    assert isinstance(eng.conditions, NetworkConditions)
    assert eng.rows_kept.shape == (eng.Q.shape[0], 1) and eng.rows_kept.all()
    assert eng.dissemination == "tree" and eng.transcript is not None and eng.transcript_path is None
    np.testing.assert_allclose(eng.Q, mat.Q, atol=1e-10)


def test_engine_result_is_frozen(runs):
    eng, _ = runs
    with pytest.raises(dataclasses.FrozenInstanceError):
        eng.outcome = None  # type: ignore[assignment]
