"""A pair audit's targets on a Dask cluster: how ``dpgossip run --scheduler`` spreads the targets of a
sweep with fewer points than the cluster has threads, as ``--workers N`` does on local processes, and
how ``dpgossip audit --scheduler`` spreads every point's targets (:func:`client_target_searches`, from
the client itself).

A point runs in a Dask task (:func:`~dpgossip.scenario.execute.run_chunk_spreading_targets`); its
pair audit hands its targets' searches to :func:`dask_target_searches`, which, from inside that task
(``distributed.worker_client``: the task leaves the worker's thread pool while it waits, so the
cluster does not deadlock), sends the problem once to every worker and submits one task per target
(:func:`~dpgossip.protocols.ddppm.audit.search_target_cached`: each worker factorises every view once
and reuses it for the targets it gets). Results come back in target order. The same bits as a run on one
process, whichever worker gets which targets in which order: each target reseeds its random streams with
``(seed, target)``, an auditor carries nothing from one target to the next, every search runs with BLAS
on one thread, and a worker realigns the arrays it deserialises
(:func:`~dpgossip.protocols.ddppm.audit.received_copy`; docs/audit-scale.md, Section 6).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from dpgossip.protocols.ddppm.audit import PairResult, search_target_cached

__all__ = ["client_target_searches", "dask_target_searches"]


def dask_target_searches(problem: tuple, keys: dict, hops: dict, jobs: list, spec: Any, *,
                         order: Sequence[int] | None = None
                         ) -> Iterator[dict[tuple[int, int], PairResult]]:
    """Each job's results, in job order, from tasks on the cluster of the Dask task this runs in
    (module docstring); the jobs not finished are cancelled when the caller stops early. ``order``:
    the positions of the jobs in the order they are submitted (default: job order; the tests shuffle
    it, the results must not change)."""
    from distributed import worker_client

    with worker_client() as client:
        yield from _on_cluster(client, problem, keys, hops, jobs, spec, order)


def client_target_searches(client: Any) -> Any:
    """The searches of an audit's targets as tasks of ``client``'s cluster (a ``distributed.Client``
    of the process that runs the audit), for :func:`~dpgossip.protocols.ddppm.audit.audit_searches`:
    the same bits as one process (module docstring)."""

    def searches(problem: tuple, keys: dict, hops: dict, jobs: list, spec: Any
                 ) -> Iterator[dict[tuple[int, int], PairResult]]:
        return _on_cluster(client, problem, keys, hops, jobs, spec, None)

    return searches


def _on_cluster(client: Any, problem: tuple, keys: dict, hops: dict, jobs: list, spec: Any,
                order: Sequence[int] | None) -> Iterator[dict[tuple[int, int], PairResult]]:
    """Send the problem once to every worker, submit one task per job in ``order`` and yield the
    results in job order; the jobs not finished are cancelled when the caller stops early."""
    order = list(range(len(jobs))) if order is None else [int(i) for i in order]
    if sorted(order) != list(range(len(jobs))):
        raise ValueError(f"order must be a permutation of 0..{len(jobs) - 1}, got {order!r}")
    token = uuid.uuid4().hex  # this audit's auditors on the workers
    shared = client.scatter(problem, broadcast=True, hash=False)
    submitted = {i: client.submit(search_target_cached, token, shared, keys, hops, jobs[i], spec,
                                  pure=False) for i in order}
    futures = [submitted[i] for i in range(len(jobs))]
    try:
        for fut in futures:
            yield fut.result()
    finally:
        client.cancel([f for f in futures if not f.done()])
