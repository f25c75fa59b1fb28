"""A point's scratch folder: where the work of a long point is kept while it runs, so that an
interrupted run resumes inside the point instead of from its start.

The run driver sets it around a point's computation (:func:`point_scratch`); code deep inside the point
(today the D-DP-PM pair audit of ``[privacy]``, which stores each finished target there) reads it with
:func:`current_scratch`. ``None`` outside a run, or where the point runs on another machine (a Dask
worker may not see the results folder): the work is then not kept.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from pathlib import Path

__all__ = ["point_scratch", "current_scratch"]

_SCRATCH: contextvars.ContextVar[Path | None] = contextvars.ContextVar("point_scratch", default=None)


@contextlib.contextmanager
def point_scratch(folder: str | Path | None) -> Iterator[None]:
    """Make ``folder`` the current point's scratch folder inside the block (``None``: none)."""
    token = _SCRATCH.set(None if folder is None else Path(folder))
    try:
        yield
    finally:
        _SCRATCH.reset(token)


def current_scratch() -> Path | None:
    """The scratch folder of the point being computed, or ``None``."""
    return _SCRATCH.get()
