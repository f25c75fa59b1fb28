"""Fuzz ``dpgossip run`` in-process with generated scenario, data and topology files, valid and broken.

Every generated case runs ``dpgossip.cli.main(["run", ...])`` with captured stdout/stderr in a fresh
sandbox folder (the working directory during the call) and must

* never print a traceback, nor raise anything but ``SystemExit`` (argparse);
* on failure (exit != 0), say so on stderr in a ``dpgossip ... error`` line;
* on success, not leave non-finite metrics unflagged in ``runs.csv``;
* never create anything outside its output folder (``--out``, ``[output] dir`` or ``results/<name>``).

Hypothesis draws a seed per case and :func:`make_case` builds the case from it with :mod:`random` (so that
500 cases spread over the whole space instead of clustering). Reproducible: ``derandomize=True`` (the
seeds depend only on this file); a failure prints the seed and the generated case (scenario text, data
and topology files, arguments): ``make_case(seed)`` rebuilds it. ``DPGOSSIP_MEMORY_LIMIT`` is set low
so that oversized settings are refused by the size checks at once.
"""

from __future__ import annotations

import contextlib
import copy
import csv
import io
import math
import os
import random
import re
import tempfile
import traceback
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpgossip.cli import main

EXAMPLES = int(os.environ.get("DPGOSSIP_FUZZ_EXAMPLES", "500"))
"""Cases per run (500, about 15 s); set ``DPGOSSIP_FUZZ_EXAMPLES`` for a longer search."""
METRICS = ("error", "subspace_distance", "captured_energy", "ldp_error")
PLAIN_NAME = re.compile(r"[\w.-]+")

# --- values: each setting has valid choices and bad ones (wrong type, negative, huge, a sweep) -------

HUGE = [10**9, 10**12, 2**62] * 2
WRONG = ["3", 2.5, True, [], {}, ""]
# Finite but huge alpha or noise (1e300, 1e308) overflow inside the run: the run must flag the points
# (status column, exit 1), not report them as ok.
FIELDS: dict[str, tuple[list[Any], list[Any]]] = {
    "name": (["fz", "fz-1", "fz.run_2"],
             ["../escaped", "@SANDBOX@/abs", ".", "..", "a/b", "a\\b", "", "x" * 300, 7]),
    "seed": ([0, 1, 5], [-1, *WRONG]),
    "repeats": ([1, 1, 2], [0, -1, *HUGE, *WRONG]),
    "source": (["wine", "synthetic", "data.csv", "data.csv"],
               ["missing.csv", "data.npy", "wines", "/", "..", "data.txt", 42]),
    "topology": (["ring", "path", "complete", "star", "topo.edgelist", "topo.json"],
                 ["rign", "missing.json", "topo.graphml", "grid", "hypercube", 5]),
    "agents": ([3, 4, 4, 5, 6, None], [-3, 0, 1, 2, *HUGE, *WRONG, [3, 4]]),
    "iterations": ([1, 2, 3], [-2, 0, *HUGE, *WRONG, [1, 2], list(range(1, 50001))]),
    "consensus_steps": ([0, 1, 2, 3], [-1, *HUGE, *WRONG, [0, 2], list(range(100000))]),
    "rank": ([1, 1, 2], [0, 100, *WRONG]),
    "alpha": (["geometric_mean", {"position": 0.3}, 1.0, 0.5],
              [-1.0, 0.0, "fast", {"position": 2.0}, {"pos": 0.5}, math.inf, math.nan, True,
               1e308, 1e150]),
    "noise": ([{"schedule": "constant", "scale": 0.5}, {"schedule": "geometric"},
               {"schedule": "explicit", "values": [0.1, 0.1, 0.1]}],
              [{"schedule": "constant", "scale": -1.0}, {"scale": math.inf}, {"scale": math.nan},
               {"schedule": "pink"}, {"schedule": "explicit"}, {"scale": "big"}, {"values": [-1.0]},
               3.0, {"schedule": "constant", "scale": 1e300}, {"schedule": "constant", "scale": 1e200}]),
    "synthetic": ([{"n": 12, "d": 3, "spectrum": [1.0, 0.5]}, {"n": 40, "d": 2, "spectrum": [1.0]},
                   {"n": 9, "d": 4, "spectrum": {"kind": "geometric", "ratio": 0.5}}],
                  [{"n": 10**12, "d": 10, "spectrum": [1.0]}, {"n": 5}, {"n": 2, "d": 2,
                   "spectrum": [1.0]}, {"n": -1, "d": 2, "spectrum": [1.0]},
                   {"n": 8, "d": 2, "spectrum": [1.0, 2.0]}, {"n": 8, "d": 2, "spectrum": "flat"}]),
    "mixing": (["metropolis", "max_degree", "lazy_metropolis"], ["explicit", "nope", 1]),
    "backend": (["matrix", "engine"], ["gpu", 0]),
    "engine": ([{"loss": 0.1, "retransmit": True}, {"latency": {"kind": "constant", "value": 0.1}}],
               [{"loss": 2.0}, {"lattency": 1}, "fast"]),
    "baseline": ([{"ldp": True, "epsilon": 5.0, "delta": 1e-5}], [{"ldp": True}, {"epsilon": -1.0}]),
    "partition": (["equal", "random"], ["explicit", "weird", 3]),
    "sizes": ([None], [[1, 1], [0, 100, 3, 2], [-1, 5, 5, 5], "2,2"]),
    "scale": (["max_norm", "unit_rows"], ["none", "huge", False]),
    "center": ([True, False], ["yes", 1]),
    "params": ([None], [{"p": 0.3}, {"rows": 2, "cols": 2}, {"degree": -1}, "x"]),
    "min_rows": ([1], [0, 10**9, 100, "1"]),
}


