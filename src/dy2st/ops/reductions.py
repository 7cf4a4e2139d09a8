"""Reductions: sum, mean, prod, max, min, any, all, argmax, argmin, std, var, median, ptp and the
nan-ignoring variants (``axis``, ``keepdims``).

The shape rule is written out; the dtype rule asks NumPy itself on a one-element array of the same
dtype and rank (cached), so accumulator promotions (``int32.sum() -> int64``, ``int.mean() ->
float64``) match eager NumPy exactly.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dy2st.errors import DifferentiationError, build_error, user_location
from dy2st.ir.core import Op, Value
from dy2st.ir.emit import Emitter
from dy2st.ir.opcodes import CONST
from dy2st.ir.opdefs import OpDef, register
from dy2st.ir.symbolic import has_symbolic
from dy2st.ir.types import TensorType
from dy2st.ops.adjoint import (
    Cotangents,
    add,
    as_float,
    div,
    expand_reduced,
    mul,
    reduced_axes,
    reduced_count,
    spread,
)
from dy2st.ops.arguments import reject_unsupported
from dy2st.ops.generic import NUMPY_CALL_ADJOINTS, SLOT
from dy2st.ops.scans import reversed_along
from dy2st.ops.shape import COPY
from dy2st.staging.handlers import handles, method
from dy2st.staging.tensor import apply

REDUCTIONS: dict[str, Callable[..., Any]] = {
    "sum": np.sum,
    "mean": np.mean,
    "prod": np.prod,
    "max": np.max,
    "min": np.min,
    "any": np.any,
    "all": np.all,
    "argmax": np.argmax,
    "argmin": np.argmin,
    "std": np.std,
    "var": np.var,
    # Functions without an ndarray method of the same name:
    "median": np.median,
    "ptp": np.ptp,
    "nansum": np.nansum,
    "nanprod": np.nanprod,
    "nanmean": np.nanmean,
    "nanmax": np.nanmax,
    "nanmin": np.nanmin,
    "nanstd": np.nanstd,
    "nanvar": np.nanvar,
    "nanmedian": np.nanmedian,
    "nanargmax": np.nanargmax,
    "nanargmin": np.nanargmin,
}
_METHODS = ("sum", "mean", "prod", "max", "min", "any", "all", "argmax", "argmin", "std", "var")
_SINGLE_AXIS = {"argmax", "argmin", "nanargmax", "nanargmin"}


def normalize_axis(axis, ndim: int, single: bool = False):
    """None, or a sorted tuple of non-negative axes (an int for argmax/argmin)."""
    if axis is None:
        return None
    axes = axis if isinstance(axis, tuple) else (axis,)
    if single and len(axes) != 1:
        raise TypeError("axis must be None or an int")
    # NumPy lets a 0-d array take an int axis 0 or -1, but not a tuple of axes.
    limit = ndim if isinstance(axis, tuple) else max(ndim, 1)
    out = []
    for a in axes:
        if not isinstance(a, (int, np.integer)):
            raise TypeError(f"axis must be an int or a tuple of ints, got {type(a).__name__}")
        if not -limit <= a < limit:
            raise np.exceptions.AxisError(int(a), ndim)  # NumPy's class (a ValueError and an IndexError)
        out.append(int(a) % limit)
    if len(set(out)) != len(out):
        raise ValueError("duplicate value in 'axis'")
    return out[0] if single else tuple(sorted(out))


@functools.cache
def _reduced_dtype(name: str, dtype: np.dtype, ndim: int, axis, keepdims: bool, options: tuple) -> np.dtype:
    probe = np.ones((1,) * ndim, dtype=dtype)
    kwargs = {"axis": axis, **dict(options)}
    if name not in _SINGLE_AXIS or keepdims:
        kwargs["keepdims"] = keepdims
    # The probe's values are meaningless (ddof may exceed its size): silence NumPy's warnings.
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(REDUCTIONS[name](probe, **kwargs)).dtype


def _check_empty(name: str, t: TensorType, axis, keepdims: bool, options: dict) -> None:
    """Reductions without an identity (max, argmin, ptp, ...) fail on empty input: ask NumPy itself.

    Only an empty operand can fail, and running NumPy on an empty array costs nothing.
    """
    if t.size:
        return
    kwargs = {"axis": axis, **options}
    if name not in _SINGLE_AXIS or keepdims:
        kwargs["keepdims"] = keepdims
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        REDUCTIONS[name](np.empty(t.shape, t.dtype), **kwargs)


def reduction_rule(name: str):
    def infer(types: list[TensorType], axis=None, keepdims: bool = False, **options) -> TensorType:
        (t,) = types
        shape: tuple[Any, ...]
        if axis is None:
            shape = (1,) * t.ndim if keepdims else ()
        else:
            axes = (axis,) if isinstance(axis, int) else axis
            if t.ndim == 0:
                shape = ()
            elif keepdims:
                shape = tuple(1 if i in axes else d for i, d in enumerate(t.shape))
            else:
                shape = tuple(d for i, d in enumerate(t.shape) if i not in axes)
        _check_empty(name, t, axis, keepdims, options)
        return TensorType(shape, _reduced_dtype(name, t.dtype, t.ndim, axis, keepdims, tuple(sorted(options.items()))))

    return infer


def mean_into(x, axis=None, keepdims=False, out=None, **options):
    """``np.mean`` writing into ``out``, accumulating as eager NumPy does.

    Eager ``np.mean`` of float16 sums in float32 and casts the quotient back; given a float16
    ``out=`` it would sum in float16 instead (``inf`` where eager gives finite values), so the
    float32 result is computed first and then cast into ``out``.
    """
    if out is not None and x.dtype == np.float16 and options.get("dtype") is None:
        wide = np.mean(x, axis=axis, keepdims=keepdims, dtype=np.float32)
        np.copyto(out, wide, casting="unsafe")
        return out
    return np.mean(x, axis=axis, keepdims=keepdims, out=out, **options)


# Reductions whose NumPy function writes into ``out=`` with the result NumPy would return.
_OUT_KERNELS: dict[str, Callable[..., Any]] = {
    "sum": np.sum,
    "mean": mean_into,
    "prod": np.prod,
    "max": np.max,
    "min": np.min,
}
# Reductions that always return a new array (the others may return a view of their operand).
# Reductions over the last axis that may sit inside a fused group (tiles then hold whole rows),
# with the function a tile calls with ``out=``: NumPy's own, which runs the same code as eager.
# ``np.sum/max/min`` of an ndarray are exactly ``ufunc.reduce`` (called without the wrapper's
# Python overhead); ``np.mean`` divides by an ``intp`` count after its sum, so it is called as is
# (through ``mean_into``, which keeps its float32 accumulator for float16).
_ROW_REDUCTIONS: dict[str, Callable[..., Any]] = {
    "sum": np.add.reduce,
    "mean": mean_into,
    "max": np.maximum.reduce,
    "min": np.minimum.reduce,
}
_FRESH_REDUCTIONS = frozenset({"sum", "mean", "prod", "max", "min", "any", "all", "argmax", "argmin"})


def reduction_kernel(name: str):
    func = REDUCTIONS[name]
    if name in _SINGLE_AXIS:

        def kernel(x, axis=None, keepdims=False):
            return func(x, axis=axis, keepdims=keepdims) if keepdims else func(x, axis=axis)

        return kernel

    def kernel_with_options(x, axis=None, keepdims=False, **options):
        return func(x, axis=axis, keepdims=keepdims, **options)

    return kernel_with_options


# Each reduction's positional parameters after the array, in NumPy's order (functions and methods
# agree), so `np.max(x, 0, None, True)` binds keepdims exactly like NumPy does.
_PARAMETERS = {
    "sum": ("axis", "dtype", "out", "keepdims", "initial", "where"),
    "prod": ("axis", "dtype", "out", "keepdims", "initial", "where"),
    "mean": ("axis", "dtype", "out", "keepdims"),
    "max": ("axis", "out", "keepdims", "initial", "where"),
    "min": ("axis", "out", "keepdims", "initial", "where"),
    "any": ("axis", "out", "keepdims"),
    "all": ("axis", "out", "keepdims"),
    "argmax": ("axis", "out"),
    "argmin": ("axis", "out"),
    "std": ("axis", "dtype", "out", "ddof", "keepdims"),
    "var": ("axis", "dtype", "out", "ddof", "keepdims"),
    "median": ("axis", "out", "overwrite_input", "keepdims"),
    "nanmedian": ("axis", "out", "overwrite_input", "keepdims"),
    "ptp": ("axis", "out", "keepdims"),
}
for _plain in ("sum", "prod", "mean", "max", "min", "std", "var", "argmax", "argmin"):
    _PARAMETERS["nan" + _plain] = _PARAMETERS[_plain]
_KEYWORD_ONLY = {
    "mean": ("where",),
    "any": ("where",),
    "all": ("where",),
    "argmax": ("keepdims",),
    "argmin": ("keepdims",),
    "std": ("where", "mean", "correction"),
    "var": ("where", "mean", "correction"),
}
_KEYWORD_ONLY.update({"nan" + name: names for name, names in list(_KEYWORD_ONLY.items())})


def _bind(name: str, args: tuple, kwargs: dict) -> dict:
    positional = _PARAMETERS[name]
    if len(args) > len(positional):
        raise TypeError(f"{name}() takes at most {len(positional) + 1} positional arguments")
    bound = dict(zip(positional, args))
    allowed = set(positional) | set(_KEYWORD_ONLY.get(name, ()))
    for key, value in kwargs.items():
        if key not in allowed or key in bound:
            problem = "an unexpected" if key not in allowed else "multiple values for"
            raise TypeError(f"{name}() got {problem} keyword argument '{key}'")
        bound[key] = value
    return bound


def _op_options(name: str, bound: dict) -> dict:
    """The attributes beyond axis/keepdims: an accumulator dtype, and ddof for std/var."""
    options = {}
    if bound.get("dtype") is not None:
        options["dtype"] = np.dtype(bound["dtype"])
    if name in ("std", "var", "nanstd", "nanvar"):
        ddof, correction = bound.get("ddof", 0), bound.get("correction", np._NoValue)
        if correction is not np._NoValue:
            if ddof != 0:
                raise ValueError("ddof and correction can't be provided simultaneously.")
            ddof = correction
        if ddof != 0:
            options["ddof"] = ddof if isinstance(ddof, (int, float)) else float(ddof)
    return options


def _check_zero_dimensional_axis(name: str, dtype: np.dtype, axis: Any) -> None:
    """Raise as NumPy does unless it accepts ``axis`` on a 0-d array of this reduction (where it
    means "all", so the staged op reduces over no axis)."""
    # NumPy is not uniform here (np.sum takes axis=-1 on a 0-d array, np.mean does not): ask it.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        REDUCTIONS[name](np.ones((), dtype), axis=axis)


def _make_handler(name: str):
    def handler(a, *args, **kwargs):
        ndim = a.ndim if hasattr(a, "ndim") else np.ndim(a)
        try:
            bound = _bind(name, args, kwargs)
            options = _op_options(name, bound)
            axis = normalize_axis(bound.get("axis"), ndim, name in _SINGLE_AXIS)
            if ndim == 0 and axis is not None:
                _check_zero_dimensional_axis(name, a.dtype, bound["axis"])
                axis = None
        except (TypeError, ValueError) as e:  # NumPy's own class (AxisError, TypeError...)
            raise build_error(e, f"np.{name}: {e}", user_location()) from None
        reject_unsupported(
            f"np.{name}",
            out=(bound.get("out"), None),
            initial=(bound.get("initial", np._NoValue), np._NoValue),
            where=(bound.get("where", True), True),
            mean=(bound.get("mean", np._NoValue), np._NoValue),
            overwrite_input=(bound.get("overwrite_input", False), False),
        )
        return apply(name, a, axis=axis, keepdims=bool(bound.get("keepdims", False)), **options)

    return handler


# --- adjoint rules (dy2st.autodiff) ------------------------------------------------------
def _sum_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    (g,) = cts
    x = op.operands[0]
    return [None if g is None else spread(e, g, x, op.attrs.get("axis"), op.attrs.get("keepdims", False))]


def _mean_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    (g,) = cts
    if g is None:
        return [None]
    x, axis = op.operands[0], op.attrs.get("axis")
    total = spread(e, g, x, axis, op.attrs.get("keepdims", False))
    return [div(e, total, _count(e, x, axis))]


def _extreme_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """``max``/``min``: the gradient goes to the elements equal to the result, split equally
    among ties (as JAX does)."""
    (g,) = cts
    if g is None:
        return [None]
    x = op.operands[0]
    axis, keepdims = op.attrs.get("axis"), op.attrs.get("keepdims", False)
    hits = as_float(e, e.op("equal", x, expand_reduced(e, op.result, x.type, axis, keepdims)), g)
    ties = e.op("sum", hits, axis=axis, keepdims=True)
    share = expand_reduced(e, g, x.type, axis, keepdims)
    return [mul(e, hits, div(e, share, ties))]


def _numbers_mask(e: Emitter, x: Value, like: Value) -> Value:
    """1 where ``x`` is a number, 0 where it is NaN (what the ``nan*`` reductions skip)."""
    return as_float(e, e.op("logical_not", e.op("isnan", x)), like)


def _nansum_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """``nansum``: the cotangent of ``sum`` where the element is a number, 0 at its NaNs."""
    (g,) = cts
    if g is None:
        return [None]
    x = op.operands[0]
    total = spread(e, g, x, op.attrs.get("axis"), op.attrs.get("keepdims", False))
    return [mul(e, _numbers_mask(e, x, total), total)]


def _nanmean_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """``nanmean``: the cotangent shared among the numbers of each slice, 0 at its NaNs (NaN
    where a slice has no number, as the mean itself)."""
    (g,) = cts
    if g is None:
        return [None]
    x, axis = op.operands[0], op.attrs.get("axis")
    numbers = _numbers_mask(e, x, g)
    count = e.op("sum", numbers, axis=axis, keepdims=True)
    return [mul(e, numbers, div(e, expand_reduced(e, g, x.type, axis, op.attrs.get("keepdims", False)), count))]


def _nanvar_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """``nanvar``/``nanstd``: ``var``/``std``'s rule over the numbers of each slice, 0 at its
    NaNs."""
    (g,) = cts
    if g is None:
        return [None]
    x = op.operands[0]
    axis, keepdims = op.attrs.get("axis"), op.attrs.get("keepdims", False)
    nans = e.op("isnan", x)
    count = e.op("sum", as_float(e, e.op("logical_not", nans), g), axis=axis, keepdims=True)
    dof = e.op("subtract", count, float(op.attrs.get("ddof", 0)))
    difference = e.op("subtract", x, e.op("nanmean", x, axis=axis, keepdims=True))
    centred = e.op("where", nans, 0.0, difference)  # not a product: NaN * 0 is NaN
    share = expand_reduced(e, g, x.type, axis, keepdims)
    if op.name == "nanstd":
        return [mul(e, centred, div(e, div(e, share, expand_reduced(e, op.result, x.type, axis, keepdims)), dof))]
    return [mul(e, centred, div(e, mul(e, share, 2.0), dof))]


def _ptp_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """``ptp`` is ``max - min``: the gradient of the maximum minus that of the minimum (each
    split among its ties)."""
    (g,) = cts
    if g is None:
        return [None]
    x = op.operands[0]
    axis, keepdims = op.attrs.get("axis"), op.attrs.get("keepdims", False)
    share = expand_reduced(e, g, x.type, axis, keepdims)
    to_max, to_min = (
        _to_ties(e, x, e.op(extreme, x, axis=axis, keepdims=True), axis, share) for extreme in ("max", "min")
    )
    return [e.op("subtract", to_max, to_min)]


def _to_ties(e: Emitter, x: Value, extreme: Value, axis: Any, share: Value) -> Value:
    """``share`` split equally among the elements of ``x`` equal to ``extreme`` (kept dims)."""
    hits = as_float(e, e.op("equal", x, extreme), share)
    return mul(e, hits, div(e, share, e.op("sum", hits, axis=axis, keepdims=True)))


def _var_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """``var``: ``2 (x - mean) / (n - ddof)``; ``std``: that over ``2 std``."""
    (g,) = cts
    if g is None:
        return [None]
    x = op.operands[0]
    axis, keepdims = op.attrs.get("axis"), op.attrs.get("keepdims", False)
    count = _count(e, x, axis)
    ddof = float(op.attrs.get("ddof", 0))
    dof = count - ddof if isinstance(count, (int, float)) else e.op("subtract", count, ddof)
    centred = e.op("subtract", x, e.op("mean", x, axis=axis, keepdims=True))
    share = expand_reduced(e, g, x.type, axis, keepdims)
    if op.name == "std":
        share = div(e, share, expand_reduced(e, op.result, x.type, axis, keepdims))
        return [mul(e, centred, div(e, share, dof))]
    return [mul(e, centred, div(e, mul(e, share, 2.0), dof))]


def _count(e: Emitter, x: Value, axis: Any) -> Value | float:
    count = reduced_count(e, x, axis)
    return float(count) if isinstance(count, int) else count


def _prod_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """Each element's cotangent is the product of the others, computed as the product of the
    elements before it times that of the elements after it (exact where some are zero)."""
    (g,) = cts
    if g is None:
        return [None]
    return [_products_of_others(e, op, op.operands[0], g)]


def _nanprod_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """``nanprod`` multiplies the numbers, NaNs counting as 1: ``prod``'s rule on that array,
    with 0 at the NaNs."""
    (g,) = cts
    if g is None:
        return [None]
    x = op.operands[0]
    nans = e.op("isnan", x)
    others = _products_of_others(e, op, e.op("where", nans, 1, x), g)
    return [e.op("where", nans, 0, others)]


def _products_of_others(e: Emitter, op: Op, x: Value, g: Value) -> Value:
    """``g`` times, for each element of ``x``, the product of the other elements of its slice
    of the reduction ``op``."""
    axis, keepdims = op.attrs.get("axis"), op.attrs.get("keepdims", False)
    axes = reduced_axes(axis, x.type.ndim)
    if has_symbolic(x.type.shape):
        raise DifferentiationError(f"the gradient of np.{op.name} of an array of a size known only at run time", op.loc)
    if len(axes) > 1 and axes != tuple(range(x.type.ndim)):
        raise DifferentiationError(f"the gradient of np.{op.name} over several axes (but not all)", op.loc)
    along = axes[0] if len(axes) == 1 else 0
    rows = x if len(axes) <= 1 else e.op("reshape", x, shape=(x.type.size,))
    others = mul(e, _exclusive_products(e, rows, along, False), _exclusive_products(e, rows, along, True))
    if len(axes) > 1:
        others = e.op("reshape", others, shape=tuple(x.type.shape))
    return mul(e, others, expand_reduced(e, g, x.type, axis, keepdims))


def _median_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """The median is the mean of the two middle elements of each sorted slice (one when the
    slice's length is odd): each gets half the cotangent, split equally among elements tied with
    it, as for ``max``. ``nanmedian`` counts the numbers of each slice only; NaNs get 0."""
    (g,) = cts
    if g is None:
        return [None]
    axis, keepdims = op.attrs.get("axis"), op.attrs.get("keepdims", False)
    slices = _OrderSlices.of(e, op, op.operands[0], axis, f"np.{op.name}")
    half = mul(e, slices.share(e, g, axis, keepdims), 0.5)
    lower, upper = _middle_values(e, slices.rows, slices.along, op.name == "nanmedian")
    total = e.op("add", slices.to_ties(e, lower, half), slices.to_ties(e, upper, half))
    return [slices.back(e, total)]


@dataclass
class _OrderSlices:
    """An array seen as the slices an order statistic (median, quantile) of it reduces: ``rows``
    is the array (flattened when every axis is reduced), ``along`` the axis of the slices."""

    x: Value
    rows: Value
    along: int
    flat: bool

    @classmethod
    def of(cls, e: Emitter, op: Op, x: Value, axis: Any, function: str) -> _OrderSlices:
        if has_symbolic(x.type.shape):
            raise DifferentiationError(
                f"the gradient of {function} of an array of a size known only at run time", op.loc
            )
        axes = reduced_axes(axis, x.type.ndim)
        flat = len(axes) == x.type.ndim
        if len(axes) > 1 and not flat:
            raise DifferentiationError(f"the gradient of {function} over several axes (but not all)", op.loc)
        rows = e.op("reshape", x, shape=(int(x.type.size),)) if flat else x
        return cls(x, rows, 0 if flat else axes[0], flat)

    def share(self, e: Emitter, g: Value, axis: Any, keepdims: bool) -> Value:
        """The reduction's cotangent ``g`` with kept dims, to broadcast against ``rows``."""
        share = expand_reduced(e, g, self.x.type, axis, keepdims)
        return e.op("reshape", share, shape=(1,)) if self.flat else share

    def element(self, e: Emitter, ordered: Value, position: int) -> Value:
        """The element at ``position`` of each slice of ``ordered`` (the sorted rows; kept dims)."""
        return e.op("getitem", ordered, template=(slice(None),) * self.along + (slice(position, position + 1),))

    def to_ties(self, e: Emitter, element: Value, share: Value) -> Value:
        """``share`` split among the elements of each slice equal to ``element``."""
        return _to_ties(e, self.rows, element, self.along, share)

    def back(self, e: Emitter, total: Value) -> Value:
        """A cotangent of ``rows`` as one of the array."""
        return e.op("reshape", total, shape=tuple(self.x.type.shape)) if self.flat else total


def _middle_values(e: Emitter, x: Value, axis: int, skip_nans: bool) -> tuple[Value, Value]:
    """The lower and upper middle elements of each slice of ``x`` along ``axis`` once sorted
    (kept dims); with ``skip_nans``, of its numbers (NaNs sort last)."""
    ordered = e.op("sort", x, axis=axis)
    length = x.type.shape[axis]
    if not skip_nans:
        lower, upper = (
            e.op("getitem", ordered, template=(slice(None),) * axis + (slice(k, k + 1),))
            for k in ((length - 1) // 2, length // 2)
        )
        return lower, upper
    count = e.op("sum", _numbers_mask(e, x, x), axis=axis, keepdims=True)
    shape = tuple(length if k == axis else 1 for k in range(x.type.ndim))
    positions = e.op("reshape", e.op("arange", start=0, stop=length, step=1, dtype=x.type.dtype), shape=shape)
    middles = []
    for numerator in (e.op("subtract", count, 1.0), count):
        place = e.op("equal", positions, e.op("floor_divide", numerator, 2.0))
        middles.append(e.op("sum", e.op("where", place, ordered, 0), axis=axis, keepdims=True))
    return middles[0], middles[1]


def _exclusive_products(e: Emitter, x: Value, axis: int, from_end: bool) -> Value:
    """The product of the elements before each one along ``axis`` (after it, ``from_end``)."""
    if from_end:
        x = reversed_along(e, x, axis)
    ones = e.op(
        "full", shape=tuple(1 if k == axis else n for k, n in enumerate(x.type.shape)), fill_value=1, dtype=x.type.dtype
    )
    before = e.op("getitem", x, template=(slice(None),) * axis + (slice(None, -1),))
    products = e.op("cumprod", e.op("concatenate", ones, before, axis=axis), axis=axis)
    return reversed_along(e, products, axis) if from_end else products


_QUANTILE_SCALES = {"np.quantile": 1.0, "np.percentile": 100.0}
_QUANTILE_KEYWORDS = {"axis", "keepdims", "method"}


def _quantile_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """``np.quantile``/``np.percentile`` with the default ``method="linear"`` (called by the
    generic layer): a quantile interpolates between two elements of each sorted slice, ``lower``
    weighted ``1 - t`` and ``upper`` weighted ``t``; each gets its share of the cotangent, split
    equally among the elements tied with it (as ``median``, the 50th percentile)."""
    (g,) = cts
    if g is None:
        return [None] * len(op.operands)
    x, axis, keepdims, fractions = _quantile_call(op)
    slices = _OrderSlices.of(e, op, x, axis, op.attrs["function"])
    length = int(slices.rows.type.shape[slices.along])
    ordered = e.op("sort", slices.rows, axis=slices.along)
    total: Value | None = None
    for place in np.ndindex(fractions.shape):
        share = slices.share(e, e.op("getitem", g, template=place) if place else g, axis, keepdims)
        virtual = float(fractions[place]) * (length - 1)
        lower = min(int(np.floor(virtual)), length - 1)
        weight = virtual - lower
        for position, part in ((lower, 1.0 - weight), (min(lower + 1, length - 1), weight)):
            if part != 0.0:
                element = slices.element(e, ordered, position)
                total = add(e, total, slices.to_ties(e, element, mul(e, share, part)))
    return [None if total is None else slices.back(e, total), *([None] * (len(op.operands) - 1))]


def _quantile_call(op: Op) -> tuple[Value, Any, bool, np.ndarray]:
    """The array, ``axis``, ``keepdims`` and the quantiles (fractions) of a generic call of
    ``np.quantile``/``np.percentile`` whose gradient dy2st knows; other forms are refused."""
    function, arguments = op.attrs["function"], op.attrs["arguments"]
    keywords = dict(op.attrs["keywords"])
    x = op.operands[0]
    operands = iter(op.operands[1:])
    given = [_literal(item, operands) for item in arguments[1:]]
    unknown = set(keywords) - _QUANTILE_KEYWORDS or keywords.get("method", "linear") != "linear"
    if arguments[0] is not SLOT or unknown or len(given) != 1 or given[0] is None:
        raise DifferentiationError(f"the gradient of {function} other than {function}(x, q, axis=, keepdims=)", op.loc)
    axis = keywords.get("axis")
    if not (axis is None or isinstance(axis, int)):
        raise DifferentiationError(f"the gradient of {function} over several axes", op.loc)
    fractions = np.asarray(given[0], dtype=float) / _QUANTILE_SCALES[function]
    axis = None if axis is None else axis % x.type.ndim
    return x, axis, bool(keywords.get("keepdims", False)), fractions


def _literal(item: Any, operands: Any) -> Any:
    """An argument of a generic call as a Python value: a literal, or a constant operand in its
    slot (None when the slot holds a value computed in the graph)."""
    if item is not SLOT:
        return item
    producer = next(operands).op
    while producer is not None and producer.name == COPY:  # np.array(literal) copies the constant
        producer = producer.operands[0].op
    return producer.attrs["value"] if producer is not None and producer.name == CONST else None


NUMPY_CALL_ADJOINTS.update(dict.fromkeys(_QUANTILE_SCALES, _quantile_vjp))


_ONNX_REDUCERS = {
    "sum": "ReduceSum",
    "mean": "ReduceMean",
    "max": "ReduceMax",
    "min": "ReduceMin",
    "prod": "ReduceProd",
}


def _onnx_reduction(w, op) -> list[str]:
    """NumPy reduces in the result's dtype (``int32.sum()`` in int64): the operand is cast to it
    first. float32 sums may differ from NumPy's pairwise order in the last bits."""
    if "dtype" in op.attrs or "ddof" in op.attrs:
        raise w.refuse("a reduction with an accumulator dtype")
    x = w.input(op.operands[0], op.result.type.dtype)
    axis = op.attrs.get("axis")
    inputs = [x] if axis is None else [x, w.constant(np.array(reduced_axes(axis, op.operands[0].type.ndim), np.int64))]
    keepdims = int(bool(op.attrs.get("keepdims", False)))
    return [w.node(_ONNX_REDUCERS[op.name], inputs, keepdims=keepdims)[0]]


_ADJOINTS = {"sum": _sum_vjp, "mean": _mean_vjp, "max": _extreme_vjp, "min": _extreme_vjp, "prod": _prod_vjp}
_ADJOINTS.update({"var": _var_vjp, "std": _var_vjp, "ptp": _ptp_vjp})
# NaNs are never equal to the result, so max/min's rule skips them as nanmax/nanmin do.
_ADJOINTS.update({"nansum": _nansum_vjp, "nanmean": _nanmean_vjp, "nanmax": _extreme_vjp, "nanmin": _extreme_vjp})
_ADJOINTS.update({"nanvar": _nanvar_vjp, "nanstd": _nanvar_vjp, "nanprod": _nanprod_vjp})
_ADJOINTS.update({"median": _median_vjp, "nanmedian": _median_vjp})


for _name, _func in REDUCTIONS.items():
    register(
        OpDef(
            _name,
            reduction_rule(_name),
            reduction_kernel(_name),
            reduction=True,
            out_kernel=_OUT_KERNELS.get(_name),
            returns_fresh=_name in _FRESH_REDUCTIONS,
            row_reduction=_ROW_REDUCTIONS.get(_name),
            doc=f"np.{_name}(axis, keepdims)",
            vjp=_ADJOINTS.get(_name),
            onnx=_onnx_reduction if _name in _ONNX_REDUCERS else None,
        )
    )
    _handler = _make_handler(_name)
    handles(_func)(_handler)
    if _name in _METHODS:
        method(_name)(_handler)
handles(np.amax)(_make_handler("max"))
handles(np.amin)(_make_handler("min"))
