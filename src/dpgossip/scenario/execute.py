"""Where the points of a sweep run: in this process, a local process pool, or a Dask cluster.

The unit of work is one point with all its repeats (:class:`PointTask` -> :func:`run_task` ->
:class:`~dpgossip.scenario.results.PointResult`). Seeds depend only on the point's configuration and
:func:`run_task` computes with BLAS on one thread (:func:`dpgossip._threads.single_blas_thread`), so every
executor gives the same rows, to the last bit; results come back in completion order and are put in
point order when the folder is assembled.

* :func:`run_inline` -- one after the other in this process (``--workers 1``, the default);
* :func:`run_pool` -- ``--workers N``: this process and a :class:`concurrent.futures.ProcessPoolExecutor`
  of ``N - 1`` processes started with ``spawn``; workers ignore SIGINT, are terminated when the sweep
  is interrupted, and die with this process however it ends (even ``kill -9``: see :func:`_worker_init`);
* :func:`run_dask` -- ``dask.distributed.Client(address)`` (``--scheduler ADDRESS``, extra ``dask``);
  the workers need the same dpgossip and numpy versions as this process.

Workers receive points in chunks (:func:`run_chunk`, sized by :func:`chunk_size` from the points left,
the number of workers and the measured time per point), so that a sweep of many small points does not
pay a round trip per point; see ``docs/sweeps.md``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
import traceback
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpgossip._parent import die_with_parent, spawning, stop_pool, watched_pool
from dpgossip._threads import single_blas_thread
from dpgossip.errors import ConfigError
from dpgossip.interrupt import Interrupted
from dpgossip.protocols.registry import kind as registered_kind
from dpgossip.protocols.registry import plugin_of
from dpgossip.scenario import runner
from dpgossip.scenario.point import PointSpec
from dpgossip.scenario.problem import Problem, build_structure, make_problem
from dpgossip.scenario.progress import axes_label
from dpgossip.scenario.protocol_point import run_protocol_point
from dpgossip.scenario.results import PointResult, jsonable
from dpgossip.scenario.scratch import point_scratch
from dpgossip.scenario.sections import prepare_point

__all__ = [
    "PointTask",
    "run_point_of_kind",
    "run_task",
    "run_chunk",
    "chunk_size",
    "ChunkOutcome",
    "WorkerTraceback",
    "run_inline",
    "run_pool",
    "run_dask",
    "connect_dask",
    "DASK_TIMEOUT",
    "resolve_workers",
]

DASK_TIMEOUT = 10.0
"""Seconds to wait for a Dask scheduler before giving up."""

CHUNK_SECONDS = 0.5
"""Aimed compute time of one chunk of points sent to a worker (:func:`chunk_size`)."""

CHUNKS_PER_LANE = 4
"""Least number of chunks per worker while points are left, for load balance (:func:`chunk_size`)."""

OWN_LANE = True
"""Whether this process computes points too in :func:`run_pool` (``--workers N`` then spawns
``N - 1`` processes); ``False`` leaves every point to ``N`` spawned workers."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PointTask:
    """One point to run: its resolved scalar configuration, axis values and the scenario's folder, and
    the protocol parameters the preflight resolved for it (``None``: resolved by the run), and its
    scratch folder (:mod:`~dpgossip.scenario.scratch`: where a long point keeps its finished parts so
    that an interrupted run resumes inside it; ``None``: nothing kept)."""

    index: int
    key: str
    config: dict[str, Any]
    axes: dict[str, Any]
    base: str | None = None
    params: Any = None
    scratch: str | None = None


def _label(task: PointTask) -> str:
    return f"point {task.index} ({axes_label(task.axes)})" if task.axes else ""


