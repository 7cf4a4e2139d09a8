"""Matrix structure: triangles (``np.tril``/``np.triu``), diagonals (``np.diagonal``, ``np.diag``)
and ``np.trace``.

Creation functions are staged, so ``np.triu(np.ones((n, n)), 1)`` inside a converted function is
a tensor expression: these functions keep such mask-building code working. ``trace`` is staged as
NumPy computes it, a diagonal followed by a sum over its last axis.

Before (user code)::

    mask = np.triu(np.ones((4, 4), dtype=bool), k=1)

After (IR)::

    %0 = full {dtype=bool, fill_value=1, shape=(4, 4)} : bool[4,4]
    %mask = triu %0 {k=1} : bool[4,4]
"""

from __future__ import annotations

import numpy as np

from dy2st.errors import DifferentiationError, GraphBuildError, user_location
from dy2st.ir.core import Op
from dy2st.ir.emit import Emitter
from dy2st.ir.opdefs import OpDef, register
from dy2st.ir.symbolic import has_symbolic
from dy2st.ir.types import TensorType
from dy2st.ops.adjoint import Cotangents, zeros
from dy2st.ops.arguments import normalize_axes, reject_unsupported, static_int
from dy2st.ops.shape import read_only_view
from dy2st.staging.handlers import handles, method
from dy2st.staging.tensor import apply


def _triangle_rule(types, k):
    (t,) = types
    if t.ndim == 0:
        raise TypeError("a triangle needs an array of at least one dimension")  # NumPy's TypeError
    # NumPy treats a 1-d operand as the rows of a square matrix.
    return TensorType(t.shape * 2 if t.ndim == 1 else t.shape, t.dtype)


def diagonal_length(rows: int, cols: int, offset: int) -> int:
    """How many elements the ``offset`` diagonal of a rows x cols matrix has."""
    return max(0, min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols))


def _diagonal_rule(types, offset, axis1, axis2):
    (t,) = types
    rest = tuple(d for i, d in enumerate(t.shape) if i not in (axis1, axis2))
    return TensorType(rest + (diagonal_length(t.shape[axis1], t.shape[axis2], offset),), t.dtype)


def _diag_rule(types, k):
    (t,) = types
    if t.ndim == 1:
        size = t.shape[0] + abs(k)
        return TensorType((size, size), t.dtype)
    if t.ndim == 2:
        return TensorType((diagonal_length(t.shape[0], t.shape[1], k),), t.dtype)
    raise ValueError("Input must be 1- or 2-d.")


def _triangle_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """The triangle kept gets its cotangent; the zeroed part none."""
    (g,) = cts
    return [None if g is None else e.op(op.name, g, k=op.attrs["k"])]


register(
    OpDef("tril", _triangle_rule, lambda x, k: np.tril(x, k), doc="np.tril: the lower triangle", vjp=_triangle_vjp)
)
register(
    OpDef("triu", _triangle_rule, lambda x, k: np.triu(x, k), doc="np.triu: the upper triangle", vjp=_triangle_vjp)
)


def _diagonal_places(rows: int, cols: int, offset: int) -> tuple[np.ndarray, np.ndarray]:
    """The (row, column) positions of the ``offset`` diagonal of a rows x cols matrix."""
    first_row = np.arange(diagonal_length(rows, cols, offset)) + max(-offset, 0)
    return first_row, first_row - max(-offset, 0) + max(offset, 0)


def _diagonal_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """The cotangent goes back onto the diagonal of a matrix (``np.trace`` stages this too)."""
    (g,) = cts
    if g is None:
        return [None]
    x = op.operands[0]
    if x.type.ndim != 2 or has_symbolic(x.type.shape):
        raise DifferentiationError("the gradient of np.diagonal of other than a matrix of static size", op.loc)
    n, m = (int(d) for d in x.type.shape)
    if (op.attrs["axis1"], op.attrs["axis2"]) == (1, 0):  # the diagonal of the transpose
        cols, rows = _diagonal_places(m, n, op.attrs["offset"])
    else:
        rows, cols = _diagonal_places(n, m, op.attrs["offset"])
    return [e.op("index_add", zeros(e, x), g, template=(rows, cols))]


register(
    OpDef(
        "diagonal",
        _diagonal_rule,
        lambda x, offset, axis1, axis2: np.diagonal(x, offset, axis1, axis2),
        view=True,
        vjp=_diagonal_vjp,
        doc="np.diagonal (a read-only view)",
    )
)


def _diag_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """``diag`` of a vector builds a matrix with it on the ``k`` diagonal: the vector's cotangent
    is that diagonal of the matrix's cotangent. (``diag`` of a matrix is staged as ``diagonal``.)"""
    (g,) = cts
    if g is None:
        return [None]
    return [e.op("diagonal", g, offset=op.attrs["k"], axis1=0, axis2=1)]


register(
    OpDef("diag", _diag_rule, lambda x, k: np.diag(x, k), doc="np.diag: build or extract a diagonal", vjp=_diag_vjp)
)


@handles(np.tril)
def tril(m, k=0):
    """Staged ``np.tril``."""
    return apply("tril", m, k=static_int(k, "np.tril: k"))


@handles(np.triu)
def triu(m, k=0):
    """Staged ``np.triu``."""
    return apply("triu", m, k=static_int(k, "np.triu: k"))


def _diagonal_axes(func_name: str, a, axis1, axis2) -> tuple[int, int]:
    if a.ndim < 2:
        raise GraphBuildError(f"{func_name}: diag requires an array of at least two dimensions", user_location())
    first, second = (normalize_axes(axis, a.ndim, func_name)[0] for axis in (axis1, axis2))
    if first == second:
        raise GraphBuildError(f"{func_name}: axis1 and axis2 cannot be the same", user_location())
    return first, second


@handles(np.diagonal)
@method("diagonal")
def diagonal(a, offset=0, axis1=0, axis2=1):
    """Staged ``np.diagonal`` / ``ndarray.diagonal``."""
    first, second = _diagonal_axes("np.diagonal", a, axis1, axis2)
    offset = static_int(offset, "np.diagonal: offset")
    return read_only_view("diagonal", a, offset=offset, axis1=first, axis2=second)


@handles(np.diag)
def diag(v, k=0):
    """Staged ``np.diag``: a 1-d tensor becomes a diagonal matrix, a 2-d one gives its diagonal
    (a read-only view, as NumPy's ``diag`` returns ``diagonal``'s)."""
    k = static_int(k, "np.diag: k")
    if getattr(v, "ndim", None) == 2:
        return read_only_view("diagonal", v, offset=k, axis1=0, axis2=1)
    return apply("diag", v, k=k)


@handles(np.trace)
@method("trace")
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """Staged ``np.trace``: the diagonal, summed over its last axis (NumPy's own definition)."""
    reject_unsupported("np.trace", out=(out, None))
    diagonal_values = diagonal(a, offset, axis1, axis2)
    attrs = {"axis": (diagonal_values.ndim - 1,), "keepdims": False}
    if dtype is not None:
        attrs["dtype"] = np.dtype(dtype)
    return apply("sum", diagonal_values, **attrs)
