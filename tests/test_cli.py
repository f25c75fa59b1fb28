"""The command line: user mistakes exit 2 with a one-line message and no traceback."""

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dpgossip.cli import main

pytestmark = pytest.mark.usefixtures("smallest_search")  # the pipeline, not the search: tests/conftest.py

ROOT = Path(__file__).resolve().parents[1]


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "s.toml"
    p.write_text(text)
    return p


GOOD = """
name = "t"
seed = 3
repeats = 2
[data]
source = "wine"
[network]
topology = "ring"
agents = 4
[protocol]
iterations = 4
consensus_steps = [1, 3]
"""


def test_run_writes_tidy_results(tmp_path):
    out = tmp_path / "out"
    assert main(["run", str(write(tmp_path, GOOD)), "--out", str(out)]) == 0
    rows = list(csv.DictReader(open(out / "runs.csv")))
    assert len(rows) == 4 and {r["protocol_consensus_steps"] for r in rows} == {"1", "3"}
    iters = list(csv.DictReader(open(out / "iterations.csv")))
    assert len(iters) == 2 * 2 * 5
    summary = json.loads((out / "summary.json").read_text())
    assert summary["points"] == 2 and summary["versions"]["numpy"]
    assert json.loads((out / "config.resolved.json").read_text())["protocol"]["rank"] == 1


def test_quickstart_scenario_runs(tmp_path):
    assert main(["run", str(ROOT / "scenarios" / "quickstart.toml"), "--out", str(tmp_path)]) == 0
    rows = list(csv.DictReader(open(tmp_path / "runs.csv")))
    assert len(rows) == 20
    # D-DP-PM beats the LDP baseline on the quickstart (median over repeats)
    err = sorted(float(r["error"]) for r in rows)
    ldp = sorted(float(r["ldp_error"]) for r in rows)
    assert err[10] < ldp[10]


BAD = [
    (GOOD.replace('topology = "ring"', 'topology = "ring"\n[extra]'), "extra: unknown key"),
    (GOOD.replace("agents = 4", "agents = 400"), "data has 178 rows but there are 400 agents"),
    (GOOD.replace('topology = "ring"', 'topology = "rign"'), "did you mean 'ring'"),
    (GOOD.replace("iterations = 4", "iterations = 0"), "protocol.iterations must be >= 1, got 0"),
    (
        GOOD.replace("consensus_steps = [1, 3]", "consensus_steps = -1"),
        "protocol.consensus_steps must be >= 0, got -1",
    ),
    (
        GOOD.replace("[protocol]", '[protocol]\nnoise = { schedule = "constant", scale = -2 }'),
        "protocol.noise.scale must be a finite number >= 0, got -2",
    ),
    (GOOD.replace("[network]", '[network]\nmixing = "metropolis_fast"'), "network.mixing"),
    (GOOD.replace('source = "wine"', 'source = "wine"\nscale = "none"'), "norm"),
    (GOOD.replace('source = "wine"', 'source = "nope.csv"'), "nope.csv"),
    ("name = ", "not valid TOML"),
]


