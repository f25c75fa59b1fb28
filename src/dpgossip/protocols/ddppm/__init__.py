"""D-DP-PM (Campbell et al., Algorithm 1) and its floor-free variant: matrix backend, node programs,
release model, the pair auditor with its worst-case neighbour search and certified upper bound, and
calibration."""
