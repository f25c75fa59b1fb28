"""dpgossip.errors: ConfigError.field, the renaming of fields between layers and the shared number check."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from dpgossip.errors import (
    ConfigError,
    check_number,
    reject_unknown_keys,
    renamed_error,
    renamed_fields,
)

NETWORK = {"agents": "network.agents", "params": "network.params"}


def test_field_is_stored_and_survives_pickling():
    err = ConfigError("agents: must be an integer >= 2, got 0", field="agents")
    assert err.field == "agents" and isinstance(err, ValueError)
    back = pickle.loads(pickle.dumps(err))  # errors cross process boundaries in parallel runs
    assert str(back) == str(err) and back.field == "agents"
    assert ConfigError("no field").field is None


def test_mapped_field_is_renamed_in_field_and_message():
    with pytest.raises(ConfigError) as caught, renamed_fields(NETWORK):
        raise ConfigError("agents: must be an integer >= 2, got 0", field="agents")
    assert str(caught.value) == "network.agents: must be an integer >= 2, got 0"
    assert caught.value.field == "network.agents"


@pytest.mark.parametrize("field, message, expected", [
    ("params.rows", "params.rows: 5 does not divide agents = 12",
     "network.params.rows: 5 does not divide network.agents = 12"),
    ("sizes[2]", "sizes[2] = 1.5 must be an integer number of rows",
     "data.sizes[2] = 1.5 must be an integer number of rows"),
    ("links[0].latency.kind", "links[0].latency.kind must be one of constant, got 'x'",
     "engine.links[0].latency.kind must be one of constant, got 'x'"),
])
def test_a_dotted_or_indexed_field_is_renamed_by_its_leading_name(field, message, expected):
    mapping = {**NETWORK, "sizes": "data.sizes", "links": "engine.links"}
    with pytest.raises(ConfigError) as caught, renamed_fields(mapping):
        raise ConfigError(message, field=field)
    assert str(caught.value) == expected
    assert caught.value.field == expected.split(":")[0].split(" ")[0]


def test_unmapped_errors_and_errors_without_field_pass_unchanged():
    for err in (ConfigError("rank must be >= 1, got 0", field="rank"),
                ConfigError("data has 3 rows but there are 4 agents"),
                ConfigError("agentsx: a name that only starts like a key", field="agentsx")):
        with pytest.raises(ConfigError) as caught, renamed_fields(NETWORK):
            raise err
        assert caught.value is err
    assert renamed_error(ConfigError("x", field=None), NETWORK).field is None


def test_other_errors_are_not_caught():
    with pytest.raises(TypeError), renamed_fields(NETWORK):
        raise TypeError("agents")


def test_only_field_references_in_the_body_are_renamed():
    err = ConfigError("params.p: erdos_renyi with m = 40 agents and p = 0.01 failed "
                      "(params.max_tries = 2); file '/x/agents.json', key 'agents'; agents < 3",
                      field="params.p")
    new = renamed_error(err, NETWORK)
    assert str(new) == ("network.params.p: erdos_renyi with m = 40 agents and p = 0.01 failed "
                        "(network.params.max_tries = 2); file '/x/agents.json', key 'agents'; "
                        "network.agents < 3")


def test_the_field_itself_is_named_once_in_front():
    err = ConfigError("values: schedule 'explicit' needs values = [one per iteration]",
                      field="values")
    new = renamed_error(err, {"values": "protocol.noise.values"})
    assert str(new) == "protocol.noise.values: schedule 'explicit' needs values = [one per iteration]"


def test_a_message_that_does_not_start_with_its_field_keeps_its_start():
    err = ConfigError("data: every column is constant, so centring (center = true) makes every row "
                      "zero and scale = 'max_norm' cannot scale it", field="scale")
    new = renamed_error(err, {"center": "data.center", "scale": "data.scale"})
    assert str(new) == ("data: every column is constant, so centring (data.center = true) makes every "
                        "row zero and data.scale = 'max_norm' cannot scale it")
    assert new.field == "data.scale"


def test_renamings_compose_from_layer_to_layer():
    with pytest.raises(ConfigError) as caught, renamed_fields({"synthetic": "data.synthetic"}):
        with renamed_fields({"spectrum": "synthetic.spectrum"}):
            raise ConfigError("spectrum.ratio must be in (0, 1], got 2", field="spectrum.ratio")
    assert str(caught.value) == "data.synthetic.spectrum.ratio must be in (0, 1], got 2"


def test_the_longest_key_wins():
    err = ConfigError("options.rank_by: 'eps' is not allowed", field="options.rank_by")
    new = renamed_error(err, {"options": "opts", "options.rank_by": "privacy.rank_by"})
    assert str(new) == "privacy.rank_by: 'eps' is not allowed"


def test_reject_unknown_keys_sets_the_field():
    with pytest.raises(ConfigError, match=r"^sweep\.zap: unknown key") as caught:
        reject_unknown_keys("sweep.", ["zap"], ("zip",), "in [sweep]")
    assert caught.value.field == "sweep.zap"


def test_check_number_accepts_numbers_within_bounds():
    assert check_number(3, "x") == 3.0 and isinstance(check_number(3, "x"), float)
    assert check_number(np.float32(0.5), "loss", low=0, high=1, high_open=True) == 0.5
    assert check_number(np.int64(2), "n", low=1) == 2.0
    assert check_number(float("inf"), "bandwidth", low=0, low_open=True, allow_inf=True) == np.inf


@pytest.mark.parametrize("value, kwargs, message", [
    (True, {}, r"^x must be a number, got True \(bool\)$"),
    ("a", {"low": 0}, r"^x must be a number, got 'a' \(str\)$"),
    ("a", {"expected": "a number with gap >= 1"}, r"^x must be a number with gap >= 1, got 'a'"),
    (float("nan"), {}, r"^x must be a finite number, got nan$"),
    (float("inf"), {"low": 0}, r"^x must be a finite number, got inf$"),
    (-1, {"low": 0}, r"^x must be a number >= 0, got -1$"),
    (0, {"low": 0, "low_open": True}, r"^x must be a number > 0, got 0$"),
    (2, {"high": 1}, r"^x must be a number <= 1, got 2$"),
    (1.0, {"low": 0, "high": 1, "low_open": True, "high_open": True}, r"^x must be in \(0, 1\), got 1\.0$"),
    (np.float64(-2.0), {"low": 0}, r"^x must be a number >= 0, got -2\.0$"),
    (3, {"low": 0, "high": 1, "expected": "a probability in [0, 1)"},
     r"^x must be a probability in \[0, 1\), got 3$"),
])
def test_check_number_names_field_value_and_range(value, kwargs, message):
    with pytest.raises(ConfigError, match=message) as caught:
        check_number(value, "x", **kwargs)
    assert caught.value.field == "x"


def test_errors_imports_nothing_from_dpgossip():
    import ast
    from pathlib import Path

    import dpgossip.errors as errors

    tree = ast.parse(Path(errors.__file__).read_text(encoding="utf-8"))
    modules = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    modules += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in modules if m.split(".")[0] == "dpgossip"]
