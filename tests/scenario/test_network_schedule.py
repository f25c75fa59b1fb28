"""``[network] schedule``: the gossip kinds run under a sampled schedule of rounds from a scenario; a bad
table, or a kind that cannot follow one, stops the load with a clear error."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np
import pytest

from dpgossip.cli import main
from dpgossip.protocols.interface import exact_subspace
from dpgossip.protocols.metrics import subspace_distance
from dpgossip.protocols.ppm.gossip import run_ppm_gossip
from dpgossip.protocols.registry import kind
from dpgossip.scenario import run_scenario
from dpgossip.scenario.point import PointSpec
from dpgossip.scenario.problem import build_structure, resolve_problem
from dpgossip.scenario.protocol_point import point_inputs
from dpgossip.scenario.runner import repeat_seed
from tests.scenario.helpers import scenario_error, small, toml_scenario

PPM = '[ppm]\nnoise_multiplier = 1.5\nblock_rank = 2\naudit = false'


def _rows(folder: Path) -> list[dict[str, str]]:
    with open(folder / "runs.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def _scenario(schedule: dict | None, backend: str = "matrix"):
    network = {"topology": "ring", "agents": 4, **({"schedule": schedule} if schedule else {})}
    return small(protocol={"kind": "ppm-gossip", "iterations": 2, "consensus_steps": 3, "rank": 1},
                 ppm={"noise_multiplier": 1.5, "block_rank": 2, "audit": False}, repeats=1,
                 network=network, backend=backend)


def test_the_point_runs_the_sampled_schedule(tmp_path: Path) -> None:
    sc = _scenario({"sampler": "random-matchings", "seed": 3})
    point = next(iter(sc.points()))
    problem = resolve_problem(point.config, build_structure(point.config, sc.base))
    inputs = point_inputs(PointSpec.from_config(point.config), problem.data, problem.network)
    s = inputs.schedule
    assert s is not None and s.label == "random-matchings" and s.steps == 2 * 3
    # the scenario's run is the library's run on that schedule (an independent call of the backend)
    params = kind("ppm-gossip").build(inputs).protocol.params
    want = run_ppm_gossip(problem.data, problem.network, params, repeat_seed(point.config["seed"], 0),
                          schedule=s)
    row = _rows(run_scenario(sc, tmp_path / "m", quiet=True))[0]
    assert row["schedule_sampler"] == "random-matchings" and row["schedule_seed"] == "3"
    fixed = _rows(run_scenario(_scenario(None), tmp_path / "f", quiet=True))[0]
    assert "schedule_sampler" not in fixed
    assert float(row["error"]) != float(fixed["error"])                  # the schedule mattered
    truth = exact_subspace(problem.data.X, 1, "right")
    assert float(row["error"]) == pytest.approx(
        subspace_distance(truth, want.iterates[-1, 0, :, :1]), abs=1e-12)


def test_a_fixed_schedule_gives_the_rows_of_no_schedule(tmp_path: Path) -> None:
    fixed = _rows(run_scenario(_scenario({"sampler": "fixed"}), tmp_path / "a", quiet=True))[0]
    plain = _rows(run_scenario(_scenario(None), tmp_path / "b", quiet=True))[0]
    assert fixed["error"] == plain["error"] and fixed["guaranteed_epsilon"] == plain["guaranteed_epsilon"]


def test_engine_rows_equal_matrix_rows_under_a_schedule(tmp_path: Path) -> None:
    table = {"sampler": "random-matchings", "seed": 1}
    m = _rows(run_scenario(_scenario(table), tmp_path / "m", quiet=True))[0]
    e = _rows(run_scenario(_scenario(table, "engine"), tmp_path / "e", quiet=True))[0]
    assert e["engine_status"] == "completed"
    assert float(e["error"]) == pytest.approx(float(m["error"]), abs=1e-10)


@pytest.mark.parametrize(("table", "message"), [
    ('{ sampler = "random-matching" }',
     r"network\.schedule\.sampler must be one of .* \(did you mean 'random-matchings'\?\)$"),
    ('{ sampler = "random-matchings", sead = 2 }',
     r"network\.schedule\.sead: unknown key \(did you mean 'seed'\?\)"),
    ('{ sampler = "random-regular", seed = 1 }', r"network\.schedule\.degree: sampler 'random-regular' "
                                                 r"needs the degree"),
    ('"random-matchings"', r"network\.schedule must be a table"),
])
def test_a_bad_schedule_table_names_the_key(tmp_path: Path, table: str, message: str) -> None:
    err = scenario_error(tmp_path, toml_scenario(
        f'[network]\ntopology = "ring"\nagents = 4\nschedule = {table}',
        '[protocol]\nkind = "ppm-gossip"\niterations = 2\nconsensus_steps = 2', PPM))
    assert re.search(message, str(err)), str(err)


@pytest.mark.parametrize(("kind", "why"), [
    ("ddppm", r"its pair audit searches the worst neighbouring dataset under the release model W\^c"),
    ("ppm", r"it runs no gossip rounds \(a star to a server\)"),
])
def test_a_kind_that_cannot_follow_a_schedule_refuses_and_says_why(tmp_path: Path, kind: str,
                                                                  why: str) -> None:
    extra = [PPM] if kind == "ppm" else []
    err = scenario_error(tmp_path, toml_scenario(
        '[network]\ntopology = "ring"\nagents = 4\nschedule = { sampler = "random-matchings" }',
        f'[protocol]\nkind = "{kind}"\niterations = 2\nconsensus_steps = 2', *extra))
    assert re.search(rf"network\.schedule: protocol\.kind = '{kind}' does not run under a schedule: "
                     rf"{why}.*; kinds that do: capepca-gossip, dpals-gossip, ppm-gossip$",
                     str(err)), str(err)


def test_the_engine_refuses_a_schedule_off_the_network_edges(tmp_path: Path) -> None:
    sc = _scenario({"sampler": "one-peer-exponential"}, "engine")
    with pytest.raises(Exception, match=r"network\.schedule: its rounds \(one-peer-exponential\) pair "
                                        r"agents 0 and 2, which are not neighbours"):
        run_scenario(sc, tmp_path / "e", quiet=True)
    assert np.isfinite(float(_rows(run_scenario(_scenario({"sampler": "one-peer-exponential"}),
                                                tmp_path / "m", quiet=True))[0]["error"]))


def test_the_command_line_exits_2_on_a_bad_schedule_key(tmp_path: Path, capsys) -> None:
    path = tmp_path / "s.toml"
    path.write_text(toml_scenario(
        '[network]\ntopology = "ring"\nagents = 4\nschedule = { sampler = "random-matchings", sead = 2 }',
        '[protocol]\nkind = "ppm-gossip"\niterations = 2\nconsensus_steps = 2', PPM))
    assert main(["run", str(path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "network.schedule.sead: unknown key (did you mean 'seed'?)" in err and "Traceback" not in err
    assert not (tmp_path / "o" / "runs.csv").exists()


def test_a_list_of_schedules_is_a_sweep_axis(tmp_path: Path) -> None:
    network = {"topology": "ring", "agents": 4,
               "schedule": [{"sampler": "fixed"}, {"sampler": "random-matchings", "seed": 2}]}
    sc = small(protocol={"kind": "capepca-gossip", "iterations": 1, "consensus_steps": 3, "rank": 1},
               cape={"noise_multiplier": 2.0, "audit": False}, repeats=1, network=network)
    rows = _rows(run_scenario(sc, tmp_path / "o", quiet=True))
    assert [r["schedule_sampler"] for r in rows] == ["fixed", "random-matchings"]
    assert [r["schedule_seed"] for r in rows] == ["", "2"] and rows[0]["error"] != rows[1]["error"]
    err = scenario_error(tmp_path, toml_scenario(
        '[network]\ntopology = "ring"\nagents = 4\nschedule = [{ sampler = "fixed" }, { sampler = "x" }]',
        '[protocol]\nkind = "ppm-gossip"\niterations = 2\nconsensus_steps = 2', PPM))
    assert re.search(r"network\.schedule\[1\]\.sampler must be one of 'fixed', ", str(err)), str(err)


def _ring_w(self_weight: float) -> np.ndarray:
    side = (1 - self_weight) / 2
    return (self_weight * np.eye(4) + side * np.roll(np.eye(4), 1, axis=1)
            + side * np.roll(np.eye(4), -1, axis=1))


def test_editing_a_files_schedules_matrix_recomputes_the_point(tmp_path: Path) -> None:
    """A point reads the matrices of its ``files`` schedule: they enter its key as the data file does,
    so that a rerun into the same folder after an edit computes the point again."""
    matrix = tmp_path / "w.txt"
    np.savetxt(matrix, _ring_w(0.5))
    sc = _scenario({"sampler": "files", "files": [str(matrix)]})
    first = _rows(run_scenario(sc, tmp_path / "out", quiet=True))[0]["error"]
    np.savetxt(matrix, np.full((4, 4), 0.25))
    second = _rows(run_scenario(sc, tmp_path / "out", quiet=True))[0]["error"]
    fresh = _rows(run_scenario(sc, tmp_path / "fresh", quiet=True))[0]["error"]
    assert second == fresh != first
