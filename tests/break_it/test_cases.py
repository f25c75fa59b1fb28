"""Every case of the break-it table (``tests/break_it/cases.py``) has the outcome the table says: a
clear error (its exit code, one stderr line naming the offending key or value, no traceback, every
file of the sandbox as it was) or a correct result, checked. The slow ones (subprocesses, signals,
plug-ins, a first audit) run under ``-m slow``."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.break_it.cases import BASES, CASES, SURFACES, Case
from tests.break_it.harness import CLI, TABLES, problem, scenario_text, subprocess_cli
from tests.break_it.toml_text import dump

SRC = Path(__file__).resolve().parents[2] / "src"

pytestmark = pytest.mark.usefixtures("smallest_search")  # the pipeline, not the search: tests/conftest.py

FAST = [c for c in CASES if not c.slow]
SLOW_INPROCESS = [c for c in CASES if c.slow and not c.setup.startswith("plugin")
                  and c.check not in ("two_runs", "sigterm_resume")]


def _run(case: Case, folder: Path) -> None:
    try:
        found = problem(case, folder)
    except RuntimeError as exc:
        if str(exc).startswith("skip: "):
            pytest.skip(str(exc).removeprefix("skip: "))
        raise
    assert found == "", f"{case.id}: {found}"


@pytest.mark.parametrize("case", FAST, ids=lambda c: c.id)
def test_case(case: Case, tmp_path: Path) -> None:
    _run(case, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("case", SLOW_INPROCESS, ids=lambda c: c.id)
def test_slow_case(case: Case, tmp_path: Path) -> None:
    _run(case, tmp_path)


def test_the_table_covers_every_surface_with_150_cases_or_more() -> None:
    assert len(CASES) >= 150
    assert len({c.id for c in CASES}) == len(CASES)
    assert set(collections.Counter(c.surface for c in CASES)) == set(SURFACES)
    assert {c.expect for c in CASES} == {"error", "correct", "api"}
    for c in CASES:
        assert c.expect != "error" or c.names, f"{c.id}: an error case names what it refuses"


# --- the slow cases: subprocesses (two runs at once, SIGTERM, plug-ins) ------------------------------
def _by_id(name: str) -> Case:
    return next(c for c in CASES if c.id == name)


def _many_points(folder: Path, name: str = "many") -> Path:
    doc = {**BASES["ddppm"], "name": name, "repeats": 4,
           "protocol": {"iterations": 3, "consensus_steps": list(range(1, 41))}}
    path = folder / f"{name}.toml"
    path.write_text(dump(doc), encoding="utf-8")
    return path


@pytest.mark.slow
def test_two_runs_into_one_folder(tmp_path: Path) -> None:
    """conc-two-runs-one-folder: both start at once; each either finishes or is refused naming the
    folder's lock, at least one finishes, and the folder ends with the tables of a lone run."""
    assert _by_id("conc-two-runs-one-folder").check == "two_runs"
    scenario = _many_points(tmp_path)
    out = tmp_path / "out"
    argv = [sys.executable, "-c", CLI, "run", str(scenario), "--out", str(out), "-q"]
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    procs = [subprocess.Popen(argv, cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    assert any(code == 0 for code, _ in results), results
    for code, err in results:
        assert "Traceback" not in err
        assert code == 0 or (code == 2 and "lock" in err and len(err.strip().splitlines()) == 1), err
    alone = tmp_path / "alone"
    assert subprocess_cli(["run", str(scenario), "--out", str(alone), "-q"], tmp_path).returncode == 0
    for table in TABLES:
        assert (out / table).read_bytes() == (alone / table).read_bytes()


@pytest.mark.slow
def test_sigterm_keeps_points_and_the_rerun_finishes(tmp_path: Path) -> None:
    """sig-term-keeps-points: SIGTERM once points are stored: exit 143, one line, and the rerun ends
    with the tables of an uninterrupted run."""
    assert _by_id("sig-term-keeps-points").check == "sigterm_resume"
    scenario = _many_points(tmp_path)
    out = tmp_path / "out"
    argv = [sys.executable, "-c", CLI, "run", str(scenario), "--out", str(out), "-q"]
    proc = subprocess.Popen(argv, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(SRC)},
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if any(tmp_path.glob("*/points/*.json")):
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    code, err = proc.wait(timeout=120), proc.stderr.read()
    if code == 0:
        pytest.skip("the run finished before SIGTERM arrived")
    assert code == 143 and "Traceback" not in err, err
    assert subprocess_cli(["run", str(scenario), "--out", str(out), "-q"], tmp_path).returncode == 0
    alone = tmp_path / "alone"
    assert subprocess_cli(["run", str(scenario), "--out", str(alone), "-q"], tmp_path).returncode == 0
    for table in TABLES:
        assert (out / table).read_bytes() == (alone / table).read_bytes()


PLUGINS = {
    "plugin_raise": {"one": "register(kind('bad-good'))\n    raise RuntimeError('boom')"},
    "plugin_duplicate": {"one": "register(kind('dup'))", "two": "register(kind('dup'))"},
    "plugin_build": {"one": "register(kind('bad-build', build=broken))"},
    "plugin_not_callable": {"one": "pass\n\n\nregister_kinds = 5  # noqa"},
    "plugin_section_clash": {"one": "register(ProtocolKind(name='clash', family='plug_one', "
                                    "estimates='-', section='ppm', fields={}, build=lambda i: None))"},
}
PLUGIN_MODULE = '''
from dpgossip.protocols.registry import ProtocolKind, register


def kind(name, build=lambda inputs: None):
    return ProtocolKind(name=name, family="plug_{ep}", estimates="-", build=build)


def broken(inputs):
    raise RuntimeError("the plug-in's own bug")


def register_kinds():
    {body}
'''


def _plugin_site(folder: Path, setup: str) -> Path:
    site = folder / "site"
    for ep, body in PLUGINS[setup].items():
        info = site / f"plug_{ep}-0.1.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: plug_{ep}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(
            f"[dpgossip.protocols]\nplug_{ep} = plug_{ep}:register_kinds\n")
        (site / f"plug_{ep}.py").write_text(PLUGIN_MODULE.format(ep=ep, body=body))
    return site


@pytest.mark.slow
@pytest.mark.parametrize("case", [c for c in CASES if c.setup.startswith("plugin")], ids=lambda c: c.id)
def test_plugin_case(case: Case, tmp_path: Path) -> None:
    """A misbehaving plug-in: a warning line per skipped plug-in at most, then one error line naming the
    kind, no traceback, nothing written."""
    site = _plugin_site(tmp_path, case.setup)
    scenario = tmp_path / "s.toml"
    scenario.write_text(scenario_text(case), encoding="utf-8")
    env = {"PYTHONPATH": os.pathsep.join([str(site), str(SRC)])}
    done = subprocess_cli([a.format(scenario=scenario, out=tmp_path / "out", tmp=tmp_path)
                           for a in case.argv], tmp_path, env=env)
    assert "Traceback" not in done.stderr, done.stderr
    errors = [x for x in done.stderr.splitlines() if not x.startswith("dpgossip: warning:")]
    assert done.returncode == case.code and len(errors) == 1, done.stderr
    assert all(n in errors[0] for n in case.names), errors[0]
    assert not (tmp_path / "out").exists()
