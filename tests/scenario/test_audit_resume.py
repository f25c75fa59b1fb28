"""Resumable audits (`dpgossip audit`): every audited point is stored at once, an interrupted audit keeps
whole points, and a rerun audits only the rest and ends with byte-identical tables."""

import copy
import io
import json

import pytest

from dpgossip.cli import main
from dpgossip.scenario import Scenario, privacy_section
from dpgossip.scenario.audit_point import AUDIT_POINT_FORMAT
from dpgossip.scenario.audit_run import plan_audit, run_audit
from dpgossip.scenario.results import point_file
from dpgossip.scenario.schema import validate
from dpgossip.scenario.staging import staging_path

from .helpers import read_bytes

pytestmark = pytest.mark.usefixtures("smallest_search")  # the pipeline, not the search: tests/conftest.py

TABLES = ("pairs.csv", "worst.json", "epsilon_matrix_p0.csv", "epsilon_matrix_p1.csv",
          "epsilon_matrix_p2.csv")

RAW = {
    "name": "tiny-audit",
    "seed": 1,
    "data": {"source": "synthetic", "standardize": False,
             "synthetic": {"n": 16, "d": 2, "spectrum": [1.0, 0.8]}},
    "network": {"topology": "ring", "agents": 4},
    "protocol": {"iterations": 2, "consensus_steps": [1, 2, 3],
                 "noise": {"schedule": "constant", "scale": 1.0}},
    "privacy": {"search": "quick", "methods": ["rdp"], "epsilon": [50.0]},
}


def tiny(**privacy):
    raw = copy.deepcopy(RAW)
    raw["privacy"].update(privacy)
    return Scenario(validate(raw), None, raw)


class CountingAudit:
    """Wraps ``audit_config``: counts calls and raises KeyboardInterrupt on call ``stop_at`` (1-based)."""

    def __init__(self, stop_at=None):
        self.calls = []
        self.stop_at = stop_at
        self.real = privacy_section.audit_config

    def __call__(self, config, problem, **kwargs):
        self.calls.append(config["protocol"]["consensus_steps"])
        if self.stop_at is not None and len(self.calls) == self.stop_at:
            raise KeyboardInterrupt
        return self.real(config, problem, **kwargs)


def audit(sc, out, **kwargs):
    return run_audit(plan_audit(sc, out), quiet=True, **kwargs)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """An uninterrupted audit of the 3-point sweep."""
    out = tmp_path_factory.mktemp("reference")
    run = audit(tiny(), out)
    assert run.computed == 3 and run.resumed == 0
    return out


def test_interrupted_audit_resumes_without_recomputing(tmp_path, monkeypatch, reference):
    sc = tiny()
    interrupted = CountingAudit(stop_at=3)
    monkeypatch.setattr(privacy_section, "audit_config", interrupted)
    with pytest.raises(KeyboardInterrupt):
        audit(sc, tmp_path)
    # two whole points on disk in the staging folder, the output folder untouched, no tables yet,
    # no temporary file left
    keys = [t.key for t in plan_audit(sc, tmp_path).tasks]
    stage = staging_path(tmp_path)
    assert list(tmp_path.iterdir()) == []
    assert [point_file(stage, k).is_file() for k in keys] == [True, True, False]
    assert not any((stage / name).exists() for name in TABLES)
    assert not list((stage / "points").glob(".*.tmp"))
    assert json.loads(point_file(stage, keys[0]).read_text())["format"] == AUDIT_POINT_FORMAT

    resumed = CountingAudit()
    monkeypatch.setattr(privacy_section, "audit_config", resumed)
    seen = []
    run = audit(sc, tmp_path, on_point=seen.append)
    assert resumed.calls == [3]
    assert (run.computed, run.resumed) == (1, 2)
    assert [p.resumed for p in seen] == [True, True, False] and [p.index for p in seen] == [0, 1, 2]
    assert read_bytes(tmp_path, *TABLES) == read_bytes(reference, *TABLES)
    assert not stage.exists()

    # a third run audits nothing and still writes the same tables
    again = CountingAudit()
    monkeypatch.setattr(privacy_section, "audit_config", again)
    assert audit(sc, tmp_path).resumed == 3 and again.calls == []
    assert read_bytes(tmp_path, *TABLES) == read_bytes(reference, *TABLES)


