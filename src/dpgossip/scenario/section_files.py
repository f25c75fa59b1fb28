"""Scenario files told apart by one top-level table (``[network_dp]``, ``[dynamic_gossip]``): whether a
file has it, and reading one with its own parser, errors naming the file."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from dpgossip.errors import ConfigError

__all__ = ["file_has_section", "load_section_file", "plain_name"]

T = TypeVar("T")

_NAME = re.compile(r"[\w.-]+")
_NAME_MAX = 200


def plain_name(path: str, value: Any) -> str:
    """A scenario's ``name``: a plain folder name (it becomes ``results/<name>``), never a path.

    Raises
    ------
    ConfigError
        ``value`` is not a string of letters, digits, ``-``, ``_`` and ``.`` (at most 200 characters,
        not ``.`` or ``..``), naming ``path``.
    """
    if (
        not isinstance(value, str)
        or not _NAME.fullmatch(value)
        or value in (".", "..")
        or len(value) > _NAME_MAX
    ):
        raise ConfigError(
            f"{path} must be a plain folder name (letters, digits, '-', '_' and '.', at most "
            f"{_NAME_MAX} characters, not '.' or '..'; no '/' or other separators), got {value!r}; "
            "results go to results/<name> (use --out or [output] dir for another folder)",
            field=path,
        )
    return value


def file_has_section(path: str | Path, section: str) -> bool:
    """Whether ``path`` is a readable TOML file with a ``[section]`` table (``False`` for anything else:
    the ordinary scenario loader then reports what is wrong with it)."""
    try:
        return section in tomllib.loads(Path(path).read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False


def load_section_file(path: str | Path, parse: Callable[[Mapping[str, Any]], T]) -> T:
    """Read the TOML file ``path`` and ``parse`` it; errors name the file and the TOML path."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the scenario: {exc}") from None
    try:
        return parse(raw)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}", field=exc.field) from None
