"""The contract every registered kind inherits (a kind with ``build`` and ``example`` joins by registering).

For each kind, on its own ``example()`` point:

* the engine equals the matrix backend (``trajectory``, ``final``, ``agent_finals``; 1e-10) with ideal
  links and with lossy links and retransmission (copies are lost, every message arrives);
* every view the kind audits, rebuilt from an engine run's transcript, equals its release model
  (``KindPoint.view_residual <= 1e-10``), on both links;
* the audit is at most the guarantee wherever the kind reports both (``audited_epsilon <=
  guaranteed_epsilon``);
* under a schedule of rounds (a kind with ``schedule_rounds``), the first two parts again;
* a bad value of a setting of its section (outside ``choices``, or outside its bounds), in a scenario
  file, stops the load with a :class:`ConfigError` naming the TOML path ``<section>.<key>``, while the
  example's own settings load.

The example protocol of tests/fixtures/noisy_average (an outside package, imported here without
registering it) runs the first three parts too; its scenario parts run in tests/protocols/
test_outside_kind.py, where its entry point registers it.
"""

from __future__ import annotations

import dataclasses
import math
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dpgossip.data.partition import PartitionedData
from dpgossip.engine import EngineRecord, NetworkConditions
from dpgossip.errors import ConfigError
from dpgossip.protocols.interface import ProtocolRun
from dpgossip.protocols.registry import KindPoint, PointInputs, ProtocolKind, kinds
from dpgossip.settings import Field
from tests.protocols.outside import example_kind

TOL = 1e-10
SEED = 20261126

REGISTERED = [k for k in kinds() if k.build is not None and k.example is not None]
"""Registered kinds with a builder and an example: each inherits every test below."""
CONTRACT = REGISTERED + [k for k in [example_kind()] if k.name not in {r.name for r in REGISTERED}]
"""... and the outside example protocol, for the parts that need no scenario."""
BY_NAME = {k.name: k for k in CONTRACT}
ENGINE_KINDS = [k.name for k in CONTRACT if "engine" in k.backends]

LINKS: dict[str, NetworkConditions] = {
    "ideal": NetworkConditions(),
    # lossy links, reliable transport: a copy is lost with probability 0.25 and sent again after
    # 0.05 s; a generous failure timeout keeps the failure detectors of crash-tolerant programs quiet
    "lossy": NetworkConditions.from_mapping({"loss": 0.25, "retransmit": True,
                                             "retransmit_timeout": 0.05, "latency": 0.01,
                                             "failure_timeout": 60.0}),
}


@cache
def built(name: str) -> tuple[PointInputs, KindPoint]:
    """The kind's example point and the kind built on it (once per process)."""
    spec = BY_NAME[name]
    inputs = spec.example()
    return inputs, spec.build(inputs)


@cache
def matrix_run(name: str) -> ProtocolRun:
    inputs, point = built(name)
    return point.protocol.run(inputs.data, inputs.network, SEED)


@cache
def engine_run(name: str, links: str) -> tuple[EngineRecord, ProtocolRun]:
    inputs, point = built(name)
    assert point.engine is not None, f"kind {name!r} lists the engine backend but gives no engine form"
    form = point.engine(LINKS[links])
    record = form.run_engine(inputs.data, inputs.network, SEED)
    return record, form.protocol_run(record, inputs.data)


def _assert_close(engine: np.ndarray | None, matrix: np.ndarray | None, what: str) -> None:
    assert (engine is None) == (matrix is None), f"{what}: one backend gives None"
    if matrix is not None:
        assert np.shape(engine) == np.shape(matrix), (f"{what}: shapes {np.shape(engine)} != "
                                                      f"{np.shape(matrix)}")
        np.testing.assert_allclose(engine, matrix, rtol=0, atol=TOL, err_msg=what)


