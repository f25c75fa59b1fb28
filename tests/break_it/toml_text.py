"""A tiny TOML writer for the break-it cases: a scenario as nested dicts and lists, edited by dotted
paths, written back as TOML text (tables, inline tables, inline arrays of tables)."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

DELETE = object()
"""An edit's value that removes the key."""


def literal(value: Any) -> str:
    """``value`` as a TOML literal (inline tables for dicts)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {literal(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML literal for {value!r}")


def _key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() else json.dumps(key)


def dump(doc: dict[str, Any]) -> str:
    """``doc`` as TOML: top-level scalars first, then one ``[table]`` per top-level dict."""
    top = [f"{_key(k)} = {literal(v)}" for k, v in doc.items() if not isinstance(v, dict)]
    tables = [f"[{_key(k)}]\n" + "".join(f"{_key(kk)} = {literal(vv)}\n" for kk, vv in v.items())
              for k, v in doc.items() if isinstance(v, dict)]
    return "\n".join(top) + "\n\n" + "\n".join(tables)


def edited(doc: dict[str, Any], edits: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
    """A copy of ``doc`` with each ``(dotted path, value)`` set (``DELETE`` removes the key; a number
    in the path indexes a list)."""
    out = copy.deepcopy(doc)
    for path, value in edits:
        *head, last = path.split(".")
        node: Any = out
        for key in head:
            node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
        if isinstance(node, list):
            node[int(last)] = value
        elif value is DELETE:
            node.pop(last, None)
        else:
            node[last] = value
    return out


def show(edits: tuple[tuple[str, Any], ...]) -> str:
    """The edits as the table prints them: ``path = value; ...``."""
    return "; ".join(f"{p} removed" if v is DELETE else f"{p} = {literal(v)}" for p, v in edits)
