"""Elementwise NumPy functions that are not plain ufunc calls: where, clip, round.

They broadcast their operands like ufuncs do and are flagged ``elementwise``; ``where`` is a
``select`` too, which lets it join fused groups although it has no ufunc. ``clip``
is staged exactly as NumPy's own ``_clip`` does it: a bound that is a Python int outside an integer
array's range is dropped, and a missing bound turns the call into ``minimum``/``maximum``.

Before (user code)::

    y = np.where(x > 0, x, 0.01 * x)
    z = np.clip(y, 0, 6)

After (IR)::

    %0 = greater %x, 0 : bool[8]
    %1 = multiply 0.01, %x : f32[8]
    %y = where %0, %x, %1 : f32[8]
    %z = clip %y, 0, 6 : f32[8]
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from dy2st.errors import UnsupportedOpError, user_location
from dy2st.ir.core import Op
from dy2st.ir.emit import Emitter
from dy2st.ir.opdefs import UFUNC_OPS, OpDef, register
from dy2st.ir.symbolic import broadcast_shapes
from dy2st.ir.types import TensorType
from dy2st.ops.adjoint import Cotangents
from dy2st.ops.arguments import build_error, reject_unsupported, static_int
from dy2st.ops.elementwise import ufunc_rule
from dy2st.ops.selection import nonzero
from dy2st.staging.handlers import RUNTIME_QUERIES, UFUNC_METHOD_HANDLERS, handles, method
from dy2st.staging.tensor import Tensor, apply


class _UfuncCatcher(np.ndarray):
    """An array whose ufunc calls return the ufunc itself (NumPy's public override protocol)."""

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> np.ufunc:
        return ufunc


# np.clip is a Python function over a ufunc NumPy does not export; the ufunc (which fusion and
# out= planning need) is found through the override protocol instead of a private module.
CLIP_UFUNC = cast(np.ufunc, np.clip(np.zeros(1).view(_UfuncCatcher), 0, 1))


def _probe_operand(t: TensorType):
    """A one-element stand-in for an operand that NumPy promotes the way it promotes the operand."""
    if t.weak and t.dtype != np.bool_:
        return {"i": 0, "f": 0.0, "c": 0j}[t.dtype.kind]  # a weak Python scalar
    return np.zeros(1, t.dtype)


@functools.cache
def _probed_dtype(func_name: str, operands: tuple[TensorType, ...], attrs: tuple) -> np.dtype:
    func = cast(Callable[..., Any], {"where": np.where, "round": np.round}[func_name])
    probes = [_probe_operand(TensorType((), t.dtype, t.weak)) for t in operands]
    return np.asarray(func(*probes, **dict(attrs))).dtype


def _where_rule(types):
    shape = broadcast_shapes(*(t.shape for t in types))
    operand_types = tuple(TensorType((), t.dtype, t.weak) for t in types)
    return TensorType(shape, _probed_dtype("where", operand_types, ()))


def _round_rule(types, decimals):
    (t,) = types
    return TensorType(t.shape, _probed_dtype("round", (TensorType((), t.dtype, t.weak),), (("decimals", decimals),)))


def _round_kernel(x, decimals):
    return np.round(x, decimals)


def _where_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    (g,) = cts
    if g is None:
        return [None, None, None]
    condition = op.operands[0]
    return [None, e.op("where", condition, g, 0.0), e.op("where", condition, 0.0, g)]


def _clip_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """The gradient goes to ``x`` where it lies within the bounds (bounds included), else to the
    bound that was taken."""
    (g,) = cts
    if g is None:
        return [None, None, None]
    x, low, high = op.operands
    below, above = e.op("less", x, low), e.op("greater", x, high)
    inside = e.op("logical_not", e.op("logical_or", below, above))
    return [e.op("where", inside, g, 0.0), e.op("where", below, g, 0.0), e.op("where", above, g, 0.0)]


def _onnx_where(w, op) -> list[str]:
    condition, x, y = op.operands
    dtype = op.result.type.dtype
    return [w.node("Where", [w.input(condition, np.dtype(bool)), w.input(x, dtype), w.input(y, dtype)])[0]]


def _onnx_clip(w, op) -> list[str]:
    dtype = op.result.type.dtype
    x, low, high = (w.input(v, dtype) for v in op.operands)
    return [w.node("Min", [w.node("Max", [x, low])[0], high])[0]]  # NumPy's order: min(max(x, lo), hi)


register(
    OpDef(
        "where",
        _where_rule,
        np.where,
        elementwise=True,
        select=True,
        returns_fresh=True,
        doc="np.where(cond, x, y)",
        vjp=_where_vjp,
        onnx=_onnx_where,
    )
)
register(
    OpDef(
        "clip",
        ufunc_rule(CLIP_UFUNC),
        CLIP_UFUNC,
        elementwise=True,
        ufunc=CLIP_UFUNC,
        doc="np.clip",
        vjp=_clip_vjp,
        onnx=_onnx_clip,
    )
)
register(
    OpDef(
        "round",
        _round_rule,
        _round_kernel,
        elementwise=True,
        doc="np.round(x, decimals)",
        vjp=lambda e, op, cts: [None],  # piecewise constant
    )
)


@handles(np.where)
def where(condition, x=None, y=None):
    """Staged ``np.where(condition, x, y)``; ``np.where(condition)`` is ``np.nonzero(condition)``."""
    if x is None and y is None:
        return nonzero(condition)
    if x is None or y is None:
        raise build_error("np.where", ValueError("either both or neither of x and y should be given"))
    result = apply("where", condition, x, y)
    result._scalar = False  # unlike ufuncs, np.where returns a 0-d array, not a NumPy scalar
    return result


_NO_VALUE = np._NoValue


@handles(np.clip)
@method("clip")
def clip(a, a_min=_NO_VALUE, a_max=_NO_VALUE, out=None, *, min=_NO_VALUE, max=_NO_VALUE, **kwargs):
    """Staged ``np.clip`` / ``ndarray.clip`` (``a_min``/``a_max`` or ``min``/``max``)."""
    reject_unsupported("np.clip", out=(out, None), **{k: (v, None) for k, v in kwargs.items()})
    low = _pick_bound("a_min", a_min, "min", min)
    high = _pick_bound("a_max", a_max, "max", max)
    if a.dtype.kind in "iu":
        # NumPy drops Python-int bounds that the integer dtype cannot exceed (NEP 50, no overflow).
        info = np.iinfo(a.dtype)
        low = None if type(low) is int and low <= info.min else low
        high = None if type(high) is int and high >= info.max else high
    if low is None and high is None:
        return apply("positive", a)
    if low is None:
        return apply("minimum", a, high)
    if high is None:
        return apply("maximum", a, low)
    return apply("clip", a, low, high)


def _pick_bound(old_name, old_value, new_name, new_value):
    if old_value is not _NO_VALUE and new_value is not _NO_VALUE:
        raise UnsupportedOpError(f"np.clip: pass either {old_name} or {new_name}, not both", user_location())
    value = new_value if old_value is _NO_VALUE else old_value
    return None if value is _NO_VALUE else value


@handles(np.round, np.around)
@method("round")
def round_(a, decimals=0, out=None):
    """Staged ``np.round`` (round half to even, like NumPy)."""
    reject_unsupported("np.round", out=(out, None))
    if not isinstance(a, Tensor):
        a = np.asarray(a)
    return apply("round", a, decimals=static_int(decimals, "np.round: decimals"))


@handles(np.isclose)
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Staged ``np.isclose``: the very ufunc expression NumPy 2 evaluates, tolerances static."""
    for name, tolerance in (("rtol", rtol), ("atol", atol)):
        if isinstance(tolerance, Tensor) or not isinstance(np.asarray(tolerance).item(), (int, float)):
            raise UnsupportedOpError(f"np.isclose: {name} must be a Python number here", user_location())
    x, y = (v if isinstance(v, (Tensor, int, float, complex)) else np.asarray(v) for v in (a, b))
    # NumPy makes y inexact first, so abs() of the most negative integer cannot overflow.
    if isinstance(y, (Tensor, np.ndarray)):
        inexact = np.result_type(y.dtype, 1.0)
        if y.dtype != inexact:
            y = apply("astype", y, dtype=inexact) if isinstance(y, Tensor) else y.astype(inexact)
    elif isinstance(y, int):
        y = float(y)
    close = apply(
        "less_equal",
        apply("absolute", apply("subtract", x, y)),
        apply("add", atol, apply("multiply", rtol, apply("absolute", y))),
    )
    result = apply("bitwise_or", apply("bitwise_and", close, apply("isfinite", y)), apply("equal", x, y))
    if equal_nan:
        result = apply("bitwise_or", result, apply("bitwise_and", apply("isnan", x), apply("isnan", y)))
    return result


@handles(np.allclose)
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Staged ``np.allclose``: a Python bool, as eagerly (a number the graph computes, usable as
    the condition of a converted ``if``/``while``/``assert``)."""
    close = apply("all", isclose(a, b, rtol, atol, equal_nan), axis=None, keepdims=False)
    return RUNTIME_QUERIES["python_number"](close)


def ufunc_outer(ufunc: np.ufunc, a: Any, b: Any) -> Tensor:
    """Staged ``ufunc.outer(a, b)``: ``ufunc`` of every element of ``a`` with every element of
    ``b``, of shape ``a.shape + b.shape``, as ``ufunc(a[..., None, ...], b)``. NumPy makes arrays of
    Python numbers first (``np.add.outer(2, x_int8)`` is int64), so they are not weak here."""
    operands = []
    for operand in (a, b):
        if isinstance(operand, Tensor) and operand.type.weak:
            raise UnsupportedOpError(
                f"np.{ufunc.__name__}.outer of a Python number computed in the function is not supported",
                user_location(2),
                "use np.asarray(value) for it",
            )
        operands.append(operand if isinstance(operand, Tensor) else np.asarray(operand))
    a, b = operands
    if b.ndim:
        a = a[(Ellipsis,) + (None,) * b.ndim]
    return apply(UFUNC_OPS[ufunc], a, b)


UFUNC_METHOD_HANDLERS["outer"] = ufunc_outer
