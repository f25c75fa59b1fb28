"""docs/network-dp.md, Section 4, prints the stored results of the shipped scenario network-dp-bounds.

docs/results/network-dp-bounds/ holds ``leakage.csv`` (one row per (observer, target) pair),
``summary.json`` and ``config.resolved.json`` of

    dpgossip run scenarios/network-dp-bounds.toml --out docs/results/network-dp-bounds --no-plots

These tests render the section's two tables (the hypercube's exact value beside Muffliato's per-message
sum over the authors' steps ``t = 1..T``; Muffliato's NeurIPS and corrected forms and MFDL's bound on
MFDL's Erdos-Renyi graph) and the reading of the second from the stored rows, and check that the page
prints them (whitespace normalised) and names the command.  The default suite recomputes one sampled
graph with the product's code (:func:`~dpgossip.scenario.network_dp.audit_case`: MFDL's graph with a
new input and noise every round, a fraction of a second); the slow test reruns the whole command (a few
seconds) and compares the stored tables byte for byte.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from dpgossip._threads import single_blas_thread
from dpgossip.scenario.network_dp import audit_case, prepare_case
from dpgossip.scenario.network_dp_config import load_network_dp
from dpgossip.scenario.store import json_safe
from tests.stored_results import assert_rows_match, assert_run_writes_stored

ROOT = Path(__file__).resolve().parents[1]
NAME = "network-dp-bounds"
RESULTS = ROOT / "docs" / "results" / NAME
SCENARIO = ROOT / "scenarios" / f"{NAME}.toml"
PAGE = ROOT / "docs" / "network-dp.md"
COMMAND = f"dpgossip run scenarios/{NAME}.toml --out docs/results/{NAME} --no-plots"
STORED = ("leakage.csv", "config.resolved.json")
"""The stored files a rerun must write byte for byte (``summary.json`` holds timings)."""
HOPS = (1, 2, 4, 6, 7, 8, 10, 11)
"""The distances of the hypercube table."""
HYPERCUBES = {8: "hypercube-8", 11: "hypercube-11"}
ONCE, EVERY = "mfdl-noise-once", "mfdl-noise-every-round"
TOL = 1e-9
"""Relative tolerance of "below the exact value", as ``compare_to_bound``."""


def _flat(text: str) -> str:
    return " ".join(text.split())


def read_rows(folder: Path = RESULTS) -> list[dict[str, str]]:
    with open(folder / "leakage.csv", newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _graph(rows: list[dict[str, str]], label: str) -> list[dict[str, str]]:
    return [r for r in rows if r["topology"] == label]


# ------------------------------------------------------------------ what the page prints, rendered


def hypercube_column(rows: list[dict[str, str]], label: str) -> dict[int, str]:
    """Mean exact Renyi-2 / Muffliato's sum over ``t = 1..T`` by distance; bold where every target at
    that distance has its bound below the exact value (``muffliato_below_exact``)."""
    out = {}
    for hops in HOPS:
        at = [r for r in _graph(rows, label) if int(r["distance"]) == hops]
        if not at:
            continue
        exact = float(np.mean([float(r["rdp"]) for r in at]))
        bound = float(np.mean([float(r["muffliato_bound"]) for r in at]))
        text = f"{round(exact, 10):.3g} / {bound:#.3g}"
        out[hops] = f"**{text}**" if all(r["muffliato_below_exact"] == "True" for r in at) else text
    return out


def hypercube_table(rows: list[dict[str, str]]) -> str:
    """docs/network-dp.md, Section 4: the hypercube table (``T`` from the stored ``summary.json``)."""
    rounds = {g["label"]: g["rounds"] for g in _summary()["graphs"]}
    columns = {d: hypercube_column(rows, label) for d, label in HYPERCUBES.items()}
    head = " | ".join(f"d = {d}, T = {rounds[label]}" for d, label in HYPERCUBES.items())
    lines = [f"| hops | {head} |", "|---:|---|---|"]
    for hops in HOPS:
        cells = [columns[d].get(hops, "") for d in HYPERCUBES]
        lines.append(f"| {hops} | {cells[0]} | {cells[1]} |".replace("|  |", "| |"))
    return "\n".join(lines)


def forms_rows(rows: list[dict[str, str]]) -> list[dict[str, float]]:
    """Per target of MFDL's graph: the exact values of both rounds conventions beside the bounds."""
    every = {int(r["target"]): r for r in _graph(rows, EVERY)}
    out = []
    for r in _graph(rows, ONCE):
        e = every[int(r["target"])]
        out.append({"target": int(r["target"]), "hops": int(r["distance"]),
                    "exact_once": float(r["rdp"]), "neurips": float(r["muffliato_bound"]),
                    "exact_every": float(e["rdp"]), "corrected": float(e["corrected_bound"]),
                    "corrected_p2": float(e["corrected_p2_bound"]),
                    "corrected_unclipped": float(e["corrected_unclipped_bound"]),
                    "mfdl": float(e["mfdl_bound"])})
    return out


