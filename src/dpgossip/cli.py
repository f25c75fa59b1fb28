"""dpgossip: simulate and audit private decentralized PCA on gossip networks.

Runs the Decentralized Differentially Private Power Method (D-DP-PM) and the other protocols of a
scenario (a TOML file) on a matrix backend or a discrete-event network engine, audits the privacy of
every (observer, target) pair exactly, calibrates the noise to a privacy target, and draws the plots.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import math
import os
import re
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpgossip.errors import ConfigError, renamed_error
from dpgossip.rounding import format_upper

if TYPE_CHECKING:
    from dpgossip.protocols.ddppm.calibrate import Calibration
    from dpgossip.scenario.audit_point import AuditPoint, KindAuditPoint
    from dpgossip.scenario.calibrate_command import CalibrationTarget
    from dpgossip.scenario.privacy_overrides import PrivacyOverrides

__all__ = ["main"]


def _cmd_run(args: argparse.Namespace) -> int:
    """Run a scenario and draw its plots (``[output] plots``, unless ``--no-plots``); exit 1 when a
    run's arithmetic broke down (status ``diverged`` or ``non-finite``: the files are written, those
    numbers are NaN), else 0."""
    from dpgossip.report import make_report
    from dpgossip.scenario import load_scenario, run_scenario
    from dpgossip.scenario.dynamic_gossip_config import is_dynamic_gossip_file
    from dpgossip.scenario.network_dp_config import is_network_dp_file
    from dpgossip.scenario.status import ARITHMETIC

    if is_network_dp_file(args.scenario):
        return _run_network_dp(args)
    if is_dynamic_gossip_file(args.scenario):
        return _run_dynamic_gossip(args)
    sc = load_scenario(args.scenario)
    out = run_scenario(
        sc,
        args.out,
        quiet=args.quiet,
        workers=args.workers,
        scheduler=args.scheduler,
        scheduler_timeout=args.scheduler_timeout,
        force=args.force,
    )
    if sc.config["output"]["plots"] and not args.no_plots:
        _plots(lambda: make_report(out), quiet=args.quiet)
    print(f"results written to {out}")
    statuses = json.loads((Path(out) / "summary.json").read_text(encoding="utf-8"))["statuses"]
    total = sum(statuses.values())
    others = {s: n for s, n in statuses.items() if s != "ok"}
    if others:
        counts = ", ".join(f"{n} {s}" for s, n in others.items())
        print(f"dpgossip: warning: {sum(others.values())} of {total} runs are not ok ({counts}); "
              "see the status and status_reason columns of runs.csv", file=sys.stderr)
    return 1 if any(s in ARITHMETIC for s in statuses) else 0


def _run_network_dp(args: argparse.Namespace) -> int:
    """``dpgossip run`` of a network-DP scenario (a ``[network_dp]`` table): audit each graph, write
    ``leakage.csv`` and draw ``plots/network-dp.png`` (docs/network-dp-scenario.md); one process."""
    from dpgossip.report.network_dp import plot_results
    from dpgossip.scenario.network_dp import run_network_dp
    from dpgossip.scenario.network_dp_config import load_network_dp

    if args.workers != 1 or args.scheduler is not None:
        raise ConfigError("--workers and --scheduler: a network-DP scenario runs in this process "
                          "(one graph after the other); leave them out")
    config = load_network_dp(args.scenario)
    out = run_network_dp(config, args.out, quiet=args.quiet, force=args.force)
    if config.plots and not args.no_plots:
        _plots(lambda: [plot_results(out, alpha=config.alpha)], quiet=args.quiet)
    print(f"results written to {out}")
    return 0


def _run_dynamic_gossip(args: argparse.Namespace) -> int:
    """``dpgossip run`` of a dynamic-gossip scenario (a ``[dynamic_gossip]`` table): run each mode,
    write the consensus and leakage tables and draw the plots (docs/dynamic-scenarios.md); one
    process."""
    from dpgossip.report.dynamic_gossip import plot_results
    from dpgossip.scenario.dynamic_gossip import run_dynamic_gossip
    from dpgossip.scenario.dynamic_gossip_config import load_dynamic_gossip

    if args.workers != 1 or args.scheduler is not None:
        raise ConfigError("--workers and --scheduler: a dynamic-gossip scenario runs in this process "
                          "(one mode after the other); leave them out")
    config = load_dynamic_gossip(args.scenario)
    out = run_dynamic_gossip(config, args.out, quiet=args.quiet, force=args.force)
    if config.plots and not args.no_plots:
        _plots(lambda: plot_results(out, alpha=config.alpha), quiet=args.quiet)
    print(f"results written to {out}")
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from dpgossip.report import make_report
    from dpgossip.report.build import also_audited

    files = make_report(args.results)
    for f in files:
        print(f)
    print(f"{len(files)} plots written to {args.results.rstrip('/')}/plots")
    if also_audited(Path(args.results)):
        print(f"dpgossip: note: {args.results} also holds the results of dpgossip audit (worst.json, "
              "pairs.csv), which this report of the run does not draw; to draw them, audit into "
              "another folder (dpgossip audit SCENARIO --out OTHER) and report that one",
              file=sys.stderr)
    return 0


_PROTOCOL_COLUMNS = ("kind", "home", "backends", "section", "views", "guarantee", "estimates")
"""The columns of ``dpgossip protocols``, in order (keys of ``ProtocolKind.to_row()``)."""


def protocols_table(rows: list[dict[str, object]], width: int | None = None) -> str:
    """The rows of ``dpgossip protocols`` as aligned text: a header and one line per kind. With
    ``width`` (a terminal's columns) narrower than that table: one block per kind instead, its name
    then every other column on its own lines, wrapped to ``width``."""
    cells = [list(_PROTOCOL_COLUMNS)] + [[str(r[c]) for c in _PROTOCOL_COLUMNS] for r in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(_PROTOCOL_COLUMNS) - 1)]
    table = "\n".join("  ".join([*(c.ljust(w) for c, w in zip(line, widths, strict=False)), line[-1]])
                      .rstrip() for line in cells)
    if width is None or max(map(len, table.splitlines())) <= width:
        return table
    width = max(width, 40)
    blocks = []
    for line in cells[1:]:
        fields = [textwrap.fill(f"{name}: {value}", width, initial_indent="  ",
                                subsequent_indent="      ")
                  for name, value in zip(_PROTOCOL_COLUMNS[1:], line[1:], strict=True)]
        blocks.append("\n".join([line[0], *fields]))
    return "\n\n".join(blocks)


def _terminal_width() -> int | None:
    """The terminal's columns when stdout is one (``None`` when piped: full lines, for grep)."""
    import shutil

    try:
        return shutil.get_terminal_size().columns if sys.stdout.isatty() else None
    except (AttributeError, ValueError, OSError):
        return None


def _cmd_protocols(args: argparse.Namespace) -> int:
    import dpgossip.scenario.kind_sections  # noqa: F401  (a plug-in whose section clashes is skipped)
    from dpgossip.protocols.registry import kinds

    rows = [k.to_row() for k in kinds()]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(protocols_table(rows, _terminal_width()))
    return 0


def _cmd_topology(args: argparse.Namespace) -> int:
    from dpgossip.topology import make_network, summary_text

    kwargs: dict[str, Any] = {"agents": args.agents, "seed": args.seed}
    if args.mixing:
        kwargs["mixing"] = args.mixing
    if args.param:
        kwargs["params"] = _topology_params(args.param)
    try:
        with _flags({"agents": "--agents", "mixing": "--mixing", "topology": "NAME_OR_FILE",
                     "seed": "--seed", "params": "--param"}):
            print(summary_text(make_network(args.name, **kwargs)))
    except ConfigError as exc:  # --param.p -> --param p
        raise ConfigError(str(exc).replace("--param.", "--param "), field=exc.field) from None
    return 0


def _topology_params(items: list[str]) -> dict[str, int | float | str]:
    """``--param KEY=VALUE`` (repeated) as a mapping; values that read as numbers are numbers."""
    params: dict[str, int | float | str] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--param must be KEY=VALUE (e.g. --param p=0.3), got {item!r}",
                              field="params")
        value: int | float | str = text.strip()
        for kind in (int, float):
            try:
                value = kind(text)
                break
            except ValueError:
                continue
        params[key.strip()] = value
    return params


