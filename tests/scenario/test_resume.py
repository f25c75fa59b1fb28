"""Resumable sweeps: an interrupted run keeps whole points, and a rerun computes only the rest and ends
with byte-identical tables."""

import json

import pytest

from dpgossip.errors import ConfigError
from dpgossip.report import make_report
from dpgossip.scenario import batches, run_scenario, runner
from dpgossip.scenario.batches import BATCH_FORMAT, saved_keys, saved_points
from dpgossip.scenario.staging import staging_path

from .helpers import read_bytes, small

TABLES = ("runs.csv", "iterations.csv", "points.csv", "summary.json", "config.resolved.json")


class CountingRunPoint:
    """Wraps ``run_point``: counts calls and raises KeyboardInterrupt on call ``stop_at`` (1-based)."""

    def __init__(self, stop_at=None):
        self.calls = []
        self.stop_at = stop_at
        self.real = runner.run_point

    def __call__(self, cfg, problem, axes):
        self.calls.append(dict(axes))
        if self.stop_at is not None and len(self.calls) == self.stop_at:
            raise KeyboardInterrupt
        return self.real(cfg, problem, axes)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """An uninterrupted run of the small sweep (3 points)."""
    out = tmp_path_factory.mktemp("reference")
    run_scenario(small(), out, quiet=True)
    return out


