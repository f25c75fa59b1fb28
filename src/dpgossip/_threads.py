"""BLAS thread limits for code made of many small linear-algebra calls.

The auditor's per-candidate work is hundreds of small triangular solves, QRs and SVDs (sizes ``K x 2T``).
Multithreaded BLAS pays a synchronisation cost on each call that exceeds the work; with one thread the pair
audit runs several times faster (``benchmarks/bench_audit.py`` measures both side by side). The limit is
applied with ``threadpoolctl`` (a dependency) for the duration of a call and restored afterwards, so a
caller's own BLAS settings are untouched outside it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["blas_threads"]


@contextmanager
def blas_threads(limit: int | None = 1) -> Iterator[None]:
    """Limit BLAS threads to ``limit`` inside the ``with`` block (``None``: leave them alone).

    The environment variable ``DPGOSSIP_BLAS_THREADS`` overrides ``limit`` (``0`` or ``default``: no
    limit).
    """
    env = os.environ.get("DPGOSSIP_BLAS_THREADS")
    if env is not None:
        limit = None if env.strip().lower() in ("0", "default", "") else int(env)
    if limit is None:
        yield
        return
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl is a core dependency
        yield
        return
    with threadpool_limits(limits=limit, user_api="blas"):
        yield