@contextlib.contextmanager
def _flags(names: dict[str, str]) -> Iterator[None]:
    """Messages name library parameters (``agents``) or scenario keys (``privacy.search``); on
    the command line the same values are flags: rename them in a ``ConfigError`` raised in the block
    (``agents`` -> ``--agents``, ``agents = 5`` -> ``--agents 5``). A parameter is renamed by the
    error's field (:func:`~dpgossip.errors.renamed_error`); a dotted scenario key wherever it appears."""
    try:
        yield
    except ConfigError as exc:
        renamed = renamed_error(exc, {k: v for k, v in names.items() if "." not in k})
        text = str(renamed)
        for key, flag in names.items():
            if "." in key:
                text = re.sub(rf"(?<![\w.]){re.escape(key)}(?![\w])", flag, text)
        for flag in names.values():
            text = text.replace(f"{flag} = ", f"{flag} ") if flag.startswith("--") else text
        if text == str(exc):
            raise
        raise ConfigError(text, field=renamed.field) from None


# --- audit and calibrate ---------------------------------------------------------------------------
def _search_help() -> str:
    """``--search``: the effort levels and the default, from the code."""
    from dpgossip.protocols.ddppm.search import DEFAULT_SEARCH, SEARCH_PRESETS

    return (f"effort of the worst-case search: {_names(SEARCH_PRESETS)} or a number of levels 1..8; "
            f"overrides privacy.search (default: the scenario's, itself {DEFAULT_SEARCH} when not "
            "set)")


def _search_arg(value: str | None) -> str | int | None:
    """``--search``: a preset name as given, or a number of levels."""
    return int(value) if value is not None and value.strip().isdigit() else value


def _overrides(args: argparse.Namespace) -> PrivacyOverrides:
    """``--view`` and ``--search``, checked (messages name the flags)."""
    from dpgossip.scenario.privacy_overrides import PrivacyOverrides

    with _flags({f"privacy.{k}": f"--{k}" for k in ("view", "search")}):
        return PrivacyOverrides(view=args.view, search=_search_arg(args.search))


def _engine_note(engine: bool) -> None:
    """The audit models the ideal synchronous protocol: say so when the scenario has ``[engine]``."""
    if engine:
        print("dpgossip: note: the audit models the ideal synchronous protocol (every message "
              "delivered, no crash); the scenario's [engine] conditions (latency, loss, stragglers, "
              "crashes) are not part of it", file=sys.stderr)


def _num(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.4g}"


