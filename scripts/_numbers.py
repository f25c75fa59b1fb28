"""The ``main`` shared by the scripts that store a docs numbers file: write it, or ``--check`` it."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from dpgossip.rounding import format_upper


def store_or_check(description: str, compute: Callable[[], dict], out: Path,
                   table: Callable[[dict], str]) -> tuple[int, dict | None]:
    """Parse ``--check``; compute the numbers (through JSON, as they are stored).

    With ``--check``: compare with ``out`` and return ``(1, None)`` when it is stale, ``(0, None)`` when it
    matches. Without: write ``out``, print ``table(numbers)`` and return ``(0, numbers)``.
    """
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--check", action="store_true", help="compare with the stored numbers")
    args = ap.parse_args()
    numbers = json.loads(json.dumps(compute()))
    name = f"docs/numbers/{out.name}"
    if args.check:
        if json.loads(out.read_text(encoding="utf-8")) != numbers:
            print(f"{name} is stale: rerun without --check", file=sys.stderr)
            return 1, None
        print(f"{name} matches the code")
        return 0, None
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(numbers, indent=1) + "\n", encoding="utf-8")
    print(table(numbers))
    return 0, numbers


def round_up(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits, rounded **up** (``inf`` as ``inf``): an upper bound
    printed rounded is still an upper bound (:func:`dpgossip.rounding.format_upper`)."""
    return format_upper(value, digits)
