"""Shape ops: reshape, transpose (and ``.T``), plus dtype conversion and copies.

``reshape`` and ``transpose`` are flagged ``view``: NumPy may return a view of the operand, so the
backend copies them before handing them to the caller, and in-place updates through them are refused.
"""

from __future__ import annotations

import numpy as np

from dy2st.ir.tensor import apply
from dy2st.ir.types import TensorType
from dy2st.ops.registry import OpDef, handles, method, prop, register


def resolve_newshape(size: int, newshape) -> tuple[int, ...]:
    """``newshape`` with a ``-1`` filled in, checked against ``size`` like NumPy does."""
    if isinstance(newshape, (int, np.integer)):
        newshape = (newshape,)
    newshape = tuple(int(d) for d in newshape)
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
    elif known != size:
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


def _same_type(types):
    return types[0].strong()


register(OpDef("reshape", _reshape_rule, lambda x, shape: np.reshape(x, shape), view=True, doc="np.reshape"))
register(OpDef("transpose", _transpose_rule, lambda x, axes: np.transpose(x, axes), view=True, doc="np.transpose"))
register(OpDef("astype", _astype_rule, lambda x, dtype: x.astype(dtype), doc="ndarray.astype"))
register(OpDef("copy", _same_type, np.copy, doc="np.copy / ndarray.copy"))


@handles(np.reshape)
def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    shape = newshape if shape is None else shape
    _only_c_order("reshape", order)
    return apply("reshape", a, shape=resolve_newshape(int(np.prod(a.shape)), shape))


@method("reshape")
def reshape_method(a, *shape, order="C", copy=None):
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
        shape = shape[0]
    return reshape(a, shape, order)


@handles(np.transpose, np.permute_dims)
def transpose(a, axes=None):
    axes = tuple(range(a.ndim))[::-1] if axes is None else tuple(int(x) % max(a.ndim, 1) for x in axes)
    return apply("transpose", a, axes=axes)


@method("transpose")
def transpose_method(a, *axes):
    if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], (int, np.integer))):
        axes = axes[0]
    return transpose(a, axes if axes else None)


@prop("T")
def transpose_property(a):
    return transpose(a)


@prop("mT")
def matrix_transpose_property(a):
    axes = list(range(a.ndim))
    axes[-2:] = axes[-1], axes[-2]
    return transpose(a, tuple(axes))


@method("astype")
def astype(a, dtype, order="K", casting="unsafe", subok=True, copy=True):
    dtype = np.dtype(dtype)
    if dtype == a.dtype and not copy:
        return a
    return apply("astype", a, dtype=dtype)


@handles(np.copy)
@method("copy")
def copy(a, order="K", subok=False):
    return apply("copy", a)


def _only_c_order(name, order):
    if order not in ("C", "A", "K", None):
        from dy2st.errors import UnsupportedOpError, user_location

        raise UnsupportedOpError(f"np.{name}(order={order!r}) is not supported", user_location(4))
