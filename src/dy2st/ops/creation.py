"""Array creation with static shapes: zeros/ones/full/empty (and ``*_like``), the ``np.ndarray``
constructor, arange, linspace, eye.

NumPy never dispatches ``np.zeros(3)`` to us (no argument is a tensor), so these handlers sit in
``CREATION_HANDLERS``; ``convert_call`` swaps them in while a graph is being built. Each becomes an
op without operands whose attributes (shape, dtype, fill value...) are plain Python values; the
kernel allocates a fresh array at every run, so results never alias between calls.

Before (user code)::

    h = np.zeros((4, n_hidden), dtype=np.float32)

After (IR)::

    %h = full {dtype=float32, fill_value=0, shape=(4, 32)} : f32[4,32]

Random draws (``np.random.rand``, ``rng.normal`` ...) are ``ops/random.py``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dy2st.errors import TensorValueError, UnsupportedOpError, user_location
from dy2st.ir.opdefs import OpDef, register
from dy2st.ir.symbolic import SymbolicSizeNeeded, SymExpr, has_symbolic, symbols_in
from dy2st.ir.types import TensorType
from dy2st.ops.arguments import (
    build_error,
    normalize_dtype,
    python_scalar,
    reject_unsupported,
    static_int,
    static_shape,
)
from dy2st.ops.shape import broadcast_to
from dy2st.staging.handlers import CREATION_HANDLERS, FALLBACKS, handles
from dy2st.staging.tensor import Tensor, apply


def fills_with_zeros(fill_value: Any, dtype: np.dtype) -> bool:
    """Is ``np.full(shape, fill_value, dtype)`` the same array as ``np.zeros(shape, dtype)``? np.zeros
    is five times faster for small arrays (NumPy's full is Python: empty, then copyto), and the
    cotangents and accumulators of a converted function start from it. A -0.0 fill is not
    (zeros are +0.0)."""
    if type(fill_value) is int and fill_value == 0 and dtype.kind in "biufc":
        return True
    return type(fill_value) is float and fill_value == 0.0 and math.copysign(1.0, fill_value) > 0 and dtype.kind in "fc"


def _full_kernel(*, shape, fill_value, dtype):
    if fills_with_zeros(fill_value, dtype):
        return np.zeros(shape, dtype)
    return np.full(shape, fill_value, dtype=dtype)


def _empty_kernel(*, shape, dtype):
    return np.empty(shape, dtype=dtype)


def _arange_kernel(*, start, stop, step, dtype):
    return np.arange(start, stop, step, dtype=dtype)


def _linspace_kernel(*, start, stop, num, endpoint, dtype):
    return np.linspace(start, stop, num, endpoint=endpoint, dtype=dtype)


def _eye_kernel(*, rows, cols, k, dtype):
    return np.eye(rows, cols, k, dtype=dtype)


def _shaped_rule(types, *, shape, dtype, **unused):
    return TensorType(tuple(shape), np.dtype(dtype))


def _arange_rule(types, *, start, stop, step, dtype):
    # NumPy computes the length from the Python values: ceil((stop - start) / step).
    if isinstance(start, SymExpr) or isinstance(stop, SymExpr):
        return TensorType((_symbolic_arange_length(start, stop, step),), dtype)
    return TensorType((max(0, math.ceil((stop - start) / step)),), dtype)


def _symbolic_arange_length(start: Any, stop: Any, step: Any) -> Any:
    """The length of ``np.arange(start, stop, step)`` with a symbolic bound (``arange(len(x))``):
    exact for integer bounds and a step of 1 or -1 (a decision about its sign is guarded)."""
    if not isinstance(start, (int, SymExpr)) or not isinstance(stop, (int, SymExpr)) or step not in (1, -1):
        raise SymbolicSizeNeeded(symbols_in((start, stop)), f"np.arange({start}, {stop}, {step})")
    length = (stop - start) * int(step)
    return length if length >= 0 else 0


def _linspace_rule(types, *, start, stop, num, endpoint, dtype):
    return TensorType((num,), dtype)


def _eye_rule(types, *, rows, cols, k, dtype):
    return TensorType((rows, cols), dtype)


def _onnx_full(w, op) -> list[str]:
    shape = op.result.type.shape
    if has_symbolic(shape):
        raise w.refuse("a shape known only at run time")
    return [w.constant(np.full(shape, op.attrs["fill_value"], op.result.type.dtype))]


register(
    OpDef("full", _shaped_rule, _full_kernel, doc="np.full / zeros / ones: a new array of one value", onnx=_onnx_full)
)
register(
    OpDef("empty", _shaped_rule, _empty_kernel, uninitialized=True, doc="np.empty: a new array, contents undefined")
)
register(OpDef("arange", _arange_rule, _arange_kernel, doc="np.arange with static bounds"))
register(OpDef("linspace", _linspace_rule, _linspace_kernel, doc="np.linspace with static bounds"))
register(OpDef("eye", _eye_rule, _eye_kernel, doc="np.eye / np.identity"))


def _zeros_like_rule(types):
    (t,) = types
    return TensorType(t.shape, t.dtype)


# Zeros shaped like an operand, for sizes known only when the graph runs: the backward code of a
# gradient makes the zero cotangents of data-dependent-size values with it (``ops/adjoint.py``).
register(
    OpDef(
        "zeros_like",
        _zeros_like_rule,
        lambda x: np.zeros(np.shape(x), np.result_type(x)),
        returns_fresh=True,
        doc="zeros of the operand's shape and dtype",
    )
)


def fresh_array(name: str, **attrs: Any) -> Tensor:
    """Emit a creation op; its result is a writable array, never an immutable NumPy scalar."""
    result = apply(name, **attrs)
    result._scalar = False
    return result


def _check_placement(func_name: str, order: Any, device: Any, like: Any) -> None:
    # Memory order never changes values for the ops we stage (order-dependent ops refuse non-C
    # orders themselves), so any valid order is accepted; other devices and `like=` are not.
    if order not in ("C", "F", "K", "A", None):
        raise build_error(func_name, ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})"))
    reject_unsupported(func_name, device=(None if device == "cpu" else device, None), like=(like, None))


def full_array(func_name: str, shape: tuple[int, ...], fill_value: Any, dtype: np.dtype | None) -> Tensor:
    """A new array of ``shape`` filled with ``fill_value`` (a scalar, an array or a tensor)."""
    if isinstance(fill_value, Tensor) or (isinstance(fill_value, np.ndarray) and fill_value.ndim > 0):
        return _broadcast_fill(shape, fill_value, dtype)
    if dtype is None:
        dtype = np.asarray(fill_value).dtype  # NumPy's choice, for NumPy scalars and 0-d arrays too
    scalar = python_scalar(fill_value[()] if isinstance(fill_value, np.ndarray) else fill_value)
    if not isinstance(scalar, (bool, int, float, complex)):
        raise UnsupportedOpError(
            f"{func_name}: a fill value of type {type(fill_value).__name__} is not supported", user_location()
        )
    return fresh_array("full", shape=shape, fill_value=scalar, dtype=dtype)


def _broadcast_fill(shape, fill_value, dtype) -> Tensor:
    dtype = fill_value.dtype if dtype is None else dtype
    spread = broadcast_to(fill_value, shape)
    result = apply("astype", spread, dtype=dtype) if spread.dtype != dtype else apply("copy", spread)
    result._scalar = False
    return result


# --- functions without array arguments (CREATION_HANDLERS) ------------------------------------
def zeros(shape, dtype=float, order="C", *, device=None, like=None):
    """Staged ``np.zeros``."""
    _check_placement("np.zeros", order, device, like)
    return full_array("np.zeros", static_shape(shape, "np.zeros"), 0, np.dtype(dtype))


def ones(shape, dtype=None, order="C", *, device=None, like=None):
    """Staged ``np.ones``."""
    _check_placement("np.ones", order, device, like)
    return full_array("np.ones", static_shape(shape, "np.ones"), 1, np.dtype(dtype))


def empty(shape, dtype=float, order="C", *, device=None, like=None):
    """Staged ``np.empty``."""
    _check_placement("np.empty", order, device, like)
    return fresh_array("empty", shape=static_shape(shape, "np.empty"), dtype=np.dtype(dtype))


def ndarray(shape, dtype=float, buffer=None, offset=0, strides=None, order=None):
    """Staged ``np.ndarray(shape, dtype)`` used as a constructor: a new uninitialized array, as
    ``np.empty``. Views of an existing buffer (``buffer``, ``offset``, ``strides``) are refused."""
    reject_unsupported("np.ndarray", buffer=(buffer, None), offset=(offset, 0), strides=(strides, None))
    shape = static_shape(shape, "np.ndarray")
    try:  # NumPy's own checks of dtype and order, on an empty array of the same rank
        probe = np.ndarray((0,) * len(shape), dtype, order=order)
    except (TypeError, ValueError) as e:
        raise build_error("np.ndarray", e) from None
    return fresh_array("empty", shape=shape, dtype=probe.dtype)


def full(shape, fill_value, dtype=None, order="C", *, device=None, like=None):
    """Staged ``np.full``; the fill value may be a tensor (it is broadcast to ``shape``)."""
    _check_placement("np.full", order, device, like)
    return full_array("np.full", static_shape(shape, "np.full"), fill_value, normalize_dtype(dtype))


def _any_tensor(*values: Any) -> bool:
    return any(isinstance(v, Tensor) for v in values)


def _static_number(value: Any, func_name: str, what: str) -> Any:
    if isinstance(value, Tensor):
        raise TensorValueError(
            f"{func_name}: the {what} is the tensor {value.type}, but the length of the result must be "
            "known when the graph is built",
            user_location(),
            "pass Python numbers (or arguments that are Python ints) as bounds",
        )
    if isinstance(value, SymExpr):
        return value  # a symbolic size: a Python int known when the graph runs
    value = python_scalar(value)
    if not isinstance(value, (bool, int, float)):
        raise UnsupportedOpError(
            f"{func_name}: a {what} of type {type(value).__name__} is not supported", user_location()
        )
    return value


def arange(start_or_stop, stop=None, step=None, dtype=None, *, device=None, like=None):
    """Staged ``np.arange``: Python-number bounds and step give a static length, symbolic sizes
    a symbolic one; tensor bounds go to the generic layer (a length read when the graph runs)."""
    _check_placement("np.arange", "C", device, like)
    if _any_tensor(start_or_stop, stop, step):
        return FALLBACKS["function"](np.arange, (start_or_stop, stop, step), {"dtype": dtype})
    start = _static_number(start_or_stop, "np.arange", "start" if stop is not None else "stop")
    if stop is None:
        start, stop = 0, start
    stop = _static_number(stop, "np.arange", "stop")
    step = 1 if step is None else _static_number(step, "np.arange", "step")
    if step == 0:
        raise build_error("np.arange", ZeroDivisionError("division by zero (step is 0)"))
    # NumPy promotes the bounds as Python values, even when they are NumPy scalars (a symbolic
    # size is a Python int).
    bounds = [0 if isinstance(v, SymExpr) else v for v in (start, stop, step)]
    dtype = np.result_type(*bounds) if dtype is None else np.dtype(dtype)
    return fresh_array("arange", start=start, stop=stop, step=step, dtype=dtype)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None):
    """Staged ``np.linspace``: Python-number bounds as a creation op; tensor bounds (arrays of
    them too), ``retstep`` and ``axis`` through the generic layer. The number of samples sets the
    length, so it must be a Python int or a size."""
    _check_placement("np.linspace", "C", device, None)
    if _any_tensor(start, stop) or retstep or axis != 0:
        num = num if isinstance(num, SymExpr) else static_int(num, "np.linspace: num")
        keywords = {"endpoint": endpoint, "retstep": retstep, "dtype": dtype, "axis": axis}
        return FALLBACKS["function"](np.linspace, (start, stop, num), keywords)
    for value, what in ((start, "start"), (stop, "stop")):
        _static_number(value, "np.linspace", what)
    num = num if isinstance(num, SymExpr) else static_int(num, "np.linspace: num")
    if num < 0:
        raise build_error("np.linspace", ValueError(f"Number of samples, {num}, must be non-negative."))
    # An empty probe gives NumPy's own dtype choice, NumPy-scalar bounds included.
    low, high = (0 if isinstance(v, SymExpr) else v for v in (start, stop))
    dtype = np.linspace(low, high, 0, dtype=dtype).dtype
    return fresh_array("linspace", start=start, stop=stop, num=num, endpoint=bool(endpoint), dtype=dtype)


def eye(N, M=None, k=0, dtype=float, order="C", *, device=None, like=None):
    """Staged ``np.eye``."""
    _check_placement("np.eye", order, device, like)
    rows = static_int(N, "np.eye: N")
    cols = rows if M is None else static_int(M, "np.eye: M")
    return fresh_array("eye", rows=rows, cols=cols, k=static_int(k, "np.eye: k"), dtype=np.dtype(dtype))


def identity(n, dtype=None, *, like=None):
    """Staged ``np.identity``."""
    return eye(n, dtype=dtype, like=like)


# --- functions of an array's shape and dtype (FUNCTION_HANDLERS) --------------------------
@handles(np.zeros_like)
def zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """Staged ``np.zeros_like``: only the shape and dtype of ``a`` matter."""
    return _filled_like("np.zeros_like", a, 0, dtype, order, shape, device)


@handles(np.ones_like)
def ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """Staged ``np.ones_like``."""
    return _filled_like("np.ones_like", a, 1, dtype, order, shape, device)


@handles(np.full_like)
def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """Staged ``np.full_like``; the fill value may be a tensor."""
    return _filled_like("np.full_like", a, fill_value, dtype, order, shape, device)


@handles(np.empty_like)
def empty_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """Staged ``np.empty_like``."""
    new_shape, new_dtype = _like_signature("np.empty_like", a, dtype, order, shape, device)
    return fresh_array("empty", shape=new_shape, dtype=new_dtype)


def _filled_like(func_name, a, fill_value, dtype, order, shape, device) -> Tensor:
    # subok is accepted and ignored: symbolic tensors have no subclasses.
    new_shape, new_dtype = _like_signature(func_name, a, dtype, order, shape, device)
    return full_array(func_name, new_shape, fill_value, new_dtype)


def _like_signature(func_name, a, dtype, order, shape, device) -> tuple[tuple[Any, ...], np.dtype]:
    _check_placement(func_name, order, device, None)
    new_shape: tuple[Any, ...]
    if shape is not None:
        new_shape = static_shape(shape, func_name)
    else:
        new_shape = a.shape if isinstance(a, Tensor) else tuple(np.shape(a))
    if dtype is not None:
        return new_shape, np.dtype(dtype)
    # The byte order too: np.zeros_like of a big-endian array is big-endian.
    return new_shape, a.type.exact_dtype if isinstance(a, Tensor) else np.asarray(a).dtype


CREATION_HANDLERS.update(
    {
        np.zeros: zeros,
        np.ones: ones,
        np.empty: empty,
        np.ndarray: ndarray,
        np.full: full,
        np.arange: arange,
        np.linspace: linspace,
        np.eye: eye,
        np.identity: identity,
    }
)
