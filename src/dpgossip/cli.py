"""The ``dpgossip`` command."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpgossip.errors import ConfigError, renamed_error

if TYPE_CHECKING:
    from dpgossip.privacy.calibrate import Calibration
    from dpgossip.scenario.audit_point import AuditPoint
    from dpgossip.scenario.calibrate_command import CalibrationTarget
    from dpgossip.scenario.privacy_overrides import PrivacyOverrides

__all__ = ["main"]


def _cmd_run(args: argparse.Namespace) -> int:
    """Run a scenario and draw its plots (``[output] plots``, unless ``--no-plots``); exit 1 when a
    run's arithmetic broke down (status ``diverged`` or ``non-finite``: the files are written, those
    numbers are NaN), else 0."""
    from dpgossip.report import make_report
    from dpgossip.scenario import load_scenario, run_scenario
    from dpgossip.scenario.network_dp_config import is_network_dp_file
    from dpgossip.scenario.status import ARITHMETIC

    if is_network_dp_file(args.scenario):
        return _run_network_dp(args)
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


def _cmd_report(args: argparse.Namespace) -> int:
    from dpgossip.report import make_report

    files = make_report(args.results)
    for f in files:
        print(f)
    print(f"{len(files)} plots written to {args.results.rstrip('/')}/plots")
    return 0


def _cmd_topology(args: argparse.Namespace) -> int:
    from dpgossip.topology import make_network, summary_text

    kwargs = {"agents": args.agents, "seed": args.seed}
    if args.mixing:
        kwargs["mixing"] = args.mixing
    with _flags({"agents": "--agents", "mixing": "--mixing", "topology": "NAME_OR_FILE"}):
        print(summary_text(make_network(args.name, **kwargs)))
    return 0


@contextlib.contextmanager
def _flags(names: dict[str, str]) -> Iterator[None]:
    """Messages name library parameters (``agents``) or scenario keys (``privacy.candidates``); on
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
_SEARCH_HELP = ("worst-case search: quick, standard (default), thorough, shared (standard on two lead "
                "observers per target, their neighbours given to the others), a number of levels, or "
                "candidates (the older candidate search; overrides privacy.search)")
_CANDIDATES_HELP = "with --search candidates: candidate neighbours per target (overrides privacy.candidates)"


def _search_arg(value: str | None) -> str | int | None:
    """``--search``: a preset name as given, or a number of levels."""
    return int(value) if value is not None and value.strip().isdigit() else value


def _overrides(args: argparse.Namespace) -> PrivacyOverrides:
    """``--view``, ``--search`` and ``--candidates``, checked (messages name the flags)."""
    from dpgossip.scenario.privacy_overrides import PrivacyOverrides

    with _flags({f"privacy.{k}": f"--{k}" for k in ("candidates", "view", "search")}):
        return PrivacyOverrides(view=args.view, search=_search_arg(args.search),
                                candidates=args.candidates)


def _engine_note(engine: bool) -> None:
    """The audit models the ideal synchronous protocol: say so when the scenario has ``[engine]``."""
    if engine:
        print("dpgossip: note: the audit models the ideal synchronous protocol (every message "
              "delivered, no crash); the scenario's [engine] conditions (latency, loss, stragglers, "
              "crashes) are not part of it", file=sys.stderr)


def _num(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.4g}"


def _print_audit_point(point: AuditPoint) -> None:
    """What ``audit`` prints of one point (audited now or read back from its file)."""
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
        values = ", ".join(f"{m} {_num(v)}" for m, v in w.epsilon.items())
    print(f"  worst pair: observer {w.observer} -> target {w.target} ({w.hops} hop"
          f"{'s' if w.hops != 1 else ''}), row {w.row} ({w.direction}): "
          f"{point.quantity}: {values}")
    if w.exact is not None:
        exact = (w.exact.delta_at_epsilon[f"{point.rank_epsilon:g}"] if point.rank_by == "delta"
                 else w.exact.epsilon)
        print(f"  exact {point.quantity.split()[0]} of that neighbour: {_num(exact)} (the "
              f"{point.method} value above is an upper bound)")
    hops = "; ".join(f"{h.hops}: {_num(h.worst)} / {_num(h.mean)}" for h in point.by_hops)
    print(f"  {point.method} {point.quantity} by hop distance (worst / mean): {hops}", flush=True)


