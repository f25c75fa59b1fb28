"""Progress on stderr: a tqdm bar on a terminal, plain lines otherwise, nothing when quiet."""

import io

import pytest

from dpgossip.scenario import run_scenario
from dpgossip.scenario.progress import Progress
from dpgossip.scenario.results import PointResult

from .helpers import read_bytes, small


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
