"""docs/scenarios.md is generated from the schema, and the schema's defaults are the ones validation
fills: one source of truth for every key."""

from __future__ import annotations

import copy
from pathlib import Path

from dpgossip.scenario.fields import REQUIRED
from dpgossip.scenario.privacy_section import PRIVACY_FIELDS, check_privacy
from dpgossip.scenario.reference import field_rows, scenario_reference
from dpgossip.scenario.schema import SCHEMA, validate

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