@pytest.mark.parametrize("links", list(LINKS))
@pytest.mark.parametrize("name", ENGINE_KINDS)
def test_engine_equals_matrix_backend(name: str, links: str) -> None:
    record, engine = engine_run(name, links)
    matrix = matrix_run(name)
    assert record.status == "completed", record.outcome.reason
    if links == "lossy":  # the links did lose copies, and retransmission made up for every one
        assert record.summary.lost_copies > 0 and record.summary.retransmissions > 0
    assert np.isfinite(matrix.trajectory).all()
    _assert_close(engine.trajectory, matrix.trajectory, "trajectory")
    _assert_close(engine.final, matrix.final, "final")
    _assert_close(engine.agent_finals, matrix.agent_finals, "agent_finals")


SCHEDULE_KINDS = [n for n in ENGINE_KINDS if getattr(BY_NAME[n], "schedule_rounds", None) is not None]
"""Kinds that run under a schedule of rounds (``ProtocolKind.schedule_rounds``)."""


@cache
def scheduled(name: str) -> tuple[PointInputs, KindPoint]:
    """The kind's example point under a random-matchings schedule of its network's edges."""
    from dpgossip.topology.schedule_spec import ScheduleSpec

    spec = BY_NAME[name]
    inputs = spec.example()
    schedule = ScheduleSpec(sampler="random-matchings", seed=5).sample(inputs.network,
                                                                      spec.schedule_rounds(inputs))
    inputs = dataclasses.replace(inputs, schedule=schedule)
    return inputs, spec.build(inputs)


@pytest.mark.parametrize("links", list(LINKS))
@pytest.mark.parametrize("name", SCHEDULE_KINDS)
def test_under_a_schedule_engine_equals_matrix_and_views_equal_release_model(name: str,
                                                                             links: str) -> None:
    """The contract's first two parts under a schedule of rounds (docs/dynamic-gossip.md, section 8)."""
    inputs, point = scheduled(name)
    matrix = point.protocol.run(inputs.data, inputs.network, SEED)
    form = point.engine(LINKS[links])
    record = form.run_engine(inputs.data, inputs.network, SEED)
    engine = form.protocol_run(record, inputs.data)
    assert record.status == "completed", record.outcome.reason
    _assert_close(engine.trajectory, matrix.trajectory, "trajectory")
    _assert_close(engine.agent_finals, matrix.agent_finals, "agent_finals")
    if point.view_residual is not None:
        assert point.view_residual(record, inputs.data) <= TOL


VIEWS_NOT_YET_REBUILT: frozenset[str] = frozenset()
"""Kinds that declare audited views but give no ``view_residual`` yet: their view test is an expected
failure, reported as such. The set only shrinks: a kind in it that gains a ``view_residual`` fails
until it is removed. (Every built-in kind gives one: the homes' ``transcript_view`` modules.)"""


@pytest.mark.parametrize("links", list(LINKS))
@pytest.mark.parametrize("name", ENGINE_KINDS)
def test_views_from_transcript_equal_release_model(name: str, links: str) -> None:
    inputs, point = built(name)
    spec = BY_NAME[name]
    if point.view_residual is None:
        if not spec.views:
            pytest.skip(f"kind {name!r} audits no view")
        if name in VIEWS_NOT_YET_REBUILT:
            pytest.xfail(f"kind {name!r} audits {spec.views} but gives no view_residual yet")
        pytest.fail(f"kind {name!r} audits the views {spec.views} but gives no view_residual to "
                    "check them on a transcript")
    assert name not in VIEWS_NOT_YET_REBUILT, f"{name!r} gives a view_residual now: remove it from the set"
    record, _ = engine_run(name, links)
    assert record.transcript, f"kind {name!r}: its engine form kept no transcript"
    residual = point.view_residual(record, inputs.data)
    assert residual <= TOL, f"views rebuilt from the transcript differ from the release model by {residual}"


