"""Every observer against every target: observers streamed in chunks, tidy rows on disk, optional Dask.

Each observer's leakage comes from a producer of releases (:class:`ObserverReleases`, a protocol's
home implements it: the observer's view as a
:class:`~dpgossip.privacy.linear_release.LinearGaussianRelease`, audited by
:func:`~dpgossip.privacy.linear_allpairs.release_leakage`).  The observers are cut into chunks of
:attr:`AllPairsSettings.chunk` (in the order given).  A chunk is
one pure task, :func:`chunk_table` (network, releases, observers, settings -> :class:`PairTable`),
run with one BLAS thread (:func:`dpgossip._threads.single_blas_thread`), so its numbers are the same
bits in this process and on a Dask worker.  Memory holds the chunks in flight only, never the
results already done.

Result directory (:func:`run_all_pairs`)::

    out/manifest.json      what was computed (network fingerprint, releases, settings, observers)
    out/part-000000.npz    the tidy columns of chunk 0 (observer, target, hops, mu, mu_upper, exact,
    out/part-000001.npz    method, rdp at each order, epsilon), written to a temporary file and
    ...                    renamed (atomic): a part present is complete

A second run with the same manifest skips the parts present (resume); a different manifest is an
error.  :func:`read_all_pairs` reads them back as one :class:`PairTable`.  Targets more than
:attr:`ObserverReleases.reach` hops from the observer have ``mu = 0`` exactly and are written only with
``all_targets = True``.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

import numpy as np
import scipy.sparse as sp

from dpgossip._threads import single_blas_thread
from dpgossip.errors import ConfigError, check_int, check_number
from dpgossip.privacy.linear_allpairs import (
    MIN_RCOND,
    ObserverLeakage,
    gaussian_epsilons,
    hops_within,
)
from dpgossip.privacy.linear_audit import LinearAuditSettings
from dpgossip.topology.network import Network

__all__ = ["ObserverReleases", "AllPairsSettings", "PairTable", "AllPairsRun", "chunk_table",
           "iter_all_pairs", "run_all_pairs", "read_all_pairs", "METHODS", "network_fingerprint"]

METHODS: tuple[str, ...] = ("cholesky", "svd", "linear_audit", "out-of-reach")
"""Codes of the ``method`` column (index into this tuple)."""
_INT_COLUMNS = ("observer", "target", "hops")


class ObserverReleases(Protocol):
    """What the all-pairs run needs of a protocol: each observer's exact leakage to the targets that
    can reach it.  Instances must pickle (a Dask worker receives one)."""

    @property
    def reach(self) -> int:
        """Hops beyond which a target leaks nothing to an observer (``mu = 0`` exactly)."""
        ...

    def observer_leakage(self, network: Network, v: int, dist: np.ndarray, settings: LinearAuditSettings,
                         min_rcond: float) -> ObserverLeakage:
        """Leakage of every target within :attr:`reach` hops of ``v`` (``dist``: hop distances from
        ``v``, exact up to :attr:`reach`), e.g. by
        :func:`~dpgossip.privacy.linear_allpairs.release_leakage`; targets increasing."""
        ...

    def to_row(self) -> dict[str, object]:
        """What the releases are, as plain values (the manifest's ``protocol`` entry)."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class AllPairsSettings:
    """Settings of an all-pairs audit.

    Parameters
    ----------
    audit : LinearAuditSettings
        Sensitivity, Renyi orders, ``delta``, tolerances, box-maximum settings.
    chunk : int
        Observers per task (and per result file).
    min_rcond : float
        Cholesky path when the reciprocal condition estimate of ``Sigma`` is at least this
        (:data:`~dpgossip.privacy.linear_allpairs.MIN_RCOND`).
    all_targets : bool
        Also list the targets out of reach (``mu = 0``; needs a full breadth-first search per observer).
    """

    audit: LinearAuditSettings = field(default_factory=LinearAuditSettings)
    chunk: int = 64
    min_rcond: float = MIN_RCOND
    all_targets: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.audit, LinearAuditSettings):
            raise ConfigError(f"audit must be LinearAuditSettings, got {type(self.audit).__name__}",
                              field="audit")
        check_int(self.chunk, "chunk", 1)
        check_number(self.min_rcond, "min_rcond", low=0.0, high=1.0)
        if not isinstance(self.all_targets, bool):
            raise ConfigError(f"all_targets must be true or false, got {self.all_targets!r}",
                              field="all_targets")

    def to_row(self) -> dict[str, object]:
        """The settings as plain values (the manifest)."""
        a = self.audit
        return {"sensitivity": a.sensitivity, "orders": list(a.orders), "delta": a.delta,
                "rank_rtol": a.rank_rtol, "range_rtol": a.range_rtol,
                "exhaustive_up_to": a.exhaustive_up_to, "restarts": a.restarts, "seed": a.seed,
                "chunk": self.chunk, "min_rcond": self.min_rcond, "all_targets": self.all_targets}


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class PairTable:
    """Tidy rows as columns: one row per (observer, target) pair."""

    columns: dict[str, np.ndarray]
    """``observer``, ``target``, ``hops`` (int64), ``mu``, ``mu_upper`` (float), ``exact`` (bool),
    ``method`` (uint8 code into :data:`METHODS`), ``rdp_<order>``, ``epsilon``."""
    delta: float

    def __len__(self) -> int:
        return int(self.columns["observer"].size)

    def to_rows(self) -> list[dict[str, object]]:
        """Tidy rows with the columns of :meth:`~dpgossip.privacy.linear_audit.PairLeakage.to_row`
        (``observer`` as its label, ``method`` by name, ``delta``)."""
        names = list(self.columns)
        lists = [self.columns[n].tolist() for n in names]
        rows = []
        for values in zip(*lists, strict=True):
            row = dict(zip(names, values, strict=True))
            row["observer"] = str(row["observer"])
            row["method"] = METHODS[row["method"]]
            eps = row.pop("epsilon")
            row.update({"delta": self.delta, "epsilon": eps})
            rows.append(row)
        return rows

    @staticmethod
    def concat(tables: list[PairTable], delta: float) -> PairTable:
        """The rows of ``tables`` one after the other."""
        if not tables:
            return PairTable(columns={}, delta=delta)
        return PairTable(columns={n: np.concatenate([t.columns[n] for t in tables])
                                  for n in tables[0].columns}, delta=delta)


