"""Sorting along an axis: ``np.sort`` and ``np.argsort`` (``ndarray.argsort``).

The result has the operand's shape (1-d when ``axis`` is None); ``argsort`` gives NumPy's index
dtype. ``kind``/``stable`` are passed to NumPy unchanged: a stable sort is stable in the graph too.
The in-place ``ndarray.sort()`` method is not staged; use ``x = np.sort(x)``.

Before (user code)::

    order = np.argsort(scores, axis=-1)

After (IR)::

    %order = argsort %scores {axis=1} : i64[4,10]
"""

from __future__ import annotations

import numpy as np

from dy2st.errors import DifferentiationError, UnsupportedOpError, user_location
from dy2st.ir.core import Op
from dy2st.ir.emit import Emitter
from dy2st.ir.opdefs import OpDef, register
from dy2st.ir.symbolic import has_symbolic
from dy2st.ir.types import TensorType
from dy2st.ops.adjoint import Cotangents, zeros
from dy2st.ops.arguments import normalize_axes, reject_unsupported
from dy2st.ops.indexing import TENSOR_SLOT
from dy2st.staging.handlers import handles, method
from dy2st.staging.tensor import apply

_INDEX_DTYPE = np.dtype(np.intp)


def _sorted_rule(result_dtype):
    def infer(types, axis, kind=None, stable=None):
        (t,) = types
        shape = (t.size,) if axis is None else t.shape
        return TensorType(shape, t.dtype if result_dtype is None else result_dtype)

    return infer


def _sort_kernel(x, axis, kind=None, stable=None):
    return np.sort(x, axis=axis, kind=kind, stable=stable)


def _argsort_kernel(x, axis, kind=None, stable=None):
    return np.argsort(x, axis=axis, kind=kind, stable=stable)


def _sort_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """``y = take_along_axis(x, argsort(x))``: each cotangent goes back to the place its element
    came from (ties in any order: tied elements have equal values)."""
    (g,) = cts
    if g is None:
        return [None]
    (x,) = op.operands
    axis = op.attrs["axis"]
    attrs = {k: v for k, v in op.attrs.items() if k in ("kind", "stable")}
    if has_symbolic(x.type.shape):
        raise DifferentiationError("the gradient of np.sort of an array of a size known only at run time", op.loc)
    if axis is None:
        flat = e.op("reshape", x, shape=(op.result.type.shape[0],))
        order = e.op("argsort", flat, axis=0, **attrs)
        spread = e.op("index_add", zeros(e, flat), g, order, template=(TENSOR_SLOT,))
        return [e.op("reshape", spread, shape=tuple(x.type.shape))]
    order = e.op("argsort", x, axis=axis, **attrs)
    shape = x.type.shape
    template = tuple(
        TENSOR_SLOT if k == axis else np.arange(int(n)).reshape((-1,) + (1,) * (len(shape) - k - 1))
        for k, n in enumerate(shape)
    )
    return [e.op("index_add", zeros(e, x), g, order, template=template)]


register(OpDef("sort", _sorted_rule(None), _sort_kernel, doc="np.sort along an axis", vjp=_sort_vjp))
register(OpDef("argsort", _sorted_rule(_INDEX_DTYPE), _argsort_kernel, doc="np.argsort along an axis"))


def _sort_attrs(func_name: str, a, axis, kind, order, stable) -> dict:
    reject_unsupported(func_name, order=(order, None))
    if axis is not None:
        # NumPy sorts a 0-d array only with axis=None; a 0-d axis is out of bounds there too.
        axis = normalize_axes(axis, a.ndim, func_name)[0]
    attrs = {"axis": axis}
    if kind is not None:
        attrs["kind"] = kind
    if stable is not None:
        attrs["stable"] = bool(stable)
    return attrs


@handles(np.sort)
def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """Staged ``np.sort`` (a sorted copy)."""
    return apply("sort", a, **_sort_attrs("np.sort", a, axis, kind, order, stable))


@handles(np.argsort)
@method("argsort")
def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """Staged ``np.argsort`` / ``ndarray.argsort``."""
    return apply("argsort", a, **_sort_attrs("np.argsort", a, axis, kind, order, stable))


@method("sort")
def sort_in_place(a, axis=-1, kind=None, order=None, *, stable=None):
    """Staged ``ndarray.sort``: the array itself sorted (through a view, its base takes the
    update). ``axis=None``, which NumPy refuses here, goes to the generic layer for NumPy's error."""
    if axis is None:
        raise UnsupportedOpError("ndarray.sort(axis=None)", user_location())
    a._assign(apply("sort", a, **_sort_attrs("ndarray.sort", a, axis, kind, order, stable)), "ndarray.sort")
