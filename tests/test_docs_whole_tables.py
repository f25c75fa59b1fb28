"""Slow: the whole stored table of a README section rerun from its scenario with the current code.

The default suite recomputes a representative row (tests/test_docs_numbers_frontier.py: capepca on the
ring at budget 1); this test runs the whole scenario and compares every stored row (``python -m pytest -m
slow tests/test_docs_whole_tables.py``; protocol-frontier about 6 minutes of compute, one process). The
protocol comparison's stored results are rerun by tests/test_docs_protocol_comparison.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from dpgossip.scenario import load_scenario, run_scenario
from tests.repo_scripts import load_script

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_whole_protocol_frontier_table_is_what_the_code_computes(tmp_path):
    frontier = load_script("protocol_frontier")
    folder = run_scenario(load_scenario(ROOT / "scenarios" / "protocol-frontier.toml"), tmp_path / "run",
                          quiet=True)
    def lower(rows: list[dict[str, str]]) -> list[dict[str, str]]:  # the bounds: upper_numbers.py
        return [{k: v for k, v in r.items() if k not in ("audited_upper", "upper_reason")} for r in rows]

    assert lower(frontier.frontier_rows(folder)) == lower(frontier.stored())