def _out_of_reach(v: int, dist: np.ndarray, listed: np.ndarray) -> ObserverLeakage:
    rest = np.ones(dist.size, dtype=bool)
    rest[listed] = False
    rest[v] = False
    targets = np.flatnonzero(rest)
    hops = np.where(np.isfinite(dist[targets]), dist[targets], -1).astype(np.int64)
    z = np.zeros(targets.size)
    return ObserverLeakage(observer=v, targets=targets, hops=hops, mu=z, mu_upper=z,
                           exact=np.ones(targets.size, dtype=bool), method="out-of-reach")


def _table(parts: list[ObserverLeakage], audit: LinearAuditSettings) -> PairTable:
    cols: dict[str, np.ndarray] = {
        "observer": np.concatenate([np.full(p.targets.size, p.observer, dtype=np.int64) for p in parts]),
        "target": np.concatenate([p.targets for p in parts]).astype(np.int64),
        "hops": np.concatenate([p.hops for p in parts]).astype(np.int64),
        "mu": np.concatenate([p.mu for p in parts]),
        "mu_upper": np.concatenate([p.mu_upper for p in parts]),
        "exact": np.concatenate([p.exact for p in parts]).astype(bool),
        "method": np.concatenate([np.full(p.targets.size, METHODS.index(p.method), dtype=np.uint8)
                                  for p in parts]),
    }
    up2 = cols["mu_upper"] ** 2
    for a in audit.orders:
        cols[f"rdp_{a:g}"] = a * up2 / 2
    cols["epsilon"] = gaussian_epsilons(cols["mu_upper"], audit.delta)
    return PairTable(columns=cols, delta=audit.delta)


def chunk_table(network: Network, releases: ObserverReleases, observers: np.ndarray,
                settings: AllPairsSettings) -> PairTable:
    """Tidy rows of a chunk of observers (one BLAS thread; the task a worker runs).

    Rows are ordered by observer (as given), then by target: the targets within ``T`` hops, then (with
    ``all_targets``) the others, with ``mu = 0`` and ``method = "out-of-reach"``.
    """
    observers = np.asarray(observers, dtype=np.int64)
    adjacency = sp.csr_array((np.ones_like(network.W.data), network.W.indices, network.W.indptr),
                             shape=network.W.shape)
    reach = np.inf if settings.all_targets else releases.reach
    with single_blas_thread():
        dist = np.atleast_2d(hops_within(adjacency, observers, reach))
        parts = []
        for i, v in enumerate(observers.tolist()):
            part = releases.observer_leakage(network, v, dist[i], settings.audit, settings.min_rcond)
            parts.append(part)
            if settings.all_targets:
                parts.append(_out_of_reach(v, dist[i], part.targets))
        return _table(parts, settings.audit)


