"""The key reference of scenario files (``docs/scenarios.md``), generated from the schema.

Every key of every section comes from the same objects validation reads: the
:class:`~dpgossip.settings.Field` entries of :data:`~dpgossip.scenario.schema.SCHEMA` and of
the registered sections (``[privacy]`` and the kinds' sections), the registry of protocol kinds
(:func:`kind_rows`), and the fields of
:class:`~dpgossip.engine.NetworkConditions` (``[engine]``). ``tests/scenario/test_reference.py`` fails
when ``docs/scenarios.md`` differs from :func:`scenario_reference`. Regenerate it with::

    python -m dpgossip.scenario.reference > docs/scenarios.md
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import math
import re
import sys
from collections.abc import Mapping
from typing import Any

from dpgossip.engine.conditions import NetworkConditions
from dpgossip.protocols.gossip.linear import INPUTS
from dpgossip.protocols.registry import kinds
from dpgossip.scenario import dynamic_gossip_keys as dgk
from dpgossip.scenario import network_dp_config as ndp
from dpgossip.scenario.schema import EXTRA_SECTIONS, SCHEMA
from dpgossip.scenario.sweep import SWEEP_KEYS
from dpgossip.settings import REQUIRED, Field
from dpgossip.topology.builders import TOPOLOGIES
from dpgossip.topology.mixing import MIXING_RULES

__all__ = ["scenario_reference", "field_rows", "kind_rows", "NETWORK_DP_KEYS", "network_dp_rows"]

_INTRO = """\
# Scenario keys

Every key a scenario file (TOML) may hold, with its type, default, allowed values and meaning. This
page is generated from the schema that validation uses (`python -m dpgossip.scenario.reference >
docs/scenarios.md`), and a test fails when the two differ.

- A list given where one value is expected is a **sweep axis** (column *sweep*): the scenario runs one
  point per value, and several axes form a product unless `[sweep] zip` pairs them.
- *required* keys have no default. Unknown keys are rejected with a did-you-mean, and every error names
  the key's path (`protocol.consensus_steps[2]`), the value and what is allowed.
- The papers are named by their authors: Campbell et al. is Campbell, Scaglione and Peisert,
  *Decentralized Differentially Private Power Method* (D-DP-PM); Nicolas et al. is Nicolas, Sabater,
  Maouche, Ben Mokhtar and Coates, *Differentially private and decentralized randomized power method*;
  Imtiaz and Sarwate is *Distributed Differentially-Private Algorithms for Matrix and Tensor
  Factorization*; Chien et al. is *Private Alternating Least Squares* (ICML 2021). docs/index.md maps
  each to its protocol kinds and pages.