@pytest.mark.parametrize("text, needle", BAD)
def test_bad_scenarios_exit_2_with_message(tmp_path, capsys, text, needle):
    assert main(["run", str(write(tmp_path, text)), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
    assert not (tmp_path / "o" / "runs.csv").exists()


def test_disconnected_graph_and_bad_w_from_files(tmp_path, capsys):
    g = tmp_path / "g.edgelist"
    g.write_text("0 1\n2 3\n")
    assert main(["topology", str(g)]) == 2
    assert "disconnected" in capsys.readouterr().err.lower()
    f = tmp_path / "w.json"
    f.write_text(
        json.dumps(
            {
                "directed": False,
                "multigraph": False,
                "graph": {},
                "nodes": [{"id": 0}, {"id": 1}, {"id": 2}],
                "edges": [{"source": 0, "target": 1}, {"source": 1, "target": 2}],
                "W": [[0.5, 0.5, 0], [0.5, 0.25, 0.25], [0, 0.25, 0.5]],
            }
        )
    )
    assert main(["topology", str(f)]) == 2
    assert "sum" in capsys.readouterr().err
    f.write_text(
        json.dumps(
            {
                "directed": False,
                "multigraph": False,
                "graph": {},
                "nodes": [{"id": 0}, {"id": 1}, {"id": 2}],
                "edges": [{"source": 0, "target": 1}, {"source": 1, "target": 2}],
                "W": [[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.25, 0.25, 0.5]],
            }
        )
    )
    assert main(["topology", str(f)]) == 2
    assert "(0, 2)" in capsys.readouterr().err


def test_console_script_has_no_traceback(tmp_path):
    p = subprocess.run(
        [sys.executable, "-m", "dpgossip.cli", "topology", "ring", "--agents", "1"],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.startswith("dpgossip: error: --agents: 1 is too small")


# --- sweeps: workers, scheduler, report --------------------------------------------------------

ZIPPED = GOOD.replace("iterations = 4", "iterations = [4, 6]") + (
    '\n[sweep]\nzip = [["protocol.consensus_steps", "protocol.iterations"]]\n'
    "[output]\nplots = false\n"
)


def test_run_with_workers_and_zip_matches_in_process(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    scenario = str(write(tmp_path, ZIPPED))
    assert main(["run", scenario, "--out", str(one), "-q"]) == 0
    assert main(["run", scenario, "--out", str(two), "--workers", "2", "-q"]) == 0
    rows = list(csv.DictReader(open(one / "runs.csv")))
    assert [(r["protocol_consensus_steps"], r["protocol_iterations"]) for r in rows] == [
        ("1", "4"),
        ("1", "4"),
        ("3", "6"),
        ("3", "6"),
    ]
    for name in ("runs.csv", "iterations.csv", "summary.json"):
        assert (one / name).read_bytes() == (two / name).read_bytes()


def test_rerun_reports_resumed_points(tmp_path, capsys):
    scenario = str(write(tmp_path, ZIPPED))
    assert main(["run", scenario, "--out", str(tmp_path / "o")]) == 0
    capsys.readouterr()
    assert main(["run", scenario, "--out", str(tmp_path / "o")]) == 0
    assert "resuming: 2 of 2 points already finished" in capsys.readouterr().err


def test_unreachable_scheduler_exits_2(tmp_path, capsys):
    pytest.importorskip("distributed")
    argv = ["run", str(write(tmp_path, ZIPPED)), "--out", str(tmp_path / "o")]
    assert main([*argv, "--scheduler", "tcp://127.0.0.1:9", "--scheduler-timeout", "0.5"]) == 2
    err = capsys.readouterr().err
    assert "cannot reach the Dask scheduler within 0.5 s" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


BAD_SWEEPS = [
    (
        ZIPPED.replace("iterations = [4, 6]", "iterations = [4, 6, 8]"),
        "sweep.zip[0]: the lists of a zip group must have equal lengths",
    ),
    (ZIPPED.replace('"protocol.iterations"]', '"protocol.iteration"]'), "did you mean"),
    (GOOD + "[baseline]\nldp = true\n", "baseline.epsilon is required when baseline.ldp = true"),
    (GOOD + "[engine]\nloss = 0.1\n", "engine conditions are given"),
]


@pytest.mark.parametrize("text, needle", BAD_SWEEPS)
def test_bad_sweeps_exit_2_with_message(tmp_path, capsys, text, needle):
    assert main(["run", str(write(tmp_path, text)), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_report_subcommand(tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["run", str(write(tmp_path, ZIPPED)), "--out", str(out), "-q"]) == 0
    assert not (out / "plots").exists()  # [output] plots = false
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "error_vs_c.png" in printed and (out / "plots" / "error_vs_iteration.png").is_file()
    assert main(["report", str(tmp_path / "missing")]) == 2


# --- privacy: audit and calibrate, the [privacy] hooks of run -----------------------------------

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
epsilon = [50.0, 200.0]
"""


def test_audit_writes_pairs_worst_matrix_and_plots(tmp_path, capsys):
    out = tmp_path / "audit"
    assert main(["audit", str(write(tmp_path, TINY_PRIVATE)), "--out", str(out), "--search",
                 "standard"]) == 0
    captured = capsys.readouterr()
    printed = captured.out
    assert "standard worst-case search" in printed
    assert "per-instance audit" in printed and "not a worst case over all datasets" in printed
    assert "view 'observer'" in printed and "worst pair: observer" in printed
    assert "epsilon at delta 1e-05: rdp " in printed
    # ranked by the RDP conversion: said to be that, not a lower estimate; the exact value of the
    # same neighbour is the lower estimate
    assert ": rdp conversion of the neighbour found: above its exact value, neither a lower "\
        "estimate nor a bound of the worst case" in printed
    assert "rdp epsilon at delta 1e-05 by hop distance (worst / mean, rdp conversions of the "\
        "neighbours found): 1: " in printed
    assert "of that neighbour: " in printed and "(the lower estimate; " in printed
    pairs = list(csv.DictReader(open(out / "pairs.csv")))
    assert len(pairs) == 12 and {r["method"] for r in pairs} == {"rdp"}
    assert {"observer", "target", "hops", "epsilon", "delta_at_eps_50", "row", "point"} <= set(pairs[0])
    # the search's evidence with every pair
    assert {r["search"] for r in pairs} == {"standard"} and all(r["value_by_level"] for r in pairs)
    assert {"first_message_bound", "last_doubling_change", "estimate"} <= set(pairs[0])
    worst = json.loads((out / "worst.json").read_text())
    w = worst["points"][0]
    assert "per-instance" in worst["audit"] and w["view"] == "observer"
    assert w["epsilon"]["rdp"] == max(float(r["epsilon"]) for r in pairs)
    # the searched worst case printed as a lower estimate, the certified bound beside it, never below
    # the bound stored in worst.json at full precision
    (progress,) = [line for line in captured.err.splitlines() if "worst epsilon (rdp)" in line]
    said = re.search(r"worst epsilon \(rdp\) (\S+) \(rdp conversion of the neighbour found: "
                     r"[^;]*; certified upper bound (\S+)\)", progress)
    assert said and float(said[1]) == pytest.approx(w["epsilon"]["rdp"], rel=1e-3)
    assert float(said[2]) >= w["epsilon_upper_max"] > 0
    at_most = re.search(r"(\S+) for target \d+, at most (\S+) over all targets", printed)
    assert float(at_most[1]) >= w["epsilon_upper"] and float(at_most[2]) >= w["epsilon_upper_max"]
    assert len(w["replacement"]) == 2 and set(w["delta_at_epsilon"]["rdp"]) == {"50", "200"}
    # without "exact" in methods, the worst neighbour still gets its exact value (<= the RDP bound)
    assert 0 < w["exact_for_worst_neighbour"]["epsilon"] <= w["epsilon"]["rdp"]
    matrix = list(csv.DictReader(open(out / "epsilon_matrix.csv")))
    assert len(matrix) == 4 and matrix[0]["target_0"] == "nan" and matrix[0]["method"] == "rdp"
    plots = out / "plots"  # one plots folder, as dpgossip run
    assert (plots / "leakage_heatmap.png").is_file() and (plots / "leakage_vs_hops.png").is_file()
    assert not list(out.glob("*.png"))


def test_audit_of_a_sweep_and_rank_two(tmp_path, capsys):
    text = TINY_PRIVATE.replace("consensus_steps = 1", "consensus_steps = [1, 2]\nrank = 2")
    out = tmp_path / "audit"
    argv = ["audit", str(write(tmp_path, text)), "--out", str(out), "--no-plots", "--search", "1"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "adaptive RDP composition" in printed and "Renyi divergences add" in printed
    assert "point 1 (c=2)" in printed
    pairs = list(csv.DictReader(open(out / "pairs.csv")))
    assert {r["protocol_consensus_steps"] for r in pairs} == {"1", "2"}
    assert {r["search"] for r in pairs} == {"levels=1"}  # --search overrides privacy.search
    assert (out / "epsilon_matrix_p0.csv").is_file() and (out / "epsilon_matrix_p1.csv").is_file()
    assert len(json.loads((out / "worst.json").read_text())["points"]) == 2


def test_audit_ranked_by_delta_prints_and_writes_deltas_not_nan(tmp_path, capsys):
    # rank_by = "delta" solves no epsilon: the worst pair, the hop table and the matrix are of delta
    text = TINY_PRIVATE.replace('methods = ["rdp"]', 'methods = ["exact"]\nrank_by = "delta"')
    text = text.replace("epsilon = [50.0, 200.0]", "epsilon = [2.0]")
    out = tmp_path / "audit"
    assert main(["audit", str(write(tmp_path, text)), "--out", str(out), "--no-plots"]) == 0
    printed = capsys.readouterr().out
    assert "nan" not in printed
    assert "delta at epsilon 2: exact " in printed
    assert "lower estimate of the worst case over neighbours (per instance)" in printed
    assert "exact delta at epsilon 2 by hop distance (worst / mean, lower estimates): 1: " in printed
    pairs = list(csv.DictReader(open(out / "pairs.csv")))
    worst = json.loads((out / "worst.json").read_text())["points"][0]
    top = max(float(r["delta_at_eps_2"]) for r in pairs)
    assert worst["delta_at_epsilon"]["exact"]["2"] == top > 0
    assert not (out / "epsilon_matrix.csv").exists()
    matrix = list(csv.DictReader(open(out / "delta_matrix.csv")))
    assert len(matrix) == 4 and {r["quantity"] for r in matrix} == {"delta at epsilon 2"}
    off = [float(r[f"target_{j}"]) for o, r in enumerate(matrix) for j in range(4) if j != o]
    assert max(off) == top and all(0 <= v <= 1 for v in off)


def test_calibrate_prints_toml_and_writes_json(tmp_path, capsys):
    import tomllib

    scenario = write(tmp_path, TINY_PRIVATE)
    argv = ["calibrate", str(scenario), "--epsilon", "300", "--delta", "1e-5", "--family",
            "constant", "--method", "rdp", "--out", str(tmp_path / "cal.json")]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    table = tomllib.loads(printed)
    scale = table["protocol"]["noise"]["scale"]
    assert table["protocol"]["noise"]["schedule"] == "constant" and scale > 0
    assert "meets the target" in printed and "per-instance" in printed
    record = json.loads((tmp_path / "cal.json").read_text())
    assert record["noise_scale"] == scale and record["calibration_met"] is True
    assert record["calibrated_epsilon"] <= 300 * 1.02 and record["evaluations"]
    # beside it, the scale met by the certified upper bound, each line saying what it means; the
    # certified scale is never below the one the lower estimate meets
    lower = re.search(r"by the lower estimate \(no neighbour the search found exceeds the target; "
                      r"NOT a DP guarantee\): scale (\S+)", printed)
    upper = re.search(r"by the certified upper bound \(proven for every neighbour of this X and "
                      r"every observer; about this X, not every dataset\): (.*)", printed)
    assert lower and float(lower[1]) == pytest.approx(scale, rel=1e-5) and upper
    if upper[1].startswith("scale "):
        assert float(upper[1].split()[1]) >= scale
    # the certified side at the scale chosen, printed rounded up and stored in the record
    bound = re.search(r"# certified at this scale \(upper bound, every neighbour of this X, every "
                      r"observer\): epsilon <= (\S+) at delta = 1e-05", printed)
    assert bound and float(bound[1]) >= record["calibrated_epsilon_upper"] > 0


@pytest.mark.parametrize(
    "extra, needle",
    [
        ([], "give the target with --epsilon E --delta D"),
        (["--epsilon", "-1", "--delta", "1e-5"], "--epsilon must be a finite number > 0, got -1"),
        (["--epsilon", "1", "--delta", "2"], "--delta must be in (0, 1), got 2"),
        (["--epsilon", "1", "--delta", "1e-5", "--family", "geometrc"], "did you mean 'geometric'"),
    ],
)
def test_calibrate_bad_targets_exit_2(tmp_path, capsys, extra, needle):
    assert main(["calibrate", str(write(tmp_path, TINY_PRIVATE)), *extra]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_calibrate_unreachable_target_exits_1(tmp_path, capsys):
    argv = ["calibrate", str(write(tmp_path, TINY_PRIVATE)), "--epsilon", "1", "--delta", "1e-5",
            "--family", "constant", "--method", "rdp"]
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert "DOES NOT MEET" in captured.out and "levels off" in captured.err


def test_run_with_privacy_audit_and_calibration(tmp_path):
    text = TINY_PRIVATE + (
        "audit = true\n"
        'calibrate = { epsilon = 300.0, delta = 1e-5, family = "constant", method = "rdp" }\n'
        "[output]\nplots = false\n"
    )
    out = tmp_path / "o"
    assert main(["run", str(write(tmp_path, text)), "--out", str(out), "-q"]) == 0
    runs = list(csv.DictReader(open(out / "runs.csv")))
    cal = list(csv.DictReader(open(out / "calibration.csv")))
    assert len(cal) == 1 and cal[0]["calibration_met"] == "True"
    scale = float(cal[0]["noise_scale"])
    assert float(runs[0]["noise_scale"]) == scale == float(runs[0]["sigma_p_first"])
    leak = list(csv.DictReader(open(out / "leakage.csv")))
    assert len(leak) == 12 and max(float(r["epsilon"]) for r in leak) <= 300 * 1.02
    assert all(float(r["sigma_p_first"]) == scale for r in leak)


# ------------------------------------------------------------------------ help and --version
def test_version_prints_the_installed_version(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as caught:
        main(["--version"])
    assert caught.value.code == 0
    assert capsys.readouterr().out.strip() == f"dpgossip {version('dpgossip')}"
    import dpgossip

    assert dpgossip.__version__ == version("dpgossip")  # the source's number and the installed one


def _help(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    return " ".join(capsys.readouterr().out.split())  # argparse wraps: compare on one line


def test_top_level_help_says_what_the_tool_is_and_shows_an_example(capsys):
    text = _help(capsys)
    assert "The ``dpgossip`` command" not in text
    assert "private decentralized PCA" in text and "examples:" in text
    for command in ("run", "report", "topology", "audit", "calibrate"):
        assert f" {command} " in text
    assert "dpgossip run scenarios/quickstart.toml" in text
    assert (ROOT / "scenarios" / "quickstart.toml").is_file()  # the example names a real file


def test_topology_help_lists_the_builders_files_and_rules_of_the_code(capsys):
    from dpgossip.topology import (
        EXPLICIT_MIXING,
        MIXING_RULES,
        SHIPPED_TOPOLOGIES,
        TOPOLOGIES,
        TOPOLOGY_PARAMS,
    )

    text = _help(capsys, "topology")
    for name in (*TOPOLOGIES, *SHIPPED_TOPOLOGIES, *MIXING_RULES, *EXPLICIT_MIXING):
        assert name in text, name
    for keys in TOPOLOGY_PARAMS.values():
        for key in keys:
            assert key in text, key


@pytest.mark.parametrize("command", ["audit", "calibrate"])
def test_view_and_search_help_list_the_values_of_the_code(capsys, command):
    from dpgossip.protocols.ddppm.audit import PAIR_VIEWS
    from dpgossip.protocols.ddppm.search import SEARCH_PRESETS

    text = _help(capsys, command)
    assert f"one of {', '.join(PAIR_VIEWS)}" in text
    assert f"worst-case search: {', '.join(SEARCH_PRESETS)}" in text
    assert "levels 1..8" in text
    assert "--candidates" not in text and "candidate" not in text  # the removed candidate search


def test_every_option_of_every_command_has_help():
    import argparse

    from dpgossip.cli import build_parser

    parser = build_parser()
    parser.format_help()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, command in sub.choices.items():
        command.format_help()  # fills the help texts computed from the code's registries
        for action in command._actions:
            assert action.help and action.help.strip(), (name, action.dest)
            if action.option_strings and action.default not in (None, False, argparse.SUPPRESS):
                assert "default" in action.help, (name, action.dest)


def test_topology_params_and_seed_from_the_command_line(capsys):
    assert main(["topology", "erdos_renyi", "--agents", "12", "--param", "p=0.5",
                 "--seed", "4"]) == 0
    from dpgossip.topology import make_network

    edges = make_network("erdos_renyi", agents=12, params={"p": 0.5}, seed=4).graph.number_of_edges()
    assert f"edges {edges}" in " ".join(capsys.readouterr().out.split())
    assert main(["topology", "erdos_renyi", "--agents", "12", "--param", "q=1"]) == 2
    assert "--param q: unknown parameter 'q'" in capsys.readouterr().err
    assert main(["topology", "ring", "--agents", "5", "--seed", "-1"]) == 2
    assert "--seed must be a non-negative integer" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["0", "-5", '"big"', "inf", "nan", "true"])
def test_a_bad_epsilon_cap_is_one_line_naming_the_key_and_nothing_is_written(tmp_path, capsys, value):
    text = TINY_PRIVATE.replace("[privacy]", f"[privacy]\nepsilon_cap = {value}")
    out = tmp_path / "audit"
    assert main(["audit", str(write(tmp_path, text)), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "privacy.epsilon_cap must be a finite number" in err[0]
    assert not out.exists()


def test_the_quickstart_audit_stops_at_the_epsilon_cap_and_says_so(tmp_path, capsys):
    """The quickstart's noise leaves no meaningful privacy: every pair stops at the cap, the printed
    worst pair says "at least 1000" and what that means, with the certified bound beside it, and one
    progress line is said per target; the tables are the stored docs/results/quickstart-audit/, byte
    for byte."""
    out = tmp_path / "qs"
    assert main(["audit", str(ROOT / "scenarios" / "quickstart.toml"), "--out", str(out),
                 "--no-plots"]) == 0
    captured = capsys.readouterr()
    assert ("exact at least 1000: the epsilon_cap, which a neighbour found exceeds: the worst case is "
            "at least this (the search stopped there)") in captured.out
    assert sum(" done (" in line for line in captured.err.splitlines()) == 4
    pairs = [r for r in csv.DictReader(open(out / "pairs.csv")) if r["method"] == "exact"]
    assert len(pairs) == 12 and all(r["stopped_at_cap"] == "True" for r in pairs)
    assert all(float(r["epsilon"]) == 1000.0 and float(r["epsilon_upper"]) > 1000.0 for r in pairs)
    worst = json.loads((out / "worst.json").read_text())["points"][0]
    assert worst["capped"] is True
    # the stored output that docs/paper.md and docs/results.md quote is what the command writes
    stored = ROOT / "docs" / "results" / "quickstart-audit"
    for name in ("pairs.csv", "worst.json", "epsilon_matrix.csv"):
        assert (out / name).read_bytes() == (stored / name).read_bytes(), name


def test_audit_prints_the_other_guarantees_of_a_kind_rounded_up(capsys):
    """``also: gdp_epsilon ...`` is a bound: printed at or above the stored value, never to nearest."""
    from dpgossip.cli import _print_kind_point
    from dpgossip.scenario.audit_point import KindAuditPoint

    gdp = 1.34105  # to nearest at 4 digits: 1.341, below the bound
    columns = {"guaranteed_epsilon": 2.0, "guarantee_delta": 1e-5, "guarantee_accountant": "pld",
               "adjacency": "replace-one", "gdp_epsilon": gdp, "site_epsilon": 0.50001}
    point = KindAuditPoint(index=0, key="k", axes={}, kind="ddppm-floorfree", columns=columns,
                           size={"agents": 4, "rows": 178, "columns": 13, "iterations": 5})
    _print_kind_point(point)
    line = [t for t in capsys.readouterr().out.splitlines() if "also:" in t][0]
    assert "gdp_epsilon 1.342" in line and "site_epsilon 0.5001" in line
