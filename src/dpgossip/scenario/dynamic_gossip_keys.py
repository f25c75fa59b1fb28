"""Every key of a dynamic-gossip scenario, documented: type, default, allowed values, meaning.

One table of rows per TOML table of the scenario (:data:`TABLES`: ``[dynamic_gossip]``,
``[dynamic_gossip.graph]``, ``[[dynamic_gossip.modes]]``, a mode's ``schedule`` and ``conditions``, a
session-length table).  The key reference (:mod:`dpgossip.scenario.reference`) renders them;
``tests/scenario/test_dynamic_gossip_keys.py`` checks that they are exactly the parser's keys
(:mod:`~dpgossip.scenario.dynamic_gossip_config`, and the schedule keys of
:mod:`~dpgossip.topology.schedule_spec`) and that the documented defaults are the ones it fills.
"""

from __future__ import annotations

import dataclasses

from dpgossip.scenario import dynamic_gossip_config as dgc
from dpgossip.topology.builders import TOPOLOGIES
from dpgossip.topology.churn import SESSION_KINDS
from dpgossip.topology.mixing import MIXING_RULES
from dpgossip.topology.schedule_spec import SAMPLER_KEYS, SCHEDULE_SAMPLERS, ScheduleSpec

__all__ = ["TABLES", "key_rows", "INTRO", "SCHEDULE_KEYS"]

_CONFIG = {f.name: f.default for f in dataclasses.fields(dgc.DynamicGossipConfig)
           if f.default is not dataclasses.MISSING}
_ARCS_DEFAULT = next(f.default for f in dataclasses.fields(ScheduleSpec) if f.name == "arcs")
_GRAPH = {f.name: f.default for f in dataclasses.fields(dgc.GraphSpec)
          if f.default is not dataclasses.MISSING}


def _show(v: object) -> str:
    if isinstance(v, str):
        return f'"{v}"'
    return repr(v)


def _users(key: str) -> str:
    return ", ".join(s for s, keys in SAMPLER_KEYS.items() if key in keys)


SCHEDULE_KEYS: tuple[str, ...] = ("sampler", "seed", "degree", "files", "stochastic", "rate", "arcs")
"""The keys of a mode's ``schedule`` table (``horizon`` is refused: the scenario's applies)."""

