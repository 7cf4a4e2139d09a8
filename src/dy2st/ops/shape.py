"""Shape ops: reshape, transpose (and ``.T``), plus dtype conversion and copies.

``reshape`` and ``transpose`` are flagged ``view``: NumPy may return a view of the operand, so the
backend copies them before handing them to the caller. Transposes, reshapes that only split axes or
add and drop unit axes, and ``broadcast_to`` are views whatever the layout: they are exact views
(staging/views.py) that follow their parent's updates and write theirs into it. A reshape that merges
axes is a view or a copy depending on the layout, which dy2st does not know: it may be read until
its operand is updated, and updating it is refused.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from dy2st.errors import DifferentiationError, GraphBuildError, UnsupportedOpError, user_location
from dy2st.ir.core import Op, Value
from dy2st.ir.emit import Emitter
from dy2st.ir.opdefs import OpDef, register
from dy2st.ir.symbolic import SymExpr, broadcast_shapes, dims_equal, has_symbolic
from dy2st.ir.types import TensorType
from dy2st.ops.adjoint import Cotangents
from dy2st.ops.arguments import build_error, normalize_axes, reject_unsupported, static_int, static_shape
from dy2st.staging.handlers import CREATION_HANDLERS, RUNTIME_QUERIES, handles, method, prop, setter
from dy2st.staging.tensor import Tensor, apply
from dy2st.staging.views import OpView, make_view


def resolve_newshape(size: Any, newshape) -> tuple[Any, ...]:
    """``newshape`` with a ``-1`` filled in, checked against ``size`` like NumPy does."""
    if isinstance(newshape, (int, np.integer)):
        newshape = (newshape,)
    # 2.0 raises TypeError, as in NumPy; a symbolic size (x.reshape(len(x), -1)) stays one.
    newshape = tuple(d if isinstance(d, SymExpr) else operator.index(d) for d in newshape)
    unknown = [i for i, d in enumerate(newshape) if d == -1]
    if len(unknown) > 1:
        raise ValueError("can only specify one unknown dimension")
    known = 1
    for d in newshape:
        if d != -1:
            if d < 0:
                raise ValueError(f"negative dimension {d} in new shape")
            known *= d
    if unknown:
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of size {size} into shape {newshape}")
        newshape = tuple(size // known if d == -1 else d for d in newshape)
    elif not dims_equal(known, size):
        raise ValueError(f"cannot reshape array of size {size} into shape {newshape}")
    return newshape


def _reshape_rule(types, shape):
    (t,) = types
    return TensorType(resolve_newshape(t.size, shape), t.dtype)


def _transpose_rule(types, axes):
    (t,) = types
    if sorted(axes) != list(range(t.ndim)):
        raise ValueError(f"axes {axes} don't match array of dimension {t.ndim}")
    return TensorType(tuple(t.shape[a] for a in axes), t.dtype)


def _astype_rule(types, dtype):
    (t,) = types
    return TensorType(t.shape, np.dtype(dtype))


def _same_type(types, order="K"):
    return types[0].strong()


RESHAPE, TRANSPOSE, ASTYPE, BYTE_ORDER_CAST, COPY = "reshape", "transpose", "astype", "byte_order_cast", "copy"
BROADCAST_TO = "broadcast_to"
"""Opcodes other layers build or rewrite (simplification composes them)."""


# --- shapes read from an operand when the graph runs --------------------------------------------
# Backward code reshapes and broadcasts cotangents to the shapes of forward values. Where those
# hold sizes known only at run time, the sizes are read from a value of that shape (the forward
# value itself) rather than from an attribute: inside a loop, values whose sizes carry the same
# symbol differ from one iteration to the next.
EXPAND_DIMS, RESHAPE_LIKE, BROADCAST_LIKE = "expand_dims", "reshape_like", "broadcast_to_like"


def _expand_dims_rule(types, axes):
    (t,) = types
    shape = list(t.shape)
    for axis in sorted(axes):
        shape.insert(axis, 1)
    return TensorType(tuple(shape), t.dtype)


def _like_second_rule(types):
    x, like = types
    return TensorType(like.shape, x.dtype)


register(
    OpDef(
        EXPAND_DIMS,
        _expand_dims_rule,
        lambda x, axes: np.expand_dims(x, axes),
        view=True,
        doc="np.expand_dims: size-1 axes inserted at the positions axes (sorted)",
    )
)
register(
    OpDef(
        RESHAPE_LIKE,
        _like_second_rule,
        lambda x, like: np.reshape(x, np.shape(like)),
        view=True,
        doc="x reshaped to the shape of the second operand",
    )
)
register(
    OpDef(
        BROADCAST_LIKE,
        _like_second_rule,
        lambda x, like: np.broadcast_to(x, np.shape(like)),
        view=True,
        doc="x broadcast to the shape of the second operand (a read-only view)",
    )
)


def reshaped_like(e: Emitter, x: Value, like: Value) -> Value:
    """``x`` reshaped to ``like``'s shape: an attribute where the shape is static, else read from
    ``like`` when the graph runs."""
    if not has_symbolic(like.type.shape):
        return e.op(RESHAPE, x, shape=tuple(like.type.shape))
    return e.op(RESHAPE_LIKE, x, like)


def broadcast_like(e: Emitter, x: Value, like: Value) -> Value:
    """``x`` broadcast to ``like``'s shape (see ``reshaped_like``)."""
    if not has_symbolic(like.type.shape):
        return e.op(BROADCAST_TO, x, shape=tuple(like.type.shape))
    return e.op(BROADCAST_LIKE, x, like)


