"""``dpgossip protocols``: one line per registered kind, with what it estimates, its home, backends,
views, guarantee and section; a kind registered by a package outside dpgossip is listed too."""

from __future__ import annotations

import json

import pytest

from dpgossip.cli import main
from dpgossip.protocols import registry
from dpgossip.protocols.registry import ProtocolKind, kind, register

BUILT_IN = {"ddppm": ("ddppm", "[privacy]"), "ddppm-floorfree": ("ddppm", "[floorfree]"),
            "ppm": ("ppm", "[ppm]"), "ppm-federated": ("ppm", "[ppm]"), "ppm-gossip": ("ppm", "[ppm]"),
            "capepca": ("cape", "[cape]"), "capepca-gossip": ("cape", "[cape]")}
"""The built-in kinds, their homes and sections (as the scenario files of docs/scenarios.md use them)."""


def test_every_built_in_kind_is_one_line_with_its_home_and_section(capsys):
    assert main(["protocols"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header, body = lines[0].split(), lines[1:]
    assert header == ["kind", "home", "backends", "section", "views", "guarantee", "estimates"]
    assert len(body) == len(registry.kinds())
    listed = {line.split()[0]: line for line in body}
    for name, (home, section) in BUILT_IN.items():
        words = listed[name].split()
        assert words[1] == home and section in words, listed[name]
        assert "matrix," in words and "engine" in words  # every built-in kind runs on both backends


def test_json_has_the_rows_of_every_kind(capsys):
    assert main(["protocols", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["kind"]: (r["home"], r["section"]) for r in rows if r["kind"] in BUILT_IN} == BUILT_IN
    assert all(set(r) == {"kind", "estimates", "home", "backends", "views", "guarantee", "section"}
               for r in rows)
    assert next(r for r in rows if r["kind"] == "ppm-gossip")["views"] == "sum, single agent"


def test_a_kind_registered_from_outside_is_listed(capsys, monkeypatch: pytest.MonkeyPatch):
    kind("ddppm")  # load the built-in kinds before patching the registry
    monkeypatch.setattr(registry, "_KINDS", dict(registry._KINDS))
    register(ProtocolKind(name="toy-average", family="toyhome", estimates="the mean of the rows",
                          backends=("matrix",), views=("observer",), guarantee="none"))
    assert main(["protocols"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("toy-average"))
    assert line.split()[:4] == ["toy-average", "toyhome", "matrix", "-"]
    assert line.endswith("the mean of the rows")


def test_a_reader_that_closes_the_pipe_ends_the_command_quietly():
    """`dpgossip protocols | head -1`: the reader closes the pipe before the table is written; before,
    "Broken pipe" and exit 1 (or Python's "Exception ignored" at exit)."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "import sys; from dpgossip.cli import main; "
                             "sys.exit(main(['protocols']))"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before anything is written
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0 and err == ""


@pytest.mark.parametrize("columns", [80, 120])
def test_on_a_terminal_the_list_fits_its_width(capsys, monkeypatch, columns):
    """Before, the table was up to 254 characters wide whatever the terminal; piped, it stays one line
    per kind (the tests above)."""
    import sys

    monkeypatch.setenv("COLUMNS", str(columns))
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert main(["protocols"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= columns
    blocks = out.strip().split("\n\n")
    assert [b.splitlines()[0] for b in blocks] == [k.name for k in registry.kinds()]
    ppm = next(b for b in blocks if b.startswith("ppm-gossip\n"))
    assert "  home: ppm" in ppm and "  section: [ppm]" in ppm
    assert "estimates: " in ppm and "guarantee: " in ppm
