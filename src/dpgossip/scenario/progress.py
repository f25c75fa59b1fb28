"""Progress of a sweep on stderr: a tqdm bar with ETA on a terminal, plain lines otherwise.

* ``quiet``: nothing.
* stderr is a terminal and tqdm is installed (extra ``progress``): one bar with rate and ETA.
* otherwise: one line per finished point, ``[3/9] c=5: error 0.0123 (0.4 s; ETA 2.1 s)``.

:meth:`Progress.update` takes any finished point with ``index``, ``axes`` and ``seconds`` (a
:class:`~dpgossip.scenario.results.PointResult` of ``dpgossip run``, an audited point of ``dpgossip
audit``) and what to say about it; :meth:`Progress.stage` says what a long point is doing meanwhile.

Inside a long point (few points of many repeats: ``repeats = 200000``), :meth:`Progress.repeat` reports
the repeats done, at most once every :data:`REPEAT_SECONDS` (plain lines; the bar's description on a
terminal), with the point's ETA; a point shorter than that prints no such line.

A point with runs that are not ``ok`` (crashed agents, a stopped or diverged run) gets one warning line,
quiet or not (:meth:`Progress.warn`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import IO, Any, Protocol

from dpgossip.scenario.results import PointResult

__all__ = ["Progress", "Finished", "axes_label", "REPEAT_SECONDS"]

REPEAT_SECONDS = 5.0
"""Least seconds between two lines of repeat progress inside a point (:meth:`Progress.repeat`); on a
terminal the bar is refreshed every tenth of that."""

_SHORT = {
    "protocol.consensus_steps": "c",
    "protocol.iterations": "T",
    "protocol.rank": "r",
    "network.topology": "topology",
    "network.agents": "m",
    "baseline.epsilon": "eps",
    "baseline.delta": "delta",
    "data.source": "data",
}


def axes_label(axes: dict[str, Any], *, short: bool = True) -> str:
    """``"topology=ring, c=5"`` from the axis values of a point (short names for common settings)."""
    parts = []
    for path, value in axes.items():
        name = _SHORT.get(path, path.split(".")[-1]) if short else path
        if isinstance(value, dict):
            value = ", ".join(f"{k}={v}" for k, v in value.items())
            value = "{" + value + "}"
        parts.append(f"{name}={value}")
    return ", ".join(parts)


class Finished(Protocol):
    """What :meth:`Progress.update` reads of a finished point."""

    @property
    def index(self) -> int:
        """Position of the point in the sweep."""

    @property
    def axes(self) -> dict[str, Any]:
        """Axis values of the point (dotted paths)."""

    @property
    def seconds(self) -> float:
        """Wall-clock time the point took."""


class Progress:
    """Reports finished points of a sweep.

    Parameters
    ----------
    total
        Number of points of the sweep.
    quiet
        Report nothing.
    stream
        Where to report (default ``sys.stderr``).
    clock
        Seconds since some origin (default :func:`time.perf_counter`).
    """

    def __init__(self, total: int, *, quiet: bool = False, stream: IO[str] | None = None,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.total = total
        self.quiet = quiet
        self.stream = stream if stream is not None else sys.stderr
        self.done = 0
        self._computed = 0
        self._todo = total
        self._clock = clock
        self._t0 = clock()
        self._point_t0 = self._t0
        self._said = self._t0
        self._bar: Any = None
        if not quiet and _isatty(self.stream):
            try:
                from tqdm import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self._bar = tqdm(total=total, file=self.stream, unit="point", dynamic_ncols=True)

    def skipped(self, n: int, where: str) -> None:
        """Note ``n`` points already finished in ``where`` (a resumed run)."""
        self.done += n
        self._todo = self.total - n
        if self.quiet or n == 0:
            return
        msg = f"resuming: {n} of {self.total} points already finished in {where}"
        if self._bar is not None:
            self._bar.update(n)
            self._bar.write(msg, file=self.stream)
        else:
            print(msg, file=self.stream, flush=True)

    def update(self, result: Finished, summary: str | None = None) -> None:
        """Report one finished point.

        Parameters
        ----------
        result
            The point (its ``index``, ``axes`` and ``seconds``).
        summary
            What to say about it; default ``error <mean final error>`` (``result`` must then be a
            :class:`~dpgossip.scenario.results.PointResult`).
        """
        self.done += 1
        self._computed += 1
        self._point_t0 = self._said = self._clock()
        if self.quiet:
            return
        label = axes_label(result.axes) or f"point {result.index}"
        if self._bar is not None:
            short = summary if summary is not None else f"error {_mean_error(result):.3g}"
            self._bar.set_description_str("", refresh=False)  # the repeats of the point just done
            self._bar.set_postfix_str(f"{label}: {short}", refresh=False)
            self._bar.update(1)
            return
        elapsed = self._clock() - self._t0
        left = self._todo - self._computed
        eta = elapsed / self._computed * left
        said = summary if summary is not None else f"error {_mean_error(result):.4g}"
        print(
            f"[{self.done}/{self.total}] {label}: {said} "
            f"({result.seconds:.2f} s; ETA {eta:.1f} s)",
            file=self.stream,
            flush=True,
        )

    def repeat(self, done: int, total: int) -> None:
        """Note that ``done`` of the running point's ``total`` repeats are finished: a line
        ``[1/1] repeat 1200/200000 of this point (31 s; ETA of the point 5147 s)`` at most every
        :data:`REPEAT_SECONDS` (none for a point shorter than that), or the bar's description on a
        terminal; nothing when quiet."""
        now = self._clock()
        wait = REPEAT_SECONDS / 10 if self._bar is not None else REPEAT_SECONDS
        if self.quiet or done >= total or now - self._said < wait:
            return
        self._said = now
        elapsed = now - self._point_t0
        eta = elapsed / done * (total - done)
        if self._bar is not None:
            self._bar.set_description_str(f"repeat {done}/{total} (ETA of the point {eta:.0f} s)")
            return
        print(f"[{self.done + 1}/{self.total}] repeat {done}/{total} of this point ({elapsed:.0f} s; "
              f"ETA of the point {eta:.0f} s)", file=self.stream, flush=True)

    def stage(self, text: str) -> None:
        """Say what the current point is doing (a long step: a calibration, an audit); nothing when
        quiet. On a terminal the text replaces the bar's description."""
        if self.quiet:
            return
        if self._bar is not None:
            self._bar.set_description_str(text)
        else:
            print(f"[{self.done + 1}/{self.total}] {text}", file=self.stream, flush=True)

    def warn(self, result: PointResult) -> None:
        """One line on the stream (even when quiet) if some runs of the point are not ``ok``
        (:func:`~dpgossip.scenario.status.point_warning`)."""
        from dpgossip.scenario.status import point_warning

        text = point_warning(result.runs)
        if text is None:
            return
        label = axes_label(result.axes)
        msg = f"dpgossip: warning: point {result.index}{f' ({label})' if label else ''}: {text}"
        if self._bar is not None:
            self._bar.write(msg, file=self.stream)
        else:
            print(msg, file=self.stream, flush=True)

    def close(self) -> None:
        """Close the bar (if any)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def _mean_error(result: Any) -> float:
    return result.mean_error() if isinstance(result, PointResult) else float("nan")


def _isatty(stream: IO[str]) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
