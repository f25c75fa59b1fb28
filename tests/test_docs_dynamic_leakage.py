"""The numbers docs/dynamic-leakage.md prints are those the code stores: the table of
scripts/dynamic_leakage_table.py (docs/numbers/dynamic-leakage.json; the full recomputation is slow),
the reading of it, a witness schedule for the claim that a target three hops away can leak at the
local-DP level, the flag columns recomputed from the stored per-target values, and the
benchmark sentence (docs/numbers/dynamic-leakage-bench.json, recorded by
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
from dpgossip.protocols.gossip.schedule_mixture import averaging_steps
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


def _rows(name: str) -> list[dict]:
    return [r for r in NUMBERS["rows"] if r["schedule"] == name]


def test_the_reading_holds_in_the_rows():
    for name in ("randomized pairwise gossip", "random matchings"):
        mine = _rows(name)
        at_ldp = [r["distance"] for r in mine if r["exact_rdp_max"] == pytest.approx(1.0, rel=1e-9)]
        assert at_ldp == [1, 2, 3]
        assert all(r["below_exact"] > 0 for r in mine if r["exact_rdp_max"] > 0)
        assert all(r["schedules"] == 100 for r in mine)
    pairwise = _rows("randomized pairwise gossip")
    assert [r["exact_rdp_max"] < 1 for r in pairwise] == [False] * 3 + [True] * 3
    worst = max(NUMBERS["rows"], key=lambda r: r["below_exact"] / (r["targets"] * r["schedules"]))
    pairs = worst["targets"] * worst["schedules"]
    assert (f"{worst['below_exact']} of {pairs} at distance {worst['distance']} under "
            f"{worst['schedule']}") in _flat(DOC)
    assert f"up to {round(100 * worst['below_exact'] / pairs)} %" in _flat(DOC)


def test_the_flags_are_counted_from_the_stored_per_target_values():
    """Every flag column recomputed from the per-target values stored beside it: the pair count is
    the sum of the per-target counts, and the two target counts compare the stored means."""
    for r in NUMBERS["rows"]:
        n = r["targets"]
        assert len(r["target_ids"]) == len(r["target_bound_mean"]) == len(r["target_below_exact"]) == n
        assert sum(r["target_below_exact"]) == r["below_exact"]
        assert all(0 <= k <= r["schedules"] for k in r["target_below_exact"])
        mean_b = np.array(r["target_bound_mean"])
        assert r["mean_below_exact_mean"] == int(np.sum(
            mean_b < np.array(r["target_exact_rdp_mean"]) * (1 - 1e-12)))
        assert r["mean_below_mixture"] == int(np.sum(
            mean_b < np.array(r["target_mixture_rdp"]) * (1 - 1e-12)))
        assert np.mean(mean_b) == pytest.approx(r["bound_mean"], rel=1e-12)
        assert np.mean(r["target_exact_rdp_mean"]) == pytest.approx(r["exact_rdp_mean"], rel=1e-12)
        assert max(r["target_mixture_rdp"]) == r["mixture_rdp"]
        # the Renyi divergence of the mixture release is at least the mean RDP (Jensen)
        assert all(mix >= mean * (1 - 1e-12) for mix, mean in
                   zip(r["target_mixture_rdp"], r["target_exact_rdp_mean"], strict=True))
    far = [r for r in NUMBERS["rows"] if r["distance"] in (3, 4)]
    assert all(r["mean_below_exact_mean"] >= r["targets"] - 1 for r in far)

    def phrase(r):
        k, n = r["mean_below_exact_mean"], r["targets"]
        return (f"all {n} targets" if k == n else f"{k} of the {n} targets") + f" at distance {r['distance']}"

    groups = [" and ".join(phrase(r) for r in far if r["schedule"] == name) + f" under {name}"
              for name in ("randomized pairwise gossip", "random matchings")]
    assert f"the mean charge is below the mean exact value for {groups[0]}, and {groups[1]}." in _flat(DOC)


def test_a_target_three_hops_away_can_be_solved_for_exactly():
    """Seed 17 of the script's pairwise sampler (found by scanning its 100 schedules): the observer
    recovers target 18's noisy value, mu = Delta / sigma, and e_18 lies in the span of its rows."""
    net = make_network("grid", agents=36, params={"rows": 6, "cols": 6})
    sched = averaging_steps(SCRIPT.pairwise_ticks(net.graph, SCRIPT.TICKS, 17))
    rows = dynamic_leakage(sched, LinearGossip(rounds=SCRIPT.TICKS, sigma=1.0), SCRIPT.OBSERVER,
                           SCRIPT.SETTINGS, graph=net.graph)
    target = next(r for r in rows if r.target == 18)
    assert target.hops == 3 and target.mu == pytest.approx(1.0, rel=1e-9)
    C = message_coefficients(sched, received_messages(sched, (SCRIPT.OBSERVER,)))[0]
    A = np.vstack([C, np.eye(36)[SCRIPT.OBSERVER]])
    coef = np.linalg.lstsq(A.T, np.eye(36)[18], rcond=None)[0]
    assert np.linalg.norm(A.T @ coef - np.eye(36)[18]) < 1e-10


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