def _static_shape_for_onnx(w, op, shape) -> list[int]:
    if has_symbolic(shape):
        raise w.refuse("a shape known only at run time")
    return [int(n) for n in shape]


def _onnx_to_result_shape(operator: str):
    """``Reshape`` or ``Expand`` of the operand to the result's static shape."""

    def export(w, op) -> list[str]:
        shape = w.constant(np.array(_static_shape_for_onnx(w, op, op.result.type.shape), dtype=np.int64))
        return [w.node(operator, [w.input(op.operands[0]), shape])[0]]

    return export


_onnx_reshape = _onnx_to_result_shape("Reshape")
_onnx_broadcast_to = _onnx_to_result_shape("Expand")


def _onnx_transpose(w, op) -> list[str]:
    axes = op.attrs.get("axes")
    perm = list(reversed(range(op.result.type.ndim))) if axes is None else [int(a) for a in axes]
    return [w.node("Transpose", [w.input(op.operands[0])], perm=perm)[0]]


def _onnx_cast(w, op) -> list[str]:
    return [w.input(op.operands[0], op.result.type.dtype)]


def _onnx_copy(w, op) -> list[str]:
    return [w.node("Identity", [w.input(op.operands[0])])[0]]


def _same_cotangent(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """Ops that keep values as they are (copy, astype, broadcast_to): the cotangent passes
    through; the caller casts it back and sums it over broadcast axes."""
    return [cts[0]]


def _reshape_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    (g,) = cts
    return [None if g is None else reshaped_like(e, g, op.operands[0])]


def _transpose_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    (g,) = cts
    if g is None:
        return [None]
    axes = op.attrs.get("axes")
    ndim = op.result.type.ndim
    order = tuple(reversed(range(ndim))) if axes is None else tuple(axes)
    return [e.op(TRANSPOSE, g, axes=tuple(int(k) for k in np.argsort(order)))]


register(
    OpDef(
        RESHAPE,
        _reshape_rule,
        lambda x, shape: np.reshape(x, shape),
        view=True,
        doc="np.reshape",
        vjp=_reshape_vjp,
        onnx=_onnx_reshape,
    )
)
register(
    OpDef(
        TRANSPOSE,
        _transpose_rule,
        lambda x, axes: np.transpose(x, axes),
        view=True,
        doc="np.transpose",
        vjp=_transpose_vjp,
        onnx=_onnx_transpose,
    )
)


def _copy(x, order="K"):
    return np.copy(x, order=order)


def _copy_into(x, out, order="K"):
    # ``out`` is C-ordered: the planner gives buffers only to values whose memory order no
    # reduction reads, so ``order`` changes nothing there.
    np.copyto(out, x)
    return out


def _cast_into(x, out, dtype=None):
    np.copyto(out, x, casting="unsafe")  # astype's default casting; ``out`` has the new dtype
    return out


def _astype(x: Any, dtype: Any) -> Any:
    """``x.astype(dtype)``; ``x`` may be a Python number (a graph input or ``float(t)``), which
    NumPy's constructors take as they take a 0-d array (``np.float64(lr)``)."""
    if isinstance(x, (np.ndarray, np.generic)):
        return x.astype(dtype)
    return np.asarray(x).astype(dtype)


register(
    OpDef(
        ASTYPE,
        _astype_rule,
        _astype,
        out_kernel=_cast_into,
        returns_fresh=True,
        doc="ndarray.astype",
        vjp=_same_cotangent,
        onnx=_onnx_cast,
    )
)
register(
    OpDef(
        COPY,
        _same_type,
        _copy,
        out_kernel=_copy_into,
        returns_fresh=True,
        doc="np.copy / ndarray.copy (attribute order: K unless given)",
        vjp=_same_cotangent,
        onnx=_onnx_copy,
    )
)


def always_a_view(old: tuple[Any, ...], new: tuple[Any, ...]) -> bool:
    """Does NumPy reshape ``old`` into ``new`` as a view for every memory layout? Yes when the
    reshape only splits axes and adds or drops unit axes (merging axes needs them contiguous)."""
    if 0 in old:
        return True  # no elements: nothing to share or to copy
    old_dims, new_dims = [d for d in old if d != 1], [d for d in new if d != 1]
    j = 0
    for dim in old_dims:
        product = 1
        while product < dim and j < len(new_dims):
            product *= new_dims[j]
            j += 1
        if product != dim:
            return False
    return j == len(new_dims)


def _reshape_back(parent: Tensor, new: Tensor, index_tensors: list[Tensor], attrs: dict) -> Tensor:
    return apply(RESHAPE, new, shape=parent.shape)


def _transpose_back(parent: Tensor, new: Tensor, index_tensors: list[Tensor], attrs: dict) -> Tensor:
    return apply(TRANSPOSE, new, axes=tuple(np.argsort(attrs["axes"]).tolist()))


def reshaped(a, shape: tuple[int, ...]):
    """``a`` reshaped: an exact view when NumPy always makes one, else a maybe-view (see above)."""
    result = apply(RESHAPE, a, shape=shape)
    if isinstance(a, Tensor) and always_a_view(a.shape, shape):
        make_view(result, a, OpView(RESHAPE, {"shape": shape}, write_back_fn=_reshape_back))
    return result


def transposed(a, axes: tuple[int, ...]):
    """``a`` with its axes permuted: always a view."""
    result = apply(TRANSPOSE, a, axes=axes)
    if isinstance(a, Tensor):
        make_view(result, a, OpView(TRANSPOSE, {"axes": axes}, write_back_fn=_transpose_back))
    return result


def read_only_view(op: str, a, **attrs):
    """The result of the view op ``op`` on ``a``, a view NumPy makes read-only (broadcast_to, diagonal)."""
    result = apply(op, a, **attrs)
    if isinstance(a, Tensor):
        make_view(result, a, OpView(op, attrs))
    return result


def _byte_order_cast_rule(types, dtype):
    (t,) = types
    return TensorType(t.shape, np.dtype(dtype))


# A cast that changes the byte order (`x.astype('>f8')`, or `x.astype(np.float64)` of a big-endian
# float64 array, a native copy in NumPy). Types compare by the native dtype (ir/types.py), so as
# an `astype` it would be simplified away as a same-type cast, or written into a planned buffer
# of the native dtype: this op has no out= form.
register(
    OpDef(
        BYTE_ORDER_CAST,
        _byte_order_cast_rule,
        lambda x, dtype: x.astype(dtype),
        returns_fresh=True,
        doc="ndarray.astype to a dtype of another byte order",
    )
)


def cast(a, dtype: np.dtype):
    """``a`` converted to ``dtype`` as ``a.astype(dtype)`` converts it, byte order included."""
    if not dtype.isnative or (a.type.byteorder != "=" and dtype == a.type.dtype):
        return apply(BYTE_ORDER_CAST, a, dtype=dtype)
    return apply(ASTYPE, a, dtype=dtype)


@handles(np.reshape)
def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    shape = newshape if shape is None else shape
    _only_c_order("reshape", order)
    try:
        newshape = resolve_newshape(a.size, shape)
    except (ValueError, TypeError) as e:
        raise build_error("np.reshape", e) from None
    return same_kind(reshaped(a, newshape), a)


@method("reshape")
def reshape_method(a, *shape, order="C", copy=None):
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
        shape = shape[0]
    return reshape(a, shape, order)


# --- x.shape = new_shape: a reshape of the array object itself ------------------------------
@setter("shape")
def assign_shape(x: Tensor, shape) -> None:
    """``x.shape = shape``: NumPy reshapes the array object in place. dy2st does the same where it
    can tell it is exact: ``x`` is no view and nothing but one variable can reach it (the caller
    would see an argument's or a global's new shape; views follow ``x`` by its old shape), and the
    reshape only splits axes or adds and drops unit axes (merging axes fails in NumPy for some
    memory layouts, which dy2st does not track). Elsewhere a ``GraphBuildError`` suggests
    rebinding the name to ``x.reshape(shape)``."""
    if x._scalar:
        raise not_writable(x, "shape")
    new_shape = _assigned_shape(x, shape)
    if new_shape == x.shape:
        return
    why_not = _why_not_in_place(x, new_shape)
    if why_not is not None:
        raise GraphBuildError(
            f"assigning {new_shape} to .shape reshapes the array object in place, but {why_not}",
            user_location(),
            f"rebind the variable to a reshaped array instead: y = y.reshape({new_shape})",
        )
    # Not logged as an in-place update: the array was made in this block (``_staged_block_reason``),
    # so no branch or loop needs to carry or restore it.
    x._value = apply(RESHAPE, x, shape=new_shape)._value


def _assigned_shape(x: Tensor, shape) -> tuple[int, ...]:
    dims = shape if isinstance(shape, (tuple, list)) else (shape,)
    try:
        return resolve_newshape(x.size, tuple(operator.index(d) for d in dims))
    except (TypeError, ValueError) as e:
        raise build_error("shape assignment", e) from None


def _staged_block_reason(x: Tensor) -> str | None:
    """Why ``x``'s shape cannot change in the block being staged (the function's top, or the tensor
    ``if`` branch or loop body being traced), or None. Branches and loops restore the arrays they
    update to their contents before the update, which must keep one shape: so the array must be
    made in this block (its contents are the result of one of its ops) and not updated in place
    there yet."""
    builder = x._builder
    if builder.mutation_logs and any(tensor is x for tensor, _ in builder.mutation_logs[-1]):
        return "a tensor if or loop body being staged has updated it in place (assign .shape before that)"
    owner = x._own.owner
    if not isinstance(owner, Op) or owner.parent is not builder.block:
        return "it was made before the tensor if or loop being staged, so its shape would depend on the path taken"
    return None


def _why_not_in_place(x: Tensor, new_shape: tuple[int, ...]) -> str | None:
    """Why dy2st cannot reshape ``x`` in place exactly as NumPy would, or None if it can."""
    if x._parent is not None or x._shares:
        return "this array is a view of another array (or may share memory with one)"
    other_references = RUNTIME_QUERIES.get("other_references")
    others = "code dy2st cannot see" if other_references is None else other_references(x)
    if others is not None:
        return f"{others} can also reach it"
    in_block = _staged_block_reason(x)
    if in_block is not None:
        return in_block
    if not always_a_view(x.shape, new_shape):
        return (
            f"going from {x.shape} to {new_shape} merges axes, which NumPy does in place only for some "
            "memory layouts of the array, and dy2st does not track memory layout"
        )
    return None


# Assignments of the other writable ndarray attributes: what each does in NumPy, and the rewrite.
_REFUSED_ASSIGNMENTS = {
    "dtype": (
        "it reinterprets the array's memory as another dtype in place, which dy2st does not stage",
        "to convert the values, rebind the variable: y = y.astype(new_dtype)",
    ),
    "strides": (
        "it changes how the array's memory is read, and dy2st does not track memory layout",
        "index, reshape or transpose the array instead",
    ),
    "flat": (
        "dy2st does not stage it",
        "assign through an index instead: y[...] = value (np.resize the value first to repeat it)",
    ),
}


def _refuse_assignment(name: str):
    reason, rewrite = _REFUSED_ASSIGNMENTS[name]

    def refuse(x: Tensor, value) -> None:
        raise UnsupportedOpError(
            f"assigning .{name} of a symbolic tensor is not supported: {reason}", user_location(), rewrite
        )

    return refuse


for _name in _REFUSED_ASSIGNMENTS:
    setter(_name)(_refuse_assignment(_name))


def not_writable(x: Tensor, name: str) -> GraphBuildError:
    """NumPy's AttributeError for assigning the read-only attribute ``name`` (any attribute, of a
    NumPy scalar), at the user's line."""
    owner = "numpy.generic" if x._scalar else "numpy.ndarray"
    return build_error(f"{name} assignment", AttributeError(f"attribute '{name}' of '{owner}' objects is not writable"))


def _refuse_read_only(name: str):
    def refuse(x: Tensor, value) -> None:
        raise not_writable(x, name)

    return refuse


# NumPy's read-only attributes, and ``data``, which NumPy 2.4 refuses too (earlier versions
# deprecated assigning it): NumPy's AttributeError at the user's line.
for _name in ("data", "T", "mT", "ndim", "size", "itemsize", "nbytes", "base", "flags", "ctypes", "device"):
    setter(_name)(_refuse_read_only(_name))


@handles(np.transpose, np.permute_dims)
def transpose(a, axes=None):
    if axes is None:
        return same_kind(transposed(a, tuple(range(a.ndim))[::-1]), a)
    axes = (axes,) if isinstance(axes, (int, np.integer)) else tuple(axes)
    if len(axes) != a.ndim:
        raise build_error("np.transpose", ValueError("axes don't match array"))
    return same_kind(transposed(a, normalize_axes(axes, a.ndim, "np.transpose")), a)


@method("transpose")
def transpose_method(a, *axes):
    if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], (int, np.integer))):
        return transpose(a, axes[0] if axes[0] else None)  # a.transpose((1, 0)) or a.transpose(None)
    return transpose(a, axes if axes else None)