def _upper(x: float) -> str:
    """An upper bound to four digits, rounded up (never printed below the bound)."""
    return format_upper(x, 4)


def _print_kind_point(point: KindAuditPoint) -> None:
    """What ``audit`` prints of a point of a kind with its own accountant and auditor."""
    c, size = point.columns, point.size
    head = f"point {point.index}" + (f" ({point.label})" if point.label else "")
    print(f"{head}: {point.kind}, {size['agents']} agents, n = {size['rows']}, d = "
          f"{size['columns']}, T = {size['iterations']}")
    print(f"  guaranteed epsilon {_upper(float(c['guaranteed_epsilon']))} at delta "
          f"{float(c['guarantee_delta']):g} ({c['guarantee_accountant']}; adjacency {c['adjacency']})")
    if "audited_epsilon" in c:
        view = c.get("audit_view") or c.get("audit_neighbours", "")
        print(f"  audited epsilon {_num(float(c['audited_epsilon']))} ({view}; repeat 0); exceeds "
              f"the guarantee: {'YES' if c['audit_exceeds_guarantee'] else 'no'}")
    if "audited_epsilon_beyond" in c:
        print(f"  beyond the guarantee: audited epsilon {_num(float(c['audited_epsilon_beyond']))} "
              f"({c['audit_beyond']})")
    others = [k for k in ("claimed_epsilon", "site_epsilon", "gdp_epsilon") if k in c]
    if others:  # each a guarantee (a claimed one, a site's, the exact GDP one): rounded up
        print("  also: " + ", ".join(f"{k} {_upper(float(c[k]))}" for k in others), flush=True)


def _print_audit_point(point: AuditPoint | KindAuditPoint) -> None:
    """What ``audit`` prints of one point (audited now or read back from its file)."""
    from dpgossip.protocols.ddppm.audit import value_kind
    from dpgossip.scenario.audit_point import KindAuditPoint

    if isinstance(point, KindAuditPoint):
        _print_kind_point(point)
        return
    pr, w = point.problem, point.worst
    head = f"point {point.index}" + (f" ({point.label})" if point.label else "")
    print(f"{head}: {pr.agents} agents, n = {pr.rows}, d = {pr.columns}, T = {pr.iterations}, "
          f"c = {pr.consensus_steps}, sigma_p = {_num(pr.sigma_p_first)} .. "
          f"{_num(pr.sigma_p_last)}, sigma_q = {_num(pr.sigma_q)}")
    cal = point.calibration
    if cal:
        print(f"  calibrated noise scale {cal['noise_scale']:.6g} for epsilon "
              f"{cal['target_epsilon']:g} at delta {cal['target_delta']:g}")
    if point.note:
        print(f"  note: {point.note}")
    if point.rank_by == "delta":
        e = f"{point.rank_epsilon:g}"
        values = ", ".join(f"{m} {_num(v[e])}" for m, v in w.delta_at_epsilon.items())
    else:
        values = ", ".join(f"{m} {'>= ' if w.capped and m == point.method else ''}{_num(v)}"
                           for m, v in w.epsilon.items())
    who = (f"worst pair: observer {w.observer} -> target {w.target} ({w.hops} hop"
           f"{'s' if w.hops != 1 else ''})" if point.per_observer
           else f"worst target: {w.target} (view {w.view}: no single observer)")
    print(f"  {who}, row {w.row} ({w.direction}): {point.quantity}: {values}")
    print(f"  {point.method} {'at least ' if w.capped else ''}{_num(point.worst_value)}: "
          f"{value_kind(point.method, w.capped)}")
    if w.epsilon_upper is not None and w.epsilon_upper_max is not None:
        print(f"  certified upper bound on epsilon at delta {w.delta:g} (every neighbour, every "
              f"observer): {_upper(w.epsilon_upper)} for target {w.target}, at most "
              f"{_upper(w.epsilon_upper_max)} over all targets")
    if w.exact is not None:
        exact = (w.exact.delta_at_epsilon[f"{point.rank_epsilon:g}"] if point.rank_by == "delta"
                 else w.exact.epsilon)
        print(f"  exact {point.quantity.split()[0]} of that neighbour: {_num(exact)} (the lower "
              f"estimate; the {point.method} value above is an upper bound of this neighbour's)")
    if point.by_hops:
        hops = "; ".join(f"{h.hops}: {_num(h.worst)} / {_num(h.mean)}" for h in point.by_hops)
        kind = ("lower estimates" if point.method == "exact" else
                f"{point.method} conversions of the neighbours found")
        capped = "; a pair at the epsilon_cap counts as the cap" if any(
            r.get("stopped_at_cap") for r in point.pairs) else ""
        print(f"  {point.method} {point.quantity} by hop distance (worst / mean, {kind}{capped}): "
              f"{hops}", flush=True)


def _no_network_dp(args: argparse.Namespace) -> None:
    """A network-DP or dynamic-gossip scenario is itself an audit, run by ``dpgossip run``: refuse it
    here."""
    from dpgossip.scenario.dynamic_gossip_config import is_dynamic_gossip_file
    from dpgossip.scenario.network_dp_config import is_network_dp_file

    if is_network_dp_file(args.scenario):
        raise ConfigError(f"{args.scenario}: a network-DP scenario ([network_dp]) is an audit of its "
                          f"own graphs: run it with `dpgossip run {args.scenario}`; dpgossip "
                          f"{args.command} reads protocol scenarios (protocol.kind)")
    if is_dynamic_gossip_file(args.scenario):
        raise ConfigError(f"{args.scenario}: a dynamic-gossip scenario ([dynamic_gossip]) runs and "
                          f"audits its own modes: run it with `dpgossip run {args.scenario}`; dpgossip "
                          f"{args.command} reads protocol scenarios (protocol.kind)")


