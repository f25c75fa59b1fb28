"""The protocols' node programs for the discrete-event engine (:mod:`dpgossip.engine`).

Each module runs one protocol family message by message on the engine kernel
(:class:`~dpgossip.engine.kernel.Simulation`) with nodes that subclass
:class:`~dpgossip.engine.node.Node`, and turns the nodes' own records into the protocol's result:

* :mod:`~dpgossip.protocol.nodes.ddppm` (:func:`run_engine`, agents in
  :mod:`~dpgossip.protocol.nodes.ddppm_agent`): D-DP-PM (Algorithm 1 of 001);
* :mod:`~dpgossip.protocol.nodes.floorfree`: the floor-free D-DP-PM;
* :mod:`~dpgossip.protocol.nodes.ppm` (parties in :mod:`~dpgossip.protocol.nodes.ppm_parties`): the
  private power method of 000 (central, federated, gossip);
* :mod:`~dpgossip.protocol.nodes.cape` (parties in :mod:`~dpgossip.protocol.nodes.cape_parties`):
  capePCA on a star and by gossip;
* :mod:`~dpgossip.protocol.nodes.gossip`: gossip averaging (average, noisy, DECOR, secure summation).

:mod:`~dpgossip.protocol.nodes.ppm_protocol` and :mod:`~dpgossip.protocol.nodes.view_protocol` wrap
protocol objects of :mod:`dpgossip.protocol.interface` to run on the engine.
"""

from dpgossip.protocol.nodes.cape import CapeEngineResult, run_cape_engine
from dpgossip.protocol.nodes.ddppm import run_engine
from dpgossip.protocol.nodes.ddppm_agent import Agent, AgentSettings, AgentTrace
from dpgossip.protocol.nodes.ddppm_result import EngineResult
from dpgossip.protocol.nodes.floorfree import FloorFreeEngineResult, run_floorfree_engine
from dpgossip.protocol.nodes.gossip import GossipEngineResult, run_gossip_engine
from dpgossip.protocol.nodes.ppm import PpmEngineResult, run_ppm_engine

__all__ = ["run_engine", "EngineResult", "Agent", "AgentSettings", "AgentTrace", "run_ppm_engine",
           "PpmEngineResult", "run_cape_engine", "CapeEngineResult", "run_floorfree_engine",
           "FloorFreeEngineResult", "run_gossip_engine", "GossipEngineResult"]
