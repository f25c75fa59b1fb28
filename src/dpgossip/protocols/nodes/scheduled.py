"""A node that mixes by a schedule: round ``t`` with its row of ``W_t`` (docs/dynamic-gossip.md, section 8).

:class:`ScheduledNode` is a :class:`~dpgossip.engine.node.Node` with one more step,
:meth:`ScheduledNode._mix_rounds`: the rounds of one consensus phase, round ``k`` reading agent
``i``'s part of ``W_t`` (a :data:`~dpgossip.protocols.gossip.round_mixing.NodeRound`):

    send S_i^(k-1) to every j with W_t[j, i] != 0,  wait for every j with W_t[i, j] != 0,
    S_i^(k) = W_t[i, i] S_i^(k-1) + sum_j W_t[i, j] S_j^(k-1)     (j increasing),

the update of :meth:`Node._mix` with the round's own weights (the same sum in the same order, so a
schedule whose every ``W_t`` is ``W`` gives the same bits). An agent whose row of ``W_t`` is ``e_i``
and whose column has no other entry sends and waits for nothing that round. Every weight it used is
appended to :attr:`ScheduledNode.realised` as ``(t, i, j, W_t[i, j])`` (and ``(t, i, i, W_t[i, i])``),
the record from which an engine run's realised schedule is assembled
(:func:`~dpgossip.topology.schedules.matrices_from_entries`).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence

import numpy as np
from simpy.events import Event

from dpgossip.engine.node import Node, Outbox
from dpgossip.protocols.gossip.round_mixing import NodeRound
from dpgossip.topology.schedules import MixingSchedule, matrices_from_entries

__all__ = ["ScheduledNode", "realised_schedule"]


class ScheduledNode(Node):
    """A node whose consensus rounds may follow a schedule (module docstring)."""

    def __init__(self, node_id: int, outbox: Outbox, trace: object, compute_delay: float) -> None:
        super().__init__(node_id, outbox, trace, compute_delay)
        self.realised: list[tuple[int, int, int, float]] = []
        """``(t, i, j, W_t[i, j])`` of every weight the node used, in order."""

    def _mix_rounds(self, S: np.ndarray, prefix: tuple, plan: Sequence[NodeRound], start: int,
                    record: Callable[[int, np.ndarray], None] | None = None, *,
                    record_after_compute: bool = False) -> Generator[Event, object, np.ndarray]:
        """``len(plan)`` rounds from ``S`` under the tags ``prefix + (k,)``; ``plan[k - 1]`` is the
        node's part of ``W_{start + k - 1}``. ``record`` as in :meth:`Node._mix`."""
        if record is not None:
            record(0, S)
        for k, (w_self, w_nbr, receivers) in enumerate(plan, start=1):
            tag = prefix + (k,)
            if receivers:
                self.outbox.broadcast(tag, S, receivers)
            got = yield from self._collect(tag, len(w_nbr))
            S = w_self * S + sum(w * got[j] for j, w in w_nbr.items())
            t = start + k - 1
            self.realised.append((t, self.id, self.id, w_self))
            self.realised.extend((t, self.id, j, w) for j, w in w_nbr.items())
            if record is not None and not record_after_compute:
                record(k, S)
            yield from self._compute()
            if record is not None and record_after_compute:
                record(k, S)
        return S


def realised_schedule(nodes: Sequence[Node], rounds: int, *, label: str = "engine",
                      keep_missing: bool = False) -> MixingSchedule | None:
    """The schedule the nodes ran: ``W_t[i, j]`` as each node used it (their ``realised`` records),
    for ``rounds`` rounds. A node that did not mix round ``t`` (it crashed) has no row there:
    ``None``, or with ``keep_missing`` the identity row (it kept its value, as an absent agent of
    :func:`~dpgossip.engine.dynamic.run_rounds` does)."""
    entries = [e for n in nodes for e in n.realised]
    mixed: list[set[int]] = [set() for _ in range(rounds)]
    for t, i, j, _ in entries:
        if i == j:
            mixed[t].add(i)
    m = len(nodes)
    missing = [[i for i in range(m) if i not in mixed[t]] for t in range(rounds)]
    if not m or (any(missing) and not keep_missing):
        return None
    mats = matrices_from_entries(m, rounds, entries, missing)
    sums = np.abs(np.stack([W.sum(axis=0) for W in mats]) - 1.0) if mats else np.zeros(0)
    stochastic = "doubly" if not sums.size or sums.max() <= 1e-9 else "row"
    return MixingSchedule(m=m, kind="rounds", matrices=mats, stochastic=stochastic, label=label)
