"""The common part of the engine wrappers of protocol objects (``ppm*``, capePCA, floor-free D-DP-PM).

A protocol object of :mod:`dpgossip.protocols.interface` that the engine can run is wrapped here: the
wrapper keeps the object's ``kind``, ``side`` and ``params``, holds the link conditions, and
refuses an object its engine does not run. Subclasses name the accepted classes (``ACCEPTS``) and
provide ``run_engine`` and ``run``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from dpgossip.engine.conditions import NetworkConditions
from dpgossip.errors import ConfigError

__all__ = ["WrappedProtocol"]


@dataclass(frozen=True, slots=True)
class WrappedProtocol:
    """A protocol object run on the engine under ``conditions`` (ideal links by default).

    Attributes
    ----------
    protocol
        The wrapped object (an instance of one of ``ACCEPTS``).
    conditions
        Link conditions (:class:`~dpgossip.engine.conditions.NetworkConditions` or its table).
    record_transcript
        Keep every message in the engine's transcript.
    """

    protocol: Any
    conditions: NetworkConditions | Mapping[str, object] | None = None
    record_transcript: bool = False
    ACCEPTS: ClassVar[tuple[type, ...]] = ()

    def __post_init__(self) -> None:
        """Refuse a protocol this engine does not run."""
        if not isinstance(self.protocol, self.ACCEPTS):
            names = [c.__name__ for c in self.ACCEPTS]
            allowed = f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else names[0]
            raise ConfigError(f"protocol must be a {allowed}, got {type(self.protocol).__name__}",
                              field="protocol")

    @property
    def kind(self) -> str:
        """The wrapped protocol's ``kind``."""
        return self.protocol.kind

    @property
    def side(self) -> str:
        """The wrapped protocol's ``side``."""
        return self.protocol.side

    @property
    def params(self) -> object:
        """The wrapped protocol's parameters."""
        return self.protocol.params
