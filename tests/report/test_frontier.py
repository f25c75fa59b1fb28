"""privacy_utility.png: every protocol's error against its guaranteed and audited epsilon, drawn from
the files of a results folder; the table it draws equals the means of runs.csv and leakage.csv."""

from __future__ import annotations

import math

import pytest

from dpgossip.report import make_report
from dpgossip.report.frontier import frontier_table
from dpgossip.report.tables import ResultsFolder
from dpgossip.scenario import run_scenario

from ..scenario.helpers import small

pytestmark = pytest.mark.usefixtures("smallest_search")  # the pipeline, not the search: tests/conftest.py


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory):
    sc = small(
        repeats=1,
        data={"source": "synthetic", "standardize": False,
              "synthetic": {"n": 24, "d": 3, "spectrum": [1.0, 0.8, 0.6]}},
        protocol={"kind": ["ppm", "ppm-gossip", "ddppm"], "iterations": 3, "consensus_steps": 2,
                  "rank": 1},
        ppm={"epsilon": [1.0, 4.0], "sensitivity": "improved"},
        baseline={"ldp": True, "epsilon": [1.0, 4.0], "delta": 1e-5},
        privacy={"audit": True, "search": "quick", "methods": ["rdp"], "delta": 1e-5},
        sweep={"zip": [["ppm.epsilon", "baseline.epsilon"]]},
        output={"plots": True},
    )
    return run_scenario(sc, tmp_path_factory.mktemp("frontier") / "out", quiet=True)


def test_the_table_is_the_mean_of_the_stored_rows(folder):
    res = ResultsFolder.load(folder)
    table = frontier_table(res)
    series = {f.series for f in table}
    assert series == {"ppm (improved, row-replacement)", "ppm-gossip", "D-DP-PM", "LDP"}
    for f in table:
        if f.series == "LDP":
            assert f.guaranteed_epsilon in (1.0, 4.0) and math.isnan(f.audited_epsilon)
            continue
        rows = [r for r in res.runs if int(r["point"]) == f.point]
        assert f.error == pytest.approx(sum(r["subspace_distance"] for r in rows) / len(rows))
        if f.series == "D-DP-PM":
            assert math.isnan(f.guaranteed_epsilon)
            pairs = [r for r in res.table("leakage") if int(r["point"]) == f.point]
            assert f.audited_epsilon == max(float(r["epsilon"]) for r in pairs)
        else:
            assert f.guaranteed_epsilon == pytest.approx(
                sum(r["guaranteed_epsilon"] for r in rows) / len(rows))
            assert f.audited_epsilon == pytest.approx(
                sum(r["audited_epsilon"] for r in rows) / len(rows))
            if f.series == "ppm-gossip":  # the single agents, which Nicolas et al.'s claim does not cover
                assert f.audited_beyond == pytest.approx(
                    sum(r["audited_epsilon_beyond"] for r in rows) / len(rows))
            else:
                assert math.isnan(f.audited_beyond)
    ppm = sorted((f for f in table if f.series.startswith("ppm (")), key=lambda f: f.point)
    assert ppm[0].guaranteed_epsilon <= 1.0 and ppm[1].guaranteed_epsilon <= 4.0
    assert all(f.audited_epsilon <= f.guaranteed_epsilon for f in ppm)


def test_the_report_draws_the_plot(folder):
    names = {p.name for p in make_report(folder)}
    assert "privacy_utility.png" in names
    assert (folder / "plots" / "privacy_utility.png").stat().st_size > 10_000


def test_each_dataset_has_its_own_points_ldp_and_row_of_panels(tmp_path):
    """A sweep over data.source: every point and every LDP budget is labelled with its dataset (the
    LDP means are per dataset: the pooled rows of one dataset, checked against runs.csv)."""
    sc = small(
        repeats=1, data={"source": ["wine", "diabetes"]},
        protocol={"kind": ["ppm"], "iterations": 2, "consensus_steps": 1, "rank": 1},
        ppm={"epsilon": [1.0, 4.0], "sensitivity": "improved", "audit": False},
        baseline={"ldp": True, "epsilon": [1.0, 4.0], "delta": 1e-5},
        sweep={"zip": [["ppm.epsilon", "baseline.epsilon"]]}, output={"plots": True},
    )
    folder = run_scenario(sc, tmp_path / "out", quiet=True)
    res = ResultsFolder.load(folder)
    table = frontier_table(res)
    assert {(f.dataset, f.series) for f in table} == {
        (d, s) for d in ("wine", "diabetes") for s in ("ppm (improved, row-replacement)", "LDP")}
    for f in table:
        rows = [r for r in res.runs if r["dataset"] == f.dataset and (
            int(r["point"]) == f.point if f.point >= 0 else float(r["epsilon"]) == f.guaranteed_epsilon)]
        assert len(rows) == 1
        assert f.error == pytest.approx(rows[0]["ldp_error" if f.series == "LDP" else "subspace_distance"])
    assert "privacy_utility.png" in {p.name for p in make_report(folder)}
    assert (folder / "plots" / "privacy_utility.png").stat().st_size > 10_000


def test_a_point_whose_worst_pair_stopped_at_the_cap_is_an_at_least_value():
    """The worst pair of point 0 stopped at the epsilon cap (1000): its audited epsilon is an "at
    least" value; point 1's worst pair is an ordinary lower estimate even though another of its pairs
    was capped below it (impossible in practice, but the flag follows the worst pair)."""
    from types import SimpleNamespace

    from dpgossip.report.frontier import _ddppm_audit

    rows = [{"point": 0, "epsilon": 12.0, "delta": 1e-5},
            {"point": 0, "epsilon": 1000.0, "delta": 1e-5, "stopped_at_cap": True},
            {"point": 1, "epsilon": 5.0, "delta": 1e-5, "stopped_at_cap": "True"},
            {"point": 1, "epsilon": 7.5, "delta": 1e-5}]
    worst, delta, capped, conversion = _ddppm_audit(SimpleNamespace(table=lambda name: rows))
    assert worst == {0: 1000.0, 1: 7.5} and delta == 1e-5
    assert capped == {0} and conversion == ""  # no method column: the exact value
    rdp = [{**r, "method": "rdp"} for r in rows]  # an RDP audit: the legend says it is the conversion
    assert _ddppm_audit(SimpleNamespace(table=lambda name: rdp))[3] == "rdp"
