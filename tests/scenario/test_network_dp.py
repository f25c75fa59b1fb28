"""The network-DP scenario kind: parsing (errors name the TOML path), a tiny run against a dense oracle,
resume per graph, the CLI entry and the plot."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from dpgossip.cli import main
from dpgossip.errors import ConfigError
from dpgossip.protocols.gossip.bounds import (
    mfdl_abs_sum,
    muffliato_corrected,
    muffliato_per_message,
)
from dpgossip.protocols.gossip.linear import LinearGossip
from dpgossip.scenario.network_dp import audit_case, build_network, choose_observers, run_network_dp
from dpgossip.scenario.network_dp_config import (
    is_network_dp_file,
    load_network_dp,
    parse_network_dp,
)
from dpgossip.scenario.store import read_csv, read_json

SHIPPED = Path(__file__).resolve().parents[2] / "scenarios"

RAW = {
    "name": "tiny-ndp",
    "network_dp": {
        "alpha": 3.0, "sigma": 0.7, "target": 0, "observers": "all",
        "graphs": [
            {"label": "path", "topology": "path", "agents": 6, "rounds": 4},
            {"label": "star", "topology": "star", "agents": 6, "rounds": 3, "observer": 1},
            {"label": "grid", "topology": "grid", "agents": 16, "rounds": 5,
             "observers": {"per_distance": 2, "distances": 3, "seed": 4}},
            {"label": "mfdl", "topology": "erdos_renyi", "setting": "mfdl", "agents": 12, "seed": 3,
             "protocol": "gossip-noisy", "inputs": "per-round", "rounds": 4, "observer": 0},
        ],
    },
}


def _with(path: str, value: object) -> dict:
    """``RAW`` with the dotted ``path`` (``network_dp.graphs.0.agents``) set (``...`` deletes it)."""
    raw = copy.deepcopy(RAW)
    *head, last = path.split(".")
    node = raw
    for key in head:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return raw


@pytest.mark.parametrize("path, value, field", [
    ("network_dp.graphs", [], "network_dp.graphs"),
    ("network_dp.graphs.0.topology", "hyperkube", "network_dp.graphs[0].topology"),
    ("network_dp.graphs.0.agents", 1, "network_dp.graphs[0].agents"),
    ("network_dp.graphs.0.agents", ..., "network_dp.graphs[0].agents"),
    ("network_dp.graphs.0.inputs", "per-round", "network_dp.graphs[0].inputs"),
    ("network_dp.graphs.0.protocol", "gossip", "network_dp.graphs[0].protocol"),
    ("network_dp.graphs.0.rounds", "forever", "network_dp.graphs[0].rounds"),
    ("network_dp.graphs.0.rounds", 0, "network_dp.graphs[0].rounds"),
    ("network_dp.graphs.0.sigma", 0.0, "network_dp.graphs[0].sigma"),
    ("network_dp.graphs.0.sigma_cor", 1.0, "network_dp.graphs[0].sigma_cor"),   # not gossip-decor
    ("network_dp.graphs.3.sigma_cor", -1.0, "network_dp.graphs[3].sigma_cor"),
    ("network_dp.graphs.0.setting", "mfdl", "network_dp.graphs[0].setting"),
    ("network_dp.graphs.0.muffliato_rounds", "all", "network_dp.graphs[0].muffliato_rounds"),
    ("network_dp.graphs.3.muffliato_rounds", "steps", "network_dp.graphs[3].muffliato_rounds"),  # noisy
    ("network_dp.graphs.1.target", 2, "network_dp.graphs[1].observer"),
    ("network_dp.graphs.0.colour", "red", "network_dp.graphs[0].colour"),
    ("network_dp.graphs.2.observers", {"per_distance": 0}, "network_dp.graphs[2].observers.per_distance"),
    ("network_dp.graphs.2.observers", {"every": 2}, "network_dp.graphs[2].observers.every"),
    ("network_dp.graphs.2.observers", [], "network_dp.graphs[2].observers"),
    ("network_dp.graphs.2.observers", [1, -1], "network_dp.graphs[2].observers[1]"),
    ("network_dp.graphs.1.label", "path", "network_dp.graphs[1].label"),
    ("network_dp.graphs.1.label", "a/b", "network_dp.graphs[1].label"),
    ("network_dp.alpha", 1.0, "network_dp.alpha"),
    ("network_dp.delta", 1.0, "network_dp.delta"),
    ("network_dp.orders", [2], "network_dp.orders"),
    ("protocol", {}, "protocol"),
])
def test_bad_input_raises_config_error_naming_the_field(path, value, field):
    with pytest.raises(ConfigError) as exc:
        parse_network_dp(_with(path, value))
    assert exc.value.field == field
    assert str(exc.value).startswith(field)


def test_errors_found_when_the_graph_is_built_name_the_field(tmp_path):
    config = parse_network_dp(_with("network_dp.graphs.0.target", 9))
    with pytest.raises(ConfigError) as exc:
        run_network_dp(config, tmp_path / "out", quiet=True)
    assert exc.value.field == "network_dp.graphs[0].target"
    config = parse_network_dp(_with("network_dp.graphs.0.params", {"p": 0.5}))
    with pytest.raises(ConfigError) as exc:
        build_network(config.graphs[0], "network_dp.graphs[0]")
    assert exc.value.field == "network_dp.graphs[0].params.p"


def test_defaults_and_overrides():
    config = parse_network_dp(RAW)
    path, star, grid, mfdl = config.graphs
    assert (path.target, path.observer, path.sigma, path.protocol, path.inputs) == (
        0, None, 0.7, "gossip-average", "once")
    assert (star.target, star.observer) == (None, 1)
    assert grid.observers.kind == "sample" and grid.observers.per_distance == 2
    assert (mfdl.setting, mfdl.protocol, mfdl.inputs) == ("mfdl", "gossip-noisy", "per-round")
    assert parse_network_dp(_with("network_dp.graphs.0.rounds", ...)).graphs[0].rounds == "mixing-time"


def _dense_mu2(W: np.ndarray, T: int, observer: int, sigma: float) -> np.ndarray:
    """gossip-average oracle: the observer sees ``R (x + sigma z)`` with ``R`` the rows ``e_w^T W^t``
    (``w`` its neighbours, ``t < T``) and knows its own ``x_v``, ``z_v`` (column removed);
    ``mu_u^2 = r_u^T (sigma^2 R' R'^T)^+ r_u``."""
    m = W.shape[0]
    nbrs = [w for w in range(m) if w != observer and W[observer, w] > 0]
    R = np.vstack([np.linalg.matrix_power(W, t)[nbrs] for t in range(T)])
    keep = [u for u in range(m) if u != observer]
    R = R[:, keep]
    P = np.linalg.pinv(sigma ** 2 * R @ R.T, rcond=1e-12)
    out = np.full(m, np.nan)
    out[keep] = np.einsum("iu,ij,ju->u", R, P, R)
    return out


def test_tiny_run_matches_dense_oracles_and_resumes(tmp_path):
    config = parse_network_dp(RAW)
    out = run_network_dp(config, tmp_path / "out", quiet=True)
    rows = read_csv(out / "leakage.csv")
    assert {r["topology"] for r in rows} == {"path", "star", "grid", "mfdl"}
    for label in ("path", "star", "grid"):
        case = next(c for c in config.graphs if c.label == label)
        W = build_network(case).dense_W()
        graph = build_network(case).graph
        for r in (r for r in rows if r["topology"] == label):
            v, u = int(r["observer"]), int(r["target"])
            want = _dense_mu2(W, case.rounds, v, 0.7)[u]
            assert float(r["mu2"]) == pytest.approx(want, rel=1e-9, abs=1e-12)
            assert float(r["rdp"]) == pytest.approx(3.0 * want / 2, rel=1e-9, abs=1e-12)
            assert int(r["distance"]) == nx.shortest_path_length(graph, u, v)
            assert r["mfdl_bound"] == "nan" and r["muffliato_bound"] != "nan"
            flagged = float(r["muffliato_bound"]) < float(r["rdp"]) * (1 - 1e-9)
            assert (r["muffliato_below_exact"] == "True") == flagged
    assert {int(r["observer"]) for r in rows if r["topology"] == "path"} == {1, 2, 3, 4, 5}
    assert {int(r["target"]) for r in rows if r["topology"] == "star"} == {0, 2, 3, 4, 5}
    mfdl_case = config.graphs[3]
    spec = LinearGossip(protocol="gossip-noisy", rounds=4, sigma=0.7, inputs="per-round")
    bound = mfdl_abs_sum(build_network(mfdl_case), spec, 0, order=3.0)
    corrected = {(p, clip): muffliato_corrected(build_network(mfdl_case), spec, 0, order=3.0,
                                                entry_power=p, clip=clip)
                 for p, clip in ((1, True), (2, True), (1, False))}
    for r in (r for r in rows if r["topology"] == "mfdl"):
        u = int(r["target"])
        assert float(r["mfdl_bound"]) == pytest.approx(bound[u], rel=1e-12)
        assert float(r["mfdl_bound"]) >= float(r["rdp"]) * (1 - 1e-12)
        for column, key in (("corrected_bound", (1, True)), ("corrected_p2_bound", (2, True)),
                            ("corrected_unclipped_bound", (1, False))):
            assert float(r[column]) == pytest.approx(corrected[key][u], rel=1e-12), column
        assert r["corrected_below_exact"] == r["corrected_p2_below_exact"] == "False"
    for r in (r for r in rows if r["topology"] != "mfdl"):
        assert r["corrected_bound"] == r["corrected_unclipped_bound"] == "nan"
        assert r["corrected_below_exact"] == ""
    first = (out / "leakage.csv").read_text()
    changed = parse_network_dp(_with("network_dp.graphs.0.rounds", 5))
    run_network_dp(changed, out, quiet=True)
    summary = read_json(out / "summary.json")
    assert [g["resumed"] for g in summary["graphs"]] == [False, True, True, True]
    run_network_dp(config, out, quiet=True)
    assert (out / "leakage.csv").read_text() == first


def test_muffliato_rounds_steps_sums_the_authors_gossip_steps():
    """``muffliato_rounds = "steps"``: Muffliato's sum over ``t = 1..T`` (the authors' code), the default
    over the message rounds ``t = 0..T-1``; the exact values do not depend on it."""
    raw = {"name": "steps", "network_dp": {"rounds": 4, "observer": 0, "graphs": [
        {"label": "messages", "topology": "hypercube", "agents": 16},
        {"label": "steps", "topology": "hypercube", "agents": 16, "muffliato_rounds": "steps"}]}}
    config = parse_network_dp(raw)
    assert [g.muffliato_rounds for g in config.graphs] == ["messages", "steps"]
    assert config.to_row()["graphs"][1]["muffliato_rounds"] == "steps"
    spec = LinearGossip(rounds=4, sigma=1.0)
    network = build_network(config.graphs[0])
    for case, rounds in zip(config.graphs, (range(4), range(1, 5)), strict=True):
        rows, _ = audit_case(case, alpha=2.0, delta=1e-5, sensitivity=1.0)
        want = muffliato_per_message(network, spec, 0, rounds=rounds)
        assert [r.muffliato_bound for r in rows] == pytest.approx([want[r.target] for r in rows],
                                                                  rel=1e-12)
    messages, steps = (audit_case(c, alpha=2.0, delta=1e-5, sensitivity=1.0)[0] for c in config.graphs)
    assert [r.rdp for r in messages] == [r.rdp for r in steps]
    assert [r.muffliato_bound for r in messages] != [r.muffliato_bound for r in steps]


def test_sampled_observers_per_distance():
    config = parse_network_dp(RAW)
    grid = config.graphs[2]
    network = build_network(grid)
    chosen = choose_observers(network, grid, "g")
    dist = nx.single_source_shortest_path_length(network.graph, 0)
    far = max(dist.values())
    assert sorted({dist[v] for v in chosen}) == sorted({round(h) for h in np.linspace(1, far, 3)})
    for h in {dist[v] for v in chosen}:
        assert len([v for v in chosen if dist[v] == h]) == min(2, sum(d == h for d in dist.values()))
    assert chosen == choose_observers(network, grid, "g")  # seeded


def test_cli_runs_a_network_dp_scenario_and_draws_the_plot(tmp_path, capsys):
    path = tmp_path / "tiny.toml"
    path.write_text('name = "cli-ndp"\n[network_dp]\ntarget = 0\n[[network_dp.graphs]]\n'
                    'topology = "hypercube"\nagents = 8\nrounds = 3\n', encoding="utf-8")
    assert is_network_dp_file(path) and load_network_dp(path).name == "cli-ndp"
    assert main(["run", str(path), "--out", str(tmp_path / "res"), "-q"]) == 0
    rows = read_csv(tmp_path / "res" / "leakage.csv")
    assert len(rows) == 7 and all(math.isfinite(float(r["rdp"])) for r in rows)
    pytest.importorskip("matplotlib")
    assert (tmp_path / "res" / "plots" / "network-dp.png").stat().st_size > 0
    assert main(["run", str(path), "--out", str(tmp_path / "res2"), "--workers", "2"]) == 2
    assert "--workers" in capsys.readouterr().err


def test_other_scenarios_are_not_network_dp():
    for path in SHIPPED.glob("*.toml"):
        assert is_network_dp_file(path) == path.name.startswith("network-dp-")
    shipped = load_network_dp(SHIPPED / "network-dp-gossip.toml")
    assert [g.label for g in shipped.graphs] == ["hypercube", "erdos_renyi", "random_geometric",
                                                 "grid", "mfdl-erdos_renyi"]
    assert shipped.graphs[-1].observer == 0 and shipped.graphs[0].target == 0


def test_leakage_is_not_symmetric_so_a_fixed_target_needs_a_view_per_observer():
    from dpgossip.protocols.gossip.audit import audit_gossip
    from dpgossip.topology import make_network

    network = make_network("random_geometric", agents=14, seed=3)
    spec = LinearGossip(protocol="gossip-average", rounds=3, sigma=1.0)
    M = np.zeros((14, 14))
    for v in range(14):
        for r in audit_gossip(network, spec, v):
            M[r.target, v] = r.mu ** 2
    assert np.max(np.abs(M - M.T)) > 0.1


def test_a_view_too_large_for_the_memory_is_refused_before_it_is_built(monkeypatch, tmp_path):
    from dpgossip.scenario.network_dp import audit_case

    monkeypatch.setenv("DPGOSSIP_MEMORY_LIMIT", "512MiB")
    for graph in parse_network_dp(RAW).graphs:  # the tiny cases fit
        audit_case(graph, alpha=2.0, delta=1e-5, sensitivity=1.0)
    raw = _with("network_dp.graphs.0.topology", "hypercube")
    raw["network_dp"]["graphs"][0].update(agents=1024, rounds=200)
    big = parse_network_dp(raw).graphs[0]  # views of 1024 x 1024: 32 MiB
    monkeypatch.setenv("DPGOSSIP_MEMORY_LIMIT", "16MiB")
    with pytest.raises(ConfigError) as exc:
        audit_case(big, alpha=2.0, delta=1e-5, sensitivity=1.0, path="network_dp.graphs[0]")
    assert exc.value.field == "network_dp.graphs[0].agents"
    assert "views of" in str(exc.value)