def _cmd_audit(args: argparse.Namespace) -> int:
    """Audit every point (resumably), write the tables, draw the plots, list the files."""
    from dpgossip.report import plot_audit
    from dpgossip.scenario import load_scenario
    from dpgossip.scenario.audit_command import plan_audit, run_audit
    from dpgossip.scenario.privacy_section import PER_INSTANCE

    sc = load_scenario(args.scenario)
    overrides = _overrides(args)
    plan = plan_audit(sc, args.out, overrides=overrides, force=args.force)
    _engine_note(plan.engine)
    priv = plan.privacy
    print(f"dpgossip audit: {PER_INSTANCE}.")
    print(f"view {priv['view']!r}, neighbours {priv['neighbours']!r}, {plan.effort()}, methods "
          f"{', '.join(priv['methods'])}; {len(plan.tasks)} point(s)", flush=True)
    run = run_audit(plan, on_point=_print_audit_point, quiet=args.quiet)
    files = list(run.files)
    if not args.no_plots:
        files.extend(_plots(lambda: plot_audit(run.out, run.leakage_rows(), len(run.points) > 1)))
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
    check = (f"re-audit with {cal.check_candidates} candidates per target"
             if cal.search == "candidates" else f"{cal.search} search at this scale")
    print(f"# achieved ({check}): epsilon = "
          f"{_num(cal.epsilon)} at delta = {delta:g}; delta = {cal.delta:.3g} at epsilon = "
          f"{epsilon:g}: {status}")
    print(f"# sigma_q = {cal.params.sigma_q:.6g}, sigma_p(1..T) = "
          + ", ".join(f"{v:.4g}" for v in cal.params.sigma_p[0])
          + f"; {len(cal.history)} audits, monotone in s: {'yes' if cal.monotone_ok else 'NO'}")
    print(f"# worst pair: observer {cal.worst['observer']} -> target {cal.worst['target']} "
          f"({cal.worst['hops']} hops), row {cal.worst['row']}")
    for note in cal.notes:
        print(f"# note: {note}")


