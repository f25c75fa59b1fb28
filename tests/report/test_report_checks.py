"""``dpgossip report`` checks what it reads (a damaged file is an error naming it, exit 2) and redraws
the folders of ``dpgossip audit`` and of a network-DP scenario."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from dpgossip.cli import main
from dpgossip.scenario import run_scenario
from tests.scenario.helpers import small, tiny_audit_toml

pytest.importorskip("matplotlib")
pytestmark = pytest.mark.usefixtures("smallest_search")  # the pipeline, not the search: tests/conftest.py


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A finished run folder: 2 points (c = 1, 2), 2 repeats, T = 6."""
    out = tmp_path_factory.mktemp("run") / "r"
    run_scenario(small(repeats=2, protocol={"consensus_steps": [1, 2]}), out, quiet=True)
    return out


@pytest.fixture()
def folder(finished, tmp_path) -> Path:
    copy = tmp_path / "r"
    shutil.copytree(finished, copy)
    return copy


def report(path: Path, capsys) -> tuple[int, str]:
    code = main(["report", str(path)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def test_a_whole_folder_reports(folder, capsys):
    assert report(folder, capsys) == (0, "")


@pytest.mark.parametrize("text, what", [('{"scenario": ', "not valid JSON (Expecting value at line 1"),
                                        ("[1, 2]", "expected a JSON table, got list"),
                                        ('{"scenario": "small"}', "the key 'axes' is missing")])
def test_a_damaged_summary_is_named(folder, capsys, text, what):
    (folder / "summary.json").write_text(text)
    code, err = report(folder, capsys)
    assert code == 2 and f"{folder / 'summary.json'}: {what}" in err


def test_iterations_cut_mid_row_is_named(folder, capsys):
    path = folder / "iterations.csv"
    text = path.read_text()
    path.write_text(text[: len(text) - 20])  # the last row loses its end
    code, err = report(folder, capsys)
    assert code == 2 and f"{path}: the last line has no end" in err


def test_iterations_missing_rows_of_a_repeat_is_named(folder, capsys):
    path = folder / "iterations.csv"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-3]))  # cut at a row boundary: repeat 1 of point 1 is short
    code, err = report(folder, capsys)
    assert code == 2 and "iterations.csv: point 1, component 1 has unequal or missing repeats" in err
    assert "repeat 0: 7, repeat 1: 4" in err


def test_a_row_with_a_missing_field_is_named(folder, capsys):
    path = folder / "runs.csv"
    lines = path.read_text().splitlines(keepends=True)
    lines[2] = lines[2].split(",", 1)[1]  # one field less on line 3
    path.write_text("".join(lines))
    code, err = report(folder, capsys)
    assert code == 2 and f"{path}: line 3 has " in err and "the header has" in err


def test_runs_missing_a_repeat_is_named(folder, capsys):
    path = folder / "runs.csv"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-1]))
    code, err = report(folder, capsys)
    assert code == 2 and "runs.csv: point 1 has the repeats [0], expected 0..1" in err


TINY_AUDIT = tiny_audit_toml(consensus_steps="[1, 2]")


def test_report_redraws_an_audit_folder_in_plots(tmp_path, capsys):
    scenario = tmp_path / "s.toml"
    scenario.write_text(TINY_AUDIT)
    out = tmp_path / "a"
    assert main(["audit", str(scenario), "--out", str(out), "-q", "--no-plots"]) == 0
    (out / "leakage_vs_hops.png").write_bytes(b"old layout")  # an older version drew here
    capsys.readouterr()
    code = main(["report", str(out)])
    printed = capsys.readouterr().out
    assert code == 0 and "3 plots written to" in printed
    names = sorted(p.name for p in (out / "plots").glob("*.png"))
    assert names == ["leakage_heatmap_p0.png", "leakage_heatmap_p1.png", "leakage_vs_hops.png"]
    assert not list(out.glob("*.png"))
    (out / "worst.json").write_text("{")
    code, err = report(out, capsys)
    assert code == 2 and "worst.json: not valid JSON" in err