def run_point_of_kind(spec: PointSpec, problem: Problem, axes: Mapping[str, Any]
                      ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every repeat of one point, run by its ``protocol.kind``: a kind audited pair by pair
    (``ProtocolKind.pair_audit``: D-DP-PM) by :func:`~dpgossip.scenario.runner.run_point`, whose rows
    carry what ``[privacy]`` asks of it, even when the kind also gives a ``build`` (for the contract
    test); the others by :func:`~dpgossip.scenario.protocol_point.run_protocol_point` (both return the
    ``runs`` and ``iterations`` rows)."""
    if registered_kind(spec.protocol.kind).pair_audit:
        return runner.run_point(spec, problem, axes)
    plugin = plugin_of(spec.protocol.kind)
    if plugin is None:
        return run_protocol_point(spec, problem, axes)
    try:
        return run_protocol_point(spec, problem, axes)
    except (ConfigError, MemoryError, OSError):
        raise
    except Exception as exc:  # a plug-in's own bug: named in one line, not a traceback of dpgossip
        from dpgossip.interrupt import received

        if received() is not None:  # SIGTERM surfaced inside the plug-in: an interruption
            raise
        raise ConfigError(f"protocol.kind = {spec.protocol.kind!r}: its plug-in {plugin!r} failed while "
                          f"the point ran ({type(exc).__name__}: {exc}); the built-in kinds are not "
                          "affected", field="protocol.kind") from exc


def run_task(task: PointTask, structure: Any = None) -> PointResult:
    """Run every repeat of one point (top-level function: picklable for process pools and Dask).

    The point is computed with every BLAS library on one thread, whatever the executor or the
    environment (``OPENBLAS_NUM_THREADS``, ``DPGOSSIP_BLAS_THREADS``): threaded BLAS sums in another
    order, and the rows would differ in the last bits between executors.

    Raises
    ------
    ConfigError
        With the point's index and axis values prepended (when the scenario has axes).
    """
    base = Path(task.base) if task.base else None
    t0 = time.perf_counter()
    try:
        with single_blas_thread():
            if structure is None:  # else built by the preflight from the same seed
                structure = build_structure(task.config, base)
            config, extra = prepare_point(task.config, structure)  # e.g. a calibrated noise scale
            spec = PointSpec.from_config(config)  # the settings the point runs with
            if task.params is not None and config["protocol"] == task.config["protocol"]:
                problem = Problem(network=structure.network, data=structure.data,
                                  params=task.params)  # resolved by the preflight check
            else:
                problem = make_problem(spec.protocol, structure)  # one per point
            runs, iters = run_point_of_kind(spec, problem, task.axes)
            runs = [{**r, **extra} for r in runs]
            with point_scratch(task.scratch):
                sections = runner.run_sections(config, problem)
            tables = {"runs": runs, "iterations": iters, **sections}
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


@dataclass(frozen=True, slots=True, kw_only=True)
class ChunkOutcome:
    """What a worker sends back for a chunk of points (:func:`run_chunk`).

    Attributes
    ----------
    results
        The points computed, in the chunk's order, up to the first that raised.
    error
        The exception of the point that raised (``None`` when all finished); the points after it in
        the chunk were not run.
    trace
        The worker's formatted traceback of ``error`` (empty when none).
    """

    results: tuple[PointResult, ...]
    error: BaseException | None = None
    trace: str = ""

    def to_row(self) -> dict[str, Any]:
        """``points`` (count), ``seconds`` (their sum) and ``error`` (its text, or ``None``)."""
        return {"points": len(self.results), "seconds": sum(r.seconds for r in self.results),
                "error": None if self.error is None else str(self.error)}


class WorkerTraceback(Exception):
    """The traceback of an error raised in a worker: the ``__cause__`` of that error when it is
    raised again in this process (as :mod:`concurrent.futures` does for a single task)."""

    def __str__(self) -> str:
        return "\n" + str(self.args[0] if self.args else "")


def run_chunk(tasks: Sequence[PointTask]) -> ChunkOutcome:
    """Run the points of a chunk one after the other with :func:`run_task` (top-level: picklable).

    A point that raises stops the chunk: the points before it are returned with its exception, so
    the caller keeps them and then reports the error exactly as a lone point's
    (:func:`_unpack`)."""
    done: list[PointResult] = []
    for task in tasks:
        try:
            done.append(run_task(task))
        except Exception as exc:
            return ChunkOutcome(results=tuple(done), error=exc, trace=traceback.format_exc())
    return ChunkOutcome(results=tuple(done))


def run_chunk_spreading_targets(tasks: Sequence[PointTask]) -> ChunkOutcome:
    """:func:`run_chunk` in a Dask task, each point's pair audit spreading its targets over the cluster
    (:func:`~dpgossip.scenario.dask_targets.dask_target_searches`; top-level, so Dask can send it)."""
    from dpgossip.protocols.ddppm.audit import audit_searches
    from dpgossip.scenario.dask_targets import dask_target_searches

    with audit_searches(dask_target_searches):
        return run_chunk(tasks)


def _unpack(outcome: ChunkOutcome) -> Iterator[PointResult]:
    """The chunk's results, then its error raised (its worker traceback as the cause)."""
    yield from outcome.results
    if outcome.error is not None:
        raise outcome.error from WorkerTraceback(outcome.trace)


def chunk_size(remaining: int, lanes: int, seconds_per_point: float | None) -> int:
    """How many points to send a worker at once.

    ``min(ceil(remaining / (CHUNKS_PER_LANE * lanes)), max(1, floor(CHUNK_SECONDS / s)))`` with ``s``
    the mean measured time of a point, and 1 while no point has been timed. The first bound keeps
    several chunks per worker in the queue (load balance, short tail); the second keeps a chunk near
    :data:`CHUNK_SECONDS` of work, so that results come back (and are saved) often and points that
    take seconds travel one by one, as without chunks.
    """
    if remaining <= 0:
        return 0
    if seconds_per_point is None:
        return 1
    balance = -(-remaining // (CHUNKS_PER_LANE * max(lanes, 1)))
    by_time = max(1, int(CHUNK_SECONDS / max(seconds_per_point, 1e-9)))
    return max(1, min(balance, by_time))


class _Plan:
    """The points still to send, and the measured time per point that sizes the chunks."""

    def __init__(self, tasks: Iterable[PointTask], lanes: int) -> None:
        self._todo: deque[PointTask] = deque(tasks)
        self.lanes = lanes
        self._seconds = 0.0
        self._timed = 0

    def __len__(self) -> int:
        return len(self._todo)

    def observe(self, results: Iterable[PointResult]) -> None:
        """Add finished points to the time per point."""
        for r in results:
            self._seconds += r.seconds
            self._timed += 1

    def chunk(self) -> list[PointTask]:
        """The next chunk (from the front of the queue; :func:`chunk_size` points)."""
        mean = self._seconds / self._timed if self._timed else None
        n = chunk_size(len(self._todo), self.lanes, mean)
        return [self._todo.popleft() for _ in range(n)]

    def last(self) -> PointTask:
        """One point from the back of the queue (for this process's own lane)."""
        return self._todo.pop()


MAX_WORKERS_PER_CPU = 8
"""``--workers`` above this many per CPU (and above 64) is refused: the points are CPU-bound, so more
processes only cost memory, and a typo (``--workers 100000``) would start that many."""


def resolve_workers(workers: int | None) -> int:
    """``workers`` as a count: ``None`` or 1 is in-process, 0 means one per CPU.

    Raises
    ------
    ConfigError
        For a negative or non-integer count, or one above :data:`MAX_WORKERS_PER_CPU` per CPU.
    """
    import os

    if workers is None:
        return 1
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
        raise ConfigError(f"--workers must be an integer >= 0 (0 = one per CPU), got {workers!r}")
    cpus = os.cpu_count() or 1
    if workers > max(MAX_WORKERS_PER_CPU * cpus, 64):  # each is a process: a typo must not fork-bomb
        raise ConfigError(f"--workers {workers} is more than this machine can run usefully (at most "
                          f"{max(MAX_WORKERS_PER_CPU * cpus, 64)}: {MAX_WORKERS_PER_CPU} per CPU, "
                          f"{cpus} CPUs); each worker is a process, 0 gives one per CPU")
    return workers or cpus


def run_inline(tasks: Iterable[PointTask],
               built: Mapping[int, Any] | None = None) -> Iterator[PointResult]:
    """Run the tasks one after the other in this process.

    ``built`` maps a point index to the network and data already built for it (by the preflight, on one
    BLAS thread, from the same seed), which the point then uses instead of building them again.
    """
    built = built or {}
    for task in tasks:
        yield run_task(task, built.get(task.index))


def _worker_init(parent: int) -> None:
    """Initializer of a pool worker: ignore SIGINT (Ctrl-C is the parent's to handle) and die with
    the parent process ``parent`` (:func:`dpgossip._parent.die_with_parent`: even when the parent
    is killed with SIGKILL)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(parent)


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


class _Lanes:
    """This process and a pool of ``lanes - 1`` spawned workers sharing the points of a sweep."""

    def __init__(self, tasks: list[PointTask], workers: int) -> None:
        self.plan = _Plan(tasks, lanes=min(workers, len(tasks)))
        self.spawned = self.plan.lanes - (1 if OWN_LANE else 0)
        self.stop = threading.Event()
        self.received: list[int] = []
        self.pending: set[Future[ChunkOutcome]] = set()
        self.pool: ProcessPoolExecutor | None = None
        self.outer: dict[int, Any] = {}

    def request_stop(self, signum: int, frame: Any) -> None:
        """Signal handler while the pool is polled: remember the signal; a second Ctrl-C raises."""
        self.received.append(signum)
        self.stop.set()
        signal.signal(signal.SIGINT, signal.default_int_handler)

    def check(self) -> None:
        """Raise :class:`~dpgossip.interrupt.Interrupted` when a stop was requested."""
        if self.stop.is_set():
            raise Interrupted(self.received[0])

    def interrupt_point(self, signum: int, frame: Any) -> None:
        """Signal handler during this process's own point: remember the signal (so that a point
        that swallows the exception still ends the sweep at the next :meth:`check`), then interrupt
        the point as the handler outside the sweep would (it is called when it is a function, e.g.
        ``KeyboardInterrupt`` for Ctrl-C), else with :class:`~dpgossip.interrupt.Interrupted`."""
        self.received.append(signum)
        self.stop.set()
        outer = self.outer.get(signum)
        if callable(outer):
            outer(signum, frame)
        raise Interrupted(signum)

    def start(self) -> None:
        """Start the workers (all of them now, with SIGINT ignored, which they inherit) and queue
        two chunks for each."""
        if threading.current_thread() is threading.main_thread():
            self.outer = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
        self.pool = watched_pool(self.spawned, f"{__name__}:_worker_init", os.getpid())
        with spawning():  # a submit without an idle worker spawns one
            self.refill()

    def refill(self) -> None:
        """Keep two chunks per worker queued while points are left."""
        assert self.pool is not None
        while self.plan and len(self.pending) < 2 * self.spawned:
            self.pending.add(self.pool.submit(run_chunk, self.plan.chunk()))

    def collect(self, timeout: float) -> list[ChunkOutcome]:
        """Chunks finished within ``timeout`` seconds (their time per point noted, the queue refilled)."""
        if not self.pending:
            return []
        finished, self.pending = wait(self.pending, timeout=timeout, return_when=FIRST_COMPLETED)
        outcomes = [fut.result() for fut in finished]
        for outcome in outcomes:
            self.plan.observe(outcome.results)
        self.refill()
        return outcomes

    def own(self) -> PointResult:
        """Run one point in this process (from the back of the queue)."""
        with _sigint(self.interrupt_point, also_sigterm=True):
            result = run_task(self.plan.last())
        self.plan.observe([result])
        return result

    def close(self, clean: bool) -> None:
        """Wait for the workers (``clean``) or terminate them and drop the queued chunks."""
        if self.pool is None:
            return
        if clean:
            self.pool.shutdown(wait=True)
        else:
            stop_pool(self.pool)


def run_pool(tasks: Iterable[PointTask], workers: int) -> Iterator[PointResult]:
    """Run the tasks on ``workers`` lanes: this process and ``workers - 1`` local processes
    (``spawn``), yielding results as they finish.

    The workers take chunks of points from the front of the queue (:func:`chunk_size`); this process
    runs one point at a time from the back between polls of the pool, so a sweep of small points
    gains a lane while the workers start (they import the package again) and pays no round trip for
    its own points. A signal during one of its points interrupts that point at once (through the
    caller's handler when it has one, as in :func:`run_inline`).

    The workers are started with SIGINT ignored, so Ctrl-C reaches only this process; while the pool
    is polled it (or a SIGTERM, as sent by ``kill``) is turned into
    :class:`~dpgossip.interrupt.Interrupted` (a ``KeyboardInterrupt`` carrying the signal) between
    results (never inside the pool's bookkeeping), after which the queued chunks are cancelled and
    the workers terminated. Results already yielded are kept by the caller. A second Ctrl-C
    interrupts at once. If this process is killed outright (SIGKILL), the workers die with it
    (:func:`_worker_init`). A point that raises in a worker is raised here after the points its chunk
    finished before it (:func:`run_chunk`).
    """
    tasks = list(tasks)
    if len(tasks) < 2 or workers < 2:
        yield from run_inline(tasks)
        return
    lanes = _Lanes(tasks, workers)
    clean = False
    try:
        lanes.start()
        while lanes.pending or lanes.plan:
            with _sigint(lanes.request_stop, also_sigterm=True):  # `kill` must not orphan the workers
                lanes.check()
                for outcome in lanes.collect(timeout=0.0 if lanes.plan else 0.2):
                    for result in _unpack(outcome):
                        yield result
                        lanes.check()
            if lanes.plan and OWN_LANE:
                yield lanes.own()
                lanes.check()
        clean = True
    finally:
        lanes.close(clean)


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


def _dask_lanes(client: Any) -> int:
    """Threads of the cluster's workers (at least 1)."""
    try:
        return max(1, sum(client.nthreads().values()))
    except Exception:  # an older client: plain one lane per worker
        return max(1, len(client.scheduler_info().get("workers", {})))


def run_dask(tasks: Iterable[PointTask], client: Any) -> Iterator[PointResult]:
    """Run the tasks on a Dask cluster (``client`` from :func:`connect_dask`) in chunks
    (:func:`run_chunk`, two queued per worker thread), yielding results as they finish; the client
    is closed at the end. On an error or interruption the pending chunks are cancelled."""
    try:
        plan = _Plan(tasks, lanes=_dask_lanes(client))
        if not plan:
            return
        from distributed import as_completed

        # fewer points than threads: each point's pair audit spreads its targets over the cluster
        run = run_chunk_spreading_targets if len(plan) < plan.lanes else run_chunk
        futures: list[Any] = []
        queue = as_completed(loop=client.loop)
        try:
            _dask_refill(client, plan, futures, queue, run)
            for fut in queue:
                outcome = fut.result()
                plan.observe(outcome.results)
                _dask_refill(client, plan, futures, queue, run)
                yield from _unpack(outcome)
        except BaseException:
            client.cancel(futures)
            raise
    finally:
        client.close()


def _dask_refill(client: Any, plan: _Plan, futures: list[Any], queue: Any, run: Any = run_chunk) -> None:
    while plan and queue.count() < 2 * plan.lanes:
        fut = client.submit(run, plan.chunk(), pure=False)
        futures.append(fut)
        queue.add(fut)
