"""Helpers of the tests that check a page against a stored results folder (docs/results/README.md)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from dpgossip.rounding import format_upper


def fmt(v: float, digits: int = 3) -> str:
    """A table cell to ``digits`` significant digits (rounded to nearest): empty for NaN, ``inf``."""
    if math.isnan(v):
        return ""
    if math.isinf(v):
        return "inf"
    return f"{v:.{digits}g}"


def fmt_upper(v: float, digits: int = 3) -> str:
    """A guarantee or a certified bound (an upper bound on epsilon) to ``digits`` significant digits
    rounded **up** (:func:`dpgossip.rounding.format_upper`); empty for NaN (none)."""
    return "" if math.isnan(v) else format_upper(v, digits)


def assert_rows_match(stored: list[dict[str, str]], fresh: list[dict[str, object]]) -> None:
    """Every stored CSV cell against the recomputed one: the same columns in the same order, integers and
    text equal (``None`` an empty cell), floats to 1e-12 relative (NaN equal to NaN)."""
    assert len(stored) == len(fresh) > 0
    for s, f in zip(stored, fresh, strict=True):
        assert list(s) == list(f)
        for key, value in f.items():
            if isinstance(value, float):
                assert float(s[key]) == pytest.approx(value, rel=1e-12, abs=1e-300, nan_ok=True), key
            else:
                assert s[key] == ("" if value is None else str(value)), key


def assert_run_writes_stored(scenario: Path, out: Path, results: Path, names: tuple[str, ...]) -> None:
    """``dpgossip run SCENARIO --out OUT --no-plots -q`` writes each of ``names`` byte for byte as stored
    in ``results``."""
    from dpgossip.cli import main

    assert main(["run", str(scenario), "--out", str(out), "--no-plots", "-q"]) == 0
    for name in names:
        assert (out / name).read_bytes() == (results / name).read_bytes(), name