@prop("T")
def transpose_property(a):
    return transpose(a)


@prop("mT")
def matrix_transpose_property(a):
    if a.ndim < 2:
        raise build_error("ndarray.mT", ValueError("matrix transpose with ndim < 2 is undefined"))
    axes = list(range(a.ndim))
    axes[-2:] = axes[-1], axes[-2]
    return transpose(a, tuple(axes))


@method("astype")
def astype(a, dtype, order="K", casting="unsafe", subok=True, copy=True):
    dtype = np.dtype(dtype)
    if not np.can_cast(a.dtype, dtype, casting=casting):
        raise build_error(
            "ndarray.astype",
            TypeError(f"Cannot cast array data from {a.dtype!r} to {dtype!r} according to the rule {casting!r}"),
        )
    if dtype == a.type.exact_dtype and not copy:
        return a
    return same_kind(cast(a, dtype), a)


@handles(np.copy)
def copy(a, order="K", subok=False):
    """Staged ``np.copy``: always an array, even of a NumPy scalar."""
    return as_array(_staged_copy(a, order))


@method("copy")
def copy_method(a, order="C"):
    """Staged ``ndarray.copy``: a NumPy scalar's copy is a scalar again. Its default memory order
    is C, np.copy's K (the operand's): a reduction of ``x.T.copy()`` rounds by it."""
    return same_kind(_staged_copy(a, order), a)