@pytest.mark.parametrize("name", [n for n in ENGINE_KINDS if BY_NAME[n].views])
def test_view_residual_sees_another_dataset(name: str) -> None:
    """The residual compares the transcript with a model of the data it is given: on the example's data
    with agent 0's first row halved (so ``X^T X`` and every view change), the same run's transcript is
    far from the model. A residual that did not look at the messages, or at the data, would pass the
    test above and fail this one."""
    inputs, point = built(name)
    if point.view_residual is None:
        pytest.skip(f"kind {name!r} gives no view_residual")
    if not getattr(BY_NAME[name], "reads_data", True):
        pytest.skip(f"kind {name!r} generates its own data from its settings (reads_data = False)")
    X = np.array(inputs.data.X)
    X[0] *= 0.5
    other = PartitionedData(X=X, sizes=inputs.data.sizes, name="row 0 halved")
    record, _ = engine_run(name, "ideal")
    assert point.view_residual(record, other) > 1e-6


def _without_message(record: Any, drop: int) -> Any:
    """``record`` with message ``drop`` of its transcript left out (an engine record, or a result that
    holds one as ``record``, as D-DP-PM's)."""
    if isinstance(getattr(record, "record", None), EngineRecord):
        return dataclasses.replace(record, record=_without_message(record.record, drop))
    return dataclasses.replace(record, transcript=record.transcript[:drop] + record.transcript[drop + 1:])


@pytest.mark.parametrize("name", [n for n in ENGINE_KINDS if BY_NAME[n].views])
def test_view_residual_needs_every_message(name: str) -> None:
    """A transcript without its first or its last message does not rebuild the views (the residual
    checks that the messages it compares are all there)."""
    inputs, point = built(name)
    if point.view_residual is None:
        pytest.skip(f"kind {name!r} gives no view_residual")
    record, _ = engine_run(name, "ideal")
    for drop in (0, len(record.transcript) - 1):
        assert not point.view_residual(_without_message(record, drop), inputs.data) <= TOL, drop


@pytest.mark.parametrize("name", [k.name for k in CONTRACT])
def test_audit_at_most_guarantee(name: str) -> None:
    _, point = built(name)
    columns = point.columns(matrix_run(name).result, 0)
    if not {"audited_epsilon", "guaranteed_epsilon"} <= columns.keys():
        pytest.skip(f"kind {name!r} reports no audit with a guarantee on its example")
    audited, guaranteed = float(columns["audited_epsilon"]), float(columns["guaranteed_epsilon"])
    assert math.isfinite(audited) and audited >= 0 and not math.isnan(guaranteed)
    assert audited <= guaranteed * (1 + 1e-9), f"audited {audited} > guaranteed {guaranteed}"
    assert not columns.get("audit_exceeds_guarantee", False)


# --- a bad setting names the TOML path ---------------------------------------------------------------

def _toml(value: Any) -> str:
    """``value`` as a TOML value (scalars, lists and inline tables)."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return "inf" if v == math.inf else "-inf" if v == -math.inf else repr(v)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items() if v is not None) + " }"
    raise TypeError(f"no TOML form for {value!r}")


def scenario_text(spec: ProtocolKind, **override: Any) -> str:
    """A scenario file running ``spec`` on its example's sizes, its section from the example's
    settings with ``override`` applied (Wine on a complete graph: only the load is at stake; no
    ``[data]`` for a kind that draws its own data)."""
    inputs = spec.example()
    data = [] if spec.own_data is not None else ["[data]", 'source = "wine"']
    lines = ['name = "contract"', *data, "[network]", 'topology = "complete"',
             f"agents = {inputs.network.m}", "[protocol]", f'kind = "{spec.name}"',
             f"iterations = {inputs.iterations}", f"consensus_steps = {inputs.consensus_steps}",
             f"rank = {inputs.rank}", "[output]", "plots = false"]
    if spec.section:
        fields = spec.fields or {}
        settings = {k: v for k, v in inputs.settings.items() if k in fields
                    and (fields[k].read_by is None or spec.name in fields[k].read_by)}  # read by it
        settings.update(override)
        lines.append(f"[{spec.section}]")
        lines += [f"{key} = {_toml(v)}" for key, v in settings.items() if v is not None]
    return "\n".join(lines) + "\n"


def bad_values(f: Field) -> list[tuple[str, Any]]:
    """Values of ``f``'s type that its ``choices`` or bounds refuse."""
    out: list[tuple[str, Any]] = []
    number = f.kind in (int, float)
    if f.choices is not None and (f.kind is str or number):
        bad: Any = "no-such-choice" if f.kind is str else max(f.choices) + (1 if f.kind is int else 1.5)
        out.append(("choice", bad))
    if number and f.low is not None and math.isfinite(f.low):
        below = f.low if f.low_open else f.low - 1
        out.append(("below", math.floor(below) if f.kind is int and below != math.floor(below) else below))
    if number and f.high is not None and math.isfinite(f.high):
        above = f.high if f.high_open else f.high + 1
        out.append(("above", math.ceil(above) if f.kind is int and above != math.ceil(above) else above))
    return [(what, int(v) if f.kind is int else float(v) if f.kind is float else v) for what, v in out]


