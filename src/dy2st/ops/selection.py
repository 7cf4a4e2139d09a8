"""Selection by the data: ``np.nonzero`` and its family, ``np.unique``, ``np.compress``,
``np.extract``, ``np.putmask`` and ``np.count_nonzero``.

Their results have as many elements as the data selects: a *data-dependent size* (``u0``, see
``ir/symbolic.py``), read from the result when the graph runs. The number of nonzero elements of
one array is one size however it is asked for: ``x[m]``, ``np.nonzero(m)[0]``,
``np.flatnonzero(m)`` and ``np.compress(m, y)`` all have the size ``GraphBuilder.true_count(m)``,
so arithmetic between them needs no check. ``np.unique`` makes a size of its own.

Before (user code)::

    idx = np.flatnonzero(x > 0)

After (IR)::

    %idx = flatnonzero %0 : i64[u0]
"""

from __future__ import annotations

import numpy as np

from dy2st.errors import DifferentiationError, UnsupportedOpError, user_location
from dy2st.ir.core import Op, Value
from dy2st.ir.emit import Emitter
from dy2st.ir.opdefs import OpDef, register
from dy2st.ir.symbolic import data_dependent_size, dims_equal, has_symbolic
from dy2st.ir.types import TensorType
from dy2st.ops.adjoint import Cotangents, zeros
from dy2st.ops.arguments import normalize_axes, reject_unsupported
from dy2st.ops.indexing import TENSOR_SLOT
from dy2st.ops.shape import as_array
from dy2st.staging.handlers import handles, method
from dy2st.staging.tensor import Tensor, apply

_INDEX = np.dtype(np.intp)


# --- the nonzero family --------------------------------------------------------------------------
def _nonzero_rule(types):
    (x,) = types
    if x.ndim == 0:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use np.atleast_1d(scalar).nonzero() instead.")
    count = data_dependent_size()
    return [TensorType((count,), _INDEX) for _ in range(x.ndim)]


def _flatnonzero_rule(types):
    return TensorType((data_dependent_size(),), _INDEX)


def _argwhere_rule(types):
    (x,) = types
    return TensorType((data_dependent_size(), x.ndim), _INDEX)


def _nonzero_kernel(x):
    indices = np.nonzero(x)
    return indices[0] if len(indices) == 1 else indices  # one result is the array itself


register(OpDef("nonzero", _nonzero_rule, _nonzero_kernel, num_results=-1, doc="np.nonzero: indices of nonzeros"))
register(OpDef("flatnonzero", _flatnonzero_rule, np.flatnonzero, doc="np.flatnonzero: flat indices of nonzeros"))
register(OpDef("argwhere", _argwhere_rule, np.argwhere, doc="np.argwhere: indices of nonzero elements, one row each"))


def counted(result: Tensor | tuple[Tensor, ...], source: Tensor, axis: int = 0) -> None:
    """Give ``axis`` of each result the number of nonzero elements of ``source`` (one size for
    every selection by the same array: ``GraphBuilder.true_count``)."""
    builder = source._builder
    count = builder.true_count(source._value)
    for tensor in result if isinstance(result, tuple) else (result,):
        shape = list(tensor.shape)
        shape[axis] = count
        builder.retype(tensor._own, tuple(shape))


@handles(np.nonzero)
@method("nonzero")
def nonzero(a):
    """Staged ``np.nonzero`` / ``ndarray.nonzero``: a tuple of index arrays, one per axis."""
    result = apply("nonzero", a)
    result = result if isinstance(result, tuple) else (result,)
    counted(result, a)
    return result


@handles(np.flatnonzero)
def flatnonzero(a):
    """Staged ``np.flatnonzero``."""
    result = apply("flatnonzero", a)
    counted(result, a)
    return result


@handles(np.argwhere)
def argwhere(a):
    """Staged ``np.argwhere``."""
    result = apply("argwhere", a)
    counted(result, a)
    return result


