"""Memory estimates, checked before anything large is allocated.

A setting that is valid but far too large (a billion agents, a dense ``100000 x 100000`` mixing matrix,
``10^9`` iterations) must stop at once with a message that says what it would need, not be killed by the
kernel or end in ``MemoryError`` after minutes. Callers describe what they are about to allocate as
:class:`Need` items and :func:`check_needs` compares their sum with :func:`memory_limit`: the memory
available on this machine (``MemAvailable`` of ``/proc/meminfo``, else ``os.sysconf``), or the value of
the environment variable ``DPGOSSIP_MEMORY_LIMIT`` (``8GiB``, ``500MB``, ``1048576``), which overrides it
(tests use it; ``0`` or ``none`` turns the check off).

Estimates are deliberately simple (array sizes times 8 bytes, measured per-row costs of Python objects):
they catch settings that are off by orders of magnitude, not settings that are 20 % too large.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

from dpgossip.errors import ConfigError

__all__ = [
    "MEMORY_LIMIT_ENV",
    "Need",
    "memory_limit",
    "size_text",
    "check_needs",
    "dense_matrix_needs",
    "graph_needs",
    "sparse_matrix_needs",
]

MEMORY_LIMIT_ENV = "DPGOSSIP_MEMORY_LIMIT"
"""Environment variable overriding the available memory (bytes, or a size such as ``8GiB``)."""

FLOAT = 8
"""Bytes per float64."""
NODE_BYTES = 400
"""A networkx node, measured (about 350 bytes)."""
EDGE_BYTES = 300
"""A networkx edge: two adjacency entries, measured (about 140 bytes each)."""

_UNITS = {"": 1, "k": 1000, "m": 1000**2, "g": 1000**3, "t": 1000**4,
          "ki": 1024, "mi": 1024**2, "gi": 1024**3, "ti": 1024**4}


@dataclass(frozen=True, slots=True)
class Need:
    """Something about to be allocated: what it is (a sentence naming the setting that causes it, e.g.
    ``"network.agents = 100000 needs a dense 100000 x 100000 mixing matrix"``) and its size in bytes."""

    what: str
    nbytes: int
    shown: str = ""
    """How the size is shown in a message, when not just ``nbytes`` (e.g. ``"74.5 GiB; 224 GiB with
    its working copies"``)."""


def _parse_size(text: str) -> int:
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([kmgt]i?)?b?\s*", text.lower())
    if not match:
        raise ConfigError(f"{MEMORY_LIMIT_ENV} must be a size such as 8GiB, 500MB or 1048576 "
                          f"(bytes), or 'none'; got {text!r}")
    size = float(match.group(1)) * _UNITS[match.group(2) or ""]
    if not math.isfinite(size):  # 1e999 is a number to the pattern: an OverflowError traceback
        raise ConfigError(f"{MEMORY_LIMIT_ENV} must be a finite size such as 8GiB, 500MB or 1048576 "
                          f"(bytes), or 'none'; got {text!r}")
    return int(size)


def memory_limit() -> tuple[int, str] | None:
    """The memory a run may use, in bytes, and how to name it in a message; ``None`` when unknown
    (or turned off with ``DPGOSSIP_MEMORY_LIMIT=none``)."""
    env = os.environ.get(MEMORY_LIMIT_ENV, "").strip()
    if env:
        if env.lower() in ("none", "off", "0"):
            return None
        return _parse_size(env), f"the memory limit {MEMORY_LIMIT_ENV}"
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024, "this machine's available memory"
    except (OSError, ValueError, IndexError):
        pass
    try:
        pages, size = os.sysconf("SC_AVPHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None
    if pages > 0 and size > 0:
        return pages * size, "this machine's available memory"
    return None


def size_text(nbytes: float) -> str:
    """``80000000000`` -> ``'74.5 GiB'``."""
    value = float(nbytes)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if value < 1024 or unit == "EiB":
            return f"{value:.0f} bytes" if unit == "bytes" else f"{value:.3g} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def check_needs(needs: Sequence[Need], *, advice: str = "", field: str | None = None) -> None:
    """Raise :class:`~dpgossip.errors.ConfigError` when the needs together exceed :func:`memory_limit`.

    The message names the largest item, its size, the total when it is noticeably larger, the limit and
    ``advice``: ``"network.agents = 100000 needs a dense 100000 x 100000 mixing matrix (74.5 GiB; about
    224 GiB in all), more than this machine's available memory (23.4 GiB); use fewer agents"``.
    ``field`` is the :attr:`~dpgossip.errors.ConfigError.field` of the error: the parameter that every
    cause starts with (``"agents"`` for ``"agents = 100000"``), so a caller can rename it.
    """
    needs = [n for n in needs if n.nbytes > 0]
    if not needs:
        return
    limit = memory_limit()
    total = sum(n.nbytes for n in needs)
    if limit is None or total <= limit[0]:
        return
    biggest = max(needs, key=lambda n: n.nbytes)
    size = biggest.shown or size_text(biggest.nbytes)
    if total > 1.2 * biggest.nbytes:
        size += f"; about {size_text(total)} in all"
    raise ConfigError(f"{biggest.what} ({size}), more than {limit[1]} ({size_text(limit[0])})"
                      + (f"; {advice}" if advice else ""), field=field)


def dense_matrix_needs(m: int, cause: str) -> list[Need]:
    """A dense ``m x m`` mixing matrix and the copies made to validate it and find its spectrum
    (``cause`` names the setting, e.g. ``"network.agents = 100000"``)."""
    m = int(m)
    one = FLOAT * m * m
    return [Need(f"{cause} needs a dense {m} x {m} mixing matrix", 3 * one,
                 f"{size_text(one)}; {size_text(3 * one)} with the copies made to check it and "
                 "find its spectrum")]


def graph_needs(m: int, edges: float, cause: str) -> list[Need]:
    """A networkx graph of ``m`` nodes and about ``edges`` edges (built, then relabelled: twice)."""
    return [Need(f"{cause} gives a graph of {int(m)} nodes and about {int(edges)} edges",
                 int(2 * (NODE_BYTES * m + EDGE_BYTES * edges)))]


CSR_ENTRY_BYTES = 12
"""A stored entry of a CSR matrix: a float64 value and an int32 column index."""


def sparse_matrix_needs(m: int, edges: float, cause: str) -> list[Need]:
    """A sparse (CSR) ``m x m`` mixing matrix with ``2 |E| + m`` stored entries, and the copies made to
    build, validate and transpose it (about four in all).

    Memory: ``4 (12 (2 |E| + m) + 8 (m + 1))`` bytes (value and int32 index per entry, one row pointer per
    row), linear in the number of edges where a dense ``W`` needs ``8 m^2``.
    """
    m = int(m)
    one = CSR_ENTRY_BYTES * (2 * float(edges) + m) + FLOAT * (m + 1)
    return [Need(f"{cause} needs a sparse {m} x {m} mixing matrix with about "
                 f"{int(2 * edges + m)} entries", int(4 * one),
                 f"{size_text(one)}; {size_text(4 * one)} with the copies made to build and check it")]
