"""The power method of Nicolas et al. on the engine (``run_ppm_engine``) against the matrix backend
(docs/engine.md)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from dpgossip.engine import NetworkConditions, load_transcript
from dpgossip.errors import ConfigError
from dpgossip.protocols.ppm.central import PpmParams, run_ppm, run_ppm_federated
from dpgossip.protocols.ppm.engine_protocol import EngineProtocol
from dpgossip.protocols.ppm.gossip import PpmGossipParams, run_ppm_gossip
from dpgossip.protocols.ppm.nodes import run_ppm_engine, secagg_share, star_network
from dpgossip.protocols.ppm.protocol import Ppm, PpmFederated, PpmGossip
from tests.conftest import net_from_graph
from tests.engine.conftest import data_for, grid3, relabelled

PPM = PpmParams(p=2, k=2, iterations=3, noise_multiplier=0.8)
GRAPHS = {"ring6": lambda: net_from_graph(nx.cycle_graph(6), "ring6"),
          "grid3": grid3,
          "ws8": lambda: net_from_graph(relabelled(nx.connected_watts_strogatz_graph(8, 4, 0.3, seed=2)),
                                        "ws8")}
GOSSIP_FIELDS = ("iterates", "states", "noise", "masks", "sensitivities", "noise_std")
STAR_FIELDS = ("iterates", "Y", "noise", "sensitivities", "noise_std")
LOSSY = {"latency": {"kind": "exponential", "mean": 0.01}, "loss": 0.3, "retransmit_timeout": 0.05,
         "compute_time": 0.001, "stragglers": {"1": 3.0}}


def _matrix(kind, data, net, params, seed):
    if kind == "ppm":
        return run_ppm(data, params, seed)
    if kind == "ppm-federated":
        return run_ppm_federated(data, params, seed)
    return run_ppm_gossip(data, net, params, seed)


def _params(kind, c=3, mask_std=2.5):
    return PpmGossipParams(ppm=PPM, consensus_steps=c, mask_std=mask_std) if kind == "ppm-gossip" else PPM


def _max_diff(kind, a, b) -> float:
    fields = GOSSIP_FIELDS if kind == "ppm-gossip" else STAR_FIELDS
    for f in fields:
        assert getattr(a, f).shape == getattr(b, f).shape, f
    return max(float(np.max(np.abs(getattr(a, f) - getattr(b, f)))) for f in fields)


@pytest.mark.parametrize("graph", list(GRAPHS))
@pytest.mark.parametrize("kind", ["ppm", "ppm-federated", "ppm-gossip"])
def test_ideal_links_give_the_matrix_backend(kind, graph):
    net = GRAPHS[graph]()
    data = data_for(net.m, d=5, rows_per_agent=3, seed=4)
    res = run_ppm_engine(kind, data, net, _params(kind), 11)
    assert res.status == "completed" and res.outcome.reason == ""
    assert _max_diff(kind, res.result, _matrix(kind, data, net, _params(kind), 11)) < 1e-10
    assert res.result.to_row().keys() == _matrix(kind, data, net, _params(kind), 11).to_row().keys()


@pytest.mark.parametrize("kind", ["ppm", "ppm-federated", "ppm-gossip"])
def test_latency_loss_and_stragglers_change_times_not_values(kind):
    net = GRAPHS["ring6"]()
    data = data_for(6, d=5, rows_per_agent=3, seed=4)
    res = run_ppm_engine(kind, data, net, _params(kind), 5, conditions=LOSSY)
    assert res.status == "completed"
    assert res.summary.retransmissions > 0 and res.summary.completion_time > 0
    assert _max_diff(kind, res.result, _matrix(kind, data, net, _params(kind), 5)) < 1e-10


def test_the_transcript_holds_every_message_with_its_round_and_payload():
    net = GRAPHS["grid3"]()
    data = data_for(9, d=5, rows_per_agent=2, seed=1)
    L, c = PPM.iterations, 3
    res = run_ppm_engine("ppm-gossip", data, net, _params("ppm-gossip", c), 2)
    recs = res.transcript
    assert len(recs) == L * c * 2 * net.graph.number_of_edges() == res.summary.messages_delivered
    for r in recs:
        _, l, k = r.tag
        assert r.dst in net.neighbours[r.src]
        np.testing.assert_array_equal(r.payload, res.result.states[l - 1, k - 1, r.src])
    s = data.m
    star = run_ppm_engine("ppm-federated", data, None, PPM, 2)
    ups = [r for r in star.transcript if r.tag[2] == 1]
    downs = [r for r in star.transcript if r.tag[2] == 2]
    assert len(ups) == L * s and len(downs) == (L + 1) * s
    assert {r.dst for r in ups} == {s} and {r.src for r in downs} == {s}
    for r in downs:
        np.testing.assert_array_equal(r.payload, star.result.iterates[r.tag[1]])


def test_secure_aggregation_masks_hide_each_upload_and_cancel_in_the_sum():
    data = data_for(5, d=4, rows_per_agent=3, seed=2)
    res = run_ppm_engine("ppm-federated", data, None, PPM, 9, secagg_mask_std=50.0)
    plain = run_ppm_engine("ppm-federated", data, None, PPM, 9, secagg_mask_std=0.0)
    for l in range(1, PPM.iterations + 1):
        up = {r.src: r.payload for r in res.transcript if r.tag == (0, l, 1)}
        bare = {r.src: r.payload for r in plain.transcript if r.tag == (0, l, 1)}
        assert min(np.abs(up[i] - bare[i]).max() for i in range(5)) > 1.0  # every upload is masked
        np.testing.assert_allclose(sum(up.values()), sum(bare.values()), atol=1e-11)
        np.testing.assert_array_equal(bare[0], plain.traces[0].Y[l - 1])  # Y^(i) with the noise share
    shares = [secagg_share(9, i, 5, (2, 3), 1.0) for i in range(5)]
    np.testing.assert_allclose(sum(shares), 0.0, atol=1e-14)
    assert np.all(secagg_share(9, 0, 5, (2, 3), 0.0) == 0.0)


def test_the_engine_protocol_gives_the_matrix_protocols_common_view():
    net = GRAPHS["ring6"]()
    data = data_for(6, d=5, rows_per_agent=3, seed=4)
    for proto in (Ppm(PPM), PpmFederated(PPM), PpmGossip(_params("ppm-gossip"))):
        a, b = proto.run(data, net, 3), EngineProtocol(proto).run(data, net, 3)
        assert (a.kind, a.side) == (b.kind, b.side)
        np.testing.assert_allclose(b.trajectory, a.trajectory, rtol=0, atol=1e-10)
        assert (a.agent_finals is None) == (b.agent_finals is None)
        if a.agent_finals is not None:
            np.testing.assert_allclose(b.agent_finals, a.agent_finals, rtol=0, atol=1e-10)


@pytest.mark.parametrize("kind, who", [("ppm-gossip", 2), ("ppm-federated", 1), ("ppm", 6)])
def test_a_crash_mid_run_stops_the_run_and_says_who(kind, who):
    net = GRAPHS["ring6"]()
    data = data_for(6, d=5, rows_per_agent=3, seed=4)
    cond = {"compute_time": 0.01, "crashes": {str(who): 0.025}, "failure_timeout": 0.5}
    res = run_ppm_engine(kind, data, net, _params(kind), 5, conditions=cond)
    assert res.status == "stopped"
    assert f"party(ies) [{who}] crashed" in res.outcome.reason
    assert res.outcome.crashed == (who,)
    it = res.result.iterates
    assert np.isfinite(it[0]).all() and np.isnan(it[-1]).any()


def test_a_crash_after_the_last_message_completes_with_the_crash():
    data = data_for(4, d=5, rows_per_agent=3, seed=4)
    # client 1 crashes after its last upload (t = 0.23), before X^L arrives (0.33)
    cond = NetworkConditions.from_mapping({"compute_time": 0.01, "stragglers": {"0": 10.0},
                                           "crashes": {"1": 0.28}})
    res = run_ppm_engine("ppm-federated", data, None, PPM, 5, conditions=cond)
    assert res.status == "completed_with_crash" and res.outcome.crashed == (1,)
    assert _max_diff("ppm-federated", res.result, run_ppm_federated(data, PPM, 5)) < 1e-10


def test_loss_without_retransmission_stops_the_run():
    data = data_for(4, d=5, rows_per_agent=3, seed=4)
    res = run_ppm_engine("ppm", data, None, PPM, 5, conditions={"loss": 0.5, "retransmit": False})
    assert res.status == "stopped" and res.outcome.reason.startswith("message lost")


def test_the_transcript_file_and_the_tidy_row(tmp_path):
    data = data_for(4, d=5, rows_per_agent=3, seed=4)
    path = tmp_path / "t.jsonl"
    res = run_ppm_engine("ppm", data, None, PPM, 5, transcript_path=path)
    back = load_transcript(path)
    assert [r.tag for r in back] == [r.tag for r in res.transcript]
    for a, b in zip(back, res.transcript, strict=True):
        np.testing.assert_array_equal(a.payload, b.payload)
    row = res.to_row()
    assert row["kind"] == "ppm" and row["status"] == "completed" and row["messages_delivered"] == len(back)


def test_sizes_are_checked_before_the_run(monkeypatch):
    monkeypatch.setenv("DPGOSSIP_MEMORY_LIMIT", "1MB")
    data = data_for(4, d=5, rows_per_agent=3, seed=4)
    big = PpmParams(p=5, k=1, iterations=10**6, noise_multiplier=1.0)
    with pytest.raises(ConfigError, match="iterations") as info:
        run_ppm_engine("ppm-federated", data, None, big, 1)
    assert info.value.field == "params"


def test_the_star_has_the_server_as_its_last_node():
    star = star_network(3)
    assert star.m == 4 and star.neighbours == ((3,), (3,), (3,), (0, 1, 2))


@pytest.mark.parametrize("call, field", [
    (lambda d, n: run_ppm_engine("ppm-star", d, n, PPM, 1), "kind"),
    (lambda d, n: run_ppm_engine("ppm-gossip", d, n, PPM, 1), "params"),
    (lambda d, n: run_ppm_engine("ppm", d, n, _params("ppm-gossip"), 1), "params"),
    (lambda d, n: run_ppm_engine("ppm", d, n, PPM, 1, secagg_mask_std=-1.0), "secagg_mask_std"),
    (lambda d, n: run_ppm_engine("ppm", d, n, PPM, 1, conditions={"crashes": {"9": 0.1}}),
     "conditions.crashes"),
    (lambda d, n: run_ppm_engine("ppm", d.X, n, PPM, 1), "data"),
    (lambda d, n: EngineProtocol(object()), "protocol"),
])
def test_bad_arguments_name_their_field(call, field):
    net = GRAPHS["ring6"]()
    with pytest.raises(ConfigError) as info:
        call(data_for(6, d=5, rows_per_agent=3, seed=4), net)
    assert info.value.field == field
