"""docs/dynamic-scenarios.md prints the stored results of the two shipped dynamic-gossip scenarios.

docs/results/dynamic-gossip-modes/ and docs/results/dynamic-gossip-churn/ hold the small files of

    dpgossip run scenarios/dynamic-gossip-modes.toml --out docs/results/dynamic-gossip-modes
    dpgossip run scenarios/dynamic-gossip-churn.toml --out docs/results/dynamic-gossip-churn

(``consensus_time.csv``, ``leakage.csv``, the churn scenario's ``pairs.csv``, ``summary.json``,
``config.resolved.json`` and the plots the page shows). These tests render the page's tables and its
run-time sentence from them and compare with the page (and the README's run times); the default suite
recomputes one mode of each scenario (modes: the deterministic synchronous mode; churn: pairwise gossip
on the engine, a few seconds) and compares it with the stored rows; the slow test reruns both scenarios
and compares every stored CSV byte for byte
(``python -m pytest -m slow tests/test_docs_dynamic_scenarios.py``, about a minute).
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from dpgossip.scenario.dynamic_gossip import mode_record
from dpgossip.scenario.dynamic_gossip_config import load_dynamic_gossip
from dpgossip.scenario.dynamic_gossip_runs import build_setting
from tests.stored_results import assert_rows_match

ROOT = Path(__file__).resolve().parents[1]
RESULTS = {"modes": ROOT / "docs" / "results" / "dynamic-gossip-modes",
           "churn": ROOT / "docs" / "results" / "dynamic-gossip-churn"}
SCENARIOS = {name: ROOT / "scenarios" / f"{folder.name}.toml" for name, folder in RESULTS.items()}
STORED_CSVS = {"modes": ("consensus_time.csv", "leakage.csv"),
               "churn": ("consensus_time.csv", "leakage.csv", "pairs.csv")}
TIMES = {"modes": (2.0, 5.0, 10.0), "churn": (50.0, 150.0, 300.0)}
"""The times of the error tables (the last is the horizon)."""
DISTANCES = {"modes": None, "churn": (1, 2, 3, 4, 6, 8, 10)}
"""The distances of the leakage tables (``None``: every one)."""
LOCAL_SHARE = 0.999
"""A pair whose largest sampled Renyi divergence is above this share of ``alpha Delta^2 / (2 sigma^2)``
counts as reaching the local-DP level (the observer recovers the target's noisy value)."""
PAGE = (ROOT / "docs" / "dynamic-scenarios.md").read_text(encoding="utf-8")


def read_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _flat(text: str) -> str:
    return " ".join(text.split())


def _g(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.4g}"


def local_dp_level(folder: Path) -> float:
    """``alpha Delta^2 / (2 sigma^2)`` of the stored scenario."""
    config = json.loads((folder / "config.resolved.json").read_text(encoding="utf-8"))
    return config["alpha"] * config["sensitivity"] ** 2 / (2 * config["sigma"] ** 2)


def error_table(folder: Path, times: tuple[float, ...]) -> str:
    """Per mode: mean error at each time, messages by the horizon, disagreement at the horizon."""
    rows = read_rows(folder / "consensus_time.csv")
    head = (f"| mode | runs | messages by t = {times[-1]:g} | "
            + " | ".join(f"error at t = {t:g}" for t in times) + f" | disagreement at t = {times[-1]:g} |")
    lines = [head, "|" + "---|" * (4 + len(times))]
    for mode in dict.fromkeys(r["mode"] for r in rows):
        at = {float(r["time"]): r for r in rows if r["mode"] == mode}
        last = at[times[-1]]
        lines.append(f"| {mode} | {last['runs']} | {float(last['messages_mean']):.1f} | "
                     + " | ".join(_g(float(at[t]["error_mean"])) for t in times)
                     + f" | {_g(float(last['disagreement_mean']))} |")
    return "\n".join(lines)


def leakage_table(folder: Path, distances: tuple[int, ...] | None) -> str:
    """Per mode and distance: the spread of the exact known-schedule leakage (``leakage.csv``)."""
    lines = ["| mode | distance | pairs | schedules | mean | median | q90 | max (sampled) | mixture |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in read_rows(folder / "leakage.csv"):
        if distances is None or int(r["distance"]) in distances:
            values = " | ".join(_g(float(r[k])) for k in
                                ("rdp_mean", "rdp_median", "rdp_q90", "rdp_max", "mixture_rdp"))
            lines.append(f"| {r['mode']} | {r['distance']} | {r['pairs']} | {r['schedules']} | {values} |")
    return "\n".join(lines)


def pair_counts(folder: Path) -> list[dict[str, object]]:
    """Per mode (``pairs.csv``): pairs whose sampled maximum (mean) reaches the local-DP level, pairs
    that never leak."""
    rows, level = read_rows(folder / "pairs.csv"), LOCAL_SHARE * local_dp_level(folder)
    out = []
    for mode in dict.fromkeys(r["mode"] for r in rows):
        mine = [r for r in rows if r["mode"] == mode]
        out.append({"mode": mode, "pairs": len(mine),
                    "at_local": sum(float(r["rdp_max"]) >= level for r in mine),
                    "mean_at_local": sum(float(r["rdp_mean"]) >= level for r in mine),
                    "zero": sum(float(r["rdp_max"]) == 0.0 for r in mine)})
    return out


def pairs_table(folder: Path) -> str:
    lines = ["| mode | pairs | max at the local-DP level | mean at the local-DP level | max 0 |",
             "|---|---|---|---|---|"]
    lines += [f"| {r['mode']} | {r['pairs']} | {r['at_local']} | {r['mean_at_local']} | {r['zero']} |"
              for r in pair_counts(folder)]
    return "\n".join(lines)


def page_tables() -> dict[str, str]:
    """Every table the page prints, by the name of its marker."""
    return {"modes-error": error_table(RESULTS["modes"], TIMES["modes"]),
            "modes-leakage": leakage_table(RESULTS["modes"], DISTANCES["modes"]),
            "churn-error": error_table(RESULTS["churn"], TIMES["churn"]),
            "churn-leakage": leakage_table(RESULTS["churn"], DISTANCES["churn"]),
            "churn-pairs": pairs_table(RESULTS["churn"])}


def compute_seconds(folder: Path) -> float:
    """The sum of the modes' ``seconds`` in the stored ``summary.json``."""
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    return sum(m["seconds"] for m in summary["modes"])


def run_time_sentence() -> str:
    parts = [f"`{SCENARIOS[name].name}` {compute_seconds(RESULTS[name]):.1f} s" for name in RESULTS]
    return (f"The modes' computing time, the sum of their `seconds` in the stored `summary.json`, measured "
            f"on the machine that stored the results (a shared 2-core machine, one worker): {parts[0]}, "
            f"{parts[1]}.")


@pytest.mark.parametrize("name", ["modes-error", "modes-leakage", "churn-error", "churn-leakage",
                                  "churn-pairs"])
def test_the_page_prints_the_stored_tables(name):
    assert f"<!-- {name} -->\n{page_tables()[name]}\n<!-- /{name} -->" in PAGE


def test_the_stored_results_are_the_shipped_scenarios():
    for name, folder in RESULTS.items():
        config = json.loads((folder / "config.resolved.json").read_text(encoding="utf-8"))
        labels = [m.label for m in load_dynamic_gossip(SCENARIOS[name]).modes]
        assert config["name"] == folder.name and [m["label"] for m in config["modes"]] == labels
        assert list(dict.fromkeys(r["mode"] for r in read_rows(folder / "leakage.csv"))) == labels
        assert local_dp_level(folder) == 1.0  # the page: "the local-DP level ... (1 here)"
        for plot in ("consensus-time.png", "leakage-distance.png"):
            assert f"](results/{folder.name}/plots/{plot})" in PAGE


def test_the_page_and_the_readme_quote_the_stored_run_times():
    assert _flat(run_time_sentence()) in _flat(PAGE)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for name, folder in RESULTS.items():
        line = next(x for x in readme.splitlines() if x.startswith(f"| `{SCENARIOS[name].name}` |"))
        assert f"{compute_seconds(folder):.1f} s of computing" in line, name
        assert compute_seconds(folder) < 120  # the target: well under two minutes each


def test_the_page_names_the_commands():
    for name, folder in RESULTS.items():
        assert (f"dpgossip run scenarios/{folder.name}.toml --out docs/results/{folder.name}"
                in PAGE), name


def _recomputed(name: str, label: str) -> dict[str, list[dict]]:
    config = load_dynamic_gossip(SCENARIOS[name])
    (index,) = [i for i, m in enumerate(config.modes) if m.label == label]
    return mode_record(config, build_setting(config), index, config.modes[index])["tables"]


@pytest.mark.parametrize(("name", "label"), [("modes", "synchronous"), ("churn", "pairwise-golf")])
def test_one_mode_of_each_scenario_is_recomputed(name, label):
    """The synchronous mode (deterministic, well under a second) and the GoLF-like pairwise mode (20
    runs on the engine, a few seconds): its rows of every stored table, recomputed."""
    fresh = _recomputed(name, label)
    for table in STORED_CSVS[name]:
        stored = [r for r in read_rows(RESULTS[name] / table) if r["mode"] == label]
        assert_rows_match(stored, fresh[table.removesuffix(".csv")])


def test_the_example_file_of_the_page_is_a_valid_scenario():
    import tomllib

    from dpgossip.scenario.dynamic_gossip_config import parse_dynamic_gossip

    block = PAGE.split("```toml\n", 1)[1].split("```", 1)[0]
    config = parse_dynamic_gossip(tomllib.loads(block))
    assert [m.label for m in config.modes] == ["synchronous", "pairwise-lossy"]
    lossy = config.modes[1].conditions
    assert (lossy.drop, lossy.delay, lossy.pairwise_timeout, lossy.online.a) == (0.5, (1.0, 5.0), 11.0, 5.0)
    assert build_setting(config).pairs.shape == (35, 3)


@pytest.mark.slow
def test_both_scenarios_rerun_write_the_stored_tables(tmp_path):
    """Both scenarios again with the product's command (about a minute): the stored CSVs, byte for
    byte."""
    from dpgossip.cli import main

    for name, folder in RESULTS.items():
        out = tmp_path / folder.name
        assert main(["run", str(SCENARIOS[name]), "--out", str(out), "-q", "--no-plots"]) == 0
        for table in STORED_CSVS[name]:
            assert (out / table).read_bytes() == (folder / table).read_bytes(), (name, table)
