"""``dpgossip audit`` and ``dpgossip calibrate`` act on ``protocol.kind`` (KIND_COMMANDS), settings no
search reads (those of the removed candidate search, removed search names, the removed --candidates flag)
are refused, and views without an observer are reported per target."""

from __future__ import annotations

import csv
import json
import math
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest

from dpgossip.cli import main
from dpgossip.errors import ConfigError
from dpgossip.scenario import load_scenario
from dpgossip.scenario.audit_point import KindAuditPoint
from dpgossip.scenario.audit_run import plan_audit, run_audit
from dpgossip.scenario.kind_commands import commands_for, kind_commands
from tests.scenario.helpers import scenario_error, tiny_audit_toml, toml_scenario

pytestmark = pytest.mark.usefixtures("smallest_search")  # the pipeline, not the search: tests/conftest.py

CAPE = toml_scenario('[protocol]\nkind = "capepca"\niterations = 3\nconsensus_steps = 1',
                     "[cape]\nepsilon = 1.0\ndelta = 1e-5")
PPM = toml_scenario('[protocol]\nkind = "ppm"\niterations = 3\nconsensus_steps = 1',
                    "[ppm]\nepsilon = 2.0")
# the pair audit at its cheapest (a CLI test, not a search test): 4 agents, 16 rows
DDPPM = tiny_audit_toml()


def write(folder: Path, text: str, name: str = "s.toml") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


# --- cause: audit and calibrate ignored protocol.kind ----------------------------------------------
def test_every_kind_has_an_audit_and_a_calibration_and_others_are_refused():
    from dpgossip.protocols.registry import kind, point_kind_names

    commands = kind_commands()
    # every point kind with a calibration of its own (or the pair audit) has the commands; the others
    # (private ALS: its noise comes from Theorem 1's closed form, no calibration search) are refused
    assert set(commands) == {n for n in point_kind_names()
                             if kind(n).pair_audit or kind(n).calibration is not None}
    assert {"dpals", "dpals-federated", "dpals-gossip"}.isdisjoint(commands)
    assert [k for k, c in commands.items() if c.pair_audit] == ["ddppm"]
    assert {k: c.section for k, c in commands.items()} == {
        "ddppm": "privacy", "ppm": "ppm", "ppm-federated": "ppm", "ppm-gossip": "ppm",
        "capepca": "cape", "capepca-gossip": "cape", "ddppm-floorfree": "floorfree"}
    with pytest.raises(ConfigError, match=r"protocol.kind = 'gossip-decor': .* supported: .*ddppm, "):
        commands_for("gossip-decor")


@pytest.mark.parametrize("name", ["dpals", "dpals-federated", "dpals-gossip"])
def test_the_refusal_of_als_says_where_its_audit_is(name):
    # before: "it has no auditor or accountant here", untrue of private ALS (it has both)
    with pytest.raises(ConfigError) as err:
        commands_for(name)
    text = str(err.value)
    assert "no auditor or accountant" not in text
    assert (f"protocol.kind = {name!r}: dpgossip audit and dpgossip calibrate do not support this kind "
            "(its guarantee and its audit are computed by dpgossip run: the guaranteed_epsilon and "
            "audited_epsilon columns of runs.csv, views ") in text
    assert "it has no noise calibration for dpgossip calibrate to search); supported: " in text


def test_audit_of_capepca_is_its_aggregator_audit_not_ddppm(tmp_path):
    from dpgossip.protocols.cape.guarantee import calibrate_cape_noise, gaussian_epsilon
    from dpgossip.protocols.cape.star import second_moment_sensitivity

    sc = load_scenario(write(tmp_path, CAPE))
    run = run_audit(plan_audit(sc, tmp_path / "a"), quiet=True)
    (point,) = run.points
    assert isinstance(point, KindAuditPoint) and point.kind == "capepca"
    c = point.columns
    # independent oracle: the closed form of the aggregator's view, mu^2 = (2S/(S+1)) (Delta/tau)^2
    # (docs/cape.md), at the noise calibrated to epsilon = 1 (the audit solves C^-1 numerically)
    S, sizes = 4, (45, 45, 44, 44)  # wine's 178 rows over 4 sites
    nm = calibrate_cape_noise(1.0, 1e-5, S, view="aggregator")
    n_min = min(sizes)
    tau = nm * second_moment_sensitivity(n_min, "row-replacement")
    mu = max(math.sqrt(2 * S / (S + 1)) * second_moment_sensitivity(n, "row-replacement") / tau
             for n in sizes)
    assert c["audited_epsilon"] == pytest.approx(gaussian_epsilon(mu, 1e-5), rel=1e-9)
    assert c["guaranteed_epsilon"] == pytest.approx(1.0, rel=1e-6)  # the budget it was calibrated to
    assert c["audit_view"].startswith("aggregator") and not c["audit_exceeds_guarantee"]
    table = list(csv.DictReader(open(tmp_path / "a" / "guarantees.csv")))
    assert table[0]["kind"] == "capepca" and float(table[0]["audited_epsilon"]) == c["audited_epsilon"]
    assert not (tmp_path / "a" / "pairs.csv").exists()  # no D-DP-PM pair audit


