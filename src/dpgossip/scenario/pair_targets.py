"""The D-DP-PM pair audit target by target: one file per target, written atomically, resumable.

:func:`audit_by_target` runs :func:`~dpgossip.protocols.ddppm.audit.audit_pairs` on the targets not done yet
(every view factorised once) and writes each target's pairs (every observer of it) to
``out/targets/<j>.json`` as soon as its search is done (``AuditOptions.on_target_results``)
(:func:`~dpgossip.scenario.store.write_json`: a temporary file renamed, so a file present is complete).
``out/manifest.json`` holds what is audited (a hash of the data, the mixing matrix and the parameters,
and the audit's settings); a second call with the same manifest skips the targets already written
(resume), a different one is an error. Progress, with an ETA, is one line per target on ``stream``
(:class:`~dpgossip.scenario.progress.Progress`).

Each target's search reseeds its random streams with ``(seed, target)``, so a target's pairs are the
same whether it runs alone, after others, or in a resumed run.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from dpgossip.data.partition import PartitionedData
from dpgossip.errors import ConfigError
from dpgossip.privacy.neighbours import Neighbour
from dpgossip.protocols.ddppm.audit import AuditOptions, PairResult, audit_pairs
from dpgossip.protocols.ddppm.params import ProtocolParams
from dpgossip.protocols.ddppm.search import (
    DEFAULT_SEARCH,
    SearchEvidence,
    SearchSettings,
    SearchStage,
)
from dpgossip.scenario.progress import Progress
from dpgossip.scenario.store import json_safe, read_json, write_json
from dpgossip.topology.network import Network

__all__ = ["TargetAuditSettings", "TargetDone", "TargetStore", "audit_by_target", "read_targets",
           "result_record", "result_from_record"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetAuditSettings:
    """What :func:`audit_by_target` passes to :func:`~dpgossip.protocols.ddppm.audit.audit_pairs`."""

    search: str | int | SearchSettings = DEFAULT_SEARCH
    delta: float = 1e-5
    epsilons: tuple[float, ...] = (1.0,)
    methods: tuple[str, ...] = ("rdp",)
    view: str = "observer"
    neighbours: str = "bounded"
    seed: int = 0
    rank_by: str = "epsilon"

    def to_row(self) -> dict[str, Any]:
        search = (asdict(self.search) if isinstance(self.search, SearchSettings) else self.search)
        return {"search": search, "delta": self.delta, "epsilons": list(self.epsilons),
                "methods": list(self.methods), "view": self.view, "neighbours": self.neighbours,
                "seed": self.seed, "rank_by": self.rank_by}


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetDone:
    """One finished target (what :class:`~dpgossip.scenario.progress.Progress` reports)."""

    index: int
    seconds: float
    worst: float
    axes: dict[str, Any] = field(default_factory=dict)


def _fingerprint(data: PartitionedData, network: Network, params: ProtocolParams) -> str:
    h = hashlib.sha256()
    for a in (data.X, np.asarray(data.offsets), network.dense_W()):
        h.update(np.ascontiguousarray(a, dtype=float).tobytes())
    h.update(repr(params).encode())
    return h.hexdigest()


def _manifest(data: PartitionedData, network: Network, params: ProtocolParams,
              settings: TargetAuditSettings) -> dict[str, Any]:
    return {"format": "dpgossip-pair-targets-2", "agents": data.m, "rows": data.n,
            "sha256": _fingerprint(data, network, params), "settings": settings.to_row()}


def _prepare(out: Path, manifest: dict[str, Any]) -> None:
    path = out / "manifest.json"
    if path.exists():
        if read_json(path) != json_safe(manifest):
            raise ConfigError(f"out: {out} holds another audit (its manifest.json differs); choose "
                              "another folder or delete it", field="out")
        return
    write_json(path, json_safe(manifest))


def _target_path(out: Path, j: int) -> Path:
    return out / "targets" / f"{j:06d}.json"


def audit_by_target(data: PartitionedData, network: Network, params: ProtocolParams,
                    out: str | Path, settings: TargetAuditSettings | None = None,
                    targets: Sequence[int] | None = None, *, quiet: bool = False,
                    stream: IO[str] | None = None) -> list[dict[str, Any]]:
    """Audit every (observer, target) pair target by target into ``out`` (module docstring) and return
    every pair's tidy rows (:meth:`~dpgossip.protocols.ddppm.audit.PairAudit.rows`), resumed targets included.

    Raises
    ------
    ConfigError
        ``out`` holds another audit, or a target is not an agent.
    """
    s = settings or TargetAuditSettings()
    out = Path(out)
    todo_all = list(range(data.m)) if targets is None else [int(j) for j in targets]
    for j in todo_all:
        if not 0 <= j < data.m:
            raise ConfigError(f"targets must be agents in 0..{data.m - 1}, got {j!r}",
                              field="targets")
    _prepare(out, _manifest(data, network, params, s))
    todo = [j for j in todo_all if not _target_path(out, j).exists()]
    progress = Progress(len(todo_all), quiet=quiet, stream=stream)
    progress.skipped(len(todo_all) - len(todo), str(out))
    clock = [time.perf_counter()]

    def store(j: int, results: dict) -> None:
        rows = [{**row, "view": s.view} for key in sorted(results)
                for row in results[key].rows(s.epsilons, s.delta)]
        write_json(_target_path(out, j), json_safe({"target": j, "rows": rows}))
        meth = s.methods[0]
        worst = max((r["delta_at_eps_" + f"{s.epsilons[0]:g}"] if s.rank_by == "delta"
                     else r["epsilon"]) for r in rows if r["method"] == meth)
        now = time.perf_counter()
        progress.update(TargetDone(index=j, seconds=now - clock[0], worst=worst, axes={"target": j}),
                        f"worst {meth} {'delta' if s.rank_by == 'delta' else 'epsilon'} {worst:.4g} "
                        "(lower estimate)")
        clock[0] = now

    try:
        if todo:  # one audit (one factorisation of every view) storing each target when done
            audit_pairs(data, network, params, delta=s.delta, epsilons=s.epsilons, view=s.view,
                        neighbours=s.neighbours, search=s.search, seed=s.seed, methods=s.methods,
                        options=AuditOptions(targets=todo, rank_by=s.rank_by,
                                                     on_target_results=store))
    finally:
        progress.close()
    return read_targets(out, todo_all)


def read_targets(out: str | Path, targets: Sequence[int]) -> list[dict[str, Any]]:
    """The rows of the given targets' files in ``out``, in target order.

    Raises
    ------
    ConfigError
        A target's file is missing (an unfinished run: run it again).
    """
    rows: list[dict[str, Any]] = []
    for j in targets:
        path = _target_path(Path(out), int(j))
        if not path.exists():
            raise ConfigError(f"out: {out} has no result for target {j}; run the audit again to "
                              "finish it", field="out")
        rows.extend(read_json(path)["rows"])
    return rows


# --- every field of a pair's result, for a resumed audit ---------------------------------------------
def result_record(result: PairResult) -> dict[str, Any]:
    """Every field of a :class:`~dpgossip.protocols.ddppm.audit.PairResult` as JSON-native values
    (:func:`result_from_record` restores the same bits: JSON writes a float by its shortest repr,
    which reads back to the same double)."""
    nb, ev = result.neighbour, result.evidence
    return {"observer": int(result.observer), "target": int(result.target), "hops": int(result.hops),
            "neighbour": {"row": int(nb.row), "x_new": [float(v) for v in nb.x_new],
                          "label": nb.label},
            "epsilon": {k: float(v) for k, v in result.epsilon.items()},
            "delta": {k: [float(v) for v in vs] for k, vs in result.delta.items()},
            "renyi2": float(result.renyi2), "renyi2_pq": float(result.renyi2_pq),
            "renyi2_qp": float(result.renyi2_qp),
            "evidence": None if ev is None else {
                "settings": asdict(ev.settings), "stages": [asdict(st) for st in ev.stages],
                "rows_screened": ev.rows_screened, "rows_searched": ev.rows_searched,
                "first_message_bound": float(ev.first_message_bound),
                "level_values": [float(v) for v in ev.level_values], "warm": ev.warm,
                "capped": ev.capped}}


def result_from_record(record: Mapping[str, Any]) -> PairResult:
    """The :class:`~dpgossip.protocols.ddppm.audit.PairResult` of a :func:`result_record` (read back by
    :func:`~dpgossip.scenario.store.read_json`, which restores the non-finite values)."""
    nb, ev = record["neighbour"], record["evidence"]
    evidence = None if ev is None else SearchEvidence(
        settings=SearchSettings(**ev["settings"]),
        stages=tuple(SearchStage(**st) for st in ev["stages"]),
        rows_screened=int(ev["rows_screened"]), rows_searched=int(ev["rows_searched"]),
        first_message_bound=float(ev["first_message_bound"]),
        level_values=tuple(float(v) for v in ev["level_values"]), warm=int(ev["warm"]),
        capped=bool(ev["capped"]))
    return PairResult(observer=int(record["observer"]), target=int(record["target"]),
                      hops=int(record["hops"]),
                      neighbour=Neighbour(row=int(nb["row"]), x_new=np.array(nb["x_new"], dtype=float),
                                          label=str(nb["label"])),
                      epsilon={k: float(v) for k, v in record["epsilon"].items()},
                      delta={k: [float(v) for v in vs] for k, vs in record["delta"].items()},
                      renyi2=float(record["renyi2"]), renyi2_pq=float(record["renyi2_pq"]),
                      renyi2_qp=float(record["renyi2_qp"]), evidence=evidence)


@dataclass(frozen=True, slots=True)
class TargetStore:
    """The finished targets of one point's pair audit, one file per target (``<folder>/<j>.json``,
    written atomically: a file present is complete), so that an interrupted audit resumes from the
    targets it finished. The folder is named after the point's key (a hash of its whole
    configuration and inputs), so it never holds another audit's targets.

    Each target's search reseeds its random streams with ``(seed, target)``, so the pairs of a
    resumed target are the bits an uninterrupted audit computes.
    """

    folder: Path

    def path(self, target: int) -> Path:
        """The file of ``target``."""
        return self.folder / f"{int(target):06d}.json"

    def save(self, target: int, results: Mapping[tuple[int, int], PairResult]) -> None:
        """Store one finished target's pairs (in their order)."""
        write_json(self.path(target), json_safe(
            {"format": TARGET_FORMAT, "target": int(target),
             "pairs": [result_record(r) for r in results.values()]}))

    def done(self, targets: Sequence[int]) -> dict[int, dict[tuple[int, int], PairResult]]:
        """The stored pairs of those of ``targets`` that are finished (a file that cannot be read, of
        another format or another target is ignored: that target is searched again)."""
        out: dict[int, dict[tuple[int, int], PairResult]] = {}
        for j in targets:
            path = self.path(j)
            if not path.is_file():
                continue
            try:
                record = read_json(path)
                if record.get("format") != TARGET_FORMAT or record.get("target") != int(j):
                    continue
                pairs = [result_from_record(r) for r in record["pairs"]]
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                continue  # damaged: search the target again
            out[int(j)] = {(r.observer, r.target): r for r in pairs}
        return out

    def clear(self) -> None:
        """Remove the folder (once the point's own file holds every pair)."""
        if self.folder.is_dir():
            for path in self.folder.glob("*.json"):
                path.unlink(missing_ok=True)
            try:
                self.folder.rmdir()
            except OSError:  # a file of someone else's: leave the folder
                pass


TARGET_FORMAT = "dpgossip-audit-target-2"
"""The ``format`` of a :class:`TargetStore` file."""