def _chunks(network: Network, observers: Iterable[int] | None, size: int) -> list[np.ndarray]:
    if observers is None:
        obs = np.arange(network.m, dtype=np.int64)
    else:
        obs = np.array([_agent(network, v) for v in observers], dtype=np.int64)
        if obs.size == 0:
            raise ConfigError("observers must name at least one agent, got none", field="observers")
    return [obs[i:i + size] for i in range(0, obs.size, size)]


def _agent(network: Network, v: object) -> int:
    if isinstance(v, bool) or not isinstance(v, int | np.integer) or not 0 <= int(v) < network.m:
        raise ConfigError(f"observers must be agents in 0..{network.m - 1}, got {v!r}",
                          field="observers")
    return int(v)


def iter_all_pairs(network: Network, releases: ObserverReleases, settings: AllPairsSettings | None = None,
                   observers: Iterable[int] | None = None, *,
                   scheduler: str | None = None) -> Iterator[tuple[int, PairTable]]:
    """``(chunk index, rows)`` for every chunk of observers (default: every agent), in chunk order.

    Parameters
    ----------
    network : Network
        The graph.
    releases : ObserverReleases
        Each observer's releases (a protocol's producer).
    settings : AllPairsSettings, optional
        Audit settings and chunk size.
    observers : iterable of int, optional
        The observers (each a single agent); default ``0..m-1``.
    scheduler : str, optional
        Address of a Dask scheduler (``tcp://host:8786``): the chunks run there, at most two per
        worker thread in flight.  Needs ``pip install "dpgossip[dask]"``.
    """
    s = settings or AllPairsSettings()
    yield from _run_chunks(network, releases, _chunks(network, observers, s.chunk), s, scheduler)


def _run_chunks(network: Network, releases: ObserverReleases, chunks: list[np.ndarray],
                settings: AllPairsSettings, scheduler: str | None) -> Iterator[tuple[int, PairTable]]:
    """``(position in chunks, rows)`` in order, here or on the Dask scheduler."""
    if not chunks:
        return
    if scheduler is None:
        for i, obs in enumerate(chunks):
            yield i, chunk_table(network, releases, obs, settings)
        return
    yield from _dask_chunks(network, releases, chunks, settings, scheduler)


