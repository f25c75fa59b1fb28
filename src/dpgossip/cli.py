"""The ``dpgossip`` command."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dpgossip.errors import ConfigError

__all__ = ["main"]


def _cmd_run(args: argparse.Namespace) -> int:
    """Run a scenario; exit 1 when a run's arithmetic broke down (status ``diverged`` or
    ``non-finite``: the files are written, those numbers are NaN), else 0."""
    from dpgossip.scenario import load_scenario, run_scenario
    from dpgossip.scenario.status import ARITHMETIC

    sc = load_scenario(args.scenario)
    out = run_scenario(
        sc,
        args.out,
        quiet=args.quiet,
        workers=args.workers,
        scheduler=args.scheduler,
        scheduler_timeout=args.scheduler_timeout,
        plots=False if args.no_plots else None,
        force=args.force,
    )
    print(f"results written to {out}")
    statuses = json.loads((Path(out) / "summary.json").read_text(encoding="utf-8"))["statuses"]
    total = sum(statuses.values())
    others = {s: n for s, n in statuses.items() if s != "ok"}
    if others:
        counts = ", ".join(f"{n} {s}" for s, n in others.items())
        print(f"dpgossip: warning: {sum(others.values())} of {total} runs are not ok ({counts}); "
              "see the status and status_reason columns of runs.csv", file=sys.stderr)
    return 1 if any(s in ARITHMETIC for s in statuses) else 0


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
    with _flags({"network.agents": "--agents", "network.mixing": "--mixing",
                 "network.topology": "NAME_OR_FILE"}):
        print(summary_text(make_network(args.name, **kwargs)))
    return 0


@contextlib.contextmanager
def _flags(names: dict[str, str]) -> Iterator[None]:
    """Messages of the library name scenario keys; on the command line the same values are flags:
    rename them in a ``ConfigError`` raised in the block (``network.agents`` -> ``--agents``)."""
    try:
        yield
    except ConfigError as exc:
        text = str(exc)
        for key, flag in names.items():
            text = re.sub(rf"(?<![\w.]){re.escape(key)}(?![\w])", flag, text)
            text = text.replace(f"{flag} = ", f"{flag} ") if flag.startswith("--") else text
        raise ConfigError(text) from None


# --- audit and calibrate ---------------------------------------------------------------------------
def _privacy_config(config: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """A point's configuration with a resolved ``[privacy]`` table (defaults when the scenario has
    none) and the command-line overrides (checked like the scenario's keys)."""
    from dpgossip.scenario.privacy_section import check_privacy

    given = {k: v for k, v in overrides.items() if v is not None}
    priv = dict(config.get("privacy") or check_privacy("privacy", {}))
    with _flags({f"privacy.{k}": f"--{k}" for k in given}):
        checked = check_privacy("privacy", given)
    priv.update({k: checked[k] for k in given})
    return {**config, "privacy": priv}


_SEARCH_HELP = ("worst-case search: quick, standard (default), thorough, a number of levels, or "
                "candidates (the older candidate search; overrides privacy.search)")
_CANDIDATES_HELP = "with --search candidates: candidate neighbours per target (overrides privacy.candidates)"


def _search_arg(value: str | None) -> str | int | None:
    """``--search``: a preset name as given, or a number of levels."""
    return int(value) if value is not None and value.strip().isdigit() else value


def _engine_note(sc: Any) -> None:
    """The audit models the ideal synchronous protocol: say so when the scenario has ``[engine]``."""
    if sc.config.get("engine"):
        print("dpgossip: note: the audit models the ideal synchronous protocol (every message "
              "delivered, no crash); the scenario's [engine] conditions (latency, loss, stragglers, "
              "crashes) are not part of it", file=sys.stderr)


def _audit_points(sc: Any) -> list[Any]:
    """The scenario's points, after the size checks (an audit holds dense view factors)."""
    from dpgossip.scenario.sizes import check_point_sizes, check_sweep_size

    check_sweep_size(sc.config)
    points = sc.points()
    check_point_sizes(points, sc.base, audit=True)
    return points


def _num(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.4g}"


def _by_hops(audit: Any, method: str) -> dict[int, tuple[float, float]]:
    """Worst and mean epsilon per hop distance."""
    groups: dict[int, list[float]] = {}
    for r in audit.results.values():
        groups.setdefault(r.hops, []).append(r.epsilon[method])
    return {h: (max(v), float(sum(v) / len(v))) for h, v in sorted(groups.items())}


def _worst_record(audit: Any, data: Any, w: Any, point: Any, priv: dict[str, Any],
                  note: str | None, calibrated: dict[str, Any]) -> dict[str, Any]:
    """``worst.json`` entry of one point: the worst pair, its neighbour and its numbers."""
    return {
        "point": point.index, "axes": dict(point.axes), "view": audit.view,
        "neighbours": priv["neighbours"], "delta": audit.delta, "candidates": audit.candidates,
        "observer": w.observer, "target": w.target, "hops": w.hops, "row": w.neighbour.row,
        "original": [float(v) for v in data.X[w.neighbour.row]],
        "replacement": [float(v) for v in w.neighbour.x_new], "direction": w.neighbour.label,
        "epsilon": dict(w.epsilon),
        "delta_at_epsilon": {m: dict(zip([f"{e:g}" for e in audit.epsilons], dl, strict=True))
                             for m, dl in w.delta.items()},
        "renyi2": w.renyi2, **({"note": note} if note else {}),
        **({"calibration": calibrated} if calibrated else {}),
    }


def _cmd_audit(args: argparse.Namespace) -> int:
    from dpgossip.scenario import load_scenario
    from dpgossip.scenario.assemble import axis_column
    from dpgossip.scenario.outdir import check_out_dir
    from dpgossip.scenario.privacy_section import (
        PER_INSTANCE,
        audit_config,
        exact_for_pair,
        leakage_rows,
        prepare_point,
        rank_note,
    )
    from dpgossip.scenario.problem import build_structure, resolve_problem
    from dpgossip.scenario.progress import axes_label
    from dpgossip.scenario.store import json_safe, write_csv, write_json

    sc = load_scenario(args.scenario)
    out = Path(args.out or Path("results") / f"{sc.name}-audit")
    check_out_dir(out, sc.name, flag="--out" if args.out else "the audit folder", force=args.force)
    points = _audit_points(sc)
    _engine_note(sc)
    overrides = {"candidates": args.candidates, "view": args.view, "search": _search_arg(args.search)}
    pairs: list[dict[str, Any]] = []
    leak: list[dict[str, Any]] = []
    worst_points: list[dict[str, Any]] = []
    matrices: list[tuple[int, str, Any]] = []
    first = _privacy_config(points[0].config, overrides)["privacy"]
    print(f"dpgossip audit: {PER_INSTANCE}.")
    effort = (f"{first['candidates']} candidate neighbours per target"
              if first["search"] == "candidates" else f"{first['search']} worst-case search")
    print(f"view {first['view']!r}, neighbours {first['neighbours']!r}, {effort}, methods "
          f"{', '.join(first['methods'])}; {len(points)} point(s)")
    for p in points:
        cfg = _privacy_config(p.config, overrides)
        structure = build_structure(cfg, sc.base)
        cfg, calibrated = prepare_point(cfg, structure)
        priv = cfg["privacy"]
        problem = resolve_problem(cfg, structure)
        audit = audit_config(cfg, problem)
        data, network, params = problem.data, problem.network, problem.params
        label = axes_label(p.axes)
        method = audit.methods[0]
        axes = {axis_column(a): v for a, v in p.axes.items()}
        note = rank_note(params.rank)
        head = f"point {p.index}" + (f" ({label})" if label else "")
        print(f"{head}: {data.m} agents, n = {data.n}, d = {data.d}, T = {params.iterations}, "
              f"c = {params.consensus_steps}, sigma_p = {_num(float(params.sigma_p[0, 0]))} .. "
              f"{_num(float(params.sigma_p[0, -1]))}, sigma_q = {_num(params.sigma_q)}")
        if calibrated:
            print(f"  calibrated noise scale {calibrated['noise_scale']:.6g} for epsilon "
                  f"{calibrated['target_epsilon']:g} at delta {calibrated['target_delta']:g}")
        if note:
            print(f"  note: {note}")
        extra = {"point": p.index, **axes, **calibrated}
        pairs.extend({**extra, **row} for row in audit.rows())
        leak.extend({**row, "point": p.index, "series": label} for row in leakage_rows(audit))
        w = audit.worst(method)
        eps = ", ".join(f"{m} {_num(v)}" for m, v in w.epsilon.items())
        print(f"  worst pair: observer {w.observer} -> target {w.target} ({w.hops} hop"
              f"{'s' if w.hops != 1 else ''}), row {w.neighbour.row} ({w.neighbour.label}): "
              f"epsilon at delta {audit.delta:g}: {eps}")
        record = _worst_record(audit, data, w, p, priv, note, calibrated)
        if "exact" not in audit.methods:  # the tight value of the worst pair, at least
            exact = exact_for_pair(data, network, params, audit, w.observer, w.target)
            record["exact_for_worst_neighbour"] = exact
            print(f"  exact epsilon of that neighbour: {_num(exact['epsilon'])} (the {method} "
                  "value above is an upper bound)")
        worst_points.append(record)
        mat_method = "exact" if "exact" in audit.methods else method
        matrices.append((p.index, mat_method, audit.matrix(mat_method)))
        hops = "; ".join(f"{h}: {_num(a)} / {_num(b)}" for h, (a, b) in _by_hops(audit, method).items())
        print(f"  {method} epsilon by hop distance (worst / mean): {hops}")
    write_csv(out / "pairs.csv", pairs)
    write_json(out / "worst.json", json_safe({
        "scenario": sc.name, "audit": PER_INSTANCE,
        "non_finite": 'infinite values are written as "inf" (JSON has no infinity)',
        **({"engine": "not modelled: the audit is of the ideal synchronous protocol"}
           if sc.config.get("engine") else {}),
        "points": worst_points}))
    files = [out / "pairs.csv", out / "worst.json"]
    for index, mat_method, M in matrices:
        name = "epsilon_matrix.csv" if len(matrices) == 1 else f"epsilon_matrix_p{index}.csv"
        write_csv(out / name, [{"observer": o, **{f"target_{j}": float(M[o, j])
                                                  for j in range(M.shape[1])}, "method": mat_method}
                               for o in range(M.shape[0])])
        files.append(out / name)
    if not args.no_plots:
        files.extend(_audit_plots(out, leak, len(matrices) > 1))
    for f in files:
        print(f)
    return 0


def _audit_plots(out: Path, rows: list[dict[str, Any]], several: bool) -> list[Path]:
    from dpgossip.report import PlotsUnavailable
    from dpgossip.report.leakage import plot_leakage_vs_hops, plot_pair_heatmap

    written: list[Path] = []
    try:
        by_point: dict[int, list[dict[str, Any]]] = {}
        for r in rows:
            by_point.setdefault(int(r["point"]), []).append(r)
        for index, rs in by_point.items():
            name = f"leakage_heatmap_p{index}.png" if several else "leakage_heatmap.png"
            label = rs[0]["series"]
            title = (f"epsilon ({rs[0]['method']}) at delta {rs[0]['delta']:g}, view "
                     f"{rs[0]['view']}" + (f" ({label})" if label else ""))
            finite = [float(r["epsilon"]) for r in rs if math.isfinite(float(r["epsilon"]))]
            log = bool(finite) and min(finite) > 0 and max(finite) / min(finite) > 100
            written.append(plot_pair_heatmap(rs, out / name, value_key="epsilon", title=title,
                                             log=log))
        finite = [float(r["epsilon"]) for r in rows if math.isfinite(float(r["epsilon"]))]
        log = bool(finite) and min(finite) > 0 and max(finite) / min(finite) > 100
        methods = ", ".join(sorted({str(r["method"]) for r in rows}))
        deltas = ", ".join(f"{d:g}" for d in sorted({float(r["delta"]) for r in rows}))
        written.append(plot_leakage_vs_hops(rows, out / "leakage_vs_hops.png", value_key="epsilon",
                                            log=log, title=f"epsilon ({methods}) at delta {deltas} "
                                            "per pair against hops (per instance)"))
    except PlotsUnavailable as exc:
        print(f"plots skipped: {exc}", file=sys.stderr)
    return written


def _cmd_calibrate(args: argparse.Namespace) -> int:
    import warnings

    from dpgossip.privacy.calibrate import (
        AuditSettings,
        FixedProtocol,
        calibrate_noise,
        check_target,
    )
    from dpgossip.scenario import load_scenario
    from dpgossip.scenario.outdir import check_out_file
    from dpgossip.scenario.privacy_section import PER_INSTANCE
    from dpgossip.scenario.problem import build_structure
    from dpgossip.scenario.progress import axes_label
    from dpgossip.scenario.store import json_safe, write_json

    if args.epsilon is not None and not (math.isfinite(args.epsilon) and args.epsilon > 0):
        raise ConfigError(f"--epsilon must be a finite number > 0, got {args.epsilon:g}")
    if args.delta is not None and not 0 < args.delta < 1:
        raise ConfigError(f"--delta must be in (0, 1), got {args.delta:g}")
    if args.out:
        check_out_file(args.out)
    sc = load_scenario(args.scenario)
    points = _audit_points(sc)
    _engine_note(sc)
    p = points[0]
    cfg = _privacy_config(p.config, {"candidates": args.candidates, "view": args.view,
                                     "search": _search_arg(args.search)})
    priv = cfg["privacy"]
    table = priv.get("calibrate") or {}
    epsilon = args.epsilon if args.epsilon is not None else table.get("epsilon")
    delta = args.delta if args.delta is not None else table.get("delta")
    if epsilon is None or delta is None:
        raise ConfigError("calibrate: give the target with --epsilon E --delta D (or a "
                          "[privacy] calibrate = { epsilon = E, delta = D } table in the scenario)")
    epsilon, delta = check_target(epsilon, delta, where="privacy.calibrate")
    family = args.family or table.get("family") or "geometric"
    method = args.method or table.get("method") or "exact"
    renames = {f"calibrate.{k}": (f"--{k}" if getattr(args, k) else f"privacy.calibrate.{k}")
               for k in ("family", "method")}
    proto = cfg["protocol"]
    values = table.get("values") or (proto.get("noise") or {}).get("values")
    if len(points) > 1:
        print(f"# the scenario has {len(points)} points; calibrating its first point "
              f"({axes_label(p.axes)}). Other points need their own calibration (or use "
              "[privacy] calibrate in the scenario, which calibrates every point)", file=sys.stderr)
    structure = build_structure(cfg, sc.base)
    network, data = structure.network, structure.data
    with warnings.catch_warnings(), _flags(renames):
        warnings.simplefilter("ignore", RuntimeWarning)  # the notes are printed below
        cal = calibrate_noise(
            data, network, iterations=proto["iterations"], consensus_steps=proto["consensus_steps"],
            epsilon=epsilon, delta=delta, family=family,
            base_values=values if family == "explicit" else None,
            audit=AuditSettings(view=priv["view"], neighbours=priv["neighbours"], method=method,
                                candidates=priv["candidates"], refine=priv["refine"],
                                ascent_steps=priv["ascent_steps"], seed=int(cfg["seed"]),
                                search=priv["search"]),
            protocol=FixedProtocol(alpha=proto["alpha"], sigma_q=proto.get("sigma_q"),
                                   rank=proto["rank"]),
        )
    status = cal.meaning if cal.met else f"DOES NOT MEET the target: {cal.meaning}"
    print(f"# dpgossip calibrate {sc.path}: the smallest {cal.family} noise scale whose audited "
          f"worst case meets epsilon <= {epsilon:g} at delta = {delta:g}")
    print(f"# view {cal.view}, neighbours {cal.neighbours}, method {cal.method}; {PER_INSTANCE}")
    if cal.met:
        print("[protocol]")
        print(cal.to_toml())
    else:
        print("# no noise line to paste: no noise scale tried meets the target (see below)")
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
    if args.out:
        record = {"scenario": sc.name, "file": str(sc.path), "point": p.index, "axes": p.axes,
                  "audit": PER_INSTANCE, **cal.to_dict()}
        write_json(Path(args.out), json_safe(json.loads(json.dumps(record, default=float))))
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
    r = sub.add_parser("run", help="run a scenario file")
    r.add_argument("scenario")
    r.add_argument("--out", default=None, help="results folder (default results/<name>)")
    r.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="local worker processes (default 1: in this process; 0: one per CPU)",
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
    rep = sub.add_parser("report", help="redraw the plots of a results folder (no recomputation)")
    rep.add_argument("results", help="results folder written by `dpgossip run`")
    rep.set_defaults(func=_cmd_report)
    t = sub.add_parser("topology", help="summarise a topology: nodes, edges, SLEM, rounds")
    t.add_argument("name", help="builder name (ring, grid, ...), shipped file name or path")
    t.add_argument("--agents", type=int, default=None)
    t.add_argument("--mixing", default=None)
    t.add_argument("--seed", type=int, default=0)
    t.set_defaults(func=_cmd_topology)
    a = sub.add_parser(
        "audit",
        help="audit every (observer, target) pair of each point (per instance) as [privacy] says",
    )
    a.add_argument("scenario")
    a.add_argument("--out", default=None, help="output folder (default results/<name>-audit)")
    a.add_argument("--search", default=None, metavar="S",
                   help=_SEARCH_HELP)
    a.add_argument("--candidates", type=int, default=None, metavar="N",
                   help=_CANDIDATES_HELP)
    a.add_argument("--view", default=None, help="overrides privacy.view")
    a.add_argument("--no-plots", action="store_true", help="do not draw the heatmap and hops plots")
    a.add_argument("--force", action="store_true",
                   help="write into a folder that holds another scenario's results (replacing them)")
    a.set_defaults(func=_cmd_audit)
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
    c.add_argument("--search", default=None, metavar="S",
                   help=_SEARCH_HELP)
    c.add_argument("--candidates", type=int, default=None, metavar="N",
                   help=_CANDIDATES_HELP)
    c.add_argument("--view", default=None, help="overrides privacy.view")
    c.add_argument("--out", default=None, metavar="FILE", help="also write the result as JSON")
    c.set_defaults(func=_cmd_calibrate)
    return p


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
            "recomputing them)") if args.command == "run" else ""
    print(f"dpgossip: interrupted{kept}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
