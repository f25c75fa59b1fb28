"""Progress on stderr: a tqdm bar on a terminal, plain lines otherwise, nothing when quiet."""

import io

import pytest

from dpgossip.scenario import run_scenario
from dpgossip.scenario.progress import Progress
from dpgossip.scenario.results import PointResult

from .helpers import read_bytes, small

pytestmark = pytest.mark.usefixtures("smallest_search")  # the pipeline, not the search: tests/conftest.py


class Tty(io.StringIO):
    def isatty(self):
        return True


def result(i):
    return PointResult(index=i, key=f"{i:016x}", axes={"protocol.consensus_steps": i},
                       tables={"runs": [{"error": 0.5}]}, seconds=0.1)


def test_plain_lines_when_not_a_terminal():
    out = io.StringIO()
    p = Progress(3, stream=out)
    p.skipped(1, "DIR/points")
    p.update(result(1))
    p.update(result(2))
    p.close()
    lines = out.getvalue().splitlines()
    assert lines[0] == "resuming: 1 of 3 points already finished in DIR/points"
    assert lines[1].startswith("[2/3] c=1: error 0.5 (0.10 s; ETA ")
    assert lines[2].startswith("[3/3] c=2: error 0.5")


def test_bar_on_a_terminal():
    pytest.importorskip("tqdm")
    out = Tty()
    p = Progress(2, stream=out)
    p.update(result(0))
    p.update(result(1))
    p.close()
    assert "2/2" in out.getvalue() and "[1/2]" not in out.getvalue()


def test_quiet_prints_nothing(capsys):
    p = Progress(2, quiet=True, stream=Tty())
    p.skipped(1, "x")
    p.update(result(0))
    p.close()
    assert capsys.readouterr().err == ""


def test_engine_backend_rows_are_reproducible(tmp_path):
    sc = small(
        repeats=2,
        backend="engine",
        protocol={"consensus_steps": [1, 2], "iterations": 3},
        engine={"latency": {"kind": "exponential", "mean": 0.01}, "loss": 0.05},
    )
    run_scenario(sc, tmp_path / "a", quiet=True)
    run_scenario(sc, tmp_path / "b", quiet=True)
    names = ("runs.csv", "iterations.csv", "summary.json")
    assert read_bytes(tmp_path / "a", *names) == read_bytes(tmp_path / "b", *names)
    assert "messages_delivered" in (tmp_path / "a" / "runs.csv").read_text().splitlines()[0]


class Clock:
    """A clock the test moves by hand."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_repeats_of_a_long_point_are_reported_at_most_every_repeat_seconds():
    from dpgossip.scenario.progress import REPEAT_SECONDS

    out, clock = io.StringIO(), Clock()
    p = Progress(2, stream=out, clock=clock)
    said = []
    for done, at in [(1, 1.0), (2, REPEAT_SECONDS + 1.0), (3, REPEAT_SECONDS + 2.0),
                     (8, 2 * REPEAT_SECONDS + 2.0), (10, 3 * REPEAT_SECONDS + 9.0)]:
        clock.now = at
        p.repeat(done, 10)
        said.append(out.getvalue().count("\n"))
    # nothing before REPEAT_SECONDS, then at most one line per REPEAT_SECONDS; none for the last
    # repeat (the point's own line follows)
    assert said == [0, 1, 1, 2, 2]
    first, second = out.getvalue().splitlines()
    # ETA = elapsed / done * (left): 6 s / 2 * 8 = 24 s; 12 s / 8 * 2 = 3 s
    assert first == "[1/2] repeat 2/10 of this point (6 s; ETA of the point 24 s)"
    assert second == "[1/2] repeat 8/10 of this point (12 s; ETA of the point 3 s)"
    clock.now = 30.0
    p.update(result(0))  # the next point starts its own clock
    clock.now = 31.0
    p.repeat(1, 10)
    assert out.getvalue().count("\n") == 3


def test_a_run_of_one_point_reports_its_repeats(tmp_path, monkeypatch, capsys):
    from dpgossip.scenario import progress

    monkeypatch.setattr(progress, "REPEAT_SECONDS", 0.0)
    run_scenario(small(protocol={"consensus_steps": 2}, repeats=4), tmp_path, quiet=False)
    err = capsys.readouterr().err
    assert [f"[1/1] repeat {k}/4 of this point" in err for k in (1, 2, 3)] == [True] * 3
    assert "repeat 4/4" not in err and err.rstrip().splitlines()[-1].startswith("[1/1] point 0")


def test_a_run_of_one_audited_point_says_its_targets_with_an_eta(tmp_path, capsys):
    """The pair audit of a point run in the driver's thread says its first and last target (and the
    ones between at most every 10 s) with the elapsed time and the ETA; quiet says nothing."""
    sc = small(protocol={"consensus_steps": 1, "iterations": 1}, repeats=1,
               data={"source": "synthetic", "standardize": False,
                     "synthetic": {"n": 24, "d": 3, "spectrum": [1.0, 0.8, 0.6]}},
               privacy={"audit": True, "search": "quick", "methods": ["rdp"],
                        "epsilon": [50.0]})
    run_scenario(sc, tmp_path / "loud", quiet=False)
    lines = capsys.readouterr().err.splitlines()
    m = int(sc.config["network"]["agents"])
    said = [line for line in lines if "pair audit: target" in line and "done" in line]
    assert said[0].startswith("[1/1] pair audit: target 0 done (1/") and "ETA" in said[0]
    assert said[-1].startswith(f"[1/1] pair audit: target {m - 1} done ({m}/{m} targets")
    run_scenario(sc, tmp_path / "quiet", quiet=True)
    assert capsys.readouterr().err == ""


def test_a_run_of_one_calibrated_point_says_every_candidate_scale(tmp_path, capsys):
    """A point whose noise is calibrated before it runs says every noise scale its calibration audits
    and whether that scale's worst delta meets the target (the calibration of paper-fig2 is minutes
    of silence otherwise); quiet says nothing (the same hook as the audit's targets, tested above)."""
    sc = small(protocol={"consensus_steps": 1, "iterations": 1}, repeats=1,
               data={"source": "synthetic", "standardize": False,
                     "synthetic": {"n": 24, "d": 3, "spectrum": [1.0, 0.8, 0.6]}},
               privacy={"search": "quick", "methods": ["rdp"],
                        "calibrate": {"epsilon": 50.0, "delta": 1e-5, "family": "constant",
                                      "method": "rdp", "infeasible": "floor", "rel_tol": 0.9}})
    run_scenario(sc, tmp_path / "loud", quiet=False)
    lines = capsys.readouterr().err.splitlines()
    said = [line for line in lines if "calibration: level" in line]
    results = [line for line in said if "worst delta at epsilon 50 =" in line]
    assert said[0].startswith("[1/1] calibration: level 1: noise scale ") and len(results) >= 2
    assert all("lower estimate" in line and (" meets 1e-05" in line or " misses 1e-05" in line)
               for line in results)