"""

_SECTION_DOCS = {
    "": "Top-level keys.",
    "data": "The data matrix and how its rows are split among the agents.",
    "network": "The communication graph and its mixing matrix W.",
    "protocol": "The protocol kind and its common settings (iterations, gossip rounds, rank); "
                "alpha, sigma_q and noise are D-DP-PM's (Campbell et al., Algorithm 1).",
    "baseline": "The local-DP baseline of Campbell et al., Section IV-A: every agent perturbs its own rows.",
    "output": "Where results go.",
}


def _kind(kind: Any) -> str:
    return {int: "integer", float: "number", str: "string", bool: "boolean", "list": "list",
            "table": "table"}.get(kind, str(kind))


def _value(v: Any) -> str:
    if v is REQUIRED:
        return "*required*"
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and math.isinf(v):
        return "inf"
    if isinstance(v, str):
        return f'"{v}"'
    return f"{v!r}".replace("'", '"')


def _allowed(f: Field) -> str:
    if f.choices is not None:
        return " \\| ".join(_value(c) for c in f.choices)
    lo = None if f.low is None else f"{'>' if f.low_open else '>='} {f.low:g}"
    hi = None if f.high is None else f"{'<' if f.high_open else '<='} {f.high:g}"
    if lo and hi:
        return f"{'(' if f.low_open else '['}{f.low:g}, {f.high:g}{')' if f.high_open else ']'}"
    return lo or hi or ""


_ROLE = re.compile(r":(?:class|mod|func|meth|data|attr):`~?([^`]+)`")


def _cell(text: str) -> str:
    """One table cell: one line, reST roles and double backquotes as Markdown code, ``|`` escaped."""
    text = _ROLE.sub(r"`\1`", " ".join(text.split())).replace("``", "`")
    return text.replace("|", "\\|")


def field_rows(fields: Mapping[str, Field]) -> list[tuple[str, str, str, str, str, str]]:
    """``(key, type, default, allowed, sweep, meaning)`` of every field, in order."""
    return [(f"`{k}`", _kind(f.kind), _value(f.default), _allowed(f), "yes" if f.sweep else "no",
             _cell(f.doc)) for k, f in fields.items()]


def _table(rows: list[tuple[str, ...]], header: tuple[str, ...]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


_HEADER = ("key", "type", "default", "allowed", "sweep", "meaning")


def _engine_docs() -> dict[str, str]:
    """The attribute docstrings of :class:`NetworkConditions`, by field name."""
    tree = ast.parse(inspect.getsource(NetworkConditions))
    body = tree.body[0].body  # type: ignore[attr-defined]
    docs = {}
    for stmt, nxt in zip(body, body[1:], strict=False):
        if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                and isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant)):
            docs[stmt.target.id] = str(nxt.value.value)
    return docs


_ENGINE_KINDS = {"float": "number", "int": "integer", "bool": "boolean", "str": "string",
                 "Mapping": "table", "tuple": "list of tables", "LatencySpec": "table or number"}


def _engine_rows() -> list[tuple[str, ...]]:
    docs = _engine_docs()
    rows = []
    for f in dataclasses.fields(NetworkConditions):
        if f.default is not dataclasses.MISSING:
            default = _value(f.default)
        else:
            made = f.default_factory()  # type: ignore[misc]
            default = "{}" if isinstance(made, Mapping) else "constant 0"
        kind = _ENGINE_KINDS.get(str(f.type).split("[")[0].strip(), str(f.type))
        rows.append((f"`{f.name}`", kind, default, "", "no", _cell(docs.get(f.name, ""))))
    return rows


def _choices(values: tuple[str, ...]) -> str:
    return " \\| ".join(_value(v) for v in values)


_CASE = {f.name: f.default for f in dataclasses.fields(ndp.GraphCase)
         if f.default is not dataclasses.MISSING}
_CONFIG = {f.name: f.default for f in dataclasses.fields(ndp.NetworkDpConfig)
           if f.default is not dataclasses.MISSING}

NETWORK_DP_KEYS: dict[str, tuple[str, str, str, str]] = {
    # key: (type, default, allowed, meaning); defaults are read from the parsed dataclasses
    "alpha": ("number", _value(_CONFIG["alpha"]), "> 1",
              "Renyi order of the exact divergence (column rdp) and of the published bounds"),
    "delta": ("number", _value(_CONFIG["delta"]), "(0, 1)",
              "delta at which the exact Gaussian-mechanism epsilon is reported"),
    "sensitivity": ("number", _value(_CONFIG["sensitivity"]), "> 0",
                    "Delta: how far the target's input may move (per round for per-round inputs)"),
    "graphs": ("array of tables", "*required*", "nonempty",
               "the graphs to audit, one [[network_dp.graphs]] table each (below)"),
    "protocol": ("string", _value(_CASE["protocol"]), _choices(ndp.network_dp_kinds()),
                 "the gossip protocol audited (dpgossip.protocols.gossip.linear, docs/network-dp.md): "
                 "gossip-average adds noise once, gossip-noisy every round, gossip-decor is DECOR's"),
    "inputs": ("string", '"once" for gossip-average, else "fixed"', _choices(INPUTS),
               "how the private input enters: once, the same every round, or a new one every round "
               "(gossip-average takes it once)"),
    "sigma": ("number", _value(_CASE["sigma"]), "> 0", "noise standard deviation of every agent"),
    "sigma_cor": ("number", "0", ">= 0; only with gossip-decor",
                  "standard deviation of DECOR's pairwise edge secrets (0: plain noisy gossip)"),
    "rounds": ("integer or string", _value(_CASE["rounds"]), f'>= 1 \\| "{ndp.MIXING_TIME}"',
               "T, the gossip rounds; mixing-time: Muffliato's rule for the graph"),
    "target": ("integer", _value(_CASE["target"]), ">= 0",
               "the fixed target whose leakage the observers of `observers` see"),
    "observer": ("integer", "-", ">= 0",
                 "instead of target: one observer, every other agent a target"),
    "observers": ("string, list or table", '"all"',
                  '"all" \\| [agents] \\| { per_distance, distances, seed }',
                  "observers of the fixed target: every other agent, a list, or at most per_distance "
                  "(default 1) drawn by numpy.random.default_rng(seed) (default seed 0) at each of "
                  "distances graph distances spread evenly over 1..max (default every distance)"),
    "muffliato_rounds": ("string", _value(_CASE["muffliato_rounds"]), _choices(ndp.MUFFLIATO_ROUNDS),
                         "the powers W^t Muffliato's per-message sum adds (gossip-average only): "
                         "messages, t = 0..T-1 (the messages audited); steps, t = 1..T (the authors' "
                         "code)"),
    "label": ("string", "the topology", "letters, digits, -, _, .",
              "names the graph's curve, rows and stored file; distinct across graphs"),
    "topology": ("string", "*required*", _choices(TOPOLOGIES), "the graph builder (dpgossip.topology)"),
    "agents": ("integer", "*required*", ">= 2", "number of agents (nodes)"),
    "seed": ("integer", _value(_CASE["seed"]), ">= 0", "seed of a random topology"),
    "params": ("table", "{}", "", "the builder's parameters (p, radius, rows, cols, ...)"),
    "mixing": ("string", _value(_CASE["mixing"]), _choices(MIXING_RULES), "the mixing rule of W"),
    "setting": ("string", _value(_CASE["setting"]), _choices(ndp.SETTINGS),
                "dpgossip: the project's builders; mfdl (erdos_renyi only): MFDL's sampler and "
                "W = (A + I) / rowsum"),
}
"""Every key of ``[network_dp]`` and ``[[network_dp.graphs]]``: type, default, allowed values, meaning.

