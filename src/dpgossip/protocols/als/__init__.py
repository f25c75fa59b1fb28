"""Private alternating least squares (Chien et al., Algorithm 1): central, federated and over gossip
(docs/als.md)."""
