"""A data matrix split row-wise among agents (Eq. (1) of Campbell et al.), and the partition rules."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral

import numpy as np

from dpgossip.arrays import check_array, describe
from dpgossip.errors import ConfigError, check_int

__all__ = ["PartitionedData", "partition_sizes", "check_rows_per_agent"]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class PartitionedData:
    """A data matrix ``X`` (``n x d``) whose rows are split into consecutive blocks ``X_1..X_m``.

    Every row has Euclidean norm at most one (the sensitivity contract of Campbell et al., Section IV-B).
    Agent ``i`` holds rows ``offsets[i]:offsets[i+1]``.

    Raises
    ------
    ConfigError
        When ``X`` is not a finite, non-empty 2-D array of real numbers (a NaN or infinite entry is
        named with its row and column), a row lies outside the unit ball, or ``sizes`` are not
        positive integers summing to the number of rows.
    """

    X: np.ndarray
    sizes: tuple[int, ...]
    name: str = "custom"
    offsets: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        X = np.array(check_array(self.X, "X"), dtype=float)  # a private copy, made read-only below
        raw = self.sizes
        if isinstance(raw, (str, bytes, Mapping)) or not isinstance(raw, (Sequence, np.ndarray)) \
                or any(isinstance(s, bool) or not isinstance(s, Integral) for s in raw):
            raise ConfigError(f"sizes must be a sequence of integers (rows per agent, summing to "
                              f"n = {X.shape[0]}), got {describe(raw)}", field="sizes")
        if not isinstance(self.name, str):
            raise ConfigError(f"name must be a string, got {describe(self.name)}", field="name")
        sizes = tuple(int(s) for s in raw)
        if not sizes:
            raise ConfigError("sizes is empty: at least one agent must hold rows", field="sizes")
        if any(s < 1 for s in sizes):
            bad = [i for i, s in enumerate(sizes) if s < 1]
            raise ConfigError(f"sizes: agent {bad[0]} has no rows (sizes {list(sizes)}); "
                              "every agent needs at least one row", field="sizes")
        if sum(sizes) != X.shape[0]:
            raise ConfigError(f"sizes: sizes {list(sizes)} sum to {sum(sizes)}, "
                              f"but the data has {X.shape[0]} rows", field="sizes")
        norms = np.linalg.norm(X, axis=1)
        if np.any(norms > 1.0 + 1e-12):
            i = int(np.argmax(norms))
            raise ConfigError(f"X: row {i} has norm {norms[i]:.6g} > 1; every row must lie in "
                              "the unit ball (scale it with dpgossip.data.preprocess, scale = "
                              "\"max_norm\" or \"unit_rows\")", field="X")
        X.setflags(write=False)
        offsets = np.concatenate(([0], np.cumsum(sizes)))
        offsets.setflags(write=False)
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "sizes", sizes)
        object.__setattr__(self, "offsets", offsets)

    @property
    def n(self) -> int:
        """Number of rows."""
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        """Number of columns."""
        return int(self.X.shape[1])

    @property
    def m(self) -> int:
        """Number of agents."""
        return len(self.sizes)

    def block(self, i: int) -> np.ndarray:
        """Rows of agent ``i`` (a read-only view)."""
        return self.X[self.offsets[i]:self.offsets[i + 1]]

    def agent_of_row(self) -> np.ndarray:
        """Agent index of every row, shape ``(n,)``."""
        return np.repeat(np.arange(self.m), self.sizes)

    def with_matrix(self, X: np.ndarray) -> PartitionedData:
        """Same partition, another matrix of the same shape (for neighbouring datasets)."""
        return PartitionedData(X=X, sizes=self.sizes, name=self.name)

    def to_row(self) -> dict[str, object]:
        """Tidy summary row."""
        return {"dataset": self.name, "n": self.n, "d": self.d, "agents": self.m}


def check_rows_per_agent(n: int, m: int) -> None:
    """Raise ``ConfigError`` when ``n`` rows cannot give each of ``m`` agents at least one row."""
    if n < m:
        raise ConfigError(f"data has {n} row{'s' if n != 1 else ''} but there are {m} agents; every "
                          "agent needs at least one row (use fewer agents or more data)")


def partition_sizes(n: int, m: int, rule: str = "equal", *, sizes: list[int] | None = None,
                    min_rows: int = 1, rng: np.random.Generator | None = None) -> tuple[int, ...]:
    """Split ``n`` rows among ``m`` agents.

    Rules: ``"equal"`` (sizes differ by at most one, larger blocks first), ``"explicit"`` (``sizes``
    given), ``"random"`` (uneven, uniformly random composition with at least ``min_rows`` per agent;
    needs ``rng``).
    """
    n = check_int(n, "n", 1)
    m = check_int(m, "m", 1)
    check_rows_per_agent(n, m)
    if rule == "equal":
        base, extra = divmod(n, m)
        return tuple(base + (1 if i < extra else 0) for i in range(m))
    if rule == "explicit":
        if sizes is None or len(sizes) != m:
            raise ConfigError(f"sizes must list one size per agent ({m}), got {sizes!r}",
                              field="sizes")
        counts = tuple(check_int(s, f"sizes[{i}]", 0) for i, s in enumerate(sizes))
        if sum(counts) != n:
            raise ConfigError(f"sizes: sizes {list(counts)} sum to {sum(counts)}, but the data has "
                              f"{n} rows", field="sizes")
        return counts
    if rule == "random":
        if min_rows < 1 or min_rows * m > n:
            raise ConfigError(f"min_rows must be in [1, {n // m}] for {n} rows and {m} "
                              f"agents, got {min_rows}", field="min_rows")
        if rng is None:
            raise ConfigError("random partition needs a random generator")
        free = n - min_rows * m
        cuts = np.sort(rng.integers(0, free + 1, size=m - 1))
        parts = np.diff(np.concatenate(([0], cuts, [free])))
        return tuple(int(p) + min_rows for p in parts)
    raise ConfigError(f"rule must be one of 'equal', 'explicit', 'random', got {rule!r}",
                      field="rule")