def _staged_copy(a, order):
    return apply("copy", a) if order == "K" else apply("copy", a, order=order)


def same_kind(result, operand):
    """Give ``result`` the operand's kind: reshape/transpose/astype/squeeze/copy() keep NumPy
    scalars scalars and 0-d arrays arrays, which decides whether ``+=`` later rebinds or mutates."""
    result._scalar = getattr(operand, "_scalar", False)
    return result


def as_array(result):
    """Mark a 0-d ``result`` as an array (mutable in place), not a NumPy scalar."""
    result._scalar = False
    return result


def _only_c_order(name, order):
    # dy2st does not track memory layout, so only the C order (which ignores layout) is exact.
    if order not in ("C", None):
        raise UnsupportedOpError(
            f"np.{name}(order={order!r}) is not supported on symbolic tensors",
            user_location(),
            "only order='C' is supported: dy2st does not track memory layout",
        )


# --- broadcasting and adding/removing unit axes ---------------------------------------------
def _broadcast_to_rule(types, shape):
    (t,) = types
    try:
        fits = len(t.shape) <= len(shape) and broadcast_shapes(t.shape, tuple(shape)) == tuple(shape)
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"cannot broadcast an array of shape {t.shape} to the requested shape {tuple(shape)}")
    return TensorType(tuple(shape), t.dtype)


