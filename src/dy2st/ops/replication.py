"""Replicating values: ``np.tile``, ``np.repeat`` and ``np.pad`` with static counts and widths.

Each result shape follows from the static arguments alone; the kernels are NumPy's own functions.

Before (user code)::

    padded = np.pad(image, ((1, 1), (2, 2)), constant_values=0.5)

After (IR)::

    %padded = pad %image {constant_values=0.5, mode='constant', pad_width=((1, 1), (2, 2))} : f32[6,8]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dy2st.errors import DifferentiationError, UnsupportedOpError, user_location
from dy2st.ir.core import Op
from dy2st.ir.emit import Emitter
from dy2st.ir.opdefs import OpDef, register
from dy2st.ir.symbolic import has_symbolic
from dy2st.ir.types import TensorType
from dy2st.ops.adjoint import Cotangents
from dy2st.ops.arguments import build_error, normalize_axes, static_shape
from dy2st.ops.shape import as_array
from dy2st.staging.handlers import handles, method
from dy2st.staging.tensor import Tensor, apply


# --- tile ------------------------------------------------------------------------------------------
def _tile_rule(types, reps):
    (t,) = types
    ndim = max(t.ndim, len(reps))
    shape = (1,) * (ndim - t.ndim) + t.shape
    reps = (1,) * (ndim - len(reps)) + tuple(reps)
    return TensorType(tuple(d * r for d, r in zip(shape, reps)), t.dtype)


def _static(e_op: Op) -> None:
    x = e_op.operands[0].type
    if has_symbolic(x.shape):
        raise DifferentiationError(
            f"the gradient of np.{e_op.name} of an array of a size known only at run time", e_op.loc
        )


def _tile_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """Every copy adds into its source: the cotangent split into (repetition, size) axis pairs,
    summed over the repetitions."""
    (g,) = cts
    if g is None:
        return [None]
    _static(op)
    x = op.operands[0].type
    reps = tuple(op.attrs["reps"])
    ndim = max(x.ndim, len(reps))
    shape = (1,) * (ndim - x.ndim) + tuple(x.shape)
    reps = (1,) * (ndim - len(reps)) + reps
    pairs = tuple(n for r, d in zip(reps, shape) for n in (r, d))
    total = e.op("sum", e.op("reshape", g, shape=pairs), axis=tuple(range(0, 2 * ndim, 2)), keepdims=False)
    return [e.op("reshape", total, shape=tuple(x.shape))]


register(
    OpDef("tile", _tile_rule, lambda x, reps: np.tile(x, reps), doc="np.tile with static repetitions", vjp=_tile_vjp)
)


@handles(np.tile)
def tile(A, reps):
    """Staged ``np.tile``."""
    return apply("tile", A, reps=static_shape(reps, "np.tile"))


# --- repeat ----------------------------------------------------------------------------------------
def _repeated_length(length: int, repeats) -> int:
    """The length of an axis of ``length`` elements after repeating by an int or per-element counts."""
    if not isinstance(repeats, tuple):
        return length * repeats
    if len(repeats) == 1:
        return length * repeats[0]
    if len(repeats) != length:
        raise ValueError(f"operands could not be broadcast together with shape ({length},) ({len(repeats)},)")
    return sum(repeats)


def _repeat_rule(types, repeats, axis):
    (t,) = types
    total = _repeated_length(t.size if axis is None else t.shape[axis], repeats)
    if axis is None:
        return TensorType((total,), t.dtype)
    return TensorType(t.shape[:axis] + (total,) + t.shape[axis + 1 :], t.dtype)


def _repeat_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """Each element adds up the cotangents of its copies: with one count for all, the repeated
    axis split into (length, count) and summed over the count."""
    (g,) = cts
    if g is None:
        return [None]
    _static(op)
    x = op.operands[0].type
    repeats, axis = op.attrs["repeats"], op.attrs["axis"]
    if isinstance(repeats, tuple):
        if len(repeats) != 1:
            raise DifferentiationError("the gradient of np.repeat with a count per element", op.loc)
        repeats = repeats[0]
    if axis is None:
        total = e.op("sum", e.op("reshape", g, shape=(x.size, repeats)), axis=(1,), keepdims=False)
        return [e.op("reshape", total, shape=tuple(x.shape))]
    split = (*x.shape[:axis], x.shape[axis], repeats, *x.shape[axis + 1 :])
    return [e.op("sum", e.op("reshape", g, shape=split), axis=(axis + 1,), keepdims=False)]


def _pad_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """Constant padding: the operand's cotangent is the middle of the result's. The other modes
    copy edge values into the padding, which ``np.pad`` spells out per mode: not differentiated."""
    (g,) = cts
    if g is None:
        return [None]
    if op.attrs["mode"] != "constant":
        raise DifferentiationError(f"the gradient of np.pad with mode={op.attrs['mode']!r}", op.loc)
    template = tuple(
        slice(before, before + n) for (before, _), n in zip(op.attrs["pad_width"], op.operands[0].type.shape)
    )
    return [e.op("getitem", g, template=template)]


register(
    OpDef(
        "repeat",
        _repeat_rule,
        lambda x, repeats, axis: np.repeat(x, repeats, axis),
        doc="np.repeat with static counts",
        vjp=_repeat_vjp,
    )
)


@handles(np.repeat)
@method("repeat")
def repeat(a, repeats, axis=None):
    """Staged ``np.repeat``: ``repeats`` is a Python int or a sequence of them."""
    if isinstance(repeats, (list, tuple, np.ndarray)):
        counts: Any = static_shape(tuple(np.asarray(repeats).reshape(-1).tolist()), "np.repeat")
    else:
        counts = static_shape(repeats, "np.repeat")[0]
    if axis is not None:
        if a.ndim == 0:
            raise build_error("np.repeat", np.exceptions.AxisError(axis, 0))
        axis = normalize_axes(axis, a.ndim, "np.repeat")[0]
    return apply("repeat", a, repeats=counts, axis=axis)


# --- pad -------------------------------------------------------------------------------------------
_PAD_MODES = {
    "constant": ("constant_values",),
    "edge": (),
    "reflect": ("reflect_type",),
    "symmetric": ("reflect_type",),
    "wrap": (),
}


def _pad_rule(types, pad_width, mode, **options):
    (t,) = types
    return TensorType(tuple(d + before + after for d, (before, after) in zip(t.shape, pad_width)), t.dtype)


def _pad_kernel(x, pad_width, mode, **options):
    return np.pad(x, pad_width, mode=mode, **options)


register(OpDef("pad", _pad_rule, _pad_kernel, doc="np.pad with static widths", vjp=_pad_vjp))


def _static_nested(value: Any, func_name: str, what: str) -> Any:
    """A static number or nested sequence of numbers as hashable tuples."""
    if isinstance(value, Tensor) or (isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value)):
        raise UnsupportedOpError(
            f"{func_name}: a tensor as {what} is not supported", user_location(), f"pass {what} as Python numbers"
        )
    array = np.asarray(value)
    if array.dtype.kind not in "biuf":
        raise build_error(func_name, TypeError(f"{what} must be numbers"))
    nested = array.tolist()
    return _as_tuples(nested)


def _as_tuples(value):
    return tuple(_as_tuples(v) for v in value) if isinstance(value, list) else value


@handles(np.pad)
def pad(array, pad_width, mode="constant", **kwargs):
    """Staged ``np.pad`` for the modes constant, edge, reflect, symmetric and wrap."""
    if not isinstance(mode, str) or mode not in _PAD_MODES:
        raise UnsupportedOpError(
            f"np.pad: mode={mode!r} is not supported", user_location(), f"supported modes: {', '.join(_PAD_MODES)}"
        )
    unknown = sorted(set(kwargs) - set(_PAD_MODES[mode]))
    if unknown:
        raise build_error("np.pad", ValueError(f"unsupported keyword arguments for mode '{mode}': {unknown}"))
    widths = np.asarray(_static_nested(pad_width, "np.pad", "pad_width"))
    if widths.dtype.kind not in "iu":
        raise build_error("np.pad", TypeError("`pad_width` must be of integral type."))
    try:
        per_axis = np.broadcast_to(widths, (array.ndim, 2))
    except ValueError as e:
        raise build_error("np.pad", e) from None
    if (per_axis < 0).any():
        raise build_error("np.pad", ValueError("index can't contain negative values"))
    options = {}
    if "constant_values" in kwargs:
        options["constant_values"] = _static_nested(kwargs["constant_values"], "np.pad", "constant_values")
    if "reflect_type" in kwargs:
        options["reflect_type"] = str(kwargs["reflect_type"])
    if array.ndim == 0:  # no axis to pad: NumPy returns a copy, a 0-d array
        return as_array(apply("copy", array))
    return apply("pad", array, pad_width=_as_tuples(per_axis.tolist()), mode=mode, **options)
