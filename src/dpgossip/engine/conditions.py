"""Network conditions of one engine run: latency, bandwidth, loss, stragglers, crashes.

A :class:`NetworkConditions` is what a scenario file gives under ``[engine]``; build it with
:meth:`NetworkConditions.from_mapping`, which validates every key and value and raises
:class:`~dpgossip.errors.ConfigError` naming the key (``latency.kind``, ``loss``, ``crashes``, ...;
the scenario layer shows them as ``engine.latency.kind``, ...), the value and what is allowed. Example
(TOML)::

    [engine]
    latency = { kind = "exponential", mean = 0.002 }    # seconds; or a number = constant
    bandwidth = 1e6                                     # bytes per second (inf = unlimited)
    loss = 0.05                                         # probability a copy is lost
    retransmit = true                                   # reliable delivery (acks + timeout)
    retransmit_timeout = 0.05
    compute_time = 1e-4                                 # seconds per local computation step
    stragglers = { 3 = 4.0, 5 = { delay = 0.01 } }      # slowdown factor, or extra delay
    crashes = { 2 = 0.25 }                              # agent -> simulated crash time
    on_crash = "reweight"                               # or "stop"
    failure_timeout = 1.0
    [[engine.links]]                                    # per-edge override (both directions)
    edge = [0, 1]
    latency = { kind = "uniform", low = 0.01, high = 0.02 }

The defaults are ideal links: zero latency, unlimited bandwidth, no loss, no stragglers, no crashes.
Which agents and edges exist is only known with the network: :meth:`NetworkConditions.check_network`
is called by every protocol runner before its :class:`~dpgossip.engine.kernel.Simulation`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

import numpy as np

from dpgossip.errors import ConfigError, check_number, did_you_mean
from dpgossip.topology.network import Network

__all__ = ["LatencySpec", "Straggler", "LinkOverride", "NetworkConditions", "LATENCY_KINDS",
           "CRASH_POLICIES", "DISSEMINATIONS", "condition_fields"]

LATENCY_KINDS: dict[str, tuple[str, ...]] = {
    "constant": ("value",),
    "uniform": ("low", "high"),
    "exponential": ("mean",),
    "lognormal": ("mu", "sigma"),
}
"""Latency distributions and their parameters (seconds; ``mu``, ``sigma`` of ``log`` latency)."""

DISSEMINATIONS = ("auto", "tree", "flood")
"""How agents disseminate ``q^(T)`` (see :attr:`NetworkConditions.dissemination`)."""

CRASH_POLICIES = ("stop", "reweight")
"""What survivors do when a neighbour's crash is detected (see :mod:`dpgossip.engine.monitor`)."""


def condition_fields(prefix: str) -> dict[str, str]:
    """The :func:`~dpgossip.errors.renamed_fields` mapping that shows the parameters of
    :meth:`NetworkConditions.from_mapping` (``mapping``, ``loss``, ``links[0].edge``, ...) under
    ``prefix`` (``"engine"`` gives ``engine``, ``engine.loss``, ``engine.links[0].edge``)."""
    return {"mapping": prefix, **{key: f"{prefix}.{key}" for key in _KEYS}}


def _agent(fieldname: str, key: object) -> int:
    """An agent id given as an int or a string of digits (TOML table keys are strings)."""
    if isinstance(key, str) and key.strip().lstrip("-").isdigit():
        key = int(key.strip())
    if isinstance(key, bool) or not isinstance(key, (int, np.integer)) or key < 0:
        raise ConfigError(f"{fieldname}: agent ids must be integers >= 0, got {key!r}",
                          field=fieldname)
    return int(key)


def _check_keys(fieldname: str, given: Mapping[str, Any], allowed: Sequence[str]) -> None:
    for key in given:
        if key not in allowed:
            hint = did_you_mean(str(key), list(allowed))
            raise ConfigError(f"{fieldname}: unknown key {key!r}{hint}; allowed keys: "
                              f"{', '.join(allowed)}", field=fieldname)


