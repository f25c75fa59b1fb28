"""Worker processes that die with the process that started them, however it ends.

A pool worker started with ``spawn`` survives its parent by default: after a ``kill -9`` of a
``dpgossip run --workers N`` or ``dpgossip audit --workers N`` its workers would go on computing, and
with multiprocessing's resource tracker they would hold the command's stdout open, so that
``dpgossip audit ... | tail`` never ends. Every pool of the package starts its workers with
:func:`die_with_parent` (from the pool's initializer): the sweep's pool
(:func:`dpgossip.scenario.execute._worker_init`) and the pair audit's
(:func:`dpgossip.protocols.ddppm.audit._start_worker`).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

__all__ = ["PARENT_POLL", "die_with_parent"]

PARENT_POLL = 0.5
"""Seconds between checks of the parent by a worker's watchdog thread (where ``prctl`` is missing)."""

_PR_SET_PDEATHSIG = 1


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
