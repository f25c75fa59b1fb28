"""``dpgossip audit``: every sweep point audited by its kind's own audit, stored point by point, and the
folder's tables.

:func:`plan_audit` checks the output folder and the sizes and resolves every point's ``[privacy]``
table; :func:`run_audit` audits the points in order, each by its ``protocol.kind``'s audit
(:func:`~dpgossip.scenario.kind_commands.kind_commands`): ``ddppm`` pair by pair as ``[privacy]`` says
(:func:`~dpgossip.scenario.audit_command.audit_task`, with progress per target and an ETA), the kinds
with their own accountant and auditor by them (:func:`~dpgossip.scenario.kind_audit.audit_kind_point`:
the guarantee and audit columns ``dpgossip run`` writes for repeat 0). ``--view`` and ``--search``
are refused on a scenario without a ``ddppm`` point. Each point is written to
``DIR/points/<key>.json`` as soon as it is done; the folder's files are those of
:mod:`~dpgossip.scenario.audit_command` (:func:`~dpgossip.scenario.audit_command.write_audit_tables`).

Resuming: a point whose file is already in ``DIR/points`` with the same key (the hash of its
configuration with the ``[privacy]`` overrides and the content of the user files it reads) is read back
instead of audited again, so an interrupted audit (Ctrl-C, kill) run again audits only the points it had
not finished and ends with the same tables. A configuration that occurs twice in a sweep is audited
once.

This module sits above the table of kinds (:mod:`~dpgossip.scenario.kind_commands`), which refers to the
per-point audits below it.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

from dpgossip.errors import ConfigError
from dpgossip.protocols.ddppm.audit import audit_processes, audit_searches
from dpgossip.scenario.audit_command import (
    AuditPlan,
    AuditRun,
    AuditTask,
    audit_key,
    audit_summary,
    write_audit_tables,
)
from dpgossip.scenario.audit_point import (
    AuditPoint,
    KindAuditPoint,
    read_audit_point,
    read_kind_point,
    write_audit_point,
)
from dpgossip.scenario.dask_targets import client_target_searches
from dpgossip.scenario.execute import DASK_TIMEOUT, connect_dask, resolve_workers
from dpgossip.scenario.kind_commands import commands_for
from dpgossip.scenario.options import check_scheduler
from dpgossip.scenario.outdir import check_out_dir
from dpgossip.scenario.pair_targets import TargetStore
from dpgossip.scenario.preflight import check_points
from dpgossip.scenario.privacy_overrides import (
    PrivacyOverrides,
    audited_points,
    privacy_config,
    uses_engine,
)
from dpgossip.scenario.progress import Progress
from dpgossip.scenario.staging import staged_folder, stale_audit_files
from dpgossip.scenario.sweep_neighbours import say_sweep, share_audit_neighbours

__all__ = ["plan_audit", "run_audit"]


def plan_audit(scenario: Any, out: str | Path | None = None, *,
               overrides: PrivacyOverrides | None = None, force: bool = False) -> AuditPlan:
    """Check where the audit writes and how large it is, and resolve every point's ``[privacy]``.

    Parameters
    ----------
    scenario
        A :class:`~dpgossip.scenario.Scenario`.
    out
        The output folder (default ``results/<name>-audit``).
    overrides
        ``[privacy]`` settings replaced for every point (``--view``, ``--search``).
    force
        Write into a folder that holds another scenario's results.

    Returns
    -------
    AuditPlan

    Raises
    ------
    ConfigError
        The folder cannot be written or holds another scenario's results (without ``force``); the
        sweep or a point is too large for the memory.
    """
    out_dir = Path(out or Path("results") / f"{scenario.name}-audit")
    check_out_dir(out_dir, scenario.name, flag="--out" if out else "the audit folder", force=force)
    points = audited_points(scenario)
    kinds = list(dict.fromkeys(p.config["protocol"]["kind"] for p in points))
    pair_kinds = [k for k in kinds if commands_for(k).pair_audit]  # refuses an unsupported kind
    given = overrides.given() if overrides is not None else {}
    if given and not pair_kinds:
        raise ConfigError(f"{', '.join(f'privacy.{k}' for k in given)}: the pair audit's settings do "
                          f"not apply to protocol.kind = {', '.join(map(repr, kinds))}, audited by "
                          "its own auditor ([ppm], [cape] or [floorfree] sets it); leave them out")
    tasks = []
    digests: dict[Path, str] = {}  # each user file is read once for the whole sweep
    for p in points:
        pair = commands_for(p.config["protocol"]["kind"]).pair_audit
        cfg = privacy_config(p.config, overrides) if pair else dict(p.config)
        tasks.append(AuditTask(index=p.index, key=audit_key(cfg, scenario.base, digests),
                               axes=dict(p.axes), config=cfg, pair_audit=pair))
    return AuditPlan(scenario=scenario.name, out=out_dir, base=scenario.base, tasks=tuple(tasks),
                     engine=uses_engine(scenario.config))


def run_audit(plan: AuditPlan, *, on_point: Callable[[AuditPoint], None] | None = None,
              quiet: bool = False, stream: IO[str] | None = None, workers: int = 1,
              scheduler: str | None = None, scheduler_timeout: float = DASK_TIMEOUT) -> AuditRun:
    """Audit every point of ``plan`` (resuming from stored points) and write the folder's tables.

    Every point's settings are checked on its network and data first
    (:func:`~dpgossip.scenario.preflight.check_points`); the audit then writes into a staging folder
    swapped in as ``plan.out`` only when it succeeds, under the folder's lock
    (:mod:`~dpgossip.scenario.staging`): a failed or interrupted audit leaves earlier results as
    they were, and the next run resumes from the points it finished.

    Parameters
    ----------
    plan
        From :func:`plan_audit`.
    on_point
        Called with each point in sweep order once every point is audited or read back and the
        neighbours found at each were tried at the others
        (:func:`~dpgossip.scenario.sweep_neighbours.share_audit_neighbours`).
    quiet
        No progress on ``stream``.
    stream
        Where progress goes: which step a point is at, and a line per finished point with an ETA
        (a bar on a terminal; :class:`~dpgossip.scenario.progress.Progress`). Default ``sys.stderr``.
    workers
        Processes that search each point's targets
        (:func:`~dpgossip.protocols.ddppm.audit.audit_processes`; 0: one per CPU). The results are
        the same bits for any count.
    scheduler, scheduler_timeout
        Address of a Dask scheduler (``tcp://host:8786``): each point's targets are searched as tasks
        of that cluster instead (:func:`~dpgossip.scenario.dask_targets.client_target_searches`; the
        same bits), with ``workers`` left at 1; and the seconds to wait for it.

    Returns
    -------
    AuditRun

    Raises
    ------
    ConfigError
        From the kind's audit (:func:`~dpgossip.scenario.audit_command.audit_task` for ``ddppm``; the
        points finished before are kept).
    KeyboardInterrupt
        Propagated; every point finished before it is stored.
    """
    scheduler, scheduler_timeout = check_scheduler(scheduler, scheduler_timeout)
    if scheduler is not None and workers != 1:
        raise ConfigError("--workers and --scheduler cannot be combined; the Dask cluster has its own")
    check_points(plan.tasks, plan.base)
    with ExitStack() as stack:
        if scheduler is None:
            stack.enter_context(audit_processes(resolve_workers(workers)))
        else:
            client = connect_dask(scheduler, scheduler_timeout)
            stack.callback(client.close)
            stack.enter_context(audit_searches(client_target_searches(client)))
        stage = stack.enter_context(staged_folder(plan.out, flag="--out"))
        run = _run_audit(replace(plan, out=stage.work), on_point, quiet, stream, plan.out)
        stage.commit(stale_audit_files(plan.out, plan.scenario))
    return replace(run, out=plan.out,
                   files=tuple(plan.out / f.relative_to(stage.work) for f in run.files))


def _run_audit(plan: AuditPlan, on_point: Callable[[AuditPoint], None] | None, quiet: bool,
               stream: IO[str] | None, target: Path) -> AuditRun:
    first: dict[str, AuditTask] = {}
    for t in plan.tasks:
        first.setdefault(t.key, t)
    done: dict[str, AuditPoint | KindAuditPoint] = {}
    for t in first.values():
        read = read_audit_point if t.pair_audit else read_kind_point
        stored = read(plan.out, t.key, t.index, t.axes)
        if stored is not None:
            done[t.key] = stored
    resumed = len(done)
    progress = Progress(len(first), quiet=quiet, stream=stream)
    progress.skipped(resumed, str(target / "points"))
    points: list[AuditPoint | KindAuditPoint] = []
    try:
        for t in plan.tasks:
            point = done.get(t.key)
            if point is None:
                store = plan.out / "points" / f"{t.key}.targets"
                point = commands_for(t.kind).audit(replace(t, store=store), plan.base,
                                                   None if quiet else progress.stage)
                write_audit_point(plan.out, point)
                TargetStore(store).clear()  # the point's file holds every pair now
                done[t.key] = point
                progress.update(point, audit_summary(point))
            elif point.index != t.index:  # the same configuration at another point of the sweep
                point = replace(point, index=t.index, axes=dict(t.axes))
            points.append(point)
    finally:
        progress.close()
    points = share_audit_neighbours(plan.tasks, points, plan.base, say_sweep(quiet, stream))
    for point in points if on_point is not None else ():
        on_point(point)
    files = write_audit_tables(plan, points)
    return AuditRun(out=plan.out, points=tuple(points), files=tuple(files),
                    computed=len(first) - resumed, resumed=resumed)