def test_interrupted_run_resumes_without_recomputing(tmp_path, monkeypatch, reference):
    sc = small()
    interrupted = CountingRunPoint(stop_at=3)
    monkeypatch.setattr(runner, "run_point", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_scenario(sc, tmp_path, quiet=True)
    # two whole points on disk (saved on the way out) in the staging folder next to the results
    # folder, which is untouched (still empty); no final tables yet
    points = sc.points()
    stage = staging_path(tmp_path)
    assert [p.key in saved_keys(stage) for p in points] == [True, True, False]
    assert list(tmp_path.iterdir()) == []
    assert not (stage / "runs.csv").exists() and not (stage / "summary.json").exists()
    assert (stage / "config.resolved.json").is_file()
    assert not list((stage / "points").glob(".*.tmp"))

    resumed = CountingRunPoint()
    monkeypatch.setattr(runner, "run_point", resumed)
    run_scenario(sc, tmp_path, quiet=True)
    assert resumed.calls == [{"protocol.consensus_steps": 4}]
    assert read_bytes(tmp_path, *TABLES) == read_bytes(reference, *TABLES)
    assert not stage.exists() and [p.key in saved_keys(tmp_path) for p in points] == [True] * 3
    timing = json.loads((tmp_path / "timing.json").read_text())
    assert timing["computed"] == 1 and timing["resumed"] == 2
    assert [p["resumed"] for p in timing["points"]] == [True, True, False]

    # a third run recomputes nothing and still gives the same tables
    again = CountingRunPoint()
    monkeypatch.setattr(runner, "run_point", again)
    run_scenario(sc, tmp_path, quiet=True)
    assert again.calls == []
    assert read_bytes(tmp_path, *TABLES) == read_bytes(reference, *TABLES)


def test_corrupt_or_foreign_point_entry_is_recomputed(tmp_path, monkeypatch, reference):
    sc = small()
    monkeypatch.setattr(batches, "FLUSH_SECONDS", 1e9)  # the three points in one batch file
    run_scenario(sc, tmp_path, quiet=True)
    (batch,) = (tmp_path / "points").glob("batch-*.json")
    data = json.loads(batch.read_text())
    assert data["format"] == BATCH_FORMAT and len(data["points"]) == 3
    p0, p1 = sc.points()[:2]
    entries = {e["hash"]: e for e in data["points"]}
    entries[p0.key]["format"] = "something/else"
    entries[p1.key]["hash"] = "0" * 16
    batch.write_text(json.dumps(data))
    assert set(saved_points(tmp_path)) == {"0" * 16, sc.points()[2].key}
    counting = CountingRunPoint()
    monkeypatch.setattr(runner, "run_point", counting)
    run_scenario(sc, tmp_path, quiet=True)
    assert counting.calls == [{"protocol.consensus_steps": 1}, {"protocol.consensus_steps": 2}]
    assert read_bytes(tmp_path, *TABLES) == read_bytes(reference, *TABLES)


def test_unreadable_batch_file_recomputes_its_points(tmp_path, monkeypatch, reference):
    sc = small()
    monkeypatch.setattr(batches, "FLUSH_SECONDS", 1e9)
    run_scenario(sc, tmp_path, quiet=True)
    (batch,) = (tmp_path / "points").glob("batch-*.json")
    batch.write_text(batch.read_text()[:200])  # as a torn file would be
    counting = CountingRunPoint()
    monkeypatch.setattr(runner, "run_point", counting)
    run_scenario(sc, tmp_path, quiet=True)
    assert len(counting.calls) == 3
    assert read_bytes(tmp_path, *TABLES) == read_bytes(reference, *TABLES)


def test_point_files_of_earlier_versions_resume(tmp_path, monkeypatch, reference):
    """Results folders written one file per point (before batches) are read back."""
    from dpgossip.scenario.results import point_file, read_point, write_point

    sc = small()
    monkeypatch.setattr(batches, "FLUSH_SECONDS", 1e9)
    run_scenario(sc, tmp_path, quiet=True)
    (batch,) = (tmp_path / "points").glob("batch-*.json")
    stored = {p.key: batches.stored_point(tmp_path, p.key, p.index, saved_points(tmp_path))
              for p in sc.points()}
    batch.unlink()
    for result in stored.values():
        write_point(tmp_path, result)
    assert all(point_file(tmp_path, k).is_file() and read_point(tmp_path, k, 0) for k in stored)
    counting = CountingRunPoint()
    monkeypatch.setattr(runner, "run_point", counting)
    run_scenario(sc, tmp_path, quiet=True)
    assert counting.calls == []
    assert read_bytes(tmp_path, *TABLES) == read_bytes(reference, *TABLES)


def test_changed_scenario_reuses_shared_points_and_drops_stale_tables(tmp_path, monkeypatch):
    run_scenario(small(), tmp_path, quiet=True)
    assert (tmp_path / "summary.json").is_file()
    before = read_bytes(tmp_path, *TABLES)
    counting = CountingRunPoint(stop_at=1)
    monkeypatch.setattr(runner, "run_point", counting)
    wider = small(protocol={"consensus_steps": [1, 2, 4, 8]})
    with pytest.raises(KeyboardInterrupt):
        run_scenario(wider, tmp_path, quiet=True)
    # only c = 8 was new; the interrupted run left the earlier results exactly as they were
    assert counting.calls == [{"protocol.consensus_steps": 8}]
    assert read_bytes(tmp_path, *TABLES) == before
    # once the edited scenario finishes, its tables replace the old ones
    finishing = CountingRunPoint()
    monkeypatch.setattr(runner, "run_point", finishing)
    run_scenario(wider, tmp_path, quiet=True)
    assert finishing.calls == [{"protocol.consensus_steps": 8}]
    assert json.loads((tmp_path / "config.resolved.json").read_text())["protocol"][
        "consensus_steps"
    ] == [1, 2, 4, 8]
    assert json.loads((tmp_path / "summary.json").read_text())["points"] == 4


def test_duplicate_points_run_once(tmp_path, monkeypatch):
    counting = CountingRunPoint()
    monkeypatch.setattr(runner, "run_point", counting)
    run_scenario(small(protocol={"consensus_steps": [2, 2]}), tmp_path, quiet=True)
    assert len(counting.calls) == 1
    rows = (tmp_path / "runs.csv").read_text().splitlines()
    assert len(rows) == 1 + 2 * 3


def test_point_errors_name_the_point_and_stop_before_running(tmp_path, monkeypatch):
    counting = CountingRunPoint()
    monkeypatch.setattr(runner, "run_point", counting)
    bad = small(network={"topology": "ring", "agents": [4, 400]})
    msg = r"point 3 \(m=400, c=1\): data has 178 rows but there are 400 agents"
    with pytest.raises(ConfigError, match=msg):
        run_scenario(bad, tmp_path, quiet=True)
    assert counting.calls == [] and not (tmp_path / "points").exists()


def test_runtime_error_in_a_point_names_the_point(tmp_path):
    sc = small(protocol={"noise": {"schedule": "explicit", "values": [0.1, 0.1]}})
    with pytest.raises(ConfigError, match=r"point 0 \(c=1\): protocol.noise.values"):
        run_scenario(sc, tmp_path, quiet=True)


def test_editing_a_user_data_file_invalidates_its_points(tmp_path, monkeypatch):
    import numpy as np

    data = tmp_path / "x.csv"
    rng = np.random.default_rng(0)
    np.savetxt(data, rng.standard_normal((24, 4)), delimiter=",")
    sc = small(data={"source": str(data)}, protocol={"consensus_steps": 2})
    out = tmp_path / "out"
    run_scenario(sc, out, quiet=True)
    counting = CountingRunPoint()
    monkeypatch.setattr(runner, "run_point", counting)
    run_scenario(sc, out, quiet=True)
    assert counting.calls == []
    np.savetxt(data, rng.standard_normal((24, 4)), delimiter=",")
    run_scenario(sc, out, quiet=True)
    assert len(counting.calls) == 1
    assert len(list((out / "points").glob("*.json"))) == 2


def test_stale_plots_of_another_configuration_are_removed(tmp_path):
    run_scenario(small(network={"topology": ["ring", "path"]}), tmp_path, quiet=True)
    make_report(tmp_path)
    assert len(list((tmp_path / "plots").glob("topology_*.png"))) == 2
    run_scenario(small(), tmp_path, quiet=True)
    assert not list((tmp_path / "plots").glob("*.png"))
    assert len(list((tmp_path / "networks").glob("*.json"))) == 1
