"""The scenario layer reads the registry of kinds: a kind registered by hand (here, a non-private
"exact SVD" kind with its own section) is accepted as ``protocol.kind``, its section is validated from
its fields, its cross-field check and its preflight run, and its points run through the generic point
runner, without any edit of dpgossip.scenario."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from dpgossip.errors import ConfigError
from dpgossip.protocols import registry
from dpgossip.protocols.interface import ProtocolRun
from dpgossip.protocols.registry import KindPoint, PointInputs, ProtocolKind, kind, register
from dpgossip.scenario import run_scenario, sections
from dpgossip.scenario.point import PointSpec
from dpgossip.settings import Field
from tests.scenario.helpers import small


@dataclass(frozen=True, slots=True)
class ExactSvd:
    """The exact top-``k`` right singular subspace of ``X`` (by numpy's SVD), no noise."""

    k: int
    kind: ClassVar[str] = "exact-svd"
    side: ClassVar[str] = "right"

    def run(self, data, network, seed) -> ProtocolRun:
        _, _, Vt = np.linalg.svd(np.asarray(data.X, dtype=float), full_matrices=False)
        return ProtocolRun(kind=self.kind, side=self.side, trajectory=Vt[: self.k].T[None].copy(),
                           agent_finals=None, result=None)


FIELDS = {"label": Field(kind=str, default="plain", doc="a column written on every row"),
          "limit": Field(kind=int, default=None, low=1, doc="at most this many columns of X")}


def _check(config) -> None:
    if config["protocol"]["rank"] == 3:
        raise ConfigError("exact: rank 3 is refused by this kind's check", field="protocol.rank")


def _preflight(inputs: PointInputs) -> None:
    limit = inputs.settings["limit"]
    if limit is not None and inputs.data.d > limit:
        raise ConfigError(f"exact.limit = {limit} is below d = {inputs.data.d}", field="exact.limit")


def _build(inputs: PointInputs) -> KindPoint:
    _preflight(inputs)
    label = inputs.settings["label"]
    return KindPoint(protocol=ExactSvd(inputs.rank), row={"exact_rank": inputs.rank},
                     columns=lambda result, repeat: {"label": label, "seen_repeat": repeat})


@pytest.fixture
def exact_kind(monkeypatch: pytest.MonkeyPatch) -> ProtocolKind:
    kind("ddppm")  # the built-in kinds are loaded before the registry is patched
    monkeypatch.setattr(registry, "_KINDS", dict(registry._KINDS))
    monkeypatch.setattr(sections, "EXTRA_SECTIONS", dict(sections.EXTRA_SECTIONS))
    import dpgossip.scenario.schema as schema

    monkeypatch.setattr(schema, "EXTRA_SECTIONS", sections.EXTRA_SECTIONS)
    spec = register(ProtocolKind(name="exact-svd", family="tests", estimates="exact subspace",
                                 backends=("matrix",), section="exact", fields=FIELDS,
                                 section_doc="the exact kind's settings", check=_check,
                                 preflight=_preflight, build=_build))
    return spec  # its section [exact] is registered by the scenario layer's listener


def _scenario(**protocol):
    return dict(protocol={"kind": "exact-svd", "consensus_steps": 1, "iterations": 2, **protocol})


def test_a_registered_kind_runs_through_the_generic_runner(exact_kind, tmp_path: Path):
    sc = small(**_scenario(rank=2), exact={"label": "x"}, repeats=2)
    out = run_scenario(sc, tmp_path / "out", quiet=True)
    with open(out / "runs.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["repeat"] for r in rows] == ["0", "1"]
    assert {r["label"] for r in rows} == {"x"} and [r["seen_repeat"] for r in rows] == ["0", "1"]
    assert {r["exact_rank"] for r in rows} == {"2"}
    # the exact subspace against itself: the error is zero up to rounding (an independent SVD)
    assert max(float(r["error"]) for r in rows) < 1e-12


def test_a_registered_kinds_section_is_validated_from_its_fields(exact_kind):
    point = small(**_scenario()).points()[0]
    assert dict(PointSpec.from_config(point.config).settings) == {"label": "plain", "limit": None}
    assert small(**_scenario(), exact={"limit": 20}).config["exact"] == {"label": "plain", "limit": 20}
    with pytest.raises(ConfigError, match=r"exact\.lable: unknown key \(did you mean 'label'\?\)"):
        small(**_scenario(), exact={"lable": "x"})
    with pytest.raises(ConfigError, match=r"exact\.limit must be >= 1"):
        small(**_scenario(), exact={"limit": 0})


def test_section_rules_of_a_registered_kind(exact_kind, tmp_path: Path):
    with pytest.raises(ConfigError, match=r"\[exact\] is given but protocol.kind is 'ddppm'") as info:
        small(exact={"label": "x"})
    assert info.value.field == "exact"
    with pytest.raises(ConfigError, match="rank 3 is refused by this kind's check"):
        small(**_scenario(rank=3))
    sc = small(**_scenario(), exact={"limit": 5})  # Wine has d = 13
    with pytest.raises(ConfigError, match=r"exact.limit = 5 is below d = 13"):
        run_scenario(sc, tmp_path / "out", quiet=True)


def test_a_bad_kind_names_the_field_with_a_did_you_mean():
    with pytest.raises(ConfigError, match=r"protocol.kind = 'ppn' is not a registered protocol kind "
                                          r"\(did you mean 'ppm'\?\)") as info:
        small(protocol={"kind": "ppn"})
    assert info.value.field == "protocol.kind"
    with pytest.raises(ConfigError, match=r"protocol.kind\[1\] = 'capepa'.*did you mean 'capepca'"):
        small(protocol={"kind": ["ppm", "capepa"]}, ppm={"epsilon": 1.0})


def test_the_network_dp_kinds_are_registered_but_not_point_kinds():
    from dpgossip.protocols.registry import point_kind_names
    from dpgossip.scenario.network_dp_config import network_dp_kinds

    assert network_dp_kinds() == ("gossip-average", "gossip-noisy", "gossip-decor")
    assert not set(network_dp_kinds()) & set(point_kind_names())
    with pytest.raises(ConfigError, match=r"protocol.kind = 'gossip-noisy' is not run as a scenario "
                                          r"point: a scenario file with a \[network_dp\] table") as info:
        small(protocol={"kind": "gossip-noisy"})
    assert info.value.field == "protocol.kind"


def test_ddppm_builds_but_runs_through_its_pair_audit_runner(monkeypatch: pytest.MonkeyPatch,
                                                             tmp_path: Path):
    """``ddppm`` gives a ``build`` (for the contract test) and is audited pair by pair: a scenario runs
    it through :func:`dpgossip.scenario.runner.run_point`, never the point builder, which refuses it."""
    from dpgossip.scenario import execute
    from dpgossip.scenario.problem import build_problem
    from dpgossip.scenario.protocol_point import build_point

    spec = kind("ddppm")
    assert spec.build is not None and spec.pair_audit
    called = []
    monkeypatch.setattr(execute, "run_protocol_point", lambda *a: called.append(a))
    sc = small(repeats=1, protocol={"consensus_steps": 2})
    assert sc.config["protocol"]["kind"] == "ddppm"
    out = run_scenario(sc, tmp_path / "out", quiet=True)
    with open(out / "runs.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert not called and len(rows) == 1 and "sigma_q" in rows[0]  # D-DP-PM's own parameter columns
    with pytest.raises(ConfigError, match="own runner"):
        build_point(PointSpec.from_config(sc.config), build_problem(sc.config))


def test_a_kind_whose_section_clashes_is_refused_and_not_registered(monkeypatch):
    """The scenario layer's listener checks a kind's section when it is registered: different fields for
    an existing section are refused, and the kind is then not in the registry."""
    kind("ddppm")
    monkeypatch.setattr(registry, "_KINDS", dict(registry._KINDS))
    monkeypatch.setattr(sections, "EXTRA_SECTIONS", dict(sections.EXTRA_SECTIONS))
    with pytest.raises(ConfigError, match=r"declare different fields for \[ppm\]"):
        register(ProtocolKind(name="ppm-clash", family="tests", estimates="nothing", section="ppm",
                              fields=FIELDS, build=_build))
    assert "ppm-clash" not in registry._KINDS