# --- compress and extract -------------------------------------------------------------------------
def _compress_rule(types, axis):
    condition, a = types
    if condition.ndim != 1:
        raise ValueError("condition must be a 1-d array")
    if axis is None:
        return TensorType((data_dependent_size(),), a.dtype)
    shape = list(a.shape)
    shape[axis] = data_dependent_size()
    return TensorType(tuple(shape), a.dtype)


def _compress_kernel(condition, a, axis):
    return np.compress(condition, a, axis=axis)


def _extract_rule(types):
    condition, a = types
    return TensorType((data_dependent_size(),), a.dtype)


def _extract_kernel(condition, a):
    return np.extract(condition, a)


def _selected_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """``compress``/``extract``: each selected element's cotangent goes back to its place; the
    others get none. The places are the condition's nonzero (flat) positions."""
    (g,) = cts
    if g is None:
        return [None, None]
    condition, x = op.operands
    axis = op.attrs.get("axis")
    places = e.op("flatnonzero", condition)
    if axis is not None:
        template = (slice(None),) * axis + (TENSOR_SLOT,)
        return [None, e.op("index_add", zeros(e, x), g, places, template=template)]
    if has_symbolic(x.type.shape):
        raise DifferentiationError(f"the gradient of {op.name} of an array of a size known only at run time", op.loc)
    spread = e.op("index_add", zeros_flat(e, x), g, places, template=(TENSOR_SLOT,))
    return [None, e.op("reshape", spread, shape=tuple(x.type.shape))]


register(
    OpDef(
        "compress",
        _compress_rule,
        _compress_kernel,
        returns_fresh=True,
        doc="np.compress along an axis",
        vjp=_selected_vjp,
    )
)
register(
    OpDef(
        "extract",
        _extract_rule,
        _extract_kernel,
        returns_fresh=True,
        doc="np.extract: elements where true",
        vjp=_selected_vjp,
    )
)


@handles(np.compress)
def compress(condition, a, axis=None, out=None):
    """Staged ``np.compress``: the slices along ``axis`` (of the flattened array for None) where
    ``condition`` is true. A condition shorter than the axis counts as false beyond its end."""
    reject_unsupported("np.compress", out=(out, None))
    if not isinstance(condition, Tensor):
        condition = np.asarray(condition)
    if axis is not None:
        (axis,) = normalize_axes(axis, np.ndim(a), "np.compress")
    result = apply("compress", condition, a, axis=axis)
    if isinstance(condition, Tensor):
        counted(result, condition, 0 if axis is None else axis)
    return result


@method("compress")
def compress_method(a, condition, axis=None, out=None):
    """Staged ``ndarray.compress``."""
    return compress(condition, a, axis, out)


@handles(np.extract)
def extract(condition, arr):
    """Staged ``np.extract``: the elements of the flattened ``arr`` where ``condition`` is true."""
    result = apply("extract", condition, arr)
    if isinstance(condition, Tensor) and isinstance(arr, Tensor) and dims_equal(condition.size, arr.size):
        counted(result, condition)
    return result


# --- putmask ----------------------------------------------------------------------------------------
def _putmask_rule(types):
    a, mask, values = types
    if not (mask.ndim == a.ndim and all(dims_equal(m, s) for m, s in zip(mask.shape, a.shape))):
        raise ValueError("putmask: mask and data must be the same size")
    return a.strong()


def _putmask_kernel(a, mask, values):
    out = a.copy(order="K")
    np.putmask(out, mask, values)
    return out


def _putmask_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """Where the mask is true the result is a value, elsewhere the array's element. Element ``n``
    (flat) takes ``values.flat[n % values.size]``, so a shorter ``values`` collects the
    cotangents of every place that repeats it."""
    (g,) = cts
    if g is None:
        return [None, None, None]
    a, mask, values = op.operands
    to_array = e.op("where", mask, 0, g)
    taken = e.op("where", mask, g, 0)
    if values.type.shape == a.type.shape:
        return [to_array, None, taken]
    if has_symbolic(a.type.shape) or has_symbolic(values.type.shape):
        raise DifferentiationError("the gradient of np.putmask with values of a size known only at run time", op.loc)
    if values.type.size == 0:
        return [to_array, None, None]
    flat = e.op("reshape", taken, shape=(a.type.size,))
    places = np.arange(int(a.type.size)) % int(values.type.size)
    spread = e.op("index_add", zeros_flat(e, values), flat, template=(places,))
    return [to_array, None, e.op("reshape", spread, shape=tuple(values.type.shape))]


