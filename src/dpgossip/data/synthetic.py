r"""Synthetic matrices with a prescribed singular spectrum.

.. math::

    X = U \operatorname{diag}(s) V^\top, \qquad U \in \mathbb{R}^{n \times k},\;
    V \in \mathbb{R}^{d \times k},\; U^\top U = V^\top V = I_k,

with ``U`` and ``V`` Haar-distributed (uniform on their Stiefel manifolds) and
``s_1 >= s_2 >= ... >= s_k > 0``. The singular values of ``X`` are exactly ``s`` (up to rounding)
and its right singular vectors, the principal directions sought by the power method, are the
columns of ``V``. The eigengap ``s_1^2 / s_2^2`` of ``X^T X`` is thus set directly.

Spectrum schema (the ``spectrum`` argument)
-------------------------------------------
* a list of numbers ``[s_1, ..., s_k]``: positive, non-increasing, ``1 <= k <= min(n, d)``;
* ``{"kind": "geometric", "ratio": r, "top": s_1 = 1.0, "k": min(n, d)}``:
  ``s_i = s_1 r^{i-1}`` for ``i = 1..k``, with ``0 < r <= 1``;
* ``{"kind": "gap", "gap": g, "ratio": r, "k": min(n, d)}``: ``s_1 = 1``, ``s_2 = 1/g`` and a
  geometric tail ``s_i = r^{i-2} / g`` for ``i = 2..k``, with ``g >= 1`` and ``0 < r <= 1``.

``top`` and ``k`` are optional; ``ratio`` and ``gap`` are required.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from numbers import Integral, Real

import numpy as np

from dpgossip.data.raw import RawData
from dpgossip.data.tall import tall_qr, use_tall
from dpgossip.errors import ConfigError, check_number, did_you_mean, show
from dpgossip.rng import as_generator

__all__ = ["SPECTRUM_KINDS", "spectrum_values", "synthetic_data"]

SPECTRUM_KINDS: tuple[str, ...] = ("geometric", "gap")
"""Named spectrum families accepted as ``{"kind": ...}``."""

_KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # kind: (required keys, optional keys), besides "kind"
    "geometric": (("ratio",), ("top", "k")),
    "gap": (("gap", "ratio"), ("k",)),
}


def synthetic_data(n: int, d: int, spectrum: Sequence[float] | Mapping[str, object], *,
                   rng: np.random.Generator) -> RawData:
    r"""Draw ``X = U diag(s) V^T`` (``n x d``) with the given singular values.

    Parameters
    ----------
    n, d : int
        Number of rows and columns, both ``>= 1``.
    spectrum : list of float or dict
        Singular values ``s`` or a named family; see the module docstring for the schema.
    rng : numpy.random.Generator, int or numpy.random.SeedSequence
        Source of randomness. ``U`` is drawn first, then ``V``, each as the ``Q`` factor of a
        standard Gaussian matrix with the signs of ``diag(R)`` absorbed, which makes it Haar
        distributed.

    Returns
    -------
    RawData
        ``X`` with singular values exactly ``s`` (to rounding, about ``1e-15 s_1``) and
        ``rank(X) = k``; it is *not* scaled into the unit ball.

    Raises
    ------
    ConfigError
        For a bad ``n``, ``d``, ``spectrum`` or ``rng``.
    """
    n = _positive_int(n, "n")
    d = _positive_int(d, "d")
    s = spectrum_values(spectrum, n, d)
    if rng is None:
        raise ConfigError("rng: synthetic data needs rng, a numpy.random.Generator, got None (or "
                          "give an integer seed)", field="rng")
    rng = as_generator(rng, "rng")
    k = s.size
    U = _haar_stiefel(rng, n, k)
    V = _haar_stiefel(rng, d, k)
    X = (U * s) @ V.T
    return RawData(X=X, name="synthetic",
                   provenance=f"synthetic: X = U diag(s) V^T with Haar-random U ({n} x {k}) and "
                              f"V ({d} x {k}); s = {_describe(spectrum, s)}")


def spectrum_values(spectrum: Sequence[float] | Mapping[str, object], n: int,
                    d: int) -> np.ndarray:
    """Resolve a spectrum specification to the singular values ``s_1 >= ... >= s_k > 0``.

    Parameters
    ----------
    spectrum : list of float or dict
        See the module docstring.
    n, d : int
        Shape of the matrix; ``k`` may not exceed ``min(n, d)``.

    Returns
    -------
    numpy.ndarray
        The ``k`` singular values, ``float64``, read-only.

    Raises
    ------
    ConfigError
        Naming ``spectrum`` (or ``spectrum.ratio``, ...), the bad value and what is allowed.
    """
    kmax = min(n, d)
    if isinstance(spectrum, Mapping):
        s = _family(spectrum, kmax)
    elif isinstance(spectrum, (Sequence, np.ndarray)) and not isinstance(spectrum, str):
        s = _explicit(spectrum, kmax)
    else:
        raise ConfigError(f"spectrum must be a list of singular values or a dict with 'kind' "
                          f"in {list(SPECTRUM_KINDS)}, got {spectrum!r}", field="spectrum")
    s.setflags(write=False)
    return s


def _explicit(values: Sequence[float] | np.ndarray, kmax: int) -> np.ndarray:
    if isinstance(values, np.ndarray) and values.ndim != 1:
        raise ConfigError(f"spectrum must be a flat list of singular values, got an array of "
                          f"shape {values.shape}", field="spectrum")
    values = values.tolist() if isinstance(values, np.ndarray) else list(values)
    if not 1 <= len(values) <= kmax:
        raise ConfigError(f"spectrum must list between 1 and min(n, d) = {kmax} singular "
                          f"values, got {len(values)}", field="spectrum")
    s = np.empty(len(values))
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, Real) or not np.isfinite(v) or v <= 0:
            raise ConfigError(f"spectrum[{i}] = {show(v)}: singular values must be positive "
                              "finite numbers", field=f"spectrum[{i}]")
        s[i] = float(v)
    drops = np.flatnonzero(np.diff(s) > 0)
    if drops.size:
        i = int(drops[0])
        raise ConfigError(f"spectrum must be non-increasing, but s[{i}] = {float(s[i])!r} < "
                          f"s[{i + 1}] = {float(s[i + 1])!r}", field="spectrum")
    return s


def _family(spec: Mapping[str, object], kmax: int) -> np.ndarray:
    kind = spec.get("kind")
    if kind not in _KEYS:
        hint = did_you_mean(kind, SPECTRUM_KINDS) if isinstance(kind, str) else ""
        raise ConfigError(f"spectrum.kind must be one of {list(SPECTRUM_KINDS)}, "
                          f"got {kind!r}{hint}", field="spectrum.kind")
    required, optional = _KEYS[kind]
    allowed = ("kind", *required, *optional)
    for key in spec:
        if key not in allowed:
            hint = did_you_mean(str(key), allowed)
            raise ConfigError(f"spectrum: unknown key {key!r} for kind {kind!r}{hint}; "
                              f"allowed: {list(allowed)}", field="spectrum")
    for key in required:
        if key not in spec:
            raise ConfigError(f"spectrum: kind {kind!r} needs {key!r} "
                              f"(keys: {list(required)} required, {list(optional)} optional)",
                              field="spectrum")
    k = spec.get("k", kmax)
    if isinstance(k, bool) or not isinstance(k, Integral) or not 1 <= k <= kmax:
        raise ConfigError(f"spectrum.k must be an integer in [1, min(n, d) = {kmax}], "
                          f"got {show(k)}", field="spectrum.k")
    ratio = check_number(spec["ratio"], "spectrum.ratio", low=0, low_open=True, high=1,
                         expected="a number with 0 < ratio <= 1")
    powers = ratio ** np.arange(int(k), dtype=float)
    if kind == "geometric":
        top = check_number(spec.get("top", 1.0), "spectrum.top", low=0, low_open=True,
                           expected="a number with top > 0")
        s = top * powers
    else:
        gap = check_number(spec["gap"], "spectrum.gap", low=1, expected="a number with gap >= 1")
        s = np.concatenate(([1.0], powers[: int(k) - 1] / gap))
    if not np.all(s > 0):
        i = int(np.flatnonzero(s <= 0)[0])
        raise ConfigError(f"spectrum: {dict(spec)!r} underflows to s[{i}] = 0; "
                          "use a larger ratio or a smaller k", field="spectrum")
    return s


def _positive_int(value: object, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ConfigError(f"{field} must be a positive integer, got {show(value)}", field=field)
    return int(value)


def _haar_stiefel(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    """Haar-distributed ``rows x cols`` matrix with orthonormal columns (``cols <= rows``): the Q factor of
    a Gaussian matrix, signs fixed by ``R``'s diagonal (blocked QR from ``TALL_FROM`` rows, equal to
    LAPACK's to rounding; :mod:`dpgossip.data.tall`)."""
    G = rng.standard_normal((rows, cols))
    Q, R = tall_qr(G) if use_tall(G) else np.linalg.qr(G)
    signs = np.sign(np.diag(R))
    signs[signs == 0] = 1.0
    return Q * signs


def _describe(spec: Sequence[float] | Mapping[str, object], s: np.ndarray) -> str:
    if isinstance(spec, Mapping):
        return f"{dict(spec)!r} (k = {s.size})"
    if s.size <= 6:
        return "[" + ", ".join(f"{v:.6g}" for v in s) + "]"
    head = ", ".join(f"{v:.6g}" for v in s[:3])
    return f"[{head}, ..., {s[-1]:.6g}] (k = {s.size})"
