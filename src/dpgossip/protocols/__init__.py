"""Protocols: one home per family, and the registry of kinds (:mod:`dpgossip.protocols.registry`).

Each home holds everything that is specific to its protocols: the maths (the matrix backend), the node
programs for the engine kernel, the release model and the audit, the guarantee or accountant where its paper
has one, and its scenario settings, registered as kinds in its ``kinds`` module:

* :mod:`dpgossip.protocols.ddppm` -- D-DP-PM (Campbell et al., Algorithm 1) and its floor-free variant;
* :mod:`dpgossip.protocols.ppm` -- the private power method of Nicolas et al. (central, federated, gossip);
* :mod:`dpgossip.protocols.cape` -- capePCA of Imtiaz and Sarwate (star and gossip forms);
* :mod:`dpgossip.protocols.gossip` -- gossip averaging (plain, noisy, DECOR) and its network-DP bounds;
* :mod:`dpgossip.protocols.ldp` -- the local-DP baseline.

The modules at this level are shared by every home: :mod:`~dpgossip.protocols.interface` (the common view
of a run), :mod:`~dpgossip.protocols.checks`, :mod:`~dpgossip.protocols.metrics`,
:mod:`~dpgossip.protocols.power`, :mod:`~dpgossip.protocols.status`,
:mod:`~dpgossip.protocols.noise_settings` (the noise keys of a kind's section),
:mod:`~dpgossip.protocols.examples` (the small cases of ``ProtocolKind.example``) and the engine adapters
of :mod:`dpgossip.protocols.nodes`.
"""
