"""Zip groups, cross-setting rules and extra sections: every error names the path and what is allowed."""

import pytest

from dpgossip.errors import ConfigError
from dpgossip.scenario.expand import expand, point_hash
from dpgossip.scenario.schema import validate
from dpgossip.scenario.sections import EXTRA_SECTIONS, register_section

from .test_schema import cfg

ZIP_C_T = [["protocol.consensus_steps", "protocol.iterations"]]


def test_zip_group_varies_together_and_product_with_other_axes():
    c = validate(
        cfg(
            network={"topology": ["ring", "path"]},
            protocol={"consensus_steps": [1, 5, 20], "iterations": [40, 20, 10]},
            sweep={"zip": ZIP_C_T},
        )
    )
    assert c["sweep"] == {"zip": ZIP_C_T}
    pts = expand(c)
    assert len(pts) == 6
    got = [
        (p.axes["network.topology"], p.axes["protocol.consensus_steps"], p.axes["protocol.iterations"])
        for p in pts
    ]
    assert got == [(t, cs, it) for t in ("ring", "path") for cs, it in [(1, 40), (5, 20), (20, 10)]]
    assert [p.index for p in pts] == list(range(6))
    for p in pts:
        assert "sweep" not in p.config
        assert p.config["protocol"]["consensus_steps"] == p.axes["protocol.consensus_steps"]
        assert p.config["protocol"]["iterations"] == p.axes["protocol.iterations"]
    # without the zip group the same lists form a product of 2 x 3 x 3 points
    c2 = validate(
        cfg(
            network={"topology": ["ring", "path"]},
            protocol={"consensus_steps": [1, 5, 20], "iterations": [40, 20, 10]},
        )
    )
    assert len(expand(c2)) == 18
    # a zipped point and the same product point are the same computation: same hash
    same = [q for q in expand(c2) if q.axes == pts[1].axes]
    assert len(same) == 1 and same[0].key == pts[1].key == point_hash(pts[1].config)


def test_zip_of_table_valued_axis_with_epsilon():
    c = validate(
        cfg(
            protocol={"noise": [{"scale": 0.1}, {"scale": 0.02}]},
            baseline={"ldp": True, "epsilon": [1.0, 5.0], "delta": 1e-5},
            sweep={"zip": [["protocol.noise", "baseline.epsilon"]]},
        )
    )
    pts = expand(c)
    assert [(p.config["protocol"]["noise"]["scale"], p.config["baseline"]["epsilon"]) for p in pts] == [
        (0.1, 1.0),
        (0.02, 5.0),
    ]


@pytest.mark.parametrize(
    "raw, match",
    [
        (
            cfg(
                protocol={"consensus_steps": [1, 2], "iterations": [3, 4]},
                sweep={"zip": [["protocol.consensus_steps", "protocol.iteration"]]},
            ),
            r"sweep.zip\[0\]\[1\]: unknown setting 'protocol.iteration' "
            r"\(did you mean 'protocol.iterations'\?\)",
        ),
        (
            cfg(
                protocol={"consensus_steps": [1, 2, 3], "iterations": [3, 4]},
                sweep={"zip": ZIP_C_T},
            ),
            r"sweep.zip\[0\]: the lists of a zip group must have equal lengths; "
            r"protocol.consensus_steps has 3, protocol.iterations has 2 values",
        ),
        (
            cfg(protocol={"consensus_steps": [1, 2]}, sweep={"zip": ZIP_C_T}),
            r"sweep.zip\[0\]\[1\]: protocol.iterations is not a sweep axis \(it has the single "
            r"value 5\); give it a list of values to vary it together with protocol.consensus_steps",
        ),
        (
            cfg(protocol={"consensus_steps": [1, 2]}, sweep={"zip": [["protocol.consensus_steps"]]}),
            r"sweep.zip\[0\]: a zip group lists two or more axes",
        ),
        (
            cfg(
                protocol={"consensus_steps": [1, 2], "iterations": [3, 4], "rank": [1, 2]},
                sweep={
                    "zip": [
                        ["protocol.consensus_steps", "protocol.iterations"],
                        ["protocol.rank", "protocol.iterations"],
                    ]
                },
            ),
            r"sweep.zip\[1\]\[1\]: protocol.iterations is already zipped in sweep.zip\[0\]",
        ),
        (
            cfg(protocol={"consensus_steps": [1, 2]}, sweep={"zip": [["repeats", "seed"]]}),
            r"sweep.zip\[0\]\[0\]: repeats cannot be swept",
        ),
        (cfg(sweep={"zipp": []}), r"sweep.zipp: unknown key \(did you mean 'zip'\?\)"),
        (cfg(sweep={"zip": ["protocol.consensus_steps"]}), r"sweep.zip must be a list of lists"),
        (cfg(sweep=[1]), r"sweep must be a table"),
    ],
)
def test_zip_errors(raw, match):
    with pytest.raises(ConfigError, match=match):
        validate(raw)


