"""Slow: the whole stored table of a README section rerun from its scenario with the current code.

The default suite recomputes a representative row (tests/test_docs_numbers.py: the ppm row-replacement
point at budget 5 of protocol-comparison); this test runs the whole scenario and compares every stored
row (``python -m pytest -m slow tests/test_docs_whole_tables.py``; protocol-comparison about 9 minutes
of compute, one process). The protocol frontier's whole run is rerun by
tests/test_docs_protocol_frontier.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from dpgossip.scenario import load_scenario, run_scenario
from tests.repo_scripts import load_script

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_whole_protocol_comparison_table_is_what_the_code_computes(tmp_path):
    comparison = load_script("protocol_comparison")
    folder = run_scenario(load_scenario(ROOT / "scenarios" / "protocol-comparison.toml"), tmp_path / "run",
                          quiet=True)
    assert comparison.comparison_rows(folder) == comparison.stored()
