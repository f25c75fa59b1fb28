"""``backend = "engine"`` for the ppm* kinds: the scenario runs them on the engine
(:mod:`dpgossip.protocols.ppm.engine_protocol`) and gets the matrix backend's rows (ideal links)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from dpgossip.scenario import run_scenario
from tests.scenario.helpers import small

ENGINE_ONLY = {"backend", "engine_status", "crashed_agents", "messages_delivered", "gossip_messages",
               "flood_messages", "crash_notices", "heartbeats", "bytes_delivered", "messages_sent",
               "copies_sent", "retransmissions", "lost_copies", "copies_to_crashed", "copies_unsent",
               "dropped_copies", "duplicates_discarded", "abandoned", "completion_time"}


def _rows(folder: Path, name: str = "runs.csv") -> list[dict[str, str]]:
    with open(folder / name, newline="") as fh:
        return list(csv.DictReader(fh))


def _run(tmp: Path, backend: str, kind: str, **extra: object) -> Path:
    # the central audit (a neighbour search) is slow and does not depend on the backend: audited for
    # ppm-gossip only
    sc = small(protocol={"kind": kind, "iterations": 3, "consensus_steps": 2, "rank": 2},
               ppm={"noise_multiplier": 1.5, "block_rank": 3, "mask_std": 2.0,
                    "audit": kind == "ppm-gossip"}, repeats=2,
               backend=backend, **extra)
    return run_scenario(sc, tmp / backend, quiet=True)


def _same(a: str, b: str) -> bool:
    try:
        return float(a) == pytest.approx(float(b), abs=1e-10)
    except ValueError:
        return a == b


@pytest.mark.parametrize("kind", ["ppm-gossip", pytest.param("ppm-federated", marks=pytest.mark.slow)])
def test_engine_rows_equal_the_matrix_rows(tmp_path: Path, kind: str):
    matrix, engine = _rows(_run(tmp_path, "matrix", kind)), _rows(_run(tmp_path, "engine", kind))
    assert len(matrix) == len(engine) == 2
    for m, e in zip(matrix, engine, strict=True):
        assert set(e) - set(m) <= ENGINE_ONLY and set(m) <= set(e)
        assert e["backend"] == "engine" and e["engine_status"] == "completed" and e["status"] == "ok"
        for key in m.keys() - {"backend"}:
            assert _same(m[key], e[key]), (key, m[key], e[key])
    it_m, it_e = _rows(tmp_path / "matrix", "iterations.csv"), _rows(tmp_path / "engine", "iterations.csv")
    assert len(it_m) == len(it_e) == 2 * 4
    for m, e in zip(it_m, it_e, strict=True):
        assert {k: v for k, v in m.items() if k not in ("backend", "error")} == {
            k: v for k, v in e.items() if k not in ("backend", "error")}
        assert _same(m["error"], e["error"])


@pytest.mark.parametrize("node", ["1", "4"])
def test_a_crash_on_the_engine_stops_the_point_with_its_reason(tmp_path: Path, node: str):
    # node 4 is the curator of the 4-client star
    folder = _run(tmp_path, "engine", "ppm", engine={"crashes": {node: 0.0}})
    rows = _rows(folder)
    assert {r["status"] for r in rows} == {"stopped"}
    assert all(f"party(ies) [{node}] crashed" in r["status_reason"] for r in rows)
    assert {r["error"] for r in rows} == {"nan"} and {r["engine_status"] for r in rows} == {"stopped"}
