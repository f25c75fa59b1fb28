"""dpgossip: simulate and audit the Decentralized Differentially Private Power Method on gossip networks."""

from dpgossip.errors import ConfigError

__all__ = ["ConfigError", "__version__"]
__version__ = "0.1.0"
