"""Time and peak memory of `dpgossip topology` and `dpgossip run` (matrix backend) as the network grows.

Each measurement runs the CLI in a fresh child process (one BLAS thread) and reads its wall time and peak
resident memory (``ru_maxrss`` of ``resource.getrusage(RUSAGE_CHILDREN)``, measured in a wrapper process
per stage so that children do not mix). Topologies: ring, random geometric graph and Erdos-Renyi graph
(their default parameters: radius ``sqrt(2 ln m / (pi m))`` and ``p = 2 ln m / m``, mean degree about
``2 ln m``, which keeps the graphs connected; at mean degree 10 a 100,000-node sample is almost surely
disconnected). Synthetic data ``d = 20``, 5 rows per agent, ``T = 10``, ``c = 10``.

Usage::

    python benchmarks/bench_scale.py --sizes 1000 10000    # quick
    python benchmarks/bench_scale.py --million --csv docs/numbers/scale.csv --plot docs/img/scale.png

The second line is what produced ``docs/numbers/scale.csv`` and ``docs/img/scale.png`` (1e3, 1e4 and 1e5
agents on the three topologies and a 1e6-agent ring, both stages; one table, one row per case).

Each stage is a function ``stage_<name>(topology, m, workdir) -> list[str]`` returning the command line
to time; add engine or audit stages to ``STAGES``. Prints one row per (stage, topology, size), then the
fitted log-log exponent of time against agents per (stage, topology).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
TOPOLOGIES = ("ring", "random_geometric", "erdos_renyi")
ROWS_PER_AGENT, D, T, C = 5, 20, 10, 10
CLI = [sys.executable, "-c", "import sys; from dpgossip.cli import main; sys.exit(main(sys.argv[1:]))"]

_WRAPPER = r"""
import json, resource, subprocess, sys, time
t = time.perf_counter()
p = subprocess.run(sys.argv[2:], capture_output=True, text=True, timeout=float(sys.argv[1]))
wall = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(json.dumps({"wall": wall, "peak": peak, "rc": p.returncode, "err": p.stderr[-400:]}))
"""


def stage_topology(topology: str, m: int, workdir: Path) -> list[str]:
    """`dpgossip topology <name> --agents m`: build, validate, spectral summary, diameter bounds."""
    return [*CLI, "topology", topology, "--agents", str(m)]


def stage_run(topology: str, m: int, workdir: Path) -> list[str]:
    """`dpgossip run` of a one-point scenario with the matrix backend (TOML written to ``workdir``)."""
    toml = workdir / f"scale-{topology}-{m}.toml"
    toml.write_text(f"""name = "scale-{topology}-{m}"
