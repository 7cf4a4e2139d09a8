"""Rearranging elements: ``np.flip``, ``fliplr``, ``flipud``, ``rot90``, ``np.roll`` and the
``atleast_*`` functions, as NumPy defines them, in terms of indexing, transposes and joins.

They have precise rules (rather than the generic layer) because they are common in stencils and
periodic boundaries: their results keep static shapes, so the ops around them fuse, and the views
NumPy makes (``np.flip``, ``rot90``, ``atleast_2d``) are exact views here too, so a write through
one updates its base as eagerly. A call these rules do not take (a tensor shift, an array-like
that is not a tensor) goes to the generic layer.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from dy2st.errors import UnsupportedOpError, user_location
from dy2st.ir.core import Op
from dy2st.ir.emit import Emitter
from dy2st.ops.adjoint import Cotangents
from dy2st.ops.arguments import build_error, normalize_axes
from dy2st.ops.generic import NUMPY_CALL_ADJOINTS, emit_numpy_call, plain_call_rule
from dy2st.staging.handlers import handles
from dy2st.staging.tensor import Tensor, apply

_REVERSED = slice(None, None, -1)


def _tensor(value: Any, func_name: str) -> Tensor:
    if not isinstance(value, Tensor):
        raise UnsupportedOpError(f"{func_name}: the array is not a tensor of the function", user_location(3))
    return value


def _static_ints(value: Any, func_name: str) -> tuple[int, ...]:
    """Python ints (one or a sequence); a tensor is refused, so the generic layer takes the call."""
    items = value if isinstance(value, (tuple, list)) else (value,)
    if any(isinstance(item, Tensor) for item in items):
        raise UnsupportedOpError(f"{func_name}: shifts and axes that are tensors", user_location(3))
    return tuple(operator.index(item) for item in items)


@handles(np.flip)
def flip(m, axis=None):
    """``m`` with the order of elements reversed along ``axis`` (all axes for None): a view."""
    m = _tensor(m, "np.flip")
    axes = range(m.ndim) if axis is None else normalize_axes(_static_ints(axis, "np.flip"), m.ndim, "np.flip")
    return m[tuple(_REVERSED if k in axes else slice(None) for k in range(m.ndim))]


@handles(np.fliplr)
def fliplr(m):
    m = _tensor(m, "np.fliplr")
    if m.ndim < 2:
        raise _value_error("np.fliplr", "Input must be >= 2-d.")
    return m[:, ::-1]


@handles(np.flipud)
def flipud(m):
    m = _tensor(m, "np.flipud")
    if m.ndim < 1:
        raise _value_error("np.flipud", "Input must be >= 1-d.")
    return m[::-1, ...]


@handles(np.rot90)
def rot90(m, k=1, axes=(0, 1)):
    """NumPy's own definition: flips and a transpose, all views."""
    m = _tensor(m, "np.rot90")
    axes = _static_ints(axes, "np.rot90")
    if len(axes) != 2:
        raise _value_error("np.rot90", "len(axes) must be 2.")
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == m.ndim:
        raise _value_error("np.rot90", "Axes must be different.")
    first, second = normalize_axes(axes, m.ndim, "np.rot90")
    (k,) = _static_ints(k, "np.rot90")
    k %= 4
    if k == 0:
        return m[...]
    if k == 2:
        return flip(flip(m, first), second)
    order = list(range(m.ndim))
    order[first], order[second] = order[second], order[first]
    if k == 1:
        return np.transpose(flip(m, second), order)
    return flip(np.transpose(m, order), second)


@handles(np.roll)
def roll(a, shift, axis=None):
    """``np.roll`` with Python-int shifts: the two parts of each rolled axis joined (a new array)."""
    a = _tensor(a, "np.roll")
    if axis is None:
        return roll(a.ravel(), shift, 0).reshape(a.shape)
    shifts = _static_ints(shift, "np.roll")
    axes = tuple(normalize_axes((k,), a.ndim, "np.roll")[0] for k in _static_ints(axis, "np.roll"))  # repeats allowed
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    elif len(axes) == 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise _value_error("np.roll", "'shift' and 'axis' should be scalars or 1D sequences")
    total = {k: 0 for k in axes}
    for s, k in zip(shifts, axes):
        total[k] += s
    result = a
    for k, s in total.items():
        size = a.shape[k]
        if not isinstance(size, int):
            raise UnsupportedOpError("np.roll: an axis of symbolic size", user_location(2))
        offset = s % size if size else 0
        if offset:
            head = tuple(slice(None) if j != k else slice(size - offset, None) for j in range(a.ndim))
            tail = tuple(slice(None) if j != k else slice(None, size - offset) for j in range(a.ndim))
            result = np.concatenate((result[head], result[tail]), axis=k)
    return result if result is not a else apply("copy", a, order="K")


def _roll_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """``np.roll(x, k)`` with a shift known when the graph runs (the generic layer calls NumPy):
    the cotangent rolled back by ``-k``; the shift is an integer."""
    (g,) = cts
    if g is None:
        return [None, None]
    _x, shift = op.operands
    return [emit_numpy_call(e, "np.roll", g, e.op("negative", shift), result=g.type), None]


NUMPY_CALL_ADJOINTS["np.roll"] = plain_call_rule(_roll_vjp)


def _at_least(name: str, ndim: int, arrays: tuple) -> Any:
    results = [_expanded(_tensor(a, name), ndim) for a in arrays]
    return results[0] if len(results) == 1 else tuple(results)


def _expanded(a: Tensor, ndim: int) -> Tensor:
    """``a`` itself when it has ``ndim`` axes already, else the view NumPy's ``atleast_*`` makes:
    ``(1,)``, ``(1, n)``, ``(1, n, 1)``, ``(n, m, 1)``."""
    if a.ndim >= ndim:
        return a
    if a.ndim == 0:
        return a[(None,) * ndim]
    if ndim == 2 or a.ndim == 2:
        return a[None] if ndim == 2 else a[..., None]
    return a[None, :, None]


@handles(np.atleast_1d)
def atleast_1d(*arys):
    return _at_least("np.atleast_1d", 1, arys)


@handles(np.atleast_2d)
def atleast_2d(*arys):
    return _at_least("np.atleast_2d", 2, arys)


@handles(np.atleast_3d)
def atleast_3d(*arys):
    return _at_least("np.atleast_3d", 3, arys)


def _value_error(func_name: str, message: str):
    return build_error(func_name, ValueError(message))
