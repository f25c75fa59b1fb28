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

Under a schedule (:class:`~dpgossip.protocols.gossip.round_mixing.RoundMixing`) round ``k`` of a phase
that starts at global round ``t0`` mixes with ``W_t``, ``t = t0 + k - 1``:

* :func:`schedule_residual`: the message of ``j`` to ``i`` in round ``k`` carries
  ``e_j^T Phi_{k-1} S^(0)``, ``Phi_{k-1} = W_{t-1} ... W_{t0}``; every pair with ``W_t[i, j] != 0``,
  ``i != j``, must carry exactly one message of the round and no other pair any (else ``inf``);
* :func:`schedule_states`: the states ``S^(0..c)`` rebuilt forward from the messages alone: an agent's
  ``S_i^(k-1)`` is its round-``k`` payload when it sent one, else what the rebuild gave it for that
  round, and ``S_i^(k) = W_t[i, i] S_i^(k-1) + sum_j W_t[i, j] S_j^(k-1)`` over the messages it
  received. A state the messages do not determine (an agent that sent nothing so far in the phase and
  did not mix yet) is NaN: a schedule may leave an agent out of every round of a phase, and then the
  transcript holds nothing of its state.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from dpgossip.engine.transcript import TranscriptRecord
from dpgossip.protocols.gossip.round_mixing import RoundMixing
from dpgossip.topology.network import Network

__all__ = ["largest_difference", "messages_of", "gossip_residual", "mixed_states", "schedule_residual",
           "schedule_states"]


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


def schedule_residual(transcript: Sequence[TranscriptRecord] | None, mixing: RoundMixing,
                      initial: Mapping[tuple, np.ndarray], starts: Mapping[tuple, int],
                      rounds: int) -> float:
    """Largest ``|payload - e_src^T Phi_{k-1} S^(0)|`` over the messages of the phases ``initial``
    (``{key: S^(0)}``, first global round ``starts[key]``); ``inf`` unless the messages are exactly
    one per nonzero off-diagonal ``W_t[dst, src]`` of every round (module docstring)."""
    expected, phis = set(), {}
    for key in initial:
        phi, t0 = np.eye(mixing.network.m), starts[key]
        phis[key] = []
        for k in range(1, rounds + 1):
            W = mixing.dense(t0 + k - 1)
            phis[key].append(phi)
            dst, src = np.nonzero(W)
            expected |= {((*key, k), int(j), int(i)) for i, j in zip(dst, src, strict=True) if i != j}
            phi = W @ phi
    worst, seen = 0.0, set()
    for r in transcript or ():
        tag = tuple(r.tag)
        if len(tag) != 3 or tag[:2] not in initial or not 1 <= tag[2] <= rounds:
            continue
        if (tag, r.src, r.dst) not in expected or (tag, r.src, r.dst) in seen:
            return float("inf")
        S0 = np.asarray(initial[tag[:2]], dtype=float)
        expect = np.tensordot(phis[tag[:2]][tag[2] - 1][r.src], S0, axes=1)
        worst = max(worst, largest_difference([(r.payload, expect)]))
        seen.add((tag, r.src, r.dst))
    return worst if seen == expected else float("inf")


def schedule_states(transcript: Sequence[TranscriptRecord] | None, mixing: RoundMixing, key: tuple,
                    start: int, rounds: int) -> np.ndarray:
    """``(rounds + 1, m, ...)``: the states of the phase ``key`` rebuilt from its messages (module
    docstring); NaN where the messages do not determine them."""
    m = mixing.network.m
    sent: dict[int, dict[int, np.ndarray]] = {}
    for r in transcript or ():
        tag = tuple(r.tag)
        if len(tag) == 3 and tag[:2] == tuple(key) and 1 <= tag[2] <= rounds:
            sent.setdefault(tag[2], {}).setdefault(r.src, np.asarray(r.payload, dtype=float))
    shape = next(iter(next(iter(sent.values())).values())).shape if sent else ()
    cur: list[np.ndarray | None] = [None] * m
    out = []
    for k in range(1, rounds + 1):
        got = sent.get(k, {})
        for i, payload in got.items():
            cur[i] = payload
        out.append([np.full(shape, np.nan) if v is None else v for v in cur])
        W = mixing.dense(start + k - 1)
        nxt: list[np.ndarray | None] = []
        for i in range(m):
            nbrs = [j for j in np.flatnonzero(W[i]).tolist() if j != i]
            if (W[i, i] != 0 and cur[i] is None) or any(j not in got for j in nbrs):
                nxt.append(None)
                continue
            own = W[i, i] * cur[i] if W[i, i] != 0 else 0.0
            nxt.append(own + sum(W[i, j] * got[j] for j in nbrs))
        cur = nxt
    out.append([np.full(shape, np.nan) if v is None else np.asarray(v, dtype=float) for v in cur])
    return np.stack([np.stack(row) for row in out])
