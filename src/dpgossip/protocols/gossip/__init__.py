"""Gossip averaging (plain, noisy, DECOR): the linear model of every message, node programs, and the
published network-DP bounds (Muffliato, DECOR) beside the exact audit."""
