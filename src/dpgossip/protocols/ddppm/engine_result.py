"""The result of a D-DP-PM engine run: the run itself (:class:`~dpgossip.protocols.ddppm.result.RunResult`)
plus what only the engine knows, the record every engine run reports
(:class:`~dpgossip.engine.record.EngineRecord`: status, failures, traffic, transcript) and D-DP-PM's own
engine facts (which rows were assembled, and how)."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from dpgossip.engine.record import EngineRecord
from dpgossip.protocols.ddppm.result import RunResult
from dpgossip.protocols.status import ArithmeticStatus, arithmetic_status
from dpgossip.topology.schedules import MixingSchedule

__all__ = ["EngineResult"]


@dataclass(frozen=True, kw_only=True, eq=False)  # no slots: see the last paragraph
class EngineResult(RunResult):
    """A :class:`~dpgossip.protocols.ddppm.result.RunResult` of
    :func:`~dpgossip.protocols.ddppm.nodes.run_engine`, with the engine's own facts as typed fields (a
    matrix-backend run is a plain ``RunResult``: test with ``isinstance(res, EngineResult)``).

    The engine's record is composed, not repeated: every field of
    :class:`~dpgossip.engine.record.EngineRecord` (``outcome``, ``summary``, ``conditions``,
    ``transcript``) is read on this result as on its :attr:`record` (``res.outcome is
    res.record.outcome``).

    The class has no ``__slots__`` (its base has): assigning ``res.outcome``, a property, then raises
    :class:`dataclasses.FrozenInstanceError` as for a field, which the ``__setattr__`` of a slotted
    frozen subclass does not do on Python 3.11 (it fails with a ``TypeError`` for a name that is not a
    field)."""

    record: EngineRecord
    """What every engine run reports: status, failures and detections, traffic, the link and failure
    model, the transcript."""
    rows_kept: np.ndarray
    """``(n, r)`` booleans: row ``i`` of component ``l`` was assembled in ``Q``."""
    dissemination: str
    """How ``Q`` was assembled: ``"tree"`` (convergecast and broadcast along the BFS spanning tree),
    ``"flood"`` (the agents flooded their final rows, in batches) or ``"none (Q assembled by the
    simulator)"``."""
    transcript_path: str | None = None
    """The JSON-lines transcript file, when the run wrote one."""
    schedule: MixingSchedule | None = None
    """Under a schedule of rounds, the realised one (:func:`~dpgossip.protocols.ddppm.nodes.run_engine`);
    ``None``: ``W`` every round."""

    @property
    def status(self) -> str:
        """One of :data:`~dpgossip.engine.outcome.STATUSES` (``outcome.status``)."""
        return self.record.status

    @property
    def status_reason(self) -> str:
        """Why the engine ended as it did (``outcome.reason``)."""
        return self.record.outcome.reason

    @property
    def arithmetic(self) -> ArithmeticStatus:
        """Whether the iterates are usable numbers (as for the matrix backend); the iterations a
        stopped run did not compute (all ``nan``) are skipped."""
        return arithmetic_status(self.iterates, not_computed_is_nan=self.record.status == "stopped")


def _read_through(name: str) -> property:
    """``EngineResult.<name>``: the field ``name`` of its :attr:`~EngineResult.record`."""
    return property(lambda self: getattr(self.record, name),
                    doc=f"``record.{name}`` (:class:`~dpgossip.engine.record.EngineRecord`).")


for _field in fields(EngineRecord):
    setattr(EngineResult, _field.name, _read_through(_field.name))