BAD_SETTINGS = [pytest.param(k.name, key, value, id=f"{k.name}-{k.section}.{key}-{what}")
                for k in REGISTERED if k.section and k.fields
                for key, f in k.fields.items() for what, value in bad_values(f)]


def load_and_resolve(folder: Path, text: str) -> None:
    """What ``dpgossip run`` does with a scenario file before running it: load and validate it, then
    build every point's network, data and parameters."""
    from dpgossip.scenario import load_scenario
    from dpgossip.scenario.problem import build_structure, resolve_problem

    path = folder / "scenario.toml"
    path.write_text(text, encoding="utf-8")
    scenario = load_scenario(path)
    for point in scenario.points():
        resolve_problem(point.config, build_structure(point.config, scenario.base))


@pytest.mark.parametrize("name", [k.name for k in REGISTERED])
def test_example_settings_form_a_valid_scenario(name: str, tmp_path: Path) -> None:
    load_and_resolve(tmp_path, scenario_text(BY_NAME[name]))


@pytest.mark.parametrize(("name", "key", "value"), BAD_SETTINGS)
def test_bad_setting_names_the_toml_path(name: str, key: str, value: Any, tmp_path: Path) -> None:
    spec = BY_NAME[name]
    path = f"{spec.section}.{key}"
    with pytest.raises(ConfigError) as info:
        load_and_resolve(tmp_path, scenario_text(spec, **{key: value}))
    assert path in str(info.value) or info.value.field == path, f"{path} = {value!r}: {info.value}"


def test_the_bad_values_are_outside_what_each_field_allows() -> None:
    """The generator of bad values, on fields whose refusals are known."""
    assert bad_values(Field(kind=str, choices=("sum", "mean"))) == [("choice", "no-such-choice")]
    assert bad_values(Field(kind=int, low=1)) == [("below", 0)]
    assert bad_values(Field(kind=int, low=0, low_open=True)) == [("below", 0)]
    assert bad_values(Field(kind=float, low=0, low_open=True, high=1, high_open=True)) == [
        ("below", 0.0), ("above", 1.0)]
    assert bad_values(Field(kind=float, low=0.5, high=2.0)) == [("below", -0.5), ("above", 3.0)]
    assert bad_values(Field(kind=bool, default=False)) == []


def test_the_protocols_page_quotes_the_contract() -> None:
    """docs/protocols.md, Section 3, quotes the lossy links and the tolerances of this file."""
    page = " ".join((Path(__file__).resolve().parents[2] / "docs" / "protocols.md")
                    .read_text(encoding="utf-8").split())
    lossy = LINKS["lossy"]
    assert (f"each copy is lost with probability {lossy.loss:g}, a copy is sent again "
            f"{lossy.retransmit_timeout:g} s after it left without an acknowledgement, and the latency is "
            f"{lossy.latency.value:g} s. The failure timeout is {lossy.failure_timeout:g} s") in page
    assert f"agree to `{TOL:g}` (absolute)" in page and f"`view_residual(record, data) <= {TOL:g}`" in page