register(
    OpDef(
        BROADCAST_TO,
        _broadcast_to_rule,
        lambda x, shape: np.broadcast_to(x, shape),
        view=True,
        doc="np.broadcast_to (a read-only view)",
        vjp=_same_cotangent,
        onnx=_onnx_broadcast_to,
    )
)


@handles(np.broadcast_to)
def broadcast_to(array, shape, subok=False):
    """Staged ``np.broadcast_to``; ``array`` may also be a concrete array."""
    return as_array(read_only_view(BROADCAST_TO, array, shape=static_shape(shape, "np.broadcast_to")))


@handles(np.expand_dims)
def expand_dims(a, axis):
    """Staged ``np.expand_dims``: a reshape that inserts unit axes."""
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out_ndim = a.ndim + len(axes)
    positions = normalize_axes(axes, out_ndim, "np.expand_dims")
    dims = iter(a.shape)
    shape = tuple(1 if i in positions else next(dims) for i in range(out_ndim))
    return reshaped(a, shape)


@handles(np.squeeze)
@method("squeeze")
def squeeze(a, axis=None):
    """Staged ``np.squeeze``: a reshape that drops unit axes (all of them, or the given ones)."""
    if axis is None:
        dropped = {i for i, d in enumerate(a.shape) if d == 1}
    else:
        dropped = set(normalize_axes(axis, a.ndim, "np.squeeze"))
        if any(a.shape[i] != 1 for i in dropped):
            raise build_error(
                "np.squeeze", ValueError("cannot select an axis to squeeze out which has size not equal to one")
            )
    return same_kind(reshaped(a, tuple(d for i, d in enumerate(a.shape) if i not in dropped)), a)