_SECTION = {
    "alpha": ("number", _show(_CONFIG["alpha"]), "> 1", "Renyi order of the rdp columns"),
    "delta": ("number", _show(_CONFIG["delta"]), "(0, 1)", "delta at which epsilon is reported"),
    "sensitivity": ("number", _show(_CONFIG["sensitivity"]), "> 0",
                    "Delta: how far one agent's input may move"),
    "sigma": ("number", _show(_CONFIG["sigma"]), "> 0",
              "noise of gossip-average: every agent starts from y = x + sigma z"),
    "horizon": ("number", _show(_CONFIG["horizon"]), "> 0",
                "simulated time every mode runs (one unit: a round at period 1, the mean gap of a "
                "rate-1 clock)"),
    "period": ("number", "1.0", "> 0", "default duration of a synchronous round (a mode may override)"),
    "samples": ("integer", _show(_CONFIG["samples"]), ">= 1",
                "runs (sampled schedules) of every random mode; a deterministic mode runs once"),
    "seed": ("integer", _show(_CONFIG["seed"]), ">= 0",
             "root of every stream: initial values, schedules, engine, churn"),
    "points": ("integer", _show(_CONFIG["points"]), ">= 2",
               "points of each consensus-error curve (times over [0, horizon], message counts)"),
    "observers": ("integer, list or string", "[0]", '"all" \\| agent \\| [agents]',
                  "the observers audited; every other agent is a target"),
    "muffliato": ("boolean", "false", "true \\| false",
                  "also charge each run's schedule with Muffliato's per-message accounting (the "
                  "charge columns of leakage.csv and pairs.csv); every mode on ideal links, not "
                  "push-sum"),
    "graph": ("table", "*required*", "", "[dynamic_gossip.graph]: the one graph of every mode (below)"),
    "modes": ("array of tables", "*required*", "nonempty", "one [[dynamic_gossip.modes]] table each "
              "(below)"),
}
_GRAPH_ROWS = {
    "topology": ("string", "*required*", " \\| ".join(f'"{t}"' for t in TOPOLOGIES),
                 "the graph builder (dpgossip.topology)"),
    "agents": ("integer", "*required*", ">= 2", "number of agents"),
    "seed": ("integer", _show(_GRAPH["seed"]), ">= 0", "seed of a random topology"),
    "params": ("table", "{}", "", "the builder's parameters (p, radius, rows, cols, ...)"),
    "mixing": ("string", _show(_GRAPH["mixing"]), " \\| ".join(f'"{r}"' for r in MIXING_RULES),
               "the mixing rule of W (the fixed sampler's matrix)"),
}
_MODE = {
    "label": ("string", "the sampler", "letters, digits, -, _, .",
              "names the mode's rows and stored file; distinct across modes"),
    "schedule": ("table", "*required*", "", "which schedule the mode samples (below)"),
    "conditions": ("table", "-", "", "run on the engine under drop, delays and churn (below); "
                   "without it the sampled schedule is applied on ideal links"),
    "period": ("number", "dynamic_gossip.period", "> 0", "duration of one round of a rounds mode"),
}
_SCHEDULE = {
    "sampler": ("string", "*required*", " \\| ".join(f'"{s}"' for s in SCHEDULE_SAMPLERS),
                "fixed: W every round; random-matchings, one-peer-exponential, random-regular, files: "
                "time-varying rounds; pairwise: randomized pairwise gossip (Poisson clocks); push-sum: "
                "push-sum rounds on directed arcs, A_ij = 1 / (outdeg(j) + 1), estimate s_i / w_i"),
    "seed": ("integer", "-", ">= 0", f"a fixed schedule for every run ({_users('seed')}); default: "
             "each run draws its own"),
    "degree": ("integer", "-", ">= 1", f"degree of every round's graph ({_users('degree')}; required)"),
    "files": ("list of strings", "-", "nonempty", f"one matrix per file, cycled ({_users('files')}; "
              "relative to the scenario file)"),
    "stochastic": ("string", '"doubly"', '"doubly" \\| "row"',
                   f"which sums are one ({_users('stochastic')})"),
    "rate": ("number", "1.0", "> 0", f"rate of every agent's clock ({_users('rate')})"),
    "arcs": ("string or list of [sender, receiver]", _show(_ARCS_DEFAULT),
             '"both" \\| "cycle" \\| [[j, i], ...]',
             f"the directed links ({_users('arcs')}): both: every graph edge both ways; cycle: "
             "i -> i + 1 mod m (each an edge of the graph); a list: those arcs, each an edge of the "
             "graph, no duplicate or self-loop; strongly connected"),
}
_CONDITIONS = {
    "drop": ("number", "0.0", "[0, 1)", "probability that a message is lost (no retransmission)"),
    "delay": ("number or [low, high]", "0.0", ">= 0; low <= high",
              "every message's delay, uniform on [low, high] (simulated time)"),
    "sessions": ("table", "-", "", "online session lengths (below); without it nobody leaves"),
    "offline": ("table", "the sessions table", "", "offline session lengths (below)"),
    "timeout": ("number", "2 high + 1", "> 0",
                "how long a pairwise initiator waits for its reply (a request older than timeout / 2 "
                "is refused)"),
}
_SESSION = {
    "law": ("string", "*required*", " \\| ".join(f'"{k}"' for k in SESSION_KINDS),
            "session lengths: lognormal (log L ~ N(mu, sigma^2)) or exponential"),
    "mu": ("number", "*required*", "lognormal", "mean of log L"),
    "sigma": ("number", "*required*", ">= 0; lognormal", "standard deviation of log L"),
    "mean": ("number", "*required*", "> 0; exponential", "mean session length"),
}

TABLES: dict[str, dict[str, tuple[str, str, str, str]]] = {
    dgc.SECTION: _SECTION, f"{dgc.SECTION}.graph": _GRAPH_ROWS, f"[{dgc.SECTION}.modes]": _MODE,
    "schedule": _SCHEDULE, "conditions": _CONDITIONS, "sessions, offline": _SESSION}
"""Each documented TOML table and its keys: ``(type, default, allowed, meaning)``."""

INTRO = ("A scenario file with a `[dynamic_gossip]` table is a dynamic-gossip scenario "
         "(docs/dynamic-scenarios.md): modes of gossip averaging on one graph with one noise level, "
         "their consensus error against time and messages and the exact leakage of noisy gossip "
         "averaging (noise once) to an observer who knows the realised schedule. It has no [data], "
         "[network], [protocol], [privacy] or [sweep] table and no sweep axes. Its top level holds "
         "`name`, `description`, `[output]` (`dir`, `plots`) and `[dynamic_gossip]`.")


def key_rows(table: str) -> list[tuple[str, str, str, str, str, str]]:
    """``(key, type, default, allowed, sweep, meaning)`` of one table of :data:`TABLES`."""
    return [(f"`{k}`", kind, default, allowed, "no", meaning)
            for k, (kind, default, allowed, meaning) in TABLES[table].items()]
