"""One setting of a scenario section: its type, default, allowed values and meaning (:class:`Field`).

The schema (:mod:`~dpgossip.scenario.schema`) and the sections registered by other modules describe their
keys with fields; validation and the key reference (``docs/scenarios.md``,
:mod:`~dpgossip.scenario.reference`) both read them, so the two cannot disagree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Field", "REQUIRED"]


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()


@dataclass(frozen=True, slots=True, kw_only=True)
class Field:
    """One scalar setting.

    ``kind`` is ``int``, ``float``, ``str``, ``bool``, ``"list"`` (a list value, e.g. explicit sizes), or
    ``"table"`` (an inline table checked by ``check``). A list where a scalar kind is expected is a sweep axis
    when ``sweep`` is true. ``check(path, value)`` validates a ``"table"``, or a scalar after its type
    check (e.g. ``name`` must be a plain folder name); it returns the value or raises ``ConfigError``.
    """

    kind: Any
    default: Any = None
    choices: tuple[Any, ...] | None = None
    low: float | None = None
    low_open: bool = False
    high: float | None = None
    high_open: bool = False
    sweep: bool = True
    check: Callable[[str, Any], Any] | None = None
    doc: str = ""
    read_by: tuple[str, ...] | None = None
    """The kinds that read this key of their section (``None``: every kind of the section); a
    scenario that gives the key while none of its kinds reads it is refused."""