def test_audit_of_ppm_equals_its_own_auditor_on_repeat_0(tmp_path):
    from dpgossip.privacy.accountant import calibrate_zcdp_noise
    from dpgossip.protocols.ppm.audit import audit_ppm
    from dpgossip.protocols.ppm.central import PpmParams, run_ppm
    from dpgossip.protocols.ppm.guarantee import realised_guarantee
    from dpgossip.scenario.problem import build_problem
    from dpgossip.scenario.runner import repeat_seed

    sc = load_scenario(write(tmp_path, PPM))
    (point,) = run_audit(plan_audit(sc, tmp_path / "a"), quiet=True).points
    problem = build_problem(sc.points()[0].config)
    params = PpmParams(p=1, k=1, iterations=3, noise_multiplier=calibrate_zcdp_noise(2.0, 1e-5, 3),
                       sensitivity="improved", adjacency="row-replacement")
    result = run_ppm(problem.data, params, repeat_seed(0, 0))
    direct = audit_ppm(problem.data, result, delta=1e-5, neighbours="replace-one", seed=0)
    assert point.columns["audited_epsilon"] == direct.epsilon
    assert point.columns["guaranteed_epsilon"] == realised_guarantee(result, 1e-5).epsilon_pld
    assert direct.epsilon <= point.columns["guaranteed_epsilon"]  # the audit cannot exceed it


def test_calibrate_capepca_prints_the_cape_line_it_reads(tmp_path, capsys):
    from dpgossip.protocols.cape.guarantee import cape_guarantee
    from dpgossip.protocols.cape.star import CapeParams

    path = write(tmp_path, CAPE)
    assert main(["calibrate", str(path), "--epsilon", "2", "-q", "--out",
                 str(tmp_path / "c.json")]) == 0
    out = capsys.readouterr().out
    assert "[protocol]" not in out and "noise = " not in out  # D-DP-PM's line, which capepca ignores
    table = tomllib.loads(out)
    assert set(table) == {"cape"} and table["cape"]["delta"] == 1e-5
    nm = table["cape"]["noise_multiplier"]
    # the printed multiplier, read back as the scenario would, meets the target (tightly: rounded up)
    g = cape_guarantee((45, 45, 44, 44), CapeParams(k=1, noise_multiplier=nm), 1e-5).epsilon_aggregator
    assert 2.0 * (1 - 1e-5) <= g <= 2.0
    (printed,) = re.findall(r"# guarantee at that multiplier: epsilon = (\S+) at delta", out)
    assert float(printed) >= g  # the guarantee printed rounded up, never below
    record = json.loads((tmp_path / "c.json").read_text())
    assert record["noise_multiplier"] == nm and record["met"] is True and record["kind"] == "capepca"


@pytest.mark.parametrize("flags, named", [(["--family", "constant"], "--family"),
                                          (["--search", "quick"], "--search"),
                                          (["--view", "eavesdropper"], "--view")])
def test_calibrate_refuses_pair_audit_flags_on_another_kind(tmp_path, capsys, flags, named):
    assert main(["calibrate", str(write(tmp_path, CAPE)), "--epsilon", "2", *flags]) == 2
    err = capsys.readouterr().err
    assert named in err and "'capepca'" in err and "Traceback" not in err


