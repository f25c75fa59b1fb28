"""Where the points of a sweep run: in this process, a local process pool, or a Dask cluster.

The unit of work is one point with all its repeats (:class:`PointTask` -> :func:`run_task` ->
:class:`~dpgossip.scenario.results.PointResult`). Seeds depend only on the point's configuration and
:func:`run_task` computes with BLAS on one thread (:func:`dpgossip._threads.single_blas_thread`), so every
executor gives the same rows, to the last bit; results come back in completion order and are put in
point order when the folder is assembled.

* :func:`run_inline` -- one after the other in this process (``--workers 1``, the default);
* :func:`run_pool` -- a :class:`concurrent.futures.ProcessPoolExecutor` with the ``spawn`` start method
  (``--workers N``); workers ignore SIGINT, are terminated when the sweep is interrupted, and die with
  this process however it ends (even ``kill -9``: see :func:`_worker_init`);
* :func:`run_dask` -- ``dask.distributed.Client(address)`` (``--scheduler ADDRESS``, extra ``dask``);
  the workers need the same dpgossip and numpy versions as this process.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpgossip.errors import ConfigError
from dpgossip.interrupt import Interrupted
from dpgossip.scenario.results import PointResult, jsonable

__all__ = [
    "PointTask",
    "run_task",
    "run_inline",
    "run_pool",
    "run_dask",
    "connect_dask",
    "DASK_TIMEOUT",
    "resolve_workers",
]

DASK_TIMEOUT = 10.0
"""Seconds to wait for a Dask scheduler before giving up."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PointTask:
    """One point to run: its resolved scalar configuration, axis values and the scenario's folder."""

    index: int
    key: str
    config: dict[str, Any]
    axes: dict[str, Any]
    base: str | None = None


def _label(task: PointTask) -> str:
    from dpgossip.scenario.progress import axes_label

    return f"point {task.index} ({axes_label(task.axes)})" if task.axes else ""


def run_task(task: PointTask) -> PointResult:
    """Run every repeat of one point (top-level function: picklable for process pools and Dask).

    The point is computed with every BLAS library on one thread, whatever the executor or the
    environment (``OPENBLAS_NUM_THREADS``, ``DPGOSSIP_BLAS_THREADS``): threaded BLAS sums in another
    order, and the rows would differ in the last bits between executors.

    Raises
    ------
    ConfigError
        With the point's index and axis values prepended (when the scenario has axes).
    """
    from dpgossip._threads import single_blas_thread
    from dpgossip.scenario import runner
    from dpgossip.scenario.point import PointSpec
    from dpgossip.scenario.problem import make_problem, make_structure
    from dpgossip.scenario.sections import prepare_point

    base = Path(task.base) if task.base else None
    t0 = time.perf_counter()
    try:
        with single_blas_thread():
            structure = make_structure(PointSpec.from_config(task.config), base)  # one per point
            config, extra = prepare_point(task.config, structure)  # e.g. a calibrated noise scale
            spec = PointSpec.from_config(config)  # the settings the point runs with
            problem = make_problem(spec.protocol, structure)  # one per point
            runs, iters = runner.run_point(spec, problem, task.axes)
            runs = [{**r, **extra} for r in runs]
            tables = {"runs": runs, "iterations": iters,
                      **runner.run_sections(config, problem)}
    except ConfigError as exc:
        label = _label(task)
        if not label:
            raise
        raise ConfigError(f"{label}: {exc}") from None
    return PointResult(
        index=task.index,
        key=task.key,
        axes=jsonable(task.axes),
        tables=jsonable(tables),
        seconds=time.perf_counter() - t0,
    )


def resolve_workers(workers: int | None) -> int:
    """``workers`` as a count: ``None`` or 1 is in-process, 0 means one per CPU.

    Raises
    ------
    ConfigError
        For a negative or non-integer count.
    """
    import os

    if workers is None:
        return 1
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
        raise ConfigError(f"--workers must be an integer >= 0 (0 = one per CPU), got {workers!r}")
    return workers or (os.cpu_count() or 1)


def run_inline(tasks: Iterable[PointTask]) -> Iterator[PointResult]:
    """Run the tasks one after the other in this process."""
    for task in tasks:
        yield run_task(task)


PARENT_POLL = 0.5
"""Seconds between checks of the parent by a worker's watchdog thread (where ``prctl`` is missing)."""

_PR_SET_PDEATHSIG = 1


def _worker_init(parent: int) -> None:
    """Initializer of a pool worker: ignore SIGINT (Ctrl-C is the parent's to handle) and die with
    the parent process ``parent``.

    On Linux the kernel kills the worker when its parent dies (``prctl(PR_SET_PDEATHSIG, SIGKILL)``),
    whatever killed the parent, SIGKILL included; elsewhere a daemon thread polls ``os.getppid()``
    every :data:`PARENT_POLL` seconds. A parent that died before this ran is caught by the check that
    follows. When every worker is gone, multiprocessing's resource tracker (whose pipe they and the
    parent held) sees the end of its pipe and exits too.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if not _kill_me_with_parent():
        threading.Thread(target=_watch_parent, args=(parent,), name="dpgossip-parent-watch",
                         daemon=True).start()
    if os.getppid() != parent:
        os._exit(1)


def _kill_me_with_parent() -> bool:
    """Ask the Linux kernel for SIGKILL when the parent dies; whether that worked."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_POLL)
    os._exit(1)


