"""The documented keys of a dynamic-gossip scenario are exactly the parser's, with the defaults it fills."""

from __future__ import annotations

from dpgossip.scenario import dynamic_gossip_config as dgc
from dpgossip.scenario.dynamic_gossip_keys import TABLES
from dpgossip.scenario.reference import scenario_reference
from dpgossip.topology.schedule_spec import SAMPLER_KEYS


def test_every_table_documents_exactly_the_keys_the_parser_reads():
    assert set(TABLES["dynamic_gossip"]) == set(dgc.SECTION_KEYS)
    assert set(TABLES["dynamic_gossip.graph"]) == set(dgc.GRAPH_KEYS)
    assert set(TABLES["[dynamic_gossip.modes]"]) == set(dgc.MODE_KEYS)
    assert set(TABLES["conditions"]) == set(dgc.CONDITION_KEYS)
    assert set(TABLES["sessions, offline"]) == {k for keys in dgc.SESSION_KEYS.values() for k in keys}
    read = {"sampler"} | {k for keys in SAMPLER_KEYS.values() for k in keys}
    assert set(TABLES["schedule"]) == read - {"horizon"}  # the scenario's horizon applies


def test_the_reference_shows_every_table_and_key():
    text = scenario_reference()
    for title in ("## [dynamic_gossip]", "### [dynamic_gossip.graph]", "### [[dynamic_gossip.modes]]",
                  "### A mode's `schedule`", "### A mode's `conditions`", "### `sessions` and `offline`"):
        assert title in text
    for table in TABLES.values():
        for key in table:
            assert f"| `{key}` |" in text, key


def test_the_documented_defaults_are_the_ones_the_parser_fills():
    config = dgc.parse_dynamic_gossip({"name": "d", "dynamic_gossip": {
        "graph": {"topology": "ring", "agents": 4},
        "modes": [{"schedule": {"sampler": "pairwise"}},
                  {"label": "m", "schedule": {"sampler": "files", "files": ["w.txt"]},
                   "conditions": {"delay": [1.0, 2.5]}}]}})
    documented = {k: v[1] for k, v in TABLES["dynamic_gossip"].items()}
    for key in ("alpha", "delta", "sensitivity", "sigma", "horizon", "samples", "seed", "points"):
        assert documented[key] == repr(getattr(config, key)), key
    assert documented["period"] == repr(config.modes[0].period) == "1.0"
    assert documented["observers"] == "[0]" and config.observers == (0,)
    graph = {k: v[1] for k, v in TABLES["dynamic_gossip.graph"].items()}
    assert graph["seed"] == repr(config.graph.seed) and graph["mixing"] == f'"{config.graph.mixing}"'
    pairwise, files = config.modes
    assert pairwise.label == "pairwise" and pairwise.conditions is None   # label: the sampler
    schedule = {k: v[1] for k, v in TABLES["schedule"].items()}
    assert schedule["rate"] == repr(pairwise.schedule.rate)
    assert schedule["stochastic"] == f'"{files.schedule.stochastic}"'
    c = files.conditions
    assert (c.drop, c.online, c.offline, c.pairwise_timeout) == (0.0, None, None, 2 * 2.5 + 1)
    assert TABLES["conditions"]["drop"][1] == repr(c.drop)


def test_the_documented_arcs_default_is_the_one_a_push_sum_mode_gets():
    config = dgc.parse_dynamic_gossip({"name": "d", "dynamic_gossip": {
        "graph": {"topology": "ring", "agents": 4}, "modes": [{"schedule": {"sampler": "push-sum"}}]}})
    spec = config.modes[0].schedule
    assert TABLES["schedule"]["arcs"][1] == f'"{spec.arcs}"' == '"both"'
    assert '"push-sum"' in TABLES["schedule"]["sampler"][2]
