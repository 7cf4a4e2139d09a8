"""Static tensor types: a shape, a dtype, and whether the value is a "weak" Python scalar."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from dy2st.ir.symbolic import Dim, dim_product

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


PYTHON_TYPE_OF_DTYPE_KIND = {"b": bool, "i": int, "u": int, "f": float, "c": complex}
"""The Python number type a weakly typed value of each dtype kind stands for."""


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
        shape: each dimension a known int or a ``SymExpr`` resolved at run time (``ir/symbolic.py``).
        dtype: the NumPy dtype, in native byte order.
        weak: True for a Python scalar (int/float/bool/complex literal or constant). NumPy 2
            promotion treats these as "weakly typed": ``float32_array * 2.0`` stays float32.
        byteorder: ``'='``, or ``'>'``/``'<'`` where eager NumPy holds the value in non-native
            byte order (a big-endian argument, its copy). Not part of the type's identity.

    Byte order never changes a value, so types compare by the native dtype: a big-endian
    ``'>f8'`` argument is ``f64`` like the ``'<f8'`` result of ``x + 1``, and a loop carrying one
    into the other keeps one type. Kernels still see the arrays themselves, so results keep the
    byte order NumPy gives them; ``byteorder`` records it where code must recreate it
    (``np.zeros_like`` of a big-endian array is big-endian).
    """

    shape: tuple[Dim, ...]
    dtype: np.dtype
    weak: bool = False
    byteorder: Literal["=", "<", ">"] = field(default="=", compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.dtype, np.dtype) and not self.dtype.isnative:
            object.__setattr__(self, "byteorder", self.dtype.byteorder)
            object.__setattr__(self, "dtype", self.dtype.newbyteorder("="))

    @property
    def exact_dtype(self) -> np.dtype:
        """The dtype in the byte order eager NumPy holds the value in (see ``byteorder``)."""
        return self.dtype if self.byteorder == "=" else self.dtype.newbyteorder(self.byteorder)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> Dim:
        return dim_product(self.shape)

    @property
    def nbytes(self) -> Dim:
        return self.size * self.dtype.itemsize

    def strong(self) -> TensorType:
        return TensorType(self.shape, self.dtype) if self.weak else self

    def __str__(self) -> str:
        dims = ",".join(str(d) for d in self.shape)
        return f"{short_dtype_name(self.dtype)}[{dims}]"


def type_of_array(array) -> TensorType:
    """The type of a concrete ndarray or NumPy scalar (its byte order kept apart, see TensorType)."""
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