def scenario_table(rnd: random.Random) -> dict[str, Any]:
    """A scenario as a dict. Mode ``valid``: every setting from its valid choices; ``one_bad``: exactly
    one setting bad; ``chaos``: each setting bad with probability 1/3, sometimes an unknown key added
    or a required one removed (and broken files and arguments, see :func:`make_case`). Optional
    settings are present or not."""
    mode = rnd.choice(["valid"] * 5 + ["one_bad"] * 4 + ["chaos"])
    odd = rnd.choice(sorted(FIELDS) + ["name"] * 4)  # names that escape results/ matter most

    def value(field: str) -> Any:
        bad = (mode == "one_bad" and field == odd) or (mode == "chaos" and rnd.random() < 1 / 3)
        good, wrong = FIELDS[field]
        return copy.deepcopy(rnd.choice(wrong if bad else good))

    sc: dict[str, Any] = {"name": value("name"), "seed": value("seed"), "repeats": value("repeats"),
                          "description": f"fuzz {mode}" + (f" {odd}" if mode == "one_bad" else "")}
    sc["data"] = {"source": value("source")}
    sc["network"] = {"topology": value("topology")}
    m = value("agents")
    if m is not None or not str(sc["network"]["topology"]).startswith("topo."):
        sc["network"]["agents"] = 4 if m is None else m
    sc["protocol"] = {"iterations": value("iterations"), "consensus_steps": value("consensus_steps")}
    sc["output"] = {"plots": False}
    if sc["data"]["source"] == "synthetic" or (mode == "one_bad" and odd == "synthetic"):
        sc["data"]["synthetic"] = value("synthetic")
        sc["data"]["standardize"] = False
    for key, section in (("rank", "protocol"), ("alpha", "protocol"), ("noise", "protocol"),
                         ("mixing", "network"), ("params", "network"), ("partition", "data"),
                         ("sizes", "data"), ("scale", "data"), ("center", "data"),
                         ("min_rows", "data")):
        if (mode == "one_bad" and key == odd) or rnd.random() < 0.2:
            v = value(key)
            if v is not None:
                sc[section][key] = v
    if (mode == "one_bad" and odd == "backend") or rnd.random() < 0.2:
        sc["backend"] = value("backend")
    if sc.get("backend") == "engine" or (mode == "one_bad" and odd == "engine"):
        if rnd.random() < 0.5:
            sc["engine"] = value("engine")
    if (mode == "one_bad" and odd == "baseline") or rnd.random() < 0.2:
        sc["baseline"] = value("baseline")
    if rnd.random() < 0.1:
        sc["output"]["dir"] = rnd.choice(["custom_out", "../outside"])
    if mode == "chaos" and rnd.random() < 0.3:  # an unknown key somewhere
        where = rnd.choice(["", "data", "network", "protocol"])
        (sc if not where else sc[where])[rnd.choice(["iteratons", "extra", "agent"])] = 1
    if mode == "chaos" and rnd.random() < 0.3:  # a missing key or section
        path = rnd.choice(["name", "data", "network.topology", "protocol.iterations"])
        node = sc
        *head, last = path.split(".")
        for part in head:
            node = node[part]
        node.pop(last, None)
    return sc


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    if v is None:
        return '""'
    raise TypeError(v)