@handles(np.ravel)
@method("ravel")
def ravel(a, order="C"):
    """Staged ``np.ravel``: a 1-d reshape (a view where NumPy returns one)."""
    _only_c_order("ravel", order)
    return reshaped(a, (a.size,))


@method("flatten")
def flatten(a, order="C"):
    """Staged ``ndarray.flatten``: always a copy, unlike ``ravel``."""
    _only_c_order("flatten", order)
    return apply("copy", apply("reshape", a, shape=(a.size,)))


@handles(np.swapaxes)
@method("swapaxes")
def swapaxes(a, axis1, axis2):
    """Staged ``np.swapaxes``: a transpose exchanging two axes."""
    # Normalized one at a time: swapping an axis with itself (1 and -1 of a 2-d array) is allowed.
    (first,), (second,) = (normalize_axes(axis, a.ndim, "np.swapaxes") for axis in (axis1, axis2))
    axes = list(range(a.ndim))
    axes[first], axes[second] = axes[second], axes[first]
    return transposed(a, tuple(axes))


@handles(np.moveaxis)
def moveaxis(a, source, destination):
    """Staged ``np.moveaxis``: a transpose moving axes to new positions."""
    sources = normalize_axes(source, a.ndim, "np.moveaxis")
    destinations = normalize_axes(destination, a.ndim, "np.moveaxis")
    if len(sources) != len(destinations):
        raise build_error(
            "np.moveaxis", ValueError("`source` and `destination` arguments must have the same number of elements")
        )
    order = [i for i in range(a.ndim) if i not in sources]
    for dest, src in sorted(zip(destinations, sources)):
        order.insert(dest, src)
    return transposed(a, tuple(order))


# --- static facts: answered at build time, no op emitted ----------------------------------------
@handles(np.ndim)
def ndim(a):
    """``np.ndim`` of a tensor: a Python int (shapes are static)."""
    return a.ndim


@handles(np.shape)
def shape_of(a):
    """``np.shape`` of a tensor: a tuple of Python ints."""
    return a.shape