def _bound_cell(bound: np.ndarray, exact: np.ndarray) -> str:
    """Mean of a bound over the pairs at one distance; bold, with the count, where some pair's bound is
    below its exact value."""
    below = int(np.sum(bound < exact * (1 - TOL)))
    text = f"{float(np.mean(bound)):.4g}"
    return f"**{text}** ({below} of {exact.size} below)" if below else text


def forms_table(rows: list[dict[str, float]]) -> str:
    """docs/network-dp.md, Section 4: Muffliato's NeurIPS and corrected forms beside the exact values."""
    lines = ["| distance | pairs | noise once: exact | NeurIPS per-message sum | new input and noise every "
             "round: exact | corrected (Thm 11), `p = 1`, clipped | corrected, `p = 2`, clipped | MFDL's "
             "absolute-value bound |", "|---:|---:|---|---|---|---|---|---|"]
    for h in sorted({r["hops"] for r in rows}):
        at = [r for r in rows if r["hops"] == h]
        col = {k: np.array([r[k] for r in at]) for k in at[0] if k not in ("target", "hops")}
        lines.append(f"| {h} | {len(at)} | {float(np.mean(col['exact_once'])):.4g} "
                     f"| {_bound_cell(col['neurips'], col['exact_once'])} "
                     f"| {float(np.mean(col['exact_every'])):.4g} "
                     f"| {_bound_cell(col['corrected'], col['exact_every'])} "
                     f"| {_bound_cell(col['corrected_p2'], col['exact_every'])} "
                     f"| {_bound_cell(col['mfdl'], col['exact_every'])} |")
    return "\n".join(lines)


def local_dp_level() -> float:
    """``T alpha Delta^2 / (2 sigma^2)`` of MFDL's graph with a new input every round: the composition of
    ``T`` local-DP releases, where the corrected form's clip sets it."""
    config = load_network_dp(SCENARIO)
    (case,) = [g for g in config.graphs if g.label == EVERY]
    return case.rounds * config.alpha * config.sensitivity ** 2 / (2 * case.sigma ** 2)


def forms_reading(rows: list[dict[str, float]]) -> str:
    """docs/network-dp.md, Section 4: what the table of the two forms shows, every number rendered."""
    below = sum(r["neurips"] < r["exact_once"] * (1 - TOL) for r in rows)
    sound = all(r[k] >= r["exact_every"] * (1 - TOL) for r in rows
                for k in ("corrected", "corrected_p2", "mfdl"))
    level = local_dp_level()
    clipped = sum(r["corrected_unclipped"] > level for r in rows)
    ratio = max(r["corrected_p2"] / r["exact_every"] for r in rows)
    return (f"The NeurIPS sum is below the exact value for {below} of the {len(rows)} targets; the "
            f"corrected form (`p = 1` and `p = 2`) and MFDL's bound are {'never' if sound else 'sometimes'} "
            f"below it. The corrected form is loose: with `p = 1` the sum exceeds `T` for {clipped} of "
            f"the {len(rows)} targets, which the clip then sets to the local-DP level "
            f"`T alpha Delta^2 / (2 sigma^2) = {level:g}`, and even with `p = 2` it is up to {ratio:.3g} "
            f"times the exact value.")


