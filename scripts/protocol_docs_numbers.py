"""The result tables of docs/network-dp.md, Section 4, computed with the repo's code (pending: no shipped
scenario writes them yet).

    python scripts/protocol_docs_numbers.py

Each function returns the exact markdown the page prints (a table, a sentence or a number string).
``main`` prints them (about ten seconds, the 2,048-node hypercube included).
tests/test_docs_numbers_protocols.py checks that the page prints exactly these texts. The page's worked
numbers are computed by tests/test_docs_network_dp_derivations.py; docs/ppm.md and docs/cape.md print
stored results (tests/test_docs_ppm.py, tests/test_docs_cape.py).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

HOPS = (1, 2, 4, 6, 7, 8, 10, 11)


# -------------------------------------------------------------------------------------- network-dp.md

def _hypercube_network(d: int):
    from dpgossip.topology import Network, build_graph, mixing_matrix

    graph = build_graph("hypercube", 2 ** d)  # as make_network, without its dense spectral validation
    return Network(graph=graph, W=mixing_matrix(graph, "metropolis"), name="hypercube", mixing="metropolis")


def hypercube_column(d: int) -> dict[int, str]:
    """Mean exact Renyi-2 / the authors' sum over ``t = 1..T`` by hop count, as the table prints it."""
    from dpgossip.privacy.linear_audit import LinearAuditSettings
    from dpgossip.protocols.gossip.audit import audit_gossip
    from dpgossip.protocols.gossip.bounds import compare_to_bound, muffliato_per_message
    from dpgossip.protocols.gossip.linear import LinearGossip

    T = {8: 16, 11: 19}[d]
    network = _hypercube_network(d)
    spec = LinearGossip(rounds=T, sigma=1.0)
    rows = audit_gossip(network, spec, 0, LinearAuditSettings(orders=(2.0,)))
    theirs = muffliato_per_message(network, spec, 0, order=2.0, rounds=range(1, T + 1))
    table = compare_to_bound(rows, theirs, order=2.0)
    out = {}
    for hops in HOPS:
        at = [c for c in table if c.hops == hops]
        if not at:
            continue
        exact, bound = float(np.mean([c.exact for c in at])), float(np.mean([c.bound for c in at]))
        text = f"{round(exact, 10):.3g} / {bound:#.3g}"
        out[hops] = f"**{text}**" if all(c.bound_below_exact for c in at) else text
    return out


def hypercube_table(columns: dict[int, dict[int, str]] | None = None) -> str:
    """docs/network-dp.md, Section 4: the hypercube table (``columns`` by dimension; computed if None)."""
    if columns is None:
        columns = {d: hypercube_column(d) for d in (8, 11)}
    lines = ["| hops | d = 8, T = 16 | d = 11, T = 19 |", "|---:|---|---|"]
    for hops in HOPS:
        cells = [columns[d].get(hops, "") for d in (8, 11)]
        lines.append(f"| {hops} | {cells[0]} | {cells[1]} |".replace("|  |", "| |"))
    return "\n".join(lines)


def _bound_cell(bound: np.ndarray, exact: np.ndarray) -> str:
    """Mean of a bound over the pairs at one distance; bold, with the count, where some pair's bound is
    below its exact value (relative tolerance ``1e-9``, as ``compare_to_bound``)."""
    below = int(np.sum(bound < exact * (1 - 1e-9)))
    text = f"{float(np.mean(bound)):.4g}"
    return f"**{text}** ({below} of {exact.size} below)" if below else text


