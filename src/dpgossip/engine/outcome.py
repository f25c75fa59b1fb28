"""What an engine run reports besides the iterates: status, failures, progress, traffic."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["EngineSummary", "EngineOutcome", "Detection", "AgentProgress", "STATUSES"]

STATUSES = ("completed", "completed_with_crash", "stopped")
"""``completed``: every agent finished and none crashed during the run. ``completed_with_crash``:
every agent that did not crash finished. ``stopped``: the run was halted (see ``reason``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineSummary:
    """Traffic and timing of one run.

    ``messages_delivered`` counts messages accepted by their receiver (one per logical message);
    ``copies_sent`` counts every copy put on a link, so ``copies_sent - messages_sent`` are
    retransmissions. ``dropped_copies = lost_copies + copies_to_crashed + copies_unsent`` (lost on
    the wire, arrived at a crashed agent, never left a crashed sender).
    """

    status: str
    """Status of the run (see :data:`STATUSES`), repeated here so that tidy rows carry it."""
    messages_delivered: int
    gossip_messages: int
    flood_messages: int
    crash_notices: int
    heartbeats: int
    bytes_delivered: int
    messages_sent: int
    copies_sent: int
    retransmissions: int
    lost_copies: int
    copies_to_crashed: int
    copies_unsent: int
    dropped_copies: int
    duplicates_discarded: int
    abandoned: int
    completion_time: float
    """Simulated seconds until the last agent finished (``nan`` if none finished)."""
    wall_time: float
    """Wall-clock seconds of the simulation."""

    def to_row(self) -> dict[str, object]:
        """Tidy row of every field."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass(frozen=True, slots=True, kw_only=True)
class Detection:
    """Agent ``detector`` suspected ``suspect`` at ``time`` (simulated seconds).

    ``verdict`` is the simulator's ground truth, used only to label the report: ``"crash"`` (the
    suspect had crashed), ``"lost"`` (alive; copies from it were lost for good: data without
    retransmission, or heartbeats) or
    ``"false"`` (alive; ``failure_timeout`` too short for these conditions).
    """

    detector: int
    suspect: int
    time: float
    waiting_on: tuple | None
    crashed_at: float | None
    verdict: str

    def to_row(self) -> dict[str, object]:
        """Tidy row."""
        return {"detector": self.detector, "suspect": self.suspect, "time": self.time,
                "waiting_on": str(self.waiting_on), "crashed_at": self.crashed_at,
                "verdict": self.verdict}


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentProgress:
    """How far one agent got."""

    agent: int
    last_step: tuple | None
    """Tag of the last completed step: ``(l, t, k)`` after gossip round ``k``; ``("final", l)``
    after assembling component ``l``; ``None`` before any."""
    components_done: int
    finished: bool
    crashed_at: float | None
    """Simulated crash time if the agent crashed before finishing, else ``None``."""
    waiting_on: tuple | None
    """What the agent was waiting for when the run ended."""

    def to_row(self) -> dict[str, object]:
        """Tidy row."""
        return {"agent": self.agent, "last_step": str(self.last_step),
                "components_done": self.components_done, "finished": self.finished,
                "crashed_at": self.crashed_at, "waiting_on": str(self.waiting_on)}


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineOutcome:
    """Status of an engine run and the failures that happened in it."""

    status: str
    """One of :data:`STATUSES`."""
    reason: str
    """Human-readable explanation (empty when ``completed``)."""
    policy: str
    """``engine.on_crash`` of the run."""
    policy_applied: bool
    """Whether a detected crash triggered the policy."""
    crashed: tuple[int, ...]
    """Agents that crashed before finishing."""
    detections: tuple[Detection, ...]
    """Timeout detections, in time order (learning of a crash from a notice is not listed)."""
    survivors: tuple[int, ...]
    """Agents that did not crash."""
    progress: tuple[AgentProgress, ...]
    halted_at: float | None
    """Simulated time at which the run was stopped, if it was."""

    def to_row(self) -> dict[str, object]:
        """Tidy row."""
        return {"status": self.status, "reason": self.reason, "on_crash": self.policy,
                "policy_applied": self.policy_applied,
                "crashed": " ".join(map(str, self.crashed)),
                "detections": len(self.detections),
                "first_detection": min((d.time for d in self.detections), default=None),
                "finished": sum(p.finished for p in self.progress), "halted_at": self.halted_at}
