"""The fixed array arguments the sample calls are written over, and the variants they run with.

Every sample call in ``calls.py`` is an expression over these names (and literals):

====  ==========================  =============================================================
name  base value                  role
====  ==========================  =============================================================
x, y  float64 (3, 4)              values in (-2, 2)
p     float64 (3, 4)              values in (1, 3): logarithms, roots, ``arccosh``
q     float64 (3, 4)              like ``x`` with NaNs (the ``nan*`` functions)
t     float64 (2, 3, 4)           values in (-2, 2)
v     float64 (4,)                values in (-2, 2)
w     float64 (4,)                values in (1, 3): weights, increasing coordinates by cumsum
M     float64 (4, 4)              a well-conditioned general matrix (diagonally dominant)
S     float64 (4, 4)              symmetric positive definite
B     float64 (2, 4, 4)           a stack of two matrices like ``M``
z     complex128 (3, 4)           real and imaginary parts in (-2, 2)
i     int64 (5,)                  indices in [0, 3): valid along every axis of the others
j     int64 (3, 4)                indices in [0, 3)
m     bool (3, 4)                 a mask
s     float64 ()                  a 0-d array, 0.5
====  ==========================  =============================================================

A *variant* regenerates them with another dtype for the real floating ones (``x y p q t v w M S
B s``: float32, float16, complex128, int64, int32, bool; ``z`` follows as complex64 with float32
and float16, ``i`` and ``j`` as int32 with int32), other shapes, empty arrays, or 0-d arrays.
Values are drawn from fixed seeds, so every run sees the same arrays.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Argument:
    """How one argument is made: its kind of values and its shape in each variant."""

    kind: str
    """``signed``, ``positive``, ``holes`` (signed with NaNs), ``matrix`` (diagonally dominant,
    stacked in the leading axes), ``spd`` (symmetric or Hermitian positive definite), ``complex``,
    ``index``, ``mask`` or ``scalar``."""
    shape: tuple[int, ...]
    other_shape: tuple[int, ...]
    empty_shape: tuple[int, ...]
    zero_d: bool = True
    """Whether the 0-d variant makes it a 0-d array (matrices stay matrices)."""


_PLAIN = ((3, 4), (5, 2), (0, 4))
ARGUMENTS: dict[str, Argument] = {
    "x": Argument("signed", *_PLAIN),
    "y": Argument("signed", *_PLAIN),
    "p": Argument("positive", *_PLAIN),
    "q": Argument("holes", *_PLAIN),
    "t": Argument("signed", (2, 3, 4), (4, 5, 2), (2, 0, 4), zero_d=False),
    "v": Argument("signed", (4,), (2,), (0,)),
    "w": Argument("positive", (4,), (2,), (0,)),
    "M": Argument("matrix", (4, 4), (2, 2), (0, 0), zero_d=False),
    "S": Argument("spd", (4, 4), (2, 2), (0, 0), zero_d=False),
    "B": Argument("matrix", (2, 4, 4), (3, 2, 2), (0, 4, 4), zero_d=False),
    "z": Argument("complex", *_PLAIN),
    "i": Argument("index", (5,), (7,), (0,)),
    "j": Argument("index", *_PLAIN),
    "m": Argument("mask", *_PLAIN),
    "s": Argument("scalar", (), (), ()),
}

REAL_FLOATING = frozenset(name for name, a in ARGUMENTS.items() if a.kind not in ("complex", "index", "mask"))
"""The arguments a dtype variant changes the dtype of."""


@dataclass(frozen=True)
class Variant:
    """One way of making the arguments: the dtype of the real floating ones, and their shapes."""

    name: str
    dtype: str = "float64"
    shapes: str = "base"
    """``base``, ``other`` (other sizes), ``empty`` (a zero-length axis) or ``0-d``."""

    @property
    def complex_dtype(self) -> str:
        return "complex64" if self.dtype in ("float32", "float16") else "complex128"

    @property
    def index_dtype(self) -> str:
        return "int32" if self.dtype == "int32" else "int64"

    def changes(self, name: str) -> bool:
        """Whether this variant makes argument ``name`` differently from the base variant."""
        argument = ARGUMENTS[name]
        if self.shapes == "0-d":
            return argument.zero_d and argument.shape != ()
        if self.shapes != "base":
            return self.shape_of(name) != argument.shape or name in ("i", "j")  # other index bounds
        if name in REAL_FLOATING:
            return self.dtype != "float64"
        if argument.kind == "complex":
            return self.complex_dtype != "complex128"
        if argument.kind == "index":
            return self.index_dtype != "int64"
        return False

    def shape_of(self, name: str) -> tuple[int, ...]:
        argument = ARGUMENTS[name]
        if self.shapes == "other":
            return argument.other_shape
        if self.shapes == "empty":
            return argument.empty_shape
        if self.shapes == "0-d" and argument.zero_d:
            return ()
        return argument.shape


BASE = Variant("float64")
VARIANTS: tuple[Variant, ...] = (
    BASE,
    Variant("float32", dtype="float32"),
    Variant("float16", dtype="float16"),
    Variant("complex128", dtype="complex128"),
    Variant("int64", dtype="int64"),
    Variant("int32", dtype="int32"),
    Variant("bool", dtype="bool"),
    Variant("other shapes", shapes="other"),
    Variant("empty", shapes="empty"),
    Variant("0-d", shapes="0-d"),
)
VARIANTS_BY_NAME = {variant.name: variant for variant in VARIANTS}


def make_argument(name: str, variant: Variant = BASE) -> np.ndarray:
    """Argument ``name`` as ``variant`` makes it: the same array on every call."""
    argument = ARGUMENTS[name]
    shape = variant.shape_of(name)
    rng = np.random.default_rng(zlib.crc32(f"{name}/{variant.name}".encode()))
    if argument.kind == "mask":
        return np.asarray(rng.random(shape) < 0.5)  # a 0-d array, not a NumPy scalar, for shape ()
    if argument.kind == "index":
        bound = 2 if variant.shapes == "other" else 3
        return np.asarray(rng.integers(0, bound, size=shape)).astype(variant.index_dtype)
    if argument.kind == "complex":
        return np.asarray(_complex(rng, shape)).astype(variant.complex_dtype)
    dtype = np.dtype(variant.dtype)
    if argument.kind == "scalar":
        return np.asarray(0.5 if dtype.kind in "fc" else 1).astype(dtype)
    if argument.kind in ("matrix", "spd"):
        return _matrix(rng, shape, dtype, argument.kind == "spd")
    return _values(rng, argument.kind, shape, dtype)


def make_arguments(names: tuple[str, ...], variant: Variant = BASE) -> dict[str, np.ndarray]:
    return {name: make_argument(name, variant) for name in names}


def _complex(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.uniform(-2, 2, shape) + 1j * rng.uniform(-2, 2, shape)


def _values(rng: np.random.Generator, kind: str, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    low, high = (1, 3) if kind == "positive" else (-2, 2)
    if dtype.kind == "b":
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.kind in "iu":
        return np.asarray(rng.integers(low, high + 1, size=shape)).astype(dtype)
    values = rng.uniform(low, high, shape)
    if dtype.kind == "c":
        values = values + 1j * rng.uniform(-1, 1, shape)
    if kind == "holes":
        values = np.where(rng.random(shape) < 0.25, np.nan, values)
    return np.asarray(values).astype(dtype)


def _matrix(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype, spd: bool) -> np.ndarray:
    """A diagonally dominant matrix (or stack); with ``spd``, ``A A^H + n I``."""
    n = shape[-1] if shape else 0
    identity = np.eye(n)
    if dtype.kind == "b":
        return np.asarray((rng.random(shape) < 0.3) | (identity > 0))
    if dtype.kind in "iu":
        a = rng.integers(-1, 2, size=shape).astype(np.float64)
    else:
        a = rng.uniform(-1, 1, shape)
    if dtype.kind == "c":
        a = a + 1j * rng.uniform(-1, 1, shape)
    if spd:
        a = a @ np.conj(np.swapaxes(a, -1, -2))
    return np.asarray(a + n * identity).astype(dtype)
