"""Strict, hashable keys of op attributes: what CSE compares ops by, and what staging compares
slice bounds by (``ops.indexing.slice_bounds_key``).

Attributes compare strictly: arrays by dtype, shape and bytes, floats by their bits (so ``0.0``
and ``-0.0`` differ and a NaN equals itself), ``1`` and ``True`` differ, and a symbolic size by
its canonical text (comparing two ``SymExpr`` forms would decide by the hints and record a guard).
"""

from __future__ import annotations

import struct
from collections.abc import Hashable
from typing import Any

import numpy as np

from dy2st.ir.core import Op
from dy2st.ir.symbolic import SymExpr


class UnhashableAttribute(Exception):
    """An attribute that cannot be compared safely: the op is compared by identity instead."""


def attr_key(value: Any) -> Hashable:
    """A strict, hashable stand-in for an attribute value (see the module docstring)."""
    exact = _exact_key(value)
    if exact is not None:
        return exact
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(attr_key(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((k, attr_key(v)) for k, v in value.items())))
    if isinstance(value, slice):
        return ("slice", attr_key(value.start), attr_key(value.stop), attr_key(value.step))
    try:
        hash(value)
    except TypeError:
        raise UnhashableAttribute(type(value).__name__) from None
    # The type keeps 1, 1.0 and True apart, which Python's == would merge.
    return (type(value).__qualname__, value)


def _exact_key(value: Any) -> Hashable | None:
    """The key of an array, a NumPy scalar, a float or complex (by bits), a symbolic size or a
    dtype; None for anything else."""
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, value.shape, np.ascontiguousarray(value).tobytes())
    if isinstance(value, np.generic):
        return ("scalar", value.dtype.str, value.tobytes())
    if isinstance(value, float):
        return ("float", struct.pack("<d", value))
    if isinstance(value, complex):
        return ("complex", struct.pack("<dd", value.real, value.imag))
    if isinstance(value, SymExpr):
        return ("size", str(value))
    if isinstance(value, np.dtype):
        return ("dtype", value.str)
    return None


def attributes_key(op: Op, only: tuple[str, ...] | None = None) -> tuple:
    """The key of ``op``'s attributes (or of those ``only``); raises ``UnhashableAttribute``."""
    items = op.attrs.items() if only is None else ((name, op.attrs.get(name)) for name in only)
    return tuple(sorted((name, attr_key(value)) for name, value in items))