seed = 1
repeats = 1
backend = "matrix"
[data]
source = "synthetic"
synthetic = {{ n = {ROWS_PER_AGENT * m}, d = {D}, spectrum = {{ kind = "geometric", ratio = 0.8 }} }}
[network]
topology = "{topology}"
agents = {m}
[protocol]
iterations = {T}
consensus_steps = {C}
[output]
plots = false
""", encoding="utf-8")
    return [*CLI, "run", str(toml), "--out", str(workdir / toml.stem), "-q", "--no-plots", "--force"]


STAGES: dict[str, Callable[[str, int, Path], list[str]]] = {"topology": stage_topology,
                                                           "run": stage_run}


def measure(cmd: list[str], timeout: float) -> dict[str, object]:
    """Wall time (s), peak RSS (bytes) and return code of ``cmd`` in a fresh wrapper process."""
    try:
        out = subprocess.run([sys.executable, "-c", _WRAPPER, str(timeout), *cmd], env=ENV,
                             capture_output=True, text=True, timeout=timeout + 30)
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (subprocess.TimeoutExpired, IndexError, json.JSONDecodeError):
        return {"wall": math.nan, "peak": math.nan, "rc": "timeout", "err": ""}


def exponent(ms: list[int], times: list[float]) -> float:
    """Least-squares slope of ``log t`` against ``log m`` (``nan`` with fewer than two finite points)."""
    pts = [(math.log(m), math.log(t)) for m, t in zip(ms, times, strict=True)
           if t == t and t > 0]
    if len(pts) < 2:
        return math.nan
    x, y = np.array(pts).T
    return float(np.polyfit(x, y, 1)[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--topologies", nargs="+", default=list(TOPOLOGIES))
    ap.add_argument("--stages", nargs="+", default=list(STAGES))
    ap.add_argument("--million", action="store_true", help="also a 1,000,000-agent ring")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per measurement")
    ap.add_argument("--plot", default=None, metavar="PNG")
    ap.add_argument("--csv", default=None, metavar="CSV", help="write the table here")
    ap.add_argument("--table", default=None, metavar="CSV",
                    help="only print the Markdown table of a stored CSV (docs/scale.md)")
    args = ap.parse_args()
    if args.table:
        print(markdown_table(read_csv(args.table)) + "\n\n" + target_table(read_csv(args.table)))
        return
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cases = [(s, t, m) for m in args.sizes for t in args.topologies for s in args.stages]
        if args.million:
            cases += [(s, "ring", 1_000_000) for s in args.stages]
        print(f"{'stage':<9} {'topology':<17} {'agents':>8} {'time s':>8} {'peak MiB':>9}  status")
        for stage, topo, m in cases:
            r = measure(STAGES[stage](topo, m, Path(tmp)), args.timeout)
            rows.append({"stage": stage, "topology": topo, "agents": m, **r})
            status = "ok" if r["rc"] == 0 else f"rc={r['rc']} {str(r['err']).strip()[-160:]}"
            print(f"{stage:<9} {topo:<17} {m:>8} {r['wall']:>8.2f} {r['peak'] / 2**20:>9.0f}  "
                  f"{status}", flush=True)
    print("\nlog-log exponent of time against agents:")
    for stage in args.stages:
        for topo in args.topologies:
            sel = [r for r in rows if r["stage"] == stage and r["topology"] == topo
                   and r["rc"] == 0]
            k = exponent([r["agents"] for r in sel], [r["wall"] for r in sel])
            print(f"  {stage:<9} {topo:<17} {k:.2f}")
    if args.csv:
        write_csv(rows, args.csv)
    if args.plot:
        plot(rows, args.plot)


def read_csv(path: str | Path) -> list[dict[str, str]]:
    """The rows :func:`write_csv` wrote."""
    import csv

    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def markdown_table(rows: list[dict[str, str]]) -> str:
    """The table docs/scale.md prints: one line per (agents, topology), both stages side by side
    (wall s / peak MB, or the failure)."""
    cases: dict[tuple[int, str], dict[str, str]] = {}
    for r in rows:
        cell = f"{r['wall_s']} s / {r['peak_mb']} MB" if r["status"] == "ok" else r["status"]
        cases.setdefault((int(r["agents"]), r["topology"]), {})[r["stage"]] = cell
    lines = ["| agents | topology | `dpgossip topology` | `dpgossip run` (matrix) |",
             "|---:|---|---:|---:|"]
    for (m, topo), cells in sorted(cases.items()):
        lines.append(f"| {m:,} | {topo} | {cells.get('topology', '-')} | {cells.get('run', '-')} |")
    return "\n".join(lines)


TARGETS = {100_000: (60.0, 2000.0), 1_000_000: (300.0, 8000.0)}
"""The scale targets by agents: (wall s, peak MB); at 10^6 agents only the ring run is targeted."""


def target_table(rows: list[dict[str, str]]) -> str:
    """Each targeted case of the CSV against its limits in :data:`TARGETS` (docs/scale.md)."""
    lines = ["| case | limit | measured | met |", "|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (int(r["agents"]), r["topology"], r["stage"])):
        m = int(r["agents"])
        if m not in TARGETS or (m == 1_000_000 and r["stage"] != "run"):
            continue
        wall, peak = TARGETS[m]
        ok = r["status"] == "ok"
        met = ok and float(r["wall_s"]) <= wall and float(r["peak_mb"]) <= peak
        got = f"{r['wall_s']} s, {r['peak_mb']} MB" if ok else r["status"]
        lines.append(f"| `{r['stage']}` {r['topology']} {m:,} | {wall:.0f} s, {peak:.0f} MB | "
                     f"{got} | {'yes' if met else '**no**'} |")
    return "\n".join(lines)


def write_csv(rows: list[dict], path: str) -> None:
    """One row per case: agents, topology, stage, wall s, peak MB (10^6 bytes), status."""
    lines = ["agents,topology,stage,wall_s,peak_mb,status"]
    for r in rows:
        ok = r["rc"] == 0
        status = "ok" if ok else ("timeout" if r["rc"] == "timeout" else f"rc={r['rc']}")
        wall = f"{r['wall']:.1f}" if ok else ""
        peak = f"{r['peak'] / 1e6:.0f}" if ok else ""
        lines.append(f"{r['agents']},{r['topology']},{r['stage']},{wall},{peak},{status}")
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


def plot(rows: list[dict], path: str) -> None:
    """Log-log plot of time against agents, one line per (stage, topology)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for key in sorted({(r["stage"], r["topology"]) for r in rows}):
        sel = [r for r in rows if (r["stage"], r["topology"]) == key and r["rc"] == 0]
        if sel:
            style = "o-" if key[0] == "run" else "s--"
            for ax, field, scale in ((axes[0], "wall", 1.0), (axes[1], "peak", 1e-6)):
                ax.loglog([r["agents"] for r in sel], [r[field] * scale for r in sel], style,
                          label=" ".join(key))
    axes[0].axhline(60, color="grey", lw=0.8, ls=":")
    axes[1].axhline(2000, color="grey", lw=0.8, ls=":")
    for ax, label in ((axes[0], "wall time (s)"), (axes[1], "peak RSS (MB)")):
        ax.set_xlabel("agents")
        ax.set_ylabel(label)
    axes[0].legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")