def _cmd_audit(args: argparse.Namespace) -> int:
    """Audit every point (resumably), write the tables, draw the plots, list the files."""
    from dpgossip.protocols.registry import kind
    from dpgossip.report.audit import make_audit_report
    from dpgossip.scenario import load_scenario
    from dpgossip.scenario.audit_run import plan_audit, run_audit
    from dpgossip.scenario.privacy_section import PER_INSTANCE

    _no_network_dp(args)
    sc = load_scenario(args.scenario)
    overrides = _overrides(args)
    with _flags({f"privacy.{k}": f"--{k}" for k in ("view", "search")}):
        plan = plan_audit(sc, args.out, overrides=overrides, force=args.force)
    _engine_note(plan.engine)
    priv = plan.privacy
    print(f"dpgossip audit: {len(plan.tasks)} point(s) of protocol.kind {', '.join(plan.kinds)}")
    if priv:
        pair = ", ".join(k for k in plan.kinds if kind(k).pair_audit)
        print(f"{pair}: {PER_INSTANCE}; view {priv['view']!r}, neighbours {priv['neighbours']!r}, "
              f"{plan.effort()}, methods {', '.join(priv['methods'])}")
    if len(plan.pair_tasks) < len(plan.tasks):
        print("other kinds: their own accountant (guaranteed_epsilon) and auditor (audited_epsilon) "
              "on repeat 0, as dpgossip run reports them", flush=True)
    run = run_audit(plan, on_point=_print_audit_point, quiet=args.quiet, workers=args.workers,
                    scheduler=args.scheduler, scheduler_timeout=args.scheduler_timeout)
    files = list(run.files)
    if not args.no_plots:
        files.extend(_plots(lambda: make_audit_report(run.out)))
    for f in files:
        print(f)
    return 0


def _plots(draw: Callable[[], list[Path]], quiet: bool = False) -> list[Path]:
    """``draw()``; without matplotlib, a notice on stderr (unless ``quiet``) and no files."""
    from dpgossip.report import PlotsUnavailable

    try:
        return list(draw())
    except PlotsUnavailable as exc:
        if not quiet:
            print(f"plots skipped: {exc}", file=sys.stderr)
        return []


def _target(args: argparse.Namespace) -> CalibrationTarget:
    """``--epsilon``, ``--delta``, ``--family`` and ``--method``; the numbers checked here."""
    from dpgossip.scenario.calibrate_command import CalibrationTarget

    if args.epsilon is not None and not (math.isfinite(args.epsilon) and args.epsilon > 0):
        raise ConfigError(f"--epsilon must be a finite number > 0, got {args.epsilon:g}")
    if args.delta is not None and not 0 < args.delta < 1:
        raise ConfigError(f"--delta must be in (0, 1), got {args.delta:g}")
    return CalibrationTarget(epsilon=args.epsilon, delta=args.delta, family=args.family,
                             method=args.method)


def _print_calibration(cal: Calibration, epsilon: float, delta: float) -> None:
    """The achieved numbers of a calibration, its worst pair and its notes (comment lines)."""
    status = cal.meaning if cal.met else f"DOES NOT MEET the target: {cal.meaning}"
    if cal.bound == "certified upper bound":
        print(f"# achieved ({cal.bound}, the largest over the targets): epsilon <= "
              f"{_upper(cal.epsilon)} at delta = {delta:g}: {status}")
    else:
        print(f"# achieved ({cal.bound}, {cal.search} search at this scale): epsilon = "
              f"{_num(cal.epsilon)} at delta = {delta:g}; delta = {cal.delta:.3g} at epsilon = "
              f"{epsilon:g}: {status}")
        if not math.isnan(cal.epsilon_upper):
            print(f"# certified at this scale (upper bound, every neighbour of this X, every observer): "
                  f"epsilon <= {_upper(cal.epsilon_upper)} at delta = {delta:g}")
    print(f"# sigma_q = {cal.params.sigma_q:.6g}, sigma_p(1..T) = "
          + ", ".join(f"{v:.4g}" for v in cal.params.sigma_p[0])
          + f"; {len(cal.history)} audits, monotone in s: {'yes' if cal.monotone_ok else 'NO'}")
    from dpgossip.scenario.audit_point import OBSERVER_VIEWS

    if cal.bound == "certified upper bound":
        print(f"# largest bound: target {cal.worst['target']}, row {cal.worst['row']} (it holds for "
              "every observer)")
    elif cal.view in OBSERVER_VIEWS:
        hops = int(cal.worst["hops"])
        print(f"# worst pair: observer {cal.worst['observer']} -> target {cal.worst['target']} "
              f"({hops} hop{'s' if hops != 1 else ''}), row {cal.worst['row']}")
    else:
        print(f"# worst target: {cal.worst['target']} (view {cal.view}: no single observer), row "
              f"{cal.worst['row']}")
    for note in cal.notes:
        print(f"# note: {note}")