The parser (:mod:`dpgossip.scenario.network_dp_config`) validates by hand rather than from
:class:`~dpgossip.settings.Field` entries; ``tests/scenario/test_reference.py`` checks that
these keys are exactly the parser's and that the defaults are the ones it fills."""


def network_dp_rows(keys: tuple[str, ...]) -> list[tuple[str, ...]]:
    """``(key, type, default, allowed, sweep, meaning)`` of the given network-DP keys, in order.

    Raises
    ------
    KeyError
        For a key the parser accepts but :data:`NETWORK_DP_KEYS` does not document.
    """
    rows = []
    for key in keys:
        kind, default, allowed, meaning = NETWORK_DP_KEYS[key]
        rows.append((f"`{key}`", kind, default, allowed, "no", _cell(meaning)))
    return rows


def _network_dp_lines() -> list[str]:
    section = tuple(k for k in ndp.SECTION_KEYS if k not in ndp.CASE_KEYS)
    graph = tuple(k for k in ndp.GRAPH_KEYS if k not in ndp.CASE_KEYS)
    return [
        f"## [{ndp.SECTION}]", "",
        "A scenario file with a `[network_dp]` table is a network-DP scenario "
        "(docs/network-dp-scenario.md): it audits the exact pairwise leakage of noisy gossip "
        "averaging on a list of graphs, beside the published bounds, and has no [data], [network], "
        "[protocol], [baseline], [privacy] or [sweep] table and no sweep axes. Its top level holds "
        "`name`, `description`, `[output]` (`dir`, `plots`) and `[network_dp]`, whose keys are:", "",
        *_table(network_dp_rows(section), _HEADER), "",
        "and the defaults of every graph, which a graph may override:", "",
        *_table(network_dp_rows(ndp.CASE_KEYS), _HEADER), "",
        "Exactly one of `target` and `observer` applies to a graph: a graph that sets `observer` "
        "audits one observer against every target.", "",
        f"### [[{ndp.SECTION}.graphs]]", "",
        "One table per graph: its own keys below, and any of the defaults above.", "",
        *_table(network_dp_rows(graph), _HEADER), "",
    ]