def to_toml(sc: dict[str, Any]) -> str:
    top = [f"{k} = {_toml_value(v)}" for k, v in sc.items() if not isinstance(v, dict)]
    sections = [f"[{k}]\n" + "\n".join(f"{kk} = {_toml_value(vv)}" for kk, vv in v.items())
                for k, v in sc.items() if isinstance(v, dict)]
    return "\n".join(top) + "\n\n" + "\n\n".join(sections) + "\n"


# --- files -------------------------------------------------------------------------------------------

BAD_CELLS = ["1e308", "-1e308", "nan", "inf", "abc", "", "1;2", " 3 "]


def csv_file(rnd: random.Random, valid: bool) -> bytes:
    kinds = ["good"] * 3 + ["cells", "ragged", "empty", "header", "binary", "one_row", "constant"]
    kind = "good" if valid else rnd.choice(kinds)
    rows, cols = rnd.randint(8, 30), rnd.randint(1, 4)

    def good() -> str:
        return f"{rnd.uniform(-5, 5):.4f}"

    def cell() -> str:
        return rnd.choice(BAD_CELLS) if rnd.random() < 0.2 else good()

    if kind == "good":
        lines = [",".join(good() for _ in range(cols)) for _ in range(rows)]
    elif kind == "cells":
        lines = [",".join(cell() for _ in range(cols)) for _ in range(rows)]
    elif kind == "ragged":
        lines = [",".join(good() for _ in range(rnd.randint(1, 4))) for _ in range(rows)]
    elif kind == "empty":
        return b""
    elif kind == "header":
        return b"a,b,c\n"
    elif kind == "binary":
        return rnd.randbytes(rnd.randint(1, 64)) + b"\xff\xfe"
    elif kind == "one_row":
        lines = [",".join(good() for _ in range(cols))]
    else:
        lines = ["1,2,3"] * rows
    return ("\n".join(lines) + "\n").encode()


def topology_files(rnd: random.Random, k: int, valid: bool) -> dict[str, bytes]:
    """Topology files of ``k`` nodes (valid ones, or else often broken) and a garbage ``.npy``."""
    ring = "\n".join(f"{i} {(i + 1) % k}" for i in range(k)) + "\n"
    edgelist = ring if valid else rnd.choice(
        [ring, "0 1\n2 3\n", "0 1 0.5\n1 2\n", "# nothing\n", "a b c d\n", "0 0\n"])
    nodes = ", ".join(f'{{"id": {i}}}' for i in range(k))
    links = ", ".join(f'{{"source": {i}, "target": {(i + 1) % k}}}' for i in range(k))
    good_json = f'{{"directed": false, "multigraph": false, "graph": {{}}, "nodes": [{nodes}], ' \
                f'"edges": [{links}]}}'
    js = good_json if valid else rnd.choice(
        [good_json, "{", "[]", '{"nodes": 3}', good_json.replace("false", "true", 1)])
    return {"topo.edgelist": edgelist.encode(), "topo.json": js.encode(),
            "topo.graphml": rnd.randbytes(rnd.randint(0, 48)),
            "data.npy": rnd.randbytes(rnd.randint(0, 32))}


def make_case(seed: int) -> dict[str, Any]:
    """Everything one run needs, generated from ``seed``: the scenario file (TOML, or garbage bytes,
    non-UTF-8 or broken TOML), the data and topology files it may name, ``--out`` or not, extra
    arguments."""
    rnd = random.Random(seed)
    form = rnd.choice(["toml"] * 16 + ["garbage", "non_utf8", "broken_toml"])
    k, valid = rnd.randint(2, 6), False
    if form == "toml":
        table = scenario_table(rnd)
        valid = not table["description"].startswith("fuzz chaos")  # valid files and arguments
        m = table.get("network", {}).get("agents")
        k = m if isinstance(m, int) and not isinstance(m, bool) and 2 <= m <= 6 else k
        scenario = to_toml(table).encode()
    elif form == "garbage":
        scenario = rnd.randbytes(rnd.randint(0, 120))
    elif form == "non_utf8":
        scenario = b'name = "fz"\n# \xff\xfe\xfd\n'
    else:
        scenario = "".join(rnd.choice('[]=."ab1 \n{}') for _ in range(rnd.randint(0, 60))).encode()
    args = [] if valid else rnd.choice([[]] * 5 + [
        ["--workers", "-1"], ["--scheduler", "bogus"], ["--scheduler-timeout", "-1"],
        ["--workers", "x"], ["--bogus"]])
    return {"seed": seed, "scenario": scenario, "data.csv": csv_file(rnd, valid),
            **topology_files(rnd, k, valid), "out": rnd.random() < 0.5, "args": args}