@dataclass(frozen=True, slots=True, kw_only=True)
class LatencySpec:
    """A per-message propagation delay distribution (seconds).

    ``constant`` (``value``), ``uniform`` (``low <= high``), ``exponential`` (``mean > 0``) or
    ``lognormal`` (``exp(N(mu, sigma^2))``). Only random kinds consume the network stream.
    """

    kind: str = "constant"
    value: float | None = None
    low: float | None = None
    high: float | None = None
    mean: float | None = None
    mu: float | None = None
    sigma: float | None = None
    where: str = field(default="latency", compare=False, repr=False)
    """Parameter name used in error messages (``links[0].latency`` for a link override)."""

    def __post_init__(self) -> None:
        w = self.where
        if self.kind not in LATENCY_KINDS:
            raise ConfigError(f"{w}.kind must be one of {', '.join(LATENCY_KINDS)}, got "
                              f"{self.kind!r}{did_you_mean(str(self.kind), list(LATENCY_KINDS))}",
                              field=f"{w}.kind")
        needed = LATENCY_KINDS[self.kind]
        given = {n: getattr(self, n) for n in ("value", "low", "high", "mean", "mu", "sigma")}
        if self.kind == "constant" and self.value is None:
            object.__setattr__(self, "value", 0.0)
            given["value"] = 0.0
        for name, v in given.items():
            if name not in needed and v is not None:
                raise ConfigError(f"{w}.{name} is not a parameter of latency kind {self.kind!r} "
                                  f"(it takes {', '.join(needed)}), got {name} = {v!r}",
                                  field=f"{w}.{name}")
            if name in needed and v is None:
                raise ConfigError(f"{w}.{name} is required for latency kind {self.kind!r}",
                                  field=f"{w}.{name}")
        if self.kind == "constant":
            object.__setattr__(self, "value", check_number(self.value, f"{w}.value", low=0))
        elif self.kind == "uniform":
            lo = check_number(self.low, f"{w}.low", low=0)
            hi = check_number(self.high, f"{w}.high", low=0)
            if hi < lo:
                raise ConfigError(f"{w}: uniform latency needs low <= high, got low = {lo!r}, "
                                  f"high = {hi!r}", field=w)
            object.__setattr__(self, "low", lo)
            object.__setattr__(self, "high", hi)
        elif self.kind == "exponential":
            object.__setattr__(self, "mean",
                               check_number(self.mean, f"{w}.mean", low=0, low_open=True))
        else:
            object.__setattr__(self, "mu", check_number(self.mu, f"{w}.mu"))
            object.__setattr__(self, "sigma", check_number(self.sigma, f"{w}.sigma", low=0))

    @classmethod
    def from_value(cls, value: object, where: str = "latency") -> LatencySpec:
        """Parse a number (constant latency), a mapping with ``kind``, or a ``LatencySpec``."""
        if isinstance(value, LatencySpec):
            return value
        if isinstance(value, Mapping):
            _check_keys(where, value, ("kind", "value", "low", "high", "mean", "mu", "sigma"))
            kind = value.get("kind", "constant")
            if not isinstance(kind, str):
                raise ConfigError(f"{where}.kind must be a string, got {kind!r}",
                                  field=f"{where}.kind")
            return cls(where=where, **{k: v for k, v in value.items()})
        if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
            return cls(kind="constant", value=check_number(value, where, low=0), where=where)
        raise ConfigError(f"{where} must be a number (constant seconds) or a table with kind = "
                          f"{' | '.join(LATENCY_KINDS)}, got {value!r}", field=where)

    @property
    def is_constant(self) -> bool:
        """True when every message has the same delay (no random draw)."""
        return self.kind == "constant" or (self.kind == "uniform" and self.low == self.high) or (
            self.kind == "lognormal" and self.sigma == 0.0)

    @property
    def expected(self) -> float:
        """Mean delay in seconds."""
        if self.kind == "constant":
            return float(self.value)
        if self.kind == "uniform":
            return 0.5 * (self.low + self.high)
        if self.kind == "exponential":
            return float(self.mean)
        return math.exp(self.mu + 0.5 * self.sigma ** 2)

    def to_row(self) -> dict[str, object]:
        """Tidy row: kind and parameters."""
        row: dict[str, object] = {"latency": self.kind}
        for name in LATENCY_KINDS[self.kind]:
            row[f"latency_{name}"] = getattr(self, name)
        return row


