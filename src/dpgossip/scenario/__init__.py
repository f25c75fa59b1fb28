"""Scenario files: load and validate TOML, expand sweeps, run points (resumably, in parallel), write
tidy results. The plots are the report layer's (:func:`dpgossip.report.make_report`, which ``dpgossip
run`` calls after :func:`run_scenario`).

>>> from dpgossip.scenario import load_scenario, run_scenario          # doctest: +SKIP
>>> run_scenario(load_scenario("scenarios/quickstart.toml"), workers=2)  # doctest: +SKIP
PosixPath('results/quickstart')
"""

from __future__ import annotations

import copy
import os
import time
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dpgossip.errors import ConfigError
from dpgossip.protocols.ddppm.audit import audit_processes

# the sections this layer owns ([privacy] and each registered kind's own: [ppm], [cape], ...) register
# themselves when imported; importing them here registers them before any module of the package is used
from dpgossip.scenario import kind_sections, privacy_section  # noqa: F401
from dpgossip.scenario.assemble import assemble, stale_outputs, write_resolved_config
from dpgossip.scenario.batches import BatchWriter, saved_points, stored_point
from dpgossip.scenario.execute import (
    DASK_TIMEOUT,
    PointTask,
    connect_dask,
    resolve_workers,
    run_dask,
    run_inline,
    run_pool,
)
from dpgossip.scenario.expand import Point, expand, point_hash
from dpgossip.scenario.options import check_scheduler
from dpgossip.scenario.outdir import check_out_dir, check_path_text
from dpgossip.scenario.pair_targets import TargetStore
from dpgossip.scenario.preflight import Structures, preflight
from dpgossip.scenario.progress import Progress
from dpgossip.scenario.results import PointResult
from dpgossip.scenario.runner import repeat_progress, stage_progress
from dpgossip.scenario.schema import SCHEMA, register_section, validate
from dpgossip.scenario.sizes import check_point_sizes, check_sweep_size
from dpgossip.scenario.staging import staged_folder
from dpgossip.scenario.sweep_neighbours import say_sweep, share_neighbours

__all__ = [
    "load_scenario",
    "run_scenario",
    "Scenario",
    "expand",
    "Point",
    "PointResult",
    "point_hash",
    "register_section",
    "SCHEMA",
]