def _summary(folder: Path = RESULTS) -> dict:
    return json.loads((folder / "summary.json").read_text(encoding="utf-8"))


def _page() -> str:
    return _flat(PAGE.read_text(encoding="utf-8"))


# ------------------------------------------------------------------ the page against the stored files


@pytest.mark.parametrize("render", ["hypercube", "forms", "reading"])
def test_the_page_prints_what_the_stored_run_holds(render):
    rows = read_rows()
    text = {"hypercube": lambda: hypercube_table(rows), "forms": lambda: forms_table(forms_rows(rows)),
            "reading": lambda: forms_reading(forms_rows(rows))}[render]()
    assert _flat(text) in _page(), f"docs/network-dp.md differs from the stored results:\n{text}"


def test_the_page_names_the_command_and_the_results_are_the_shipped_scenario():
    assert COMMAND in _page()
    config = load_network_dp(SCENARIO)
    stored = json.loads((RESULTS / "config.resolved.json").read_text(encoding="utf-8"))
    assert stored == json.loads(json.dumps(json_safe(config.to_row())))
    labels = [g.label for g in config.graphs]
    assert [g["label"] for g in _summary()["graphs"]] == labels
    assert list(dict.fromkeys(r["topology"] for r in read_rows())) == labels


def test_the_hypercube_antipode_is_at_the_local_dp_level_far_above_the_sum():
    # the hypercube's antipode: exact Renyi-2 is the local-DP level 1, the authors' sum is far below it
    assert hypercube_table(read_rows()).splitlines()[-1] == "| 11 | | **1 / 0.0121** |"


def test_the_muffliato_forms_reading_holds_in_its_rows():
    """MFDL's graph: the NeurIPS sum falls below the exact value at some targets, the corrected form
    (both powers) and MFDL's bound never, and the clip binds."""
    rows, level = forms_rows(read_rows()), local_dp_level()
    assert len(rows) == 99 and level == 10.0
    assert any(r["neurips"] < r["exact_once"] * (1 - TOL) for r in rows)
    for r in rows:
        for key in ("corrected", "corrected_p2", "mfdl"):
            assert r[key] >= r["exact_every"] * (1 - TOL), (key, r)
        assert r["corrected"] == pytest.approx(min(r["corrected_unclipped"], level), rel=1e-12)
        assert r["corrected_p2"] <= r["corrected"] * (1 + 1e-12)  # p = 2 is the smaller
    stored = _graph(read_rows(), EVERY)  # the run's own flags say the same
    for key in ("corrected", "corrected_p2", "mfdl"):
        assert all(s[f"{key}_below_exact"] == "False" for s in stored), key


# ------------------------------------------------------------------- recomputed with the product


def test_the_every_round_graph_recomputed():
    """MFDL's graph with a new input and noise every round, by the product's :func:`audit_case` (a
    fraction of a second): every stored row, floats to 1e-12 relative, the rest equal."""
    config = load_network_dp(SCENARIO)
    (index,) = [i for i, g in enumerate(config.graphs) if g.label == EVERY]
    case, path = config.graphs[index], f"network_dp.graphs[{index}]"
    with single_blas_thread():
        rows, _ = audit_case(case, alpha=config.alpha, delta=config.delta,
                             sensitivity=config.sensitivity, path=path, prepared=prepare_case(case, path))
    stored = _graph(read_rows(), EVERY)
    fresh = [r.to_row() for r in rows]
    assert len(stored) == 99
    assert_rows_match(stored, fresh)


@pytest.mark.slow
def test_the_command_rerun_writes_the_stored_tables(tmp_path):
    """The whole scenario again with the product's command (a few seconds): the stored tables byte
    for byte, and the same graphs, rounds and pairs in ``summary.json``."""
    out = tmp_path / NAME
    assert_run_writes_stored(SCENARIO, out, RESULTS, STORED)
    timing = ("seconds", "resumed")
    fresh, stored = _summary(out), _summary()
    assert [{k: v for k, v in g.items() if k not in timing} for g in fresh["graphs"]] == \
        [{k: v for k, v in g.items() if k not in timing} for g in stored["graphs"]]
