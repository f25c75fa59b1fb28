"""Stopping on a signal: SIGINT (Ctrl-C) and SIGTERM (``kill``) end a command cleanly.

Both become :class:`Interrupted`, a :class:`KeyboardInterrupt` that remembers its signal, so every
``finally`` and ``except KeyboardInterrupt`` on the way out runs (finished points are already on disk,
pool workers are terminated, a Dask cluster's tasks cancelled); the command line then exits with the
shell's convention, ``128 + signal``: 130 for SIGINT, 143 for SIGTERM.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["Interrupted", "exit_code", "received", "sigterm_interrupts"]

_received: list[int] = []
"""Signals turned into :class:`Interrupted` inside the current :func:`sigterm_interrupts` block."""


def received() -> int | None:
    """The signal that interrupted the current block, if any (also when the :class:`Interrupted` it
    raised was swallowed: raised inside a simulator callback, it can surface as another exception)."""
    return _received[-1] if _received else None


class Interrupted(KeyboardInterrupt):
    """The run was stopped by signal ``signum`` (a ``KeyboardInterrupt``, so handlers for Ctrl-C see
    it too)."""

    def __init__(self, signum: int) -> None:
        super().__init__(int(signum))  # args = (signum,): rebuilt as type(exc)(*exc.args) by simpy
        self.signum = int(signum)

    def __str__(self) -> str:
        return signal.Signals(self.signum).name


def exit_code(exc: KeyboardInterrupt) -> int:
    """``128 + signal`` of an interruption (a plain ``KeyboardInterrupt`` is SIGINT: 130)."""
    return 128 + int(getattr(exc, "signum", signal.SIGINT))


def _raise(signum: int, frame: Any) -> None:
    _received.append(int(signum))
    raise Interrupted(signum)


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """While the block runs, SIGTERM raises :class:`Interrupted` in the main thread (as Ctrl-C raises
    ``KeyboardInterrupt``) instead of killing the process on the spot. Outside the main thread, or
    where SIGTERM cannot be caught, nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _received.clear()
    try:
        old = signal.signal(signal.SIGTERM, _raise)
    except (ValueError, OSError):  # pragma: no cover - e.g. an embedded interpreter
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)
