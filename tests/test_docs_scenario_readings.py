"""The README's readings of the quickstart, consensus-sweep and topology-comparison scenarios are what the
code computes now: ``scripts/scenario_readings.py`` reruns the sweep points each sentence quotes (the
scenario's seed and repeats, a few seconds in all) and the README must print its texts (whitespace
normalised; README.md and docs/results.md, where its readings moved).  Sections read: "Shipped
scenarios" (the consensus-sweep row of the table, and the
**quickstart**, **consensus-sweep** and **topology-comparison** paragraphs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.repo_scripts import load_script

ROOT = Path(__file__).resolve().parents[1]


READINGS = load_script("scenario_readings")
README = " ".join(((ROOT / "README.md").read_text(encoding="utf-8") + " "
                   + (ROOT / "docs" / "results.md").read_text(encoding="utf-8")).split())


@pytest.mark.parametrize("name", ["quickstart", "consensus", "consensus_cell", "topology"])
def test_the_readme_prints_what_the_scenario_computes(name):
    text = getattr(READINGS, name)()
    assert " ".join(text.split()) in README, f"README differs from scenario_readings.{name}():\n{text}"


def test_what_the_readings_state_holds():
    """The floor falls with c and with faster mixing, and D-DP-PM ends below LDP at c = 50."""
    rows, slem = READINGS._run("consensus-sweep", READINGS.CONSENSUS_STEPS)
    errs = [READINGS._mean(rows, "error", protocol_consensus_steps=str(c)) for c in READINGS.CONSENSUS_STEPS]
    assert errs == sorted(errs, reverse=True) and errs[-1] < READINGS._mean(rows, "ldp_error")
    rows, slem = READINGS._run("topology-comparison", (50,))
    order = sorted(slem, key=slem.get)
    floors = [READINGS._mean(rows, "error", network_topology=t) for t in order]
    assert order == ["grid", "random_geometric", "ring"] and floors == sorted(floors)
