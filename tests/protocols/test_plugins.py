"""Plug-ins that misbehave (entry points of group ``dpgossip.protocols``): each is refused with one
clear line naming it, and the built-in kinds keep working.

A plug-in package ``badplug`` (a module and its ``.dist-info``) is written to a temporary folder put on a
subprocess's ``PYTHONPATH``; the environment variable ``BADPLUG`` tells its entry point how to misbehave:
raise, register a kind named like a built-in one, claim the built-in ``[network]`` section, or register
a kind that declares the matrix backend only.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dpgossip.errors import ConfigError
from dpgossip.scenario.schema import validate
from tests.protocols.outside import subprocess_env

CLI = "import sys; from dpgossip.cli import main; sys.exit(main(sys.argv[1:]))"

PLUGIN = '''
import os
from dpgossip.protocols.registry import ProtocolKind, register
from dpgossip.settings import Field

if os.environ["BADPLUG"] == "import":
    raise ImportError("no module named 'missing_dependency'")


def register_kinds():
    how = os.environ["BADPLUG"]
    register(ProtocolKind(name="bad-good", family="badplug", estimates="-", build=lambda i: None))
    if how == "raise":
        raise RuntimeError("boom")
    if how == "builtin":
        register(ProtocolKind(name="ppm-gossip", family="ppm", estimates="replaced",
                              build=lambda i: None), replace=True)
    if how == "network":
        register(ProtocolKind(name="bad-net", family="badplug", estimates="-", section="network",
                              fields={"x": Field(kind=float, default=1.0)}, build=lambda i: None))
    if how == "matrix":
        register(ProtocolKind(name="bad-matrix", family="badplug", estimates="-",
                              backends=("matrix",), build=lambda i: None))
'''

SCENARIO = """name = "plug"
seed = 1
backend = "{backend}"
[data]
source = "wine"
[network]
topology = "ring"
agents = 4
[protocol]
kind = "{kind}"
iterations = 2
consensus_steps = 2
[output]
plots = false
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("plugin") / "site"
    info = site / "badplug-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: badplug\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[dpgossip.protocols]\nbadplug = badplug:register_kinds\n")
    (site / "badplug.py").write_text(PLUGIN)
    return site


def _cli(site: Path, how: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**subprocess_env(site), "BADPLUG": how, "COLUMNS": "400"}
    return subprocess.run([sys.executable, "-c", CLI, *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=300, check=False)


def _run(site: Path, tmp_path: Path, how: str, kind: str = "ddppm", backend: str = "matrix"
         ) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO.format(kind=kind, backend=backend))
    return _cli(site, how, "run", str(path), "--out", str(tmp_path / "out"), "-q", cwd=tmp_path)


WARNING = ("dpgossip: warning: protocol plug-in 'badplug' ({where}'dpgossip.protocols') is skipped, "
           "its kinds are not available: {why}")


@pytest.mark.parametrize("how, where, why", [
    ("import", "entry point badplug:register_kinds of group ",
     "ImportError: no module named 'missing_dependency'"),
    ("raise", "entry point badplug:register_kinds of group ", "RuntimeError: boom"),
    ("builtin", "entry point badplug:register_kinds of group ",
     "protocol kind 'ppm-gossip' is a built-in kind of dpgossip (home 'ppm'); a plug-in cannot "
     "replace it, choose another name"),
    ("network", "entry point group ",
     "kind 'bad-net': section [network] is a section of the scenario layer; choose another section "
     "name"),
])
def test_a_broken_plugin_is_skipped_with_one_warning_and_builtins_run(site, tmp_path, how, where, why):
    done = _run(site, tmp_path, how)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [WARNING.format(where=where, why=why)]
    assert (tmp_path / "out" / "runs.csv").is_file()
    listed = _cli(site, how, "protocols", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    rows = {line.split()[0]: line for line in listed.stdout.splitlines() if line.strip()}
    assert "bad-good" not in rows and "bad-net" not in rows  # every kind of the plug-in is dropped
    assert "replaced" not in rows["ppm-gossip"]


def test_a_matrix_only_kind_refuses_the_engine_backend(site, tmp_path):
    done = _run(site, tmp_path, "matrix", kind="bad-matrix", backend="engine")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().endswith("backend = 'engine': protocol.kind = 'bad-matrix' runs on "
                                        "matrix only (its declared backends); use backend = 'matrix'")
    assert not (tmp_path / "out").exists()


def test_a_builtin_matrix_only_kind_refuses_the_engine_backend():
    raw = {"name": "als", "backend": "engine", "network": {"topology": "ring", "agents": 6},
           "protocol": {"kind": "dpals", "iterations": 2, "rank": 2, "consensus_steps": 2}}
    with pytest.raises(ConfigError, match=r"^backend = 'engine': protocol.kind = 'dpals' runs on "
                                          r"matrix only") as err:
        validate(raw)
    assert err.value.field == "backend"
    # zipped with a kind that has an engine form, it is fine
    validate({**raw, "backend": ["matrix", "engine"],
              "protocol": {**raw["protocol"], "kind": ["dpals", "dpals-gossip"]},
              "sweep": {"zip": [["protocol.kind", "backend"]]}})


def test_the_section_of_a_kind_not_installed_names_the_kind():
    raw = {"name": "na", "data": {"source": "wine"}, "network": {"topology": "ring", "agents": 4},
           "protocol": {"kind": "noisy-average", "iterations": 1, "consensus_steps": 1},
           "noisy_average": {"noise_std": 0.1}}
    with pytest.raises(ConfigError, match=r"^protocol.kind = 'noisy-average' is not installed: no "
                                          "built-in home or installed plug-in registers it") as err:
        validate(raw)
    assert err.value.field == "protocol.kind"
