"""The all-pairs network-DP numbers that docs/benchmarks.md, docs/network-dp.md and benchmarks/README.md
print are
those stored by the benchmark (``benchmarks/bench_network_dp.py --stage allpairs --record
docs/numbers/network-dp-allpairs.json``): the audit stage's time beside the audit stage's peak memory,
and the whole process's peak named as such.  The 10,000-agent run itself takes minutes and is not
repeated here; the test that runs the stage does so at 150 agents, checking what it records against an
independent count of the pairs within ``T`` hops (breadth-first search by networkx)."""

from __future__ import annotations

import argparse
import importlib.util
import json
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
RECORD = json.loads((ROOT / "docs" / "numbers" / "network-dp-allpairs.json").read_text(encoding="utf-8"))


def _bench():
    spec = importlib.util.spec_from_file_location("bench_network_dp",
                                                  ROOT / "benchmarks" / "bench_network_dp.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


BENCH = _bench()


def _flat(path: str) -> str:
    return " ".join((ROOT / path).read_text(encoding="utf-8").split())


def test_the_readme_pairs_the_audit_time_with_the_audit_peak():
    assert BENCH.allpairs_sentence(RECORD) in _flat("docs/benchmarks.md")
    assert RECORD["audit_peak_mib"] <= RECORD["total_peak_mib"]
    assert RECORD["audit_seconds"] <= RECORD["total_seconds"] and RECORD["resumed_chunks"] == 0


def test_the_pages_print_the_stored_run():
    pairs, agents = RECORD["pairs"], RECORD["agents"]
    assert (f"the 10,000 observers have {pairs / 1e6:.2f} million targets within `T` hops in all, about "
            f"{round(pairs / agents, -1):.0f} each") in _flat("docs/network-dp.md")
    bench = _flat("benchmarks/README.md")
    assert (f"{pairs:,} pairs within `T` hops written" in bench
            and f"**{RECORD['audit_seconds']:.1f} s**, with a **peak resident set of "
                f"{RECORD['audit_peak_mib']} MiB** up to then" in bench
            and f"peaked at **{RECORD['total_peak_mib']} MiB**" in bench)


def test_the_stage_records_what_it_measured(tmp_path):
    args = argparse.Namespace(agents=150, degree=10.0, seed=0, rounds=3, chunk=64, out=str(tmp_path / "rows"),
                              record=str(tmp_path / "record.json"))
    record = BENCH.allpairs(args)
    stored = json.loads((tmp_path / "record.json").read_text(encoding="utf-8"))
    assert stored == json.loads(json.dumps(record))
    net = BENCH.network(150, 10.0, 0)
    within = sum(len(nx.single_source_shortest_path_length(net.graph, v, cutoff=3)) - 1 for v in range(150))
    assert record["pairs"] == within and record["chunks"] == 3 and record["agents"] == 150
    assert 0 < record["audit_seconds"] <= record["total_seconds"]
    assert 0 < record["audit_peak_mib"] <= record["total_peak_mib"]
