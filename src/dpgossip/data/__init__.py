"""Datasets for the decentralized DP power method: load, preprocess and split rows among agents.

Pipeline of :func:`load_dataset`: raw matrix (bundled dataset, synthetic spectrum or user file)
-> :func:`preprocess` (public, global-statistics preprocessing into the unit ball)
-> :func:`partition_sizes` -> :class:`PartitionedData` (Eq. (1) of Campbell et al.: agent ``i`` holds the
block ``X_i`` of consecutive rows).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from numbers import Integral
from pathlib import Path

import numpy as np

from dpgossip.data.bundled import DATASETS, bundled_shape, load_bundled
from dpgossip.data.loading import MATRIX_SUFFIXES, _is_number, load_matrix
from dpgossip.data.partition import PartitionedData, check_rows_per_agent, partition_sizes
from dpgossip.data.preprocess import SCALES, preprocess
from dpgossip.data.raw import RawData
from dpgossip.data.synthetic import SPECTRUM_KINDS, spectrum_values, synthetic_data
from dpgossip.errors import ConfigError, did_you_mean, renamed_fields
from dpgossip.rng import as_generator

__all__ = [
    "DATASETS",
    "MATRIX_SUFFIXES",
    "PARTITIONS",
    "SCALES",
    "SPECTRUM_KINDS",
    "PartitionedData",
    "RawData",
    "load_bundled",
    "load_dataset",
    "load_matrix",
    "partition_sizes",
    "preprocess",
    "source_shape",
    "spectrum_values",
    "synthetic_data",
]

PARTITIONS: tuple[str, ...] = ("equal", "explicit", "random")
"""Accepted values of ``partition``."""

_SYNTHETIC_KEYS: tuple[str, ...] = ("n", "d", "spectrum")


def _check_split(agents: int, partition: str, sizes: Sequence[int] | None, min_rows: int,
                 rng: np.random.Generator | None) -> None:
    """Check the options of the row split before any data is read."""
    if isinstance(agents, bool) or not isinstance(agents, Integral) or agents < 1:
        raise ConfigError(f"agents must be a positive integer, got {agents!r}", field="agents")
    if not isinstance(partition, str) or partition not in PARTITIONS:
        hint = did_you_mean(partition, PARTITIONS) if isinstance(partition, str) else ""
        raise ConfigError(f"partition must be one of {list(PARTITIONS)}, "
                          f"got {partition!r}{hint}", field="partition")
    if isinstance(min_rows, bool) or not isinstance(min_rows, Integral) or min_rows < 1:
        raise ConfigError(f"min_rows must be an integer >= 1, got {min_rows!r}", field="min_rows")
    if partition == "explicit":
        _check_sizes(sizes, int(agents))
    elif sizes is not None:
        raise ConfigError(f"sizes = {sizes!r} is only used with partition = "
                          f"'explicit', got partition {partition!r}", field="sizes")
    if partition == "random" and rng is None:
        raise ConfigError("partition = 'random' needs rng (a numpy.random.Generator or an integer "
                          "seed), got None", field="partition")


def load_dataset(source: str | os.PathLike[str], *, agents: int, partition: str = "equal",
                 sizes: Sequence[int] | None = None, min_rows: int = 1, center: bool = False,
                 standardize: bool = True, scale: str = "max_norm",
                 synthetic: Mapping[str, object] | None = None,
                 rng: np.random.Generator | None = None) -> PartitionedData:
    """Load a dataset, preprocess it into the unit ball and split its rows among agents.

    Parameters
    ----------
    source : str or os.PathLike
        ``"wine"``, ``"breast_cancer"``, ``"diabetes"`` (see :data:`DATASETS`; labels and targets
        dropped), ``"synthetic"`` (needs ``synthetic`` and ``rng``), or a path to a ``.csv`` or
        ``.npy`` file (see :func:`load_matrix`).
    agents : int
        Number of agents ``m >= 1``.
    partition : {"equal", "explicit", "random"}
        How rows are split (:func:`partition_sizes`): sizes differing by at most one; the given
        ``sizes``; or a uniformly random composition with at least ``min_rows`` rows per agent
        (needs ``rng``). Agent ``i`` always holds consecutive rows.
    sizes : list of int, optional
        Rows per agent, only with ``partition="explicit"``; positive and summing to ``n``.
    min_rows : int
        Smallest number of rows any agent may hold (all rules), ``>= 1``.
    center, standardize, scale
        Passed to :func:`preprocess`. Note that ``standardize=True`` (the default) changes a
        synthetic spectrum; pass ``standardize=False`` to keep it (``"max_norm"`` then only
        divides every singular value by the largest row norm).
    synthetic : dict, optional
        ``{"n": rows, "d": cols, "spectrum": ...}`` for ``source="synthetic"``; see
        :mod:`dpgossip.data.synthetic` for the spectrum schema.
    rng : numpy.random.Generator, int or numpy.random.SeedSequence, optional
        Needed for ``"synthetic"`` and ``partition="random"`` (an integer or ``SeedSequence`` goes
        through ``numpy.random.default_rng``). The synthetic matrix is drawn first, then the
        partition.

    Returns
    -------
    PartitionedData
        The preprocessed matrix (every row in the unit ball) and the per-agent sizes.

    Raises
    ------
    ConfigError
        For any bad option, naming the parameter (``source``, ``partition``, ``sizes``,
        ``min_rows``, ``synthetic.spectrum``, ...; :attr:`ConfigError.field`), the value and what
        is allowed.

    Examples
    --------
    >>> data = load_dataset("wine", agents=10)
    >>> data.n, data.d, data.sizes[:3]
    (178, 13, (18, 18, 18))
    """
    if not isinstance(source, (str, os.PathLike)):
        raise ConfigError(f"source must be a dataset name ({', '.join(DATASETS)}, synthetic) or a "
                          f"path to a {' or '.join(MATRIX_SUFFIXES)} file, got {source!r}",
                          field="source")
    if rng is not None:
        rng = as_generator(rng, "rng")  # one generator: the synthetic matrix, then the partition
    _check_split(agents, partition, sizes, min_rows, rng)
    raw = _raw(source, synthetic, rng)
    check_rows_per_agent(raw.n, int(agents))  # before preprocessing, which may fail on tiny data
    X = preprocess(raw.X, center=center, standardize=standardize, scale=scale)
    n = X.shape[0]
    if partition == "random" and agents <= n < min_rows * agents:
        raise ConfigError(f"min_rows = {min_rows} is too large: {agents} agents x "
                          f"{min_rows} rows > {n} rows; allowed: 1 to {n // agents}",
                          field="min_rows")
    with renamed_fields({"m": "agents", "rule": "partition"}):
        counts = partition_sizes(n, int(agents), partition, sizes=None if sizes is None
                                 else list(sizes), min_rows=int(min_rows), rng=rng)
    data = PartitionedData(X=X, sizes=counts, name=raw.name)
    if min(data.sizes) < min_rows:
        i = int(np.argmin(data.sizes))
        raise ConfigError(f"min_rows = {min_rows} is too large: agent {i} gets "
                          f"{data.sizes[i]} rows with partition {partition!r} "
                          f"({n} rows, {agents} agents); allowed: 1 to {min(data.sizes)}",
                          field="min_rows")
    return data


def _check_sizes(sizes: Sequence[int] | None, agents: int) -> None:
    if sizes is None or isinstance(sizes, (str, bytes, Mapping)) \
            or not isinstance(sizes, (Sequence, np.ndarray)):
        raise ConfigError(f"sizes must list the rows of each of the {agents} agents for "
                          f"partition = 'explicit', got {sizes!r}", field="sizes")
    for i, s in enumerate(sizes):
        if isinstance(s, bool) or not isinstance(s, Integral):
            raise ConfigError(f"sizes[{i}] = {s!r} must be an integer number of rows",
                              field=f"sizes[{i}]")
    if len(sizes) != agents:
        raise ConfigError(f"sizes must list one size per agent ({agents}), got "
                          f"{len(sizes)}: {list(sizes)!r}", field="sizes")


def _raw(source: str | os.PathLike[str], synthetic: Mapping[str, object] | None,
         rng: np.random.Generator | None) -> RawData:
    if source == "synthetic":
        if not isinstance(synthetic, Mapping):
            raise ConfigError("source = 'synthetic' needs synthetic = "
                              f"{{'n': rows, 'd': cols, 'spectrum': ...}}, got {synthetic!r}",
                              field="source")
        for key in synthetic:
            if key not in _SYNTHETIC_KEYS:
                raise ConfigError(f"synthetic: unknown key {key!r}"
                                  f"{did_you_mean(str(key), _SYNTHETIC_KEYS)}; "
                                  f"allowed: {list(_SYNTHETIC_KEYS)}", field="synthetic")
        missing = [k for k in _SYNTHETIC_KEYS if k not in synthetic]
        if missing:
            raise ConfigError(f"synthetic is missing {missing} (needs keys "
                              f"{list(_SYNTHETIC_KEYS)}), got {dict(synthetic)!r}",
                              field="synthetic")
        with renamed_fields({k: f"synthetic.{k}" for k in _SYNTHETIC_KEYS}):
            return synthetic_data(synthetic["n"], synthetic["d"], synthetic["spectrum"], rng=rng)
    if synthetic is not None:
        raise ConfigError(f"synthetic is only used with source = 'synthetic', "
                          f"got source {source!r}", field="synthetic")
    if isinstance(source, str) and source in DATASETS:
        with renamed_fields({"name": "source"}):
            return load_bundled(source)
    if isinstance(source, os.PathLike) or (isinstance(source, str) and _looks_like_path(source)):
        with renamed_fields({"path": "source"}):
            return load_matrix(source)
    choices = (*DATASETS, "synthetic")
    hint = did_you_mean(source, choices) if isinstance(source, str) else ""
    raise ConfigError(f"source: unknown source {source!r}{hint}; allowed: "
                      f"{', '.join(choices)}, or a path to a {' or '.join(MATRIX_SUFFIXES)} file",
                      field="source")


def source_shape(source: object, synthetic: object = None) -> tuple[int, int] | None:
    """``(rows, columns)`` that ``data.source`` will give, found without loading the data (a bundled
    dataset's known shape, ``data.synthetic``'s ``n`` and ``d``, a ``.npy`` header, or the lines and
    commas of a ``.csv`` file); ``None`` when it cannot be told cheaply (the loader then reports any
    problem). Used to check sizes before anything is allocated."""
    if not isinstance(source, (str, os.PathLike)):
        return None
    if isinstance(source, str) and source in DATASETS:
        return bundled_shape(source)
    if source == "synthetic":
        if isinstance(synthetic, Mapping):
            n, d = synthetic.get("n"), synthetic.get("d")
            if all(isinstance(v, Integral) and not isinstance(v, bool) and v >= 1 for v in (n, d)):
                return int(n), int(d)  # type: ignore[arg-type]
        return None
    p = Path(source)
    try:
        if not p.is_file():
            return None
        if p.suffix.lower() == ".npy":
            with open(p, "rb") as fh:
                version = np.lib.format.read_magic(fh)
                read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                        else np.lib.format.read_array_header_2_0)
                shape = read(fh)[0]
            return (int(shape[0]), int(shape[1])) if len(shape) == 2 else None
        if p.suffix.lower() == ".csv":
            rows, heads = 0, []
            with open(p, "rb") as fh:
                for line in fh:
                    if line.strip():
                        rows += 1
                        if len(heads) < 2:
                            heads.append(line)
            return _csv_shape(rows, heads)
    except (OSError, ValueError, TypeError, IndexError):
        return None
    return None


def _csv_shape(rows: int, heads: list[bytes]) -> tuple[int, int] | None:
    """``(rows, columns)`` of a CSV file of ``rows`` non-blank lines starting with ``heads``: a header
    line is not a row; ``None`` (the loader reports the problem) when the file is not UTF-8 or its
    first data line is not all numbers (another separator, text)."""
    try:
        cells = [h.decode("utf-8-sig").split(",") for h in heads]
    except UnicodeDecodeError:
        return None
    if cells and any(c.strip() and not _is_number(c) for c in cells[0]):
        rows, cells = rows - 1, cells[1:]
    if not rows or not cells or not all(_is_number(c) for c in cells[0]):
        return None
    return rows, len(cells[0])


def _looks_like_path(source: str) -> bool:
    return bool(Path(source).suffix) or "/" in source or os.sep in source \
        or Path(source).exists()