def test_audit_refuses_pair_audit_flags_on_another_kind(tmp_path, capsys):
    assert main(["audit", str(write(tmp_path, CAPE)), "--view", "eavesdropper", "--out",
                 str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert "--view" in err and "'capepca'" in err
    assert not (tmp_path / "a").exists()


# --- cause: settings silently ignored --------------------------------------------------------------
@pytest.mark.parametrize("key, line", [("privacy.candidates", "candidates = 5"),
                                       ("privacy.refine", "refine = 2"),
                                       ("privacy.ascent_steps", "ascent_steps = 1"),
                                       ("privacy.calibrate.candidates",
                                        "calibrate = { epsilon = 1.0, candidates = 3 }")])
@pytest.mark.parametrize("search", ["quick", "candidates"])
def test_settings_of_the_removed_candidate_search_are_refused(tmp_path, key, line, search):
    # even next to the search name they once went with: the key is named, not the search
    exc = scenario_error(tmp_path, toml_scenario(f"[privacy]\nsearch = \"{search}\"\n{line}"))
    msg = str(exc)
    assert f"{key} = " in msg and "\n" not in msg
    assert "this key set the candidate search, which was removed" in msg
    assert "quick | standard | thorough | 1..8 levels" in msg and f"remove {key}" in msg


@pytest.mark.parametrize("search", ["candidates", "shared", "fast", "network"])
def test_removed_search_names_are_refused(tmp_path, search):
    exc = scenario_error(tmp_path, toml_scenario(f"[privacy]\nsearch = \"{search}\""))
    msg = str(exc)
    assert f"privacy.search = {search!r} was removed: there is one search" in msg
    assert "quick, standard, thorough or an integer number of levels in 1..8" in msg
    assert "\n" not in msg


def test_privacy_section_on_a_kind_that_ignores_it_is_refused(tmp_path):
    exc = scenario_error(tmp_path, CAPE + "[privacy]\naudit = true\n")
    assert "[privacy] is given but protocol.kind is 'capepca', which ignores it" in str(exc)


@pytest.mark.parametrize("command", ["audit", "calibrate"])
def test_the_removed_candidates_flag_is_refused(tmp_path, capsys, command):
    extra = ["--epsilon", "300", "--delta", "1e-5"] if command == "calibrate" else []
    out = tmp_path / "a"
    argv = [command, str(write(tmp_path, DDPPM)), "--candidates", "5", *extra]
    with pytest.raises(SystemExit) as caught:  # argparse: the flag is no longer known
        main([*argv, *(["--out", str(out)] if command == "audit" else [])])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments: --candidates 5" in err and "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize("command", ["audit", "calibrate"])
@pytest.mark.parametrize("search", ["candidates", "shared"])
def test_a_removed_search_name_on_the_command_line_is_refused(tmp_path, capsys, command, search):
    extra = ["--epsilon", "300", "--delta", "1e-5"] if command == "calibrate" else []
    assert main([command, str(write(tmp_path, DDPPM)), "--search", search, *extra]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in lines[0]
    assert f"--search {search!r} was removed: there is one search" in lines[0]
    assert "quick, standard, thorough or an integer number of levels in 1..8" in lines[0]


# --- cause: views without an observer ---------------------------------------------------------------
def test_eavesdropper_audit_is_per_target_without_hops(tmp_path, capsys):
    from dpgossip.protocols.ddppm.audit import audit_pairs
    from dpgossip.scenario.problem import build_problem

    path = write(tmp_path, DDPPM.replace("[privacy]\n", '[privacy]\nview = "eavesdropper"\n'))
    out = tmp_path / "a"
    assert main(["audit", str(path), "--out", str(out), "-q"]) == 0
    printed = capsys.readouterr().out
    assert "worst target: " in printed and "worst pair" not in printed and " -> " not in printed
    assert "hop" not in printed
    assert not (out / "epsilon_matrix.csv").exists()
    by_target = list(csv.DictReader(open(out / "epsilon_by_target.csv")))
    pairs = list(csv.DictReader(open(out / "pairs.csv")))
    assert [int(r["target"]) for r in pairs] == [0, 1, 2, 3] and "observer" not in pairs[0]
    # independent: the audit of the library, every observer's pair of a target alike
    problem = build_problem(load_scenario(path).points()[0].config)
    audit = audit_pairs(problem.data, problem.network, problem.params, delta=1e-5, epsilons=[50.0],
                        view="eavesdropper", search="quick", seed=1, methods=["rdp"])
    for r in by_target:
        j = int(r["target"])
        values = {res.epsilon["rdp"] for (o, t), res in audit.results.items() if t == j}
        assert len(values) == 1 and float(r["value"]) == values.pop()
    worst = json.loads((out / "worst.json").read_text())["points"][0]
    assert "observer" not in worst and "hops" not in worst
    names = {p.name for p in (out / "plots").glob("*.png")}
    assert names == {"leakage_by_target.png"}


def test_run_report_of_an_all_but_one_audit_draws_per_target(tmp_path):
    from dpgossip.report import make_report
    from dpgossip.scenario import run_scenario

    text = DDPPM.replace("[privacy]\n", '[privacy]\nview = "all-but-one"\naudit = true\n')
    run_scenario(load_scenario(write(tmp_path, text)), tmp_path / "r", quiet=True)
    names = {p.name for p in make_report(tmp_path / "r")}
    assert "leakage_by_target.png" in names
    assert not names & {"leakage_heatmap.png", "leakage_vs_hops.png"}


# --- progress ---------------------------------------------------------------------------------------
def test_target_and_level_progress_say_the_eta():
    from dpgossip.protocols.ddppm.calibrate import LevelEvent
    from dpgossip.scenario.step_progress import LevelProgress, TargetProgress

    now = [0.0]
    lines: list[str] = []
    tp = TargetProgress(lines.append, "point 0", every=5.0, clock=lambda: now[0])
    for j, t in enumerate([2.0, 4.0, 6.0, 8.0]):
        now[0] = t
        tp(j, j + 1, 4)
    # every finished target is said (one line each, also into a file or a pipe)
    assert lines == ["point 0: target 0 done (1/4 targets, 2.0 s, ETA 6.0 s)",
                     "point 0: target 1 done (2/4 targets, 4.0 s, ETA 4.0 s)",
                     "point 0: target 2 done (3/4 targets, 6.0 s, ETA 2.0 s)",
                     "point 0: target 3 done (4/4 targets, 8.0 s)"]
    now[0] = 13.5
    tp.stage(0, "search level 1/2")  # 5.5 s after the last line: said
    tp.stage(0, "search level 2/2")  # at once: left out
    assert lines[4:] == ["point 0: target 0: search level 1/2 (13.5 s)"]
    lines.clear()
    now[0] = 0.0
    lp = LevelProgress(lines.append, target_epsilon=1.0, target_delta=1e-5, clock=lambda: now[0])
    event = LevelEvent(level=2, scale=0.5, effort="search:quick", done=0, total=0)
    now[0] = 10.0
    lp(event)
    now[0] = 13.0
    lp(LevelEvent(level=2, scale=0.5, effort="search:quick", done=1, total=4))
    now[0] = 22.0
    lp(LevelEvent(level=2, scale=0.5, effort="search:quick", done=4, total=4, worst_delta=2e-5))
    assert lines == ["level 2: noise scale 0.5 (search:quick): auditing every pair",
                     "level 2: noise scale 0.5 (search:quick): 1/4 targets, 3.0 s, ETA 9.0 s",
                     "level 2: noise scale 0.5 (search:quick): worst delta at epsilon 1 = 2e-05 "
                     "(lower estimate; misses 1e-05; 12.0 s, 22.0 s in all)"]


def test_calibrate_says_every_candidate_noise_scale(tmp_path, capsys):
    argv = ["calibrate", str(write(tmp_path, DDPPM)), "--epsilon", "300", "--delta", "1e-5",
            "--family", "constant", "--method", "rdp"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    levels = [line for line in out.splitlines() if line.startswith("# level ")]
    assert any("auditing every pair" in line for line in levels)
    results = [line for line in levels if "worst delta at epsilon 300" in line]
    assert results and any("meets" in line for line in results)
    assert any("1/4 targets" in line for line in levels)
    assert np.isfinite(tomllib.loads(out)["protocol"]["noise"]["scale"])


@pytest.mark.parametrize("command", [["audit"], ["calibrate", "--epsilon", "1"]])
def test_network_dp_scenarios_are_sent_to_run(capsys, command):
    shipped = Path(__file__).resolve().parents[2] / "scenarios" / "network-dp-gossip.toml"
    assert main([command[0], str(shipped), *command[1:]]) == 2
    err = capsys.readouterr().err
    assert "a network-DP scenario ([network_dp])" in err and "dpgossip run" in err
    assert "unknown key" not in err



def test_the_search_says_its_stages_inside_a_target(tmp_path):
    from dpgossip.protocols.ddppm.audit import AuditOptions, audit_pairs
    from dpgossip.scenario.problem import build_problem

    text = DDPPM.replace('search = "quick"\n', "")
    problem = build_problem(load_scenario(write(tmp_path, text)).points()[0].config)
    said: list[tuple[int, str]] = []
    done: list[tuple[int, int, int]] = []
    audit_pairs(problem.data, problem.network, problem.params, search=1, methods=["rdp"],
                options=AuditOptions(targets=[2], observers=[0], on_stage=lambda j, t: said.append((j, t)),
                                     on_target=lambda *a: done.append(a)))
    assert said == [(2, "screening 4 rows"), (2, "search level 1/1"),
                    (2, "trying every view's neighbours on the others")] and done == [(2, 1, 1)]
