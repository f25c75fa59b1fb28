"""Reliability through the command line: bad inputs, environment problems, sizes that do not
fit, names that escape results/, misleading output. Each case checks the exit code and the one line on
stderr."""

import csv
import json
import os
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest

from dpgossip.cli import main

pytestmark = pytest.mark.usefixtures("smallest_search")  # the pipeline, not the search: tests/conftest.py

GOOD = """
name = "t"
seed = 3
[data]
source = "wine"
[network]
topology = "ring"
agents = 4
[protocol]
iterations = 3
consensus_steps = 2
[output]
plots = false
"""

TINY_PRIVATE = """
name = "tiny-private"
seed = 1
[data]
source = "synthetic"
standardize = false
synthetic = { n = 16, d = 2, spectrum = [1.0, 0.8] }
[network]
topology = "ring"
agents = 4
[protocol]
iterations = 2
consensus_steps = 1
noise = { schedule = "constant", scale = 1.0 }
[privacy]
search = "quick"  # cheap: these tests are about the CLI; one runs the default search
methods = ["rdp"]
epsilon = [50.0]
"""


def write(folder: Path, text: str, name: str = "s.toml") -> Path:
    p = folder / name
    p.write_text(text)
    return p


def error_line(capsys, argv, code=2) -> str:
    """Run the command; check its exit code and that stderr is one error line; return that line."""
    assert main([str(a) for a in argv]) == code
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("dpgossip: error: "), lines[0]
    return lines[0].removeprefix("dpgossip: error: ")


def files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*")}


# --- 3. environment problems ---------------------------------------------------------------------


def test_binary_scenario_file(tmp_path, capsys):
    p = tmp_path / "bin.toml"
    p.write_bytes(b"\xff\xfe\x00garbage\x81")
    line = error_line(capsys, ["run", p])
    assert line.startswith(f"{p}: not a UTF-8 text file (invalid start byte at byte 0)")


def test_scenario_path_that_is_a_directory(tmp_path, capsys):
    (tmp_path / "out").mkdir()
    line = error_line(capsys, ["run", tmp_path / "out"])
    assert line == f"scenario file {str(tmp_path / 'out')!r} is a directory; give the path of a .toml " \
                   "scenario file"


def test_out_is_a_file_or_under_a_file(tmp_path, capsys):
    s = write(tmp_path, GOOD)
    (tmp_path / "afile").write_text("x")
    line = error_line(capsys, ["run", s, "--out", tmp_path / "afile"])
    assert line.startswith(f"--out {str(tmp_path / 'afile')!r} is a file, not a folder")
    line = error_line(capsys, ["run", s, "--out", tmp_path / "afile" / "sub"])
    assert line.startswith(f"--out {str(tmp_path / 'afile' / 'sub')!r}: {str(tmp_path / 'afile')!r} "
                           "is a file, so no folder can be created under it")


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write into a read-only folder")
def test_out_read_only(tmp_path, capsys):
    s = write(tmp_path, GOOD)
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        line = error_line(capsys, ["run", s, "--out", ro / "res"])
    finally:
        ro.chmod(0o755)
    assert line.startswith(f"--out {str(ro / 'res')!r}: cannot write in {str(ro)!r}, where it would "
                           "be created (Permission denied)")


def _immutable(path: Path, on: bool) -> bool:
    if shutil.which("chattr") is None:
        return False
    return subprocess.run(["chattr", "+i" if on else "-i", str(path)],
                          capture_output=True).returncode == 0


def test_out_immutable(tmp_path, capsys):
    s = write(tmp_path, GOOD)
    frozen = tmp_path / "frozen"
    frozen.mkdir()
    if not _immutable(frozen, True):
        pytest.skip("chattr +i is not available here")
    try:
        line = error_line(capsys, ["run", s, "--out", frozen])
    finally:
        _immutable(frozen, False)
    assert line == (f"--out {str(frozen)!r}: cannot write in it (Operation not permitted); choose a "
                    "writable folder")


