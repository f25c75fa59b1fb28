"""The result of an engine run: the run itself plus what only the engine knows (status, failures,
traffic, transcript)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpgossip.engine.conditions import NetworkConditions
from dpgossip.engine.outcome import EngineOutcome, EngineSummary
from dpgossip.engine.transcript import TranscriptRecord
from dpgossip.protocols.ddppm.result import RunResult
from dpgossip.protocols.status import ArithmeticStatus, arithmetic_status

__all__ = ["EngineResult"]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class EngineResult(RunResult):
    """A :class:`~dpgossip.protocols.ddppm.result.RunResult` of :func:`~dpgossip.protocol.nodes.run_engine`, with the
    engine's own facts as typed fields (a matrix-backend run is a plain ``RunResult``: test with
    ``isinstance(res, EngineResult)``)."""

    outcome: EngineOutcome
    """Status, failures, detections and each agent's progress."""
    summary: EngineSummary
    """Message counts and times."""
    conditions: NetworkConditions
    """The link and failure model the run used."""
    rows_kept: np.ndarray
    """``(n, r)`` booleans: row ``i`` of component ``l`` was assembled in ``Q``."""
    dissemination: str
    """How ``Q`` was assembled: ``"tree"`` (convergecast and broadcast along the BFS spanning tree),
    ``"flood"`` (the agents flooded their final rows, in batches) or ``"none (Q assembled by the
    simulator)"``."""
    transcript: tuple[TranscriptRecord, ...] | None = None
    """Every accepted message, when the run recorded it in memory."""
    transcript_path: str | None = None
    """The JSON-lines transcript file, when the run wrote one."""

    @property
    def status(self) -> str:
        """One of :data:`~dpgossip.engine.outcome.STATUSES` (``outcome.status``)."""
        return self.outcome.status

    @property
    def status_reason(self) -> str:
        """Why the engine ended as it did (``outcome.reason``)."""
        return self.outcome.reason

    @property
    def arithmetic(self) -> ArithmeticStatus:
        """Whether the iterates are usable numbers (as for the matrix backend); the iterations a
        stopped run did not compute (all ``nan``) are skipped."""
        return arithmetic_status(self.iterates, not_computed_is_nan=self.outcome.status == "stopped")
