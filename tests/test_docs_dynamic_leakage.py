"""docs/dynamic-leakage.md prints the stored results of the shipped scenario dynamic-leakage-muffliato.

docs/results/dynamic-leakage-muffliato/ holds ``leakage.csv``, ``pairs.csv``, ``summary.json`` and
``config.resolved.json`` of

    dpgossip run scenarios/dynamic-leakage-muffliato.toml --out docs/results/dynamic-leakage-muffliato

These tests render the page's table and the sentences of its reading from them, recount the flag
columns from the stored per-pair values, recompute the random-matchings mode (about a second) and
compare it with the stored rows, and check the witness schedule of the reading (a target five hops away
whose noisy value the observer solves for). The benchmark sentence is the recorded run of
benchmarks/bench_dynamic_leakage.py (docs/numbers/dynamic-leakage-bench.json; the 10,000-agent run
takes minutes and is not repeated). The slow test reruns the scenario and compares the stored CSVs byte
for byte.
"""

from __future__ import annotations

import csv
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from dpgossip.protocols.gossip.dynamic_release import message_coefficients, received_messages
from dpgossip.protocols.gossip.schedule_mixture import averaging_steps
from dpgossip.scenario.dynamic_gossip import mode_record
from dpgossip.scenario.dynamic_gossip_config import load_dynamic_gossip
from dpgossip.scenario.dynamic_gossip_runs import build_setting, realise, trace_run
from tests.stored_results import assert_rows_match

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "dynamic-leakage.md").read_text(encoding="utf-8")
SCENARIO = ROOT / "scenarios" / "dynamic-leakage-muffliato.toml"
RESULTS = ROOT / "docs" / "results" / "dynamic-leakage-muffliato"
STORED_CSVS = ("leakage.csv", "pairs.csv")
NAMES = {"randomized-pairwise-gossip": "randomized pairwise gossip", "random-matchings": "random matchings"}
"""The page's name of each mode."""
BENCH_RECORD = json.loads((ROOT / "docs" / "numbers" / "dynamic-leakage-bench.json").read_text(
    encoding="utf-8"))
WITNESS = {"mode": 0, "run": 11, "target": 5}
"""Run 11 of the pairwise mode (found by scanning its 100 runs): the observer recovers target 5's noisy
value, five hops away."""


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


BENCH = _load("bench_dynamic_leakage", ROOT / "benchmarks" / "bench_dynamic_leakage.py")