def test_immutable_result_file_is_one_line_exit_1(tmp_path, capsys):
    from dpgossip.scenario.staging import STAGING_MARK, staging_path

    s = write(tmp_path, GOOD)
    out = tmp_path / "o"
    assert main(["run", str(s), "--out", str(out), "-q"]) == 0
    capsys.readouterr()
    before = {f.name: f.read_bytes() for f in out.iterdir() if f.is_file()}
    # the staging folder an interrupted run left, holding a file the run must remove but cannot
    stage = staging_path(out)
    stage.mkdir()
    (stage / STAGING_MARK).write_text("")
    (stage / "runs.csv").write_text("stale")
    if not _immutable(stage / "runs.csv", True):
        shutil.rmtree(stage)
        pytest.skip("chattr +i is not available here")
    try:
        line = error_line(capsys, ["run", s, "--out", out, "-q"], code=1)
    finally:
        _immutable(stage / "runs.csv", False)
    assert line == f"{str(stage / 'runs.csv')!r}: Operation not permitted"
    assert {f.name: f.read_bytes() for f in out.iterdir() if f.is_file()} == before


def test_bogus_scheduler_fails_fast(tmp_path, capsys):
    s = write(tmp_path, GOOD)
    t0 = time.perf_counter()
    line = error_line(capsys, ["run", s, "--out", tmp_path / "o", "--scheduler", "bogus"])
    assert time.perf_counter() - t0 < 5
    assert line.startswith("--scheduler 'bogus' is not a Dask scheduler address: expected "
                           "[protocol://]host:port; e.g. tcp://127.0.0.1:8786")
    line = error_line(capsys, ["run", s, "--scheduler", "http://h:8786"])
    assert line.startswith("--scheduler 'http://h:8786' is not a Dask scheduler address: unknown "
                           "protocol 'http'")
    assert not (tmp_path / "o").exists()


def test_negative_scheduler_timeout(tmp_path, capsys):
    s = write(tmp_path, GOOD)
    for extra in ([], ["--scheduler", "tcp://127.0.0.1:9"]):
        line = error_line(capsys, ["run", s, "--scheduler-timeout", "-1", *extra])
        assert line == "--scheduler-timeout must be a number of seconds > 0, got -1.0"


# --- 4. sizes, checked before anything is allocated -------------------------------------------------


@pytest.fixture
def one_gib(monkeypatch):
    monkeypatch.setenv("DPGOSSIP_MEMORY_LIMIT", "1GiB")


def test_a_billion_agents_is_refused_at_once(tmp_path, capsys):
    s = write(tmp_path, GOOD.replace("agents = 4", "agents = 1000000000"))
    t0 = time.perf_counter()
    line = error_line(capsys, ["run", s, "--out", tmp_path / "o"])
    assert time.perf_counter() - t0 < 5
    assert line == ("data has 178 rows but there are 1000000000 agents; every agent needs at least "
                    "one row (use fewer agents or more data)")


def test_network_too_large(tmp_path, capsys, one_gib):
    # W is sparse (O(|E|) memory), so the graph itself is what a huge ring cannot hold
    line = error_line(capsys, ["topology", "ring", "--agents", "10000000"])
    assert line == ("--agents 10000000 gives a graph of 10000000 nodes and about 10000000 edges "
                    "(13 GiB), more than the memory limit DPGOSSIP_MEMORY_LIMIT (1 GiB); use fewer "
                    "agents")
    text = GOOD.replace('source = "wine"', 'source = "synthetic"\nstandardize = false\n'
                        "synthetic = { n = 20000000, d = 2, spectrum = [1.0] }")
    s = write(tmp_path, text.replace("agents = 4", "agents = 10000000"))
    line = error_line(capsys, ["run", s, "--out", tmp_path / "o"])
    assert line.startswith("network.agents = 10000000 gives a graph of 10000000 nodes and about "
                           "10000000 edges (13 GiB")


