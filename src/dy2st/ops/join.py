"""Joining and splitting arrays: concatenate, stack, hstack, vstack, split, array_split, and
``np.array`` of lists holding tensors.

Operands of a join are arrays, never weak Python scalars: NumPy turns each element into an array
first, so ``np.stack([f32_scalar_tensor, 1.0])`` is float64 like it is eagerly.

Before (user code)::

    h = np.array([[x, y], [y, x]])      # x, y: f32[3] tensors

After (IR)::

    %0 = stack %x, %y {axis=0} : f32[2,3]
    %1 = stack %y, %x {axis=0} : f32[2,3]
    %h = stack %0, %1 {axis=0} : f32[2,2,3]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dy2st.errors import DifferentiationError, UnsupportedOpError, user_location
from dy2st.ir.core import Op, Value
from dy2st.ir.emit import Emitter
from dy2st.ir.opdefs import OpDef, register
from dy2st.ir.symbolic import dim_product
from dy2st.ir.types import TensorType
from dy2st.ops.adjoint import Cotangents
from dy2st.ops.arguments import build_error, normalize_axes, reject_unsupported, static_int
from dy2st.ops.shape import as_array, cast
from dy2st.staging.builder import current_builder
from dy2st.staging.handlers import CREATION_HANDLERS, handles
from dy2st.staging.tensor import Tensor, apply


def _joined_dtype(types: list[TensorType], dtype, casting: Any) -> np.dtype:
    if dtype is None:
        return np.result_type(*(t.dtype for t in types))
    for t in types:
        if not np.can_cast(t.dtype, dtype, casting=casting):
            raise TypeError(f"Cannot cast array data from {t.dtype!r} to {dtype!r} according to the rule {casting!r}")
    return dtype


def _concatenate_rule(types, axis, dtype=None, casting="same_kind"):
    first = types[0]
    if first.ndim == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    for i, t in enumerate(types[1:], start=1):
        if t.ndim != first.ndim:
            raise ValueError(
                "all the input array dimensions except for the concatenation axis must match exactly, but "
                f"the array at index 0 has {first.ndim} dimension(s) and the array at index {i} has {t.ndim}"
            )
        for d in range(first.ndim):
            if d != axis and t.shape[d] != first.shape[d]:
                raise ValueError(
                    "all the input array dimensions except for the concatenation axis must match exactly, but "
                    f"along dimension {d}, the array at index 0 has size {first.shape[d]} and the array at "
                    f"index {i} has size {t.shape[d]}"
                )
    shape = list(first.shape)
    shape[axis] = sum(t.shape[axis] for t in types)
    return TensorType(tuple(shape), _joined_dtype(types, dtype, casting))


def _stack_rule(types, axis, dtype=None, casting="same_kind"):
    shape = types[0].shape
    if any(t.shape != shape for t in types):
        raise ValueError("all input arrays must have the same shape")
    return TensorType(shape[:axis] + (len(types),) + shape[axis:], _joined_dtype(types, dtype, casting))


def _concatenate_kernel(*arrays, axis, dtype=None, casting="same_kind"):
    return np.concatenate(arrays, axis=axis, dtype=dtype, casting=casting)


def _stack_kernel(*arrays, axis, dtype=None, casting="same_kind"):
    return np.stack(arrays, axis=axis, dtype=dtype, casting=casting)


def _concatenate_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """Each operand's cotangent is its own slice of the result's."""
    (g,) = cts
    if g is None:
        return [None] * len(op.operands)
    axis = op.attrs["axis"]
    if not all(isinstance(v.type.shape[axis], int) for v in op.operands):
        raise DifferentiationError("the gradient of np.concatenate of sizes known only at run time", op.loc)
    pieces: list[Value | None] = []
    start: Any = 0
    for operand in op.operands:
        stop = start + operand.type.shape[axis]
        pieces.append(e.op("getitem", g, template=(slice(None),) * axis + (slice(start, stop),)))
        start = stop
    return pieces


def _stack_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    (g,) = cts
    if g is None:
        return [None] * len(op.operands)
    axis = op.attrs["axis"]
    return [e.op("getitem", g, template=(slice(None),) * axis + (k,)) for k in range(len(op.operands))]


register(
    OpDef(
        "concatenate",
        _concatenate_rule,
        _concatenate_kernel,
        doc="np.concatenate along a static axis",
        vjp=_concatenate_vjp,
    )
)
register(OpDef("stack", _stack_rule, _stack_kernel, doc="np.stack along a new static axis", vjp=_stack_vjp))


def _as_operands(func_name: str, arrays) -> list[Any]:
    if isinstance(arrays, Tensor):
        raise UnsupportedOpError(
            f"{func_name} of a single tensor iterates over its rows, which is not supported",
            user_location(),
            f"pass a list of arrays: {func_name}([a, b, ...])",
        )
    operands = [_as_operand(func_name, a) for a in arrays]
    if not operands:
        raise build_error(func_name, ValueError("need at least one array to concatenate"))
    return operands


def _as_operand(func_name: str, a: Any) -> Any:
    """One array of a join: a tensor, an array NumPy makes of a list holding tensors (stack ops), or
    a concrete array."""
    if isinstance(a, Tensor):
        return a
    if contains_tensor(a):
        return array_from_nested(func_name, a)
    return np.asarray(a)


def _join_options(func_name, out, dtype, casting):
    reject_unsupported(func_name, out=(out, None))
    if casting not in ("no", "equiv", "safe", "same_kind", "unsafe"):
        raise build_error(
            func_name, ValueError("casting must be one of 'no', 'equiv', 'safe', 'same_kind', or 'unsafe'")
        )
    # Only non-default options become attributes, so the IR of a plain join stays short.
    options = {}
    if dtype is not None:
        options["dtype"] = np.dtype(dtype)
    if casting != "same_kind":
        options["casting"] = casting
    return options


@handles(np.concatenate, np.concat)
def concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """Staged ``np.concatenate``; ``axis=None`` joins the flattened arrays."""
    options = _join_options("np.concatenate", out, dtype, casting)
    operands = _as_operands("np.concatenate", arrays)
    if axis is None:
        operands = [apply("reshape", a, shape=(dim_product(a.shape),)) for a in operands]
        axis = 0
    ndim = np.ndim(operands[0]) if not isinstance(operands[0], Tensor) else operands[0].ndim
    if ndim == 0:
        raise build_error("np.concatenate", ValueError("zero-dimensional arrays cannot be concatenated"))
    return apply("concatenate", *operands, axis=normalize_axes(axis, ndim, "np.concatenate")[0], **options)


@handles(np.stack)
def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """Staged ``np.stack``."""
    options = _join_options("np.stack", out, dtype, casting)
    operands = _as_operands("np.stack", arrays)
    new_axis = normalize_axes(static_int(axis, "np.stack: axis"), operands[0].ndim + 1, "np.stack")[0]
    result = apply("stack", *operands, axis=new_axis, **options)
    result._scalar = False
    return result


def _at_least(a, ndim: int):
    """``np.atleast_2d``-style: prepend unit axes (for 1-d in vstack: (n,) -> (1, n))."""
    shape = a.shape if isinstance(a, Tensor) else np.shape(a)
    if len(shape) >= ndim:
        return a
    return apply("reshape", a, shape=(1,) * (ndim - len(shape)) + tuple(shape))


@handles(np.vstack)
def vstack(tup, *, dtype=None, casting="same_kind"):
    """Staged ``np.vstack``: 1-d arrays become rows."""
    operands = [_at_least(a, 2) for a in _as_operands("np.vstack", tup)]
    return concatenate(operands, axis=0, dtype=dtype, casting=casting)


@handles(np.hstack)
def hstack(tup, *, dtype=None, casting="same_kind"):
    """Staged ``np.hstack``: 1-d arrays are joined end to end, others along axis 1."""
    operands = [_at_least(a, 1) for a in _as_operands("np.hstack", tup)]
    axis = 0 if np.ndim(operands[0]) == 1 else 1
    return concatenate(operands, axis=axis, dtype=dtype, casting=casting)


def _nested_join(func, handler):
    """``func`` (a join) called from converted code: NumPy dispatches a join to the tensors only
    when they are items of its sequence, so tensors nested deeper (``np.stack([[t, 1.0], ...])``)
    would reach NumPy itself; the staged join makes arrays of such items first."""

    def staged(arrays, *args, **kwargs):
        if contains_tensor(arrays):
            return handler(arrays, *args, **kwargs)
        return func(arrays, *args, **kwargs)

    staged.__name__ = func.__name__
    staged.__doc__ = handler.__doc__
    return staged


for _join, _handler in (
    (np.concatenate, concatenate),
    (np.concat, concatenate),
    (np.stack, stack),
    (np.vstack, vstack),
    (np.hstack, hstack),
):
    CREATION_HANDLERS[_join] = _nested_join(_join, _handler)


# --- splitting: static sections become slices ----------------------------------------------------
def _split_points(func_name: str, length: int, indices_or_sections, equal: bool) -> list[int]:
    if isinstance(indices_or_sections, (list, tuple, np.ndarray)):
        return [static_int(i, f"{func_name}: a split index") for i in indices_or_sections]
    sections = static_int(indices_or_sections, f"{func_name}: the number of sections")
    if sections <= 0:
        raise build_error(func_name, ValueError("number sections must be larger than 0."))
    if equal and length % sections:
        raise build_error(func_name, ValueError("array split does not result in an equal division"))
    # array_split: the first (length % sections) parts get one extra element, like NumPy.
    small, extra = divmod(length, sections)
    points, at = [], 0
    for part in range(sections - 1):
        at += small + (1 if part < extra else 0)
        points.append(at)
    return points


def _split(func_name: str, ary, indices_or_sections, axis, equal: bool) -> list:
    (axis,) = normalize_axes(axis, ary.ndim, func_name)
    points = _split_points(func_name, ary.shape[axis], indices_or_sections, equal)
    bounds = [None] + points + [None]
    lead = (slice(None),) * axis
    return [ary[lead + (slice(start, stop),)] for start, stop in zip(bounds[:-1], bounds[1:])]


@handles(np.split)
def split(ary, indices_or_sections, axis=0):
    """Staged ``np.split``: a list of slices (views), equal sections or at static indices."""
    return _split("np.split", ary, indices_or_sections, axis, equal=True)


@handles(np.array_split)
def array_split(ary, indices_or_sections, axis=0):
    """Staged ``np.array_split``: like ``split`` but sections may differ by one element."""
    return _split("np.array_split", ary, indices_or_sections, axis, equal=False)


# --- np.array / np.asarray of nested lists -------------------------------------------------------
def contains_tensor(obj: Any) -> bool:
    """True if ``obj`` is a tensor or a (nested) list/tuple holding one."""
    if isinstance(obj, Tensor):
        return True
    return isinstance(obj, (list, tuple)) and any(contains_tensor(x) for x in obj)


def _probe(obj: Any) -> Any:
    """``obj`` with every tensor replaced by a zero-strided array of its type (no data copied)."""
    if isinstance(obj, Tensor):
        return np.broadcast_to(np.zeros((), obj.dtype), tuple(int(d) for d in obj.shape))
    if isinstance(obj, (list, tuple)):
        return [_probe(x) for x in obj]
    return obj


def _pack(obj: Any, dtype: np.dtype):
    """Emit the stack ops that build ``obj`` (already known to fit NumPy's rules) as ``dtype``."""
    if isinstance(obj, Tensor):
        return obj if obj.dtype == dtype else apply("astype", obj, dtype=dtype)
    if not contains_tensor(obj):
        return np.asarray(obj, dtype=dtype)
    return apply("stack", *(_pack(x, dtype) for x in obj), axis=0)


def array_from_nested(func_name: str, obj: Any, dtype=None) -> Tensor:
    """``np.array(obj, dtype)`` for a nested list/tuple holding tensors, as stack ops."""
    try:
        # NumPy itself decides the result's shape and dtype, ragged-list errors included.
        expected = np.array(_probe(obj), dtype=dtype)
    except (ValueError, TypeError) as e:
        raise build_error(func_name, e) from None
    result = _pack(obj, expected.dtype)
    if not isinstance(result, Tensor) or result.shape != expected.shape:  # pragma: no cover - a bug guard
        raise build_error(func_name, ValueError(f"could not pack the list into shape {expected.shape}"))
    result._scalar = False
    return result


def _make_array_handler(func, func_name: str):
    def handler(obj, *args, **kwargs):
        if isinstance(obj, Tensor):
            return _array_of_tensor(func, obj, args, kwargs)
        if not contains_tensor(obj):
            try:
                result = func(obj, *args, **kwargs)
            except (ValueError, TypeError) as e:  # a ragged list: NumPy's complaint at the user's line
                raise build_error(func_name, e) from None
            return result if isinstance(obj, np.ndarray) else _fresh_constant(result)
        bound = _bind_array_arguments(func_name, args, kwargs)
        return array_from_nested(func_name, obj, bound)

    handler.__name__ = func.__name__
    handler.__doc__ = f"Staged ``{func_name}``: nested lists holding tensors become stack ops."
    return handler


def _fresh_constant(array: Any) -> Any:
    """``np.array([1.0, 2.0])`` in a converted function: an array of the graph, new each time the
    graph runs (a copy of a constant), so that a tensor may index it or be written into it
    (``T[mask]``, ``T[0] = x.sum()``), as into the array eager code makes. Arrays NumPy cannot
    hold in a graph (strings, objects) stay concrete."""
    builder = current_builder()
    if builder is None or not isinstance(array, np.ndarray) or array.dtype.kind not in "biufc":
        return array
    constant = Tensor(builder.const(array, user_location(3)), builder)
    fresh = apply("copy", constant, order="K")
    fresh._scalar = False
    return fresh


def _array_of_tensor(func, tensor: Tensor, args: tuple, kwargs: dict) -> Tensor:
    """``np.asarray(t)`` is ``t`` itself (same array object); ``np.array(t)`` is a copy, unless
    ``copy=False``; a different ``dtype`` converts, like NumPy. A new 0-d result is a 0-d array,
    never a NumPy scalar."""
    result = _array_or_copy(func, tensor, args, kwargs)
    return as_array(result) if result is not tensor and result.ndim == 0 else result


def _array_or_copy(func, tensor: Tensor, args: tuple, kwargs: dict) -> Tensor:
    copy = kwargs.get("copy", func is np.array)
    # The memory order decides how a later reduction of the result rounds (reductions follow the
    # layout), so a C or F order is kept: copied into it.
    order = kwargs.get("order") or "K"
    ordered = order in ("C", "F")
    dtype = _bind_array_arguments(f"np.{func.__name__}", args, kwargs)
    if dtype is not None and dtype != tensor.type.exact_dtype:
        converted = cast(tensor, dtype)
        return apply("copy", converted, order=order) if ordered else converted
    if not ordered:
        if tensor._scalar:  # a NumPy scalar is immutable: both give a new 0-d array
            return as_array(apply("copy", tensor))
        return apply("copy", tensor) if copy else tensor
    result = apply("copy", tensor, order=order)
    if not copy:
        # NumPy returns the array itself if it has that order already, else a copy: which depends
        # on a layout dy2st does not know, so the result may share the array's memory.
        result._shares = tensor._shared_arrays()
    return result


def _bind_array_arguments(func_name: str, args: tuple, kwargs: dict):
    """The dtype of ``np.array(obj, dtype, ...)`` / ``np.asarray(obj, dtype, order, ...)`` calls."""
    if len(args) > 2:
        raise build_error(func_name, TypeError(f"takes at most 3 positional arguments ({len(args) + 1} given)"))
    dtype = args[0] if args else kwargs.pop("dtype", None)
    # Layout never changes the values of a fresh array, the stacked result is always a copy, and
    # symbolic tensors have no subclasses: order, copy and subok cannot change the answer.
    for harmless in ("order", "copy", "subok"):
        kwargs.pop(harmless, None)
    ndmin = kwargs.pop("ndmin", 0)
    reject_unsupported(func_name, ndmin=(ndmin, 0), **{k: (v, None) for k, v in kwargs.items()})
    return None if dtype is None else np.dtype(dtype)


for _func, _name in ((np.array, "np.array"), (np.asarray, "np.asarray"), (np.asanyarray, "np.asanyarray")):
    CREATION_HANDLERS[_func] = _make_array_handler(_func, _name)
