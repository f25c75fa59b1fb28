"""The capePCA and floor-free protocol objects on the engine (:class:`ViewEngineProtocol`), and runs
completed without a crashed party: the survivors' records equal the matrix backend's, the crashed party
keeps what it computed before its crash and NaN for the rest (no KeyError)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from dpgossip.errors import ConfigError
from dpgossip.protocols.cape.gossip import CapeGossipParams, run_cape_gossip
from dpgossip.protocols.cape.nodes import run_cape_engine
from dpgossip.protocols.cape.protocol import CapePca, CapePcaGossip
from dpgossip.protocols.cape.star import CapeParams
from dpgossip.protocols.ddppm.floorfree import FloorFreeParams, run_floorfree
from dpgossip.protocols.ddppm.floorfree_nodes import run_floorfree_engine
from dpgossip.protocols.ddppm.protocol import DdppmFloorFree
from dpgossip.protocols.nodes.view_protocol import ViewEngineProtocol
from dpgossip.protocols.ppm.central import PpmParams
from dpgossip.protocols.ppm.protocol import Ppm
from tests.conftest import net_from_graph
from tests.engine.conftest import data_for

RING = net_from_graph(nx.cycle_graph(4), "ring4")
DATA = data_for(4, d=3, rows_per_agent=2, seed=2)
GOSSIP = CapeGossipParams(k=1, consensus_steps=2, edge_multiplier=1.0, own_multiplier=1.0)
FLOOR = FloorFreeParams(iterations=1, consensus_steps=2, noise_multiplier=0.5, disseminate=False)
# constant 10 ms links: agent 0 sends its round-2 state at 10 ms and crashes at 11 ms, before the
# neighbours' round-2 states arrive (20 ms); they need nothing more from it and finish
LATE_CRASH = {"latency": {"kind": "constant", "value": 0.01}, "crashes": {0: 0.011}}

PROTOCOLS = {"capepca": CapePca(CapeParams(k=2, noise_multiplier=1.0)),
             "capepca-gossip": CapePcaGossip(GOSSIP), "ddppm-floorfree": DdppmFloorFree(FLOOR)}


def _close(a: np.ndarray, b: np.ndarray) -> None:
    np.testing.assert_allclose(b, a, rtol=0, atol=1e-10)


@pytest.mark.parametrize("kind", list(PROTOCOLS))
def test_the_engine_view_is_the_matrix_view(kind: str):
    protocol = PROTOCOLS[kind]
    want, got = protocol.run(DATA, RING, 3), ViewEngineProtocol(protocol).run(DATA, RING, 3)
    assert (got.kind, got.side) == (want.kind, want.side)
    _close(want.trajectory, got.trajectory)
    if want.agent_finals is not None:
        _close(want.agent_finals, got.agent_finals)


@pytest.mark.parametrize("kind", list(PROTOCOLS))
def test_a_stopped_run_has_the_matrix_shapes_filled_with_nan(kind: str):
    protocol = PROTOCOLS[kind]
    engine = ViewEngineProtocol(protocol, {"crashes": {1: 0.0}})
    res = engine.run_engine(DATA, RING, 3)
    assert res.status == "stopped" and res.result is None
    got, want = engine.protocol_run(res, DATA), protocol.run(DATA, RING, 3)
    assert got.trajectory.shape == want.trajectory.shape and np.isnan(got.trajectory).all()
    assert (got.agent_finals is None) == (want.agent_finals is None)
    if want.agent_finals is not None:
        assert got.agent_finals.shape == want.agent_finals.shape and np.isnan(got.agent_finals).all()


def test_only_cape_point_protocols_are_wrapped():
    with pytest.raises(ConfigError, match="protocol") as info:
        ViewEngineProtocol(Ppm(PpmParams(p=1, k=1, iterations=1, noise_multiplier=1.0)))
    assert info.value.field == "protocol"


def test_capepca_gossip_completed_without_a_crashed_site():
    eng = run_cape_engine("capepca-gossip", DATA, RING, GOSSIP, 5, conditions=LATE_CRASH)
    ref = run_cape_gossip(DATA, RING, GOSSIP, 5, record_states=True)
    assert eng.status == "completed_with_crash" and eng.outcome.crashed == (0,)
    for name in ("estimates", "eigenvalues", "eigenvectors"):
        _close(getattr(ref, name)[1:], getattr(eng.result, name)[1:])
        assert np.isnan(getattr(eng.result, name)[0]).all()
    _close(ref.initial, eng.result.initial)  # computed before the crash
    _close(ref.states[:, 1:], eng.result.states[:, 1:])


def test_floorfree_completed_without_a_crashed_agent_keeps_what_it_computed():
    eng = run_floorfree_engine(DATA, RING, FLOOR, 5, conditions=LATE_CRASH)
    ref = run_floorfree(DATA, RING, FLOOR, 5, record_states=True)
    assert eng.status == "completed_with_crash" and eng.outcome.crashed == (0,)
    _close(ref.directions[:, 1:], eng.result.directions[:, 1:])
    _close(ref.z, eng.result.z)
    _close(ref.states[:, :, 1:], eng.result.states[:, :, 1:])
    # agent 0: u^(0), z^(1) and its states of rounds 0 and 1; round 2 and u^(1) never came
    _close(ref.directions[0, 0], eng.result.directions[0, 0])
    _close(ref.states[0, :2, 0], eng.result.states[0, :2, 0])
    assert np.isnan(eng.result.states[0, 2, 0]).all() and np.isnan(eng.result.directions[1, 0]).all()
    rows = slice(DATA.offsets[1], None)
    _close(ref.q_local[rows], eng.result.q_local[rows])
    assert np.isnan(eng.result.q_local[: DATA.offsets[1]]).all()
