"""The registry of protocol kinds: every value of ``protocol.kind`` and what it brings.

A protocol family lives in one home, a package under :mod:`dpgossip.protocols` (or a package outside
dpgossip). The home registers each of its kinds once, with a :class:`ProtocolKind`::

    from dpgossip.protocols.registry import ProtocolKind, register

    register(ProtocolKind(name="my-kind", family="mine", estimates="...", build=build_point, ...))

How kinds are found (:func:`load_kinds`, called on first use of the registry):

* every subpackage of :mod:`dpgossip.protocols` that has a ``kinds`` module
  (``dpgossip.protocols.<home>.kinds``) is imported, and its import registers its kinds: adding a
  home adds its kinds, with no list to edit;
* every entry point of the group :data:`ENTRY_POINT_GROUP` (``dpgossip.protocols``) of the installed
  distributions is loaded: a module (its import registers) or a callable (called with no argument), so a
  package outside this repository adds kinds by declaring, in its ``pyproject.toml``::

      [project.entry-points."dpgossip.protocols"]
      my_home = "my_package.kinds"

  A plug-in that fails (its import or callable raises, or it registers a kind named like a built-in
  one) is skipped with one warning naming it (:func:`skip_plugin`), and so is one whose kind claims a
  section of the scenario layer (found when the scenario layer registers the kinds' sections).

The scenario layer, the CLI, the reports and the key reference read the kinds from here; no other list of
kind names exists.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any, Protocol

import numpy as np

from dpgossip.data.partition import PartitionedData
from dpgossip.engine.conditions import NetworkConditions
from dpgossip.engine.record import EngineRecord
from dpgossip.errors import ConfigError, did_you_mean
from dpgossip.protocols.interface import PrivateProtocol, ProtocolRun
from dpgossip.settings import Field
from dpgossip.topology.network import Network
from dpgossip.topology.schedules import MixingSchedule

__all__ = ["ENTRY_POINT_GROUP", "PointInputs", "EngineForm", "KindPoint", "NoiseCalibration",
           "ProtocolKind", "register", "kind", "kinds", "kind_names", "point_kind_names", "find_kind",
           "load_kinds", "kinds_by_section", "on_register", "plugin_of", "skip_plugin"]

ENTRY_POINT_GROUP = "dpgossip.protocols"
"""The entry-point group through which installed packages add kinds."""

BACKENDS: tuple[str, ...] = ("matrix", "engine")
"""``matrix``: the vectorised synchronous algebra; ``engine``: message by message on the simpy kernel."""


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class PointInputs:
    """What the scenario layer gives a kind for one point.

    Attributes
    ----------
    data, network
        The point's partitioned data (rows scaled into the unit ball) and network (graph and ``W``).
    rank, iterations, consensus_steps
        ``protocol.rank``, ``protocol.iterations`` and ``protocol.consensus_steps``.
    settings
        The kind's own section (``[<section>]``) as validated against its :attr:`ProtocolKind.fields`,
        defaults filled; empty for a kind without a section.
    schedule
        Time-varying consensus rounds (``[network] schedule``, sampled for the point with
        :attr:`ProtocolKind.schedule_rounds` rounds), or ``None``: ``network.W`` every round. Only a
        kind with :attr:`ProtocolKind.schedule_rounds` is given one.
    """

    data: PartitionedData
    network: Network
    rank: int
    iterations: int
    consensus_steps: int
    settings: Mapping[str, Any] = field(default_factory=dict)
    schedule: MixingSchedule | None = None


class EngineForm(Protocol):
    """A protocol on the engine kernel: its node programs run message by message."""

    def run_engine(self, data: PartitionedData, network: Network,
                   seed: int | np.random.SeedSequence) -> EngineRecord:
        """One engine run (outcome, traffic, transcript and the protocol's own records)."""
        ...

    def protocol_run(self, record: EngineRecord, data: PartitionedData) -> ProtocolRun:
        """The engine run in the common view of :class:`~dpgossip.protocols.interface.ProtocolRun`."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class KindPoint:
    """A kind built for one point.

    Attributes
    ----------
    protocol
        The matrix backend: ``protocol.run(data, network, seed) -> ProtocolRun``.
    engine
        ``engine(conditions) -> EngineForm``: the same protocol on the engine under link conditions
        (``None`` for a kind without an engine form).
    columns
        ``columns(result, repeat) -> {column: value}``: the guarantee and audit columns of one run's
        own result (``ProtocolRun.result``). Names shared by every kind: ``guaranteed_epsilon``,
        ``guarantee_delta``, ``audited_epsilon`` (the audit of what the guarantee covers, so
        ``audited_epsilon <= guaranteed_epsilon`` must hold), ``audit_exceeds_guarantee``.
    view_residual
        ``view_residual(record, data) -> float``: the largest absolute difference between each view the
        kind audits as rebuilt from an engine run's transcript and as its release model computes it
        (the contract test requires ``<= 1e-10``); ``None`` when the kind audits no view.
    row
        The protocol's parameters as tidy columns, written on every row of the point (e.g.
        ``PpmParams.to_row()``).
    """

    protocol: PrivateProtocol
    engine: Callable[[NetworkConditions], EngineForm] | None = None
    columns: Callable[[Any, int], Mapping[str, Any]] = lambda result, repeat: {}
    view_residual: Callable[[EngineRecord, PartitionedData], float] | None = None
    row: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class NoiseCalibration:
    """How a kind turns a budget of its section into a noise multiplier, and its guarantee at one.

    ``dpgossip calibrate`` of a kind with its own section calls :attr:`multiplier` on the point with
    ``<section>.epsilon`` and ``<section>.delta`` set to the target (and ``noise_multiplier`` unset),
    rounds the result up, and checks it with :attr:`guarantee` on the point with that
    ``noise_multiplier`` (and ``epsilon`` unset).

    Attributes
    ----------
    multiplier
        ``multiplier(inputs) -> float``: the noise multiplier the run itself would use.
    guarantee
        ``guarantee(inputs) -> float``: the epsilon the run reports as ``guaranteed_epsilon`` at the
        section's ``delta``.
    calibration, accountant
        How each is computed, in words (printed by ``dpgossip calibrate``).
    """

    multiplier: Callable[[PointInputs], float]
    guarantee: Callable[[PointInputs], float]
    calibration: str
    accountant: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ProtocolKind:
    """One value of ``protocol.kind`` and everything the layers above need of it.

    Attributes
    ----------
    name
        The value of ``protocol.kind``.
    family
        The home (e.g. ``"ppm"``), as ``dpgossip protocols`` lists it.
    estimates
        What it estimates, one line (e.g. ``"top-k right singular subspace of X"``).
    paper
        Where it comes from (paper, algorithm).
    side
        ``"left"`` or ``"right"`` singular vectors, or another name for a kind that estimates
        something else (the subspace error is measured only for ``left`` and ``right``).
    backends
        The backends it runs on (:data:`BACKENDS`).
    views
        The adversary views its audit covers (e.g. ``("server", "neighbour")``).
    guarantee
        Its guarantee in one line, or ``"none"``.
    section, fields, section_doc, requires_section
        Its own TOML section (``[section]``), the section's keys and their meaning, and whether a
        scenario of this kind must give the section; ``None`` for a kind without settings.
    check
        ``check(config)`` on a scenario's validated configuration (every section, defaults filled; a
        swept setting is the list of its values, so a rule checks each value or leaves a swept one to
        :attr:`preflight` or :attr:`build`): cross-field rules of the kind (e.g. ``protocol.rank`` must
        be 1), raising :class:`~dpgossip.errors.ConfigError` naming the TOML path. Called for every
        kind among the scenario's ``protocol.kind`` values, after its required section is checked.
    build
        ``build(inputs) -> KindPoint`` for one point; ``None`` for a kind run by its own scenario runner.
        A :attr:`pair_audit` kind runs through the scenario layer's own runner even when it gives one
        (its ``build`` serves the contract test and the library).
    pair_audit
        The kind is audited pair by pair with a worst-case neighbour search, as ``[privacy]`` says.
    example
        ``example() -> PointInputs``: a small case on which the contract test runs the kind.
    reads_data
        ``False`` for a kind that generates its own data from its settings and ignores
        ``PointInputs.data`` (private ALS draws its rating matrix from ``[als]``); the contract test
        then does not expect its views to change with the data. Such a kind gives :attr:`own_data`.
    own_data
        ``own_data(network, settings) -> PartitionedData``: the data a kind with ``reads_data = False``
        computes on, drawn from its own section's settings on the point's network (private ALS: the
        rating matrix, one row per user). A scenario whose every kind has it needs no ``[data]``
        section (and refuses one); the point's data columns and error reference are this data.
    preflight
        ``preflight(inputs)``: the kind's checks that need the point's data or network (e.g. an
        iteration rank above the data's columns), raising :class:`~dpgossip.errors.ConfigError` naming
        the TOML path; run before anything is written, and by :attr:`build`'s callers before a run.
    calibration
        The kind's own noise calibration (:class:`NoiseCalibration`) for ``dpgossip calibrate``;
        ``None`` for a kind without one (and for a :attr:`pair_audit` kind, calibrated by the pair
        audit's noise-scale search).
    engine_network
        ``engine_network(network, parties) -> Network``: the network the engine runs the kind on, from
        the point's network and its number of agents (e.g. a star around a server); ``None``: the
        point's network. The ``[engine]`` conditions must name only its nodes and edges.
    metric
        ``(column, label)``: the result column that measures the kind's utility and how plots name it,
        for a kind that does not estimate a subspace (:attr:`side` neither ``left`` nor ``right``;
        private ALS: ``("rmse", "held-out RMSE")``); ``None``: the subspace distance.
    label, label_columns
        How reports name the kind's series: ``label`` (default :attr:`name`), followed by the values
        of the rows' ``label_columns`` in parentheses when there are any.
    schedule_rounds
        ``schedule_rounds(inputs) -> int``: the consensus rounds a run reads from a schedule (its
        phases times ``c``; docs/dynamic-gossip.md, section 8), for a kind whose matrix and engine
        backends and release model follow time-varying rounds (:attr:`PointInputs.schedule`);
        ``None``: the kind does not run under a schedule, and :attr:`schedule_refusal` says why.
    schedule_refusal
        Why the kind does not run under a schedule (shown when a scenario gives one).
    """

    name: str
    family: str
    estimates: str
    paper: str = ""
    side: str = "right"
    backends: tuple[str, ...] = BACKENDS
    views: tuple[str, ...] = ()
    guarantee: str = "none"
    section: str | None = None
    fields: Mapping[str, Field] | None = None
    section_doc: str = ""
    requires_section: bool = False
    check: Callable[[Mapping[str, Any]], None] | None = None
    build: Callable[[PointInputs], KindPoint] | None = None
    pair_audit: bool = False
    example: Callable[[], PointInputs] | None = None
    reads_data: bool = True
    own_data: Callable[[Network, Mapping[str, Any]], PartitionedData] | None = None
    preflight: Callable[[PointInputs], None] | None = None
    calibration: NoiseCalibration | None = None
    engine_network: Callable[[Network, int], Network] | None = None
    metric: tuple[str, str] | None = None
    label: str = ""
    label_columns: tuple[str, ...] = ()
    schedule_rounds: Callable[[PointInputs], int] | None = None
    schedule_refusal: str = "its consensus step, release model or audit assumes one fixed W"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or self.name != self.name.strip():
            raise ConfigError(f"a protocol kind's name must be a non-empty string, got {self.name!r}",
                              field="name")
        unknown = [b for b in self.backends if b not in BACKENDS]
        if unknown or not self.backends:
            raise ConfigError(f"kind {self.name!r}: backends must be a non-empty subset of "
                              f"{list(BACKENDS)}, got {list(self.backends)}", field="backends")
        if (self.fields is not None or self.requires_section) and not self.section:
            raise ConfigError(f"kind {self.name!r} declares fields but no section", field="section")
        if self.own_data is not None and self.reads_data:
            raise ConfigError(f"kind {self.name!r} gives own_data, so it must set reads_data = False",
                              field="own_data")

    @property
    def runs_points(self) -> bool:
        """The kind is a value of ``protocol.kind``: it builds its own point (:attr:`build`) or is
        audited pair by pair by the scenario layer's own runner (:attr:`pair_audit`). A kind with
        neither is run by its section's own scenario (e.g. ``[network_dp]``)."""
        return self.build is not None or self.pair_audit

    def series(self, row: Mapping[str, Any]) -> str:
        """The name of this kind's series in a report, for one of its result rows (:attr:`label`)."""
        name = self.label or self.name
        if not self.label_columns:
            return name
        return f"{name} ({', '.join(str(row.get(c)) for c in self.label_columns)})"

    def to_row(self) -> dict[str, object]:
        """One line of ``dpgossip protocols``."""
        return {"kind": self.name, "estimates": self.estimates, "home": self.family,
                "backends": ", ".join(self.backends), "views": ", ".join(self.views) or "-",
                "guarantee": self.guarantee, "section": f"[{self.section}]" if self.section else "-"}


_KINDS: dict[str, ProtocolKind] = {}
_LOADED = False


def register(spec: ProtocolKind, *, replace: bool = False) -> ProtocolKind:
    """Add ``spec`` to the registry.

    Raises
    ------
    ConfigError
        A kind of that name is registered already by another home (unless ``replace``), or ``spec`` is
        not a :class:`ProtocolKind`.
    """
    if not isinstance(spec, ProtocolKind):
        raise ConfigError(f"register() takes a ProtocolKind, got {type(spec).__name__}", field="spec")
    old = _KINDS.get(spec.name)
    if _PLUGIN is not None and spec.name in _BUILTIN:
        raise ConfigError(f"protocol kind {spec.name!r} is a built-in kind of dpgossip (home "
                          f"{_KINDS[spec.name].family!r}); a plug-in cannot replace it, choose another "
                          "name", field="name")
    if _PLUGIN is not None:
        _PLUGIN_OF[spec.name] = _PLUGIN
    if old is not None and old is not spec and not replace and old.family != spec.family:
        raise ConfigError(f"protocol kind {spec.name!r} is registered already by home "
                          f"{old.family!r}; choose another name", field="name")
    _KINDS[spec.name] = spec
    try:
        for listener in tuple(_LISTENERS):
            listener(spec)
    except BaseException:  # e.g. its section clashes with another's: the kind is not registered
        if old is None:
            _KINDS.pop(spec.name, None)
        else:
            _KINDS[spec.name] = old
        raise
    return spec


_LISTENERS: list[Callable[[ProtocolKind], None]] = []


def on_register(listener: Callable[[ProtocolKind], None]) -> None:
    """Call ``listener(spec)`` after every later :func:`register` (how the scenario layer registers the
    section of a kind added after it was imported). A listener that raises undoes the registration."""
    _LISTENERS.append(listener)


_BUILTIN: set[str] = set()
"""The kinds of dpgossip's own homes (a plug-in cannot replace them)."""
_PLUGIN: str | None = None
"""The entry point being loaded (its kinds are recorded in :data:`_PLUGIN_OF`)."""
_PLUGIN_OF: dict[str, str] = {}
"""Kind name -> the entry point (plug-in) that registered it."""


def _load_homes() -> None:
    import dpgossip.protocols as package

    for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
        if info.ispkg and importlib.util.find_spec(info.name + ".kinds") is not None:
            importlib.import_module(info.name + ".kinds")
    _BUILTIN.update(k for k in _KINDS if k not in _PLUGIN_OF)


def _load_entry_points() -> None:
    """Load every plug-in (entry point of :data:`ENTRY_POINT_GROUP`). A plug-in that fails (its import
    or its callable raises, or it registers a kind named like a built-in one) is skipped with one
    warning naming it: a broken third-party package must not break the built-in kinds."""
    global _PLUGIN
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        before = dict(_KINDS)
        _PLUGIN = ep.name
        try:
            loaded = ep.load()
            if callable(loaded) and not isinstance(loaded, ModuleType):
                loaded()
        except Exception as exc:
            _KINDS.clear()
            _KINDS.update(before)
            why = str(exc) if isinstance(exc, ConfigError) else f"{type(exc).__name__}: {exc}"
            skip_plugin(ep.name, why, ep.value)
        finally:
            _PLUGIN = None


def plugin_of(name: str) -> str | None:
    """The plug-in (entry point name) that registered the kind ``name``; ``None`` for another kind."""
    return _PLUGIN_OF.get(name)


def skip_plugin(plugin: str, why: str, value: str | None = None) -> None:
    """Drop every kind the plug-in ``plugin`` registered and say so once on stderr (``dpgossip:
    warning: ...``); the other kinds are untouched.

    Parameters
    ----------
    plugin
        The entry point's name.
    why
        What is wrong with it.
    value
        The entry point's value (``module:callable``), when known.
    """
    import sys

    for kind_name in [k for k, p in _PLUGIN_OF.items() if p == plugin]:
        _KINDS.pop(kind_name, None)
        del _PLUGIN_OF[kind_name]
    where = f"entry point {value} of group" if value else "entry point group"
    print(f"dpgossip: warning: protocol plug-in {plugin!r} ({where} {ENTRY_POINT_GROUP!r}) is "
          f"skipped, its kinds are not available: {why}", file=sys.stderr)


def load_kinds(*, force: bool = False) -> None:
    """Import every home of :mod:`dpgossip.protocols` and every installed entry point (once)."""
    global _LOADED
    if _LOADED and not force:
        return
    _LOADED = True
    _load_homes()
    _load_entry_points()


def kinds() -> tuple[ProtocolKind, ...]:
    """Every registered kind, in registration order."""
    load_kinds()
    return tuple(_KINDS.values())


def kind_names() -> tuple[str, ...]:
    """The names of every registered kind."""
    return tuple(k.name for k in kinds())


def point_kind_names() -> tuple[str, ...]:
    """The allowed values of ``protocol.kind``: the kinds that run as scenario points
    (:attr:`ProtocolKind.runs_points`)."""
    return tuple(k.name for k in kinds() if k.runs_points)


def find_kind(name: object) -> ProtocolKind | None:
    """The registered kind ``name``, or ``None`` (for readers of stored results, which may name a
    kind no longer installed)."""
    load_kinds()
    return _KINDS.get(name) if isinstance(name, str) else None


def kind(name: str, *, field_name: str = "protocol.kind") -> ProtocolKind:
    """The registered kind ``name``.

    Raises
    ------
    ConfigError
        No kind has that name: names the field, the value and the registered kinds.
    """
    load_kinds()
    try:
        return _KINDS[name]
    except (KeyError, TypeError):
        hint = did_you_mean(name, list(_KINDS)) if isinstance(name, str) else ""
        raise ConfigError(f"{field_name} = {name!r} is not a registered protocol kind{hint}; "
                          f"registered: {', '.join(_KINDS)}", field=field_name) from None


def kinds_by_section() -> dict[str, list[ProtocolKind]]:
    """Every section a registered kind reads, and the kinds that read it (in registration order)."""
    out: dict[str, list[ProtocolKind]] = {}
    for k in kinds():
        if k.section:
            out.setdefault(k.section, []).append(k)
    return out
