"""The ``dpgossip`` command."""

from __future__ import annotations

import argparse
import sys

from dpgossip.errors import ConfigError

__all__ = ["main"]


def _cmd_run(args: argparse.Namespace) -> int:
    from dpgossip.scenario import load_scenario, run_scenario

    sc = load_scenario(args.scenario)
    out = run_scenario(
        sc,
        args.out,
        quiet=args.quiet,
        workers=args.workers,
        scheduler=args.scheduler,
        scheduler_timeout=args.scheduler_timeout,
        plots=False if args.no_plots else None,
    )
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
    print(summary_text(make_network(args.name, **kwargs)))
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (sub-commands run, report, topology, and those other modules add)."""
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
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point: user mistakes print a message and exit 2, without a traceback."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except ConfigError as exc:
        print(f"dpgossip: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "dpgossip: interrupted; finished results are kept (run the same command again to "
            "finish without recomputing them)",
            file=sys.stderr,
        )
        return 130


if __name__ == "__main__":
    sys.exit(main())