def zeros_flat(e: Emitter, like: Value) -> Value:
    """A flat array of zeros with as many elements as ``like`` (of static size)."""
    return e.op("full", shape=(like.type.size,), fill_value=0, dtype=like.type.dtype)


register(
    OpDef(
        "putmask",
        _putmask_rule,
        _putmask_kernel,
        returns_fresh=True,
        updates_operand=0,
        vjp=_putmask_vjp,
        doc="a with np.putmask(a, mask, values), functionally",
    )
)


@handles(np.putmask)
def putmask(a, mask, values):
    """Staged ``np.putmask``: where ``mask`` is true, ``a`` takes ``values`` (repeated as needed),
    in place as eager code does."""
    if not isinstance(a, Tensor):
        raise UnsupportedOpError(
            "np.putmask writes into its first argument, which must be an array of the function",
            user_location(),
        )
    a._assign(apply("putmask", a, mask, values), "np.putmask")


# --- count_nonzero ------------------------------------------------------------------------------------
def _count_nonzero_rule(types, axis, keepdims):
    (x,) = types
    axes = range(x.ndim) if axis is None else axis
    if keepdims:
        shape = tuple(1 if k in axes else d for k, d in enumerate(x.shape))
    else:
        shape = tuple(d for k, d in enumerate(x.shape) if k not in axes)
    return TensorType(shape, _INDEX)


def _count_nonzero_kernel(x, axis, keepdims):
    return np.count_nonzero(x, axis=axis, keepdims=keepdims)


register(OpDef("count_nonzero", _count_nonzero_rule, _count_nonzero_kernel, doc="np.count_nonzero"))


@handles(np.count_nonzero)
def count_nonzero(a, axis=None, *, keepdims=False):
    """Staged ``np.count_nonzero``: an int (NumPy's Python int for the whole array) or an array."""
    axes = None if axis is None else normalize_axes(axis, a.ndim, "np.count_nonzero")
    return apply("count_nonzero", a, axis=axes, keepdims=bool(keepdims))


# --- unique -------------------------------------------------------------------------------------------
def _unique_rule(types, return_index, return_inverse, return_counts, equal_nan):
    (x,) = types
    count = data_dependent_size()
    results = [TensorType((count,), x.dtype)]
    if return_index:
        results.append(TensorType((count,), _INDEX))
    if return_inverse:
        results.append(TensorType(x.shape, _INDEX))  # NumPy 2: the input's shape
    if return_counts:
        results.append(TensorType((count,), _INDEX))
    return results


def _unique_kernel(x, return_index, return_inverse, return_counts, equal_nan):
    result = np.unique(
        x,
        return_index=return_index,
        return_inverse=return_inverse,
        return_counts=return_counts,
        equal_nan=equal_nan,
    )
    return result  # a tuple for several results, the array itself for one


register(OpDef("unique", _unique_rule, _unique_kernel, num_results=-1, doc="np.unique (sorted distinct elements)"))


@handles(np.unique)
def unique(
    ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *, equal_nan=True, sorted=True
):
    """Staged ``np.unique`` of the flattened array, with any of its ``return_*`` results."""
    reject_unsupported("np.unique", axis=(axis, None), sorted=(sorted, True))
    flags = {
        "return_index": bool(return_index),
        "return_inverse": bool(return_inverse),
        "return_counts": bool(return_counts),
        "equal_nan": bool(equal_nan),
    }
    results = apply("unique", ar, **flags)
    if flags["return_inverse"] and ar.ndim == 0:
        # The inverse has the input's shape: of a 0-d input, a 0-d array, not a NumPy scalar.
        inverse = 1 + flags["return_index"]
        as_array(results[inverse])
    return results