def test_machine_memory_is_the_default_limit(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("DPGOSSIP_MEMORY_LIMIT", raising=False)
    line = error_line(capsys, ["topology", "ring", "--agents", "3000000000"])
    assert "gives a graph of 3000000000 nodes" in line
    assert "more than this machine's available memory (" in line


@pytest.mark.parametrize(
    "old, new, expected",
    [
        ("iterations = 3", "iterations = 100000000",
         "protocol.iterations = 100000000 keeps every iterate and its noise: 2 x 1 x 100000001 x 178 "
         "numbers (265 GiB; about"),
        ("consensus_steps = 2", "consensus_steps = 1000000000",
         "protocol.consensus_steps = 1000000000 keeps every gossip round: 1000000001 x 4 x 13 numbers "
         "(387 GiB)"),
        ('source = "wine"', 'source = "synthetic"\nsynthetic = { n = 100000000, d = 100, spectrum = '
         '[1.0] }', "the data, 100000000 x 100, and its copies (522 GiB)"),
    ],
)
def test_huge_iterations_rounds_rows(tmp_path, capsys, one_gib, old, new, expected):
    s = write(tmp_path, GOOD.replace(old, new))
    t0 = time.perf_counter()
    line = error_line(capsys, ["run", s, "--out", tmp_path / "o"])
    assert time.perf_counter() - t0 < 5
    assert line.startswith(expected) and "more than the memory limit DPGOSSIP_MEMORY_LIMIT (1 GiB)" in line
    assert not (tmp_path / "o").exists()


def test_huge_sweep_is_refused_before_expansion(tmp_path, capsys, one_gib):
    hundred = ", ".join(str(k) for k in range(1, 101))
    text = GOOD.replace("iterations = 3", f"iterations = [{hundred}]").replace(
        "consensus_steps = 2", f"consensus_steps = [{hundred}]\nalpha = [{hundred}]")
    s = write(tmp_path, text)
    t0 = time.perf_counter()
    line = error_line(capsys, ["run", s, "--out", tmp_path / "o"])
    assert time.perf_counter() - t0 < 5
    assert line.startswith("the sweep has 1000000 points (protocol.iterations (100) x "
                           "protocol.consensus_steps (100) x protocol.alpha (100)), each holding at "
                           "least 3 rows of results (13.4 GiB), more than the memory limit")


def test_audit_size_is_checked(tmp_path, capsys, one_gib):
    s = write(tmp_path, TINY_PRIVATE.replace("iterations = 2", "iterations = 100000"))
    line = error_line(capsys, ["audit", s, "--out", tmp_path / "a"])
    assert line.startswith("the privacy audit with protocol.iterations = 100000 and 16 rows needs a "
                           "dense 1600016 x 200016 view factor at least")


@pytest.mark.parametrize(
    "setting, expected",
    [
        ('noise = { schedule = "constant", scale = inf }',
         "protocol.noise.scale must be a finite number, got inf; inf and nan are not allowed"),
        ("alpha = nan", "protocol.alpha must be a finite number, got nan; inf and nan are not allowed"),
        ("sigma_q = [1.0, -inf]",
         "protocol.sigma_q[1] must be a finite number, got -inf; inf and nan are not allowed"),
    ],
)
def test_non_finite_numbers_are_rejected(tmp_path, capsys, setting, expected):
    s = write(tmp_path, GOOD.replace("[protocol]", f"[protocol]\n{setting}"))
    assert error_line(capsys, ["run", s, "--out", tmp_path / "o"]) == f"{s}: {expected}"


# --- 5. names and output folders -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["../escaped", "/abs/path", ".", "..", "a/b", "a\\\\b", ""])
def test_name_must_be_a_plain_folder_name(tmp_path, capsys, monkeypatch, name):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    s = write(work, GOOD.replace('name = "t"', f'name = "{name}"'))
    before = files_under(tmp_path)
    line = error_line(capsys, ["run", s])
    assert line.startswith(f"{s}: name must be a plain folder name (letters, digits, '-', '_' and "
                           "'.', at most 200 characters, not '.' or '..'; no '/' or other "
                           "separators), got ")
    assert files_under(tmp_path) == before


@pytest.mark.parametrize("shipped", ["network-dp-gossip", "dynamic-gossip-modes"])
@pytest.mark.parametrize("name", ["../escape", "with space", "a/b", ".."])
def test_a_section_scenarios_name_must_be_a_plain_folder_name(tmp_path, capsys, monkeypatch,
                                                               shipped, name):
    """Network-DP and dynamic-gossip scenarios check ``name`` as the others do: before, ``../escape``
    wrote outside results/ and a name with a space was accepted."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    text = (Path(__file__).resolve().parents[1] / "scenarios" / f"{shipped}.toml").read_text()
    s = write(work, text.replace(f'name = "{shipped}"', f'name = "{name}"'))
    before = files_under(tmp_path)
    line = error_line(capsys, ["run", s, "-q"])
    assert line == (f"{s}: name must be a plain folder name (letters, digits, '-', '_' and '.', at "
                    "most 200 characters, not '.' or '..'; no '/' or other separators), got "
                    f"{name!r}; results go to results/<name> (use --out or [output] dir for another "
                    "folder)")
    assert files_under(tmp_path) == before


def test_plain_names_with_dots_run(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    s = write(tmp_path, GOOD.replace('name = "t"', 'name = "v1.2_run-A"'))
    assert main(["run", str(s), "-q"]) == 0
    assert (tmp_path / "results" / "v1.2_run-A" / "runs.csv").is_file()


def test_out_holding_another_scenarios_results(tmp_path, capsys):
    out = tmp_path / "shared"
    first = write(tmp_path, GOOD, "first.toml")
    assert main(["run", str(first), "--out", str(out), "-q"]) == 0
    old = (out / "runs.csv").read_bytes()
    second = write(tmp_path, GOOD.replace('name = "t"', 'name = "other"').replace(
        "consensus_steps = 2", "consensus_steps = 1"), "second.toml")
    capsys.readouterr()
    line = error_line(capsys, ["run", second, "--out", out, "-q"])
    assert line == (f"--out {str(out)!r} holds the results of scenario 't', not 'other'; writing "
                    "there would replace them; choose another folder, or add --force to replace them")
    assert (out / "runs.csv").read_bytes() == old
    line = error_line(capsys, ["audit", second, "--out", out, "--no-plots"])
    assert line.startswith(f"--out {str(out)!r} holds the results of scenario 't', not 'other'")
    # the same scenario may rerun there; --force replaces another's
    assert main(["run", str(first), "--out", str(out), "-q"]) == 0
    assert main(["run", str(second), "--out", str(out), "-q", "--force"]) == 0
    assert json.loads((out / "config.resolved.json").read_text())["name"] == "other"
    assert {r["c"] for r in csv.DictReader(open(out / "runs.csv"))} == {"1"}


def test_result_files_are_readable_by_others(tmp_path, capsys):
    old = os.umask(0o022)
    try:
        assert main(["run", str(write(tmp_path, GOOD)), "--out", str(tmp_path / "o"), "-q"]) == 0
    finally:
        os.umask(old)
    for name in ("runs.csv", "iterations.csv", "summary.json", "config.resolved.json", "timing.json"):
        assert stat.S_IMODE((tmp_path / "o" / name).stat().st_mode) == 0o644, name
    points = list((tmp_path / "o" / "points").iterdir())
    assert points and all(stat.S_IMODE(p.stat().st_mode) == 0o644 for p in points)


# --- 7. misleading output --------------------------------------------------------------------------


def _png_text(path: Path) -> dict[str, str]:
    """The tEXt fields of a PNG file."""
    import struct
    import zlib

    data, out, pos = path.read_bytes(), {}, 8
    while pos < len(data):
        (length,), kind = struct.unpack(">I", data[pos:pos + 4]), data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        if kind == b"tEXt":
            key, _, value = body.partition(b"\0")
            out[key.decode("latin-1")] = value.decode("latin-1")
        elif kind == b"zTXt":
            key, _, rest = body.partition(b"\0")
            out[key.decode("latin-1")] = zlib.decompress(rest[1:]).decode("latin-1")
        elif kind == b"iTXt":
            key, _, rest = body.partition(b"\0")
            value = rest[2:].split(b"\0", 2)[2]
            out[key.decode("latin-1")] = value.decode("utf-8")
        pos += 12 + length
    return out


def _has_colour(path: Path, hex_colour: str) -> bool:
    import numpy as np
    from matplotlib.image import imread

    img = (imread(str(path))[..., :3] * 255).round().astype(int)
    rgb = [int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)]
    return bool((np.abs(img - rgb).sum(axis=-1) <= 3).any())


def test_infinite_epsilon_is_strict_json_and_drawn_as_inf(tmp_path, capsys):
    from dpgossip.report.leakage import INF_COLOUR
    from dpgossip.scenario.store import read_json

    s = write(tmp_path, TINY_PRIVATE.replace("scale = 1.0", "scale = 0.0"))  # no noise: no privacy
    out = tmp_path / "a"
    assert main(["audit", str(s), "--out", str(out)]) == 0
    text = (out / "worst.json").read_text()

    def refuse(constant):
        raise AssertionError(f"not JSON: {constant}")

    record = json.loads(text, parse_constant=refuse)
    assert record["points"][0]["epsilon"] == {"rdp": "inf"}
    assert read_json(out / "worst.json")["points"][0]["epsilon"]["rdp"] == float("inf")
    heat, hops = out / "plots" / "leakage_heatmap.png", out / "plots" / "leakage_vs_hops.png"
    assert _has_colour(heat, INF_COLOUR) and _has_colour(hops, INF_COLOUR)
    assert _png_text(heat)["Title"] == "epsilon (rdp) at delta 1e-05, view observer"
    assert _png_text(hops)["Description"].endswith(r"y: $\varepsilon$ (rdp) at $\delta$ = 1e-05")


def test_finite_epsilon_is_not_drawn_in_the_inf_colour(tmp_path, capsys):
    from dpgossip.report.leakage import INF_COLOUR

    out = tmp_path / "a"
    assert main(["audit", str(write(tmp_path, TINY_PRIVATE)), "--out", str(out)]) == 0
    assert not _has_colour(out / "plots" / "leakage_heatmap.png", INF_COLOUR)
    worst = json.loads((out / "worst.json").read_text())["points"][0]
    assert isinstance(worst["epsilon"]["rdp"], float) and worst["epsilon"]["rdp"] < 1e3


def test_calibrate_prints_no_noise_line_for_an_unmet_target(tmp_path, capsys):
    import tomllib

    argv = ["calibrate", str(write(tmp_path, TINY_PRIVATE)), "--epsilon", "1", "--delta", "1e-5",
            "--family", "constant", "--method", "rdp"]
    assert main(argv) == 1
    cap = capsys.readouterr()
    assert "[protocol]" not in cap.out and "noise =" not in cap.out
    assert tomllib.loads(cap.out) == {}  # nothing pasteable, only comments
    assert "# no noise line to paste: no noise scale tried meets the target" in cap.out
    assert cap.err.startswith("dpgossip: the target epsilon = 1 at delta = 1e-05 is not met: ")


# --- 8. messages name the real key or flag -----------------------------------------------------------


@pytest.mark.parametrize(
    "old, new, expected",
    [
        ('source = "wine"', 'source = "missing.csv"', "data.source: file 'missing.csv' does not exist"),
        ('topology = "ring"', 'topology = "nofile.json"', "network.topology: no such file 'nofile.json'"),
        ('source = "wine"', 'source = "synthetic"\nsynthetic = { n = 0, d = 2, spectrum = [1.0] }',
         "data.synthetic.n"),
    ],
)
def test_messages_name_real_keys(tmp_path, capsys, monkeypatch, old, new, expected):
    monkeypatch.chdir(tmp_path)
    s = write(tmp_path, GOOD.replace(old, new))
    line = error_line(capsys, ["run", s, "--out", tmp_path / "o"])
    assert line.startswith(expected)


def test_one_row_csv_says_what_is_wrong(tmp_path, capsys):
    (tmp_path / "one.csv").write_text("1,2,3\n")
    s = write(tmp_path, GOOD.replace('source = "wine"', 'source = "one.csv"'))
    line = error_line(capsys, ["run", s, "--out", tmp_path / "o"])
    assert line == ("data has 1 row but there are 4 agents; every agent needs at least one row (use "
                    "fewer agents or more data)")


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["topology", "ring", "--agents", "1"], "--agents: 1 is too small; a graph needs at least 2 agents"),
        (["topology", "ring", "--agents", "6", "--mixing", "metropolis_fast"], "--mixing: unknown mixing"),
        (["topology", "path", "--agents", "4", "--mixing", "explicit"], "--mixing: 'explicit' means the"),
    ],
)
def test_topology_messages_name_flags(capsys, argv, expected):
    assert error_line(capsys, argv).startswith(expected)


@pytest.mark.parametrize("command", [["audit"], ["calibrate", "--epsilon", "1", "--delta", "1e-5"]])
def test_the_removed_candidates_flag_and_keys_are_refused(tmp_path, capsys, command):
    s = write(tmp_path, TINY_PRIVATE)
    out = ["--out", str(tmp_path / "a")] if command[0] == "audit" else []
    with pytest.raises(SystemExit) as caught:  # argparse: the flag is no longer known
        main([command[0], str(s), *command[1:], *out, "--candidates", "1"])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments: --candidates 1" in err and "Traceback" not in err
    # the scenario's keys: one line naming the key and the one search's effort levels
    for line in ("candidates = 1", "refine = 1", "ascent_steps = 0",
                 "calibrate = { epsilon = 5.0, candidates = 3 }"):
        key = "privacy." + ("calibrate.candidates" if "calibrate" in line else line.split()[0])
        bad = write(tmp_path, TINY_PRIVATE + line + "\n", "removed.toml")
        said = error_line(capsys, [command[0], bad, *command[1:], *out])
        assert said.startswith(f"{bad}: {key} = ") and (
            "this key set the candidate search, which was removed; there is one search, whose "
            "effort is privacy.search = quick | standard | thorough | 1..8 levels: "
            f"remove {key}") in said
    assert not (tmp_path / "a").exists()


def test_audit_and_calibrate_messages_name_flags(tmp_path, capsys):
    s = write(tmp_path, TINY_PRIVATE)
    assert error_line(capsys, ["audit", s, "--view", "everyone", "--out", tmp_path / "a"]).startswith(
        "--view: 'everyone' is not allowed")
    assert error_line(capsys, ["audit", s, "--search", "fastest", "--out", tmp_path / "a"]) == (
        "--search must be one of quick, standard, thorough or an integer number of levels in 1..8, "
        "got 'fastest'")
    assert error_line(capsys, ["audit", s, "--search", "9", "--out", tmp_path / "a"]) == \
        "--search levels must be in 1..8, got 9"
    # the removed searches: named, with what replaced them
    for name in ("candidates", "shared", "fast", "network"):
        for command in (["audit", s, "--out", tmp_path / "a"],
                        ["calibrate", s, "--epsilon", "1", "--delta", "1e-5"]):
            assert error_line(capsys, [*command, "--search", name]).startswith(
                f"--search {name!r} was removed: there is one search, whose effort is one of quick, "
                "standard, thorough or an integer number of levels in 1..8")
    assert not (tmp_path / "a").exists()
    assert error_line(capsys, ["calibrate", s, "--epsilon", "-1", "--delta", "1e-5"]) == \
        "--epsilon must be a finite number > 0, got -1"
    assert error_line(capsys, ["calibrate", s, "--epsilon", "1", "--delta", "1e-5", "--method",
                               "exakt"]).startswith("--method: 'exakt' is not allowed")
    bad = write(tmp_path, TINY_PRIVATE + "calibrate = { epsilon = 5.0, delta = 2.0 }\n", "b.toml")
    assert "privacy.calibrate.delta must be in (0, 1), got 2.0" in error_line(capsys, ["calibrate", bad])
    line = error_line(capsys, ["calibrate", s, "--epsilon", "1", "--delta", "1e-5", "--out", tmp_path])
    assert line.startswith(f"--out {str(tmp_path)!r} is a folder; give a file name")
    (tmp_path / "afile").write_text("x")
    line = error_line(capsys, ["calibrate", s, "--epsilon", "1", "--delta", "1e-5", "--out",
                               tmp_path / "afile" / "c.json"])
    assert line == (f"--out {str(tmp_path / 'afile' / 'c.json')!r}: {str(tmp_path / 'afile')!r} is a "
                    "file, so no folder can be created under it; choose another path")
    assert error_line(capsys, ["report", tmp_path / "afile"]) == (
        f"results folder {str(tmp_path / 'afile')!r} is a file; give the folder written by dpgossip run "
        "or dpgossip audit")


# --- 9. audit of a scenario with [engine] ------------------------------------------------------------


def test_audit_says_engine_conditions_are_not_audited(tmp_path, capsys):
    text = TINY_PRIVATE.replace('name = "tiny-private"', 'name = "e"\nbackend = "engine"') + (
        "[engine]\nloss = 0.1\n")
    out = tmp_path / "a"
    assert main(["audit", str(write(tmp_path, text)), "--out", str(out), "--no-plots"]) == 0
    err = capsys.readouterr().err
    assert err.splitlines()[0] == (
        "dpgossip: note: the audit models the ideal synchronous protocol (every message delivered, "
        "no crash); the scenario's [engine] conditions (latency, loss, stragglers, crashes) are not "
        "part of it")
    assert "not modelled" in json.loads((out / "worst.json").read_text())["engine"]
