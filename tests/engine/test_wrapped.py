"""The shared wrapper of protocol objects run on the engine."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pytest

from dpgossip.errors import ConfigError
from dpgossip.protocols.nodes.wrapped import WrappedProtocol


@dataclass(frozen=True)
class _Proto:
    kind: str = "toy"
    side: str = "left"
    params: int = 7


@dataclass(frozen=True, slots=True)
class _Wrapper(WrappedProtocol):
    ACCEPTS: ClassVar[tuple[type, ...]] = (_Proto,)


def test_delegates_kind_side_params() -> None:
    w = _Wrapper(_Proto())
    assert (w.kind, w.side, w.params, w.conditions, w.record_transcript) == ("toy", "left", 7, None, False)


def test_refuses_other_objects_naming_the_field() -> None:
    with pytest.raises(ConfigError, match=r"protocol must be a _Proto, got str") as exc:
        _Wrapper("ppm")
    assert exc.value.field == "protocol"
