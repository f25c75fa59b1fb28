"""The local-DP baseline: every agent perturbs its own data once, the server runs the power method."""