@handles(np.size)
def size_of(a, axis=None):
    """``np.size`` of a tensor: a Python int."""
    return a.size if axis is None else a.shape[normalize_axes(axis, a.ndim, "np.size")[0]]


# --- scalar type constructors: np.float32(t) casts a tensor ------------------------------------
def _scalar_type_constructor(scalar_type):
    def construct(*args, **kwargs):
        if len(args) == 1 and not kwargs and isinstance(args[0], Tensor):
            # np.float32(array) casts the array (a NumPy scalar for a 0-d one), like astype.
            return apply("astype", args[0], dtype=np.dtype(scalar_type))
        return scalar_type(*args, **kwargs)

    construct.__name__ = scalar_type.__name__
    construct.__doc__ = f"``np.{scalar_type.__name__}(x)``: an ``astype`` for a tensor, NumPy's own otherwise."
    return construct


# Every numeric NumPy scalar type, under each of its names (np.longlong and np.int64 are two
# types of one size, np.float128 is np.longdouble).
for _scalar_type in {
    *(np.float16, np.float32, np.float64, np.longdouble),
    *(np.int8, np.int16, np.int32, np.int64, np.longlong, np.intc, np.intp),
    *(np.uint8, np.uint16, np.uint32, np.uint64, np.ulonglong, np.uintc, np.uintp),
    *(np.bool_, np.complex64, np.complex128, np.clongdouble),
}:
    CREATION_HANDLERS[_scalar_type] = _scalar_type_constructor(_scalar_type)


@handles(np.result_type)
def result_type(*arrays_and_dtypes):
    """``np.result_type`` with tensors: their static dtypes (Python scalars stay weak)."""
    return np.result_type(*(a.dtype if isinstance(a, Tensor) else a for a in arrays_and_dtypes))


# --- sliding windows: a read-only strided view ---------------------------------------------------
def _windows_rule(types, window_shape, axis):
    (t,) = types
    dummy = np.broadcast_to(np.empty((), np.uint8), t.shape)  # zero-strided: no data
    shape = np.lib.stride_tricks.sliding_window_view(dummy, window_shape, axis).shape
    return TensorType(shape, t.dtype)


def _windows_kernel(x, window_shape, axis):
    return np.lib.stride_tricks.sliding_window_view(x, window_shape, axis)


def _windows_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """Every element of a window is an element of ``x``, and an element of ``x`` is in several
    windows: each adds its cotangent back to the element's flat place, found by taking the same
    windows of the places themselves."""
    (g,) = cts
    if g is None:
        return [None]
    x = op.operands[0]
    if has_symbolic(x.type.shape):
        raise DifferentiationError(
            "the gradient of sliding_window_view of an array of a size known only at run time", op.loc
        )
    shape = tuple(int(n) for n in x.type.shape)
    places = _windows_kernel(np.arange(math.prod(shape)).reshape(shape), op.attrs["window_shape"], op.attrs["axis"])
    flat = e.op("full", shape=(math.prod(shape),), fill_value=0, dtype=x.type.dtype)
    spread = e.op("index_add", flat, g, template=(np.ascontiguousarray(places),))
    return [e.op("reshape", spread, shape=shape)]


register(
    OpDef(
        "sliding_window_view",
        _windows_rule,
        _windows_kernel,
        view=True,
        vjp=_windows_vjp,
        doc="np.lib.stride_tricks.sliding_window_view (a read-only view)",
    )
)


@handles(np.lib.stride_tricks.sliding_window_view)
def sliding_window_view(x, window_shape, axis=None, *, subok=False, writeable=False):
    """Staged ``sliding_window_view``; ``writeable=True`` is refused (writes would alias)."""
    reject_unsupported("np.lib.stride_tricks.sliding_window_view", writeable=(writeable, False))
    windows = static_shape(window_shape, "sliding_window_view")
    if isinstance(axis, (tuple, list)):
        axis = tuple(static_int(a, "sliding_window_view: axis") for a in axis)
    elif axis is not None:
        axis = static_int(axis, "sliding_window_view: axis")  # NumPy's own rule checks the rest
    return as_array(read_only_view("sliding_window_view", x, window_shape=windows, axis=axis))
