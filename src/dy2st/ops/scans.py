"""Scans: cumulative sums and products along one axis (or over the flattened array).

The shape is the operand's (flattened to 1-d when ``axis`` is None); the dtype comes from NumPy on a
one-element probe, so ``int8 -> int64`` and ``bool -> int64`` accumulators match eager NumPy.

Before (user code)::

    c = np.cumsum(x, axis=1)

After (IR)::

    %c = cumsum %x {axis=1} : f32[4,8]
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from dy2st.errors import GraphBuildError, user_location
from dy2st.ir.opdefs import OpDef, register
from dy2st.ir.types import TensorType
from dy2st.ops.arguments import normalize_axes, reject_unsupported
from dy2st.staging.handlers import handles, method
from dy2st.staging.tensor import apply

SCANS: dict[str, Callable[..., Any]] = {"cumsum": np.cumsum, "cumprod": np.cumprod}


@functools.cache
def _scanned_dtype(name: str, dtype: np.dtype, accumulator: np.dtype | None) -> np.dtype:
    return SCANS[name](np.ones(1, dtype), dtype=accumulator).dtype


def _scan_rule(name: str):
    def infer(types, axis=None, dtype=None):
        (t,) = types
        shape = (t.size,) if axis is None else t.shape
        return TensorType(shape, _scanned_dtype(name, t.dtype, dtype))

    return infer


def _scan_kernel(name: str):
    func = SCANS[name]

    def kernel(x, axis=None, dtype=None):
        return func(x, axis=axis, dtype=dtype)

    return kernel


def _make_handler(name: str):
    def handler(a, axis=None, dtype=None, out=None):
        reject_unsupported(f"np.{name}", out=(out, None))
        if axis is not None:
            if a.ndim == 0:
                raise GraphBuildError(
                    f"np.{name}: axis {axis} is out of bounds for array of dimension 0", user_location()
                )
            axis = normalize_axes(axis, a.ndim, f"np.{name}")[0]
        attrs = {"axis": axis}
        if dtype is not None:
            attrs["dtype"] = np.dtype(dtype)
        return apply(name, a, **attrs)

    return handler


for _name, _func in SCANS.items():
    register(OpDef(_name, _scan_rule(_name), _scan_kernel(_name), doc=f"np.{_name}(axis, dtype)"))
    handles(_func)(_make_handler(_name))
    method(_name)(_make_handler(_name))