def _cmd_calibrate(args: argparse.Namespace) -> int:
    """Calibrate the first point's noise; print the noise line to paste (comment lines around it)."""
    from dataclasses import replace

    from dpgossip.scenario import load_scenario
    from dpgossip.scenario.calibrate_command import write_calibration
    from dpgossip.scenario.calibrate_run import calibrate_plan, plan_calibration
    from dpgossip.scenario.outdir import check_out_file
    from dpgossip.scenario.privacy_section import PER_INSTANCE
    from dpgossip.scenario.progress import axes_label

    target = given = _target(args)
    if args.out:
        check_out_file(args.out)
    _no_network_dp(args)
    sc = load_scenario(args.scenario)
    overrides = _overrides(args)
    renames = {f"privacy.calibrate.{k}": f"--{k}" for k in target.given()}
    renames.update({f"privacy.{k}": f"--{k}" for k in ("view", "search")})
    with _flags(renames):
        plan = plan_calibration(sc, target=target, overrides=overrides)
    _engine_note(plan.engine)
    if plan.points > 1:
        every = ("[privacy] calibrate in the scenario" if plan.pair_audit else
                 "epsilon = E in the kind's section ([ppm], [cape] or [floorfree])")
        print(f"# the scenario has {plan.points} points; calibrating its first point "
              f"({axes_label(plan.point.axes)}). Other points need their own calibration (or use "
              f"{every}, which calibrates every point)", file=sys.stderr)
    if not plan.pair_audit:
        return _calibrate_kind(args, plan)
    priv, target = plan.config["privacy"], plan.target
    epsilon, delta = target.epsilon, target.delta
    upper = target.method == "upper"
    print(f"# dpgossip calibrate {sc.path}: the smallest {target.family} noise scale whose "
          + ("certified upper bound (every neighbour of this X, every observer)" if upper
             else "audited worst case")
          + f" meets epsilon <= {epsilon:g} at delta = {delta:g}")
    print(f"# neighbours {priv['neighbours']}, method upper: a proven per-instance bound (about "
          "this X, not a DP guarantee over all datasets; docs/upper-bound.md)" if upper else
          f"# view {priv['view']}, neighbours {priv['neighbours']}, method {target.method}; "
          f"{PER_INSTANCE}", flush=True)
    say = None if args.quiet else (lambda text: print(f"# {text}", flush=True))
    done = calibrate_plan(plan, say)
    cal = done.calibration
    if say is not None:
        say(f"done in {done.seconds:.1f} s")
    if cal.met:
        print("[protocol]")
        print(cal.to_toml())
    else:
        print("# no noise line to paste: no noise scale tried meets the target (see below)")
    _print_calibration(cal, epsilon, delta)
    if not upper:  # the certified side beside it: cheap, no search
        if say is not None:
            say("the same target by the certified upper bound")
        with _flags(renames):
            upper_plan = plan_calibration(sc, target=replace(given, method="upper"),
                                          overrides=overrides)
        cal_up = calibrate_plan(upper_plan, None).calibration
        _print_side_by_side(cal, cal_up, target.family, epsilon, delta)
    if args.out:
        write_calibration(args.out, plan, cal)
        print(f"# written to {args.out}")
    if not cal.met:
        print(f"dpgossip: the target epsilon = {epsilon:g} at delta = {delta:g} is not met"
              + (f": {cal.notes[-1]}" if cal.notes else ""), file=sys.stderr)
        return 1
    return 0


def _print_side_by_side(lower: Calibration, upper: Calibration, family: str, epsilon: float,
                        delta: float) -> None:
    """The noise scales met by the lower estimate and by the certified upper bound, one line each,
    saying what each one means."""
    def scale(cal: Calibration, show: Callable[[float], str]) -> str:
        if cal.met:
            return f"scale {cal.scale:.6g}"
        return f"not met by any scale tried (the largest, {cal.scale:.6g}, gives {show(cal.epsilon)})"

    print(f"# side by side, the smallest {family} noise scale for epsilon <= {epsilon:g} at "
          f"delta = {delta:g}:")
    print(f"#   by the lower estimate (no neighbour the search found exceeds the target; NOT a DP "
          f"guarantee): {scale(lower, _num)}")
    print(f"#   by the certified upper bound (proven for every neighbour of this X and every "
          f"observer; about this X, not every dataset): {scale(upper, _upper)}")


def _calibrate_kind(args: argparse.Namespace, plan: Any) -> int:
    """``calibrate`` of a kind with its own accountant: the section's noise line, its guarantee."""
    from dpgossip.scenario.calibrate_command import write_calibration
    from dpgossip.scenario.calibrate_run import calibrate_plan

    print(f"# dpgossip calibrate {plan.file}: the {plan.kind} noise multiplier for epsilon = "
          f"{plan.epsilon:g} at delta = {plan.delta:g}, by the kind's own calibration (a DP "
          "guarantee, not a per-instance audit)", flush=True)
    say = None if args.quiet else (lambda text: print(f"# {text}", flush=True))
    cal = calibrate_plan(plan, say).calibration
    print(f"# in [{cal.section}], in place of its epsilon or noise_multiplier:")
    print(cal.to_toml())
    print(f"# calibration: {cal.calibration}; rounded up to 6 significant digits")
    print(f"# guarantee at that multiplier: epsilon = {_upper(cal.guaranteed_epsilon)} at delta = "
          f"{cal.delta:g} ({cal.accountant})")
    if args.out:
        write_calibration(args.out, plan, cal)
        print(f"# written to {args.out}")
    if not cal.met:
        print(f"dpgossip: the target epsilon = {cal.epsilon:g} is not met: the guarantee is "
              f"{format_upper(cal.guaranteed_epsilon, 6)}", file=sys.stderr)
        return 1
    return 0


