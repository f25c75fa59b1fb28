"""docs/dynamic-scenarios.md prints what the code computes.

``scripts/dynamic_scenarios_numbers.py`` summarises runs of the two dynamic-gossip scenarios into
docs/numbers/dynamic-scenarios.json; these tests check that the page (and the README) print exactly its
tables and run times, recompute the deterministic synchronous mode of scenarios/dynamic-gossip-modes.toml
with the current code (well under a second), and, marked slow, rerun both scenarios and compare every
stored number (``python -m pytest -m slow tests/test_docs_dynamic_scenarios.py``, about a minute).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dpgossip.scenario.dynamic_gossip import mode_record
from dpgossip.scenario.dynamic_gossip_config import load_dynamic_gossip
from dpgossip.scenario.dynamic_gossip_runs import build_setting
from tests.repo_scripts import load_script

ROOT = Path(__file__).resolve().parents[1]


NUMBERS = load_script("dynamic_scenarios_numbers")
STORED = NUMBERS.read_numbers()
PAGE = (ROOT / "docs" / "dynamic-scenarios.md").read_text(encoding="utf-8")


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("name", ["modes-error", "modes-leakage", "churn-error", "churn-leakage",
                                  "churn-pairs"])
def test_the_page_prints_the_stored_tables(name):
    text = NUMBERS.tables(STORED)[name]
    assert f"<!-- {name} -->\n{text}\n<!-- /{name} -->" in PAGE


def test_the_page_and_the_readme_quote_the_stored_run_times():
    assert _flat(NUMBERS.run_text(STORED)) in _flat(PAGE)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for k, name in enumerate(("dynamic-gossip-modes.toml", "dynamic-gossip-churn.toml")):
        line = next(x for x in readme.splitlines() if x.startswith(f"| `{name}` |"))
        assert f"{STORED['run']['seconds'][k]:.1f} s" in line, name
        assert STORED["run"]["seconds"][k] < 120  # the target: well under two minutes each


def test_every_mode_of_both_scenarios_is_summarised():
    for name, path in NUMBERS.SCENARIOS.items():
        labels = [m.label for m in load_dynamic_gossip(path).modes]
        assert [r["mode"] for r in STORED[name]["errors"]] == labels
        assert list(dict.fromkeys(r["mode"] for r in STORED[name]["leakage"])) == labels
    assert STORED["modes"]["local"] == STORED["churn"]["local"] == 1.0


def test_the_synchronous_mode_is_recomputed():
    config = load_dynamic_gossip(NUMBERS.SCENARIOS["modes"])
    assert config.modes[0].label == "synchronous" and config.modes[0].schedule.sampler == "fixed"
    record = mode_record(config, build_setting(config), 0, config.modes[0])
    at = {float(r["time"]): r for r in record["tables"]["consensus_time"]}
    stored = STORED["modes"]["errors"][0]
    assert stored["error"] == pytest.approx([at[t]["error_mean"] for t in NUMBERS.TIMES["modes"]],
                                            rel=1e-9)
    assert stored["messages"] == at[10.0]["messages_mean"] == 1200
    leak = [r for r in STORED["modes"]["leakage"] if r["mode"] == "synchronous"]
    fresh = record["tables"]["leakage"]
    assert [(r["distance"], r["pairs"], r["schedules"]) for r in leak] == \
        [(r["distance"], r["pairs"], r["schedules"]) for r in fresh]
    for r, f in zip(leak, fresh, strict=True):
        # to 1e-8: the RDP conversion's bounded search over orders ends where library rounding
        # lets it (seen to move the ninth digit from one numpy release to the next); the page prints
        # three or four digits
        for key in ("rdp_mean", "rdp_median", "rdp_q90", "rdp_max", "mixture_rdp"):
            assert r[key] == pytest.approx(f[key], rel=1e-8), key


def test_the_example_file_of_the_page_is_a_valid_scenario():
    import tomllib

    from dpgossip.scenario.dynamic_gossip_config import parse_dynamic_gossip

    block = PAGE.split("```toml\n", 1)[1].split("```", 1)[0]
    config = parse_dynamic_gossip(tomllib.loads(block))
    assert [m.label for m in config.modes] == ["synchronous", "pairwise-lossy"]
    lossy = config.modes[1].conditions
    assert (lossy.drop, lossy.delay, lossy.pairwise_timeout, lossy.online.a) == (0.5, (1.0, 5.0), 11.0, 5.0)
    assert build_setting(config).pairs.shape == (35, 3)


@pytest.mark.slow
def test_both_scenarios_rerun_give_the_stored_numbers(tmp_path):
    fresh = NUMBERS._rerun(tmp_path)
    assert NUMBERS._close(fresh, {k: v for k, v in STORED.items() if k != "run"})
