"""Run a dynamic-gossip scenario: consensus error and exact leakage of each mode of gossip averaging.

For each mode of the scenario (:mod:`~dpgossip.scenario.dynamic_gossip_config`) the runs
(:mod:`~dpgossip.scenario.dynamic_gossip_runs`) give the consensus-error curves and the exact
known-schedule leakage of every audited pair; :mod:`~dpgossip.scenario.dynamic_gossip_tables` makes
the tidy tables.  Files in the results folder (all written atomically):

* ``consensus_time.csv``: one row per (mode, time);
* ``consensus_messages.csv``: one row per (mode, delivered-message count);
* ``leakage.csv``: one row per (mode, graph distance), with the number of schedules and a ``note``
  saying that a sampled maximum is an estimate, not a bound;
* ``pairs.csv``: one row per (mode, observer, target);
* ``modes/<index>-<label>.json``: one mode's rows, written when the mode is done, with a key of its
  settings: a rerun skips every mode whose stored key matches, so an interrupted run resumes per mode
  and an edited mode alone is recomputed;
* ``summary.json`` (per mode: runs, steps and messages of the runs, seconds, resumed) and
  ``config.resolved.json``.

The graph and every mode are built and checked before anything is written; the run writes into a
staging folder swapped in when it succeeds, under the folder's lock (:mod:`~dpgossip.scenario.staging`;
``modes/`` is its resume store), so a failed or interrupted run leaves earlier results as they were.
The plots are drawn by :mod:`dpgossip.report.dynamic_gossip`.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dpgossip._threads import single_blas_thread
from dpgossip.privacy.linear_audit import LinearAuditSettings
from dpgossip.scenario.dynamic_gossip_config import DynamicGossipConfig, Mode
from dpgossip.scenario.dynamic_gossip_runs import Setting, build_setting, mode_runs
from dpgossip.scenario.dynamic_gossip_tables import (
    distance_rows,
    message_rows,
    pair_rows,
    time_rows,
)
from dpgossip.scenario.outdir import check_out_dir
from dpgossip.scenario.staging import foreign, staged_folder
from dpgossip.scenario.store import json_safe, read_json, read_keyed, write_csv, write_json

__all__ = ["run_dynamic_gossip", "mode_record", "mode_file", "TABLES", "FORMAT"]

FORMAT = 2
"""Version of the stored per-mode files (part of their key: a new format recomputes them)."""
TABLES = ("consensus_time", "consensus_messages", "leakage", "pairs")
"""The tables of a mode's record, each written to ``<name>.csv``."""


def mode_file(out_dir: Path, index: int, mode: Mode) -> Path:
    """Where mode ``index``'s rows are stored."""
    return Path(out_dir) / "modes" / f"{index}-{mode.label}.json"