class Scenario:
    """A validated scenario: its resolved configuration, the file it was loaded from and its raw table."""

    __slots__ = ("config", "path", "raw")

    def __init__(
        self,
        config: dict[str, Any],
        path: Path | None = None,
        raw: Mapping[str, Any] | None = None,
    ) -> None:
        self.config = config
        self.path = path
        self.raw = raw

    @property
    def name(self) -> str:
        return str(self.config["name"])

    @property
    def base(self) -> Path | None:
        return self.path.parent if self.path is not None else None

    def points(self) -> list[Point]:
        return expand(self.config)

    def with_overrides(self, overrides: Mapping[str, Any]) -> Scenario:
        """A copy with settings replaced, re-validated (e.g. ``{"repeats": 2, "protocol.iterations":
        5}``; dotted paths for settings inside sections).

        Raises
        ------
        ConfigError
            If the result is invalid (paths are checked like any setting).
        """
        raw = copy.deepcopy(dict(self.raw if self.raw is not None else self.config))
        for path, value in overrides.items():
            parts = path.split(".")
            node = raw
            for part in parts[:-1]:
                node = node.setdefault(part, {})
            node[parts[-1]] = value
        try:
            return Scenario(validate(raw), self.path, raw)
        except ConfigError as exc:
            where = f"{self.path}: " if self.path is not None else ""
            raise ConfigError(f"{where}{exc}") from None


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario TOML file (errors name the file and the bad path)."""
    if not isinstance(path, (str, os.PathLike)):
        raise ConfigError(f"path must be the path of a .toml scenario file (str or os.PathLike), "
                          f"got {path!r}", field="path")
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"scenario file {str(path)!r} is a directory; give the path of a .toml "
                          "scenario file")
    if not path.exists():
        raise ConfigError(f"scenario file {str(path)!r} does not exist")
    try:
        text = path.read_text(encoding="utf-8-sig")  # a byte-order mark some editors write is dropped
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not a UTF-8 text file ({exc.reason} at byte {exc.start}); a "
                          "scenario is a TOML text file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the scenario file: {exc.strerror or exc}") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    try:
        return Scenario(validate(raw), path, raw)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def run_scenario(
    scenario: Scenario,
    out: str | Path | None = None,
    *,
    quiet: bool = False,
    workers: int | None = 1,
    scheduler: str | None = None,
    scheduler_timeout: float = DASK_TIMEOUT,
    force: bool = False,
) -> Path:
    """Run every point and repeat of a scenario and write its results folder.

    Every point's settings are checked on its network and data before anything is written
    (:func:`~dpgossip.scenario.preflight.preflight`). The run writes into a staging folder next to
    ``out`` and replaces ``out`` with it only when it has succeeded, holding ``out``'s lock
    meanwhile (:mod:`~dpgossip.scenario.staging`): a failed or interrupted run leaves the results
    already in ``out`` as they were. Finished points are stored in the staging folder's
    ``points/`` as they complete; a rerun skips them (and the points already in ``out/points``), so
    an interrupted sweep resumes where it stopped and ends with the same tables as an uninterrupted
    one. See :mod:`dpgossip.scenario.assemble` for the files. No plots are drawn here: draw them with
    :func:`dpgossip.report.make_report` on the returned folder (``dpgossip run`` does when
    ``[output] plots`` is true and ``--no-plots`` is not given).

    Parameters
    ----------
    scenario
        From :func:`load_scenario`.
    out
        Results folder (default ``[output] dir``, else ``results/<name>``).
    quiet
        No progress on stderr.
    workers
        Local processes: 1 (default) runs in this process, ``N > 1`` a process pool, 0 one per CPU.
    scheduler
        Address of a Dask scheduler (``tcp://host:8786``); runs the points on that cluster instead.
    scheduler_timeout
        Seconds to wait for the scheduler before raising ``ConfigError``.
    force
        Write into a folder that holds another scenario's results (replacing them); without it such a
        folder is refused (:func:`~dpgossip.scenario.outdir.check_out_dir`).

    Returns
    -------
    Path
        The results folder.

    Raises
    ------
    ConfigError
        A point that cannot be built or run (naming the point), an unreachable scheduler, bad workers,
        an output folder that cannot be written, holds another scenario's results or is in use by
        another run (naming it), a sweep or point too large for the memory
        (:mod:`~dpgossip.scenario.sizes`).
    KeyboardInterrupt
        Propagated after the finished points were saved.
    """
    n_workers, scheduler, scheduler_timeout = _check_run_arguments(scenario, workers, scheduler,
                                                                   scheduler_timeout)
    cfg = scenario.config
    if out is not None:
        check_path_text(str(out), "out")  # '' would fall back to the default folder
    out_dir = Path(out or cfg["output"].get("dir") or Path("results") / scenario.name)
    flag = "--out" if out else "output.dir" if cfg["output"].get("dir") else "the results folder"
    check_out_dir(out_dir, scenario.name, flag=flag, force=force)
    check_sweep_size(cfg)
    points = scenario.points()
    check_point_sizes(points, scenario.base)
    structures = preflight(points, scenario.base)  # every point checked: nothing written before
    client = connect_dask(scheduler, scheduler_timeout) if scheduler is not None else None
    try:
        with staged_folder(out_dir, flag=flag) as stage:
            _run(scenario, stage.work, points, structures, n_workers, client, scheduler, quiet,
                 where=str(out_dir / "points"))
            stage.commit(stale_outputs(out_dir, cfg, scenario.name))
    finally:
        if client is not None:
            client.close()
    return out_dir


def _check_run_arguments(scenario: object, workers: int | None, scheduler: str | None,
                         scheduler_timeout: float) -> tuple[int, str | None, float]:
    """:func:`run_scenario`'s arguments checked: the number of workers, the scheduler and its timeout."""
    if not isinstance(scenario, Scenario):
        raise ConfigError(f"scenario must be a Scenario (from dpgossip.load_scenario(path)), got "
                          f"{scenario!r}", field="scenario")
    n_workers = resolve_workers(workers)
    scheduler, scheduler_timeout = check_scheduler(scheduler, scheduler_timeout)
    if scheduler is not None and workers not in (None, 1):
        raise ConfigError("--workers and --scheduler cannot be combined; the Dask cluster has its own")
    return n_workers, scheduler, scheduler_timeout


def _run(
    scenario: Scenario,
    out_dir: Path,
    points: list[Point],
    structures: Structures,
    n_workers: int,
    client: Any,
    scheduler: str | None,
    quiet: bool,
    where: str,
) -> Path:
    """Run the points not stored yet and assemble the tables in ``out_dir`` (the staging folder)."""
    cfg = scenario.config
    write_resolved_config(out_dir, cfg)
    structures.save(out_dir)
    t0 = time.perf_counter()
    results: dict[str, PointResult] = {}
    tasks: list[PointTask] = []
    seen: set[str] = set()
    base = str(scenario.base) if scenario.base is not None else None
    batches = saved_points(out_dir)
    for p in points:
        key = structures.keys[p.index]
        if key in seen:
            continue  # the same configuration twice in a sweep: computed once
        seen.add(key)
        stored = stored_point(out_dir, key, p.index, batches)
        if stored is not None:
            results[key] = stored
        else:
            scratch = None if client is not None else str(_scratch(out_dir, key))  # Dask: another machine
            tasks.append(PointTask(index=p.index, key=key, config=p.config, axes=p.axes, base=base,
                                   params=structures.params.get(p.index), scratch=scratch))
    progress = Progress(len(results) + len(tasks), quiet=quiet)
    progress.skipped(len(results), where)
    for p in points:  # resumed points are warned about again
        stored = results.get(structures.keys[p.index])
        if stored is not None and stored.index == p.index:
            progress.warn(stored)
    if client is not None or (n_workers > 1 and len(tasks) > 1):
        structures.built.clear()  # workers build their own; do not hold the preflight's data meanwhile
    if client is not None:
        stream = run_dask(tasks, client)
    elif n_workers > 1 and len(tasks) > 1:
        stream = run_pool(tasks, n_workers)
    else:
        stream = run_inline(tasks, structures.built)
    inline = client is None and (n_workers <= 1 or len(tasks) < 2)  # points run in this thread
    # one point inline: its pair audit searches its targets on the lanes (same bits for any count)
    with repeat_progress(progress.repeat if inline else None), \
            stage_progress(progress.stage if inline else None), \
            audit_processes(n_workers if inline else 1):
        _save_all(stream, BatchWriter(out_dir), results, progress)
    for key in results:  # each point's file holds what its scratch folder kept
        TargetStore(_scratch(out_dir, key)).clear()
    with audit_processes(n_workers if client is None else 1):  # the same bits for any count
        final = share_neighbours(points, results, structures.keys, scenario.base, structures.built,
                                 say=say_sweep(quiet))
    assemble(
        out_dir,
        cfg,
        points,
        final,
        structures.stems,
        structures.keys,
        {
            "seconds": round(time.perf_counter() - t0, 3),
            "computed": len(tasks),
            "resumed": len(results) - len(tasks),
            "workers": n_workers if scheduler is None else None,
            "scheduler": scheduler,
        },
    )
    return out_dir


def _scratch(out_dir: Path, key: str) -> Path:
    """The scratch folder of point ``key`` (:mod:`~dpgossip.scenario.scratch`): its finished audit
    targets, beside the point files of the resume store."""
    return out_dir / "points" / f"{key}.targets"


def _save_all(stream: Any, writer: BatchWriter, results: dict[str, PointResult],
              progress: Progress) -> None:
    """Save the points of ``stream`` in batches as they finish and report each once it is saved; on
    the way out (an error, Ctrl-C, SIGTERM) the points already finished are saved first."""

    def report(saved: list[PointResult]) -> None:
        for result in saved:
            progress.update(result)
            progress.warn(result)

    try:
        for result in stream:
            results[result.key] = result
            report(writer.add(result))
        report(writer.flush())
    finally:
        try:
            report(writer.flush())  # nothing pending unless we leave early
        finally:
            stream.close()  # stops a pool or cluster at once when we leave early
            progress.close()