def _cmd_calibrate(args: argparse.Namespace) -> int:
    """Calibrate the first point's noise; print the noise line to paste (comment lines around it)."""
    from dpgossip.scenario import load_scenario
    from dpgossip.scenario.calibrate_command import (
        calibrate_plan,
        plan_calibration,
        write_calibration,
    )
    from dpgossip.scenario.outdir import check_out_file
    from dpgossip.scenario.privacy_section import PER_INSTANCE
    from dpgossip.scenario.progress import axes_label

    target = _target(args)
    if args.out:
        check_out_file(args.out)
    sc = load_scenario(args.scenario)
    overrides = _overrides(args)
    renames = {f"privacy.calibrate.{k}": f"--{k}" for k in target.given()}
    with _flags(renames):
        plan = plan_calibration(sc, target=target, overrides=overrides)
    _engine_note(plan.engine)
    if plan.points > 1:
        print(f"# the scenario has {plan.points} points; calibrating its first point "
              f"({axes_label(plan.point.axes)}). Other points need their own calibration (or use "
              "[privacy] calibrate in the scenario, which calibrates every point)", file=sys.stderr)
    priv, target = plan.config["privacy"], plan.target
    epsilon, delta = target.epsilon, target.delta
    print(f"# dpgossip calibrate {sc.path}: the smallest {target.family} noise scale whose audited "
          f"worst case meets epsilon <= {epsilon:g} at delta = {delta:g}")
    print(f"# view {priv['view']}, neighbours {priv['neighbours']}, method {target.method}; "
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
    if args.out:
        write_calibration(args.out, plan, cal)
        print(f"# written to {args.out}")
    if not cal.met:
        print(f"dpgossip: the target epsilon = {epsilon:g} at delta = {delta:g} is not met"
              + (f": {cal.notes[-1]}" if cal.notes else ""), file=sys.stderr)
        return 1
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (sub-commands run, report, topology, audit, calibrate)."""
    p = argparse.ArgumentParser(prog="dpgossip", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    _add_run(sub)
    rep = sub.add_parser("report", help="redraw the plots of a results folder (no recomputation)")
    rep.add_argument("results", help="results folder written by `dpgossip run`")
    rep.set_defaults(func=_cmd_report)
    t = sub.add_parser("topology", help="summarise a topology: nodes, edges, SLEM, rounds")
    t.add_argument("name", help="builder name (ring, grid, ...), shipped file name or path")
    t.add_argument("--agents", type=int, default=None)
    t.add_argument("--mixing", default=None)
    t.add_argument("--seed", type=int, default=0)
    t.set_defaults(func=_cmd_topology)
    _add_audit(sub)
    _add_calibrate(sub)
    return p


def _add_run(sub: Any) -> None:
    r = sub.add_parser("run", help="run a scenario file")
    r.add_argument("scenario")
    r.add_argument("--out", default=None, help="results folder (default results/<name>)")
    r.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="local lanes: this process plus N-1 worker processes (default 1: this process "
        "only; 0: one per CPU)",
    )
    r.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help='run the points on a Dask cluster, e.g. tcp://host:8786 (pip install "dpgossip[dask]")',
    )
    r.add_argument(
        "--scheduler-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="give up when the Dask scheduler does not answer within this time (default 10)",
    )
    r.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    r.add_argument("--no-plots", action="store_true", help="do not draw plots ([output] plots)")
    r.add_argument("--force", action="store_true",
                   help="write into a folder that holds another scenario's results (replacing them)")
    r.set_defaults(func=_cmd_run)


def _add_privacy_flags(parser: argparse.ArgumentParser) -> None:
    """``--search``, ``--candidates`` and ``--view`` (overrides of ``[privacy]``)."""
    parser.add_argument("--search", default=None, metavar="S", help=_SEARCH_HELP)
    parser.add_argument("--candidates", type=int, default=None, metavar="N", help=_CANDIDATES_HELP)
    parser.add_argument("--view", default=None, help="overrides privacy.view")


def _add_audit(sub: Any) -> None:
    a = sub.add_parser(
        "audit",
        help="audit every (observer, target) pair of each point (per instance) as [privacy] says",
    )
    a.add_argument("scenario")
    a.add_argument("--out", default=None, help="output folder (default results/<name>-audit)")
    _add_privacy_flags(a)
    a.add_argument("--no-plots", action="store_true", help="do not draw the heatmap and hops plots")
    a.add_argument("-q", "--quiet", action="store_true",
                   help="no progress on stderr (the results are still printed)")
    a.add_argument("--force", action="store_true",
                   help="write into a folder that holds another scenario's results (replacing them)")
    a.set_defaults(func=_cmd_audit)


def _add_calibrate(sub: Any) -> None:
    c = sub.add_parser(
        "calibrate",
        help="smallest noise scale whose audited worst case meets (epsilon, delta)",
    )
    c.add_argument("scenario")
    c.add_argument("--epsilon", type=float, default=None, help="target epsilon (> 0)")
    c.add_argument("--delta", type=float, default=None, help="target delta, in (0, 1)")
    c.add_argument("--family", default=None,
                   help="noise schedule family: geometric (default), constant, explicit")
    c.add_argument("--method", default=None, help="exact (default) or rdp (faster, conservative)")
    _add_privacy_flags(c)
    c.add_argument("--out", default=None, metavar="FILE", help="also write the result as JSON")
    c.add_argument("-q", "--quiet", action="store_true",
                   help="no progress lines (the result is still printed)")
    c.set_defaults(func=_cmd_calibrate)


def main(argv: list[str] | None = None) -> int:
    """Entry point: user mistakes print one line and exit 2, without a traceback; so do files that
    cannot be read or written (``OSError``) and running out of memory, which exit 1. Ctrl-C and
    SIGTERM print a message and exit 130 and 143 (``128 + signal``)."""
    from dpgossip.interrupt import exit_code, received, sigterm_interrupts

    args = build_parser().parse_args(argv)
    try:
        with sigterm_interrupts():
            code = int(args.func(args) or 0)
        sig = received()  # a swallowed SIGTERM: the command finished, but was told to stop
        return code if sig is None else _interrupted(args, 128 + sig)
    except ConfigError as exc:
        print(f"dpgossip: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # an environment problem the checks before the run did not foresee
        name = exc.filename2 or exc.filename  # os.replace(tmp, target): name the target
        where = f"cannot write {str(name)!r}: " if exc.filename2 else f"{str(name)!r}: " if name else ""
        print(f"dpgossip: error: {where}{exc.strerror or exc}", file=sys.stderr)
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


def _interrupted(args: argparse.Namespace, code: int) -> int:
    kept = ("; finished results are kept (run the same command again to finish without "
            "recomputing them)") if args.command in ("run", "audit") else ""
    print(f"dpgossip: interrupted{kept}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
