"""The private power method of 000: central, federated (secure aggregation) and gossip forms, their node
programs, the zCDP/PLD guarantee and the per-instance audit."""