@dataclass(frozen=True, slots=True, kw_only=True)
class Straggler:
    """A slow agent: each local computation step takes ``compute_time * factor + delay`` seconds."""

    factor: float = 1.0
    delay: float = 0.0

    def to_row(self) -> dict[str, object]:
        """Tidy row."""
        return {"factor": self.factor, "delay": self.delay}


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkOverride:
    """Conditions of one undirected edge (both directions); ``None`` keeps the global value."""

    edge: tuple[int, int]
    latency: LatencySpec | None = None
    bandwidth: float | None = None
    loss: float | None = None

    def to_row(self) -> dict[str, object]:
        """Tidy row (``None`` = inherited from the global conditions)."""
        row: dict[str, object] = {"edge": f"{self.edge[0]}-{self.edge[1]}",
                                  "bandwidth": self.bandwidth, "loss": self.loss}
        row.update(self.latency.to_row() if self.latency is not None else {"latency": None})
        return row


_KEYS = ("latency", "bandwidth", "loss", "retransmit", "retransmit_timeout", "max_attempts",
         "compute_time", "stragglers", "crashes", "on_crash", "failure_timeout", "links",
         "dissemination")


@dataclass(frozen=True, slots=True, kw_only=True)
class NetworkConditions:
    """Link and agent conditions of an engine run (global defaults, per-edge overrides).

    Link model (per directed link, see :mod:`dpgossip.engine.links`): a copy of ``size`` bytes
    waits until the link is free (FIFO, one copy at a time), takes ``size / bandwidth`` to transmit,
    then ``latency`` to propagate; it is lost with probability ``loss``. With ``retransmit`` the
    transport is reliable (acks, retransmission ``retransmit_timeout`` after a copy left the sender
    without an ack, at most ``max_attempts`` attempts); without it a lost copy is gone.
    """

    latency: LatencySpec = field(default_factory=LatencySpec)
    """Propagation delay distribution (seconds); default constant 0."""
    bandwidth: float = math.inf
    """Bytes per second of every directed link; ``inf`` means transmission takes no time."""
    loss: float = 0.0
    """Probability in ``[0, 1)`` that a copy (data or ack) is lost."""
    retransmit: bool = True
    """Reliable delivery by acknowledgement and retransmission; ``False`` gives plain loss."""
    retransmit_timeout: float = 0.2
    """Seconds after a copy left the sender without an ack before it is sent again (> 0)."""
    max_attempts: int = 64
    """Copies of one message the sender tries before giving up (>= 1)."""
    compute_time: float = 0.0
    """Seconds an agent spends on each local computation step (the projection ``z_i^(t)``, each
    gossip combination ``s_i^(t,k)`` and the update ``q_i^(t)``)."""
    stragglers: Mapping[int, Straggler] = field(default_factory=dict)
    """Slow agents: agent -> :class:`Straggler` (a bare number is a slowdown factor)."""
    crashes: Mapping[int, float] = field(default_factory=dict)
    """Fail-stop crashes: agent -> simulated time of the crash (>= 0)."""
    on_crash: str = "stop"
    """``"stop"`` or ``"reweight"`` (see :mod:`dpgossip.engine.monitor`)."""
    failure_timeout: float = 1.0
    """Seconds of silence from a neighbour, while waiting on it, before it is suspected crashed."""
    links: tuple[LinkOverride, ...] = ()
    """Per-edge overrides."""
    dissemination: str = "auto"
    """How agents disseminate q^(T): "tree" (convergecast then broadcast along the BFS spanning
    tree from agent 0, 2 (m - 1) messages per component, no redundancy), "flood" (batched flooding,
    survives crashes) or "auto" (tree unless crashes are scheduled). "tree" with crashes needs
    on_crash = "stop". The estimate does not depend on it."""

    def __post_init__(self) -> None:
        lat = LatencySpec.from_value(self.latency)
        object.__setattr__(self, "latency", lat)
        object.__setattr__(self, "bandwidth", check_number(self.bandwidth, "bandwidth", low=0,
                                                           low_open=True, allow_inf=True))
        object.__setattr__(self, "loss", _loss("loss", self.loss))
        if not isinstance(self.retransmit, (bool, np.bool_)):
            raise ConfigError(f"retransmit must be true or false, got {self.retransmit!r}",
                              field="retransmit")
        object.__setattr__(self, "retransmit", bool(self.retransmit))
        object.__setattr__(self, "retransmit_timeout",
                           check_number(self.retransmit_timeout, "retransmit_timeout", low=0,
                                        low_open=True))
        ma = self.max_attempts
        if isinstance(ma, bool) or not isinstance(ma, (int, np.integer)) or ma < 1:
            raise ConfigError(f"max_attempts must be an integer >= 1, got {ma!r}",
                              field="max_attempts")
        object.__setattr__(self, "max_attempts", int(ma))
        ct = check_number(self.compute_time, "compute_time", low=0)
        object.__setattr__(self, "compute_time", ct)
        object.__setattr__(self, "stragglers", MappingProxyType(_stragglers(self.stragglers, ct)))
        object.__setattr__(self, "crashes", MappingProxyType(_crashes(self.crashes)))
        if self.on_crash not in CRASH_POLICIES:
            raise ConfigError(f"on_crash must be one of {', '.join(CRASH_POLICIES)}, got "
                              f"{self.on_crash!r}{did_you_mean(str(self.on_crash), CRASH_POLICIES)}",
                              field="on_crash")
        object.__setattr__(self, "failure_timeout",
                           check_number(self.failure_timeout, "failure_timeout", low=0,
                                        low_open=True))
        object.__setattr__(self, "links", tuple(_link(i, x) for i, x in enumerate(self.links)))
        self._check_dissemination()

    def _check_dissemination(self) -> None:
        how = self.dissemination
        if how not in DISSEMINATIONS:
            raise ConfigError(f"dissemination must be one of {', '.join(DISSEMINATIONS)}, got "
                              f"{how!r}{did_you_mean(str(how), DISSEMINATIONS)}",
                              field="dissemination")
        if how == "tree" and self.crashes and self.on_crash == "reweight":
            raise ConfigError("dissemination = 'tree' cannot survive a crash (the spanning tree "
                              f"has no redundancy), got crashes = {dict(self.crashes)} with "
                              "on_crash = 'reweight'; use dissemination = 'flood' or 'auto'",
                              field="dissemination")

    @property
    def resolved_dissemination(self) -> str:
        """``"tree"`` or ``"flood"``: ``"auto"`` is the tree unless crashes are scheduled."""
        if self.dissemination == "auto":
            return "flood" if self.crashes else "tree"
        return self.dissemination

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any] | None) -> NetworkConditions:
        """Validate a mapping of network conditions (a scenario's ``[engine]`` table) and build them.

        Raises
        ------
        ConfigError
            Unknown key (with a did-you-mean hint) or invalid value; the message names the key
            (``loss``, ``latency.kind``, ``links[0].edge``; ``mapping`` for the mapping itself).
            :func:`condition_fields` gives the mapping that renames them.
        """
        if mapping is None:
            return cls()
        if not isinstance(mapping, Mapping):
            raise ConfigError(f"mapping must be a table of network conditions, got {mapping!r}",
                              field="mapping")
        _check_keys("mapping", mapping, _KEYS)
        kw = dict(mapping)
        if "links" in kw:
            links = kw["links"]
            if isinstance(links, Mapping) or not isinstance(links, Sequence):
                raise ConfigError(f"links must be a list of tables with an edge = [i, j], "
                                  f"got {links!r}", field="links")
            kw["links"] = tuple(links)
        return cls(**kw)

    def check_network(self, network: Network) -> None:
        """Check that every agent and edge named here exists in ``network``.

        Raises
        ------
        ConfigError
            For a straggler, crash or link override naming a missing agent or edge.
        """
        m = network.m
        for name, agents in (("stragglers", self.stragglers), ("crashes", self.crashes)):
            for a in agents:
                if a >= m:
                    raise ConfigError(f"{name}: agent {a} does not exist; the network has agents "
                                      f"0..{m - 1}", field=name)
        for k, ov in enumerate(self.links):
            i, j = ov.edge
            if not network.graph.has_edge(i, j):
                raise ConfigError(f"links[{k}].edge: {[i, j]} is not an edge of the "
                                  f"network {network.name!r} ({m} agents)",
                                  field=f"links[{k}].edge")

    @property
    def is_ideal(self) -> bool:
        """Zero latency, unlimited bandwidth, no loss, no stragglers, no crashes, no overrides."""
        return (self.latency.is_constant and self.latency.expected == 0.0
                and math.isinf(self.bandwidth) and self.loss == 0.0 and self.compute_time == 0.0
                and not self.stragglers and not self.crashes and not self.links)

    def to_row(self) -> dict[str, object]:
        """Tidy row of the global conditions (overrides, stragglers and crashes as counts)."""
        row = self.latency.to_row()
        row.update({"bandwidth": self.bandwidth, "loss": self.loss,
                    "retransmit": self.retransmit, "retransmit_timeout": self.retransmit_timeout,
                    "compute_time": self.compute_time, "stragglers": len(self.stragglers),
                    "crashes": len(self.crashes), "on_crash": self.on_crash,
                    "failure_timeout": self.failure_timeout, "link_overrides": len(self.links),
                    "dissemination": self.resolved_dissemination})
        return row


