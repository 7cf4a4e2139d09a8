"""Reductions: sum, mean, prod, max, min, any, all, argmax, argmin (``axis``, ``keepdims``).

The shape rule is written out; the dtype rule asks NumPy itself on a one-element array of the same
dtype and rank (cached), so accumulator promotions (``int32.sum() -> int64``, ``int.mean() ->
float64``) match eager NumPy exactly.
"""

from __future__ import annotations

import functools

import numpy as np

from dy2st.ir.tensor import apply
from dy2st.ir.types import TensorType
from dy2st.ops.registry import OpDef, handles, method, register

REDUCTIONS = {
    "sum": np.sum,
    "mean": np.mean,
    "prod": np.prod,
    "max": np.max,
    "min": np.min,
    "any": np.any,
    "all": np.all,
    "argmax": np.argmax,
    "argmin": np.argmin,
}
_SINGLE_AXIS = {"argmax", "argmin"}


def normalize_axis(axis, ndim: int, single: bool = False):
    """None, or a sorted tuple of non-negative axes (an int for argmax/argmin)."""
    if axis is None:
        return None
    axes = axis if isinstance(axis, tuple) else (axis,)
    if single and len(axes) != 1:
        raise TypeError("axis must be None or an int")
    out = []
    for a in axes:
        if not isinstance(a, (int, np.integer)):
            raise TypeError(f"axis must be an int or a tuple of ints, got {type(a).__name__}")
        if not -max(ndim, 1) <= a < max(ndim, 1):
            raise ValueError(f"axis {a} is out of bounds for array of dimension {ndim}")
        out.append(int(a) % max(ndim, 1))
    if len(set(out)) != len(out):
        raise ValueError("duplicate value in 'axis'")
    return out[0] if single else tuple(sorted(out))


@functools.lru_cache(maxsize=None)
def _reduced_dtype(name: str, dtype: np.dtype, ndim: int, axis, keepdims: bool) -> np.dtype:
    probe = np.ones((1,) * ndim, dtype=dtype)
    kwargs = {"axis": axis}
    if name not in _SINGLE_AXIS or keepdims:
        kwargs["keepdims"] = keepdims
    return np.asarray(REDUCTIONS[name](probe, **kwargs)).dtype


def reduction_rule(name: str):
    def infer(types: list[TensorType], axis=None, keepdims: bool = False) -> TensorType:
        (t,) = types
        if axis is None:
            shape = (1,) * t.ndim if keepdims else ()
        else:
            axes = (axis,) if isinstance(axis, int) else axis
            if t.ndim == 0:
                shape = ()
            elif keepdims:
                shape = tuple(1 if i in axes else d for i, d in enumerate(t.shape))
            else:
                shape = tuple(d for i, d in enumerate(t.shape) if i not in axes)
            for a in axes:
                if t.ndim and t.shape[a] == 0 and name in ("max", "min", "argmax", "argmin"):
                    raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
        if axis is None and t.size == 0 and name in ("max", "min", "argmax", "argmin"):
            raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
        return TensorType(shape, _reduced_dtype(name, t.dtype, t.ndim, axis, keepdims))

    return infer


def reduction_kernel(name: str):
    func = REDUCTIONS[name]
    if name in _SINGLE_AXIS:
        def kernel(x, axis=None, keepdims=False):
            return func(x, axis=axis, keepdims=keepdims) if keepdims else func(x, axis=axis)
        return kernel

    def kernel(x, axis=None, keepdims=False):
        return func(x, axis=axis, keepdims=keepdims)

    return kernel


def _make_handler(name: str):
    def handler(a, axis=None, dtype=None, out=None, keepdims=False, **unsupported):
        from dy2st.errors import UnsupportedOpError, user_location

        if out is not None or dtype is not None or unsupported:
            bad = [k for k, v in (("out", out), ("dtype", dtype)) if v is not None] + sorted(unsupported)
            raise UnsupportedOpError(f"np.{name}: arguments {bad} are not supported", user_location())
        ndim = a.ndim if hasattr(a, "ndim") else np.ndim(a)
        return apply(name, a, axis=normalize_axis(axis, ndim, name in _SINGLE_AXIS), keepdims=bool(keepdims))

    return handler


for _name, _func in REDUCTIONS.items():
    register(OpDef(_name, reduction_rule(_name), reduction_kernel(_name), doc=f"np.{_name}(axis, keepdims)"))
    _handler = _make_handler(_name)
    handles(_func)(_handler)
    method(_name)(_handler)
handles(np.amax)(_make_handler("max"))
handles(np.amin)(_make_handler("min"))