def test_corrupt_foreign_or_other_configuration_is_audited_again(tmp_path, monkeypatch, reference):
    sc = tiny()
    audit(sc, tmp_path)
    k0, k1, _ = [t.key for t in plan_audit(sc, tmp_path).tasks]
    point_file(tmp_path, k0).write_text("{not json")
    data = json.loads(point_file(tmp_path, k1).read_text())
    data["format"] = "dpgossip-point/1"  # a `dpgossip run` point file
    point_file(tmp_path, k1).write_text(json.dumps(data))
    counting = CountingAudit()
    monkeypatch.setattr(privacy_section, "audit_config", counting)
    audit(sc, tmp_path)
    assert counting.calls == [1, 2]
    assert read_bytes(tmp_path, *TABLES) == read_bytes(reference, *TABLES)
    # other privacy settings are another audit: nothing is reused
    counting.calls.clear()
    audit(tiny(epsilon=[50.0, 20.0]), tmp_path)
    assert counting.calls == [1, 2, 3]


def test_duplicate_points_are_audited_once(tmp_path, monkeypatch):
    counting = CountingAudit()
    monkeypatch.setattr(privacy_section, "audit_config", counting)
    raw = copy.deepcopy(RAW)
    raw["protocol"]["consensus_steps"] = [2, 2]
    run = audit(Scenario(validate(raw), None, raw), tmp_path)
    assert counting.calls == [2]
    assert [p.index for p in run.points] == [0, 1]
    worst = json.loads((tmp_path / "worst.json").read_text())["points"]
    assert [w["point"] for w in worst] == [0, 1]
    assert {k: v for k, v in worst[0].items() if k != "point"} == \
        {k: v for k, v in worst[1].items() if k != "point"}


def test_progress_names_each_step_and_the_eta(tmp_path):
    err = io.StringIO()
    run_audit(plan_audit(tiny(), tmp_path), stream=err)
    lines = err.getvalue().splitlines()
    assert lines[0] == ("[1/3] point 0 (c=1): auditing every (observer, target) pair of 4 agents "
                        "(view observer)")
    # the search's first stage inside the first target (throttled after it), then one line per
    # finished target, with an ETA while targets remain
    assert lines[1].startswith("[1/3] point 0 (c=1): target 0: screening 4 rows (")
    done = [line for line in lines if " done (" in line]
    assert done[0].startswith("[1/3] point 0 (c=1): target 0 done (1/4 targets, ") and "ETA" in done[0]
    assert any(line.startswith("[1/3] point 0 (c=1): target 3 done (4/4 targets, ") for line in lines)
    assert any(line.startswith("[1/3] c=1: worst epsilon (rdp) ") and "ETA" in line for line in lines)
    sweep = [line for line in lines if line.startswith("sweep: ")]  # after every point: shared
    assert sweep and lines[-len(sweep):] == sweep  # neighbours (dpgossip.scenario.sweep_neighbours)
    assert lines[-len(sweep) - 1].startswith("[3/3] c=3: worst epsilon (rdp) ")
    assert sum(" done (" in line for line in lines) == 3 * 4
    # ranked by the RDP conversion: labelled as that, not as a lower estimate
    assert all("(rdp conversion of the neighbour found: above its exact value, neither a lower "
               "estimate nor a bound" in line
               for line in lines if "worst epsilon" in line)
    err = io.StringIO()
    run_audit(plan_audit(tiny(), tmp_path), stream=err)
    assert err.getvalue().splitlines() == [
        f"resuming: 3 of 3 points already finished in {tmp_path / 'points'}", *sweep]  # pass redone


def test_command_resumes_and_prints_the_same_report(tmp_path, monkeypatch, capsys):
    scenario = tmp_path / "s.toml"
    scenario.write_text(
        'name = "tiny-audit"\nseed = 1\n[data]\nsource = "synthetic"\nstandardize = false\n'
        "synthetic = { n = 16, d = 2, spectrum = [1.0, 0.8] }\n[network]\ntopology = \"ring\"\n"
        "agents = 4\n[protocol]\niterations = 2\nconsensus_steps = [1, 2]\n"
        'noise = { schedule = "constant", scale = 1.0 }\n[privacy]\nsearch = "quick"\n'
        'methods = ["rdp"]\nepsilon = [50.0]\n')
    argv = ["audit", str(scenario), "--out", str(tmp_path / "a"), "--no-plots"]
    monkeypatch.setattr(privacy_section, "audit_config", CountingAudit(stop_at=2))
    assert main(argv) == 130
    err = capsys.readouterr().err
    assert "dpgossip: interrupted; finished results are kept" in err
    counting = CountingAudit()
    monkeypatch.setattr(privacy_section, "audit_config", counting)
    assert main(argv) == 0
    first = capsys.readouterr()
    assert counting.calls == [2] and "resuming: 1 of 2 points already finished" in first.err
    assert main([*argv, "-q"]) == 0
    second = capsys.readouterr()
    assert counting.calls == [2] and second.err == ""
    assert first.out == second.out and "point 1 (c=2): 4 agents" in first.out


