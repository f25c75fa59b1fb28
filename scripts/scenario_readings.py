"""The README's readings of the quickstart, consensus-sweep and topology-comparison scenarios, computed.

    python scripts/scenario_readings.py            # print the three readings (a few seconds)

Each function runs the sweep points its sentence quotes (with the scenario's own seed and repeats; a
point's results do not depend on which other points run, every point's repeat ``k`` uses the same seed)
into a temporary folder and returns the exact text the README prints.  The SLEMs come from the networks
the run stored (``networks/*.json``), through ``spectral_summary``.  tests/test_docs_scenario_readings.py
checks that the README prints these texts.
"""

from __future__ import annotations

import csv
import functools
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios"


@functools.cache
def _run(name: str, steps: tuple[int, ...] | None = None) -> tuple[list[dict[str, str]], dict[str, float]]:
    """The runs.csv rows of the scenario's points (only those with ``consensus_steps`` in ``steps`` when
    given), and the SLEM of each network it used."""
    from dpgossip.scenario import load_scenario, run_scenario
    from dpgossip.topology import make_network
    from dpgossip.topology.spectral import spectral_summary

    overrides = {} if steps is None else {"protocol.consensus_steps": list(steps)}
    scenario = load_scenario(SCENARIOS / f"{name}.toml").with_overrides(overrides)
    with tempfile.TemporaryDirectory(prefix=f"{name}-") as tmp:
        folder = run_scenario(scenario, Path(tmp) / "run", quiet=True)
        with open(folder / "runs.csv", newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        slem = {}
        for path in sorted((folder / "networks").glob("*.json")):
            network = make_network(str(path))
            slem[path.name.split("-")[0]] = spectral_summary(network.W).slem
    assert all(r["status"] == "ok" for r in rows), name
    return rows, slem


def _mean(rows: list[dict[str, str]], key: str, **where: str) -> float:
    values = [float(r[key]) for r in rows if all(r[k] == v for k, v in where.items())]
    return sum(values) / len(values)


def quickstart() -> str:
    """README, quickstart: D-DP-PM's and LDP's mean final error over the 20 repeats."""
    rows, _ = _run("quickstart")
    return (f"D-DP-PM's error `sin(u_1, q^(t))` falls to {_mean(rows, 'error'):.2f} after 10 iterations; "
            f"LDP at its budget label (epsilon = 5, delta = 0.008) stays at {_mean(rows, 'ldp_error'):.2f}.")


CONSENSUS_STEPS = (1, 13, 50)


def consensus() -> str:
    """README, consensus-sweep: the error floor at c = 1, 13, 50 and LDP's error."""
    rows, _ = _run("consensus-sweep", CONSENSUS_STEPS)
    at = [f"{_mean(rows, 'error', protocol_consensus_steps=str(c)):.2f} at c = {c}" for c in CONSENSUS_STEPS]
    return (f"so the error levels off at a floor set by c: on the 16-ring {', '.join(at)}, against "
            f"{_mean(rows, 'ldp_error'):.2f} for LDP at the budget label.")


def consensus_cell() -> str:
    """README, the shipped-scenario table: consensus-sweep's ring and its SLEM."""
    _, slem = _run("consensus-sweep", CONSENSUS_STEPS)
    return f"on a 16-agent ring (SLEM {slem['ring']:.3f})"


def topology() -> str:
    """README, topology-comparison: the error at c = 50 on each graph, with its SLEM."""
    rows, slem = _run("topology-comparison", (50,))
    names = {"grid": "grid", "random_geometric": "random geometric", "ring": "ring"}
    cells = []
    for i, (topo, label) in enumerate(names.items()):
        err = _mean(rows, "error", network_topology=topo)
        mantissa, exponent = f"{err:.0e}".split("e")
        s = f"SLEM {slem[topo]:.3f}" if i == 0 else f"{slem[topo]:.3f}"
        cells.append(f"{label} ({s}) {mantissa}e{int(exponent)}")
    return "at c = 50 the floor follows the mixing rate: " + ", ".join(cells) + "."


def main() -> int:
    print(quickstart())
    print(consensus(), consensus_cell())
    print(topology())
    return 0


if __name__ == "__main__":
    sys.exit(main())
