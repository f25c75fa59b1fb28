"""Sweeps in chunks and batches: points go to workers in chunks and are saved in batch files; the
result files do not depend on either, a killed run loses nothing it reported as saved, and a failing
point is reported as before."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys

import pytest

from dpgossip.errors import ConfigError
from dpgossip.scenario import batches, execute, run_scenario, runner
from dpgossip.scenario.batches import BATCH_FORMAT, BatchWriter, saved_keys, saved_points
from dpgossip.scenario.execute import PointTask, WorkerTraceback, chunk_size
from dpgossip.scenario.results import PointResult, point_file
from dpgossip.scenario.staging import staging_path

from .helpers import read_bytes, small

TABLES = ("runs.csv", "iterations.csv", "points.csv", "summary.json")


def fake(key: str, index: int = 0, seconds: float = 0.01) -> PointResult:
    return PointResult(index=index, key=key, axes={"x": index}, seconds=seconds,
                       tables={"runs": [{"repeat": 0, "error": 0.5 + index}], "iterations": []})


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


# --- chunk sizes --------------------------------------------------------------------------------

@pytest.mark.parametrize("remaining, lanes, seconds", [
    (500, 2, 0.005), (500, 2, 0.1), (500, 2, 2.0), (7, 3, 1e-6), (1, 8, 1e-6), (10_000, 4, 1e-4)])
def test_chunk_size_is_the_closed_form(remaining, lanes, seconds):
    balance = math.ceil(remaining / (execute.CHUNKS_PER_LANE * lanes))
    by_time = max(1, math.floor(execute.CHUNK_SECONDS / seconds))
    assert chunk_size(remaining, lanes, seconds) == max(1, min(balance, by_time))
    assert chunk_size(remaining, lanes, None) == 1  # nothing timed yet: one point
    assert chunk_size(0, lanes, seconds) == 0


def test_every_worker_gets_several_chunks_and_slow_points_go_alone():
    assert chunk_size(500, 2, 0.001) == 63  # 500 / (4 * 2), not 500 / 2
    assert chunk_size(500, 2, 0.6) == 1


# --- batches ------------------------------------------------------------------------------------

def test_batch_writer_waits_about_flush_seconds_then_writes_one_file(tmp_path):
    clock = Clock()
    writer = BatchWriter(tmp_path, flush_seconds=1.0, clock=clock)
    saved = []
    for i in range(10):
        clock.now += 0.15  # a point every 0.15 s: due when 0.15 * k + 0.15 >= 1
        saved.append(len(writer.add(fake(f"k{i:02d}", i))))
    assert saved == [0, 0, 0, 0, 0, 0, 7, 0, 0, 0] and writer.pending == 3
    assert len(writer.flush()) == 3
    files = sorted((tmp_path / "points").glob("*.json"))
    assert len(files) == 2 and all(f.name.startswith("batch-") for f in files)
    assert set(saved_points(tmp_path)) == {f"k{i:02d}" for i in range(10)}
    assert not list((tmp_path / "points").glob(".*"))


def test_slow_points_are_saved_one_by_one_as_point_files(tmp_path):
    clock = Clock()
    writer = BatchWriter(tmp_path, flush_seconds=1.0, clock=clock)
    for i in range(3):
        clock.now += 1.5
        assert [r.key for r in writer.add(fake(f"slow{i}", i))] == [f"slow{i}"]
    assert sorted(p.name for p in (tmp_path / "points").iterdir()) == [
        "slow0.json", "slow1.json", "slow2.json"]
    assert saved_keys(tmp_path) == {"slow0", "slow1", "slow2"}


def test_a_full_batch_is_written_at_once(tmp_path):
    writer = BatchWriter(tmp_path, flush_seconds=1e9, max_batch=4, clock=Clock())
    sizes = [len(writer.add(fake(f"k{i}", i))) for i in range(9)]
    assert sizes == [0, 0, 0, 4, 0, 0, 0, 4, 0] and writer.pending == 1


def test_a_failed_batch_write_leaves_no_file_and_keeps_the_points(tmp_path, monkeypatch):
    writer = BatchWriter(tmp_path, flush_seconds=1e9, clock=Clock())
    for i in range(3):
        writer.add(fake(f"k{i}", i))

    def torn(src, dst):
        raise KeyboardInterrupt  # killed between the temporary file and the rename

    monkeypatch.setattr(os, "replace", torn)
    with pytest.raises(KeyboardInterrupt):
        writer.flush()
    assert writer.pending == 3 and saved_keys(tmp_path) == set()
    assert not list((tmp_path / "points").iterdir())  # the temporary file is removed
    monkeypatch.undo()
    assert len(writer.flush()) == 3 and saved_keys(tmp_path) == {"k0", "k1", "k2"}


def test_batch_entries_are_the_point_files(tmp_path):
    points = [fake("a", 0), fake("b", 1)]
    saved = batches.write_batch(tmp_path, points)
    data = json.loads(saved.path.read_text())
    assert data == {"format": BATCH_FORMAT, "points": [p.to_json() for p in points]}
    assert saved.to_row() == {"file": saved.path.name, "points": 2, "keys": "a,b"}
    assert batches.batch_file(tmp_path, ["b", "a"]) == saved.path  # named by its keys


# --- chunks -------------------------------------------------------------------------------------

def tasks_of(sc):
    return [PointTask(index=p.index, key=p.key, config=p.config, axes=p.axes) for p in sc.points()]


def test_a_chunk_stops_at_a_failing_point_and_keeps_the_points_before():
    sc = small(protocol={"consensus_steps": [1, 2, 4, 8], "iterations": [2, 2, 6, 2],
                         "noise": {"schedule": "explicit", "values": [0.1, 0.1]}},
               sweep={"zip": [["protocol.consensus_steps", "protocol.iterations"]]})
    tasks = tasks_of(sc)
    with pytest.raises(ConfigError) as alone:
        execute.run_task(tasks[2])
    outcome = execute.run_chunk(tasks)
    assert [r.index for r in outcome.results] == [0, 1]
    assert type(outcome.error) is ConfigError and str(outcome.error) == str(alone.value)
    assert "Traceback" in outcome.trace
    assert outcome.to_row()["points"] == 2
    stream = execute._unpack(outcome)
    assert [next(stream).index, next(stream).index] == [0, 1]
    with pytest.raises(ConfigError, match=re.escape(str(alone.value))) as raised:
        next(stream)
    assert isinstance(raised.value.__cause__, WorkerTraceback)
    assert execute.run_chunk(tasks[:2]).error is None


def test_a_failing_point_in_a_pool_is_reported_as_inline(tmp_path):
    sc = small(protocol={"consensus_steps": [1, 2, 3, 4, 5, 6], "iterations": [2, 2, 2, 2, 6, 2],
                         "noise": {"schedule": "explicit", "values": [0.1, 0.1]}},
               sweep={"zip": [["protocol.consensus_steps", "protocol.iterations"]]})
    with pytest.raises(ConfigError) as inline:
        run_scenario(sc, tmp_path / "inline", quiet=True)
    assert re.match(r"point 4 \(.*\): protocol.noise.values", str(inline.value))
    with pytest.raises(ConfigError) as pooled:
        run_scenario(sc, tmp_path / "pool", quiet=True, workers=2)
    assert str(pooled.value) == str(inline.value)
    assert sc.points()[4].key not in saved_keys(tmp_path / "pool")


def sweep8():
    return small(protocol={"consensus_steps": [1, 2, 3, 4, 5, 6, 7, 8]}, repeats=2)


@pytest.fixture(scope="module")
def inline8(tmp_path_factory):
    out = tmp_path_factory.mktemp("inline8")
    run_scenario(sweep8(), out, quiet=True)
    return out


@pytest.mark.parametrize("chunked, own", [(False, True), (True, False)])
def test_chunked_and_unchunked_pools_give_the_inline_files(tmp_path, monkeypatch, inline8, chunked,
                                                           own):
    sizes: list[int] = []
    real = execute._Plan.chunk

    def spy(self):
        out = real(self)
        sizes.append(len(out))
        return out

    monkeypatch.setattr(execute._Plan, "chunk", spy)
    monkeypatch.setattr(execute, "CHUNK_SECONDS", 1e9 if chunked else 0.0)
    monkeypatch.setattr(execute, "CHUNKS_PER_LANE", 1)
    monkeypatch.setattr(execute, "OWN_LANE", own)  # without it, chunks of 2 once points are timed
    run_scenario(sweep8(), tmp_path, quiet=True, workers=2)
    assert read_bytes(tmp_path, *TABLES) == read_bytes(inline8, *TABLES)
    assert sizes and (max(sizes) > 1) == chunked, sizes


# --- a kill in the middle of a sweep --------------------------------------------------------------

KILLED = r"""
import sys, time
from dpgossip.scenario import Scenario, batches, run_scenario, runner
from dpgossip.scenario.schema import validate
raw = {"name": "killed", "seed": 5, "repeats": 1, "data": {"source": "wine"},
       "network": {"topology": "ring", "agents": 4},
       "protocol": {"iterations": 3, "consensus_steps": list(range(1, 61))},
       "output": {"plots": False}}
