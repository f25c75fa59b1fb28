"""Views rebuilt from an engine run's transcript, for a kind's ``view_residual``.

A kind's ``view_residual(record, data)`` (:class:`~dpgossip.protocols.registry.KindPoint`) compares every
view the kind audits, rebuilt from the messages of an engine run
(:mod:`dpgossip.engine.transcript`), with what the kind's release model says that view is. The pieces
shared by the kinds live here:

* :func:`gossip_residual`: in a gossip phase keyed ``key`` (a tag's first two entries, e.g.
  ``(component, iteration)``), the message of agent ``i`` in round ``k`` carries its state
  ``S_i^(k-1) = e_i^T W^(k-1) S^(0)`` (the model's initial states ``S^(0)``, one row per agent, any
  trailing shape). Every message of the phase is compared with it, and every directed edge of the
  network must carry exactly one message per round, and no message may cross a non-edge (else the
  residual is ``inf``: a view the transcript lacks is not rebuilt);
* :func:`mixed_states`: each agent's state after the last round, ``S_i^(c) = sum_j W_ij S_j^(c-1)``,
  from the round-``c`` messages alone (an agent's own ``S_i^(c-1)`` is what it sent in round ``c``), to
  rebuild what the agents compute from what they received;
* :func:`largest_difference`: ``max |a - b|`` over pairs of arrays (``inf`` on a shape mismatch or a NaN,
  ``0`` for no pair).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from dpgossip.engine.transcript import TranscriptRecord
from dpgossip.topology.network import Network

__all__ = ["largest_difference", "messages_of", "gossip_residual", "mixed_states"]


def largest_difference(pairs: Iterable[tuple[np.ndarray, np.ndarray]]) -> float:
    """``max |a - b|`` over every entry of every pair (``inf`` when shapes differ or a value is NaN)."""
    worst = 0.0
    for a, b in pairs:
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        if a.shape != b.shape:
            return float("inf")
        if a.size:
            diff = float(np.max(np.abs(a - b)))
            worst = max(worst, diff if diff == diff else float("inf"))
    return worst


def messages_of(transcript: Sequence[TranscriptRecord] | None,
                tag: tuple) -> dict[tuple[int, int], np.ndarray]:
    """``{(src, dst): payload}`` of the messages with tag ``tag``."""
    return {(r.src, r.dst): r.payload for r in transcript or () if tuple(r.tag) == tuple(tag)}


def _powers(W: np.ndarray, rounds: int) -> list[np.ndarray]:
    out = [np.eye(W.shape[0])]
    for _ in range(1, rounds):
        out.append(out[-1] @ W)
    return out


def gossip_residual(transcript: Sequence[TranscriptRecord] | None, network: Network,
                    initial: Mapping[tuple, np.ndarray], rounds: int) -> float:
    """Largest ``|payload - e_src^T W^(k-1) S^(0)|`` over the messages of the phases ``initial``
    (``{key: S^(0)}``, tag ``(*key, k)``, ``k = 1..rounds``); ``inf`` unless every directed edge of
    the network carries exactly one message of each round of each phase."""
    powers = _powers(network.dense_W(), rounds)
    edges = sum(len(n) for n in network.neighbours)
    worst, seen = 0.0, set()
    for r in transcript or ():
        tag = tuple(r.tag)
        if len(tag) != 3 or tag[:2] not in initial or not 1 <= tag[2] <= rounds:
            continue
        S0 = np.asarray(initial[tag[:2]], dtype=float)
        if r.dst not in network.neighbours[r.src]:
            return float("inf")
        expect = np.tensordot(powers[tag[2] - 1][r.src], S0, axes=1)
        worst = max(worst, largest_difference([(r.payload, expect)]))
        seen.add((tag, r.src, r.dst))
    return worst if len(seen) == len(initial) * rounds * edges else float("inf")


def mixed_states(transcript: Sequence[TranscriptRecord] | None, network: Network, key: tuple,
                 rounds: int) -> np.ndarray:
    """``(m, ...)``: ``S^(c) = W S^(c-1)`` with ``S^(c-1)`` the payloads of round ``c = rounds`` of the
    phase ``key`` (each agent's row from any message it sent; NaN for an agent that sent none)."""
    sent: dict[int, np.ndarray] = {}
    for r in transcript or ():
        if tuple(r.tag) == (*key, rounds):
            sent.setdefault(r.src, np.asarray(r.payload, dtype=float))
    W = network.dense_W()
    shape = next(iter(sent.values())).shape if sent else ()
    last = np.stack([sent.get(i, np.full(shape, np.nan)) for i in range(W.shape[0])])
    return np.tensordot(W, last, axes=1)
