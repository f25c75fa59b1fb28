"""Worker processes that die with the process that started them, however it ends.

A pool worker started with ``spawn`` survives its parent by default: after a ``kill -9`` of a
``dpgossip run --workers N`` or ``dpgossip audit --workers N`` its workers would go on computing, and
with multiprocessing's resource tracker they would hold the command's stdout open, so that
``dpgossip audit ... | tail`` never ends. Every pool of the package is a :func:`watched_pool`: the
sweep's (:func:`dpgossip.scenario.execute._worker_init`) and the pair audit's
(:func:`dpgossip.protocols.ddppm.audit._start_worker`). Its workers call :func:`die_with_parent`
first thing, before they import the package's heavy modules or unpickle their initializer's
arguments (seconds on a loaded machine, during which a killed parent's workers would live on), and
:func:`stop_pool` terminates them when the command is interrupted.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import pickle
import signal
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any

__all__ = ["PARENT_POLL", "die_with_parent", "spawning", "stop_pool", "watched_pool"]

PARENT_POLL = 0.5
"""Seconds between checks of the parent by a worker's watchdog thread (where ``prctl`` is missing)."""

_PR_SET_PDEATHSIG = 1

_watched: list[int] = []
"""The parent this process already dies with (:func:`die_with_parent` called again does not start a
second watchdog)."""


def die_with_parent(parent: int) -> None:
    """Make this process (a pool worker) die with the process ``parent``.

    On Linux the kernel kills the worker when its parent dies (``prctl(PR_SET_PDEATHSIG, SIGKILL)``),
    whatever killed the parent, SIGKILL included; elsewhere a daemon thread polls ``os.getppid()``
    every :data:`PARENT_POLL` seconds. A parent that died before this ran is caught by the check that
    follows. When every worker is gone, multiprocessing's resource tracker (whose pipe they and the
    parent held) sees the end of its pipe and exits too.

    Parameters
    ----------
    parent
        The process id of the parent (``os.getpid()`` in the parent, passed to the initializer).
    """
    if parent not in _watched:
        _watched.append(parent)
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


def watched_pool(count: int, initializer: str, *args: Any) -> ProcessPoolExecutor:
    """A pool of ``count`` processes started with ``spawn`` that die with this process.

    Each worker first calls :func:`die_with_parent` (from this light module), then imports
    ``initializer`` (``"module:function"``) and calls it with ``args``, which reach the worker
    pickled as bytes: unpickling the worker itself imports nothing heavy, so a parent killed while its
    workers start leaves none of them behind. Submit to it inside :func:`spawning`.
    """
    import multiprocessing
    from multiprocessing.reduction import ForkingPickler

    return ProcessPoolExecutor(max_workers=count, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_start_worker,
                               initargs=(os.getpid(), initializer, bytes(ForkingPickler.dumps(args))))


def _start_worker(parent: int, initializer: str, args: bytes) -> None:
    """The initializer of a :func:`watched_pool`'s worker: die with ``parent``, then the real one."""
    die_with_parent(parent)
    module, name = initializer.split(":")
    getattr(importlib.import_module(module), name)(*pickle.loads(args))


@contextlib.contextmanager
def spawning() -> Iterator[None]:
    """SIGINT blocked while the block runs: a ``submit`` that spawns a worker passes the blocked signal
    mask on, so a Ctrl-C at the terminal (sent to the whole process group) reaches the command, which
    stops the pool, and not a worker still importing the package. A SIGINT sent to the command meanwhile
    is held, not lost: it arrives when the block ends (ignoring it instead would drop it). Where
    signals cannot be blocked, nothing changes."""
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    except (AttributeError, OSError, ValueError):  # pragma: no cover - no pthread_sigmask (Windows)
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def stop_pool(pool: ProcessPoolExecutor) -> None:
    """Terminate the pool's workers and drop its queued tasks, without waiting. The workers are
    terminated before ``shutdown``, which forgets them (the command would otherwise wait, at its
    exit, for the workers to finish their tasks)."""
    stop = getattr(pool, "terminate_workers", None)  # Python 3.14+
    if stop is not None:
        stop()
        return
    for proc in list((getattr(pool, "_processes", None) or {}).values()):
        if proc.is_alive():
            proc.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