def muffliato_forms_rows() -> list[dict[str, object]]:
    """Per graph distance on MFDL's graph (Erdos-Renyi n = 100, seed 42, attacker 0, ``T = 10``,
    ``sigma = 1``, ``alpha = 2``): exact Renyi values and the published bounds, per target."""
    from dpgossip.privacy.linear_audit import LinearAuditSettings
    from dpgossip.protocols.gossip.audit import audit_gossip
    from dpgossip.protocols.gossip.bounds import (
        mfdl_abs_sum,
        muffliato_corrected,
        muffliato_per_message,
    )
    from dpgossip.protocols.gossip.linear import LinearGossip
    from dpgossip.topology.published import mfdl_erdos_renyi

    network, settings = mfdl_erdos_renyi(100, 42), LinearAuditSettings(orders=(2.0,))
    once = LinearGossip(protocol="gossip-average", rounds=10, sigma=1.0)
    every = LinearGossip(protocol="gossip-noisy", rounds=10, sigma=1.0, inputs="per-round")
    exact_once = {r.target: (r.hops, r.rdp[0]) for r in audit_gossip(network, once, 0, settings)}
    exact_every = {r.target: r.rdp[0] for r in audit_gossip(network, every, 0, settings)}
    bounds = {"neurips": muffliato_per_message(network, once, 0),
              "corrected": muffliato_corrected(network, every, 0),
              "corrected_p2": muffliato_corrected(network, every, 0, entry_power=2),
              "corrected_unclipped": muffliato_corrected(network, every, 0, clip=False),
              "mfdl": mfdl_abs_sum(network, every, 0)}
    return [{"target": u, "hops": h, "exact_once": e, "exact_every": exact_every[u],
             **{k: float(b[u]) for k, b in bounds.items()}} for u, (h, e) in sorted(exact_once.items())]


def muffliato_forms_table(rows: list[dict[str, object]] | None = None) -> str:
    """docs/network-dp.md, Section 4: Muffliato's NeurIPS and corrected forms beside the exact values."""
    rows = muffliato_forms_rows() if rows is None else rows
    lines = ["| distance | pairs | noise once: exact | NeurIPS per-message sum | new input and noise every "
             "round: exact | corrected (Thm 11), `p = 1`, clipped | corrected, `p = 2`, clipped | MFDL's "
             "absolute-value bound |", "|---:|---:|---|---|---|---|---|---|"]
    for h in sorted({r["hops"] for r in rows}):
        at = [r for r in rows if r["hops"] == h]
        col = {k: np.array([r[k] for r in at]) for k in at[0] if k not in ("target", "hops")}
        lines.append(f"| {h} | {len(at)} | {float(np.mean(col['exact_once'])):.4g} "
                     f"| {_bound_cell(col['neurips'], col['exact_once'])} "
                     f"| {float(np.mean(col['exact_every'])):.4g} "
                     f"| {_bound_cell(col['corrected'], col['exact_every'])} "
                     f"| {_bound_cell(col['corrected_p2'], col['exact_every'])} "
                     f"| {_bound_cell(col['mfdl'], col['exact_every'])} |")
    return "\n".join(lines)


def muffliato_forms_reading(rows: list[dict[str, object]] | None = None) -> str:
    """docs/network-dp.md, Section 4: what the table of the two forms shows, every number computed."""
    rows = muffliato_forms_rows() if rows is None else rows
    below = sum(r["neurips"] < r["exact_once"] * (1 - 1e-9) for r in rows)
    sound = all(r[k] >= r["exact_every"] * (1 - 1e-9) for r in rows
                for k in ("corrected", "corrected_p2", "mfdl"))
    clipped = sum(r["corrected_unclipped"] > 10 for r in rows)
    ratio = max(r["corrected_p2"] / r["exact_every"] for r in rows)
    return (f"The NeurIPS sum is below the exact value for {below} of the {len(rows)} targets; the "
            f"corrected form (`p = 1` and `p = 2`) and MFDL's bound are {'never' if sound else 'sometimes'} "
            f"below it. The corrected form is loose: with `p = 1` the sum exceeds `T` for {clipped} of "
            f"the {len(rows)} targets, which the clip then sets to the local-DP level "
            f"`T alpha Delta^2 / (2 sigma^2) = 10`, and even with `p = 2` it is up to {ratio:.3g} times the "
            f"exact value.")


def network_texts() -> list[str]:
    rows = muffliato_forms_rows()
    return [hypercube_table(), muffliato_forms_table(rows), muffliato_forms_reading(rows)]


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    print("\n\n".join(network_texts()) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