@pytest.mark.parametrize(
    "raw, match",
    [
        (
            cfg(baseline={"ldp": True, "delta": 1e-5}),
            r"baseline.epsilon is required when baseline.ldp = true .* e.g. epsilon = 5.0",
        ),
        (
            cfg(baseline={"ldp": True, "epsilon": 1.0}),
            r"baseline.delta is required when baseline.ldp = true",
        ),
        (
            cfg(baseline={"epsilon": 1.0}),
            r"baseline.epsilon = 1.0 is given but baseline.ldp = false",
        ),
        (
            cfg(data={"sizes": [40, 40, 49, 49]}),
            r"data.sizes is only used with data.partition = 'explicit', got partition 'equal'",
        ),
        (
            cfg(data={"partition": "random", "sizes": [40, 40, 49, 49]}),
            r"data.sizes is only used with data.partition = 'explicit', got partition 'random'",
        ),
        (cfg(data={"partition": "explicit"}), r"data.partition = 'explicit' needs data.sizes"),
        (
            cfg(data={"synthetic": {"n": 20, "d": 3, "spectrum": [1, 0.5]}}),
            r"data.synthetic is only used with data.source = 'synthetic', got source 'wine'",
        ),
        (cfg(data={"source": "synthetic"}), r"data.source = 'synthetic' needs data.synthetic"),
        (
            cfg(engine={"loss": 0.1}),
            r"engine: engine conditions are given \(\[engine\]\) but backend is 'matrix'",
        ),
        (
            cfg(backend="engine", engine={"loss": 0.1, "conditions": {"loss": 0.2}}),
            r"engine: give the network conditions either directly in \[engine\] or under "
            r"engine.conditions, not both",
        ),
        (
            cfg(backend="engine", engine={"los": 0.1}),
            r"engine: unknown key 'los' \(did you mean 'loss'\?\)",
        ),
        (cfg(privacy=3), r"privacy must be a table \(\[privacy\]\), got 3"),
        (cfg(privcy={}), r"privcy: unknown key \(did you mean 'privacy'\?\)"),
    ],
)
def test_incompatible_combinations(raw, match):
    with pytest.raises(ConfigError, match=match):
        validate(raw)


def test_compatible_combinations_pass():
    validate(cfg(data={"partition": "explicit", "sizes": [44, 44, 45, 45]}))
    validate(cfg(baseline={"ldp": [False, True], "epsilon": 1.0, "delta": 1e-5}))
    c = validate(cfg(backend=["matrix", "engine"], engine={"loss": 0.1}))
    assert c["engine"] == {"loss": 0.1}
    # the older nested form is flattened
    c = validate(cfg(backend="engine", engine={"conditions": {"loss": 0.1}}))
    assert c["engine"] == {"loss": 0.1}
    c = validate(cfg(data={"source": "synthetic", "synthetic": {"n": 20, "d": 3, "spectrum": [1]}}))
    assert c["data"]["synthetic"]["n"] == 20


@pytest.fixture
def no_privacy_plugin():
    """Hide a registered [privacy] section for the test and restore it afterwards."""
    saved = EXTRA_SECTIONS.pop("privacy", None)
    yield
    EXTRA_SECTIONS.pop("privacy", None)
    if saved is not None:
        EXTRA_SECTIONS["privacy"] = saved


def test_an_unregistered_section_is_rejected(no_privacy_plugin):
    # no section is a free table any more: without its owner registered, [privacy] is unknown
    with pytest.raises(ConfigError, match="privacy"):
        validate(cfg(privacy={"anything": [1, 2]}))


def test_registered_section_validates_and_sweeps(no_privacy_plugin):
    def check(path, value):
        if not isinstance(value, dict) or "delta" not in value:
            raise ConfigError(f"{path}.delta is required")
        return {"delta": value["delta"], "observers": value.get("observers", "all")}

    register_section("privacy", check, sweepable=("delta",))
    with pytest.raises(ConfigError, match=r"privacy.delta is required"):
        validate(cfg(privacy={}))
    c = validate(
        cfg(
            protocol={"consensus_steps": [1, 2]},
            privacy={"delta": [1e-5, 1e-6]},
            sweep={"zip": [["protocol.consensus_steps", "privacy.delta"]]},
        )
    )
    pts = expand(c)
    assert [(p.axes["protocol.consensus_steps"], p.axes["privacy.delta"]) for p in pts] == [
        (1, 1e-5),
        (2, 1e-6),
    ]
    assert pts[0].config["privacy"] == {"delta": 1e-5, "observers": "all"}