def read_rows(name: str) -> list[dict[str, str]]:
    with open(RESULTS / name, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _between(start: str, end: str) -> str:
    return DOC.split(f"<!-- {start} -->")[1].split(f"<!-- {end} -->")[0].strip()


def _flat(text: str) -> str:
    return " ".join(text.split())


def _f(v: str) -> str:
    return f"{float(v):.3g}"


def mode_steps() -> dict[str, float]:
    """The mean number of steps of each mode's runs (``summary.json``)."""
    summary = json.loads((RESULTS / "summary.json").read_text(encoding="utf-8"))
    return {m["mode"]: m["steps_mean"] for m in summary["modes"]}


def _schedule_label(mode: str) -> str:
    steps = mode_steps()[mode]
    return f"{NAMES[mode]} ({steps:g} steps)" if steps == int(steps) else \
        f"{NAMES[mode]} ({steps:g} steps on average)"


def table() -> str:
    """The markdown table of docs/dynamic-leakage.md, from the stored leakage.csv."""
    lines = ["| schedule | d | targets | exact RDP mean | median | q90 | max (sampled) | "
             "mixture RDP (MC) | exact eps mean | eps max (sampled) | mixture eps (MC) | "
             "Muffliato charge mean | charge max | charge < exact (pairs) | "
             "mean charge < mean exact (targets) | mean charge < mixture (targets) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    rows = read_rows("leakage.csv")
    for r in rows:
        n = int(r["pairs"])
        values = " | ".join(_f(r[k]) for k in (
            "rdp_mean", "rdp_median", "rdp_q90", "rdp_max", "mixture_rdp", "epsilon_mean", "epsilon_max",
            "mixture_epsilon", "charge_mean", "charge_max"))
        lines.append(f"| {_schedule_label(r['mode'])} | {r['distance']} | {n} | {values} | "
                     f"{r['charge_below_exact']} / {n * int(r['schedules'])} | "
                     f"{r['mean_charge_below_mean_exact']} / {n} | {r['mean_charge_below_mixture']} / {n} |")
    (note,) = {r["note"] for r in rows}
    return "\n".join(lines) + f"\n\n({note}.)"


def test_the_page_prints_the_stored_table():
    assert _between("dynamic-leakage-table", "/dynamic-leakage-table") == table()
    config = json.loads((RESULTS / "config.resolved.json").read_text(encoding="utf-8"))
    assert (config["name"], config["observers"], config["samples"], config["muffliato"]) == \
        ("dynamic-leakage-muffliato", [14], 100, True)
    assert [m["label"] for m in config["modes"]] == list(NAMES)
    assert "dpgossip run scenarios/dynamic-leakage-muffliato.toml --out " \
        "docs/results/dynamic-leakage-muffliato" in DOC


def _rows(mode: str) -> list[dict[str, str]]:
    return [r for r in read_rows("leakage.csv") if r["mode"] == mode]


def local_dp_distances(mode: str) -> list[int]:
    """The distances where the largest sampled RDP is the local-DP level 1."""
    return [int(r["distance"]) for r in _rows(mode) if float(r["rdp_max"]) == pytest.approx(1.0, rel=1e-9)]


def reading_sentence() -> str:
    pairwise, matchings = (local_dp_distances(m) for m in NAMES)
    both = sorted(set(pairwise) & set(matchings))
    only = [d for d in pairwise if d not in both]
    assert both == [1, 2] and only == [5] and matchings == both
    return ("the worst sampled schedule reaches the local-DP level `alpha Delta^2 / (2 sigma^2) = 1` at "
            f"distances {both[0]} and {both[1]} under both samplers, and at distance {only[0]} under "
            "randomized pairwise gossip")


def worst_share_sentence() -> str:
    rows = read_rows("leakage.csv")
    worst = max(rows, key=lambda r: int(r["charge_below_exact"]) / (int(r["pairs"]) * int(r["schedules"])))
    pairs = int(worst["pairs"]) * int(worst["schedules"])
    return (f"on up to {round(100 * int(worst['charge_below_exact']) / pairs)} % of the (schedule, target) "
            f"pairs at one distance ({worst['charge_below_exact']} of {pairs} at distance "
            f"{worst['distance']} under {NAMES[worst['mode']]})")


def mean_charge_sentence() -> str:
    def phrase(r):
        k, n = int(r["mean_charge_below_mean_exact"]), int(r["pairs"])
        return (f"all {n} targets" if k == n else f"{k} of the {n} targets") + f" at distance {r['distance']}"

    groups = [" and ".join(phrase(r) for r in _rows(mode) if r["distance"] in ("3", "4")) + f" under {name}"
              for mode, name in NAMES.items()]
    return f"the mean charge is below the mean exact value for {groups[0]}, and {groups[1]}."


def test_the_reading_is_what_the_stored_rows_say():
    for sentence in (reading_sentence(), worst_share_sentence(), mean_charge_sentence()):
        assert sentence in _flat(DOC), sentence
    rows = read_rows("leakage.csv")
    assert all(int(r["charge_below_exact"]) > 0 for r in rows if float(r["rdp_max"]) > 0)
    assert all(int(r["schedules"]) == 100 for r in rows)
    steps = mode_steps()
    assert steps["random-matchings"] == 6 and abs(steps["randomized-pairwise-gossip"] - 144) < 3


def test_the_flags_are_counted_from_the_stored_pairs():
    """Every flag column of leakage.csv recounted from pairs.csv: the (schedule, target) count is the
    sum of the per-target counts, and the two target counts compare the per-target means."""
    pairs = read_rows("pairs.csv")
    for r in read_rows("leakage.csv"):
        mine = [p for p in pairs if (p["mode"], p["distance"]) == (r["mode"], r["distance"])]
        assert len(mine) == int(r["pairs"])
        charge = np.array([float(p["charge_mean"]) for p in mine])
        exact = np.array([float(p["rdp_mean"]) for p in mine])
        mixture = np.array([float(p["mixture_rdp"]) for p in mine])
        assert sum(int(p["charge_below_exact"]) for p in mine) == int(r["charge_below_exact"])
        assert int(np.sum(charge < exact * (1 - 1e-12))) == int(r["mean_charge_below_mean_exact"])
        assert int(np.sum(charge < mixture * (1 - 1e-12))) == int(r["mean_charge_below_mixture"])
        assert np.mean(charge) == pytest.approx(float(r["charge_mean"]), rel=1e-12)
        assert max(mixture) == float(r["mixture_rdp"])
        # the Renyi divergence of the mixture release is at least the mean RDP (Jensen)
        assert all(mixture >= exact * (1 - 1e-12))


def test_the_random_matchings_mode_is_recomputed():
    """The random-matchings mode again (100 runs, about a second): its stored rows to 1e-12."""
    config = load_dynamic_gossip(SCENARIO)
    fresh = mode_record(config, build_setting(config), 1, config.modes[1])["tables"]
    for name in STORED_CSVS:
        stored = [r for r in read_rows(name) if r["mode"] == "random-matchings"]
        assert_rows_match(stored, fresh[name.removesuffix(".csv")])


def test_a_target_five_hops_away_can_be_solved_for_exactly():
    """The witness run: the observer recovers the target's noisy value (mu = Delta / sigma), and e_u lies
    in the span of its message rows and its own row."""
    config = load_dynamic_gossip(SCENARIO)
    setting = build_setting(config)
    mode = config.modes[WITNESS["mode"]]
    schedule = realise(config, setting, WITNESS["mode"], mode, WITNESS["run"])
    trace = trace_run(schedule, setting, config, mode.period)
    (k,) = np.flatnonzero(setting.pairs[:, 1] == WITNESS["target"])
    assert setting.pairs[k, 2] == 5 and trace.mu[k] == pytest.approx(1.0, rel=1e-9)
    observer, m = setting.observers[0], setting.network.m
    steps = averaging_steps(schedule)
    C = message_coefficients(steps, received_messages(steps, (observer,)))[0]
    A = np.vstack([C, np.eye(m)[observer]])
    coef = np.linalg.lstsq(A.T, np.eye(m)[WITNESS["target"]], rcond=None)[0]
    assert np.linalg.norm(A.T @ coef - np.eye(m)[WITNESS["target"]]) < 1e-10
    assert f"run {WITNESS['run']} of the pairwise mode and target {WITNESS['target']}" in _flat(DOC)


def test_the_readme_quotes_the_stored_computing_time():
    summary = json.loads((RESULTS / "summary.json").read_text(encoding="utf-8"))
    seconds = sum(m["seconds"] for m in summary["modes"])
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    line = next(x for x in readme.splitlines() if x.startswith("| `dynamic-leakage-muffliato.toml` |"))
    assert f"{seconds:.1f} s of computing" in line


def test_the_benchmark_sentence_is_the_recorded_run():
    assert BENCH.summary_sentence(BENCH_RECORD) in _flat(DOC)
    assert BENCH_RECORD["agents"] == 10_000
    for case in BENCH_RECORD["cases"].values():  # the page: every case under 10 minutes and 8 GB
        assert case["observers"] == 10_000 and case["wall_s"] < 600
        assert "extrapolated_all_observers_s" not in case
    assert BENCH_RECORD["peak_rss_mb"] < 8 * 1024


@pytest.mark.slow
def test_the_scenario_rerun_writes_the_stored_tables(tmp_path):
    """The scenario again with the product's command (about 15 s): the stored CSVs, byte for byte."""
    from dpgossip.cli import main

    out = tmp_path / "run"
    assert main(["run", str(SCENARIO), "--out", str(out), "-q", "--no-plots"]) == 0
    for name in STORED_CSVS:
        assert (out / name).read_bytes() == (RESULTS / name).read_bytes(), name