_DYNAMIC_TITLES = {
    "dynamic_gossip.graph": ("### [dynamic_gossip.graph]", "The one graph every mode runs on."),
    "[dynamic_gossip.modes]": ("### [[dynamic_gossip.modes]]", "One table per mode."),
    "schedule": ("### A mode's `schedule`", "Which schedule the mode samples "
                 "(dpgossip.topology.schedule_spec; `horizon` is refused: the scenario's applies)."),
    "conditions": ("### A mode's `conditions`", "How the engine runs the mode (dpgossip.engine.dynamic)."),
    "sessions, offline": ("### `sessions` and `offline`", "A session-length law "
                          "(dpgossip.topology.churn); the offline law defaults to the online one."),
}


def _dynamic_gossip_lines() -> list[str]:
    lines = ["## [dynamic_gossip]", "", f"{dgk.INTRO} The keys of `[dynamic_gossip]`:", "",
             *_table(dgk.key_rows("dynamic_gossip"), _HEADER), ""]
    for table, (title, doc) in _DYNAMIC_TITLES.items():
        lines += [title, "", doc, "", *_table(dgk.key_rows(table), _HEADER), ""]
    return lines


_KIND_HEADER = ("kind", "section", "home", "estimates", "guarantee")


def kind_rows() -> list[tuple[str, ...]]:
    """``(kind, section, home, estimates, guarantee)`` of every registered kind that runs as a
    scenario point (the values of ``protocol.kind``), in registry order."""
    return [(f"`{k.name}`", f"[{k.section}]" if k.section else "-", k.family, _cell(k.estimates),
             _cell(k.guarantee)) for k in kinds() if k.runs_points]


def _kind_lines() -> list[str]:
    return ["### protocol.kind", "",
            "The values of `protocol.kind`: every kind of the registry (`dpgossip protocols` lists "
            "them with their backends and views), and the section that holds each kind's own "
            "settings.", "", *_table(kind_rows(), _KIND_HEADER), ""]


def scenario_reference() -> str:
    """The Markdown key reference: every section, every key.

    Returns
    -------
    str
        The text of ``docs/scenarios.md``.
    """
    lines = [_INTRO]
    for name, fields in SCHEMA.items():
        rows = field_rows(fields)
        if name == "protocol":  # the allowed kinds are the registry's, checked by the field's check
            rows = [(*r[:3], _choices(tuple(k.name for k in kinds() if k.runs_points)), *r[4:])
                    if r[0] == "`kind`" else r for r in rows]
        lines += [f"## {'[' + name + ']' if name else 'Top level'}", "", _SECTION_DOCS.get(name, ""),
                  "", *_table(rows, _HEADER), ""]
        if name == "protocol":
            lines += _kind_lines()
    for name, entry in sorted(EXTRA_SECTIONS.items()):
        if entry.fields is None:
            continue
        top = {k: f for k, f in entry.fields.items() if "." not in k}
        lines += [f"## [{name}]", "", _cell(entry.doc), "", *_table(field_rows(top), _HEADER), ""]
        subs = sorted({k.split(".")[0] for k in entry.fields if "." in k})
        for sub in subs:
            inner = {k.split(".", 1)[1]: f for k, f in entry.fields.items()
                     if k.startswith(sub + ".")}
            lines += [f"### {name}.{sub}", "", *_table(field_rows(inner), _HEADER), ""]
    lines += ["## [engine]", "",
              "Network conditions of `backend = \"engine\"` (dpgossip.engine.NetworkConditions): "
              "latency, loss, bandwidth, retransmission, stragglers, crashes. Used only by the "
              "engine; none of them is a sweep axis.", "", *_table(_engine_rows(), _HEADER), ""]
    lines += ["## [sweep]", "",
              "Axes that vary together instead of forming a product.", "",
              *_table([(f"`{k}`", "list of lists of key paths", "[]", "", "no",
                        "each inner list names sweep axes of equal length that advance together, "
                        'e.g. [["baseline.epsilon", "privacy.calibrate.epsilon"]]')
                       for k in SWEEP_KEYS], _HEADER), ""]
    lines += _network_dp_lines()
    lines += _dynamic_gossip_lines()
    return "\n".join(lines).rstrip("\n") + "\n"


if __name__ == "__main__":  # pragma: no cover - the command line of the generator
    sys.stdout.write(scenario_reference())
