"""docs/scenarios.md is generated from the schema, and the schema's defaults are the ones validation
fills: one source of truth for every key."""

from __future__ import annotations

import copy
from pathlib import Path

from dpgossip.scenario.privacy_section import PRIVACY_FIELDS, check_privacy
from dpgossip.scenario.reference import field_rows, scenario_reference
from dpgossip.scenario.schema import SCHEMA, validate
from dpgossip.settings import REQUIRED

DOC = Path(__file__).resolve().parents[2] / "docs" / "scenarios.md"
MINIMAL = {"name": "m", "data": {"source": "wine"}, "network": {"topology": "paper-ring4"},
           "protocol": {"iterations": 2, "consensus_steps": 1}, "baseline": {}, "output": {}}


def test_docs_scenarios_md_is_the_generated_reference():
    assert DOC.read_text(encoding="utf-8") == scenario_reference(), (
        "docs/scenarios.md is stale: python -m dpgossip.scenario.reference > docs/scenarios.md")


def test_every_schema_key_is_documented_with_the_default_validation_fills():
    resolved = validate(copy.deepcopy(MINIMAL))
    text = scenario_reference()
    for section, fields in SCHEMA.items():
        target = resolved if section == "" else resolved[section]
        for key, f in fields.items():
            assert f.doc, f"{section}.{key} has no meaning in the schema"
            assert f"| `{key}` |" in text
            if f.default is not REQUIRED:
                assert target[key] == f.default, f"{section}.{key}"


def test_privacy_defaults_are_the_fields_defaults():
    out = check_privacy("privacy", {"calibrate": {"epsilon": 2.0}})
    for key, f in PRIVACY_FIELDS.items():
        assert f.doc, key
        if key == "calibrate" or f.default is REQUIRED:
            continue
        value = out["calibrate"][key.split(".", 1)[1]] if "." in key else out[key]
        assert value == f.default, key
    assert check_privacy("privacy", {})["calibrate"] is None


def test_rows_render_type_default_range_and_sweep():
    rows = dict((r[0], r) for r in field_rows(SCHEMA["protocol"]))
    assert rows["`iterations`"][1:5] == ("integer", "*required*", ">= 1", "yes")
    assert rows["`sigma_q`"][3] == "> 0"
    baseline = dict((r[0], r) for r in field_rows(SCHEMA["baseline"]))
    assert baseline["`delta`"][3] == "(0, 1)"


def test_network_dp_keys_are_the_parsers_and_its_defaults_are_the_ones_it_fills():
    from dpgossip.scenario import network_dp_config as ndp
    from dpgossip.scenario.reference import NETWORK_DP_KEYS

    assert set(NETWORK_DP_KEYS) == set(ndp.SECTION_KEYS) | set(ndp.GRAPH_KEYS)
    text = scenario_reference()
    assert "## [network_dp]" in text and "### [[network_dp.graphs]]" in text
    for key in NETWORK_DP_KEYS:
        assert f"| `{key}` |" in text, key
    # what the parser fills when a key is left out (the oracle) against the documented default
    config = ndp.parse_network_dp({"name": "m", "network_dp": {
        "graphs": [{"topology": "ring", "agents": 4}, {"topology": "ring", "agents": 4,
                                                       "label": "noisy", "protocol": "gossip-noisy"}]}})
    plain, noisy = config.graphs
    filled = {"alpha": config.alpha, "delta": config.delta, "sensitivity": config.sensitivity,
              "protocol": plain.protocol, "sigma": plain.sigma, "rounds": plain.rounds,
              "target": plain.target, "seed": plain.seed, "mixing": plain.mixing,
              "setting": plain.setting}
    for key, value in filled.items():
        documented = NETWORK_DP_KEYS[key][1].strip('"')
        assert documented == (f"{value!r}" if not isinstance(value, str) else value), key
    assert (plain.label, plain.params, plain.observer, plain.observers.kind) == ("ring", (), None, "all")
    assert (plain.inputs, noisy.inputs) == ("once", "fixed")  # the documented default of inputs