def test_audit_interrupted_after_one_target_resumes_to_the_same_bits(tmp_path, monkeypatch):
    """The optimising search stores each finished target (``points/<key>.targets``); interrupted
    after the first target, a rerun searches only the other targets and writes byte-identical
    tables (every pair's value, neighbour and evidence, the certified bounds) to an uninterrupted
    audit's, then removes the targets' folder."""
    from dpgossip.scenario.pair_targets import TargetStore

    raw = copy.deepcopy(RAW)
    raw["protocol"]["consensus_steps"] = 1
    raw["data"]["synthetic"]["n"] = 8  # two rows per agent: a cheap search
    raw["privacy"] = {"search": 1, "methods": ["rdp"], "epsilon": [50.0]}
    sc = Scenario(validate(raw), None, raw)
    tables = ("pairs.csv", "worst.json", "epsilon_matrix.csv")
    audit(sc, tmp_path / "whole")
    (key,) = [t.key for t in plan_audit(sc, tmp_path / "whole").tasks]
    assert not (tmp_path / "whole" / "points" / f"{key}.targets").exists()

    real_save = _stop_after_one_target(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        audit(sc, tmp_path / "cut")
    stored = staging_path(tmp_path / "cut") / "points" / f"{key}.targets"
    assert sorted(p.name for p in stored.iterdir()) == ["000000.json"]
    monkeypatch.setattr(TargetStore, "save", real_save)
    searched = _spy_on_targets(monkeypatch)
    run = audit(sc, tmp_path / "cut")
    assert searched == [[1, 2, 3]] and run.computed == 1
    assert read_bytes(tmp_path / "cut", *tables) == read_bytes(tmp_path / "whole", *tables)
    assert not (tmp_path / "cut" / "points" / f"{key}.targets").exists()


def test_run_interrupted_inside_the_pair_audit_resumes_from_its_finished_targets(tmp_path, monkeypatch):
    """`dpgossip run` keeps each finished target of a point's pair audit in the point's scratch folder
    (``points/<key>.targets``): interrupted after the first target, a rerun searches only the other
    targets and writes a byte-identical ``leakage.csv`` to an uninterrupted run's, then removes the
    folder."""
    from dpgossip.scenario import run_scenario
    from dpgossip.scenario.pair_targets import TargetStore

    raw = copy.deepcopy(RAW)
    raw["protocol"]["consensus_steps"] = 1
    raw["data"]["synthetic"]["n"] = 8
    raw["privacy"] = {"audit": True, "search": 1, "methods": ["rdp"], "epsilon": [50.0]}
    sc = Scenario(validate(raw), None, raw)
    run_scenario(sc, tmp_path / "whole", quiet=True)
    assert not list((tmp_path / "whole" / "points").glob("*.targets"))

    real_save = _stop_after_one_target(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        run_scenario(sc, tmp_path / "cut", quiet=True)
    (stored,) = (staging_path(tmp_path / "cut") / "points").glob("*.targets")
    assert sorted(p.name for p in stored.iterdir()) == ["000000.json"]
    monkeypatch.setattr(TargetStore, "save", real_save)
    searched = _spy_on_targets(monkeypatch)
    run_scenario(sc, tmp_path / "cut", quiet=True)
    assert searched == [[1, 2, 3]]
    assert read_bytes(tmp_path / "cut", "leakage.csv") == read_bytes(tmp_path / "whole", "leakage.csv")
    assert not list((tmp_path / "cut" / "points").glob("*.targets"))


def _stop_after_one_target(monkeypatch):
    """Make ``TargetStore.save`` raise KeyboardInterrupt once it has stored a target; returns the real
    ``save``."""
    from dpgossip.scenario.pair_targets import TargetStore

    real_save = TargetStore.save

    def save_then_stop(self, target, results):
        real_save(self, target, results)
        raise KeyboardInterrupt

    monkeypatch.setattr(TargetStore, "save", save_then_stop)
    return real_save


def _spy_on_targets(monkeypatch):
    """Record the ``targets`` of every ``audit_config`` call (the list returned fills as it runs)."""
    searched = []
    real_config = privacy_section.audit_config

    def spy(config, problem, **kwargs):
        searched.append(kwargs.get("targets"))
        return real_config(config, problem, **kwargs)

    monkeypatch.setattr(privacy_section, "audit_config", spy)
    return searched