# --- the parser ------------------------------------------------------------------------------------
_EPILOG = """\
examples:
  dpgossip run scenarios/quickstart.toml        run a scenario: results/quickstart/ and its plots
  dpgossip audit scenarios/quickstart.toml      audit every (observer, target) pair of it
  dpgossip calibrate scenarios/quickstart.toml --epsilon 1
                                                the noise scale that meets epsilon = 1
  dpgossip report results/quickstart            redraw the plots of a results folder
  dpgossip topology ring --agents 16            nodes, edges, SLEM and gossip rounds of a network
  dpgossip protocols                            the values of protocol.kind and what each brings

'dpgossip COMMAND --help' describes a command and its options. Exit status: 0 done, 1 a run's
arithmetic broke down or a target was not met, 2 a mistake in the input (the message names it),
130/143 interrupted."""


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose help texts that list the code's own registries (topology builders,
    mixing rules, views, ...) are computed only when help is shown: importing the registries takes
    seconds, which every other command line would pay for nothing."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        if kwargs.get("description") and "\n" not in kwargs["description"]:
            kwargs["description"] = textwrap.fill(kwargs["description"], 96)
        super().__init__(*args, **kwargs)
        self.lazy_help: list[tuple[Any, str, Callable[[], str]]] = []

    def lazy(self, target: Any, attribute: str, make: Callable[[], str]) -> None:
        """Set ``target.attribute`` to ``make()`` when help is first shown."""
        self.lazy_help.append((target, attribute, make))

    def format_help(self) -> str:
        """The help, after the lazy texts are filled in."""
        for target, attribute, make in self.lazy_help:
            text = make()
            setattr(target, attribute, text if attribute != "help" else text.replace("%", "%%"))
        self.lazy_help = []
        return super().format_help()


def _names(values: Any) -> str:
    return ", ".join(str(v) for v in values)


def _version() -> str:
    """The installed package's version (``importlib.metadata``; the source tree's own number when
    the package is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("dpgossip")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        from dpgossip import __version__

        return __version__


def _out_arg(value: str) -> str:
    """``--out``'s value, refused when it cannot name a folder or file (empty, a NUL byte, a name too
    long): an empty one used to fall back to results/<name> silently."""
    from dpgossip.scenario.outdir import check_path_text

    try:
        return check_path_text(value, "--out")
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--out ")) from None


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (sub-commands run, report, topology, audit, calibrate, protocols)."""
    p = _Parser(prog="dpgossip", description=__doc__, epilog=_EPILOG)
    p.add_argument("--version", action="version", version=f"dpgossip {_version()}",
                   help="print the version of dpgossip and exit")
    sub = p.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")
    _add_run(sub)
    rep = sub.add_parser("report", help="redraw the plots of a results folder (no recomputation)",
                         description="Redraw the plots of a results folder from its tables.")
    rep.add_argument("results", help="results folder written by `dpgossip run`, `dpgossip audit` or "
                     "a network-DP scenario")
    rep.set_defaults(func=_cmd_report)
    _add_topology(sub)
    _add_audit(sub)
    _add_calibrate(sub)
    pro = sub.add_parser("protocols", help="list the protocol kinds: what each estimates, its home, "
                         "backends, views, guarantee and section",
                         description="List every registered value of protocol.kind (the kinds of "
                         "dpgossip and of installed packages): what it estimates, its home, the "
                         "backends it runs on, the adversary views its audit covers, its guarantee "
                         "and the scenario section that holds its settings.")
    pro.add_argument("--json", action="store_true", help="print the list as JSON")
    pro.set_defaults(func=_cmd_protocols)
    return p


def _topology_epilog() -> str:
    """The builders with their parameters, the shipped files and the rules, from the code."""
    from dpgossip.topology import FILE_FORMATS, MIXING_RULES, SHIPPED_TOPOLOGIES, TOPOLOGY_PARAMS
    from dpgossip.topology.builders import RANDOM_TOPOLOGIES

    lines = ["generated topologies (--param keys; * depends on --seed):"]
    for name, keys in TOPOLOGY_PARAMS.items():
        star = "*" if name in RANDOM_TOPOLOGIES else " "
        lines.append(f"  {name}{star:<2}{' ' * max(0, 17 - len(name))}"
                     f"{_names(keys) if keys else '-'}")
    for text in ("", f"shipped files: {_names(SHIPPED_TOPOLOGIES)}",
                 f"topology files: {_names(f'{s} ({f})' for s, f in FILE_FORMATS.items())}",
                 f"mixing rules: {_names(MIXING_RULES)}; explicit or file: the file's own weights",
                 "", "example: dpgossip topology erdos_renyi --agents 50 --param p=0.2 --seed 3"):
        lines.extend(textwrap.wrap(text, 96, subsequent_indent="  ") or [""])
    return "\n".join(lines)


