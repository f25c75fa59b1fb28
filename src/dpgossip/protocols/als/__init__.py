"""Private alternating least squares (002, Algorithm 1): central, federated and over gossip (docs/als.md)."""
