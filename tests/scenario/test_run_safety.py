"""Nothing lost: a setting that is wrong only on the built network or data is refused before the
results folder is touched; a failed, interrupted or refused run leaves earlier results byte for byte;
two runs never write into one folder at once.

Oracle: the bytes of every file of the folder before the failing command (and the folder's absence
when there was none), compared with the bytes after it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dpgossip.cli import main
from dpgossip.errors import ConfigError
from dpgossip.scenario import run_scenario, runner
from dpgossip.scenario.batches import saved_keys
from dpgossip.scenario.lock import FolderLock, LockHolder, lock_path
from dpgossip.scenario.staging import (
    REPLACED_MARK,
    StagedFolder,
    replaced_path,
    staging_path,
)

from .helpers import small, tiny_audit_toml

GOOD = """name = "t"
seed = 3
repeats = 2
{top}
[data]
source = "wine"
[network]
{network}
[protocol]
{protocol}
{tail}
[output]
plots = false
"""
RING = 'topology = "ring"\nagents = 4'
PROTO = "iterations = 3\nconsensus_steps = 1"


def scenario(top: str = "", network: str = RING, protocol: str = PROTO, tail: str = "") -> str:
    return GOOD.format(top=top, network=network, protocol=protocol, tail=tail)


ENGINE = 'backend = "engine"'
# (case, scenario text, what the message must name): each is valid TOML and passes validation, and
# is wrong only once the network or the data is known
BAD_RUNS = [
    ("noise-table-length", scenario(protocol=PROTO + '\nnoise = { schedule = "explicit", values = [0.1] }'),
     "protocol.noise.values must have one value per iteration (3), got 1"),
    ("rank-above-d", scenario(protocol=PROTO + "\nrank = 14"),
     "protocol.rank must be <= min(n, d) = 13, got 14"),
    ("rank-on-a-sweep-axis", scenario(protocol=PROTO + "\nrank = [1, 20]"),
     "point 1 (r=20): protocol.rank must be <= min(n, d) = 13"),
    ("noise-table-on-a-sweep-axis",
     scenario(protocol='iterations = [2, 3]\nconsensus_steps = 1\n'
                       'noise = { schedule = "explicit", values = [0.1, 0.1] }'),
     "point 1 (T=3): protocol.noise.values"),
    ("crash-of-a-missing-agent", scenario(top=ENGINE, tail='[engine]\ncrashes = { "9" = 0.5 }'),
     "engine.crashes: agent 9 does not exist"),
    ("crash-on-a-sweep-axis", scenario(top=ENGINE, network='topology = "ring"\nagents = [4, 3]',
                                       tail='[engine]\ncrashes = { "3" = 0.5 }'),
     "point 1 (m=3): engine.crashes: agent 3 does not exist"),
    ("straggler-of-a-missing-agent",
     scenario(top=ENGINE, tail="[engine]\ncompute_time = 0.01\nstragglers = { \"7\" = 2.0 }"),
     "engine.stragglers: agent 7 does not exist"),
    ("link-override-off-the-graph",
     scenario(top=ENGINE, tail="[[engine.links]]\nedge = [0, 2]\nloss = 0.1"),
     "engine.links[0].edge: [0, 2] is not an edge"),
    ("crash-beyond-the-curator", scenario(top=ENGINE, protocol='kind = "ppm"\n' + PROTO,
                                          tail='[ppm]\nnoise_multiplier = 1.0\n'
                                               '[engine]\ncrashes = { "5" = 0.5 }'),
     "engine.crashes: agent 5 does not exist; the network has agents 0..4"),  # 4 clients, curator 4
    ("floorfree-audit-targets-above-m",
     scenario(protocol='kind = "ddppm-floorfree"\n' + PROTO,
              tail="[floorfree]\nnoise_multiplier = 4.0\naudit_targets = 10"),
     "floorfree.audit_targets = 10 must be <= the number of agents, 4"),
    ("ppm-block-rank-above-d", scenario(protocol='kind = "ppm"\n' + PROTO,
                                        tail="[ppm]\nblock_rank = 20\nnoise_multiplier = 1.0"),
     "ppm.block_rank = 20 must be <= d = 13"),
    ("cape-rank-above-d", scenario(protocol='kind = "capepca"\n' + PROTO + "\nrank = 14",
                                   tail="[cape]\nnoise_multiplier = 1.0"),
     "protocol.rank must be <= min(n, d) = 13"),
    ("calibrate-rank-2", scenario(protocol=PROTO + "\nrank = 2",
                                  tail="[privacy]\ncalibrate = { epsilon = 1.0, delta = 1e-5 }"),
     "privacy.calibrate needs protocol.rank = 1, got 2"),
    ("calibrate-values-length",
     scenario(tail='[privacy]\ncalibrate = { epsilon = 1.0, family = "explicit", values = [1.0] }'),
     "privacy.calibrate.values must have one value per iteration (protocol.iterations = 3), got 1"),
]


def snapshot(folder: Path) -> dict[str, bytes] | None:
    """Every file under ``folder`` (relative path -> bytes), or ``None`` when it does not exist."""
    if not folder.exists():
        return None
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def no_leftovers(out: Path) -> bool:
    """No staging folder, old folder or lock file next to ``out``."""
    return not any(p.exists() for p in (staging_path(out), replaced_path(out), lock_path(out)))


def cli(command: str, toml: Path, out: Path, *extra: str) -> int:
    return main([command, str(toml), "--out", str(out), "-q", "--no-plots", *extra])


@pytest.fixture(scope="module")
def earlier(tmp_path_factory) -> Path:
    """A finished run of the good scenario "t" (copied by each test that needs earlier results)."""
    base = tmp_path_factory.mktemp("earlier")
    toml = base / "t.toml"
    toml.write_text(scenario())
    assert cli("run", toml, base / "out") == 0
    return base / "out"


@pytest.mark.parametrize("case, text, message", BAD_RUNS, ids=[c[0] for c in BAD_RUNS])
def test_a_setting_wrong_on_the_built_problem_touches_no_folder(tmp_path, capsys, case, text,
                                                                message):
    toml = tmp_path / "bad.toml"
    toml.write_text(text)
    fresh = tmp_path / "fresh"
    assert cli("run", toml, fresh) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not fresh.exists() and no_leftovers(fresh)


RERUNS = [c for c in BAD_RUNS
          if c[0] in ("rank-above-d", "rank-on-a-sweep-axis", "crash-of-a-missing-agent",
                      "calibrate-rank-2")]


@pytest.mark.parametrize("case, text, message", RERUNS, ids=[c[0] for c in RERUNS])
@pytest.mark.parametrize("force", [False, True])
def test_a_bad_rerun_keeps_the_earlier_results_byte_for_byte(tmp_path, capsys, earlier, case, text,
                                                             message, force):
    out = tmp_path / "out"
    shutil.copytree(earlier, out)
    before = snapshot(out)
    toml = tmp_path / "bad.toml"
    toml.write_text(text)
    assert cli("run", toml, out, *(["--force"] if force else [])) == 2
    assert message in capsys.readouterr().err
    assert snapshot(out) == before and no_leftovers(out)


def test_a_point_failing_mid_sweep_keeps_earlier_results_and_resumes(tmp_path, monkeypatch):
    out = tmp_path / "out"
    run_scenario(small(), out, quiet=True)
    before = snapshot(out)
    wider = small(protocol={"consensus_steps": [1, 2, 4, 8, 16]})
    real = runner.run_point

    def failing(spec, problem, axes):
        if axes["protocol.consensus_steps"] == 16:
            raise ConfigError("a failure only the run finds")
        return real(spec, problem, axes)

    monkeypatch.setattr(runner, "run_point", failing)
    with pytest.raises(ConfigError, match=r"point 4 \(c=16\): a failure only the run finds"):
        run_scenario(wider, out, quiet=True)
    assert snapshot(out) == before  # the earlier run's tables, config and networks, untouched
    # c = 8 was finished: it waits in the staging folder for the next run
    keys = {p.axes["protocol.consensus_steps"]: p.key for p in wider.points()}
    assert keys[8] in saved_keys(staging_path(out)) and keys[8] not in saved_keys(out)
    calls = []
    monkeypatch.setattr(runner, "run_point", lambda s, p, a: calls.append(a) or real(s, p, a))
    run_scenario(wider, out, quiet=True)
    assert calls == [{"protocol.consensus_steps": 16}] and no_leftovers(out)
    assert set(keys.values()) <= saved_keys(out)


def test_force_replaces_another_scenarios_results_only_once_the_run_succeeded(tmp_path, monkeypatch,
                                                                              earlier):
    out = tmp_path / "out"
    shutil.copytree(earlier, out)
    (out / "notes.txt").write_text("mine")
    before = snapshot(out)
    other = small()  # scenario "small", the folder holds "t"
    with pytest.raises(ConfigError, match="holds the results of scenario 't'"):
        run_scenario(other, out, quiet=True)
    monkeypatch.setattr(runner, "run_point", lambda *a: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):
        run_scenario(other, out, quiet=True, force=True)
    assert snapshot(out) == before
    monkeypatch.undo()
    run_scenario(other, out, quiet=True, force=True)
    assert '"scenario": "small"' in (out / "summary.json").read_text()
    assert not (out / "notes.txt").exists()  # --force replaces the folder
    assert no_leftovers(out)


def test_a_rerun_keeps_the_users_files_and_the_plots_of_the_same_configuration(tmp_path, earlier):
    out = tmp_path / "out"
    shutil.copytree(earlier, out)
    (out / "notes.txt").write_text("mine")
    (out / "plots").mkdir()
    (out / "plots" / "error.png").write_bytes(b"png")
    toml = tmp_path / "t.toml"
    toml.write_text(scenario())
    assert cli("run", toml, out) == 0
    assert (out / "notes.txt").read_text() == "mine" and (out / "plots" / "error.png").is_file()
    assert no_leftovers(out)




@pytest.mark.parametrize("mode", [0o700, 0o750])
def test_a_rerun_keeps_the_folders_permissions(tmp_path, earlier, mode):
    """The staging swap replaces the folder: the new one keeps the old one's mode (not the umask's
    755), and so do the subfolders carried over."""
    out = tmp_path / "out"
    shutil.copytree(earlier, out)
    (out / "mine").mkdir()
    for folder in (out, out / "points", out / "mine"):
        folder.chmod(mode)
    toml = tmp_path / "t.toml"
    toml.write_text(scenario())
    assert cli("run", toml, out) == 0
    assert [oct(f.stat().st_mode & 0o777) for f in (out, out / "points", out / "mine")] == \
        [oct(mode)] * 3
    assert no_leftovers(out)


def test_audit_refuses_before_writing_and_keeps_earlier_results(tmp_path, capsys):
    toml = tmp_path / "a.toml"
    toml.write_text(tiny_audit_toml(name="tiny-audit", rank=1))
    out = tmp_path / "audit"
    assert cli("audit", toml, out) == 0
    before = snapshot(out)
    toml.write_text(tiny_audit_toml(name="tiny-audit", rank="[1, 3]"))  # d = 2
    assert cli("audit", toml, out) == 2
    assert "point 1 (r=3): protocol.rank must be <= min(n, d) = 2, got 3" in capsys.readouterr().err
    assert snapshot(out) == before and no_leftovers(out)


NETWORK_DP = """name = "ndp"
[network_dp]
sigma = 0.7
target = {target}
observers = "all"
[[network_dp.graphs]]
label = "path"
topology = "path"
agents = 5
rounds = 3
[[network_dp.graphs]]
label = "star"
topology = "star"
agents = 4
rounds = 2
[output]
plots = false
"""


def test_network_dp_target_outside_a_graph_is_refused_before_writing(tmp_path, capsys):
    toml = tmp_path / "ndp.toml"
    toml.write_text(NETWORK_DP.format(target=0))
    out = tmp_path / "out"
    assert cli("run", toml, out) == 0
    before = snapshot(out)
    toml.write_text(NETWORK_DP.format(target=4))  # an agent of the path (5), not of the star (4)
    assert cli("run", toml, out) == 2
    assert "network_dp.graphs[1].target must be an agent in 0..3, got 4" in capsys.readouterr().err
    assert snapshot(out) == before and no_leftovers(out)


# --- the lock ----------------------------------------------------------------------------------------
HOLDER = textwrap.dedent("""
    import importlib.util, sys, time
    # the lock module alone (the scenario package's imports take seconds on a loaded machine)
    spec = importlib.util.spec_from_file_location("lock", sys.argv[2])
    module = sys.modules["lock"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    lock = module.FolderLock(sys.argv[1]).acquire()
    print("locked", flush=True)
    time.sleep(60)
""")


def test_a_second_run_is_refused_naming_the_holder_and_a_dead_holders_lock_is_taken_over(
        tmp_path, capsys):
    toml = tmp_path / "t.toml"
    toml.write_text(scenario())
    out = tmp_path / "out"
    from dpgossip.scenario import lock

    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(out), lock.__file__],
                              stdout=subprocess.PIPE,
                              text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert cli("run", toml, out) == 2
        err = capsys.readouterr().err
        assert f"is in use by another dpgossip run (pid {holder.pid} on host " in err
        assert "started 20" in err and not out.exists()
    finally:
        holder.kill()
        holder.wait(10)
    # its lock file is left behind, naming a process that is gone: the next run takes it over
    stale = LockHolder.parse(lock_path(out).read_text())
    assert stale is not None and stale.pid == holder.pid
    assert cli("run", toml, out) == 0
    assert (out / "summary.json").is_file() and no_leftovers(out)


def test_the_lock_is_exclusive_and_released(tmp_path):
    first = FolderLock(tmp_path / "out").acquire()
    with pytest.raises(ConfigError, match=rf"pid {os.getpid()} on host"):
        FolderLock(tmp_path / "out").acquire()  # a second open file description: refused too
    first.release()
    assert not lock_path(tmp_path / "out").exists()
    FolderLock(tmp_path / "out").acquire().release()


# --- the staging folder ------------------------------------------------------------------------------
def test_a_swap_stopped_between_its_two_renames_is_undone(tmp_path):
    out = tmp_path / "out"
    old = replaced_path(out)  # as left by a kill after `out -> .out.replaced`
    old.mkdir()
    (old / "summary.json").write_text("old")
    (old / REPLACED_MARK).write_text("")
    stage = StagedFolder(out)
    stage.open()
    stage.close()
    assert (out / "summary.json").read_text() == "old" and not old.exists()


def test_without_an_atomic_exchange_the_swap_renames_twice(tmp_path, monkeypatch):
    from dpgossip.scenario import staging

    monkeypatch.setattr(staging, "_exchange", lambda a, b: False)
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.csv").write_text("old")
    stage = StagedFolder(out)
    work = stage.open()
    (work / "new.csv").write_text("new")
    stage.commit(lambda rel: rel == "old.csv")
    stage.close()
    assert sorted(p.name for p in out.iterdir()) == ["new.csv"] and no_leftovers(out)


def test_a_foreign_folder_in_the_staging_place_is_refused(tmp_path):
    out = tmp_path / "out"
    staging_path(out).mkdir()
    with pytest.raises(ConfigError, match="exists and was not made by dpgossip"):
        StagedFolder(out).open()
    assert not lock_path(out).exists()


def test_the_working_directory_is_refused_as_a_results_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="is the working directory or holds it"):
        run_scenario(small(), ".", quiet=True)
    assert list(tmp_path.iterdir()) == []


def test_the_parameters_resolved_by_the_preflight_give_the_runs_own_bits():
    """The run uses the protocol parameters the preflight's check resolved; oracle: the same point
    resolving its own parameters (as before the check existed)."""
    import json

    from dpgossip.scenario.execute import PointTask, run_task
    from dpgossip.scenario.preflight import preflight

    points = small(protocol={"consensus_steps": [1, 3], "rank": 2}).points()
    structures = preflight(points, None)
    assert sorted(structures.params) == [p.index for p in points]
    for p in points:
        task = PointTask(index=p.index, key=p.key, config=p.config, axes=p.axes)
        given = run_task(PointTask(index=p.index, key=p.key, config=p.config, axes=p.axes,
                                   params=structures.params[p.index]))
        assert json.dumps(given.tables) == json.dumps(run_task(task).tables)


def test_an_old_folder_that_cannot_be_deleted_is_named_by_the_next_run(tmp_path):
    if shutil.which("chattr") is None:
        pytest.skip("needs chattr")
    out = tmp_path / "out"
    run_scenario(small(), out, quiet=True)
    keep = out / "mine.txt"
    keep.write_text("x")
    if subprocess.run(["chattr", "+i", str(keep)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here")
    try:
        run_scenario(small(), out, quiet=True)  # succeeds: its new folder is swapped in
        assert (out / "summary.json").is_file() and (out / "mine.txt").read_text() == "x"
        old = staging_path(out)  # the swapped-out folder keeps the immutable file
        assert (old / REPLACED_MARK).exists()
        with pytest.raises(ConfigError, match="cannot delete .*the results an earlier run replaced"):
            run_scenario(small(), out, quiet=True)
    finally:
        subprocess.run(["chattr", "-i", str(keep)], capture_output=True)
        for f in staging_path(out).rglob("*"):
            subprocess.run(["chattr", "-i", str(f)], capture_output=True)
    run_scenario(small(), out, quiet=True)
    assert no_leftovers(out)
