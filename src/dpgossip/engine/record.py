"""The part every engine run's result shares: its outcome, traffic summary, link conditions, transcript."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from dpgossip.engine.conditions import NetworkConditions
from dpgossip.engine.outcome import EngineOutcome, EngineSummary
from dpgossip.engine.transcript import TranscriptRecord

__all__ = ["EngineRecord"]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class EngineRecord:
    """Base of the protocols' engine results (a protocol adds its own result and records).

    Attributes
    ----------
    outcome
        Status and reason of the run.
    summary
        Traffic and failure counts.
    conditions
        The link conditions the run used.
    transcript
        Every message, when recorded.
    """

    outcome: EngineOutcome
    summary: EngineSummary
    conditions: NetworkConditions
    transcript: tuple[TranscriptRecord, ...] | None = None

    @property
    def status(self) -> str:
        """``"completed"``, ``"completed_with_crash"`` or ``"stopped"`` (``outcome.status``)."""
        return self.outcome.status

    def engine_row(self, protocol_row: Mapping[str, object], **extra: object) -> dict[str, object]:
        """Tidy row: ``protocol_row``, then ``extra``, the traffic summary and the status reason."""
        return {**protocol_row, **extra, **self.summary.to_row(), "status_reason": self.outcome.reason}