def _terminate(pool: ProcessPoolExecutor) -> None:
    stop = getattr(pool, "terminate_workers", None)  # Python 3.14+
    if stop is not None:
        stop()
        return
    for proc in list((getattr(pool, "_processes", None) or {}).values()):
        if proc.is_alive():
            proc.terminate()


@contextlib.contextmanager
def _sigint(handler: Any, *, also_sigterm: bool = False) -> Iterator[bool]:
    """Install ``handler`` for SIGINT (and SIGTERM) while the block runs (main thread only; yields
    whether it could)."""
    if threading.current_thread() is not threading.main_thread():
        yield False
        return
    old = signal.signal(signal.SIGINT, handler)
    old_term = signal.signal(signal.SIGTERM, handler) if also_sigterm else None
    try:
        yield True
    finally:
        signal.signal(signal.SIGINT, old)
        if also_sigterm:
            signal.signal(signal.SIGTERM, old_term)


def run_pool(tasks: Iterable[PointTask], workers: int) -> Iterator[PointResult]:
    """Run the tasks on ``workers`` local processes (``spawn``), yielding results as they finish.

    The workers are started with SIGINT ignored, so Ctrl-C reaches only this process; it (or a SIGTERM,
    as sent by ``kill``) is turned into :class:`~dpgossip.interrupt.Interrupted` (a
    ``KeyboardInterrupt`` carrying the signal) between results (never inside the pool's bookkeeping),
    after which the pending tasks are cancelled and the workers terminated. Results already yielded
    are kept by the caller. A second Ctrl-C interrupts at once. If this process is killed outright
    (SIGKILL), the workers die with it (:func:`_worker_init`).
    """
    tasks = list(tasks)
    if not tasks:
        return
    stop = threading.Event()
    received: list[int] = []

    def request_stop(signum: int, frame: Any) -> None:
        received.append(signum)
        stop.set()
        signal.signal(signal.SIGINT, signal.default_int_handler)

    pool = ProcessPoolExecutor(
        max_workers=min(workers, len(tasks)),
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_worker_init,
        initargs=(os.getpid(),),
    )
    clean = False
    try:
        with _sigint(signal.SIG_IGN):  # children inherit the ignored SIGINT
            pending: set[Future[PointResult]] = {pool.submit(run_task, t) for t in tasks}
        with _sigint(request_stop, also_sigterm=True):  # `kill` must not orphan the workers
            while pending:
                finished, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                if stop.is_set():
                    raise Interrupted(received[0])
                for fut in finished:
                    yield fut.result()
                    if stop.is_set():
                        raise Interrupted(received[0])
        clean = True
    finally:
        if clean:
            pool.shutdown(wait=True)
        else:
            _terminate(pool)  # before shutdown, which forgets the processes
            pool.shutdown(wait=False, cancel_futures=True)


def connect_dask(address: str, timeout: float = DASK_TIMEOUT) -> Any:
    """A ``distributed.Client`` connected to the scheduler at ``address``, its workers checked.

    Raises
    ------
    ConfigError
        Dask not installed (naming ``pip install "dpgossip[dask]"``), scheduler unreachable within
        ``timeout`` seconds, or workers with other dpgossip/numpy versions.
    """
    client = _dask_client(address, timeout)
    try:
        _check_versions(client, address)
    except BaseException:
        client.close()
        raise
    return client


def _dask_client(address: str, timeout: float) -> Any:
    try:
        from distributed import Client
    except ImportError:
        raise ConfigError(
            f'--scheduler {address}: running on a Dask cluster needs dask.distributed; '
            'install it with: pip install "dpgossip[dask]"'
        ) from None
    try:
        return Client(address, timeout=f"{timeout}s", set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise ConfigError(
            f"--scheduler {address}: cannot reach the Dask scheduler within {timeout:g} s ({exc}); "
            "check the address (e.g. tcp://host:8786) and that the scheduler is running"
        ) from None


def _check_versions(client: Any, address: str) -> None:
    """The workers must run the same dpgossip and numpy as this process (same numbers)."""
    from importlib import metadata

    wanted = {}
    for name in ("dpgossip", "numpy"):
        try:
            wanted[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            wanted[name] = None

    def versions() -> dict[str, str | None]:
        from importlib import metadata as md

        out: dict[str, str | None] = {}
        for name in ("dpgossip", "numpy"):
            try:
                out[name] = md.version(name)
            except md.PackageNotFoundError:
                out[name] = None
        return out

    for worker, have in client.run(versions).items():
        for name, version in wanted.items():
            if have.get(name) != version:
                raise ConfigError(
                    f"--scheduler {address}: worker {worker} has {name} {have.get(name)}, this "
                    f"process has {version}; install the same versions on every worker"
                )


def run_dask(tasks: Iterable[PointTask], client: Any) -> Iterator[PointResult]:
    """Run the tasks on a Dask cluster (``client`` from :func:`connect_dask`), yielding results as they
    finish; the client is closed at the end. On an error or interruption the pending tasks are
    cancelled."""
    try:
        tasks = list(tasks)
        if not tasks:
            return
        from distributed import as_completed

        futures = client.map(run_task, tasks, pure=False)
        try:
            for fut in as_completed(futures, loop=client.loop):
                yield fut.result()
        except BaseException:
            client.cancel(futures)
            raise
    finally:
        client.close()