batches.FLUSH_SECONDS = 0.2
real = runner.run_point
def slow(*args):
    time.sleep(0.03)
    return real(*args)
runner.run_point = slow
run_scenario(Scenario(validate(raw), None, raw), sys.argv[1], quiet=False)
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_killed_sweep_keeps_every_point_it_reported_and_recomputes_the_rest(tmp_path,
                                                                               monkeypatch):
    from dpgossip.scenario import Scenario
    from dpgossip.scenario.schema import validate

    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-c", KILLED, str(out)], stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True)
    reported: set[int] = set()
    try:
        for line in proc.stderr:  # one line per point, printed once its batch is written
            found = re.match(r"\[\d+/60\] c=(\d+):", line)
            if found:
                reported.add(int(found.group(1)))
            if len(reported) >= 12:
                proc.send_signal(signal.SIGKILL)  # mid-batch: later points are pending
                break
    finally:
        proc.kill()
        proc.wait(30)
    assert len(reported) >= 12, "the sweep ended before it could be killed"
    raw = {"name": "killed", "seed": 5, "repeats": 1, "data": {"source": "wine"},
           "network": {"topology": "ring", "agents": 4},
           "protocol": {"iterations": 3, "consensus_steps": list(range(1, 61))},
           "output": {"plots": False}}
    sc = Scenario(validate(raw), None, raw)
    key_of = {p.axes["protocol.consensus_steps"]: p.key for p in sc.points()}
    saved = saved_keys(staging_path(out))  # the staging folder holds them until the run succeeds
    assert not out.exists()
    assert {key_of[c] for c in reported} <= saved  # nothing reported as saved is lost
    assert len(saved) < 60

    calls = []
    real = runner.run_point
    monkeypatch.setattr(runner, "run_point",
                        lambda spec, problem, axes: calls.append(axes) or real(spec, problem, axes))
    run_scenario(sc, out, quiet=True)
    recomputed = {key_of[a["protocol.consensus_steps"]] for a in calls}
    assert recomputed == set(key_of.values()) - saved and len(calls) == len(recomputed)
    fresh = tmp_path / "fresh"
    run_scenario(sc, fresh, quiet=True)
    assert read_bytes(out, *TABLES) == read_bytes(fresh, *TABLES)
    assert not list((out / "points").glob(".*.tmp"))  # a kill mid-write would leave one: none here
    assert all(point_file(out, k).is_file() or k in saved_points(out) for k in saved)
