"""Runs one break-it case (``tests/break_it/cases.py``) in a sandbox folder and judges its outcome:
the command through :func:`dpgossip.cli.main` in this process (stderr and stdout captured), an API call
by ``eval``, or, for the slow cases, subprocesses."""

from __future__ import annotations

import contextlib
import functools
import io
import json
import math
import os
import shutil
import stat
import subprocess
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from dpgossip.cli import build_parser as _build_parser
from tests.break_it.cases import BASES, Case
from tests.break_it.toml_text import dump, edited

CLI = "import sys; from dpgossip.cli import main; sys.exit(main(sys.argv[1:]))"
TABLES = ("runs.csv", "iterations.csv", "points.csv")


def scenario_text(case: Case) -> str | bytes | None:
    """The scenario file of ``case``: its raw text, or its base with its edits."""
    if case.raw is not None:
        return case.raw
    if not case.base:
        return None
    return dump(edited(BASES[case.base], case.edits))


def snapshot(folder: Path) -> dict[str, Any]:
    """Every path under ``folder`` with its bytes (files), its target (links) or ``"dir"``."""
    out: dict[str, Any] = {}
    for p in sorted(folder.rglob("*")):
        key = str(p.relative_to(folder))
        if p.is_symlink():
            out[key] = ("link", os.readlink(p))
        elif p.is_dir():
            out[key] = "dir"
        elif not p.is_file():  # a pipe or device: its kind, never its content
            out[key] = ("special", stat.S_IFMT(p.stat().st_mode))
        else:
            out[key] = p.read_bytes()
    return out


@functools.cache
def _parser() -> Any:
    return _build_parser()


def cli(argv: list[str]) -> tuple[int, str, str]:
    """``main(argv)`` in this process: exit code (argparse's ``SystemExit`` included), stdout, stderr;
    an exception that escapes ``main`` is returned as its traceback on stderr with code -1. The parser
    is built once (parsing does not change it; building it is most of a refused case's time)."""
    import dpgossip.cli
    from dpgossip.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            _patched(dpgossip.cli, "build_parser", _parser):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
        except BaseException:  # noqa: BLE001 - the outcome to judge
            traceback.print_exc()
            code = -1
    return code, out.getvalue(), err.getvalue()


def subprocess_cli(argv: list[str], cwd: Path, env: dict[str, str] | None = None,
                   timeout: float = 120) -> subprocess.CompletedProcess[str]:
    src = str(Path(__file__).resolve().parents[2] / "src")
    full = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", ""),
            **(env or {})}
    return subprocess.run([sys.executable, "-c", CLI, *argv], cwd=cwd, env=full, capture_output=True,
                          text=True, timeout=timeout, check=False)


class Sandbox:
    """The sandbox of one case: its folder, scenario file, output folder and tables of a first run."""

    def __init__(self, case: Case, folder: Path) -> None:
        self.case, self.tmp = case, folder
        self.scenario = folder / "s.toml"
        self.out = folder / "out"
        self.first: dict[str, bytes] = {}
        self.env: dict[str, str] = {}
        self.cleanups: list[Any] = []

    def argv(self) -> list[str]:
        return [a.format(scenario=self.scenario, out=self.out, tmp=self.tmp) for a in self.case.argv]

    def write_files(self) -> None:
        for name, content in self.case.files:
            path = self.tmp / name
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content, encoding="utf-8")

    def first_run(self, base: str | None = None, name: str | None = None, argv: tuple = ()) -> None:
        """Run the case's base scenario (unedited) into ``out`` and keep its tables."""
        doc = BASES[base or self.case.base or "ddppm"]
        if name:
            doc = {**doc, "name": name}
        first = self.tmp / "first.toml"
        first.write_text(dump(doc), encoding="utf-8")
        code, _, err = cli([*(argv or ("run",)), str(first), "--out", str(self.out), "-q"])
        assert code == 0, err
        first.unlink()
        self.first = {p.name: p.read_bytes() for p in sorted(self.out.glob("*.csv"))}


