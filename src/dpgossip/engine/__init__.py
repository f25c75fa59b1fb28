"""The discrete-event engine: D-DP-PM message by message on a simulated network (simpy).

Agents are simpy processes holding only their own block, stream, neighbour weights and received
messages (:mod:`~dpgossip.engine.agent`); links add latency, bandwidth, loss and reliable delivery
(:mod:`~dpgossip.engine.links`); every accepted message goes to a transcript
(:mod:`~dpgossip.engine.transcript`); crashes and lost messages are detected by timeouts and
handled by a policy (:mod:`~dpgossip.engine.simulator`). With ideal links the result equals
:func:`dpgossip.protocol.run_matrix` to rounding error.

>>> from dpgossip.engine import NetworkConditions
>>> NetworkConditions.from_mapping({"latency": {"kind": "exponential", "mean": 0.01}}).latency.kind
'exponential'
"""

from dpgossip.engine.agent import Agent, AgentSettings, AgentTrace, Outbox
from dpgossip.engine.cape_engine import CapeEngineResult, run_cape_engine
from dpgossip.engine.conditions import (
    CRASH_POLICIES,
    DISSEMINATIONS,
    LATENCY_KINDS,
    LatencySpec,
    LinkOverride,
    NetworkConditions,
    Straggler,
)
from dpgossip.engine.floorfree_engine import FloorFreeEngineResult, run_floorfree_engine
from dpgossip.engine.messages import HEADER_BYTES, Message, tag_kind
from dpgossip.engine.outcome import (
    STATUSES,
    AgentProgress,
    Detection,
    EngineOutcome,
    EngineSummary,
)
from dpgossip.engine.ppm_engine import PpmEngineResult, run_ppm_engine
from dpgossip.engine.result import EngineResult
from dpgossip.engine.simulator import run_engine
from dpgossip.engine.transcript import TranscriptRecord, load_transcript

__all__ = [
    "run_engine", "EngineResult", "NetworkConditions", "LatencySpec", "Straggler", "LinkOverride",
    "LATENCY_KINDS", "CRASH_POLICIES", "DISSEMINATIONS", "EngineOutcome", "EngineSummary", "Detection",
    "AgentProgress", "STATUSES", "Message", "HEADER_BYTES", "tag_kind", "TranscriptRecord",
    "load_transcript", "Agent", "AgentSettings", "AgentTrace", "Outbox", "run_ppm_engine",
    "PpmEngineResult", "run_cape_engine", "CapeEngineResult", "run_floorfree_engine",
    "FloorFreeEngineResult",
]
