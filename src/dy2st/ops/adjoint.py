"""What adjoint rules share: zeros, summing a broadcast cotangent back to an operand's shape,
expanding a reduction's cotangent over the reduced axes, and the ops a rule builds most.

Adjoint rules are the ``vjp`` trait of each op definition (``ir/opdefs.py``), written in the
module of the op's family; ``dy2st.autodiff`` calls them while it builds the backward graph.
A rule returns, for each operand, its cotangent or None (zero, or no gradient flows there);
the caller sums over broadcast axes and casts to the operand's dtype (``fit_to``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dy2st.ir.core import Op, Value
from dy2st.ir.emit import Emitter, Operand
from dy2st.ir.symbolic import has_symbolic
from dy2st.ir.types import TensorType

Cotangents = list[Value | None]
AdjointRule = Callable[[Emitter, Op, Cotangents], Cotangents]


def differentiable(t: TensorType) -> bool:
    """Does a value of this type carry a gradient? Real floating-point arrays and numbers do;
    integers and booleans do not (their cotangent is zero), as in JAX."""
    return t.dtype.kind == "f"


def zeros(e: Emitter, like: Value) -> Value:
    """A new array of zeros of ``like``'s shape and dtype (a strong array even for a weak
    number). Sizes known only at run time are read from ``like`` itself: a loop or branch may
    hold several arrays whose sizes carry the same symbol but differ from run to run."""
    t = like.type
    if not has_symbolic(t.shape):
        return e.op("full", shape=tuple(t.shape), fill_value=0, dtype=t.dtype)
    return e.op("zeros_like", like)


def add(e: Emitter, a: Value | None, b: Value | None) -> Value | None:
    """``a + b`` where None is zero."""
    if a is None:
        return b
    if b is None:
        return a
    return e.op("add", a, b)


def mul(e: Emitter, a: Operand, b: Operand) -> Value:
    return e.op("multiply", a, b)


def div(e: Emitter, a: Operand, b: Operand) -> Value:
    return e.op("divide", a, b)


def neg(e: Emitter, a: Value) -> Value:
    return e.op("negative", a)


def as_float(e: Emitter, mask: Value, like: Value) -> Value:
    """A boolean mask as 0/1 of ``like``'s dtype."""
    return e.op("astype", mask, dtype=like.type.dtype)


def fit_to(e: Emitter, g: Value, t: TensorType) -> Value:
    """The cotangent ``g`` of a value broadcast from (and promoted from) type ``t``: summed over
    the axes broadcasting added or stretched, and cast to ``t``'s dtype."""
    extra = g.type.ndim - t.ndim
    if extra > 0:
        g = e.op("sum", g, axis=tuple(range(extra)), keepdims=False)
    stretched = tuple(k for k, (n, m) in enumerate(zip(t.shape, g.type.shape)) if n == 1 and m != 1)
    if stretched:
        g = e.op("sum", g, axis=stretched, keepdims=True)
    if g.type.dtype != t.dtype:
        g = e.op("astype", g, dtype=t.dtype)
    return g


def reduced_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    """The axes a reduction with attribute ``axis`` (None, an int or a sorted tuple) reduces."""
    if axis is None:
        return tuple(range(ndim))
    return tuple(axis) if isinstance(axis, tuple) else (axis,)


def expand_reduced(e: Emitter, g: Value, x: TensorType, axis: Any, keepdims: bool) -> Value:
    """A reduction's cotangent (or result) ``g`` with the reduced axes of ``x`` put back as
    size-1 axes, so that it broadcasts against ``x``."""
    if keepdims or x.ndim == 0:
        return g
    return e.op("expand_dims", g, axes=reduced_axes(axis, x.ndim))


def spread(e: Emitter, g: Value, x: Value, axis: Any, keepdims: bool) -> Value:
    """A reduction's cotangent broadcast over the shape of its operand ``x`` (the cotangent of
    ``sum``); sizes known only at run time are read from ``x``."""
    expanded = expand_reduced(e, g, x.type, axis, keepdims)
    if not has_symbolic(x.type.shape):
        return e.op("broadcast_to", expanded, shape=tuple(x.type.shape))
    return e.op("broadcast_to_like", expanded, x)


def reduced_count(e: Emitter, x: Value, axis: Any) -> Value | int:
    """How many elements each result of a reduction of ``x`` over ``axis`` combines: an int, or
    a value computed from ``x``'s shape when the graph runs."""
    count: Value | int = 1
    for k in reduced_axes(axis, x.type.ndim):
        n = x.type.shape[k]
        size: Value | int = n if isinstance(n, int) else e.op("dim", x, axis=k)
        count = count * size if isinstance(count, int) and isinstance(size, int) else e.op("multiply", count, size)
    return count


def swap_last_axes(e: Emitter, x: Value) -> Value:
    """``x`` with its last two axes swapped (the transpose of a stack of matrices)."""
    axes = list(range(x.type.ndim))
    axes[-2], axes[-1] = axes[-1], axes[-2]
    return e.op("transpose", x, axes=tuple(axes))
