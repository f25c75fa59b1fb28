"""The numbers of docs/dynamic-scenarios.md, from results folders of the two dynamic-gossip scenarios.

    dpgossip run scenarios/dynamic-gossip-modes.toml --out results/dynamic-gossip-modes
    dpgossip run scenarios/dynamic-gossip-churn.toml --out results/dynamic-gossip-churn
    python scripts/dynamic_scenarios_numbers.py results/dynamic-gossip-modes results/dynamic-gossip-churn \
        --seconds 9.98 34.83 --cpu 6.13 21.01 --load 5.45 5.07 5.07 4.23
        # writes docs/numbers/dynamic-scenarios.json and the plots under docs/img/, prints the tables

    python scripts/dynamic_scenarios_numbers.py --print   # the tables of the stored numbers
    python scripts/dynamic_scenarios_numbers.py --check   # rerun both scenarios (about a minute), compare

The stored numbers are read from the scenarios' tables (``consensus_time.csv``, ``leakage.csv``,
``pairs.csv``) by :func:`summarise`: the mean consensus error of every mode at a few times and the
messages delivered by then, the leakage spread per graph distance, and, for the churn scenario, how
many (observer, target) pairs reach the local-DP level over the sampled runs.
``tests/test_docs_dynamic_scenarios.py`` checks that the page prints exactly these tables, recomputes
the synchronous mode with the current code, and (slow) reruns both scenarios.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NUMBERS = ROOT / "docs" / "numbers" / "dynamic-scenarios.json"
SCENARIOS = {"modes": ROOT / "scenarios" / "dynamic-gossip-modes.toml",
             "churn": ROOT / "scenarios" / "dynamic-gossip-churn.toml"}
TIMES = {"modes": (2.0, 5.0, 10.0), "churn": (50.0, 150.0, 300.0)}
"""The times of the error tables (the last is the horizon)."""
DISTANCES = {"modes": None, "churn": (1, 2, 3, 4, 6, 8, 10)}
"""The distances of the leakage tables (``None``: every one)."""
LOCAL = 0.999
"""A pair whose largest sampled Renyi divergence is above ``LOCAL`` times ``alpha Delta^2 / (2 sigma^2)``
counts as reaching the local-DP level (the observer recovers the target's noisy value)."""
PLOTS = ("consensus-time.png", "consensus-messages.png", "leakage-distance.png")


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _f(value: str) -> float:
    return float(value)


def _errors(folder: Path, times: tuple[float, ...]) -> list[dict[str, object]]:
    rows = _rows(folder / "consensus_time.csv")
    out = []
    for mode in dict.fromkeys(r["mode"] for r in rows):
        at = {_f(r["time"]): r for r in rows if r["mode"] == mode}
        last = at[times[-1]]
        out.append({"mode": mode, "runs": int(last["runs"]), "messages": _f(last["messages_mean"]),
                    "error": [_f(at[t]["error_mean"]) for t in times],
                    "disagreement": _f(last["disagreement_mean"])})
    return out


def _leakage(folder: Path, distances: tuple[int, ...] | None) -> list[dict[str, object]]:
    keys = ("pairs", "schedules", "rdp_mean", "rdp_median", "rdp_q90", "rdp_max", "mixture_rdp")
    return [{"mode": r["mode"], "distance": int(r["distance"]),
             **{k: (int(r[k]) if k in ("pairs", "schedules") else _f(r[k])) for k in keys}}
            for r in _rows(folder / "leakage.csv")
            if distances is None or int(r["distance"]) in distances]


def _pairs(folder: Path, local: float) -> list[dict[str, object]]:
    rows = _rows(folder / "pairs.csv")
    out = []
    for mode in dict.fromkeys(r["mode"] for r in rows):
        mine = [r for r in rows if r["mode"] == mode]
        out.append({"mode": mode, "pairs": len(mine),
                    "at_local": sum(_f(r["rdp_max"]) >= LOCAL * local for r in mine),
                    "mean_at_local": sum(_f(r["rdp_mean"]) >= LOCAL * local for r in mine),
                    "zero": sum(_f(r["rdp_max"]) == 0.0 for r in mine)})
    return out


def summarise(modes: Path, churn: Path) -> dict[str, object]:
    """The stored numbers (module docstring) of the two results folders."""
    out: dict[str, object] = {}
    for name, folder in (("modes", Path(modes)), ("churn", Path(churn))):
        config = json.loads((folder / "config.resolved.json").read_text(encoding="utf-8"))
        local = config["alpha"] * config["sensitivity"] ** 2 / (2 * config["sigma"] ** 2)
        out[name] = {"errors": _errors(folder, TIMES[name]),
                     "leakage": _leakage(folder, DISTANCES[name]), "local": local}
        if name == "churn":
            out[name]["pairs"] = _pairs(folder, local)
    return out


def _g(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.4g}"


def error_table(part: dict, times: tuple[float, ...]) -> str:
    """Mean error at each time, messages by the horizon, disagreement at the horizon."""
    head = (f"| mode | runs | messages by t = {times[-1]:g} | "
            + " | ".join(f"error at t = {t:g}" for t in times) + f" | disagreement at t = {times[-1]:g} |")
    lines = [head, "|" + "---|" * (4 + len(times))]
    for r in part["errors"]:
        lines.append(f"| {r['mode']} | {r['runs']} | {r['messages']:.1f} | "
                     + " | ".join(_g(e) for e in r["error"]) + f" | {_g(r['disagreement'])} |")
    return "\n".join(lines)


def leakage_table(part: dict) -> str:
    """Per mode and distance: the spread of the exact known-schedule leakage."""
    lines = ["| mode | distance | pairs | schedules | mean | median | q90 | max (sampled) | mixture |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in part["leakage"]:
        lines.append(f"| {r['mode']} | {r['distance']} | {r['pairs']} | {r['schedules']} | "
                     f"{_g(r['rdp_mean'])} | {_g(r['rdp_median'])} | {_g(r['rdp_q90'])} | "
                     f"{_g(r['rdp_max'])} | {_g(r['mixture_rdp'])} |")
    return "\n".join(lines)


def pairs_table(part: dict) -> str:
    """Per mode: pairs whose sampled maximum (mean) reaches the local-DP level, pairs never leaking."""
    lines = ["| mode | pairs | max at the local-DP level | mean at the local-DP level | max 0 |",
             "|---|---|---|---|---|"]
    for r in part["pairs"]:
        lines.append(f"| {r['mode']} | {r['pairs']} | {r['at_local']} | {r['mean_at_local']} | "
                     f"{r['zero']} |")
    return "\n".join(lines)


def tables(numbers: dict) -> dict[str, str]:
    """Every table the page prints, by name."""
    return {"modes-error": error_table(numbers["modes"], TIMES["modes"]),
            "modes-leakage": leakage_table(numbers["modes"]),
            "churn-error": error_table(numbers["churn"], TIMES["churn"]),
            "churn-leakage": leakage_table(numbers["churn"]),
            "churn-pairs": pairs_table(numbers["churn"])}


def run_text(numbers: dict) -> str:
    """The page's sentence on the measured run times (``numbers["run"]``)."""
    run = numbers["run"]
    parts = [f"`{SCENARIOS[name].name}` {run['seconds'][k]:.1f} s wall, {run['cpu'][k]:.1f} s CPU (load "
             f"{run['load'][2 * k]:.2f} to {run['load'][2 * k + 1]:.2f})"
             for k, name in enumerate(("modes", "churn"))]
    return ("Measured on this shared 2-core machine with `/usr/bin/time` (the 1-minute load average "
            f"before and after each run in brackets): {parts[0]};\n{parts[1]}.")


def read_numbers() -> dict:
    """The stored numbers."""
    return json.loads(NUMBERS.read_text(encoding="utf-8"))


def _close(a: object, b: object) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def _rerun(tmp: Path) -> dict:
    from dpgossip.scenario.dynamic_gossip import run_dynamic_gossip
    from dpgossip.scenario.dynamic_gossip_config import load_dynamic_gossip

    for name, path in SCENARIOS.items():
        run_dynamic_gossip(load_dynamic_gossip(path), tmp / name, quiet=True, force=True)
    return summarise(tmp / "modes", tmp / "churn")


def main(argv: list[str] | None = None) -> int:
    """The command line (module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folders", nargs="*", type=Path, help="results of the modes and churn scenarios")
    p.add_argument("--seconds", nargs=2, type=float, help="wall time of each run")
    p.add_argument("--cpu", nargs=2, type=float, help="CPU time (user + sys) of each run")
    p.add_argument("--load", nargs=4, type=float, help="1-minute load before and after each run")
    p.add_argument("--print", action="store_true", help="print the tables of the stored numbers")
    p.add_argument("--check", action="store_true", help="rerun both scenarios and compare")
    args = p.parse_args(argv)
    if args.check:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            same = _close(_rerun(Path(tmp)), {k: v for k, v in read_numbers().items() if k != "run"})
        print("the stored numbers are reproduced" if same else "the stored numbers DIFFER")
        return 0 if same else 1
    if not args.print:
        if len(args.folders) != 2:
            p.error("give the results folders of the modes and the churn scenario")
        numbers = summarise(*args.folders)
        if args.seconds:
            numbers["run"] = {"seconds": args.seconds, "cpu": args.cpu, "load": args.load}
        NUMBERS.write_text(json.dumps(numbers, indent=1) + "\n", encoding="utf-8")
        for name, folder in zip(("modes", "churn"), args.folders, strict=True):
            for plot in PLOTS:
                shutil.copyfile(folder / "plots" / plot, ROOT / "docs" / "img" / f"dynamic-{name}-{plot}")
    for name, text in tables(read_numbers()).items():
        print(f"<!-- {name} -->\n{text}\n")
    if "run" in read_numbers():
        print(run_text(read_numbers()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
