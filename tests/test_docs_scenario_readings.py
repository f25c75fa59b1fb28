"""The readings of the quickstart, consensus-sweep and topology-comparison scenarios printed in
docs/results.md and README.md are the stored output of the shipped scenarios.

docs/results/<name>/ holds what ``dpgossip run scenarios/<name>.toml --out docs/results/<name>
--no-plots`` writes, kept to runs.csv, summary.json, config.resolved.json and the networks/ the run
used (their SLEMs are quoted). The sentences and the table cell are rendered here from the stored rows
and compared with the pages (whitespace normalised); the default suite runs one point of each scenario
again and compares its rows with the stored ones, character for character; the slow test reruns the
three scenarios and compares the stored files byte for byte (summary.json without the library versions).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ("quickstart", "consensus-sweep", "topology-comparison")
QUOTED_STEPS = (1, 13, 50)  # the values of c the consensus-sweep sentence quotes
TOPOLOGY_LABELS = {"grid": "grid", "random_geometric": "random geometric", "ring": "ring"}
MACHINE_FIELDS = ("versions",)  # summary.json fields that name the machine's libraries, not the run


def _flat(text: str) -> str:
    return " ".join(text.split())


def _page(name: str) -> str:
    return _flat((ROOT / name).read_text(encoding="utf-8"))


def results_folder(name: str) -> Path:
    return ROOT / "docs" / "results" / name


def read_rows(folder: Path) -> list[dict[str, str]]:
    with open(folder / "runs.csv", newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def stored_rows(name: str) -> list[dict[str, str]]:
    return read_rows(results_folder(name))


def mean_of(rows: list[dict[str, str]], column: str, **where: str) -> float:
    """The mean of ``column`` over the rows whose columns equal ``where``."""
    values = [float(r[column]) for r in rows if all(r[k] == v for k, v in where.items())]
    assert values, (column, where)
    return sum(values) / len(values)


def only(rows: list[dict[str, str]], column: str) -> str:
    """The one value ``column`` takes in every row."""
    (value,) = {r[column] for r in rows}
    return value


def network_slems(name: str) -> dict[str, float]:
    """The SLEM of each network the stored run used, by topology, from its networks/*.json."""
    from dpgossip.topology import make_network
    from dpgossip.topology.spectral import spectral_summary

    slems = {}
    for path in sorted((results_folder(name) / "networks").glob("*.json")):
        topology = json.loads(path.read_text(encoding="utf-8"))["scenario_network"]["topology"]
        slems[topology] = spectral_summary(make_network(str(path)).W).slem
    return slems


def quickstart_reading(rows: list[dict[str, str]]) -> str:
    """docs/results.md, quickstart: D-DP-PM's and LDP's mean final error over the repeats."""
    return (f"D-DP-PM's error `sin(u_1, q^(t))` falls to {mean_of(rows, 'error'):.2f} after "
            f"{only(rows, 'T')} iterations; LDP at its budget label (epsilon = "
            f"{float(only(rows, 'epsilon')):g}, delta = {float(only(rows, 'delta')):g}) stays at "
            f"{mean_of(rows, 'ldp_error'):.2f}.")


def consensus_reading(rows: list[dict[str, str]]) -> str:
    """docs/results.md, consensus-sweep: the error floor at the quoted c and LDP's error."""
    at = [f"{mean_of(rows, 'error', c=str(c)):.2f} at c = {c}" for c in QUOTED_STEPS]
    return (f"so the error levels off at a floor set by c: on the {only(rows, 'agents')}-ring "
            f"{', '.join(at)}, against {mean_of(rows, 'ldp_error'):.2f} for LDP at the budget label.")


def consensus_cell(rows: list[dict[str, str]], slems: dict[str, float]) -> str:
    """README, the table of shipped scenarios: consensus-sweep's ring and its SLEM."""
    return f"on a {only(rows, 'agents')}-agent {only(rows, 'topology')} (SLEM {slems['ring']:.3f})"


def _one_digit(value: float) -> str:
    mantissa, exponent = f"{value:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def topology_reading(rows: list[dict[str, str]], slems: dict[str, float]) -> str:
    """docs/results.md, topology-comparison: the error at the largest c on each graph, with its SLEM."""
    steps = max(int(r["c"]) for r in rows)
    cells = []
    for i, (topology, label) in enumerate(TOPOLOGY_LABELS.items()):
        slem = f"SLEM {slems[topology]:.3f}" if i == 0 else f"{slems[topology]:.3f}"
        error = mean_of(rows, "error", topology=topology, c=str(steps))
        cells.append(f"{label} ({slem}) {_one_digit(error)}")
    return f"at c = {steps} the floor follows the mixing rate: " + ", ".join(cells) + "."


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_stored_results_are_the_shipped_scenario_s(name):
    """Its configuration as the scenario file resolves now, every point and repeat ok, and the
    networks stored are those summary.json lists."""
    from dpgossip.scenario import load_scenario

    scenario = load_scenario(ROOT / "scenarios" / f"{name}.toml")
    folder = results_folder(name)
    stored = json.loads((folder / "config.resolved.json").read_text(encoding="utf-8"))
    assert stored == json.loads(json.dumps(scenario.config))
    rows = stored_rows(name)
    assert len(rows) == len(scenario.points()) * scenario.config["repeats"]
    assert {r["status"] for r in rows} == {"ok"}
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    assert summary["scenario"] == name and summary["statuses"] == {"ok": len(rows)}
    networks = sorted(f for f in summary["files"] if f.startswith("networks/"))
    assert networks == sorted(f"networks/{p.name}" for p in (folder / "networks").glob("*.json"))


def test_docs_results_prints_the_stored_readings():
    page = _page("docs/results.md")
    quickstart, sweep = stored_rows("quickstart"), stored_rows("consensus-sweep")
    topology = stored_rows("topology-comparison")
    assert quickstart_reading(quickstart) in page
    assert consensus_reading(sweep) in page
    assert topology_reading(topology, network_slems("topology-comparison")) in page
    for name in SCENARIOS:  # the page names the command that wrote the numbers
        assert f"dpgossip run scenarios/{name}.toml --out docs/results/{name} --no-plots" in page


def test_readme_prints_the_stored_ring_slem():
    cell = consensus_cell(stored_rows("consensus-sweep"), network_slems("consensus-sweep"))
    readme = _page("README.md")
    assert cell in readme
    assert "dpgossip run scenarios/consensus-sweep.toml --out docs/results/consensus-sweep" in readme


def test_what_the_readings_state_holds():
    """The floor falls with c and with faster mixing, D-DP-PM ends below LDP at c = 50, and the LDP
    baseline is the same at every c (one number on the page)."""
    sweep = stored_rows("consensus-sweep")
    floors = [mean_of(sweep, "error", c=str(c)) for c in QUOTED_STEPS]
    assert floors == sorted(floors, reverse=True) and floors[-1] < mean_of(sweep, "ldp_error")
    ldp = {r["c"]: [] for r in sweep}
    for r in sweep:
        ldp[r["c"]].append(r["ldp_error"])
    assert len({tuple(v) for v in ldp.values()}) == 1
    rows, slems = stored_rows("topology-comparison"), network_slems("topology-comparison")
    by_mixing = sorted(slems, key=slems.get)
    floors = [mean_of(rows, "error", topology=t, c="50") for t in by_mixing]
    assert by_mixing == ["grid", "random_geometric", "ring"] and floors == sorted(floors)


def _run_point(name: str, overrides: dict, out: Path) -> list[dict[str, str]]:
    from dpgossip.scenario import load_scenario, run_scenario

    scenario = load_scenario(ROOT / "scenarios" / f"{name}.toml").with_overrides(overrides)
    assert len(scenario.points()) == 1
    return read_rows(run_scenario(scenario, out, quiet=True))


SAMPLED_POINTS = {  # one point of each scenario, by its axes; the stored rows it must reproduce
    "quickstart": ({}, {}),
    "consensus-sweep": ({"protocol.consensus_steps": 13}, {"c": "13"}),
    "topology-comparison": ({"network.topology": "random_geometric", "protocol.consensus_steps": 50},
                            {"topology": "random_geometric", "c": "50"}),
}


@pytest.mark.parametrize("name", SCENARIOS)
def test_a_stored_point_is_what_the_run_computes(name, tmp_path):
    """One point run alone (a point's rows do not depend on the other points: repeat k has the same
    seed at every point, and random graphs one seed for all) gives the stored rows of that point, every
    column the run writes but the point's index, character for character."""
    overrides, where = SAMPLED_POINTS[name]
    fresh = _run_point(name, overrides, tmp_path / name)
    stored = [r for r in stored_rows(name) if all(r[k] == v for k, v in where.items())]
    assert len(fresh) == len(stored) > 0
    columns = [k for k in fresh[0] if k != "point"]
    assert set(columns) <= set(stored[0])
    assert [{k: r[k] for k in columns} for r in fresh] == [{k: r[k] for k in columns} for r in stored]


def _summary_without_machine(folder: Path) -> dict:
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    return {k: v for k, v in summary.items() if k not in MACHINE_FIELDS}


@pytest.mark.slow
@pytest.mark.parametrize("name", SCENARIOS)
def test_the_stored_results_are_what_the_run_writes(name, tmp_path):
    """The whole scenario again with the command the pages name (a few seconds each): the same
    runs.csv, config.resolved.json and networks byte for byte, the same summary.json but the versions."""
    from dpgossip.cli import main

    out, folder = tmp_path / name, results_folder(name)
    assert main(["run", str(ROOT / "scenarios" / f"{name}.toml"), "--out", str(out), "--no-plots",
                 "-q"]) == 0
    stored = sorted(p.relative_to(folder) for p in folder.rglob("*") if p.is_file())
    assert stored, name
    for path in stored:
        if path.name != "summary.json":
            assert (out / path).read_bytes() == (folder / path).read_bytes(), (name, str(path))
    assert _summary_without_machine(out) == _summary_without_machine(folder)
