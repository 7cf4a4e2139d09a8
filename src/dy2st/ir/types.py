"""Static tensor types: a shape, a dtype, and whether the value is a "weak" Python scalar."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_SHORT_NAMES = {
    "bool": "bool",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "float16": "f16",
    "float32": "f32",
    "float64": "f64",
    "complex64": "c64",
    "complex128": "c128",
}
_FROM_SHORT = {short: np.dtype(name) for name, short in _SHORT_NAMES.items()}


def short_dtype_name(dtype: np.dtype) -> str:
    """``f32`` for float32, ``i64`` for int64, and so on (the IR's spelling)."""
    return _SHORT_NAMES.get(dtype.name, dtype.name)


def parse_dtype(name: str) -> np.dtype:
    """Accept both the IR spelling (``f32``) and NumPy's (``float32``)."""
    if name in _FROM_SHORT:
        return _FROM_SHORT[name]
    return np.dtype(name)


@dataclass(frozen=True)
class TensorType:
    """The static type of an IR value.

    Attributes:
        shape: every dimension is a known int.
        dtype: the NumPy dtype.
        weak: True for a Python scalar (int/float/bool/complex literal or constant). NumPy 2
            promotion treats these as "weakly typed": ``float32_array * 2.0`` stays float32.
    """

    shape: tuple[int, ...]
    dtype: np.dtype
    weak: bool = False

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def strong(self) -> TensorType:
        return TensorType(self.shape, self.dtype) if self.weak else self

    def __str__(self) -> str:
        dims = ",".join(str(d) for d in self.shape)
        return f"{short_dtype_name(self.dtype)}[{dims}]"


def type_of_array(array) -> TensorType:
    """The type of a concrete ndarray or NumPy scalar."""
    return TensorType(tuple(array.shape), array.dtype)


def type_of_python_scalar(value) -> TensorType:
    """The weak type NumPy 2 gives a Python bool/int/float/complex."""
    if isinstance(value, bool):
        return TensorType((), np.dtype(bool), weak=True)
    if isinstance(value, int):
        return TensorType((), np.dtype(np.int64), weak=True)
    if isinstance(value, float):
        return TensorType((), np.dtype(np.float64), weak=True)
    if isinstance(value, complex):
        return TensorType((), np.dtype(np.complex128), weak=True)
    raise TypeError(f"not a Python scalar: {value!r}")
