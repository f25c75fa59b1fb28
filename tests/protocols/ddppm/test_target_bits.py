"""A target's pair results are the same bits whichever targets its auditor searched before, in which
order, and whether its problem came through a pickle into a misaligned buffer (as a Dask worker may
receive it): the independent reference is the search of each target on a fresh auditor in this process."""

from __future__ import annotations

import dataclasses
import signal

import networkx as nx
import numpy as np
import pytest

from dpgossip.data.partition import PartitionedData
from dpgossip.protocols.ddppm import audit
from dpgossip.protocols.ddppm.params import NoiseSchedule, resolve_params
from dpgossip.protocols.ddppm.search import SearchSettings
from dpgossip.topology import make_network

TINY = SearchSettings(name="tiny", levels=1, rows=1, random=0, steps=1, starts=1, exact=1)


def bits(x: object) -> object:
    """Every field of a result as exact bits (floats by ``float.hex``, arrays by their bytes); the
    search's wall-clock ``seconds`` are left out."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return (type(x).__name__, *((f.name, bits(getattr(x, f.name)))
                                    for f in dataclasses.fields(x) if f.name != "seconds"))
    if isinstance(x, dict):
        return tuple((bits(k), bits(v)) for k, v in x.items())
    if isinstance(x, list | tuple):
        return tuple(bits(v) for v in x)
    if isinstance(x, np.ndarray):
        return (x.dtype.str, x.shape, x.tobytes())
    if isinstance(x, float | np.floating):
        return float(x).hex()
    return x


def _problem(d: int = 12, rows: int = 13, m: int = 4, scale: float = 1.0):
    rng = np.random.default_rng(11)
    X = rng.standard_normal((m * rows, d)) * np.linspace(1.0, 0.3, d)
    X /= np.max(np.linalg.norm(X, axis=1))
    data = PartitionedData(X=X, sizes=(rows,) * m)
    net = make_network("ring", agents=m)
    params = resolve_params(data, net, iterations=1, consensus_steps=1,
                            noise=NoiseSchedule(kind="constant", scale=scale))
    return data, net, params


def _jobs(data, net, params, settings: SearchSettings, seed: int = 3):
    """The per-target jobs of an audit of every pair, as :func:`audit._optimised_audit` makes them."""
    delta = 1e-5
    targets, observers, keys, views = audit._pairs_and_views(data, "observer", delta, (50.0,),
                                                             "epsilon", None, None)
    hops = dict(nx.all_pairs_shortest_path_length(net.graph))
    spec = audit._SearchSpec(delta=delta, epsilons=(50.0,), neighbours="bounded", settings=settings,
                             methods=("rdp",), seed=seed, rank_by="epsilon", resolution=0.0)
    jobs = {j: audit._TargetJob(target=j, rows=rows, pairs=pj, keys=mk,
                                views={k: views[k] for k in mk}, warm=())
            for j, rows, pj, mk in audit._by_target(data, targets, observers, keys)}
    problem = (data, net, params, None, views, seed)
    return problem, keys, hops, jobs, spec


def _search(problem, keys, hops, jobs, spec, order, auditor=None):
    data, net, params, run = problem[:4]
    auditor = audit._search_auditor(problem) if auditor is None else auditor
    return {j: audit._search_target(data, net, params, run, keys, hops, jobs[j], spec, auditor=auditor)
            for j in order}


def _misaligned(a: np.ndarray, offset: int = 3) -> np.ndarray:
    """A read-only copy of ``a`` at ``offset`` bytes from an aligned address (not a multiple of the
    item size): how an array deserialised from a message frame may sit in memory."""
    buf = np.empty(a.nbytes + 64, dtype=np.uint8)
    start = (-buf.ctypes.data) % 32 + offset
    out = np.frombuffer(buf[start:start + a.nbytes].data, dtype=a.dtype).reshape(a.shape)
    out[...] = a
    out.flags.writeable = False
    return out


@pytest.mark.parametrize("rows", [6, 7], ids=["views", "reduced"])
def test_targets_in_any_order_on_one_auditor_give_the_same_bits(rows):
    """Each target on a fresh auditor (the reference) against one auditor searching the targets in
    other orders and other numbers per auditor: every field of every pair equal, bit for bit. With
    more rows per agent than columns the search runs on the reduced views (automatically), else on
    one factorisation per view."""
    problem, keys, hops, jobs, spec = _jobs(*_problem(d=6, rows=rows), TINY)
    reduced = isinstance(audit._search_auditor(problem), audit.ReducedAuditor)
    assert reduced == (rows > 6)
    fresh = {j: _search(problem, keys, hops, jobs, spec, [j])[j] for j in jobs}
    for order in ([3, 1, 0, 2], [2, 0]):
        got = _search(problem, keys, hops, jobs, spec, order)
        assert {j: bits(got[j]) for j in order} == {j: bits(fresh[j]) for j in order}, order


@pytest.mark.parametrize("rows", [12, 13], ids=["views", "reduced"])
def test_a_worker_given_misaligned_arrays_gives_the_same_bits(monkeypatch, rows):
    """A worker's problem may arrive with its arrays at unaligned addresses (a Dask worker reads them
    out of a message frame); numpy then skips BLAS in some products (``X_i^T X_i``) and sums in
    another order. The worker realigns what it receives, so its targets give the bits of this
    process's search on aligned data."""
    data, net, params = _problem(rows=rows)
    problem, keys, hops, jobs, spec = _jobs(data, net, params, TINY)
    reference = _search(problem, keys, hops, jobs, spec, [1, 2])
    moved = PartitionedData(X=data.X, sizes=(rows,) * 4)
    object.__setattr__(moved, "X", _misaligned(data.X))  # as unpickled: __post_init__ does not run
    assert not moved.X.flags.aligned
    sent = (moved, *problem[1:])
    monkeypatch.setattr(signal, "signal", lambda *a: None)  # the worker's SIGINT setting
    monkeypatch.setattr(audit, "_WORKER_STATE", {})
    audit._start_worker(sent)
    for j in (1, 2):
        job = dataclasses.replace(jobs[j], rows=_misaligned(jobs[j].rows, 4))
        assert bits(audit._search_in_worker(keys, hops, job, spec)) == bits(reference[j]), j
