"""``backend = "engine"`` for the CAPE and floor-free kinds (``capepca``, ``capepca-gossip``,
``ddppm-floorfree``): the scenario runs them message by message
(:mod:`dpgossip.protocols.nodes.view_protocol`) and gets the matrix backend's rows (errors, guarantees,
audits) with ideal links and under loss with retransmission, the message counts of the protocols' closed
forms, and named statuses when a party crashes."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from dpgossip.scenario import run_scenario
from tests.scenario.helpers import small
from tests.scenario.test_ppm_engine_backend import ENGINE_ONLY

KINDS = ["capepca", "capepca-gossip", "ddppm-floorfree"]
DATA = {"source": "synthetic", "synthetic": {"n": 64, "d": 4, "spectrum": [1.0, 0.7, 0.4, 0.2]}}
M, T, C, EDGES = 4, 2, 2, 4  # a 4-ring: 4 agents, 4 edges
LOSSY = {"loss": 0.3, "latency": {"kind": "exponential", "mean": 0.01}, "retransmit_timeout": 0.05,
         "stragglers": {"2": {"factor": 3.0}}, "compute_time": 0.001}


def _scenario(tmp: Path, name: str, backend: object, kinds: list[str] = KINDS, repeats: int = 1,
              **extra: object) -> Path:
    # floor-free: a noise multiplier (its PLD guarantee is quick to compute) and one audited target
    sections = {"cape": {"epsilon": 4.0}} if any(k.startswith("cape") for k in kinds) else {}
    if "ddppm-floorfree" in kinds:
        sections["floorfree"] = {"noise_multiplier": 4.0, "audit_targets": 1}
    sc = small(data=DATA, protocol={"kind": kinds, "iterations": T, "consensus_steps": C, "rank": 1},
               repeats=repeats, backend=backend, **sections, **extra)
    return run_scenario(sc, tmp / name, quiet=True)


def _rows(folder: Path, name: str = "runs.csv") -> list[dict[str, str]]:
    with open(folder / name, newline="") as fh:
        return list(csv.DictReader(fh))


def _split(rows: list[dict[str, str]], backend: str) -> list[dict[str, str]]:
    return sorted((r for r in rows if r["backend"] == backend),
                  key=lambda r: (KINDS.index(r["protocol_kind"]), r["repeat"], r.get("iteration", "")))


@pytest.fixture(scope="module")
def ideal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _scenario(tmp_path_factory.mktemp("ideal"), "out", ["matrix", "engine"], repeats=2)


@pytest.fixture(scope="module")
def lossy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _scenario(tmp_path_factory.mktemp("lossy"), "out", "engine", engine=LOSSY)


def _same(a: str, b: str) -> bool:
    try:
        x, y = float(a), float(b)
    except ValueError:
        return a == b
    return (math.isnan(x) and math.isnan(y)) or x == pytest.approx(y, abs=1e-10)


def _assert_rows_equal(matrix: list[dict[str, str]], engine: list[dict[str, str]]) -> None:
    """Every column of the matrix rows equal in the engine rows (``point`` is the point's index)."""
    assert len(matrix) == len(engine) > 0
    for m, e in zip(matrix, engine, strict=True):
        assert set(e) - set(m) <= ENGINE_ONLY and {k for k in m if m[k] != ""} <= set(e)
        assert e["engine_status"] == "completed" and e["status"] == "ok" and e["crashed_agents"] == "[]"
        for key in m.keys() - {"backend", "point"} - ENGINE_ONLY:
            assert _same(m[key], e.get(key, "")), (m["protocol_kind"], key, m[key], e.get(key))
        assert float(e["guaranteed_epsilon"]) > 0 and float(e["audited_epsilon"]) > 0


def test_ideal_links_give_the_matrix_rows(ideal: Path):
    rows = _rows(ideal)
    assert len(rows) == 2 * 2 * len(KINDS)
    _assert_rows_equal(_split(rows, "matrix"), _split(rows, "engine"))
    iters = _rows(ideal, "iterations.csv")
    it_m, it_e = _split(iters, "matrix"), _split(iters, "engine")
    assert len(it_m) == len(it_e) == 2 * (1 + 1 + T + 1)  # one-shot CAPE kinds, T + 1 floor-free iterates
    for m, e in zip(it_m, it_e, strict=True):
        assert all(_same(m[k], e[k]) for k in m.keys() - {"backend", "point"}), (m, e)


def test_loss_with_retransmission_and_a_straggler_give_the_matrix_rows(ideal: Path, lossy: Path):
    engine = _split(_rows(lossy), "engine")
    assert len(engine) == len(KINDS)
    _assert_rows_equal([r for r in _split(_rows(ideal), "matrix") if r["repeat"] == "0"], engine)
    assert all(int(r["lost_copies"]) > 0 and int(r["retransmissions"]) > 0 for r in engine)


def test_messages_delivered_are_the_protocols_counts(ideal: Path, lossy: Path):
    # capePCA: E_s, F_s, upload, release per site; gossip: c rounds over both directions of every edge;
    # floor-free: T c gossip rounds, then the flood: origin o sends its block to its deg(o) neighbours,
    # every other agent relays it once to its neighbours but the sender: 2|E| - (m - 1) per origin
    want = {"capepca": 4 * M, "capepca-gossip": C * 2 * EDGES,
            "ddppm-floorfree": T * C * 2 * EDGES + M * (2 * EDGES - (M - 1))}
    for row in _split(_rows(ideal), "engine") + _rows(lossy):
        assert int(row["messages_delivered"]) == int(row["gossip_messages"]) == want[row["protocol_kind"]]


def test_a_crash_that_blocks_the_protocol_stops_every_kind_with_its_reason(tmp_path: Path):
    rows = _rows(_scenario(tmp_path, "crash", "engine", engine={"crashes": {"1": 0.0}}))
    names = {"capepca": "capepca needs", "capepca-gossip": "capepca-gossip needs",
             "ddppm-floorfree": "the floor-free D-DP-PM needs"}
    assert len(rows) == len(KINDS)
    for r in rows:
        assert r["status"] == "stopped" and r["engine_status"] == "stopped" and r["crashed_agents"] == "[1]"
        assert names[r["protocol_kind"]] in r["status_reason"] and "[1] crashed" in r["status_reason"]
        assert r["error"] == "nan" and r["max_agent_error"] == "nan"
        assert r.get("guaranteed_epsilon", "") == ""  # no guarantee or audit of an incomplete run


def test_the_capepca_aggregator_is_node_m_and_its_crash_stops_the_run(tmp_path: Path):
    rows = _rows(_scenario(tmp_path, "agg", "engine", kinds=["capepca"], engine={"crashes": {str(M): 0.0}}))
    assert {r["status"] for r in rows} == {"stopped"} and all(f"[{M}] crashed" in r["status_reason"]
                                                              for r in rows)


def test_a_crash_after_the_last_upload_is_partial_with_the_release_unchanged(ideal: Path, tmp_path: Path):
    # constant 10 ms links: site 0 has sent its upload at 10 ms and crashes before the release comes back
    cond = {"latency": {"kind": "constant", "value": 0.01}, "crashes": {"0": 0.011}}
    rows = _split(_rows(_scenario(tmp_path, "late", "engine", kinds=KINDS[:2], engine=cond)), "engine")
    matrix = [r for r in _split(_rows(ideal), "matrix") if r["repeat"] == "0"]
    for r in rows:
        assert r["status"] == "partial" and r["engine_status"] == "completed_with_crash"
        assert r["crashed_agents"] == "[0]" and "[0] crashed" in r["status_reason"]
    cape, gossip = rows
    # capepca: the aggregator's release is complete, the matrix run's
    assert _same(cape["error"], matrix[0]["error"]) and _same(cape["audited_epsilon"],
                                                             matrix[0]["audited_epsilon"])
    # capepca-gossip: agent 0 holds no estimate; the others hold the matrix run's, so the largest of
    # their errors is at most the matrix run's largest
    assert gossip["error"] == "nan"
    assert 0 < float(gossip["max_agent_error"]) <= float(matrix[1]["max_agent_error"]) + 1e-12
