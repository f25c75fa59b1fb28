"""Progress inside one long step of ``dpgossip audit`` and ``dpgossip calibrate``: per target of a pair
audit, with an ETA, and per candidate noise scale of a calibration.

Both turn the privacy layer's callbacks (:attr:`~dpgossip.protocols.ddppm.audit.AuditOptions.on_target`,
:attr:`~dpgossip.protocols.ddppm.calibrate.AuditSettings.on_level`) into sentences for a ``say`` function (the
``stage`` of :class:`~dpgossip.scenario.progress.Progress`, or the calibrate command's comment lines),
and the stages inside one target's search (:attr:`~dpgossip.protocols.ddppm.audit.AuditOptions.on_stage`).
The ETA of a step is ``elapsed / done * (total - done)`` over its finished targets. Lines are throttled:
every finished target is said (one line each, also when the output is not a terminal), the stages
inside a target at most every ``every`` seconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from dpgossip.protocols.ddppm.calibrate import LevelEvent

__all__ = ["TargetProgress", "LevelProgress", "eta_text"]

Say = Callable[[str], None]


def eta_text(elapsed: float, done: int, total: int) -> str:
    """``"3/13 targets, 4.2 s, ETA 14 s"`` (no ETA before the first target is done)."""
    head = f"{done}/{total} targets, {elapsed:.1f} s"
    if done <= 0 or done >= total:
        return head
    return f"{head}, ETA {elapsed / done * (total - done):.1f} s"


class _Throttle:
    """Says a line when forced or when ``every`` seconds have passed since the last one."""

    def __init__(self, say: Say, every: float, clock: Callable[[], float]) -> None:
        self.say, self.every, self.clock = say, every, clock
        self.last = -float("inf")

    def __call__(self, text: str, force: bool = False) -> None:
        now = self.clock()
        if force or now - self.last >= self.every:
            self.last = now
            self.say(text)


class TargetProgress:
    """``on_target(target, done, total)`` of one pair audit, said as ``"<prefix>: target 4 done (3/13
    targets, 4.2 s, ETA 14 s)"``.

    Parameters
    ----------
    say
        Where the lines go.
    prefix
        What is being audited (``"point 0"``).
    every
        Seconds between two lines (the first and last target are always said).
    clock
        Time source (seconds).
    """

    def __init__(self, say: Say, prefix: str, *, every: float = 2.0,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.prefix, self.clock = prefix, clock
        self._say = _Throttle(say, every, clock)
        self.t0 = clock()

    def __call__(self, target: int, done: int, total: int) -> None:
        text = eta_text(self.clock() - self.t0, done, total)
        self._say(f"{self.prefix}: target {target} done ({text})", force=True)

    def stage(self, target: int, text: str) -> None:
        """A stage inside one target's search (``"search level 1/2"``), throttled like the rest."""
        self._say(f"{self.prefix}: target {target}: {text} ({self.clock() - self.t0:.1f} s)")


class LevelProgress:
    """``on_level(event)`` of a calibration: a line when the audit at a candidate noise scale starts,
    throttled lines per target with the ETA of that scale's audit, and its result against the target.

    Parameters
    ----------
    say
        Where the lines go.
    target_epsilon, target_delta
        The calibration's target (the result line says whether the worst delta meets it).
    every, clock
        As :class:`TargetProgress`.
    """

    def __init__(self, say: Say, *, target_epsilon: float, target_delta: float, every: float = 2.0,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.epsilon, self.delta, self.clock = target_epsilon, target_delta, clock
        self._plain = say
        self._say = _Throttle(say, every, clock)
        self.t0 = clock()
        self.start = clock()

    def __call__(self, event: LevelEvent) -> None:
        head = f"level {event.level}: noise scale {event.scale:.6g} ({event.effort})"
        now = self.clock()
        if event.worst_delta is not None:
            meets = "meets" if event.worst_delta <= self.delta else "misses"
            self._plain(f"{head}: worst delta at epsilon {self.epsilon:g} = {event.worst_delta:.4g} "
                        f"(lower estimate; {meets} {self.delta:g}; {now - self.start:.1f} s, "
                        f"{now - self.t0:.1f} s in all)")
            return
        if event.stage:
            self._say(f"{head}: {event.stage} ({now - self.start:.1f} s)")
            return
        if event.total == 0:
            self.start = now
            self._plain(f"{head}: auditing every pair")
            return
        text = eta_text(now - self.start, event.done, event.total)
        self._say(f"{head}: {text}", force=event.done == 1)