def _network_dp_folder(path: Path, columns: dict[str, str]) -> Path:
    path.mkdir()
    (path / "summary.json").write_text(json.dumps({"scenario": "n", "kind": "network_dp",
                                                   "alpha": 2.0}))
    rows = [{**columns, "distance": str(d), "rdp": str(0.5 / d)} for d in (1, 2, 3)]
    header = list(rows[0])
    (path / "leakage.csv").write_text(",".join(header) + "\n" + "".join(
        ",".join(r[h] for h in header) + "\n" for r in rows))
    return path


BOUNDS = {"topology": "ring", "muffliato_bound": "1.0", "muffliato_ratio": "0.5",
          "muffliato_below_exact": "False", "mfdl_bound": "", "mfdl_ratio": "",
          "mfdl_below_exact": ""}


def test_report_redraws_a_network_dp_folder(tmp_path, capsys):
    folder = _network_dp_folder(tmp_path / "n", BOUNDS)
    assert main(["report", str(folder)]) == 0
    assert (folder / "plots" / "network-dp.png").stat().st_size > 1000
    broken = _network_dp_folder(tmp_path / "m", {k: v for k, v in BOUNDS.items()
                                                 if k != "mfdl_bound"})
    code, err = report(broken, capsys)
    assert code == 2 and "leakage.csv: the column 'mfdl_bound' is missing" in err
    assert "dpgossip run first" not in err


def _png_title(path: Path) -> str:
    from PIL import Image

    with Image.open(path) as image:
        return image.text.get("Title", "")


def test_a_nan_of_an_ok_run_is_counted_out_of_the_title(folder, capsys):
    """A NaN error of one repeat is left out of its mean: the title says how many repeats contribute
    instead of "over 2 repeats"."""
    for name, column in (("iterations.csv", "error"), ("runs.csv", "error")):
        path = folder / name
        lines = path.read_text().splitlines(keepends=True)
        header = lines[0].rstrip("\n").split(",")
        fields = lines[-1].rstrip("\n").split(",")
        fields[header.index(column)] = "nan"  # the last row: point 1, repeat 1
        path.write_text("".join(lines[:-1]) + ",".join(fields) + "\n")
    assert report(folder, capsys) == (0, "")
    for png in ("error_vs_iteration.png", "error_vs_c.png"):
        title = _png_title(folder / "plots" / png)
        assert "over 1 to 2 of 2 repeats; NaN or infinite values left out" in title, (png, title)


def test_a_whole_folders_title_says_its_repeats(folder, capsys):
    assert report(folder, capsys) == (0, "")
    assert "over 2 repeats)" in _png_title(folder / "plots" / "error_vs_iteration.png")


def test_a_file_in_the_place_of_plots_is_named(folder, capsys):
    # before: "File exists" and exit 1
    (folder / "plots").write_text("not a folder")
    code, err = report(folder, capsys)
    assert code == 2 and err.strip() == (
        f"dpgossip: error: {folder / 'plots'}: a file is in the place of the plots folder; the report "
        "draws its plots into a folder of that name: move or rename the file")
    assert (folder / "plots").read_text() == "not a folder"


def test_a_folder_holding_a_run_and_an_audit_says_the_audit_is_not_drawn(tmp_path, capsys):
    scenario = tmp_path / "s.toml"
    scenario.write_text(TINY_AUDIT.replace("[privacy]", "[output]\nplots = false\n[privacy]"))
    out = tmp_path / "both"
    assert main(["run", str(scenario), "--out", str(out), "-q"]) == 0
    assert main(["audit", str(scenario), "--out", str(out), "-q", "--no-plots"]) == 0
    assert (out / "summary.json").is_file() and (out / "worst.json").is_file()
    capsys.readouterr()
    code, err = report(out, capsys)
    assert code == 0
    assert err.strip() == (f"dpgossip: note: {out} also holds the results of dpgossip audit "
                           "(worst.json, pairs.csv), which this report of the run does not draw; to "
                           "draw them, audit into another folder (dpgossip audit SCENARIO --out OTHER) "
                           "and report that one")
