"""Scans: cumulative sums and products along one axis (or over the flattened array), and
differences of neighbours (``np.diff``).

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

from dy2st.errors import UnsupportedOpError, user_location
from dy2st.ir.core import Op, Value
from dy2st.ir.emit import Emitter
from dy2st.ir.opdefs import OpDef, register
from dy2st.ir.types import TensorType
from dy2st.ops.adjoint import Cotangents
from dy2st.ops.arguments import axis_error, build_error, normalize_axes, reject_unsupported, static_int
from dy2st.ops.shape import reshaped_like
from dy2st.staging.handlers import handles, method
from dy2st.staging.tensor import Tensor, apply

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
            if a.ndim == 0 and axis not in (0, -1):
                raise axis_error(f"np.{name}", axis, 1)  # NumPy's message counts one dimension
            if a.ndim == 0:  # NumPy scans a 0-d array as one element, along axis 0 or -1
                return apply(name, a.reshape(1), **({"dtype": np.dtype(dtype)} if dtype is not None else {}))
            axis = normalize_axes(axis, a.ndim, f"np.{name}")[0]
        attrs = {"axis": axis}
        if dtype is not None:
            attrs["dtype"] = np.dtype(dtype)
        return apply(name, a, **attrs)

    return handler


def reversed_along(e: Emitter, x: Value, axis: int) -> Value:
    """``x`` reversed along ``axis`` (a view, ``x[..., ::-1, ...]``)."""
    return e.op("getitem", x, template=(slice(None),) * axis + (slice(None, None, -1),))


def _cumsum_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """Each element adds into every later sum: the cotangent summed from the end."""
    (g,) = cts
    if g is None:
        return [None]
    axis = op.attrs.get("axis")
    along = 0 if axis is None else axis
    total = _sum_from_end(e, g, along)
    return [reshaped_like(e, total, op.operands[0]) if axis is None else total]


def _sum_from_end(e: Emitter, x: Value, axis: int) -> Value:
    """``x`` summed from each element to the end along ``axis``."""
    return reversed_along(e, e.op("cumsum", reversed_along(e, x, axis), axis=axis), axis)


def _cumprod_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """``y_i = x_0 ... x_i``: element ``j`` gets ``sum_{i>=j} g_i y_i / x_j``. Exact where ``x`` has
    zeros, without dividing by them: before a slice's first zero the division is by a nonzero;
    the first zero gets the same sum with itself replaced by 1 in the products; every element
    after it multiplies into products that hold that zero, so it gets nothing."""
    (g,) = cts
    if g is None:
        return [None]
    x, axis = op.operands[0], op.attrs.get("axis")
    along = 0
    if axis is None:
        x = e.op("reshape", x, shape=tuple(op.result.type.shape)) if x.type.ndim != 1 else x
    else:
        along = axis
    is_zero = e.op("equal", x, 0)
    zeros_so_far = e.op("cumsum", is_zero, axis=along)
    before_zero = e.op("equal", zeros_so_far, 0)
    first_zero = e.op("logical_and", is_zero, e.op("equal", zeros_so_far, 1))
    nonzero_before = e.op("where", before_zero, x, 1)
    to_earlier = e.op("divide", _sum_from_end(e, e.op("multiply", g, op.result), along), nonzero_before)
    zero_replaced = e.op("cumprod", e.op("where", first_zero, 1, x), axis=along)
    to_first_zero = _sum_from_end(e, e.op("multiply", g, zero_replaced), along)
    total = e.op("where", before_zero, to_earlier, e.op("where", first_zero, to_first_zero, 0))
    return [reshaped_like(e, total, op.operands[0]) if axis is None else total]


_SCAN_ADJOINTS = {"cumsum": _cumsum_vjp, "cumprod": _cumprod_vjp}

for _name, _func in SCANS.items():
    register(
        OpDef(
            _name, _scan_rule(_name), _scan_kernel(_name), doc=f"np.{_name}(axis, dtype)", vjp=_SCAN_ADJOINTS.get(_name)
        )
    )
    handles(_func)(_make_handler(_name))
    method(_name)(_make_handler(_name))


# --- differences -------------------------------------------------------------------------------
_NO_VALUE: Any = np._NoValue  # np.diff's "not given"


@handles(np.diff)
def diff(a, n=1, axis=-1, prepend=_NO_VALUE, append=_NO_VALUE):
    """NumPy's own definition: the array joined with ``prepend``/``append`` along ``axis``, then
    ``n`` times the difference of neighbours (``!=`` for booleans): slices and a subtraction,
    so the result keeps static sizes and fuses with what follows."""
    if not isinstance(a, Tensor):
        raise UnsupportedOpError("np.diff: the array is not a tensor of the function", user_location())
    n = static_int(n, "np.diff: n")
    if n == 0:
        return a
    if n < 0:
        raise build_error("np.diff", ValueError(f"order must be non-negative but got {n!r}"))
    if a.ndim == 0:
        raise build_error("np.diff", ValueError("diff requires input that is at least one dimensional"))
    axis = normalize_axes(axis, a.ndim, "np.diff")[0]
    combined = [_edge(prepend, a, axis), a, _edge(append, a, axis)]
    parts = [part for part in combined if part is not None]
    if len(parts) > 1:
        a = np.concatenate(parts, axis=axis)
    later = tuple(slice(1, None) if k == axis else slice(None) for k in range(a.ndim))
    earlier = tuple(slice(None, -1) if k == axis else slice(None) for k in range(a.ndim))
    for _ in range(n):
        a = np.not_equal(a[later], a[earlier]) if a.dtype == np.bool_ else np.subtract(a[later], a[earlier])
    return a


def _edge(value: Any, a: Tensor, axis: int) -> Any:
    """``prepend``/``append`` as NumPy takes it: an array (Python numbers made strong, as
    ``np.asanyarray`` makes them), a 0-d one broadcast to one slice along ``axis``."""
    if value is _NO_VALUE:
        return None
    if not isinstance(value, Tensor):
        value = np.asanyarray(value)
    if value.ndim == 0:
        shape: Any = tuple(1 if k == axis else size for k, size in enumerate(a.shape))
        value = np.broadcast_to(value, shape)  # a symbolic size: the staged broadcast_to takes it
    return value