def _add_topology(sub: Any) -> None:
    t = sub.add_parser("topology", help="summarise a topology: nodes, edges, SLEM, rounds",
                       description="Build or load a network with its mixing matrix W and print "
                       "its nodes, edges, degrees, diameter, SLEM, spectral gap and the gossip "
                       "rounds to reach 1e-3, 1e-6 and 1e-9.")
    t.lazy(t, "epilog", _topology_epilog)
    name = t.add_argument("name", metavar="NAME_OR_FILE", help="")
    t.lazy(name, "help", _topology_name_help)
    t.add_argument("--agents", type=int, default=None, metavar="M",
                   help="number of agents, an integer >= 2; required for a generated topology "
                   "(grid and torus may give --param rows and cols instead); for a file, if given, "
                   "it must equal the file's node count (default: none)")
    mixing = t.add_argument("--mixing", default=None, metavar="RULE", help="")
    t.lazy(mixing, "help", _mixing_help)
    t.add_argument("--seed", type=int, default=0, metavar="N",
                   help="seed of the random topologies (marked * below), an integer >= 0 "
                   "(default 0)")
    t.add_argument("--param", action="append", default=None, metavar="KEY=VALUE",
                   help="a parameter of a generated topology (repeatable; keys per topology "
                   "below); default: the builder's own")
    t.set_defaults(func=_cmd_topology)


def _topology_name_help() -> str:
    from dpgossip.topology import SHIPPED_TOPOLOGIES, TOPOLOGIES
    from dpgossip.topology.io import FILE_FORMATS

    return (f"a generated topology ({_names(TOPOLOGIES)}), a shipped file "
            f"({_names(SHIPPED_TOPOLOGIES)}) or the path of a {'/'.join(FILE_FORMATS)} file")


def _mixing_help() -> str:
    from dpgossip.topology import EXPLICIT_MIXING, MIXING_RULES

    return (f"the rule that computes W: {_names(MIXING_RULES)}; or {_names(EXPLICIT_MIXING)} for "
            "a file's own weights (default: the file's own weights when it has them, else "
            "metropolis)")


def _add_run(sub: Any) -> None:
    r = sub.add_parser("run", help="run a scenario file",
                       description="Run every point and repeat of a scenario, write its results "
                       "folder (config.resolved.json, runs.csv, iterations.csv, points.csv, "
                       "summary.json) and draw its plots; an interrupted run resumes where it "
                       "stopped.")
    r.add_argument("scenario", help="the scenario, a TOML file (docs/scenarios.md)")
    r.add_argument("--out", default=None, metavar="FOLDER", type=_out_arg,
                   help="results folder (default: results/<scenario name>)")
    r.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="local lanes: this process plus N-1 worker processes (default 1: this process "
        "only; 0: one per CPU); a sweep of one point gives them to its pair audit's targets",
    )
    r.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help='run the points on a Dask cluster, e.g. tcp://host:8786 (pip install "dpgossip[dask]"); '
        "a sweep with fewer points than the cluster has threads spreads its pair audits' targets "
        "over it",
    )
    r.add_argument(
        "--scheduler-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="give up when the Dask scheduler does not answer within this time (default 10)",
    )
    r.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    r.add_argument("--no-plots", action="store_true",
                   help="do not draw the plots (default: draw them when [output] plots is true)")
    r.add_argument("--force", action="store_true",
                   help="write into a folder that holds another scenario's results (replacing them)")
    r.set_defaults(func=_cmd_run)


def _add_privacy_flags(parser: argparse.ArgumentParser) -> None:
    """``--search`` and ``--view`` (overrides of ``[privacy]``)."""
    search = parser.add_argument("--search", default=None, metavar="S", help="")
    parser.lazy(search, "help", _search_help)  # type: ignore[attr-defined]
    view = parser.add_argument("--view", default=None, metavar="VIEW", help="")
    parser.lazy(view, "help", _view_help)  # type: ignore[attr-defined]


def _view_help() -> str:
    """``--view``: the values and the default, from ``[privacy] view``'s own field."""
    from dpgossip.scenario.privacy_section import PRIVACY_FIELDS

    field = PRIVACY_FIELDS["view"]
    return (f"one of {_names(field.choices)}: {field.doc} (overrides privacy.view; default: the "
            f"scenario's, itself {field.default} when not set)")


def _add_audit(sub: Any) -> None:
    a = sub.add_parser(
        "audit",
        help="audit every (observer, target) pair of each point (per instance) as [privacy] says",
        description="Audit the privacy of every (observer, target) pair of each point of a "
        "scenario exactly (per instance: for this data and this network), as its [privacy] table "
        "says; write the tables and draw the heatmap and hops plots.",
    )
    a.add_argument("scenario", help="the scenario, a TOML file (docs/scenarios.md)")
    a.add_argument("--out", default=None, metavar="FOLDER", type=_out_arg,
                   help="output folder (default: results/<scenario name>-audit)")
    _add_privacy_flags(a)
    a.add_argument("--no-plots", action="store_true", help="do not draw the heatmap and hops plots")
    a.add_argument("--workers", type=int, default=1, metavar="N",
                   help="processes that search a point's targets (default 1; 0: one per CPU); "
                   "the results are the same bits for any N")
    a.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help='search each point\'s targets as tasks of a Dask cluster, e.g. '
                   'tcp://host:8786 (pip install "dpgossip[dask]"); the same bits as one process')
    a.add_argument("--scheduler-timeout", type=float, default=10.0, metavar="SECONDS",
                   help="give up when the Dask scheduler does not answer within this time (default 10)")
    a.add_argument("-q", "--quiet", action="store_true",
                   help="no progress on stderr (the results are still printed)")
    a.add_argument("--force", action="store_true",
                   help="write into a folder that holds another scenario's results (replacing them)")
    a.set_defaults(func=_cmd_audit)