def _loss(fieldname: str, value: object) -> float:
    x = check_number(value, fieldname, low=0)
    if not 0.0 <= x < 1.0:
        raise ConfigError(f"{fieldname} must be a probability in [0, 1), got {value!r}",
                          field=fieldname)
    return x


def _stragglers(value: object, compute_time: float) -> dict[int, Straggler]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"stragglers must be a table agent -> factor or "
                          f"{{factor, delay}}, got {value!r}", field="stragglers")
    out: dict[int, Straggler] = {}
    for key, spec in value.items():
        a = _agent("stragglers", key)
        where = f"stragglers.{a}"
        if isinstance(spec, Straggler):
            factor, delay = spec.factor, spec.delay
        elif isinstance(spec, Mapping):
            _check_keys(where, spec, ("factor", "delay"))
            factor, delay = spec.get("factor", 1.0), spec.get("delay", 0.0)
        else:
            factor, delay = spec, 0.0
        factor = check_number(factor, f"{where}.factor", low=0, low_open=True)
        delay = check_number(delay, f"{where}.delay", low=0)
        if factor != 1.0 and compute_time == 0.0 and delay == 0.0:
            raise ConfigError(f"{where}: a slowdown factor ({factor:g}) multiplies "
                              "compute_time = 0; set compute_time > 0 or "
                              "give an extra delay, e.g. { delay = 0.01 }", field=where)
        out[a] = Straggler(factor=factor, delay=delay)
    return dict(sorted(out.items()))


