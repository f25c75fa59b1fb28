"""Boundary checks of the public run functions: the arguments are what the function documents.

Every check raises :class:`~dpgossip.errors.ConfigError` naming the argument, the value (or its type)
and what is allowed, so that a wrong argument never reaches numpy or LAPACK (an ``AttributeError``, a
``LinAlgError`` or a silently wrong number deep inside a run).
"""

from __future__ import annotations

from numbers import Integral

import numpy as np

from dpgossip.arrays import check_array, describe
from dpgossip.data.partition import PartitionedData
from dpgossip.errors import ConfigError, show
from dpgossip.rng import as_generator, as_seed_sequence
from dpgossip.topology.network import Network

__all__ = ["check_data", "check_network", "check_seed", "as_generator",
           "check_matrix", "check_rank"]


def check_data(data: object, field: str = "data") -> PartitionedData:
    """``data`` when it is a :class:`~dpgossip.data.PartitionedData` (finite rows in the unit ball,
    checked when it was built)."""
    if not isinstance(data, PartitionedData):
        raise ConfigError(f"{field} must be a dpgossip.data.PartitionedData (from "
                          f"dpgossip.load_dataset or PartitionedData(X=..., sizes=...)), got "
                          f"{describe(data)}", field=field)
    return data


def check_network(network: object, agents: int | None = None, field: str = "network") -> Network:
    """``network`` when it is a :class:`~dpgossip.topology.Network` whose ``W`` is a symmetric
    doubly-stochastic averaging matrix (D-DP-PM's Assumption 2) on ``agents`` agents (if given)."""
    if not isinstance(network, Network):
        raise ConfigError(f"{field} must be a dpgossip.topology.Network (from dpgossip.make_network "
                          f"or Network(graph=..., W=...)), got {describe(network)}", field=field)
    if not network.doubly_stochastic:
        raise ConfigError(f"{field}: the mixing matrix of {network.name!r} (mixing "
                          f"{network.mixing!r}) is not a symmetric doubly-stochastic matrix with "
                          "SLEM < 1 (the network was built with allow_nonstochastic=True); D-DP-PM "
                          "averages by W and needs one (Assumption 2 of Campbell et al.): use "
                          "dpgossip.make_network or a valid W", field=field)
    if agents is not None and network.m != agents:
        raise ConfigError(f"{field} has {network.m} agents but the data are split among {agents}; "
                          "they must be equal", field=field)
    return network


def check_seed(seed: object, field: str = "seed") -> np.random.SeedSequence:
    """``seed`` (a non-negative integer or a ``numpy.random.SeedSequence``) as a ``SeedSequence``.

    A ``numpy.random.Generator`` is refused: its state cannot be turned back into the seed that
    reproduces the run, and the per-agent streams of :mod:`dpgossip.rng` are spawned from a seed.
    """
    if isinstance(seed, np.random.Generator):
        raise ConfigError(f"{field} must be a non-negative integer or a numpy.random.SeedSequence, "
                          "got a numpy.random.Generator (the per-agent noise streams are spawned "
                          "from a seed; pass the integer you would give default_rng)", field=field)
    try:
        return as_seed_sequence(seed)  # type: ignore[arg-type]
    except ConfigError:
        raise ConfigError(f"{field} must be a non-negative integer or a numpy.random.SeedSequence, "
                          f"got {describe(seed)}", field=field) from None


def check_matrix(X: object, field: str = "X", *, ndim: int = 2) -> np.ndarray:
    """``X`` as a finite, non-empty real float array with ``ndim`` dimensions
    (:func:`dpgossip.arrays.check_array`)."""
    return check_array(X, field, ndim=ndim)


def check_rank(rank: object, largest: int, field: str = "rank", *, why: str = "min(n, d)") -> int:
    """``rank`` when it is an integer in ``[1, largest]``."""
    if isinstance(rank, bool) or not isinstance(rank, Integral) or not 1 <= rank <= largest:
        raise ConfigError(f"{field} must be an integer in [1, {why} = {largest}], got {show(rank)}",
                          field=field)
    return int(rank)