def _add_calibrate(sub: Any) -> None:
    c = sub.add_parser(
        "calibrate",
        help="smallest noise scale whose audited worst case meets (epsilon, delta)",
        description="D-DP-PM: find the smallest noise scale of the scenario's first point whose "
        "audited worst case (a lower estimate, per instance) meets (epsilon, delta), and print the "
        "[protocol] noise line to paste. Other kinds: the noise multiplier of the kind's own "
        "accountant, printed for its own section ([ppm], [cape], [floorfree]); a kind without one is "
        "refused.",
    )
    c.add_argument("scenario", help="the scenario, a TOML file (docs/scenarios.md)")
    c.add_argument("--epsilon", type=float, default=None,
                   help="target epsilon, a number > 0 (default: the scenario's "
                   "privacy.calibrate.epsilon; required when the scenario has none)")
    c.add_argument("--delta", type=float, default=None,
                   help="target delta, in (0, 1) (default: privacy.calibrate.delta, else "
                   "privacy.delta, itself 1e-5)")
    family = c.add_argument("--family", default=None, metavar="FAMILY", help="")
    c.lazy(family, "help", lambda: _calibrate_help("family", "the noise schedule whose scale is "
                                                   "searched"))
    method = c.add_argument("--method", default=None, metavar="METHOD", help="")
    c.lazy(method, "help", lambda: _calibrate_help("method", "exact is the hockey-stick delta, "
                                                   "rdp a faster conservative bound"))
    _add_privacy_flags(c)
    c.add_argument("--out", default=None, metavar="FILE", type=_out_arg,
                   help="also write the result as JSON to FILE (default: print only)")
    c.add_argument("-q", "--quiet", action="store_true",
                   help="no progress lines (the result is still printed)")
    c.set_defaults(func=_cmd_calibrate)


def _calibrate_help(key: str, what: str) -> str:
    """``--family`` / ``--method``: the values and the default from ``[privacy.calibrate]``'s
    fields."""
    from dpgossip.scenario.privacy_section import PRIVACY_FIELDS

    field = PRIVACY_FIELDS[f"calibrate.{key}"]
    return (f"one of {_names(field.choices)}: {what} (overrides privacy.calibrate.{key}; default: "
            f"the scenario's, itself {field.default} when not set)")


def main(argv: list[str] | None = None) -> int:
    """Entry point: user mistakes print one line and exit 2, without a traceback; so do files that
    cannot be read or written (``OSError``) and running out of memory, which exit 1. Ctrl-C and
    SIGTERM print a message and exit 130 and 143 (``128 + signal``)."""
    from dpgossip.interrupt import exit_code, received, sigterm_interrupts

    args = build_parser().parse_args(argv)
    try:
        with sigterm_interrupts():
            code = int(args.func(args) or 0)
            sys.stdout.flush()  # a reader that went away (dpgossip protocols | head) shows here
        sig = received()  # a swallowed SIGTERM: the command finished, but was told to stop
        return code if sig is None else _interrupted(args, 128 + sig)
    except ConfigError as exc:
        print(f"dpgossip: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError as exc:
        if _reader_gone():  # `| head` read what it wanted: not an error
            return 0
        print(f"dpgossip: error: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # an environment problem the checks before the run did not foresee
        print(f"dpgossip: error: {_os_error_text(exc, getattr(args, 'out', None))}", file=sys.stderr)
        return 1
    except MemoryError:
        print("dpgossip: error: out of memory; make the scenario smaller (agents, rows, iterations, "
              "gossip rounds, repeats or sweep points)", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        return _interrupted(args, exit_code(exc))
    except Exception:
        # SIGTERM raised inside a simulator callback can be swallowed there and surface as another
        # error: still an interruption, not a crash
        sig = received()
        if sig is None:
            raise
        return _interrupted(args, 128 + sig)


_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
"""A write that failed for want of space: the disk, a quota or the largest file allowed."""


def _os_error_text(exc: OSError, out: object) -> str:
    """The one line of an ``OSError``: the file it names (of ``os.replace(tmp, target)`` the target);
    a write that failed for want of space without a file name names the output folder, says that the
    work finished before it is kept (every result is written atomically) and what to do."""
    name = exc.filename2 or exc.filename
    text = str(exc.strerror or exc)
    if name is None and exc.errno in _FULL:
        where = f"cannot write into {str(out)!r}" if out else "cannot write the results"
        return (f"{where}: {text}; free some space or choose another --out, then run the same "
                "command again (what was finished before is kept and resumed)")
    where = f"cannot write {str(name)!r}: " if exc.filename2 else f"{str(name)!r}: " if name else ""
    return f"{where}{text}"


def _reader_gone() -> bool:
    """Whether stdout is a pipe whose reader has closed it (``poll`` reports an error on it); if so,
    stdout is pointed at the null device, so that nothing more (nor Python's flush at exit) fails on
    it. A broken pipe elsewhere (a connection) is not this."""
    import select

    try:
        fd = sys.stdout.fileno()
        poll = select.poll()
        poll.register(fd, select.POLLOUT)
        gone = any(ev & select.POLLERR for _, ev in poll.poll(0))
    except (AttributeError, OSError, ValueError):
        return False
    if gone:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)
    return gone


def _interrupted(args: argparse.Namespace, code: int) -> int:
    kept = ("; finished results are kept (run the same command again to finish without "
            "recomputing them)") if args.command in ("run", "audit") else ""
    print(f"dpgossip: interrupted{kept}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