def chattr(path: Path, on: bool) -> bool:
    if shutil.which("chattr") is None:
        return False
    done = subprocess.run(["chattr", "+i" if on else "-i", str(path)], capture_output=True, check=False)
    return done.returncode == 0


def _setup_one(box: Sandbox, step: str) -> None:  # noqa: C901 - one branch per named setup
    from dpgossip.scenario.lock import folder_lock, lock_path

    tmp, out = box.tmp, box.out
    if step == "empty_folder":
        (tmp / "empty").mkdir()
    elif step == "first_run":
        box.first_run()
    elif step == "results_corrupt_summary":
        box.first_run()
        (out / "summary.json").write_text('{"points": [', encoding="utf-8")
    elif step == "results_corrupt_runs":
        box.first_run()
        (out / "runs.csv").write_bytes(b"\x00\x01garbage\n\x02")
    elif step == "other_audit":
        box.first_run(base="audit", name="other", argv=("audit", "--no-plots"))
    elif step in ("immutable_ro", "immutable_out"):
        target = tmp / "ro" if step == "immutable_ro" else out
        target.mkdir(exist_ok=True)
        if not chattr(target, True):
            raise RuntimeError("skip: chattr +i is not available here")
        box.cleanups.append(lambda: chattr(target, False))
    elif step == "tmpfs_out":  # the output folder on a small file system of its own (root only)
        disk = tmp / "disk"
        disk.mkdir()
        if shutil.which("mount") is None or subprocess.run(
                ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)],
                capture_output=True, check=False).returncode != 0:
            raise RuntimeError("skip: a tmpfs cannot be mounted here (root only)")
        box.cleanups.append(lambda: subprocess.run(["umount", "-l", str(disk)], check=False))
        box.out = disk / "out"
    elif step in ("fill_disk", "fill_disk_but_32k"):  # that file system taken by another file
        filler = tmp / "disk" / "filler"
        with open(filler, "wb", buffering=0) as fh:
            try:
                while True:
                    fh.write(b"\0" * 4096)
            except OSError:
                pass
        if step == "fill_disk_but_32k":  # room for the lock and a few files, not for the results
            os.truncate(filler, max(filler.stat().st_size - 32768, 0))
    elif step == "delete_runs_csv":
        (out / "runs.csv").unlink()
    elif step == "corrupt_point":
        point = sorted((out / "points").glob("*.json"))[0]
        point.write_bytes(point.read_bytes()[: len(point.read_bytes()) // 2])
    elif step in ("corrupt_graph", "corrupt_mode"):  # a network-DP graph's or a mode's stored record
        stored = sorted((out / ("graphs" if step == "corrupt_graph" else "modes")).glob("*.json"))[0]
        stored.write_text("{garbage", encoding="utf-8")
    elif step == "first_audit":
        box.first_run(argv=("audit", "--no-plots"))
    elif step in ("point_empty_json", "point_list_json", "audit_point_other_json"):
        text = {"point_empty_json": "{}", "point_list_json": "[1, 2]",
                "audit_point_other_json": '{"x": 1}'}[step]
        for stored in (out / "points").glob("*.json"):
            stored.write_text(text, encoding="utf-8")
    elif step == "targets_garbage":
        for stored in (out / "points").rglob("*.targets/*"):
            stored.write_text("{garbage", encoding="utf-8")
    elif step == "summary_list":
        (out / "summary.json").write_text("[]", encoding="utf-8")
    elif step == "config_list":
        (out / "config.resolved.json").write_text("[1]", encoding="utf-8")
    elif step == "corrupt_config":
        (out / "config.resolved.json").write_text('{"name": ', encoding="utf-8")
    elif step == "lock_is_folder":
        lock_path(out).mkdir(parents=True)
    elif step == "fifo":
        os.mkfifo(tmp / "fifo")
    elif step == "symlink_loop":
        (tmp / "loop").symlink_to(tmp / "loop")
    elif step == "env_memory_lots":
        box.env["DPGOSSIP_MEMORY_LIMIT"] = "lots"
    elif step == "env_memory_1e999":
        box.env["DPGOSSIP_MEMORY_LIMIT"] = "1e999"
    elif step == "env_memory_1kb":
        box.env["DPGOSSIP_MEMORY_LIMIT"] = "1KB"
    elif step == "hold_lock":
        held = folder_lock(out)
        held.__enter__()
        box.cleanups.append(lambda: held.__exit__(None, None, None))
    elif step == "stale_lock":
        lock_path(out).write_text(json.dumps({"pid": 2**22 + 7, "host": "gone", "command": "run"}))
    elif step.startswith("folder_"):
        (tmp / step.removeprefix("folder_")).mkdir()
    elif step.startswith("npy_"):
        arrays = {"npy_1d": np.arange(8.0), "npy_inf": np.array([[1.0, np.inf], [2.0, 3.0]] * 4)}
        if step == "npy_object":
            np.save(tmp / "d.npy", np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
        else:
            np.save(tmp / "d.npy", arrays[step])
    else:
        raise AssertionError(f"unknown setup {step!r}")


def prepare(box: Sandbox) -> None:
    """Write the case's files and scenario, then run its setup steps."""
    box.write_files()
    text = scenario_text(box.case)
    if isinstance(text, bytes):
        box.scenario.write_bytes(text)
    elif text is not None:
        box.scenario.write_text(text, encoding="utf-8")
    for step in filter(None, box.case.setup.split(",")):
        _setup_one(box, step)


@contextlib.contextmanager
def environment(box: Sandbox) -> Iterator[None]:
    old_cwd, old_env = os.getcwd(), {k: os.environ.get(k) for k in box.env}
    os.chdir(box.tmp)
    os.environ.update(box.env)
    try:
        yield
    finally:
        os.chdir(old_cwd)
        for k, v in old_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        for undo in reversed(box.cleanups):
            undo()


def error_problem(case: Case, code: int, err: str, before: dict, after: dict) -> str:
    """What is wrong with an *error* outcome ("" when nothing is)."""
    if "Traceback" in err or code == -1:
        return f"traceback: {err.strip().splitlines()[-1] if err.strip() else ''}"
    lines = [x for x in err.strip().splitlines() if not x.startswith("dpgossip: warning:")]
    usage = bool(lines) and lines[0].startswith("usage:")
    if usage:  # argparse: its usage, then one error line
        lines = [x for x in lines if ": error: " in x]
    if code != case.code:
        return f"exit {code}, expected {case.code}: {err.strip()[-300:]}"
    if len(lines) != 1:
        return f"{len(lines)} stderr lines, expected one: {err.strip()[-300:]}"
    line = lines[0]
    if not usage and not line.startswith("dpgossip: error: "):
        return f"not an error line: {line}"
    missing = [n for n in case.names if n not in line]
    if missing:
        return f"the line does not name {missing}: {line}"
    if before != after:
        changed = sorted(set(before) ^ set(after) | {k for k in before if after.get(k) != before[k]})
        return f"files changed: {changed[:5]}"
    return ""


def check_problem(box: Sandbox, code: int, out: str, err: str) -> str:
    """What is wrong with a *correct* outcome ("" when nothing is)."""
    import csv

    case = box.case
    if "Traceback" in err or code == -1:
        return f"traceback: {err.strip().splitlines()[-1]}"
    if code != 0:
        return f"exit {code}: {err.strip()[-300:]}"
    if case.check == "protocols_json":
        rows = json.loads(out)
        return "" if any(r["kind"] == "ddppm" for r in rows) else f"no ddppm row in {out[:200]}"
    tables = {p.name: p.read_bytes() for p in sorted(box.out.glob("*.csv"))}
    if case.check == "same_tables_as_first" and tables != box.first:
        return f"tables differ from the first run's: {sorted(set(tables) ^ set(box.first))} " \
               f"{[t for t in tables if tables[t] != box.first.get(t)]}"
    if case.check in ("ok_dyn", "same_tables_as_first") and not (box.out / "runs.csv").is_file():
        return "" if tables else "no table written"
    rows = list(csv.DictReader((box.out / "runs.csv").open(encoding="utf-8")))
    if case.check == "flagged_not_ok":  # not ok, and said so on stderr and in the status column
        flagged = rows and all(r["status"] != "ok" and r["status_reason"] for r in rows)
        return "" if flagged and "not ok" in err else f"not flagged: {err.strip()[-200:]}"
    if not rows or any(r["status"] != "ok" for r in rows):
        return f"runs.csv: {len(rows)} rows, statuses {sorted({r['status'] for r in rows})}"
    for r in rows:  # the estimate's error is a sine in [0, 1]; ALS's is its held-out RMSE
        error, rmse = float(r.get("error") or "nan"), float(r.get("rmse") or "nan")
        if not (0 <= error <= 1 or (math.isnan(error) and 0 < rmse < math.inf)):
            return f"repeat {r.get('repeat')}: error {error}, rmse {rmse}"
    if case.check == "no_plots" and any((box.out / "plots").glob("*.png")):
        return "plots drawn despite --no-plots"
    if case.check == "not_first_tables" and tables["runs.csv"] == box.first["runs.csv"]:
        return "runs.csv of the first seed reused (stale)"
    return ""


@contextlib.contextmanager
def _patched(module: Any, name: str, value: Any) -> Iterator[None]:
    old = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, old)


@functools.cache
def _api_objects() -> dict[str, Any]:
    return api_namespace()


def api_namespace() -> dict[str, Any]:
    import dpgossip as dg

    data = dg.load_dataset("synthetic", agents=4, rng=np.random.default_rng(0), standardize=False,
                           synthetic={"n": 16, "d": 2, "spectrum": [1.0, 0.5]})
    net = dg.make_network("ring", agents=4)
    params = dg.resolve_params(data, net, iterations=2, consensus_steps=1)
    noisy = dg.resolve_params(data, net, iterations=2, consensus_steps=1,
                              noise=dg.NoiseSchedule(kind="constant", scale=1.0))
    from dpgossip.privacy.accountant import calibrate_zcdp_noise
    from dpgossip.privacy.linear_audit import LinearAuditSettings
    from dpgossip.protocols.gossip.linear import LinearGossip
    from dpgossip.protocols.ppm.central import PpmParams

    return {"dg": dg, "np": np, "DATA": data, "NET": net, "PARAMS": params, "NOISY": noisy,
            "LinearGossip": LinearGossip, "LinearAuditSettings": LinearAuditSettings,
            "calibrate_zcdp_noise": calibrate_zcdp_noise, "PpmParams": PpmParams}


def api_problem(case: Case) -> str:
    from dpgossip.errors import ConfigError

    try:
        eval(case.api, dict(_api_objects()))  # noqa: S307 - the case's own expression
    except ConfigError as exc:
        missing = [n for n in case.names if n not in str(exc)]
        return f"the error does not name {missing}: {exc}" if missing else ""
    except Exception as exc:  # noqa: BLE001 - the outcome to judge
        return f"{type(exc).__name__} instead of ConfigError: {exc}"
    return "no error raised"


def problem(case: Case, folder: Path) -> str:
    """Run ``case`` in the empty folder ``folder``; "" when its outcome is the expected one, else what
    went wrong."""
    import importlib.util

    if case.expect == "correct" and "fastest" in repr(case.edits) and \
            importlib.util.find_spec("cvxpy") is None:
        raise RuntimeError("skip: the fastest mixing rule needs cvxpy (pip install 'dpgossip[fmmc]')")
    box = Sandbox(case, folder)
    try:
        prepare(box)
    except BaseException:  # a setup that failed half-way undoes what it did (a mounted tmpfs)
        for undo in reversed(box.cleanups):
            undo()
        raise
    with environment(box):
        if case.expect == "api":
            return api_problem(case)
        before = snapshot(folder)
        code, out, err = cli(box.argv())
        after = snapshot(folder)
    if case.expect == "error":
        return error_problem(case, code, err, before, after)
    return check_problem(box, code, out, err)
