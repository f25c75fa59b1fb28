"""The discrete-event engine: node programs exchanging messages on a simulated network (simpy).

The kernel (:mod:`~dpgossip.engine.kernel`) runs any protocol's node programs
(:class:`~dpgossip.engine.node.Node`: a generator of sends, receives and compute steps) on the
shared fabric of :mod:`~dpgossip.engine.links` (latency, bandwidth, loss and retransmission) under
the :class:`NetworkConditions` (stragglers, crashes, the crash model of
:mod:`~dpgossip.engine.monitor`), records every accepted message in one transcript
(:mod:`~dpgossip.engine.transcript`) and reports one outcome (:mod:`~dpgossip.engine.outcome`,
:class:`~dpgossip.engine.record.EngineRecord`). Patterns shared by node programs live here once:
``c`` rounds of mixing (:meth:`Node._mix <dpgossip.engine.node.Node._mix>`), the crash model's
operator side (:class:`~dpgossip.engine.monitor.Monitor`), batches of blocks and their canonical
norm (:mod:`~dpgossip.engine.messages`) and the spanning tree for convergecast and broadcast
(:mod:`~dpgossip.engine.tree`). The protocols' node programs live in the protocol layer
(their homes under :mod:`dpgossip.protocols`); the engine names no protocol and imports none.

>>> from dpgossip.engine import NetworkConditions
>>> NetworkConditions.from_mapping({"latency": {"kind": "exponential", "mean": 0.01}}).latency.kind
'exponential'
"""

from dpgossip.engine.conditions import (
    CRASH_POLICIES,
    DISSEMINATIONS,
    LATENCY_KINDS,
    LatencySpec,
    LinkOverride,
    NetworkConditions,
    Straggler,
)
from dpgossip.engine.kernel import Simulation, resolve_conditions
from dpgossip.engine.messages import HEADER_BYTES, Message, tag_kind
from dpgossip.engine.monitor import Monitor
from dpgossip.engine.node import Node, NodeTrace, Outbox
from dpgossip.engine.outcome import (
    STATUSES,
    AgentProgress,
    Detection,
    EngineOutcome,
    EngineSummary,
)
from dpgossip.engine.record import EngineRecord
from dpgossip.engine.transcript import TranscriptRecord, load_transcript

__all__ = [
    "Simulation", "resolve_conditions", "Node", "NodeTrace", "Outbox", "Monitor", "EngineRecord",
    "NetworkConditions", "LatencySpec", "Straggler", "LinkOverride", "LATENCY_KINDS",
    "CRASH_POLICIES", "DISSEMINATIONS", "EngineOutcome", "EngineSummary", "Detection",
    "AgentProgress", "STATUSES", "Message", "HEADER_BYTES", "tag_kind", "TranscriptRecord",
    "load_transcript",
]
