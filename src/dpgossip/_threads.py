"""BLAS thread limits: for speed (many small linear-algebra calls) and for reproducible numbers.

The auditor's per-candidate work is hundreds of small triangular solves, QRs and SVDs (sizes ``K x 2T``).
Multithreaded BLAS pays a synchronisation cost on each call that exceeds the work; with one thread the pair
audit runs several times faster (``benchmarks/bench_audit.py`` measures both side by side). The limit is
applied with ``threadpoolctl`` (a dependency) for the duration of a call and restored afterwards, so a
caller's own BLAS settings are untouched outside it.

Multithreaded BLAS also splits sums differently with the number of threads, so results differ in the last
bits between a process with two BLAS threads and one with one. :func:`single_blas_thread` runs a block
with every BLAS library of the process on one thread, whatever the environment says; every sweep point
runs inside it (:func:`dpgossip.scenario.execute.run_task`), so a point gives the same bits in this
process, in a pool worker and on a Dask worker.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dpgossip.errors import ConfigError

__all__ = ["blas_threads", "single_blas_thread"]

_ENV = "DPGOSSIP_BLAS_THREADS"


def _env_limit(limit: int | None) -> int | None:
    env = os.environ.get(_ENV)
    if env is None:
        return limit
    text = env.strip().lower()
    if text in ("0", "default", ""):
        return None
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise ConfigError(f"environment variable {_ENV} must be an integer >= 0 (0 or 'default': no "
                          f"limit), got {env!r}")
    return value


@contextmanager
def blas_threads(limit: int | None = 1) -> Iterator[None]:
    """Limit BLAS threads to ``limit`` inside the ``with`` block (``None``: leave them alone).

    The environment variable ``DPGOSSIP_BLAS_THREADS`` overrides ``limit`` (``0`` or ``default``: no
    limit). Inside :func:`single_blas_thread` the limit stays one thread.

    Raises
    ------
    ConfigError
        ``DPGOSSIP_BLAS_THREADS`` is not an integer >= 0 or ``default``.
    """
    limit = _env_limit(limit)
    if limit is None or _pinned.depth:
        yield
        return
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl is a core dependency
        yield
        return
    with threadpool_limits(limits=limit, user_api="blas"):
        yield


class _Pin:
    """Process-wide one-thread BLAS pin, shared by the threads that run points (e.g. a Dask worker with
    several threads): the first to enter sets the limit, the last to leave restores it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.depth = 0
        self.limiter: Any = None
        self.warned = False


_pinned = _Pin()


def _load_blas() -> None:
    """Import the modules that load a BLAS library (numpy's, and scipy's own copy), so that the limit
    reaches them: ``threadpoolctl`` only sees libraries already loaded."""
    import numpy  # noqa: F401
    import scipy.linalg  # noqa: F401


def _check_pinned(controller: Any) -> None:
    """Warn (once) when a BLAS library did not take the limit: OpenBLAS ignores a thread count set
    from a thread other than the main one once the main thread has set one itself."""
    stuck = [lib.filepath for lib in controller.select(user_api="blas").lib_controllers
             if lib.num_threads != 1]
    if stuck and not _pinned.warned:
        import warnings

        _pinned.warned = True
        warnings.warn(f"could not limit BLAS to one thread in {', '.join(stuck)} (set from a "
                      f"thread other than the main one?); results may differ in the last bits "
                      f"from other executors", RuntimeWarning, stacklevel=4)


@contextmanager
def single_blas_thread() -> Iterator[None]:
    """Run the block with every BLAS library of this process on one thread (``DPGOSSIP_BLAS_THREADS``
    is ignored: the point is that the numbers do not depend on the machine or the executor).

    Reentrant and shared between threads: the limit holds while any thread is inside.
    """
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - threadpoolctl is a core dependency
        yield
        return
    with _pinned.lock:
        if _pinned.depth == 0:
            _load_blas()
            controller = ThreadpoolController()
            _pinned.limiter = controller.limit(limits=1, user_api="blas")
            _check_pinned(controller)
        _pinned.depth += 1
    try:
        yield
    finally:
        with _pinned.lock:
            _pinned.depth -= 1
            if _pinned.depth == 0:
                _pinned.limiter.restore_original_limits()
                _pinned.limiter = None