def _key(config: DynamicGossipConfig, index: int, mode: Mode) -> str:
    shared = config.to_row()
    for drop in ("name", "description", "modes", "output"):
        shared.pop(drop)
    text = json.dumps({"format": FORMAT, "shared": shared, "index": index, "mode": mode.to_row(),
                       "inputs": _file_digests(mode)}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _file_digests(mode: Mode) -> dict[str, str]:
    """SHA-256 of every matrix file of a ``files`` schedule (editing one invalidates the stored mode);
    a missing file is refused later, when the schedule is read."""
    files = mode.schedule.files if mode.schedule.sampler == "files" else ()
    return {f: hashlib.sha256(Path(f).read_bytes()).hexdigest() for f in files if Path(f).is_file()}


def mode_record(config: DynamicGossipConfig, setting: Setting, index: int, mode: Mode,
                on_run: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Every table of one mode (:data:`TABLES`) and its facts (module docstring); ``on_run(done,
    runs)`` hears of each finished run (progress only)."""
    traces = mode_runs(config, setting, index, mode, on_run)
    settings = LinearAuditSettings(sensitivity=config.sensitivity, orders=(config.alpha,),
                                   delta=config.delta)
    steps = [int(t.ends.size) for t in traces]
    sent = [int(t.messages[-1]) if t.messages.size else 0 for t in traces]
    info = {"mode": mode.label, "sampler": mode.schedule.sampler, "runs": len(traces),
            "engine": mode.conditions is not None, "steps_mean": sum(steps) / len(steps),
            "messages_mean": sum(sent) / len(sent), "pairs": int(setting.pairs.shape[0])}
    return {"info": info, "tables": {
        "consensus_time": time_rows(mode.label, traces, config.horizon, config.points),
        "consensus_messages": message_rows(mode.label, traces, config.points),
        "leakage": distance_rows(mode.label, traces, setting.pairs, settings),
        "pairs": pair_rows(mode.label, traces, setting.pairs, settings)}}


def run_dynamic_gossip(config: DynamicGossipConfig, out: str | Path | None = None, *,
                       quiet: bool = False, force: bool = False) -> Path:
    """Run every mode of a dynamic-gossip scenario and write its results folder (module docstring).

    Parameters
    ----------
    config : DynamicGossipConfig
        The parsed scenario.
    out : str or Path, optional
        Results folder (default ``[output] dir``, else ``results/<name>``).
    quiet : bool
        No progress on stderr.
    force : bool
        Write into a folder that holds another scenario's results.

    Returns
    -------
    Path
        The results folder.
    """
    out_dir = Path(out or config.out_dir or Path("results") / config.name)
    flag = "--out" if out else "the results folder"
    check_out_dir(out_dir, config.name, flag=flag, force=force)
    setting = build_setting(config)  # the graph and every mode checked before anything is written
    stale = foreign(out_dir, config.name)
    with staged_folder(out_dir, flag=flag, keep=("modes",)) as stage:
        _write_results(config, stage.work, setting, quiet)
        stage.commit(lambda rel: stale)
    return out_dir


def _write_results(config: DynamicGossipConfig, out_dir: Path, setting: Setting, quiet: bool) -> None:
    write_json(out_dir / "config.resolved.json", json_safe(config.to_row()))
    tables: dict[str, list[dict[str, object]]] = {name: [] for name in TABLES}
    modes = []
    for i, mode in enumerate(config.modes):
        record = _run_mode(config, out_dir, i, mode, setting, quiet)
        for name in TABLES:
            tables[name].extend(record["tables"][name])
        modes.append({**record["info"], "seconds": record["seconds"], "resumed": record["resumed"]})
    for name in TABLES:
        write_csv(out_dir / f"{name}.csv", tables[name])
    write_json(out_dir / "summary.json", json_safe({
        "scenario": config.name, "kind": "dynamic_gossip", "alpha": config.alpha,
        "delta": config.delta, "sigma": config.sigma, "horizon": config.horizon,
        "agents": setting.network.m, "observers": len(setting.observers), "modes": modes,
        "statuses": {"ok": len(config.modes)}}))


PROGRESS_EVERY = 10.0
"""Seconds between two progress lines of a mode's runs on stderr."""


def _progress(prefix: str, start: float) -> Callable[[int, int], None]:
    """A progress line on stderr every :data:`PROGRESS_EVERY` seconds while a mode's runs go on
    (``prefix: run k/N (t s, ETA e s)``), so that a mode of many samples is not silent."""
    last = [start]

    def on_run(done: int, runs: int) -> None:
        now = time.perf_counter()
        if now - last[0] < PROGRESS_EVERY or done == runs:
            return
        last[0] = now
        eta = (now - start) / done * (runs - done)
        print(f"{prefix}: run {done}/{runs} ({now - start:.1f} s, ETA {eta:.1f} s)", file=sys.stderr)
    return on_run


def _run_mode(config: DynamicGossipConfig, out_dir: Path, i: int, mode: Mode, setting: Setting,
              quiet: bool) -> dict[str, Any]:
    path, key = mode_file(out_dir, i, mode), _key(config, i, mode)
    stored = read_keyed(path, key)
    n = len(config.modes)
    if stored is not None:
        if not quiet:
            print(f"[{i + 1}/{n}] {mode.label}: stored, skipped", file=sys.stderr)
        return {**stored, "resumed": True}
    start = time.perf_counter()
    progress = None if quiet else _progress(f"[{i + 1}/{n}] {mode.label}", start)
    with single_blas_thread():  # many small products: faster, and the same bits everywhere
        record = mode_record(config, setting, i, mode, progress)
    seconds = time.perf_counter() - start
    write_json(path, json_safe({"key": key, **record, "seconds": seconds}))
    if not quiet:
        info = record["info"]
        print(f"[{i + 1}/{n}] {mode.label}: {info['runs']} run(s), {info['steps_mean']:.0f} steps and "
              f"{info['messages_mean']:.0f} messages on average, {seconds:.1f} s", file=sys.stderr)
    return {**read_json(path), "resumed": False}
