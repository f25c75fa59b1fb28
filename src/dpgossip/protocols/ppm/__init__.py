"""The private power method of Nicolas et al.: central, federated (secure aggregation) and gossip
forms, their node programs, the zCDP/PLD guarantee and the per-instance audit."""