def _dask_client(scheduler: str) -> Any:
    try:
        from distributed import Client
    except ImportError:
        raise ConfigError(f"scheduler {scheduler}: running on a Dask cluster needs dask.distributed;"
                          ' install it with: pip install "dpgossip[dask]"', field="scheduler") from None
    try:
        return Client(scheduler, timeout="30s", set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise ConfigError(f"scheduler {scheduler}: cannot reach the Dask scheduler ({exc}); check the "
                          "address (e.g. tcp://host:8786)", field="scheduler") from None


def _dask_chunks(network: Network, releases: ObserverReleases, chunks: list[np.ndarray],
                 settings: AllPairsSettings, scheduler: str) -> Iterator[tuple[int, PairTable]]:
    client = _dask_client(scheduler)
    try:
        lanes = max(1, sum(client.nthreads().values()))
        net = client.scatter(network, broadcast=True)
        pending: list[Any] = []
        nxt = 0
        for i in range(len(chunks)):
            while nxt < len(chunks) and len(pending) < 2 * lanes:
                pending.append(client.submit(chunk_table, net, releases, chunks[nxt], settings, pure=False))
                nxt += 1
            yield i, pending.pop(0).result()
    finally:
        client.close()


@dataclass(frozen=True, slots=True, kw_only=True)
class AllPairsRun:
    """What :func:`run_all_pairs` did."""

    path: str
    chunks: int
    skipped: int
    """Chunks already present (resume)."""
    pairs: int
    """Rows written by this run."""
    seconds: float

    def to_row(self) -> dict[str, object]:
        """The fields as a dict."""
        return {"path": self.path, "chunks": self.chunks, "skipped": self.skipped,
                "pairs": self.pairs, "seconds": self.seconds}


def network_fingerprint(network: Network) -> str:
    """SHA-256 of ``W`` (its CSR arrays): the manifest's identity of the network."""
    h = hashlib.sha256()
    for a in (network.W.indptr, network.W.indices, network.W.data):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def _manifest(network: Network, releases: ObserverReleases, settings: AllPairsSettings,
              chunks: list[np.ndarray]) -> dict[str, object]:
    obs = np.concatenate(chunks)
    return {"format": "dpgossip-allpairs-1", "network": {"name": network.name, "agents": network.m,
            "mixing": network.mixing, "sha256": network_fingerprint(network)},
            "protocol": releases.to_row(),
            "settings": settings.to_row(), "chunks": len(chunks), "observers": int(obs.size),
            "observers_sha256": hashlib.sha256(obs.tobytes()).hexdigest(), "methods": list(METHODS)}


def _part(out: Path, i: int) -> Path:
    return out / f"part-{i:06d}.npz"


def _write_part(path: Path, table: PairTable) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        np.savez(fh, **table.columns)
    os.replace(tmp, path)


def _prepare(out: Path, manifest: dict[str, object]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    path = out / "manifest.json"
    text = json.dumps(manifest, indent=1, sort_keys=True)
    if path.exists():
        if json.loads(path.read_text(encoding="utf-8")) != json.loads(text):
            raise ConfigError(f"out: {out} holds the results of another audit (its manifest.json "
                              "differs); choose another directory or delete it", field="out")
        return
    tmp = path.with_name("manifest.json.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


class _Progress:
    """A tqdm bar over observers when tqdm is installed (extra ``progress``), else one line per
    chunk on ``stream``."""

    def __init__(self, total: int, stream: IO[str] | None) -> None:
        self.total, self.done, self.stream = total, 0, stream or sys.stderr
        self.t0 = time.perf_counter()
        try:
            from tqdm import tqdm
        except ImportError:
            self.bar = None
        else:
            self.bar = tqdm(total=total, file=self.stream, unit="observer", dynamic_ncols=True)

    def update(self, n: int) -> None:
        if n == 0:
            return
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
            return
        elapsed = time.perf_counter() - self.t0
        eta = elapsed / max(self.done, 1) * (self.total - self.done)
        print(f"[{self.done}/{self.total} observers] {elapsed:.1f} s, ETA {eta:.1f} s",
              file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def run_all_pairs(network: Network, releases: ObserverReleases, out: str | Path,
                  settings: AllPairsSettings | None = None, observers: Iterable[int] | None = None, *,
                  scheduler: str | None = None, progress: bool = False,
                  stream: IO[str] | None = None) -> AllPairsRun:
    """Audit every observer against every target and write the tidy rows to ``out`` (module
    docstring), skipping the parts a previous run with the same manifest finished.

    ``progress`` shows a bar over observers on ``stream`` (default stderr).
    """
    s = settings or AllPairsSettings()
    chunks = _chunks(network, observers, s.chunk)
    out = Path(out)
    _prepare(out, _manifest(network, releases, s, chunks))
    todo = [i for i in range(len(chunks)) if not _part(out, i).exists()]
    bar = _Progress(int(sum(c.size for c in chunks)), stream) if progress else None
    if bar is not None:
        bar.update(int(sum(chunks[i].size for i in set(range(len(chunks))) - set(todo))))
    t0, pairs = time.perf_counter(), 0
    try:
        for j, table in _run_chunks(network, releases, [chunks[i] for i in todo], s, scheduler):
            i = todo[j]
            _write_part(_part(out, i), table)
            pairs += len(table)
            if bar is not None:
                bar.update(int(chunks[i].size))
    finally:
        if bar is not None:
            bar.close()
    return AllPairsRun(path=str(out), chunks=len(chunks), skipped=len(chunks) - len(todo),
                       pairs=pairs, seconds=time.perf_counter() - t0)


def read_all_pairs(out: str | Path) -> PairTable:
    """Every part of a result directory as one :class:`PairTable`, in chunk order.

    Raises
    ------
    ConfigError
        When ``out`` has no manifest or parts are missing (an unfinished run: run it again).
    """
    out = Path(out)
    path = out / "manifest.json"
    if not path.exists():
        raise ConfigError(f"out: {out} has no manifest.json (not an all-pairs result)", field="out")
    manifest = json.loads(path.read_text(encoding="utf-8"))
    missing = [i for i in range(manifest["chunks"]) if not _part(out, i).exists()]
    if missing:
        raise ConfigError(f"out: {out} misses {len(missing)} of {manifest['chunks']} parts (first: "
                          f"{missing[0]}); run the audit again to finish it", field="out")
    tables = []
    for i in range(manifest["chunks"]):
        with np.load(_part(out, i)) as z:
            tables.append(PairTable(columns={n: z[n] for n in z.files},
                                    delta=manifest["settings"]["delta"]))
    return PairTable.concat(tables, manifest["settings"]["delta"])
