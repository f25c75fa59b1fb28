"""Sweep overhead: 500 small points with ``--workers 1`` and ``--workers 2``, side by side.

    python benchmarks/bench_sweep.py [--points 500] [--repeats 3]

The scenario (generated, written to a temporary folder): Wine on a 4-agent ring, ``T = 5``, ``c = 2``,
one repeat per point, ``protocol.sigma_q`` swept over ``--points`` values (so every point costs the
same). Each configuration is the command line ``dpgossip run ... -q --workers W`` in a fresh process
and a fresh results folder (wall time includes starting Python and importing the package, as a user
sees it), run in turn (interleaved), best of ``--repeats``:

* ``per-point`` -- the layout before batches, emulated: every point saved on its own (``fsync`` per
  point), and for ``--workers 2`` one point per task on two spawned workers (no own lane);
* ``batched`` -- the defaults (:mod:`dpgossip.scenario.batches`, chunks of
  :func:`dpgossip.scenario.execute.chunk_size`, this process as one lane).

Then ``fsync`` calls per point, counted in this process by wrapping ``os.fsync`` around
``run_scenario`` with ``workers=1`` (the parent is the only process that writes), for both layouts.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LAUNCH = """
import sys
from dpgossip import cli
from dpgossip.scenario import batches, execute
if sys.argv[1] == "per-point":
    batches.FLUSH_SECONDS = 0.0       # every point its own file, as before batches
    execute.CHUNK_SECONDS = 0.0       # one point per task
    execute.OWN_LANE = False          # --workers N spawns N workers
sys.exit(cli.main(sys.argv[2:]))
"""


def scenario_text(points: int) -> str:
    values = ", ".join(f"{0.01 * (i + 1):.2f}" for i in range(points))
    return f"""name = "bench-sweep"
seed = 1
repeats = 1
[data]
source = "wine"
[network]
topology = "ring"
agents = 4
[protocol]
iterations = 5
consensus_steps = 2
sigma_q = [{values}]
[output]
plots = false
"""


def run_cli(layout: str, toml: Path, out: Path, workers: int) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", LAUNCH, layout, "run", str(toml), "--out", str(out),
                    "-q", "--workers", str(workers)], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def count_fsyncs(layout: str, toml: Path, out: Path) -> int:
    from dpgossip.scenario import batches, load_scenario, run_scenario

    calls = [0]
    real = os.fsync

    def counting(fd: int) -> None:
        calls[0] += 1
        real(fd)

    saved = batches.FLUSH_SECONDS
    os.fsync = counting
    try:
        if layout == "per-point":
            batches.FLUSH_SECONDS = 0.0
        run_scenario(load_scenario(toml), out, quiet=True, workers=1)
    finally:
        os.fsync = real
        batches.FLUSH_SECONDS = saved
    return calls[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    configs = [(layout, w) for layout in ("per-point", "batched") for w in (1, 2)]
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as tmp:
        root = Path(tmp)
        toml = root / "sweep.toml"
        toml.write_text(scenario_text(args.points), encoding="utf-8")
        best = {c: float("inf") for c in configs}
        for r in range(args.repeats):
            for layout, w in configs:
                out = root / f"out-{layout}-{w}-{r}"
                best[(layout, w)] = min(best[(layout, w)], run_cli(layout, toml, out, w))
        print(f"{args.points} points of 4 agents; wall seconds of `dpgossip run`, best of "
              f"{args.repeats} (interleaved)")
        print(f"{'layout':<10} {'--workers 1':>12} {'--workers 2':>12} {'ratio 2/1':>10}")
        for layout in ("per-point", "batched"):
            one, two = best[(layout, 1)], best[(layout, 2)]
            print(f"{layout:<10} {one:>12.2f} {two:>12.2f} {two / one:>10.2f}")
        print(f"batched --workers 2 against per-point --workers 2: "
              f"{best[('batched', 2)] / best[('per-point', 2)]:.2f}")
        for layout in ("per-point", "batched"):
            n = count_fsyncs(layout, toml, root / f"fsync-{layout}")
            print(f"fsync calls ({layout}, --workers 1): {n} in all, {n / args.points:.3f} per point")


if __name__ == "__main__":
    main()
