"""Engine adapters shared by the homes: the c-rounds mixing node, and wrappers that run a protocol object
on the engine kernel."""
