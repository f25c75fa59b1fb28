"""The numbers docs/dynamic-leakage.md prints are those the code stores: the table of
scripts/dynamic_leakage_table.py (docs/numbers/dynamic-leakage.json; the full recomputation is slow),
the reading of it, a witness schedule for the claim that a target four hops away can leak at the
local-DP level, and the benchmark sentence (docs/numbers/dynamic-leakage-bench.json, recorded by
benchmarks/bench_dynamic_leakage.py; the 10,000-agent run takes minutes and is not repeated)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from dpgossip.protocols.gossip.dynamic_release import (
    dynamic_leakage,
    message_coefficients,
    received_messages,
)
from dpgossip.protocols.gossip.linear import LinearGossip
from dpgossip.topology import make_network

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "dynamic-leakage.md").read_text(encoding="utf-8")
NUMBERS = json.loads((ROOT / "docs" / "numbers" / "dynamic-leakage.json").read_text(encoding="utf-8"))
BENCH_RECORD = json.loads((ROOT / "docs" / "numbers" / "dynamic-leakage-bench.json").read_text(
    encoding="utf-8"))


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


SCRIPT = _load("dynamic_leakage_table", ROOT / "scripts" / "dynamic_leakage_table.py")
BENCH = _load("bench_dynamic_leakage", ROOT / "benchmarks" / "bench_dynamic_leakage.py")


def _between(start: str, end: str) -> str:
    return DOC.split(f"<!-- {start} -->")[1].split(f"<!-- {end} -->")[0].strip()


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_the_page_prints_the_stored_table():
    assert _between("dynamic-leakage-table", "/dynamic-leakage-table") == SCRIPT.table(NUMBERS)
    assert "SAMPLED" in NUMBERS["note"]


def test_the_reading_holds_in_the_rows():
    rows = NUMBERS["rows"]
    for name, far in (("randomized pairwise gossip", 4), ("random matchings", 3)):
        mine = [r for r in rows if r["schedule"] == name]
        at_ldp = [r["distance"] for r in mine if r["exact_rdp_max"] == pytest.approx(1.0, rel=1e-9)]
        assert at_ldp == list(range(1, far + 1))
        assert all(r["below_exact"] > 0 for r in mine if r["exact_rdp_max"] > 0)
        assert all(r["schedules"] == 100 for r in mine)
    worst = max(rows, key=lambda r: r["below_exact"] / (r["targets"] * r["schedules"]))
    assert (worst["schedule"], worst["distance"], worst["below_exact"], worst["targets"] * 100) == \
        ("randomized pairwise gossip", 4, 445, 800)
    assert "445 of 800 at distance 4" in _flat(DOC)
    assert round(100 * 445 / 800) == 56 and "up to 56 %" in _flat(DOC)


def test_a_target_four_hops_away_can_be_solved_for_exactly():
    """Seed 86 of the script's pairwise sampler (found by scanning its 100 schedules): the observer
    recovers target 0's noisy value, mu = Delta / sigma, and e_0 lies in the span of its rows."""
    net = make_network("grid", agents=36, params={"rows": 6, "cols": 6})
    sched = SCRIPT.pairwise_ticks(net.graph, SCRIPT.TICKS, 86)
    rows = dynamic_leakage(sched, LinearGossip(rounds=SCRIPT.TICKS, sigma=1.0), SCRIPT.OBSERVER,
                           SCRIPT.SETTINGS, graph=net.graph)
    target = rows[0]
    assert (target.target, target.hops) == (0, 4) and target.mu == pytest.approx(1.0, rel=1e-9)
    C = message_coefficients(sched, received_messages(sched, (SCRIPT.OBSERVER,)))[0]
    A = np.vstack([C, np.eye(36)[SCRIPT.OBSERVER]])
    coef = np.linalg.lstsq(A.T, np.eye(36)[0], rcond=None)[0]
    assert np.linalg.norm(A.T @ coef - np.eye(36)[0]) < 1e-10


def test_the_benchmark_sentence_is_the_recorded_run():
    assert BENCH.summary_sentence(BENCH_RECORD) in _flat(DOC)
    assert BENCH_RECORD["agents"] == 10_000
    for case in BENCH_RECORD["cases"].values():  # the page: every case under 10 minutes and 8 GB
        assert case["observers"] == 10_000 and case["wall_s"] < 600
        assert "extrapolated_all_observers_s" not in case
    assert BENCH_RECORD["peak_rss_mb"] < 8 * 1024


@pytest.mark.slow
def test_the_stored_numbers_are_what_the_script_computes():
    assert json.loads(json.dumps(SCRIPT.compute())) == NUMBERS