def _describe(case: dict[str, Any]) -> str:
    files = "\n".join(f"--- {k} ---\n{v.decode('utf-8', 'replace') if isinstance(v, bytes) else v}"
                      for k, v in case.items())
    return f"generated case:\n{files}"


def _allowed(case: dict[str, Any], work: Path, sandbox: Path) -> Path | None:
    """The folder the run may write to, or None when no valid output folder exists."""
    if case["out"]:
        return sandbox / "out"
    try:
        import tomllib

        raw = tomllib.loads(case["scenario"].decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    out_dir = (raw.get("output") or {}).get("dir") if isinstance(raw.get("output"), dict) else None
    if isinstance(out_dir, str) and out_dir:
        return (work / out_dir).resolve()
    name = raw.get("name")
    if isinstance(name, str) and PLAIN_NAME.fullmatch(name) and name not in (".", ".."):
        return work / "results" / name
    return None


def _snapshot(folder: Path) -> set[Path]:
    return set(folder.rglob("*"))


@pytest.fixture(autouse=True, scope="module")
def _small_memory_limit():
    old = os.environ.get("DPGOSSIP_MEMORY_LIMIT")
    os.environ["DPGOSSIP_MEMORY_LIMIT"] = "256MiB"
    yield
    if old is None:
        os.environ.pop("DPGOSSIP_MEMORY_LIMIT", None)
    else:
        os.environ["DPGOSSIP_MEMORY_LIMIT"] = old


@pytest.mark.slow  # the default suite has the break-it table (tests/break_it: 505 fixed cases)
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=st.integers(0, 2**32 - 1).map(make_case))
def test_run_never_tracebacks_escapes_or_hides_non_finite_results(case):
    with tempfile.TemporaryDirectory() as tmp:
        sandbox = Path(tmp).resolve()
        work = sandbox / "work"
        work.mkdir()
        for name in ("data.csv", "topo.edgelist", "topo.json", "topo.graphml", "data.npy"):
            (work / name).write_bytes(case[name])
        # an absolute name points into the sandbox, never at the real file system
        (work / "s.toml").write_bytes(case["scenario"].replace(b"@SANDBOX@", str(sandbox).encode()))
        argv = ["run", "s.toml", "-q", "--no-plots", *case["args"]]
        if case["out"]:
            argv += ["--out", str(sandbox / "out")]
        before = _snapshot(sandbox)
        out, err = io.StringIO(), io.StringIO()
        cwd = os.getcwd()
        os.chdir(work)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(argv)
        except SystemExit as exc:  # argparse
            code = exc.code if isinstance(exc.code, int) else 2
        except BaseException:
            pytest.fail(f"uncaught exception:\n{traceback.format_exc()}\n{_describe(case)}")
        finally:
            os.chdir(cwd)
        text = out.getvalue() + err.getvalue()
        where = f"\nstdout/stderr:\n{text}\n{_describe(case)}"
        assert "Traceback (most recent call last)" not in text, where
        if code != 0:  # an error, an unreachable target, or runs flagged in runs.csv (a warning)
            assert re.search(r"^dpgossip[\w ]*: (error|the target|warning: .* not ok)", err.getvalue(),
                             re.M), where
        allowed = _allowed(case, work, sandbox)
        created = _snapshot(sandbox) - before
        outside = [p for p in created if allowed is None
                   or not (p == allowed or allowed in p.parents or p in allowed.parents)]
        assert not outside, f"written outside the output folder {allowed}: {sorted(outside)}{where}"
        if code == 0:
            assert allowed is not None and (allowed / "runs.csv").is_file(), where
            with open(allowed / "runs.csv", newline="") as fh:
                rows = list(csv.DictReader(fh))
            assert rows, where
            for row in rows:
                values = [row[m] for m in METRICS if row.get(m) not in (None, "")]
                finite = all(math.isfinite(float(v)) for v in values)
                assert "status" in row, where
                assert finite or row["status"] != "ok", f"unflagged non-finite row {row}{where}"
                # exit 0 means every point is ok (a diverged or non-finite point exits 1)
                assert row["status"] == "ok", f"exit 0 with a flagged row {row}{where}"
