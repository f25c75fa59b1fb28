import pytest

from dpgossip.errors import ConfigError
from dpgossip.scenario.expand import expand, point_hash
from dpgossip.scenario.schema import validate

BASE = {
    "name": "t",
    "data": {"source": "wine"},
    "network": {"topology": "ring", "agents": 4},
    "protocol": {"iterations": 5, "consensus_steps": 2},
}


def cfg(**sections):
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in BASE.items()}
    for name, upd in sections.items():
        if isinstance(upd, dict):
            out.setdefault(name, {}).update(upd)
        else:
            out[name] = upd
    return out


def test_defaults_filled():
    c = validate(cfg())
    assert c["seed"] == 0 and c["repeats"] == 1 and c["backend"] == "matrix"
    assert c["protocol"]["rank"] == 1 and c["protocol"]["alpha"] == "geometric_mean"
    assert c["data"]["scale"] == "max_norm"


@pytest.mark.parametrize(
    "raw, match",
    [
        (
            cfg(protocol={"consensus_steps": [1, 2, -3]}),
            r"protocol.consensus_steps\[2\] must be >= 0, got -3",
        ),
        (cfg(protocol={"iterations": 0}), r"protocol.iterations must be >= 1, got 0"),
        (cfg(protocol={"iterations": "ten"}), r"protocol.iterations must be an integer, got 'ten'"),
        (
            cfg(protocol={"consensus_step": 3}),
            r"protocol.consensus_step: unknown key \(did you mean 'consensus_steps'\?\)",
        ),
        (cfg(netwrk={"topology": "ring"}), r"netwrk: unknown key \(did you mean 'network'\?\)"),
        (
            cfg(data={"scale": "maxnorm"}),
            r"data.scale: 'maxnorm' is not allowed; use one of .*"
            r"did you mean 'max_norm'",
        ),
        (cfg(backend="simpy"), r"backend: 'simpy' is not allowed; use one of matrix, engine"),
        (
            cfg(protocol={"noise": {"schedule": "geometric", "scale": -1}}),
            r"protocol.noise.scale must be a finite number >= 0, got -1",
        ),
        (
            cfg(protocol={"noise": {"shedule": "constant"}}),
            r"protocol.noise.shedule: unknown key \(did you mean 'schedule'\?\)",
        ),
        (cfg(baseline={"delta": 1.5}), r"baseline.delta must be < 1, got 1.5"),
        (cfg(seed=-1), r"seed must be >= 0, got -1"),
        (cfg(repeats=[1, 2]), r"repeats cannot be swept"),
        (cfg(protocol={"consensus_steps": []}), r"protocol.consensus_steps: an empty list"),
        ({"data": {"source": "wine"}}, r"name is required"),
        (cfg(protocol={"alpha": -1}), r"protocol.alpha must be a positive number, got -1"),
    ],
)
def test_errors_name_path_and_value(raw, match):
    with pytest.raises(ConfigError, match=match):
        validate(raw)


def test_missing_required_in_section():
    raw = cfg()
    del raw["protocol"]["iterations"]
    with pytest.raises(ConfigError, match=r"protocol.iterations is required"):
        validate(raw)


def test_sweep_expansion_is_cartesian_and_hashes_differ():
    c = validate(
        cfg(protocol={"consensus_steps": [1, 2, 5]}, network={"topology": ["ring", "path"]})
    )
    pts = expand(c)
    assert len(pts) == 6
    assert {(p.axes["network.topology"], p.axes["protocol.consensus_steps"]) for p in pts} == {
        (t, s) for t in ("ring", "path") for s in (1, 2, 5)
    }
    assert len({p.key for p in pts}) == 6
    assert all(isinstance(p.config["protocol"]["consensus_steps"], int) for p in pts)
    # output settings do not change the identity of a point
    c2 = dict(pts[0].config, output={"dir": "elsewhere", "plots": False})
    assert point_hash(c2) == pts[0].key


def test_the_privacy_settings_are_part_of_a_points_key():
    """Another search effort or epsilon_cap is another audit, so another point; a setting given at its
    default is the same point as one left out (the key is of the resolved table)."""
    key = {name: expand(validate(cfg(privacy=privacy)))[0].key for name, privacy in {
        "default": {}, "standard": {"search": "standard"}, "cap": {"epsilon_cap": 1000.0},
        "quick": {"search": "quick"}, "levels": {"search": 3}, "cap50": {"epsilon_cap": 50.0}}.items()}
    assert key["default"] == key["standard"] == key["cap"]
    assert len({key[k] for k in ("default", "quick", "levels", "cap50")}) == 4
    # the removed candidate-search keys are refused, not folded into a key
    with pytest.raises(ConfigError, match=r"privacy\.candidates = 20: this key set the candidate "
                       r"search, which was removed"):
        validate(cfg(privacy={"candidates": 20}))


@pytest.mark.parametrize("kind, section", [("ppm-gossip", {"ppm": {"noise_multiplier": 1.5}}),
                                           ("ppm", {"ppm": {"noise_multiplier": 1.5}})])
@pytest.mark.parametrize("key, value", [("noise", {"schedule": "constant", "scale": 0.1}),
                                        ("alpha", 0.5), ("sigma_q", 0.2)])
def test_ddppm_keys_given_to_a_kind_that_does_not_read_them_are_refused(kind, section, key, value):
    raw = {"name": "x", "data": {"source": "wine"}, "network": {"topology": "ring", "agents": 4},
           "protocol": {"kind": kind, "iterations": 2, "consensus_steps": 2, key: value}, **section}
    with pytest.raises(ConfigError, match=rf"^protocol.{key} is given but protocol.kind = {kind} does "
                                          r"not read it \(read by ddppm only; the noise of another "
                                          r"kind is in its own section\); remove it$") as err:
        validate(raw)
    assert err.value.field == f"protocol.{key}"
    # read by one of the scenario's kinds: accepted
    validate({**raw, "protocol": {**raw["protocol"], "kind": [kind, "ddppm"]}})