def _crashes(value: object) -> dict[int, float]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"crashes must be a table agent -> crash time (seconds), "
                          f"got {value!r}", field="crashes")
    out = {_agent("crashes", k): check_number(v, f"crashes.{k}", low=0)
           for k, v in value.items()}
    return dict(sorted(out.items()))


def _link(k: int, value: object) -> LinkOverride:
    where = f"links[{k}]"
    if isinstance(value, LinkOverride):
        value = {"edge": value.edge, "latency": value.latency, "bandwidth": value.bandwidth,
                 "loss": value.loss}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where} must be a table with edge = [i, j] and any of latency, "
                          f"bandwidth, loss; got {value!r}", field=where)
    _check_keys(where, value, ("edge", "latency", "bandwidth", "loss"))
    edge = value.get("edge")
    if not isinstance(edge, Sequence) or isinstance(edge, str) or len(edge) != 2:
        raise ConfigError(f"{where}.edge must be a pair of agent ids [i, j], got {edge!r}",
                          field=f"{where}.edge")
    i, j = (_agent(f"{where}.edge", e) for e in edge)
    if i == j:
        raise ConfigError(f"{where}.edge must join two different agents, got {[i, j]}",
                          field=f"{where}.edge")
    lat = value.get("latency")
    bw = value.get("bandwidth")
    loss = value.get("loss")
    return LinkOverride(
        edge=(min(i, j), max(i, j)),
        latency=None if lat is None else LatencySpec.from_value(lat, f"{where}.latency"),
        bandwidth=None if bw is None else check_number(bw, f"{where}.bandwidth", low=0,
                                                       low_open=True, allow_inf=True),
        loss=None if loss is None else _loss(f"{where}.loss", loss))


assert set(_KEYS) == {f.name for f in fields(NetworkConditions)}
